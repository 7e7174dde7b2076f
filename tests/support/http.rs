//! A minimal HTTP/1.1 client for black-box tests (TCP and unix sockets), so
//! the tests need no HTTP crate.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// One response.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// Body text.
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn exchange<S: Read + Write>(
    mut stream: S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Reply> {
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes())?;
    let raw = read_response(&mut stream, method == "HEAD")?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// Reads one response: to the end of its `Content-Length` when it has one
/// (a server may keep the connection open despite `Connection: close`,
/// as chromedriver does), else until the server closes.
fn read_response<S: Read>(stream: &mut S, head_only: bool) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim() == "content-length")
                .and_then(|(_, v)| v.trim().parse::<usize>().ok());
            if let Some(length) = length {
                if head_only || raw.len() >= end + 4 + length {
                    return Ok(raw);
                }
            }
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(raw);
        }
        raw.extend_from_slice(&chunk[..n]);
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Sends one request to `127.0.0.1:port`.
pub fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    exchange(stream, method, path, headers, body).expect("http exchange")
}

/// `GET` with no extra headers.
pub fn get(port: u16, path: &str) -> Reply {
    request(port, "GET", path, &[], "")
}

/// `POST` with an empty body.
pub fn post(port: u16, path: &str) -> Reply {
    request(port, "POST", path, &[], "")
}

/// Sends one request over a unix socket.
pub fn request_unix(socket: &std::path::Path, method: &str, path: &str) -> Reply {
    let stream = std::os::unix::net::UnixStream::connect(socket).expect("connect unix socket");
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    exchange(stream, method, path, &[], "").expect("http exchange")
}

/// A loopback port that is free right now and that this process has not
/// handed out before. Tests plan the ports of several daemons before any
/// of them binds (and run in parallel), and the kernel may offer a port it
/// just offered again: two daemons given one port would fight over it.
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let mut handed_out = HANDED_OUT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if handed_out.insert(port) {
            return port;
        }
    }
}

/// Waits until something accepts connections on `port`.
pub fn wait_listening(port: u16, limit: Duration) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < limit, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
