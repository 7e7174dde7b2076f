//! A plan made real: the slot store and the election backends, connected
//! the way [`super::plan`] decided. Thin on purpose: every choice is the
//! plan's; this only opens what it names.

use super::plan::{self, LeaseClient, LeasePlan, SlotStorePlan};
use crate::cluster;
use crate::config::cluster::{ClusterSettings, KubernetesSettings};
use crate::kube::KubeOptions;
use std::path::PathBuf;
use std::sync::Arc;

/// The Kubernetes mode's client and its namespace, when `--kube` runs.
pub type SharedClient = Option<(kube::Client, String)>;

/// The client and namespace of the Lease backend's objects (the election
/// Lease and the slot Leases): the shared client when the plan says so,
/// else one built from the section's kubeconfig / apiServer (or the pod's
/// service account); the section's `leaseNamespace` wins over the
/// client's namespace.
async fn lease_client(
    client: LeaseClient,
    shared: SharedClient,
    lease: &KubernetesSettings,
) -> Result<(kube::Client, String), cluster::BackendError> {
    let shared = match client {
        LeaseClient::Shared => shared,
        LeaseClient::Own => None,
    };
    let (client, namespace) = match shared {
        Some(shared) => shared,
        None => {
            let options = KubeOptions {
                kubeconfig: lease.kubeconfig.as_ref().map(PathBuf::from),
                namespace: lease.lease_namespace.clone(),
                ..KubeOptions::default()
            };
            let connection = crate::kube::client::connect_to(&options, lease.api_server.as_deref())
                .await
                .map_err(|e| cluster::BackendError::Setup(e.to_string()))?;
            (connection.client, connection.namespace)
        }
    };
    let namespace = lease.lease_namespace.clone().unwrap_or(namespace);
    Ok((client, namespace))
}

/// The slot store of a plan. The Lease and etcd stores connect on first
/// use, so a store that is down at start only makes claims unavailable
/// (`onStoreUnavailable`).
pub fn slot_store(plan: SlotStorePlan, shared: SharedClient) -> Arc<dyn cluster::slots::SlotStore> {
    match plan {
        SlotStorePlan::Directory {
            path,
            deployment_id,
        } => Arc::new(cluster::slots::fs::FsSlotStore::new(&path, &deployment_id)),
        SlotStorePlan::Leases { lease, client } => {
            Arc::new(cluster::slots::kube::KubeSlotStore::new(
                &lease.lease_name.clone(),
                lease_api_source(lease, client, shared),
            ))
        }
        SlotStorePlan::Etcd { etcd, timeout } => {
            Arc::new(cluster::slots::etcd::EtcdSlotStore::new(
                &etcd.election_name.clone(),
                etcd_client_source(etcd, timeout),
            ))
        }
    }
}

/// How a store on the Lease backend's objects gets its Lease API: the
/// election's client and namespace ([`lease_client`]), on first use.
fn lease_api_source(
    lease: KubernetesSettings,
    client: LeaseClient,
    shared: SharedClient,
) -> cluster::slots::kube::LeaseApiSource {
    Arc::new(move || {
        let lease = lease.clone();
        let shared = shared.clone();
        Box::pin(async move {
            let (client, namespace) = lease_client(client, shared, &lease).await?;
            Ok(kube::Api::namespaced(client, &namespace))
        })
    })
}

/// How a store on the etcd backend's keys gets a client of its own, built
/// from the section's `etcd` block on first use.
fn etcd_client_source(
    etcd: crate::config::cluster::EtcdSettings,
    timeout: std::time::Duration,
) -> cluster::slots::etcd::EtcdClientSource {
    Arc::new(move || {
        let etcd = etcd.clone();
        Box::pin(async move {
            // The node name is the election's business; a store only
            // borrows the client.
            cluster::etcd::EtcdLease::connect(&etcd, String::new(), timeout).await
        })
    })
}

/// How a `cluster` section becomes a running lease backend: the
/// supervisor calls this at start and after every change of the section,
/// with the plan [`plan::lease_plan`] makes of it.
pub fn backend_factory(shared: SharedClient) -> cluster::supervise::BackendFactory {
    let kube_mode = shared.is_some();
    Box::new(move |settings: ClusterSettings| {
        let shared = shared.clone();
        Box::pin(async move {
            let backend: Box<dyn cluster::Backend> = match plan::lease_plan(&settings, kube_mode) {
                LeasePlan::Kubernetes { lease, client } => {
                    let (client, namespace) = lease_client(client, shared, &lease).await?;
                    Box::new(cluster::kubernetes::KubernetesLease::new(
                        client, namespace, &lease,
                    ))
                }
                LeasePlan::Filesystem {
                    store,
                    node_name,
                    timeout,
                } => Box::new(
                    cluster::filesystem::FilesystemLease::open(&store, &node_name, timeout).await?,
                ),
                LeasePlan::Etcd {
                    etcd,
                    node_name,
                    timeout,
                } => Box::new(cluster::etcd::EtcdLease::connect(&etcd, node_name, timeout).await?),
            };
            Ok(backend)
        })
    })
}

/// The durable store as the daemon hands it out: behind the scheduler's
/// port, and (read only) to the API.
pub struct Durable {
    /// The scheduler's port.
    pub port: Box<dyn crate::scheduler::durable::DurableState>,
    /// The same store for the API's trends, inspector and metrics; None
    /// when no store is open.
    pub store: Option<Arc<crate::state::store::Store>>,
}

impl Durable {
    /// No store: the scheduler keeps everything in memory.
    fn none() -> Durable {
        Durable {
            port: Box::new(crate::scheduler::durable::NoDurableState),
            store: None,
        }
    }
}

/// Opens the durable store of `plan` behind the scheduler's port; without
/// a plan, or when the store cannot be opened (logged: the daemon then
/// runs from memory, as without a `state` section), none.
pub fn durable_store(plan: Option<plan::DurablePlan>) -> Durable {
    let Some(plan) = plan else {
        return Durable::none();
    };
    if plan.raised {
        tracing::warn!(
            target: "cronstable::state",
            "state: maxRunsPerJob is 1; retaining 2 run records per job instead. The ledger prune \
             keeps the newest records by write order, so a retention of 1 leaves no room for a \
             pair that landed inverted (a peer node sharing the mount) and the newer run would \
             be the one deleted."
        );
    }
    let opened = crate::state::store::Store::open(&plan.store).and_then(|store| {
        crate::durable::DurableStore::start(
            store,
            crate::durable::DurableSettings {
                host: plan.host.clone(),
                policy: plan.policy,
                max_runs: plan.max_runs,
                gc_grace: plan.gc_grace,
                elect_leader: plan.elect_leader,
            },
        )
        .map_err(|source| crate::state::store::OpenError::NotWritable {
            path: plan.store.root.display().to_string(),
            source,
        })
    });
    match opened {
        Ok(durable) => Durable {
            store: Some(durable.store()),
            port: Box::new(durable),
        },
        Err(err) => {
            tracing::error!(target: "cronstable::state", "state: failed to start: {err}");
            Durable::none()
        }
    }
}

/// The Kubernetes-native durable facts (`crate::kube::facts`): in
/// `--kube` mode with no `state.path`, pauses, pending retries, last
/// outcomes, `@reboot` markers and the counters are kept in the facts
/// ConfigMap `name` in the mode's namespace, written while `may_write`
/// holds. `state` is the `state` section, if any (its
/// `onStoreUnavailable` applies); `elect_leader` says leader election
/// picks the writer (pending retries then go to whoever becomes it).
pub fn kube_facts(
    shared: SharedClient,
    name: String,
    state: Option<&crate::config::model::sections::StateConfig>,
    may_write: tokio::sync::watch::Receiver<bool>,
    elect_leader: bool,
) -> Box<dyn crate::scheduler::durable::DurableState> {
    let Some((client, namespace)) = shared else {
        return Box::new(crate::scheduler::durable::NoDurableState);
    };
    let policy = state
        .and_then(|s| s.on_store_unavailable)
        .unwrap_or(crate::config::model::sections::OnStoreUnavailable::Degrade);
    let mut settings = crate::kube::facts::FactsSettings::new(
        name,
        crate::platform::host_name().to_owned(),
        policy,
    );
    settings.elect_leader = elect_leader;
    Box::new(crate::kube::facts::KubeFacts::start(
        client, &namespace, may_write, settings,
    ))
}

/// What [`pools`] needs of a plan (taken before the plan's parts move).
#[derive(Debug, Clone)]
pub struct PoolPlan {
    /// The node claims are held under (the slots' node name).
    node: String,
    /// Where the slots live (`state.path`'s directory first, else the
    /// lease backend's store): the pools live there too.
    store: Option<SlotStorePlan>,
    /// A durable store of `state.path` is planned.
    durable: bool,
}

impl PoolPlan {
    /// The pool inputs of `plan`.
    pub fn of(plan: &plan::Plan) -> PoolPlan {
        PoolPlan {
            node: plan.slots.as_ref().map_or_else(
                || crate::platform::host_name().to_owned(),
                |s| s.node.clone(),
            ),
            store: plan.slots.as_ref().map(|s| s.store.clone()),
            durable: plan.durable.is_some(),
        }
    }
}

/// The resource pools' store, where the slots live: the state store's
/// documents when the durable store of `state.path` is open, else the
/// lease backend's store: the filesystem backend's directory (a store
/// opened there), a Lease per pool beside the election Lease, or an etcd
/// key per pool under the election key. With none (the gossip backend
/// alone, which the load refuses, or a `state.path` that did not open)
/// pools answer that pool state is unavailable, logged once at start.
/// Call inside the runtime (the Lease and etcd stores use it).
pub fn pools(
    plan: PoolPlan,
    durable: Option<Arc<crate::state::store::Store>>,
    shared: SharedClient,
    table: tokio::sync::watch::Receiver<Arc<crate::config::sections::PoolTable>>,
) -> Box<dyn crate::scheduler::ports::Pools> {
    use cluster::pools::optimistic::Optimistic;
    let configured = !table.borrow().is_empty();
    let node = plan.node;
    let runtime = tokio::runtime::Handle::current();
    let docs: Option<Arc<dyn cluster::pools::PoolDocs>> = match (durable, plan.store) {
        (Some(store), _) => Some(Arc::new(cluster::pools::fs::FsPoolDocs::new(store))),
        (
            None,
            Some(SlotStorePlan::Directory {
                path,
                deployment_id,
            }),
        ) if !plan.durable => {
            let settings = crate::state::store::StoreSettings {
                root: crate::state::format::absolute_root(&path),
                deployment_id,
                topology: None,
                max_ops_per_second: 0.0,
            };
            match crate::state::store::Store::open(&settings) {
                Ok(store) => Some(Arc::new(cluster::pools::fs::FsPoolDocs::new(Arc::new(
                    store,
                )))),
                Err(err) => {
                    if configured {
                        tracing::error!(
                            target: "cronstable::state",
                            "pools: cannot open the store for pool state: {err}"
                        );
                    }
                    None
                }
            }
        }
        (None, Some(SlotStorePlan::Leases { lease, client })) if !plan.durable => {
            let lease_name = lease.lease_name.clone();
            let docs = cluster::pools::kube::KubePoolDocs::new(
                &lease_name,
                lease_api_source(lease, client, shared),
            );
            Some(Arc::new(Optimistic::new(docs, runtime)))
        }
        (None, Some(SlotStorePlan::Etcd { etcd, timeout })) if !plan.durable => {
            let election_name = etcd.election_name.clone();
            let docs = cluster::pools::etcd::EtcdPoolDocs::new(
                &election_name,
                etcd_client_source(etcd, timeout),
            );
            Some(Arc::new(Optimistic::new(docs, runtime)))
        }
        _ => None,
    };
    match docs {
        Some(docs) => Box::new(cluster::pools::StorePools::new(docs, &node, table)),
        None => {
            if configured {
                tracing::error!(
                    target: "cronstable::state",
                    "pools: no store keeps pool state (pools need state.path, or a cluster \
                     section with the kubernetes, etcd or filesystem backend); pooled jobs \
                     cannot be queued"
                );
            }
            Box::new(crate::scheduler::ports::NoPools {
                table: Arc::clone(&table.borrow()),
            })
        }
    }
}
