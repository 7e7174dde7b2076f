//! The routes the dashboards read, against the built daemon: the live log
//! stream (SSE), node readings and history, the summary, the activity feed
//! with its ETag, and a job's resources answer.

mod support;

use std::io::{Read, Write};
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http::{get, post, request};

const LONG: Duration = Duration::from_secs(20);

fn wait_until(mut check: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < LONG, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An open `GET /jobs/{name}/logs`, read as it arrives.
struct Tail {
    stream: std::net::TcpStream,
    raw: Vec<u8>,
}

impl Tail {
    fn open(port: u16, path: &str) -> Tail {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("read timeout");
        let head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).expect("send");
        Tail {
            stream,
            raw: Vec::new(),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.raw).into_owned()
    }

    /// The response head (status line and headers).
    fn head(&self) -> String {
        let text = self.text();
        text.split_once("\r\n\r\n")
            .map(|(h, _)| h.to_ascii_lowercase())
            .unwrap_or_default()
    }

    /// The body so far, with the chunked framing removed.
    fn body(&self) -> String {
        let text = self.text();
        let Some((_, mut rest)) = text.split_once("\r\n\r\n") else {
            return String::new();
        };
        let mut out = String::new();
        while let Some((size, after)) = rest.split_once("\r\n") {
            let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
                break;
            };
            if n == 0 || after.len() < n {
                break;
            }
            out.push_str(&after[..n]);
            rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
        }
        out
    }

    /// Reads until the body contains `needle`; returns false at EOF.
    fn read_until(&mut self, needle: &str) -> bool {
        let start = Instant::now();
        let mut buf = [0u8; 8192];
        while !self.body().contains(needle) {
            assert!(
                start.elapsed() < LONG,
                "no {needle:?} in the stream; got {:?}",
                self.text()
            );
            match self.stream.read(&mut buf) {
                Ok(0) => return self.body().contains(needle),
                Ok(n) => self.raw.extend_from_slice(&buf[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => panic!("reading the stream: {e}"),
            }
        }
        true
    }
}

fn line_frame(stream: &str, line: &str) -> String {
    format!("event: line\ndata: {{\"stream\": \"{stream}\", \"line\": \"{line}\"}}\n\n")
}

const END: &str = "event: end\ndata: {}\n\n";

const TALKER: &str = r#"  - name: talker
    command: "echo first; echo oops >&2; while [ ! -f go ]; do sleep 0.1; done; echo second"
    schedule: "0 0 1 1 *"
    captureStdout: true
    captureStderr: true
  - name: never
    command: "true"
    schedule: "0 0 1 1 *"
  - name: quiet
    command: "true"
    schedule: "0 0 1 1 *"
"#;

#[test]
fn log_stream_replays_then_follows_a_running_job_then_ends() {
    let web = "  headers:\n    Cache-Control: no-store\n    X-Extra: yes\n";
    let (d, port) = Daemon::start_with_web(web, TALKER);
    assert_eq!(post(port, "/jobs/talker/start").status, 200);
    // The first lines are out before the viewer connects: they must come
    // from the replay buffer.
    wait_until(
        || d.stdout().contains("first"),
        "the first line to be echoed",
    );
    wait_until(|| d.log().contains("oops"), "the stderr line to be echoed");

    let mut tail = Tail::open(port, "/jobs/talker/logs");
    assert!(tail.read_until(&line_frame("stderr", "oops")));
    let head = tail.head();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("x-accel-buffering: no"), "{head}");
    assert!(
        head.contains("cache-control: no-cache"),
        "web.headers must not override it: {head}"
    );
    assert!(
        head.contains("x-extra: yes"),
        "other web.headers still apply: {head}"
    );
    let body = tail.body();
    assert!(body.starts_with(&line_frame("stdout", "first")), "{body}");
    assert!(
        !body.contains("second") && !body.contains("event: end"),
        "{body}"
    );

    // Now the run goes on: the new line arrives live, then the end.
    std::fs::write(d.path("go"), "").expect("touch go");
    assert!(tail.read_until(END));
    let body = tail.body();
    let expected = [
        line_frame("stdout", "first"),
        line_frame("stderr", "oops"),
        line_frame("stdout", "second"),
        END.to_owned(),
    ]
    .concat();
    assert_eq!(body, expected);

    // Once finished, a new viewer gets the last run's lines, then the end,
    // and the response completes.
    wait_until(
        || get(port, "/jobs/talker").json()["running"] == false,
        "the run to be collected",
    );
    let finished = get(port, "/jobs/talker/logs");
    assert_eq!(finished.status, 200);
    assert_eq!(finished.body, expected);
}

#[test]
fn log_stream_without_output_and_for_unknown_jobs() {
    let (_d, port) = Daemon::start_with_web("", TALKER);
    let never = get(port, "/jobs/never/logs");
    assert_eq!(never.status, 200);
    assert_eq!(never.header("x-accel-buffering"), Some("no"));
    assert_eq!(
        never.body,
        "event: end\ndata: {\"reason\": \"no-output\"}\n\n"
    );

    // A run that captured nothing: no lines, a plain end.
    assert_eq!(post(port, "/jobs/quiet/start").status, 200);
    wait_until(
        || get(port, "/jobs/quiet").json()["last_run"].is_object(),
        "the quiet run to finish",
    );
    assert_eq!(get(port, "/jobs/quiet/logs").body, END);

    let unknown = get(port, "/jobs/nope/logs");
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"], "job 'nope' not found");
}

#[test]
fn node_reports_the_host_and_the_daemon() {
    let (_d, port) = Daemon::start_with_web("", TALKER);
    let node = get(port, "/node").json();
    assert!(
        node["node_name"].as_str().is_some_and(|n| !n.is_empty()),
        "{node}"
    );
    let r = &node["resources"];
    for key in ["cpu_percent", "mem_percent", "proc_cpu_percent"] {
        let v = r[key].as_f64().unwrap_or(-1.0);
        assert!((0.0..=100.0 * 64.0).contains(&v), "{key}: {r}");
    }
    assert!((0.0..=100.0).contains(&r["cpu_percent"].as_f64().unwrap_or(-1.0)));
    assert!((0.0..=100.0).contains(&r["mem_percent"].as_f64().unwrap_or(-1.0)));
    assert!(r["cpu_count"].as_u64().unwrap_or(0) >= 1, "{r}");
    let total = r["mem_total_bytes"].as_u64().unwrap_or(0);
    let used = r["mem_used_bytes"].as_u64().unwrap_or(u64::MAX);
    assert!(total > 0 && used <= total, "{r}");
    assert!(r["proc_rss_bytes"].as_u64().unwrap_or(0) > 0, "{r}");
}

#[test]
fn node_history_grows_per_interval_and_is_capped() {
    let web = "  nodeHistory:\n    interval: 1\n    points: 10\n";
    let (_d, port) = Daemon::start_with_web(web, TALKER);
    let points = |port| {
        get(port, "/node/history").json()["points"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let first = get(port, "/node/history").json();
    assert_eq!(first["enabled"], true);
    assert_eq!(first["interval"], 1.0);
    assert!(first["node_name"].is_string());
    wait_until(|| points(port).len() >= 3, "three samples");
    let some = points(port);
    for p in &some {
        let p = p.as_array().expect("a point is [t, cpu, mem]");
        assert_eq!(p.len(), 3);
        assert!(p[0].as_f64().unwrap_or(0.0) > 1.7e9, "epoch seconds: {p:?}");
    }
    let t = |p: &serde_json::Value| p[0].as_f64().unwrap_or(0.0);
    assert!(some.windows(2).all(|w| t(&w[0]) < t(&w[1])), "oldest first");
    wait_until(|| points(port).len() == 10, "the ring to fill");
    let full = points(port);
    wait_until(
        || points(port).last().map(t) > full.last().map(t),
        "a sample after the ring filled",
    );
    assert_eq!(
        points(port).len(),
        10,
        "the ring stays at web.nodeHistory.points"
    );

    let (_d2, off) = Daemon::start_with_web("  nodeHistory: false\n", TALKER);
    let history = get(off, "/node/history").json();
    assert_eq!(history["enabled"], false);
    assert_eq!(history["points"], serde_json::json!([]));
}

const FLEET: &str = r#"  - name: fails
    command: "false"
    schedule: "0 0 1 1 *"
  - name: soon
    command: "true"
    schedule: "0 0 1 1 *"
  - name: off
    command: "true"
    schedule: "@hourly"
    enabled: false
  - name: dead
    command: "true"
    schedule: "0 0 30 2 *"
  - name: slow
    command: "sleep 30"
    schedule: "0 0 1 1 *"
    killTimeout: 1
"#;

#[test]
fn summary_counts_the_fleet() {
    let (_d, port) = Daemon::start_with_web("", FLEET);
    assert_eq!(post(port, "/jobs/fails/start").status, 200);
    assert_eq!(post(port, "/jobs/slow/start").status, 200);
    let pause = request(
        port,
        "POST",
        "/jobs/soon/pause",
        &[],
        r#"{"durationSeconds": 3600}"#,
    );
    assert_eq!(pause.status, 200, "{}", pause.body);
    wait_until(
        || get(port, "/jobs/fails").json()["last_run"].is_object(),
        "the failing run",
    );
    let s = get(port, "/summary").json();
    assert_eq!(s["version"], env!("CARGO_PKG_VERSION"));
    assert!(s["node_name"].as_str().is_some_and(|n| !n.is_empty()));
    assert!(s["generated_at"]
        .as_str()
        .is_some_and(|t| t.ends_with("+00:00")));
    assert_eq!(
        s["jobs"],
        serde_json::json!({"total": 5, "enabled": 4, "disabled": 1, "running": 1,
            "paused": 1, "failing": 1, "never_fires": 1})
    );
    // `fails` and `soon` share the soonest fire (a one-hour pause does not
    // cover next year's); the first in config order wins the tie.
    let next = &s["next_fire"];
    assert!(next["in"].as_f64().unwrap_or(-1.0) > 0.0, "{s}");
    assert!(
        next["at"].as_str().is_some_and(|t| t.ends_with("+00:00")),
        "{s}"
    );
    assert_eq!(next["job"], "fails", "{s}");
    assert_eq!(s["cluster"], serde_json::json!({"enabled": false}));
    assert!(s.get("dags").is_none());
    assert_eq!(post(port, "/jobs/slow/cancel").status, 200);
}

#[test]
fn activity_feed_with_etag() {
    let (_d, port) = Daemon::start_with_web("", FLEET);
    let first = get(port, "/activity");
    assert_eq!(first.status, 200);
    let jobs = first.json()["jobs"].clone();
    assert_eq!(jobs["fails"], serde_json::json!([]), "never run: []");
    assert_eq!(jobs.as_object().map(|m| m.len()), Some(5));
    let etag = first.header("etag").expect("an ETag").to_owned();
    let again = request(port, "GET", "/activity", &[("If-None-Match", &etag)], "");
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());

    assert_eq!(post(port, "/jobs/fails/start").status, 200);
    wait_until(
        || {
            get(port, "/activity").json()["jobs"]["fails"]
                .as_array()
                .is_some_and(|r| r.len() == 1)
        },
        "the run in the feed",
    );
    let changed = request(port, "GET", "/activity", &[("If-None-Match", &etag)], "");
    assert_eq!(changed.status, 200, "a new run changes the ETag");
    let row = &changed.json()["jobs"]["fails"][0];
    assert_eq!(row["outcome"], "failure");
    assert!(row["started_at"].is_string() && row["finished_at"].is_string());
    assert_eq!(row.as_object().map(|m| m.len()), Some(3), "{row}");
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
}

#[test]
fn resources_answer_for_an_unmonitored_job() {
    let (_d, port) = Daemon::start_with_web("", FLEET);
    let r = get(port, "/jobs/soon/resources");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        // `limits` is null without resourceLimits, as the original says.
        serde_json::json!({"name": "soon", "monitored": false, "interval": 1.0, "limits": null, "live": [], "runs": []})
    );
    assert_eq!(get(port, "/jobs/nope/resources").status, 404);
}

#[test]
fn new_routes_need_the_view_scope() {
    let web = r#"  authToken:
    value: all-scopes
  authTokens:
    - value: reader
      scopes: [view]
"#;
    let (_d, port) = Daemon::start_with_web(web, TALKER);
    for path in [
        "/jobs/never/logs",
        "/jobs/never/resources",
        "/summary",
        "/activity",
        "/node",
        "/node/history",
    ] {
        let anonymous = get(port, path);
        assert_eq!(anonymous.status, 401, "{path}");
        assert_eq!(anonymous.json()["error"], "401: Unauthorized");
        let reader = request(port, "GET", path, &[("Authorization", "Bearer reader")], "");
        assert_eq!(reader.status, 200, "{path}: {}", reader.body);
    }
}

/// GET `path` with `headers` and returns the status line and headers
/// (lowercased names) and the raw body bytes (read by Content-Length).
fn raw_get(port: u16, path: &str, headers: &[(&str, &str)]) -> (String, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a header block");
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    (head, raw[split + 4..].to_vec())
}

#[test]
fn jobs_list_revalidates_and_compresses() {
    // Enough jobs for a body worth compressing; their countdowns to next
    // new year move while the list stays the same.
    let jobs: String = (0..41)
        .map(|i| {
            format!("  - name: idle-{i:02}\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n")
        })
        .collect();
    let (_d, port) = Daemon::start_with_web("", &jobs);
    let first = get(port, "/jobs");
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("an ETag on /jobs").to_owned();
    let listed = first.json();
    assert_eq!(listed.as_array().map(Vec::len), Some(41), "{listed}");

    // Countdowns tick but the list is the same: still not modified.
    std::thread::sleep(Duration::from_millis(1100));
    let again = request(port, "GET", "/jobs", &[("If-None-Match", &etag)], "");
    assert_eq!(again.status, 304, "{}", again.body);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    // A client without the tag gets the body with fresh countdowns.
    let fresh = get(port, "/jobs").json();
    let countdown = |list: &serde_json::Value| {
        list.as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["name"] == "idle-40"))
            .and_then(|j| j["scheduled_in"].as_f64())
            .expect("a countdown")
    };
    assert!(
        countdown(&fresh) < countdown(&listed),
        "the countdown moved on: {} then {}",
        countdown(&listed),
        countdown(&fresh)
    );

    // gzip when accepted: the same document, smaller.
    let (head, body) = raw_get(port, "/jobs", &[("Accept-Encoding", "gzip")]);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-encoding: gzip"), "{head}");
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut plain)
        .expect("a gzip body");
    assert!(
        body.len() * 2 < plain.len(),
        "{} of {}",
        body.len(),
        plain.len()
    );
    let unzipped: serde_json::Value = serde_json::from_slice(&plain).expect("JSON");
    assert_eq!(unzipped.as_array().map(Vec::len), Some(41));
    // Not accepted: plain JSON.
    let (head, body) = raw_get(port, "/jobs", &[]);
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(serde_json::from_slice::<serde_json::Value>(&body).is_ok());

    // A run changes what is listed, so the tag changes.
    assert_eq!(post(port, "/jobs/idle-00/start").status, 200);
    wait_until(
        || get(port, "/jobs/idle-00").json()["last_run"].is_object(),
        "the manual run",
    );
    let changed = request(port, "GET", "/jobs", &[("If-None-Match", &etag)], "");
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
}

/// `/jobs` is rendered once and shared between polls while nothing
/// changes: every change between two polls must still show in the second.
#[test]
fn jobs_list_shows_every_change_between_two_polls() {
    let jobs: String = (0..3)
        .map(|i| format!("  - name: j{i}\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n"))
        .collect();
    let (_d, port) = Daemon::start_with_web("", &jobs);
    let entry = |name: &str| {
        get(port, "/jobs")
            .json()
            .as_array()
            .and_then(|list| list.iter().find(|j| j["name"] == name).cloned())
            .expect("the job is listed")
    };
    // Two polls of the same state: the same entry.
    assert!(entry("j1")["paused"].is_null());
    assert!(entry("j1")["paused"].is_null());

    let paused = request(
        port,
        "POST",
        "/jobs/j1/pause",
        &[("Content-Type", "application/json")],
        r#"{"durationSeconds": 600, "note": "between polls"}"#,
    );
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(entry("j1")["paused"]["note"], "between polls");

    assert_eq!(post(port, "/jobs/j1/resume").status, 200);
    assert!(entry("j1")["paused"].is_null(), "the resume shows");

    assert!(entry("j2")["last_run"].is_null());
    assert_eq!(post(port, "/jobs/j2/start").status, 200);
    wait_until(
        || entry("j2")["last_run"].is_object(),
        "the manual run in the list",
    );
    assert_eq!(entry("j2")["last_run"]["outcome"], "success");
    assert_eq!(entry("j2")["running"], false);
}
