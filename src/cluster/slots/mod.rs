//! Cluster slots: the scheduler's [`SlotLock`] for `concurrencyScope:
//! cluster` jobs, over a lease store shared by the nodes.
//!
//! [`ClusterSlots`] holds what is the same for every store: the claim
//! (acquire, and on a denial a bounded read to name the holder), the
//! Replace pursuit (record a cancel request for the holder's fence, then
//! poll until the slot frees or `2 * ttl` passes), the background renewal
//! of held slots at `max(1, ttl / 3)` (which also reads the newest cancel
//! request aimed at this node's fence and hands it to the scheduler), and
//! the release. A [`SlotStore`] is the storage: [`fs::FsSlotStore`] keeps
//! the original's lease files and cancel records in a shared directory,
//! [`kube::KubeSlotStore`] a Lease per job, [`etcd::EtcdSlotStore`] a key
//! per job bound to an etcd lease of its own.
//!
//! Every store operation is bounded by [`STORE_OP_TIMEOUT`]; a store that
//! errs or hangs makes the claim `Unavailable`, and the scheduler applies
//! `onStoreUnavailable`. The guarantee is at-least-once: a holder cut off
//! from the store for longer than the TTL keeps running while another
//! node may take the slot.

pub mod etcd;
pub mod fs;
pub mod kube;

use crate::config::model::sections::{OnStoreUnavailable, StateConfig};
use crate::config::model::ConcurrencyPolicy;
use crate::config::JobConfig;
use crate::scheduler::ports::{SlotClaim, SlotLock, SlotView, SlotYield};
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// The cap on one store operation (the original's state-op timeout).
pub const STORE_OP_TIMEOUT: Duration = Duration::from_secs(10);

/// The slot TTL when `state.slotTtlSeconds` is not set, seconds.
pub const DEFAULT_TTL: f64 = 30.0;

/// The reason text of a store that answered with an error.
const STORE_DOWN: &str = "the state store is unavailable";
/// The reason text of a store that did not answer in time, or whose
/// denial could not be confirmed.
const NO_ANSWER: &str = "the store did not answer";

/// A slot lease as read from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotLease {
    /// The full holder identity (`node#token`).
    pub holder: String,
    /// The lease's fence (grows on every takeover).
    pub fence: u64,
    /// Unexpired by this node's judgement (with the store's skew margin).
    pub live: bool,
}

/// A request that the holder of a slot's fence yield it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelRequest {
    /// The fence of the holder asked to yield.
    pub fence: u64,
    /// The requesting node's name.
    pub by: String,
    /// When it was asked (ISO 8601, UTC).
    pub at: String,
}

/// Why a slot store operation failed: the store's own words, logged at
/// DEBUG (`slot store error: ...`); the scheduler's lines use the generic
/// reasons ([`STORE_DOWN`], [`NO_ANSWER`]).
#[derive(Debug, thiserror::Error)]
pub enum SlotStoreError {
    /// The store's client could not be built (kubeconfig, etcd TLS files,
    /// credentials); the next operation tries again.
    #[error(transparent)]
    Client(#[from] crate::cluster::BackendError),
    /// A file of the shared-directory store could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A blocking operation of the shared-directory store did not finish
    /// in time (it may still land later).
    #[error("the store operation timed out")]
    TimedOut,
    /// A Kubernetes API request failed.
    #[error(transparent)]
    Kube(#[from] ::kube::Error),
    /// A Lease read from the API could not be turned into JSON.
    #[error("cannot read the Lease: {0}")]
    LeaseUnreadable(serde_json::Error),
    /// A Lease to write could not be built from its JSON.
    #[error("cannot build the Lease: {0}")]
    LeaseUnbuildable(serde_json::Error),
    /// The Lease was deleted between the read and the write.
    #[error("the Lease vanished")]
    LeaseVanished,
    /// Other writers kept changing the Lease: every attempt conflicted.
    #[error("the Lease {lease} kept changing; not written after {attempts} attempts")]
    LeaseKeptChanging {
        /// The Lease's name.
        lease: String,
        /// Writes tried.
        attempts: usize,
    },
    /// An etcd request failed.
    #[error(transparent)]
    Etcd(#[from] crate::cluster::etcd::EtcdError),
    /// etcd answered a lease grant without a lease id.
    #[error("lease grant returned no lease: {0}")]
    NoLeaseGranted(serde_json::Value),
    /// etcd answered a keepalive with an error.
    #[error("keepalive failed: {0}")]
    KeepaliveFailed(serde_json::Value),
}

/// The storage behind [`ClusterSlots`]: one lease per job and a place for
/// cancel requests. Every future owns what it needs; errors are
/// [`SlotStoreError`]s (logged at DEBUG, the scheduler's lines use the
/// generic reasons).
pub trait SlotStore: Send + Sync {
    /// Takes `job`'s slot for `holder` for `ttl` seconds unless someone
    /// else holds it: the fence won, or None when denied.
    fn acquire(
        &self,
        job: &str,
        holder: &str,
        ttl: f64,
    ) -> BoxFuture<'static, Result<Option<u64>, SlotStoreError>>;
    /// Extends a held slot; false when it is no longer ours.
    fn renew(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
        ttl: f64,
    ) -> BoxFuture<'static, Result<bool, SlotStoreError>>;
    /// Releases a held slot (nothing when it is no longer ours).
    fn release(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>>;
    /// The slot's current lease; None when absent or released.
    fn read(&self, job: &str) -> BoxFuture<'static, Result<Option<SlotLease>, SlotStoreError>>;
    /// Records a request that the holder of `request.fence` yield.
    fn request_cancel(
        &self,
        job: &str,
        request: CancelRequest,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>>;
    /// The newest cancel request recorded for `job`, if any.
    fn cancel_request(
        &self,
        job: &str,
    ) -> BoxFuture<'static, Result<Option<CancelRequest>, SlotStoreError>>;
    /// Whether the store's exclusion can be trusted: Some(reason) when
    /// not. Asked once; the answer is kept.
    fn fidelity(&self) -> BoxFuture<'static, Result<Option<String>, SlotStoreError>> {
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// The renewal period for a slot TTL: `max(1, ttl / 3)` seconds.
pub fn renew_period(ttl: f64) -> Duration {
    Duration::from_secs_f64((ttl / 3.0).max(1.0))
}

/// The Replace pursuit's poll period: `max(1, ttl / 6)` seconds.
pub fn pursuit_period(ttl: f64) -> Duration {
    Duration::from_secs_f64((ttl / 6.0).max(1.0))
}

/// How long a Replace pursuit waits for the holder: `2 * ttl`.
pub fn pursuit_deadline(ttl: f64) -> Duration {
    Duration::from_secs_f64(ttl * 2.0)
}

/// The slot settings of a `state` section (or of none: the defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotSettings {
    /// The slot TTL, seconds.
    pub ttl: f64,
    /// `onStoreUnavailable: fail-closed`.
    pub fail_closed: bool,
}

impl SlotSettings {
    /// The settings `state` gives (defaults without it).
    pub fn from_state(state: Option<&StateConfig>) -> SlotSettings {
        SlotSettings {
            ttl: state
                .and_then(|s| s.slot_ttl_seconds)
                .unwrap_or(DEFAULT_TTL),
            fail_closed: state.and_then(|s| s.on_store_unavailable)
                == Some(OnStoreUnavailable::FailClosed),
        }
    }
}

/// Runs a store operation with the [`STORE_OP_TIMEOUT`] cap; the error
/// is the scheduler's reason text.
async fn bounded<T>(
    op: impl Future<Output = Result<T, SlotStoreError>>,
) -> Result<T, &'static str> {
    match tokio::time::timeout(STORE_OP_TIMEOUT, op).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(why)) => {
            tracing::debug!(target: "cronstable::cluster", "slot store error: {why}");
            Err(STORE_DOWN)
        }
        Err(_) => Err(NO_ANSWER),
    }
}

/// A slot this node holds.
struct Held {
    fence: u64,
    renewer: AbortHandle,
}

/// What the claim futures and renewers share.
struct Inner {
    store: Arc<dyn SlotStore>,
    /// `node#token`: what the store records.
    holder: String,
    /// The node name other nodes see in log lines.
    node: String,
    settings: SlotSettings,
    held: Mutex<HashMap<String, Held>>,
    /// The last holder seen per job (for `GET /jobs`).
    seen: Mutex<HashMap<String, String>>,
    yields: mpsc::UnboundedSender<SlotYield>,
    fidelity: tokio::sync::OnceCell<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the map leaves it consistent per
    // call; carry on with it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inner {
    fn unavailable(&self, reason: impl Into<String>) -> SlotClaim {
        SlotClaim::Unavailable {
            reason: reason.into(),
            fail_closed: self.settings.fail_closed,
        }
    }

    fn note_holder(&self, job: &str, holder: &str) {
        lock(&self.seen).insert(
            job.to_owned(),
            super::election::display_holder(holder).to_owned(),
        );
    }

    async fn claim(self: Arc<Self>, job: String, replace: bool) -> SlotClaim {
        let fidelity = self
            .fidelity
            .get_or_init(|| async {
                match bounded(self.store.fidelity()).await {
                    Ok(Some(reason)) => {
                        tracing::error!(
                            target: "cronstable::cluster",
                            "state: the store's file locks cannot be trusted for cluster-wide \
                             concurrency ({reason}); concurrencyScope: cluster claims degrade \
                             per onStoreUnavailable"
                        );
                        Some(reason)
                    }
                    // A probe that could not run is asked again next time
                    // (the store may come back); only a verdict is kept.
                    Ok(None) | Err(_) => None,
                }
            })
            .await;
        if let Some(reason) = fidelity {
            return self.unavailable(reason.clone());
        }
        match bounded(self.store.acquire(&job, &self.holder, self.settings.ttl)).await {
            Err(reason) => return self.unavailable(reason),
            Ok(Some(fence)) => {
                self.hold(&job, fence);
                return SlotClaim::Claimed;
            }
            Ok(None) => {}
        }
        let lease = match bounded(self.store.read(&job)).await {
            Err(reason) => return self.unavailable(reason),
            Ok(lease) => lease,
        };
        let lease = match lease {
            Some(lease) if lease.holder == self.holder => {
                // Ours after all (an earlier acquire landed late): adopt.
                self.hold(&job, lease.fence);
                return SlotClaim::Claimed;
            }
            // A denial the read cannot confirm (freed or expired since):
            // not an answer.
            Some(lease) if lease.live => lease,
            _ => return self.unavailable(NO_ANSWER),
        };
        self.note_holder(&job, &lease.holder);
        let holder = super::election::display_holder(&lease.holder).to_owned();
        if !replace {
            return SlotClaim::HeldBy(holder);
        }
        self.pursue(job, lease, holder).await
    }

    /// Replace across nodes: ask the holder to yield, then wait for the
    /// slot to free (polling) and take it, or give up after `2 * ttl`.
    async fn pursue(self: Arc<Self>, job: String, lease: SlotLease, holder: String) -> SlotClaim {
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {job}: cluster Replace: asking the current slot holder ({holder}) to yield; the \
             launch is re-attempted when the slot frees"
        );
        let request = CancelRequest {
            fence: lease.fence,
            by: self.node.clone(),
            at: crate::report::context::python_isoformat(chrono::Utc::now()),
        };
        if let Err(why) = bounded(self.store.request_cancel(&job, request)).await {
            tracing::warn!(
                target: "cronstable::scheduler",
                "Job {job}: could not record the cluster Replace cancel request: {why}"
            );
        }
        let ttl = self.settings.ttl;
        let deadline = tokio::time::Instant::now() + pursuit_deadline(ttl);
        loop {
            let next = tokio::time::Instant::now() + pursuit_period(ttl);
            if next > deadline {
                break;
            }
            tokio::time::sleep_until(next).await;
            let free = match bounded(self.store.read(&job)).await {
                Ok(None) => true,
                Ok(Some(now)) => !now.live || now.holder == self.holder,
                Err(_) => false,
            };
            if !free {
                continue;
            }
            if let Ok(Some(fence)) = bounded(self.store.acquire(&job, &self.holder, ttl)).await {
                self.hold(&job, fence);
                return SlotClaim::ClaimedAfterYield;
            }
        }
        SlotClaim::NotYielded {
            holder,
            waited_secs: pursuit_deadline(ttl).as_secs_f64(),
        }
    }

    /// Records a won slot and starts renewing it.
    fn hold(self: &Arc<Self>, job: &str, fence: u64) {
        self.note_holder(job, &self.holder);
        let renewer = tokio::spawn(Arc::clone(self).renew_loop(job.to_owned(), fence));
        let previous = lock(&self.held).insert(
            job.to_owned(),
            Held {
                fence,
                renewer: renewer.abort_handle(),
            },
        );
        if let Some(previous) = previous {
            previous.renewer.abort();
        }
    }

    /// Renews a held slot every period and watches for requests to yield
    /// it; ends when the slot is lost (the run goes on) or released.
    async fn renew_loop(self: Arc<Self>, job: String, fence: u64) {
        let period = renew_period(self.settings.ttl);
        let mut asked = false;
        loop {
            tokio::time::sleep(period).await;
            match bounded(
                self.store
                    .renew(&job, &self.holder, fence, self.settings.ttl),
            )
            .await
            {
                Ok(true) => {}
                Ok(false) => {
                    let by = match bounded(self.store.read(&job)).await {
                        Ok(Some(lease)) => {
                            self.note_holder(&job, &lease.holder);
                            super::election::display_holder(&lease.holder).to_owned()
                        }
                        _ => "another node".to_owned(),
                    };
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "Job {job}: its cluster concurrency slot was taken over by {by} while it \
                         is still running here (a store outage outlasted the slot TTL?); the run \
                         continues -- the overlap is the documented at-least-once trade"
                    );
                    return;
                }
                Err(_) => tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {job}: cluster concurrency slot renewal errored; will retry next period"
                ),
            }
            if asked {
                continue;
            }
            if let Ok(Some(request)) = bounded(self.store.cancel_request(&job)).await {
                if request.fence == fence {
                    // Once per holding: the scheduler cancels every
                    // instance, and the release follows their end.
                    asked = true;
                    let _ = self.yields.send(SlotYield {
                        job: job.clone(),
                        by: request.by,
                    });
                }
            }
        }
    }
}

/// The scheduler's slot lock over a [`SlotStore`].
pub struct ClusterSlots {
    inner: Arc<Inner>,
    yields: mpsc::UnboundedReceiver<SlotYield>,
    /// Releases still on their way (awaited, bounded, before the daemon
    /// exits, so a drained job's slot is free at once for the others).
    releases: Vec<tokio::task::JoinHandle<()>>,
}

impl ClusterSlots {
    /// Slots in `store`, held as `node#token`.
    pub fn new(store: Arc<dyn SlotStore>, node: &str, settings: SlotSettings) -> ClusterSlots {
        let (tx, rx) = mpsc::unbounded_channel();
        ClusterSlots {
            inner: Arc::new(Inner {
                store,
                holder: format!("{node}#{}", super::process_token()),
                node: node.to_owned(),
                settings,
                held: Mutex::new(HashMap::new()),
                seen: Mutex::new(HashMap::new()),
                yields: tx,
                fidelity: tokio::sync::OnceCell::new(),
            }),
            yields: rx,
            releases: Vec::new(),
        }
    }
}

impl SlotLock for ClusterSlots {
    fn claim(&mut self, job: &JobConfig) -> BoxFuture<'static, SlotClaim> {
        let replace = job.concurrency_policy == ConcurrencyPolicy::Replace;
        Box::pin(Arc::clone(&self.inner).claim(job.name.clone(), replace))
    }

    fn release(&mut self, job: &str) {
        let Some(held) = lock(&self.inner.held).remove(job) else {
            return;
        };
        held.renewer.abort();
        lock(&self.inner.seen).remove(job);
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        self.releases.retain(|r| !r.is_finished());
        self.releases.push(tokio::spawn(async move {
            let released = bounded(inner.store.release(&job, &inner.holder, held.fence)).await;
            if let Err(why) = released {
                tracing::warn!(
                    target: "cronstable::cluster",
                    "state: failed to release the concurrency slot for {job} ({why}); it frees \
                     by TTL"
                );
            }
        }));
    }

    fn settle(&mut self) -> BoxFuture<'static, ()> {
        let pending = std::mem::take(&mut self.releases);
        // Each release is bounded by the store-operation cap already.
        Box::pin(async move {
            for release in pending {
                let _ = release.await;
            }
        })
    }

    fn next_yield(&mut self) -> BoxFuture<'_, SlotYield> {
        Box::pin(async move {
            match self.yields.recv().await {
                Some(request) => request,
                // The sender lives in `inner`, which we own: unreachable
                // in practice, and then there is simply nothing to yield.
                None => std::future::pending().await,
            }
        })
    }

    fn view(&self, job: &str) -> SlotView {
        SlotView {
            held: lock(&self.inner.held).contains_key(job),
            holder: lock(&self.inner.seen).get(job).cloned(),
        }
    }
}

impl Drop for ClusterSlots {
    fn drop(&mut self) {
        for (_, held) in lock(&self.inner.held).drain() {
            held.renewer.abort();
        }
    }
}

#[cfg(test)]
mod tests;
