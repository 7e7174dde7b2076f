//! The `shell` reporter: a local command that learns about the run from
//! `CRONSTABLE_*` environment variables.

use super::context::RunContext;
use crate::config::model::report::ShellReport;
use crate::config::model::Command;
use crate::platform::{self, StopSignal};
use std::process::Stdio;
use std::time::Duration;

/// Default bound on the reporter command, seconds.
pub const DEFAULT_TIMEOUT: f64 = 60.0;

/// Longest stdout / stderr passed in the environment, in characters. The
/// kernel limits the size of one variable and of the whole environment.
pub const OUTPUT_LIMIT: usize = 16 * 1024;

/// How long a killed reporter command may take to be reaped.
const REAP_BOUND: Duration = Duration::from_secs(10);

/// Why a shell report did not succeed. `Display` is the text after
/// `shell reporter: ` in the `Problem reporting ...` log line.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// `command: []`.
    #[error("the command is an empty list")]
    EmptyCommand,
    /// The program could not be started.
    #[error("could not start {program}: {source}")]
    Start {
        /// The program (the shell, or the list's first item).
        program: String,
        /// The OS's answer.
        source: std::io::Error,
    },
    /// The command ran and exited non-zero (a signal that killed it is
    /// its number negated).
    #[error("the command exited with code {0}")]
    Exit(i32),
    /// Waiting for the command failed.
    #[error("could not wait for the command: {0}")]
    Wait(#[source] std::io::Error),
    /// The command outlived the block's `timeout` and was killed.
    #[error("the command did not finish within {seconds} seconds; killed it")]
    Timeout {
        /// The timeout, seconds.
        seconds: f64,
    },
}

/// True when the block names a command.
pub fn enabled(cfg: &ShellReport) -> bool {
    cfg.command.is_some()
}

/// The longest the reporter can take, kill and reap included.
pub fn deadline(cfg: &ShellReport) -> Duration {
    timeout(cfg) + REAP_BOUND + Duration::from_secs(1)
}

fn timeout(cfg: &ShellReport) -> Duration {
    let secs = cfg.timeout.filter(|t| *t > 0.0).unwrap_or(DEFAULT_TIMEOUT);
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::from_secs(60))
}

/// The variables added to the daemon's environment for the command.
///
/// stdout and stderr are cut to their first [`OUTPUT_LIMIT`] characters
/// when either one, or both together, exceed it (the original's rule);
/// `*_TRUNCATED` says whether a stream was cut. A NUL character cannot be
/// passed in an environment variable and is dropped.
pub fn environment(ctx: &RunContext) -> Vec<(&'static str, String)> {
    let stdout = ctx.stdout.clone().unwrap_or_default().replace('\0', "");
    let stderr = ctx.stderr.clone().unwrap_or_default().replace('\0', "");
    let (out_len, err_len) = (stdout.chars().count(), stderr.chars().count());
    let too_long =
        out_len > OUTPUT_LIMIT || err_len > OUTPUT_LIMIT || out_len + err_len > OUTPUT_LIMIT;
    let cut = |s: String, len: usize| -> (String, bool) {
        if too_long && len > OUTPUT_LIMIT {
            (s.chars().take(OUTPUT_LIMIT).collect(), true)
        } else {
            (s, false)
        }
    };
    let (stdout, out_cut) = cut(stdout, out_len);
    let (stderr, err_cut) = cut(stderr, err_len);
    let flag = |b: bool| if b { "1" } else { "0" }.to_owned();
    let [check, threshold, observed, last_success] = ctx.sla_env();
    vec![
        (
            "CRONSTABLE_FAIL_REASON",
            ctx.fail_reason.clone().unwrap_or_default(),
        ),
        ("CRONSTABLE_JOB_NAME", ctx.name.clone()),
        ("CRONSTABLE_JOB_COMMAND", ctx.command_line()),
        ("CRONSTABLE_JOB_SCHEDULE", ctx.schedule.clone()),
        ("CRONSTABLE_FAILED", flag(!ctx.success)),
        (
            "CRONSTABLE_RETCODE",
            // Python's str() of the original's None when nothing ran.
            ctx.retcode
                .map_or_else(|| "None".to_owned(), |c| c.to_string()),
        ),
        ("CRONSTABLE_STDERR", stderr),
        ("CRONSTABLE_STDOUT", stdout),
        ("CRONSTABLE_STDERR_TRUNCATED", flag(err_cut)),
        ("CRONSTABLE_STDOUT_TRUNCATED", flag(out_cut)),
        // Empty for a run that was not resource-monitored, so the command
        // can test for presence; CPU seconds spelled as Python's repr.
        (
            "CRONSTABLE_CPU_SECONDS",
            ctx.resources
                .as_ref()
                .map(|u| crate::pyfmt::py_float(u.cpu_total_seconds()))
                .unwrap_or_default(),
        ),
        (
            "CRONSTABLE_MAX_RSS_BYTES",
            ctx.resources
                .as_ref()
                .map(|u| u.max_rss_bytes.to_string())
                .unwrap_or_default(),
        ),
        ("CRONSTABLE_HOST", ctx.host.clone()),
        // The durable run ledger's run id is not part of this version:
        // present and empty, as in the original without a store.
        ("CRONSTABLE_RUN_ID", String::new()),
        (
            "CRONSTABLE_STARTED_AT",
            ctx.started_at.clone().unwrap_or_default(),
        ),
        // Only an onLate report fills these; run reports leave them empty.
        ("CRONSTABLE_SLA_CHECK", check),
        ("CRONSTABLE_SLA_THRESHOLD_SECONDS", threshold),
        ("CRONSTABLE_SLA_OBSERVED_SECONDS", observed),
        ("CRONSTABLE_LAST_SUCCESS_AT", last_success),
        // Empty without resourceLimits; else whether every cap applied,
        // and 1 when the memory cap ended the run.
        (
            "CRONSTABLE_LIMITS_ENFORCED",
            ctx.limits
                .as_ref()
                .map_or_else(String::new, |l| flag(l.enforced)),
        ),
        (
            "CRONSTABLE_MEMORY_LIMIT_EXCEEDED",
            ctx.limits
                .as_ref()
                .filter(|l| l.memory_exceeded)
                .map_or_else(String::new, |_| "1".into()),
        ),
    ]
}

/// Runs the command in its own process group and waits for it, up to the
/// block's `timeout`; on expiry the whole group is killed.
pub async fn send(cfg: &ShellReport, ctx: &RunContext) -> Result<(), ShellError> {
    let Some(command) = &cfg.command else {
        return Ok(());
    };
    let argv: Vec<String> = match command {
        Command::Argv(args) => args.clone(),
        Command::Shell(line) => {
            // An empty `shell:` means "the system shell", as the original's
            // create_subprocess_shell does on POSIX.
            let shell = cfg
                .shell
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| platform::DEFAULT_SHELL.to_owned());
            vec![shell, "-c".to_owned(), line.clone()]
        }
    };
    let Some((program, args)) = argv.split_first() else {
        return Err(ShellError::EmptyCommand);
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(environment(ctx))
        // A report command has nothing to read: without this it would
        // share the daemon's stdin and could wait on it until the timeout.
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    // Registered as the daemon's own child so that, as PID 1, the orphan
    // reaper leaves its exit status to the wait below.
    let (mut child, _own) =
        platform::spawn_own(|| cmd.spawn(), |c| c.id()).map_err(|source| ShellError::Start {
            program: program.clone(),
            source,
        })?;
    let limit = timeout(cfg);
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(ShellError::Exit(platform::exit_code(status))),
        Ok(Err(e)) => Err(ShellError::Wait(e)),
        Err(_) => {
            if let Some(pid) = child.id() {
                if let platform::GroupSignal::Failed(why) =
                    platform::signal_group(pid, StopSignal::Kill, false)
                {
                    tracing::debug!(target: "cronstable::report", "shell reporter: killpg failed ({why}), killing the command alone");
                    let _ = child.start_kill();
                }
            }
            let _ = tokio::time::timeout(REAP_BOUND, child.wait()).await;
            Err(ShellError::Timeout {
                seconds: limit.as_secs_f64(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(stdout: Option<String>, stderr: Option<String>) -> RunContext {
        let job = crate::report::test_support::job("j", "echo hi");
        let mut record = crate::report::test_support::record("j", Some("why"), 3);
        record.stdout.text = stdout.clone().unwrap_or_default();
        record.stderr.text = stderr.clone().unwrap_or_default();
        let mut job = job;
        job.capture_stdout = stdout.is_some();
        job.capture_stderr = stderr.is_some();
        RunContext::new(super::super::Hook::Failure, &job, &record)
    }

    fn get<'a>(env: &'a [(&'static str, String)], key: &str) -> &'a str {
        env.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
            .unwrap()
    }

    /// Empty without caps; `1`/`0` and `1`/empty from the limits record.
    #[test]
    fn the_limits_variables_follow_the_record() {
        let plain = environment(&ctx(None, None));
        assert_eq!(get(&plain, "CRONSTABLE_LIMITS_ENFORCED"), "");
        assert_eq!(get(&plain, "CRONSTABLE_MEMORY_LIMIT_EXCEEDED"), "");
        let job = crate::report::test_support::job("j", "x");
        let mut record = crate::report::test_support::record("j", Some("why"), -9);
        for (enforced, exceeded, want) in [(true, true, ("1", "1")), (false, false, ("0", ""))] {
            record.limits = crate::job::limits::LimitsRecord::from_json(&serde_json::json!({
                "enforced": enforced, "memory_exceeded": exceeded,
            }));
            let env = environment(&RunContext::new(super::super::Hook::Failure, &job, &record));
            assert_eq!(get(&env, "CRONSTABLE_LIMITS_ENFORCED"), want.0);
            assert_eq!(get(&env, "CRONSTABLE_MEMORY_LIMIT_EXCEEDED"), want.1);
        }
    }

    #[test]
    fn truncation_follows_the_original_rule() {
        let big = "x".repeat(OUTPUT_LIMIT + 5);
        let env = environment(&ctx(Some(big), Some("small".into())));
        assert_eq!(get(&env, "CRONSTABLE_STDOUT").len(), OUTPUT_LIMIT);
        assert_eq!(get(&env, "CRONSTABLE_STDOUT_TRUNCATED"), "1");
        assert_eq!(get(&env, "CRONSTABLE_STDERR"), "small");
        assert_eq!(get(&env, "CRONSTABLE_STDERR_TRUNCATED"), "0");
        // Together over the limit, each under it: nothing is cut.
        let half = "y".repeat(OUTPUT_LIMIT / 2 + 10);
        let env = environment(&ctx(Some(half.clone()), Some(half)));
        assert_eq!(get(&env, "CRONSTABLE_STDOUT_TRUNCATED"), "0");
        assert_eq!(get(&env, "CRONSTABLE_STDERR_TRUNCATED"), "0");
    }

    fn run(cfg: &ShellReport) -> Result<(), ShellError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(send(cfg, &ctx(None, None)))
    }

    fn block(command: Command) -> ShellReport {
        ShellReport {
            shell: None,
            command: Some(command),
            timeout: None,
        }
    }

    /// Each way a report command can fail is its own variant, worded as
    /// the log line has always said it.
    #[test]
    fn failures_are_told_apart() {
        assert!(matches!(
            run(&block(Command::Argv(vec![]))),
            Err(ShellError::EmptyCommand)
        ));
        let err = run(&block(Command::Shell("exit 3".into()))).unwrap_err();
        assert!(matches!(err, ShellError::Exit(3)), "{err:?}");
        assert_eq!(err.to_string(), "the command exited with code 3");
        let missing = "/nonexistent/cronstable-report-command";
        let err = run(&block(Command::Argv(vec![missing.into()]))).unwrap_err();
        assert!(
            matches!(&err, ShellError::Start { program, source }
                if program == missing && source.kind() == std::io::ErrorKind::NotFound),
            "{err:?}"
        );
        let mut slow = block(Command::Shell("sleep 5".into()));
        slow.timeout = Some(0.2);
        let err = run(&slow).unwrap_err();
        assert!(matches!(err, ShellError::Timeout { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the command did not finish within 0.2 seconds; killed it"
        );
        assert!(run(&block(Command::Shell("true".into()))).is_ok());
    }

    #[test]
    fn run_fields() {
        let env = environment(&ctx(None, Some("e\0rr".into())));
        assert_eq!(get(&env, "CRONSTABLE_FAILED"), "1");
        assert_eq!(get(&env, "CRONSTABLE_RETCODE"), "3");
        assert_eq!(get(&env, "CRONSTABLE_FAIL_REASON"), "why");
        assert_eq!(get(&env, "CRONSTABLE_STDOUT"), "");
        assert_eq!(get(&env, "CRONSTABLE_STDERR"), "err");
        assert_eq!(get(&env, "CRONSTABLE_JOB_COMMAND"), "echo hi");
        assert_eq!(get(&env, "CRONSTABLE_RUN_ID"), "");
        assert!(get(&env, "CRONSTABLE_STARTED_AT").ends_with("+00:00"));
        assert_eq!(get(&env, "CRONSTABLE_CPU_SECONDS"), "", "not monitored");
        assert_eq!(get(&env, "CRONSTABLE_MAX_RSS_BYTES"), "");
    }

    #[test]
    fn a_monitored_run_passes_its_cpu_and_peak_memory() {
        let mut ctx = ctx(None, None);
        ctx.resources = Some(crate::job::monitor::ResourceUsage {
            cpu_user_seconds: 1.0,
            cpu_system_seconds: 0.25,
            max_rss_bytes: 104_857_600,
            samples: 4,
            series: None,
        });
        let env = environment(&ctx);
        assert_eq!(get(&env, "CRONSTABLE_CPU_SECONDS"), "1.25");
        assert_eq!(get(&env, "CRONSTABLE_MAX_RSS_BYTES"), "104857600");
        if let Some(u) = ctx.resources.as_mut() {
            (u.cpu_user_seconds, u.cpu_system_seconds) = (2.0, 0.0);
        }
        assert_eq!(get(&environment(&ctx), "CRONSTABLE_CPU_SECONDS"), "2.0");
    }
}
