//! The top-level sections besides `jobs`, `defaults`, `include` and `web`:
//! `state`, `cluster`, `dags`, `mcp`, `notify`, `push`, and the
//! dictConfig-shaped `logging`. Each is parsed against its full schema.
//! `cluster` and `logging` are acted on in full; `state` serves cluster
//! slots (the durable store is not built yet); the loader refuses a
//! config that turns on a feature of the others that is not built ("not
//! supported yet") rather than ignoring it.

use super::report::Report;
use super::values::{Command, SecretSource};
use crate::compat::lenient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a store's locks can be trusted across hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Probe the mount.
    Auto,
    /// One host only.
    SingleNode,
    /// A shared network mount.
    Shared,
}

/// What stateful features do while the store is unreachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OnStoreUnavailable {
    /// Fall back to in-memory state.
    Degrade,
    /// Prefer not running over running wrong.
    FailClosed,
}

/// TLS material of the job-facing state endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobApiTls {
    /// Certificate chain.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub cert: Option<String>,
    /// Private key.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub key: Option<String>,
    /// Trust anchor handed to jobs.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub ca: Option<String>,
}

/// `state.jobApi`: the loopback endpoint jobs use for state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobApi {
    /// Serve the endpoint (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Bind override.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub listen: Option<String>,
    /// Largest value, bytes.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_value_bytes: Option<i64>,
    /// Largest artifact, bytes.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_artifact_bytes: Option<i64>,
    /// Job lock TTL, seconds.
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub lock_ttl_seconds: Option<f64>,
    /// Allow a non-loopback bind.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub allow_non_loopback_bind: Option<bool>,
    /// TLS for an `https://` bind.
    #[serde(default)]
    pub tls: Option<JobApiTls>,
}

/// The durable state store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StateConfig {
    /// Store directory. Required, except that a `cluster` section with a
    /// lease backend may stand in as the slot store (then it may be left
    /// out; the load checks this, with the original's message).
    #[serde(default, deserialize_with = "lenient::string")]
    pub path: String,
    /// Lock trust across hosts.
    #[serde(default)]
    pub topology: Option<Topology>,
    /// Namespace inside the store.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub deployment_id: Option<String>,
    /// Finished runs kept per job.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_runs_per_job: Option<i64>,
    /// Behavior while the store is down.
    #[serde(default)]
    pub on_store_unavailable: Option<OnStoreUnavailable>,
    /// Age before unreferenced state is collected, seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub gc_grace_seconds: Option<i64>,
    /// Store operations per second (0 = unlimited).
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub max_ops_per_second: Option<f64>,
    /// Cluster slot lease TTL, seconds.
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub slot_ttl_seconds: Option<f64>,
    /// The job-facing endpoint.
    #[serde(default)]
    pub job_api: Option<JobApi>,
}

/// Leadership backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterBackend {
    /// Peer-to-peer mTLS attestation.
    Gossip,
    /// A coordination.k8s.io Lease.
    Kubernetes,
    /// An etcd lease.
    Etcd,
    /// A lease file on a shared mount.
    Filesystem,
}

/// How leader-gated jobs spread across nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// One leader runs them all.
    SingleLeader,
    /// Jobs are spread over the quorate nodes.
    Spread,
}

impl Distribution {
    /// The config's spelling, which the API, the `/peer` payload and the
    /// metrics show too.
    pub fn as_str(self) -> &'static str {
        match self {
            Distribution::SingleLeader => "single-leader",
            Distribution::Spread => "spread",
        }
    }
}

/// Peer TLS files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeerTls {
    /// Cluster CA.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub ca: Option<String>,
    /// Node certificate.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub cert: Option<String>,
    /// Node key.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub key: Option<String>,
}

/// One gossip peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Peer {
    /// `host:port`.
    #[serde(deserialize_with = "lenient::string")]
    pub host: String,
}

/// `cluster.kubernetes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubernetesLease {
    /// Lease name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub lease_name: Option<String>,
    /// Lease namespace.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub lease_namespace: Option<String>,
    /// Lease validity, seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub lease_duration_seconds: Option<i64>,
    /// Per-round deadline, seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub renew_deadline_seconds: Option<i64>,
    /// Seconds between rounds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub retry_period_seconds: Option<i64>,
    /// Holder identity.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub identity: Option<String>,
    /// kubeconfig path.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub kubeconfig: Option<String>,
    /// API server override.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub api_server: Option<String>,
    /// Transport selection (auto/http/library).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub client_library: Option<String>,
}

/// `cluster.etcd`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EtcdLease {
    /// Client URLs.
    #[serde(default, deserialize_with = "lenient::opt_string_list")]
    pub endpoints: Option<Vec<String>>,
    /// Contended key.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub election_name: Option<String>,
    /// Lease TTL, seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub ttl: Option<i64>,
    /// Auth user.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub username: Option<String>,
    /// Auth password source.
    #[serde(default)]
    pub password: Option<SecretSource>,
    /// Client TLS.
    #[serde(default)]
    pub tls: Option<PeerTls>,
}

/// `cluster.filesystem`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesystemLease {
    /// Lease directory.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub path: Option<String>,
    /// Lease name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub election_name: Option<String>,
    /// Lease TTL, seconds.
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub ttl: Option<f64>,
    /// Namespace inside the store.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub deployment_id: Option<String>,
    /// Lock trust across hosts.
    #[serde(default)]
    pub topology: Option<Topology>,
}

/// `cluster.observability`: a gossip mesh for the fleet view only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observability {
    /// Share node CPU/memory.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub share_node_stats: Option<bool>,
    /// Overlay listen address.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub listen: Option<String>,
    /// Overlay TLS.
    #[serde(default)]
    pub tls: Option<PeerTls>,
    /// Overlay peers.
    #[serde(default)]
    pub peers: Option<Vec<Peer>>,
    /// Overlay node name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub node_name: Option<String>,
    /// Overlay round interval.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub interval: Option<i64>,
    /// Overlay drift debounce.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub drift_after: Option<i64>,
    /// Overlay request timeout.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub connect_timeout: Option<i64>,
}

/// Peer attestation and leader election.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterConfig {
    /// Leadership backend (default gossip).
    #[serde(default)]
    pub backend: Option<ClusterBackend>,
    /// Gossip listen address.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub listen: Option<String>,
    /// Gossip TLS.
    #[serde(default)]
    pub tls: Option<PeerTls>,
    /// Gossip peers.
    #[serde(default)]
    pub peers: Option<Vec<Peer>>,
    /// This node's name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub node_name: Option<String>,
    /// Seconds between attestation rounds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub interval: Option<i64>,
    /// Mismatched rounds before a peer drifts.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub drift_after: Option<i64>,
    /// Request timeout, seconds.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub connect_timeout: Option<i64>,
    /// Gate scheduled jobs on leadership.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub elect_leader: Option<bool>,
    /// Spread of leader-gated jobs.
    #[serde(default)]
    pub distribution: Option<Distribution>,
    /// Kubernetes Lease settings.
    #[serde(default)]
    pub kubernetes: Option<KubernetesLease>,
    /// etcd settings.
    #[serde(default)]
    pub etcd: Option<EtcdLease>,
    /// Shared-mount lease settings.
    #[serde(default)]
    pub filesystem: Option<FilesystemLease>,
    /// Fleet-view gossip overlay.
    #[serde(default)]
    pub observability: Option<Observability>,
}

/// One DAG task node. The launch fields shared with jobs are kept as
/// written; DAGs are validated in depth when they are implemented.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DagTask {
    /// Task id, unique in the DAG.
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
    /// Command (not for approval nodes).
    #[serde(default)]
    pub command: Option<Command>,
    /// Upstream task ids.
    #[serde(default, deserialize_with = "lenient::opt_string_list")]
    pub depends_on: Option<Vec<String>>,
    /// Every other task key, as written.
    #[serde(flatten)]
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub rest: std::collections::BTreeMap<String, serde_yaml::Value>,
}

/// One orchestration DAG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DagConfig {
    /// DAG name.
    #[serde(deserialize_with = "lenient::string")]
    pub name: String,
    /// Task nodes.
    pub tasks: Vec<DagTask>,
    /// Every other DAG key, as written.
    #[serde(flatten)]
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub rest: std::collections::BTreeMap<String, serde_yaml::Value>,
}

/// Tool groups of the MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpToolset {
    /// Read-only views.
    Observe,
    /// Mutating job control.
    Act,
    /// DAG tools.
    Dags,
    /// State inspector.
    State,
}

/// The Model Context Protocol server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpConfig {
    /// Serve `POST /mcp` (default false).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub enabled: Option<bool>,
    /// Strip mutating tools (default true).
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub read_only: Option<bool>,
    /// Exposed tool groups.
    #[serde(default)]
    pub toolsets: Option<Vec<McpToolset>>,
    /// Browser origins allowed on `/mcp`.
    #[serde(default, deserialize_with = "lenient::opt_string_list")]
    pub allowed_origins: Option<Vec<String>>,
    /// Serve on a routable listener without a token.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub allow_unauthenticated: Option<bool>,
    /// Expose MCP resources.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub resources: Option<bool>,
    /// Expose MCP prompts.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub prompts: Option<bool>,
    /// Server instructions text.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub instructions: Option<String>,
    /// Ceiling on list tool limits.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_rows: Option<i64>,
    /// Cap on one request body.
    #[serde(default, deserialize_with = "lenient::opt_int")]
    pub max_body_bytes: Option<i64>,
}

/// Daemon events that can be notified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    /// A DAG run failed.
    DagFailure,
    /// An approval gate is waiting.
    ApprovalWaiting,
    /// Leadership changed.
    LeaderChange,
    /// Quorum was lost.
    QuorumLoss,
}

/// Daemon event notifications.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotifyConfig {
    /// Events delivered (default all).
    #[serde(default)]
    pub events: Option<Vec<NotifyEvent>>,
    /// Reporters.
    #[serde(default)]
    pub report: Option<Report>,
}

/// Relay endpoint of the push reporter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushRelay {
    /// Relay URL (required).
    #[serde(deserialize_with = "lenient::string")]
    pub url: String,
    /// Request timeout, seconds.
    #[serde(default, deserialize_with = "lenient::opt_float")]
    pub timeout: Option<f64>,
}

/// The daemon-global push section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushConfig {
    /// Relay endpoint.
    pub relay: PushRelay,
    /// Paired-device registry file.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub devices_file: Option<String>,
    /// Serve pairing routes without a token.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub allow_unauthenticated: Option<bool>,
}

/// The `logging:` section in Python dictConfig shape. The logging module
/// owns it (it is the dictConfig schema it interprets); the config model
/// names it here so the document reads as one schema.
pub use crate::logging::LoggingConfig;
