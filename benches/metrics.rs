//! Metrics benchmark: rendering `GET /metrics` for 1,000 and 10,000 jobs,
//! each with some history (successes, failures, a skipped run, retries,
//! observed durations spread over the default buckets), in both the text
//! format 0.0.4 and the OpenMetrics variant.
//!
//! `text` and `openmetrics` write every line (the first scrape);
//! `after_one_run` is a scrape after one job ran since the previous one,
//! which the API's encoder answers by copying the other jobs' lines from
//! its previous body (the snapshot the scheduler takes is included).
//!
//! Run with `cargo bench --bench metrics`. The number is the daemon's own
//! cost of one scrape body (the HTTP layer is not included).

use chrono::{Duration, TimeZone, Utc};
use cronstable::job::{RunRecord, Trigger};
use cronstable::metrics::prometheus::{
    render, Counters, DaemonGauges, Encoder, Format, JobGauges, Snapshot,
};
use divan::counter::BytesCount;
use divan::{black_box, Bencher};

#[cfg_attr(test, allow(dead_code))]
fn main() {
    divan::main();
}

/// A finished run of `job` that lasted `seconds` and exited with `retcode`.
fn run(job: &str, run_id: u64, seconds: i64, retcode: i32, skipped: bool) -> RunRecord {
    let started_at = Utc
        .timestamp_opt(1_764_000_000 + run_id as i64 * 60, 0)
        .single()
        .unwrap_or_else(Utc::now);
    RunRecord {
        finished_at: started_at + Duration::milliseconds(seconds * 1000 + 250),
        pid: Some(1000),
        retcode,
        skip_reason: skipped.then(|| "concurrencyPolicy Forbid".to_owned()),
        ..RunRecord::begun(run_id, job.to_owned(), Trigger::Schedule, 0, started_at)
    }
}

/// The daemon's state after `jobs` jobs each ran a handful of times.
struct Fixture {
    names: Vec<String>,
    schedules: Vec<String>,
    last: Vec<RunRecord>,
    counters: Counters,
}

fn fixture(jobs: usize) -> Fixture {
    let names: Vec<String> = (0..jobs).map(|i| format!("job-{i:05}")).collect();
    let schedules = (0..jobs).map(|i| format!("{} * * * *", i % 60)).collect();
    let mut counters = Counters::new(1_764_000_000.5, None);
    counters.retain_jobs(names.iter().map(String::as_str));
    let mut last = Vec::with_capacity(jobs);
    for (i, name) in names.iter().enumerate() {
        let mut id = 0;
        for (seconds, retcode) in [(0, 0), (3, 0), (20, 1), (400, 0), (2, 2)] {
            id += 1;
            counters.record_run(&run(name, id, seconds + i as i64 % 7, retcode, false));
        }
        counters.record_run(&run(name, id + 1, 0, 0, true));
        counters.record_retry(name);
        if i % 3 == 0 {
            counters.record_permanent_failure(name);
        }
        last.push(run(name, id, 2, i as i32 % 2, false));
    }
    Fixture {
        names,
        schedules,
        last,
        counters,
    }
}

fn gauges(f: &Fixture) -> DaemonGauges<'_> {
    DaemonGauges {
        version: "0.1.0",
        job_set_id: "v1:0123456789abcdef",
        jobs: f
            .names
            .iter()
            .zip(&f.schedules)
            .zip(&f.last)
            .enumerate()
            .map(|(i, ((name, schedule), last))| JobGauges {
                name,
                schedule,
                cluster_policy: "Leader",
                enabled: i % 10 != 0,
                running: i % 5,
                next_run: Some(1_764_100_000.0 + i as f64),
                last_run: Some(last),
                paused: i % 50 == 0,
            })
            .collect(),
    }
}

fn scrape(bencher: Bencher, jobs: usize, format: Format) {
    let f = fixture(jobs);
    let size = render(&f.counters, &gauges(&f), format).len();
    bencher
        .counter(BytesCount::new(size))
        .bench_local(|| render(black_box(&f.counters), &gauges(&f), format));
}

/// One `GET /metrics` body, text format 0.0.4 (what Prometheus asks for
/// by default).
#[divan::bench(args = [1_000, 10_000], sample_count = 20)]
fn text(bencher: Bencher, jobs: usize) {
    scrape(bencher, jobs, Format::Text);
}

/// One `GET /metrics` body with `Accept: application/openmetrics-text`.
#[divan::bench(args = [1_000, 10_000], sample_count = 20)]
fn openmetrics(bencher: Bencher, jobs: usize) {
    scrape(bencher, jobs, Format::OpenMetrics);
}

/// A scrape after one job (a different one each time) ran: text format.
#[divan::bench(args = [1_000, 10_000], sample_count = 20)]
fn after_one_run(bencher: Bencher, jobs: usize) {
    let mut f = fixture(jobs);
    let mut encoder = Encoder::new(Format::Text);
    let size = encoder
        .encode(&Snapshot::take(&f.counters, &gauges(&f)))
        .as_str()
        .len();
    let mut id = 100;
    bencher.counter(BytesCount::new(size)).bench_local(|| {
        id += 1;
        let name = f.names[id as usize % jobs].clone();
        f.counters.record_run(&run(&name, id, 1, 0, false));
        let snapshot = Snapshot::take(black_box(&f.counters), &gauges(&f));
        encoder.encode(&snapshot)
    });
}
