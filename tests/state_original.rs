//! One store shared with the original daemon (cronstable 1.2.72 from
//! PyPI, installed by scripts/test.sh; found through CRONSTABLE_ORIGINAL):
//! what it wrote, this daemon reads (history, boot markers, pending
//! retries, counters), and what this daemon wrote, the original's
//! `cronstable state check` accepts and its daemon reads back.

mod support;

use nix::sys::signal::Signal;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http;
use support::original::original;

const LONG: Duration = Duration::from_secs(30);

/// Two @reboot jobs, one failing with a retry far enough away that the
/// other daemon re-arms it.
fn jobs(out: &Path) -> String {
    format!(
        "jobs:\n  - name: hello\n    command: 'echo hi >> {out}/hello'\n    schedule: '@reboot'\n  \
         - name: flaky\n    command: 'echo x >> {out}/flaky; exit 3'\n    schedule: '@reboot'\n    \
         onFailure:\n      retry:\n        maximumRetries: 2\n        initialDelay: 40\n        \
         maximumDelay: 60\n        backoffMultiplier: 2\n",
        out = out.display()
    )
}

/// Runs the original daemon on `config` until `ready` shows in its log,
/// then stops it with SIGINT; returns its log.
fn run_original(exe: &Path, dir: &Path, config: &str, ready: &str) -> String {
    std::fs::write(dir.join("py.yaml"), config).unwrap();
    let log = dir.join("py.log");
    let mut child = Command::new(exe)
        .args(["-c", "py.yaml"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start the original");
    let start = Instant::now();
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    while !text().contains(ready) {
        if start.elapsed() > LONG {
            let _ = child.kill();
            panic!("the original never logged {ready:?}:\n{}", text());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let its fire-and-forget writes land, then stop it as an operator would.
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        Signal::SIGINT,
    )
    .unwrap();
    let _ = child.wait();
    text()
}

#[test]
fn this_daemon_reads_the_store_the_original_wrote() {
    let Some(exe) = original() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = format!("state:\n  path: {}\n", store.display());
    run_original(
        &exe,
        dir.path(),
        &format!("{state}{}", jobs(dir.path())),
        "scheduled to be retried (#1)",
    );
    let port = http::free_port();
    let ours = Daemon::start(&format!(
        "web:\n  listen:\n    - http://127.0.0.1:{port}\n{state}{}",
        jobs(dir.path())
    ));
    http::wait_listening(port, LONG);
    ours.wait_for_log("re-armed pending retry #1 from the durable ledger", 1, LONG);
    let log = ours.log();
    for job in ["hello", "flaky"] {
        assert!(
            log.contains(&format!(
                "Job {job} (@reboot) already ran during this OS boot"
            )),
            "the original's boot marker for {job} was not honoured:\n{log}"
        );
    }
    assert!(
        log.contains("state: rehydrated run history for 2 job(s) from the ledger"),
        "{log}"
    );
    assert!(
        log.contains("state: rehydrated Prometheus counters for 2 job(s)"),
        "{log}"
    );
    let runs = http::get(port, "/jobs/flaky/runs").json();
    let rows = runs["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{runs}");
    assert_eq!(rows[0]["outcome"], "failure");
    assert_eq!(rows[0]["exit_code"], 3);
    let metrics = http::get(port, "/metrics").body;
    assert!(
        metrics
            .lines()
            .any(|l| l
                .starts_with("cronstable_job_runs_total{job_name=\"hello\",status=\"success\"} 1")),
        "the original's counters were not seeded:\n{metrics}"
    );
    // Each @reboot job ran once in this boot, by the original.
    let hello = std::fs::read_to_string(dir.path().join("hello")).unwrap();
    assert_eq!(hello.lines().count(), 1);
    drop(ours);
}

#[test]
fn the_original_checks_and_reads_the_store_this_daemon_wrote() {
    let Some(exe) = original() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = format!("state:\n  path: {}\n", store.display());
    let mut ours = Daemon::start(&format!("{state}{}", jobs(dir.path())));
    ours.wait_for_log("scheduled to be retried (#1)", 1, LONG);
    std::thread::sleep(Duration::from_millis(500));
    ours.signal(Signal::SIGTERM);
    ours.wait_exit(LONG);

    std::fs::write(
        dir.path().join("py.yaml"),
        format!("{state}{}", jobs(dir.path())),
    )
    .unwrap();
    let check = Command::new(&exe)
        .args(["-c", "py.yaml", "state", "check"])
        .current_dir(dir.path())
        .output()
        .expect("run the original's state check");
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(stdout.contains("is writable"), "{stdout}");
    assert!(
        stdout.contains("  quarantined: 0 record(s)"),
        "the original quarantined our records: {stdout}"
    );
    for prefix in [
        "runs",
        "retries",
        "reboot",
        "inflight",
        "counters",
        "manifests",
        "meta",
    ] {
        assert!(
            stdout.contains(&format!("    {prefix}: ")),
            "no {prefix} streams: {stdout}"
        );
    }

    let log = run_original(
        &exe,
        dir.path(),
        &format!("{state}{}", jobs(dir.path())),
        "re-armed pending retry #1 from the durable",
    );
    assert!(
        log.contains("state: rehydrated run history for 2 job(s) from the ledger"),
        "{log}"
    );
    assert!(
        log.contains("state: rehydrated Prometheus counters for 2 job(s)"),
        "{log}"
    );
    for job in ["hello", "flaky"] {
        assert!(
            log.contains(&format!(
                "Job {job} (@reboot) already ran during this OS boot"
            )),
            "our boot marker for {job} was not honoured by the original:\n{log}"
        );
    }
    assert!(!log.contains("quarantined"), "{log}");
    let hello = std::fs::read_to_string(dir.path().join("hello")).unwrap();
    assert_eq!(hello.lines().count(), 1);
}
