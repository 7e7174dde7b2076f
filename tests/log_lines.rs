//! The daemon's log lines, whole, as an operator's log alert sees them
//! (`LEVEL:logger:message`, default format). Each expected line says where
//! its text comes from: "manual" (quoted in the original's wiki) or
//! "observed" (what cronstable 1.2.72 printed for the same scenario, run
//! side by side). Fail reasons follow the manual (Failure-Detection), which
//! the original's later releases word differently.

mod support;

use nix::sys::signal::Signal;
use std::time::Duration;
use support::daemon::Daemon;

const LONG: Duration = Duration::from_secs(30);

/// How many whole lines of `log` equal `line`.
fn count_lines(log: &str, line: &str) -> usize {
    log.lines().filter(|l| *l == line).count()
}

/// Waits until `line` is a whole line of the log `count` times.
fn wait_line(d: &Daemon, line: &str, count: usize) {
    let start = std::time::Instant::now();
    while count_lines(&d.log(), line) < count {
        assert!(
            start.elapsed() < LONG,
            "waited for {count}x line {line:?}; log:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The job-set id of the config in the daemon's directory, as the binary
/// prints it.
fn job_set_id(d: &Daemon) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cronstable"))
        .args(["-c", "cronstable.yaml", "--job-set-id"])
        .current_dir(d.dir.path())
        .output()
        .expect("run --job-set-id");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

const CONFIG: &str = r#"
web:
  listen:
    - http://127.0.0.1:@PORT@
    - http://127.0.0.1
jobs:
  - name: ok
    command: echo hello
    captureStdout: true
    schedule: "@reboot"
  - name: bad
    command: "echo oops >&2; exit 3"
    schedule: "@reboot"
    onFailure:
      retry:
        maximumRetries: 2
        initialDelay: 0.2
        maximumDelay: 0.2
        backoffMultiplier: 1
      report:
        shell:
          command: "true"
    onPermanentFailure:
      report:
        shell:
          command: "true"
  - name: forbid
    command: sleep 3
    schedule:
      second: "*"
    concurrencyPolicy: Forbid
  - name: swap
    command: exec sleep 3
    schedule:
      second: "*/2"
    concurrencyPolicy: Replace
  - name: slow
    command: sleep 30
    schedule: "@reboot"
    executionTimeout: 0.5
    killTimeout: 2
  - name: stubborn
    command: "trap '' TERM; sleep 30"
    schedule: "@reboot"
    executionTimeout: 0.5
    killTimeout: 0.5
"#;

#[test]
fn a_daemons_life_logs_the_originals_lines() {
    let port = support::http::free_port();
    let mut d = Daemon::start(&CONFIG.replace("@PORT@", &port.to_string()));
    let id = job_set_id(&d);

    // manual (Job-Set-ID: `Job set id: v1:… (N jobs)`), observed.
    wait_line(&d, &format!("INFO:cronstable:Job set id: {id} (6 jobs)"), 1);
    // manual (HTTP-API, Troubleshooting: `web: started listening on <url>`).
    wait_line(
        &d,
        &format!("INFO:cronstable:web: started listening on http://127.0.0.1:{port}"),
        1,
    );
    // manual (HTTP-API: `Ignoring web listen url ...: http url needs host
    // and port`), observed.
    wait_line(
        &d,
        "WARNING:cronstable:Ignoring web listen url http://127.0.0.1: http url needs host and port",
        1,
    );

    // A success. observed.
    wait_line(&d, "INFO:cronstable:Starting job ok", 1);
    wait_line(&d, "INFO:cronstable:Job ok spawned", 1);
    wait_line(
        &d,
        "INFO:cronstable:Job ok exit code 0; has stdout: true, has stderr: false; fail_reason: None",
        1,
    );

    // A failure retried twice, then permanent. observed (the reason's
    // text: manual, Failure-Detection-and-Retries).
    let failed = "INFO:cronstable:Job bad exit code 3; has stdout: false, has stderr: true; \
                  fail_reason: 'failsWhen=nonzeroReturn and retcode=3'";
    wait_line(
        &d,
        "INFO:cronstable:Cron job bad: reporting permanent failure",
        1,
    );
    let log = d.log();
    assert_eq!(count_lines(&log, failed), 3, "{log}");
    // The captured stream: a header line, then its text.
    assert_eq!(
        log.matches("\nINFO:cronstable:Job bad STDERR:\noops\n")
            .count(),
        3,
        "{log}"
    );
    assert_eq!(
        count_lines(&log, "INFO:cronstable:Cron job bad: reporting failure"),
        3,
        "{log}"
    );
    for n in 1..=2 {
        let line =
            format!("INFO:cronstable:Cron job bad scheduled to be retried (#{n}) in 0.2 seconds");
        assert_eq!(count_lines(&log, &line), 1, "{line}\n{log}");
    }
    // No reporter on success: nothing is said about reporting it.
    assert!(!log.contains("Cron job ok: reporting"), "{log}");

    // A timeout, and a job that ignores SIGTERM. observed; the second
    // also manual (Concurrency-and-Timeouts).
    wait_line(
        &d,
        "INFO:cronstable:Job slow exceeded its executionTimeout of 0.5 seconds, cancelling it...",
        1,
    );
    wait_line(
        &d,
        "INFO:cronstable:Job slow exit code -100; has stdout: false, has stderr: false; \
         fail_reason: 'failsWhen=nonzeroReturn and retcode=-100'",
        1,
    );
    wait_line(
        &d,
        "WARNING:cronstable:Job stubborn did not gracefully terminate after 0.5 seconds, killing it...",
        1,
    );

    // Overlaps. observed.
    wait_line(
        &d,
        "WARNING:cronstable:Job forbid: still running and concurrencyPolicy is Forbid",
        1,
    );
    wait_line(
        &d,
        "WARNING:cronstable:Job swap: still running and concurrencyPolicy is Replace",
        1,
    );
    wait_line(
        &d,
        "INFO:cronstable:Job swap was replaced by a newer instance",
        1,
    );

    // A reload of a broken file, then of a fixed one. observed: the
    // error comes from the `cronstable` logger, the parser's text after
    // the colon and newline is ours.
    let config = d.path("cronstable.yaml");
    std::fs::write(&config, "jobs:\n  - name: broken\n").expect("write config");
    d.signal(Signal::SIGHUP);
    wait_line(
        &d,
        "INFO:cronstable:Reload requested (SIGHUP); reloading configuration",
        1,
    );
    wait_line(
        &d,
        "ERROR:cronstable:Error in configuration file(s), so not updating any of the config.:",
        1,
    );
    std::fs::write(
        &config,
        "jobs:\n  - name: ok\n    command: echo again\n    schedule: \"@reboot\"\n",
    )
    .expect("write config");
    let fixed = job_set_id(&d);
    d.signal(Signal::SIGHUP);
    wait_line(
        &d,
        "INFO:cronstable:Reload requested (SIGHUP); reloading configuration",
        2,
    );
    // manual (logged again when a reload changes the set), observed.
    wait_line(
        &d,
        &format!("INFO:cronstable:Job set id: {fixed} (1 job)"),
        1,
    );

    // Shutdown. manual (CLI-Reference, Architecture-and-Internals).
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait_exit(LONG), Some(0));
    let log = d.log();
    assert_eq!(
        count_lines(
            &log,
            "INFO:cronstable:Shutting down (after currently running jobs finish)..."
        ),
        1,
        "{log}"
    );
    assert_eq!(
        count_lines(&log, "INFO:cronstable:Stopping http server"),
        1,
        "{log}"
    );
    // The original says nothing on receiving the signal itself.
    assert!(!log.contains("INFO:cronstable:SIGTERM received"), "{log}");
    // Every line above, at INFO or more, came from the `cronstable` logger
    // (the original's cron/job modules log through it).
    for line in log.lines() {
        if line.starts_with("INFO:") || line.starts_with("WARNING:") || line.starts_with("ERROR:") {
            assert!(line.split(':').nth(1) == Some("cronstable"), "{line}");
        }
    }
}
