//! What the fuzz targets (fuzz/, run by scripts/fuzz.sh) check, replayed on
//! the committed seeds with plain `cargo test`, so CI holds the same
//! promises without nightly or libFuzzer. Every crash the fuzzer finds gets
//! its own case here, reproducing it through the same public API.

use std::collections::HashSet;
use std::path::PathBuf;

use axum::http;
use chrono::{DateTime, TimeZone, Utc};
use cronstable::config::{
    load_jobs_against, load_path, load_sources, load_sources_with_files, FileMap, JobConfig,
    LoadedConfig, Source, SourceKind,
};
use cronstable::cronexpr::{why, CronExpr, Probe, Schedule, TimeBase};
use cronstable::gossip::payload::{decode, encode};
use cronstable::job::{RunRecord, StreamOutput, Trigger};
use cronstable::kube::{job_name, to_source, CronJobSet, CronJobSetSpec};
use cronstable::report::templates::{compile, render};
use cronstable::report::{Hook, RunContext};
use cronstable::web::request::{self, Credentials, Needed};

#[path = "support/cron_scan.rs"]
mod cron_scan;
#[path = "support/peer_body.rs"]
mod peer_body;

/// The committed seed files of one fuzz target.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("seed-"))
        .map(|e| {
            let bytes = std::fs::read(e.path()).expect("seed file readable");
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "too few seeds for {target}: {}", out.len());
    out
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
        .single()
        .expect("valid instant")
}

/// The cronexpr target's walk: next strictly after, prev strictly before,
/// occurrences increasing, in three clocks.
#[test]
fn cron_seeds_walk_in_every_clock() {
    let clocks = [
        TimeBase::Utc,
        TimeBase::Zone(chrono_tz::Europe::Berlin),
        TimeBase::Zone(chrono_tz::America::Sao_Paulo),
    ];
    let instants = [
        at(2026, 3, 29, 0, 30, 0),
        at(2026, 10, 25, 0, 59, 59),
        at(2099, 12, 31, 23, 59, 59),
    ];
    let mut parsed = 0;
    for (name, bytes) in seeds("cronexpr") {
        let text = String::from_utf8_lossy(&bytes);
        let expr = text.split('\0').next().unwrap_or_default();
        let Ok(schedule) = Schedule::parse(expr, "job") else {
            continue;
        };
        let Some(cron) = schedule.cron() else {
            continue;
        };
        parsed += 1;
        for clock in &clocks {
            for &t in &instants {
                if let Some(next) = cron.next_after(t, clock) {
                    assert!(next > t, "{name}: next_after({t}) = {next}");
                }
                if let Some(prev) = cron.prev_before(t, clock) {
                    assert!(prev < t, "{name}: prev_before({t}) = {prev}");
                }
                let fires: Vec<_> = cron.occurrences(t, clock).take(5).collect();
                assert!(fires.windows(2).all(|w| w[0] < w[1]), "{name}: {fires:?}");
            }
        }
    }
    assert!(parsed >= 10, "only {parsed} cron seeds parsed");
}

/// The cron_differential target: next_after in UTC equals the first
/// matching minute of a plain scan, and in every zone the target picks
/// from it equals the wall-time walk of tests/support/cron_scan.rs, from a
/// plain instant and from instants around each zone's offset changes.
#[test]
fn cron_seeds_agree_with_a_minute_scan() {
    let start = at(2026, 2, 27, 13, 7, 31);
    let zones = [
        chrono_tz::America::New_York,
        chrono_tz::Europe::Berlin,
        chrono_tz::Australia::Lord_Howe,
        chrono_tz::America::Sao_Paulo,
    ];
    let mut compared = 0;
    for (name, bytes) in seeds("cron_differential") {
        let text = String::from_utf8_lossy(&bytes);
        let expr = text.split('\0').next().unwrap_or_default();
        let Ok(cron) = CronExpr::parse(expr, Some("job")) else {
            continue;
        };
        if cron.has_seconds() {
            continue;
        }
        // The first whole minute strictly after `start`.
        let first = start + chrono::Duration::seconds(29);
        let scan = (0..8 * 24 * 60)
            .map(|i| first + chrono::Duration::minutes(i))
            .find(|m| cron.matches(*m, &TimeBase::Utc));
        if let Some(want) = scan {
            assert_eq!(
                cron.next_after(start, &TimeBase::Utc),
                Some(want),
                "{name}: {expr}"
            );
        }
        for zone in zones {
            let mut instants = vec![start];
            for year in [2018, 2026] {
                for change in cron_scan::transitions(&zone, year) {
                    for minutes in [-61, -30, -1, 0, 29, 90] {
                        instants.push(
                            (change + chrono::Duration::minutes(minutes)).and_utc()
                                + chrono::Duration::seconds(17),
                        );
                    }
                }
            }
            for now in instants {
                let window = chrono::Duration::days(8);
                let got = cron.next_after(now, &TimeBase::Zone(zone));
                if let Ok(want) = cron_scan::brute_next(&cron, &zone, now, window) {
                    assert_eq!(
                        got,
                        Some(want),
                        "{name}: {expr} in {} from {now}",
                        zone.name()
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(
        compared >= 100,
        "only {compared} zone comparisons were made"
    );
}

/// The config_yaml target: every seed loads or is refused, as YAML and as
/// a crontab, without a panic; the well-formed fixtures load.
#[test]
fn config_seeds_load_or_refuse_cleanly() {
    let mut loaded = 0;
    for (name, bytes) in seeds("config_yaml") {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for kind in [SourceKind::Yaml, SourceKind::Crontab] {
            let source = Source {
                name: name.clone(),
                text: text.clone(),
                kind,
                include_dir: None,
            };
            if load_sources(&[source]).is_ok() {
                loaded += 1;
            }
        }
    }
    assert!(loaded >= 20, "only {loaded} seed loads succeeded");
}

/// The gossip_payload target: what decodes survives encode -> decode, and
/// a view that observed it renders `/cluster` and `/fleet`.
#[test]
fn gossip_seeds_round_trip() {
    let mut decoded = 0;
    for (name, bytes) in seeds("gossip_payload") {
        peer_body::check_peer_body(&bytes);
        let Ok(payload) = decode(&bytes) else {
            continue;
        };
        decoded += 1;
        assert_eq!(decode(&encode(&payload)).as_ref(), Ok(&payload), "{name}");
    }
    assert!(decoded >= 3, "only {decoded} gossip seeds decoded");
}

/// Found by `gossip_payload` (first run): a `duration` written with more
/// digits than an f64 holds decoded to a value whose shortest spelling,
/// decoded again, was one unit in the last place away
/// (1.222222222222222e33 against 1.2222222222222221e33): serde_json's
/// default float parser is not correctly rounded. Fixed by its
/// `float_roundtrip` feature (Cargo.toml).
#[test]
fn gossip_long_float_round_trips() {
    let body = br#"{"job_summaries": {"backup": {"running": false, "enabled": true, "scheduled_in": null, "last": {"outcome": "success", "finished_at": "x", "duration": 1222222222222222222222222222222222.25, "exit_code": 0}}}}"#;
    let payload = decode(body).expect("a well-formed payload decodes");
    assert_eq!(decode(&encode(&payload)).as_ref(), Ok(&payload));
}

/// Found by the fleet view's check on the seeds: a peer's countdown near
/// f64::MAX, aged and rounded to milliseconds, overflowed to infinity
/// (which JSON cannot carry). It now stays as the peer sent it.
#[test]
fn a_huge_peer_countdown_ages_to_a_finite_number() {
    let body = br#"{"node_name": "p", "job_summaries": {"j": {"scheduled_in": 1e308}}}"#;
    peer_body::check_peer_body(body);
}

// ---------------------------------------------------------------------
// config_includes

/// Where the config_includes target puts the parts after the main source.
const INCLUDE_PATHS: [&str; 4] = ["a.yaml", "inc/b.yaml", "inc/c.crontab", "d.yaml"];

/// One config_includes input: the main source and its include files under
/// `/cfg`, loaded in memory.
fn load_includes_in_memory(text: &str) -> (Result<LoadedConfig, String>, FileMap) {
    let mut parts = text.split('\0');
    let main = parts.next().unwrap_or_default();
    let files: FileMap = INCLUDE_PATHS
        .iter()
        .zip(parts)
        .map(|(path, text)| (PathBuf::from("/cfg").join(path), text.to_owned()))
        .collect();
    let source = Source {
        name: "/cfg/main.yaml".to_owned(),
        text: main.to_owned(),
        kind: SourceKind::Yaml,
        include_dir: Some(PathBuf::from("/cfg")),
    };
    (
        load_sources_with_files(&[source], &files).map_err(|e| e.to_string()),
        files,
    )
}

/// The config_includes target's checks: what loads has unique job names,
/// each from a text that was read.
fn check_includes_load(name: &str, loaded: &LoadedConfig, files: &FileMap) {
    let mut names = HashSet::new();
    for job in &loaded.jobs {
        assert!(
            names.insert(job.name.as_str()),
            "{name}: duplicate {}",
            job.name
        );
        let origin = std::path::Path::new(&job.origin.source);
        assert!(
            origin == std::path::Path::new("/cfg/main.yaml")
                || files.keys().any(|p| p == origin)
                || loaded.files.iter().any(|p| p == origin),
            "{name}: job {} from unread {}",
            job.name,
            job.origin.source
        );
    }
}

/// The config_includes seeds load in memory exactly as the same files load
/// from a directory: the same outcome, the same jobs in the same order,
/// and errors naming the same file.
#[test]
fn include_seeds_load_in_memory_as_on_disk() {
    let mut loaded_count = 0;
    for (name, bytes) in seeds("config_includes") {
        let text = String::from_utf8(bytes).expect("seeds are text");
        let (memory, files) = load_includes_in_memory(&text);
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut parts = text.split('\0');
        let main = parts.next().unwrap_or_default();
        std::fs::write(dir.path().join("main.yaml"), main).expect("write main");
        std::fs::create_dir_all(dir.path().join("inc")).expect("mkdir inc");
        for (path, part) in INCLUDE_PATHS.iter().zip(parts) {
            std::fs::write(dir.path().join(path), part).expect("write include");
        }
        let disk = load_path(&dir.path().join("main.yaml")).map_err(|e| {
            e.to_string()
                .replace(&dir.path().display().to_string(), "/cfg")
        });
        match (&memory, &disk) {
            (Ok(m), Ok(d)) => {
                loaded_count += 1;
                check_includes_load(&name, m, &files);
                let names = |l: &LoadedConfig| -> Vec<String> {
                    l.jobs.iter().map(|j| j.name.clone()).collect()
                };
                assert_eq!(names(m), names(d), "{name}");
                let shells = |l: &LoadedConfig| -> Vec<String> {
                    l.jobs.iter().map(|j| j.shell.clone()).collect()
                };
                assert_eq!(shells(m), shells(d), "{name}");
            }
            (Err(m), Err(d)) => {
                // The disk names the OS's reason for a missing file; the
                // file named and the rest of the message are the same.
                let file = |e: &str| e.split(": ").next().unwrap_or_default().to_owned();
                assert_eq!(file(m), file(d), "{name}: {m} / {d}");
                if !m.contains("cannot read") {
                    assert_eq!(m, d, "{name}");
                }
            }
            _ => panic!("{name}: memory {memory:?} but disk {disk:?}"),
        }
    }
    assert!(
        loaded_count >= 4,
        "only {loaded_count} include seeds loaded"
    );
    let cycle = load_includes_in_memory(
        "include:\n  - a.yaml\n\0include:\n  - inc/b.yaml\n\0include:\n  - ../a.yaml\n",
    )
    .0
    .unwrap_err();
    assert!(cycle.contains("include cycle"), "{cycle}");
}

// ---------------------------------------------------------------------
// template_render

/// The template_render target's job.
fn template_job() -> JobConfig {
    let text = r#"
jobs:
  - name: nightly-backup
    command: [/usr/local/bin/backup, --target, "s3://bucket/db"]
    schedule: "H 2 * * 1-5"
    timezone: Europe/Berlin
    captureStdout: true
    captureStderr: true
    environment:
      - key: TIER
        value: batch
"#;
    let loaded = load_sources(&[Source {
        name: "fuzz.yaml".to_owned(),
        text: text.to_owned(),
        kind: SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("the template job loads");
    loaded.jobs.into_iter().next().expect("one job")
}

/// One template_render input, compiled and rendered as the target does.
fn render_template_input(job: &JobConfig, text: &str) -> Result<String, String> {
    let mut parts = text.split('\0');
    let template = parts.next().unwrap_or_default();
    let stdout = parts.next().unwrap_or("backed up 3 tables\n");
    let stderr = parts.next().unwrap_or("");
    let fail_reason = parts.next().filter(|r| !r.is_empty());
    let compiled = compile("mail.body", template);
    let started = DateTime::from_timestamp(1_780_000_000, 123_000).expect("an instant");
    let record = RunRecord {
        pid: Some(4242),
        retcode: i32::from(fail_reason.is_some()),
        fail_reason: fail_reason.map(str::to_owned),
        stdout: StreamOutput {
            text: stdout.to_owned(),
            discarded: 0,
        },
        stderr: StreamOutput {
            text: stderr.to_owned(),
            discarded: 2,
        },
        ..RunRecord::begun(7, job.name.clone(), Trigger::Schedule, 0, started)
    };
    let hook = if fail_reason.is_some() {
        Hook::Failure
    } else {
        Hook::Success
    };
    let ctx = RunContext::new(hook, job, &record);
    let rendered = render("mail.body", template, ctx.vars()).map_err(|e| e.to_string());
    compiled.map_err(|e| e.to_string())?;
    rendered
}

/// The template_render seeds compile and render (or are refused) without
/// a panic, and the default templates say what the manual says.
#[test]
fn template_seeds_compile_and_render() {
    let job = template_job();
    let mut rendered = 0;
    for (name, bytes) in seeds("template_render") {
        let text = String::from_utf8(bytes).expect("seeds are text");
        let Ok(out) = render_template_input(&job, &text) else {
            continue;
        };
        rendered += 1;
        if name.contains("default-subject") {
            assert_eq!(out, "Cron job 'nightly-backup' completed");
        }
        if name.contains("default-body-failure") {
            assert!(
                out.starts_with("(job failed because exit code 3)\n"),
                "{out}"
            );
            assert!(out.contains("STDOUT:\n---\nline 1\nline 2\n"), "{out}");
        }
        if name.contains("fingerprint") {
            assert!(out.ends_with("|batch|nightly-backup"), "{out}");
        }
    }
    assert!(rendered >= 8, "only {rendered} template seeds rendered");
    assert!(render_template_input(&job, "{{ x | nosuchfilter }}").is_err());
}

// ---------------------------------------------------------------------
// cronjobset

/// One cronjobset input through the Kubernetes source's path; `Some` with
/// the loaded job names when it loads against `sections`.
fn load_set_input(bytes: &[u8], sections: &LoadedConfig) -> Option<Vec<String>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let spec: CronJobSetSpec = serde_json::from_value(value).ok()?;
    let mut set = CronJobSet::new("nightly", spec);
    set.metadata.namespace = Some("batch".to_owned());
    let converted = to_source(&set).ok()?;
    for (own, scheduled) in &converted.jobs {
        assert_eq!(*scheduled, job_name("batch", "nightly", own));
    }
    let loaded =
        load_jobs_against(std::slice::from_ref(&converted.source), &sections.sections).ok()?;
    let names: Vec<String> = loaded.jobs.iter().map(|j| j.name.clone()).collect();
    let reported: Vec<String> = converted.jobs.iter().map(|(_, s)| s.clone()).collect();
    assert_eq!(
        names, reported,
        "loaded jobs are not the ones the conversion named"
    );
    for name in &names {
        assert!(
            name.starts_with("batch:nightly:"),
            "{name:?} lacks the set's prefix"
        );
    }
    Some(names)
}

/// The cronjobset seeds convert and load (or are refused) with every job
/// under the set's prefix.
#[test]
fn cronjobset_seeds_keep_the_set_prefix() {
    let with_sections = load_sources(&[Source {
        name: "configmap/cronstable:config.yaml".to_owned(),
        text: "state:\n  path: /var/lib/cronstable\nweb:\n  listen: [\"http://127.0.0.1:8080\"]\n"
            .to_owned(),
        kind: SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("sections load");
    let mut loaded = 0;
    for (name, bytes) in seeds("cronjobset") {
        for sections in [&LoadedConfig::default(), &with_sections] {
            if let Some(names) = load_set_input(&bytes, sections) {
                loaded += 1;
                if name.contains("nightly") {
                    assert_eq!(names, ["batch:nightly:backup", "batch:nightly:report"]);
                }
            }
        }
    }
    assert!(loaded >= 6, "only {loaded} set loads succeeded");
}

// ---------------------------------------------------------------------
// api_request

const API_WEB: &str = r#"
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

const API_TOKENS: [&str; 2] = ["s3cret-control", "viewer-token"];

fn api_credentials() -> Credentials {
    let loaded = load_sources(&[Source {
        name: "fuzz.yaml".to_owned(),
        text: API_WEB.to_owned(),
        kind: SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("the web section loads");
    let web = loaded.sections.web.expect("a web section").value;
    Credentials::resolve(&web).expect("tokens resolve")
}

/// What one api_request input gave, for the seeds' own assertions.
#[derive(Default, Debug)]
struct ApiOutcome {
    preview: Option<serde_json::Value>,
    why: Option<(String, String)>,
    grant: Option<Option<usize>>,
    origin_allowed: bool,
    pause: Option<Result<request::PauseWindow, String>>,
}

/// One api_request input through the target's checks.
fn api_input(credentials: &Credentials, text: &str) -> ApiOutcome {
    let now = at(2026, 3, 29, 0, 30, 0);
    let mut outcome = ApiOutcome::default();
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default();
    let (method, target) = request_line
        .split_once(' ')
        .unwrap_or(("GET", request_line));
    if let Ok(method) = http::Method::from_bytes(method.as_bytes()) {
        assert_eq!(
            request::needed(&method) == Needed::View,
            method == http::Method::GET || method == http::Method::HEAD
        );
    }
    if let Ok(query) = request::query(target) {
        if let Ok(payload) = request::preview(&query, now) {
            if let Some(fires) = payload.get("fires").and_then(|f| f.as_array()) {
                assert!(fires.len() <= request::MAX_PREVIEW_FIRES);
            }
            outcome.preview = Some(payload);
        }
        if let Ok((job, at)) = request::why_params(&query) {
            assert!(!job.is_empty() && !at.is_empty());
            outcome.why = Some((job.to_owned(), at.to_owned()));
            if let Ok(probe) = Probe::parse(at) {
                let schedule = Schedule::parse("H 2 * * 1-5", "job").expect("parses");
                let _ = why(
                    &schedule,
                    &TimeBase::Zone(chrono_tz::Europe::Berlin),
                    &probe,
                );
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
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.trim().as_bytes()),
            http::HeaderValue::from_str(value.trim()),
        ) {
            headers.append(name, value);
        }
    }
    let header = |name: http::header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Ok(grant) = credentials.grant(header(http::header::AUTHORIZATION)) {
        if let Some(index) = grant.token {
            let presented = header(http::header::AUTHORIZATION).unwrap_or_default();
            assert!(presented.contains(API_TOKENS[index]), "{presented:?}");
        }
        outcome.grant = Some(grant.token);
    }
    outcome.origin_allowed =
        credentials.origin_allowed(header(http::header::ORIGIN), header(http::header::HOST));
    let _ = request::wants_json(header(http::header::ACCEPT));
    let _ = request::not_modified(&headers, "\"0123456789abcdef0123456789abcdef\"");
    let _ = request::accepts_gzip(&headers);
    if let Ok(pause) = request::pause_body(body.as_bytes()) {
        let window = request::pause_window(&pause, now);
        if let Ok(window) = &window {
            assert!(window.until > window.since, "{window:?}");
            assert!(window.until - window.since <= chrono::TimeDelta::days(30));
            assert!(window.note.chars().count() <= 500 && window.by.chars().count() <= 100);
        }
        outcome.pause = Some(window);
    }
    let _ = request::resume_body(body.as_bytes());
    outcome
}

/// The api_request seeds go through query decoding, each route's
/// parameters, auth and the pause body with the documented results.
#[test]
fn api_request_seeds_parse_as_documented() {
    let credentials = api_credentials();
    let mut previews = 0;
    for (name, bytes) in seeds("api_request") {
        let text = String::from_utf8(bytes).expect("seeds are text");
        let outcome = api_input(&credentials, &text);
        if outcome.preview.is_some() {
            previews += 1;
        }
        if name.contains("01-preview") {
            let payload = outcome.preview.as_ref().expect("a preview");
            assert_eq!(payload["expression"], "*/5 * * * *");
            assert_eq!(payload["fires"].as_array().map(Vec::len), Some(5));
        }
        if name.contains("04-why") {
            assert_eq!(
                outcome.why,
                Some(("backup".into(), "2026-03-29T02:30:00+02:00".into()))
            );
            assert_eq!(outcome.grant, Some(Some(1)), "viewer-token is the second");
        }
        if name.contains("08-pause-duration") {
            let window = outcome.pause.clone().expect("a body").expect("a window");
            assert_eq!((window.until - window.since).num_seconds(), 600);
            assert_eq!(outcome.grant, Some(Some(0)));
            assert!(outcome.origin_allowed);
        }
        if name.contains("09-pause-until") {
            assert!(!outcome.origin_allowed, "a foreign Origin is refused");
            assert_eq!(outcome.grant, Some(None), "anonymous view grant");
        }
        if name.contains("10-pause-bad") {
            assert!(outcome.pause.is_none(), "unknown field refused");
        }
        if name.contains("11-resume") {
            assert_eq!(outcome.grant, None, "a Basic credential is a 401");
        }
    }
    assert!(previews >= 3, "only {previews} previews");
}

/// Found by `cronjobset` (first run, after 46 s): a job named with `$$`
/// loaded as `$` (the loader's `${VAR}` expansion ran over the converted
/// text), so the job that ran was not the one the conversion reported and
/// status could not be matched to it. Also covers a numeric name, which
/// the loader reads as text but the conversion did not prefix.
#[test]
fn cronjobset_names_survive_interpolation_and_lenient_scalars() {
    let minimized =
        br#"{"jobs": [{"name": "a:b/c o$$o", "command": "tr$$ue", "schedule": "@reboot"}]}"#;
    let names = load_set_input(minimized, &LoadedConfig::default()).expect("the set loads");
    assert_eq!(names, ["batch:nightly:a:b/c o$$o"]);
    let numeric = br#"{"jobs": [{"name": 5, "command": "true", "schedule": "@daily"}]}"#;
    let names = load_set_input(numeric, &LoadedConfig::default()).expect("the set loads");
    assert_eq!(names, ["batch:nightly:5"]);
}

/// Found by review while `template_render` ran (the fuzzer did not reach
/// it in 600 s; the inputs below were then run through the target's
/// binary: a libFuzzer timeout after 11 s and an out-of-memory at
/// 2,266 MB). minijinja renders without a work budget unless one is set:
/// nested `range(100000)` loops are 10^10 steps, and concatenating
/// 100 MB strings grows without end. Compile runs a trial render, so such
/// a template hung the config load itself. Fixed with minijinja's fuel
/// (`jinja::RENDER_FUEL`); the template is now refused at load.
#[test]
fn template_renders_are_bounded() {
    let job = template_job();
    let nested = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}";
    let concat = "{% set s = 'x' * 99999999 %}{{ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s ~ s }}";
    for template in [nested, concat] {
        let err = compile("mail.body", template).expect_err("refused at load");
        assert!(err.message.contains("more work than a render may"), "{err}");
        let err = render_template_input(&job, template).expect_err("bounded");
        assert!(err.contains("more work than a render may"), "{err}");
    }
    // The budget leaves room for real runs: the default webhook body over
    // 8 MiB of captured output renders.
    let body = cronstable::report::templates::DEFAULT_WEBHOOK_BODY;
    let output = "a line of captured output, repeated\n".repeat(8 << 20 >> 5);
    let input = format!("{body}\0{output}\0{output}\0exit code 1");
    let rendered = render_template_input(&job, &input).expect("renders");
    assert!(rendered.len() > 16 << 20, "{}", rendered.len());
}

/// Found by `template_render` (its run after the render budget, at about
/// 1,040,000 executions): `tojson(indent=...)` with an indent in the
/// quadrillions overflowed a buffer's capacity and panicked (the filter
/// writes its indentation before fuel is charged). Minimized input below;
/// the filter now refuses an indent over 64.
#[test]
fn tojson_refuses_a_huge_indent() {
    let job = template_job();
    // The target reads its input lossily, as here.
    let minimized = String::from_utf8_lossy(b"4) }}name\x82upper()\x13}{}{.jinja{{ command | tojson(indent=0000000000000016124148018590259) }}").into_owned();
    let err = render_template_input(&job, &minimized).expect_err("refused");
    assert!(err.contains("tojson: indent must be at most 64"), "{err}");
    let ok = render_template_input(&job, "{{ command | tojson(indent=64) }}").expect("renders");
    assert!(ok.starts_with("[\n                                                                \"/usr/local/bin/backup\""), "{ok}");
}
