//! What the parts the scheduler does not own publish about themselves,
//! each on `tokio::sync::watch` channels it alone writes: the leadership
//! state ([`leadership`]) and the Kubernetes mode's state ([`kube`]). The
//! leader gate, the HTTP API and the metrics read; nothing here is a
//! place for others to write.

pub mod histogram;
pub mod kube;
pub mod leadership;

pub use histogram::Histogram;
pub use kube::{KubeState, KubeWatch};
pub use leadership::{BackendKind, GossipState, LeadershipState, LeadershipWatch};

/// Everything published, as its readers (the HTTP API and, through it,
/// the metrics) get it at start.
#[derive(Debug, Clone)]
pub struct Published {
    /// The leadership state (shows none without a `cluster` section).
    pub leadership: LeadershipWatch,
    /// The Kubernetes mode's state; None without `--kube`.
    pub kube: Option<KubeWatch>,
}
