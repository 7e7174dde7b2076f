//! What the API makes of a request before it asks the scheduler anything:
//! the query string, the query parameters of each route, the JSON bodies
//! of `POST /jobs/{name}/pause` and `/resume`, and the headers it
//! negotiates or authorizes on. Pure functions, used by the handlers in
//! [`super::routes`] and public so the `api_request` fuzz target (and
//! tests) can feed them hostile input without a server.
//!
//! Not here: matching the path against the route table and decoding the
//! `{name}` segment. axum's router does both while it dispatches, and they
//! cannot be reached without it.

use axum::extract::Query;
use axum::http::Uri;
use serde::Deserialize;
use std::collections::HashMap;

pub use super::auth::{BadCredential, Credentials, Grant, Needed};
pub use super::conditional::{accepts_gzip, not_modified};
pub use super::preview::preview;
/// The most fires `GET /schedule/preview` lists, whatever `limit` asks.
pub use super::preview::MAX_LIMIT as MAX_PREVIEW_FIRES;
pub use crate::scheduler::pause::{window as pause_window, PauseRequest, PauseWindow};

/// The query parameters of a request target (`/path?a=1&b=2`), decoded as
/// the handlers' `Query<HashMap<String, String>>` extractor decodes them
/// (percent-decoding, `+` as a space, a repeated key keeps its last
/// value). `Err` when the target is not a valid URI or the query does
/// not decode; the extractor answers 400 then.
pub fn query(target: &str) -> Result<HashMap<String, String>, String> {
    let uri: Uri = target
        .parse()
        .map_err(|e| format!("not a request target: {e}"))?;
    Query::<HashMap<String, String>>::try_from_uri(&uri)
        .map(|Query(map)| map)
        .map_err(|e| e.body_text())
}

/// `GET /schedule/why`: the `job` and `at` parameters, trimmed; both are
/// required and must not be blank.
pub fn why_params(query: &HashMap<String, String>) -> Result<(&str, &str), String> {
    let param = |key: &str| query.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
    match (param("job"), param("at")) {
        (Some(job), Some(at)) => Ok((job, at)),
        _ => {
            Err("both query parameters are required: job=<name> and at=<ISO-8601 timestamp>".into())
        }
    }
}

/// `GET /jobs/{name}/runs`: the `limit` parameter, `None` when absent
/// (every retained run).
pub fn runs_limit(query: &HashMap<String, String>) -> Result<Option<usize>, String> {
    query
        .get("limit")
        .map(|text| {
            text.parse::<usize>()
                .map_err(|_| format!("limit must be a positive integer, got '{text}'"))
        })
        .transpose()
}

/// Reads a clamped integer query parameter (the first of `keys` present);
/// a missing or malformed value gives `default` (the listings that use it
/// never answer 400 for it).
pub fn clamped(
    query: &HashMap<String, String>,
    keys: &[&str],
    default: usize,
    lo: usize,
    hi: usize,
) -> usize {
    keys.iter()
        .find_map(|k| query.get(*k))
        .map(|raw| match raw.trim().parse::<i64>() {
            Ok(n) => n.clamp(lo as i64, hi as i64) as usize,
            Err(_) => default,
        })
        .unwrap_or(default)
}

/// A JSON body that may be left out: empty or blank is the default.
fn optional_body<T: for<'de> Deserialize<'de> + Default>(body: &[u8]) -> Result<T, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))
}

/// `POST /jobs/{name}/pause`: the optional body. Its values are checked
/// when the scheduler turns it into a window ([`pause_window`]).
pub fn pause_body(body: &[u8]) -> Result<PauseRequest, String> {
    optional_body(body)
}

/// The body of `POST /jobs/{name}/resume`: `by`, who resumed it (kept
/// with the resume the cluster's leader records).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeRequest {
    by: Option<String>,
}

/// `POST /jobs/{name}/resume`: the optional body's `by` (`api` when not
/// given).
pub fn resume_body(body: &[u8]) -> Result<String, String> {
    let request = optional_body::<ResumeRequest>(body)?;
    let by = request.by.unwrap_or_else(|| "api".to_owned());
    if by.chars().count() > 100 {
        return Err("by must be at most 100 characters".into());
    }
    Ok(by)
}

/// `?local=true` on `POST /jobs/{name}/start`: start on this node even
/// when another node runs the job. `true`/`1` and `false`/`0` (absent:
/// false); anything else is refused with the reason.
pub fn local_flag(query: &HashMap<String, String>) -> Result<bool, String> {
    match query.get("local").map(String::as_str) {
        None | Some("false" | "0") => Ok(false),
        Some("true" | "1") => Ok(true),
        Some(other) => Err(format!("local must be true or false, not '{other}'")),
    }
}

/// Whether an `Accept` header asks for JSON (`GET /job-set-id` answers
/// text otherwise).
pub fn wants_json(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept
            .split(',')
            .any(|range| range.split(';').next().map(str::trim) == Some("application/json"))
    })
}

/// The access a method needs: reading for `GET` and `HEAD`, control for
/// everything else.
pub fn needed(method: &axum::http::Method) -> Needed {
    if method == axum::http::Method::GET || method == axum::http::Method::HEAD {
        Needed::View
    } else {
        Needed::Control
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decodes_like_the_extractor() {
        let q = query("/schedule/preview?expr=*%2F5+*+*+*+*&tz=Europe/Berlin&tz=UTC").unwrap();
        assert_eq!(q["expr"], "*/5 * * * *");
        assert_eq!(q["tz"], "UTC", "a repeated key keeps its last value");
        assert!(query("/x").unwrap().is_empty());
        assert!(query("not a uri at all\n").is_err());
    }

    #[test]
    fn why_needs_both_parameters() {
        let q = query("/schedule/why?job=+a+&at=2026-01-01").unwrap();
        assert_eq!(why_params(&q), Ok(("a", "2026-01-01")));
        let q = query("/schedule/why?job=a&at=%20").unwrap();
        assert!(why_params(&q)
            .unwrap_err()
            .starts_with("both query parameters"));
    }

    #[test]
    fn limits_and_bodies() {
        assert_eq!(runs_limit(&query("/r?limit=3").unwrap()), Ok(Some(3)));
        assert_eq!(runs_limit(&query("/r").unwrap()), Ok(None));
        assert_eq!(
            runs_limit(&query("/r?limit=-1").unwrap()),
            Err("limit must be a positive integer, got '-1'".into())
        );
        assert_eq!(
            clamped(&query("/a?limit=999").unwrap(), &["limit"], 5, 1, 50),
            50
        );
        assert_eq!(
            clamped(&query("/a?limit=x").unwrap(), &["limit"], 5, 1, 50),
            5
        );
        assert_eq!(pause_body(b"  \n").unwrap().note, None);
        assert_eq!(
            pause_body(br#"{"note": "x", "durationSeconds": 60}"#)
                .unwrap()
                .duration_seconds,
            Some(60)
        );
        assert!(pause_body(br#"{"nope": 1}"#)
            .unwrap_err()
            .starts_with("invalid JSON body: unknown field `nope`"));
        assert_eq!(resume_body(br#"{"by": "me"}"#), Ok("me".to_owned()));
        assert_eq!(resume_body(b" "), Ok("api".to_owned()));
        assert!(resume_body(b"[").is_err());
        let long = format!(r#"{{"by": "{}"}}"#, "x".repeat(101));
        assert_eq!(
            resume_body(long.as_bytes()),
            Err("by must be at most 100 characters".to_owned())
        );
    }

    #[test]
    fn accept_negotiation() {
        assert!(wants_json(Some("text/html, application/json;q=0.9")));
        assert!(!wants_json(Some("application/jsonx")));
        assert!(!wants_json(None));
        assert_eq!(needed(&axum::http::Method::HEAD), Needed::View);
        assert_eq!(needed(&axum::http::Method::DELETE), Needed::Control);
    }
}
