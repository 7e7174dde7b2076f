//! The `cluster` section resolved: defaults filled in and the load-time
//! rules of the Clustering page checked, with its messages. Pure (the
//! etcd password is resolved when the backend starts, not here). The
//! leadership backends start from a [`ClusterSettings`]; the loader calls
//! [`resolve`] so a bad section is a load error naming the key.

use super::model::sections::{ClusterBackend, ClusterConfig, Distribution, Topology};
use super::model::SecretSource;
/// Why a section is refused; re-exported so callers name it beside
/// [`resolve`].
pub use error::ClusterConfigError;
use gossip::{gossip, lease_observability};
use lease::{etcd, filesystem, kubernetes};

mod error;
mod gossip;
mod lease;
#[cfg(test)]
mod tests;

/// The resolved section.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSettings {
    /// This node's name (`nodeName`, else the host name).
    pub node_name: String,
    /// `connectTimeout`, seconds: every store request's cap.
    pub connect_timeout: u64,
    /// The backend and its block.
    pub backend: Backend,
}

/// A lease backend with its settings.
#[derive(Debug, Clone, PartialEq)]
pub enum Backend {
    /// One coordination.k8s.io/v1 Lease.
    Kubernetes(KubernetesSettings),
    /// An etcd lease and a create-if-absent key.
    Etcd(EtcdSettings),
    /// A lease file in a shared directory.
    Filesystem(FilesystemSettings),
}

impl Backend {
    /// The backend's name as the API and metrics spell it.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Kubernetes(_) => "kubernetes",
            Backend::Etcd(_) => "etcd",
            Backend::Filesystem(_) => "filesystem",
        }
    }
}

/// `cluster.kubernetes`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesSettings {
    /// The Lease's name.
    pub lease_name: String,
    /// Its namespace (None: the pod's, else the Kubernetes mode's, else
    /// the kubeconfig context's).
    pub lease_namespace: Option<String>,
    /// Seconds a record is valid after its last renewal.
    pub lease_duration_seconds: u64,
    /// Seconds a holder keeps leading after its last renewal.
    pub renew_deadline_seconds: u64,
    /// Seconds between rounds.
    pub retry_period_seconds: u64,
    /// The holder identity before the per-process token (default: the
    /// node name).
    pub identity: String,
    /// A kubeconfig for out-of-cluster use.
    pub kubeconfig: Option<String>,
    /// An API server URL overriding the kubeconfig's.
    pub api_server: Option<String>,
}

/// `cluster.etcd`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct EtcdSettings {
    /// Client URLs, tried in order.
    pub endpoints: Vec<String>,
    /// The contended key.
    pub election_name: String,
    /// Lease TTL, seconds (>= 3).
    pub ttl: u64,
    /// Auth user.
    pub username: Option<String>,
    /// Auth password source (resolved at start).
    pub password: Option<SecretSource>,
    /// CA file.
    pub ca: Option<String>,
    /// Client certificate file.
    pub cert: Option<String>,
    /// Client key file.
    pub key: Option<String>,
}

/// `cluster.filesystem`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesystemSettings {
    /// The directory (normally a shared mount).
    pub path: String,
    /// The lease's name.
    pub election_name: String,
    /// Lease TTL, seconds (>= 3).
    pub ttl: f64,
    /// Namespace inside the directory (`default`).
    pub deployment_id: String,
    /// Lock trust across hosts.
    pub topology: Topology,
}

/// `backend: gossip`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct GossipSettings {
    /// This node's name (`nodeName`, else the host name).
    pub node_name: String,
    /// The mTLS `/peer` listener, `host:port` (IPv6 bracketed).
    pub listen: String,
    /// Every other member's `host:port`, duplicates and unambiguous
    /// self-listings dropped (first occurrence kept).
    pub peers: Vec<String>,
    /// The declared cluster size: the peers plus this node.
    pub cluster_size: usize,
    /// `electLeader`.
    pub elect_leader: bool,
    /// `distribution`.
    pub distribution: Distribution,
    /// `interval`: seconds between poll rounds.
    pub interval: u64,
    /// `driftAfter`: mismatched rounds before a peer is drifted.
    pub drift_after: u32,
    /// `connectTimeout`: seconds per peer request.
    pub connect_timeout: u64,
    /// The cluster CA, this node's certificate and key.
    pub tls: GossipTls,
    /// `cluster.observability` is present and `shareNodeStats` is not
    /// false: node CPU/memory ride the election mesh.
    pub share_node_stats: bool,
}

/// `cluster.tls`, resolved (all three files are required).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GossipTls {
    /// Trust anchor for peer certificates.
    pub ca: String,
    /// This node's certificate (served and presented as a client).
    pub cert: String,
    /// Its private key.
    pub key: String,
}

/// Resolves and checks a `cluster` section; `host_name` is the default
/// node name. Errors are the Clustering page's messages. A gossip section
/// resolves fully (the loader still refuses it while the backend's
/// transport is not wired in).
pub fn resolve(cluster: &ClusterConfig, host_name: &str) -> Result<Resolved, ClusterConfigError> {
    let backend = cluster.backend.unwrap_or(ClusterBackend::Gossip);
    let backend_name = match backend {
        ClusterBackend::Gossip => "gossip",
        ClusterBackend::Kubernetes => "kubernetes",
        ClusterBackend::Etcd => "etcd",
        ClusterBackend::Filesystem => "filesystem",
    };
    if let Some(timeout) = cluster.connect_timeout {
        if timeout <= 0 {
            return Err(ClusterConfigError::NotPositive {
                key: "connectTimeout",
            });
        }
    }
    if let Some(interval) = cluster.interval {
        if interval <= 0 {
            return Err(ClusterConfigError::NotPositive { key: "interval" });
        }
    }
    if let Some(drift) = cluster.drift_after {
        if drift < 1 {
            return Err(ClusterConfigError::DriftAfterBelowOne);
        }
    }
    // A store block for another backend would be silently ignored.
    for (key, present, owner) in [
        (
            "kubernetes",
            cluster.kubernetes.is_some(),
            ClusterBackend::Kubernetes,
        ),
        ("etcd", cluster.etcd.is_some(), ClusterBackend::Etcd),
        (
            "filesystem",
            cluster.filesystem.is_some(),
            ClusterBackend::Filesystem,
        ),
    ] {
        if present && backend != owner {
            return Err(ClusterConfigError::ForeignStoreBlock {
                block: key,
                backend: backend_name,
            });
        }
    }
    if backend == ClusterBackend::Gossip {
        let (settings, advisories) = gossip(cluster, host_name)?;
        return Ok(Resolved::Gossip {
            settings: Box::new(settings),
            advisories,
        });
    }
    if let Some(obs) = &cluster.observability {
        lease_observability(obs, backend_name)?;
    }
    if cluster.distribution == Some(Distribution::Spread) {
        return Err(ClusterConfigError::SpreadWithLease {
            backend: backend_name,
        });
    }
    let node_name = cluster
        .node_name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| host_name.to_owned());
    let connect_timeout = cluster.connect_timeout.unwrap_or(10) as u64;
    let mut advisories = Vec::new();
    let ignored: Vec<&str> = [
        ("listen", cluster.listen.is_some()),
        ("tls", cluster.tls.is_some()),
        ("peers", cluster.peers.is_some()),
        ("interval", cluster.interval.is_some()),
        ("driftAfter", cluster.drift_after.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if !ignored.is_empty() {
        let mut line = format!(
            "cluster.{} configured but ignored by the '{backend_name}' backend (those keys apply \
             only to backend: gossip)",
            ignored.join(", cluster.")
        );
        if ignored.contains(&"tls") {
            line.push_str(&format!(
                "; note cluster.tls does NOT secure the lease store -- the {backend_name} store's \
                 TLS is configured under cluster.{backend_name}"
            ));
        }
        advisories.push(line);
    }
    if cluster.elect_leader == Some(false) {
        advisories.push(format!(
            "cluster.electLeader: false is ignored by the '{backend_name}' backend; a lease \
             backend always enables leader election"
        ));
    }
    let backend = match backend {
        ClusterBackend::Kubernetes => Backend::Kubernetes(kubernetes(cluster, &node_name)?),
        ClusterBackend::Etcd => {
            let (settings, advisory) = etcd(cluster)?;
            advisories.extend(advisory);
            Backend::Etcd(settings)
        }
        ClusterBackend::Filesystem => Backend::Filesystem(filesystem(cluster)?),
        ClusterBackend::Gossip => unreachable!("gossip returned above"),
    };
    Ok(Resolved::Lease {
        settings: Box::new(ClusterSettings {
            node_name,
            connect_timeout,
            backend,
        }),
        advisories,
    })
}

/// What [`resolve`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// The gossip backend, with the one-line advisories to log when it
    /// starts.
    Gossip {
        /// The settings.
        settings: Box<GossipSettings>,
        /// WARNING lines.
        advisories: Vec<String>,
    },
    /// A lease backend, with the one-line advisories to log when it
    /// starts (keys it ignores).
    Lease {
        /// The settings.
        settings: Box<ClusterSettings>,
        /// WARNING lines.
        advisories: Vec<String>,
    },
}
