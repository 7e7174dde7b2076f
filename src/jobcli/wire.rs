//! The pure half of the transport: the request URL (`urlencode`, form
//! style), the Authorization header check, the address checks Python's
//! `urllib`/`http.client` make before connecting (with their messages),
//! and the redirect target a 3xx names.

use super::model::CliError;
use crate::pyjson::{int_of_text, PyString};

/// `urllib.parse.quote_plus(text)`: letters, digits and `_.-~` as they
/// are, a space as `+`, every other byte of the UTF-8 encoding as `%XX`.
pub fn quote_plus(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
                out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 15)]));
            }
        }
    }
    out
}

/// The request URL: the base without trailing slashes, the path, then
/// `?` and the form-encoded parameters whose value is not None (no `?`
/// when none is left). A value that is not UTF-8 (a surrogate-escaped
/// argument) cannot be encoded: the original's message.
pub fn request_url(
    base: &str,
    path: &str,
    query: &[(&str, Option<PyString>)],
) -> Result<String, CliError> {
    let mut url = format!("{}{path}", base.trim_end_matches('/'));
    let mut first = true;
    for (key, value) in query {
        let Some(value) = value else { continue };
        let Some(text) = value.as_str() else {
            return Err(CliError(format!(
                "{} is not valid UTF-8, so it cannot be sent to the state endpoint",
                value.repr()
            )));
        };
        url.push(if first { '?' } else { '&' });
        first = false;
        url.push_str(&quote_plus(key));
        url.push('=');
        url.push_str(&quote_plus(text));
    }
    Ok(url)
}

/// The `Authorization` header value for `token`, as the bytes to send
/// (UTF-8); refused when it holds a character no header can carry (a
/// control character other than tab, or a lone surrogate).
pub fn authorization(token: &PyString, what: &str) -> Result<Vec<u8>, CliError> {
    let unsendable = token
        .code_points()
        .any(|cp| matches!(cp, 0x00..=0x08 | 0x0a..=0x1f | 0x7f | 0xd800..=0xdfff));
    if unsendable {
        return Err(CliError(format!(
            "cannot send a request to {what}: the Authorization header holds a character that \
             HTTP does not allow"
        )));
    }
    let mut value = b"Bearer ".to_vec();
    value.extend_from_slice(&token.to_os_bytes());
    Ok(value)
}

/// The scheme of a request address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`.
    Http,
    /// `https://`.
    Https,
}

/// Where a request goes, checked the way urllib and http.client check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The scheme.
    pub scheme: Scheme,
    /// The host, without IPv6 brackets.
    pub host: String,
    /// The port (the scheme's default when the address gives none).
    pub port: u16,
    /// The path and query (`/v1/kv/get?key=k`).
    pub selector: String,
}

impl Target {
    /// The address to hand the HTTP client.
    pub fn url(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{host}:{}{}", self.port, self.selector)
    }
}

/// The first character http.client refuses in a URL part (a control
/// character, space or DEL).
fn disallowed(text: &str) -> Option<char> {
    text.chars().find(|&c| c <= ' ' || c == '\u{7f}')
}

/// Checks `full` (the request URL) as urllib's `Request` and http.client's
/// connection do, with their messages (`what` names the endpoint).
pub fn target(full: &str, what: &str) -> Result<Target, CliError> {
    let invalid = |detail: String| {
        CliError(format!(
            "cannot send a request to {what}: the address is not a valid URL: {detail}"
        ))
    };
    // urllib's unwrap(): surrounding whitespace, then the fragment.
    let url = full.trim_matches(char::is_whitespace);
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    // _splittype: "scheme:rest", the scheme free of '/' and ':'.
    let scheme_end = url.find(':').filter(|&i| i > 0 && !url[..i].contains('/'));
    let Some(scheme_end) = scheme_end else {
        return Err(invalid(format!(
            "unknown url type: {}",
            PyString::from(url).repr()
        )));
    };
    let scheme = match url[..scheme_end].to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => {
            return Err(CliError(format!(
                "cannot send a request to {what}: the address is not an http:// or https:// URL"
            )))
        }
    };
    let rest = &url[scheme_end + 1..];
    // _splithost: "//host[:port]" then the path.
    let (host_port, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find(['/', '?', '#']).unwrap_or(after.len());
            (&after[..end], &after[end..])
        }
        None => ("", rest),
    };
    if host_port.is_empty() {
        return Err(CliError(format!("cannot reach {what}: no host given")));
    }
    let selector = if path.is_empty() || path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    // http.client's _get_hostport: a port after the last ':' that is not
    // inside brackets.
    let default_port = match scheme {
        Scheme::Http => 80,
        Scheme::Https => 443,
    };
    let (mut host, port) = match (host_port.rfind(':'), host_port.rfind(']')) {
        (Some(colon), bracket) if bracket.is_none_or(|b| colon > b) => {
            let text = &host_port[colon + 1..];
            let port = if text.is_empty() {
                default_port
            } else {
                let number =
                    int_of_text(text).map_err(|_| invalid(format!("nonnumeric port: '{text}'")))?;
                number.parse::<u16>().map_err(|_| {
                    CliError(format!(
                        "cannot reach {what}: port {number} is outside 0-65535"
                    ))
                })?
            };
            (&host_port[..colon], port)
        }
        _ => (host_port, default_port),
    };
    if host.len() >= 2 && host.starts_with('[') && host.ends_with(']') {
        host = &host[1..host.len() - 1];
    }
    for part in [host, selector.as_str()] {
        if let Some(c) = disallowed(part) {
            return Err(invalid(format!(
                "URL can't contain control characters. {} (found at least {})",
                PyString::from(part).repr(),
                PyString::from(c.to_string()).repr()
            )));
        }
    }
    Ok(Target {
        scheme,
        host: host.to_owned(),
        port,
        selector,
    })
}

/// The redirect error for a 3xx reply that names a target
/// (`urljoin(request URL, Location)`), or None when there is no
/// `Location` (then the status itself is the error).
pub fn redirect_error(
    what: &str,
    status: u16,
    full: &str,
    location: Option<&str>,
) -> Option<CliError> {
    let location = location.filter(|l| !l.is_empty())?;
    if !(300..400).contains(&status) {
        return None;
    }
    let target = urljoin(full, location);
    Some(CliError(format!(
        "{what} redirects to {}, which this client does not follow",
        PyString::from(target).repr()
    )))
}

/// `urllib.parse.urljoin(base, url)` for an http(s) base: an absolute
/// URL as it is, `//host...` with the base's scheme, `/path` on the
/// base's host, `?query` on the base's path, and a relative path resolved
/// against the base's directory (dot segments removed).
pub fn urljoin(base: &str, url: &str) -> String {
    let has_scheme = url.find(':').is_some_and(|i| {
        i > 0
            && url[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && url.as_bytes()[0].is_ascii_alphabetic()
    });
    if has_scheme {
        return url.to_owned();
    }
    let (scheme, after_scheme) = base.split_once("://").unwrap_or(("http", base));
    if let Some(rest) = url.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let authority_end = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    let origin = format!("{scheme}://{}", &after_scheme[..authority_end]);
    let base_rest = &after_scheme[authority_end..];
    let base_path = base_rest.split(['?', '#']).next().unwrap_or_default();
    if url.starts_with('/') {
        return format!("{origin}{url}");
    }
    if url.starts_with('?') {
        return format!("{origin}{base_path}{url}");
    }
    if url.starts_with('#') {
        let without_fragment = base_rest.split('#').next().unwrap_or_default();
        return format!("{origin}{without_fragment}{url}");
    }
    let dir = match base_path.rfind('/') {
        Some(i) => &base_path[..=i],
        None => "/",
    };
    let (path, tail) = match url.find(['?', '#']) {
        Some(i) => (&url[..i], &url[i..]),
        None => (url, ""),
    };
    let mut segments: Vec<&str> = Vec::new();
    let joined = format!("{dir}{path}");
    let parts: Vec<&str> = joined.split('/').skip(1).collect();
    for (i, seg) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        match *seg {
            "." => {
                if last {
                    segments.push("");
                }
            }
            ".." => {
                segments.pop();
                if last {
                    segments.push("");
                }
            }
            s => segments.push(s),
        }
    }
    format!("{origin}/{}{tail}", segments.join("/"))
}

#[cfg(test)]
mod tests;
