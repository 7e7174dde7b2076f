//! A job after merging and validation: every default applied, every value
//! checked, ready for the scheduler.

use super::error::Location;
use super::model::{
    ClusterPolicy, Command, ConcurrencyPolicy, ConcurrencyScope, JobSpec, OnMissed, Priority,
    Report, Retry, Statsd,
};
use std::path::PathBuf;

/// Which outcomes count as a failure, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailurePolicy {
    /// Captured stdout fails the run.
    pub produces_stdout: bool,
    /// Captured stderr fails the run.
    pub produces_stderr: bool,
    /// A non-zero exit code fails the run.
    pub nonzero_return: bool,
    /// Every run fails.
    pub always: bool,
}

/// The account a job switches to. It is the platform's type: the spawn
/// code that performs the switch owns its shape, and config only fills it.
pub use crate::platform::RunAs;

/// A job's schedule, resolved once at load: what was written, the parsed
/// expression, the clock it is read in and what the linter found. One
/// value, so the text, the expression and the clock always belong to the
/// same load.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSchedule {
    /// The text (object form already assembled), `@macro` or `@reboot`.
    pub text: String,
    /// The parsed schedule.
    pub parsed: crate::cronexpr::Schedule,
    /// `utc` as configured (false: local time); `timezone` wins over it.
    pub utc: bool,
    /// `timezone` as configured (an IANA zone).
    pub timezone: Option<String>,
    /// The clock the schedule is evaluated in, from `timezone` and `utc`.
    pub time_base: crate::cronexpr::TimeBase,
    /// Lint findings of the expression in that clock.
    pub findings: Vec<crate::cronexpr::LintFinding>,
}

/// One fully resolved job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobConfig {
    /// Unique name.
    pub name: String,
    /// What to run.
    pub command: Command,
    /// When it fires: the schedule, resolved once at load.
    pub schedule: JobSchedule,
    /// Shell for a string command.
    pub shell: String,
    /// Disabled jobs never run.
    pub enabled: bool,
    /// Capture stdout instead of passing it through.
    pub capture_stdout: bool,
    /// Capture stderr instead of passing it through.
    pub capture_stderr: bool,
    /// Captured lines kept per stream.
    pub save_limit: usize,
    /// Longest line buffered, bytes.
    pub max_line_length: usize,
    /// Prefix of echoed output lines.
    pub stream_prefix: String,
    /// Overlap policy.
    pub concurrency_policy: ConcurrencyPolicy,
    /// Overlap scope.
    pub concurrency_scope: ConcurrencyScope,
    /// Placement under leader election.
    pub cluster_policy: ClusterPolicy,
    /// Seconds before a run is cancelled with -100.
    pub execution_timeout: Option<f64>,
    /// Seconds between SIGTERM and SIGKILL.
    pub kill_timeout: f64,
    /// Failure classification.
    pub fails_when: FailurePolicy,
    /// Retry ladder.
    pub retry: Retry,
    /// Reporters on every failure.
    pub on_failure: std::sync::Arc<Report>,
    /// Reporters once retries are exhausted.
    pub on_permanent_failure: std::sync::Arc<Report>,
    /// Reporters on success.
    pub on_success: std::sync::Arc<Report>,
    /// Late-run thresholds (`sla`), when any is set.
    pub sla: Option<SlaThresholds>,
    /// Reporters fired once per SLA breach (`onLate`).
    pub on_late: std::sync::Arc<Report>,
    /// Catch-up policy: what a new leader does with the fires that fell
    /// while nobody led (inert without leader election).
    pub on_missed: OnMissed,
    /// Missed fires older than this many seconds are not caught up.
    pub starting_deadline_seconds: Option<i64>,
    /// Catch-up launches wait a per-job offset in `[0, N)` seconds, so a
    /// new leader does not start every owed job in the same second.
    pub catchup_jitter_seconds: i64,
    /// Skip a fire when the previous run failed.
    pub only_if_last_succeeded: bool,
    /// Keep each finished run's captured output in the durable store
    /// (inert without a `state` section).
    pub archive_output: bool,
    /// Scrub recognizable secrets from archived output first.
    pub redact_archived_secrets: bool,
    /// Environment for the job: env_file first, then `environment` entries.
    pub environment: Vec<(String, String)>,
    /// Run-scoped secrets, resolved afresh for each run and served over
    /// the job endpoint only (never in the environment or the logs).
    pub secrets: Vec<super::model::job::JobSecret>,
    /// Scopes beyond its own name and `global` the job may use through
    /// the job endpoint (`stateAllowedScopes`).
    pub state_allowed_scopes: Vec<String>,
    /// Start directory (absolute), when set.
    pub working_directory: Option<PathBuf>,
    /// Account switch, when `user`/`group` are set.
    pub run_as: Option<RunAs>,
    /// `user` as written (name or number), for the job-set id and the API.
    pub user: Option<String>,
    /// `group` as written (name or number).
    pub group: Option<String>,
    /// Process priority.
    pub priority: Priority,
    /// statsd sink.
    pub statsd: Option<Statsd>,
    /// The check run after each successful run, when set.
    pub verify: Option<Verify>,
    /// The resource pool that admits its runs, when set.
    pub pool: Option<JobPool>,
    /// CPU and memory sampling of each run, when `monitorResources` is on.
    pub monitor: Option<Monitor>,
    /// Per-run caps (`resourceLimits`), when any cap is set.
    pub resource_limits: Option<super::limits::ResourceLimits>,
    /// The merged spec this job was resolved from. Kept while a config is
    /// assembled (whole-config rules read it); the scheduler drops it when
    /// it installs the job, since nothing at run time needs it.
    pub spec: Option<Box<JobSpec>>,
    /// Where the job is written.
    pub origin: Location,
}

/// `verify` with its default applied: a command run after each run that
/// succeeded, whose failure fails the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Verify {
    /// The check's command (shell string or argv), run with the job's
    /// shell, environment, user and directory.
    pub command: Command,
    /// Seconds the check may take, start to end.
    pub timeout: f64,
}

/// The `sla` thresholds of a job, seconds; each `None` when that check is
/// off. At least one is set (a block with none is no block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaThresholds {
    /// `maxTimeSinceSuccessSeconds`: breach after this long without a
    /// successful finish.
    pub max_time_since_success: Option<u64>,
    /// `lateAfterSeconds`: breach when a due slot has not started within
    /// this long.
    pub late_after: Option<u64>,
    /// `maxRuntimeSeconds`: breach while a run has been running longer.
    pub max_runtime: Option<u64>,
}

/// The check's timeout when `verify.timeout` is not set.
pub const VERIFY_DEFAULT_TIMEOUT: f64 = 60.0;

/// A job's place in a resource pool: the pool's name and how its runs
/// queue there (`pool`, `poolSlots`, `queuePriority`, `queueTimeout`).
#[derive(Debug, Clone, PartialEq)]
pub struct JobPool {
    /// The pool (defined in the `pools` section).
    pub name: String,
    /// Capacity one run occupies.
    pub slots: u32,
    /// Higher integers are admitted first.
    pub priority: i64,
    /// Longest wait in the queue, seconds (finite, positive).
    pub timeout: f64,
}

/// `poolSlots` when not set.
pub const POOL_SLOTS_DEFAULT: i64 = 1;
/// `queuePriority` when not set.
pub const QUEUE_PRIORITY_DEFAULT: i64 = 0;
/// `queueTimeout` when not set, seconds.
pub const QUEUE_TIMEOUT_DEFAULT: f64 = 3600.0;
/// `monitorResources` turned on, with its defaults applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Monitor {
    /// Seconds between samples of the run's processes (at least 0.1).
    pub interval: f64,
    /// Chart points kept per run (0: the summary numbers only).
    pub history: usize,
}

/// `monitorResources.interval` when not set: one sample a second.
pub const MONITOR_DEFAULT_INTERVAL: f64 = 1.0;
/// `monitorResources.history` when not set: 240 chart points a run.
pub const MONITOR_DEFAULT_HISTORY: usize = 240;
