//! The job commands on the wire, against a recording fake of the job API:
//! the exact request line, headers and body bytes they send (the
//! original's), that they use no proxy and follow no redirect, and that
//! `lock run` forwards SIGTERM, SIGINT and SIGHUP to its command and then
//! releases the lock. (tests/jobcli_original.rs runs them against the
//! original daemon itself.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const OURS: &str = env!("CARGO_BIN_EXE_cronstable");

/// One request as the fake received it.
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A reply: status, extra headers, body.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// A job API fake on 127.0.0.1: answers each request with `route(method
/// and target)` and records it.
struct Fake {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    fn start(route: fn(&str) -> Answer) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = h.trim_end().split_once(':') {
                        headers.push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                let length: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let line = line.trim_end().to_owned();
                let (status, extra, reply) = route(&line);
                log.lock().unwrap().push(Seen {
                    line,
                    headers,
                    body,
                });
                let mut head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                    reply.len()
                );
                for (k, v) in extra {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&reply);
            }
        });
        Fake { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// This binary with the job environment pointing at the fake.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(OURS);
        cmd.args(args)
            .env("CRONSTABLE_STATE_URL", self.url())
            .env("CRONSTABLE_STATE_TOKEN", "tok")
            .env_remove("CRONSTABLE_STATE_CACERT")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run cronstable")
    }
}

fn json(status: u16, body: &str) -> Answer {
    (
        status,
        vec![("Content-Type".to_owned(), "application/json".to_owned())],
        body.as_bytes().to_vec(),
    )
}

fn api(line: &str) -> Answer {
    let target = line.split(' ').nth(1).unwrap_or_default();
    let path = target.split('?').next().unwrap_or_default();
    if target.contains("key=missing") {
        return json(404, r#"{"error":"key 'missing' is not set in scope 'j'"}"#);
    }
    match path {
        "/v1/kv/set" => json(200, r#"{"ok":true,"updatedAt":1.5}"#),
        "/v1/kv/get" => json(
            200,
            r#"{"value":{"b":[1,2.5],"a":"\u00e9"},"updatedAt":1.5}"#,
        ),
        "/v1/artifact/put" => json(200, r#"{"sha256":"abc","size":3}"#),
        "/v1/lock/acquire" => json(
            200,
            r#"{"acquired":true,"token":"t1","slot":0,"fence":1,"ttl":30.0}"#,
        ),
        "/v1/lock/release" => json(200, r#"{"released":true}"#),
        "/moved" => (
            302,
            vec![("Location".to_owned(), "/elsewhere".to_owned())],
            Vec::new(),
        ),
        _ => json(404, r#"{"error":"404: Not Found"}"#),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn requests_are_the_originals_to_the_byte() {
    let fake = Fake::start(api);
    let out = fake.run(&["state", "set", "k", "v é", "--scope", "a b"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = fake.run(&["state", "get", "k/1", "--scope", "a b"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Python's json.dumps of the reply: its order, its separators.
    assert_eq!(text(&out.stdout), "{\"b\": [1, 2.5], \"a\": \"\\u00e9\"}\n");
    let mut put = fake.command(&["artifact", "put", "a"]);
    put.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = put.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\x00\x01\xff")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "abc\n".to_owned())
    );

    let seen = fake.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].line, "POST /v1/kv/set HTTP/1.1");
    assert_eq!(seen[0].header("authorization"), Some("Bearer tok"));
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    assert_eq!(
        text(&seen[0].body),
        r#"{"scope": "a b", "key": "k", "value": "v \u00e9"}"#
    );
    assert_eq!(seen[1].line, "GET /v1/kv/get?scope=a+b&key=k%2F1 HTTP/1.1");
    assert_eq!(seen[1].header("authorization"), Some("Bearer tok"));
    assert!(seen[1].body.is_empty());
    assert_eq!(seen[2].line, "POST /v1/artifact/put?name=a HTTP/1.1");
    assert_eq!(
        seen[2].header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(seen[2].body, b"\x00\x01\xff");
}

#[test]
fn no_proxy_and_no_redirect() {
    let fake = Fake::start(api);
    // A proxy in the environment is not used (it would get the token).
    let out = fake
        .command(&["state", "get", "missing"])
        .env("http_proxy", "http://127.0.0.1:1")
        .env("HTTP_PROXY", "http://127.0.0.1:1")
        .env("ALL_PROXY", "http://127.0.0.1:1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "key not found: missing\n");

    // A redirect is reported, not followed.
    let out = Command::new(OURS)
        .args(["state", "keys"])
        .env("CRONSTABLE_STATE_URL", format!("{}/moved#", fake.url()))
        .env("CRONSTABLE_STATE_TOKEN", "tok")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "cronstable state: the cronstable state endpoint at {url}/moved# redirects to \
             '{url}/elsewhere', which this client does not follow\n",
            url = fake.url()
        )
    );
    assert_eq!(
        fake.seen().len(),
        2,
        "the redirect target was not requested"
    );
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `lock run L -- sh -c script` (the script writes `up` once
/// started), sends `sig` to the CLI's pid only, and returns its exit code
/// and what the fake saw.
fn lock_run_signalled(script: &str, sig: nix::sys::signal::Signal) -> (Option<i32>, Vec<Seen>) {
    let fake = Fake::start(api);
    let dir = tempfile::tempdir().unwrap();
    let mut child = fake
        .command(&["lock", "run", "L", "--", "sh", "-c", script])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    wait_for(&dir.path().join("up"));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
    let status = child.wait().unwrap();
    (status.code(), fake.seen())
}

fn assert_released(seen: &[Seen]) {
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].line, "POST /v1/lock/acquire HTTP/1.1");
    assert_eq!(seen[1].line, "POST /v1/lock/release HTTP/1.1");
    assert_eq!(text(&seen[1].body), r#"{"token": "t1"}"#);
}

#[test]
fn lock_run_forwards_sigterm_to_its_command_and_releases() {
    use nix::sys::signal::Signal;
    let (code, seen) = lock_run_signalled(
        "trap 'exit 3' TERM; touch up; while :; do sleep 0.05; done",
        Signal::SIGTERM,
    );
    assert_eq!(code, Some(3));
    assert_released(&seen);
}

#[test]
fn lock_run_forwards_sigint_and_sighup() {
    use nix::sys::signal::Signal;
    let (code, seen) = lock_run_signalled(
        "trap 'exit 4' INT; touch up; while :; do sleep 0.05; done",
        Signal::SIGINT,
    );
    assert_eq!(code, Some(4));
    assert_released(&seen);
    // A command the signal kills: the exit status is Python's 256 - N.
    let (code, seen) = lock_run_signalled("touch up; exec sleep 30", Signal::SIGHUP);
    assert_eq!(code, Some(256 - 1));
    assert_released(&seen);
}

#[test]
fn lock_run_passes_the_exit_code_through() {
    let fake = Fake::start(api);
    let out = fake.run(&["lock", "run", "L", "--wait", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
    let seen = fake.seen();
    assert_eq!(
        text(&seen[0].body),
        r#"{"scope": null, "name": "L", "permits": 1, "wait": true, "blockSeconds": 0.0, "ttl": null}"#
    );
    assert_released(&seen);
    let out = fake.run(&["lock", "run", "L", "--", "/nonexistent/cmd"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "cronstable lock: cannot run '/nonexistent/cmd': [Errno 2] No such file or directory: \
         '/nonexistent/cmd'\n"
    );
    assert_eq!(fake.seen().len(), 4, "released after the failed start too");
}
