//! Conditional and compressed JSON answers for the routes dashboards poll
//! (`GET /jobs`, `GET /activity`): a strong `ETag`, `304 Not Modified` when
//! the client's `If-None-Match` names it, and gzip when the client accepts
//! it and the body is worth compressing.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::io::Write;

/// Bodies shorter than this go out as they are: compressing them saves
/// less than the headers cost.
const GZIP_MIN_BYTES: usize = 1024;

/// Bodies at least this long are compressed on the blocking pool, so the
/// API's runtime keeps answering other requests meanwhile.
const GZIP_OFF_THREAD_BYTES: usize = 256 * 1024;

/// A strong entity tag from a 128-bit digest, quoted as HTTP wants it.
pub fn etag_of(digest: &[u8]) -> String {
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether the request's `If-None-Match` names `etag` (or `*`). A weak
/// validator (`W/"…"`) matches its strong twin: a 304 only says the
/// client's copy is still good, which weak comparison allows.
pub fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|list| {
            list.split(',')
                .map(str::trim)
                .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
        })
}

/// Whether the client accepts a gzip body (`Accept-Encoding: gzip`, not
/// refused with `q=0`).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

fn gzip(body: &[u8]) -> std::io::Result<Vec<u8>> {
    // The fast level: a 3 MB /jobs shrinks about tenfold either way, and
    // the default level costs several times the CPU for a few percent.
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 8),
        flate2::Compression::fast(),
    );
    encoder.write_all(body)?;
    encoder.finish()
}

/// The answer to a conditional GET of a JSON document: `304` with the tag
/// when the client has it, else the body with its tag, gzip-compressed
/// when accepted and large enough.
pub async fn json(headers: &HeaderMap, etag: &str, body: Vec<u8>) -> Response {
    let Ok(tag) = HeaderValue::from_str(etag) else {
        // Tags are hex digests: this cannot fail, but never answer 500 for
        // a tag: send the body untagged.
        return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    };
    if not_modified(headers, etag) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response();
    }
    let vary = (header::VARY, HeaderValue::from_static("Accept-Encoding"));
    let content_type = (
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if body.len() >= GZIP_MIN_BYTES && accepts_gzip(headers) {
        let compressed = if body.len() >= GZIP_OFF_THREAD_BYTES {
            match tokio::task::spawn_blocking(move || (gzip(&body), body)).await {
                Ok((compressed, body)) => compressed.map_err(|_| body),
                Err(_) => Err(Vec::new()),
            }
        } else {
            gzip(&body).map_err(|_| body)
        };
        match compressed {
            Ok(zipped) => {
                return (
                    [
                        content_type,
                        (header::ETAG, tag),
                        (header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
                        vary,
                    ],
                    Body::from(zipped),
                )
                    .into_response();
            }
            // Compression failed (it writes to memory: it does not), or
            // the blocking pool is gone at shutdown: an empty body here
            // would be wrong, so say so.
            Err(body) if body.is_empty() => {
                return StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
            Err(body) => {
                return ([content_type, (header::ETAG, tag), vary], Body::from(body))
                    .into_response()
            }
        }
    }
    ([content_type, (header::ETAG, tag), vary], Body::from(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn gzip_is_negotiated_as_rfc_9110_says() {
        for (value, expected) in [
            ("gzip", true),
            ("gzip, deflate, br", true),
            ("deflate, GZIP;q=0.5", true),
            ("*", true),
            ("gzip;q=0", false),
            ("gzip; q=0.0, identity", false),
            ("br, deflate", false),
            ("identity", false),
        ] {
            assert_eq!(
                accepts_gzip(&headers(&[("accept-encoding", value)])),
                expected,
                "{value}"
            );
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn if_none_match_lists_and_weak_tags_match() {
        let tag = "\"abc\"";
        assert!(not_modified(&headers(&[("if-none-match", "\"abc\"")]), tag));
        assert!(not_modified(
            &headers(&[("if-none-match", "\"x\", W/\"abc\"")]),
            tag
        ));
        assert!(not_modified(&headers(&[("if-none-match", "*")]), tag));
        assert!(!not_modified(
            &headers(&[("if-none-match", "\"abd\"")]),
            tag
        ));
        assert!(!not_modified(&HeaderMap::new(), tag));
    }

    #[tokio::test]
    async fn a_large_body_is_compressed_and_decompresses_to_itself() {
        let body: Vec<u8> = (0..400_000u32)
            .flat_map(|i| (i % 97).to_string().into_bytes())
            .collect();
        let answer = json(
            &headers(&[("accept-encoding", "gzip")]),
            "\"t\"",
            body.clone(),
        )
        .await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(answer.headers()[header::ETAG], "\"t\"");
        let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX)
            .await
            .unwrap();
        assert!(
            bytes.len() < body.len() / 2,
            "{} of {}",
            bytes.len(),
            body.len()
        );
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut plain)
            .unwrap();
        assert_eq!(plain, body);
        // Not accepted: the body as it is; named tag: 304 without a body.
        let answer = json(&HeaderMap::new(), "\"t\"", body.clone()).await;
        assert!(answer.headers().get(header::CONTENT_ENCODING).is_none());
        let answer = json(&headers(&[("if-none-match", "\"t\"")]), "\"t\"", body).await;
        assert_eq!(answer.status(), StatusCode::NOT_MODIFIED);
    }
}
