//! The Kubernetes-native durable facts: a second implementation of the
//! scheduler's `DurableState` port for `--kube` without `state.path`
//! (most clusters have no ReadWriteMany volume class). The small facts
//! that make a rollout or a leader change forgettable live in the API
//! server: pauses and resumes, pending retries, each job's last success
//! or failure, `@reboot` markers and the Prometheus job counters. The run
//! ledger (every run, archived output, crash reconciliation, the
//! `onMissed` watermark) does not: it needs `state.path`.
//!
//! Design, and why:
//! - **One ConfigMap per deployment** (`--facts-configmap`, by default
//!   `<--configmap>-facts`, else `cronstable-facts`), one compact JSON
//!   value per kind of fact in its own key (`pauses.json`,
//!   `retries.json`, `outcomes.json`, `reboot.json`, `counters.json`;
//!   [`doc`]). Not Lease annotations: the election Lease is renewed every
//!   few seconds by every candidate and its annotations already share a
//!   256 KiB budget with the `@reboot`-ran set and the last fires; facts
//!   written by the leader alone on their own object never contend with
//!   the renewals. Not the CronJobSet status: jobs of the ConfigMap and of
//!   `-c` have no set, and status is rewritten by apply from what the
//!   scheduler reports. A ConfigMap needs no CRD and `kubectl get cm -o
//!   yaml` shows it.
//! - **Bounded**: the values together stay under [`doc::BUDGET`] (512 KiB,
//!   half the object limit). Lapsed pauses and resumes go after an hour;
//!   over the budget the least useful go first, with a warning: the
//!   counters' duration histograms, then the counters of the jobs that ran
//!   longest ago (counters are the big part: about 150 bytes a job once
//!   the zero and compatibility fields are left out), then the oldest
//!   outcomes, markers, retries and pauses.
//! - **Written by the leader, coalesced**: the scheduler's writes are
//!   folded per job into a delta ([`doc::Delta`]); once a second
//!   ([`FactsSettings::interval`]), while this node may write (the same
//!   `may_write` channel the status writer follows: the leader, or the
//!   only scheduler), the keys that changed go out in one merge patch
//!   (field manager `cronstable-facts`), or one create when the object is
//!   missing. So at most one write per second whatever the fire rate, and
//!   none at idle. The write is built on the document as last read from
//!   the server, so a new leader keeps what its predecessor wrote.
//! - **Read once a second by every replica** (one GET by name, which
//!   RBAC restricts to this object with `resourceNames`; a watch would
//!   add its bookkeeping for an object that changes at most once a
//!   second): a pause or a last outcome the leader wrote reaches the
//!   followers' schedulers as a `DurableEvent` within about two seconds.
//!   At start the whole document is read back (bounded by
//!   [`FactsSettings::deadline`]): pauses, the pending retries of the
//!   deployment whatever pod armed them (the leader runs the jobs),
//!   outcomes, this pod's `@reboot` markers and the counters.
//! - **Never in a fire's way**: a write is a message to the task; a
//!   failed read publishes `DurableEvent::Available(false)` (the gates of
//!   `onStoreUnavailable: fail-closed` read it); a failed write keeps the
//!   changes for the next pass.
//! - **`@reboot`**: under leader election the election Lease's
//!   `@reboot`-ran set (`crate::cluster::records`) already decides once
//!   per cluster. The marker here covers what that does not: one
//!   scheduler without election whose container restarts in the same pod
//!   (same pod name, same node boot) does not run its `@reboot` jobs
//!   again; a new pod is a new boot.
//! - **Counters** are the deployment's, written by the leader; every
//!   replica seeds from them at start, so sum them across pods with
//!   `max`, not `sum`.

pub mod doc;
mod sync;

use crate::config::model::sections::OnStoreUnavailable;
use crate::config::JobConfig;
use crate::cronexpr::Schedule;
use crate::scheduler::durable::{
    DurableError, DurableEvent, DurableState, DurableWrite, Rehydrated, RetryConsume,
};
use crate::scheduler::history::RealOutcome;
use doc::{Facts, OutcomeFact, RebootFact, RetryFact, RetryOp};
use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

pub use sync::FIELD_MANAGER;

/// The facts ConfigMap's name when neither `--facts-configmap` nor
/// `--configmap` names one.
pub const DEFAULT_NAME: &str = "cronstable-facts";

/// The facts ConfigMap's name for `--configmap` `configmap`.
pub fn default_name(configmap: Option<&str>) -> String {
    match configmap {
        Some(name) if !name.is_empty() => format!("{name}-facts"),
        _ => DEFAULT_NAME.to_owned(),
    }
}

/// How the facts are kept.
#[derive(Debug, Clone)]
pub struct FactsSettings {
    /// The ConfigMap's name.
    pub name: String,
    /// This pod's host name (the `@reboot` markers').
    pub host: String,
    /// `state.onStoreUnavailable` (`degrade` without a `state` section).
    pub policy: OnStoreUnavailable,
    /// Time between passes: the most often the object is written, and
    /// how often it is read.
    pub interval: Duration,
    /// How long one call may take (the start's read included).
    pub deadline: Duration,
    /// Leader election decides the writer (a `cluster` section with the
    /// kubernetes backend, or gossip with `electLeader`): pending retries
    /// are then handed to whichever node becomes the writer, not armed by
    /// every replica at start.
    pub elect_leader: bool,
}

impl FactsSettings {
    /// The defaults: a pass a second, calls bounded by 5 seconds.
    pub fn new(name: String, host: String, policy: OnStoreUnavailable) -> FactsSettings {
        FactsSettings {
            name,
            host,
            policy,
            interval: Duration::from_secs(1),
            deadline: Duration::from_secs(5),
            elect_leader: false,
        }
    }
}

/// The facts ConfigMap behind the scheduler's port.
pub struct KubeFacts {
    api: Api<ConfigMap>,
    settings: FactsSettings,
    ops: mpsc::UnboundedSender<sync::Op>,
    events: mpsc::UnboundedReceiver<DurableEvent>,
    digests: HashMap<String, String>,
    writes: watch::Receiver<u64>,
}

impl KubeFacts {
    /// Starts the task over the ConfigMap in `namespace`; `may_write`
    /// says when this node writes. Must run inside the tokio runtime.
    pub fn start(
        client: kube::Client,
        namespace: &str,
        may_write: watch::Receiver<bool>,
        settings: FactsSettings,
    ) -> KubeFacts {
        let api: Api<ConfigMap> = Api::namespaced(client, namespace);
        let (ops, ops_rx) = mpsc::unbounded_channel();
        let (events_tx, events) = mpsc::unbounded_channel();
        let (writes_tx, writes) = watch::channel(0);
        let task = sync::Task {
            api: api.clone(),
            name: settings.name.clone(),
            interval: settings.interval,
            deadline: settings.deadline,
            may_write,
            events: events_tx,
            writes: writes_tx,
            hand_over: settings.elect_leader,
        };
        tokio::spawn(task.run(ops_rx));
        tracing::info!(
            target: "cronstable::state",
            "state: Kubernetes facts in ConfigMap {namespace}/{} (pauses, pending retries, last \
             outcomes for onlyIfLastSucceeded, @reboot markers, counters; the run ledger and the \
             onMissed catch-up watermark need state.path)",
            settings.name
        );
        KubeFacts {
            api,
            settings,
            ops,
            events,
            digests: HashMap::new(),
            writes,
        }
    }

    /// How many writes landed so far (for tests and the measurements).
    pub fn writes(&self) -> watch::Receiver<u64> {
        self.writes.clone()
    }

    fn send(&self, op: sync::Op) {
        // The task ends only with the runtime: a send cannot fail before.
        let _ = self.ops.send(op);
    }

    fn digest(&self, job: &str, given: &str) -> String {
        if given.is_empty() {
            self.digests.get(job).cloned().unwrap_or_default()
        } else {
            given.to_owned()
        }
    }
}

impl DurableState for KubeFacts {
    fn enabled(&self) -> bool {
        true
    }

    fn policy(&self) -> OnStoreUnavailable {
        self.settings.policy
    }

    fn retry_resume(&self) -> bool {
        // The document is the deployment's: a ladder the leader leaves
        // behind (stopped, killed, or no longer leading) stays in it for
        // the next writer.
        self.settings.elect_leader
    }

    fn consume_retry(
        &mut self,
        job: &str,
        attempt: u32,
        _serialize: bool,
    ) -> BoxFuture<'static, Result<RetryConsume, DurableError>> {
        let (reply, verdict) = tokio::sync::oneshot::channel();
        self.send(sync::Op::Consume {
            job: job.to_owned(),
            attempt,
            reply,
        });
        // The next pass writes the settle: a second at most, plus the
        // write's own deadline.
        let bound = self.settings.deadline + self.settings.interval * 2;
        Box::pin(async move {
            match tokio::time::timeout(bound, verdict).await {
                Ok(Ok(verdict)) => verdict,
                _ => Err(DurableError(format!(
                    "the facts ConfigMap did not confirm the retry's settle within {} seconds",
                    bound.as_secs()
                ))),
            }
        })
    }

    fn write(&mut self, write: DurableWrite) {
        let now = chrono::Utc::now();
        let op = match write {
            DurableWrite::Run { record, .. } => {
                let ok = match record.outcome().as_str() {
                    "success" => true,
                    "failure" => false,
                    // Not a verdict the `onlyIfLastSucceeded` gate reads.
                    _ => return,
                };
                sync::Op::Outcome(
                    record.job.clone(),
                    OutcomeFact {
                        at: record.finished_at,
                        ok,
                    },
                )
            }
            DurableWrite::RetryPending {
                job,
                attempt,
                not_before,
                digest,
            } => {
                let digest = self.digest(&job, &digest);
                sync::Op::Retry(
                    job,
                    RetryOp::Pending(RetryFact {
                        attempt,
                        due: not_before,
                        digest,
                        at: now,
                    }),
                )
            }
            DurableWrite::RetrySettled { job, attempt, .. } => {
                sync::Op::Retry(job, RetryOp::Settled(attempt))
            }
            // A hand-off needs no write here: the pending record stays in
            // the document, and the next writer is handed it.
            DurableWrite::RetryHandoff { .. } => return,
            DurableWrite::RebootMarker { job, digest } => {
                let digest = self.digest(&job, &digest);
                sync::Op::Reboot(
                    job,
                    RebootFact {
                        host: self.settings.host.clone(),
                        boot: crate::platform::boot_id(),
                        bt: crate::platform::boot_time(),
                        digest,
                        at: now,
                    },
                )
            }
            DurableWrite::Pause { job, mark } => sync::Op::Pause(job, mark),
            DurableWrite::Counters { snapshot, .. } => sync::Op::Counters(snapshot),
            // The ledger's: they need `state.path`.
            DurableWrite::InflightOpen { .. }
            | DurableWrite::InflightClosed { .. }
            | DurableWrite::SlotTakeover { .. }
            | DurableWrite::Catchup { .. } => return,
        };
        self.send(op);
    }

    fn rehydrate(
        &mut self,
        jobs: Arc<Vec<Arc<JobConfig>>>,
    ) -> BoxFuture<'static, Result<Rehydrated, DurableError>> {
        self.jobs_changed(&jobs);
        let api = self.api.clone();
        let name = self.settings.name.clone();
        let host = self.settings.host.clone();
        let deadline = self.settings.deadline;
        let digests = self.digests.clone();
        let hand_over = self.settings.elect_leader;
        Box::pin(async move {
            let data = match tokio::time::timeout(deadline, api.get_opt(&name)).await {
                Ok(Ok(found)) => found.and_then(|cm| cm.data).unwrap_or_default(),
                Ok(Err(e)) => {
                    return Err(DurableError(format!(
                        "cannot read the facts ConfigMap {name}: {e}"
                    )))
                }
                Err(_) => {
                    return Err(DurableError(format!(
                        "the facts ConfigMap {name} did not answer within {} seconds",
                        deadline.as_secs()
                    )))
                }
            };
            let (facts, warnings) = Facts::decode(&data);
            for warning in warnings {
                tracing::warn!(target: "cronstable::state", "state: the facts ConfigMap {name}: {warning}");
            }
            let mut start = rehydrated(&facts, &jobs, &digests, &host);
            if hand_over {
                // Under election the writer runs the retries: they are
                // handed to this node when it becomes the writer (as
                // `DurableEvent::RetryHandedOver`, read fresh then), never
                // armed by a replica that may only follow.
                start.retries.clear();
            }
            Ok(start)
        })
    }

    fn jobs_changed(&mut self, jobs: &Arc<Vec<Arc<JobConfig>>>) {
        self.digests = jobs
            .iter()
            .map(|j| j.name.clone())
            .zip(crate::fingerprint::job_digests(jobs.iter().map(|j| &**j)))
            .collect();
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
        self.send(sync::Op::Flush(tx));
        let bound = self.settings.deadline + self.settings.interval;
        Box::pin(async move {
            let _ = tokio::time::timeout(bound, rx).await;
        })
    }
}

/// What a start takes from the document: everything but the ledger.
fn rehydrated(
    facts: &Facts,
    jobs: &[Arc<JobConfig>],
    digests: &HashMap<String, String>,
    host: &str,
) -> Rehydrated {
    let boot = crate::platform::boot_id();
    let bt = crate::platform::boot_time();
    let reboot_ran = jobs
        .iter()
        .filter(|j| matches!(j.schedule.parsed, Schedule::Reboot))
        .filter(|j| {
            let digest = digests.get(&j.name).map(String::as_str).unwrap_or("");
            facts.reboot_covers(&j.name, host, boot.as_deref(), bt, digest)
        })
        .map(|j| j.name.clone())
        .collect();
    Rehydrated {
        runs: HashMap::new(),
        last_real: facts
            .outcomes
            .iter()
            .map(|(job, o)| {
                (
                    job.clone(),
                    RealOutcome {
                        finished_at: o.at,
                        succeeded: o.ok,
                    },
                )
            })
            .collect(),
        pauses: facts
            .pauses
            .iter()
            .filter_map(|(job, p)| Some((job.clone(), p.mark()?)))
            .collect(),
        // The facts keep the newest mark per job only (`pauses` above).
        pause_history: HashMap::new(),
        retries: facts.port_retries(),
        reboot_ran,
        reboot_survivors: Default::default(),
        watermarks: HashMap::new(),
        counters: facts.counters.clone(),
    }
}
