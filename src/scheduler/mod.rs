//! The scheduler: one task that owns the job table, the running instances,
//! the retry ladders and the launch gates. It wakes at each boundary, asks
//! its job source for a new set, launches due jobs through one set of
//! gates, collects finished runs, drives retries and reports, and drains
//! when the daemon asks it to stop.
//!
//! Everything outside that core is reached through [`ports`]: where jobs
//! come from, whether this node may launch, the cluster slot, where runs
//! are recorded, and the clock. The scheduler reads no file and catches no
//! signal; `crate::daemon` picks the implementations and owns shutdown.

mod api;
mod api_cache;
mod carried;
pub(crate) mod control;
mod depends;
mod durability;
pub mod durable;
pub mod failover;
#[cfg(test)]
mod failover_tests;
mod finish;
pub(crate) mod history;
mod late;
mod launch;
mod limits_view;
mod next_fire;
pub mod pause;
mod pause_sync;
pub mod pooling;
pub mod pools;
pub mod ports;
mod report_order;
pub(crate) mod retry;
mod retry_resume;
pub mod sections;
pub mod shutdown;
pub mod sla;
#[cfg(test)]
mod tests;
pub(crate) mod tick;

use crate::config::JobConfig;
use crate::job::{self, RunHandle, RunRecord, Trigger};
use crate::metrics::prometheus::Counters;
use crate::report::{ReportFuture, Reporter};
use chrono::{DateTime, Utc};
use control::{Control, ControlHandle};
use durable::DurableState;
use ports::{Clock, JobSet, JobSource, LeaderGate, RunStore, SlotLock};
use retry::RetryLadder;
use shutdown::{ShutdownRequests, StopCause};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tick::Cadence;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

pub use shutdown::ShutdownHandle;

/// Messages the scheduler task receives from the tasks it started.
#[derive(Debug)]
enum Event {
    /// A run is over and recorded.
    Finished(Box<RunRecord>),
    /// A retry's delay elapsed.
    RetryDue { job: String, generation: u64 },
    /// The store's verdict on a due retry (see [`retry_resume`]).
    RetryConsumed {
        job: String,
        generation: u64,
        verdict: Result<durable::RetryConsume, durable::DurableError>,
    },
    /// Time to look for retry ladders other nodes left behind.
    ClaimScan,
    /// The instances a Replace cancelled have ended; launch the new one.
    Replacement {
        job: String,
        trigger: Trigger,
        attempt: u32,
    },
    /// A leadership-store call answered (see [`failover`]).
    Failover(failover::Answer),
    /// The pauses recorded by earlier leaders (see [`pause_sync`]).
    Pauses(pause_sync::PausesRead),
    /// The store answered a cluster slot claim for a launch.
    SlotAnswer {
        job: String,
        trigger: Trigger,
        attempt: u32,
        claim: ports::SlotClaim,
    },
    /// A resource pool operation answered (see [`pooling`]).
    Pool(pooling::PoolEvent),
}

/// A job's armed retry ladder and its pending timer.
struct RetryState {
    ladder: RetryLadder,
    generation: u64,
    /// None while no attempt is scheduled, or while the store decides on
    /// a due one.
    timer: Option<AbortHandle>,
    /// When the pending attempt was armed (a hand-off carries it).
    armed_at: chrono::DateTime<chrono::Utc>,
}

/// The implementations the scheduler runs against; `crate::daemon` picks them,
/// tests pass fakes.
pub struct Ports {
    /// Where job sets come from.
    pub source: Box<dyn JobSource>,
    /// Whether this node may launch a scheduled job or a retry.
    pub gate: Box<dyn LeaderGate>,
    /// The cluster slot of `concurrencyScope: cluster` jobs.
    pub slots: Box<dyn SlotLock>,
    /// Run history, pending retries, pauses.
    pub store: Box<dyn RunStore>,
    /// The durable store of the `state` section
    /// ([`durable::NoDurableState`] without one).
    pub durable: Box<dyn DurableState>,
    /// Wall-clock time.
    pub clock: Arc<dyn Clock>,
    /// Where finished runs are reported.
    pub reporter: Arc<dyn Reporter>,
    /// When the daemon started (a Unix time), for the start-time gauge.
    pub started_at: f64,
    /// What the config loads say (reload gauges, histogram bounds), as
    /// the sections' owner publishes it; followed into the counters.
    pub loads: tokio::sync::watch::Receiver<sections::LoadOutcome>,
    /// The token callers use to stop the scheduler; the control handle
    /// hands it to the HTTP shutdown route.
    pub shutdown: ShutdownHandle,
}

/// The daemon's scheduling core.
pub struct Scheduler {
    /// The job table; shared so that `GET /status` gets it without a
    /// copy (see [`control::StatusTable`]).
    jobs: Arc<Vec<Arc<JobConfig>>>,
    /// The table's cadence ([`Scheduler::cadence`]), worked out when the
    /// table is installed: the run loop asks for it on every turn, and
    /// with 10,000 jobs reading every config each time was a millisecond
    /// per event or API request on this thread.
    cadence: Cadence,
    by_name: HashMap<String, usize>,
    running: HashMap<String, Vec<RunHandle>>,
    retries: HashMap<String, RetryState>,
    source: Box<dyn JobSource>,
    gate: Box<dyn LeaderGate>,
    slots: Box<dyn SlotLock>,
    /// Jobs whose cluster slot this node holds (released with the last
    /// local instance).
    held_slots: HashSet<String>,
    /// Jobs with a slot claim out (its answer not back yet).
    claiming: HashSet<String>,
    store: Box<dyn RunStore>,
    durable: Box<dyn DurableState>,
    /// What the scheduler keeps about the durable store.
    durability: durability::Durability,
    clock: Arc<dyn Clock>,
    reporter: Arc<dyn Reporter>,
    events_tx: mpsc::UnboundedSender<Event>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    next_run_id: u64,
    next_generation: u64,
    stopping: bool,
    control_tx: mpsc::UnboundedSender<Control>,
    control_rx: mpsc::UnboundedReceiver<Control>,
    last_output: HashMap<String, Arc<job::LiveOutput>>,
    /// The Prometheus counters: this scheduler alone writes them (runs,
    /// retries, failures, and the load outcome it follows from `loads`);
    /// a scrape reads a snapshot.
    counters: Counters,
    loads: tokio::sync::watch::Receiver<sections::LoadOutcome>,
    job_set_id: String,
    reports: tokio::task::JoinSet<()>,
    /// The order of each job's report deliveries.
    report_tails: report_order::ReportTails,
    shutdown: ShutdownHandle,
    /// The newest boundary whose due jobs were launched (or deliberately
    /// passed over); the next pass starts after it.
    evaluated: DateTime<Utc>,
    /// Jobs whose scheduled fires are held (a suspended CronJobSet's).
    suspended: HashSet<String>,
    /// When each job was last launched for its schedule (the boundary).
    last_scheduled: HashMap<String, DateTime<Utc>>,
    /// The boundary whose due jobs are being launched, while they are.
    firing_at: Option<DateTime<Utc>>,
    /// Deferred `@reboot` jobs and catch-ups after a takeover.
    failover: failover::Failover,
    /// Pauses recorded for the next leader, applied on a takeover.
    pause_sync: pause_sync::PauseSync,
    /// What the scheduler keeps only to answer the API cheaply.
    api: api_cache::ApiCaches,
    /// The job endpoint's run identities ([`ports::NoRunGrants`] without
    /// one).
    grants: Arc<dyn ports::RunGrants>,
    /// The resource pools ([`ports::NoPools`] without a pool store).
    pools: Box<dyn ports::Pools>,
    /// What the scheduler keeps about pooled launches.
    pooling: pooling::PoolState,
    /// Late-run detection: the checks' latches and what they measure.
    sla: sla::Monitor,
    /// The wall-clock minute the SLA checks were last evaluated in.
    sla_minute: Option<DateTime<Utc>>,
    /// Runs each job's memory cap ended since the daemon started.
    memory_kills: HashMap<String, u64>,
}

/// How long shutdown waits for reports still being delivered.
const REPORT_DRAIN: Duration = Duration::from_secs(30);

impl Scheduler {
    /// A scheduler over the source's first job set.
    pub fn new(initial: JobSet, ports: Ports) -> Self {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let evaluated = ports.clock.now();
        let mut scheduler = Scheduler {
            jobs: Arc::new(Vec::new()),
            cadence: Cadence::Minute,
            by_name: HashMap::new(),
            running: HashMap::new(),
            retries: HashMap::new(),
            source: ports.source,
            gate: ports.gate,
            slots: ports.slots,
            held_slots: HashSet::new(),
            claiming: HashSet::new(),
            store: ports.store,
            durable: ports.durable,
            durability: durability::Durability::default(),
            clock: ports.clock,
            reporter: ports.reporter,
            events_tx,
            events_rx,
            next_run_id: 1,
            next_generation: 1,
            stopping: false,
            control_tx,
            control_rx,
            last_output: HashMap::new(),
            counters: Counters::new(ports.started_at, None),
            loads: ports.loads,
            job_set_id: String::new(),
            reports: tokio::task::JoinSet::new(),
            report_tails: report_order::ReportTails::default(),
            shutdown: ports.shutdown,
            evaluated,
            suspended: HashSet::new(),
            last_scheduled: HashMap::new(),
            firing_at: None,
            failover: failover::Failover::default(),
            pause_sync: pause_sync::PauseSync::default(),
            api: api_cache::ApiCaches::default(),
            grants: Arc::new(ports::NoRunGrants),
            pools: Box::new(ports::NoPools::default()),
            pooling: pooling::PoolState::default(),
            sla: sla::Monitor::default(),
            sla_minute: None,
            memory_kills: HashMap::new(),
        };
        scheduler.install_jobs(initial);
        // The first load's outcome counts as a change to follow.
        scheduler.loads.mark_changed();
        scheduler
    }

    /// Hands every run from now on an identity of the job endpoint
    /// (before [`Scheduler::run`]).
    pub fn set_run_grants(&mut self, grants: Arc<dyn ports::RunGrants>) {
        self.grants = grants;
    }

    /// Queues pooled jobs' launches in `pools` (before [`Scheduler::run`]).
    pub fn set_pools(&mut self, pools: Box<dyn ports::Pools>) {
        self.pools = pools;
    }

    /// The counters, with the latest load outcome taken in first (the
    /// duration bounds a run is recorded under, the reload gauges a scrape
    /// shows). Every write and snapshot goes through here.
    fn counters(&mut self) -> &mut Counters {
        if self.loads.has_changed().unwrap_or(false) {
            let loads = self.loads.borrow_and_update().clone();
            self.counters.set_buckets(loads.buckets.as_deref());
            self.counters.last_reload_ok = Some(loads.last_ok);
            self.counters.last_reload_success = Some(loads.last_success);
        }
        &mut self.counters
    }

    /// A handle the HTTP API uses to query and drive the scheduler.
    pub fn control(&self) -> ControlHandle {
        ControlHandle::new(self.control_tx.clone(), self.shutdown.clone())
    }

    /// Answers one control request; one that can change state moves the
    /// API's change generation first.
    fn control_request(&mut self, request: Control) {
        if request.changes_state() {
            self.api.changed();
        }
        self.handle_control(request);
    }

    fn install_jobs(&mut self, set: JobSet) {
        self.api.changed();
        // Logged at start and then only when a reload changes the set, so
        // the line marks the moments the fleet's job set moved.
        if set.job_set_id != self.job_set_id {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job set id: {} ({} job{})",
                set.job_set_id,
                set.jobs.len(),
                if set.jobs.len() == 1 { "" } else { "s" }
            );
        }
        self.job_set_id = set.job_set_id;
        self.suspended = set.suspended;
        self.api.progressed();
        // The merged spec only served the load; a 10,000-job table is
        // about a third smaller without it. Sources drop it already; this
        // keeps the promise for any that forgets (a copy only then).
        let mut table = set.jobs;
        for job in &mut table {
            if job.spec.is_some() {
                Arc::make_mut(job).spec = None;
            }
        }
        self.jobs = Arc::new(table);
        crate::job::contain::converge_soon(&self.jobs);
        self.api.table_installed(self.jobs.len());
        self.cadence = Self::cadence_of(&self.jobs);
        self.by_name = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.name.clone(), i))
            .collect();
        let by_name = &self.by_name;
        self.store.retain_jobs(&|name| by_name.contains_key(name));
        self.durable.jobs_changed(&self.jobs);
        self.last_scheduled
            .retain(|name, _| by_name.contains_key(name));
        self.last_output
            .retain(|name, _| by_name.contains_key(name));
        self.sla.retain(|name| by_name.contains_key(name));
        self.memory_kills
            .retain(|name, _| by_name.contains_key(name));
        let jobs = Arc::clone(&self.jobs);
        self.counters()
            .retain_jobs(jobs.iter().map(|j| j.name.as_str()));
    }

    fn job(&self, name: &str) -> Option<Arc<JobConfig>> {
        self.by_name.get(name).map(|&i| Arc::clone(&self.jobs[i]))
    }

    /// Second cadence while any enabled job has a seconds field.
    fn cadence(&self) -> Cadence {
        self.cadence
    }

    /// The cadence `jobs` need (see [`Scheduler::cadence`]).
    fn cadence_of(jobs: &[Arc<JobConfig>]) -> Cadence {
        let per_second = jobs
            .iter()
            .any(|j| j.enabled && j.schedule.parsed.cron().is_some_and(|c| c.has_seconds()));
        if per_second {
            Cadence::Second
        } else {
            Cadence::Minute
        }
    }

    /// Runs until a stop request arrives on `stop` (a signal the daemon caught,
    /// or [`ShutdownHandle::trigger`]), then drains running jobs. Further
    /// requests during the drain change nothing but a log line.
    pub async fn run(mut self, mut stop: ShutdownRequests) {
        self.api.changed();
        // With a store, what it holds is in force before the first launch
        // (pauses, retries, @reboot markers, the catch-up watermarks).
        self.rehydrate().await;
        self.start_claim_scans();
        self.launch_reboot_jobs();
        self.catch_up_at_start();
        // Nothing at or before the start instant is due: the first pass is
        // the first boundary after it.
        self.evaluated = tick::floor(self.clock.now(), self.cadence());
        let mut pool_service = tokio::time::interval(pools::SERVICE_EVERY);
        pool_service.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The SLA series exist from the start; checks are measured again
        // once every wall-clock minute.
        self.sla_tick();
        let cause = loop {
            let sleep = self
                .clock
                .sleep_until(tick::next_boundary(self.evaluated, self.cadence()));
            tokio::select! {
                _ = sleep => {
                    self.api.changed();
                    let started = self.clock.now();
                    if let Some(set) = self.source.poll() {
                        self.swap(set, started);
                    }
                    self.launch_passed_boundaries();
                    self.sla_tick();
                }
                Some(event) = self.events_rx.recv() => self.handle_event(event),
                Some(request) = self.control_rx.recv() => self.control_request(request),
                request = self.slots.next_yield() => self.slot_yield(request),
                event = self.durable.next_event() => self.durable_event(event),
                _ = pool_service.tick(), if self.pools_configured() => self.pool_service(),
                ticket = self.pools.next_lost() => self.pool_lease_lost(ticket),
                set = self.source.next() => {
                    self.api.changed();
                    // Boundaries that passed while the source worked are
                    // not lost: the sleep above is already due when the
                    // loop comes back, and that pass fires them.
                    let started = set.requested_at.min(self.clock.now());
                    self.swap(set, started);
                }
                cause = stop.recv() => break cause,
            }
        };
        match cause {
            StopCause::Signal(name) => {
                // The original says nothing here; the next line
                // ("Shutting down ...") is the one operators match.
                tracing::debug!(target: "cronstable::scheduler", "{name} received")
            }
            StopCause::Request => {
                tracing::info!(target: "cronstable::scheduler", "shutdown requested")
            }
        }
        self.drain(&mut stop).await
    }

    /// Installs a new job set from the source. The catch-up state is
    /// rebased on the cadence change, so a reload never loses or doubles
    /// a boundary (see [`tick::rebase`]).
    fn swap(&mut self, set: JobSet, started: DateTime<Utc>) {
        let cadence = self.cadence();
        let count = set.jobs.len();
        let began = std::time::Instant::now();
        self.install_jobs(set);
        crate::platform::release_free_memory();
        tracing::debug!(
            target: "cronstable::scheduler",
            "configuration reloaded: {count} job(s) installed in {:.1} ms",
            began.elapsed().as_secs_f64() * 1e3
        );
        self.evaluated = tick::rebase(self.evaluated, started, cadence, self.cadence());
    }

    /// Launches the jobs due at every boundary that passed since the last
    /// pass, oldest first, each boundary once (see [`tick::due`]).
    fn launch_passed_boundaries(&mut self) {
        let due = tick::due(
            self.evaluated,
            self.clock.now(),
            self.cadence(),
            tick::CATCH_UP_WINDOW,
        );
        if let Some(skipped) = due.skipped {
            tracing::warn!(
                target: "cronstable::scheduler",
                "the clock moved ahead of the scheduler by more than {} seconds (a suspend or a \
                 clock step?): not firing the {} boundar{} from {} to {}",
                tick::CATCH_UP_WINDOW.num_seconds(),
                skipped.count,
                if skipped.count == 1 { "y" } else { "ies" },
                skipped.first,
                skipped.last
            );
        }
        if due.fire.len() > 1 {
            tracing::debug!(
                target: "cronstable::scheduler",
                "catching up {} boundaries that passed while the scheduler was busy",
                due.fire.len()
            );
        }
        // Before this pass fires anything: boundaries up to `evaluated`
        // were judged under the previous leadership, so a takeover's
        // catch-up covers exactly those.
        self.failover_pass(self.evaluated);
        self.pause_sync_pass();
        for at in due.fire {
            self.launch_due(at);
        }
        self.evaluated = due.evaluated;
    }

    /// Stops launching, drops pending retries and waits for running jobs.
    async fn drain(&mut self, stop: &mut ShutdownRequests) {
        self.api.changed();
        self.stopping = true;
        self.gate.step_down();
        tracing::info!(
            target: "cronstable::scheduler",
            "Shutting down (after currently running jobs finish)..."
        );
        let names: Vec<String> = self.retries.keys().cloned().collect();
        for name in names {
            self.cancel_retries(&name);
        }
        while self.running.values().any(|v| !v.is_empty()) {
            tokio::select! {
                Some(event) = self.events_rx.recv() => self.handle_event(event),
                Some(request) = self.control_rx.recv() => self.control_request(request),
                request = self.slots.next_yield() => self.slot_yield(request),
                ticket = self.pools.next_lost() => self.pool_lease_lost(ticket),
                cause = stop.recv() => {
                    // The manual: a second signal does not change the
                    // shutdown sequence. Say so, so the operator knows.
                    if let StopCause::Signal(name) = cause {
                        let count: usize = self.running.values().map(Vec::len).sum();
                        tracing::info!(
                            target: "cronstable::scheduler",
                            "{name} received again: still waiting for {count} running job(s) to finish"
                        );
                    }
                }
            }
        }
        // Slots the last runs gave back are still being released.
        self.slots.settle().await;
        self.pools.settle().await;
        // The counters as they end, and every write still queued, land
        // before the process exits (bounded by the store).
        self.persist_counters(true);
        self.durable.settle().await;
        // Reports of runs that finished just before the signal are still on
        // their way; give them a bounded time to arrive.
        if !self.reports.is_empty() {
            let pending = self.reports.len();
            let drained = tokio::time::timeout(REPORT_DRAIN, async {
                while self.reports.join_next().await.is_some() {}
            })
            .await;
            if drained.is_err() {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "{pending} report(s) still undelivered after {}s; exiting anyway",
                    REPORT_DRAIN.as_secs()
                );
            }
        }
    }

    /// Runs a report delivery in the background; shutdown waits for it.
    fn deliver(&mut self, delivery: ReportFuture) {
        // Forget deliveries that already finished, so the set stays small.
        while self.reports.try_join_next().is_some() {}
        self.reports.spawn(delivery);
    }

    /// Delivers a completion report of `job` after the job's previous one.
    fn deliver_completion(&mut self, job: &str, delivery: ReportFuture) {
        let chained = self.report_tails.completion(job, delivery);
        self.deliver(chained);
    }

    /// Delivers an `onLate` report of `job` after the job's completion
    /// reports in flight and its previous `onLate` report.
    fn deliver_late(&mut self, job: &str, delivery: ReportFuture) {
        let chained = self.report_tails.late(job, delivery);
        self.deliver(chained);
    }
}

fn lost_run(job: String, run_id: u64, now: DateTime<Utc>) -> RunRecord {
    RunRecord {
        retcode: -1,
        fail_reason: Some("the run task failed".into()),
        ..RunRecord::begun(run_id, job, Trigger::Schedule, 0, now)
    }
}
