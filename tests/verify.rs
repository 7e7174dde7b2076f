//! `verify` checks, black-box: real jobs with real check commands under
//! the built daemon, read back through `GET /jobs` and
//! `GET /jobs/{name}/runs`, plus the load-time rules through `-v`.

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http;

const LONG: Duration = Duration::from_secs(30);

/// A job that runs `command` once (at the first second it fires) with the
/// given extra keys.
fn once(name: &str, command: &str, extra: &str) -> String {
    format!(
        "  - name: {name}\n    schedule: '* * * * * * *'\n    command: |\n      \
         [ -e {{dir}}/{name}.ran ] && exit 0\n      touch {{dir}}/{name}.ran\n      {command}\n{extra}"
    )
}

#[test]
fn a_failing_check_fails_the_run_and_a_passing_check_sees_the_jobs_environment() {
    let jobs = once(
        "good",
        "echo 42 > {dir}/good.out",
        "    environment:\n      - key: EXPECTED\n        value: '42'\n    verify:\n      \
         command: test \"$(cat {dir}/good.out)\" = \"$EXPECTED\"\n",
    ) + &once(
        "bad",
        "echo loaded",
        "    verify:\n      command: [sh, -c, 'echo checked 10 rows; echo short by 2 >&2; exit 3']\n",
    ) + &once(
        "broken",
        "exit 2",
        "    verify:\n      command: touch {dir}/should-not-exist\n",
    );
    let (daemon, port) = Daemon::start_with_web("", &jobs);

    let good = daemon.first_run(port, "good");
    assert_eq!(good["outcome"], "success", "{good}\n{}", daemon.log());
    assert_eq!(good["verification"]["outcome"], "success", "{good}");
    assert_eq!(good["verification"]["exit_code"], 0);

    let bad = daemon.first_run(port, "bad");
    assert_eq!(bad["outcome"], "failure", "{bad}");
    assert_eq!(bad["exit_code"], 0, "the run keeps its own exit code");
    assert_eq!(
        bad["fail_reason"],
        "verification failed: command exited with code 3"
    );
    let check = &bad["verification"];
    assert_eq!(check["outcome"], "failure", "{check}");
    assert_eq!(check["exit_code"], 3);
    assert_eq!(check["fail_reason"], "command exited with code 3");
    assert_eq!(check["stdout"], "checked 10 rows\n");
    assert_eq!(check["stderr"], "short by 2\n");
    assert_eq!(check["output_truncated"], false);
    assert!(check["duration"].as_f64().is_some(), "{check}");

    // A run that already failed is not checked.
    let broken = daemon.first_run(port, "broken");
    assert_eq!(broken["outcome"], "failure");
    assert_eq!(
        broken["verification"],
        serde_json::json!({"outcome": "skipped", "fail_reason": "command failed"})
    );
    assert!(!daemon.path("should-not-exist").exists());

    // GET /jobs says which jobs have a check.
    let listed = http::get(port, "/jobs").json();
    let entry = |name: &str| {
        listed
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        entry("bad")["verification"],
        serde_json::json!({"configured": true, "running": false})
    );
}

#[test]
fn a_check_that_outlives_its_timeout_fails_the_run_with_minus_100_and_holds_the_instance() {
    let jobs = once(
        "slow",
        "true",
        "    concurrencyPolicy: Forbid\n    verify:\n      command: touch {dir}/checking; sleep 30\n      \
         timeout: 2\n",
    );
    let (daemon, port) = Daemon::start_with_web("", &jobs);
    let start = Instant::now();
    while !daemon.path("checking").exists() {
        assert!(start.elapsed() < LONG, "{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // While the check runs, the instance is running and says so.
    let slow = http::get(port, "/jobs/slow").json();
    assert_eq!(slow["running"], true, "{slow}");
    assert_eq!(
        slow["verification"],
        serde_json::json!({"configured": true, "running": true})
    );
    let run = daemon.first_run(port, "slow");
    assert_eq!(run["outcome"], "failure", "{run}");
    assert_eq!(
        run["fail_reason"],
        "verification failed: command exited with code -100"
    );
    assert_eq!(run["verification"]["exit_code"], -100);
    let took = run["verification"]["duration"]
        .as_f64()
        .expect("a duration");
    assert!((1.5..10.0).contains(&took), "the check took {took} s");
    assert!(daemon
        .log()
        .contains("Job slow: its verify check exceeded its timeout of 2.0 seconds"));
}

#[test]
fn a_check_with_no_command_or_a_bad_timeout_is_refused_at_load() {
    for (verify, message) in [
        ("{command: ''}", "verify.command must be non-empty"),
        ("{command: []}", "verify.command must be non-empty"),
        (
            "{command: 'true', timeout: 0}",
            "verify.timeout must be finite and > 0",
        ),
        (
            "{command: 'true', timeout: .nan}",
            "verify.timeout must be finite and > 0",
        ),
    ] {
        let dir = support::cli::write_tree(&[(
            "c.yaml",
            &format!("jobs:\n  - name: j\n    command: 'true'\n    schedule: '@daily'\n    verify: {verify}\n"),
        )]);
        let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(1), "{verify}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{verify}: {}", run.stderr);
        assert!(
            run.stderr.contains("verify."),
            "names the key: {}",
            run.stderr
        );
    }
    // As the original's schema: a `verify` map names its command, in
    // defaults too; a job's own command then merges over it.
    let dir = support::cli::write_tree(&[(
        "c.yaml",
        "defaults:\n  verify:\n    timeout: 5\njobs:\n  - name: j\n    command: 'true'\n    \
         schedule: '@daily'\n    verify:\n      command: test -e /\n",
    )]);
    let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("required key 'command' not found in verify"),
        "{}",
        run.stderr
    );
    let dir = support::cli::write_tree(&[(
        "c.yaml",
        "defaults:\n  verify:\n    command: 'true'\n    timeout: 5\njobs:\n  - name: j\n    \
         command: 'true'\n    schedule: '@daily'\n    verify:\n      command: test -e /\n",
    )]);
    let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(
        run.code,
        Some(0),
        "a check merges over defaults: {}",
        run.stderr
    );
}

#[test]
fn a_cancel_during_the_check_stops_the_check_and_ends_the_run() {
    let jobs = once(
        "held",
        "true",
        "    killTimeout: 1\n    verify:\n      command: echo $$ > {dir}/check.pid; sleep 30\n",
    );
    let (daemon, port) = Daemon::start_with_web("", &jobs);
    let start = Instant::now();
    let pid = loop {
        let text = std::fs::read_to_string(daemon.path("check.pid")).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<i32>() {
            break pid;
        }
        assert!(start.elapsed() < LONG, "{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    let cancelled = http::post(port, "/jobs/held/cancel");
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let run = daemon.first_run(port, "held");
    assert_eq!(run["outcome"], "cancelled", "{run}");
    assert_eq!(run["verification"]["outcome"], "failure", "{run}");
    assert_eq!(
        run["verification"]["exit_code"], -15,
        "SIGTERM ended the check: {run}"
    );
    let took = run["verification"]["duration"]
        .as_f64()
        .expect("a duration");
    assert!(
        took < 20.0,
        "the check was stopped, not waited for: {took} s"
    );
    assert!(
        !support::daemon::group_alive(pid),
        "the check's process group is gone"
    );
}
