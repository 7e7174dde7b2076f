//! `monitorResources`, black-box: real jobs burning CPU and holding
//! memory under the built daemon, their sampled usage read back through
//! every surface (`GET /jobs`, `/jobs/{name}/runs`, `/jobs/{name}/resources`,
//! `/metrics`, statsd, the shell reporter's environment) and compared with
//! what the jobs read from `/proc/self` themselves.

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http;

const LONG: Duration = Duration::from_secs(60);

/// Allocates and touches 100 MiB, burns 1.2 s of CPU, writes its own CPU seconds and peak RSS as `/proc/self` tells
/// them (`<out>.json`), then lingers `argv[2]` seconds holding the memory.
const BURN: &str = r#"
import json, os, sys, time
out, linger = sys.argv[1], float(sys.argv[2])
held = bytearray(100 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
start = time.process_time()
while time.process_time() - start < 1.2:
    pass
fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0].split()[1]
with open(out + ".tmp", "w") as f:
    json.dump({"cpu": cpu, "hwm": int(hwm) * 1024}, f)
os.rename(out + ".tmp", out + ".json")
time.sleep(linger)
"#;

/// Polls `path` on the daemon's API until `done` accepts the body.
fn poll(daemon: &Daemon, port: u16, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let body = http::get(port, path).json();
        if done(&body) {
            return body;
        }
        assert!(
            start.elapsed() < LONG,
            "{path} never got there; last: {body}\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The entry of `job` in a `GET /jobs` body.
fn entry<'a>(jobs: &'a Value, job: &str) -> &'a Value {
    jobs.as_array()
        .and_then(|all| all.iter().find(|j| j["name"] == job))
        .unwrap_or(&Value::Null)
}

/// What the job read from `/proc/self` at its end.
fn proc_says(daemon: &Daemon, name: &str) -> (f64, f64) {
    let path = daemon.path(&format!("{name}.json"));
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < LONG,
            "{name} never finished its burn\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(&path).expect("the job's own reading");
    let own: Value = serde_json::from_str(&text).expect("JSON");
    (own["cpu"].as_f64().unwrap(), own["hwm"].as_f64().unwrap())
}

fn within(what: &str, measured: f64, truth: f64, tolerance: f64) {
    let error = (measured - truth).abs() / truth;
    eprintln!("{what}: sampled {measured}, /proc says {truth}");
    assert!(
        error <= tolerance,
        "{what}: sampled {measured}, /proc says {truth} ({:.1} % off)",
        error * 100.0
    );
}

/// The finished run of `job` (they run once, at boot).
fn finished_run(daemon: &Daemon, port: u16, job: &str) -> Value {
    let runs = poll(daemon, port, &format!("/jobs/{job}/runs"), |b| {
        b["runs"].as_array().is_some_and(|r| !r.is_empty())
    });
    runs["runs"][0].clone()
}

#[test]
fn sampled_cpu_and_peak_memory_match_what_proc_says_on_every_surface() {
    let statsd = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    statsd.set_read_timeout(Some(LONG)).unwrap();
    let statsd_port = statsd.local_addr().unwrap().port();
    let report = |name: &str| {
        format!(
            "    onSuccess:\n      report:\n        shell:\n          command: \
             echo \"cpu=$CRONSTABLE_CPU_SECONDS rss=$CRONSTABLE_MAX_RSS_BYTES\" > {{dir}}/{name}.env\n"
        )
    };
    // The script reaches both jobs through their environment. `root`:
    // python replaces the shell (exec), so it is the run's first process,
    // and it lingers after its reading. `child`: the shell runs python as
    // a child and outlives it, so python's CPU reaches the shell's count
    // of its waited-for children.
    let script: String = BURN
        .trim_start_matches('\n')
        .lines()
        .map(|l| format!("          {l}\n"))
        .collect();
    let env = format!("    environment:\n      - key: BURN\n        value: |\n{script}");
    let root = format!(
        "  - name: root\n    schedule: '@reboot'\n    command: exec python3 -c \"$BURN\" {{dir}}/root 1.5\n\
         {env}    monitorResources:\n      interval: 0.5\n\
         {}    statsd:\n      prefix: cron.root\n      host: 127.0.0.1\n      port: {statsd_port}\n",
        report("root")
    );
    let child = format!(
        "  - name: child\n    schedule: '@reboot'\n    command: python3 -c \"$BURN\" {{dir}}/child 0 && sleep 1.5\n\
         {env}    monitorResources: true\n{}",
        report("child")
    );
    let plain = format!(
        "  - name: plain\n    schedule: '@reboot'\n    command: 'true'\n{}",
        report("plain")
    );
    let jobs = root + &child + &plain;
    let (daemon, port) = Daemon::start_with_web("", &jobs);

    // While `root` runs: its live readings in GET /jobs, with the 100 MiB
    // it holds, and its run-so-far series in GET /jobs/root/resources.
    let listed = poll(&daemon, port, "/jobs", |jobs| {
        entry(jobs, "root")["running_resources"]["rss_bytes"]
            .as_u64()
            .is_some_and(|rss| rss > 90 << 20)
    });
    let live = &entry(&listed, "root")["running_resources"];
    assert_eq!(live["instances"], 1, "{live}");
    assert!(live["cpu_seconds"].as_f64().is_some() && live["cpu_percent"].as_f64().is_some());
    assert!(entry(&listed, "plain").get("running_resources").is_none());
    let charted = http::get(port, "/jobs/root/resources").json();
    assert_eq!(charted["monitored"], true, "{charted}");
    assert_eq!(charted["interval"], 0.5);
    let instance = &charted["live"][0];
    assert!(instance["pid"].as_u64().is_some(), "{charted}");
    assert!(
        instance["current"]["rss_bytes"].as_u64().is_some(),
        "{charted}"
    );
    assert!(
        !instance["series"].as_array().unwrap().is_empty(),
        "{charted}"
    );

    for name in ["root", "child"] {
        let (cpu, hwm) = proc_says(&daemon, name);
        let run = finished_run(&daemon, port, name);
        let resources = &run["resources"];
        let keys: Vec<&str> = resources
            .as_object()
            .unwrap_or_else(|| panic!("{name}: no resources in {run}"))
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "cpu_system_seconds",
                "cpu_total_seconds",
                "cpu_user_seconds",
                "max_rss_bytes",
                "samples"
            ],
            "the polled payload carries no series"
        );
        let total = resources["cpu_total_seconds"].as_f64().unwrap();
        within(&format!("{name} CPU seconds"), total, cpu, 0.2);
        let user = resources["cpu_user_seconds"].as_f64().unwrap();
        let system = resources["cpu_system_seconds"].as_f64().unwrap();
        assert!((user + system - total).abs() < 1e-9);
        let peak = resources["max_rss_bytes"].as_f64().unwrap();
        within(&format!("{name} peak RSS"), peak, hwm, 0.2);
        assert!(resources["samples"].as_u64().unwrap() >= 2, "{resources}");

        // The reporter's environment carries the same numbers.
        let env = daemon.wait_for_lines(&format!("{name}.env"), 1, LONG);
        assert_eq!(env, vec![format!("cpu={total:?} rss={peak}")], "{name}");

        // The stats of the window, over this one monitored run.
        let stats = http::get(port, &format!("/jobs/{name}/runs")).json()["stats"].clone();
        assert_eq!(stats["last_cpu_seconds"].as_f64(), Some(total), "{stats}");
        assert_eq!(stats["max_rss_bytes"].as_f64(), Some(peak), "{stats}");

        // The chart-grade record has the series, the live list is empty.
        let charted = poll(&daemon, port, &format!("/jobs/{name}/resources"), |b| {
            b["live"].as_array().is_some_and(Vec::is_empty)
        });
        let recorded = &charted["runs"][0]["resources"];
        assert_eq!(recorded["max_rss_bytes"].as_f64(), Some(peak), "{charted}");
        let series = recorded["series"].as_array().expect("a series");
        assert!(series.len() >= 2, "{charted}");
        for point in series {
            let p = point.as_array().expect("[t, cpu%, rss]");
            assert_eq!(p.len(), 3);
            assert!(p[0].as_f64().unwrap() > 1.7e9, "epoch seconds: {point}");
        }
        assert!(
            series.iter().any(|p| p[2].as_f64().unwrap() == peak),
            "the peak is in the series"
        );
    }

    // An unmonitored job: no record, no chart, empty reporter variables.
    let plain = finished_run(&daemon, port, "plain");
    assert_eq!(plain["resources"], Value::Null, "{plain}");
    let charted = http::get(port, "/jobs/plain/resources").json();
    assert_eq!(charted["monitored"], false);
    assert_eq!(charted["runs"], serde_json::json!([]));
    assert_eq!(
        daemon.wait_for_lines("plain.env", 1, LONG),
        vec!["cpu= rss="]
    );
    assert_eq!(http::get(port, "/jobs/nope/resources").status, 404);

    // Prometheus: the four families, for the monitored jobs only.
    let root = finished_run(&daemon, port, "root")["resources"].clone();
    let metrics = http::get(port, "/metrics").body;
    let sample = |series: &str| -> Option<f64> {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    };
    let user = sample("cronstable_job_cpu_seconds_total{job_name=\"root\",mode=\"user\"}");
    let system = sample("cronstable_job_cpu_seconds_total{job_name=\"root\",mode=\"system\"}");
    assert_eq!(user, root["cpu_user_seconds"].as_f64(), "{metrics}");
    assert_eq!(system, root["cpu_system_seconds"].as_f64());
    assert_eq!(
        sample("cronstable_job_peak_rss_bytes{job_name=\"root\"}"),
        root["max_rss_bytes"].as_f64()
    );
    assert_eq!(
        sample("cronstable_job_last_run_cpu_seconds{job_name=\"root\"}"),
        root["cpu_total_seconds"].as_f64()
    );
    assert_eq!(
        sample("cronstable_job_last_run_max_rss_bytes{job_name=\"root\"}"),
        root["max_rss_bytes"].as_f64()
    );
    assert!(!metrics.contains("cronstable_job_peak_rss_bytes{job_name=\"plain\"}"));
    assert!(!metrics.contains("cronstable_job_cpu_seconds_total{job_name=\"plain\""));

    // statsd: the stop datagram ends with the cpu timer and the peak gauge.
    let mut buf = [0u8; 1024];
    let stop = loop {
        let n = statsd.recv(&mut buf).expect("a datagram");
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        if text.starts_with("cron.root.stop:") {
            break text;
        }
    };
    let cpu_ms = (root["cpu_total_seconds"].as_f64().unwrap() * 1000.0).round_ties_even();
    assert!(
        stop.ends_with(&format!(
            "|ms\ncron.root.cpu:{cpu_ms}|ms\ncron.root.max_rss:{}|g\n",
            root["max_rss_bytes"]
        )),
        "{stop:?}"
    );
}

#[test]
fn a_monitored_runs_numbers_chart_and_counters_survive_a_restart_with_a_store() {
    let shared = tempfile::tempdir().unwrap();
    let state = format!(
        "state:\n  path: {}\n",
        shared.path().join("store").display()
    );
    // `@reboot` runs once per boot with a store: the second daemon only
    // reads the run back.
    let job = "  - name: busy\n    schedule: '@reboot'\n    \
               command: i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 1\n    \
               monitorResources:\n      interval: 0.2\n";
    let (mut first, port) = Daemon::start_with_web(&state, job);
    let before = finished_run(&first, port, "busy")["resources"].clone();
    assert!(
        before["samples"].as_u64().is_some_and(|n| n >= 2),
        "{before}"
    );
    let chart = http::get(port, "/jobs/busy/resources").json()["runs"][0]["resources"].clone();
    assert!(
        chart["series"].as_array().is_some_and(|s| s.len() >= 2),
        "{chart}"
    );
    first.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(first.wait_exit(LONG), Some(0), "{}", first.log());

    let (second, port) = Daemon::start_with_web(&state, job);
    let runs = poll(&second, port, "/jobs/busy/runs", |b| {
        b["runs"].as_array().is_some_and(|r| !r.is_empty())
    });
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(
        runs["runs"][0]["resources"], before,
        "the ledger kept the summary"
    );
    let after = http::get(port, "/jobs/busy/resources").json();
    assert_eq!(after["runs"][0]["resources"], chart, "and the chart");
    let metrics = http::get(port, "/metrics").body;
    let user = metrics.lines().find_map(|l| {
        l.strip_prefix("cronstable_job_cpu_seconds_total{job_name=\"busy\",mode=\"user\"} ")
    });
    assert_eq!(
        user.and_then(|v| v.parse::<f64>().ok()),
        before["cpu_user_seconds"].as_f64(),
        "the CPU counter was seeded from the store:\n{metrics}"
    );
}

#[test]
fn monitor_resources_settings_are_checked_at_load() {
    let dir = tempfile::tempdir().unwrap();
    for (setting, says) in [
        (
            "interval: 0.05",
            "monitorResources.interval: must be >= 0.1 (seconds)",
        ),
        (
            "history: 2001",
            "monitorResources.history: must be between 0 and 2000 (points)",
        ),
    ] {
        let path = dir.path().join("c.yaml");
        std::fs::write(
            &path,
            format!(
                "jobs:\n  - name: j\n    command: 'true'\n    schedule: '@daily'\n    monitorResources:\n      {setting}\n"
            ),
        )
        .unwrap();
        let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(1), "{setting}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{setting}: {}", run.stderr);
    }
    let path = dir.path().join("c.yaml");
    std::fs::write(
        &path,
        "jobs:\n  - name: j\n    command: 'true'\n    schedule: '@daily'\n    monitorResources: true\n",
    )
    .unwrap();
    let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}
