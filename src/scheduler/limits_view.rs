//! What the metrics show of `resourceLimits`: each capped job's caps, the
//! runs its memory cap ended (counted here, since the daemon started) and
//! whether its latest capped run had every cap enforced.

use super::Scheduler;
use crate::job::RunRecord;
use crate::metrics::limits::LimitsSeries;

impl Scheduler {
    /// Counts a run the memory cap ended.
    pub(super) fn count_memory_kill(&mut self, record: &RunRecord) {
        if record.limits.as_ref().is_some_and(|l| l.memory_exceeded) {
            *self.memory_kills.entry(record.job.clone()).or_default() += 1;
        }
    }

    /// The series of every capped job, in table order.
    pub(super) fn limits_series(&self) -> Vec<LimitsSeries> {
        self.jobs
            .iter()
            .filter_map(|job| {
                let caps = job.resource_limits.as_ref()?;
                let last = self
                    .store
                    .runs_newest_first(&job.name)
                    .into_iter()
                    .find(|r| r.skip_reason.is_none());
                Some(LimitsSeries {
                    job: job.name.clone(),
                    cpu: caps.cpu,
                    memory: caps.memory,
                    processes: caps.processes,
                    memory_exceeded: self.memory_kills.get(&job.name).copied().unwrap_or(0),
                    last_run_enforced: last.and_then(|r| r.limits.as_ref().map(|l| l.enforced)),
                })
            })
            .collect()
    }
}
