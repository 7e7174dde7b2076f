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
    // A bare `cronstable` on a fresh host is a first run: where it looked
    // and what to run, then the help, on stdout, exit 0; nothing written.
    let run = cronstable(&[], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "cronstable: no configuration at the default location ({DEFAULT_CONFIG}). Run \
             `cronstable init` to create a starter configuration, or use -c/--config to select \
             an existing file or directory.\n\n{help}"
        )
    );
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    assert!(!std::path::Path::new(DEFAULT_CONFIG).exists());
    // Every explicit request for a config that is not there: the message
    // and the help on stderr, exit 1, nothing on stdout. The manual's
    // special case fires whether -c was left out or names the default.
    for args in [
        &["-v"][..],
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

#[test]
fn init_writes_a_starter_that_validates_and_never_overwrites() {
    let dir = write_tree(&[]);
    let target = dir.path().join("conf.d");
    let target_arg = target.to_str().expect("utf-8 temp path");
    let run = cronstable(&["init", target_arg], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let written = target.join("cronstable.yaml");
    assert_eq!(
        run.stdout,
        format!(
            "wrote {}\nstart the scheduler with: cronstable -c {target_arg}\n",
            written.display()
        )
    );
    let starter = std::fs::read_to_string(&written).expect("the starter is there");
    let check = cronstable(&["-c", target_arg, "-v"], dir.path());
    assert_eq!(
        check.code,
        Some(0),
        "the starter validates: {}",
        check.stderr
    );
    assert!(
        check.stderr.contains("Configuration is valid."),
        "{}",
        check.stderr
    );

    // A second init (DIRECTORY, or -c naming it) refuses and leaves the
    // file as it was, even after the user edited it.
    std::fs::write(&written, format!("{starter}# edited\n")).unwrap();
    for args in [&["init", target_arg][..], &["-c", target_arg, "init"]] {
        let again = cronstable(args, dir.path());
        assert_eq!(again.code, Some(1), "{args:?}");
        assert_eq!(
            again.stderr,
            format!(
                "cronstable init: {target_arg} already holds configuration (cronstable.yaml); \
                 refusing to add a starter to a live setup\n"
            )
        );
    }
    assert!(std::fs::read_to_string(&written)
        .unwrap()
        .ends_with("# edited\n"));

    // Any loadable file counts as a setup; a skipped one does not.
    let crontab_dir = dir.path().join("crontabs");
    std::fs::create_dir(&crontab_dir).unwrap();
    std::fs::write(crontab_dir.join("_disabled.yaml"), "jobs: []\n").unwrap();
    std::fs::write(crontab_dir.join("crontab"), "* * * * * true\n").unwrap();
    let refused = cronstable(&["init", crontab_dir.to_str().unwrap()], dir.path());
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .contains("already holds configuration (crontab)"),
        "{}",
        refused.stderr
    );
    assert!(!crontab_dir.join("cronstable.yaml").exists());

    // A file is no directory.
    let file = dir.path().join("jobs.yaml");
    std::fs::write(&file, "jobs: []\n").unwrap();
    let refused = cronstable(&["init", file.to_str().unwrap()], dir.path());
    assert_eq!(refused.code, Some(1));
    assert!(refused
        .stderr
        .contains("is a file; init writes a starter file into a configuration DIRECTORY"));

    // -c and a different DIRECTORY: DIRECTORY wins, and stderr says so.
    let other = dir.path().join("other");
    let run = cronstable(
        &["-c", target_arg, "init", other.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "cronstable init: -c {target_arg} and DIRECTORY {} disagree; writing to {}\n",
            other.display(),
            other.display()
        )
    );
    assert!(other.join("cronstable.yaml").exists());
}

#[test]
fn the_starter_job_runs_under_the_daemon() {
    // The starter as written, plus a web listener to start its job now
    // rather than at the next five minutes.
    let dir = write_tree(&[]);
    let target = dir.path().join("conf.d");
    let run = cronstable(&["init", target.to_str().unwrap()], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let starter = std::fs::read_to_string(target.join("cronstable.yaml")).unwrap();
    let port = support::http::free_port();
    let config = format!("{starter}\nweb:\n  listen:\n    - http://127.0.0.1:{port}\n");
    let daemon = support::daemon::Daemon::start(&config);
    support::http::wait_listening(port, std::time::Duration::from_secs(20));
    let started = support::http::post(port, "/jobs/hello/start");
    assert_eq!(started.status, 200, "{}", started.body);
    let record = daemon.first_run(port, "hello");
    assert_eq!(record["exit_code"], 0, "{record}\n{}", daemon.log());
    let stdout = record["stdout"].as_str().unwrap_or_default();
    assert!(stdout.starts_with("hello from cronstable on "), "{record}");
}
