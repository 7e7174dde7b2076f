//! The daemon as PID 1 of a PID namespace, the way it runs as a container's
//! entry point: orphans its jobs leave behind are adopted by it and must be
//! reaped (no zombie accumulates), while its own jobs' exit statuses still
//! reach the job runner, and SIGTERM still drains and exits 0.
//!
//! The namespace comes from util-linux `unshare --pid --fork --mount-proc`,
//! which needs root (CI runs as root). There is no silent skip: without a
//! working `unshare` the test fails and says why.

mod support;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::daemon::{collect, read_lines};
use support::kube_daemon::wait_until;

const LONG: Duration = Duration::from_secs(30);

/// The pids whose parent is `parent` and whose state is zombie, read from
/// the host's /proc (processes of a child namespace are visible there too,
/// under their host pids).
fn zombie_children(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next();
        let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
        if state == Some("Z") && ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// Kills the namespace (its PID 1, which takes every process in it along)
/// and reaps unshare when the test ends, passing or not.
struct Namespace {
    unshare: std::process::Child,
    init: u32,
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if self.init != 0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.init as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.unshare.kill();
        let _ = self.unshare.wait();
    }
}

/// The host pids of `pid`'s children.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn as_pid_1_it_reaps_adopted_orphans_keeps_its_jobs_statuses_and_drains_on_sigterm() {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`unshare --pid --fork --mount-proc true` failed ({}); this test needs root and \
             util-linux unshare: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(err) => panic!("cannot run unshare (util-linux), which this test needs: {err}"),
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let fires = dir.path().join("fires");
    // Each run backgrounds a short sleep and exits at once with code 3: the
    // sleep is orphaned, adopted by PID 1 (the daemon) and becomes a zombie
    // 0.2 s later unless the daemon reaps it.
    let config = format!(
        r#"
jobs:
  - name: leaver
    command: "sleep 0.2 & echo fired >> {fires}; exit 3"
    schedule:
      second: "*"
"#,
        fires = fires.display()
    );
    std::fs::write(dir.path().join("cronstable.yaml"), config).expect("write config");
    let unshare = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(env!("CARGO_BIN_EXE_cronstable"))
        .args(["-c", "cronstable.yaml", "-l", "DEBUG"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start unshare");
    let mut ns = Namespace { unshare, init: 0 };
    let log = Arc::new(Mutex::new(String::new()));
    if let Some(err) = ns.unshare.stderr.take() {
        collect(err, Arc::clone(&log));
    }
    if let Some(out) = ns.unshare.stdout.take() {
        collect(out, Arc::clone(&log));
    }
    let log_text = || log.lock().map(|l| l.clone()).unwrap_or_default();

    // unshare forks once: its only child is the daemon, PID 1 inside.
    let mut daemon = 0;
    wait_until(
        "the daemon to start under unshare",
        LONG,
        || {
            daemon = children_of(ns.unshare.id()).first().copied().unwrap_or(0);
            daemon != 0
        },
        log_text,
    );
    ns.init = daemon;
    let status = std::fs::read_to_string(format!("/proc/{daemon}/status")).unwrap_or_default();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("NSpid:") && l.trim_end().ends_with("\t1")),
        "the daemon is not PID 1 of its namespace:\n{status}"
    );

    // Several fires, each leaving an orphan behind.
    wait_until(
        "six fires",
        LONG,
        || read_lines(&fires).len() >= 6,
        log_text,
    );
    // Without reaping, the zombies only ever grow in number (one per fire);
    // with it, the count drops back to none between fires.
    wait_until(
        "no zombie children of the daemon",
        LONG,
        || zombie_children(daemon).is_empty(),
        || format!("zombies: {:?}\n{}", zombie_children(daemon), log_text()),
    );
    // The jobs' own statuses were not taken by the reaper: every run
    // reported its real exit code.
    let runs = log_text().matches("Job leaver exit code 3;").count();
    assert!(
        runs >= 5,
        "expected the runs' own exit code 3 in the log, got {runs}:\n{}",
        log_text()
    );
    assert!(
        !log_text().contains("No child processes"),
        "a job's status was stolen:\n{}",
        log_text()
    );

    // SIGTERM to PID 1 from outside the namespace: drain and exit 0
    // (unshare passes its child's exit status on).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("send SIGTERM");
    let mut exit = None;
    wait_until(
        "the daemon to exit after SIGTERM",
        LONG,
        || {
            exit = ns.unshare.try_wait().ok().flatten();
            exit.is_some()
        },
        log_text,
    );
    // Gone now: never signal that pid again (it may be reused).
    ns.init = 0;
    let exit = exit.expect("exited");
    assert_eq!(exit.code(), Some(0), "exit after SIGTERM:\n{}", log_text());
}
