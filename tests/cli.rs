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

/// The path the daemon reads when `-c` is not given (the original's
/// `DEFAULT_CONFIG_PATH` on POSIX).
const DEFAULT_CONFIG: &str = "/etc/cronstable.d";

/// The CLI Reference's message when a config is asked for at the missing
/// default location ("Default-path special case").
const NOT_FOUND: &str = "cronstable error: configuration file not found at the default \
     location (/etc/cronstable.d). Run `cronstable init` to create a starter configuration \
     there, or point -c/--config at an existing file or directory.";

/// The full help, as `--help` prints it.
fn help() -> String {
    let dir = write_tree(&[]);
    let run = cronstable(&["--help"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run.stdout
}

#[test]
fn help_names_the_default_config_path_the_daemon_reads() {
    let help = help();
    // Compared with the line breaks of the layout taken out.
    let words = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(&format!(
            "-c, --config <FILE-OR-DIR> Configuration file, or a directory of *.yaml/*.yml \
             files and crontabs [default: {DEFAULT_CONFIG}; none with --kube]"
        )),
        "{help}"
    );
    assert!(!help.contains("cronstable.yaml"), "{help}");
}

#[test]
fn missing_default_config_location_is_explained() {
    // The default location cannot be moved for a test (and a test does
    // not create /etc paths): where it exists, only check that the
    // daemon does not claim it is missing.
    let dir = write_tree(&[]);
    if std::path::Path::new(DEFAULT_CONFIG).exists() {
        let run = cronstable(&["-v"], dir.path());
        assert!(
            !run.stderr.contains("at the default location"),
            "{}",
            run.stderr
        );
        return;
    }
    let help = help();
    // Every request for a config that is not there: the message and the
    // help on stderr, exit 1, nothing on stdout.
    for args in [
        // A bare `cronstable` too: the manual's special case fires
        // whether -c was left out or names the default.
        &[][..],
        &["-v"],
        &["--job-set-id"],
        &["-l", "INFO"],
        &["-c", DEFAULT_CONFIG],
        &["-c", DEFAULT_CONFIG, "-v"],
    ] {
        let run = cronstable(args, dir.path());
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr, format!("{NOT_FOUND}\n{help}"), "{args:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
}

#[test]
fn quickstart_example_is_valid() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = cronstable(&["-c", "examples/quickstart.yaml", "-v"], root);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}
