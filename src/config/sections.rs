//! The whole-config sections a load collects (everything but jobs), each
//! with the source it came from. Kept apart from the loader so the rules
//! that read them ([`super::sections_check`]) and the loader that fills
//! them ([`super::load`]) both sit above this and not above each other.

use super::model::{
    ClusterConfig, DagConfig, LoggingConfig, McpConfig, NotifyConfig, PushConfig, StateConfig,
    WebConfig,
};

/// A section and the source it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The section.
    pub value: T,
    /// Where it was written.
    pub source: String,
}

/// The whole-config sections (everything but jobs), at most one of each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sections {
    /// HTTP control API.
    pub web: Option<Located<WebConfig>>,
    /// Logging (dictConfig shape).
    pub logging: Option<Located<LoggingConfig>>,
    /// Durable state.
    pub state: Option<Located<StateConfig>>,
    /// Clustering.
    pub cluster: Option<Located<ClusterConfig>>,
    /// MCP server.
    pub mcp: Option<Located<McpConfig>>,
    /// Event notifications.
    pub notify: Option<Located<NotifyConfig>>,
    /// Push relay.
    pub push: Option<Located<PushConfig>>,
    /// DAGs, from every source.
    pub dags: Vec<Located<DagConfig>>,
}
