//! The launch side of the scheduler: which jobs are due, and the gates a
//! launch goes through (pause, leader gate, depends-on-past, local
//! concurrency policy, cluster slot) before a run starts.

use super::ports::{needs_slot, Admission, SlotClaim, SlotYield};
use super::{lost_run, Event, RetryState, Scheduler};
use crate::config::model::ConcurrencyPolicy;
use crate::config::JobConfig;
use crate::cronexpr::Schedule;
use crate::job::{self, RunHandle, RunRequest, Trigger};
use chrono::{DateTime, Utc};
use std::sync::Arc;

impl Scheduler {
    pub(super) fn launch_reboot_jobs(&mut self) {
        let due: Vec<Arc<JobConfig>> = self
            .jobs
            .iter()
            .filter(|j| j.enabled && matches!(j.schedule.parsed, Schedule::Reboot))
            .cloned()
            .collect();
        // Under leader election the cluster decides who runs them, once.
        for job in self.defer_reboot_jobs(due) {
            if self.durability.reboot_done.contains(&job.name) {
                // Already run during this OS boot (or still running).
                continue;
            }
            if self.durable_enabled() {
                if self.durable_fails_closed() {
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "Job {} (@reboot) skipped: the state store is unavailable and \
                         onStoreUnavailable is fail-closed",
                        job.name
                    );
                    continue;
                }
                // Record, then run: a crash between the two errs towards
                // not running again this boot.
                let digest = self.durable_digest(&job);
                self.durable
                    .write(super::durable::DurableWrite::RebootMarker {
                        job: job.name.clone(),
                        digest,
                    });
            }
            self.launch_scheduled(job);
        }
    }

    pub(super) fn launch_due(&mut self, at: DateTime<Utc>) {
        let due: Vec<Arc<JobConfig>> = self
            .jobs
            .iter()
            .filter(|j| {
                j.enabled
                    && j.schedule
                        .parsed
                        .cron()
                        .is_some_and(|c| c.matches(at, &j.schedule.time_base))
            })
            .cloned()
            .collect();
        // Status shows the boundary a run was scheduled for, not the
        // moment the pass got to it.
        self.firing_at = Some(at);
        for job in due {
            if self.hold_fire(&job, at) {
                // A new leader applies the recorded pauses first.
                continue;
            }
            if self.is_paused(&job.name, at) {
                self.record_skipped(&job, at);
                continue;
            }
            self.launch_scheduled(job);
        }
        self.firing_at = None;
    }

    pub(super) fn is_paused(&mut self, name: &str, now: DateTime<Utc>) -> bool {
        match self.store.pause(name) {
            Some(window) if window.until > now => true,
            Some(window) => {
                let until = window.until;
                self.store.clear_pause(name);
                tracing::info!(
                    target: "cronstable::scheduler",
                    "Job {name}: pause expired at {}; scheduled runs resume",
                    crate::report::context::python_isoformat(until)
                );
                false
            }
            None => false,
        }
    }

    /// A due slot of a paused job: recorded as skipped, never launched.
    pub(super) fn record_skipped(&mut self, job: &JobConfig, at: DateTime<Utc>) {
        let run_id = self.next_run_id;
        self.next_run_id += 1;
        let mut record = lost_run(job.name.clone(), run_id, at);
        record.retcode = 0;
        record.fail_reason = None;
        record.skip_reason = Some("paused".into());
        if let Some(window) = self.store.pause(&job.name) {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {} skipped: paused until {}{}",
                job.name,
                crate::report::context::python_isoformat(window.until),
                if window.note.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", window.note)
                }
            );
        }
        self.counters().record_run(&record);
        self.persist_run(&record);
        self.store.record_run(record);
    }

    /// A scheduled fire: the leader gate decides whether this node runs
    /// it at all; `onlyIfLastSucceeded` holds it back after a failure (see
    /// `depends`); Forbid leaves the retry sequence alone; otherwise the
    /// job's retries restart from a fresh ladder.
    pub(super) fn launch_scheduled(&mut self, job: Arc<JobConfig>) {
        if self.stopping {
            return;
        }
        if self.suspended.contains(&job.name) {
            tracing::debug!(
                target: "cronstable::scheduler",
                "Job {}: not launched (its CronJobSet is suspended)",
                job.name
            );
            return;
        }
        if self.gate.admit(&job, Trigger::Schedule) != Admission::Launch {
            // Another node runs it (or leadership is unsettled): nothing
            // happens here for this occurrence, retries included.
            tracing::debug!(
                target: "cronstable::scheduler",
                "Job {}: not launched on this node (leader gate)",
                job.name
            );
            return;
        }
        // The slot is owed from here (this node runs it, it is not held):
        // late until a run starts, unless a gate below excuses it.
        let due_at = self.firing_at.unwrap_or_else(|| self.clock.now());
        self.sla_slot_due(&job.name, due_at);
        if !self.depends_on_past_allows(&job) {
            return;
        }
        // A pooled fire queues even while an instance runs: Forbid keeps
        // its entry waiting at the head instead (see `pooling`).
        if job.concurrency_policy == ConcurrencyPolicy::Forbid
            && self.is_running(&job.name)
            && job.pool.is_none()
        {
            // Dropped on purpose; an overrun is maxRuntime's to report.
            self.sla_slot_excused(&job.name);
            self.warn_still_running(&job);
            return;
        }
        if self.record_fire_first(&job, false) {
            // Launched when the leadership store has the fire (see
            // `failover`), so a new leader knows it ran.
            return;
        }
        self.launch_recorded(job);
    }

    /// The rest of a scheduled launch, once its fire is recorded where
    /// that is needed: a fresh retry ladder, then the concurrency gates.
    pub(super) fn launch_recorded(&mut self, job: Arc<JobConfig>) {
        self.cancel_retries(&job.name);
        if let Some(ladder) = super::RetryLadder::arm(&job.retry) {
            let generation = self.bump_generation();
            self.retries.insert(
                job.name.clone(),
                RetryState {
                    ladder,
                    generation,
                    timer: None,
                    armed_at: self.clock.now(),
                },
            );
        }
        self.maybe_launch(job, Trigger::Schedule, 0);
    }

    pub(super) fn bump_generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }

    pub(super) fn is_running(&self, name: &str) -> bool {
        self.running
            .get(name)
            .is_some_and(|runs| runs.iter().any(|r| !r.has_ended()))
    }

    fn warn_still_running(&self, job: &JobConfig) {
        // An overlap the default Allow permits is routine: INFO; one that
        // skips or cancels a run is worth a WARNING.
        if job.concurrency_policy == ConcurrencyPolicy::Allow {
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {}: still running and concurrencyPolicy is {:?}",
                job.name,
                job.concurrency_policy
            );
        } else {
            tracing::warn!(
                target: "cronstable::scheduler",
                "Job {}: still running and concurrencyPolicy is {:?}",
                job.name,
                job.concurrency_policy
            );
        }
    }

    /// The launch gates, in one place: Allow runs alongside, Forbid skips,
    /// Replace cancels every running instance and launches once they end.
    /// The local check runs first; a launch that clears it then claims the
    /// job's cluster slot (`concurrencyScope: cluster` only), which
    /// answers later through [`Event::SlotAnswer`].
    pub(super) fn maybe_launch(&mut self, job: Arc<JobConfig>, trigger: Trigger, attempt: u32) {
        if self.pool_intercepts(&job, trigger, attempt) {
            return;
        }
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
        if !self.claim_slot(&job, trigger, attempt) {
            return;
        }
        self.spawn_run(job, trigger, attempt);
    }

    /// The cluster gate behind the local check: true when the launch may
    /// go ahead now (no slot needed, or this node holds it already).
    /// Otherwise the claim is sent to the store and the launch continues,
    /// or not, when its answer arrives ([`Scheduler::slot_answer`]).
    pub(super) fn claim_slot(&mut self, job: &JobConfig, trigger: Trigger, attempt: u32) -> bool {
        if !needs_slot(job) || self.held_slots.contains(&job.name) {
            return true;
        }
        if !self.claiming.insert(job.name.clone()) {
            // A claim for this job is already out: this launch is the
            // same contest (Forbid would skip it, Replace is already
            // pursuing the slot), so it is not asked twice.
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {}: a claim of its cluster concurrency slot is still in progress; not \
                 launching again",
                job.name
            );
            return false;
        }
        let claim = self.slots.claim(job);
        let events = self.events_tx.clone();
        let name = job.name.clone();
        tokio::spawn(async move {
            let claim = claim.await;
            let _ = events.send(Event::SlotAnswer {
                job: name,
                trigger,
                attempt,
                claim,
            });
        });
        false
    }

    /// A claim answered: launch (re-running the local check, since the
    /// table or the running set may have moved meanwhile), or log why not
    /// in the original's words.
    pub(super) fn slot_answer(
        &mut self,
        name: &str,
        trigger: Trigger,
        attempt: u32,
        claim: SlotClaim,
    ) {
        self.claiming.remove(name);
        let job = self.job(name).filter(|j| needs_slot(j));
        let won = matches!(claim, SlotClaim::Claimed | SlotClaim::ClaimedAfterYield);
        let Some(job) = job.filter(|_| !self.stopping) else {
            if won {
                // Nothing to run any more (stopping, or the job left the
                // config or the cluster scope): give the slot straight back.
                self.slots.release(name);
            }
            return;
        };
        match claim {
            SlotClaim::Claimed | SlotClaim::ClaimedAfterYield => {
                self.held_slots.insert(job.name.clone());
                if self.durable_enabled() {
                    // Before this launch's own in-flight record: the
                    // newest one is the previous holder's.
                    self.durable
                        .write(super::durable::DurableWrite::SlotTakeover {
                            job: job.name.clone(),
                            on_missed_skip: job.on_missed == crate::config::model::OnMissed::Skip,
                        });
                }
                let yielded = claim == SlotClaim::ClaimedAfterYield;
                let before = self.next_run_id;
                self.maybe_launch(Arc::clone(&job), trigger, attempt);
                if yielded && self.next_run_id != before {
                    tracing::info!(
                        target: "cronstable::scheduler",
                        "Job {}: launched after the previous cluster slot holder yielded \
                         (concurrencyPolicy: Replace)",
                        job.name
                    );
                }
                if !self.running.contains_key(&job.name) && self.held_slots.remove(&job.name) {
                    // The local check turned the launch down and nothing
                    // runs here: the slot is not ours to keep.
                    self.slots.release(&job.name);
                }
            }
            SlotClaim::HeldBy(node) => {
                // A live holder elsewhere runs it: not this node's slot.
                self.sla_slot_excused(&job.name);
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {} skipped: its cluster concurrency slot is held by {node} \
                     (concurrencyPolicy: Forbid, concurrencyScope: cluster)",
                    job.name
                );
            }
            SlotClaim::NotYielded {
                holder,
                waited_secs,
            } => {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {}: the foreign holder ({holder}) did not yield its cluster concurrency \
                     slot within {waited_secs:.0}s; skipping this launch (no-run over double-run)",
                    job.name
                );
            }
            SlotClaim::Unavailable {
                reason,
                fail_closed: true,
            } => {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {} skipped: cannot claim its cluster concurrency slot ({reason}) and \
                     onStoreUnavailable is fail-closed",
                    job.name
                );
            }
            SlotClaim::Unavailable {
                reason,
                fail_closed: false,
            } => {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {}: cannot claim its cluster concurrency slot ({reason}); enforcing \
                     concurrencyPolicy on this node only for this run (onStoreUnavailable: degrade)",
                    job.name
                );
                self.launch_unslotted(job, trigger, attempt);
            }
        }
    }

    /// A degraded launch: the local check alone decides (Replace cancels
    /// local instances and then asks for the slot again).
    fn launch_unslotted(&mut self, job: Arc<JobConfig>, trigger: Trigger, attempt: u32) {
        if self.is_running(&job.name) {
            match job.concurrency_policy {
                ConcurrencyPolicy::Forbid => {
                    self.warn_still_running(&job);
                    return;
                }
                _ => return self.maybe_launch(job, trigger, attempt),
            }
        }
        self.spawn_run(job, trigger, attempt);
    }

    /// Another node asked this one to yield `job`'s slot (a cluster
    /// Replace there): its instances here are cancelled the way a local
    /// Replace cancels them (no report, no retry); the finish path gives
    /// the slot back when the last one ends.
    pub(super) fn slot_yield(&mut self, request: SlotYield) {
        self.api.changed();
        let live: Vec<RunHandle> = self
            .running
            .get(&request.job)
            .map(|runs| runs.iter().filter(|r| !r.has_ended()).cloned().collect())
            .unwrap_or_default();
        if live.is_empty() {
            return;
        }
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {}: node {} requested this instance be replaced (concurrencyPolicy: Replace, \
             concurrencyScope: cluster); cancelling",
            request.job,
            request.by
        );
        for handle in &live {
            handle.replace();
        }
    }

    pub(super) fn spawn_run(&mut self, job: Arc<JobConfig>, trigger: Trigger, attempt: u32) {
        let run_id = self.next_run_id;
        self.next_run_id += 1;
        tracing::info!(target: "cronstable::scheduler", "Starting job {}", job.name);
        self.api.progressed();
        self.sla_started(&job.name);
        if trigger == Trigger::Schedule {
            let at = self.firing_at.unwrap_or_else(|| self.clock.now());
            self.last_scheduled.insert(job.name.clone(), at);
        }
        // The fire this run belongs to: the boundary for a scheduled one,
        // else the job's last scheduled boundary (as the original tells
        // a retry or a manual start).
        let scheduled_at = self.last_scheduled.get(&job.name).copied();
        let grant = self.grants.grant(&job, attempt, scheduled_at);
        let (handle, task) = job::start(RunRequest {
            job: Arc::clone(&job),
            trigger,
            attempt,
            run_id,
            observer: Some(Arc::new(crate::metrics::statsd::StatsdEvents)),
            extra_env: grant.env,
            masks: grant.masks,
        });
        if !self.running.contains_key(&job.name) {
            self.persist_inflight_open(&job, handle.pid(), handle.started_at);
        }
        self.running
            .entry(job.name.clone())
            .or_default()
            .push(handle);
        let events = self.events_tx.clone();
        let name = job.name.clone();
        let clock = Arc::clone(&self.clock);
        let grants = Arc::clone(&self.grants);
        let token = grant.token;
        tokio::spawn(async move {
            let finished = task.await;
            // Before the scheduler hears of the end: a token outliving its
            // run could still reach the run's secrets and locks.
            if let Some(token) = &token {
                grants.release(token);
            }
            match finished {
                Ok(record) => {
                    let _ = events.send(Event::Finished(Box::new(record)));
                }
                Err(err) => {
                    tracing::error!(
                        target: "cronstable::scheduler",
                        "Job {name}: its run task failed ({err}); please report this as a bug"
                    );
                    // Unblock the concurrency gates for this run anyway.
                    let lost = lost_run(name, run_id, clock.now());
                    let _ = events.send(Event::Finished(Box::new(lost)));
                }
            }
        });
    }
}
