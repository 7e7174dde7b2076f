//! The whole-config sections a load collects (everything but jobs), each
//! with the source it came from. Kept apart from the loader so the rules
//! that read them ([`super::sections_check`]) and the loader that fills
//! them ([`super::load`]) both sit above this and not above each other.

pub use super::model::pools::PoolConf;
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
    /// Resource pools from every source, checked, in the order met (a
    /// name is defined once across the whole config).
    pub pools: Vec<Located<(String, PoolConf)>>,
}

impl Sections {
    /// The pools in force, in the order written.
    pub fn pool_table(&self) -> PoolTable {
        PoolTable(
            self.pools
                .iter()
                .map(|p| (p.value.0.clone(), p.value.1))
                .collect(),
        )
    }
}

/// The configured pools by name, in the order written (what the
/// scheduler and the pool store work against; empty without a `pools`
/// section).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolTable(pub Vec<(String, PoolConf)>);

impl PoolTable {
    /// The pool named `name`.
    pub fn get(&self, name: &str) -> Option<PoolConf> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, c)| *c)
    }

    /// No pool is configured.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The pool names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }
}
