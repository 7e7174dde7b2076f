//! The per-job schema. One type serves a job entry, a `defaults:` block and
//! (later) a `CronJobSet` job: every key is optional here, and the loader
//! checks which keys each place requires or forbids.

use super::report::{FailureHook, ReportHook};
use super::values::{bool_or_map, Command, Environment, Nullable, Schedule};
use crate::compat::lenient;
use crate::config::merge::{merge_as_leaf, merge_fields};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to do when a launch finds the job still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConcurrencyPolicy {
    /// Run the new instance alongside the old.
    Allow,
    /// Skip the new instance.
    Forbid,
    /// Cancel the running instance, then start the new one.
    Replace,
}

/// How far the concurrency policy reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConcurrencyScope {
    /// This daemon's own instances only.
    Node,
    /// Every node sharing the state store.
    Cluster,
}

/// Where a job runs under leader election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ClusterPolicy {
    /// Only the quorum-backed leader.
    Leader,
    /// The lowest reachable agreeing node.
    PreferLeader,
    /// Every node.
    EveryNode,
}

/// Catch-up of occurrences missed while the daemon was down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum OnMissed {
    /// Missed occurrences are not run.
    #[serde(rename = "skip")]
    Skip,
    /// One run at boot covers all missed occurrences.
    #[serde(rename = "run-once")]
    RunOnce,
    /// Every missed occurrence is replayed.
    #[serde(rename = "run-all")]
    RunAll,
}

/// Scheduling priority of a job's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Priority {
    /// nice 19.
    Idle,
    /// nice 10.
    BelowNormal,
    /// The daemon's own nice, never changed.
    Normal,
    /// nice -5 (needs CAP_SYS_NICE).
    AboveNormal,
    /// nice -10 (needs CAP_SYS_NICE).
    High,
}

impl Priority {
    /// The absolute nice value the job's process group is set to, or `None`
    /// for `normal`, which leaves the inherited nice alone.
    pub fn nice(self) -> Option<i32> {
        match self {
            Priority::Idle => Some(19),
            Priority::BelowNormal => Some(10),
            Priority::Normal => None,
            Priority::AboveNormal => Some(-5),
            Priority::High => Some(-10),
        }
    }
}

merge_as_leaf!(
    ConcurrencyPolicy,
    ConcurrencyScope,
    ClusterPolicy,
    OnMissed,
    Priority
);

/// Which outcomes count as a failure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailsWhen {
    /// Fail when anything was captured on stdout (the key is required).
    #[serde(deserialize_with = "lenient::opt_bool")]
    pub produces_stdout: Option<bool>,
    /// Fail when anything was captured on stderr.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub produces_stderr: Option<bool>,
    /// Fail on a non-zero exit code.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub nonzero_return: Option<bool>,
    /// Fail on every exit.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub always: Option<bool>,
}
merge_fields!(FailsWhen {
    produces_stdout,
    produces_stderr,
    nonzero_return,
    always
});

/// Per-job statsd sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Statsd {
    /// Metric name prefix.
    #[serde(deserialize_with = "lenient::string")]
    pub prefix: String,
    /// statsd host.
    #[serde(deserialize_with = "lenient::string")]
    pub host: String,
    /// statsd UDP port.
    #[serde(deserialize_with = "lenient::int")]
    pub port: i64,
}
merge_as_leaf!(Statsd);

/// A check run after each successful run (`verify`): its failure fails
/// the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerifySpec {
    /// Shell string or argv list, run like the job's own command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Command>,
    /// Seconds the check may take, start to end (default 60).
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub timeout: Option<f64>,
}
merge_fields!(VerifySpec { command, timeout });

/// Per-run CPU, memory and process caps (`resourceLimits`), as written:
/// every cap is text (a number, `512Mi`, or `max` for none), read by
/// `config::limits`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceLimitsSpec {
    /// CPUs, such as `0.5` or `2` (`max`: uncapped).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    #[schemars(schema_with = "cap_schema")]
    pub cpu: Option<String>,
    /// Bytes, or a number with a K, M, G or T suffix (powers of 1024).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    #[schemars(schema_with = "cap_schema")]
    pub memory: Option<String>,
    /// Processes and threads the run may have at once.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    #[schemars(schema_with = "cap_schema")]
    pub processes: Option<String>,
    /// Refuse the run when a cap cannot be enforced (default false).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub required: Option<bool>,
}
/// A cap is text or a bare number (`cpu: 0.5` reads as `cpu: "0.5"`), so
/// a CronJobSet may write either.
fn cap_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "anyOf": [{"type": "string"}, {"type": "number"}],
        "nullable": true,
    })
}

merge_fields!(ResourceLimitsSpec {
    cpu,
    memory,
    processes,
    required
});

/// Late-run thresholds watched by the SLA monitor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sla {
    /// Breach after this many seconds without a success.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_time_since_success_seconds: Option<i64>,
    /// Breach when a due slot has not started within this many seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub late_after_seconds: Option<i64>,
    /// Breach while a run exceeds this runtime.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_runtime_seconds: Option<i64>,
}
merge_fields!(Sla {
    max_time_since_success_seconds,
    late_after_seconds,
    max_runtime_seconds
});

impl Sla {
    /// True when any threshold is set.
    pub fn any_set(&self) -> bool {
        self.max_time_since_success_seconds.is_some()
            || self.late_after_seconds.is_some()
            || self.max_runtime_seconds.is_some()
    }
}

/// Per-run CPU and memory sampling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MonitorResources {
    /// Sample this job's runs (default true in the map form).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Seconds between samples (default 1.0, at least 0.1).
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub interval: Option<f64>,
    /// Chart points kept per run (default 240, 0..=2000).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub history: Option<i64>,
}
merge_fields!(MonitorResources {
    enabled,
    interval,
    history
});

impl From<bool> for MonitorResources {
    fn from(enabled: bool) -> Self {
        MonitorResources {
            enabled: Some(enabled),
            ..Default::default()
        }
    }
}

/// One run-scoped secret staged over the job state endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSecret {
    /// Name the job asks for.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub name: Option<String>,
    /// Inline value.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub value: Option<String>,
    /// File holding the value.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub from_file: Option<String>,
    /// Daemon environment variable holding the value.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub from_env_var: Option<String>,
}

/// The list of run-scoped secrets; layers merge by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct JobSecrets(pub Vec<JobSecret>);

impl crate::config::merge::Merge for JobSecrets {
    /// Merges by name like `environment`; an upper entry replaces the whole
    /// lower entry (its source included).
    fn merge_from(&mut self, lower: &Self) {
        let mut merged: Vec<JobSecret> = Vec::with_capacity(lower.0.len() + self.0.len());
        for secret in lower.0.iter().chain(self.0.iter()) {
            match merged.iter_mut().find(|m| m.name == secret.name) {
                Some(slot) => *slot = secret.clone(),
                None => merged.push(secret.clone()),
            }
        }
        self.0 = merged;
    }
}

/// One job, a `defaults:` block, or a CronJobSet job, exactly as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSpec {
    /// Unique job name (jobs only).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub name: Option<String>,
    /// Shell string or argv list (jobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Command>,
    /// Crontab text, `@macro`, `@reboot` or object form (jobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    /// Shell for a string command (default `/bin/sh`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub shell: Option<String>,
    /// A disabled job is validated but never runs.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Capture stdout (default false: passes through).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub capture_stdout: Option<bool>,
    /// Capture stderr (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub capture_stderr: Option<bool>,
    /// Captured lines kept per stream, half head and half tail (default 4096).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub save_limit: Option<i64>,
    /// Longest line buffered, bytes (default 16 MiB).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_line_length: Option<i64>,
    /// Prefix of echoed output lines (default `[{job_name} {stream_name}] `).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub stream_prefix: Option<String>,
    /// Interpret the schedule in UTC (default true) or local time.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub utc: Option<bool>,
    /// IANA zone for the schedule; overrides `utc`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub timezone: Option<String>,
    /// Overlap policy (default Allow).
    #[serde(default)]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// Overlap scope (default node).
    #[serde(default)]
    pub concurrency_scope: Option<ConcurrencyScope>,
    /// Placement under leader election (default Leader).
    #[serde(default)]
    pub cluster_policy: Option<ClusterPolicy>,
    /// Seconds before a run is cancelled with code -100.
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub execution_timeout: Option<f64>,
    /// Seconds between SIGTERM and SIGKILL (default 30).
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub kill_timeout: Option<f64>,
    /// Failure classification.
    #[serde(default)]
    pub fails_when: Option<Box<FailsWhen>>,
    /// Reporters and retries on failure.
    #[serde(default)]
    pub on_failure: Option<Box<FailureHook>>,
    /// Reporters once retries are exhausted.
    #[serde(default)]
    pub on_permanent_failure: Option<Box<ReportHook>>,
    /// Reporters on success.
    #[serde(default)]
    pub on_success: Option<Box<ReportHook>>,
    /// Reporters on an SLA breach.
    #[serde(default)]
    pub on_late: Option<Box<ReportHook>>,
    /// SLA thresholds.
    #[serde(default)]
    pub sla: Option<Box<Sla>>,
    /// Catch-up policy after downtime (default skip).
    #[serde(default)]
    pub on_missed: Option<OnMissed>,
    /// Catch-up window, seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub starting_deadline_seconds: Option<i64>,
    /// Spread of catch-up launches, seconds (default 0).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub catchup_jitter_seconds: Option<i64>,
    /// Skip a fire when the last finished run failed.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub only_if_last_succeeded: Option<bool>,
    /// Persist captured output to the state store.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub archive_output: Option<bool>,
    /// Scrub secrets from archived output (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub redact_archived_secrets: Option<bool>,
    /// Environment variables for the job, merged by key.
    #[serde(default)]
    pub environment: Option<Environment>,
    /// A `KEY=VALUE` file read at load.
    #[serde(default, rename = "env_file", deserialize_with = "lenient::opt_string")]
    pub env_file: Option<String>,
    /// Directory the job starts in; `null` undoes a default.
    #[serde(default, skip_serializing_if = "is_unset")]
    pub working_directory: Nullable<String>,
    /// Run-scoped secrets (need the state section).
    #[serde(default)]
    pub secrets: Option<Box<JobSecrets>>,
    /// Extra state scopes this job may name.
    #[serde(default, deserialize_with = "lenient::opt_string_list")]
    pub state_allowed_scopes: Option<Vec<String>>,
    /// User name or uid to run as (daemon must be root).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub user: Option<String>,
    /// Group name or gid to run as (daemon must be root).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub group: Option<String>,
    /// Process priority (default normal).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// statsd sink for this job's metrics.
    #[serde(default)]
    pub statsd: Option<Statsd>,
    /// CPU/RSS sampling: a bool or a tuning map.
    #[serde(default, deserialize_with = "bool_or_map")]
    pub monitor_resources: Option<MonitorResources>,
    /// A check run after each successful run.
    #[serde(default)]
    pub verify: Option<VerifySpec>,
    /// Per-run CPU, memory and process caps.
    #[serde(default)]
    pub resource_limits: Option<ResourceLimitsSpec>,
    /// The resource pool that admits this job's runs (empty: none).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub pool: Option<String>,
    /// Pool capacity one run occupies (default 1).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub pool_slots: Option<i64>,
    /// Higher runs first in the pool's queue (default 0).
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub queue_priority: Option<i64>,
    /// Longest wait in the pool's queue, seconds (default 3600).
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub queue_timeout: Option<f64>,
}

fn is_unset(v: &Nullable<String>) -> bool {
    matches!(v, Nullable::Unset)
}

merge_fields!(JobSpec {
    name,
    command,
    schedule,
    shell,
    enabled,
    capture_stdout,
    capture_stderr,
    save_limit,
    max_line_length,
    stream_prefix,
    utc,
    timezone,
    concurrency_policy,
    concurrency_scope,
    cluster_policy,
    execution_timeout,
    kill_timeout,
    fails_when,
    on_failure,
    on_permanent_failure,
    on_success,
    on_late,
    sla,
    on_missed,
    starting_deadline_seconds,
    catchup_jitter_seconds,
    only_if_last_succeeded,
    archive_output,
    redact_archived_secrets,
    environment,
    env_file,
    working_directory,
    secrets,
    state_allowed_scopes,
    user,
    group,
    priority,
    statsd,
    monitor_resources,
    verify,
    resource_limits,
    pool,
    pool_slots,
    queue_priority,
    queue_timeout
});
