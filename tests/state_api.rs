//! The durable store as the HTTP API shows it, black-box: the built
//! daemon on a store seeded with records in the original's format, asked
//! for trends (`GET /jobs/{name}/trends`), the inspector (`GET /state`,
//! `/state/records`, `/state/documents`) and the `cronstable_state_*`
//! metric families; and the same routes without a `state` section.

mod support;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http::{self, Reply};

const LONG: Duration = Duration::from_secs(30);
const TOKEN: &str = "s3cret";

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET path` with the bearer token.
fn get(port: u16, path: &str) -> Reply {
    http::request(
        port,
        "GET",
        path,
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        "",
    )
}

/// The file-name token of a stream (the original's `fs_safe`, without the
/// rules no name here needs).
fn token(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Python's `isoformat` of an aware UTC time (microseconds shown).
fn iso(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
}

/// Writes a record into `stream` of the store at `base` as the original
/// does, named for `at` (so it sorts by that time); `seq` keeps names
/// apart.
fn seed(base: &Path, stream: &str, at: DateTime<Utc>, seq: u32, data: Value) -> PathBuf {
    let dir = base.join("records").join(token(stream));
    std::fs::create_dir_all(&dir).expect("stream dir");
    let epoch = at.timestamp_micros() as f64 / 1e6;
    let path = dir.join(format!("{epoch:020.6}-aaaaaaaaaaaa-{seq:012}.json"));
    let body = json!({"data": data, "schemaVersion": "v1"});
    std::fs::write(&path, serde_json::to_vec(&body).expect("JSON")).expect("record");
    path
}

/// A ledger row of the original's shape.
fn run_row(finished: DateTime<Utc>, outcome: &str, duration: Option<f64>) -> Value {
    let mut row = json!({
        "outcome": outcome,
        "exit_code": if outcome == "failure" { json!(1) } else { json!(0) },
        "started_at": duration.map(|d| iso(finished - chrono::Duration::microseconds((d * 1e6) as i64))),
        "finished_at": iso(finished),
        "duration": duration,
        "fail_reason": if outcome == "success" { Value::Null } else { json!("it broke") },
        "skip_reason": Value::Null,
        "resources": Value::Null,
        "ranAt": iso(finished),
    });
    if outcome == "unknown" {
        row["exit_code"] = Value::Null;
    }
    row
}

fn days_ago(days: i64) -> DateTime<Utc> {
    Utc::now() - chrono::Duration::days(days)
}

/// The `state` and `web` sections over `store`, with the token.
fn config(store: &Path, state_extra: &str) -> String {
    format!(
        "  authToken:\n    value: {TOKEN}\nstate:\n  path: {}\n  topology: single-node\n{state_extra}",
        store.display()
    )
}

/// Parses the exposition with the Python `prometheus_client` parser
/// (the one the original's users scrape with); None when it is not
/// installed outside CI.
fn parse_with_prometheus_client(text: &str) -> Option<Vec<String>> {
    let script = r##"
import sys
from prometheus_client.parser import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    print(f"# {family.name} {family.type} {family.documentation}")
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}} {s.value}")
"##;
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child.stdin.take()?.write_all(text.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named") {
            assert!(
                std::env::var("CI").is_err(),
                "prometheus_client must be installed in CI"
            );
            return None;
        }
        panic!("prometheus_client rejected the exposition: {err}\n{text}");
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn trends_count_the_durable_ledger_per_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let base = store.join("default");
    // Older than any window but `all`, inside 30 days, inside 7 days.
    seed(
        &base,
        "runs/ok",
        days_ago(40),
        1,
        run_row(days_ago(40), "success", Some(2.0)),
    );
    seed(
        &base,
        "runs/ok",
        days_ago(10),
        2,
        run_row(days_ago(10), "failure", Some(3.0)),
    );
    seed(
        &base,
        "runs/ok",
        days_ago(3),
        3,
        run_row(days_ago(3), "unknown", None),
    );
    let jobs = "  - name: ok\n    command: 'true'\n    schedule: '* * * * * * *'\n";
    let (_d, port) = Daemon::start_with_web(&config(&store, ""), jobs);
    let trends = || {
        let reply = get(port, "/jobs/ok/trends");
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply
    };
    wait_until("two runs of this daemon in the last hour", LONG, || {
        trends().json()["windows"]["1h"]["success"].as_u64() >= Some(2)
    });
    let reply = trends();
    assert!(
        reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json")),
        "{:?}",
        reply.headers
    );
    // The original's key order.
    let order: Vec<usize> = ["\"1h\"", "\"24h\"", "\"7d\"", "\"30d\"", "\"all\""]
        .iter()
        .map(|k| reply.body.find(k).expect(k))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", reply.body);
    let body = reply.json();
    assert_eq!(body["name"], "ok");
    assert_eq!(body["source"], "durable");
    assert!(
        body["generated_at"]
            .as_str()
            .is_some_and(|t| t.ends_with("+00:00")),
        "{body}"
    );
    let w = &body["windows"];
    let n = w["1h"]["success"].as_u64().expect("a count");
    let counts = |label: &str| {
        let s = &w[label];
        ["total", "success", "failure", "cancelled", "unknown"]
            .map(|k| s[k].as_u64().unwrap_or_else(|| panic!("{label}.{k}: {s}")))
    };
    // The daemon's own runs are all in the last hour; the seeded rows
    // join as the windows widen.
    assert_eq!(counts("1h"), [n, n, 0, 0, 0], "{body}");
    assert_eq!(counts("24h"), [n, n, 0, 0, 0], "{body}");
    assert_eq!(counts("7d"), [n + 1, n, 0, 0, 1], "{body}");
    assert_eq!(counts("30d"), [n + 2, n, 1, 0, 1], "{body}");
    assert_eq!(counts("all"), [n + 3, n + 1, 1, 0, 1], "{body}");
    assert_eq!(w["1h"]["success_rate"], json!(1.0));
    let rate = w["30d"]["success_rate"].as_f64().expect("a rate");
    assert!((rate - n as f64 / (n + 1) as f64).abs() < 1e-9, "{body}");
    assert_eq!(w["all"]["max_duration"], json!(3.0), "{body}");
    // More than the in-memory history could know after a restart: the
    // rows of the ledger are the source.
    assert_eq!(w["all"]["failure"], 1);

    // Authenticated like every data endpoint; 404 for an unknown job.
    assert_eq!(http::get(port, "/jobs/ok/trends").status, 401);
    let unknown = get(port, "/jobs/nope/trends");
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json(), json!({"error": "job 'nope' not found"}));
}

#[test]
fn the_inspector_lists_the_store_and_its_records() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let base = store.join("default");
    // A ledger of a job no longer configured: stable counts to check.
    for (seq, days) in [(1, 3), (2, 2), (3, 1)] {
        let mut row = run_row(days_ago(days), "success", Some(f64::from(seq)));
        row["seq"] = json!(seq);
        seed(&base, "runs/gone", days_ago(days), seq, row);
    }
    // A corrupt record: a read moves it to quarantine/.
    let corrupt = base
        .join("records")
        .join(token("runs/broken"))
        .join("0000000000001.000000-aaaaaaaaaaaa-000000000009.json");
    std::fs::create_dir_all(corrupt.parent().expect("dir")).expect("dir");
    std::fs::write(&corrupt, b"{not json").expect("write");
    let jobs = "  - name: ok\n    command: 'true'\n    schedule: '* * * * * * *'\n";
    let (_d, port) = Daemon::start_with_web(&config(&store, ""), jobs);
    wait_until("a run of ok in the ledger", LONG, || {
        get(port, "/state").json()["records"]["runs"]["scopes"]
            .as_array()
            .is_some_and(|s| {
                s.iter()
                    .any(|s| s["scope"] == "ok" && s["count"].as_u64() >= Some(1))
            })
    });

    let state = get(port, "/state");
    assert_eq!(state.status, 200, "{}", state.body);
    let state = state.json();
    assert_eq!(state["enabled"], true);
    assert_eq!(state["enumerable"], true);
    let runs = &state["records"]["runs"];
    let scopes = runs["scopes"].as_array().expect("scopes");
    assert!(
        scopes.contains(&json!({"scope": "gone", "count": 3})),
        "{state}"
    );
    assert!(
        scopes.contains(&json!({"scope": "broken", "count": 1})),
        "{state}"
    );
    assert_eq!(runs["streams"], json!(scopes.len()), "{state}");
    let total: u64 = scopes.iter().filter_map(|s| s["count"].as_u64()).sum();
    assert_eq!(runs["count"], json!(total), "{state}");
    // The version stamp: one record in `meta`, no scope.
    assert_eq!(
        state["records"]["meta"],
        json!({"count": 1, "streams": 1, "scopes": [{"scope": "", "count": 1}]})
    );
    assert_eq!(state["documents"], json!({}));
    assert_eq!(state["leases"], json!([]));
    assert_eq!(state["quarantine"], 0);
    let view = &state["view"];
    assert_eq!(view["backend"], "filesystem");
    assert_eq!(view["namespace"], "default");
    assert_eq!(view["topology"], "single-node");
    assert_eq!(view["path"], json!(base.display().to_string()));
    assert!(
        view["job_set_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("v1:")),
        "{view}"
    );
    assert!(
        state["stats"]["ops"]["append"]["count"].as_u64() >= Some(1),
        "{state}"
    );
    assert_eq!(state["stats"]["throttle"]["count"], 0);
    assert!(state["node"]["host"]
        .as_str()
        .is_some_and(|h| !h.is_empty()));
    assert_eq!(state["node"]["retries"], json!([]));

    // Records: newest first, data only, limited.
    let records = get(port, "/state/records?stream=runs%2Fgone");
    assert_eq!(records.status, 200, "{}", records.body);
    let records = records.json();
    assert_eq!(records["stream"], "runs/gone");
    let seqs: Vec<u64> = records["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["seq"].as_u64())
        .collect();
    assert_eq!(seqs, [3, 2, 1], "{records}");
    assert_eq!(records["records"][0]["outcome"], "success");
    assert!(records["records"][0].get("schemaVersion").is_none());
    let newest = get(port, "/state/records?stream=runs/gone&limit=1").json();
    assert_eq!(newest["records"].as_array().map(Vec::len), Some(1));
    assert_eq!(newest["records"][0]["seq"], 3);
    // Out-of-range and unreadable limits are clamped or defaulted.
    let clamped = get(port, "/state/records?stream=runs/gone&limit=0").json();
    assert_eq!(clamped["records"].as_array().map(Vec::len), Some(1));
    let defaulted = get(port, "/state/records?stream=runs/gone&limit=x").json();
    assert_eq!(defaulted["records"].as_array().map(Vec::len), Some(3));
    let none = get(port, "/state/records?stream=runs/never").json();
    assert_eq!(none, json!({"stream": "runs/never", "records": []}));
    // The corrupt record is quarantined by the read, never served.
    let broken = get(port, "/state/records?stream=runs/broken").json();
    assert_eq!(broken["records"], json!([]));
    assert!(!corrupt.exists());
    assert_eq!(get(port, "/state").json()["quarantine"], 1);

    for (path, status, error) in [
        (
            "/state/records?stream=logs/ok",
            403,
            "log streams carry raw output and are not inspectable",
        ),
        (
            "/state/records?stream=logs",
            403,
            "log streams carry raw output and are not inspectable",
        ),
        ("/state/records", 400, "a stream is required"),
        ("/state/records?stream=", 400, "a stream is required"),
        (
            "/state/documents?ns=runs/ok",
            400,
            "ns must be a kv/, cursor/ or idem/ namespace",
        ),
        (
            "/state/documents",
            400,
            "ns must be a kv/, cursor/ or idem/ namespace",
        ),
    ] {
        let reply = get(port, path);
        assert_eq!(reply.status, status, "{path}: {}", reply.body);
        assert_eq!(reply.json(), json!({"error": error}), "{path}");
    }
    for ns in ["kv/app", "cursor/app", "idem/app"] {
        let reply = get(port, &format!("/state/documents?ns={ns}"));
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.json(), json!({"namespace": ns, "documents": []}));
    }
    for path in [
        "/state",
        "/state/records?stream=runs/gone",
        "/state/documents?ns=kv/a",
    ] {
        assert_eq!(http::get(port, path).status, 401, "{path}");
    }
}

#[test]
fn metrics_carry_the_state_families_with_the_originals_help() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let jobs = "  - name: ok\n    command: 'true'\n    schedule: '* * * * * * *'\n";
    let (_d, port) = Daemon::start_with_web(&config(&store, ""), jobs);
    wait_until("an append counted", LONG, || {
        get(port, "/metrics")
            .body
            .contains("cronstable_state_ops_total{op=\"append\"}")
    });
    let text = get(port, "/metrics").body;
    for line in [
        "# HELP cronstable_state_info Static durable-state backend facts for this node.",
        "# TYPE cronstable_state_info gauge",
        "cronstable_state_info{backend=\"filesystem\",topology=\"single-node\"} 1",
        "# HELP cronstable_state_ops_total Durable state store operations, by operation.",
        "# TYPE cronstable_state_ops_total counter",
        "# HELP cronstable_state_op_errors_total Durable state store operations that raised, by operation.",
        "# TYPE cronstable_state_op_errors_total counter",
        "cronstable_state_op_errors_total{op=\"append\"} 0",
        "# HELP cronstable_state_op_seconds_total Seconds spent inside durable state store operations, by operation (rate against cronstable_state_ops_total for mean latency).",
        "# TYPE cronstable_state_op_seconds_total counter",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    // Nothing throttled, nothing dropped: those families stay out.
    for absent in [
        "cronstable_state_throttled_ops",
        "cronstable_state_dropped_writes",
        "cronstable_state_lock_",
    ] {
        assert!(!text.contains(absent), "{absent} present:\n{text}");
    }
    // Each op series in label order.
    let ops: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cronstable_state_ops_total{op=\""))
        .filter_map(|l| l.split('"').next())
        .collect();
    let mut sorted = ops.clone();
    sorted.sort_unstable();
    assert_eq!(ops, sorted);
    // The families sit after the per-job ones and before the cluster's,
    // as in the original.
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle}"));
    assert!(at("cronstable_job_paused") < at("cronstable_state_info"));
    assert!(at("cronstable_state_info") < at("cronstable_cluster_enabled"));
    if let Some(parsed) = parse_with_prometheus_client(&text) {
        for line in [
            "# cronstable_state_ops counter Durable state store operations, by operation.",
            "# cronstable_state_info gauge Static durable-state backend facts for this node.",
        ] {
            assert!(
                parsed.iter().any(|l| l == line),
                "{line} missing:\n{parsed:#?}"
            );
        }
        let value = |series: &str| -> Option<f64> {
            parsed
                .iter()
                .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        };
        assert_eq!(
            value("cronstable_state_info{backend=filesystem,topology=single-node}"),
            Some(1.0),
            "{parsed:#?}"
        );
        assert!(
            value("cronstable_state_ops_total{op=append}") >= Some(1.0),
            "{parsed:#?}"
        );
    }
    let om = http::request(
        port,
        "GET",
        "/metrics",
        &[
            ("Authorization", &format!("Bearer {TOKEN}")),
            ("Accept", "application/openmetrics-text; version=1.0.0"),
        ],
        "",
    );
    assert!(
        om.body.contains("# TYPE cronstable_state_ops counter\n"),
        "{}",
        om.body
    );
    assert!(om.body.ends_with("# EOF\n"));
}

#[test]
fn the_throttle_families_appear_once_the_limit_holds_an_operation_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let jobs = "  - name: ok\n    command: 'true'\n    schedule: '* * * * * * *'\n";
    let (_d, port) = Daemon::start_with_web(&config(&store, "  maxOpsPerSecond: 1\n"), jobs);
    wait_until("a throttled operation", LONG, || {
        get(port, "/metrics")
            .body
            .contains("cronstable_state_throttled_ops_total ")
    });
    let text = get(port, "/metrics").body;
    for line in [
        "# HELP cronstable_state_throttled_ops_total Store operations delayed by the maxOpsPerSecond rate limit.",
        "# HELP cronstable_state_throttle_wait_seconds_total Seconds store operations spent waiting on the maxOpsPerSecond rate limit.",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    let samples = cronstable::metrics::prometheus::parse_samples(&text);
    assert!(samples["cronstable_state_throttled_ops_total"] >= 1.0);
    assert!(samples["cronstable_state_throttle_wait_seconds_total"] > 0.0);
    let state = get(port, "/state").json();
    assert!(
        state["stats"]["throttle"]["count"].as_u64() >= Some(1),
        "{state}"
    );
}

#[test]
fn an_unreadable_ledger_falls_back_to_memory_and_dropped_writes_are_counted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("store");
    let records = store.join("default").join("records");
    std::fs::create_dir_all(&records).expect("dir");
    // The ledger's directory is a plain file: it can be neither read nor
    // appended to.
    std::fs::write(records.join(token("runs/ok")), b"").expect("file");
    let jobs = "  - name: ok\n    command: 'true'\n    schedule: '* * * * * * *'\n";
    let (d, port) = Daemon::start_with_web(&config(&store, ""), jobs);
    wait_until("a run in memory", LONG, || {
        get(port, "/jobs/ok/trends").json()["windows"]["all"]["total"].as_u64() >= Some(1)
    });
    let body = get(port, "/jobs/ok/trends").json();
    assert_eq!(body["source"], "memory", "{body}");
    assert!(body["windows"]["1h"]["success"].as_u64() >= Some(1));
    d.wait_for_log(
        "state: cannot read the run ledger for trends on ok (",
        1,
        LONG,
    );
    d.wait_for_log("; serving the in-memory history", 1, LONG);
    wait_until("a dropped run record counted", LONG, || {
        get(port, "/metrics")
            .body
            .contains("cronstable_state_dropped_writes_total{kind=\"run-record\"}")
    });
    let text = get(port, "/metrics").body;
    assert!(text.lines().any(|l| l
        == "# HELP cronstable_state_dropped_writes_total Durable state writes that failed and were dropped, by kind."));
    let samples = cronstable::metrics::prometheus::parse_samples(&text);
    assert!(samples["cronstable_state_dropped_writes_total{kind=\"run-record\"}"] >= 1.0);
    assert!(samples["cronstable_state_op_errors_total{op=\"append\"}"] >= 1.0);
}

#[test]
fn without_a_state_section_trends_come_from_memory_and_the_inspector_is_off() {
    let jobs = "  - name: ok\n    command: 'true'\n    schedule: '* * * * * * *'\n";
    let (_d, port) = Daemon::start_with_web(&format!("  authToken:\n    value: {TOKEN}\n"), jobs);
    wait_until("a run", LONG, || {
        get(port, "/jobs/ok/trends").json()["windows"]["all"]["total"].as_u64() >= Some(1)
    });
    let body = get(port, "/jobs/ok/trends").json();
    assert_eq!(body["source"], "memory");
    let w = &body["windows"];
    assert_eq!(w["1h"]["total"], w["all"]["total"], "{body}");
    assert_eq!(w["1h"]["success"], w["1h"]["total"], "{body}");
    assert_eq!(get(port, "/state").json(), json!({"enabled": false}));
    for path in ["/state/records?stream=runs/ok", "/state/documents?ns=kv/a"] {
        let reply = get(port, path);
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(
            reply.json(),
            json!({"error": "state store is not configured"}),
            "{path}"
        );
    }
    let text = get(port, "/metrics").body;
    assert!(!text.contains("cronstable_state_"), "{text}");
}
