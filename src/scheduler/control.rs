//! Requests the HTTP API sends to the scheduler, and the snapshots it gets
//! back. The scheduler task answers them between its other events, so the
//! API always sees one consistent state and never locks anything.

use super::pause::{PauseRequest, PauseWindow};
use super::ports::RecordsError;
use crate::config::JobConfig;
use crate::job::outcome::{Outcome, RunRecord};
use crate::job::LiveOutput;
use crate::metrics::prometheus::Snapshot as MetricsSnapshot;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Why a control request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// No such job (404).
    #[error("job '{0}' not found")]
    NotFound(String),
    /// The request conflicts with the job's state (409).
    #[error("{0}")]
    Conflict(String),
    /// The request itself is invalid (400).
    #[error("{0}")]
    BadRequest(String),
    /// The scheduler is gone (shutting down).
    #[error("the scheduler is not running")]
    Unavailable,
    /// Another node runs the job's scheduled fires (409): the request
    /// belongs there.
    #[error(
        "job '{job}' runs on node '{runner}', not on this node: send the request to '{runner}'"
    )]
    Elsewhere {
        /// The job.
        job: String,
        /// The node that runs it.
        runner: String,
    },
    /// The job runs on the cluster's leader and none is known now (503).
    #[error(
        "job '{job}' runs on the cluster's leader, and no leader is known right now: try again \
         once one is elected"
    )]
    NoRunner {
        /// The job.
        job: String,
    },
    /// A resource pool refused (409) or its state could not be read or
    /// written (503); the text is the pool's own.
    #[error("{0}")]
    Pool(super::pools::PoolError),
    /// The leader took the pause or resume but could not record it for
    /// the next leader (503).
    #[error(
        "job '{job}' was {action} on this node, but the cluster's leadership store did not \
         record it ({reason}), so a new leader would not know: send the request again"
    )]
    NotRecorded {
        /// The job.
        job: String,
        /// `paused` or `resumed`.
        action: &'static str,
        /// Why the store did not record it.
        reason: RecordsError,
    },
}

/// The leadership store write that makes a pause or resume hold on the
/// next leader; the API thread awaits it before answering.
pub struct Recording(futures_util::future::BoxFuture<'static, Result<(), RecordsError>>);

impl Recording {
    /// Wraps a store write.
    pub(super) fn new(
        write: futures_util::future::BoxFuture<'static, Result<(), RecordsError>>,
    ) -> Self {
        Recording(write)
    }

    /// Waits for the write; a store that keeps no pauses (the gossip
    /// backend) counts as done.
    async fn done(self) -> Result<(), RecordsError> {
        match self.0.await {
            Err(RecordsError::NoRecords | RecordsError::NotSupported { .. }) => Ok(()),
            other => other,
        }
    }
}

impl std::fmt::Debug for Recording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recording")
    }
}

/// A pool store operation the API thread awaits itself (the scheduler
/// only starts it).
pub struct PoolRead<T>(
    futures_util::future::BoxFuture<'static, Result<T, super::pools::PoolError>>,
);

impl<T> PoolRead<T> {
    /// Wraps a store operation.
    pub(super) fn new(
        op: futures_util::future::BoxFuture<'static, Result<T, super::pools::PoolError>>,
    ) -> Self {
        PoolRead(op)
    }
}

impl<T> std::fmt::Debug for PoolRead<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PoolRead")
    }
}

pub use super::pools::QueuedStart;

/// A job's most recent finished run, without its output.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Verdict.
    pub outcome: Outcome,
    /// Exit code (none for a skipped slot).
    pub exit_code: Option<i32>,
    /// Start (none for a skipped slot).
    pub started_at: Option<DateTime<Utc>>,
    /// End.
    pub finished_at: DateTime<Utc>,
    /// Seconds.
    pub duration: Option<f64>,
    /// Why it failed.
    pub fail_reason: Option<String>,
}

impl RunSummary {
    /// Summarizes a record.
    pub fn of(record: &RunRecord) -> Self {
        let skipped = record.skip_reason.is_some() || record.interrupted;
        RunSummary {
            outcome: record.outcome(),
            exit_code: (!skipped).then_some(record.retcode),
            started_at: (!skipped).then_some(record.started_at),
            finished_at: record.finished_at,
            duration: record.duration_seconds(),
            fail_reason: record.fail_reason.clone(),
        }
    }
}

/// An armed retry ladder, as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryView {
    /// Retries performed so far.
    pub attempt: u32,
    /// `maximumRetries`, `None` when unlimited.
    pub max_attempts: Option<i64>,
}

/// Everything the API shows about one job.
#[derive(Debug, Clone)]
pub struct JobSnapshot {
    /// The job.
    pub config: Arc<JobConfig>,
    /// Pids of running instances that started.
    pub pids: Vec<u32>,
    /// Any instance running.
    pub running: bool,
    /// Next scheduled fire.
    pub next_fire: Option<DateTime<Utc>>,
    /// Enabled but the schedule has no future occurrence.
    pub never_fires: bool,
    /// Latest finished run.
    pub last_run: Option<RunSummary>,
    /// Oldest-first tail of recent outcomes and durations.
    pub history: Vec<(Outcome, Option<f64>)>,
    /// Active pause.
    pub paused: Option<PauseWindow>,
    /// Armed retry ladder.
    pub retry: Option<RetryView>,
    /// The cluster-wide slot, for `concurrencyScope: cluster` jobs only.
    pub slot: Option<SlotSnapshot>,
    /// Leader election is configured (the API then shows `clusterPolicy`).
    pub election: bool,
    /// A deferred `@reboot` job still waiting for the cluster's verdict.
    pub reboot_pending: bool,
    /// The per-job owner under `distribution: spread` (`clusterOwner`):
    /// `None` when none applies, `Some(None)` below quorum.
    pub owner: Option<Option<String>>,
    /// A running instance's `verify` check is running.
    pub verifying: bool,
    /// The live CPU and memory of the running instances that are
    /// resource-monitored and have been sampled, added up.
    pub running_resources: Option<crate::job::monitor::LiveTotal>,
    /// The `sla` checks, for a job with any.
    pub sla: Option<super::sla::SlaView>,
    /// A pooled job's place in its pool, as this node last saw the pool.
    pub pool: Option<PoolQueueSnapshot>,
}

/// A pooled job's queue and claims, from the newest look at its pool
/// (at most about a second old).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolQueueSnapshot {
    /// Its waiting entries in queue order (the pool view's rows).
    pub queued: Vec<serde_json::Value>,
    /// Its running entries: key, slots, the node holding it, lease end.
    pub holders: Vec<serde_json::Value>,
    /// The pool's state could not be read on the last look.
    pub unavailable: bool,
}

/// What `GET /status` shows, for every job at once: the job table itself
/// (shared, not copied), each job's next fire and the running jobs' pids.
/// Answering it costs the scheduler's thread one pass over its remembered
/// next fires and one over its running set: no per-job lookup by name and
/// no per-job reference count, which with 10,000 jobs were most of it.
#[derive(Debug, Clone)]
pub struct StatusTable {
    /// The job table, in config order.
    pub jobs: Arc<Vec<Arc<JobConfig>>>,
    /// Which table this is: moves whenever the scheduler installs a new
    /// one, so what is derived from one table (escaped names) can be kept
    /// until it moves.
    pub table_id: u64,
    /// Each job's next fire, by position in `jobs`.
    pub next_fires: Vec<Option<DateTime<Utc>>>,
    /// The jobs with a running instance: position in `jobs` (ascending)
    /// and the pids of the instances that started.
    pub running: Vec<(usize, Vec<u32>)>,
}

/// A cluster-scoped job's slot as this node sees it (`GET /jobs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotSnapshot {
    /// This node holds the slot.
    pub held: bool,
    /// This node's name while it holds the slot.
    pub holder: Option<String>,
    /// Live local instances referencing the held slot.
    pub refs: usize,
}

/// What a status writer needs of one job: lighter than a [`JobSnapshot`]
/// (no config, no history tail), so asking every second is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct JobProgress {
    /// The job's name in the scheduler.
    pub name: String,
    /// Running instances.
    pub active: usize,
    /// Next scheduled fire (none for a job that never fires again or has
    /// no calendar schedule).
    pub next_fire: Option<DateTime<Utc>>,
    /// When this node last launched the job for its schedule (boundaries,
    /// catch-up, `@reboot`; not manual starts or retries).
    pub last_scheduled: Option<DateTime<Utc>>,
    /// Latest finished run.
    pub last_run: Option<RunSummary>,
    /// End of the latest successful run still in the history.
    pub last_success: Option<DateTime<Utc>>,
}

/// Every job's progress, stamped with the scheduler's progress version.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Moves whenever a run starts or ends or the job table changes; a
    /// caller that passes it back as `since` gets nothing until it moves.
    pub version: u64,
    /// Jobs whose names start with the requested prefix, in table order.
    pub jobs: Vec<JobProgress>,
}

/// A point in the scheduler's state that a rendering of it may be reused
/// for: the scheduler's change generation and the span of time over
/// which nothing it shows moves by itself (see [`JobsAnswer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The scheduler's change generation when the state was read.
    pub(crate) generation: u64,
    /// When it was read (a clock stepped back before it voids it).
    pub(crate) taken: DateTime<Utc>,
    /// The first instant at which a value shown could change without any
    /// event (the earliest next fire, or the end of a pause).
    pub(crate) until: DateTime<Utc>,
}

/// The answer to [`ControlHandle::jobs_since`].
#[derive(Debug)]
pub enum JobsAnswer {
    /// Nothing the job list shows has changed since the stamp the caller
    /// passed: its rendering of that state is still exact (countdowns
    /// aside, which are computed from the absolute instants it shows).
    Unchanged,
    /// The state now, with a stamp to pass back next time, or `None`
    /// when a rendering of it must not be reused (an instance is running,
    /// whose end is seen without an event, or cluster leadership is
    /// configured, whose view moves on another task).
    Changed {
        /// The stamp of this state, if reusable.
        stamp: Option<Stamp>,
        /// Every job, in config order.
        jobs: Vec<JobSnapshot>,
    },
}

/// A job and its instances still running (their handles, which read
/// their resource samplers).
pub type RunningJob = (Arc<JobConfig>, Vec<crate::job::RunHandle>);

/// One run as the activity heatmap plots it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityRow {
    /// Start (none for a skipped slot).
    pub started_at: Option<DateTime<Utc>>,
    /// End.
    pub finished_at: DateTime<Utc>,
    /// Verdict.
    pub outcome: Outcome,
}

/// A request to the scheduler.
#[derive(Debug)]
pub enum Control {
    /// Snapshots of every job (or just `only`).
    Jobs {
        /// Restrict to one job.
        only: Option<String>,
        /// Answer.
        reply: oneshot::Sender<Vec<JobSnapshot>>,
    },
    /// Snapshots of every job, unless nothing shown changed since
    /// `since`.
    JobsSince {
        /// The stamp of the state the caller has rendered.
        since: Option<Stamp>,
        /// Answer.
        reply: oneshot::Sender<JobsAnswer>,
    },
    /// What `GET /status` shows of every job.
    Status {
        /// Answer.
        reply: oneshot::Sender<StatusTable>,
    },
    /// A job's retained runs, oldest first (None: unknown job).
    Runs {
        /// Job name.
        job: String,
        /// Answer.
        reply: oneshot::Sender<Option<Vec<RunRecord>>>,
    },
    /// The output a log viewer follows: the newest running instance's,
    /// else the last finished run's, else none (Err: unknown job).
    Logs {
        /// Job name.
        job: String,
        /// Answer.
        reply: oneshot::Sender<Result<Option<Arc<LiveOutput>>, ControlError>>,
    },
    /// The job and its running instances (`GET /jobs/{name}/resources`
    /// reads their samplers).
    Running {
        /// Job name.
        job: String,
        /// Answer.
        reply: oneshot::Sender<Result<RunningJob, ControlError>>,
    },
    /// Every configured job's retained runs, oldest first, reduced to
    /// what the activity heatmap plots.
    Activity {
        /// Answer, in config order.
        reply: oneshot::Sender<Vec<(String, Vec<ActivityRow>)>>,
    },
    /// Launch now, through the launch gates (a pooled job is queued: the
    /// answer then says where).
    Start {
        /// Job name.
        job: String,
        /// Start on this node even when another node runs the job.
        here: bool,
        /// Answer.
        reply: oneshot::Sender<Result<Option<QueuedStart>, ControlError>>,
    },
    /// Every configured pool as `GET /pools` shows it: the store read,
    /// for the caller to await.
    Pools {
        /// Answer.
        reply: oneshot::Sender<PoolRead<Vec<serde_json::Value>>>,
    },
    /// Cancel a waiting pool entry: the store change, for the caller to
    /// await.
    PoolCancel {
        /// The pool.
        pool: String,
        /// The entry's key.
        key: String,
        /// Answer.
        reply: oneshot::Sender<PoolRead<super::pools::queue::Entry>>,
    },
    /// Cancel every running instance; answers how many.
    Cancel {
        /// Job name.
        job: String,
        /// Answer.
        reply: oneshot::Sender<Result<usize, ControlError>>,
    },
    /// Pause scheduled fires.
    Pause {
        /// Job name.
        job: String,
        /// Window requested.
        request: PauseRequest,
        /// Answer: the window, and the store write to wait for when the
        /// pause is to hold on the next leader too.
        reply: oneshot::Sender<Result<(PauseWindow, Option<Recording>), ControlError>>,
    },
    /// End a pause.
    Resume {
        /// Job name.
        job: String,
        /// Who asked (the body's `by`, else `api`).
        by: String,
        /// Answer: the store write to wait for, as for a pause.
        reply: oneshot::Sender<Result<Option<Recording>, ControlError>>,
    },
    /// The Prometheus exposition.
    Metrics {
        /// Answer: the exposition's inputs (encoded by the caller).
        reply: oneshot::Sender<MetricsSnapshot>,
    },
    /// Progress of the jobs whose names start with `prefix`; `None` as
    /// the answer when `since` equals the current version (nothing moved).
    Progress {
        /// Name prefix (empty: every job).
        prefix: String,
        /// The version the caller already has.
        since: Option<u64>,
        /// Answer.
        reply: oneshot::Sender<Option<Progress>>,
    },
    /// The job-set id of the loaded config.
    JobSetId {
        /// Answer.
        reply: oneshot::Sender<String>,
    },
    /// This node's jobs as the gossip fleet view advertises them, the
    /// caps applied (`GET /fleet`, the `/peer` body). The peers' part of
    /// the view is the gossip manager's, published on its own channel.
    Fleet {
        /// Answer.
        reply: oneshot::Sender<crate::gossip::fleet::OwnJobs>,
    },
}

impl Control {
    /// Whether answering this request can change the scheduler's state
    /// (and so the change generation the API's cached bodies are keyed
    /// on). A read-only request leaves the generation alone, so polling
    /// does not void the caches it reads through.
    pub(super) fn changes_state(&self) -> bool {
        matches!(
            self,
            Control::Start { .. }
                | Control::Cancel { .. }
                | Control::Pause { .. }
                | Control::Resume { .. }
        )
    }
}

/// Waits for a pause or resume to be recorded for the next leader.
async fn recorded(
    job: &str,
    action: &'static str,
    recording: Option<Recording>,
) -> Result<(), ControlError> {
    let Some(recording) = recording else {
        return Ok(());
    };
    recording
        .done()
        .await
        .map_err(|reason| ControlError::NotRecorded {
            job: job.to_owned(),
            action,
            reason,
        })
}

/// A cloneable way to reach the scheduler.
#[derive(Debug, Clone)]
pub struct ControlHandle {
    tx: mpsc::UnboundedSender<Control>,
    shutdown: super::ShutdownHandle,
}

impl ControlHandle {
    pub(super) fn new(tx: mpsc::UnboundedSender<Control>, shutdown: super::ShutdownHandle) -> Self {
        ControlHandle { tx, shutdown }
    }

    /// Starts the graceful drain a SIGTERM starts (`POST /shutdown`).
    /// Asking again changes nothing.
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Control,
    ) -> Result<T, ControlError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(make(reply))
            .map_err(|_| ControlError::Unavailable)?;
        answer.await.map_err(|_| ControlError::Unavailable)
    }

    /// Snapshots of every job, in config order.
    pub async fn jobs(&self) -> Result<Vec<JobSnapshot>, ControlError> {
        self.ask(|reply| Control::Jobs { only: None, reply }).await
    }

    /// Snapshots of every job, or [`JobsAnswer::Unchanged`] when nothing
    /// they show changed since the state stamped `since`.
    pub async fn jobs_since(&self, since: Option<Stamp>) -> Result<JobsAnswer, ControlError> {
        self.ask(|reply| Control::JobsSince { since, reply }).await
    }

    /// What `GET /status` shows of every job.
    pub async fn status(&self) -> Result<StatusTable, ControlError> {
        self.ask(|reply| Control::Status { reply }).await
    }

    /// One job's snapshot.
    pub async fn job(&self, name: &str) -> Result<JobSnapshot, ControlError> {
        let only = Some(name.to_owned());
        self.ask(|reply| Control::Jobs { only, reply })
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| ControlError::NotFound(name.to_owned()))
    }

    /// One job's retained runs, oldest first.
    pub async fn runs(&self, name: &str) -> Result<Vec<RunRecord>, ControlError> {
        let job = name.to_owned();
        self.ask(|reply| Control::Runs { job, reply })
            .await?
            .ok_or_else(|| ControlError::NotFound(name.to_owned()))
    }

    /// The output a log viewer of `name` should follow (None: the job has
    /// not produced a run yet).
    pub async fn logs(&self, name: &str) -> Result<Option<Arc<LiveOutput>>, ControlError> {
        let job = name.to_owned();
        self.ask(|reply| Control::Logs { job, reply }).await?
    }

    /// The job's config and its instances still running.
    pub async fn running(&self, name: &str) -> Result<RunningJob, ControlError> {
        let job = name.to_owned();
        self.ask(|reply| Control::Running { job, reply }).await?
    }

    /// Every job's retained runs, reduced for the activity heatmap.
    pub async fn activity(&self) -> Result<Vec<(String, Vec<ActivityRow>)>, ControlError> {
        self.ask(|reply| Control::Activity { reply }).await
    }

    /// Starts a job now, on the node that runs it: refused when that is
    /// another node ([`ControlError::Elsewhere`]) or none is known. A
    /// pooled job is queued instead (the answer says where).
    pub async fn start(&self, name: &str) -> Result<Option<QueuedStart>, ControlError> {
        let job = name.to_owned();
        self.ask(|reply| Control::Start {
            job,
            here: false,
            reply,
        })
        .await?
    }

    /// Starts a job now on this node, whichever node runs it.
    pub async fn start_here(&self, name: &str) -> Result<Option<QueuedStart>, ControlError> {
        let job = name.to_owned();
        self.ask(|reply| Control::Start {
            job,
            here: true,
            reply,
        })
        .await?
    }

    /// Every configured pool with its entries (`GET /pools`).
    pub async fn pools(&self) -> Result<Vec<serde_json::Value>, ControlError> {
        self.ask(|reply| Control::Pools { reply })
            .await?
            .0
            .await
            .map_err(ControlError::Pool)
    }

    /// Cancels waiting entry `key` of pool `pool`.
    pub async fn pool_cancel(
        &self,
        pool: &str,
        key: &str,
    ) -> Result<super::pools::queue::Entry, ControlError> {
        let (pool, key) = (pool.to_owned(), key.to_owned());
        self.ask(|reply| Control::PoolCancel { pool, key, reply })
            .await?
            .0
            .await
            .map_err(ControlError::Pool)
    }

    /// Cancels a job's running instances.
    pub async fn cancel(&self, name: &str) -> Result<usize, ControlError> {
        let job = name.to_owned();
        self.ask(|reply| Control::Cancel { job, reply }).await?
    }

    /// Pauses a job on the node that runs it; when that is this node as
    /// the cluster's leader, answers once the pause is recorded for the
    /// next leader too.
    pub async fn pause(
        &self,
        name: &str,
        request: PauseRequest,
    ) -> Result<PauseWindow, ControlError> {
        let job = name.to_owned();
        let (window, recording) = self
            .ask(|reply| Control::Pause {
                job,
                request,
                reply,
            })
            .await??;
        recorded(name, "paused", recording).await?;
        Ok(window)
    }

    /// Resumes a job on the node that runs it (recorded as a pause is).
    pub async fn resume(&self, name: &str, by: &str) -> Result<(), ControlError> {
        let job = name.to_owned();
        let by = by.to_owned();
        let recording = self
            .ask(|reply| Control::Resume { job, by, reply })
            .await??;
        recorded(name, "resumed", recording).await
    }

    /// What the metrics exposition shows now. The scheduler only takes
    /// the snapshot; encoding it is left to the caller's thread.
    pub async fn metrics(&self) -> Result<MetricsSnapshot, ControlError> {
        self.ask(|reply| Control::Metrics { reply }).await
    }

    /// Progress of the jobs named `prefix…`, or `None` when nothing moved
    /// since version `since`.
    pub async fn progress(
        &self,
        prefix: &str,
        since: Option<u64>,
    ) -> Result<Option<Progress>, ControlError> {
        let prefix = prefix.to_owned();
        self.ask(|reply| Control::Progress {
            prefix,
            since,
            reply,
        })
        .await
    }

    /// The job-set id.
    pub async fn job_set_id(&self) -> Result<String, ControlError> {
        self.ask(|reply| Control::JobSetId { reply }).await
    }

    /// This node's jobs as the fleet view advertises them.
    pub async fn fleet(&self) -> Result<crate::gossip::fleet::OwnJobs, ControlError> {
        self.ask(|reply| Control::Fleet { reply }).await
    }
}
