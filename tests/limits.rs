//! `resourceLimits`, black-box: real jobs under the built daemon, capped
//! through the host's cgroups (v2 where it is mounted with controllers,
//! else the v1 memory, cpu and pids hierarchies), read back through
//! `GET /jobs/{name}/runs` and `GET /node`. The enforcement tests need
//! root and cgroup controllers; without them they say why and pass. The
//! refusal test points the daemon at an unusable cgroup root and runs
//! everywhere.

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http;

const LONG: Duration = Duration::from_secs(60);

/// A daemon on `jobs` (indented as list items) with a web listener, the
/// variables `set` in its environment.
fn daemon(jobs: &str, set: &[(&str, &str)]) -> (Daemon, u16) {
    let port = http::free_port();
    let config = format!("web:\n  listen:\n    - http://127.0.0.1:{port}\njobs:\n{jobs}");
    let d = Daemon::start_with_vars(&config, &[], set);
    http::wait_listening(port, Duration::from_secs(20));
    (d, port)
}

/// Why caps on `resources` cannot be enforced here, or None when they
/// can: the daemon must be root and `GET /node` must say the host caps
/// them.
fn cannot_enforce(port: u16, resources: &[&str]) -> Option<String> {
    // SAFETY: geteuid takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not running as root".into());
    }
    let node = http::get(port, "/node").json();
    let limits = &node["limits"];
    let have: Vec<&str> = limits["resources"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if limits["available"] != true || resources.iter().any(|r| !have.contains(r)) {
        return Some(format!("this host cannot cap {resources:?}: {limits}"));
    }
    None
}

/// Skips the calling test (with the reason on stderr) when the caps on
/// `resources` cannot be enforced.
macro_rules! require_enforcement {
    ($port:expr, $resources:expr) => {
        if let Some(why) = cannot_enforce($port, $resources) {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// The pid a job wrote into `file`, once it is there.
fn written_pid(daemon: &Daemon, file: &std::path::Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(start.elapsed() < LONG, "{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` exists and is neither a zombie nor dead.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next())
        })
        .flatten()
        .is_some_and(|state| state != 'Z' && state != 'X')
}

/// A job started once at the daemon's start, with `extra` keys.
fn at_start(name: &str, command: &str, extra: &str) -> String {
    format!(
        "  - name: {name}\n    schedule: '@reboot'\n    captureStdout: true\n    command: |\n      \
         {command}\n{extra}"
    )
}

#[test]
fn a_run_past_its_memory_cap_is_killed_whole_with_the_reason_while_the_daemon_lives() {
    // The shell is no exec'd leaf: if only the allocating python died,
    // the shell would go on and print "survived".
    let jobs = at_start(
        "hog",
        "python3 -c 'b = bytearray(200 << 20); import time; time.sleep(30)'; echo survived",
        "    killTimeout: 30\n    resourceLimits:\n      memory: 64Mi\n    onFailure:\n      \
         report:\n        shell:\n          command: env > {dir}/report.tmp && mv {dir}/report.tmp {dir}/report.env\n",
    ) + &at_start("plain", "echo fine", "");
    let (daemon, port) = daemon(&jobs, &[]);
    require_enforcement!(port, &["memory"]);
    let run = daemon.first_run(port, "hog");
    assert_eq!(run["exit_code"], -9, "{run}\n{}", daemon.log());
    assert_eq!(
        run["fail_reason"], "memory limit exceeded (64 MiB)",
        "{run}"
    );
    assert_eq!(run["outcome"], "failure");
    assert_eq!(
        run["stdout"], "",
        "the whole run ended, shell included: {run}"
    );
    let limits = &run["limits"];
    assert_eq!(limits["memory_exceeded"], true, "{limits}");
    assert_eq!(limits["enforced"], true, "{limits}");
    assert_eq!(limits["memory_bytes"], 64 << 20);
    assert!(limits["mechanism"]
        .as_str()
        .is_some_and(|m| m.starts_with("cgroup-")));
    // No graceful step, and well within the killTimeout a cancel would use.
    assert!(run["duration"].as_f64().is_some_and(|d| d < 20.0), "{run}");
    assert!(!daemon.log().contains("did not gracefully terminate"));
    // The shell reporter says so too.
    let env = daemon.wait_for_lines("report.env", 1, LONG);
    for line in [
        "CRONSTABLE_LIMITS_ENFORCED=1",
        "CRONSTABLE_MEMORY_LIMIT_EXCEEDED=1",
        "CRONSTABLE_FAIL_REASON=memory limit exceeded (64 MiB)",
        "CRONSTABLE_RETCODE=-9",
    ] {
        assert!(env.iter().any(|l| l == line), "{line} not in {env:?}");
    }
    // The metrics: the cap, the run it ended, and the last run's verdict;
    // nothing for the uncapped job.
    let metrics = http::get(port, "/metrics").body;
    for line in [
        "cronstable_job_memory_limit_bytes{job_name=\"hog\"} 67108864",
        "cronstable_job_memory_limit_exceeded_total{job_name=\"hog\"} 1",
        "cronstable_job_last_run_limits_enforced{job_name=\"hog\"} 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} not in:\n{metrics}"
        );
    }
    assert!(
        !metrics.contains("cronstable_job_cpu_limit_cpus{"),
        "{metrics}"
    );
    assert!(!metrics.contains("limit_bytes{job_name=\"plain\"}"));
    // The daemon lives on, and so do its other jobs.
    assert!(daemon.running());
    assert_eq!(daemon.first_run(port, "plain")["outcome"], "success");
    assert_eq!(http::get(port, "/node").status, 200);
}

#[test]
fn a_process_a_capped_run_left_behind_still_meets_its_memory_cap() {
    // The run ends at once; what it left in its cgroup allocates later,
    // when no run is watching any more: it must be killed, not hang.
    let jobs = at_start(
        "leaver",
        "setsid sh -c 'echo $$ > {dir}/late.pid; sleep 1; exec python3 -c \"b = \
         bytearray(200 << 20); import time; time.sleep(60)\"' </dev/null >/dev/null 2>&1 &",
        "    resourceLimits:\n      memory: 64Mi\n",
    );
    let (daemon, port) = daemon(&jobs, &[]);
    require_enforcement!(port, &["memory"]);
    let run = daemon.first_run(port, "leaver");
    assert_eq!(run["outcome"], "success", "{run}");
    let pid_file = daemon.path("late.pid");
    let late = written_pid(&daemon, &pid_file);
    let start = Instant::now();
    while alive(late) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the left-behind process {late} is still there: {}",
            std::fs::read_to_string(format!("/proc/{late}/status")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_cpu_cap_throttles_a_busy_loop() {
    // Two seconds of wall time spinning; the CPU time it got is printed.
    let spin = "python3 -c 'import os, time\nt = time.time()\nwhile time.time() - t < 2: \
                pass\nc = os.times()\nprint(c.user + c.system)'";
    let jobs = at_start(
        "spin",
        &spin.replace('\n', "\n      "),
        "    resourceLimits:\n      cpu: '0.2'\n",
    );
    let (daemon, port) = daemon(&jobs, &[]);
    require_enforcement!(port, &["cpu"]);
    let run = daemon.first_run(port, "spin");
    assert_eq!(run["outcome"], "success", "{run}\n{}", daemon.log());
    let cpu: f64 = run["stdout"]
        .as_str()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no CPU time printed: {run}"));
    // Uncapped it would be about 2 s; a 0.2 CPU cap gives about 0.4 s.
    assert!(cpu < 1.0, "a 0.2 CPU cap let the loop use {cpu} s of 2 s");
    assert!(cpu > 0.05, "the loop barely ran: {cpu} s");
    let limits = &run["limits"];
    assert_eq!(limits["enforced"], true, "{limits}");
    assert!(
        limits["cpu_throttled_seconds"]
            .as_f64()
            .is_some_and(|t| t > 0.0),
        "{limits}"
    );
}

#[test]
fn a_process_cap_stops_a_fork_loop() {
    let jobs = at_start(
        "forks",
        "n=0; for i in $(seq 1 40); do (sleep 2) & n=$((n+1)); echo $n; done; wait",
        "    resourceLimits:\n      processes: 8\n",
    );
    let (daemon, port) = daemon(&jobs, &[]);
    require_enforcement!(port, &["processes"]);
    let run = daemon.first_run(port, "forks");
    let started = run["stdout"]
        .as_str()
        .map(|s| s.lines().count())
        .unwrap_or(0);
    assert!(
        started < 40,
        "all 40 forks went through: {run}\n{}",
        daemon.log()
    );
    assert_ne!(run["exit_code"], 0, "{run}");
    let limits = &run["limits"];
    assert!(
        limits["process_limit_hits"]
            .as_u64()
            .is_some_and(|h| h >= 1),
        "{limits}"
    );
}

#[test]
fn cancelling_a_capped_run_kills_a_descendant_that_left_its_session() {
    // The escaped process has a session (and process group) of its own
    // and holds no pipe of the run: only the cgroup still reaches it.
    let jobs = at_start(
        "sticky",
        "setsid sh -c 'echo $$ > {dir}/escaped.pid; exec sleep 300' </dev/null >/dev/null \
         2>&1 &\n      sleep 300",
        "    killTimeout: 1\n    resourceLimits:\n      processes: 64\n",
    );
    let (daemon, port) = daemon(&jobs, &[]);
    require_enforcement!(port, &["processes"]);
    let pid_file = daemon.path("escaped.pid");
    let escaped = written_pid(&daemon, &pid_file);
    assert!(alive(escaped));
    let reply = http::post(port, "/jobs/sticky/cancel");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let run = daemon.first_run(port, "sticky");
    assert_eq!(run["outcome"], "cancelled", "{run}");
    let start = Instant::now();
    while alive(escaped) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the escaped process {escaped} outlived the cancel:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_capped_run_is_sampled_from_its_cgroup_with_a_process_that_left_its_session() {
    // The burner calls setsid: its session is not the run's, so reading
    // the run's session cannot see it, while its cgroup lists it. The
    // shell reaps it and ends at once, so the shell's own counters never
    // show the burner's time to a session sample either.
    let burn = "setsid python3 -c \"import time; t = time.process_time; e = t() + 1.5; \
                exec('while t() < e: pass')\" </dev/null &\n      wait";
    let monitored = "    monitorResources:\n      interval: 0.2\n";
    let jobs = at_start(
        "capped",
        burn,
        &format!("{monitored}    resourceLimits:\n      processes: 64\n"),
    ) + &at_start("uncapped", burn, monitored);
    let (daemon, port) = daemon(&jobs, &[]);
    require_enforcement!(port, &["processes"]);
    let cpu = |name: &str| {
        let run = daemon.first_run(port, name);
        assert_eq!(run["exit_code"], 0, "{run}\n{}", daemon.log());
        run["resources"]["cpu_total_seconds"]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: no resources in {run}"))
    };
    let capped = cpu("capped");
    assert!(
        capped >= 0.9,
        "the cgroup lists the burner for its whole 1.5 s of CPU: counted {capped} s\n{}",
        daemon.log()
    );
    // The contrast that makes the check above mean something: the same
    // command read through its session misses the burner.
    let uncapped = cpu("uncapped");
    assert!(
        uncapped < 0.5,
        "the session reading cannot see a process that left it: {uncapped} s"
    );
}

#[test]
fn required_caps_that_cannot_apply_refuse_the_run_and_optional_ones_run_without() {
    let jobs = at_start(
        "strict",
        "touch {dir}/strict.ran",
        "    resourceLimits:\n      memory: 64Mi\n      required: true\n",
    ) + &at_start(
        "lenient",
        "echo ran",
        "    resourceLimits:\n      memory: 64Mi\n      processes: 10\n",
    );
    let (daemon, port) = daemon(&jobs, &[("CRONSTABLE_CGROUP_ROOT", "{dir}/no-cgroups")]);
    let root = daemon.path("no-cgroups");
    let reason = format!("no cgroup v2 hierarchy is mounted at {}", root.display());

    let strict = daemon.first_run(port, "strict");
    assert_eq!(strict["exit_code"], 127, "{strict}\n{}", daemon.log());
    assert_eq!(
        strict["fail_reason"],
        format!("resource limits could not be enforced: {reason} (resourceLimits.required is set)")
    );
    assert!(
        !daemon.path("strict.ran").exists(),
        "a refused run must not start"
    );
    let limits = &strict["limits"];
    assert_eq!(limits["refused"], true, "{limits}");
    assert_eq!(limits["enforced"], false);
    assert_eq!(limits["unenforced"], serde_json::json!(["memory"]));
    assert_eq!(limits["mechanism"], Value::Null);

    let lenient = daemon.first_run(port, "lenient");
    assert_eq!(lenient["outcome"], "success", "{lenient}");
    assert_eq!(lenient["stdout"], "ran\n");
    assert_eq!(lenient["limits"]["enforced"], false);
    assert_eq!(lenient["limits"]["refused"], false);
    assert_eq!(
        lenient["limits"]["unenforced"],
        serde_json::json!(["memory", "processes"])
    );
    assert_eq!(lenient["limits"]["reason"], reason.as_str());

    // Said once at start, naming both jobs and the one that fails.
    daemon.wait_for_log("cannot enforce it", 1, LONG);
    let log = daemon.log();
    assert!(
        log.contains(&format!(
            "resourceLimits is set (job strict, job lenient), but cronstable cannot enforce it: \
             {reason}."
        )),
        "{log}"
    );
    assert!(log.contains(
        "Runs of job strict fail until the caps can be enforced (resourceLimits.required)."
    ));
    let node = http::get(port, "/node").json();
    assert_eq!(node["limits"]["available"], false, "{node}");
    assert_eq!(node["limits"]["reason"], reason.as_str());
    // GET /jobs and the resources view show the configured caps.
    let job = http::get(port, "/jobs/strict").json();
    assert_eq!(
        job["limits"],
        serde_json::json!({"cpu": null, "memory_bytes": 67108864, "processes": null, "required": true})
    );
    let resources = http::get(port, "/jobs/strict/resources").json();
    assert_eq!(resources["limits"], job["limits"]);
    assert_eq!(
        resources["runs"][0]["limits"]["refused"], true,
        "{resources}"
    );
}

#[test]
fn caps_are_checked_at_load_with_the_originals_texts() {
    let dir = support::cli::write_tree(&[(
        "c.yaml",
        "jobs:\n  - name: j\n    command: 'true'\n    schedule: '@daily'\n    resourceLimits:\n      \
         memory: 1K\n",
    )]);
    let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("resourceLimits.memory: must be at least 1 MiB and below 8 EiB"),
        "{}",
        run.stderr
    );
    let dir = support::cli::write_tree(&[(
        "c.yaml",
        "jobs:\n  - name: j\n    command: 'true'\n    schedule: '@daily'\n    resourceLimits:\n      \
         cpu: 500m\n",
    )]);
    let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert!(
        run.stderr.contains(
            "resourceLimits.cpu: cannot read '500m' as a CPU count; use a number between 0.01 \
             and 1000000, such as 0.5 or 2, or max"
        ),
        "{}",
        run.stderr
    );
}
