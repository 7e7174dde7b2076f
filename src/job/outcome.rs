//! How a finished run is judged, and what is remembered about it.

use crate::config::job::FailurePolicy;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// Exit code recorded when a run outlives its `executionTimeout`.
pub const TIMEOUT_RETCODE: i32 = -100;
/// Exit code recorded when the command could not be started.
pub const START_FAILED_RETCODE: i32 = 127;

/// What launched a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// A scheduled fire (or `@reboot` at startup).
    Schedule,
    /// A retry after a failure.
    Retry,
    /// An operator's start through the API.
    Manual,
}

/// The captured side of a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StreamOutput {
    /// Retained text (head, marker, tail).
    pub text: String,
    /// Lines dropped by `saveLimit`.
    pub discarded: u64,
}

impl StreamOutput {
    /// True when the job produced output on this stream (retained or not).
    pub fn produced(&self) -> bool {
        !self.text.is_empty() || self.discarded > 0
    }
}

/// The failure reason, or `None` for a success, checked in the original's
/// order: always, nonzeroReturn, producesStdout, producesStderr. The
/// strings are what reports and the API show.
pub fn fail_reason(
    policy: &FailurePolicy,
    retcode: i32,
    stdout: &StreamOutput,
    stderr: &StreamOutput,
) -> Option<String> {
    if policy.always {
        return Some("failsWhen=always".into());
    }
    if policy.nonzero_return && retcode != 0 {
        return Some(format!("failsWhen=nonzeroReturn and retcode={retcode}"));
    }
    if policy.produces_stdout && stdout.produced() {
        return Some("failsWhen=producesStdout and stdout is not empty".into());
    }
    if policy.produces_stderr && stderr.produced() {
        return Some("failsWhen=producesStderr and stderr is not empty".into());
    }
    None
}

/// One finished run, as the history and reporters see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Daemon-unique run number.
    pub run_id: u64,
    /// The job's name.
    pub job: String,
    /// What launched it.
    pub trigger: Trigger,
    /// Retry number (0 for the first attempt).
    pub attempt: u32,
    /// When the process was started (or the start was attempted).
    pub started_at: DateTime<Utc>,
    /// When the run ended (exit, or the end of the cancel sequence).
    pub finished_at: DateTime<Utc>,
    /// The process id, if it started.
    pub pid: Option<u32>,
    /// Exit code: the process's code, minus the signal number when a signal
    /// ended it, -100 after an executionTimeout, 127 when it never started.
    pub retcode: i32,
    /// Why it failed, `None` on success.
    pub fail_reason: Option<String>,
    /// Captured stdout (empty when not captured).
    pub stdout: StreamOutput,
    /// Captured stderr (empty when not captured).
    pub stderr: StreamOutput,
    /// The run was cancelled to make way for a newer instance (Replace).
    pub replaced: bool,
    /// An operator cancelled it.
    pub cancelled: bool,
    /// Its executionTimeout expired.
    pub timed_out: bool,
    /// Why the command could not start, when it could not.
    pub start_error: Option<String>,
    /// Set on a scheduled slot that was deliberately not launched
    /// (`"paused"`); such a record has no process.
    pub skip_reason: Option<String>,
    /// A run a daemon crash (or the loss of its node) interrupted, found
    /// by crash reconciliation: its outcome is `unknown`, it has no exit
    /// code, start or duration, and `fail_reason` says what is known.
    pub interrupted: bool,
    /// The `verify` check's record, in the original's shape (`outcome`,
    /// `exit_code`, `fail_reason`, times, bounded output), when the job
    /// has a check; `{"outcome": "skipped", ...}` when the run failed
    /// before it.
    pub verification: Option<serde_json::Value>,
    /// The sampled CPU and memory of the run's processes, when the job
    /// has `monitorResources` on and a sample read something.
    pub resources: Option<super::monitor::ResourceUsage>,
    /// The run's caps and what the kernel did with them, for a job with
    /// `resourceLimits`.
    pub limits: Option<super::limits::LimitsRecord>,
}

impl RunRecord {
    /// A run of `job` that began at `started_at` and has no outcome yet:
    /// exit code 0, finished when it started, no output, no flags. Callers
    /// fill in what they know with struct update syntax.
    pub fn begun(
        run_id: u64,
        job: String,
        trigger: Trigger,
        attempt: u32,
        started_at: DateTime<Utc>,
    ) -> RunRecord {
        RunRecord {
            run_id,
            job,
            trigger,
            attempt,
            started_at,
            finished_at: started_at,
            pid: None,
            retcode: 0,
            fail_reason: None,
            stdout: StreamOutput::default(),
            stderr: StreamOutput::default(),
            replaced: false,
            cancelled: false,
            timed_out: false,
            start_error: None,
            skip_reason: None,
            interrupted: false,
            verification: None,
            resources: None,
            limits: None,
        }
    }
}

/// The verdict the API and metrics show for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Ran and passed `failsWhen`.
    Success,
    /// Ran (or failed to start) and failed `failsWhen`.
    Failure,
    /// Stopped by an operator or replaced by a newer instance.
    Cancelled,
    /// Not launched (the job was paused).
    Skipped,
    /// Interrupted by a daemon crash or the loss of its node: nobody saw
    /// it end (a row of crash reconciliation; a non-verdict).
    Unknown,
}

impl Outcome {
    /// The lowercase name used in JSON and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Cancelled => "cancelled",
            Outcome::Skipped => "skipped",
            Outcome::Unknown => "unknown",
        }
    }
}

impl RunRecord {
    /// True when the run counts as a failure.
    pub fn failed(&self) -> bool {
        self.fail_reason.is_some()
    }

    /// The run's verdict.
    pub fn outcome(&self) -> Outcome {
        if self.interrupted {
            Outcome::Unknown
        } else if self.skip_reason.is_some() {
            Outcome::Skipped
        } else if self.cancelled || self.replaced {
            Outcome::Cancelled
        } else if self.failed() {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    }

    /// Run time in seconds (none for a skipped slot or an interrupted
    /// run).
    pub fn duration_seconds(&self) -> Option<f64> {
        if self.skip_reason.is_some() || self.interrupted {
            return None;
        }
        let micros = (self.finished_at - self.started_at).num_microseconds()?;
        Some(micros.max(0) as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: FailurePolicy = FailurePolicy {
        produces_stdout: false,
        produces_stderr: true,
        nonzero_return: true,
        always: false,
    };

    fn out(text: &str, discarded: u64) -> StreamOutput {
        StreamOutput {
            text: text.into(),
            discarded,
        }
    }

    #[test]
    fn success_needs_zero_exit_and_quiet_stderr() {
        assert_eq!(fail_reason(&DEFAULT, 0, &out("x\n", 0), &out("", 0)), None);
    }

    #[test]
    fn reasons_in_order() {
        assert_eq!(
            fail_reason(&DEFAULT, 2, &out("", 0), &out("err\n", 0)).as_deref(),
            Some("failsWhen=nonzeroReturn and retcode=2")
        );
        assert_eq!(
            fail_reason(&DEFAULT, -100, &out("", 0), &out("", 0)).as_deref(),
            Some("failsWhen=nonzeroReturn and retcode=-100")
        );
        assert_eq!(
            fail_reason(&DEFAULT, 0, &out("", 0), &out("err\n", 0)).as_deref(),
            Some("failsWhen=producesStderr and stderr is not empty")
        );
        let always = FailurePolicy {
            always: true,
            ..DEFAULT
        };
        assert_eq!(
            fail_reason(&always, 0, &out("", 0), &out("", 0)).as_deref(),
            Some("failsWhen=always")
        );
    }

    #[test]
    fn discarded_lines_count_as_output() {
        let stdout_fails = FailurePolicy {
            produces_stdout: true,
            ..DEFAULT
        };
        assert_eq!(
            fail_reason(&stdout_fails, 0, &out("", 3), &out("", 0)).as_deref(),
            Some("failsWhen=producesStdout and stdout is not empty")
        );
    }

    #[test]
    fn nonzero_allowed_when_disabled() {
        let lenient = FailurePolicy {
            nonzero_return: false,
            produces_stderr: false,
            ..DEFAULT
        };
        assert_eq!(fail_reason(&lenient, 1, &out("", 0), &out("e", 0)), None);
    }
}
