//! Unit tests of the field-by-field explanation.
use super::*;
use chrono::Duration;
use chrono_tz::{America::New_York, Australia::Lord_Howe, Europe::Berlin};

fn cron(text: &str) -> CronExpr {
    CronExpr::parse(text, Some("refresh-cache")).unwrap()
}

fn wall(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
}

fn probe(s: &str) -> Probe {
    Probe::parse(s).unwrap()
}

fn row<'a>(v: &'a Verdict, field: &str) -> &'a FieldCheck {
    v.checks.iter().find(|c| c.field.label() == field).unwrap()
}

fn allowed(expr: &str, field: &str) -> String {
    let v = explain(&cron(expr), wall("2026-07-14T09:00:00"), &TimeBase::Utc);
    row(&v, field).allowed.clone()
}

fn codes(v: &[WhyNote]) -> Vec<&'static str> {
    v.iter().map(|n| n.code).collect()
}

// --- probe parsing ----------------------------------------------------

#[test]
fn probes_without_an_offset_are_wall_times() {
    assert_eq!(
        probe("2026-07-14T09:00"),
        Probe::Wall(wall("2026-07-14T09:00:00"))
    );
    assert_eq!(
        probe(" 2026-07-14 09:00:05 "),
        Probe::Wall(wall("2026-07-14T09:00:05"))
    );
    assert_eq!(
        probe("2026-07-14"),
        Probe::Wall(wall("2026-07-14T00:00:00"))
    );
    assert_eq!(
        probe("2026-07-14t09"),
        Probe::Wall(wall("2026-07-14T09:00:00"))
    );
    let Probe::Wall(w) = probe("2026-07-14T09:00:00.5") else {
        panic!("not a wall time")
    };
    assert_eq!(w.nanosecond(), 500_000_000);
}

#[test]
fn probes_with_an_offset_are_instants() {
    let utc = |s: &str| match probe(s) {
        Probe::Instant(at) => at.with_timezone(&Utc),
        Probe::Wall(w) => panic!("{s} read as wall time {w}"),
    };
    let expected = wall("2026-07-14T07:00:00").and_utc();
    for text in [
        "2026-07-14T09:00:00+02:00",
        "2026-07-14T09:00+0200",
        "2026-07-14T09:00+02",
        "2026-07-14T07:00:00Z",
        "2026-07-14T07:00:00z",
        "2026-07-14T04:30:00-02:30",
        "2026-07-14T07:00:00+00:00:00",
        "2026-07-14T09:00:00 02:00",
        "2026-07-14 09:00 02:00",
    ] {
        assert_eq!(utc(text), expected, "{text}");
    }
}

#[test]
fn malformed_probes_are_refused_with_the_text() {
    for text in [
        "",
        "yesterday",
        "2026-7-14T09:00",
        "2026-07-14T9:00",
        "2026-13-01T00:00",
        "2026-02-30",
        "2026-07-14T24:00",
        "2026-07-14T09:60",
        "2026-07-14T09:00:00.",
        "2026-07-14T09:00:00.1234567890",
        "2026-07-14T09:00+25:00",
        "2026-07-14T09:00+02:7",
        "2026-07-14T09:00 UTC",
        "2026-07-14X09:00",
        "0000-01-01",
        "2026-07-14T09:00:00+02:00junk",
        "２０２６-07-14",
    ] {
        assert!(Probe::parse(text).is_err(), "{text:?} parsed");
    }
    let err = Probe::parse(" nope ").unwrap_err().to_string();
    assert!(err.contains("'nope'"), "{err}");
    assert!(err.contains("ISO-8601"), "{err}");
    assert_eq!("2026-07-14".parse::<Probe>(), Ok(probe("2026-07-14")));
}

#[test]
fn locating_a_probe_on_the_job_clock() {
    let berlin = TimeBase::Zone(Berlin);
    // an instant converts into the zone
    let p = probe("2026-07-14T07:00:00Z").locate(&berlin);
    assert_eq!(p.civil, wall("2026-07-14T09:00:00"));
    assert_eq!(p.iso(), "2026-07-14T09:00:00+02:00");
    // a wall time is read there
    let p = probe("2026-07-14T09:00").locate(&berlin);
    assert_eq!(p.instant, wall("2026-07-14T07:00:00").and_utc());
    assert_eq!(p.iso(), "2026-07-14T09:00:00+02:00");
    // UTC prints +00:00, like the rest of the API
    assert_eq!(
        probe("2026-07-14T09:00").locate(&TimeBase::Utc).iso(),
        "2026-07-14T09:00:00+00:00"
    );
    // a skipped wall time keeps its label with the pre-jump offset
    let ny = TimeBase::Zone(New_York);
    let p = probe("2026-03-08T02:30").locate(&ny);
    assert_eq!(p.instant, wall("2026-03-08T07:30:00").and_utc());
    assert_eq!(p.iso(), "2026-03-08T02:30:00-05:00");
    // a repeated wall time is its first pass
    let p = probe("2026-11-01T01:30").locate(&ny);
    assert_eq!(p.iso(), "2026-11-01T01:30:00-04:00");
    // ... unless the offset picks the second
    let p = probe("2026-11-01T01:30:00-05:00").locate(&ny);
    assert_eq!(p.civil, wall("2026-11-01T01:30:00"));
    assert_eq!(p.iso(), "2026-11-01T01:30:00-05:00");
    // sub-seconds survive in the echo
    assert_eq!(
        probe("2026-07-14T09:00:00.250")
            .locate(&TimeBase::Utc)
            .iso(),
        "2026-07-14T09:00:00.250+00:00"
    );
}

// --- the rows -----------------------------------------------------------

#[test]
fn the_manual_example_field_by_field() {
    let v = explain(
        &cron("0 9 * * mon,fri"),
        wall("2026-07-14T09:00:00"),
        &TimeBase::Utc,
    );
    let rows: Vec<(&str, i32, &str, &str, bool)> = v
        .checks
        .iter()
        .map(|c| {
            (
                c.field.label(),
                c.value,
                c.label.as_str(),
                c.allowed.as_str(),
                c.matched,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("second", 0, "0", "0", true),
            ("minute", 0, "0", "0", true),
            ("hour", 9, "9", "9", true),
            ("day-of-month", 14, "14", "any", true),
            ("month", 7, "July", "any", true),
            ("day-of-week", 2, "Tuesday", "Monday and Friday", false),
            ("year", 2026, "2026", "any", true),
        ]
    );
    assert!(!v.matches);
    assert_eq!(v.failed, ["day-of-week"]);
    assert!(v.notes.is_empty());
}

#[test]
fn seven_rows_whatever_the_layout() {
    for expr in ["* * * * *", "* * * * * 2026", "*/15 * * * * * *", "@daily"] {
        let v = explain(&cron(expr), wall("2026-07-14T09:00:00"), &TimeBase::Utc);
        let fields: Vec<&str> = v.checks.iter().map(|c| c.field.label()).collect();
        assert_eq!(
            fields,
            [
                "second",
                "minute",
                "hour",
                "day-of-month",
                "month",
                "day-of-week",
                "year"
            ],
            "{expr}"
        );
    }
    // a 5-field schedule fires at second 0 only; 7 fields can say any
    assert_eq!(allowed("* * * * *", "second"), "0");
    assert_eq!(allowed("* * * * * * *", "second"), "any");
    assert_eq!(allowed("*/15 * * * * * *", "second"), "0, 15, 30 and 45");
    let v = explain(
        &cron("* * * * *"),
        wall("2026-07-14T09:00:07"),
        &TimeBase::Utc,
    );
    assert_eq!(v.failed, ["second"]);
}

#[test]
fn plain_columns_collapse_runs_of_three() {
    assert_eq!(allowed("* * * * *", "minute"), "any");
    assert_eq!(allowed("0 * * * *", "minute"), "0");
    assert_eq!(allowed("0,30 * * * *", "minute"), "0 and 30");
    assert_eq!(allowed("1,2,3,7 * * * *", "minute"), "1-3 and 7");
    assert_eq!(allowed("1,2,7,8,9,10 * * * *", "minute"), "1, 2 and 7-10");
    assert_eq!(allowed("0 9-17 * * *", "hour"), "9-17");
    assert_eq!(allowed("0 0-23 * * *", "hour"), "any");
    assert_eq!(
        allowed("0 0 * jan-mar,jul *", "month"),
        "January-March and July"
    );
    assert_eq!(allowed("0 0 * 6,7 *", "month"), "June and July");
    assert_eq!(allowed("0 0 * 1-12 *", "month"), "any");
    assert_eq!(
        allowed("0 0 1 1 * 2026-2028,2030", "year"),
        "2026-2028 and 2030"
    );
    assert_eq!(allowed("0 0 1 1 * *", "year"), "any");
    assert_eq!(allowed("0 0 13 * *", "day-of-month"), "13");
}

#[test]
fn weekday_column_in_prose() {
    assert_eq!(allowed("0 9 * * mon-fri", "day-of-week"), "Monday-Friday");
    assert_eq!(
        allowed("0 9 * * sat-sun", "day-of-week"),
        "Sunday and Saturday"
    );
    assert_eq!(allowed("0 9 * * 0-6", "day-of-week"), "any");
    assert_eq!(allowed("0 9 * * ?", "day-of-week"), "any");
    assert_eq!(allowed("0 9 * * 7", "day-of-week"), "Sunday");
    assert_eq!(
        allowed("0 0 * * L5", "day-of-week"),
        "the month's last Friday"
    );
    assert_eq!(
        allowed("0 0 * * 5#3", "day-of-week"),
        "the month's 3rd Friday"
    );
    assert_eq!(
        allowed("0 0 * * mon#1,mon#2,L5,tue", "day-of-week"),
        "Tuesday, the month's last Friday, the month's 1st Monday and the month's 2nd Monday"
    );
    // a backwards L range is legal and matches nothing
    assert_eq!(allowed("0 0 * * l7-3", "day-of-week"), "");
}

#[test]
fn day_of_month_column_in_prose() {
    assert_eq!(
        allowed("0 0 L * *", "day-of-month"),
        "the month's last day (L)"
    );
    assert_eq!(
        allowed("0 0 L-1 * *", "day-of-month"),
        "1 day before the month's last (L-1)"
    );
    assert_eq!(
        allowed("0 0 L-3 * *", "day-of-month"),
        "3 days before the month's last (L-3)"
    );
    assert_eq!(
        allowed("0 0 15W * *", "day-of-month"),
        "the weekday nearest day 15 (15W)"
    );
    assert_eq!(
        allowed("0 0 LW * *", "day-of-month"),
        "the month's last weekday (LW)"
    );
    assert_eq!(
        allowed("0 0 1,2,3,15W,L,LW * *", "day-of-month"),
        "1-3, the weekday nearest day 15 (15W), the month's last day (L) and the \
         month's last weekday (LW)"
    );
    assert_eq!(allowed("0 0 H * *", "day-of-month"), "20");
    assert_eq!(allowed("0 0 * * *", "day-of-month"), "any");
}

#[test]
fn ordinals() {
    let got: Vec<String> = [1, 2, 3, 4, 5, 11, 12, 13, 21, 22, 23, 101, 111]
        .into_iter()
        .map(ordinal)
        .collect();
    assert_eq!(
        got,
        [
            "1st", "2nd", "3rd", "4th", "5th", "11th", "12th", "13th", "21st", "22nd", "23rd",
            "101st", "111th"
        ]
    );
}

#[test]
fn special_day_forms_decided_per_side() {
    // 2026-01-30 is the last Friday of January, and the last weekday
    let at = wall("2026-01-30T00:00:00");
    let v = explain(&cron("0 0 LW * L5"), at, &TimeBase::Utc);
    assert!(v.matches);
    // 2026-01-23 is a Friday but not the last one
    let v = explain(
        &cron("0 0 * * L5"),
        wall("2026-01-23T00:00:00"),
        &TimeBase::Utc,
    );
    assert_eq!(v.failed, ["day-of-week"]);
    assert_eq!(row(&v, "day-of-week").label, "Friday");
    // 15W in Feb 2026: the 15th is a Sunday, so it fires Monday the 16th
    let v = explain(
        &cron("0 0 15W * *"),
        wall("2026-02-15T00:00:00"),
        &TimeBase::Utc,
    );
    assert_eq!(v.failed, ["day-of-month"]);
    let v = explain(
        &cron("0 0 15W * *"),
        wall("2026-02-16T00:00:00"),
        &TimeBase::Utc,
    );
    assert!(v.matches);
    // the third Friday of 2026-01 is the 16th
    let v = explain(
        &cron("0 6 * * 5#3"),
        wall("2026-01-16T06:00:00"),
        &TimeBase::Utc,
    );
    assert!(v.matches);
}

// --- notes --------------------------------------------------------------

#[test]
fn the_and_rule_is_flagged_when_it_alone_blocked() {
    // 2026-03-13 is a Friday the 13th; 2026-03-20 a Friday, 2026-05-13 a Wednesday
    let e = cron("0 0 13 * 5");
    let v = explain(&e, wall("2026-03-20T00:00:00"), &TimeBase::Utc);
    assert_eq!(v.failed, ["day-of-month"]);
    assert_eq!(codes(&v.notes), ["day-fields-and-rule"]);
    let message = &v.notes[0].message;
    assert!(
        message.contains("day-of-week matched and day-of-month did not"),
        "{message}"
    );
    assert_eq!(v.notes[0].level, LintLevel::Note);
    let v = explain(&e, wall("2026-05-13T00:00:00"), &TimeBase::Utc);
    assert!(v.notes[0]
        .message
        .contains("day-of-month matched and day-of-week did not"));
    // another column failed too: Vixie would not have fired either
    let v = explain(&e, wall("2026-03-20T00:01:00"), &TimeBase::Utc);
    assert!(v.notes.is_empty());
    // both day columns failed
    let v = explain(&e, wall("2026-03-19T00:00:00"), &TimeBase::Utc);
    assert_eq!(v.failed, ["day-of-month", "day-of-week"]);
    assert!(v.notes.is_empty());
    // a match
    let v = explain(&e, wall("2026-03-13T00:00:00"), &TimeBase::Utc);
    assert!(v.matches && v.notes.is_empty());
    // only one column restricted: the AND rule is not the story
    let v = explain(
        &cron("0 0 * * 5"),
        wall("2026-03-19T00:00:00"),
        &TimeBase::Utc,
    );
    assert!(v.notes.is_empty());
    // special forms count as restricted
    let v = explain(
        &cron("0 0 L * 5"),
        wall("2026-03-20T00:00:00"),
        &TimeBase::Utc,
    );
    assert_eq!(codes(&v.notes), ["day-fields-and-rule"]);
}

#[test]
fn dst_notes_for_matching_wall_times() {
    let ny = TimeBase::Zone(New_York);
    let e = cron("30 2 * * *");
    let v = explain(&e, wall("2026-03-08T02:30:00"), &ny);
    assert!(v.matches);
    assert_eq!(codes(&v.notes), ["dst-skipped-time"]);
    let m = &v.notes[0].message;
    assert!(m.contains("02:30:00") && m.contains("2026-03-08"), "{m}");
    assert!(
        m.contains("America/New_York") && m.contains("03:30:00"),
        "{m}"
    );
    let v = explain(&cron("30 1 * * *"), wall("2026-11-01T01:30:00"), &ny);
    assert_eq!(codes(&v.notes), ["dst-repeated-time"]);
    assert!(v.notes[0].message.contains("first pass"));
    // no note when the wall time did not match, or in UTC, or on a plain day
    let v = explain(&cron("31 2 * * *"), wall("2026-03-08T02:30:00"), &ny);
    assert!(v.notes.is_empty());
    let v = explain(&e, wall("2026-03-08T02:30:00"), &TimeBase::Utc);
    assert!(v.notes.is_empty());
    let v = explain(&e, wall("2026-03-09T02:30:00"), &ny);
    assert!(v.matches && v.notes.is_empty());
    // a half-hour jump names the half-hour shift
    let v = explain(
        &cron("15 2 * * *"),
        wall("2026-10-04T02:15:00"),
        &TimeBase::Zone(Lord_Howe),
    );
    assert_eq!(codes(&v.notes), ["dst-skipped-time"]);
    assert!(
        v.notes[0].message.contains("02:45:00"),
        "{}",
        v.notes[0].message
    );
}

#[test]
fn paused_note_names_end_actor_and_note() {
    let until = wall("2026-07-14T10:00:00").and_utc();
    let n = paused_note(&TimeBase::Zone(Berlin), until, "ops", "maintenance");
    assert_eq!(n.code, "paused");
    assert!(
        n.message.contains("2026-07-14T12:00:00+02:00"),
        "{}",
        n.message
    );
    assert!(n.message.contains("ops") && n.message.contains("maintenance"));
    let bare = paused_note(&TimeBase::Utc, until, "api", "");
    assert!(!bare.message.contains("note:"), "{}", bare.message);
}

// --- the whole report -----------------------------------------------------

#[test]
fn report_brackets_the_probe_with_real_fires() {
    let s = Schedule::parse("0 9 * * mon,fri", "weekday-report").unwrap();
    let r = why(&s, &TimeBase::Utc, &probe("2026-07-14T09:00"));
    assert_eq!(r.expression, "0 9 * * mon,fri");
    assert!(!r.reboot && !r.matches);
    assert_eq!(r.at_in_zone.as_deref(), Some("2026-07-14T09:00:00+00:00"));
    assert_eq!(r.resolved, None);
    assert_eq!(
        r.previous_fire.as_deref(),
        Some("2026-07-13T09:00:00+00:00")
    );
    assert_eq!(r.next_fire.as_deref(), Some("2026-07-17T09:00:00+00:00"));
    // a fire exactly at the probe is neither previous nor next
    let r = why(&s, &TimeBase::Utc, &probe("2026-07-13T09:00:00Z"));
    assert!(r.matches);
    assert_eq!(
        r.previous_fire.as_deref(),
        Some("2026-07-10T09:00:00+00:00")
    );
    assert_eq!(r.next_fire.as_deref(), Some("2026-07-17T09:00:00+00:00"));
}

#[test]
fn report_in_a_zone_converts_offsets() {
    let s = Schedule::parse("0 9 * * *", "x").unwrap();
    let berlin = TimeBase::Zone(Berlin);
    // 07:00Z is 09:00 in Berlin in summer
    let r = why(&s, &berlin, &probe("2026-07-14T07:00:00Z"));
    assert!(r.matches, "{r:?}");
    assert_eq!(r.at_in_zone.as_deref(), Some("2026-07-14T09:00:00+02:00"));
    assert_eq!(
        r.previous_fire.as_deref(),
        Some("2026-07-13T09:00:00+02:00")
    );
    assert_eq!(r.next_fire.as_deref(), Some("2026-07-15T09:00:00+02:00"));
    // the same text as a wall time is 09:00 Berlin, a different instant
    let r = why(&s, &berlin, &probe("2026-07-14T07:00"));
    assert_eq!(r.failed, ["hour"]);
    // winter offsets in the fires
    let r = why(&s, &berlin, &probe("2026-01-14T12:00"));
    assert_eq!(r.next_fire.as_deref(), Some("2026-01-15T09:00:00+01:00"));
}

#[test]
fn report_across_a_spring_forward() {
    let s = Schedule::parse("30 2 * * *", "x").unwrap();
    let ny = TimeBase::Zone(New_York);
    let r = why(&s, &ny, &probe("2026-03-08T02:30"));
    assert!(r.matches);
    assert_eq!(codes(&r.notes), ["dst-skipped-time"]);
    assert_eq!(r.at_in_zone.as_deref(), Some("2026-03-08T02:30:00-05:00"));
    // the probe's instant is the shifted fire itself (03:30 EDT)
    assert_eq!(
        r.previous_fire.as_deref(),
        Some("2026-03-07T02:30:00-05:00")
    );
    assert_eq!(r.next_fire.as_deref(), Some("2026-03-09T02:30:00-04:00"));
    // a probe just before the jump sees the shifted fire next
    let r = why(&s, &ny, &probe("2026-03-08T01:59"));
    assert_eq!(r.next_fire.as_deref(), Some("2026-03-08T03:30:00-04:00"));
}

#[test]
fn report_for_hashed_and_reboot_schedules() {
    let s = Schedule::parse("H 3 * * *", "refresh-cache").unwrap();
    let r = why(&s, &TimeBase::Utc, &probe("2026-07-14T03:00"));
    assert_eq!(r.expression, "H 3 * * *");
    assert_eq!(r.resolved.as_deref(), Some("29 3 * * *"));
    assert_eq!(r.failed, ["minute"]);
    let minute = r.checks.iter().find(|c| c.field == Field::Minute).unwrap();
    assert_eq!(minute.allowed, "29");
    let r = why(&s, &TimeBase::Utc, &probe("2026-07-14T03:29"));
    assert!(r.matches);

    let r = why(
        &Schedule::Reboot,
        &TimeBase::Utc,
        &probe("2026-07-14T03:00"),
    );
    assert!(r.reboot && !r.matches);
    assert_eq!(r.expression, "@reboot");
    assert!(r.checks.is_empty() && r.failed.is_empty());
    assert_eq!(codes(&r.notes), ["reboot"]);
    assert_eq!(
        (r.previous_fire, r.next_fire, r.at_in_zone),
        (None, None, None)
    );
}

#[test]
fn report_at_the_edges_of_time() {
    // a past year: nothing next, the last fire before
    let s = Schedule::parse("0 0 1 1 * 2020", "x").unwrap();
    let r = why(&s, &TimeBase::Utc, &probe("2026-01-01"));
    assert_eq!(r.failed, ["year"]);
    assert_eq!(r.next_fire, None);
    assert_eq!(
        r.previous_fire.as_deref(),
        Some("2020-01-01T00:00:00+00:00")
    );
    // an impossible date never fires either way
    let s = Schedule::parse("0 0 30 2 *", "x").unwrap();
    let r = why(&s, &TimeBase::Utc, &probe("2026-02-28"));
    assert_eq!((r.previous_fire, r.next_fire), (None, None));
    assert_eq!(r.failed, ["day-of-month"]);
    // far beyond the horizon: still matches an unrestricted year
    let s = Schedule::parse("* * * * *", "x").unwrap();
    let r = why(
        &s,
        &TimeBase::Zone(Berlin),
        &probe("9999-12-31T23:59:00+14:00"),
    );
    assert!(r.matches);
    assert_eq!(r.next_fire, None);
    assert_eq!(
        r.previous_fire.as_deref(),
        Some("2099-12-31T23:59:00+01:00")
    );
    // and before the floor
    let r = why(&s, &TimeBase::Utc, &probe("0001-01-01T00:00Z"));
    assert!(r.matches);
    assert_eq!(r.previous_fire, None);
    // next search is bounded by the horizon; just check it is found
    assert!(r.next_fire.is_some());
}

#[test]
fn serializes_with_the_api_field_names() {
    let s = Schedule::parse("0 9 * * mon,fri", "weekday-report").unwrap();
    let v = serde_json::to_value(why(&s, &TimeBase::Utc, &probe("2026-07-14T09:00"))).unwrap();
    assert_eq!(
        v["checks"][5],
        serde_json::json!({"field": "day-of-week", "value": 2, "label": "Tuesday",
                           "allowed": "Monday and Friday", "matched": false})
    );
    assert_eq!(v["failed"], serde_json::json!(["day-of-week"]));
    assert!(v.get("resolved").is_none());
    let r = why(&Schedule::Reboot, &TimeBase::Utc, &probe("2026-07-14"));
    let v = serde_json::to_value(r).unwrap();
    assert_eq!(v["notes"][0]["level"], "note");
    assert_eq!(v["previous_fire"], serde_json::Value::Null);
    assert!(v.get("at_in_zone").is_none());
}

/// `matches` must be the engine's own verdict, and each day side must
/// agree with the combined day test, over a sweep of awkward schedules
/// and days.
#[test]
fn verdict_agrees_with_the_engine() {
    let exprs = [
        "* * * * *",
        "0 9 * * mon,fri",
        "0 0 13 * 5",
        "0 0 1,15W,L * mon#1,L5",
        "0 0 LW * 1-5",
        "0 0 L-3,31W * *",
        "0 0 */3 * sat-sun",
        "0 0 * * 0#5,6#1,l0-6",
        "0 0 * * l7-3",
        "*/20 */6 1-10 jan-jun * 2026-2027",
        "0 12 ? * mon 2026",
        "H H * * *",
    ];
    let start = wall("2025-12-25T00:00:00");
    for text in exprs {
        let e = cron(text);
        for step in 0..(24 * 90) {
            let at = start + Duration::minutes(step * 20 + step % 7);
            let v = explain(&e, at, &TimeBase::Utc);
            assert_eq!(v.matches, e.matches_civil(at), "{text} at {at}");
            let dom = row(&v, "day-of-month").matched;
            let dow = row(&v, "day-of-week").matched;
            let f = e.fields();
            assert_eq!(
                dom && dow,
                super::super::calendar::day_matches(f, at.year(), at.month(), at.day()),
                "{text} at {at}"
            );
            assert_eq!(
                v.failed.len(),
                v.checks.iter().filter(|c| !c.matched).count()
            );
        }
    }
}
