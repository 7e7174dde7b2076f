//! Schedule intelligence over 10,000 jobs, in-process: the load heatmap
//! (`GET /schedule/pressure`, 24 hours and a week), the suggested slots
//! (`/schedule/suggest`), the duplicate groups (`/schedule/duplicates`),
//! the fleet calendar feed (`/calendar.ics`, 14 days, 100 events per job)
//! and describing every job (what the first `GET /jobs` after a load
//! adds). Printed, nothing asserted: the median of 11 passes.
//!
//! The fleet is a mix a large installation has: hashed daily jobs (each
//! its own schedule), fixed daily and hourly jobs (many sharing one),
//! quarter-hourly `H/15` pollers, five-minute pollers, weekday jobs in
//! three zones, month-end jobs and a few seconds schedules.
//!
//! Run with `cargo bench --bench schedule_intel` (or
//! `scripts/bench.sh --schedule`).

use chrono::{TimeZone, Utc};
use cronstable::cronexpr::{
    describe_parsed, duplicates, pressure, render_calendar, suggest, CalendarEntry, CalendarWindow,
    CronExpr, Excluded, FleetEntry, Period, TimeBase,
};
use std::time::Instant;

const JOBS: usize = 10_000;
const PASSES: usize = 11;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Milliseconds of `work`, the median of [`PASSES`] runs, and the last
/// answer.
fn time<T>(mut work: impl FnMut() -> T) -> (f64, T) {
    let mut samples = Vec::with_capacity(PASSES);
    let mut answer = None;
    for _ in 0..PASSES {
        let began = Instant::now();
        let out = work();
        samples.push(began.elapsed().as_secs_f64() * 1e3);
        answer = Some(out);
    }
    (median(samples), answer.expect("at least one pass"))
}

fn schedule(i: usize) -> (&'static str, String) {
    let zones = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"];
    match i % 20 {
        0..=5 => ("UTC", "H H * * *".to_owned()),
        6..=8 => ("UTC", format!("{} {} * * *", i % 60, (i / 60) % 24)),
        9 | 10 => ("UTC", format!("{} * * * *", (i / 20) % 60)),
        11 | 12 => ("UTC", "H/15 * * * *".to_owned()),
        13 => ("UTC", "*/5 * * * *".to_owned()),
        14 | 15 => (zones[i % 4], "0 9 * * mon-fri".to_owned()),
        16 => ("UTC", "0 0 * * *".to_owned()),
        17 => ("America/New_York", "30 23 L * *".to_owned()),
        18 => ("UTC", "0 6 * * 5#3".to_owned()),
        _ if i % 200 == 19 => ("UTC", "*/30 * * * * * *".to_owned()),
        _ => ("Europe/Berlin", "H H(1-5) * * *".to_owned()),
    }
}

fn main() {
    let rows: Vec<(String, CronExpr, TimeBase)> = (0..JOBS)
        .map(|i| {
            let name = format!("job-{i:05}");
            let (zone, text) = schedule(i);
            let expr = CronExpr::parse(&text, Some(&name)).expect("a valid schedule");
            let tz = match zone {
                "UTC" => TimeBase::Utc,
                zone => TimeBase::Zone(zone.parse().expect("a zone")),
            };
            (name, expr, tz)
        })
        .collect();
    let entries: Vec<FleetEntry<'_>> = rows
        .iter()
        .map(|(name, expr, tz)| FleetEntry { name, expr, tz })
        .collect();
    let start = Utc.with_ymd_and_hms(2026, 7, 18, 16, 20, 13).unwrap();
    let utc = TimeBase::Utc;

    let (day, p) = time(|| pressure(&entries, start, 24, &utc, Excluded::default()));
    println!(
        "pressure, 24 hours:        {day:8.1} ms  ({} fires, busiest :{:02} with {} jobs)",
        p.total_fires, p.busiest_minute.minute, p.busiest_minute.jobs
    );
    let (week, p) = time(|| pressure(&entries, start, 168, &utc, Excluded::default()));
    println!(
        "pressure, 168 hours:       {week:8.1} ms  ({} fires)",
        p.total_fires
    );
    let body = serde_json::to_vec(&p).expect("serializable");
    println!("  pressure body:           {:8} bytes", body.len());
    let (hourly, s) = time(|| suggest(&entries, Period::Hourly, start, &utc));
    println!(
        "suggest, hourly:           {hourly:8.1} ms  ({})",
        s.slot.expression
    );
    let (daily, s) = time(|| suggest(&entries, Period::Daily, start, &utc));
    println!(
        "suggest, daily:            {daily:8.1} ms  ({})",
        s.slot.expression
    );
    let (dups, groups) = time(|| duplicates(&entries));
    println!(
        "duplicates:                {dups:8.1} ms  ({} groups)",
        groups.len()
    );
    let mut sorted: Vec<CalendarEntry<'_>> = entries
        .iter()
        .enumerate()
        .map(|(i, job)| CalendarEntry {
            job: *job,
            avg_duration: (i % 3 == 0).then_some(42.0 + i as f64),
        })
        .collect();
    sorted.sort_by(|a, b| a.job.name.cmp(b.job.name));
    let window = CalendarWindow {
        start,
        days: 14,
        per_job: 100,
        name: "cronstable",
        now: start,
        version: "bench",
    };
    let (feed, text) = time(|| render_calendar(&sorted, &window));
    println!(
        "calendar, 14 days:         {feed:8.1} ms  ({} events, {:.1} MB)",
        text.matches("BEGIN:VEVENT").count(),
        text.len() as f64 / 1e6
    );
    let one = [sorted[0]];
    let (single, _) = time(|| render_calendar(&one, &window));
    println!("calendar, one job:         {single:8.3} ms");
    // The worst case for the walks: no two jobs share a schedule, and
    // every one fires hundreds of times a day.
    let busy: Vec<(String, CronExpr, TimeBase)> = (0..JOBS)
        .map(|i| {
            let text = format!(
                "{}-59 {}-23 * * {}-6",
                i % 60,
                (i / 60) % 24,
                (i / 1440) % 7
            );
            let expr = CronExpr::parse(&text, None).expect("a valid schedule");
            (format!("busy-{i:05}"), expr, TimeBase::Utc)
        })
        .collect();
    let busy_entries: Vec<FleetEntry<'_>> = busy
        .iter()
        .map(|(name, expr, tz)| FleetEntry { name, expr, tz })
        .collect();
    let (worst, p) = time(|| pressure(&busy_entries, start, 24, &utc, Excluded::default()));
    println!(
        "pressure, 10,000 distinct busy schedules: {worst:8.1} ms  ({} fires)",
        p.total_fires
    );
    let (worst_suggest, _) = time(|| suggest(&busy_entries, Period::Hourly, start, &utc));
    println!("suggest, the same:         {worst_suggest:8.1} ms");
    let (described, sentences) = time(|| {
        rows.iter()
            .map(|(_, expr, _)| describe_parsed(expr.canonical(), expr))
            .collect::<Vec<_>>()
    });
    println!(
        "describe every job:        {described:8.1} ms  ({} sentences)",
        sentences.len()
    );
}
