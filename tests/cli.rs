//! The command line as a user drives it: flags, exit codes, what goes to
//! stdout and stderr.

mod support;

use support::cli::{cronstable, write_tree};

const VALID: &str = "jobs:\n  - name: j\n    command: echo hi\n    schedule: '@daily'\n";

#[test]
fn version_prints_the_bare_version_and_ignores_the_config() {
    let dir = write_tree(&[]);
    let run = cronstable(&["--version", "-c", "does-not-exist.yaml"], dir.path());
    assert_eq!(run.code, Some(0));
    assert_eq!(run.stdout, format!("{}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn validate_reports_success_on_stderr() {
    let dir = write_tree(&[("c.yaml", VALID)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains("Configuration is valid."),
        "{}",
        run.stderr
    );
    let long = cronstable(&["--config", "c.yaml", "--validate-config"], dir.path());
    assert_eq!(long.code, Some(0));
}

#[test]
fn log_level_warning_silences_the_success_line() {
    let dir = write_tree(&[("c.yaml", VALID)]);
    let run = cronstable(&["-c", "c.yaml", "-v", "-l", "warning"], dir.path());
    assert_eq!(run.code, Some(0));
    assert!(
        !run.stderr.contains("Configuration is valid."),
        "{}",
        run.stderr
    );
}

#[test]
fn logging_section_root_level_overrides_the_command_line() {
    let config = format!("{VALID}logging:\n  version: 1\n  root:\n    level: ERROR\n");
    let dir = write_tree(&[("c.yaml", &config)]);
    let run = cronstable(&["-c", "c.yaml", "-v", "-l", "DEBUG"], dir.path());
    assert_eq!(run.code, Some(0));
    assert!(
        !run.stderr.contains("Configuration is valid."),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_log_level_is_a_usage_error() {
    let dir = write_tree(&[("c.yaml", VALID)]);
    let run = cronstable(&["-c", "c.yaml", "-v", "-l", "chatty"], dir.path());
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("invalid --log-level 'chatty'"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let dir = write_tree(&[]);
    let run = cronstable(&["--frobnicate"], dir.path());
    assert_eq!(run.code, Some(2));
}

#[test]
fn job_set_id_wins_over_validate() {
    let dir = write_tree(&[("c.yaml", VALID)]);
    let run = cronstable(&["-c", "c.yaml", "-v", "--job-set-id"], dir.path());
    assert_eq!(run.code, Some(0));
    assert!(
        run.stdout.starts_with("v1:") && run.stdout.trim().len() == 67,
        "{}",
        run.stdout
    );
    assert!(!run.stderr.contains("Configuration is valid."));
}

#[test]
fn job_set_id_on_a_bad_config_fails() {
    let dir = write_tree(&[("c.yaml", "jobs:\n  - name: x\n")]);
    let run = cronstable(&["-c", "c.yaml", "--job-set-id"], dir.path());
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("Configuration error:"));
}

#[test]
fn json_log_lines_parse() {
    let dir = write_tree(&[("c.yaml", "jobs:\n  - name: x\n")]);
    let run = cronstable(&["-c", "c.yaml", "-v", "--log-format", "json"], dir.path());
    assert_eq!(run.code, Some(1));
    let line = run.stderr.lines().next().expect("one log line");
    let value: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
    assert_eq!(value["level"], "ERROR");
    let message = value["fields"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("missing required key 'command'"), "{line}");
}

#[test]
fn load_warnings_are_logged_and_do_not_fail() {
    let config = format!("{VALID}    archiveOutput: true\n");
    let dir = write_tree(&[("c.yaml", &config)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0));
    assert!(run.stderr.contains("WARN"), "{}", run.stderr);
    assert!(
        run.stderr.contains("archiveOutput has no effect"),
        "{}",
        run.stderr
    );
}

#[test]
fn missing_default_config_location_is_explained() {
    let dir = write_tree(&[]);
    let run = cronstable(&["-v"], dir.path());
    if std::path::Path::new("/etc/cronstable.d").exists() {
        assert!(!run
            .stderr
            .contains("no configuration at the default location"));
    } else {
        assert_eq!(run.code, Some(1));
        assert!(
            run.stderr
                .contains("no configuration at the default location (/etc/cronstable.d)"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn quickstart_example_is_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = cronstable(&["-c", "examples/quickstart.yaml", "-v"], root);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}
