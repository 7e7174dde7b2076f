//! The `verify` check of a run, the pure parts: whether the check runs,
//! how it is set up from the job, and the record it leaves. A check is a
//! second command run after the job's own exited with a success: same
//! shell, environment (the run's job-API variables included), account,
//! directory and cancel path; both streams captured and kept short; its
//! own timeout. Its failure fails the run. Spawning and watching it is
//! `run.rs`'s (the same code that watches the command).

use super::outcome::{RunRecord, StreamOutput};
use crate::config::job::{FailurePolicy, Verify};
use crate::config::JobConfig;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// Captured lines a check keeps per stream (head and tail halves).
pub const CHECK_SAVE_LIMIT: usize = 64;

/// The longest line a check's stream buffers, and the most characters of
/// each stream its record keeps.
pub const CHECK_OUTPUT_LIMIT: usize = 16384;

/// The exit code of a check that could not start (as for a command).
const CHECK_START_FAILED: i32 = 127;

/// What a finished run's check does.
#[derive(Debug, Clone, PartialEq)]
pub enum Precondition {
    /// The run succeeded: run the check.
    Run,
    /// The run failed before the check: record this instead.
    Skip(Value),
    /// Cancelled or timed out: no check and no record of one.
    Nothing,
}

/// Whether the check of a run that ended as `record` runs: not after a
/// cancel or an `executionTimeout` (no record then), skipped with a
/// record when the command did not start or the run already failed.
pub fn precondition(record: &RunRecord, cancel_requested: bool) -> Precondition {
    if cancel_requested || record.timed_out || record.cancelled || record.replaced {
        return Precondition::Nothing;
    }
    if record.start_error.is_some() {
        return Precondition::Skip(skipped("command did not start"));
    }
    if record.fail_reason.is_some() {
        return Precondition::Skip(skipped("command failed"));
    }
    Precondition::Run
}

fn skipped(reason: &str) -> Value {
    json!({"outcome": "skipped", "fail_reason": reason})
}

/// The job the check runs as: the job's own settings with the check's
/// command, no `executionTimeout` (the check's timeout applies), both
/// streams captured, [`CHECK_SAVE_LIMIT`] lines kept, lines cut at
/// [`CHECK_OUTPUT_LIMIT`], no statsd, and only a non-zero exit failing.
pub fn check_job(job: &JobConfig, verify: &Verify) -> JobConfig {
    JobConfig {
        command: verify.command.clone(),
        verify: None,
        execution_timeout: None,
        capture_stdout: true,
        capture_stderr: true,
        save_limit: CHECK_SAVE_LIMIT,
        max_line_length: job.max_line_length.min(CHECK_OUTPUT_LIMIT),
        statsd: None,
        fails_when: FailurePolicy {
            produces_stdout: false,
            produces_stderr: false,
            nonzero_return: true,
            always: false,
        },
        spec: None,
        ..job.clone()
    }
}

/// A check's own fail reason: a non-zero exit (-100 after its timeout,
/// 127 when it could not start).
fn check_fail_reason(retcode: i32) -> Option<String> {
    (retcode != 0).then(|| format!("command exited with code {retcode}"))
}

/// A check stream as its record keeps it: secrets scrubbed line by line,
/// then cut to [`CHECK_OUTPUT_LIMIT`] characters. None when nothing was
/// captured.
fn kept_text(stream: &StreamOutput) -> Option<String> {
    if stream.text.is_empty() {
        return None;
    }
    let lines: Vec<&str> = stream.text.split_inclusive('\n').collect();
    let scrubbed: String = crate::redact::redact_lines(&lines).concat();
    Some(scrubbed.chars().take(CHECK_OUTPUT_LIMIT).collect())
}

/// Records the check's outcome on the run: `record.verification` in the
/// original's shape, the run's end at the check's end, and, when the check
/// failed, the run's fail reason `verification failed: <the check's>`.
/// `checked` is the check's own record, None when it could not start;
/// `now` is when the check was over.
pub fn apply(record: &mut RunRecord, checked: Option<&RunRecord>, now: DateTime<Utc>) {
    let iso = crate::pyfmt::py_isoformat;
    let (retcode, started, finished) = match checked {
        Some(check) => (check.retcode, Some(check.started_at), check.finished_at),
        None => (CHECK_START_FAILED, None, now),
    };
    // A check its own caps ended (or refused) fails for that reason.
    let capped = checked.and_then(|c| c.limits.as_ref());
    let reason = capped
        .and_then(super::limits::LimitsRecord::failure)
        .or_else(|| check_fail_reason(retcode));
    let (stdout, stderr) = match checked {
        Some(check) => (check.stdout.clone(), check.stderr.clone()),
        None => (StreamOutput::default(), StreamOutput::default()),
    };
    let truncated = [&stdout, &stderr]
        .iter()
        .any(|s| s.text.chars().count() > CHECK_OUTPUT_LIMIT || s.discarded > 0);
    record.verification = Some(json!({
        "outcome": if reason.is_some() { "failure" } else { "success" },
        "exit_code": retcode,
        "fail_reason": reason,
        "started_at": started.map(iso),
        "finished_at": iso(finished),
        "duration": started.map(|s| (finished - s).num_microseconds().unwrap_or(0) as f64 / 1e6),
        "stdout": kept_text(&stdout),
        "stderr": kept_text(&stderr),
        "stdout_discarded": stdout.discarded,
        "stderr_discarded": stderr.discarded,
        "output_truncated": truncated,
        "limits": capped.map_or(Value::Null, super::limits::LimitsRecord::to_json),
    }));
    record.finished_at = record.finished_at.max(finished);
    if let Some(check) = checked {
        record.cancelled |= check.cancelled;
    }
    if let Some(reason) = reason {
        record.fail_reason = Some(format!("verification failed: {reason}"));
    }
}

#[cfg(test)]
mod tests;
