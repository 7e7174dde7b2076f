//! The offline checks that live in Python scripts (scripts/chart_test.py,
//! scripts/deploy_test.py): run one with the built daemon and the cached
//! tools on PATH, skip with a note when a tool is missing (exit code 77)
//! except under CI=true, and require its success line.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The exit code the scripts use for "a tool is missing, not under CI".
const SKIPPED: i32 = 77;

/// Runs `scripts/<script>` from the repository root and asserts it passed
/// (exit 0 and `<stem>: all checks passed` on stdout).
pub fn run_check_script(script: &str) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let under_ci = std::env::var("CI").as_deref() == Ok("true");
    let tools = std::env::var("CRONSTABLE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/cronstable-tools")
        });
    // scripts/test.sh puts the cached tools (helm, checkov) on PATH; add
    // the cache for a plain `cargo test` too.
    let path = format!(
        "{}:{}",
        tools.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = match Command::new("python3")
        .arg(repo.join("scripts").join(script))
        .current_dir(&repo)
        .env("CRONSTABLE_BIN", env!("CARGO_BIN_EXE_cronstable"))
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(err) => {
            assert!(!under_ci, "python3 cannot run: {err}");
            eprintln!("skipping: python3 cannot run ({err})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(SKIPPED) && !under_ci {
        eprintln!("skipping: {stderr}");
        return;
    }
    assert!(
        out.status.success(),
        "scripts/{script} failed ({:?}):\n{stdout}\n{stderr}",
        out.status.code()
    );
    let stem = script.trim_end_matches(".py");
    assert!(
        stdout.contains(&format!("{stem}: all checks passed")),
        "no success line from scripts/{script}:\n{stdout}\n{stderr}"
    );
}
