use super::*;
use chrono::TimeZone;
use serde_json::{json, Value};

fn tz(name: &str) -> TimeBase {
    match name {
        "UTC" => TimeBase::Utc,
        zone => TimeBase::Zone(zone.parse().expect("a zone")),
    }
}

/// A fleet of `(name, expression, clock)`, parsed the way the daemon
/// parses a job's schedule (under its name).
struct Fleet {
    rows: Vec<(String, CronExpr, TimeBase)>,
}

impl Fleet {
    fn new<'a>(rows: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) -> Fleet {
        Fleet {
            rows: rows
                .into_iter()
                .map(|(name, expr, zone)| {
                    let parsed = CronExpr::parse(expr, Some(name)).expect("a valid expression");
                    (name.to_owned(), parsed, tz(zone))
                })
                .collect(),
        }
    }

    fn entries(&self) -> Vec<FleetEntry<'_>> {
        self.rows
            .iter()
            .map(|(name, expr, tz)| FleetEntry { name, expr, tz })
            .collect()
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("an instant")
        .with_timezone(&Utc)
}

/// The original's answers for fixed fleets
/// (`tests/fixtures/fleet_golden.json`, recorded by
/// `scripts/fleet_goldens.py`), answered the same here.
#[test]
fn the_originals_recorded_analyses() {
    let scenarios: Vec<Value> =
        serde_json::from_str(include_str!("../../tests/fixtures/fleet_golden.json"))
            .expect("valid JSON");
    assert!(scenarios.len() >= 5);
    for scenario in &scenarios {
        let name = scenario["name"].as_str().expect("a name");
        let fleet = Fleet::new(
            scenario["fleet"]
                .as_array()
                .expect("rows")
                .iter()
                .map(|row| {
                    (
                        row[0].as_str().expect("name"),
                        row[1].as_str().expect("expr"),
                        row[2].as_str().expect("zone"),
                    )
                }),
        );
        let entries = fleet.entries();
        let start = at(scenario["start"].as_str().expect("start"));
        let hours = scenario["hours"].as_u64().expect("hours") as u32;
        let display = tz(scenario["display"].as_str().expect("display"));

        let mut got = serde_json::to_value(pressure(
            &entries,
            start,
            hours,
            &display,
            Excluded::default(),
        ))
        .expect("serializable");
        got.as_object_mut().expect("an object").remove("excluded");
        assert_eq!(got, scenario["pressure"], "{name}: pressure");

        let got = serde_json::to_value(duplicates(&entries)).expect("serializable");
        assert_eq!(got, scenario["duplicates"], "{name}: duplicates");

        for (period, key) in [(Period::Hourly, "hourly"), (Period::Daily, "daily")] {
            let got = serde_json::to_value(suggest(&entries, period, start, &display))
                .expect("serializable");
            assert_eq!(got, scenario[key], "{name}: {key} suggestion");
        }
    }
}

#[test]
fn pressure_counts_fires_strictly_inside_the_window() {
    let fleet = Fleet::new([
        ("hourly", "0 * * * *", "UTC"),
        ("quarter", "*/15 * * * *", "UTC"),
    ]);
    let start = Utc.with_ymd_and_hms(2026, 7, 18, 0, 0, 0).unwrap();
    let p = pressure(
        &fleet.entries(),
        start,
        24,
        &TimeBase::Utc,
        Excluded::default(),
    );
    // the fire at the start itself is not "ahead"; the one at the end is
    // outside the window
    assert_eq!(p.grid[0][0], 0);
    assert_eq!(p.grid[1][0], 2);
    assert_eq!(p.grid[0][15], 1);
    assert_eq!(p.total_fires, 23 + 95);
    assert_eq!(p.by_minute_jobs[0], 2);
    assert_eq!(p.by_minute_jobs[15], 1);
    assert_eq!(p.busiest_minute.minute, 0);
    assert_eq!(p.empty_minutes.len(), 56);
    assert_eq!(p.top_cells[0].jobs, ["hourly", "quarter"]);
    assert_eq!(p.top_cells.len(), 6);
}

#[test]
fn pressure_clamps_its_window_and_names_its_clock() {
    let fleet = Fleet::new([("a", "* * * * *", "UTC")]);
    let start = Utc.with_ymd_and_hms(2026, 7, 18, 0, 0, 0).unwrap();
    let entries = fleet.entries();
    let berlin = tz("Europe/Berlin");
    let week = pressure(&entries, start, 1000, &berlin, Excluded::default());
    assert_eq!(week.hours, 168);
    assert_eq!(week.total_fires, 168 * 60 - 1);
    assert_eq!(week.timezone, "Europe/Berlin");
    assert_eq!(week.start, "2026-07-18T02:00:00+02:00");
    let one = pressure(&entries, start, 0, &TimeBase::Utc, Excluded::default());
    assert_eq!(one.hours, 1);
    assert_eq!(one.total_fires, 59);
}

#[test]
fn seconds_weigh_their_minute() {
    let fleet = Fleet::new([("fast", "*/10 * * * * * *", "UTC")]);
    let start = Utc.with_ymd_and_hms(2026, 7, 18, 0, 0, 30).unwrap();
    let p = pressure(
        &fleet.entries(),
        start,
        1,
        &TimeBase::Utc,
        Excluded::default(),
    );
    // six fires a minute in each minute whose start is in the window
    // (01:00 included: it is counted as a whole minute, as the original
    // counts it)
    assert_eq!(p.by_minute_fires[1], 6);
    assert_eq!(p.by_minute_jobs[1], 1);
    assert_eq!(p.total_fires, 60 * 6);
}

#[test]
fn duplicates_group_by_meaning_and_clock() {
    let fleet = Fleet::new([
        ("a", "*/5 * * * *", "UTC"),
        ("b", "0-59/5 * * * *", "UTC"),
        ("c", "*/5 * * * *", "Europe/Berlin"),
        ("d", "0 * * * *", "UTC"),
        ("e", "@hourly", "UTC"),
        ("f", "0 * * * *", "UTC"),
        ("g", "1 1 * * *", "UTC"),
    ]);
    let groups = duplicates(&fleet.entries());
    assert_eq!(
        serde_json::to_value(&groups).unwrap(),
        json!([
            {"expression": "0 * * * *", "description": "Every hour at :00, every day",
             "timezone": "UTC", "count": 3, "jobs": ["d", "e", "f"]},
            {"expression": "*/5 * * * *", "description": "Every 5 minutes, every day",
             "timezone": "UTC", "count": 2, "jobs": ["a", "b"]},
        ])
    );
    // an H slot joins the group of the plain spelling it resolved to
    let hashed = CronExpr::parse("H * * * *", Some("h")).unwrap();
    let plain = CronExpr::parse(hashed.resolved(), None).unwrap();
    let utc = TimeBase::Utc;
    let groups = duplicates(&[
        FleetEntry {
            name: "h",
            expr: &hashed,
            tz: &utc,
        },
        FleetEntry {
            name: "p",
            expr: &plain,
            tz: &utc,
        },
    ]);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].jobs, ["h", "p"]);
    assert!(duplicates(&[]).is_empty());
}

#[test]
fn an_idle_fleet_gets_half_past() {
    let start = Utc.with_ymd_and_hms(2026, 7, 18, 16, 20, 0).unwrap();
    let s = suggest(&[], Period::Hourly, start, &TimeBase::Utc);
    assert_eq!(
        (s.slot.minute, s.slot.expression.as_str()),
        (30, "30 * * * *")
    );
    let others: Vec<u32> = s.alternatives.iter().map(|a| a.minute).collect();
    assert_eq!(others, [29, 31]);
    assert_eq!(s.hash_hint, "H * * * *");
    let d = suggest(&[], Period::Daily, start, &TimeBase::Utc);
    assert_eq!(d.slot.expression, "0 12 * * *");
    assert_eq!(d.hash_hint, "H H * * *");
}

#[test]
fn suggestions_avoid_the_load() {
    let fleet = Fleet::new([("a", "*/2 * * * *", "UTC"), ("b", "0-29 * * * *", "UTC")]);
    let start = Utc.with_ymd_and_hms(2026, 7, 18, 0, 0, 0).unwrap();
    let s = suggest(&fleet.entries(), Period::Hourly, start, &TimeBase::Utc);
    // Odd minutes past :30 are empty. The busiest minute is :02 (both jobs
    // fire there 24 times; at :00 the fire at the start itself is not
    // counted); :31 and :33 are the empty ones farthest from it, and the
    // earlier wins.
    assert_eq!(s.busiest.minute, 2);
    assert_eq!(s.busiest.fires_in_window, 48);
    assert_eq!(s.slot.minute, 31);
    assert_eq!(s.slot.fires_in_window, 0);
    assert_eq!(s.alternatives[0].minute, 33);
}

#[test]
fn periods_and_their_refusal() {
    assert_eq!(Period::parse("hourly"), Ok(Period::Hourly));
    assert_eq!(Period::parse("daily"), Ok(Period::Daily));
    assert_eq!(
        Period::parse("weekly").unwrap_err(),
        "period must be 'hourly' or 'daily', got 'weekly'"
    );
    assert_eq!(
        Period::parse("it's").unwrap_err(),
        "period must be 'hourly' or 'daily', got \"it's\""
    );
}

#[test]
fn python_iso_matches_isoformat() {
    let utc = TimeBase::Utc;
    let t = Utc.with_ymd_and_hms(2026, 7, 18, 16, 20, 0).unwrap();
    assert_eq!(python_iso(&utc, t), "2026-07-18T16:20:00+00:00");
    let t = t + Duration::microseconds(123_000);
    assert_eq!(python_iso(&utc, t), "2026-07-18T16:20:00.123000+00:00");
    let ny = tz("America/New_York");
    assert_eq!(python_iso(&ny, t), "2026-07-18T12:20:00.123000-04:00");
    let kolkata = tz("Asia/Kolkata");
    assert_eq!(
        python_iso(&kolkata, Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()),
        "2026-01-01T05:30:00+05:30"
    );
}
