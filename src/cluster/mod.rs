//! Leadership backends behind the scheduler's leader gate: a Kubernetes
//! Lease ([`kubernetes`]), an etcd lease and a lease file in a shared
//! directory. Each backend implements [`Backend`] (one bounded election
//! round, and a release); [`driver`] runs the rounds, keeps the state the
//! gate, `GET /cluster` and the metrics read, logs the transitions, and
//! releases the lease when the scheduler starts its drain. [`ClusterGate`]
//! is the scheduler's `LeaderGate` over that state.

pub mod driver;
pub mod election;
pub mod etcd;
pub mod feed;
pub mod filesystem;
pub mod gate;
pub mod gossip;
pub mod kubernetes;
pub mod notify;
pub mod pauses;
pub mod pools;
pub mod records;
pub mod slots;
pub mod supervise;

pub use driver::Leadership;
pub use gate::ClusterGate;

use futures_util::future::BoxFuture;
use std::time::Duration;
use tokio::time::Instant;

/// Why a leadership backend could not start, or could not give its lease
/// up. `Display` is the text the log lines show (`cluster: failed to
/// start: ...`, `cluster: <backend> lease release failed: ...`).
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend could not be set up from its settings (a secret, a TLS
    /// file, the HTTP or Kubernetes client, the shared directory); the
    /// text names the key and the cause.
    #[error("{0}")]
    Setup(String),
    /// A secret the backend logs in with (`cluster.etcd.password`) is
    /// configured but yields nothing.
    #[error(transparent)]
    Secret(#[from] crate::report::secret::SecretError),
    /// An etcd request failed.
    #[error(transparent)]
    Etcd(#[from] etcd::EtcdError),
    /// A Kubernetes API request failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// A file operation on the shared directory failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A blocking store operation did not answer within its time.
    #[error("no answer within {} s", .0.as_secs())]
    NoAnswer(Duration),
}

/// What one election round found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    /// Until when this node leads (None: it does not).
    pub leading_until: Option<Instant>,
    /// The store answered (evidence of quorum, whoever leads).
    pub answered: bool,
    /// The holder as read (display name, without the token), if any.
    pub holder: Option<String>,
    /// What went wrong, when the round failed.
    pub error: Option<String>,
}

/// A leadership store.
pub trait Backend: Send {
    /// `kubernetes`, `etcd` or `filesystem`.
    fn name(&self) -> &'static str;
    /// The INFO line logged when the backend starts.
    fn start_line(&self) -> String;
    /// One round: read the lease, decide, write. The driver bounds it by
    /// [`Backend::round_deadline`]; an unanswered round changes nothing
    /// (leadership runs out on its own deadline).
    fn round(&mut self) -> BoxFuture<'_, Round>;
    /// Gives the lease up if this node holds it (best effort; the driver
    /// bounds it by the connect timeout).
    fn release(&mut self) -> BoxFuture<'_, Result<(), BackendError>>;
    /// Time between rounds.
    fn period(&self) -> Duration;
    /// How long one round may take.
    fn round_deadline(&self) -> Duration;
    /// How long a successful read keeps this node quorate.
    fn quorum_window(&self) -> Duration;
    /// The `lease` block of `GET /cluster` (its `holder` is filled in by
    /// the state).
    fn lease_view(&self) -> serde_json::Value;

    /// Answers one records request (the `@reboot`-ran set, the last
    /// fires) from this backend's store. The driver calls it between
    /// rounds, so it may touch the objects the rounds write, and bounds
    /// it by [`Backend::round_deadline`]. Writes are refused unless this
    /// node holds the lease.
    fn records(&mut self, op: records::RecordsOp) -> BoxFuture<'_, records::RecordsResult> {
        let _ = op;
        Box::pin(async { Err(crate::scheduler::ports::RecordsError::NoRecords) })
    }

    /// The WARNING when the first round fails (the original's wording
    /// differs per backend).
    fn initial_failure_line(&self, error: &str) -> String {
        format!("cluster: {} initial round failed: {error}", self.name())
    }

    /// The WARNING when a round fails (once per outage).
    fn round_failure_line(&self, error: &str) -> String {
        format!("cluster: {} lease round failed: {error}", self.name())
    }
}

pub use crate::state::format::process_token;
