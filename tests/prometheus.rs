//! `/metrics` as its consumers see it: the same series set the original
//! exposes for the same config (recorded from the original in
//! tests/fixtures/prometheus), and a real Prometheus server scraping the
//! built daemon, answering queries and evaluating the manual's alert rules.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http::{free_port, get, post, request, wait_listening};

const LONG: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/prometheus")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn wait_until(mut check: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < LONG, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The series of an exposition: sample lines without their values, the
/// version label's value blanked (it names each build).
fn series(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.rsplit_once(' ').map(|(key, _)| key.to_owned()))
        .map(|key| match key.split_once("version=\"") {
            Some((head, tail)) => {
                let rest = tail.split_once('"').map_or("", |(_, r)| r);
                format!("{head}version=\"*\"{rest}")
            }
            None => key,
        })
        .collect()
}

fn recorded_runs(port: u16, job: &str) -> usize {
    get(port, &format!("/jobs/{job}/runs")).json()["runs"]
        .as_array()
        .map_or(0, Vec::len)
}

#[test]
fn same_series_as_the_original_for_the_same_config() {
    let port = free_port();
    let d = Daemon::start(&fixture("config.yaml").replace("{port}", &port.to_string()));
    wait_listening(port, LONG);
    for job in ["ok", "bad", "flaky"] {
        let started = post(port, &format!("/jobs/{job}/start"));
        assert_eq!(started.status, 200, "{}", started.body);
    }
    let paused = request(
        port,
        "POST",
        "/jobs/held/pause",
        &[],
        r#"{"durationSeconds": 600}"#,
    );
    assert_eq!(paused.status, 200, "{}", paused.body);
    wait_until(
        || {
            ["ok", "bad", "flaky"]
                .iter()
                .all(|j| recorded_runs(port, j) >= 1)
        },
        "the three manual runs to be recorded",
    );
    let ours = series(&get(port, "/metrics").body);
    let original: BTreeSet<String> = fixture("original-series.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_owned)
        .collect();
    let missing: Vec<_> = original.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&original).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "series differ from the original's\nmissing: {missing:#?}\nextra: {extra:#?}\nlog:\n{}",
        d.log()
    );
}

/// A Prometheus server on a loopback port with its own config and data
/// directory; killed when dropped.
struct PrometheusServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The manual's example alert rules (Metrics-with-Prometheus), verbatim.
const MANUAL_RULES: &str = r#"groups:
  - name: cronstable
    rules:
      # a job's most recent run failed
      - alert: YacronJobFailed
        expr: cronstable_job_last_run_success == 0
        for: 5m
      # a job that should run hourly has not succeeded for 2 hours
      - alert: YacronJobStale
        expr: time() - cronstable_job_last_success_timestamp_seconds > 7200
      # the config file on disk is broken; the daemon is running stale config
      - alert: YacronConfigBroken
        expr: cronstable_config_last_reload_successful == 0
        for: 10m
      # the cluster cannot elect a leader: Leader jobs are not running anywhere
      - alert: YacronClusterNotQuorate
        expr: cronstable_cluster_quorate == 0
        for: 5m
      # more than one node believes it is the leader (split-brain)
      - alert: YacronMultipleLeaders
        expr: sum(cronstable_cluster_is_leader) > 1
"#;

/// Starts Prometheus scraping `target_port` every second, or returns None
/// (outside CI) when the `prometheus` binary is not installed.
fn start_prometheus(target_port: u16) -> Option<PrometheusServer> {
    let found = Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "the prometheus server must be installed in CI (scripts/test.sh installs it)"
        );
        eprintln!("prometheus is not installed (apt-get install prometheus); skipping");
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("rules.yml"), MANUAL_RULES).expect("write rules");
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - rules.yml\n\
         scrape_configs:\n  - job_name: cronstable\n    static_configs:\n      \
         - targets: ['127.0.0.1:{target_port}']\n"
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).expect("write config");
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log file");
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    let server = PrometheusServer {
        child,
        port,
        _dir: dir,
    };
    wait_listening(port, LONG);
    // The HTTP port opens before the storage is up; until then the API
    // answers 503. /-/ready says when queries are served.
    let began = std::time::Instant::now();
    while get(port, "/-/ready").status != 200 {
        assert!(
            began.elapsed() < LONG,
            "prometheus did not become ready within {LONG:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Some(server)
}

/// Percent-encodes a query parameter value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl PrometheusServer {
    fn api(&self, path: &str) -> serde_json::Value {
        let reply = get(self.port, path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        let body = reply.json();
        assert_eq!(body["status"], "success", "{path}: {body}");
        body["data"].clone()
    }

    fn query(&self, expr: &str) -> Vec<serde_json::Value> {
        self.api(&format!("/api/v1/query?query={}", encode(expr)))["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn series(&self, selector: &str) -> Vec<serde_json::Value> {
        self.api(&format!("/api/v1/series?match[]={}", encode(selector)))
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The value of a query that yields one sample.
    fn value(&self, expr: &str) -> Option<String> {
        let result = self.query(expr);
        result.first()?["value"][1].as_str().map(str::to_owned)
    }
}

#[test]
fn a_real_prometheus_scrapes_queries_and_evaluates_the_manuals_alerts() {
    let port = free_port();
    let config = format!(
        "web:\n  listen:\n    - http://127.0.0.1:{port}\n\
         jobs:\n  - name: tick\n    command: \"true\"\n    schedule:\n      second: \"*\"\n\
         \x20 - name: idle\n    command: \"true\"\n    schedule: \"0 0 1 1 *\"\n"
    );
    let d = Daemon::start(&config);
    wait_listening(port, LONG);
    let Some(prom) = start_prometheus(port) else {
        return;
    };

    wait_until(
        || {
            prom.api("/api/v1/targets")["activeTargets"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["health"] == "up"))
        },
        "the scrape target to be up",
    );
    let targets = prom.api("/api/v1/targets");
    assert_eq!(targets["activeTargets"][0]["lastError"], "", "{targets}");

    // The three families the original has and we lacked, with its values.
    wait_until(
        || {
            prom.value("cronstable_config_last_reload_successful")
                .is_some()
        },
        "the reload gauge to arrive",
    );
    assert_eq!(
        prom.value("cronstable_config_last_reload_successful")
            .as_deref(),
        Some("1")
    );
    assert_eq!(
        prom.value("cronstable_cluster_enabled").as_deref(),
        Some("0")
    );
    let stamp: f64 = prom
        .value("cronstable_config_last_reload_success_timestamp_seconds")
        .and_then(|v| v.parse().ok())
        .expect("a reload timestamp");
    let started: f64 = prom
        .value("cronstable_start_time_seconds")
        .and_then(|v| v.parse().ok())
        .expect("a start time");
    assert!(stamp >= started - 1.0, "{stamp} vs start {started}");

    // Bucket bounds spelled as the original spells them.
    wait_until(
        || {
            !prom
                .series(r#"cronstable_job_duration_seconds_bucket{job_name="tick",le="1.0"}"#)
                .is_empty()
        },
        "the le=\"1.0\" bucket series",
    );
    for le in [
        "0.1", "0.5", "1.0", "5.0", "15.0", "60.0", "300.0", "900.0", "3600.0", "+Inf",
    ] {
        let selector =
            format!(r#"cronstable_job_duration_seconds_bucket{{job_name="idle",le="{le}"}}"#);
        assert_eq!(prom.series(&selector).len(), 1, "{selector}");
    }
    assert!(prom
        .series(r#"cronstable_job_duration_seconds_bucket{le="1"}"#)
        .is_empty());
    // The once-a-second job's runs land in the le="1.0" bucket.
    wait_until(
        || {
            prom.value(r#"cronstable_job_duration_seconds_bucket{job_name="tick",le="1.0"}"#)
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v >= 1.0)
        },
        "a run counted in the le=\"1.0\" bucket",
    );
    assert!(!prom
        .series(r#"cronstable_job_runs_total{job_name="tick",status="success"}"#)
        .is_empty());

    // Every rule of the manual's example group loads and evaluates.
    wait_until(
        || {
            prom.api("/api/v1/rules")["groups"][0]["rules"]
                .as_array()
                .is_some_and(|rules| {
                    rules.len() == 5
                        && rules.iter().all(|r| {
                            r["health"] == "ok"
                                && r["lastEvaluation"]
                                    .as_str()
                                    .is_some_and(|t| !t.starts_with("0001"))
                        })
                })
        },
        "the manual's alert rules to evaluate",
    );
    assert!(prom
        .query("cronstable_config_last_reload_successful == 0")
        .is_empty());

    // Break the config on disk: the daemon keeps running the old one and
    // the manual's YacronConfigBroken expression now selects a series.
    std::fs::write(d.path("cronstable.yaml"), "jobs: [unclosed\n").expect("break config");
    d.signal(nix::sys::signal::Signal::SIGHUP);
    wait_until(
        || {
            prom.query("cronstable_config_last_reload_successful == 0")
                .len()
                == 1
        },
        "the config-broken alert expression to match",
    );
    let alerts = prom.api("/api/v1/rules?type=alert");
    let broken = alerts["groups"][0]["rules"]
        .as_array()
        .and_then(|rules| {
            rules
                .iter()
                .find(|r| r["name"] == "YacronConfigBroken")
                .cloned()
        })
        .expect("the YacronConfigBroken rule");
    wait_until(
        || {
            prom.api("/api/v1/alerts")["alerts"]
                .as_array()
                .is_some_and(|a| {
                    a.iter()
                        .any(|a| a["labels"]["alertname"] == "YacronConfigBroken")
                })
        },
        "the YacronConfigBroken alert to be pending",
    );
    assert_eq!(broken["health"], "ok", "{broken}");
}
