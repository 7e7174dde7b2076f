//! The cumulative counters: per job (runs by outcome, the duration
//! histogram, retries, permanent and start failures, the last success and
//! failure, the CPU time and peak memory of resource-monitored runs), kept across reloads and pruned for removed jobs, and the
//! daemon's reload gauges. The scheduler and the sources record into
//! them; a scrape shares each job's counters by pointer.

use super::DEFAULT_BUCKETS;
use crate::job::outcome::{Outcome, RunRecord};
use crate::status::Histogram;
use std::collections::HashMap;
use std::sync::Arc;

/// One job's cumulative counters.
#[derive(Debug, Clone, PartialEq)]
pub struct JobCounters {
    pub(super) runs: [u64; 4],
    pub(super) duration: Histogram,
    pub(super) retries: u64,
    pub(super) permanent_failures: u64,
    pub(super) start_failures: u64,
    pub(super) last_success: Option<f64>,
    pub(super) last_failure: Option<f64>,
    /// User and system CPU seconds summed over the monitored runs.
    pub(super) cpu_user: f64,
    pub(super) cpu_system: f64,
    /// Monitored runs counted (the CPU series appear from the first).
    pub(super) cpu_count: u64,
    /// Highest peak RSS of any monitored run (0: none yet).
    pub(super) max_rss: u64,
}

impl JobCounters {
    pub(super) fn new(bounds: &[f64]) -> Self {
        JobCounters {
            runs: [0; 4],
            duration: Histogram::new(bounds),
            retries: 0,
            permanent_failures: 0,
            start_failures: 0,
            last_success: None,
            last_failure: None,
            cpu_user: 0.0,
            cpu_system: 0.0,
            cpu_count: 0,
            max_rss: 0,
        }
    }
}

/// The slot of `outcome` in a job's run counts (of [`OUTCOMES`]); an
/// `unknown` row is no run this process saw, so it has none.
pub(super) fn outcome_index(outcome: Outcome) -> usize {
    match outcome {
        Outcome::Success => 0,
        Outcome::Failure => 1,
        Outcome::Cancelled => 2,
        Outcome::Skipped | Outcome::Unknown => 3,
    }
}

pub(super) const OUTCOMES: [Outcome; 4] = [
    Outcome::Success,
    Outcome::Failure,
    Outcome::Cancelled,
    Outcome::Skipped,
];

/// Counters of the whole daemon.
#[derive(Debug, Clone)]
pub struct Counters {
    pub(super) bounds: Vec<f64>,
    /// Per-job counters behind an `Arc`: a scrape shares them with the
    /// collectors (which must own what they encode) without copying, and a
    /// later update copies one job's counters only while a scrape holds it.
    pub(super) jobs: HashMap<String, Arc<JobCounters>>,
    /// What a job without an entry in `jobs` shows: all zeros, one set
    /// shared by every such job (and by successive scrapes, so their rows
    /// compare equal by identity).
    pub(super) zero: Arc<JobCounters>,
    /// Unix time the daemon started.
    pub start_time: f64,
    /// Outcome of the latest config parse; `None` only before the first
    /// parse (the families are absent until then, as in the original).
    pub last_reload_ok: Option<bool>,
    /// Unix time of the latest successful parse.
    pub last_reload_success: Option<f64>,
    /// Moves whenever any job's counters change (a run, a retry, a
    /// permanent failure, new bucket bounds, a job added or dropped), so
    /// a scrape can tell cheaply that the per-job part did not.
    pub(super) epoch: u64,
}

impl Counters {
    /// Fresh counters of a daemon whose first configuration parse has just
    /// succeeded at `start_time` (a Unix time): the scheduler is only ever
    /// built from a parsed configuration, so the reload gauges are present
    /// from the first scrape, as the original's are after its first parse.
    pub fn new(start_time: f64, bounds: Option<&[f64]>) -> Self {
        let bounds = bounds.unwrap_or(&DEFAULT_BUCKETS).to_vec();
        Counters {
            zero: Arc::new(JobCounters::new(&bounds)),
            bounds,
            jobs: HashMap::new(),
            start_time,
            last_reload_ok: Some(true),
            last_reload_success: Some(start_time),
            epoch: 0,
        }
    }

    /// The per-job counters' change count (see the field): equal epochs
    /// mean every job's counters are the ones they were.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Changes the histogram bounds; histograms restart from zero when
    /// they change (an ordinary counter reset to Prometheus).
    pub fn set_buckets(&mut self, bounds: Option<&[f64]>) {
        let bounds = bounds.unwrap_or(&DEFAULT_BUCKETS).to_vec();
        if bounds != self.bounds {
            self.epoch += 1;
            for counters in self.jobs.values_mut() {
                Arc::make_mut(counters).duration = Histogram::new(&bounds);
            }
            self.zero = Arc::new(JobCounters::new(&bounds));
            self.bounds = bounds;
        }
    }

    pub(super) fn job(&mut self, name: &str) -> &mut JobCounters {
        // Every per-job change comes through here.
        self.epoch += 1;
        let bounds = &self.bounds;
        let counters = self
            .jobs
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(JobCounters::new(bounds)));
        Arc::make_mut(counters)
    }

    /// Records a finished (or skipped) run. Replaced runs are not runs.
    pub fn record_run(&mut self, record: &RunRecord) {
        // A crash-reconciled row is no run this process saw end.
        if record.replaced || record.interrupted {
            return;
        }
        let outcome = record.outcome();
        let finished = record.finished_at.timestamp_micros() as f64 / 1e6;
        let counters = self.job(&record.job);
        counters.runs[outcome_index(outcome)] += 1;
        if record.start_error.is_some() {
            counters.start_failures += 1;
        }
        if let Some(duration) = record.duration_seconds() {
            counters.duration.observe(duration);
        }
        match outcome {
            Outcome::Success => counters.last_success = Some(finished),
            Outcome::Failure => counters.last_failure = Some(finished),
            _ => {}
        }
        if let Some(usage) = &record.resources {
            counters.cpu_user += usage.cpu_user_seconds;
            counters.cpu_system += usage.cpu_system_seconds;
            counters.cpu_count += 1;
            counters.max_rss = counters.max_rss.max(usage.max_rss_bytes);
        }
    }

    /// Counts a launched retry.
    pub fn record_retry(&mut self, job: &str) {
        self.job(job).retries += 1;
    }

    /// Counts a permanent failure.
    pub fn record_permanent_failure(&mut self, job: &str) {
        self.job(job).permanent_failures += 1;
    }

    /// Drops the counters of jobs no longer configured. A configured job
    /// gets its counters at its first recorded run, retry or permanent
    /// failure; until then a scrape shows it all zeros (the rows read a
    /// missing entry as zero), so a job that never runs costs nothing
    /// here.
    pub fn retain_jobs<'a>(&mut self, names: impl Iterator<Item = &'a str>) {
        let keep: std::collections::HashSet<&str> = names.collect();
        self.epoch += 1;
        self.jobs.retain(|name, _| keep.contains(name.as_str()));
    }
}
