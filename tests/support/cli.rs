//! Runs the built binary once, the way a user runs a command, and
//! captures what it says (exit code, stdout, stderr).

use std::path::Path;
use std::process::Command;

/// What one run of the binary produced.
pub struct Run {
    /// Exit code (None when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `cronstable` with `args` in `cwd`, with a fixed environment.
pub fn cronstable(args: &[&str], cwd: &Path) -> Run {
    cronstable_env(args, cwd, &[])
}

/// Like [`cronstable`] with extra environment variables.
pub fn cronstable_env(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cronstable"));
    cmd.args(args).current_dir(cwd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the cronstable binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes `files` (relative path, contents) under a new temp dir.
pub fn write_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, text).expect("write file");
    }
    dir
}
