//! Resource pools as the scheduler sees them: the values that cross the
//! [`super::ports::Pools`] port (what to queue, which heads this node may
//! run, what a claim took, why an operation failed) and the pure rules
//! behind them ([`queue`]: the document and its admission order, [`view`]:
//! what `GET /pools` and `GET /jobs` show of it).
//!
//! A pooled job's fire, retry or manual start does not launch: it queues
//! an entry in its pool's document in the store. Whichever node may run
//! the head of the queue claims it when its slots are free (the claim is
//! a lease renewed while the run lasts), launches it, and closes the
//! entry when the run ends. A run whose lease cannot be renewed is
//! cancelled (exit -100).

pub mod queue;
pub mod view;

use queue::{Entry, Payload};
use std::collections::HashMap;

/// The namespace of the pool documents in the state store (one document
/// per pool, keyed by its name): the original's.
pub const NAMESPACE: &str = "scheduler-pools";

/// The bound on one pool operation against the store, as the original's.
pub const OP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How often held claims are renewed (a sixth of the lease).
pub const RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How often each pool's queue is looked at even when nothing here
/// changed (another node's run may have freed slots).
pub const SERVICE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a pool operation did not happen; `Display` is the sentence a
/// caller reads (the original's words): the API answers 503 for
/// [`PoolError::Unavailable`] and 409 for the others.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The job names a pool that is not configured.
    #[error("unknown pool {}", crate::pyfmt::repr_str(.0))]
    Unknown(String),
    /// The stored capacity differs from the configured one and work
    /// admitted under the old one is still there.
    #[error("pool is draining before a capacity change")]
    Draining,
    /// `maxQueued` entries are waiting.
    #[error("pool queue is full")]
    Full,
    /// No entry has the key.
    #[error("queue entry not found")]
    NotFound,
    /// The entry is running or ended.
    #[error("only waiting entries can be cancelled")]
    NotWaiting,
    /// The claim's lease lapsed between admission and launch.
    #[error("pool lease was lost before launch")]
    LostBeforeLaunch,
    /// The store cannot be read or written (an I/O error, a document that
    /// does not read, no answer within [`OP_TIMEOUT`], no store); the
    /// detail is for the log only.
    #[error("pool state is unavailable")]
    Unavailable(String),
}

impl PoolError {
    /// The store could not be reached (the API's 503).
    pub fn unavailable(&self) -> bool {
        matches!(self, PoolError::Unavailable(_))
    }
}

/// What to queue: one run of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct EnqueueRequest {
    /// The entry's key (a fresh one per fire; the same one finds the
    /// entry already queued).
    pub key: String,
    /// The job.
    pub job: String,
    /// Its pool.
    pub pool: String,
    /// Slots one run occupies.
    pub slots: u32,
    /// Its queue priority.
    pub priority: i64,
    /// Its queue timeout, seconds.
    pub timeout: f64,
    /// The job's config digest now.
    pub digest: String,
    /// How to launch it.
    pub payload: Payload,
}

/// What this node knows of one pooled job when it looks at a queue.
#[derive(Debug, Clone, PartialEq)]
pub struct JobGate {
    /// The job's pool now.
    pub pool: String,
    /// The job's config digest now.
    pub digest: String,
    /// Its scheduled work may start here now: the job is enabled, the
    /// leader gate admits it and it is not paused (manual starts skip
    /// this gate).
    pub scheduled_ok: bool,
    /// `concurrencyPolicy: Forbid`.
    pub forbid: bool,
    /// An instance runs here (Forbid then leaves the head waiting).
    pub running: bool,
}

/// Which heads of one pool this node may admit now: a value built by the
/// scheduler and judged under the store's lock, so the admission and the
/// rules it follows happen in one change of the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Eligibility {
    /// The pool.
    pub pool: String,
    /// This node's host name (entries aimed at another node wait).
    pub host: String,
    /// Every configured, enabled job of this node; a job missing here
    /// has its waiting entries cancelled.
    pub jobs: HashMap<String, JobGate>,
    /// The scheduler is stopping: nothing is admitted.
    pub stopping: bool,
}

/// The judgement on one head of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Claim it and launch it here.
    Admit,
    /// Leave it (and everything behind it) waiting.
    Wait,
    /// Cancel it: its job is gone, disabled, moved to another pool or
    /// changed since it was queued.
    Cancel,
}

impl Eligibility {
    /// The judgement on `entry`, the head of the queue.
    pub fn verdict(&self, entry: &Entry) -> Verdict {
        if self.stopping || !entry.is_job() {
            // A DAG task's entry is its DAG scheduler's to start.
            return Verdict::Wait;
        }
        if entry
            .payload
            .target_host
            .as_deref()
            .is_some_and(|h| h != self.host)
        {
            return Verdict::Wait;
        }
        let Some(gate) = self.jobs.get(&entry.job) else {
            return Verdict::Cancel;
        };
        if gate.pool != self.pool || gate.digest != entry.digest {
            return Verdict::Cancel;
        }
        let manual = entry.payload.manual == Some(true);
        if !manual && !gate.scheduled_ok {
            return Verdict::Wait;
        }
        if gate.forbid && gate.running {
            return Verdict::Wait;
        }
        Verdict::Admit
    }

    /// `entry` was admitted in this pass: a Forbid job now runs here.
    pub fn admitted(&mut self, entry: &Entry) {
        if let Some(gate) = self.jobs.get_mut(&entry.job) {
            gate.running = true;
        }
    }
}

/// A claim this node holds: the run it launches keeps it until it ends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolTicket {
    /// The pool.
    pub pool: String,
    /// The entry's key.
    pub key: String,
    /// The claim's owner string in the document.
    pub owner: String,
}

/// How a claimed entry is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closing {
    /// The run ended (recorded).
    Finished,
    /// The launch did not happen; the work goes back in line with this
    /// reason (the original's `waiting for concurrency admission`).
    Requeued(&'static str),
    /// The work will not run (the daemon stops, the job left).
    Cancelled(&'static str),
}

/// What a manual start of a pooled job answers: where it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedStart {
    /// The entry's key.
    pub queue_id: String,
    /// The pool.
    pub pool: String,
}

/// What one dispatch pass admitted for this node to launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// The claim.
    pub ticket: PoolTicket,
    /// The entry as claimed.
    pub entry: Entry,
    /// When the claim's lease, measured on this node's monotonic clock
    /// from before the store was asked, lapses: a launch after it would
    /// run without a claim.
    pub deadline: tokio::time::Instant,
}

/// What a dispatch pass answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispatchAnswer {
    /// Claims to launch, in admission order.
    pub admitted: Vec<Admitted>,
    /// Entries cancelled because their job changed (key, job).
    pub cancelled: Vec<(String, String)>,
    /// The capacity admission works against after the pass.
    pub slots: u32,
    /// Slots held after the pass.
    pub used: u32,
    /// Entries waiting after the pass.
    pub queued: usize,
    /// The pool as `GET /pools` shows it after the pass
    /// ([`view::pool_view`]); None when the document is the one the
    /// previous pass's view was made of.
    pub view: Option<serde_json::Value>,
}
