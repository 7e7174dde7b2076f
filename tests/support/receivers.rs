//! Real receivers for the reporter tests: a small HTTP/1.1 server that
//! records what it is sent (webhooks, Sentry envelopes), and the aiosmtpd
//! SMTP server from `tests/support/smtp_sink.py`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, `PUT`, ...
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
}

/// What the receiver answers.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Response body.
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl Reply {
    /// 200 with a small body.
    pub fn ok() -> Reply {
        Reply {
            status: 200,
            body: "ok".into(),
            delay: Duration::ZERO,
        }
    }
}

type Responder = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// An HTTP server on 127.0.0.1 recording every request.
pub struct HttpReceiver {
    /// The port it listens on.
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl HttpReceiver {
    /// Starts a receiver answering 200 to everything.
    pub fn start() -> HttpReceiver {
        HttpReceiver::with(|_| Reply::ok())
    }

    /// Starts a receiver answering with `respond`.
    pub fn with(respond: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> HttpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let port = listener.local_addr().expect("receiver address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let respond: Responder = Arc::new(respond);
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let seen = Arc::clone(&seen);
                let respond = Arc::clone(&respond);
                std::thread::spawn(move || serve(stream, &seen, &respond));
            }
        });
        HttpReceiver { port, requests }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Waits for at least `n` requests whose target starts with `prefix`.
    pub fn wait_for(&self, prefix: &str, n: usize, limit: Duration) -> Vec<Request> {
        let start = Instant::now();
        loop {
            let found: Vec<Request> = self
                .requests()
                .into_iter()
                .filter(|r| r.target.starts_with(prefix))
                .collect();
            if found.len() >= n {
                return found;
            }
            assert!(
                start.elapsed() < limit,
                "waited {limit:?} for {n} request(s) to {prefix}, got {found:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<Request>>, respond: &Responder) {
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    // Keep-alive: answer requests on this connection until it closes.
    while let Some(request) = read_request(&mut reader) {
        if let Ok(mut all) = seen.lock() {
            all.push(request.clone());
        }
        let reply = respond(&request);
        std::thread::sleep(reply.delay);
        let head = format!(
            "HTTP/1.1 {} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
            reply.status,
            reply.body.len()
        );
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(reply.body.as_bytes()).is_err()
        {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

/// A free TCP port on 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One message the SMTP server accepted.
#[derive(Debug, Clone)]
pub struct Mail {
    /// Envelope sender.
    pub mail_from: String,
    /// Envelope recipients.
    pub rcpt_tos: Vec<String>,
    /// The login used, if any.
    pub auth_user: Option<String>,
    /// The password of that login.
    pub auth_password: Option<String>,
    /// Whether the session ran over TLS.
    pub tls: bool,
    /// The raw message (headers and body).
    pub data: String,
}

impl Mail {
    /// The value of header `name` (unfolded).
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        let head = head.split("\n\n").next().unwrap_or_default();
        let unfolded = head
            .replace("\r\n ", " ")
            .replace("\n ", " ")
            .replace("\r\n\t", " ");
        let prefix = format!("{}:", name.to_ascii_lowercase());
        unfolded.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with(&prefix)
                .then(|| l[prefix.len()..].trim().to_owned())
        })
    }

    /// The decoded body (transfer encoding undone, newlines as `\n`),
    /// through Python's email parser.
    pub fn body(&self) -> String {
        let script = "import email, email.policy, sys\n\
                      m = email.message_from_string(sys.stdin.read(), policy=email.policy.default)\n\
                      sys.stdout.write(m.get_content())";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(self.data.as_bytes())
            .expect("write the message");
        let out = child.wait_with_output().expect("python3 finishes");
        // The wire format ends lines with CRLF.
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
    }
}

/// The aiosmtpd server, killed when dropped.
pub struct SmtpSink {
    /// Its port.
    pub port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

impl SmtpSink {
    /// Starts a plain SMTP server.
    pub fn start() -> SmtpSink {
        SmtpSink::launch(None, false)
    }

    /// Starts a server that requires STARTTLS with a self-signed cert.
    pub fn start_tls(cert: &Path, key: &Path) -> SmtpSink {
        SmtpSink::launch(Some((cert, key)), false)
    }

    /// Starts a server speaking TLS from the first byte (SMTPS).
    pub fn start_implicit_tls(cert: &Path, key: &Path) -> SmtpSink {
        SmtpSink::launch(Some((cert, key)), true)
    }

    fn launch(tls: Option<(&Path, &Path)>, implicit: bool) -> SmtpSink {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/smtp_sink.py");
        let mut cmd = Command::new("python3");
        cmd.arg(&script).arg(port.to_string()).arg(dir.path());
        if let Some((cert, key)) = tls {
            cmd.arg(cert).arg(key);
            if implicit {
                cmd.arg("implicit");
            }
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            // aiosmtpd prints a traceback for every client that drops a
            // TLS handshake (one test does that on purpose).
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let mut ready = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout)
            .read_line(&mut ready)
            .expect("read the sink's first line");
        assert_eq!(
            ready.trim(),
            "ready",
            "the SMTP sink did not start: is aiosmtpd installed? (scripts/test.sh installs it)"
        );
        SmtpSink { port, child, dir }
    }

    /// Waits for at least `n` messages.
    pub fn wait_for(&self, n: usize, limit: Duration) -> Vec<Mail> {
        let start = Instant::now();
        loop {
            let mails = self.mails();
            if mails.len() >= n {
                return mails;
            }
            assert!(
                start.elapsed() < limit,
                "waited {limit:?} for {n} mail(s), got {}",
                mails.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every message so far, in arrival order.
    pub fn mails(&self) -> Vec<Mail> {
        let mut out = Vec::new();
        for n in 1.. {
            let Ok(text) = std::fs::read_to_string(self.dir.path().join(format!("{n}.json")))
            else {
                break;
            };
            let v: serde_json::Value = serde_json::from_str(&text).expect("sink JSON");
            let s = |k: &str| v[k].as_str().map(str::to_owned);
            out.push(Mail {
                mail_from: s("mail_from").unwrap_or_default(),
                rcpt_tos: v["rcpt_tos"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                auth_user: s("auth_user"),
                auth_password: s("auth_password"),
                tls: v["tls"].as_bool().unwrap_or(false),
                data: s("data").unwrap_or_default(),
            });
        }
        out
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a self-signed certificate for 127.0.0.1 into `dir` with openssl;
/// returns (cert, key).
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl could not make a certificate");
    (cert, key)
}
