//! Config benchmarks: loading (parse, merge, validate, lint) a generated
//! block-style YAML file of 300 and of 10,000 jobs, and the job-set id of
//! 10,000 loaded jobs.
//!
//! Run with `cargo bench --bench config`. The generated file has the shape
//! `scripts/bench.py` gives the daemon: varied schedules, a few jobs with
//! environment, timeouts, a concurrency policy, a time zone and retries,
//! and no lint findings (every step divides its field).

use cronstable::config::{load_path, JobConfig};
use cronstable::fingerprint::job_set_id;
use divan::{black_box, Bencher};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[cfg_attr(test, allow(dead_code))]
fn main() {
    divan::main();
}

/// A block-style YAML config of `jobs` jobs (the same text for the same
/// count, so runs are comparable).
fn config_text(jobs: usize) -> String {
    let mut out = String::from("defaults:\n  shell: /bin/sh\n  captureStderr: true\njobs:\n");
    for i in 0..jobs {
        let schedule = match i % 5 {
            0 => format!("{} {} * * *", i % 60, i % 24),
            1 => format!("*/{} * * * *", [5, 10, 15, 20, 30][i % 5]),
            2 => format!("{} {} * * mon-fri", i % 60, 8 + i % 10),
            3 => format!("{} {} 1,15 * *", i % 60, i % 24),
            _ => format!("{} */{} * * *", i % 60, [2, 3, 4, 6, 12][i % 5]),
        };
        let _ = write!(
            out,
            "  - name: job-{i:05}\n    command: echo job {i}\n    schedule: \"{schedule}\"\n"
        );
        if i % 10 == 3 {
            let _ = write!(
                out,
                "    environment:\n      - key: JOB_INDEX\n        value: \"{i}\"\n    \
                 executionTimeout: 600\n    concurrencyPolicy: Forbid\n"
            );
        }
        if i % 25 == 7 {
            out.push_str("    timezone: Europe/Berlin\n");
        }
        if i % 50 == 11 {
            out.push_str(
                "    onFailure:\n      retry:\n        maximumRetries: 3\n        \
                 initialDelay: 1\n        maximumDelay: 30\n        backoffMultiplier: 2\n",
            );
        }
    }
    out
}

/// Writes the config once into a temporary directory that lives as long as
/// the returned guard.
fn write_config(jobs: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(format!("jobs-{jobs}.yaml"));
    std::fs::write(&path, config_text(jobs)).expect("write config");
    (dir, path)
}

fn load_jobs(path: &Path) -> Vec<JobConfig> {
    load_path(path).expect("the generated config loads").jobs
}

#[divan::bench(args = [300, 10_000], sample_count = 10, sample_size = 1)]
fn load_yaml(bencher: Bencher, jobs: usize) {
    let (_guard, path) = write_config(jobs);
    // fail loudly (once) rather than benchmark an error path
    assert_eq!(load_jobs(&path).len(), jobs);
    bencher.bench_local(|| load_path(black_box(&path)).map(|c| c.jobs.len()));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn job_set_id_10k(bencher: Bencher) {
    let (_guard, path) = write_config(10_000);
    let jobs = load_jobs(&path);
    bencher.bench_local(|| job_set_id(black_box(&jobs)));
}
