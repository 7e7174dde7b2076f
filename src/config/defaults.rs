//! The built-in per-job defaults, the bottom layer under every job.

use super::model::{
    ClusterPolicy, ConcurrencyPolicy, ConcurrencyScope, FailsWhen, FailureHook, JobSpec, OnMissed,
    Priority, Retry,
};
use crate::platform;

/// Default prefix of echoed output lines.
pub const STREAM_PREFIX: &str = "[{job_name} {stream_name}] ";
/// Default number of captured lines kept per stream.
pub const SAVE_LIMIT: i64 = 4096;
/// Default longest line buffered, bytes.
pub const MAX_LINE_LENGTH: i64 = 16 * 1024 * 1024;
/// Default seconds between SIGTERM and SIGKILL.
pub const KILL_TIMEOUT: f64 = 30.0;

/// The built-in defaults as a job spec (every layer above overrides them).
pub fn builtin_job_defaults() -> JobSpec {
    JobSpec {
        shell: Some(platform::DEFAULT_SHELL.to_owned()),
        enabled: Some(true),
        capture_stdout: Some(false),
        capture_stderr: Some(true),
        save_limit: Some(SAVE_LIMIT),
        max_line_length: Some(MAX_LINE_LENGTH),
        stream_prefix: Some(STREAM_PREFIX.to_owned()),
        utc: Some(true),
        concurrency_policy: Some(ConcurrencyPolicy::Allow),
        concurrency_scope: Some(ConcurrencyScope::Node),
        cluster_policy: Some(ClusterPolicy::Leader),
        kill_timeout: Some(KILL_TIMEOUT),
        fails_when: Some(Box::new(FailsWhen {
            produces_stdout: Some(false),
            produces_stderr: Some(true),
            nonzero_return: Some(true),
            always: Some(false),
        })),
        on_failure: Some(Box::new(FailureHook {
            report: None,
            retry: Some(Retry {
                maximum_retries: 0,
                initial_delay: 1.0,
                maximum_delay: 300.0,
                backoff_multiplier: 2.0,
            }),
        })),
        on_missed: Some(OnMissed::Skip),
        catchup_jitter_seconds: Some(0),
        only_if_last_succeeded: Some(false),
        archive_output: Some(false),
        redact_archived_secrets: Some(true),
        priority: Some(Priority::Normal),
        ..JobSpec::default()
    }
}
