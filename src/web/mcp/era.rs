//! The stateless revision `2026-07-28` ("modern"), beside the revisions
//! `initialize` negotiates ("legacy"). A modern request carries its
//! revision itself, in `params._meta` (and, over HTTP, mirrored into
//! headers), so every request is served on its own: there is no
//! handshake and no `ping`, `server/discover` tells a client what the
//! server speaks, and every result says `resultType` and, for the lists
//! and reads, how long it may be cached.
//!
//! Pure rules over a message and its headers; the dispatch
//! ([`super::rpc`]) and the transport ([`super::http`]) apply them.

use super::rpc::{RpcError, INVALID_PARAMS};
use super::{MODERN_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS};
use base64::Engine;
use serde_json::{json, Map, Value};

/// The `_meta` key of a modern request naming its revision.
pub(super) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a modern request stating what the client can do.
pub(super) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of a modern result naming the server.
pub(super) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A modern request whose mirrored headers disagree with its body.
pub(super) const HEADER_MISMATCH: i64 = -32020;
/// A modern request naming a revision this server does not speak.
pub(super) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// How long a list may be cached: the lists change only when the config
/// is reloaded.
const LIST_TTL_MS: u64 = 60_000;
/// `resources/read` answers live data.
const READ_TTL_MS: u64 = 0;

/// Every revision served, newest first (what `server/discover` and a
/// `-32022` error list).
pub(super) fn all_versions() -> Vec<&'static str> {
    let mut all: Vec<&str> = MODERN_PROTOCOL_VERSIONS
        .iter()
        .chain(SUPPORTED_PROTOCOL_VERSIONS.iter())
        .copied()
        .collect();
    // The revisions are dates, so their text sorts by age.
    all.sort_unstable_by(|a, b| b.cmp(a));
    all.dedup();
    all
}

/// Whether `version` is a modern revision this server speaks.
pub(super) fn is_modern(version: &str) -> bool {
    MODERN_PROTOCOL_VERSIONS.contains(&version)
}

/// Whether `method` exists only before `2026-07-28` (the handshake and
/// `ping`, which that revision removed).
pub(super) fn legacy_only(method: &str) -> bool {
    matches!(method, "initialize" | "notifications/initialized" | "ping")
}

/// Whether `method` exists only from `2026-07-28` on.
pub(super) fn modern_only(method: &str) -> bool {
    method == "server/discover"
}

/// The cache lifetime a modern result of `method` carries, if any.
fn ttl_ms(method: &str) -> Option<u64> {
    match method {
        "server/discover"
        | "tools/list"
        | "resources/list"
        | "resources/templates/list"
        | "prompts/list" => Some(LIST_TTL_MS),
        "resources/read" => Some(READ_TTL_MS),
        _ => None,
    }
}

/// The request's `params._meta`, when it is an object.
fn request_meta(message: &Map<String, Value>) -> Option<&Map<String, Value>> {
    message.get("params")?.get("_meta")?.as_object()
}

/// Whether the body names a protocol revision, as only a modern client
/// does.
pub(super) fn declares_modern(message: &Map<String, Value>) -> bool {
    request_meta(message).is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION))
}

/// The revision the body names, when it is text.
fn declared_version(message: &Map<String, Value>) -> Option<&str> {
    request_meta(message)?.get(META_PROTOCOL_VERSION)?.as_str()
}

/// A modern request missing the `_meta` fields the revision requires
/// (the revision as text, the client capabilities as an object).
pub(super) fn meta_error(message: &Map<String, Value>) -> Option<RpcError> {
    let meta = request_meta(message);
    let complete = meta.is_some_and(|meta| {
        meta.get(META_PROTOCOL_VERSION)
            .is_some_and(Value::is_string)
            && meta
                .get(META_CLIENT_CAPABILITIES)
                .is_some_and(Value::is_object)
    });
    if complete {
        return None;
    }
    Some(
        RpcError::new(
            INVALID_PARAMS,
            format!(
                "params._meta needs '{META_PROTOCOL_VERSION}' (text) and \
                 '{META_CLIENT_CAPABILITIES}' (an object)"
            ),
        )
        .with_status(400),
    )
}

/// A modern request naming a revision this server does not speak: the
/// error lists the revisions it does, so the client can pick one.
pub(super) fn version_error(message: &Map<String, Value>) -> Option<RpcError> {
    let requested = request_meta(message).and_then(|m| m.get(META_PROTOCOL_VERSION));
    if requested.and_then(Value::as_str).is_some_and(is_modern) {
        return None;
    }
    Some(
        RpcError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            .with_data(json!({
                "supported": all_versions(),
                "requested": requested.cloned().unwrap_or(Value::Null),
            }))
            .with_status(400),
    )
}

/// The headers a modern request mirrors its body into.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Mirrored {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method`.
    pub method: Option<String>,
    /// `Mcp-Name` (as sent: possibly in its Base64 form).
    pub name: Option<String>,
}

/// The field of `params` a method mirrors into `Mcp-Name`.
fn name_source(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// The prefix and suffix of a header value sent Base64-encoded (a value
/// that is not plain ASCII).
const B64_PREFIX: &str = "=?base64?";
const B64_SUFFIX: &str = "?=";

/// A header value as its sender meant it: the Base64 form decoded, any
/// other value as it is; `None` when the Base64 form does not decode to
/// UTF-8.
pub(super) fn decode_header_value(value: &str) -> Option<String> {
    let Some(encoded) = value
        .strip_prefix(B64_PREFIX)
        .and_then(|rest| rest.strip_suffix(B64_SUFFIX))
    else {
        return Some(value.to_owned());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    String::from_utf8(bytes).ok()
}

fn mismatch(detail: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, format!("Header mismatch: {detail}")).with_status(400)
}

/// A modern request whose headers are missing or disagree with its body
/// (checked after [`meta_error`], so the body names its revision).
pub(super) fn header_error(message: &Map<String, Value>, headers: &Mirrored) -> Option<RpcError> {
    let method = message.get("method").and_then(Value::as_str);
    let mut expected: Vec<(&str, Option<&String>, Option<&str>)> = vec![
        (
            "MCP-Protocol-Version",
            headers.protocol_version.as_ref(),
            declared_version(message),
        ),
        ("Mcp-Method", headers.method.as_ref(), method),
    ];
    if let Some(field) = method.and_then(name_source) {
        let body = message
            .get("params")
            .and_then(|p| p.get(field))
            .and_then(Value::as_str);
        expected.push(("Mcp-Name", headers.name.as_ref(), body));
    }
    for (header, sent, body) in expected {
        let Some(sent) = sent else {
            return Some(mismatch(format!("the {header} header is missing")));
        };
        let sent = if header == "Mcp-Name" {
            match decode_header_value(sent) {
                Some(decoded) => decoded,
                None => return Some(mismatch("the Mcp-Name header is not valid Base64".into())),
            }
        } else {
            sent.clone()
        };
        if Some(sent.as_str()) != body {
            let body = body.map_or_else(|| "nothing".to_owned(), |b| format!("'{b}'"));
            return Some(mismatch(format!(
                "the {header} header says '{sent}' but the body says {body}"
            )));
        }
    }
    None
}

/// The server's short identity, which every modern result carries.
pub(super) fn identity() -> Value {
    json!({
        "name": "cronstable",
        "title": "cronstable",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The fields every modern result of `method` carries: `resultType`, the
/// server's identity in `_meta` (unless the result names it already) and
/// the cache hints of the lists and reads.
pub(super) fn finish(method: &str, result: Value) -> Value {
    let mut out = match result {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    out.insert("resultType".into(), json!("complete"));
    let meta = out
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(META_SERVER_INFO).or_insert_with(identity);
    }
    if let Some(ttl) = ttl_ms(method) {
        out.insert("ttlMs".into(), json!(ttl));
        // The lists depend on the caller's token and the data is the
        // operator's: never for a shared cache.
        out.insert("cacheScope".into(), json!("private"));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(value: Value) -> Map<String, Value> {
        value.as_object().expect("an object").clone()
    }

    fn modern(method: &str, params: Value) -> Map<String, Value> {
        let mut params = params.as_object().cloned().unwrap_or_default();
        params.insert(
            "_meta".into(),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}),
        );
        message(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    }

    fn headers(version: &str, method: &str, name: Option<&str>) -> Mirrored {
        Mirrored {
            protocol_version: Some(version.into()),
            method: Some(method.into()),
            name: name.map(str::to_owned),
        }
    }

    #[test]
    fn the_revisions_are_listed_newest_first() {
        assert_eq!(
            all_versions(),
            ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
        );
        assert!(is_modern("2026-07-28"));
        assert!(!is_modern("2025-11-25"));
    }

    #[test]
    fn only_a_body_naming_a_revision_is_modern() {
        assert!(declares_modern(&modern("tools/list", json!({}))));
        let legacy = message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                    "params": {"_meta": {"progressToken": 3}}}));
        assert!(!declares_modern(&legacy));
        let bare = message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        assert!(!declares_modern(&bare));
    }

    #[test]
    fn the_meta_needs_the_version_and_the_capabilities() {
        assert_eq!(meta_error(&modern("tools/list", json!({}))), None);
        let no_caps = message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}}));
        let err = meta_error(&no_caps).expect("refused");
        assert_eq!((err.code, err.status), (INVALID_PARAMS, 400));
        let not_text = message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {META_PROTOCOL_VERSION: 20260728, META_CLIENT_CAPABILITIES: {}}}}));
        assert!(meta_error(&not_text).is_some());
    }

    #[test]
    fn an_unknown_revision_is_told_what_is_spoken() {
        assert_eq!(version_error(&modern("tools/list", json!({}))), None);
        let mut later = modern("tools/list", json!({}));
        later["params"]["_meta"][META_PROTOCOL_VERSION] = json!("2099-01-01");
        let err = version_error(&later).expect("refused");
        assert_eq!(err.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(err.status, 400);
        assert_eq!(
            err.data,
            Some(
                json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                        "requested": "2099-01-01"})
            )
        );
        // A legacy revision named in _meta is not spoken statelessly.
        let mut legacy = modern("tools/list", json!({}));
        legacy["params"]["_meta"][META_PROTOCOL_VERSION] = json!("2025-11-25");
        assert!(version_error(&legacy).is_some());
    }

    #[test]
    fn the_headers_must_mirror_the_body() {
        let call = modern("tools/call", json!({"name": "cron_get_version"}));
        let good = headers("2026-07-28", "tools/call", Some("cron_get_version"));
        assert_eq!(header_error(&call, &good), None);
        // The name may travel Base64-encoded.
        let encoded = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode("cron_get_version")
        );
        let b64 = headers("2026-07-28", "tools/call", Some(&encoded));
        assert_eq!(header_error(&call, &b64), None);
        for bad in [
            Mirrored::default(),
            headers("2025-11-25", "tools/call", Some("cron_get_version")),
            headers("2026-07-28", "tools/list", Some("cron_get_version")),
            headers("2026-07-28", "tools/call", None),
            headers("2026-07-28", "tools/call", Some("cron_list_jobs")),
            headers("2026-07-28", "tools/call", Some("=?base64?!!?=")),
        ] {
            let err = header_error(&call, &bad).expect("a mismatch");
            assert_eq!((err.code, err.status), (HEADER_MISMATCH, 400), "{bad:?}");
            assert!(
                err.message.starts_with("Header mismatch: "),
                "{}",
                err.message
            );
        }
        // Only the methods with a name mirror one.
        let list = modern("tools/list", json!({}));
        assert_eq!(
            header_error(&list, &headers("2026-07-28", "tools/list", None)),
            None
        );
        let read = modern("resources/read", json!({"uri": "cronstable://status"}));
        assert_eq!(
            header_error(
                &read,
                &headers("2026-07-28", "resources/read", Some("cronstable://status"))
            ),
            None
        );
    }

    #[test]
    fn header_values_decode_only_in_their_base64_form() {
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_header_value("=?base64?bmlnaHRseSDinJM=?=").as_deref(),
            Some("nightly ✓")
        );
        assert_eq!(decode_header_value("=?base64?%%?="), None);
        // Bytes that are not UTF-8.
        assert_eq!(decode_header_value("=?base64?/w==?="), None);
    }

    #[test]
    fn modern_results_carry_their_type_identity_and_cache_hints() {
        let listed = finish("tools/list", json!({"tools": []}));
        assert_eq!(listed["resultType"], "complete");
        assert_eq!(listed["ttlMs"], json!(60_000));
        assert_eq!(listed["cacheScope"], "private");
        assert_eq!(listed["_meta"][META_SERVER_INFO]["name"], "cronstable");
        let read = finish("resources/read", json!({"contents": []}));
        assert_eq!(read["ttlMs"], json!(0));
        let called = finish("tools/call", json!({"content": []}));
        assert!(called.get("ttlMs").is_none());
        assert!(called.get("cacheScope").is_none());
        // A fuller identity already in the result stays.
        let discovered = finish(
            "server/discover",
            json!({"_meta": {META_SERVER_INFO: {"name": "cronstable", "description": "x"}}}),
        );
        assert_eq!(discovered["_meta"][META_SERVER_INFO]["description"], "x");
    }

    #[test]
    fn the_eras_split_the_methods() {
        for method in ["initialize", "notifications/initialized", "ping"] {
            assert!(legacy_only(method) && !modern_only(method));
        }
        assert!(modern_only("server/discover"));
        for method in ["tools/list", "tools/call", "notifications/cancelled"] {
            assert!(!legacy_only(method) && !modern_only(method));
        }
    }
}
