//! A due retry's last step before it launches, with a store: its
//! `launched` settle lands first (record-before-run), and on a shared
//! store under leader election its ladder is one the cluster can move
//! (cross-node retry resume): handed off when ownership moves, claimed
//! by the new owner's scan, and launched only while still this node's.

use super::durable::{DurableError, DurableWrite, RetryClaimJob, RetryConsume};
use super::ports::{Admission, PendingRetry};
use super::{Event, Scheduler};
use crate::config::model::sections::OnStoreUnavailable;
use crate::config::model::ClusterPolicy;
use crate::config::JobConfig;
use crate::cronexpr::Schedule;
use crate::job::Trigger;
use std::time::Duration;

/// How often this node looks for ladders other nodes left behind (the
/// original's housekeeping pass looks about once a minute; a scan is one
/// listing of `retries/` while no ladder is stranded).
pub(super) const CLAIM_SCAN_EVERY: Duration = Duration::from_secs(15);

/// Whether `job`'s ladder may move between nodes: `EveryNode` ladders are
/// each node's own, and `@reboot` ones belong to one host's boot.
pub(super) fn moves_between_nodes(job: &JobConfig) -> bool {
    job.cluster_policy != ClusterPolicy::EveryNode
        && !matches!(job.schedule.parsed, Schedule::Reboot)
}

impl Scheduler {
    /// Whether `job`'s ladder is under cross-node retry resume now.
    pub(super) fn resumes_across_nodes(&self, job: &JobConfig) -> bool {
        self.durable.retry_resume() && moves_between_nodes(job)
    }

    /// The gate admitted a due retry: with a store, its settle lands
    /// before it launches (the verdict comes back as
    /// [`Event::RetryConsumed`]); without one it launches now.
    pub(super) fn consume_retry(&mut self, job: std::sync::Arc<JobConfig>, generation: u64) {
        let Some(state) = self.retries.get_mut(&job.name) else {
            return;
        };
        let attempt = state.ladder.count();
        if !self.durable.enabled() {
            return self.launch_retry(job, attempt);
        }
        // The ladder waits on the store's answer with no timer armed.
        state.timer = None;
        let serialize = self.resumes_across_nodes(&job);
        let verdict = self.durable.consume_retry(&job.name, attempt, serialize);
        let events = self.events_tx.clone();
        let name = job.name.clone();
        tokio::spawn(async move {
            let verdict = verdict.await;
            let _ = events.send(Event::RetryConsumed {
                job: name,
                generation,
                verdict,
            });
        });
    }

    /// The store's verdict on a due retry.
    pub(super) fn retry_consumed(
        &mut self,
        name: &str,
        generation: u64,
        verdict: Result<RetryConsume, DurableError>,
    ) {
        let Some(state) = self.retries.get(name) else {
            return;
        };
        if state.generation != generation || state.timer.is_some() || self.stopping {
            // A fresh fire or a stop ended this ladder meanwhile.
            return;
        }
        let attempt = state.ladder.count();
        let Some(job) = self.job(name) else {
            return self.end_retries(name, "job-removed");
        };
        let verdict = verdict.unwrap_or_else(|err| {
            if self.durable.policy() == OnStoreUnavailable::FailClosed {
                tracing::warn!(
                    target: "cronstable::scheduler",
                    "Cron job {name} retry (#{attempt}) deferred: cannot settle its durable record \
                     ({err}) and onStoreUnavailable is fail-closed"
                );
                RetryConsume::Defer
            } else {
                tracing::warn!(
                    target: "cronstable::state",
                    "state: cannot settle the durable record for {name} retry (#{attempt}) \
                     ({err}); launching anyway (a crash could replay this attempt after a restart)"
                );
                RetryConsume::Launch
            }
        });
        match verdict {
            RetryConsume::Launch => self.launch_retry(job, attempt),
            RetryConsume::Defer => {
                let wait = super::finish::GATE_RECHECK;
                let due = self.clock.now() + chrono::TimeDelta::from_std(wait).unwrap_or_default();
                self.rearm(name, generation, wait, attempt, due);
            }
            RetryConsume::Abort => {
                // Another node's record is the newest: it owns the ladder.
                // Writing a settle here would bury its claim.
                tracing::info!(
                    target: "cronstable::scheduler",
                    "Job {name}: retry #{attempt} not run here: another node claimed its ladder \
                     (cross-node retry resume)"
                );
                self.retries.remove(name);
                self.store.clear_retry(name);
            }
        }
    }

    /// Launches a due retry whose settle is done (or not needed).
    fn launch_retry(&mut self, job: std::sync::Arc<JobConfig>, attempt: u32) {
        self.store.clear_retry(&job.name);
        self.counters().record_retry(&job.name);
        self.maybe_launch(job, Trigger::Retry, attempt)
    }

    /// The cluster moved `job`'s ownership away while its retry waited:
    /// under cross-node resume the attempt is handed to the new owner,
    /// otherwise the ladder ends here.
    pub(super) fn abandon_retry(&mut self, job: &JobConfig, attempt: u32) {
        let name = &job.name;
        if self.resumes_across_nodes(job) {
            if let Some(state) = self.retries.remove(name) {
                if let Some(timer) = state.timer {
                    timer.abort();
                }
                self.durable.write(DurableWrite::RetryHandoff {
                    job: name.clone(),
                    attempt,
                    armed_at: state.armed_at,
                });
            }
            self.store.clear_retry(name);
            tracing::warn!(
                target: "cronstable::scheduler",
                "Cron job {name} retry (#{attempt}) handed off: the cluster moved ownership of it \
                 to another node; the new owner resumes the ladder from its durable record \
                 (cross-node retry resume)"
            );
            return;
        }
        tracing::warn!(
            target: "cronstable::scheduler",
            "Cron job {name} retry (#{attempt}) abandoned: the cluster moved ownership of it to \
             another node; onPermanentFailure will not fire for this sequence, this attempt is \
             not re-run elsewhere, and any future scheduled firings happen on the new owner (an \
             @reboot one-shot has none)"
        );
        self.end_retries(name, "owner-moved");
    }

    /// Starts the periodic scan for stranded ladders, when resume is on.
    pub(super) fn start_claim_scans(&self) {
        if !self.durable.retry_resume() {
            return;
        }
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(CLAIM_SCAN_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate: a start looks at once.
            loop {
                every.tick().await;
                if events.send(Event::ClaimScan).is_err() {
                    return;
                }
            }
        });
    }

    /// Asks the store to claim the ladders other nodes left for the jobs
    /// this node owns and runs no ladder of.
    pub(super) fn scan_for_claims(&mut self) {
        if self.stopping {
            return;
        }
        let mut candidates = Vec::new();
        for job in self.jobs.iter() {
            if !job.enabled || job.retry.maximum_retries == 0 || !moves_between_nodes(job) {
                continue;
            }
            if self.running.get(&job.name).is_some_and(|r| !r.is_empty()) {
                continue;
            }
            let live = self
                .retries
                .get(&job.name)
                .is_some_and(|s| s.timer.is_some() || s.ladder.count() > 0);
            if live || self.gate.admit(job, Trigger::Retry) != Admission::Launch {
                continue;
            }
            let last_run = self
                .store
                .runs_newest_first(&job.name)
                .into_iter()
                .find(|run| run.skip_reason.is_none())
                .map(|run| run.finished_at);
            candidates.push(RetryClaimJob {
                job: job.name.clone(),
                maximum_retries: job.retry.maximum_retries,
                starting_deadline: job.starting_deadline_seconds,
                last_run,
            });
        }
        self.durable.claim_retries(candidates);
    }

    /// Re-arms a pending retry to come due again after `wait`.
    pub(super) fn rearm(
        &mut self,
        name: &str,
        generation: u64,
        wait: Duration,
        attempt: u32,
        due: chrono::DateTime<chrono::Utc>,
    ) {
        let timer = self.retry_timer(name, generation, wait);
        if let Some(state) = self.retries.get_mut(name) {
            state.timer = Some(timer);
        }
        self.store.set_retry(name, PendingRetry { attempt, due });
    }
}
