//! The in-memory run history the HTTP API serves: the newest runs of each
//! job, bounded per job, and each job's newest real outcome.

use crate::job::outcome::Outcome;
use crate::job::RunRecord;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, VecDeque};

/// Runs kept per job.
pub const RUN_HISTORY_LIMIT: usize = 50;

/// A job's newest real outcome (a success or a failure), the verdict the
/// `onlyIfLastSucceeded` gate judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealOutcome {
    /// When that run finished.
    pub finished_at: DateTime<Utc>,
    /// Whether it succeeded.
    pub succeeded: bool,
}

/// Finished runs by job name, oldest first, at most [`RUN_HISTORY_LIMIT`]
/// per job.
#[derive(Debug, Default)]
pub struct RunHistory {
    runs: HashMap<String, VecDeque<RunRecord>>,
    /// Kept beside the ring rather than read from it: a long pause fills
    /// the ring with skipped rows and would push the last failure out,
    /// silently reopening a gate only a success may reopen.
    last_real: HashMap<String, RealOutcome>,
}

impl RunHistory {
    /// Records a finished run.
    pub fn record(&mut self, record: RunRecord) {
        let succeeded = match record.outcome() {
            Outcome::Success => Some(true),
            Outcome::Failure => Some(false),
            Outcome::Cancelled | Outcome::Skipped | Outcome::Unknown => None,
        };
        if let Some(succeeded) = succeeded {
            // Newest by finish time, not by arrival: a killed run is
            // recorded after its output drains, possibly after a newer
            // run was.
            let newer = self
                .last_real
                .get(&record.job)
                .is_none_or(|prev| record.finished_at >= prev.finished_at);
            if newer {
                self.last_real.insert(
                    record.job.clone(),
                    RealOutcome {
                        finished_at: record.finished_at,
                        succeeded,
                    },
                );
            }
        }
        let runs = self.runs.entry(record.job.clone()).or_default();
        if runs.len() == RUN_HISTORY_LIMIT {
            runs.pop_front();
        }
        runs.push_back(record);
    }

    /// The job's runs, newest first.
    pub fn newest_first(&self, job: &str) -> Vec<&RunRecord> {
        self.runs
            .get(job)
            .map(|r| r.iter().rev().collect())
            .unwrap_or_default()
    }

    /// The job's newest success or failure; cancelled and skipped runs
    /// never count, however many came after it.
    pub fn last_real_outcome(&self, job: &str) -> Option<RealOutcome> {
        self.last_real.get(job).copied()
    }

    /// Takes in a real outcome known from elsewhere (the durable ledger),
    /// kept only when newer than the one held.
    pub fn note_real_outcome(&mut self, job: &str, outcome: RealOutcome) {
        let newer = self
            .last_real
            .get(job)
            .is_none_or(|prev| outcome.finished_at > prev.finished_at);
        if newer {
            self.last_real.insert(job.to_owned(), outcome);
        }
    }

    /// Forgets jobs that are no longer configured.
    pub fn retain_jobs(&mut self, keep: impl Fn(&str) -> bool) {
        self.runs.retain(|name, _| keep(name));
        self.last_real.retain(|name, _| keep(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Trigger;
    use chrono::TimeZone;

    fn run(id: u64, minute: u32, fail: bool, skip: bool, cancelled: bool) -> RunRecord {
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 12, minute, 0).unwrap();
        RunRecord {
            fail_reason: fail.then(|| "nonzeroReturn".to_owned()),
            skip_reason: skip.then(|| "paused".to_owned()),
            cancelled,
            ..RunRecord::begun(id, "j".into(), Trigger::Schedule, 0, at)
        }
    }

    #[test]
    fn the_last_real_outcome_outlives_the_ring_and_ignores_non_runs() {
        let mut history = RunHistory::default();
        assert_eq!(history.last_real_outcome("j"), None);
        history.record(run(1, 0, true, false, false));
        // More skipped rows than the ring holds, then a cancelled run.
        for i in 0..RUN_HISTORY_LIMIT as u64 + 5 {
            history.record(run(2 + i, 1, false, true, false));
        }
        history.record(run(100, 2, false, false, true));
        assert!(history.newest_first("j").iter().all(|r| r.run_id != 1));
        let last = history
            .last_real_outcome("j")
            .expect("kept beside the ring");
        assert!(!last.succeeded, "only a success reopens the gate");
    }

    #[test]
    fn an_older_success_recorded_late_does_not_hide_a_newer_failure() {
        let mut history = RunHistory::default();
        history.record(run(2, 5, true, false, false));
        history.record(run(1, 3, false, false, false));
        assert!(!history.last_real_outcome("j").unwrap().succeeded);
        history.record(run(3, 6, false, false, false));
        assert!(history.last_real_outcome("j").unwrap().succeeded);
        history.retain_jobs(|_| false);
        assert_eq!(history.last_real_outcome("j"), None);
    }
}
