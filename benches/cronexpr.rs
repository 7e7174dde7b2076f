//! Schedule engine benchmarks: parsing plain and extended expressions,
//! `next_after` for 100,000 freshly parsed schedules, and `matches`.
//!
//! Run with `cargo bench --bench cronexpr` (needs the `[[bench]]` entry with
//! `harness = false`).

use chrono::{DateTime, Duration, TimeZone, Utc};
use cronstable::cronexpr::{CronExpr, Linter, TimeBase};
use divan::{black_box, Bencher};

// under the default libtest harness (no `[[bench]]` entry yet) this file
// still builds, as a test crate whose `main` is unused
#[cfg_attr(test, allow(dead_code))]
fn main() {
    divan::main();
}

const PLAIN: &[&str] = &[
    "* * * * *",
    "*/5 * * * *",
    "0 12 * * mon-fri",
    "30 4 1,15 * *",
    "0 0 1 jan *",
    "@daily",
];

const EXTENDED: &[&str] = &[
    "0 0 1,15W,L,l-3,LW * mon#1,L5,tue",
    "*/10 0 0 * * l5 2027",
    "0 30 9 ? * MON#2 *",
    "0 7 L-3 * *",
    "15-45/10 30 12 * * * 2026-2030",
    "H H(2-6) * * H",
];

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 18, 12, 34, 56)
        .single()
        .unwrap_or_default()
}

#[divan::bench(args = PLAIN)]
fn parse_plain(text: &str) -> Option<CronExpr> {
    CronExpr::parse(black_box(text), None).ok()
}

#[divan::bench(args = EXTENDED)]
fn parse_extended(text: &str) -> Option<CronExpr> {
    CronExpr::parse(black_box(text), Some("bench-job")).ok()
}

/// 100,000 varied expressions: every minute/hour pairing, steps, weekday
/// ranges, month lists, business-day forms and seconds columns.
fn corpus() -> Vec<CronExpr> {
    let dows = ["*", "mon-fri", "1,3,5", "sat,sun", "5#3", "L5", "*/2"];
    let doms = [
        "*", "1", "15", "1,15", "L", "LW", "15W", "L-3", "*/7", "28-31",
    ];
    let months = ["*", "*", "*", "jan,jul", "*/3", "6"];
    (0..100_000u32)
        .filter_map(|i| {
            let minute = match i % 4 {
                0 => format!("{}", i % 60),
                1 => format!("*/{}", 1 + i % 30),
                2 => format!("{}-{}", i % 30, 30 + i % 30),
                _ => format!("{},{}", i % 60, (i * 7) % 60),
            };
            let hour = if i % 3 == 0 {
                "*".to_owned()
            } else {
                format!("{}", i % 24)
            };
            let dom = doms[(i / 4) as usize % doms.len()];
            let month = months[(i / 40) as usize % months.len()];
            let dow = if dom == "*" {
                dows[(i / 7) as usize % dows.len()]
            } else {
                "*"
            };
            let text = if i % 10 == 9 {
                format!("{} {minute} {hour} {dom} {month} {dow} *", i % 60)
            } else {
                format!("{minute} {hour} {dom} {month} {dow}")
            };
            CronExpr::parse(&text, Some("bench")).ok()
        })
        .collect()
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn next_100k_utc(bencher: Bencher) {
    let exprs = corpus();
    let from = now();
    bencher.bench_local(|| {
        let mut fired = 0usize;
        for e in &exprs {
            fired += usize::from(e.next_after(black_box(from), &TimeBase::Utc).is_some());
        }
        fired
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn next_100k_new_york(bencher: Bencher) {
    let exprs = corpus();
    let from = now();
    let zone = TimeBase::Zone(chrono_tz::America::New_York);
    bencher.bench_local(|| {
        let mut fired = 0usize;
        for e in &exprs {
            fired += usize::from(e.next_after(black_box(from), &zone).is_some());
        }
        fired
    });
}

/// Parse and first `next` together: what loading 100,000 jobs costs the
/// engine.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn parse_and_next_100k(bencher: Bencher) {
    let texts: Vec<String> = corpus().iter().map(|e| e.canonical().to_owned()).collect();
    let from = now();
    bencher.bench_local(|| {
        let mut fired = 0usize;
        for t in &texts {
            if let Ok(e) = CronExpr::parse(t, Some("bench")) {
                fired += usize::from(e.next_after(from, &TimeBase::Utc).is_some());
            }
        }
        fired
    });
}

#[divan::bench(args = ["*/5 * * * *", "0 0 1,15W,L * mon#1,L5"])]
fn matches(bencher: Bencher, text: &str) {
    let Ok(e) = CronExpr::parse(text, None) else {
        return;
    };
    // a whole minute, so every column is consulted
    let at = now() + Duration::seconds(4);
    bencher.bench(|| e.matches(black_box(at), &TimeBase::Utc));
}

/// A never-firing expression walks the whole horizon: the worst case.
#[divan::bench]
fn next_never_fires(bencher: Bencher) {
    let Ok(e) = CronExpr::parse("0 0 30 2 *", None) else {
        return;
    };
    let at = now() - Duration::days(1);
    bencher.bench(|| e.next_after(black_box(at), &TimeBase::Utc));
}

/// Load-time linting of one job with an explicit zone (the DST scan is the
/// expensive part).
#[divan::bench(args = ["30 2 * * *", "*/7 9-17 * * mon-fri"])]
fn lint_in_zone(bencher: Bencher, text: &str) {
    let Ok(e) = CronExpr::parse(text, None) else {
        return;
    };
    let zone = TimeBase::Zone(chrono_tz::America::New_York);
    let at = now();
    bencher.bench(|| e.lint(&zone, black_box(at)));
}

/// Linting 10,000 jobs in one zone with a shared [`Linter`], as a config
/// load does.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn lint_10k_zoned_jobs(bencher: Bencher) {
    let exprs: Vec<CronExpr> = corpus().into_iter().take(10_000).collect();
    let zone = TimeBase::Zone(chrono_tz::America::New_York);
    bencher.bench_local(|| {
        let mut linter = Linter::new(now());
        exprs
            .iter()
            .map(|e| linter.lint(e, &zone).len())
            .sum::<usize>()
    });
}
