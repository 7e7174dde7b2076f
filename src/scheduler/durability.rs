//! The scheduler's side of the durable store (the `DurableState` port):
//! reading it back at start, folding in what other nodes sharing it
//! change, and handing it every fact worth keeping. Every write is
//! fire-and-forget and every decision at fire time is made from memory,
//! so a slow or dead store never delays a scheduled fire.

use super::durable::{DurableEvent, DurableRetry, DurableWrite, Rehydrated};
use super::pause::PauseMark;
use super::ports::PendingRetry;
use super::retry::RetryLadder;
use super::{RetryState, Scheduler};
use crate::config::model::sections::OnStoreUnavailable;
use crate::config::JobConfig;
use crate::cronexpr::Schedule;
use crate::job::RunRecord;
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most one counters snapshot is taken per this long (the writer has
/// the same bound; taking one copies every job's counters).
const COUNTERS_EVERY: Duration = Duration::from_secs(15);

/// What the scheduler keeps about the store.
#[derive(Debug)]
pub(super) struct Durability {
    /// The store answers (its last read worked).
    pub(super) available: bool,
    /// `@reboot` jobs that already ran during this OS boot, or whose
    /// previous run still runs: their start launch is skipped.
    pub(super) reboot_done: std::collections::HashSet<String>,
    /// Per `onMissed` job, the ledger's catch-up watermark read at start.
    pub(super) watermarks: HashMap<String, DateTime<Utc>>,
    /// When the last counters snapshot was taken.
    pub(super) counters_at: Option<Instant>,
}

impl Default for Durability {
    fn default() -> Self {
        Durability {
            available: true,
            reboot_done: Default::default(),
            watermarks: HashMap::new(),
            counters_at: None,
        }
    }
}

impl Scheduler {
    /// Whether a durable store is configured.
    pub(super) fn durable_enabled(&self) -> bool {
        self.durable.enabled()
    }

    /// Whether the gates that read durable truth must refuse: the store
    /// does not answer and `onStoreUnavailable` is `fail-closed`.
    pub(super) fn durable_fails_closed(&self) -> bool {
        self.durable.enabled()
            && !self.durability.available
            && self.durable.policy() == OnStoreUnavailable::FailClosed
    }

    /// At start, with a store: reads it back (bounded by the store) and
    /// puts what it holds in force before anything is launched.
    pub(super) async fn rehydrate(&mut self) {
        if !self.durable.enabled() {
            return;
        }
        let jobs = Arc::clone(&self.jobs);
        match self.durable.rehydrate(jobs).await {
            Ok(read) => self.apply_rehydrated(read),
            Err(err) => {
                self.durability.available = false;
                tracing::warn!(
                    target: "cronstable::state",
                    "state: cannot read the store at start ({err}); starting from memory: run \
                     history, pending retries, pauses and @reboot markers of earlier runs are not \
                     restored"
                );
            }
        }
    }

    fn apply_rehydrated(&mut self, read: Rehydrated) {
        let now = self.clock.now();
        let warmed = read.runs.len();
        for (_, runs) in read.runs {
            for run in runs {
                // History only: these were counted by the process that ran
                // them (the counters come back from their snapshot).
                self.store.record_run(run);
            }
        }
        if warmed > 0 {
            tracing::info!(
                target: "cronstable::state",
                "state: rehydrated run history for {warmed} job(s) from the ledger"
            );
        }
        for (job, outcome) in read.last_real {
            self.store.note_real_outcome(&job, outcome);
        }
        self.note_rehydrated_pauses(read.pause_history, &read.pauses);
        for (job, mark) in read.pauses {
            if let PauseMark::Paused(window) = mark {
                if window.until > now && self.job(&job).is_some() {
                    tracing::info!(
                        target: "cronstable::scheduler",
                        "Job {job} paused until {} by {} ({}), as recorded in the state store",
                        crate::report::context::python_isoformat(window.until),
                        window.by,
                        window.channel
                    );
                    self.store.set_pause(&job, window);
                }
            }
        }
        for name in &read.reboot_ran {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {name} (@reboot) already ran during this OS boot; skipping (state-backed dedupe)"
            );
        }
        for name in &read.reboot_survivors {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {name} (@reboot): the previous daemon's run still runs; not launching another"
            );
        }
        let rebooted: std::collections::HashSet<String> = self
            .jobs
            .iter()
            .filter(|j| matches!(j.schedule.parsed, Schedule::Reboot))
            .filter(|j| !read.reboot_ran.contains(&j.name))
            .map(|j| j.name.clone())
            .collect();
        self.durability.reboot_done = read
            .reboot_ran
            .into_iter()
            .chain(read.reboot_survivors)
            .collect();
        let mut retries: Vec<_> = read.retries.into_iter().collect();
        retries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, retry) in retries {
            self.rearm_durable_retry(&name, retry, rebooted.contains(&name), now);
        }
        self.durability.watermarks = read.watermarks;
        if let Some(snapshot) = read.counters {
            let names: std::collections::HashSet<String> = self.by_name.keys().cloned().collect();
            let seeded = self.counters().seed(&snapshot, |name| names.contains(name));
            self.seed_carried(&snapshot, |name| names.contains(name));
            if seeded > 0 {
                tracing::info!(
                    target: "cronstable::state",
                    "state: rehydrated Prometheus counters for {seeded} job(s) from the durable \
                     snapshot"
                );
            }
        }
    }

    /// Re-arms a retry the store remembers as pending, at its absolute
    /// deadline, unless it no longer applies (then it is settled).
    fn rearm_durable_retry(
        &mut self,
        name: &str,
        retry: DurableRetry,
        rebooted: bool,
        now: DateTime<Utc>,
    ) {
        let Some(job) = self.job(name) else {
            return self.settle_retry(name, retry.attempt, "job-removed");
        };
        let digest = self.durable_digest(&job);
        let reason = if job.retry.maximum_retries == 0 || retry.digest != digest {
            Some("config-changed")
        } else if self
            .store
            .runs_newest_first(name)
            .first()
            .is_some_and(|run| run.finished_at > retry.recorded_at && run.skip_reason.is_none())
        {
            Some("superseded-by-run")
        } else if !job.enabled {
            Some("disabled")
        } else if job.retry.maximum_retries != -1
            && i64::from(retry.attempt) > job.retry.maximum_retries
        {
            Some("exhausted")
        } else if job
            .starting_deadline_seconds
            .is_some_and(|secs| now - retry.not_before > TimeDelta::seconds(secs))
        {
            Some("deadline-passed")
        } else if matches!(job.schedule.parsed, Schedule::Reboot) && rebooted {
            // The fresh boot run supersedes the old boot's ladder.
            Some("superseded-by-reboot")
        } else {
            None
        };
        if let Some(reason) = reason {
            tracing::info!(
                target: "cronstable::state",
                "Job {name}: pending retry #{} from the durable ledger not re-armed ({reason})",
                retry.attempt
            );
            return self.settle_retry(name, retry.attempt, reason);
        }
        let Some(mut ladder) = RetryLadder::arm(&job.retry) else {
            return;
        };
        for _ in 0..retry.attempt {
            ladder.next_delay();
        }
        let wait = (retry.not_before - now).to_std().unwrap_or_default();
        let generation = self.bump_generation();
        let recorded_at = retry.recorded_at;
        let timer = self.retry_timer(name, generation, wait);
        self.retries.insert(
            name.to_owned(),
            RetryState {
                ladder,
                generation,
                timer: Some(timer),
                armed_at: recorded_at,
            },
        );
        self.store.set_retry(
            name,
            PendingRetry {
                attempt: retry.attempt,
                due: retry.not_before.max(now),
            },
        );
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {name}: re-armed pending retry #{} from the durable ledger (due in {:.1} seconds)",
            retry.attempt,
            wait.as_secs_f64()
        );
    }

    /// The job's config digest, for judging a stored retry at start (the
    /// writes leave theirs to the store, which keeps one per installed
    /// job); empty without a store (nothing reads it then).
    pub(super) fn durable_digest(&self, job: &JobConfig) -> String {
        if !self.durable.enabled() {
            return String::new();
        }
        crate::fingerprint::job_digests(std::iter::once(job))
            .pop()
            .unwrap_or_default()
    }

    /// Records that `name`'s retry ladder ended (or its attempt launches).
    pub(super) fn settle_retry(&mut self, name: &str, attempt: u32, reason: &'static str) {
        if self.durable.enabled() {
            self.durable.write(DurableWrite::RetrySettled {
                job: name.to_owned(),
                attempt,
                reason,
            });
        }
    }

    /// Records a retry armed for `job`.
    pub(super) fn persist_retry(
        &mut self,
        job: &JobConfig,
        attempt: u32,
        not_before: DateTime<Utc>,
    ) {
        if self.durable.enabled() {
            self.durable.write(DurableWrite::RetryPending {
                job: job.name.clone(),
                attempt,
                not_before,
                digest: String::new(),
            });
        }
    }

    /// Hands a finished (or skipped) run to the store, and now and then
    /// the counters.
    pub(super) fn persist_run(&mut self, record: &RunRecord) {
        if !self.durable.enabled() {
            return;
        }
        let (archive, redact) = self.job(&record.job).map_or((false, true), |j| {
            (j.archive_output, j.redact_archived_secrets)
        });
        self.durable.write(DurableWrite::Run {
            record: Arc::new(record.clone()),
            archive,
            redact,
        });
        self.persist_counters(false);
    }

    /// Hands the store a counters snapshot (at most every 15 seconds
    /// unless `force`, the shutdown's).
    pub(super) fn persist_counters(&mut self, force: bool) {
        if !self.durable.enabled() {
            return;
        }
        if !force
            && self
                .durability
                .counters_at
                .is_some_and(|at| at.elapsed() < COUNTERS_EVERY)
        {
            return;
        }
        self.durability.counters_at = Some(Instant::now());
        let snapshot = self.counters_snapshot();
        self.durable
            .write(DurableWrite::Counters { snapshot, force });
    }

    /// Records that `job` went from no instance to one here.
    pub(super) fn persist_inflight_open(
        &mut self,
        job: &JobConfig,
        pid: Option<u32>,
        started_at: DateTime<Utc>,
    ) {
        if self.durable.enabled() {
            self.durable.write(DurableWrite::InflightOpen {
                job: job.name.clone(),
                pid,
                started_at,
                digest: String::new(),
            });
        }
    }

    /// Records that `job`'s last instance here ended.
    pub(super) fn persist_inflight_closed(&mut self, job: &str) {
        if self.durable.enabled() {
            self.durable.write(DurableWrite::InflightClosed {
                job: job.to_owned(),
            });
        }
    }

    /// Records a pause or resume this node accepted, for every node
    /// sharing the store and the next start.
    pub(super) fn persist_pause(&mut self, job: &str, mark: PauseMark) {
        self.note_pause(job, &mark);
        if self.durable.enabled() {
            self.durable.write(DurableWrite::Pause {
                job: job.to_owned(),
                mark,
            });
        }
    }

    /// Takes in a change the store reports.
    pub(super) fn durable_event(&mut self, event: DurableEvent) {
        self.api.changed();
        match event {
            DurableEvent::Available(available) => self.durability.available = available,
            DurableEvent::Interrupted(record) => {
                if self.job(&record.job).is_some() {
                    self.store.record_run(*record);
                }
            }
            DurableEvent::LastOutcome { job, outcome } => {
                self.store.note_real_outcome(&job, outcome);
            }
            DurableEvent::RetryHandedOver { job, retry } => {
                // A live ladder armed here is newer than any record handed
                // over; a fresh, never-advanced one (a scheduled launch
                // arms one before it knows the outcome) is not.
                let live = self
                    .retries
                    .get(&job)
                    .is_some_and(|s| s.timer.is_some() || s.ladder.count() > 0);
                if !live && !self.stopping {
                    let now = self.clock.now();
                    self.rearm_durable_retry(&job, retry, false, now);
                }
            }
            DurableEvent::Pause { job, mark } => {
                if self.job(&job).is_none() {
                    return;
                }
                self.note_pause(&job, &mark);
                let now = self.clock.now();
                match super::pause_sync::apply(self.store.pause(&job), &mark, now) {
                    super::pause_sync::Apply::Keep => {}
                    super::pause_sync::Apply::Pause => {
                        if let PauseMark::Paused(window) = mark {
                            tracing::info!(
                                target: "cronstable::scheduler",
                                "Job {job} paused until {} by {} ({}), as recorded in the state store",
                                crate::report::context::python_isoformat(window.until),
                                window.by,
                                window.channel
                            );
                            self.store.set_pause(&job, window);
                        }
                    }
                    super::pause_sync::Apply::Resume => {
                        tracing::info!(
                            target: "cronstable::scheduler",
                            "Job {job} resumed, as recorded in the state store"
                        );
                        self.store.clear_pause(&job);
                    }
                }
            }
        }
    }
}
