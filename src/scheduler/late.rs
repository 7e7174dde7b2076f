//! The scheduler's side of late-run detection: what it tells the
//! [`sla::Monitor`] (slots due, launches, successes), the pass once a
//! wall-clock minute, and what a transition does (the log lines, the
//! `onLate` report). Only jobs with an `sla` block are tracked, so a
//! table without checks costs nothing here.

use super::ports::Admission;
use super::sla::{self, JobFacts, Running, Transition};
use super::Scheduler;
use crate::job::{RunRecord, Trigger};
use chrono::{DateTime, Utc};
use std::sync::Arc;

impl Scheduler {
    /// A scheduled slot of `name` fell due on this node.
    pub(super) fn sla_slot_due(&mut self, name: &str, at: DateTime<Utc>) {
        if self.has_sla(name) {
            self.sla.slot_due(name, at);
        }
    }

    /// The slot owed by `name` was dropped on purpose (Forbid while an
    /// instance runs): not late.
    pub(super) fn sla_slot_excused(&mut self, name: &str) {
        self.sla.slot_excused(name);
    }

    /// A run of `name` started now.
    pub(super) fn sla_started(&mut self, name: &str) {
        if self.has_sla(name) {
            let now = self.clock.now();
            self.sla.started(name, now);
        }
    }

    /// A run finished: a success moves the staleness reference.
    pub(super) fn sla_finished(&mut self, record: &RunRecord) {
        if record.fail_reason.is_none() && record.skip_reason.is_none() && self.has_sla(&record.job)
        {
            let now = self.clock.now();
            self.sla.succeeded(&record.job, record.finished_at, now);
        }
    }

    fn has_sla(&self, name: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.jobs[i].sla.is_some())
    }

    /// What runs of `name` now, as the checks measure it.
    pub(super) fn sla_running(&self, name: &str) -> Running {
        let mut running = Running::default();
        for handle in self.running.get(name).into_iter().flatten() {
            if handle.has_ended() {
                continue;
            }
            running.any = true;
            if running.oldest_start.is_none_or(|s| handle.started_at < s) {
                running.oldest_start = Some(handle.started_at);
            }
        }
        running
    }

    /// Runs the pass when the wall-clock minute moved since the last one.
    pub(super) fn sla_tick(&mut self) {
        let now = self.clock.now();
        let minute = super::tick::floor(now, super::tick::Cadence::Minute);
        if self.sla_minute == Some(minute) {
            return;
        }
        self.sla_minute = Some(minute);
        self.sla_pass(now);
    }

    /// One evaluation of every job with checks (and of every job the
    /// monitor still holds latches or series for).
    fn sla_pass(&mut self, now: DateTime<Utc>) {
        let jobs = Arc::clone(&self.jobs);
        for job in jobs.iter().filter(|j| j.sla.is_some()) {
            if !self.sla.knows(&job.name) {
                // First sight: the ledger's newest success (a durable
                // store restores it at boot) is the staleness reference.
                let last = self
                    .store
                    .runs_newest_first(&job.name)
                    .into_iter()
                    .find(|r| r.fail_reason.is_none() && r.skip_reason.is_none())
                    .map(|r| r.finished_at);
                if let Some(at) = last {
                    self.sla.succeeded(&job.name, at, now);
                }
            }
        }
        let facts: Vec<JobFacts<'_>> = jobs
            .iter()
            .filter(|j| j.sla.is_some() || self.sla.knows(&j.name))
            .map(|job| JobFacts {
                name: &job.name,
                sla: job.sla.as_ref(),
                enabled: job.enabled && !self.suspended.contains(&job.name),
                paused: self
                    .store
                    .pause(&job.name)
                    .filter(|w| w.until > now)
                    .map(|w| (w.since, w.until)),
                owned: self.gate.admit(job, Trigger::Schedule) == Admission::Launch,
                running: self.sla_running(&job.name),
            })
            .collect();
        if facts.is_empty() {
            return;
        }
        let transitions = self.sla.evaluate(facts, now);
        if !transitions.is_empty() {
            self.api.changed();
        }
        for transition in transitions {
            self.sla_transition(transition);
        }
    }

    fn sla_transition(&mut self, transition: Transition) {
        match transition {
            Transition::Breached {
                job,
                observation,
                last_success,
            } => {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Job {job}: SLA check {} breached: observed {:.0}s exceeds the threshold of {}s",
                    observation.check.name(),
                    observation.observed,
                    observation.threshold
                );
                let Some(config) = self.job(&job) else {
                    return;
                };
                let delivery = self.reporter.report_late(
                    &config,
                    crate::report::SlaBreach {
                        check: observation.check.name(),
                        threshold_seconds: observation.threshold,
                        observed_seconds: observation.observed,
                        last_success_at: last_success,
                    },
                );
                self.deliver_late(&job, delivery);
            }
            Transition::Recovered { job, observation } => {
                tracing::info!(
                    target: "cronstable::scheduler",
                    "Job {job}: SLA check {} recovered (observed {:.0}s is back within the \
                     threshold of {}s)",
                    observation.check.name(),
                    observation.observed,
                    observation.threshold
                );
            }
        }
    }

    /// The `sla` object of `GET /jobs` for one job with checks.
    pub(super) fn sla_view(&self, job: &crate::config::JobConfig) -> Option<sla::SlaView> {
        let thresholds = job.sla.as_ref()?;
        Some(self.sla.view(
            &job.name,
            thresholds,
            self.sla_running(&job.name),
            self.clock.now(),
        ))
    }

    /// The late-run series for a scrape.
    pub(super) fn sla_series(&self) -> Vec<crate::metrics::sla::SlaSeries> {
        self.sla
            .series()
            .into_iter()
            .map(|s| crate::metrics::sla::SlaSeries {
                job: s.job,
                check: s.check.name(),
                late: s.late,
                breaches: s.breaches,
            })
            .collect()
    }
}
