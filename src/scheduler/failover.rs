//! The scheduler's side of the leadership store's records: `@reboot` jobs
//! that run once per cluster, the fire record written before a catch-up
//! job launches, and the catch-up a new leader runs for the fires that
//! fell while nobody led.
//!
//! Every store call is asynchronous (the scheduler never blocks on it): a
//! spawned task asks the [`LeaderRecords`] handle and the answer comes
//! back as an [`Answer`] through the scheduler's event channel.
//!
//! The rules, from the Clustering and Durable-State pages, with the lease
//! store standing in for the original's `state` section:
//! - a `Leader`/`PreferLeader` `@reboot` job is deferred at start; it runs
//!   on the node the gate admits, which records it first (record, then
//!   run); a node that finds it recorded for the live job-set id stands
//!   down. `EveryNode` `@reboot` jobs run at every start, as before.
//! - a scheduled launch of a job with `onMissed` other than `skip` records
//!   its fire in the store before it starts.
//! - when this node gains leadership, it reads those records and launches
//!   what each such job is owed for the fires between its recorded last
//!   fire and the takeover (`run-once`: one launch; `run-all`: one per
//!   fire, at most [`MAX_CATCHUP`], one after the other), skipping fires
//!   older than `startingDeadlineSeconds`. A job never recorded is owed
//!   nothing: a first run is never "missed".

use super::pause::PauseMark;
use super::ports::{Admission, LeaderRecords, RecordsError};
use super::{Event, Scheduler};
use crate::config::model::{ClusterPolicy, OnMissed};
use crate::config::JobConfig;
use crate::cronexpr::Schedule;
use crate::job::Trigger;
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

mod excused;
#[cfg(test)]
mod excused_tests;
mod owed;
#[cfg(test)]
mod start_tests;
#[cfg(test)]
mod tests;

use excused::PauseLog;
pub use excused::{pause_windows, Excused};
use owed::jitter_offset;
pub use owed::{owed_fires, Owed, MAX_CATCHUP};

/// How often deferred `@reboot` jobs ask the gate again while they wait
/// (in memory; the store is read when the gate admits one, and every
/// [`REBOOT_STORE_EVERY`] rechecks to retire those another node ran).
const REBOOT_RECHECK: Duration = Duration::from_secs(1);

/// Rechecks between two reads of the store while nothing is admitted here.
const REBOOT_STORE_EVERY: u32 = 5;

/// Answers of the store calls, back on the scheduler's event channel.
#[derive(Debug)]
pub(super) enum Answer {
    /// The `@reboot` jobs recorded as run for `job_set_id`.
    RebootRan {
        job_set_id: String,
        result: Result<HashSet<String>, RecordsError>,
    },
    /// This node recorded (or failed to record) that `job` runs its
    /// `@reboot` launch.
    RebootMarked {
        job: String,
        result: Result<(), RecordsError>,
    },
    /// Time to ask the gate about the deferred `@reboot` jobs again.
    RebootRecheck,
    /// The fire of `job` at `at` is recorded (or could not be); launch it.
    FireRecorded {
        job: String,
        at: DateTime<Utc>,
        backfill: bool,
        result: Result<(), RecordsError>,
    },
    /// The last fires recorded in the store, read after this node gained
    /// leadership term `term`; owed fires are those up to `upto`.
    LastFires {
        term: u64,
        upto: DateTime<Utc>,
        result: Result<HashMap<String, DateTime<Utc>>, RecordsError>,
    },
    /// A catch-up's jitter delay for `job` is over.
    JitterDone { job: String },
}

/// A job's catch-up in progress: launches left, one at a time.
#[derive(Debug, Clone)]
struct Backfill {
    remaining: u32,
    /// The watermark each launch records (the newest owed fire).
    at: DateTime<Utc>,
    /// The watermark the backfill was computed from (its checkpoints).
    watermark: DateTime<Utc>,
    /// A launch is on its way (its fire record is being written).
    launching: bool,
    /// Still waiting out the job's jitter offset.
    jittering: bool,
}

/// The scheduler's failover bookkeeping.
#[derive(Debug, Default)]
pub(super) struct Failover {
    /// `@reboot` jobs waiting for the gate (or for the store to say they
    /// already ran elsewhere).
    pending_reboot: HashSet<String>,
    /// A `reboot_ran` read is on its way.
    reboot_query: bool,
    /// A recheck timer is armed.
    reboot_timer: bool,
    /// Rechecks since the store was last read.
    rechecks: u32,
    /// The store could not answer about `@reboot`; warned once.
    reboot_warned: bool,
    /// The leadership term the last catch-up was for.
    seen_term: u64,
    /// A `last_fires` read is on its way.
    catchup_query: bool,
    /// The watermark read failed; warned once until it works again.
    catchup_warned: bool,
    /// Catch-ups in progress, per job.
    backfills: HashMap<String, Backfill>,
    /// Jobs whose fire could not be recorded; warned once until a record
    /// succeeds again (a store outage would otherwise warn every fire).
    record_warned: HashSet<String>,
    /// The pause marks seen per job: the windows a catch-up owes nothing
    /// for, lapsed ones included.
    pause_log: PauseLog,
}

/// True when `job`'s scheduled fires are recorded in the leadership store
/// (so a new leader can tell which it missed).
fn wants_fire_record(job: &JobConfig) -> bool {
    job.on_missed != OnMissed::Skip
        && job.cluster_policy != ClusterPolicy::EveryNode
        && matches!(job.schedule.parsed, Schedule::Cron(_))
}

/// True when `job` catches up at start from the durable ledger.
fn wants_catch_up(job: &JobConfig) -> bool {
    job.on_missed != OnMissed::Skip && matches!(job.schedule.parsed, Schedule::Cron(_))
}

/// True when `job`'s `@reboot` launch waits for the cluster's verdict.
fn defers_reboot(job: &JobConfig) -> bool {
    job.enabled
        && matches!(job.schedule.parsed, Schedule::Reboot)
        && job.cluster_policy != ClusterPolicy::EveryNode
}

impl Scheduler {
    fn records(&self) -> Option<Arc<dyn LeaderRecords>> {
        self.gate.records()
    }

    /// Keeps a pause or resume of `job` seen anywhere (accepted here, read
    /// from a store, reported by the poller), so a later catch-up owes
    /// nothing for the window, even once it has lapsed.
    pub(super) fn note_pause(&mut self, job: &str, mark: &PauseMark) {
        self.failover.pause_log.note(job, mark.clone());
    }

    /// Keeps the pause marks a start read back: each job's retained
    /// history (`history`, any order) and its newest mark (`newest`).
    pub(super) fn note_rehydrated_pauses(
        &mut self,
        history: HashMap<String, Vec<PauseMark>>,
        newest: &HashMap<String, PauseMark>,
    ) {
        for (job, marks) in history {
            for mark in marks {
                self.failover.pause_log.note(&job, mark);
            }
        }
        for (job, mark) in newest {
            self.failover.pause_log.note(job, mark.clone());
        }
    }

    /// A deferred `@reboot` job still waiting (`GET /jobs` shows it).
    pub(super) fn reboot_pending(&self, name: &str) -> bool {
        self.failover.pending_reboot.contains(name)
    }

    /// At start: defers the `@reboot` jobs the cluster decides about;
    /// returns the ones that launch here right away.
    pub(super) fn defer_reboot_jobs(&mut self, due: Vec<Arc<JobConfig>>) -> Vec<Arc<JobConfig>> {
        if self.records().is_none() {
            return due;
        }
        let (deferred, now): (Vec<_>, Vec<_>) = due.into_iter().partition(|j| defers_reboot(j));
        for job in deferred {
            self.failover.pending_reboot.insert(job.name.clone());
        }
        if !self.failover.pending_reboot.is_empty() {
            self.query_reboot_ran();
        }
        now
    }

    /// Every pass: retire or launch deferred `@reboot` jobs, and notice a
    /// takeover (a new leadership term) to catch up its window. `upto` is
    /// the newest boundary already evaluated before this pass.
    pub(super) fn failover_pass(&mut self, upto: DateTime<Utc>) {
        if !self.failover.pending_reboot.is_empty() {
            self.query_reboot_ran();
        }
        let term = self.gate.leadership_term();
        if term != self.failover.seen_term && !self.failover.catchup_query {
            self.failover.seen_term = term;
            if term != 0 {
                self.query_last_fires(term, upto);
            }
        }
    }

    fn query_reboot_ran(&mut self) {
        if self.failover.reboot_query || self.stopping {
            return;
        }
        let Some(records) = self.records() else {
            // Election was switched off by a reload: nothing decides for
            // the cluster any more, so they run here now.
            let names: Vec<String> = self.failover.pending_reboot.drain().collect();
            for name in names {
                if let Some(job) = self.job(&name) {
                    self.launch_scheduled(job);
                }
            }
            return;
        };
        self.failover.reboot_query = true;
        let job_set_id = self.job_set_id.clone();
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let result = records.reboot_ran(&job_set_id).await;
            let _ = events.send(Event::Failover(Answer::RebootRan { job_set_id, result }));
        });
    }

    fn arm_reboot_recheck(&mut self) {
        if self.failover.reboot_timer || self.failover.pending_reboot.is_empty() {
            return;
        }
        self.failover.reboot_timer = true;
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(REBOOT_RECHECK).await;
            let _ = events.send(Event::Failover(Answer::RebootRecheck));
        });
    }

    pub(super) fn handle_failover(&mut self, answer: Answer) {
        match answer {
            Answer::RebootRan { job_set_id, result } => {
                self.failover.reboot_query = false;
                if job_set_id == self.job_set_id {
                    self.settle_reboots(result);
                }
                self.arm_reboot_recheck();
            }
            Answer::RebootRecheck => {
                self.failover.reboot_timer = false;
                // Only the gate is asked here (in memory); the store is read
                // when some deferred job may run on this node now.
                let admitted = self.failover.pending_reboot.iter().any(|name| {
                    self.job(name).is_some_and(|job| {
                        self.gate.admit(&job, Trigger::Schedule) == Admission::Launch
                    })
                });
                self.failover.rechecks += 1;
                if admitted || self.failover.rechecks >= REBOOT_STORE_EVERY {
                    self.failover.rechecks = 0;
                    self.query_reboot_ran();
                } else {
                    self.arm_reboot_recheck();
                }
            }
            Answer::RebootMarked { job, result } => match result {
                Ok(()) => {
                    if let Some(config) = self.job(&job) {
                        self.launch_scheduled(config);
                    }
                }
                Err(err) => {
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "cluster: could not record that @reboot job {job} runs ({err}); keeping it pending"
                    );
                    self.failover.pending_reboot.insert(job);
                    self.arm_reboot_recheck();
                }
            },
            Answer::FireRecorded {
                job,
                at,
                backfill,
                result,
            } => self.fire_recorded(&job, at, backfill, result),
            Answer::LastFires { term, upto, result } => {
                self.failover.catchup_query = false;
                if self.pauses_pending(term) {
                    // Paused jobs are owed nothing: apply the pauses first.
                    self.stash_catch_up((term, upto, result));
                } else {
                    self.start_catch_up(term, upto, result);
                }
            }
            Answer::JitterDone { job } => {
                if let Some(fill) = self.failover.backfills.get_mut(&job) {
                    fill.jittering = false;
                }
                self.pump_backfill(&job);
            }
        }
    }

    /// Applies the store's answer to the deferred `@reboot` jobs.
    fn settle_reboots(&mut self, result: Result<HashSet<String>, RecordsError>) {
        let mut names: Vec<String> = self.failover.pending_reboot.iter().cloned().collect();
        names.sort();
        match result {
            Ok(ran) => {
                self.failover.reboot_warned = false;
                for name in names {
                    // A name the current set lacks stays pending (a reload
                    // may bring it back); one reused for a job that no
                    // longer defers retires unrun.
                    let Some(job) = self.job(&name) else { continue };
                    if !defers_reboot(&job) {
                        self.failover.pending_reboot.remove(&name);
                        continue;
                    }
                    if self.suspended.contains(&name) {
                        // A suspended set's @reboot does not run (as
                        // without election); nothing is recorded, so the
                        // cluster does not count it as run either.
                        tracing::debug!(
                            target: "cronstable::scheduler",
                            "Job {name}: not launched (its CronJobSet is suspended)"
                        );
                        self.failover.pending_reboot.remove(&name);
                        continue;
                    }
                    if ran.contains(&name) {
                        tracing::info!(
                            target: "cronstable::scheduler",
                            "cluster: deferred @reboot job {name} already ran in the cluster; standing down here"
                        );
                        self.failover.pending_reboot.remove(&name);
                    } else if self.gate.admit(&job, Trigger::Schedule) == Admission::Launch {
                        tracing::info!(
                            target: "cronstable::scheduler",
                            "cluster: running deferred @reboot job {name} (this node is the elected owner)"
                        );
                        self.failover.pending_reboot.remove(&name);
                        self.mark_reboot_ran(name);
                    }
                }
            }
            Err(RecordsError::NoBackend) => {
                // No backend runs (it failed to start, or a reload is
                // restarting it): PreferLeader never skips; Leader waits.
                for name in names {
                    let Some(job) = self.job(&name) else { continue };
                    if job.cluster_policy == ClusterPolicy::PreferLeader && defers_reboot(&job) {
                        tracing::info!(
                            target: "cronstable::scheduler",
                            "cluster: running deferred @reboot PreferLeader job {name} (no leadership manager; never-skip semantics)"
                        );
                        self.failover.pending_reboot.remove(&name);
                        self.launch_scheduled(job);
                    }
                }
            }
            Err(err) => {
                if !self.failover.reboot_warned {
                    self.failover.reboot_warned = true;
                    for name in &names {
                        tracing::warn!(
                            target: "cronstable::scheduler",
                            "cluster: error checking whether @reboot job {name} already ran; keeping it pending ({err})"
                        );
                    }
                }
            }
        }
    }

    fn mark_reboot_ran(&mut self, name: String) {
        let Some(records) = self.records() else {
            return;
        };
        let job_set_id = self.job_set_id.clone();
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let result = records.mark_reboot_ran(&job_set_id, &name).await;
            let _ = events.send(Event::Failover(Answer::RebootMarked { job: name, result }));
        });
    }

    /// Records the fire before a scheduled launch when the job catches up
    /// after failovers; true when the launch now waits for that record.
    pub(super) fn record_fire_first(&mut self, job: &JobConfig, backfill: bool) -> bool {
        if !wants_fire_record(job) {
            return false;
        }
        let Some(at) = self.firing_at.or_else(|| {
            backfill
                .then(|| self.failover.backfills.get(&job.name).map(|b| b.at))
                .flatten()
        }) else {
            return false;
        };
        let Some(records) = self.records() else {
            return false;
        };
        let name = job.name.clone();
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let result = records.record_fire(&name, at).await;
            let _ = events.send(Event::Failover(Answer::FireRecorded {
                job: name,
                at,
                backfill,
                result,
            }));
        });
        true
    }

    fn fire_recorded(
        &mut self,
        name: &str,
        at: DateTime<Utc>,
        backfill: bool,
        result: Result<(), RecordsError>,
    ) {
        match result {
            Ok(()) => {
                self.failover.record_warned.remove(name);
            }
            Err(err) => {
                // Launching anyway: the gate admitted this node and the
                // record only protects a later takeover; at worst a new
                // leader runs this fire again (at-least-once catch-up).
                if self.failover.record_warned.insert(name.to_owned()) {
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "Job {name}: could not record its fire in the leadership store ({err}); launching anyway"
                    );
                } else {
                    tracing::debug!(
                        target: "cronstable::scheduler",
                        "Job {name}: could not record its fire in the leadership store ({err}); launching anyway"
                    );
                }
            }
        }
        let Some(job) = self.job(name) else {
            self.failover.backfills.remove(name);
            return;
        };
        if self.stopping || self.gate.admit(&job, Trigger::Schedule) != Admission::Launch {
            // Leadership moved while the record was written: the fire is
            // recorded but not run here (a missed run, never a double one).
            if let Some(fill) = self.failover.backfills.get_mut(name) {
                fill.launching = false;
            }
            return;
        }
        self.firing_at = Some(at);
        if backfill {
            if let Some(fill) = self.failover.backfills.get_mut(name) {
                fill.launching = false;
                fill.remaining = fill.remaining.saturating_sub(1);
                if fill.remaining == 0 {
                    let watermark = fill.watermark;
                    self.failover.backfills.remove(name);
                    if self.durable_enabled() {
                        self.durable.write(super::durable::DurableWrite::Catchup {
                            job: name.to_owned(),
                            open: false,
                            watermark,
                        });
                    }
                }
            }
            // Backfills launch without the retry ladder (the original's rule).
            self.maybe_launch(job, Trigger::Schedule, 0);
        } else {
            self.launch_recorded(job);
        }
        self.firing_at = None;
    }

    fn query_last_fires(&mut self, term: u64, upto: DateTime<Utc>) {
        let wanted = self.jobs.iter().any(|j| j.enabled && wants_fire_record(j));
        if !wanted {
            return;
        }
        let Some(records) = self.records() else {
            return;
        };
        self.failover.catchup_query = true;
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let result = records.last_fires().await;
            let _ = events.send(Event::Failover(Answer::LastFires { term, upto, result }));
        });
    }

    pub(super) fn start_catch_up(
        &mut self,
        term: u64,
        upto: DateTime<Utc>,
        result: Result<HashMap<String, DateTime<Utc>>, RecordsError>,
    ) {
        if term != self.gate.leadership_term() || self.stopping {
            // Leadership moved again while the records were read.
            return;
        }
        let fires = match result {
            Ok(fires) => {
                self.failover.catchup_warned = false;
                fires
            }
            Err(err) => {
                // Asked again at the next pass.
                self.failover.seen_term = 0;
                let candidates: Vec<String> = self
                    .jobs
                    .iter()
                    .filter(|j| j.enabled && wants_fire_record(j))
                    .map(|j| j.name.clone())
                    .collect();
                for name in candidates {
                    if self.failover.catchup_warned {
                        tracing::debug!(
                            target: "cronstable::scheduler",
                            "catch-up: cannot read the {name} watermark ({err}); will retry"
                        );
                    } else {
                        tracing::warn!(
                            target: "cronstable::scheduler",
                            "catch-up: cannot read the {name} watermark ({err}); will retry"
                        );
                    }
                }
                self.failover.catchup_warned = true;
                return;
            }
        };
        let mut fires = fires;
        // With a durable store, the ledger's watermark counts too (runs
        // this node or another recorded there).
        for (job, mark) in &self.durability.watermarks {
            let entry = fires.entry(job.clone()).or_insert(*mark);
            if *mark > *entry {
                *entry = *mark;
            }
        }
        self.plan_backfills(&fires, upto, true);
    }

    /// At start with a durable store and no leader election: catches up
    /// the fires each `onMissed` job missed while the daemon was down,
    /// from the ledger's watermarks (the takeover catch-up's rules, one
    /// code path). Under election a new leader's takeover does it.
    pub(super) fn catch_up_at_start(&mut self) {
        if !self.durable_enabled() || self.records().is_some() {
            return;
        }
        let marks = std::mem::take(&mut self.durability.watermarks);
        let upto = self
            .evaluated
            .max(super::tick::floor(self.clock.now(), self.cadence()));
        self.plan_backfills(&marks, upto, false);
    }

    /// Plans the backfill of every job owed fires after its recorded last
    /// fire in `fires`, up to `upto`. A `takeover` plans only the jobs
    /// whose fires the leadership store records.
    fn plan_backfills(
        &mut self,
        fires: &HashMap<String, DateTime<Utc>>,
        upto: DateTime<Utc>,
        takeover: bool,
    ) {
        let now = self.clock.now();
        let jobs: Vec<Arc<JobConfig>> = self
            .jobs
            .iter()
            .filter(|j| {
                j.enabled
                    && if takeover {
                        wants_fire_record(j)
                    } else {
                        wants_catch_up(j)
                    }
            })
            .cloned()
            .collect();
        for job in jobs {
            let Schedule::Cron(expr) = &job.schedule.parsed else {
                continue;
            };
            let Some(&recorded) = fires.get(&job.name) else {
                // Never recorded: a first run is never "missed".
                continue;
            };
            let after = self
                .last_scheduled
                .get(&job.name)
                .map_or(recorded, |&local| local.max(recorded));
            let cutoff = job
                .starting_deadline_seconds
                .map(|secs| now - ChronoDuration::seconds(secs));
            // Slots inside a pause window (lapsed ones too, those the
            // daemon slept through included) are owed nothing.
            let excused = self.failover.pause_log.windows(&job.name);
            let owed = owed_fires(
                expr,
                &job.schedule.time_base,
                after,
                upto,
                cutoff,
                job.on_missed,
                &excused,
            );
            let Some(newest) = owed.newest else { continue };
            if self.suspended.contains(&job.name) || self.is_paused(&job.name, now) {
                continue;
            }
            if self.gate.admit(&job, Trigger::Schedule) != Admission::Launch {
                tracing::info!(
                    target: "cronstable::scheduler",
                    "catch-up: {} is owned by another node; leaving any backfill to its owner",
                    job.name
                );
                continue;
            }
            if owed.capped {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "catch-up: {} missed at least {MAX_CATCHUP} runs; replaying {MAX_CATCHUP} and \
                     dropping the rest (set startingDeadlineSeconds to bound the window, or use \
                     onMissed: run-once)",
                    job.name
                );
            }
            tracing::info!(
                target: "cronstable::scheduler",
                "catch-up: replaying {} missed run(s) for {}",
                owed.count,
                job.name
            );
            if self.durable_enabled() {
                // An open checkpoint: a restart mid-backfill resumes from
                // this watermark (at-least-once).
                self.durable.write(super::durable::DurableWrite::Catchup {
                    job: job.name.clone(),
                    open: true,
                    watermark: recorded,
                });
            }
            let jitter = jitter_offset(&job.name, job.catchup_jitter_seconds);
            self.failover.backfills.insert(
                job.name.clone(),
                Backfill {
                    remaining: owed.count,
                    at: newest,
                    watermark: recorded,
                    launching: false,
                    jittering: !jitter.is_zero(),
                },
            );
            if jitter.is_zero() {
                self.pump_backfill(&job.name);
            } else {
                let events = self.events_tx.clone();
                let name = job.name.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(jitter).await;
                    let _ = events.send(Event::Failover(Answer::JitterDone { job: name }));
                });
            }
        }
    }

    /// Launches the next owed run of `name`'s catch-up once the job is
    /// idle (backfills run one after the other); called when the catch-up
    /// starts and whenever a run of the job ends.
    pub(super) fn pump_backfill(&mut self, name: &str) {
        let Some(fill) = self.failover.backfills.get(name) else {
            return;
        };
        if fill.launching || fill.jittering || self.is_running(name) || self.stopping {
            return;
        }
        let live = self.job(name).filter(|j| j.enabled && wants_catch_up(j));
        let Some(job) = live else {
            tracing::info!(
                target: "cronstable::scheduler",
                "catch-up: {name} was removed or disabled mid-backfill; dropping the remaining runs"
            );
            self.failover.backfills.remove(name);
            return;
        };
        if self.gate.admit(&job, Trigger::Schedule) != Admission::Launch {
            tracing::info!(
                target: "cronstable::scheduler",
                "catch-up: ownership of {name} moved mid-backfill; leaving the remainder to the new owner"
            );
            self.failover.backfills.remove(name);
            return;
        }
        let now = self.clock.now();
        if self.is_paused(name, now) || self.suspended.contains(name) {
            tracing::info!(
                target: "cronstable::scheduler",
                "catch-up: {name} was paused mid-backfill; dropping the remaining runs"
            );
            self.failover.backfills.remove(name);
            return;
        }
        if let Some(fill) = self.failover.backfills.get_mut(name) {
            fill.launching = true;
        }
        if !self.record_fire_first(&job, true) {
            // No store to record in any more: launch directly.
            self.fire_recorded(name, now, true, Ok(()));
        }
    }
}
