//! Restart-durable counters: the per-job counters as a JSON snapshot the
//! scheduler persists to the state store, and the seed that adds a
//! persisted snapshot back into a fresh process's counters.
//!
//! The snapshot has the original's shape, so either daemon can read the
//! other's: `{"buckets": [bound, ...], "jobs": {name: {...}}}`, each job
//! with `runs` (`{outcome: count}`, only outcomes that have a count),
//! `retries`, `permanent_failures`, `start_failures`, `duration_sum`,
//! `duration_count`, `bucket_counts` (cumulative, one per bound, no
//! `+Inf`: that one is `duration_count`), `last_success_time` and
//! `last_failure_time` (a Unix time or `null`), and the resource
//! counters of monitored runs: `cpu_user_sum`, `cpu_system_sum` (CPU
//! seconds), `cpu_count` (monitored runs) and `max_rss_observed` (bytes,
//! a high-water mark: a seed keeps the larger). The SLA breach counts
//! (`sla_breaches`) and the runs a memory cap ended
//! (`memory_limit_exceeded`) have other owners: the snapshot made here
//! carries `sla_breaches` empty, and the scheduler fills both in from
//! their owners and seeds them back (`scheduler::carried`).
//!
//! Unlike the original, a seed never parks a histogram whose bounds differ
//! from the live ones for a later bucket change to adopt: the original
//! seeds before its web app applies the configured `durationBuckets`, so
//! a mismatch there can be an ordering artefact. Ours cannot be, as long
//! as the seed goes through the scheduler's counters accessor, which puts
//! the configured bounds in force before anything reads or writes the
//! counters; a mismatch here means the bounds really changed across the
//! restart, and the histogram restarts from zero as a live change does.

use super::counters::{Counters, JobCounters, OUTCOMES};
use serde_json::{json, Map, Value};

/// The `runs` keys of the snapshot, in the order of a job's run counts.
fn outcome_key(index: usize) -> &'static str {
    OUTCOMES[index].as_str()
}

/// One job's counters in the original's snapshot shape.
fn job_snapshot(counters: &JobCounters) -> Value {
    let runs: Map<String, Value> = counters
        .runs
        .iter()
        .enumerate()
        // The original's `runs` holds only outcomes that happened.
        .filter(|(_, count)| **count > 0)
        .map(|(index, count)| (outcome_key(index).to_owned(), json!(count)))
        .collect();
    json!({
        "runs": runs,
        "retries": counters.retries,
        "permanent_failures": counters.permanent_failures,
        "start_failures": counters.start_failures,
        "duration_sum": counters.duration.sum(),
        "duration_count": counters.duration.count(),
        "bucket_counts": counters.duration.cumulative_counts(),
        "last_success_time": counters.last_success,
        "last_failure_time": counters.last_failure,
        "cpu_user_sum": counters.cpu_user,
        "cpu_system_sum": counters.cpu_system,
        "cpu_count": counters.cpu_count,
        "max_rss_observed": counters.max_rss,
        // Filled in by the scheduler from the SLA monitor's counts.
        "sla_breaches": {},
    })
}

/// A count the snapshot holds at `key`: a non-negative integer (a float,
/// a bool, a string or a negative number is not one).
fn count_at(data: &Map<String, Value>, key: &str) -> Option<u64> {
    data.get(key).and_then(Value::as_u64)
}

/// A Unix time the snapshot holds at `key`: a finite, non-negative number.
fn time_at(data: &Map<String, Value>, key: &str) -> Option<f64> {
    data.get(key)
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite() && *t >= 0.0)
}

/// The later of a live last-event time and a seeded one.
fn later(live: Option<f64>, seeded: Option<f64>) -> Option<f64> {
    match (live, seeded) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The snapshot's bucket bounds, when every one is a number.
fn snapshot_bounds(snapshot: &Value) -> Option<Vec<f64>> {
    snapshot
        .get("buckets")?
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect()
}

/// Adds one job's persisted counters (`data`) into `counters`; the
/// histogram only when `histogram` (the bounds match). Each field is
/// taken or skipped on its own.
fn seed_job(counters: &mut JobCounters, data: &Map<String, Value>, histogram: bool) {
    if let Some(runs) = data.get("runs").and_then(Value::as_object) {
        for (index, slot) in counters.runs.iter_mut().enumerate() {
            // Outcomes we keep no count of (none today) are skipped.
            if let Some(n) = count_at(runs, outcome_key(index)) {
                *slot = slot.saturating_add(n);
            }
        }
    }
    for (key, slot) in [
        ("retries", &mut counters.retries),
        ("permanent_failures", &mut counters.permanent_failures),
        ("start_failures", &mut counters.start_failures),
    ] {
        if let Some(n) = count_at(data, key) {
            *slot = slot.saturating_add(n);
        }
    }
    if histogram {
        seed_histogram(counters, data);
    }
    // CPU sums are unrelated to the duration buckets: seeded whatever the
    // bounds. A sum must be a positive finite number (not a bool).
    for (key, slot) in [
        ("cpu_user_sum", &mut counters.cpu_user),
        ("cpu_system_sum", &mut counters.cpu_system),
    ] {
        if let Some(v) = data
            .get(key)
            .filter(|v| v.is_number())
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite() && *v > 0.0)
        {
            *slot += v;
        }
    }
    if let Some(n) = count_at(data, "cpu_count") {
        counters.cpu_count = counters.cpu_count.saturating_add(n);
    }
    if let Some(peak) = count_at(data, "max_rss_observed") {
        counters.max_rss = counters.max_rss.max(peak);
    }
    counters.last_success = later(counters.last_success, time_at(data, "last_success_time"));
    counters.last_failure = later(counters.last_failure, time_at(data, "last_failure_time"));
}

/// Adds the persisted duration histogram, all or nothing: its sum, count
/// and bucket counts only mean something together.
fn seed_histogram(counters: &mut JobCounters, data: &Map<String, Value>) {
    let sum = data.get("duration_sum").and_then(Value::as_f64);
    let count = count_at(data, "duration_count");
    let cumulative: Option<Vec<u64>> = data
        .get("bucket_counts")
        .and_then(Value::as_array)
        .and_then(|counts| counts.iter().map(Value::as_u64).collect());
    if let (Some(sum), Some(count), Some(cumulative)) = (sum, count, cumulative) {
        // An inconsistent state is refused whole (see `add_state`).
        counters.duration.add_state(&cumulative, sum, count);
    }
}

impl Counters {
    /// The per-job counters as a JSON value in the original's snapshot
    /// shape (see the module documentation): what the scheduler persists
    /// so the counters survive a restart. Jobs without counters yet (no
    /// run, retry or permanent failure so far) are not in it.
    pub fn snapshot(&self) -> Value {
        let jobs: Map<String, Value> = self
            .jobs
            .iter()
            .map(|(name, counters)| (name.clone(), job_snapshot(counters)))
            .collect();
        json!({ "buckets": self.bounds, "jobs": jobs })
    }

    /// ADDS a persisted `snapshot` (ours or the original's) into these
    /// counters, for the jobs `keep` accepts (the jobs of the config in
    /// force), and returns how many jobs it seeded.
    ///
    /// Meant to run once per process, at start: it adds rather than
    /// assigns, so runs recorded before it (a job finishing during boot)
    /// are kept, and running it twice would count the snapshot twice.
    /// Run counts, retries and failures are seeded whatever the bounds;
    /// the duration histogram only when the snapshot's bucket bounds equal
    /// the live ones (past observations cannot be re-binned). The last
    /// success and failure times become the later of the live and the
    /// persisted one. A corrupt or foreign-shaped field is skipped on its
    /// own (a job that is not an object, a count that is not a
    /// non-negative integer, a time that is not a non-negative number, a
    /// histogram whose counts do not fit its bounds or each other), never
    /// an error: the worst a bad snapshot does is seed less.
    pub fn seed(&mut self, snapshot: &Value, keep: impl Fn(&str) -> bool) -> usize {
        let Some(jobs) = snapshot.get("jobs").and_then(Value::as_object) else {
            return 0;
        };
        let histogram = snapshot_bounds(snapshot).is_some_and(|bounds| bounds == self.bounds);
        let mut seeded = 0;
        for (name, data) in jobs {
            let Some(data) = data.as_object() else {
                continue;
            };
            if !keep(name) {
                continue;
            }
            seed_job(self.job(name), data, histogram);
            seeded += 1;
        }
        seeded
    }
}

#[cfg(test)]
mod tests;
