//! The web dashboard: `GET /` (the page) and `GET /ui/{file}` (its style
//! sheet and scripts), embedded in the binary so the page works offline,
//! from a read-only root filesystem, and under a Content-Security-Policy
//! that allows nothing inline: every script and style is a file of this
//! origin. `web.ui: false` turns both routes into the API's 404.
//!
//! The page itself carries no data (the scripts fetch it with the
//! browser's token), so both routes need no token. Each file is prepared
//! once per process: its bytes, a gzip copy, and a strong `ETag`. The
//! page names its files with `?v=<digest of every file>`, so a browser
//! may keep them for a year (a new binary changes the digest) and only
//! revalidates the page (`Cache-Control: no-cache`, `304` on a match).

use super::conditional;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::io::Write;
use std::sync::OnceLock;

/// The page, with `{{v}}` where the files' version goes.
const INDEX: &str = include_str!("ui/index.html");

/// Every file under `/ui/`: name, content type, bytes.
const FILES: &[(&str, &str, &str)] = &[
    (
        "dashboard.css",
        "text/css; charset=utf-8",
        include_str!("ui/dashboard.css"),
    ),
    ("base.js", JS, include_str!("ui/base.js")),
    ("table.js", JS, include_str!("ui/table.js")),
    ("drawer.js", JS, include_str!("ui/drawer.js")),
    ("tabs.js", JS, include_str!("ui/tabs.js")),
    ("panels.js", JS, include_str!("ui/panels.js")),
    ("charts.js", JS, include_str!("ui/charts.js")),
    ("node.js", JS, include_str!("ui/node.js")),
    ("store.js", JS, include_str!("ui/store.js")),
    ("palette.js", JS, include_str!("ui/palette.js")),
    ("wallboard.js", JS, include_str!("ui/wallboard.js")),
    ("main.js", JS, include_str!("ui/main.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// The page's security headers: scripts, styles and requests from this
/// origin only (no inline code at all), no framing, no referrer. An
/// operator's `web.headers` entry of the same name replaces one of these.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "content-security-policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; \
         object-src 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
];

/// Whether `path` is one of the dashboard's routes (served without a
/// token: the page and its files hold no data).
pub fn is_ui_path(path: &str) -> bool {
    path == "/" || path.starts_with("/ui/")
}

/// Whether an operator's `web.headers` entry must not replace `name` on a
/// dashboard response: its type, encoding, validator and caching are the
/// file's own, and a wrong one breaks the page.
pub fn keeps_own(name: &HeaderName) -> bool {
    [
        header::CONTENT_TYPE,
        header::CONTENT_ENCODING,
        header::ETAG,
        header::CACHE_CONTROL,
        header::VARY,
    ]
    .contains(name)
}

/// One file as served.
struct Prepared {
    content_type: &'static str,
    body: Vec<u8>,
    gzip: Vec<u8>,
    etag: String,
}

impl Prepared {
    fn new(content_type: &'static str, body: Vec<u8>) -> Prepared {
        use sha2::Digest;
        let etag = conditional::etag_of(&sha2::Sha256::digest(&body));
        // Compressed once at the best level: every load of the page
        // transfers these bytes and the CPU is spent once per process.
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing to memory does not fail; without a copy (empty) the
        // plain body is sent.
        let gzip: Vec<u8> = encoder
            .write_all(&body)
            .and_then(|()| encoder.finish())
            .unwrap_or_default();
        Prepared {
            content_type,
            body,
            gzip,
            etag,
        }
    }
}

/// Every file prepared, and the version the page names them with.
struct Bundle {
    index: Prepared,
    files: Vec<(&'static str, Prepared)>,
    version: String,
}

fn bundle() -> &'static Bundle {
    static BUNDLE: OnceLock<Bundle> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        use sha2::Digest;
        let mut digest = sha2::Sha256::new();
        for (name, _, text) in FILES {
            digest.update(name.as_bytes());
            digest.update(text.as_bytes());
        }
        let version: String = digest
            .finalize()
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect();
        let page = INDEX.replace("{{v}}", &version);
        Bundle {
            index: Prepared::new("text/html; charset=utf-8", page.into_bytes()),
            files: FILES
                .iter()
                .map(|(name, kind, text)| (*name, Prepared::new(kind, text.as_bytes().to_vec())))
                .collect(),
            version,
        }
    })
}

/// The API's 404 (also the answer of both routes while `web.ui` is off).
pub fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(serde_json::json!({"error": "404: Not Found"})),
    )
        .into_response()
}

/// `file` with its security, caching and validator headers: `304` when
/// the request names its tag, gzip when accepted.
fn answer(headers: &HeaderMap, file: &Prepared, cache: &'static str) -> Response {
    let mut out = HeaderMap::new();
    for (name, value) in SECURITY_HEADERS {
        out.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if let Ok(tag) = HeaderValue::from_str(&file.etag) {
        out.insert(header::ETAG, tag);
    }
    if conditional::not_modified(headers, &file.etag) {
        return (StatusCode::NOT_MODIFIED, out).into_response();
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(file.content_type),
    );
    if !file.gzip.is_empty() && conditional::accepts_gzip(headers) {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        return (out, file.gzip.clone()).into_response();
    }
    (out, file.body.clone()).into_response()
}

/// The page (`GET /`).
pub fn page(headers: &HeaderMap) -> Response {
    answer(headers, &bundle().index, "no-cache")
}

/// The file `name` (`GET /ui/{name}`), or the API's 404. Asked for with
/// the current version (`query` holds `v=<version>`), it may be kept for
/// a year; otherwise it is revalidated like the page.
pub fn file(name: &str, query: Option<&str>, headers: &HeaderMap) -> Response {
    let bundle = bundle();
    let Some((_, file)) = bundle.files.iter().find(|(n, _)| *n == name) else {
        return not_found();
    };
    let wanted = format!("v={}", bundle.version);
    let current = query.is_some_and(|q| q.split('&').any(|kv| kv == wanted));
    let cache = if current {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    answer(headers, file, cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_every_file_with_the_current_version() {
        let bundle = bundle();
        let page = String::from_utf8(bundle.index.body.clone()).unwrap();
        assert!(!page.contains("{{"), "a placeholder is left in the page");
        for (name, _, _) in FILES {
            let link = format!("/ui/{name}?v={}", bundle.version);
            assert!(page.contains(&link), "the page does not load {link}");
        }
    }

    /// Nothing inline: the policy allows no inline script, style or
    /// handler attribute, so one in the files would be refused (and the
    /// page broken) in the browser.
    #[test]
    fn the_page_has_no_inline_script_style_or_handler() {
        let page = String::from_utf8(bundle().index.body.clone()).unwrap();
        let lower = page.to_ascii_lowercase();
        assert!(!lower.contains(" style="), "inline style attribute");
        assert!(!lower.contains("<style"), "inline style element");
        for chunk in lower.split("<script").skip(1) {
            let tag_end = chunk.find('>').unwrap();
            assert!(chunk[..tag_end].contains("src="), "inline script");
            assert!(chunk[tag_end + 1..].trim_start().starts_with("</script"));
        }
        let handler = [
            "onclick=",
            "onload=",
            "oninput=",
            "onchange=",
            "onkeydown=",
            "onerror=",
        ]
        .iter()
        .any(|attr| lower.contains(attr));
        assert!(!handler, "inline event handler attribute");
    }

    #[test]
    fn files_are_compressed_and_tagged() {
        for (name, file) in &bundle().files {
            assert!(
                !file.gzip.is_empty() && file.gzip.len() < file.body.len(),
                "{name}"
            );
            assert!(
                file.etag.starts_with('"') && file.etag.len() == 34,
                "{name}"
            );
        }
        assert!(is_ui_path("/") && is_ui_path("/ui/base.js"));
        assert!(!is_ui_path("/jobs") && !is_ui_path("/uix"));
    }
}
