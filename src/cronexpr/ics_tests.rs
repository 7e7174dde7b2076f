use super::*;
use crate::cronexpr::{CronExpr, TimeBase};
use chrono::TimeZone;
use serde_json::Value;

fn tz(name: &str) -> TimeBase {
    match name {
        "UTC" => TimeBase::Utc,
        zone => TimeBase::Zone(zone.parse().expect("a zone")),
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("an instant")
        .with_timezone(&Utc)
}

/// Jobs of a feed, parsed under their names.
type Rows = Vec<(String, CronExpr, TimeBase, Option<f64>)>;

fn entries(rows: &Rows) -> Vec<CalendarEntry<'_>> {
    rows.iter()
        .map(|(name, expr, tz, avg)| CalendarEntry {
            job: FleetEntry { name, expr, tz },
            avg_duration: *avg,
        })
        .collect()
}

/// The original's feeds for fixed fleets (`tests/fixtures/ics_golden.json`,
/// recorded by `scripts/ics_goldens.py`), byte for byte.
#[test]
fn the_originals_recorded_feeds() {
    let scenarios: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/fixtures/ics_golden.json"))
            .expect("valid JSON");
    assert!(scenarios.len() >= 4);
    for scenario in &scenarios {
        let name = scenario["name"].as_str().expect("a name");
        let rows: Rows = scenario["fleet"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|row| {
                let job = row[0].as_str().expect("name");
                let expr = CronExpr::parse(row[1].as_str().expect("expr"), Some(job))
                    .expect("a valid expression");
                (
                    job.to_owned(),
                    expr,
                    tz(row[2].as_str().expect("zone")),
                    row[3].as_f64(),
                )
            })
            .collect();
        let window = CalendarWindow {
            start: at(scenario["start"].as_str().expect("start")),
            days: scenario["days"].as_u64().expect("days") as u32,
            per_job: scenario["per_job"].as_u64().expect("per_job") as usize,
            name: scenario["calname"].as_str().expect("calname"),
            now: at(scenario["now"].as_str().expect("now")),
            version: scenario["version"].as_str().expect("version"),
        };
        let got = render_calendar(&entries(&rows), &window);
        let want = scenario["want"].as_str().expect("want");
        if got != want {
            let line = got
                .split(CRLF)
                .zip(want.split(CRLF))
                .position(|(g, w)| g != w);
            panic!("{name}: the feed differs (first at line {line:?})\n--- got\n{got}\n--- want\n{want}");
        }
    }
}

fn window(days: u32, per_job: usize) -> CalendarWindow<'static> {
    CalendarWindow {
        start: Utc.with_ymd_and_hms(2026, 7, 18, 12, 0, 0).unwrap(),
        days,
        per_job,
        name: "cronstable",
        now: Utc.with_ymd_and_hms(2026, 7, 18, 12, 0, 0).unwrap(),
        version: "1.0.0",
    }
}

#[test]
fn an_empty_fleet_is_a_valid_empty_calendar() {
    let text = render_calendar(&[], &window(14, 100));
    assert!(text.starts_with("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n"));
    assert!(text.ends_with("END:VCALENDAR\r\n"));
    assert!(!text.contains("VEVENT"));
}

#[test]
fn events_are_capped_per_job_and_the_cap_is_announced() {
    let rows: Rows = vec![(
        "every-minute".into(),
        CronExpr::parse("* * * * *", None).unwrap(),
        TimeBase::Utc,
        None,
    )];
    let text = render_calendar(&entries(&rows), &window(1, 3));
    assert_eq!(text.matches("BEGIN:VEVENT").count(), 3);
    assert!(text.contains("DTSTART:20260718T120100Z"));
    assert!(text.contains("X-CRONSTABLE-TRUNCATED;CAP=3:every-minute\r\n"));
    let text = render_calendar(&entries(&rows), &window(1, 2000));
    assert_eq!(text.matches("BEGIN:VEVENT").count(), 24 * 60 - 1);
    assert!(!text.contains("TRUNCATED"));
}

#[test]
fn every_line_is_folded_within_75_octets() {
    let name = "ü".repeat(100);
    let rows: Rows = vec![(
        name,
        CronExpr::parse("0 0 * * *", None).unwrap(),
        TimeBase::Utc,
        None,
    )];
    let text = render_calendar(&entries(&rows), &window(2, 10));
    for line in text.split(CRLF) {
        assert!(line.len() <= 75, "{line:?}");
    }
    // unfolding gives the name back whole
    let unfolded = text.replace("\r\n ", "");
    assert!(unfolded.contains(&format!("SUMMARY:{}\r\n", "ü".repeat(100))));
}

#[test]
fn text_values_are_escaped() {
    assert_eq!(escape("a\\b;c,d\r\ne\nf\rg"), "a\\\\b\\;c\\,d\\ne\\nf\\ng");
}

#[test]
fn event_lengths_and_runtimes() {
    assert_eq!(event_seconds(None), 300);
    assert_eq!(event_seconds(Some(0.0)), 300);
    assert_eq!(event_seconds(Some(-3.0)), 300);
    assert_eq!(event_seconds(Some(301.0)), 360);
    assert_eq!(event_seconds(Some(1e12)), 86_400);
    assert_eq!(duration_text(300), "PT5M");
    assert_eq!(duration_text(3600), "PT1H");
    assert_eq!(duration_text(5400), "PT1H30M");
    assert_eq!(runtime_text(2.5), "2s");
    assert_eq!(runtime_text(3.5), "4s");
    assert_eq!(runtime_text(89.9), "1m");
    assert_eq!(runtime_text(150.0), "2m");
    assert_eq!(runtime_text(4500.0), "1.2h");
    assert_eq!(runtime_text(5400.0), "1.5h");
}

#[test]
fn uids_are_stable_per_job_and_instant() {
    assert_eq!(uid_prefix("backup, nightly; full"), "5be05667380f");
    assert_eq!(uid_prefix("x"), uid_prefix("x"));
    assert_ne!(uid_prefix("x"), uid_prefix("y"));
}

#[test]
fn the_feed_comes_in_pieces_that_add_up_to_it() {
    let rows: Rows = (0..30)
        .map(|i| {
            (
                format!("job-{i:02}"),
                CronExpr::parse("*/5 * * * *", None).unwrap(),
                TimeBase::Utc,
                None,
            )
        })
        .collect();
    let entries = entries(&rows);
    let window = window(14, 1000);
    let whole = render_calendar(&entries, &window);
    let mut pieces = Vec::new();
    write_calendar(&entries, &window, |piece| {
        pieces.push(piece);
        true
    });
    assert!(pieces.len() > 10, "{} pieces", pieces.len());
    assert!(pieces.iter().all(|p| p.len() < PIECE_BYTES + 1024));
    assert_eq!(pieces.concat(), whole);
    // a reader that goes away stops the writing
    let mut asked = 0;
    write_calendar(&entries, &window, |_| {
        asked += 1;
        false
    });
    assert_eq!(asked, 1);
}
