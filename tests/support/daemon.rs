//! A daemon under test: the built binary started on a config in a temp
//! directory, its stderr collected, stopped when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `cronstable` process.
pub struct Daemon {
    child: Option<Child>,
    log: Arc<Mutex<String>>,
    stdout: Arc<Mutex<String>>,
    /// The directory holding the config and the files jobs write.
    pub dir: tempfile::TempDir,
}

/// Appends each line `stream` yields to `into`, on a thread of its own
/// (the daemons' stdout and stderr).
pub fn collect<R: std::io::Read + Send + 'static>(stream: R, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if let Ok(mut text) = into.lock() {
                text.push_str(&line);
                text.push('\n');
            }
        }
    });
}

impl Daemon {
    /// Writes `config` as `cronstable.yaml` in a new temp dir (with `{dir}`
    /// replaced by that directory) and starts the daemon on it.
    /// A daemon whose config is a `web:` section listening on a free
    /// loopback port (plus `web_extra`, indented as web keys) and `jobs`
    /// (indented as list items); returns once the port answers.
    pub fn start_with_web(web_extra: &str, jobs: &str) -> (Daemon, u16) {
        let port = super::http::free_port();
        let config =
            format!("web:\n  listen:\n    - http://127.0.0.1:{port}\n{web_extra}jobs:\n{jobs}");
        let d = Daemon::start(&config);
        super::http::wait_listening(port, Duration::from_secs(20));
        (d, port)
    }

    pub fn start(config: &str) -> Daemon {
        Daemon::start_env(config, &[])
    }

    /// Like [`Daemon::start`], with the variables in `unset` removed from
    /// the daemon's environment.
    pub fn start_env(config: &str, unset: &[&str]) -> Daemon {
        Daemon::start_with_vars(config, unset, &[])
    }

    /// Like [`Daemon::start`], with the variables in `unset` removed from
    /// the daemon's environment and those in `set` set (a value may name
    /// `{dir}`).
    pub fn start_with_vars(config: &str, unset: &[&str], set: &[(&str, &str)]) -> Daemon {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = config.replace("{dir}", &dir.path().display().to_string());
        std::fs::write(dir.path().join("cronstable.yaml"), text).expect("write config");
        let mut command = Command::new(env!("CARGO_BIN_EXE_cronstable"));
        for name in unset {
            command.env_remove(name);
        }
        for (name, value) in set {
            command.env(
                name,
                value.replace("{dir}", &dir.path().display().to_string()),
            );
        }
        let mut child = command
            .args(["-c", "cronstable.yaml", "-l", "DEBUG"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the daemon");
        let log = Arc::new(Mutex::new(String::new()));
        let stdout = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            collect(err, Arc::clone(&log));
        }
        if let Some(out) = child.stdout.take() {
            collect(out, Arc::clone(&stdout));
        }
        Daemon {
            child: Some(child),
            log,
            stdout,
            dir,
        }
    }

    /// A path inside the daemon's directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Everything the daemon logged so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Everything the daemon wrote to stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// The job's first recorded run (`GET /jobs/{job}/runs` lists them
    /// oldest first), once there is one; panics with the log after 30 s.
    pub fn first_run(&self, port: u16, job: &str) -> serde_json::Value {
        let limit = Duration::from_secs(30);
        let start = Instant::now();
        loop {
            let runs = super::http::get(port, &format!("/jobs/{job}/runs")).json();
            if let Some(run) = runs["runs"].as_array().and_then(|r| r.first()) {
                return run.clone();
            }
            assert!(
                start.elapsed() < limit,
                "no run of {job} after {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the log contains `needle` `count` times; panics with the
    /// log after `limit`.
    pub fn wait_for_log(&self, needle: &str, count: usize, limit: Duration) {
        let start = Instant::now();
        while self.log().matches(needle).count() < count {
            if start.elapsed() > limit {
                panic!(
                    "waited {limit:?} for {count}x {needle:?}; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `file` in the daemon's directory has at least `lines`
    /// lines and returns them.
    pub fn wait_for_lines(&self, file: &str, lines: usize, limit: Duration) -> Vec<String> {
        let start = Instant::now();
        loop {
            let found = read_lines(&self.path(file));
            if found.len() >= lines {
                return found;
            }
            if start.elapsed() > limit {
                panic!(
                    "waited {limit:?} for {lines} lines in {file}, got {found:?}; log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The daemon's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still there and not a zombie (it did not
    /// crash or exit), read from /proc without reaping it.
    pub fn running(&self) -> bool {
        self.pid()
            .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .and_then(|stat| {
                let (_, after) = stat.rsplit_once(')')?;
                after.split_whitespace().next().map(|state| state != "Z")
            })
            .unwrap_or(false)
    }

    /// How many file descriptors the daemon holds open now (the entries of
    /// /proc/PID/fd), to catch a leak of sockets or pipes.
    pub fn open_fds(&self) -> usize {
        let pid = self.pid().expect("the daemon runs");
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .expect("read /proc/PID/fd")
            .count()
    }

    /// Sends a signal to the daemon.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        if let Some(child) = &self.child {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            nix::sys::signal::kill(pid, sig).expect("signal the daemon");
        }
    }

    /// Waits for the daemon to exit and returns its exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                // Let the collector threads drain the pipes.
                std::thread::sleep(Duration::from_millis(100));
                return status.code();
            }
            if start.elapsed() > limit {
                panic!("daemon did not exit within {limit:?}; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The lines of a file (empty when it does not exist).
pub fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// True while a live (non-zombie) process is in process group `pgid`,
/// checked for a few seconds so that a kill in flight can land. Zombies are
/// ignored: an orphan waits for its new parent to reap it, which is not up
/// to the daemon.
pub fn group_alive(pgid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if live_members(pgid).is_empty() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Pids of the non-zombie processes in group `pgid`, from /proc.
pub fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command: state, ppid, pgrp, ...
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            pids.push(pid);
        }
    }
    pids
}
