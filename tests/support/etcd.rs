//! A real etcd server for the etcd backend's tests: one member on free
//! loopback ports with a temp data dir (on /dev/shm when there is one, so
//! its fsyncs are cheap) and fast election flags. It can be stopped and
//! started again on the same ports and data (an outage), and is killed
//! when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The etcd binary, when installed (`ETCD_BIN` overrides the lookup).
pub fn binary() -> Option<String> {
    if let Ok(path) = std::env::var("ETCD_BIN") {
        return Some(path);
    }
    ["/usr/bin/etcd", "/usr/local/bin/etcd"]
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| (*p).to_owned())
}

/// True when etcd is installed; otherwise says why the caller skips, and
/// fails under CI, where scripts/test.sh installs it.
pub fn available() -> bool {
    if binary().is_some() {
        return true;
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "etcd must be installed in CI (scripts/test.sh installs etcd-server)"
    );
    eprintln!("etcd is not installed (apt-get install etcd-server); skipping");
    false
}

/// A running (or stopped) etcd member.
pub struct Etcd {
    child: Option<Child>,
    binary: String,
    /// The client port (`http://127.0.0.1:<port>`).
    pub port: u16,
    peer_port: u16,
    data: tempfile::TempDir,
    log: std::path::PathBuf,
    /// A second, TLS client port (see [`Etcd::start_tls`]).
    pub tls_port: Option<u16>,
    /// Flags added to etcd's command line.
    extra: Vec<String>,
}

impl Etcd {
    /// Starts a fresh member and waits until it answers `/health`.
    pub fn start() -> Etcd {
        Etcd::start_with(None, Vec::new())
    }

    /// Starts a member that also serves clients over TLS on
    /// [`Etcd::tls_port`] with `cert`/`key` (files), asks clients there
    /// for a certificate signed by `ca`, and keeps auth tokens `token_ttl`
    /// seconds. The plain port stays for the test's own setup calls.
    pub fn start_tls(cert: &str, key: &str, ca: &str, token_ttl: u64) -> Etcd {
        let extra = [
            "--cert-file",
            cert,
            "--key-file",
            key,
            "--trusted-ca-file",
            ca,
            "--client-cert-auth",
            "--auth-token-ttl",
            &token_ttl.to_string(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        Etcd::start_with(Some(super::http::free_port()), extra)
    }

    fn start_with(tls_port: Option<u16>, extra: Vec<String>) -> Etcd {
        let binary = binary().expect("etcd is installed (check etcd::available first)");
        let data = if std::path::Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm")
        } else {
            tempfile::tempdir()
        }
        .expect("etcd data dir");
        let log = data.path().join("etcd.log");
        let mut etcd = Etcd {
            child: None,
            binary,
            port: super::http::free_port(),
            peer_port: super::http::free_port(),
            data,
            log,
            tls_port,
            extra,
        };
        etcd.resume();
        etcd
    }

    /// The client URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the member again (same ports, same data) after [`Etcd::stop`].
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "etcd already runs");
        let mut client = self.endpoint();
        if let Some(port) = self.tls_port {
            client.push_str(&format!(",https://127.0.0.1:{port}"));
        }
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("etcd log file");
        let child = Command::new(&self.binary)
            .args(["--name", "test"])
            .arg("--data-dir")
            .arg(self.data.path().join("member"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("test={peer}")])
            // One member: a short election timeout makes it leader fast.
            .args(["--heartbeat-interval", "50", "--election-timeout", "300"])
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        self.wait_healthy(Duration::from_secs(30));
    }

    /// Stops the member (SIGKILL: an outage, not a goodbye) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// etcd's own log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_healthy(&mut self, limit: Duration) {
        let start = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("etcd exited with {status}; log:\n{}", self.log());
                }
            }
            if self.healthy() {
                return;
            }
            assert!(
                start.elapsed() < limit,
                "etcd did not become healthy within {limit:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.1 200")
            && answer.contains("\"health\":\"true\"")
    }

    /// POSTs a v3 JSON gateway request and returns the answer.
    pub fn call(&self, path: &str, body: &serde_json::Value) -> serde_json::Value {
        self.call_as(None, path, body)
    }

    /// [`Etcd::call`] with an auth token.
    pub fn call_as(
        &self,
        token: Option<&str>,
        path: &str,
        body: &serde_json::Value,
    ) -> serde_json::Value {
        let headers: Vec<(&str, &str)> = token.map(|t| ("Authorization", t)).into_iter().collect();
        let reply = super::http::request(self.port, "POST", path, &headers, &body.to_string());
        assert_eq!(reply.status, 200, "etcd {path}: {}", reply.body);
        reply.json()
    }

    /// The value at `key` and the lease it is bound to (None: no key).
    pub fn get(&self, key: &str) -> Option<(String, String)> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let answer = self.call("/v3/kv/range", &serde_json::json!({"key": b64.encode(key)}));
        let kv = answer.get("kvs")?.as_array()?.first()?;
        let value = kv.get("value").and_then(|v| v.as_str()).unwrap_or("");
        let value = String::from_utf8(b64.decode(value).unwrap_or_default()).unwrap_or_default();
        let lease = kv
            .get("lease")
            .and_then(|v| v.as_str())
            .unwrap_or("0")
            .to_owned();
        Some((value, lease))
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}
