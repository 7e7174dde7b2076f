//! The daemon running real jobs: per-second and @reboot schedules, files
//! written by jobs, the process table, signals, and statsd on a real UDP
//! socket.

mod support;

use nix::sys::signal::Signal;
use std::time::Duration;
use support::daemon::{group_alive, read_lines, Daemon};

const LONG: Duration = Duration::from_secs(20);

#[test]
fn execution_timeout_kills_the_whole_group_and_records_minus_100() {
    let d = Daemon::start(
        r#"
jobs:
  - name: slow
    command: "echo $$ > {dir}/pgid; sh -c 'sleep 300 & sleep 300'"
    schedule: "@reboot"
    executionTimeout: 1
    killTimeout: 2
"#,
    );
    d.wait_for_log(
        "Job slow exceeded its executionTimeout of 1.0 seconds, cancelling it...",
        1,
        LONG,
    );
    d.wait_for_log("failsWhen=nonzeroReturn and retcode=-100", 1, LONG);
    let pgid: i32 = read_lines(&d.path("pgid"))[0].parse().unwrap();
    assert!(!group_alive(pgid), "a process of group {pgid} survived");
}

#[test]
fn sigterm_ignoring_job_is_killed_after_kill_timeout() {
    let d = Daemon::start(
        r#"
jobs:
  - name: stubborn
    command: "echo $$ > {dir}/pgid; trap '' TERM; sleep 60"
    schedule: "@reboot"
    executionTimeout: 1
    killTimeout: 1
"#,
    );
    d.wait_for_log(
        "Job stubborn did not gracefully terminate after 1.0 seconds, killing it...",
        1,
        LONG,
    );
    d.wait_for_log("retcode=-100", 1, LONG);
    let pgid: i32 = read_lines(&d.path("pgid"))[0].parse().unwrap();
    assert!(!group_alive(pgid));
}

/// A job that records overlaps: it holds a directory as a lock while it
/// sleeps, and notes when the lock was already taken.
fn overlap_job(policy: &str) -> String {
    format!(
        r#"
jobs:
  - name: overlap
    command: "echo start >> {{dir}}/starts; mkdir {{dir}}/lock 2>/dev/null || echo overlap >> {{dir}}/overlaps; sleep 2.5; rmdir {{dir}}/lock 2>/dev/null; true"
    schedule:
      second: "*"
    concurrencyPolicy: {policy}
"#
    )
}

#[test]
fn forbid_never_overlaps() {
    let d = Daemon::start(&overlap_job("Forbid"));
    d.wait_for_lines("starts", 2, LONG);
    d.wait_for_log(
        "Job overlap: still running and concurrencyPolicy is Forbid",
        2,
        LONG,
    );
    assert!(read_lines(&d.path("overlaps")).is_empty(), "{}", d.log());
}

#[test]
fn allow_overlaps() {
    let d = Daemon::start(&overlap_job("Allow"));
    d.wait_for_lines("overlaps", 1, LONG);
    d.wait_for_log(
        "Job overlap: still running and concurrencyPolicy is Allow",
        1,
        LONG,
    );
}

#[test]
fn replace_terminates_the_old_run_without_a_failure() {
    let d = Daemon::start(
        r#"
jobs:
  - name: swap
    command: "echo $$ >> {dir}/pids; exec sleep 60"
    schedule:
      second: "*/2"
    concurrencyPolicy: Replace
    killTimeout: 1
"#,
    );
    let pids = d.wait_for_lines("pids", 2, LONG);
    d.wait_for_log("Job swap was replaced by a newer instance", 1, LONG);
    let first: i32 = pids[0].parse().unwrap();
    assert!(!group_alive(first), "the replaced run's group is gone");
    // The replaced instance is not a finished run: no exit line (which
    // every run that reaches completion handling logs) and no report.
    assert!(!d.log().contains("Job swap exit code"), "{}", d.log());
}

#[test]
fn missing_program_fails_with_127() {
    let d = Daemon::start(
        r#"
jobs:
  - name: ghost
    command: [/nonexistent/program, --flag]
    schedule: "@reboot"
  - name: nowhere
    command: "true"
    workingDirectory: /nonexistent/dir
    schedule: "@reboot"
"#,
    );
    d.wait_for_log(
        "Job ghost: could not start its command: /nonexistent/program",
        1,
        LONG,
    );
    d.wait_for_log(
        "Job nowhere: could not start its command: working directory /nonexistent/dir",
        1,
        LONG,
    );
    d.wait_for_log("retcode=127", 2, LONG);
}

#[test]
fn fails_when_variants() {
    let d = Daemon::start(
        r#"
jobs:
  - name: noisy-stdout
    command: echo hello
    captureStdout: true
    failsWhen:
      producesStdout: true
    schedule: "@reboot"
  - name: stderr-ok
    command: echo warn >&2
    failsWhen:
      producesStdout: false
      producesStderr: false
    schedule: "@reboot"
  - name: nonzero-ok
    command: exit 3
    failsWhen:
      producesStdout: false
      nonzeroReturn: false
    schedule: "@reboot"
  - name: always
    command: "true"
    failsWhen:
      producesStdout: false
      always: true
    schedule: "@reboot"
"#,
    );
    d.wait_for_log(
        "Job noisy-stdout exit code 0; has stdout: true, has stderr: false; \
         fail_reason: 'failsWhen=producesStdout and stdout is not empty'\n",
        1,
        LONG,
    );
    d.wait_for_log(
        "Job stderr-ok exit code 0; has stdout: false, has stderr: true; fail_reason: None\n",
        1,
        LONG,
    );
    d.wait_for_log(
        "Job nonzero-ok exit code 3; has stdout: false, has stderr: false; fail_reason: None\n",
        1,
        LONG,
    );
    d.wait_for_log(
        "Job always exit code 0; has stdout: false, has stderr: false; \
         fail_reason: 'failsWhen=always'\n",
        1,
        LONG,
    );
}

#[test]
fn captured_output_is_echoed_with_the_prefix_and_reported() {
    let d = Daemon::start(
        r#"
jobs:
  - name: talk
    command: "echo out; echo err >&2; exit 1"
    captureStdout: true
    schedule: "@reboot"
"#,
    );
    // The failed run's captured streams are logged, one line each.
    d.wait_for_log("INFO:cronstable:Job talk STDOUT:\nout\n", 1, LONG);
    d.wait_for_log("INFO:cronstable:Job talk STDERR:\nerr\n", 1, LONG);
    d.wait_for_log("[talk stderr] err", 1, LONG);
    let deadline = std::time::Instant::now() + LONG;
    while !d.stdout().contains("[talk stdout] out") {
        assert!(
            std::time::Instant::now() < deadline,
            "stdout: {}",
            d.stdout()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn retries_follow_the_backoff_ladder_then_report_permanent_failure() {
    let d = Daemon::start(
        r#"
jobs:
  - name: flaky
    command: "date +%s.%N >> {dir}/attempts; exit 1"
    schedule: "@reboot"
    onFailure:
      retry:
        maximumRetries: 2
        initialDelay: 0.5
        maximumDelay: 10
        backoffMultiplier: 3
      report:
        shell:
          command: "true"
    onPermanentFailure:
      report:
        shell:
          command: "true"
"#,
    );
    d.wait_for_log("Cron job flaky: reporting permanent failure", 1, LONG);
    std::thread::sleep(Duration::from_millis(500));
    let times: Vec<f64> = read_lines(&d.path("attempts"))
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(times.len(), 3, "one run and two retries");
    assert!(times[1] - times[0] >= 0.5, "{times:?}");
    assert!(times[2] - times[1] >= 1.5, "{times:?}");
    assert_eq!(d.log().matches("reporting failure").count(), 3);
    assert_eq!(d.log().matches("reporting permanent failure").count(), 1);
}

#[test]
fn success_stops_the_retries() {
    let d = Daemon::start(
        r#"
jobs:
  - name: second-time-lucky
    command: "echo x >> {dir}/attempts; test $(wc -l < {dir}/attempts) -ge 2"
    schedule: "@reboot"
    onFailure:
      retry:
        maximumRetries: 5
        initialDelay: 0.2
        maximumDelay: 1
        backoffMultiplier: 1
    onSuccess:
      report:
        shell:
          command: "true"
    onPermanentFailure:
      report:
        shell:
          command: "true"
"#,
    );
    d.wait_for_log("Cron job second-time-lucky: reporting success", 1, LONG);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(read_lines(&d.path("attempts")).len(), 2);
    assert!(!d.log().contains("permanent failure"));
}

#[test]
fn reboot_jobs_run_once_and_disabled_jobs_never() {
    let d = Daemon::start(
        r#"
jobs:
  - name: boot
    command: "echo booted >> {dir}/boot"
    schedule: "@reboot"
  - name: off
    command: "echo ran >> {dir}/off"
    schedule:
      second: "*"
    enabled: false
  - name: ticker
    command: "echo tick >> {dir}/ticks"
    schedule:
      second: "*"
"#,
    );
    d.wait_for_lines("ticks", 3, LONG);
    assert_eq!(read_lines(&d.path("boot")), vec!["booted"]);
    assert!(read_lines(&d.path("off")).is_empty());
}

#[test]
fn sighup_reloads_and_a_bad_config_keeps_the_running_jobs() {
    let d = Daemon::start(
        r#"
jobs:
  - name: before
    command: "echo a >> {dir}/before"
    schedule:
      second: "*"
"#,
    );
    d.wait_for_lines("before", 1, LONG);
    std::fs::write(d.path("cronstable.yaml"), "jobs:\n  - name: broken\n").unwrap();
    d.signal(Signal::SIGHUP);
    d.wait_for_log(
        "ERROR:cronstable:Error in configuration file(s), so not updating any of the config.:\n",
        1,
        LONG,
    );
    let count = read_lines(&d.path("before")).len();
    d.wait_for_lines("before", count + 2, LONG);
    let new = format!(
        "jobs:\n  - name: after\n    command: \"echo b >> {}/after\"\n    schedule:\n      second: \"*\"\n",
        d.dir.path().display()
    );
    std::fs::write(d.path("cronstable.yaml"), new).unwrap();
    d.signal(Signal::SIGHUP);
    d.wait_for_lines("after", 1, LONG);
    d.wait_for_log("configuration reloaded: 1 job(s)", 1, LONG);
    // The job set changed twice in this life: at start and at the fixed
    // reload (the broken one changed nothing).
    assert_eq!(
        d.log().matches("INFO:cronstable:Job set id: v1:").count(),
        2,
        "{}",
        d.log()
    );
    assert!(d.log().contains(" (1 job)\n"), "{}", d.log());
}

#[test]
fn sigterm_drains_running_jobs_then_exits_zero() {
    let mut d = Daemon::start(
        r#"
jobs:
  - name: finishing
    command: "sleep 1.5; echo done > {dir}/done; exit 1"
    schedule: "@reboot"
    onFailure:
      report:
        shell:
          command: "true"
"#,
    );
    d.wait_for_log("Job finishing spawned", 1, LONG);
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait_exit(LONG), Some(0));
    assert_eq!(read_lines(&d.path("done")), vec!["done"]);
    let log = d.log();
    assert!(log.contains("Shutting down (after currently running jobs finish)..."));
    assert!(log.contains("finished during shutdown"), "{log}");
    assert!(
        !log.contains("reporting failure"),
        "no failure reports while draining"
    );
}

#[test]
fn a_second_signal_does_not_cancel_the_running_jobs() {
    let mut d = Daemon::start(
        r#"
jobs:
  - name: long
    command: "echo $$ > {dir}/pgid; sleep 3; echo finished > {dir}/done"
    schedule: "@reboot"
    killTimeout: 1
"#,
    );
    d.wait_for_lines("pgid", 1, LONG);
    let pgid: i32 = read_lines(&d.path("pgid"))[0].parse().unwrap();
    assert!(
        !support::daemon::live_members(pgid).is_empty(),
        "the job is running"
    );
    d.signal(Signal::SIGTERM);
    d.wait_for_log("Shutting down", 1, LONG);
    d.signal(Signal::SIGINT);
    d.wait_for_log("SIGINT received again", 1, LONG);
    if read_lines(&d.path("done")).is_empty() {
        assert!(
            !support::daemon::live_members(pgid).is_empty(),
            "the second signal must not stop the job"
        );
    }
    assert_eq!(d.wait_exit(LONG), Some(0));
    assert_eq!(read_lines(&d.path("done")), vec!["finished"]);
    assert!(!d.log().contains("Job long was cancelled"), "{}", d.log());
}

#[test]
fn statsd_datagrams_reach_a_udp_socket() {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(LONG)).unwrap();
    let port = socket.local_addr().unwrap().port();
    let _d = Daemon::start(&format!(
        r#"
jobs:
  - name: measured
    command: "true"
    schedule: "@reboot"
    statsd:
      prefix: cron.measured
      host: 127.0.0.1
      port: {port}
"#
    ));
    let mut buf = [0u8; 1024];
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"cron.measured.start:1|g\n");
    let n = socket.recv(&mut buf).unwrap();
    let stop = String::from_utf8_lossy(&buf[..n]).into_owned();
    // The whole datagram: the timer carries no sample-rate suffix (a
    // server honouring `@0.1` would count each run ten times).
    let duration = stop
        .strip_prefix("cron.measured.stop:1|g\ncron.measured.success:1|g\ncron.measured.duration:")
        .and_then(|rest| rest.strip_suffix("|ms\n"))
        .unwrap_or_else(|| panic!("unexpected stop datagram {stop:?}"));
    assert!(duration.parse::<u64>().is_ok(), "{stop:?}");
}

#[test]
fn environment_and_working_directory_reach_the_job() {
    let d = Daemon::start(
        r#"
jobs:
  - name: env
    command: "echo \"$GREETING $(pwd)\" > {dir}/env"
    schedule: "@reboot"
    workingDirectory: /tmp
    environment:
      - key: GREETING
        value: hello
"#,
    );
    let lines = d.wait_for_lines("env", 1, LONG);
    assert_eq!(lines, vec!["hello /tmp"]);
}

#[test]
fn an_escaped_descendant_cannot_hold_the_run_open_past_the_eof_bound() {
    let d = Daemon::start(
        r#"
jobs:
  - name: escapee
    command: "setsid sh -c 'echo $$ > {dir}/escaped; exec sleep 117' & sleep 60"
    captureStdout: true
    schedule: "@reboot"
    executionTimeout: 1
    killTimeout: 0
"#,
    );
    let escaped: i32 = d.wait_for_lines("escaped", 1, LONG)[0].parse().unwrap();
    d.wait_for_log("Job escapee exceeded its executionTimeout", 1, LONG);
    // Each captured stream gets its own 30 s bound, stderr first and then
    // stdout, so the stdout line comes about 60 s after the kill: wait
    // with a margin past that.
    d.wait_for_log(
        "job escapee: stdout did not reach end-of-file within 30.0 seconds of the job being killed",
        1,
        Duration::from_secs(90),
    );
    let log = d.log();
    let stderr_at = log
        .find("job escapee: stderr did not reach end-of-file within 30.0 seconds")
        .expect("the stderr bound is logged");
    let stdout_at = log
        .find("job escapee: stdout did not reach end-of-file within 30.0 seconds")
        .expect("the stdout bound is logged");
    assert!(stderr_at < stdout_at, "stderr's bound comes first:\n{log}");
    d.wait_for_log(
        "Job escapee exit code -100; has stdout: false, has stderr: false; \
         fail_reason: 'failsWhen=nonzeroReturn and retcode=-100'\n",
        1,
        LONG,
    );
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(escaped), Signal::SIGKILL);
}

#[test]
fn priority_renices_the_job() {
    let d = Daemon::start(
        r#"
jobs:
  - name: lowly
    command: "sleep 0.3; nice > {dir}/nice"
    priority: idle
    schedule: "@reboot"
"#,
    );
    assert_eq!(d.wait_for_lines("nice", 1, LONG), vec!["19"]);
}

#[test]
fn user_switch_runs_the_job_as_that_user() {
    let config = r#"
jobs:
  - name: demoted
    command: "id -G > {dir}/groups && id -u > {dir}/uid"
    user: nobody
    schedule:
      second: "*"
"#;
    if !nix::unistd::geteuid().is_root() {
        // Without root the switch is refused at load, naming the job.
        let d = Daemon::start(config);
        d.wait_for_log(
            "switches user or group, which needs cronstable to run as root",
            1,
            LONG,
        );
        return;
    }
    // The job (as nobody) can write only once the directory is opened up;
    // it fires every second, so a fire before the chmod just fails.
    let d = Daemon::start(config);
    std::fs::set_permissions(
        d.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let uid = d.wait_for_lines("uid", 1, LONG);
    assert_eq!(uid, vec![nobody.uid.to_string()]);
    let groups = read_lines(&d.path("groups"));
    assert!(
        !groups[0].split(' ').any(|g| g == "0"),
        "root's groups were dropped: {groups:?}"
    );
}
