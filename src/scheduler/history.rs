//! The in-memory run history the HTTP API serves: the newest runs of each
//! job, bounded per job.

use crate::job::RunRecord;
use std::collections::{HashMap, VecDeque};

/// Runs kept per job.
pub const RUN_HISTORY_LIMIT: usize = 50;

/// Finished runs by job name, oldest first, at most [`RUN_HISTORY_LIMIT`]
/// per job.
#[derive(Debug, Default)]
pub struct RunHistory {
    runs: HashMap<String, VecDeque<RunRecord>>,
}

impl RunHistory {
    /// Records a finished run.
    pub fn record(&mut self, record: RunRecord) {
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

    /// Forgets jobs that are no longer configured.
    pub fn retain_jobs(&mut self, keep: impl Fn(&str) -> bool) {
        self.runs.retain(|name, _| keep(name));
    }
}
