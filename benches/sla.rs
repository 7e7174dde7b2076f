//! The late-run monitor's pass, in-process: 10,000 jobs with all three
//! checks, a third of them running, evaluated the way the scheduler does
//! once a minute, plus building the `sla` view of every job (what a
//! `GET /jobs` of all of them adds) and the metric series (what a scrape
//! adds). Printed, nothing asserted: the median of 21 passes.
//!
//! Run with `cargo bench --bench sla`.

use chrono::{Duration, TimeZone, Utc};
use cronstable::config::SlaThresholds;
use cronstable::scheduler::sla::{JobFacts, Monitor, Running};
use std::time::Instant;

const JOBS: usize = 10_000;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let start = Utc.with_ymd_and_hms(2026, 12, 5, 0, 0, 0).unwrap();
    let sla = SlaThresholds {
        max_time_since_success: Some(3600),
        late_after: Some(900),
        max_runtime: Some(600),
    };
    let names: Vec<String> = (0..JOBS).map(|i| format!("job-{i:05}")).collect();
    let running: Vec<Running> = (0..JOBS)
        .map(|i| Running {
            any: i % 3 == 0,
            oldest_start: (i % 3 == 0).then(|| start - Duration::seconds((i % 1200) as i64)),
        })
        .collect();
    let mut monitor = Monitor::default();
    for (i, name) in names.iter().enumerate() {
        monitor.slot_due(name, start - Duration::seconds((i % 2000) as i64));
        if i % 2 == 0 {
            monitor.succeeded(name, start - Duration::seconds((i % 7200) as i64), start);
        }
    }
    let mut pass = Vec::new();
    let mut view = Vec::new();
    let mut series = Vec::new();
    let mut transitions = 0;
    for minute in 0..21 {
        let now = start + Duration::minutes(minute);
        let facts = names.iter().zip(&running).map(|(name, running)| JobFacts {
            name,
            sla: Some(&sla),
            enabled: true,
            paused: None,
            owned: true,
            running: *running,
        });
        let began = Instant::now();
        transitions += monitor.evaluate(facts, now).len();
        pass.push(began.elapsed().as_secs_f64() * 1e3);
        let began = Instant::now();
        let views: usize = names
            .iter()
            .zip(&running)
            .map(|(name, running)| monitor.view(name, &sla, *running, now).breaches.len())
            .sum();
        view.push(began.elapsed().as_secs_f64() * 1e3);
        let began = Instant::now();
        let count = monitor.series().len();
        series.push(began.elapsed().as_secs_f64() * 1e3);
        assert!(views <= JOBS * 3 && count == JOBS * 3);
    }
    println!("sla monitor, {JOBS} jobs with 3 checks each (median of 21 passes):");
    println!("  evaluate pass:        {:.2} ms", median(pass));
    println!("  sla view of all jobs: {:.2} ms", median(view));
    println!("  metric series:        {:.2} ms", median(series));
    println!("  transitions over the 21 passes: {transitions}");
}
