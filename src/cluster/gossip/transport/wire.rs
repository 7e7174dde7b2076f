//! The small, pure pieces of the `/peer` exchange: parsing a request head,
//! negotiating gzip, checking a tag, compressing and (capped)
//! decompressing.

use std::io::{Read, Write};

/// The most a request head (request line and headers) may weigh. A `/peer`
/// poll needs a few hundred bytes.
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;

/// The most header lines a request may carry.
const MAX_HEADERS: usize = 64;

/// A parsed request head: only what the listener acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// The method, as sent.
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The `If-None-Match` value, when there is one.
    pub if_none_match: Option<String>,
    /// Whether `Accept-Encoding` admits gzip.
    pub accepts_gzip: bool,
    /// Whether the request announces a body (`Content-Length` above zero
    /// or any `Transfer-Encoding`): `/peer` takes none.
    pub has_body: bool,
    /// Whether the client wants the connection kept open afterwards.
    pub keep_alive: bool,
}

/// Why a head could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// Not HTTP/1.x as we read it.
    Malformed(&'static str),
    /// Longer than [`MAX_REQUEST_HEAD`] or with too many headers.
    TooLarge,
}

/// Where the head ends in `buf` (the index just past the blank line), once
/// it is complete.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a complete head (ending with the blank line).
pub fn parse_head(head: &[u8]) -> Result<RequestHead, HeadError> {
    if head.len() > MAX_REQUEST_HEAD {
        return Err(HeadError::TooLarge);
    }
    let text = std::str::from_utf8(head).map_err(|_| HeadError::Malformed("not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed("bad request line"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(HeadError::Malformed("bad method"));
    }
    if !target.starts_with('/') {
        return Err(HeadError::Malformed("bad target"));
    }
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(HeadError::Malformed("bad version")),
    };
    let path = target.split('?').next().unwrap_or(target).to_owned();
    let mut head = RequestHead {
        method: method.to_owned(),
        path,
        if_none_match: None,
        accepts_gzip: false,
        has_body: false,
        keep_alive: http11,
    };
    let mut count = 0;
    for line in lines {
        if line.is_empty() {
            continue;
        }
        count += 1;
        if count > MAX_HEADERS {
            return Err(HeadError::TooLarge);
        }
        if line.starts_with([' ', '\t']) {
            // Folded continuation lines are obsolete and a classic
            // smuggling vector: refuse rather than guess.
            return Err(HeadError::Malformed("folded header"));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(HeadError::Malformed("header without a colon"));
        };
        let value = value.trim_matches([' ', '\t']);
        match name.to_ascii_lowercase().as_str() {
            "if-none-match" => head.if_none_match = Some(value.to_owned()),
            "accept-encoding" => head.accepts_gzip = accepts_gzip(value),
            "content-length" => match value.parse::<u64>() {
                Ok(0) => {}
                Ok(_) => head.has_body = true,
                Err(_) => return Err(HeadError::Malformed("bad Content-Length")),
            },
            "transfer-encoding" => head.has_body = true,
            "connection" => {
                for token in value.split(',').map(|t| t.trim().to_ascii_lowercase()) {
                    if token == "close" {
                        head.keep_alive = false;
                    } else if token == "keep-alive" && !http11 {
                        // HTTP/1.0 keep-alive is not worth supporting: the
                        // poller speaks 1.1.
                    }
                }
            }
            _ => {}
        }
    }
    Ok(head)
}

/// Whether an `Accept-Encoding` value admits gzip (`gzip` or `*` with a
/// non-zero quality).
pub fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|item| {
        let mut params = item.split(';');
        let coding = params
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if coding != "gzip" && coding != "x-gzip" && coding != "*" {
            return false;
        }
        for param in params {
            if let Some((k, v)) = param.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    return v.trim().parse::<f32>().map(|q| q > 0.0).unwrap_or(false);
                }
            }
        }
        true
    })
}

/// Whether `tag` is a strong entity tag: `"` visible ASCII without `"` `"`.
pub fn is_strong_etag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    bytes.len() >= 2
        && bytes[0] == b'"'
        && bytes[bytes.len() - 1] == b'"'
        && bytes[1..bytes.len() - 1]
            .iter()
            .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b))
}

/// gzip-compresses `data`.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4 + 64),
        flate2::Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

/// Why a gzip body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GunzipError {
    /// It inflates past the cap (a gzip bomb, or just too big).
    TooLarge,
    /// It is not valid gzip.
    Bad(String),
}

/// Decompresses `data`, refusing to produce more than `cap` bytes (the
/// decoder stops one byte past the cap, so a bomb costs `cap` bytes of
/// memory at most).
pub fn gunzip_capped(data: &[u8], cap: usize) -> Result<Vec<u8>, GunzipError> {
    let mut out = Vec::new();
    let decoder = flate2::read::GzDecoder::new(data);
    decoder
        .take(cap as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| GunzipError::Bad(e.to_string()))?;
    if out.len() > cap {
        return Err(GunzipError::TooLarge);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<RequestHead, HeadError> {
        parse_head(s.as_bytes())
    }

    #[test]
    fn a_poll_head_parses() {
        let head = parse(
            "GET /peer?x=1 HTTP/1.1\r\nHost: a:1\r\nIf-None-Match: \"abc\"\r\naccept-encoding: br, gzip;q=0.5\r\n\r\n",
        )
        .unwrap();
        assert_eq!(head.method, "GET");
        assert_eq!(head.path, "/peer");
        assert_eq!(head.if_none_match.as_deref(), Some("\"abc\""));
        assert!(head.accepts_gzip);
        assert!(!head.has_body);
        assert!(head.keep_alive);
    }

    #[test]
    fn connection_close_and_http10_do_not_keep_alive() {
        assert!(
            !parse("GET /peer HTTP/1.1\r\nConnection: close\r\n\r\n")
                .unwrap()
                .keep_alive
        );
        assert!(!parse("GET /peer HTTP/1.0\r\n\r\n").unwrap().keep_alive);
    }

    #[test]
    fn bodies_are_noticed() {
        assert!(
            parse("POST /peer HTTP/1.1\r\nContent-Length: 5\r\n\r\n")
                .unwrap()
                .has_body
        );
        assert!(
            parse("POST /peer HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
                .unwrap()
                .has_body
        );
        assert!(
            !parse("GET /peer HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
                .unwrap()
                .has_body
        );
    }

    #[test]
    fn garbage_is_malformed() {
        for bad in [
            "\u{1}\u{2}\r\n\r\n",
            "GET /peer\r\n\r\n",
            "GET peer HTTP/1.1\r\n\r\n",
            "GET /peer HTTP/2\r\n\r\n",
            "get /peer HTTP/1.1\r\n\r\n",
            "GET /peer HTTP/1.1\r\nNoColon\r\n\r\n",
            "GET /peer HTTP/1.1\r\nA: b\r\n c\r\n\r\n",
            "GET /peer HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        ] {
            assert!(
                matches!(parse(bad), Err(HeadError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_head(&[0xff, 0xfe, b'\r', b'\n', b'\r', b'\n']),
            Err(HeadError::Malformed(_))
        ));
    }

    #[test]
    fn too_many_headers_is_too_large() {
        let mut s = String::from("GET /peer HTTP/1.1\r\n");
        for i in 0..=MAX_HEADERS {
            s.push_str(&format!("X-{i}: y\r\n"));
        }
        s.push_str("\r\n");
        assert_eq!(parse(&s), Err(HeadError::TooLarge));
    }

    #[test]
    fn gzip_negotiation() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("deflate, GZIP"));
        assert!(accepts_gzip("*"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("deflate, br"));
        assert!(!accepts_gzip(""));
    }

    #[test]
    fn strong_etags() {
        assert!(is_strong_etag("\"abc123\""));
        assert!(!is_strong_etag("W/\"abc\""));
        assert!(!is_strong_etag("abc"));
        assert!(!is_strong_etag("\"a\"b\""));
        assert!(!is_strong_etag("\"a\r\nX: y\""));
        assert!(!is_strong_etag("\""));
    }

    #[test]
    fn gzip_round_trip_and_caps() {
        let data = vec![b'a'; 100_000];
        let packed = gzip(&data);
        assert!(packed.len() < 2_000, "{}", packed.len());
        assert_eq!(gunzip_capped(&packed, 100_000).unwrap(), data);
        assert_eq!(gunzip_capped(&packed, 99_999), Err(GunzipError::TooLarge));
        assert!(matches!(
            gunzip_capped(b"not gzip at all", 1000),
            Err(GunzipError::Bad(_))
        ));
        // A truncated stream is bad, not a short success.
        assert!(matches!(
            gunzip_capped(&packed[..packed.len() / 2], 200_000),
            Err(GunzipError::Bad(_))
        ));
    }

    #[test]
    fn head_end_finds_the_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
