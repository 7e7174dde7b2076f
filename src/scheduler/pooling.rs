//! Pooled launches: a job with `pool:` does not launch at its fire, retry
//! or manual start; the launch queues in the pool (see [`super::pools`])
//! and starts when this node admits it: the pool's head, with its slots
//! free and the job's own gates open (leader gate and pause for scheduled
//! work, Forbid with an instance running). The run holds its claim until
//! it ends; a claim the store stops renewing cancels the run (exit -100).
//!
//! Every store operation runs off this thread ([`super::ports::Pools`]);
//! its answer comes back as a [`PoolEvent`]. One dispatch pass per pool is
//! out at a time; each pool is looked at again every
//! [`super::pools::SERVICE_EVERY`] (other nodes free slots without this
//! node hearing of it), after a local run of it ends, and after a queue.

use super::control::{ControlError, PoolQueueSnapshot};
use super::pools::view::{holders_of, queued_of};
use super::pools::{queue::Payload, queue::RetryMark, PoolError, PoolTicket, QueuedStart};
use super::pools::{Admitted, Closing, DispatchAnswer, Eligibility, EnqueueRequest, JobGate};
use super::ports::{needs_slot, Admission, SlotClaim};
use super::{Event, Scheduler};
use crate::config::model::{ClusterPolicy, ConcurrencyPolicy};
use crate::config::JobConfig;
use crate::job::{RunHandle, Trigger};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The reason of a claim handed back because the job's concurrency
/// policy held the launch (the original's).
const CONCURRENCY_WAIT: &str = "waiting for concurrency admission";
/// The reason of a claim handed back because the launch did not happen.
const LAUNCH_INTERRUPTED: &str = "launch interrupted";

/// A pool operation's answer, for the scheduler's thread.
#[derive(Debug)]
pub(super) enum PoolEvent {
    /// A launch was queued (or refused).
    Enqueued {
        job: String,
        pool: String,
        result: Result<String, PoolError>,
    },
    /// A dispatch pass answered.
    Dispatched {
        pool: String,
        result: Result<DispatchAnswer, PoolError>,
    },
    /// The instances a pooled Replace cancelled have ended.
    Replaced(Box<Admitted>),
    /// A claim's close landed (or failed): the pool can be looked at.
    Closed { pool: String },
    /// The cluster slot claim of an admitted `concurrencyScope: cluster`
    /// job answered.
    SlotAnswer {
        admitted: Box<Admitted>,
        claim: SlotClaim,
    },
}

/// The scheduler's pool bookkeeping.
#[derive(Debug, Default)]
pub(super) struct PoolState {
    /// Pools with a dispatch pass out.
    dispatching: HashSet<String>,
    /// Pools to look at again once their pass is back.
    again: HashSet<String>,
    /// Runs launched under a claim, by run id.
    runs: HashMap<u64, PoolTicket>,
    /// The run of each held claim.
    tickets: HashMap<PoolTicket, (String, u64)>,
    /// The digests of the pooled jobs of the table installed (its
    /// address), computed once per table.
    digests: Option<(usize, HashMap<String, String>)>,
    /// Pools whose store failed on the last pass (logged once).
    down: HashSet<String>,
    /// The last counts of each pool (capacity, used, waiting), for the
    /// metrics.
    pub(super) gauges: HashMap<String, (u32, u32, usize)>,
    /// The last view of each pool (for `GET /jobs`).
    views: HashMap<String, serde_json::Value>,
    /// Keys minted so far (with the process token, unique).
    minted: u64,
}

impl Scheduler {
    /// The pool gate at the top of every launch: a pooled job's launch
    /// queues in its pool instead. True when it was taken here.
    pub(super) fn pool_intercepts(
        &mut self,
        job: &Arc<JobConfig>,
        trigger: Trigger,
        attempt: u32,
    ) -> bool {
        if job.pool.is_none() {
            return false;
        }
        self.enqueue_pooled(job, trigger, attempt, None);
        true
    }

    /// A manual start of pooled `job`: queued, and the API answered with
    /// the entry once the store has it.
    pub(super) fn pool_manual_start(
        &mut self,
        job: &Arc<JobConfig>,
        reply: tokio::sync::oneshot::Sender<Result<Option<QueuedStart>, ControlError>>,
    ) {
        self.enqueue_pooled(job, Trigger::Manual, 0, Some(reply));
    }

    fn mint_key(&mut self) -> String {
        self.pooling.minted += 1;
        let token = crate::state::format::process_token();
        format!("{token}{:020x}", self.pooling.minted)
    }

    fn enqueue_pooled(
        &mut self,
        job: &Arc<JobConfig>,
        trigger: Trigger,
        attempt: u32,
        reply: Option<tokio::sync::oneshot::Sender<Result<Option<QueuedStart>, ControlError>>>,
    ) {
        let Some(pool) = job.pool.clone() else { return };
        let manual = trigger == Trigger::Manual;
        let host = self.pools.host();
        let scheduled_at = (trigger == Trigger::Schedule).then(|| {
            crate::report::context::python_isoformat(
                self.firing_at.unwrap_or_else(|| self.clock.now()),
            )
        });
        let retry = (trigger == Trigger::Retry).then(|| RetryMark {
            count: attempt,
            delay: self
                .retries
                .get(&job.name)
                .map_or(0.0, |r| r.ladder.delay()),
        });
        let request = EnqueueRequest {
            key: self.mint_key(),
            job: job.name.clone(),
            pool: pool.name.clone(),
            slots: pool.slots,
            priority: pool.priority,
            timeout: pool.timeout,
            digest: self.pool_digest(&job.name),
            payload: Payload {
                kind: Some("job".into()),
                with_retries: Some(true),
                manual: Some(manual),
                target_host: (manual || job.cluster_policy == ClusterPolicy::EveryNode)
                    .then_some(host),
                scheduled_at,
                retry,
                rest: Default::default(),
            },
        };
        let queued = self.pools.enqueue(request);
        let events = self.events_tx.clone();
        let name = job.name.clone();
        tokio::spawn(async move {
            let result = queued.await.map(|entry| entry.id);
            if let Some(reply) = reply {
                let _ = reply.send(
                    result
                        .clone()
                        .map(|id| {
                            Some(QueuedStart {
                                queue_id: id,
                                pool: pool.name.clone(),
                            })
                        })
                        .map_err(ControlError::Pool),
                );
            }
            let _ = events.send(Event::Pool(PoolEvent::Enqueued {
                job: name,
                pool: pool.name,
                result,
            }));
        });
    }

    /// The config digest of pooled job `name` in the table installed.
    fn pool_digest(&mut self, name: &str) -> String {
        let table = Arc::as_ptr(&self.jobs) as usize;
        if self.pooling.digests.as_ref().map(|d| d.0) != Some(table) {
            let pooled: Vec<&JobConfig> = self
                .jobs
                .iter()
                .filter(|j| j.pool.is_some())
                .map(|j| &**j)
                .collect();
            let digests = crate::fingerprint::job_digests(pooled.iter().copied());
            let map = pooled.iter().map(|j| j.name.clone()).zip(digests).collect();
            self.pooling.digests = Some((table, map));
        }
        self.pooling
            .digests
            .as_ref()
            .and_then(|d| d.1.get(name).cloned())
            .unwrap_or_default()
    }

    /// Whether any pool is configured (the service timer runs only then).
    pub(super) fn pools_configured(&self) -> bool {
        !self.pools.table().is_empty()
    }

    /// The periodic look at every pool.
    pub(super) fn pool_service(&mut self) {
        let table = self.pools.table();
        for name in table.names() {
            self.dispatch_pool(name);
        }
    }

    /// What this node knows of its pooled jobs, for a pass over `pool`.
    fn pool_gates(&mut self, pool: &str) -> Eligibility {
        let now = self.clock.now();
        let pooled: Vec<Arc<JobConfig>> = self
            .jobs
            .iter()
            .filter(|j| j.enabled && j.pool.is_some())
            .cloned()
            .collect();
        let mut jobs = HashMap::with_capacity(pooled.len());
        for job in pooled {
            let paused = self.store.pause(&job.name).is_some_and(|w| w.until > now);
            let scheduled_ok = !paused
                && !self.suspended.contains(&job.name)
                && self.gate.admit(&job, Trigger::Schedule) == Admission::Launch;
            let gate = JobGate {
                pool: job
                    .pool
                    .as_ref()
                    .map(|p| p.name.clone())
                    .unwrap_or_default(),
                digest: self.pool_digest(&job.name),
                scheduled_ok,
                forbid: job.concurrency_policy == ConcurrencyPolicy::Forbid,
                running: self.is_running(&job.name),
            };
            jobs.insert(job.name.clone(), gate);
        }
        Eligibility {
            pool: pool.to_owned(),
            host: self.pools.host(),
            jobs,
            stopping: self.stopping,
        }
    }

    /// Sends a dispatch pass for `pool` (or marks it to run again once
    /// the one out is back).
    fn dispatch_pool(&mut self, pool: &str) {
        if self.stopping {
            return;
        }
        if self.pooling.dispatching.contains(pool) {
            self.pooling.again.insert(pool.to_owned());
            return;
        }
        self.pooling.dispatching.insert(pool.to_owned());
        let gates = self.pool_gates(pool);
        let pass = self.pools.dispatch(gates);
        let events = self.events_tx.clone();
        let pool = pool.to_owned();
        tokio::spawn(async move {
            let result = pass.await;
            let _ = events.send(Event::Pool(PoolEvent::Dispatched { pool, result }));
        });
    }

    /// One pool answer (it moves the API's change generation itself when
    /// it changes what the API shows).
    pub(super) fn pool_event(&mut self, event: PoolEvent) {
        let quiet = matches!(
            &event,
            PoolEvent::Dispatched { result: Ok(answer), .. }
                if answer.admitted.is_empty() && answer.cancelled.is_empty() && answer.view.is_none()
        ) || matches!(&event, PoolEvent::Closed { .. });
        if !quiet {
            self.api.changed();
        }
        match event {
            PoolEvent::Enqueued { job, pool, result } => match result {
                Ok(key) => {
                    tracing::debug!(
                        target: "cronstable::scheduler",
                        "Job {job}: queued in pool {pool} ({key})"
                    );
                    self.dispatch_pool(&pool);
                }
                Err(err) => {
                    if let PoolError::Unavailable(detail) = &err {
                        tracing::debug!(target: "cronstable::scheduler", "pool {pool}: {detail}");
                    }
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "Job {job} could not enter pool {pool}: {err}"
                    );
                }
            },
            PoolEvent::Dispatched { pool, result } => {
                self.pooling.dispatching.remove(&pool);
                match result {
                    Ok(answer) => {
                        if self.pooling.down.remove(&pool) {
                            tracing::info!(target: "cronstable::scheduler", "pool {pool}: the store answers again");
                        }
                        self.dispatched(&pool, answer);
                    }
                    Err(err) => {
                        if self.pooling.down.insert(pool.clone()) {
                            tracing::warn!(
                                target: "cronstable::scheduler",
                                "pool {pool} could not dispatch; retrying ({err:?})"
                            );
                        }
                    }
                }
                if self.pooling.again.remove(&pool) {
                    self.dispatch_pool(&pool);
                }
            }
            PoolEvent::Replaced(admitted) => self.launch_admitted(*admitted),
            PoolEvent::Closed { pool } => self.dispatch_pool(&pool),
            PoolEvent::SlotAnswer { admitted, claim } => self.pool_slot_answer(*admitted, claim),
        }
    }

    fn dispatched(&mut self, pool: &str, answer: DispatchAnswer) {
        self.pooling
            .gauges
            .insert(pool.to_owned(), (answer.slots, answer.used, answer.queued));
        if let Some(view) = answer.view {
            self.pooling.views.insert(pool.to_owned(), view);
        }
        for (key, job) in &answer.cancelled {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {job}: queue entry {key} of pool {pool} cancelled: {}",
                super::pools::queue::JOB_CHANGED
            );
        }
        for admitted in answer.admitted {
            self.launch_admitted(admitted);
        }
    }

    /// Closes a claim; its pool is looked at once the close landed.
    fn close_then_dispatch(&mut self, ticket: &PoolTicket, how: Closing) {
        let closed = self.pools.close(ticket, how);
        let events = self.events_tx.clone();
        let pool = ticket.pool.clone();
        tokio::spawn(async move {
            closed.await;
            let _ = events.send(Event::Pool(PoolEvent::Closed { pool }));
        });
    }

    /// Hands a claim back without a run.
    fn hand_back(&mut self, ticket: &PoolTicket, how: Closing) {
        self.close_then_dispatch(ticket, how);
    }

    /// Launches what a pass admitted, through the job's concurrency rules.
    fn launch_admitted(&mut self, admitted: Admitted) {
        let ticket = admitted.ticket.clone();
        if self.stopping {
            // Written in the background; the drain waits for it.
            drop(
                self.pools
                    .close(&ticket, Closing::Requeued(LAUNCH_INTERRUPTED)),
            );
            return;
        }
        if tokio::time::Instant::now() >= admitted.deadline {
            tracing::warn!(
                target: "cronstable::scheduler",
                "Job {}: {}",
                admitted.entry.job,
                PoolError::LostBeforeLaunch
            );
            return self.hand_back(&ticket, Closing::Requeued(LAUNCH_INTERRUPTED));
        }
        let Some(job) = self.job(&admitted.entry.job).filter(|j| j.enabled) else {
            return self.hand_back(
                &ticket,
                Closing::Cancelled(super::pools::queue::JOB_CHANGED),
            );
        };
        if self.is_running(&job.name) {
            match job.concurrency_policy {
                ConcurrencyPolicy::Allow => {}
                ConcurrencyPolicy::Forbid => {
                    return self.hand_back(&ticket, Closing::Requeued(CONCURRENCY_WAIT));
                }
                ConcurrencyPolicy::Replace => return self.replace_for_pool(&job, admitted),
            }
        }
        if needs_slot(&job) && !self.held_slots.contains(&job.name) {
            let claim = self.slots.claim(&job);
            let events = self.events_tx.clone();
            tokio::spawn(async move {
                let claim = claim.await;
                let _ = events.send(Event::Pool(PoolEvent::SlotAnswer {
                    admitted: Box::new(admitted),
                    claim,
                }));
            });
            return;
        }
        self.spawn_pooled(job, admitted);
    }

    /// Replace under a pool: the running instances are cancelled as a
    /// local Replace cancels them, and the admitted run starts once they
    /// have ended (the claim is held meanwhile).
    fn replace_for_pool(&mut self, job: &JobConfig, admitted: Admitted) {
        let live: Vec<RunHandle> = self
            .running
            .get(&job.name)
            .map(|runs| runs.iter().filter(|r| !r.has_ended()).cloned().collect())
            .unwrap_or_default();
        for handle in &live {
            handle.replace();
        }
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            for handle in &live {
                handle.wait_ended().await;
            }
            let _ = events.send(Event::Pool(PoolEvent::Replaced(Box::new(admitted))));
        });
    }

    fn pool_slot_answer(&mut self, admitted: Admitted, claim: SlotClaim) {
        let name = admitted.entry.job.clone();
        match claim {
            SlotClaim::Claimed | SlotClaim::ClaimedAfterYield => {
                self.held_slots.insert(name.clone());
                match self.job(&name) {
                    Some(job) if !self.stopping => self.spawn_pooled(job, admitted),
                    _ => {
                        self.held_slots.remove(&name);
                        self.slots.release(&name);
                        self.hand_back(&admitted.ticket, Closing::Requeued(LAUNCH_INTERRUPTED));
                    }
                }
            }
            SlotClaim::Unavailable {
                fail_closed: false, ..
            } => match self.job(&name) {
                // degrade: this node's own check decided already.
                Some(job) if !self.stopping => self.spawn_pooled(job, admitted),
                _ => self.hand_back(&admitted.ticket, Closing::Requeued(LAUNCH_INTERRUPTED)),
            },
            other => {
                tracing::info!(
                    target: "cronstable::scheduler",
                    "Job {name}: its cluster concurrency slot is not free ({other:?}); the pool \
                     entry waits again"
                );
                self.hand_back(&admitted.ticket, Closing::Requeued(CONCURRENCY_WAIT));
            }
        }
    }

    /// Starts the admitted run under its claim.
    fn spawn_pooled(&mut self, job: Arc<JobConfig>, admitted: Admitted) {
        let payload = &admitted.entry.payload;
        let (trigger, attempt) = match (payload.manual, payload.retry) {
            (Some(true), _) => (Trigger::Manual, 0),
            (_, Some(retry)) if retry.count > 0 => (Trigger::Retry, retry.count),
            _ => (Trigger::Schedule, 0),
        };
        if let (Trigger::Retry, Some(retry)) = (trigger, payload.retry) {
            self.adopt_pool_retry(&job, retry);
        }
        let fired = payload
            .scheduled_at
            .as_deref()
            .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
            .map(|at| at.with_timezone(&chrono::Utc));
        let previous = self.firing_at;
        if trigger == Trigger::Schedule {
            self.firing_at = fired.or(previous);
        }
        let run_id = self.next_run_id;
        self.spawn_run(job.clone(), trigger, attempt);
        self.firing_at = previous;
        self.pooling.runs.insert(run_id, admitted.ticket.clone());
        self.pooling
            .tickets
            .insert(admitted.ticket, (job.name.clone(), run_id));
    }

    /// A retry admitted here that another node armed: this node carries
    /// its ladder on from the attempt it is.
    fn adopt_pool_retry(&mut self, job: &JobConfig, retry: RetryMark) {
        if self.retries.contains_key(&job.name) {
            return;
        }
        if let Some(ladder) = super::RetryLadder::resume(&job.retry, retry.count, retry.delay) {
            let generation = self.bump_generation();
            self.retries.insert(
                job.name.clone(),
                super::RetryState {
                    ladder,
                    generation,
                    timer: None,
                    armed_at: self.clock.now(),
                },
            );
        }
    }

    /// A run ended: its claim is closed and its pool looked at again.
    pub(super) fn pool_run_finished(&mut self, run_id: u64) {
        let Some(ticket) = self.pooling.runs.remove(&run_id) else {
            return;
        };
        self.pooling.tickets.remove(&ticket);
        self.close_then_dispatch(&ticket, Closing::Finished);
    }

    /// A claim could not be renewed: its run is cancelled (exit -100, a
    /// failure).
    pub(super) fn pool_lease_lost(&mut self, ticket: PoolTicket) {
        let Some((job, run_id)) = self.pooling.tickets.remove(&ticket) else {
            return;
        };
        self.pooling.runs.remove(&run_id);
        self.api.changed();
        if let Some(handle) = self
            .running
            .get(&job)
            .and_then(|runs| runs.iter().find(|r| r.run_id == run_id && !r.has_ended()))
        {
            handle.lose_pool_lease();
        }
    }

    /// `job`'s waiting entries and claims in `pool`, from the last look.
    pub(super) fn pool_queue(&self, job: &str, pool: &str) -> PoolQueueSnapshot {
        let view = self.pooling.views.get(pool);
        PoolQueueSnapshot {
            queued: view.map(|v| queued_of(v, job)).unwrap_or_default(),
            holders: view.map(|v| holders_of(v, job)).unwrap_or_default(),
            unavailable: self.pooling.down.contains(pool),
        }
    }

    /// Every configured pool's gauges, from the last look at each.
    pub(super) fn pool_gauges(&self) -> Vec<crate::metrics::pools::PoolGauge> {
        let table = self.pools.table();
        table
            .0
            .iter()
            .map(|(name, conf)| {
                let (slots, used, queued) = self
                    .pooling
                    .gauges
                    .get(name)
                    .copied()
                    .unwrap_or((conf.slots, 0, 0));
                crate::metrics::pools::PoolGauge {
                    pool: name.clone(),
                    slots,
                    used,
                    queued,
                    claims: self
                        .pooling
                        .tickets
                        .keys()
                        .filter(|t| &t.pool == name)
                        .count(),
                    up: !self.pooling.down.contains(name),
                }
            })
            .collect()
    }
}
