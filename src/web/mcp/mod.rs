//! The Model Context Protocol server: `POST /mcp`, a stateless Streamable
//! HTTP endpoint speaking JSON-RPC 2.0 on the web listeners, behind the
//! same tokens as the REST routes. It serves both eras of the protocol:
//! the stateless revision `2026-07-28` (each request names its revision
//! in `_meta`; `server/discover`), and `2025-11-25`, `2025-06-18` and
//! `2025-03-26`, which a client agrees with `initialize`.
//!
//! The layers, each testable on its own:
//! - [`http`]: the transport (Origin allow-list, body cap, Accept,
//!   batching refused, the `MCP-Protocol-Version` header, CORS);
//! - [`rpc`]: JSON-RPC framing and method dispatch (`initialize`,
//!   `ping`, `tools/*`, `resources/*`, `prompts/*`,
//!   `completion/complete`, notifications);
//! - [`era`]: the rules of the stateless revision (its `_meta`, the
//!   mirrored headers, the methods each era has, the result fields);
//! - [`catalog`]: which tools exist, their argument schemas and
//!   annotations, and which ones the config and the caller may see;
//! - [`tools`]: what each tool does, over a [`Backend`];
//! - [`context`]: the resources and prompts.
//!
//! The data comes from a [`Backend`]: the REST routes' own answers
//! (implemented in `web::routes::mcp`), so a tool shows exactly what the
//! route it mirrors serves.

mod catalog;
mod context;
mod era;
mod http;
mod rpc;
mod tools;

#[cfg(test)]
mod tests;

use super::auth::Grant;
use crate::config::mcp::McpSettings;
use crate::metrics::prometheus::Sample;
use serde_json::Value;

pub use http::Inbound;

/// The revision `initialize` offers a client that asks for one this
/// server does not speak (and the newest it does).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Every revision `initialize` agrees to.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The stateless revisions, served to a request that names one in its
/// `_meta` (no `initialize`).
pub const MODERN_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The MCP server of one web configuration: its settings, built when the
/// listeners start (a reload that changes `mcp` rebuilds it).
#[derive(Debug)]
pub struct Server {
    settings: McpSettings,
}

impl Server {
    /// The server for `settings`.
    pub fn new(settings: McpSettings) -> Server {
        Server { settings }
    }

    /// The largest request body taken (`mcp.maxBodyBytes`).
    pub fn max_body_bytes(&self) -> usize {
        self.settings.max_body_bytes
    }
}

/// Who sent a request, as the web auth decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's label; `None` when the API takes no token (every
    /// scope, and actions are attributed to `mcp`).
    pub label: Option<String>,
    /// What the caller may do.
    pub grant: Grant,
}

impl Caller {
    /// A caller of an API without tokens: every scope.
    pub fn open() -> Caller {
        Caller {
            label: None,
            grant: Grant::ALL,
        }
    }
}

/// A request a [`Backend`] refused: the HTTP status the REST route
/// answers and its `error` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The REST route's status (404 for an unknown job, 409, 503, ...).
    pub status: u16,
    /// The REST route's `error` text.
    pub message: String,
}

impl Refusal {
    /// A refusal with `status` and `message`.
    pub fn new(status: u16, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }
}

/// What a backend answers.
pub type Answer<T = Value> = Result<T, Refusal>;

/// The `state` argument of `cron_list_jobs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// A job with a running instance.
    Running,
    /// `enabled: false`.
    Disabled,
    /// Enabled and not running.
    Scheduled,
}

/// Which jobs `cron_list_jobs` asks for, and which page of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobQuery {
    /// A case-insensitive substring of the name (lower-cased here).
    pub filter: Option<String>,
    /// Only jobs in this state.
    pub state: Option<JobState>,
    /// Matching jobs skipped.
    pub offset: usize,
    /// Matching jobs returned at most.
    pub limit: usize,
}

impl JobQuery {
    /// Whether a job with `name`, `enabled` and `running` matches.
    pub fn selects(&self, name: &str, enabled: bool, running: bool) -> bool {
        if let Some(filter) = &self.filter {
            if !name.to_lowercase().contains(filter.as_str()) {
                return false;
            }
        }
        match self.state {
            None => true,
            Some(JobState::Running) => running,
            Some(JobState::Disabled) => !enabled,
            Some(JobState::Scheduled) => enabled && !running,
        }
    }
}

/// Where the tools get their data: the REST routes' answers, as JSON.
/// A refusal carries the route's status and text.
pub(crate) trait Backend {
    /// `GET /status` (JSON form): one row per job.
    async fn status_rows(&self) -> Answer;
    /// The `GET /jobs` entries of the jobs `query` selects, in config
    /// order, from `query.offset` on, `query.limit` at most; and how many
    /// it selects in all.
    async fn jobs(&self, query: &JobQuery) -> Answer<(usize, Vec<Value>)>;
    /// Every job's name, in config order.
    async fn job_names(&self) -> Answer<Vec<String>>;
    /// `GET /jobs/{name}`.
    async fn job(&self, name: &str) -> Answer;
    /// `GET /jobs/{name}/runs` (every retained run).
    async fn runs(&self, name: &str) -> Answer;
    /// `GET /jobs/{name}/trends`.
    async fn trends(&self, name: &str) -> Answer;
    /// `GET /jobs/{name}/resources?limit=<runs>`.
    async fn resources(&self, name: &str, runs: usize) -> Answer;
    /// `GET /cluster`.
    async fn cluster(&self) -> Answer;
    /// `GET /fleet`.
    async fn fleet(&self) -> Answer;
    /// `GET /node`, with `GET /node/history` as `history` when asked.
    async fn node(&self, history: bool) -> Answer;
    /// The samples of `GET /metrics` (the text exposition) whose name is
    /// `wanted`: the first `limit`, in order, and how many there are.
    async fn metric_samples(
        &self,
        wanted: &(dyn Fn(&str) -> bool + Sync),
        limit: usize,
    ) -> Answer<(Vec<Sample>, usize)>;
    /// The job-set id and the number of jobs.
    async fn job_set(&self) -> Answer<(String, usize)>;
    /// The retained output lines (stream, text) a log viewer of `name`
    /// follows, and whether the job runs now.
    async fn log_lines(&self, name: &str) -> Answer<(bool, Vec<(String, String)>)>;
    /// `GET /schedule/why?job=<name>&at=<at>`.
    async fn why(&self, name: &str, at: &str) -> Answer;
    /// `GET /schedule/pressure?hours=<hours>&tz=<tz>`.
    async fn pressure(&self, hours: i64, tz: Option<&str>) -> Answer;
    /// `GET /schedule/duplicates`.
    async fn duplicates(&self) -> Answer;
    /// `GET /schedule/suggest?period=<period>&tz=<tz>`.
    async fn suggest(&self, period: &str, tz: Option<&str>) -> Answer;
    /// `GET /pools`.
    async fn pools(&self) -> Answer;
    /// `GET /state`.
    async fn state_overview(&self) -> Answer;
    /// `GET /state/documents?ns=<ns>`.
    async fn state_documents(&self, ns: &str) -> Answer;
    /// `GET /state/records?stream=<stream>&limit=<limit>`.
    async fn state_records(&self, stream: &str, limit: usize) -> Answer;
    /// `POST /jobs/{name}/start`.
    async fn start(&self, name: &str) -> Answer;
    /// `POST /jobs/{name}/cancel`.
    async fn cancel(&self, name: &str) -> Answer;
    /// `POST /jobs/{name}/pause`, through the `mcp` channel.
    async fn pause(&self, name: &str, seconds: Option<i64>, note: &str, by: &str) -> Answer;
    /// `POST /jobs/{name}/resume`.
    async fn resume(&self, name: &str, by: &str) -> Answer;
    /// `POST /pools/{pool}/queue/{id}/cancel`.
    async fn pool_cancel(&self, pool: &str, id: &str) -> Answer;
}
