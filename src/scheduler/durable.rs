//! The `DurableState` port: what the scheduler hands the durable store of
//! the `state` section and what it reads back (see `crate::durable` for
//! the implementation over a store directory).
//!
//! The rule it is shaped by (the Durable-State page): a slow or dead store
//! never delays a plain scheduled fire. So every write is fire-and-forget
//! (queued, never awaited), the one read on the start path
//! ([`DurableState::rehydrate`]) is bounded by the implementation, and
//! what other nodes sharing the store change (pauses, runs of gated jobs)
//! arrives as [`DurableEvent`]s the scheduler folds into memory, where
//! every fire-time decision is made.

use super::history::RealOutcome;
use super::pause::PauseMark;
use crate::config::model::sections::OnStoreUnavailable;
use crate::config::JobConfig;
use crate::job::RunRecord;
use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One write for the store. None is ever awaited by the scheduler.
#[derive(Debug, Clone)]
pub enum DurableWrite {
    /// A finished (or skipped) run for the job's ledger; with `archive`,
    /// its captured output too (`archiveOutput`), redacted first when
    /// `redact` (`redactArchivedSecrets`).
    Run {
        /// The run.
        record: Arc<RunRecord>,
        /// Keep its output in the store.
        archive: bool,
        /// Scrub secrets from the archived output first.
        redact: bool,
    },
    /// The job went from no instance to one on this node.
    InflightOpen {
        /// The job.
        job: String,
        /// The first instance's pid, when it started.
        pid: Option<u32>,
        /// When it started.
        started_at: DateTime<Utc>,
        /// The job's config digest; empty: the implementation fills in the
        /// installed job's (it keeps them per job set, so no launch
        /// computes one).
        digest: String,
    },
    /// The job's last instance on this node ended.
    InflightClosed {
        /// The job.
        job: String,
    },
    /// A retry was armed: attempt `attempt` is due at `not_before`.
    RetryPending {
        /// The job.
        job: String,
        /// The attempt it will be (1 for the first retry).
        attempt: u32,
        /// The absolute deadline.
        not_before: DateTime<Utc>,
        /// The job's config digest (an edit of the job drops the retry);
        /// empty: the installed job's, filled in by the implementation.
        digest: String,
    },
    /// A retry ladder ended, or its attempt is launching (`launched`).
    RetrySettled {
        /// The job.
        job: String,
        /// The attempt the ladder was at.
        attempt: u32,
        /// Why (`launched`, `succeeded`, `superseded`, `cancelled`,
        /// `exhausted`, `owner-moved`, `removed`, `digest-changed`, ...).
        reason: &'static str,
    },
    /// This node stops a retry ladder because the cluster moved the
    /// job's ownership to another node, and cross-node retry resume is
    /// active: the attempt is handed to the new owner (a `handoff` record,
    /// due now), not ended.
    RetryHandoff {
        /// The job.
        job: String,
        /// The attempt that was due.
        attempt: u32,
        /// When the ladder's pending attempt was armed (the new owner's
        /// superseded-by-run check is anchored there, not at the hand-off).
        armed_at: DateTime<Utc>,
    },
    /// An `@reboot` job is about to run for this boot (record, then run).
    RebootMarker {
        /// The job.
        job: String,
        /// The job's config digest; empty: the installed job's, filled in
        /// by the implementation.
        digest: String,
    },
    /// A pause or resume this node accepted.
    Pause {
        /// The job.
        job: String,
        /// The pause or resume.
        mark: PauseMark,
    },
    /// A catch-up was scheduled from `watermark` (an `open` checkpoint)
    /// or completed (`close`).
    Catchup {
        /// The job.
        job: String,
        /// True for `open`, false for `close`.
        open: bool,
        /// The watermark the backfill was computed from.
        watermark: DateTime<Utc>,
    },
    /// This node just won `job`'s cluster slot: an `open` in-flight
    /// record another holder left (its node crashed or lost the store
    /// mid-run) is closed and becomes an `unknown` row (the slot-takeover
    /// reconciliation). Queued before the launch's own in-flight record.
    SlotTakeover {
        /// The job.
        job: String,
        /// The job's `onMissed` is `skip` (the row then carries a finish).
        on_missed_skip: bool,
    },
    /// The Prometheus job counters, for the next start to seed from
    /// (`force`: write now, not at most every 15 seconds).
    Counters {
        /// The snapshot (see `metrics::prometheus::Counters::snapshot`).
        snapshot: serde_json::Value,
        /// Write even within the throttle (the shutdown snapshot).
        force: bool,
    },
}

/// A retry the store remembers as pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurableRetry {
    /// The attempt it will be.
    pub attempt: u32,
    /// Its absolute deadline.
    pub not_before: DateTime<Utc>,
    /// The digest of the job it was armed for.
    pub digest: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// The verdict on a due retry, asked just before it launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryConsume {
    /// Its `launched` settle landed (or the store is down and the policy
    /// is `degrade`): launch it.
    Launch,
    /// Not now (the settle cannot land under `fail-closed`, or another
    /// node is claiming this ladder): ask again shortly.
    Defer,
    /// Another node owns the ladder now (its record is the newest): stop
    /// here, silently, writing nothing.
    Abort,
}

/// A job whose pending retry, left by another node on a shared store,
/// this node may claim (it owns the job and arms no ladder of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryClaimJob {
    /// The job.
    pub job: String,
    /// `maximumRetries` (-1: forever).
    pub maximum_retries: i64,
    /// `startingDeadlineSeconds`.
    pub starting_deadline: Option<i64>,
    /// When this node last saw a run of the job finish (a run after the
    /// ladder was armed resolved it).
    pub last_run: Option<DateTime<Utc>>,
}

/// What a start reads back from the store.
#[derive(Debug, Default)]
pub struct Rehydrated {
    /// Per job, its newest retained runs (oldest first, at most the
    /// in-memory history's size), including the rows crash reconciliation
    /// just wrote.
    pub runs: HashMap<String, Vec<RunRecord>>,
    /// Per job, its newest success or failure in the whole ledger.
    pub last_real: HashMap<String, RealOutcome>,
    /// Per job, the newest pause or resume.
    pub pauses: HashMap<String, PauseMark>,
    /// Per job, its retained pause and resume marks, oldest first: the
    /// windows a catch-up owes nothing for (lapsed ones included).
    pub pause_history: HashMap<String, Vec<PauseMark>>,
    /// Per job, a retry still pending.
    pub retries: HashMap<String, DurableRetry>,
    /// `@reboot` jobs already run during this OS boot on this host (for
    /// their current digest).
    pub reboot_ran: HashSet<String>,
    /// `@reboot` jobs whose previous daemon's run is still running here.
    pub reboot_survivors: HashSet<String>,
    /// Per `onMissed` job, the catch-up watermark: its newest recorded
    /// finish (or an open checkpoint's watermark).
    pub watermarks: HashMap<String, DateTime<Utc>>,
    /// The newest counters snapshot of this host, if any.
    pub counters: Option<serde_json::Value>,
}

/// Something another node sharing the store changed, or the store's
/// health moved.
#[derive(Debug, Clone, PartialEq)]
pub enum DurableEvent {
    /// A pause or resume recorded by any node (newest per job).
    Pause {
        /// The job.
        job: String,
        /// The mark.
        mark: PauseMark,
    },
    /// A newer real outcome of a job in the ledger (another node's run).
    LastOutcome {
        /// The job.
        job: String,
        /// The outcome.
        outcome: RealOutcome,
    },
    /// The store answers again (true) or stopped answering (false).
    Available(bool),
    /// A run another holder left unfinished was reconciled on a slot
    /// takeover: its `unknown` row, for the history (not the counters).
    Interrupted(Box<RunRecord>),
    /// A pending retry this node now owns: claimed from another node's
    /// record on a shared store (cross-node retry resume), or read from
    /// the Kubernetes facts when this node became their writer. Re-armed
    /// at its absolute deadline, like one read at start, unless a ladder
    /// of the job is already armed here.
    RetryHandedOver {
        /// The job.
        job: String,
        /// The retry, as recorded (its `recorded_at` is when it was first
        /// armed, so a run after that supersedes it).
        retry: DurableRetry,
    },
}

/// Why the store could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DurableError(pub String);

/// The durable store as the scheduler sees it.
pub trait DurableState: Send {
    /// Whether a store is configured at all (false: everything is in
    /// memory, as without a `state` section).
    fn enabled(&self) -> bool;
    /// `state.onStoreUnavailable`.
    fn policy(&self) -> OnStoreUnavailable;
    /// Queues a write; returns at once (a failed write is dropped, logged
    /// and counted by the implementation).
    fn write(&mut self, write: DurableWrite);
    /// Reads what a start needs for `jobs` (and reconciles this host's
    /// interrupted runs first). Bounded by the implementation.
    fn rehydrate(
        &mut self,
        jobs: Arc<Vec<Arc<JobConfig>>>,
    ) -> BoxFuture<'static, Result<Rehydrated, DurableError>>;
    /// The installed jobs changed (the poller follows their streams).
    fn jobs_changed(&mut self, jobs: &Arc<Vec<Arc<JobConfig>>>);
    /// Resolves with the next change from the store; pending forever when
    /// there is none. Must be cancel-safe.
    fn next_event(&mut self) -> BoxFuture<'_, DurableEvent> {
        Box::pin(std::future::pending())
    }
    /// Whether cross-node retry resume is active: a shared store and
    /// leader election (a ladder's records then move between nodes).
    fn retry_resume(&self) -> bool {
        false
    }
    /// Decides a due retry just before it launches: writes its `launched`
    /// settle first (record-before-run: a crash after the launch must not
    /// replay it), after every write queued before; with `serialize`
    /// (cross-node resume), under the job's claim lease and only while
    /// the newest ladder record is this node's. The implementation bounds
    /// the wait and applies `onStoreUnavailable` to a write that fails.
    /// By default the settle is queued like any write and the retry
    /// launches (a store that cannot confirm a write in order).
    fn consume_retry(
        &mut self,
        job: &str,
        attempt: u32,
        _serialize: bool,
    ) -> BoxFuture<'static, Result<RetryConsume, DurableError>> {
        self.write(DurableWrite::RetrySettled {
            job: job.to_owned(),
            attempt,
            reason: "launched",
        });
        Box::pin(std::future::ready(Ok(RetryConsume::Launch)))
    }
    /// Looks for pending retries other nodes left behind for `jobs` (a
    /// crashed owner's, stale past its deadline, or a hand-off) and claims
    /// them; each claimed one comes back as
    /// [`DurableEvent::RetryHandedOver`].
    fn claim_retries(&mut self, _jobs: Vec<RetryClaimJob>) {}
    /// Resolves when the queued writes are done (bounded); the drain
    /// awaits it last.
    fn settle(&mut self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// No `state` section: nothing is written or read.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDurableState;

impl DurableState for NoDurableState {
    fn enabled(&self) -> bool {
        false
    }
    fn policy(&self) -> OnStoreUnavailable {
        OnStoreUnavailable::Degrade
    }
    fn write(&mut self, _write: DurableWrite) {}
    fn rehydrate(
        &mut self,
        _jobs: Arc<Vec<Arc<JobConfig>>>,
    ) -> BoxFuture<'static, Result<Rehydrated, DurableError>> {
        Box::pin(std::future::ready(Ok(Rehydrated::default())))
    }
    fn jobs_changed(&mut self, _jobs: &Arc<Vec<Arc<JobConfig>>>) {}
}
