//! The official MCP Python SDK (`mcp` from PyPI, installed by
//! scripts/test.sh into a virtualenv of the tools cache) against the
//! built daemon: over Streamable HTTP and through the `cronstable mcp`
//! stdio bridge, it initializes, lists the tools, lists the jobs, runs a
//! job and sees the run recorded, asks why the schedule did not fire,
//! reads a resource and gets a prompt (tests/support/mcp_client.py).
//! The SDK's high-level client does the same again in its default mode,
//! which discovers the server and speaks the stateless revision
//! `2026-07-28`. Without the SDK the tests say they are skipped; under CI its absence
//! fails them.

mod support;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use support::daemon::Daemon;

/// The Python with the SDK (`CRONSTABLE_MCP_PYTHON`, else the tools
/// cache's `mcp-venv`), or None (skipped, saying so; fatal under CI).
fn sdk_python() -> Option<PathBuf> {
    let found = std::env::var_os("CRONSTABLE_MCP_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let tools = std::env::var_os("CRONSTABLE_TOOLS")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .map(|home| PathBuf::from(home).join(".cache/cronstable-tools"))
                })?;
            Some(tools.join("mcp-venv/bin/python3"))
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the MCP SDK is missing (scripts/test.sh installs it)"
        );
        eprintln!("skipped: the MCP Python SDK is not installed (run scripts/test.sh)");
    }
    found
}

const WEB: &str = "  authToken:\n    value: sdk-token\n";

const JOBS: &str = r#"  - name: greet
    command: "echo greetings from greet"
    captureStdout: true
    schedule: "0 0 1 1 *"
  - name: other
    command: "true"
    schedule: "*/5 * * * *"
mcp:
  enabled: true
  readOnly: false
  toolsets: [observe, act]
"#;

fn drive(python: &PathBuf, args: &[&str]) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_client.py");
    let out = Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .expect("run the SDK client");
    assert!(
        out.status.success(),
        "the SDK client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn judge(seen: &Value, runs_before: u64) {
    judge_in(seen, runs_before, "2025-11-25");
}

fn judge_in(seen: &Value, runs_before: u64, protocol: &str) {
    assert_eq!(seen["protocol"], protocol);
    assert_eq!(seen["server"], "cronstable");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for tool in [
        "cron_list_jobs",
        "cron_run_job",
        "cron_why_no_run",
        "cron_tail_job_logs",
    ] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    assert_eq!(seen["jobs"], serde_json::json!(["greet", "other"]));
    assert_eq!(seen["started"], serde_json::json!({"started": "greet"}));
    assert_eq!(seen["runs_before"], serde_json::json!(runs_before));
    assert_eq!(seen["last_run"]["trigger"], "manual");
    assert_eq!(seen["last_run"]["outcome"], "success");
    assert_eq!(
        seen["log_lines"],
        serde_json::json!(["greetings from greet"])
    );
    assert_eq!(seen["why"]["matches"], serde_json::json!(false));
    assert!(
        seen["why_summary"]
            .as_str()
            .unwrap()
            .contains("minute 3 is not in 0"),
        "{}",
        seen["why_summary"]
    );
    assert!(seen["resources"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("cronstable://status")));
    assert_eq!(seen["version"]["jobs"], serde_json::json!(2));
    assert!(seen["prompts"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("triage_job_failure")));
    assert!(seen["prompt"].as_str().unwrap().contains("'greet'"));
}

#[test]
fn the_official_sdk_over_streamable_http_and_the_stdio_bridge() {
    let Some(python) = sdk_python() else { return };
    let (_d, port) = Daemon::start_with_web(WEB, JOBS);
    let url = format!("http://127.0.0.1:{port}");
    let over_http = drive(
        &python,
        &["http", &format!("{url}/mcp"), "sdk-token", "greet"],
    );
    judge(&over_http, 0);
    let binary = env!("CARGO_BIN_EXE_cronstable");
    let over_stdio = drive(&python, &["stdio", binary, &url, "sdk-token", "greet"]);
    judge(&over_stdio, 1);
}

#[test]
fn the_official_sdk_discovers_and_speaks_the_stateless_revision() {
    let Some(python) = sdk_python() else { return };
    let (_d, port) = Daemon::start_with_web(WEB, JOBS);
    let url = format!("http://127.0.0.1:{port}");
    let over_http = drive(
        &python,
        &["modern-http", &format!("{url}/mcp"), "sdk-token", "greet"],
    );
    judge_in(&over_http, 0, "2026-07-28");
    let binary = env!("CARGO_BIN_EXE_cronstable");
    let over_stdio = drive(
        &python,
        &["modern-stdio", binary, &url, "sdk-token", "greet"],
    );
    judge_in(&over_stdio, 1, "2026-07-28");
}
