//! The HTTP side shared by the webhook and Sentry reporters: one pooled
//! client, and the rules that keep secret URLs out of the log.

use std::sync::OnceLock;
use std::time::Duration;

/// How long an idle connection is kept: longer than the gap between the
/// reports of a minutely job, so those reuse their connection.
const KEEPALIVE: Duration = Duration::from_secs(90);

/// Why an HTTP report did not reach its receiver. `Display` is the text
/// after `webhook reporter: ` / `sentry reporter: ` in the log line, and
/// never holds the URL (the URL is the secret).
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The pooled client could not be built (no TLS roots, say).
    #[error("cannot set up the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// No response arrived within the reporter's timeout.
    #[error("no response within {seconds} seconds")]
    Timeout {
        /// The timeout, seconds.
        seconds: f64,
    },
    /// The request failed before a response: `kind`, then the causes
    /// with the URL scrubbed out of them (when there are any).
    #[error("{kind}{}", colon_before(.detail))]
    Failed {
        /// What failed.
        kind: RequestFailure,
        /// reqwest's causes, joined by `: `, URL parts redacted.
        detail: String,
    },
}

/// What part of a request failed, as [`HttpError::Failed`] says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestFailure {
    /// No connection to the receiver.
    #[error("could not connect")]
    Connect,
    /// The request could not be built (a bad header, say).
    #[error("the request could not be built")]
    Build,
    /// Anything else, after the connection.
    #[error("the request failed")]
    Other,
}

/// `": detail"`, or nothing when there is no detail.
fn colon_before(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

/// The daemon's HTTP client, built on first use.
pub fn client() -> Result<&'static reqwest::Client, HttpError> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c);
    }
    let built = reqwest::Client::builder()
        .pool_idle_timeout(KEEPALIVE)
        .user_agent(concat!("cronstable/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(HttpError::Client)?;
    Ok(CLIENT.get_or_init(|| built))
}

/// `text` with `url`, its path-and-query, its path and any of `extra`
/// replaced by `<redacted>`, plain and HTML-escaped. A receiver can quote
/// the request target back in an error page, and the secret part of a
/// webhook URL is its path or query.
pub fn scrub(text: &str, url: &str, extra: &[&str]) -> String {
    let mut needles: Vec<String> = vec![url.to_owned()];
    if let Ok(parsed) = reqwest::Url::parse(url) {
        let path = parsed.path().to_owned();
        if let Some(q) = parsed.query() {
            needles.push(format!("{path}?{q}"));
            needles.push(q.to_owned());
        }
        needles.push(path);
    }
    needles.extend(extra.iter().map(|s| (*s).to_owned()));
    let mut out = text.to_owned();
    for needle in needles {
        // A bare "/" would redact every slash of an innocent body.
        if needle.len() <= 1 {
            continue;
        }
        out = out.replace(&needle, "<redacted>");
        let escaped = needle
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        if escaped != needle {
            out = out.replace(&escaped, "<redacted>");
        }
    }
    out
}

/// Describes a failed request without its URL (reqwest's own message
/// carries it, and the URL is the secret).
pub fn describe_error(err: reqwest::Error, url: &str, timeout: Duration) -> HttpError {
    let kind = if err.is_timeout() {
        return HttpError::Timeout {
            seconds: timeout.as_secs_f64(),
        };
    } else if err.is_connect() {
        RequestFailure::Connect
    } else if err.is_builder() {
        RequestFailure::Build
    } else {
        RequestFailure::Other
    };
    let mut causes = Vec::new();
    let err = err.without_url();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    HttpError::Failed {
        kind,
        detail: scrub(&causes.join(": "), url, &[]),
    }
}

/// At most `max` bytes of `text`, cut on a character boundary.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_url_parts() {
        let url = "https://hooks.example.com/services/T000/B000/XXXX?token=abc&x=1";
        let body = "Cannot POST /services/T000/B000/XXXX?token=abc&amp;x=1 at https://hooks.example.com/services/T000/B000/XXXX?token=abc&x=1";
        let out = scrub(body, url, &[]);
        assert!(!out.contains("XXXX"), "{out}");
        assert!(!out.contains("token=abc"), "{out}");
        assert_eq!(scrub("a/b", "http://h/", &[]), "a/b");
    }

    /// The words the log line shows for each failure, detail or not.
    #[test]
    fn failures_read_as_before() {
        let timeout = HttpError::Timeout { seconds: 2.5 };
        assert_eq!(timeout.to_string(), "no response within 2.5 seconds");
        let bare = HttpError::Failed {
            kind: RequestFailure::Connect,
            detail: String::new(),
        };
        assert_eq!(bare.to_string(), "could not connect");
        let detailed = HttpError::Failed {
            kind: RequestFailure::Other,
            detail: "connection reset".into(),
        };
        assert_eq!(detailed.to_string(), "the request failed: connection reset");
    }

    /// A refused connection is a connect failure whose detail does not
    /// quote the URL's secret path.
    #[test]
    fn a_refused_connection_is_a_connect_failure() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let url = format!("http://127.0.0.1:{port}/hooks/s3cret");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let limit = Duration::from_secs(5);
        let err = runtime.block_on(async {
            let client = client().expect("the client builds");
            client.post(&url).timeout(limit).send().await.unwrap_err()
        });
        let err = describe_error(err, &url, limit);
        assert!(
            matches!(
                &err,
                HttpError::Failed {
                    kind: RequestFailure::Connect,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }

    #[test]
    fn clip_respects_characters() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("abc", 10), "abc");
    }
}
