//! The scheduler's `DurableState` port over a store directory
//! (`crate::state`): the writes the scheduler queues, the read at start
//! (with crash reconciliation), and the changes other nodes sharing the
//! store make, followed once a second.
//!
//! Threads, because every store operation blocks on the file system and
//! a hung mount must never stall the scheduler's thread:
//! - one writer thread takes the queued writes in order (a bounded queue:
//!   when it is full, a write is dropped and counted, as when it fails);
//! - the start's read runs on a thread of its own, bounded by
//!   [`REHYDRATE_LIMIT`];
//! - one poller thread follows the pause streams and the ledgers of the
//!   `onlyIfLastSucceeded` jobs and sends what changed as events.

mod claims;
mod codec;
mod poll;
mod rehydrate;
#[cfg(test)]
mod tests;
mod writer;

use crate::config::model::sections::OnStoreUnavailable;
use crate::config::JobConfig;
use crate::scheduler::durable::{
    DurableError, DurableEvent, DurableState, DurableWrite, Rehydrated, RetryClaimJob, RetryConsume,
};
use crate::state::stats::{StoreStats, WriteKind};
use crate::state::store::Store;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

pub use codec::{pause_data, pause_from_data};

/// How long the start waits for the store's answer before it goes on
/// without it (the original's bound on reads on scheduling paths).
pub const REHYDRATE_LIMIT: Duration = Duration::from_secs(10);

/// Writes waiting for the writer thread at most (past it, a write is
/// dropped and counted).
pub const MAX_PENDING_WRITES: usize = 8192;

/// How long a due retry waits for its settle before `onStoreUnavailable`
/// decides (the original's bound on a store call).
pub const CONSUME_LIMIT: Duration = Duration::from_secs(10);

/// How often the poller looks for other nodes' changes.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// What the durable store needs to know besides the store itself.
#[derive(Debug, Clone)]
pub struct DurableSettings {
    /// This node's host name (the `host` field of records).
    pub host: String,
    /// `state.onStoreUnavailable`.
    pub policy: OnStoreUnavailable,
    /// `state.maxRunsPerJob` as applied (`<= 0`: unbounded; never 1).
    pub max_runs: i64,
    /// `state.gcGraceSeconds` (None: `<= 0`, garbage collection off).
    pub gc_grace: Option<Duration>,
    /// Leader election is configured (a lease backend, or gossip with
    /// `electLeader`): on a shared store, retry ladders then move between
    /// nodes (cross-node retry resume).
    pub elect_leader: bool,
}

/// The durable store behind the scheduler's port.
pub struct DurableStore {
    store: Arc<Store>,
    settings: DurableSettings,
    /// This process's token in in-flight records.
    proc_token: String,
    writes: std::sync::mpsc::SyncSender<writer::Task>,
    events: mpsc::UnboundedReceiver<DurableEvent>,
    jobs: watch::Sender<Arc<Vec<Arc<JobConfig>>>>,
    /// Per job, its config digest (the in-flight, retry and boot records
    /// carry it); kept in step with the installed table.
    digests: std::collections::HashMap<String, String>,
}

impl DurableStore {
    /// Starts the writer and the poller over `store`.
    pub fn start(store: Store, settings: DurableSettings) -> std::io::Result<DurableStore> {
        let store = Arc::new(store);
        let proc_token = crate::state::format::process_token();
        let (writes, queue) = std::sync::mpsc::sync_channel(MAX_PENDING_WRITES);
        let (events_tx, events) = mpsc::unbounded_channel();
        writer::spawn(
            Arc::clone(&store),
            settings.clone(),
            proc_token.clone(),
            queue,
            events_tx.clone(),
        )?;
        let (jobs, jobs_rx) = watch::channel(Arc::new(Vec::new()));
        poll::spawn(Arc::clone(&store), jobs_rx, events_tx)?;
        tracing::info!(
            target: "cronstable::state",
            "state: filesystem backend ready at {} (namespace={}, topology={}, shared_locking={})",
            store.base().display(),
            store.deployment_id(),
            store.topology().as_str(),
            // Python's spelling, as the original prints it.
            if store.topology() == crate::state::store::Topology::Shared {
                "True"
            } else {
                "False"
            }
        );
        Ok(DurableStore {
            store,
            settings,
            proc_token,
            writes,
            events,
            jobs,
            digests: std::collections::HashMap::new(),
        })
    }

    /// The store's counters (for the metrics).
    pub fn stats(&self) -> Arc<StoreStats> {
        self.store.stats()
    }

    /// The store (for the API's read-only views).
    pub fn store(&self) -> Arc<Store> {
        Arc::clone(&self.store)
    }

    /// The digest of `job` as installed (empty when unknown).
    fn digest(&self, job: &str) -> String {
        self.digests.get(job).cloned().unwrap_or_default()
    }

    fn queue(&self, kind: WriteKind, task: writer::Task) {
        if let Err(e) = self.writes.try_send(task) {
            self.store.stats().dropped(kind);
            let why = match e {
                std::sync::mpsc::TrySendError::Full(_) => "the write queue is full",
                std::sync::mpsc::TrySendError::Disconnected(_) => "the writer stopped",
            };
            tracing::warn!(
                target: "cronstable::state",
                "state: dropped a {} write: {why}",
                kind.label()
            );
        }
    }
}

impl DurableState for DurableStore {
    fn enabled(&self) -> bool {
        true
    }

    fn policy(&self) -> OnStoreUnavailable {
        self.settings.policy
    }

    fn write(&mut self, write: DurableWrite) {
        let kind = writer::kind_of(&write);
        let digest = match &write {
            DurableWrite::InflightOpen { job, digest, .. }
            | DurableWrite::RetryPending { job, digest, .. }
            | DurableWrite::RebootMarker { job, digest } => {
                if digest.is_empty() {
                    self.digest(job)
                } else {
                    digest.clone()
                }
            }
            DurableWrite::RetryHandoff { job, .. } => self.digest(job),
            _ => String::new(),
        };
        self.queue(kind, writer::Task::Write { write, digest });
    }

    fn rehydrate(
        &mut self,
        jobs: Arc<Vec<Arc<JobConfig>>>,
    ) -> BoxFuture<'static, Result<Rehydrated, DurableError>> {
        self.jobs_changed(&jobs);
        let store = Arc::clone(&self.store);
        let settings = self.settings.clone();
        let proc_token = self.proc_token.clone();
        let digests = self.digests.clone();
        Box::pin(async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new()
                .name("cronstable-state-read".to_owned())
                .spawn(move || {
                    let read = rehydrate::read(&store, &settings, &proc_token, &jobs, &digests);
                    let _ = tx.send(read);
                });
            if let Err(e) = spawned {
                return Err(DurableError(e.to_string()));
            }
            match tokio::time::timeout(REHYDRATE_LIMIT, rx).await {
                Ok(Ok(read)) => read.map_err(|e| DurableError(e.to_string())),
                Ok(Err(_)) => Err(DurableError("the store read stopped".into())),
                Err(_) => Err(DurableError(format!(
                    "the store did not answer within {} seconds",
                    REHYDRATE_LIMIT.as_secs()
                ))),
            }
        })
    }

    fn jobs_changed(&mut self, jobs: &Arc<Vec<Arc<JobConfig>>>) {
        self.digests = jobs
            .iter()
            .map(|j| j.name.clone())
            .zip(crate::fingerprint::job_digests(jobs.iter().map(|j| &**j)))
            .collect();
        self.jobs.send_replace(Arc::clone(jobs));
        self.queue(
            WriteKind::Manifest,
            writer::Task::Manifest {
                jobs: jobs.iter().map(|j| j.name.clone()).collect(),
                scopes: crate::state::admin::config_scopes(jobs.iter().map(|j| &**j)),
                job_set_id: crate::fingerprint::id_from_digests(
                    self.digests.values().cloned().collect(),
                ),
            },
        );
    }

    fn retry_resume(&self) -> bool {
        self.settings.elect_leader && self.store.topology() == crate::state::store::Topology::Shared
    }

    fn consume_retry(
        &mut self,
        job: &str,
        attempt: u32,
        serialize: bool,
    ) -> BoxFuture<'static, Result<RetryConsume, DurableError>> {
        let (reply, verdict) = tokio::sync::oneshot::channel();
        let task = writer::Task::ConsumeRetry {
            job: job.to_owned(),
            attempt,
            serialize,
            reply,
        };
        let queued = self.writes.try_send(task).map_err(|e| {
            DurableError(match e {
                std::sync::mpsc::TrySendError::Full(_) => "the write queue is full".to_owned(),
                std::sync::mpsc::TrySendError::Disconnected(_) => "the writer stopped".to_owned(),
            })
        });
        Box::pin(async move {
            queued?;
            match tokio::time::timeout(CONSUME_LIMIT, verdict).await {
                Ok(Ok(verdict)) => Ok(verdict),
                Ok(Err(_)) => Err(DurableError("the writer stopped".to_owned())),
                Err(_) => Err(DurableError(format!(
                    "the store did not answer within {} seconds",
                    CONSUME_LIMIT.as_secs()
                ))),
            }
        })
    }

    fn claim_retries(&mut self, jobs: Vec<RetryClaimJob>) {
        if jobs.is_empty() || !self.retry_resume() {
            return;
        }
        let digests = jobs
            .iter()
            .filter_map(|j| Some((j.job.clone(), self.digests.get(&j.job)?.clone())))
            .collect();
        // A full queue skips this scan; the next one comes soon.
        let _ = self
            .writes
            .try_send(writer::Task::ClaimRetries { jobs, digests });
    }

    fn next_event(&mut self) -> BoxFuture<'_, DurableEvent> {
        Box::pin(async move {
            match self.events.recv().await {
                Some(event) => event,
                None => std::future::pending().await,
            }
        })
    }

    fn settle(&mut self) -> BoxFuture<'static, ()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let queued = self.writes.try_send(writer::Task::Flush(tx)).is_ok();
        Box::pin(async move {
            if queued {
                let _ = tokio::time::timeout(Duration::from_secs(5), rx).await;
            }
        })
    }
}
