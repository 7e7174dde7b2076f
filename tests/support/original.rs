//! The original daemon (cronstable 1.2.72 from PyPI, installed by
//! scripts/test.sh): where it is, and running it on a config until a job
//! has done its work.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The original's entry point (`CRONSTABLE_ORIGINAL`, else the venv
/// scripts/test.sh makes), or None: then the caller skips, saying why;
/// under CI its absence fails the test.
pub fn original() -> Option<PathBuf> {
    let found = std::env::var_os("CRONSTABLE_ORIGINAL")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| {
                PathBuf::from(home).join(".cache/cronstable-tools/original-venv/bin/cronstable")
            })
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the original daemon is missing (scripts/test.sh installs it)"
        );
        eprintln!("skipped: the original daemon is not installed (run scripts/test.sh)");
    }
    found
}

/// Runs the original daemon on `config` (written to `dir/py.yaml`) until
/// the file `done` exists, then stops it with SIGINT; returns its log.
/// Panics with the log when `done` does not appear within `limit`.
pub fn run_until_file(
    exe: &Path,
    dir: &Path,
    config: &str,
    done: &Path,
    limit: Duration,
) -> String {
    std::fs::write(dir.join("py.yaml"), config).expect("write the config");
    let log = dir.join("py.log");
    let mut child = Command::new(exe)
        .args(["-c", "py.yaml"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("create the log"))
        .spawn()
        .expect("start the original");
    let start = Instant::now();
    let text = || std::fs::read_to_string(&log).unwrap_or_default();
    while !done.exists() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} never appeared; the original's log:\n{}",
                done.display(),
                text()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("signal the original");
    let _ = child.wait();
    text()
}
