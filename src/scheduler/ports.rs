//! The ports the scheduler depends on, and the in-core implementations.
//!
//! The scheduler owns the job table, the running instances and the launch
//! gates; everything it asks the outside world goes through one of these
//! small traits. A new backend implements a port and is named in
//! `crate::daemon`, where the implementations are picked; see
//! docs/architecture.md for the few times a new kind of backend made a
//! port grow.
//!
//! | Port              | Role                                                        | Here                     | At the edges |
//! |-------------------|-------------------------------------------------------------|--------------------------|--------------|
//! | [`JobSource`]     | delivers each new validated job set                         |                          | `source::FileSource`, `kube::source::KubeSource` |
//! | [`LeaderGate`]    | "may this node launch this job now?" (clusterPolicy)        | [`Standalone`]           | `cluster::ClusterGate` |
//! | [`LeaderRecords`] | the cluster's `@reboot`-ran set and last fires              | none without election    | `cluster::records::RecordsHandle` |
//! | [`SlotLock`]      | the cluster-wide slot of a `concurrencyScope: cluster` job  | [`NoSlots`]              | `cluster::slots::ClusterSlots` |
//! | [`RunStore`]      | finished runs, pending retries and pauses                   | [`MemoryStore`]          |              |
//! | [`Pools`]         | resource pool queues and claims shared through the store    | [`NoPools`]              | `cluster::pools::StorePools` |
//! | [`Clock`]         | wall-clock time and waiting for it                          | [`SystemClock`]          |              |

pub use super::history::RealOutcome;
use super::history::RunHistory;
use super::pause::{PauseMark, PauseWindow};
use crate::config::model::{ClusterPolicy, ConcurrencyScope};
use crate::config::JobConfig;
use crate::job::{RunRecord, Trigger};
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One validated job set, as a source hands it to the scheduler.
#[derive(Debug)]
pub struct JobSet {
    /// Every job, in the order the source defines (the API lists them so),
    /// without its merged spec (only the load needs it). Shared, so a
    /// source that keeps its jobs between deliveries hands out pointers,
    /// not copies.
    pub jobs: Vec<Arc<JobConfig>>,
    /// The job-set id of `jobs` (computed by the source, which knows when
    /// its input changed; the scheduler only installs and reports it).
    pub job_set_id: String,
    /// Where the jobs came from, for log lines and the next engineer:
    /// file paths for the file source, object names for Kubernetes.
    pub sources: Vec<String>,
    /// When the source began producing this set (a reload's start). The
    /// scheduler keeps boundaries that passed since then due, so a slow
    /// load never loses a fire.
    pub requested_at: DateTime<Utc>,
    /// Jobs whose scheduled fires (boundaries, catch-up, `@reboot`) are
    /// held: a suspended CronJobSet's. Manual starts and the retries of a
    /// run that already started still happen, as for a suspended
    /// Kubernetes CronJob. Empty for files, which have no such switch.
    pub suspended: HashSet<String>,
}

/// Where the scheduler's jobs come from.
///
/// A source has two ways to deliver a set, both consumed by the scheduler
/// task so the table swap always goes through the boundary catch-up:
/// [`JobSource::poll`] is asked at the start of every scheduler pass (so a
/// change that lands before a boundary applies to that boundary's fires, as
/// the original's per-pass config check does), and [`JobSource::next`] is
/// awaited alongside the scheduler's other events for changes announced
/// out of band (a SIGHUP, a watch event). A source that cannot produce a
/// valid set keeps quiet: the running jobs stay as they are.
pub trait JobSource: Send {
    /// A new set, if the source has one right now. Must not block for
    /// long: the scheduler's pass waits for it.
    fn poll(&mut self) -> Option<JobSet>;

    /// Resolves with the next set announced out of band; pending forever
    /// when the source has no such channel. Must be cancel-safe: the
    /// scheduler drops the future whenever another event wins the select.
    fn next(&mut self) -> BoxFuture<'_, JobSet>;
}

/// The leader gate's answer for one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Launch here.
    Launch,
    /// Not here, not now, and not worth asking again for this occurrence
    /// (another node owns the job). A scheduled fire is skipped; a retry
    /// ladder ends here, as another node now owns the job.
    Skip,
    /// Not now, but the denial is transient (lost quorum, a converging
    /// view). A scheduled fire is skipped like [`Admission::Skip`]; a
    /// pending retry is deferred and asks again.
    Defer,
}

/// "May this node launch this job now?"
///
/// Consulted for scheduled launches (boundaries, catch-up, `@reboot`) and
/// before every automatic retry; manual starts through the API are never
/// gated, so an operator can run a job on any node. The answer follows the
/// job's `clusterPolicy`: `Leader` launches only on the elected leader (and
/// fails closed when leadership is unknown), `PreferLeader` on the lowest
/// reachable agreeing node (and runs anyway when it cannot tell: never-skip,
/// may double-run), `EveryNode` always launches.
pub trait LeaderGate: Send {
    /// The verdict for one launch of `job` caused by `trigger` (never
    /// [`Trigger::Manual`]: those are not gated).
    fn admit(&self, job: &JobConfig, trigger: Trigger) -> Admission;

    /// The scheduler starts its drain: a gate backed by a lease gives it
    /// up now (the seed: release before the drain), so a survivor takes
    /// over at once while this node's running jobs finish. Must not
    /// block; the release runs elsewhere.
    fn step_down(&mut self) {}

    /// The cluster's records in the leadership store; `None` when leader
    /// election is not configured (then `@reboot` runs at start and there
    /// is no failover to catch up after).
    fn records(&self) -> Option<Arc<dyn LeaderRecords>> {
        None
    }

    /// A number that changes every time this node gains leadership (0 when
    /// it never led). The scheduler compares it between passes to notice a
    /// takeover and catch up the fires of the takeover window.
    fn leadership_term(&self) -> u64 {
        0
    }

    /// Whether a `cluster` section is in force: leadership and job owners
    /// then move on the backend's task rather than with the scheduler's
    /// own events, so a rendering of the job table cannot be reused.
    fn clustered(&self) -> bool {
        false
    }

    /// The node that runs `job` as this node sees it, for `GET /jobs`'
    /// `clusterOwner`: `None` when no per-job owner applies (no election,
    /// single-leader, an `EveryNode` job); `Some(None)` when one applies
    /// but none can be named (no quorum). Always `None` while no cluster
    /// section is configured: a snapshot of every job asks only when
    /// [`LeaderGate::clustered`] says one is.
    fn owner(&self, job: &JobConfig) -> Option<Option<String>> {
        let _ = job;
        None
    }

    /// Which node runs `job`'s scheduled fires, as this node sees it now:
    /// the control API answers a start, cancel, pause or resume here only
    /// when it is this node, and names the other one otherwise.
    fn runner(&self, job: &JobConfig) -> Runner {
        let _ = job;
        Runner::Here
    }
}

/// Who runs a job's scheduled fires (see [`LeaderGate::runner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runner {
    /// This node, and not as the cluster's single runner: no election, an
    /// `EveryNode` job, or a `PreferLeader` job while no leader is known
    /// (it then runs on every node).
    Here,
    /// This node, as the elected leader (or the job's owner): what is
    /// decided about the job here is recorded for the next leader.
    Leader,
    /// Another node, named.
    Elsewhere(String),
    /// A node the cluster has not settled on yet (no quorum, nobody holds
    /// the lease, the backend is down or stepping down): nobody can say.
    Unknown,
}

/// Why the leadership store could not answer a records request.
/// `Display` is the text the scheduler's WARNING lines show in
/// parentheses (`... keeping it pending (<why>)`).
///
/// The store clients' own errors (etcd, Kubernetes, the directory) live
/// above the scheduler, so they arrive here as their text in
/// [`RecordsError::Store`]; the type stays comparable, which the records
/// tests rely on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordsError {
    /// Election is configured but no backend runs right now (it failed to
    /// start, or a reload is restarting it).
    #[error("no leadership backend is running")]
    NoBackend,
    /// A write from a node that does not hold the lease.
    #[error("not the leader")]
    NotLeader,
    /// The store did not answer within the request's bound.
    #[error("the store did not answer")]
    NoAnswer,
    /// The backend keeps no cluster records at all.
    #[error("this backend keeps no cluster records")]
    NoRecords,
    /// The backend keeps some records but not this kind (the gossip
    /// backend keeps no last fires).
    #[error("not supported by the {backend} backend")]
    NotSupported {
        /// The backend's name.
        backend: &'static str,
    },
    /// Other writers kept changing an etcd key: every compare-and-swap
    /// lost.
    #[error("{key} kept changing; not written after {attempts} attempts")]
    KeyKeptChanging {
        /// The etcd key.
        key: String,
        /// How many writes were tried.
        attempts: usize,
    },
    /// Other writers kept changing the Lease holding the records: every
    /// replace conflicted.
    #[error("the Lease kept changing; {key} not written after {attempts} attempts")]
    LeaseKeptChanging {
        /// The annotation written.
        key: String,
        /// How many writes were tried.
        attempts: usize,
    },
    /// The store refused or failed; the text (the store client's own
    /// error) says why.
    #[error("{0}")]
    Store(String),
}

/// What the leadership store remembers for the whole cluster besides who
/// leads: which `@reboot` jobs already ran (so a failover holder does not
/// run them again) and the last scheduled fire each catch-up job launched
/// (so a new leader can run the fires that fell in the takeover window).
///
/// Every call is bounded by the backend (a store that hangs answers
/// [`RecordsError::Store`]); the futures own what they need, so the
/// scheduler can spawn them and carry on.
pub trait LeaderRecords: Send + Sync {
    /// The `@reboot` jobs of the job set `job_set_id` recorded as run
    /// anywhere in the cluster (records of another job-set id do not
    /// count: a changed job set runs its `@reboot` jobs again).
    fn reboot_ran(
        &self,
        job_set_id: &str,
    ) -> BoxFuture<'static, Result<HashSet<String>, RecordsError>>;
    /// Records that `job` of `job_set_id` is about to run its `@reboot`
    /// launch (record, then run: a crash in between loses the run rather
    /// than doubling it).
    fn mark_reboot_ran(
        &self,
        job_set_id: &str,
        job: &str,
    ) -> BoxFuture<'static, Result<(), RecordsError>>;
    /// The last scheduled fire recorded for each job.
    fn last_fires(
        &self,
    ) -> BoxFuture<'static, Result<HashMap<String, DateTime<Utc>>, RecordsError>>;
    /// Records that the fire of `job` scheduled for `at` is about to
    /// launch (before the launch, for the same reason as above).
    fn record_fire(
        &self,
        job: &str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'static, Result<(), RecordsError>>;
    /// The pauses and resumes recorded per job (the newest mark of each;
    /// lapsed ones may be among them). A store that keeps none answers
    /// [`RecordsError::NoRecords`] or [`RecordsError::NotSupported`].
    fn pauses(&self) -> BoxFuture<'static, Result<HashMap<String, PauseMark>, RecordsError>> {
        Box::pin(std::future::ready(Err(RecordsError::NoRecords)))
    }
    /// Records a pause or a resume of `job` accepted by this node as the
    /// leader (kept unless a newer mark of the job is already there).
    fn record_pause(
        &self,
        job: &str,
        mark: PauseMark,
    ) -> BoxFuture<'static, Result<(), RecordsError>> {
        let _ = (job, mark);
        Box::pin(std::future::ready(Err(RecordsError::NoRecords)))
    }
}

/// The gate of a daemon without leader election: every node runs every
/// job, whatever its `clusterPolicy` says (the manual: election off, run).
#[derive(Debug, Clone, Copy, Default)]
pub struct Standalone;

impl LeaderGate for Standalone {
    fn admit(&self, _job: &JobConfig, _trigger: Trigger) -> Admission {
        Admission::Launch
    }
}

/// What a slot claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotClaim {
    /// The slot is ours (or already was).
    Claimed,
    /// Replace: the slot's holder on another node was asked to yield and
    /// did; the slot is ours now.
    ClaimedAfterYield,
    /// Forbid: a live instance on another node holds it; the name is that
    /// node's.
    HeldBy(String),
    /// Replace: the holder (named) was asked to yield but kept the slot
    /// past the pursuit's deadline (`waited_secs`); this launch is
    /// skipped (no-run over double-run).
    NotYielded {
        /// The holder's node name.
        holder: String,
        /// How long the pursuit waited, seconds.
        waited_secs: f64,
    },
    /// The store cannot answer (down, hung, untrustworthy locks).
    Unavailable {
        /// Why, in the original's words (`the state store is
        /// unavailable`, `the store did not answer`, a lock-fidelity
        /// reason).
        reason: String,
        /// `onStoreUnavailable: fail-closed` (skip); otherwise the launch
        /// goes ahead, policed on this node only (`degrade`).
        fail_closed: bool,
    },
}

/// A request from another node that this node yield a job's slot (a
/// cluster Replace there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotYield {
    /// The job.
    pub job: String,
    /// The requesting node's name.
    pub by: String,
}

/// What `GET /jobs` shows of a cluster-scoped job's slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotView {
    /// This node holds the slot.
    pub held: bool,
    /// The holder as last seen by this node (its node name), if known.
    pub holder: Option<String>,
}

/// The cluster-wide slot of a job with `concurrencyScope: cluster`.
///
/// The local concurrency check always runs first; a launch that clears it
/// then claims the job's slot, so Forbid and Replace also see instances on
/// other nodes sharing the store. Jobs with `concurrencyScope: node` or
/// `concurrencyPolicy: Allow` never reach the lock.
///
/// The scheduler runs on one thread and must never wait on a store, so a
/// claim is a future it spawns; the answer comes back as an event. The
/// scheduler claims once per job while instances run here and releases
/// when the last one ends; in between the implementation renews the slot
/// in the background (a crashed holder's slot frees after one TTL) and
/// watches for other nodes' requests to yield it.
pub trait SlotLock: Send {
    /// Claims `job`'s slot for a launch about to happen here. Each store
    /// operation is bounded; a Replace pursuit (asking the holder to
    /// yield, then waiting for the slot) happens inside the future.
    fn claim(&mut self, job: &JobConfig) -> BoxFuture<'static, SlotClaim>;
    /// Gives the slot back (the job's last local instance ended); runs in
    /// the background, a failure only logged (the slot then frees by TTL).
    fn release(&mut self, job: &str);
    /// Resolves with the next request from another node to yield a slot
    /// this node holds; pending forever when there is none. Must be
    /// cancel-safe: the scheduler drops it whenever another event wins.
    fn next_yield(&mut self) -> BoxFuture<'_, SlotYield> {
        Box::pin(std::future::pending())
    }
    /// What this node knows of `job`'s slot, without asking the store.
    fn view(&self, _job: &str) -> SlotView {
        SlotView::default()
    }
    /// Resolves when the releases already asked for are done (each is
    /// bounded); the drain awaits it last, so a slot given back as the
    /// daemon stops is free for the other nodes at once, not after a TTL.
    fn settle(&mut self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// No slot store configured: there is no cluster, so every claim
/// succeeds and the local check is the whole story.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSlots;

impl SlotLock for NoSlots {
    fn claim(&mut self, _job: &JobConfig) -> BoxFuture<'static, SlotClaim> {
        Box::pin(std::future::ready(SlotClaim::Claimed))
    }
    fn release(&mut self, _job: &str) {}
}

/// The resource pools: queues of pooled work in a store every node
/// shares, and the claims that let this node run it.
///
/// Every store operation is a future the scheduler spawns (each bounded
/// by [`super::pools::OP_TIMEOUT`]); answers come back as events. Claims
/// this node holds are renewed in the background every
/// [`super::pools::RENEW_EVERY`]; one that cannot be renewed is reported
/// by [`Pools::next_lost`] and its run must stop.
pub trait Pools: Send {
    /// The pools configured now (changes with a reload).
    fn table(&self) -> Arc<crate::config::sections::PoolTable>;
    /// This node's name as queue entries aimed at it carry it.
    fn host(&self) -> String;
    /// Queues one run (or finds it queued under its key).
    fn enqueue(
        &mut self,
        request: super::pools::EnqueueRequest,
    ) -> BoxFuture<'static, Result<super::pools::queue::Entry, super::pools::PoolError>>;
    /// Admits the heads of `gates.pool` this node may run, in order, while
    /// they fit; the claims it answers are held (and renewed) from then on.
    fn dispatch(
        &mut self,
        gates: super::pools::Eligibility,
    ) -> BoxFuture<'static, Result<super::pools::DispatchAnswer, super::pools::PoolError>>;
    /// Closes a claim this node holds. The close runs in the background
    /// (a close the store refuses is tried again every renewal round, and
    /// the claim is not renewed meanwhile); the future resolves once this
    /// first attempt is over, for a caller that wants to look at the pool
    /// after it.
    fn close(
        &mut self,
        ticket: &super::pools::PoolTicket,
        how: super::pools::Closing,
    ) -> BoxFuture<'static, ()>;
    /// Cancels a waiting entry (an operator's request).
    fn cancel(
        &self,
        pool: &str,
        key: &str,
    ) -> BoxFuture<'static, Result<super::pools::queue::Entry, super::pools::PoolError>>;
    /// Every configured pool as `GET /pools` shows it.
    fn snapshot(
        &self,
    ) -> BoxFuture<'static, Result<Vec<serde_json::Value>, super::pools::PoolError>>;
    /// Resolves with the next claim whose lease could not be renewed;
    /// pending forever when none is held. Cancel-safe.
    fn next_lost(&mut self) -> BoxFuture<'_, super::pools::PoolTicket> {
        Box::pin(std::future::pending())
    }
    /// Resolves once the closes asked for have landed (or given up); the
    /// drain awaits it so the slots are free for other nodes at once.
    fn settle(&mut self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// No pool store: no pools can be configured (the load refuses them
/// without a `state` section), or the store did not open; every
/// operation answers that pool state is unavailable.
#[derive(Debug, Default)]
pub struct NoPools {
    /// The pools configured, if any (shown as unavailable).
    pub table: Arc<crate::config::sections::PoolTable>,
}

impl Pools for NoPools {
    fn table(&self) -> Arc<crate::config::sections::PoolTable> {
        Arc::clone(&self.table)
    }
    fn host(&self) -> String {
        crate::platform::host_name().to_owned()
    }
    fn enqueue(
        &mut self,
        _request: super::pools::EnqueueRequest,
    ) -> BoxFuture<'static, Result<super::pools::queue::Entry, super::pools::PoolError>> {
        Box::pin(std::future::ready(Err(no_pool_store())))
    }
    fn dispatch(
        &mut self,
        _gates: super::pools::Eligibility,
    ) -> BoxFuture<'static, Result<super::pools::DispatchAnswer, super::pools::PoolError>> {
        Box::pin(std::future::ready(Err(no_pool_store())))
    }
    fn close(
        &mut self,
        _ticket: &super::pools::PoolTicket,
        _how: super::pools::Closing,
    ) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
    fn cancel(
        &self,
        _pool: &str,
        _key: &str,
    ) -> BoxFuture<'static, Result<super::pools::queue::Entry, super::pools::PoolError>> {
        Box::pin(std::future::ready(Err(no_pool_store())))
    }
    fn snapshot(
        &self,
    ) -> BoxFuture<'static, Result<Vec<serde_json::Value>, super::pools::PoolError>> {
        Box::pin(std::future::ready(Err(no_pool_store())))
    }
}

fn no_pool_store() -> super::pools::PoolError {
    super::pools::PoolError::Unavailable("no pool store is open".into())
}

/// True when a launch of `job` must also hold its cluster slot.
pub fn needs_slot(job: &JobConfig) -> bool {
    job.concurrency_scope == ConcurrencyScope::Cluster
        && job.concurrency_policy != crate::config::model::ConcurrencyPolicy::Allow
}

/// The `clusterPolicy` spelling the metrics and API show.
pub fn cluster_policy_name(policy: ClusterPolicy) -> &'static str {
    match policy {
        ClusterPolicy::Leader => "Leader",
        ClusterPolicy::PreferLeader => "PreferLeader",
        ClusterPolicy::EveryNode => "EveryNode",
    }
}

/// A retry waiting for its delay, as the store remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRetry {
    /// The attempt it will be (1 for the first retry).
    pub attempt: u32,
    /// When it is due (a pause may push it later).
    pub due: DateTime<Utc>,
}

/// Where finished runs, pending retries and pauses are recorded and read
/// back: the history behind `/jobs/{name}/runs`, the pause windows the
/// launch gates honour. A durable store lets them survive a restart; the
/// scheduler only ever talks to this trait.
pub trait RunStore: Send {
    /// Records a finished (or skipped) run.
    fn record_run(&mut self, run: RunRecord);
    /// A job's retained runs, newest first.
    fn runs_newest_first(&self, job: &str) -> Vec<&RunRecord>;
    /// The job's newest success or failure by finish time, even when
    /// skipped or cancelled rows have since pushed it out of the retained
    /// runs (the `onlyIfLastSucceeded` gate reads it).
    fn last_real_outcome(&self, job: &str) -> Option<RealOutcome>;
    /// Takes in a real outcome known from elsewhere (the durable ledger:
    /// an earlier process, another node); kept when newer than the one
    /// held.
    fn note_real_outcome(&mut self, job: &str, outcome: RealOutcome);
    /// Records a pause (replacing an older one).
    fn set_pause(&mut self, job: &str, window: PauseWindow);
    /// The job's recorded pause, lapsed or not.
    fn pause(&self, job: &str) -> Option<&PauseWindow>;
    /// Forgets a pause; true when there was one.
    fn clear_pause(&mut self, job: &str) -> bool;
    /// Records that a retry of `job` is pending.
    fn set_retry(&mut self, job: &str, retry: PendingRetry);
    /// Forgets `job`'s pending retry (it ran, or the ladder ended).
    fn clear_retry(&mut self, job: &str);
    /// The job's pending retry, if any.
    fn pending_retry(&self, job: &str) -> Option<&PendingRetry>;
    /// Forgets everything about jobs that are no longer configured.
    fn retain_jobs(&mut self, keep: &dyn Fn(&str) -> bool);
}

/// The in-memory store: everything is lost on restart, as in the original
/// without a state section.
#[derive(Debug, Default)]
pub struct MemoryStore {
    history: RunHistory,
    pauses: HashMap<String, PauseWindow>,
    retries: HashMap<String, PendingRetry>,
}

impl RunStore for MemoryStore {
    fn record_run(&mut self, run: RunRecord) {
        self.history.record(run);
    }
    fn runs_newest_first(&self, job: &str) -> Vec<&RunRecord> {
        self.history.newest_first(job)
    }
    fn last_real_outcome(&self, job: &str) -> Option<RealOutcome> {
        self.history.last_real_outcome(job)
    }
    fn note_real_outcome(&mut self, job: &str, outcome: RealOutcome) {
        self.history.note_real_outcome(job, outcome);
    }
    fn set_pause(&mut self, job: &str, window: PauseWindow) {
        self.pauses.insert(job.to_owned(), window);
    }
    fn pause(&self, job: &str) -> Option<&PauseWindow> {
        self.pauses.get(job)
    }
    fn clear_pause(&mut self, job: &str) -> bool {
        self.pauses.remove(job).is_some()
    }
    fn set_retry(&mut self, job: &str, retry: PendingRetry) {
        self.retries.insert(job.to_owned(), retry);
    }
    fn clear_retry(&mut self, job: &str) {
        self.retries.remove(job);
    }
    fn pending_retry(&self, job: &str) -> Option<&PendingRetry> {
        self.retries.get(job)
    }
    fn retain_jobs(&mut self, keep: &dyn Fn(&str) -> bool) {
        self.history.retain_jobs(keep);
        self.pauses.retain(|name, _| keep(name));
        self.retries.retain(|name, _| keep(name));
    }
}

/// Wall-clock time, and waiting until a wall-clock instant.
///
/// Schedules are wall-clock (a boundary is 12:00:00 UTC, not "60 s after
/// start"), so the scheduler reads this clock for every decision; tests put
/// a clock here that follows tokio's paused time instead of sleeping.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
    /// Resolves once [`Clock::now`] has reached `at`.
    fn sleep_until(&self, at: DateTime<Utc>) -> BoxFuture<'static, ()>;
}

/// How long before a wall-clock deadline [`SystemClock`] hands over from
/// tokio's millisecond timer to the platform's precise one: more than the
/// millisecond tokio may add, so the hand-over is not itself late.
const PRECISE_FINISH: std::time::Duration = std::time::Duration::from_millis(3);

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            // Re-reading the clock after each sleep: a timer that fires a
            // hair early (or a clock step) must not start a pass before `at`.
            loop {
                let left = match (at - Utc::now()).to_std() {
                    Ok(d) if !d.is_zero() => d,
                    _ => return,
                };
                if left > PRECISE_FINISH {
                    // tokio's timer wakes in whole milliseconds, late by up
                    // to one: the bulk of the wait here, the rest below.
                    tokio::time::sleep(left - PRECISE_FINISH).await;
                } else if crate::platform::wait_for_wall_clock(at.into())
                    .await
                    .is_err()
                {
                    // No precise timer (descriptors exhausted, say): the
                    // coarse one is late by a millisecond, not wrong.
                    tokio::time::sleep(left).await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::RecordsError;

    /// The words the scheduler's WARNING lines quote for each refusal.
    #[test]
    fn records_errors_keep_their_words() {
        for (error, text) in [
            (RecordsError::NoBackend, "no leadership backend is running"),
            (RecordsError::NotLeader, "not the leader"),
            (RecordsError::NoAnswer, "the store did not answer"),
            (
                RecordsError::NoRecords,
                "this backend keeps no cluster records",
            ),
            (
                RecordsError::NotSupported { backend: "gossip" },
                "not supported by the gossip backend",
            ),
            (
                RecordsError::KeyKeptChanging {
                    key: "cronstable/leader/last-fires".into(),
                    attempts: 3,
                },
                "cronstable/leader/last-fires kept changing; not written after 3 attempts",
            ),
            (
                RecordsError::LeaseKeptChanging {
                    key: "cronstable.io/reboot-ran".into(),
                    attempts: 3,
                },
                "the Lease kept changing; cronstable.io/reboot-ran not written after 3 attempts",
            ),
            (RecordsError::Store("etcd: 503".into()), "etcd: 503"),
        ] {
            assert_eq!(error.to_string(), text);
        }
    }
}

/// What the job endpoint hands one run: the environment that reaches it
/// (`CRONSTABLE_STATE_URL`, its bearer token, ...) and the token to give
/// back when the run is over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunGrant {
    /// Variables set in the run's environment, after the job's own (so a
    /// job cannot override them).
    pub env: Vec<(String, String)>,
    /// The run's bearer token, revoked with [`RunGrants::release`].
    pub token: Option<String>,
    /// The values masked in the run's output (its staged secrets).
    pub masks: Vec<String>,
}

/// The job-facing endpoint as the scheduler sees it: a run is granted its
/// identity just before it spawns and gives it back once it is over.
pub trait RunGrants: Send + Sync {
    /// Mints `job`'s run identity (token, run id, staged secrets) for
    /// retry number `attempt` of the fire at `scheduled_at`. Cheap: no
    /// network, at most a small secret file read.
    fn grant(
        &self,
        job: &JobConfig,
        attempt: u32,
        scheduled_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> RunGrant;
    /// The run is over: its token stops working, its secrets are dropped
    /// and its job locks are released.
    fn release(&self, token: &str);
}

/// No job endpoint: runs get nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRunGrants;

impl RunGrants for NoRunGrants {
    fn grant(
        &self,
        _job: &JobConfig,
        _attempt: u32,
        _scheduled_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> RunGrant {
        RunGrant::default()
    }
    fn release(&self, _token: &str) {}
}
