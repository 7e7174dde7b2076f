//! Feeds arbitrary text through what the HTTP API makes of a request
//! before it asks the scheduler anything (`cronstable::web::request`): an
//! HTTP-like request (`METHOD TARGET`, header lines, a blank line, the
//! body). The query string is decoded as the handlers' extractor decodes
//! it and handed to each route's parameter parsing (`/schedule/preview`
//! in full, `/schedule/why`'s parameters, timestamp and explanation over
//! fixed job schedules, `/jobs/{name}/runs` and `/activity` limits); the
//! body is read as a pause and a resume body and a pause turned into a
//! window; `Authorization`, `Origin`/`Host`, `Accept`, `If-None-Match` and
//! `Accept-Encoding` go through auth and negotiation. Route matching and
//! `{name}` decoding happen inside axum's router and are not reached.
//! Refusing is fine; a panic, or an answer breaking its documented bounds,
//! is not.
#![no_main]

use chrono::{DateTime, TimeZone, Utc};
use cronstable::config::{load_sources, Source, SourceKind};
use cronstable::cronexpr::{why, Probe, Schedule, TimeBase};
use cronstable::web::request::{self, Credentials, Needed};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// Two scoped tokens and an anonymous view grant, as a web section says.
const WEB: &str = r#"
web:
  listen: ["http://127.0.0.1:8080"]
  authTokens:
    - value: s3cret-control
      label: ops
      scopes: [control]
    - value: viewer-token
  anonymousScopes: [view]
  allowedOrigins: ["https://dash.example"]
"#;

const TOKENS: [&str; 2] = ["s3cret-control", "viewer-token"];

fn credentials() -> &'static Credentials {
    static CREDENTIALS: OnceLock<Credentials> = OnceLock::new();
    CREDENTIALS.get_or_init(|| {
        let loaded = load_sources(&[Source {
            name: "fuzz.yaml".to_owned(),
            text: WEB.to_owned(),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("the fuzz target's web section loads");
        let web = loaded.sections.web.expect("a web section").value;
        Credentials::resolve(&web).expect("the tokens resolve")
    })
}

/// The schedules `/schedule/why` is asked about: jobs' parsed schedules.
fn schedules() -> &'static [(Schedule, TimeBase); 3] {
    static SCHEDULES: OnceLock<[(Schedule, TimeBase); 3]> = OnceLock::new();
    SCHEDULES.get_or_init(|| {
        let parse = |expr: &str| Schedule::parse(expr, "job").expect("a fixed schedule parses");
        [
            (parse("*/5 * * * *"), TimeBase::Utc),
            (
                parse("H 2 * * 1-5"),
                TimeBase::Zone(chrono_tz::Europe::Berlin),
            ),
            (
                parse("0 0 29 2 *"),
                TimeBase::Zone(chrono_tz::America::Sao_Paulo),
            ),
        ]
    })
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 29, 0, 30, 0)
        .single()
        .unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default();
    let (method, target) = request_line
        .split_once(' ')
        .unwrap_or(("GET", request_line));

    if let Ok(method) = http::Method::from_bytes(method.as_bytes()) {
        let needed = request::needed(&method);
        assert_eq!(
            needed == Needed::View,
            method == http::Method::GET || method == http::Method::HEAD
        );
    }

    if let Ok(query) = request::query(target) {
        if let Ok(payload) = request::preview(&query, now()) {
            if let Some(fires) = payload.get("fires").and_then(|f| f.as_array()) {
                assert!(fires.len() <= request::MAX_PREVIEW_FIRES);
            }
        }
        if let Ok((job, at)) = request::why_params(&query) {
            assert!(!job.is_empty() && !at.is_empty());
            if let Ok(probe) = Probe::parse(at) {
                for (schedule, tz) in schedules() {
                    let _ = why(schedule, tz, &probe);
                }
            }
        }
        let _ = request::runs_limit(&query);
        let limit = request::clamped(&query, &["limit"], 50, 1, 50);
        assert!((1..=50).contains(&limit));
    }

    let mut headers = http::HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.trim().as_bytes()),
            http::HeaderValue::from_str(value.trim()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let header = |name: http::header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let credentials = credentials();
    if let Ok(grant) = credentials.grant(header(http::header::AUTHORIZATION)) {
        if let Some(index) = grant.token {
            let presented = header(http::header::AUTHORIZATION).unwrap_or_default();
            assert!(
                presented.contains(TOKENS[index]),
                "{presented:?} was granted token {index}"
            );
        }
        let _ = credentials.label(&grant);
    }
    let _ = credentials.origin_allowed(header(http::header::ORIGIN), header(http::header::HOST));
    let _ = request::wants_json(header(http::header::ACCEPT));
    let _ = request::not_modified(&headers, "\"0123456789abcdef0123456789abcdef\"");
    let _ = request::accepts_gzip(&headers);

    if let Ok(pause) = request::pause_body(body.as_bytes()) {
        if let Ok(window) = request::pause_window(&pause, now()) {
            assert!(window.until > window.since, "{window:?}");
            assert!(
                window.until - window.since <= chrono::TimeDelta::days(30),
                "{window:?}"
            );
            assert!(window.note.chars().count() <= 500 && window.by.chars().count() <= 100);
        }
    }
    let _ = request::resume_body(body.as_bytes());
});
