//! How many jobs one daemon runs at once, whole process (issue 17). The
//! release binary runs a generated config of N jobs that all fire at the
//! same second; each prints one line naming itself and the moment its
//! shell ran (`read t _ < /proc/uptime`: a shell builtin, so no extra
//! process), then `exec sleep` (`CONCURRENT_SLEEP` seconds, default 60),
//! so all N run at once. `captureStdout` is on and `captureStderr` keeps
//! its default (on): two pipes per job, the most a job holds.
//!
//! The daemon starts under a soft open-file limit of
//! `CONCURRENT_SOFT_NOFILE` (default 1024, the usual default), so its own
//! raise to the hard limit is what lets it go past a few hundred jobs.
//!
//! Printed per size (nothing asserted): the daemon's open-file limits
//! while it runs, descriptors and RSS idle (loaded, before the fire) and
//! with all N running (per running job), jobs started and still running
//! at that moment, the launch time from the fire second to each job's
//! shell running (first, median, last; 10 ms resolution) and to the
//! daemon's last `Starting job` line, the daemon's CPU for the launch, and
//! lost output: every job's line must reach the daemon's stdout exactly
//! once and every run must end (`exit code` line). With two sizes the
//! RSS slope between them is printed too.
//!
//! Run with `cargo bench --bench concurrent`; `CONCURRENT_JOBS` is a
//! comma-separated list of sizes (default `1000,5000`). Linux only (it
//! reads /proc). Every process it starts is killed at the end, also when a
//! run fails: the daemon, and every process group whose environment
//! carries this run's token (the jobs, which live in sessions of their
//! own and outlive a killed daemon).

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The environment variable that marks every process of one run.
const TOKEN_VAR: &str = "CRONSTABLE_CONCURRENT_BENCH";

type Result<T> = std::result::Result<T, String>;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("CONCURRENT_JOBS")
        .unwrap_or_else(|_| "1000,5000".to_owned())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .filter(|&n| n > 0)
        .collect();
    let sleep = env_u64("CONCURRENT_SLEEP", 60);
    let soft = env_u64("CONCURRENT_SOFT_NOFILE", 1024);
    println!(
        "machine: {} cores, {}; binary {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        first_line("/proc/version").unwrap_or_default(),
        env!("CARGO_BIN_EXE_cronstable")
    );
    let mut results = Vec::new();
    for &n in &sizes {
        eprintln!("running {n} jobs ...");
        match run(n, sleep, soft) {
            Ok(result) => {
                print_result(&result);
                results.push(result);
            }
            Err(err) => println!("\n{n} jobs: the run failed: {err}"),
        }
    }
    if let (Some(small), Some(large)) = (
        results.iter().min_by_key(|r| r.n),
        results.iter().max_by_key(|r| r.n),
    ) {
        if large.n > small.n {
            let slope = (large.busy.rss_kib as f64 - small.busy.rss_kib as f64)
                / (large.n - small.n) as f64;
            println!(
                "\nRSS slope between {} and {} running jobs: {slope:.1} KiB per job",
                small.n, large.n
            );
        }
    }
}

/// The daemon's state at one moment.
#[derive(Default, Clone)]
struct Snapshot {
    fds: usize,
    /// Descriptors by kind (`pipe`, `anon_inode:[pidfd]`, `socket`, ...).
    kinds: HashMap<String, usize>,
    rss_kib: u64,
    hwm_kib: u64,
    threads: u64,
    /// Its own CPU (user + system), clock ticks.
    cpu_ticks: u64,
}

/// What one run measured.
struct RunResult {
    n: usize,
    sleep: u64,
    limits: String,
    idle: Snapshot,
    busy: Snapshot,
    /// Job processes (children of the daemon) at the busy snapshot.
    children: usize,
    /// `Starting job` lines.
    starting: usize,
    /// Jobs that could not start.
    start_errors: usize,
    /// Seconds from the fire second to each job's shell running, sorted.
    shell_starts: Vec<f64>,
    /// Seconds from the fire second to the first and last `Starting job`.
    daemon_first: f64,
    daemon_last: f64,
    /// Seconds from the fire second to the busy snapshot.
    snapshot_at: f64,
    /// Runs that ended (`exit code` lines) and of them with stdout kept.
    ended: usize,
    ended_with_stdout: usize,
    /// Jobs whose line reached stdout exactly once, never, more than once.
    once: usize,
    missing: usize,
    doubled: usize,
    /// Lines on the daemon's stdout that no job wrote this way.
    stray: usize,
    /// WARNING or worse lines in the log (the first few kept).
    problems: Vec<String>,
    problem_count: usize,
    /// Peak RSS at the end.
    hwm_end_kib: u64,
    clk_tck: f64,
}

/// The daemon under test and the processes it started; dropping it kills
/// them all.
struct Run {
    child: Child,
    token: String,
    _dir: tempfile::TempDir,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Run {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs every job process group carrying this run's token, then
    /// the daemon, and reaps it.
    fn kill_all(&mut self) {
        let ours = nix::unistd::getpgrp();
        for pid in token_pids(&self.token) {
            if pid == self.pid() {
                continue;
            }
            match process_group(pid) {
                Some(pgid) if pgid > 0 && Pid::from_raw(pgid) != ours => {
                    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                }
                _ => {
                    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.kill_all();
        // Jobs started while the daemon was being killed.
        std::thread::sleep(Duration::from_millis(200));
        self.kill_all();
    }
}

/// Processes whose environment holds `TOKEN_VAR=token`.
fn token_pids(token: &str) -> Vec<u32> {
    let needle = format!("{TOKEN_VAR}={token}\0").into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle))
        })
        .collect()
}

/// The fields of /proc/<pid>/stat after the command name.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = text.rsplit_once(')')?.1;
    Some(after.split_whitespace().map(str::to_owned).collect())
}

fn process_group(pid: u32) -> Option<i32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// Processes whose parent is `parent`.
fn children_of(parent: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let parent = parent.to_string();
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat_fields(pid).is_some_and(|f| f.get(1) == Some(&parent)))
        .count()
}

fn first_line(path: &str) -> Option<String> {
    Some(
        std::fs::read_to_string(path)
            .ok()?
            .lines()
            .next()?
            .to_owned(),
    )
}

fn status_kib(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_default()
}

fn snapshot(pid: u32) -> Result<Snapshot> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("the daemon is gone ({e})"))?;
    let mut kinds: HashMap<String, usize> = HashMap::new();
    let mut fds = 0;
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).map_err(|e| e.to_string())?;
    for entry in dir.flatten() {
        fds += 1;
        let target = std::fs::read_link(entry.path())
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kind = match target.split_once(":[") {
            Some((k, _)) if k != "anon_inode" => k.to_owned(),
            _ if target.starts_with('/') => "file".to_owned(),
            _ => target,
        };
        *kinds.entry(kind).or_default() += 1;
    }
    let cpu_ticks = stat_fields(pid)
        .map(|f| {
            // utime and stime: fields 14 and 15 of stat, 12 and 13 here.
            f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
                + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        })
        .unwrap_or_default();
    Ok(Snapshot {
        fds,
        kinds,
        rss_kib: status_kib(&status, "VmRSS:"),
        hwm_kib: status_kib(&status, "VmHWM:"),
        threads: status_kib(&status, "Threads:"),
        cpu_ticks,
    })
}

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Wall-clock time minus /proc/uptime (the boot-time clock the jobs read),
/// to 10 ms: uptime is truncated to hundredths, so the smallest difference
/// of a few samples is the closest.
fn uptime_offset() -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..30 {
        let before = epoch_now();
        let up: f64 = std::fs::read_to_string("/proc/uptime")
            .map_err(|e| e.to_string())?
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or("unreadable /proc/uptime")?;
        best = best.min(before - up);
        std::thread::sleep(Duration::from_millis(3));
    }
    Ok(best)
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

fn job_name(i: usize) -> String {
    format!("cb-{i:05}")
}

/// The config: N jobs firing once, at the UTC second `fire`.
fn config_text(n: usize, sleep: u64, fire: u64) -> Result<String> {
    let at = chrono::DateTime::from_timestamp(fire as i64, 0).ok_or("bad fire time")?;
    let schedule = at.format("%-S %-M %-H %-d %-m * %Y").to_string();
    let mut text = String::from(
        "logging:\n  version: 1\n  disable_existing_loggers: false\n  formatters:\n    t:\n      \
         format: '%(created).6f %(levelname)s %(name)s: %(message)s'\n  handlers:\n    err:\n      \
         class: logging.StreamHandler\n      formatter: t\n      stream: ext://sys.stderr\n  \
         root:\n    level: INFO\n    handlers: [err]\ndefaults:\n  captureStdout: true\njobs:\n",
    );
    for i in 0..n {
        let name = job_name(i);
        let _ = write!(
            text,
            "  - name: {name}\n    command: 'read t _ < /proc/uptime; echo cb-out {name} $t; \
             exec sleep {sleep}'\n    schedule: '{schedule}'\n"
        );
    }
    Ok(text)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A log line's timestamp and message.
fn log_entry(line: &str) -> Option<(f64, &str)> {
    let (stamp, rest) = line.split_once(' ')?;
    let stamp: f64 = stamp.parse().ok()?;
    let message = rest.split_once(": ").map_or(rest, |(_, m)| m);
    Some((stamp, message))
}

/// Waits until `done` holds or `limit` passes; false on a timeout.
fn wait_until(limit: Duration, every: Duration, mut done: impl FnMut() -> bool) -> bool {
    let begin = Instant::now();
    loop {
        if done() {
            return true;
        }
        if begin.elapsed() > limit {
            return false;
        }
        std::thread::sleep(every);
    }
}

fn sleep_until_epoch(at: f64) {
    let left = at - epoch_now();
    if left > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(left));
    }
}

fn run(n: usize, sleep: u64, soft: u64) -> Result<RunResult> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    // Time to load the config and settle before the fire.
    let lead = 5 + n as u64 / 1000;
    let fire = epoch_now().ceil() as u64 + lead;
    let config = dir.path().join("jobs.yaml");
    std::fs::write(&config, config_text(n, sleep, fire)?).map_err(|e| e.to_string())?;
    let stdout = dir.path().join("stdout");
    let stderr = dir.path().join("stderr");
    let token = format!("{}-{}", std::process::id(), n);
    // The usual soft limit of open files, under whatever hard limit this
    // machine has; the daemon raises it itself.
    let child = Command::new("sh")
        .args([
            "-c",
            "ulimit -Sn \"$1\" 2>/dev/null; shift; exec \"$@\"",
            "sh",
            &soft.to_string(),
            env!("CARGO_BIN_EXE_cronstable"),
            "-c",
        ])
        .arg(&config)
        .args(["-l", "INFO"])
        .env(TOKEN_VAR, &token)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(File::create(&stdout).map_err(|e| e.to_string())?)
        .stderr(File::create(&stderr).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("the daemon does not start: {e}"))?;
    let mut guard = Run {
        child,
        token,
        _dir: dir,
        stdout,
        stderr,
    };
    let pid = guard.pid();
    let clk_tck = clock_ticks();
    let offset = uptime_offset()?;

    if !wait_until(
        Duration::from_secs(lead.saturating_sub(2)),
        Duration::from_millis(50),
        || read(&guard.stderr).contains("Job set id:"),
    ) {
        return Err(format!(
            "not loaded {} s before the fire; log:\n{}",
            2,
            read(&guard.stderr)
        ));
    }
    sleep_until_epoch(fire as f64 - 1.0);
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            format!(
                "soft {}, hard {} (started under soft {soft})",
                v.get(3).unwrap_or(&"?"),
                v.get(4).unwrap_or(&"?")
            )
        })
        .unwrap_or_else(|| "unreadable".to_owned());
    let idle = snapshot(pid)?;
    if epoch_now() >= fire as f64 {
        return Err("the idle snapshot ran past the fire second".to_owned());
    }

    // All N shells have printed their line (or the runs are already
    // ending): the moment every job runs.
    let all_printed = wait_until(
        Duration::from_secs(sleep + lead),
        Duration::from_millis(200),
        || read(&guard.stdout).matches(" cb-out ").count() >= n,
    );
    let snapshot_at = epoch_now() - fire as f64;
    let busy = snapshot(pid)?;
    let children = children_of(pid);
    if !all_printed {
        eprintln!("not every job printed its line before the first ones end");
    }

    // Every run ends (`exit code` line), then the daemon is stopped.
    let ended_all = wait_until(
        Duration::from_secs(sleep + 120),
        Duration::from_millis(500),
        || read(&guard.stderr).matches(" exit code ").count() >= n,
    );
    if !ended_all {
        eprintln!("not every run ended within {} s", sleep + 120);
    }
    let hwm_end_kib = snapshot(pid).map(|s| s.hwm_kib).unwrap_or_default();
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    let stopped = wait_until(Duration::from_secs(30), Duration::from_millis(100), || {
        matches!(guard.child.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        eprintln!("the daemon did not stop within 30 s of SIGTERM");
    }

    // The log: launches, ends and anything at WARNING or worse.
    let log = read(&guard.stderr);
    let mut daemon_starts = Vec::new();
    let (mut start_errors, mut ended, mut ended_with_stdout) = (0, 0, 0);
    let mut problems = Vec::new();
    let mut problem_count = 0;
    for line in log.lines() {
        let Some((stamp, message)) = log_entry(line) else {
            continue;
        };
        if message.starts_with("Starting job cb-") {
            daemon_starts.push(stamp - fire as f64);
        } else if message.contains("could not start its command") {
            start_errors += 1;
        } else if message.starts_with("Job cb-") && message.contains(" exit code ") {
            ended += 1;
            if message.contains("has stdout: true") {
                ended_with_stdout += 1;
            }
        }
        if [" WARNING ", " ERROR ", " CRITICAL "]
            .iter()
            .any(|l| line.contains(l))
        {
            problem_count += 1;
            if problems.len() < 5 {
                problems.push(line.to_owned());
            }
        }
    }
    daemon_starts.sort_by(f64::total_cmp);

    // Stdout: `[cb-00042 stdout] cb-out cb-00042 <uptime>` once per job.
    let out = read(&guard.stdout);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut shell_starts = Vec::new();
    let mut stray = 0;
    for line in out.lines() {
        let parsed = line.strip_prefix('[').and_then(|rest| {
            let (prefix_name, rest) = rest.split_once(" stdout] cb-out ")?;
            let mut parts = rest.split_whitespace();
            let name = parts.next()?;
            let up: f64 = parts.next()?.parse().ok()?;
            (prefix_name == name && parts.next().is_none()).then_some((name, up))
        });
        match parsed {
            Some((name, up)) => {
                *seen.entry(name.to_owned()).or_default() += 1;
                shell_starts.push(up + offset - fire as f64);
            }
            None => stray += 1,
        }
    }
    shell_starts.sort_by(f64::total_cmp);
    let mut once = 0;
    let mut missing = 0;
    let mut doubled = 0;
    for i in 0..n {
        match seen.get(&job_name(i)).copied().unwrap_or(0) {
            0 => missing += 1,
            1 => once += 1,
            _ => doubled += 1,
        }
    }
    guard.kill_all();
    Ok(RunResult {
        n,
        sleep,
        limits,
        idle,
        busy,
        children,
        starting: daemon_starts.len(),
        start_errors,
        shell_starts,
        daemon_first: daemon_starts.first().copied().unwrap_or(f64::NAN),
        daemon_last: daemon_starts.last().copied().unwrap_or(f64::NAN),
        snapshot_at,
        ended,
        ended_with_stdout,
        once,
        missing,
        doubled,
        stray,
        problems,
        problem_count,
        hwm_end_kib,
        clk_tck,
    })
}

fn kinds(s: &Snapshot) -> String {
    let mut kinds: Vec<_> = s.kinds.iter().collect();
    kinds.sort();
    kinds
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_result(r: &RunResult) {
    let n = r.n as f64;
    let pick = |q: f64| -> f64 {
        if r.shell_starts.is_empty() {
            f64::NAN
        } else {
            let i = ((r.shell_starts.len() - 1) as f64 * q).round() as usize;
            r.shell_starts[i]
        }
    };
    println!(
        "\n| {} concurrent jobs (each `echo` a line, then `sleep {}`) | value |",
        r.n, r.sleep
    );
    println!("|---|---|");
    println!("| daemon's open-file limit while running | {} |", r.limits);
    println!(
        "| descriptors idle / with all running | {} / {} ({:.2} per running job) |",
        r.idle.fds,
        r.busy.fds,
        (r.busy.fds as f64 - r.idle.fds as f64) / n
    );
    println!("| descriptors by kind, idle | {} |", kinds(&r.idle));
    println!("| descriptors by kind, all running | {} |", kinds(&r.busy));
    println!(
        "| RSS idle / with all running | {:.1} MiB / {:.1} MiB ({:.1} KiB per running job) |",
        r.idle.rss_kib as f64 / 1024.0,
        r.busy.rss_kib as f64 / 1024.0,
        (r.busy.rss_kib as f64 - r.idle.rss_kib as f64) / n
    );
    println!(
        "| peak RSS (VmHWM) at the end | {:.1} MiB |",
        r.hwm_end_kib as f64 / 1024.0
    );
    println!(
        "| daemon threads idle / all running | {} / {} |",
        r.idle.threads, r.busy.threads
    );
    println!(
        "| jobs started (`Starting job` lines) / could not start | {} / {} |",
        r.starting, r.start_errors
    );
    println!(
        "| job processes running at the snapshot ({:.2} s after the fire second) | {} |",
        r.snapshot_at, r.children
    );
    println!(
        "| launch: fire second to each job's shell running (first / median / p95 / last) | \
         {:.2} / {:.2} / {:.2} / {:.2} s |",
        pick(0.0),
        pick(0.5),
        pick(0.95),
        pick(1.0)
    );
    println!(
        "| launch: fire second to the daemon's first / last `Starting job` line | {:.3} / {:.2} s |",
        r.daemon_first, r.daemon_last
    );
    println!(
        "| daemon CPU from the idle snapshot to all running | {:.2} s ({:.2} ms per job) |",
        (r.busy.cpu_ticks.saturating_sub(r.idle.cpu_ticks)) as f64 / r.clk_tck,
        (r.busy.cpu_ticks.saturating_sub(r.idle.cpu_ticks)) as f64 / r.clk_tck * 1000.0 / n
    );
    println!(
        "| output: jobs whose line reached stdout exactly once / never / more than once | \
         {} / {} / {} (other stdout lines: {}) |",
        r.once, r.missing, r.doubled, r.stray
    );
    println!(
        "| runs ended (`exit code` lines) / with their stdout kept | {} / {} |",
        r.ended, r.ended_with_stdout
    );
    println!(
        "| WARNING or worse log lines | {} {} |",
        r.problem_count,
        r.problems.join(" / ")
    );
}
