//! The config schema as Rust types. Field names follow the YAML keys
//! (camelCase); unknown keys are rejected. These types are the single source
//! of the YAML schema and, later, of the `CronJobSet` CRD schema.

pub mod job;
pub mod pools;
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
    /// Job definitions. Boxed: a spec is about 700 bytes, and a list of
    /// 10,000 of them inline grew by doubling to 11.5 MB (plus the copy of
    /// its previous buffer) before a single job was resolved; boxed, the
    /// list is 80 kB and each box is kept as the resolved job's `spec`.
    #[serde(default)]
    #[allow(
        clippy::vec_box,
        reason = "each box moves into its JobConfig; inline specs made the peak"
    )]
    pub jobs: Option<Vec<Box<JobSpec>>>,
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
    /// Named resource pools (need the state section).
    #[serde(default)]
    pub pools: Option<pools::PoolsSection>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema derives stay usable (a CRD will be generated from them):
    /// field names as written in YAML, unknown keys refused, and the
    /// hand-written schemas (nullable values, report extras) in place.
    #[test]
    fn the_document_schema_names_the_yaml_keys() {
        let schema =
            serde_json::to_value(schemars::schema_for!(ConfigDocument)).expect("a schema is JSON");
        let properties = &schema["properties"];
        for key in ["defaults", "jobs", "include", "web", "logging"] {
            assert!(properties.get(key).is_some(), "no {key} in {properties}");
        }
        assert_eq!(schema["additionalProperties"], serde_json::json!(false));
        let defs = schema["$defs"].as_object().expect("definitions");
        let job = &defs["JobSpec"]["properties"];
        assert!(job.get("killTimeout").is_some(), "{job}");
        assert!(job.get("kill_timeout").is_none(), "{job}");
        assert_eq!(
            defs["ExtraValue"]["type"],
            serde_json::json!(["string", "integer", "number", "boolean", "null"])
        );
    }
}
