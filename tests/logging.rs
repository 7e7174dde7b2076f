//! The daemon's own log lines as log parsers and alert rules written for
//! the original see them: the default `LEVEL:logger:message` on stderr,
//! a `logging:` section's formatters and stream/file handlers, the
//! `--log-format` alternatives, and a section changed on reload.

mod support;

use std::time::{Duration, Instant};
use support::cli::{cronstable, write_tree};
use support::daemon::Daemon;

const VALID: &str = "jobs:\n  - name: j\n    command: echo hi\n    schedule: '@daily'\n";

const TICK: &str =
    "jobs:\n  - name: tick\n    command: \"true\"\n    schedule:\n      second: \"*\"\n";

const LONG: Duration = Duration::from_secs(20);

/// A `LEVEL:logger:message` line: a Python level name, a dotted logger
/// name, nothing that looks like a timestamp in front.
fn is_basic_line(line: &str) -> bool {
    let mut parts = line.splitn(3, ':');
    let (Some(level), Some(logger), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"].contains(&level)
        && !logger.is_empty()
        && logger
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
}

/// `YYYY-MM-DD?HH:MM:SS` at the start of `text`, with `sep` between date
/// and time.
fn starts_with_datetime(text: &str, sep: char) -> bool {
    let b: Vec<char> = text.chars().take(19).collect();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == '-',
            10 => *c == sep,
            13 | 16 => *c == ':',
            _ => c.is_ascii_digit(),
        })
}

fn wait_for(mut check: impl FnMut() -> bool, what: &str, log: impl Fn() -> String) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < LONG,
            "timed out waiting for {what}:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn default_lines_are_level_logger_message_on_stderr_without_timestamps() {
    let config = format!("{VALID}    archiveOutput: true\n");
    let dir = write_tree(&[("c.yaml", &config)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines.contains(&"INFO:cronstable:Configuration is valid."),
        "{}",
        run.stderr
    );
    // Configuration diagnostics come from the original's cronstable.config.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("WARNING:cronstable.config:")
                && l.contains("archiveOutput has no effect")),
        "{}",
        run.stderr
    );
    for line in &lines {
        assert!(is_basic_line(line), "not LEVEL:logger:message: {line:?}");
    }

    let bad = write_tree(&[("c.yaml", "jobs:\n  - name: x\n")]);
    let run = cronstable(&["-c", "c.yaml", "-v"], bad.path());
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .starts_with("ERROR:cronstable:Configuration error: "),
        "{}",
        run.stderr
    );
}

#[test]
fn a_running_daemon_logs_job_lines_under_the_cronstable_logger() {
    let d = Daemon::start(TICK);
    d.wait_for_log("INFO:cronstable:Starting job tick\n", 1, LONG);
    for line in d.log().lines() {
        assert!(is_basic_line(line), "not LEVEL:logger:message: {line:?}");
    }
}

#[test]
fn logging_section_formatter_and_stdout_handler_are_honored() {
    let config = format!(
        "{TICK}logging:\n  version: 1\n  disable_existing_loggers: false\n  formatters:\n    \
         simple:\n      format: '%(asctime)s %(levelname)s %(name)s: %(message)s'\n      \
         datefmt: '%Y-%m-%d %H:%M:%S'\n  handlers:\n    console:\n      class: \
         logging.StreamHandler\n      level: DEBUG\n      formatter: simple\n      stream: \
         ext://sys.stdout\n  root:\n    level: INFO\n    handlers:\n      - console\n"
    );
    let d = Daemon::start(&config);
    let wanted = " INFO cronstable: Starting job tick";
    wait_for(
        || d.stdout().lines().any(|l| l.ends_with(wanted)),
        "a job line on stdout",
        || format!("stdout:\n{}\nstderr:\n{}", d.stdout(), d.log()),
    );
    let stdout = d.stdout();
    let line = stdout
        .lines()
        .find(|l| l.ends_with(wanted))
        .unwrap_or_default();
    assert!(starts_with_datetime(line, ' '), "{line:?}");
    assert_eq!(line.len(), 19 + wanted.len(), "{line:?}");
    // Root's handlers were replaced: nothing of the daemon's own on stderr.
    assert!(!d.log().contains("Starting job"), "{}", d.log());
    // -l DEBUG (the harness) is overridden by root.level INFO.
    assert!(!stdout.contains(" DEBUG "), "{stdout}");
}

#[test]
fn logger_levels_file_handlers_and_propagate() {
    let config = format!(
        "{VALID}    archiveOutput: true\nlogging:\n  version: 1\n  formatters:\n    bare:\n      \
         format: '%(levelname)-8s|%(name)s|%(message)s'\n  handlers:\n    file:\n      class: \
         logging.FileHandler\n      filename: daemon.log\n      formatter: bare\n  loggers:\n    \
         cronstable:\n      level: INFO\n      handlers: [file]\n      propagate: false\n    \
         cronstable.config:\n      level: ERROR\n"
    );
    let dir = write_tree(&[("c.yaml", &config)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let file = std::fs::read_to_string(dir.path().join("daemon.log")).expect("the log file");
    assert!(
        file.lines()
            .any(|l| l == "INFO    |cronstable|Configuration is valid."),
        "{file}"
    );
    // propagate: false keeps the line off root's stderr handler.
    assert!(
        !run.stderr.contains("Configuration is valid."),
        "{}",
        run.stderr
    );
}

#[test]
fn disable_existing_loggers_defaults_to_silencing_unlisted_loggers() {
    let config = format!("{VALID}logging:\n  version: 1\n  root:\n    level: DEBUG\n");
    let dir = write_tree(&[("c.yaml", &config)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The warning explaining it is logged before the section applies.
    assert!(
        run.stderr
            .contains("WARNING:cronstable.config:logging.disable_existing_loggers is true"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("Configuration is valid."),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_format_attribute_is_a_configuration_error() {
    let config = format!(
        "{VALID}logging:\n  version: 1\n  formatters:\n    f:\n      format: '%(asctime)s \
         %(hostname)s %(message)s'\n"
    );
    let dir = write_tree(&[("c.yaml", &config)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("logging.formatters.f")
            && run
                .stderr
                .contains("unknown log record attribute 'hostname'"),
        "{}",
        run.stderr
    );
}

#[test]
fn json_format_is_unchanged() {
    let dir = write_tree(&[("c.yaml", VALID)]);
    let run = cronstable(&["-c", "c.yaml", "-v", "--log-format", "json"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = run.stderr.lines().next().expect("a log line");
    let value: serde_json::Value = serde_json::from_str(line).expect("a JSON log line");
    let keys: Vec<&str> = value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys.len(), 4, "{line}");
    assert_eq!(value["level"], "INFO");
    assert_eq!(value["target"], "cronstable");
    assert_eq!(value["fields"]["message"], "Configuration is valid.");
    let stamp = value["timestamp"].as_str().unwrap_or_default();
    assert!(
        starts_with_datetime(stamp, 'T') && stamp.ends_with('Z'),
        "{line}"
    );
}

#[test]
fn text_format_puts_a_utc_timestamp_first() {
    let dir = write_tree(&[("c.yaml", VALID)]);
    let run = cronstable(&["-c", "c.yaml", "-v", "--log-format", "text"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = run
        .stderr
        .lines()
        .find(|l| l.ends_with("Configuration is valid."))
        .unwrap_or_else(|| panic!("no success line: {}", run.stderr));
    assert!(starts_with_datetime(line, 'T'), "{line:?}");
    let rest = &line[19..];
    assert!(
        rest.len() == 8 + "  INFO cronstable: Configuration is valid.".len()
            && rest.starts_with('.')
            && rest[1..7].chars().all(|c| c.is_ascii_digit())
            && rest[7..].starts_with("Z  INFO cronstable: "),
        "{line:?}"
    );
}

#[test]
fn a_changed_logging_section_applies_on_reload() {
    let d = Daemon::start(TICK);
    d.wait_for_log("INFO:cronstable:Starting job tick\n", 1, LONG);
    let config = format!(
        "{TICK}logging:\n  version: 1\n  disable_existing_loggers: false\n  formatters:\n    \
         tagged:\n      format: 'reloaded %(levelname)s [%(name)s] %(message)s'\n  handlers:\n    \
         out:\n      class: logging.StreamHandler\n      formatter: tagged\n      stream: \
         ext://sys.stdout\n  root:\n    handlers: [out]\n"
    );
    std::fs::write(d.path("cronstable.yaml"), config).expect("rewrite config");
    d.signal(nix::sys::signal::Signal::SIGHUP);
    wait_for(
        || {
            d.stdout()
                .contains("reloaded INFO [cronstable] Starting job tick\n")
        },
        "the new format on stdout",
        || format!("stdout:\n{}\nstderr:\n{}", d.stdout(), d.log()),
    );
}
