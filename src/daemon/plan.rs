//! Which slot store and which election backend a config asks for, decided
//! as values: config in, a plan out, nothing opened, connected or logged.
//! [`super::build`] turns a plan into running stores and backends; keeping
//! the choice here lets every combination be tested without a store.

use crate::cluster::slots::SlotSettings;
use crate::config::cluster::{
    self, Backend, ClusterSettings, EtcdSettings, FilesystemSettings, KubernetesSettings, Resolved,
};
use crate::config::sections::Sections;
use std::time::Duration;

/// Whose Kubernetes client a Lease backend or Lease slot store uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseClient {
    /// The Kubernetes mode's (`--kube`), so one process has one client
    /// and the mode's namespace is the Lease's default.
    Shared,
    /// One of its own, built from the section's `kubeconfig` /
    /// `apiServer`, else the pod's service account.
    Own,
}

impl LeaseClient {
    fn of(kube_mode: bool) -> LeaseClient {
        if kube_mode {
            LeaseClient::Shared
        } else {
            LeaseClient::Own
        }
    }
}

/// Where `concurrencyScope: cluster` slots are kept.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotStorePlan {
    /// A shared directory: `state.path`, or the filesystem backend's.
    Directory {
        /// The directory as written in the config.
        path: String,
        /// The namespace inside it.
        deployment_id: String,
    },
    /// A Lease per job beside the election Lease.
    Leases {
        /// The cluster section's `kubernetes` block.
        lease: KubernetesSettings,
        /// Whose client the Leases are written with.
        client: LeaseClient,
    },
    /// A key per job under the election key.
    Etcd {
        /// The cluster section's `etcd` block.
        etcd: EtcdSettings,
        /// `cluster.connectTimeout`.
        timeout: Duration,
    },
}

/// The slot store, the node name slots are held under and their settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotPlan {
    /// Where the slots live.
    pub store: SlotStorePlan,
    /// The name other nodes see: the cluster's node name with a lease
    /// backend, else the host name (the original's choice).
    pub node: String,
    /// TTL and `onStoreUnavailable`, from the `state` section.
    pub settings: SlotSettings,
}

/// The election backend a resolved lease section runs.
#[derive(Debug, Clone, PartialEq)]
pub enum LeasePlan {
    /// One coordination.k8s.io/v1 Lease.
    Kubernetes {
        /// The section's `kubernetes` block.
        lease: KubernetesSettings,
        /// Whose client holds the Lease.
        client: LeaseClient,
    },
    /// A lease file in a shared directory.
    Filesystem {
        /// The section's `filesystem` block.
        store: FilesystemSettings,
        /// This node's name.
        node_name: String,
        /// `cluster.connectTimeout`.
        timeout: Duration,
    },
    /// An etcd lease and a create-if-absent key.
    Etcd {
        /// The section's `etcd` block.
        etcd: EtcdSettings,
        /// This node's name.
        node_name: String,
        /// `cluster.connectTimeout`.
        timeout: Duration,
    },
}

/// What a config's sections ask the daemon to build at start.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The slot store; None when no job could use one (no `state` path
    /// and no lease backend: the load refuses cluster-scoped jobs then).
    pub slots: Option<SlotPlan>,
    /// The durable store of `state.path`; None without one.
    pub durable: Option<DurablePlan>,
    /// Leader election is configured (a lease backend, or gossip with
    /// `electLeader`): the Kubernetes facts hand pending retries to the
    /// writer.
    pub elect_leader: bool,
}

/// The durable store a `state` section with a `path` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct DurablePlan {
    /// Where it is and how it is paced.
    pub store: crate::state::store::StoreSettings,
    /// The `host` field of its records.
    pub host: String,
    /// `onStoreUnavailable`.
    pub policy: crate::config::model::sections::OnStoreUnavailable,
    /// `maxRunsPerJob` as applied: 1000 by default, `<= 0` unbounded, and
    /// 1 raised to 2 (see [`DurablePlan::raised`]).
    pub max_runs: i64,
    /// `maxRunsPerJob: 1` was raised to 2 (logged at start).
    pub raised: bool,
    /// `gcGraceSeconds` (7 days by default; None when `<= 0`: no GC).
    pub gc_grace: Option<Duration>,
    /// Leader election is configured (retry ladders may then move between
    /// the nodes of a shared store).
    pub elect_leader: bool,
}

/// The durable store plan of a `state` section (None without a path).
pub fn durable_plan(
    state: Option<&crate::config::model::sections::StateConfig>,
    host_name: &str,
) -> Option<DurablePlan> {
    let state = state?;
    // The same settings `cronstable state` opens the store with.
    let store = crate::state::admin::settings_of(state)?;
    let configured = state.max_runs_per_job.unwrap_or(1000);
    Some(DurablePlan {
        store,
        host: host_name.to_owned(),
        policy: state
            .on_store_unavailable
            .unwrap_or(crate::config::model::sections::OnStoreUnavailable::Degrade),
        max_runs: if configured == 1 { 2 } else { configured },
        raised: configured == 1,
        gc_grace: match state.gc_grace_seconds.unwrap_or(604_800) {
            secs if secs <= 0 => None,
            secs => Some(Duration::from_secs(secs.unsigned_abs())),
        },
        elect_leader: false,
    })
}

/// The plan of a loaded config. `host_name` is the default node name;
/// `kube_mode` says whether the Kubernetes mode's client exists to share.
///
/// `state.path` wins over the cluster backend's store for slots. Decided
/// once at start: a reload that changes `state` or the cluster backend
/// moves the slots at the next start (the jobs' own settings follow
/// reloads). The gossip backend keeps no slots of its own: with it,
/// slots need `state.path` and are held under the host name. The election
/// backend is not part of this plan: it follows the `cluster` section
/// through every reload, so the supervisor asks [`lease_plan`] each time
/// it (re)starts one.
pub fn plan(sections: &Sections, host_name: &str, kube_mode: bool) -> Plan {
    let state = sections.state.as_ref().map(|s| &s.value);
    let resolved = sections
        .cluster
        .as_ref()
        .and_then(|c| cluster::resolve(&c.value, host_name).ok());
    let lease = match &resolved {
        Some(Resolved::Lease { settings, .. }) => Some(settings.as_ref()),
        _ => None,
    };
    let node = lease.map_or_else(|| host_name.to_owned(), |c| c.node_name.clone());
    let store = match (state, lease) {
        (Some(state), _) if !state.path.trim().is_empty() => Some(SlotStorePlan::Directory {
            path: state.path.clone(),
            deployment_id: crate::state::admin::namespace_of(state.deployment_id.as_deref()),
        }),
        (_, Some(lease)) => Some(match &lease.backend {
            Backend::Filesystem(fs) => SlotStorePlan::Directory {
                path: fs.path.clone(),
                deployment_id: fs.deployment_id.clone(),
            },
            Backend::Kubernetes(settings) => SlotStorePlan::Leases {
                lease: settings.clone(),
                client: LeaseClient::of(kube_mode),
            },
            Backend::Etcd(etcd) => SlotStorePlan::Etcd {
                etcd: etcd.clone(),
                timeout: Duration::from_secs(lease.connect_timeout),
            },
        }),
        _ => None,
    };
    // Under election, records name the node by its cluster name (the
    // host name unless `nodeName` says otherwise), so two nodes on one
    // host still tell their ladders, markers and runs apart.
    let electing = match &resolved {
        Some(Resolved::Lease { settings, .. }) => Some(settings.node_name.clone()),
        Some(Resolved::Gossip { settings, .. }) if settings.elect_leader => {
            Some(settings.node_name.clone())
        }
        _ => None,
    };
    let elect_leader = electing.is_some();
    let durable = durable_plan(state, host_name).map(|mut durable| {
        if let Some(node) = &electing {
            durable.host.clone_from(node);
            durable.elect_leader = true;
        }
        durable
    });
    Plan {
        durable,
        elect_leader,
        slots: store.map(|store| SlotPlan {
            store,
            node,
            settings: SlotSettings::from_state(state),
        }),
    }
}

/// The election backend of resolved lease settings (the supervisor asks
/// for one at start and after every change of the section).
pub fn lease_plan(settings: &ClusterSettings, kube_mode: bool) -> LeasePlan {
    let timeout = Duration::from_secs(settings.connect_timeout);
    match &settings.backend {
        Backend::Kubernetes(lease) => LeasePlan::Kubernetes {
            lease: lease.clone(),
            client: LeaseClient::of(kube_mode),
        },
        Backend::Filesystem(store) => LeasePlan::Filesystem {
            store: store.clone(),
            node_name: settings.node_name.clone(),
            timeout,
        },
        Backend::Etcd(etcd) => LeasePlan::Etcd {
            etcd: etcd.clone(),
            node_name: settings.node_name.clone(),
            timeout,
        },
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
