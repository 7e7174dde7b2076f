//! Drop-in runtime behaviors of the built daemon: no fire lost or doubled
//! across reloads, jobs in sessions of their own, repeated shutdown
//! signals, HOSTNAME injection, replaced instances that are not runs, and
//! onFailure reports that finish before onPermanentFailure ones start.

mod support;

use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::daemon::{read_lines, Daemon};
use support::http::{free_port, get, wait_listening};

const LONG: Duration = Duration::from_secs(30);

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// The start instants (epoch seconds) a job appended to its file.
fn stamps(d: &Daemon, file: &str) -> Vec<f64> {
    let mut times: Vec<f64> = read_lines(&d.path(file))
        .iter()
        .map(|l| {
            l.trim()
                .parse::<f64>()
                .unwrap_or_else(|e| panic!("{file}: bad stamp {l:?}: {e}"))
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times
}

/// 100 jobs fire every second while the config is touched and SIGHUP sent
/// every 100 ms for 20 s; afterwards every job has run exactly once per
/// second.
///
/// The daemon does not tell a job which boundary it belongs to, so each
/// run appends the instant its own process ran, and the test maps runs to
/// boundaries by order: the daemon fires a job's boundaries oldest first
/// and never before the boundary, so the i-th run of every job belongs to
/// boundary `B0 + i` (B0: the first boundary, the floor of the earliest
/// first run; every job fires at it, as all fire every second). Then:
/// - a doubled fire puts some run before its boundary (`t_i < B0 + i`),
///   whatever the lateness; so does an early one;
/// - a lost fire makes every later run at least a whole second "late"
///   for good, while real lateness passes: after the reloads stop, the
///   least lateness over a job's last three runs is under a second only if
///   nothing was lost. A late catch-up (the point of the fix) passes both.
#[test]
fn reloads_never_lose_or_double_a_fire() {
    const JOBS: usize = 100;
    // Disabled ballast makes each reload take long enough that boundaries
    // often pass while one is in progress (the case that used to lose a
    // whole second of fires).
    const BALLAST: usize = 400;
    let config = |variant: usize| {
        let mut text = format!("# variant {}\njobs:\n", "x".repeat(variant % 2 + 1));
        for i in 0..JOBS {
            text.push_str(&format!(
                "  - name: j{i}\n    command: \"date +%s.%N >> {{dir}}/j{i}\"\n    schedule:\n      second: \"*\"\n"
            ));
        }
        for i in 0..BALLAST {
            text.push_str(&format!(
                "  - name: off{i}\n    command: \"true\"\n    schedule: \"{} * * * *\"\n    enabled: false\n",
                i % 60
            ));
        }
        text
    };
    let mut d = Daemon::start(&config(0));
    let path = d.path("cronstable.yaml");
    let staged = d.path("cronstable.yaml.next");
    let dir = d.dir.path().display().to_string();
    d.wait_for_lines("j99", 1, LONG);

    let began = Instant::now();
    let mut variant = 0;
    while began.elapsed() < Duration::from_secs(20) {
        variant += 1;
        // Written aside and renamed over: the daemon must never read a
        // half-written file (a truncated config is a valid one with fewer
        // jobs, whose fires would rightly not happen).
        std::fs::write(&staged, config(variant).replace("{dir}", &dir)).expect("stage the config");
        std::fs::rename(&staged, &path).expect("replace the config");
        d.signal(Signal::SIGHUP);
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let every job run three times after the reloads stopped.
    let quiet_from = epoch_now().floor() + 1.0;
    let deadline = Instant::now() + LONG;
    for i in 0..JOBS {
        let file = format!("j{i}");
        while stamps(&d, &file)
            .iter()
            .filter(|t| **t >= quiet_from)
            .count()
            < 3
        {
            assert!(
                Instant::now() < deadline,
                "{file} stopped firing; log:\n{}",
                d.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    d.signal(Signal::SIGTERM);
    assert_eq!(d.wait_exit(LONG), Some(0));

    let log = d.log();
    let reloads = log
        .matches(&format!(
            "configuration reloaded: {} job(s)",
            JOBS + BALLAST
        ))
        .count();
    // SIGHUPs that arrive while a reload runs coalesce into the next one,
    // and a reload of 500 jobs by the debug build takes 0.1-0.5 s on a
    // busy 2-core machine: at least one completed reload a second keeps a
    // reload in flight across many boundaries, which is the case under
    // test.
    assert!(reloads >= 20, "only {reloads} reloads happened");
    assert_eq!(
        log.matches("configuration reloaded:").count(),
        reloads,
        "every reload saw the whole config"
    );
    assert!(
        !log.contains("Configuration error") && !log.contains("Error in configuration file"),
        "{log}"
    );

    // Warnings and errors, shown when an assertion below fails.
    let problems: String = log
        .lines()
        .filter(|l| l.starts_with("WARNING:") || l.starts_with("ERROR:"))
        .filter(|l| !l.contains("still running and concurrencyPolicy is Allow"))
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    let runs: Vec<Vec<f64>> = (0..JOBS).map(|i| stamps(&d, &format!("j{i}"))).collect();
    let b0 = runs
        .iter()
        .filter_map(|r| r.first().copied())
        .fold(f64::INFINITY, f64::min)
        .floor();
    for (i, times) in runs.iter().enumerate() {
        assert!(times.len() >= 20, "j{i} ran only {} times", times.len());
        for (k, t) in times.iter().enumerate() {
            let slot = b0 + k as f64;
            assert!(
                *t >= slot,
                "j{i}: run #{k} at {t:.3} precedes its boundary {slot}: a fire was doubled\n{problems}"
            );
        }
        let tail = times.len() - 3;
        let least_late = times[tail..]
            .iter()
            .enumerate()
            .map(|(k, t)| t - (b0 + (tail + k) as f64))
            .fold(f64::INFINITY, f64::min);
        assert!(
            least_late < 1.0,
            "j{i}: its last runs are {least_late:.3}s behind their boundaries: a fire was lost\n\
             runs: {times:?}\nB0 {b0}, launches logged: {}\n{problems}",
            log.matches(&format!("Job j{i} spawned\n")).count()
        );
    }
}

#[test]
fn a_job_leads_its_own_session() {
    let d = Daemon::start(
        r#"
jobs:
  - name: ids
    command: "echo $$ > {dir}/pid; ps -o pid=,pgid=,sid= -p $$ > {dir}/ids"
    schedule: "@reboot"
"#,
    );
    let ids = d.wait_for_lines("ids", 1, LONG);
    let pid = d.wait_for_lines("pid", 1, LONG)[0].trim().to_owned();
    let fields: Vec<&str> = ids[0].split_whitespace().collect();
    assert_eq!(fields, vec![pid.as_str(); 3], "pid, pgid, sid: {ids:?}");
}

#[test]
fn a_program_found_on_the_jobs_own_path_runs_in_its_directory_and_session() {
    // Looked up by name on a PATH the job sets, in a working directory:
    // the spawn must honour both as exec by name would.
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let tool = bin.join("mytool");
    std::fs::write(
        &tool,
        "#!/bin/sh\npwd > out\nps -o pid=,pgid=,sid= -p $$ >> out\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().display().to_string();
    let config = format!(
        "jobs:\n  - name: tool\n    command: [\"mytool\"]\n    workingDirectory: \"{root}/work\"\n    environment:\n      - key: PATH\n        value: \"{root}/bin:/usr/bin:/bin\"\n    schedule: \"@reboot\"\n"
    );
    let d = Daemon::start(&config);
    let out = dir.path().join("work/out");
    let start = Instant::now();
    while read_lines(&out).len() < 2 {
        assert!(
            start.elapsed() < LONG,
            "mytool never ran; log:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = read_lines(&out);
    assert_eq!(lines[0], format!("{root}/work"));
    let ids: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|x| *x == ids[0]), "pid, pgid, sid: {ids:?}");
}

#[test]
fn repeated_shutdown_signals_still_let_the_job_finish() {
    let mut d = Daemon::start(
        r#"
jobs:
  - name: two-seconds
    command: "sleep 2; echo done > {dir}/done"
    schedule: "@reboot"
    killTimeout: 1
"#,
    );
    d.wait_for_log("Job two-seconds spawned", 1, LONG);
    d.signal(Signal::SIGTERM);
    d.wait_for_log(
        "Shutting down (after currently running jobs finish)...",
        1,
        LONG,
    );
    d.signal(Signal::SIGTERM);
    d.wait_for_log("SIGTERM received again", 1, LONG);
    d.signal(Signal::SIGINT);
    assert_eq!(d.wait_exit(LONG), Some(0));
    assert_eq!(
        read_lines(&d.path("done")),
        vec!["done"],
        "the job ran to its end"
    );
    let log = d.log();
    assert!(log.contains("SIGINT received again"), "{log}");
    assert!(
        log.contains(
            "INFO:cronstable:Job two-seconds exit code 0; has stdout: false, has stderr: false; \
             fail_reason: None\n"
        ),
        "{log}"
    );
    assert!(
        log.contains("Job two-seconds: finished during shutdown; not reported"),
        "{log}"
    );
}

#[test]
fn jobs_see_the_host_name_when_the_daemon_has_no_hostname() {
    let host = nix::unistd::gethostname()
        .expect("host name")
        .into_string()
        .expect("utf-8 host name");
    let d = Daemon::start_env(
        r#"
jobs:
  - name: plain
    command: "echo \"[$HOSTNAME]\" > {dir}/plain"
    schedule: "@reboot"
  - name: argv
    command: ["sh", "-c", "echo \"[$HOSTNAME]\" > {dir}/argv"]
    schedule: "@reboot"
  - name: own
    command: "echo \"[$HOSTNAME]\" > {dir}/own"
    environment:
      - key: HOSTNAME
        value: chosen-by-the-job
    schedule: "@reboot"
"#,
        &["HOSTNAME"],
    );
    assert_eq!(
        d.wait_for_lines("plain", 1, LONG),
        vec![format!("[{host}]")]
    );
    assert_eq!(d.wait_for_lines("argv", 1, LONG), vec![format!("[{host}]")]);
    assert_eq!(
        d.wait_for_lines("own", 1, LONG),
        vec!["[chosen-by-the-job]".to_owned()]
    );
}

#[test]
fn a_replaced_instance_is_not_a_run() {
    let port = free_port();
    let d = Daemon::start(&format!(
        r#"
web:
  listen:
    - http://127.0.0.1:{port}
jobs:
  - name: swap
    command: "echo $$ >> {{dir}}/pids; exec sleep 60"
    schedule:
      second: "*/2"
    concurrencyPolicy: Replace
    killTimeout: 1
    onFailure:
      report:
        shell:
          command: ["sh", "-c", "echo reported >> {{dir}}/reports"]
"#
    ));
    wait_listening(port, LONG);
    d.wait_for_log("Job swap was replaced by a newer instance", 2, LONG);
    let runs = get(port, "/jobs/swap/runs").json();
    assert_eq!(runs["runs"], serde_json::json!([]), "{runs}");
    let metrics = get(port, "/metrics").body;
    let samples: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("cronstable_job_runs_total{job_name=\"swap\""))
        .collect();
    assert!(!samples.is_empty(), "{metrics}");
    for sample in &samples {
        assert!(
            sample.ends_with(" 0"),
            "a replaced instance counted: {sample}"
        );
    }
    assert!(
        read_lines(&d.path("reports")).is_empty(),
        "a replaced run was reported"
    );
    let log = d.log();
    assert!(!log.contains("Job swap was cancelled"), "{log}");
    assert!(!log.contains("reporting failure"), "{log}");
}

#[test]
fn failure_reports_finish_before_permanent_failure_reports_start() {
    const JOBS: usize = 10;
    let mut config = String::from("jobs:\n");
    for i in 0..JOBS {
        // The failure reporter is the slower one, so hooks that raced would
        // show the permanent failure first.
        config.push_str(&format!(
            r#"  - name: f{i}
    command: "exit 1"
    schedule:
      second: "*"
    onFailure:
      report:
        shell:
          command: ["sh", "-c", "sleep 0.3; echo \"F $CRONSTABLE_JOB_NAME $CRONSTABLE_STARTED_AT\" >> {{dir}}/order"]
    onPermanentFailure:
      report:
        shell:
          command: ["sh", "-c", "echo \"P $CRONSTABLE_JOB_NAME $CRONSTABLE_STARTED_AT\" >> {{dir}}/order"]
"#
        ));
    }
    let d = Daemon::start(&config);
    let start = Instant::now();
    let permanent = |lines: &[String]| lines.iter().filter(|l| l.starts_with("P ")).count();
    while permanent(&read_lines(&d.path("order"))) < 40 {
        assert!(
            start.elapsed() < LONG * 2,
            "too few reports; log:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let lines = read_lines(&d.path("order"));
    let mut failure_at: HashMap<&str, usize> = HashMap::new();
    let mut checked = 0;
    for (n, line) in lines.iter().enumerate() {
        if let Some(run) = line.strip_prefix("F ") {
            failure_at.insert(run, n);
        } else if let Some(run) = line.strip_prefix("P ") {
            assert!(
                failure_at.contains_key(run),
                "permanent failure of {run} reported before its failure:\n{}",
                lines.join("\n")
            );
            checked += 1;
        }
    }
    assert!(checked >= 40);
}
