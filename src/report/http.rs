//! The HTTP side shared by the webhook and Sentry reporters: one pooled
//! client, and the rules that keep secret URLs out of the log.

use std::sync::OnceLock;
use std::time::Duration;

/// How long an idle connection is kept: longer than the gap between the
/// reports of a minutely job, so those reuse their connection.
const KEEPALIVE: Duration = Duration::from_secs(90);

/// The daemon's HTTP client, built on first use.
pub fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c);
    }
    let built = reqwest::Client::builder()
        .pool_idle_timeout(KEEPALIVE)
        .user_agent(concat!("cronstable/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
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
pub fn describe_error(err: reqwest::Error, url: &str, timeout: Duration) -> String {
    let kind = if err.is_timeout() {
        return format!("no response within {} seconds", timeout.as_secs_f64());
    } else if err.is_connect() {
        "could not connect"
    } else if err.is_builder() {
        "the request could not be built"
    } else {
        "the request failed"
    };
    let mut causes = Vec::new();
    let err = err.without_url();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    let detail = scrub(&causes.join(": "), url, &[]);
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {detail}")
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

    #[test]
    fn clip_respects_characters() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("abc", 10), "abc");
    }
}
