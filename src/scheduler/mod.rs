//! The scheduler: one task that owns the job table, the running instances,
//! the retry ladders and the run history. It wakes at each boundary, hot
//! reloads the config when it changed (or on SIGHUP), launches due jobs
//! through one set of gates, collects finished runs, drives retries and
//! reports, and drains on shutdown.

mod api;
pub mod control;
pub mod history;
pub mod pause;
pub mod retry;
pub mod tick;
pub mod watch;

use crate::config::model::{ConcurrencyPolicy, WebConfig};
use crate::config::{self, JobConfig};
use crate::cronexpr::Schedule;
use crate::job::{self, RunHandle, RunRecord, RunRequest, Trigger};
use crate::metrics::prometheus::Counters;
use crate::platform;
use crate::report::{Hook, ReportFuture, Reporter};
use chrono::{DateTime, Utc};
use control::{Control, ControlHandle};
use history::RunHistory;
use pause::PauseWindow;
use retry::RetryLadder;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tick::Cadence;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use watch::ConfigStamp;

/// Messages the scheduler task receives from the tasks it started.
#[derive(Debug)]
enum Event {
    /// A run is over and recorded.
    Finished(Box<RunRecord>),
    /// A retry's delay elapsed.
    RetryDue { job: String, generation: u64 },
    /// The instances a Replace cancelled have ended; launch the new one.
    Replacement {
        job: String,
        trigger: Trigger,
        attempt: u32,
    },
}

/// A job's armed retry ladder and its pending timer.
struct RetryState {
    ladder: RetryLadder,
    generation: u64,
    timer: Option<AbortHandle>,
}

/// The daemon's scheduling core.
pub struct Scheduler {
    config_path: PathBuf,
    jobs: Vec<Arc<JobConfig>>,
    by_name: HashMap<String, usize>,
    stamp: ConfigStamp,
    running: HashMap<String, Vec<RunHandle>>,
    retries: HashMap<String, RetryState>,
    history: RunHistory,
    reporter: Arc<dyn Reporter>,
    events_tx: mpsc::UnboundedSender<Event>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    next_run_id: u64,
    next_generation: u64,
    stopping: bool,
    control_tx: mpsc::UnboundedSender<Control>,
    control_rx: mpsc::UnboundedReceiver<Control>,
    pauses: HashMap<String, PauseWindow>,
    last_output: HashMap<String, Arc<job::LiveOutput>>,
    counters: Counters,
    job_set_id: String,
    web_tx: tokio::sync::watch::Sender<Option<WebConfig>>,
    reports: tokio::task::JoinSet<()>,
    shutdown: ShutdownHandle,
    /// The newest boundary whose due jobs were launched (or deliberately
    /// passed over); the next pass starts after it.
    evaluated: DateTime<Utc>,
}

/// Asks a running scheduler for the graceful shutdown a SIGTERM starts:
/// stop launching, drain the running jobs, return from
/// [`Scheduler::run`]. Cheap to clone; asking more than once changes
/// nothing.
#[derive(Debug, Clone, Default)]
pub struct ShutdownHandle {
    notify: Arc<tokio::sync::Notify>,
}

impl ShutdownHandle {
    /// Requests the graceful shutdown (from any task, before or while the
    /// scheduler runs).
    pub fn trigger(&self) {
        // A stored permit: a request made before `run` polls is not lost.
        self.notify.notify_one();
    }

    async fn requested(&self) {
        self.notify.notified().await;
    }
}

/// How long shutdown waits for reports still being delivered.
const REPORT_DRAIN: Duration = Duration::from_secs(30);

impl Scheduler {
    /// A scheduler over an already loaded config.
    pub fn new(
        config_path: PathBuf,
        loaded: config::LoadedConfig,
        reporter: Arc<dyn Reporter>,
    ) -> Self {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let stamp = ConfigStamp::take(&config_path, &loaded.files);
        let web = loaded.sections.web.clone().map(|w| w.value);
        let buckets = web_buckets(web.as_ref());
        let (web_tx, _) = tokio::sync::watch::channel(web);
        let start_time = Utc::now().timestamp_micros() as f64 / 1e6;
        let mut scheduler = Scheduler {
            config_path,
            jobs: Vec::new(),
            by_name: HashMap::new(),
            stamp,
            running: HashMap::new(),
            retries: HashMap::new(),
            history: RunHistory::default(),
            reporter,
            events_tx,
            events_rx,
            next_run_id: 1,
            next_generation: 1,
            stopping: false,
            control_tx,
            control_rx,
            pauses: HashMap::new(),
            last_output: HashMap::new(),
            counters: Counters::new(start_time, buckets.as_deref()),
            job_set_id: String::new(),
            web_tx,
            reports: tokio::task::JoinSet::new(),
            shutdown: ShutdownHandle::default(),
            evaluated: Utc::now(),
        };
        scheduler.install_jobs(loaded.jobs);
        scheduler
    }

    /// A handle the HTTP API uses to query and drive the scheduler.
    pub fn control(&self) -> ControlHandle {
        ControlHandle::new(self.control_tx.clone())
    }

    /// A handle that starts the same graceful shutdown as SIGTERM (for
    /// callers such as an HTTP shutdown route).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// The `web` section of the running config; changes on every reload
    /// that changes it (None: no web section).
    pub fn web_config(&self) -> tokio::sync::watch::Receiver<Option<WebConfig>> {
        self.web_tx.subscribe()
    }

    fn install_jobs(&mut self, jobs: Vec<JobConfig>) {
        self.job_set_id = crate::fingerprint::job_set_id(&jobs);
        tracing::info!(target: "cronstable::scheduler", "job-set id {}", self.job_set_id);
        // The merged spec only served the load; a 10,000-job table is
        // about a third smaller without it.
        // Built into a fresh Vec: collecting straight from `jobs` would
        // reuse its allocation (sized for whole JobConfigs) for the
        // pointers, keeping megabytes alive for nothing.
        let mut table = Vec::with_capacity(jobs.len());
        for mut job in jobs {
            job.spec = None;
            table.push(Arc::new(job));
        }
        self.jobs = table;
        self.by_name = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.name.clone(), i))
            .collect();
        let by_name = &self.by_name;
        self.history.retain_jobs(|name| by_name.contains_key(name));
        self.pauses.retain(|name, _| by_name.contains_key(name));
        self.last_output
            .retain(|name, _| by_name.contains_key(name));
        self.counters
            .retain_jobs(self.jobs.iter().map(|j| j.name.as_str()));
    }

    fn job(&self, name: &str) -> Option<Arc<JobConfig>> {
        self.by_name.get(name).map(|&i| Arc::clone(&self.jobs[i]))
    }

    /// Second cadence while any enabled job has a seconds field.
    fn cadence(&self) -> Cadence {
        let per_second = self
            .jobs
            .iter()
            .any(|j| j.enabled && j.parsed_schedule.cron().is_some_and(|c| c.has_seconds()));
        if per_second {
            Cadence::Second
        } else {
            Cadence::Minute
        }
    }

    /// Runs until SIGINT/SIGTERM (or [`ShutdownHandle::trigger`]), then
    /// drains running jobs. Further signals during the drain change
    /// nothing: only SIGKILL stops the daemon without it.
    pub async fn run(mut self) -> std::io::Result<()> {
        let mut hangups = platform::reload_signals()?;
        let mut signals = platform::ShutdownSignals::new()?;
        let shutdown = self.shutdown.clone();

        self.launch_reboot_jobs();
        // Nothing at or before the start instant is due: the first pass is
        // the first boundary after it.
        self.evaluated = tick::floor(Utc::now(), self.cadence());
        loop {
            let sleep = sleep_until_wall(tick::next_boundary(self.evaluated, self.cadence()));
            tokio::select! {
                _ = sleep => {
                    self.reload_if_changed(false);
                    self.launch_passed_boundaries();
                }
                Some(event) = self.events_rx.recv() => self.handle_event(event),
                Some(request) = self.control_rx.recv() => self.handle_control(request),
                _ = hangups.recv() => {
                    tracing::info!(target: "cronstable::scheduler", "SIGHUP: reloading the configuration");
                    // Boundaries that pass while the reload works are not
                    // lost: the sleep above is already due when the loop
                    // comes back, and that pass fires them.
                    self.reload_if_changed(true);
                }
                name = signals.recv() => {
                    tracing::info!(target: "cronstable::scheduler", "{name} received");
                    break;
                }
                _ = shutdown.requested() => {
                    tracing::info!(target: "cronstable::scheduler", "shutdown requested");
                    break;
                }
            }
        }
        self.drain(&mut signals).await
    }

    /// Launches the jobs due at every boundary that passed since the last
    /// pass, oldest first, each boundary once (see [`tick::due`]).
    fn launch_passed_boundaries(&mut self) {
        let due = tick::due(
            self.evaluated,
            Utc::now(),
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
        for at in due.fire {
            self.launch_due(at);
        }
        self.evaluated = due.evaluated;
    }

    /// Stops launching, drops pending retries and waits for running jobs.
    async fn drain(&mut self, signals: &mut platform::ShutdownSignals) -> std::io::Result<()> {
        self.stopping = true;
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
                Some(request) = self.control_rx.recv() => self.handle_control(request),
                name = signals.recv() => {
                    // The manual: a second signal does not change the
                    // shutdown sequence. Say so, so the operator knows.
                    let count: usize = self.running.values().map(Vec::len).sum();
                    tracing::info!(
                        target: "cronstable::scheduler",
                        "{name} received again: still waiting for {count} running job(s) to finish"
                    );
                }
            }
        }
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
        Ok(())
    }

    fn reload_if_changed(&mut self, force: bool) {
        if !force && !self.stamp.changed(&self.config_path) {
            return;
        }
        let started = Utc::now();
        let cadence = self.cadence();
        self.reload();
        self.evaluated = tick::rebase(self.evaluated, started, cadence, self.cadence());
    }

    fn reload(&mut self) {
        match config::load_path(&self.config_path) {
            Ok(loaded) => {
                for warning in &loaded.warnings {
                    tracing::warn!(target: "cronstable::config", "{warning}");
                }
                self.stamp = ConfigStamp::take(&self.config_path, &loaded.files);
                crate::logging::apply_section(loaded.sections.logging.as_ref().map(|l| &l.value));
                let count = loaded.jobs.len();
                let web = loaded.sections.web.map(|w| w.value);
                self.counters
                    .set_buckets(web_buckets(web.as_ref()).as_deref());
                self.web_tx.send_if_modified(|current| {
                    let changed = *current != web;
                    *current = web;
                    changed
                });
                self.counters.last_reload_ok = Some(true);
                self.counters.last_reload_success =
                    Some(Utc::now().timestamp_micros() as f64 / 1e6);
                self.install_jobs(loaded.jobs);
                platform::release_free_memory();
                tracing::info!(
                    target: "cronstable::scheduler",
                    "configuration reloaded: {count} job(s)"
                );
            }
            Err(err) => {
                self.counters.last_reload_ok = Some(false);
                // Keep running the last good config; remember the broken
                // state so the same error is not logged on every pass.
                self.stamp = ConfigStamp::take(&self.config_path, &self.stamp_files());
                tracing::error!(
                    target: "cronstable::config",
                    "Configuration error (keeping the running configuration): {err}"
                );
            }
        }
    }

    fn stamp_files(&self) -> Vec<PathBuf> {
        self.stamp.files().to_vec()
    }

    fn launch_reboot_jobs(&mut self) {
        let due: Vec<Arc<JobConfig>> = self
            .jobs
            .iter()
            .filter(|j| j.enabled && matches!(j.parsed_schedule, Schedule::Reboot))
            .cloned()
            .collect();
        for job in due {
            self.launch_scheduled(job);
        }
    }

    fn launch_due(&mut self, at: DateTime<Utc>) {
        let due: Vec<Arc<JobConfig>> = self
            .jobs
            .iter()
            .filter(|j| {
                j.enabled
                    && j.parsed_schedule
                        .cron()
                        .is_some_and(|c| c.matches(at, &j.time_base))
            })
            .cloned()
            .collect();
        for job in due {
            if self.is_paused(&job.name, at) {
                self.record_skipped(&job, at);
                continue;
            }
            self.launch_scheduled(job);
        }
    }

    fn is_paused(&mut self, name: &str, now: DateTime<Utc>) -> bool {
        match self.pauses.get(name) {
            Some(window) if window.until > now => true,
            Some(_) => {
                self.pauses.remove(name);
                tracing::info!(target: "cronstable::scheduler", "Job {name}: its pause has ended");
                false
            }
            None => false,
        }
    }

    /// A due slot of a paused job: recorded as skipped, never launched.
    fn record_skipped(&mut self, job: &JobConfig, at: DateTime<Utc>) {
        let run_id = self.next_run_id;
        self.next_run_id += 1;
        let mut record = lost_run(job.name.clone(), run_id);
        record.started_at = at;
        record.finished_at = at;
        record.retcode = 0;
        record.fail_reason = None;
        record.skip_reason = Some("paused".into());
        tracing::info!(target: "cronstable::scheduler", "Job {}: paused; skipping its {} slot", job.name, at);
        self.counters.record_run(&record);
        self.history.record(record);
    }

    /// A scheduled fire: Forbid leaves the retry sequence alone; otherwise
    /// the job's retries restart from a fresh ladder.
    fn launch_scheduled(&mut self, job: Arc<JobConfig>) {
        if self.stopping {
            return;
        }
        if job.concurrency_policy == ConcurrencyPolicy::Forbid && self.is_running(&job.name) {
            self.warn_still_running(&job);
            return;
        }
        self.cancel_retries(&job.name);
        if let Some(ladder) = RetryLadder::arm(&job.retry) {
            let generation = self.bump_generation();
            self.retries.insert(
                job.name.clone(),
                RetryState {
                    ladder,
                    generation,
                    timer: None,
                },
            );
        }
        self.maybe_launch(job, Trigger::Schedule, 0);
    }

    fn bump_generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }

    fn is_running(&self, name: &str) -> bool {
        self.running
            .get(name)
            .is_some_and(|runs| runs.iter().any(|r| !r.has_ended()))
    }

    fn warn_still_running(&self, job: &JobConfig) {
        tracing::warn!(
            target: "cronstable::scheduler",
            "Job {}: still running and concurrencyPolicy is {:?}",
            job.name,
            job.concurrency_policy
        );
    }

    /// The launch gates, in one place: Allow runs alongside, Forbid skips,
    /// Replace cancels every running instance and launches once they end.
    fn maybe_launch(&mut self, job: Arc<JobConfig>, trigger: Trigger, attempt: u32) {
        if self.is_running(&job.name) {
            self.warn_still_running(&job);
            match job.concurrency_policy {
                ConcurrencyPolicy::Allow => {}
                ConcurrencyPolicy::Forbid => return,
                ConcurrencyPolicy::Replace => {
                    let live: Vec<RunHandle> = self
                        .running
                        .get(&job.name)
                        .map(|runs| runs.iter().filter(|r| !r.has_ended()).cloned().collect())
                        .unwrap_or_default();
                    for handle in &live {
                        handle.replace();
                    }
                    let events = self.events_tx.clone();
                    let name = job.name.clone();
                    tokio::spawn(async move {
                        for handle in &live {
                            handle.wait_ended().await;
                        }
                        let _ = events.send(Event::Replacement {
                            job: name,
                            trigger,
                            attempt,
                        });
                    });
                    return;
                }
            }
        }
        self.spawn_run(job, trigger, attempt);
    }

    fn spawn_run(&mut self, job: Arc<JobConfig>, trigger: Trigger, attempt: u32) {
        let run_id = self.next_run_id;
        self.next_run_id += 1;
        tracing::info!(target: "cronstable::scheduler", "Starting job {}", job.name);
        let (handle, task) = job::start(RunRequest {
            job: Arc::clone(&job),
            trigger,
            attempt,
            run_id,
            observer: Some(Arc::new(crate::metrics::statsd::StatsdEvents)),
        });
        self.running
            .entry(job.name.clone())
            .or_default()
            .push(handle);
        let events = self.events_tx.clone();
        let name = job.name.clone();
        tokio::spawn(async move {
            match task.await {
                Ok(record) => {
                    let _ = events.send(Event::Finished(Box::new(record)));
                }
                Err(err) => {
                    tracing::error!(
                        target: "cronstable::scheduler",
                        "Job {name}: its run task failed ({err}); please report this as a bug"
                    );
                    // Unblock the concurrency gates for this run anyway.
                    let _ = events.send(Event::Finished(Box::new(lost_run(name, run_id))));
                }
            }
        });
    }

    fn handle_event(&mut self, event: Event) {
        match event {
            Event::Finished(record) => self.handle_finished(*record),
            Event::RetryDue { job, generation } => self.handle_retry_due(&job, generation),
            Event::Replacement {
                job,
                trigger,
                attempt,
            } => {
                if self.stopping {
                    return;
                }
                if let Some(config) = self.job(&job) {
                    self.spawn_run(config, trigger, attempt);
                }
            }
        }
    }

    fn handle_finished(&mut self, record: RunRecord) {
        self.keep_last_output(&record.job, record.run_id);
        if let Some(runs) = self.running.get_mut(&record.job) {
            runs.retain(|r| r.run_id != record.run_id);
            if runs.is_empty() {
                self.running.remove(&record.job);
            }
        }
        if record.replaced {
            // A replaced instance is not a run: no history row, no count,
            // no report (only this line says it happened).
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {} was replaced by a newer instance",
                record.job
            );
            return;
        }
        let job = self.job(&record.job);
        self.counters.record_run(&record);
        self.history.record(record.clone());
        if record.cancelled {
            tracing::info!(target: "cronstable::scheduler", "Job {} was cancelled", record.job);
            return;
        }
        let Some(job) = job else {
            // The job left the config while it ran: nothing to report to.
            return;
        };
        if self.stopping {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {} finished during shutdown (exit code {}); not reported",
                job.name,
                record.retcode
            );
            return;
        }
        match &record.fail_reason {
            None => {
                tracing::info!(
                    target: "cronstable::scheduler",
                    "Job {} succeeded (exit code {})",
                    job.name,
                    record.retcode
                );
                self.cancel_retries(&job.name);
                let delivery = self.reporter.report(Hook::Success, &job, &record);
                self.deliver(delivery);
            }
            Some(reason) => {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {} failed: {reason}",
                    job.name
                );
                let failure = self.reporter.report(Hook::Failure, &job, &record);
                let permanent = self
                    .schedule_retry_or_give_up(&job)
                    .then(|| self.reporter.report(Hook::PermanentFailure, &job, &record));
                // One delivery for both hooks: every onFailure reporter is
                // done (or timed out) before any onPermanentFailure one
                // starts, so a receiver never sees them out of order.
                self.deliver(Box::pin(async move {
                    failure.await;
                    if let Some(permanent) = permanent {
                        permanent.await;
                    }
                }));
            }
        }
    }

    /// Arms the next retry of a failed run; true when none is left (the
    /// failure is permanent and the caller reports it).
    fn schedule_retry_or_give_up(&mut self, job: &Arc<JobConfig>) -> bool {
        let Some(state) = self.retries.get_mut(&job.name) else {
            self.counters.record_permanent_failure(&job.name);
            return true;
        };
        if state.ladder.exhausted() {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {} has been retried {} times",
                job.name,
                state.ladder.count()
            );
            self.cancel_retries(&job.name);
            self.counters.record_permanent_failure(&job.name);
            return true;
        }
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        let delay = state.ladder.next_delay();
        let generation = state.generation;
        let attempt = state.ladder.count();
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {}: retry #{attempt} in {delay} seconds",
            job.name
        );
        let events = self.events_tx.clone();
        let name = job.name.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs_f64(delay.max(0.0))).await;
            let _ = events.send(Event::RetryDue {
                job: name,
                generation,
            });
        });
        state.timer = Some(timer.abort_handle());
        false
    }

    fn handle_retry_due(&mut self, name: &str, generation: u64) {
        let Some(state) = self.retries.get_mut(name) else {
            return;
        };
        if state.generation != generation || self.stopping {
            return;
        }
        let attempt = state.ladder.count();
        let now = Utc::now();
        if let Some(until) = self.pauses.get(name).map(|w| w.until).filter(|u| *u > now) {
            // A pending retry waits out the pause instead of running in it.
            let events = self.events_tx.clone();
            let job = name.to_owned();
            let wait = (until - now).to_std().unwrap_or_default();
            let timer = tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let _ = events.send(Event::RetryDue { job, generation });
            });
            if let Some(state) = self.retries.get_mut(name) {
                state.timer = Some(timer.abort_handle());
            }
            return;
        }
        if let Some(state) = self.retries.get_mut(name) {
            state.timer = None;
        }
        match self.job(name) {
            Some(job) => {
                self.counters.record_retry(name);
                self.maybe_launch(job, Trigger::Retry, attempt)
            }
            None => {
                // The job disappeared in a reload: its retries go with it.
                self.retries.remove(name);
            }
        }
    }

    fn cancel_retries(&mut self, name: &str) {
        if let Some(state) = self.retries.remove(name) {
            if let Some(timer) = state.timer {
                timer.abort();
            }
        }
    }

    /// Runs a report delivery in the background; shutdown waits for it.
    fn deliver(&mut self, delivery: ReportFuture) {
        // Forget deliveries that already finished, so the set stays small.
        while self.reports.try_join_next().is_some() {}
        self.reports.spawn(delivery);
    }
}

fn web_buckets(web: Option<&WebConfig>) -> Option<Vec<f64>> {
    web.and_then(|w| w.metrics.as_ref())
        .and_then(|m| m.duration_buckets.clone())
}

fn lost_run(job: String, run_id: u64) -> RunRecord {
    let now = Utc::now();
    RunRecord {
        run_id,
        job,
        trigger: Trigger::Schedule,
        attempt: 0,
        started_at: now,
        finished_at: now,
        pid: None,
        retcode: -1,
        fail_reason: Some("the run task failed".into()),
        stdout: Default::default(),
        stderr: Default::default(),
        replaced: false,
        cancelled: false,
        timed_out: false,
        start_error: None,
        skip_reason: None,
    }
}

/// Sleeps until the wall-clock instant `at` (re-checking the clock, so a
/// timer that fires a hair early does not start a pass before `at`).
async fn sleep_until_wall(at: DateTime<Utc>) {
    loop {
        let remaining = at - Utc::now();
        match remaining.to_std() {
            Ok(d) if !d.is_zero() => tokio::time::sleep(d).await,
            _ => return,
        }
    }
}
