//! deploy/ (the install without Helm) and deploy/examples, checked offline
//! with the real tools: kubernetes-validate --strict for the oldest and
//! newest supported Kubernetes, object-by-object equality with the chart's
//! render (deploy/ with the defaults, three-replicas.yaml with
//! `replicaCount: 3`), every example CronJobSet against the CRD's schema
//! and every example config through the built daemon's `-v`, and checkov
//! over the rendered chart, deploy/ and the examples with each skipped
//! check listed with its reason in deploy/checkov-skips.yaml.
//!
//! The checks live in scripts/deploy_test.py; scripts/test.sh installs
//! helm, kubernetes-validate (which brings jsonschema) and checkov. Without
//! them the test skips with a note, except under CI=true where it fails.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The exit code deploy_test.py uses for "a tool is missing, not under CI".
const SKIPPED: i32 = 77;

#[test]
fn deploy_manifests_match_the_chart_validate_and_pass_checkov() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let under_ci = std::env::var("CI").as_deref() == Ok("true");
    let tools = std::env::var("CRONSTABLE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/cronstable-tools")
        });
    // The cached tools (helm, checkov) are found on PATH as scripts/test.sh
    // puts them there; add the cache for a plain `cargo test` too.
    let path = format!(
        "{}:{}",
        tools.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = match Command::new("python3")
        .arg(repo.join("scripts/deploy_test.py"))
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
        "scripts/deploy_test.py failed ({:?}):\n{stdout}\n{stderr}",
        out.status.code()
    );
    assert!(
        stdout.contains("deploy_test: all checks passed"),
        "no success line from scripts/deploy_test.py:\n{stdout}\n{stderr}"
    );
}
