//! The finish side of the scheduler: recording a finished run, reporting
//! it, and driving the retry ladder (whose relaunches pass the leader gate
//! again and wait out pauses).

use super::ports::{Admission, PendingRetry};
use super::{Event, Scheduler};
use crate::config::JobConfig;
use crate::job::{RunRecord, Trigger};
use crate::report::Hook;
use std::sync::Arc;
use std::time::Duration;

/// How long a retry the leader gate deferred waits before asking again.
pub(super) const GATE_RECHECK: Duration = Duration::from_secs(5);

impl Scheduler {
    /// Takes one event from a run or a timer; every event can change what
    /// the API shows, so it moves the change generation.
    pub(super) fn handle_event(&mut self, event: Event) {
        let event = match event {
            // A pool answer moves the generation only when it changes
            // something shown (see `pool_event`): a look at an idle pool
            // every second must not void the API's cached bodies.
            Event::Pool(event) => return self.pool_event(event),
            other => other,
        };
        self.api.changed();
        match event {
            Event::Finished(record) => self.handle_finished(*record),
            Event::RetryDue { job, generation } => self.handle_retry_due(&job, generation),
            Event::RetryConsumed {
                job,
                generation,
                verdict,
            } => self.retry_consumed(&job, generation, verdict),
            Event::ClaimScan => self.scan_for_claims(),
            Event::Replacement {
                job,
                trigger,
                attempt,
            } => {
                if self.stopping {
                    return;
                }
                if let Some(config) = self.job(&job) {
                    // The replaced instances released the slot as they
                    // ended; the new one claims it again.
                    if self.claim_slot(&config, trigger, attempt) {
                        self.spawn_run(config, trigger, attempt);
                    }
                }
            }
            Event::Failover(answer) => self.handle_failover(answer),
            Event::Pauses(read) => self.pauses_read(read),
            Event::SlotAnswer {
                job,
                trigger,
                attempt,
                claim,
            } => self.slot_answer(&job, trigger, attempt, claim),
            Event::Pool(event) => self.pool_event(event),
        }
    }

    fn handle_finished(&mut self, record: RunRecord) {
        self.api.progressed();
        self.pool_run_finished(record.run_id);
        self.keep_last_output(&record.job, record.run_id);
        if let Some(runs) = self.running.get_mut(&record.job) {
            runs.retain(|r| r.run_id != record.run_id);
            if runs.is_empty() {
                self.running.remove(&record.job);
                self.persist_inflight_closed(&record.job);
            }
        }
        if !self.running.contains_key(&record.job) && self.held_slots.remove(&record.job) {
            // Claims are per job, not per run: the last local instance
            // gives the slot back.
            self.slots.release(&record.job);
        }
        if !self.running.contains_key(&record.job) {
            // A catch-up replays its owed runs one after the other.
            self.pump_backfill(&record.job);
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
        self.counters().record_run(&record);
        self.store.record_run(record.clone());
        self.persist_run(&record);
        self.sla_finished(&record);
        self.count_memory_kill(&record);
        if record.cancelled {
            tracing::info!(target: "cronstable::scheduler", "Job {} was cancelled via the web UI", record.job);
            return;
        }
        let Some(job) = job else {
            // The job left the config while it ran: nothing to report to.
            return;
        };
        // One line for every finished run, success or failure, in the
        // original's shape (Python spellings: `true`/`false` lowercased,
        // the reason as a repr or `None`), so log alerts carry over.
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {} exit code {}; has stdout: {}, has stderr: {}; fail_reason: {}",
            job.name,
            record.retcode,
            !record.stdout.text.is_empty(),
            !record.stderr.text.is_empty(),
            match &record.fail_reason {
                Some(reason) => crate::pyfmt::py_repr(&minijinja::Value::from(reason.as_str())),
                None => "None".to_owned(),
            }
        );
        if self.stopping {
            tracing::debug!(
                target: "cronstable::scheduler",
                "Job {}: finished during shutdown; not reported",
                job.name
            );
            return;
        }
        match &record.fail_reason {
            None => {
                self.end_retries(&job.name, "succeeded");
                let delivery = self.reporter.report(Hook::Success, &job, &record);
                self.deliver_completion(&job.name, delivery);
            }
            Some(_) => {
                // The failed run's captured output, one INFO line per
                // stream, trailing whitespace trimmed (the original's form).
                for (title, text) in [
                    ("STDOUT", &record.stdout.text),
                    ("STDERR", &record.stderr.text),
                ] {
                    if !text.is_empty() {
                        tracing::info!(
                            target: "cronstable::scheduler",
                            "Job {} {title}:\n{}",
                            job.name,
                            text.trim_end()
                        );
                    }
                }
                let failure = self.reporter.report(Hook::Failure, &job, &record);
                let permanent = self
                    .schedule_retry_or_give_up(&job)
                    .then(|| self.reporter.report(Hook::PermanentFailure, &job, &record));
                // One delivery for both hooks: every onFailure reporter is
                // done (or timed out) before any onPermanentFailure one
                // starts, so a receiver never sees them out of order.
                self.deliver_completion(
                    &job.name,
                    Box::pin(async move {
                        failure.await;
                        if let Some(permanent) = permanent {
                            permanent.await;
                        }
                    }),
                );
            }
        }
    }

    /// Arms the next retry of a failed run; true when none is left (the
    /// failure is permanent and the caller reports it).
    fn schedule_retry_or_give_up(&mut self, job: &Arc<JobConfig>) -> bool {
        let Some(state) = self.retries.get_mut(&job.name) else {
            self.counters().record_permanent_failure(&job.name);
            return true;
        };
        if state.ladder.exhausted() {
            tracing::debug!(
                target: "cronstable::scheduler",
                "Job {} has been retried {} times",
                job.name,
                state.ladder.count()
            );
            self.end_retries(&job.name, "exhausted");
            self.counters().record_permanent_failure(&job.name);
            return true;
        }
        if let Some(timer) = state.timer.take() {
            timer.abort();
        }
        let delay = state.ladder.next_delay();
        let generation = state.generation;
        let attempt = state.ladder.count();
        state.armed_at = self.clock.now();
        tracing::info!(
            target: "cronstable::scheduler",
            "Cron job {} scheduled to be retried (#{attempt}) in {delay:.1} seconds",
            job.name
        );
        let wait = Duration::from_secs_f64(delay.max(0.0));
        let timer = self.retry_timer(&job.name, generation, wait);
        if let Some(state) = self.retries.get_mut(&job.name) {
            state.timer = Some(timer);
        }
        let due = self.clock.now() + chrono::TimeDelta::from_std(wait).unwrap_or_default();
        self.store
            .set_retry(&job.name, PendingRetry { attempt, due });
        self.persist_retry(job, attempt, due);
        false
    }

    /// A timer that reports the retry of `name` due after `wait`.
    pub(super) fn retry_timer(
        &self,
        name: &str,
        generation: u64,
        wait: Duration,
    ) -> tokio::task::AbortHandle {
        let events = self.events_tx.clone();
        let job = name.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let _ = events.send(Event::RetryDue { job, generation });
        })
        .abort_handle()
    }

    fn handle_retry_due(&mut self, name: &str, generation: u64) {
        let Some(state) = self.retries.get(name) else {
            return;
        };
        if state.generation != generation || self.stopping {
            return;
        }
        let attempt = state.ladder.count();
        let now = self.clock.now();
        let paused_until = self.store.pause(name).map(|w| w.until).filter(|u| *u > now);
        if let Some(until) = paused_until {
            // A pending retry waits out the pause instead of running in it.
            let wait = (until - now).to_std().unwrap_or_default();
            self.rearm(name, generation, wait, attempt, until);
            return;
        }
        let Some(job) = self.job(name) else {
            // The job disappeared in a reload: its retries go with it.
            self.end_retries(name, "job-removed");
            return;
        };
        match self.gate.admit(&job, Trigger::Retry) {
            Admission::Launch => self.consume_retry(job, generation),
            Admission::Defer => {
                // A transient denial: ask again shortly, the ladder stays.
                let due = now + chrono::TimeDelta::from_std(GATE_RECHECK).unwrap_or_default();
                self.rearm(name, generation, GATE_RECHECK, attempt, due);
            }
            // Another node owns the job now: running the retry here could
            // double-run against it.
            Admission::Skip => self.abandon_retry(&job, attempt),
        }
    }

    /// Ends `name`'s retry ladder (a fresh fire, a success, the budget
    /// spent, the job gone); with a store the pending retry is settled,
    /// except while draining: a graceful stop leaves it for the next start
    /// to re-arm.
    pub(super) fn cancel_retries(&mut self, name: &str) {
        self.end_retries(name, "superseded");
    }

    /// [`Scheduler::cancel_retries`] naming why, for the settle record.
    pub(super) fn end_retries(&mut self, name: &str, reason: &'static str) {
        if let Some(state) = self.retries.remove(name) {
            if let Some(timer) = state.timer {
                timer.abort();
            }
            let pending = self.store.pending_retry(name).map(|p| p.attempt);
            if let (Some(attempt), false) = (pending, self.stopping) {
                self.settle_retry(name, attempt, reason);
            }
        }
        self.store.clear_retry(name);
    }
}
