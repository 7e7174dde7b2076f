//! The HTTP API of the built daemon on a free loopback port: routes and
//! shapes, auth and scopes, the unix socket, manual start/cancel, pauses,
//! and /metrics read by Prometheus's own Python parser.

mod support;

use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http::{free_port, get, post, request, wait_listening};

const LONG: Duration = Duration::from_secs(20);

const JOBS: &str = r#"  - name: tick
    command: "echo tick"
    captureStdout: true
    schedule:
      second: "*"
  - name: sleeper
    command: "sleep 30"
    schedule: "0 0 1 1 *"
    concurrencyPolicy: Forbid
    killTimeout: 1
  - name: off
    command: "true"
    schedule: "@hourly"
    enabled: false
  - name: boot
    command: "true"
    schedule: "@reboot"
"#;

fn wait_until(mut check: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < LONG, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn routes_answer_with_their_shapes() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let version = get(port, "/version");
    assert_eq!(version.status, 200);
    assert_eq!(version.body, env!("CARGO_PKG_VERSION"));

    let text = get(port, "/status");
    assert_eq!(text.status, 200);
    assert!(text
        .header("content-type")
        .unwrap()
        .starts_with("text/plain"));
    assert!(text.body.contains("off: disabled"), "{}", text.body);
    assert!(
        text.body.contains("boot: scheduled (@reboot)"),
        "{}",
        text.body
    );

    let json = request(
        port,
        "GET",
        "/status",
        &[("Accept", "application/json, */*")],
        "",
    )
    .json();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let sleeper = rows.iter().find(|r| r["job"] == "sleeper").unwrap();
    assert_eq!(sleeper["status"], "scheduled");
    assert!(sleeper["scheduled_in"].as_f64().unwrap() > 0.0);
    let boot = rows.iter().find(|r| r["job"] == "boot").unwrap();
    assert_eq!(boot["scheduled_in"], "@reboot");

    // No cluster section: no fleet to show.
    let fleet = get(port, "/fleet");
    assert_eq!(fleet.status, 200);
    assert_eq!(
        fleet.json(),
        serde_json::json!({"enabled": false, "nodes": []})
    );

    let jobs = get(port, "/jobs").json();
    let tick = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == "tick")
        .unwrap();
    assert_eq!(tick["schedule"], "* * * * * * *");
    assert_eq!(tick["captureStdout"], true);
    assert_eq!(tick["timezone"], "UTC");
    assert!(tick["paused"].is_null());
    // Without a cluster section the cluster members are left out.
    for key in ["clusterPolicy", "concurrencyScope", "slot", "rebootPending"] {
        assert!(tick.get(key).is_none(), "{key} in {tick}");
    }

    let one = get(port, "/jobs/sleeper").json();
    assert_eq!(one["name"], "sleeper");
    let missing = get(port, "/jobs/nope");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "job 'nope' not found");

    wait_until(
        || {
            get(port, "/jobs/tick/runs").json()["runs"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
        },
        "a tick run",
    );
    let runs = get(port, "/jobs/tick/runs?limit=1").json();
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs["runs"][0]["outcome"], "success");
    assert_eq!(runs["runs"][0]["stdout"], "tick\n");
    assert!(runs["stats"]["total"].as_u64().unwrap() >= 1);

    let id = get(port, "/job-set-id");
    assert!(id.body.starts_with("v1:"));
    let id_json = request(
        port,
        "GET",
        "/job-set-id",
        &[("Accept", "application/json")],
        "",
    )
    .json();
    assert_eq!(id_json["job_set_id"], id.body);
    assert_eq!(id_json["jobs"], 4);

    let unknown = get(port, "/no/such/path");
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"], "404: Not Found");
    let wrong_method = request(port, "DELETE", "/status", &[], "");
    assert_eq!(wrong_method.status, 405);
    assert!(wrong_method.json()["error"]
        .as_str()
        .unwrap()
        .contains("405"));

    let preview = get(
        port,
        "/schedule/preview?expr=0%209%20*%20*%201-5&tz=Europe/Berlin&limit=3",
    )
    .json();
    assert_eq!(preview["valid"], true);
    assert_eq!(preview["fires"].as_array().unwrap().len(), 3);
    assert_eq!(get(port, "/schedule/preview").status, 400);
}

#[test]
fn manual_start_honors_forbid_and_cancel_is_not_a_failure() {
    let (d, port) = Daemon::start_with_web("", JOBS);
    let started = post(port, "/jobs/sleeper/start");
    assert_eq!(started.status, 200);
    assert_eq!(started.json()["started"], "sleeper");
    wait_until(
        || get(port, "/jobs/sleeper").json()["running"] == true,
        "sleeper running",
    );
    assert_eq!(post(port, "/jobs/sleeper/start").status, 200);
    d.wait_for_log(
        "Job sleeper: still running and concurrencyPolicy is Forbid",
        1,
        LONG,
    );
    let detail = get(port, "/jobs/sleeper").json();
    assert_eq!(detail["pids"].as_array().map(Vec::len), Some(1), "{detail}");

    let cancelled = post(port, "/jobs/sleeper/cancel");
    assert_eq!(cancelled.status, 200);
    assert_eq!(cancelled.json()["instances"], 1);
    wait_until(
        || get(port, "/jobs/sleeper").json()["last_run"]["outcome"] == "cancelled",
        "the cancelled run",
    );
    // A cancelled run is said to be cancelled and never handled as a
    // finished run (no exit line, so no failure report or retry).
    d.wait_for_log(
        "INFO:cronstable:Job sleeper was cancelled via the web UI\n",
        1,
        LONG,
    );
    assert!(!d.log().contains("Job sleeper exit code"), "{}", d.log());
    let idle = post(port, "/jobs/sleeper/cancel");
    assert_eq!(idle.status, 409);
    let disabled = post(port, "/jobs/off/start");
    assert_eq!(disabled.status, 409);
    assert!(disabled.json()["error"]
        .as_str()
        .unwrap()
        .contains("disabled"));
}

#[test]
fn pause_skips_fires_until_resumed() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let paused = request(
        port,
        "POST",
        "/jobs/tick/pause",
        &[],
        r#"{"durationSeconds": 120, "note": "maintenance", "by": "ops"}"#,
    );
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.json()["paused"]["by"], "ops");
    wait_until(
        || {
            get(port, "/jobs/tick/runs").json()["runs"]
                .as_array()
                .is_some_and(|runs| {
                    runs.iter()
                        .any(|r| r["outcome"] == "skipped" && r["skip_reason"] == "paused")
                })
        },
        "a skipped slot",
    );
    let metrics = get(port, "/metrics").body;
    assert!(
        metrics.contains("cronstable_job_paused{job_name=\"tick\"} 1"),
        "{metrics}"
    );
    let bad = request(
        port,
        "POST",
        "/jobs/tick/pause",
        &[],
        r#"{"durationSeconds": 0}"#,
    );
    assert_eq!(bad.status, 400);
    // A body past the 64 KiB request limit is refused unread.
    let huge = format!(
        r#"{{"durationSeconds": 60, "note": "{}"}}"#,
        "n".repeat(70 * 1024)
    );
    let refused = request(port, "POST", "/jobs/tick/pause", &[], &huge);
    assert_eq!(refused.status, 413, "{}", refused.body);
    assert_eq!(get(port, "/jobs/tick").json()["paused"]["by"], "ops");
    let resumed = post(port, "/jobs/tick/resume");
    assert_eq!(resumed.status, 200);
    assert!(resumed.json()["paused"].is_null());
    assert!(get(port, "/jobs/tick").json()["paused"].is_null());
}

/// The request head limits documented in docs/configuration.md (hyper's
/// defaults: 100 headers, about 400 KiB of head): past them a client gets
/// `431` and the daemon answers the next request as usual.
#[test]
fn an_oversized_request_head_is_refused_with_431() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let names: Vec<String> = (0..150).map(|i| format!("x-extra-{i}")).collect();
    let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    assert_eq!(request(port, "GET", "/status", &many, "").status, 431);
    let long = "v".repeat(30 * 1024);
    let big: Vec<(&str, &str)> = names[..20]
        .iter()
        .map(|n| (n.as_str(), long.as_str()))
        .collect();
    assert_eq!(request(port, "GET", "/status", &big, "").status, 431);
    let fine: Vec<(&str, &str)> = names[..50].iter().map(|n| (n.as_str(), "v")).collect();
    assert_eq!(request(port, "GET", "/status", &fine, "").status, 200);
}

#[test]
fn bearer_token_auth_and_scopes() {
    let web = r#"  authToken:
    value: all-scopes
  authTokens:
    - value: reader
      scopes: [view]
      label: board
    - value: operator
      scopes: [control]
  anonymousScopes: [view]
  metrics:
    public: true
"#;
    let (_d, port) = Daemon::start_with_web(web, JOBS);
    let bearer = |t: &str| format!("Bearer {t}");
    assert_eq!(get(port, "/status").status, 200, "anonymous view");
    let wrong = request(
        port,
        "GET",
        "/status",
        &[("Authorization", &bearer("nope"))],
        "",
    );
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["error"], "401: Unauthorized");
    let scheme = request(
        port,
        "GET",
        "/status",
        &[("Authorization", "Basic all-scopes")],
        "",
    );
    assert_eq!(scheme.status, 401);
    assert_eq!(
        post(port, "/jobs/tick/start").status,
        403,
        "anonymous cannot control"
    );
    assert_eq!(
        post(port, "/jobs/tick/start").json()["error"],
        "token 'anonymous' lacks the 'control' scope required for this endpoint"
    );
    let reader = request(
        port,
        "POST",
        "/jobs/tick/start",
        &[("Authorization", &bearer("reader"))],
        "",
    );
    assert_eq!(reader.status, 403);
    assert_eq!(
        reader.json()["error"],
        "token 'board' lacks the 'control' scope required for this endpoint"
    );
    let operator = request(
        port,
        "POST",
        "/jobs/tick/start",
        &[("authorization", "bearer operator")],
        "",
    );
    assert_eq!(operator.status, 200);
    let admin = request(
        port,
        "GET",
        "/jobs",
        &[("Authorization", &bearer("all-scopes"))],
        "",
    );
    assert_eq!(admin.status, 200);
    assert_eq!(get(port, "/metrics").status, 200, "public metrics");
    let cross_site = request(
        port,
        "POST",
        "/jobs/tick/start",
        &[
            ("Authorization", &bearer("operator")),
            ("Origin", "https://evil.example"),
        ],
        "",
    );
    assert_eq!(cross_site.status, 403);
}

#[test]
fn token_required_without_anonymous_scopes() {
    let web = "  authToken:\n    value: s3cret\n";
    let (_d, port) = Daemon::start_with_web(web, JOBS);
    let anonymous = get(port, "/status");
    assert_eq!(anonymous.status, 401);
    assert_eq!(get(port, "/metrics").status, 401);
    let ok = request(
        port,
        "GET",
        "/status",
        &[("Authorization", "Bearer s3cret")],
        "",
    );
    assert_eq!(ok.status, 200);
    // The probes need no token, and say the daemon is live and ready.
    let live = get(port, "/livez");
    assert_eq!(live.status, 200, "{}", live.body);
    assert_eq!(live.json(), serde_json::json!({"live": true}));
    let ready = get(port, "/readyz");
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(ready.json(), serde_json::json!({"ready": true}));
}

#[test]
fn extra_headers_are_added_without_touching_content_type() {
    let web = "  headers:\n    X-Frame-Options: DENY\n    Content-Type: text/evil\n";
    let (_d, port) = Daemon::start_with_web(web, JOBS);
    let reply = request(port, "GET", "/jobs", &[], "");
    assert_eq!(reply.header("x-frame-options"), Some("DENY"));
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(get(port, "/jobs/nope").header("x-frame-options"), None);
}

#[test]
fn unix_socket_listener_with_mode() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("api.sock");
    let config = format!(
        "web:\n  listen:\n    - unix://{}\n  socketMode: \"0600\"\njobs:\n{JOBS}",
        socket.display()
    );
    let _d = Daemon::start(&config);
    wait_until(|| socket.exists(), "the socket");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let reply = support::http::request_unix(&socket, "GET", "/version");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, env!("CARGO_PKG_VERSION"));
}

#[test]
fn a_port_that_cannot_bind_is_skipped_and_the_rest_serve() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    let port = free_port();
    let config = format!(
        "web:\n  listen:\n    - http://127.0.0.1:{busy_port}\n    - http://127.0.0.1:{port}\njobs:\n{JOBS}"
    );
    let d = Daemon::start(&config);
    wait_listening(port, LONG);
    assert_eq!(get(port, "/version").status, 200);
    d.wait_for_log(
        &format!("WARNING:cronstable:web: could not listen on http://127.0.0.1:{busy_port}: "),
        1,
        LONG,
    );
    d.wait_for_log(
        &format!("INFO:cronstable:web: started listening on http://127.0.0.1:{port}\n"),
        1,
        LONG,
    );
}

#[test]
fn reload_moves_the_listener() {
    let (d, port) = Daemon::start_with_web("", JOBS);
    let new_port = free_port();
    let config = std::fs::read_to_string(d.path("cronstable.yaml"))
        .unwrap()
        .replace(
            &format!("127.0.0.1:{port}"),
            &format!("127.0.0.1:{new_port}"),
        );
    std::fs::write(d.path("cronstable.yaml"), config).unwrap();
    d.signal(nix::sys::signal::Signal::SIGHUP);
    wait_listening(new_port, LONG);
    wait_until(
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the old port to close",
    );
}

/// Parses the exposition with the Python `prometheus_client` parser and
/// returns `name{sorted labels} value` lines.
fn parse_with_prometheus_client(text: &str) -> Option<Vec<String>> {
    let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}} {s.value}")
"#;
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
fn metrics_parse_with_prometheus_client_and_counters_move() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let count = |samples: &[String]| -> f64 {
        samples
            .iter()
            .find(|l| l.starts_with("cronstable_job_runs_total{job_name=tick,status=success}"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1.0)
    };
    let first_text = get(port, "/metrics").body;
    let Some(first) = parse_with_prometheus_client(&first_text) else {
        assert!(
            std::env::var("CI").is_err(),
            "prometheus_client must be installed in CI"
        );
        eprintln!("prometheus_client not installed; skipping the parser check");
        return;
    };
    assert!(first
        .iter()
        .any(|l| l.starts_with("cronstable_info{version=")));
    wait_until(
        || {
            let now = parse_with_prometheus_client(&get(port, "/metrics").body).unwrap_or_default();
            count(&now) > count(&first) && count(&now) >= 2.0
        },
        "the success counter to move",
    );
    let om = request(
        port,
        "GET",
        "/metrics",
        &[("Accept", "application/openmetrics-text; version=1.0.0")],
        "",
    );
    assert!(om
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    assert!(om.body.ends_with("# EOF\n"));
}

#[test]
fn openapi_document_and_router_list_the_same_routes() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.yaml")).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_mapping().unwrap() {
        for method in ["get", "post", "put", "delete", "patch"] {
            if item.get(method).is_some() {
                documented.push((method.to_uppercase(), path.as_str().unwrap().to_owned()));
            }
        }
    }
    documented.sort();
    let mut served: Vec<(String, String)> = cronstable::web::routes::routes()
        .into_iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    served.sort();
    assert_eq!(documented, served);
    // And the router really serves each listed route (not a 404/405).
    let (_d, port) = Daemon::start_with_web("", JOBS);
    for (method, path) in &served {
        let concrete = path.replace("{name}", "tick").replace("{file}", "base.js");
        let concrete = if concrete == "/schedule/preview" {
            "/schedule/preview?expr=*%20*%20*%20*%20*".to_owned()
        } else {
            concrete
        };
        let reply = request(port, method, &concrete, &[], "");
        // A route may answer 404 itself (`/state/records` without a state
        // section: `state store is not configured`), but never the
        // router's own 404 for a path it does not serve.
        assert!(
            reply.status != 405 && !reply.body.contains("404: Not Found"),
            "{method} {concrete}: {} {}",
            reply.status,
            reply.body
        );
    }
}

#[test]
fn schedule_why_explains_one_timestamp_field_by_field() {
    let jobs = r#"  - name: weekday-report
    command: "true"
    schedule: "0 9 * * mon,fri"
    timezone: Europe/Berlin
  - name: hashed-off
    command: "true"
    schedule: "H 3 * * *"
    enabled: false
  - name: boot
    command: "true"
    schedule: "@reboot"
"#;
    let (_d, port) = Daemon::start_with_web("", jobs);

    // A Tuesday: every column but day-of-week matched.
    let reply = get(port, "/schedule/why?job=weekday-report&at=2026-07-14T09:00");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let v = reply.json();
    assert_eq!(v["job"], "weekday-report");
    assert_eq!(v["enabled"], true);
    assert_eq!(v["timezone"], "Europe/Berlin");
    assert_eq!(v["at"], "2026-07-14T09:00");
    assert_eq!(v["at_in_zone"], "2026-07-14T09:00:00+02:00");
    assert_eq!(v["expression"], "0 9 * * mon,fri");
    assert_eq!(v["reboot"], false);
    assert_eq!(v["description"], "At 09:00, on Monday and Friday");
    assert!(v.get("resolved").is_none(), "{v}");
    assert_eq!(v["matches"], false);
    assert_eq!(v["failed"], serde_json::json!(["day-of-week"]));
    let fields: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "second",
            "minute",
            "hour",
            "day-of-month",
            "month",
            "day-of-week",
            "year"
        ]
    );
    assert_eq!(
        v["checks"][5],
        serde_json::json!({"field": "day-of-week", "value": 2, "label": "Tuesday",
                           "allowed": "Monday and Friday", "matched": false})
    );
    assert_eq!(v["checks"][4]["label"], "July");
    assert_eq!(v["previous_fire"], "2026-07-13T09:00:00+02:00");
    assert_eq!(v["next_fire"], "2026-07-17T09:00:00+02:00");
    assert_eq!(v["notes"], serde_json::json!([]));

    // An instant with an offset is converted into the job's zone: 07:00Z
    // is 09:00 in Berlin on a Monday. `+` must be sent as %2B; a bare `+`
    // (decoded to a space) is read as one too.
    for at in [
        "2026-07-13T07:00:00Z",
        "2026-07-13T09:00:00%2B02:00",
        "2026-07-13T09:00:00+02:00",
    ] {
        let v = get(port, &format!("/schedule/why?job=weekday-report&at={at}")).json();
        assert_eq!(v["matches"], true, "{at}: {v}");
        assert_eq!(v["at_in_zone"], "2026-07-13T09:00:00+02:00", "{at}");
        assert_eq!(v["failed"], serde_json::json!([]));
    }

    // Hashed and disabled: still explained, against the resolved slot.
    let v = get(port, "/schedule/why?job=hashed-off&at=2026-07-14T03:00").json();
    assert_eq!(v["enabled"], false);
    assert_eq!(v["timezone"], "UTC");
    assert_eq!(v["expression"], "H 3 * * *");
    let resolved = v["resolved"].as_str().unwrap();
    assert!(
        resolved.ends_with(" 3 * * *") && !resolved.contains('H'),
        "{resolved}"
    );
    let minute = resolved.split(' ').next().unwrap();
    assert_eq!(v["checks"][1]["allowed"], minute);
    assert_eq!(
        v["description"],
        format!("At 03:{minute:0>2}, every day (H slots hashed from the job name)")
    );
    assert_eq!(v["matches"], minute == "0");

    // @reboot: no timetable, no checks.
    let v = get(port, "/schedule/why?job=boot&at=2026-07-14T03:00").json();
    assert_eq!(v["reboot"], true);
    assert_eq!(v["matches"], false);
    assert_eq!(v["checks"], serde_json::json!([]));
    assert_eq!(v["notes"][0]["code"], "reboot");
    assert_eq!(v["description"], "Once, when cronstable starts (@reboot)");
    assert!(v["next_fire"].is_null() && v["previous_fire"].is_null());

    // A pause is part of the answer: a match would not launch.
    let paused = request(
        port,
        "POST",
        "/jobs/weekday-report/pause",
        &[],
        r#"{"durationSeconds": 600, "note": "quarter close", "by": "ops"}"#,
    );
    assert_eq!(paused.status, 200, "{}", paused.body);
    let v = get(port, "/schedule/why?job=weekday-report&at=2026-07-13T09:00").json();
    assert_eq!(v["matches"], true);
    let note = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["code"] == "paused")
        .unwrap_or_else(|| panic!("no paused note: {v}"));
    let message = note["message"].as_str().unwrap();
    assert!(
        message.contains("ops") && message.contains("quarter close"),
        "{message}"
    );

    // Errors: 400 for a missing or unreadable parameter, 404 for a job.
    for path in [
        "/schedule/why",
        "/schedule/why?job=weekday-report",
        "/schedule/why?at=2026-07-14T09:00",
        "/schedule/why?job=%20&at=2026-07-14T09:00",
        "/schedule/why?job=weekday-report&at=tuesday",
        "/schedule/why?job=boot&at=2026-13-01",
    ] {
        let reply = get(port, path);
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        assert!(reply.json()["error"].is_string(), "{path}");
    }
    let bad = get(port, "/schedule/why?job=weekday-report&at=tuesday").json();
    assert!(
        bad["error"].as_str().unwrap().contains("'tuesday'"),
        "{bad}"
    );
    let missing = get(port, "/schedule/why?job=nope&at=2026-07-14T09:00");
    assert_eq!(missing.status, 404);
    // the manual's words for the routes that name a job's schedule
    assert_eq!(
        missing.json(),
        serde_json::json!({"error": "no job or DAG schedule named 'nope'"})
    );
}

const SHUTDOWN_REFUSED: &str = "POST /shutdown requires bearer-token authentication: configure \
web.authToken (or a web.authTokens entry whose scopes include `control`) and present it on this request";

/// A 2 s job keeps running through the drain that POST /shutdown starts.
const DRAIN_JOB: &str = r#"  - name: slow
    command: "echo started > slow.started; sleep 2; echo done > slow.done"
    schedule: "@reboot"
"#;

#[test]
fn shutdown_without_a_configured_token_is_refused_and_the_daemon_keeps_running() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let refused = post(port, "/shutdown");
    assert_eq!(refused.status, 403);
    assert_eq!(refused.json()["error"], SHUTDOWN_REFUSED);
    // A bearer header means nothing when no token is configured.
    let anyone = request(
        port,
        "POST",
        "/shutdown",
        &[("Authorization", "Bearer whatever")],
        "",
    );
    assert_eq!(anyone.status, 403);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(port, "/status").status, 200, "still serving");
}

#[test]
fn shutdown_with_a_token_drains_running_jobs_and_exits_zero() {
    let web = r#"  authTokens:
    - value: reader
      scopes: [view]
      label: board
    - value: operator
      scopes: [control]
      label: ops
  anonymousScopes: [view]
"#;
    let (mut d, port) = Daemon::start_with_web(web, DRAIN_JOB);
    d.wait_for_lines("slow.started", 1, LONG);
    assert_eq!(post(port, "/shutdown").status, 403, "anonymous");
    let reader = request(
        port,
        "POST",
        "/shutdown",
        &[("Authorization", "Bearer reader")],
        "",
    );
    assert_eq!(reader.status, 403);
    assert_eq!(
        reader.json()["error"],
        "token 'board' lacks the 'control' scope required for this endpoint"
    );
    let accepted = request(
        port,
        "POST",
        "/shutdown",
        &[("Authorization", "Bearer operator")],
        "",
    );
    assert_eq!(accepted.status, 200);
    assert_eq!(accepted.json(), serde_json::json!({"shuttingDown": true}));
    assert_eq!(d.wait_exit(LONG), Some(0));
    assert!(
        d.path("slow.done").exists(),
        "the running job finished before the daemon exited"
    );
    let log = d.log();
    assert!(
        log.contains("shutdown requested via POST /shutdown (token 'ops')"),
        "{log}"
    );
}

#[test]
fn shutdown_with_the_all_scopes_token() {
    let (mut d, port) = Daemon::start_with_web("  authToken:\n    value: s3cret\n", JOBS);
    let accepted = request(
        port,
        "POST",
        "/shutdown",
        &[("Authorization", "Bearer s3cret")],
        "",
    );
    assert_eq!(accepted.status, 200);
    assert_eq!(d.wait_exit(LONG), Some(0));
    assert!(d
        .log()
        .contains("shutdown requested via POST /shutdown (token 'authToken')"));
}

/// A job's `cronstable_job_runs_total` sample for `status` in `/metrics`.
fn runs_total(port: u16, job: &str, status: &str) -> Option<f64> {
    let prefix = format!("cronstable_job_runs_total{{job_name=\"{job}\",status=\"{status}\"}} ");
    get(port, "/metrics")
        .body
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .and_then(|v| v.parse().ok())
}

#[test]
fn only_if_last_succeeded_holds_scheduled_fires_after_a_failure_without_a_state_section() {
    // Fails its first run and would succeed from then on.
    let jobs = r#"  - name: gated
    command: "test -e '{dir}/ok' || { touch '{dir}/ok'; exit 1; }"
    schedule:
      second: "*"
    onlyIfLastSucceeded: true
"#;
    let (d, port) = Daemon::start_with_web("", jobs);
    let skip =
        "Job gated skipped: onlyIfLastSucceeded and its last run is not recorded as a success";
    d.wait_for_log(skip, 3, LONG);
    // At start, the original's note that the gate has memory only.
    assert!(
        d.log().contains(
            "onlyIfLastSucceeded is set on 1 job(s) with no `state` backend: the gate works \
             from in-memory history only and resets on restart"
        ),
        "{}",
        d.log()
    );

    // The held fires left no run behind: the failure is still the only
    // run, and nothing was counted as a skipped (paused) slot.
    let runs = get(port, "/jobs/gated/runs").json()["runs"].clone();
    let runs = runs.as_array().expect("a runs array");
    assert_eq!(runs.len(), 1, "{runs:?}\n{}", d.log());
    assert_eq!(runs[0]["outcome"], "failure");
    assert_eq!(runs[0]["trigger"], "schedule");
    assert_eq!(runs_total(port, "gated", "failure"), Some(1.0));
    assert_eq!(runs_total(port, "gated", "success"), Some(0.0));
    assert_eq!(runs_total(port, "gated", "skipped"), Some(0.0));

    // A manual start is the operator overriding the gate; its success
    // reopens it, so scheduled fires run again.
    assert_eq!(post(port, "/jobs/gated/start").status, 200);
    let outcomes = |trigger: &str| -> usize {
        get(port, "/jobs/gated/runs").json()["runs"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter(|run| run["trigger"] == trigger && run["outcome"] == "success")
                    .count()
            })
            .unwrap_or(0)
    };
    wait_until(|| outcomes("manual") == 1, "the manual run");
    wait_until(
        || outcomes("schedule") >= 2,
        "scheduled runs after the success",
    );
    let runs = get(port, "/jobs/gated/runs").json()["runs"].clone();
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .all(|r| r.get("skip_reason").is_none()),
        "{runs}"
    );
}
