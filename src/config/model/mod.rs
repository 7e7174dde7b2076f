//! The config schema as Rust types. Field names follow the YAML keys
//! (camelCase); unknown keys are rejected. These types are the single source
//! of the YAML schema and, later, of the `CronJobSet` CRD schema.

pub mod job;
pub mod report;
pub mod sections;
pub mod values;
pub mod web;

pub use job::{
    ClusterPolicy, ConcurrencyPolicy, ConcurrencyScope, FailsWhen, JobSpec, OnMissed, Priority,
    Statsd,
};
pub use report::{FailureHook, Report, ReportHook, Retry};
pub use sections::{
    ClusterConfig, DagConfig, LoggingConfig, McpConfig, NotifyConfig, PushConfig, StateConfig,
};
pub use values::{Command, EnvVar, Environment, Nullable, Schedule, ScheduleFields, SecretSource};
pub use web::WebConfig;

use crate::compat::lenient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One YAML config document as written (a file, an included file, or one
/// in-memory source).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigDocument {
    /// Defaults for the jobs of this document.
    #[serde(default)]
    pub defaults: Option<JobSpec>,
    /// Job definitions.
    #[serde(default)]
    pub jobs: Option<Vec<JobSpec>>,
    /// Other config files, relative to this one.
    #[serde(default, deserialize_with = "lenient::opt_string_list")]
    pub include: Option<Vec<String>>,
    /// The HTTP control API.
    #[serde(default)]
    pub web: Option<WebConfig>,
    /// Logging in Python dictConfig shape.
    #[serde(default)]
    pub logging: Option<LoggingConfig>,
    /// Durable state store (not supported yet).
    #[serde(default)]
    pub state: Option<StateConfig>,
    /// Clustering and leader election (not supported yet).
    #[serde(default)]
    pub cluster: Option<ClusterConfig>,
    /// Orchestration DAGs (not supported yet).
    #[serde(default)]
    pub dags: Option<Vec<DagConfig>>,
    /// MCP server (not supported yet when enabled).
    #[serde(default)]
    pub mcp: Option<McpConfig>,
    /// Daemon event notifications (not supported yet).
    #[serde(default)]
    pub notify: Option<NotifyConfig>,
    /// Push relay (not supported yet).
    #[serde(default)]
    pub push: Option<PushConfig>,
}
