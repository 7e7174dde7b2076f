//! Engine-level tests: the public API on hand-checked dates, the DST policy
//! at real transitions, equality, and the object form.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use chrono_tz::America::New_York;
use chrono_tz::Tz;

use super::*;

fn expr(text: &str) -> CronExpr {
    CronExpr::parse(text, Some("job")).unwrap()
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

/// The instant of a wall time in `zone` (fold 0 for a repeated one).
fn wall(zone: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    let label = NaiveDate::from_ymd_opt(y, mo, d)
        .unwrap()
        .and_hms_opt(h, mi, 0)
        .unwrap();
    TimeBase::Zone(zone).resolve(label, Fold::Before)
}

const NY: TimeBase = TimeBase::Zone(New_York);

#[test]
fn schedule_kinds() {
    assert_eq!(Schedule::parse("@reboot", "j").unwrap(), Schedule::Reboot);
    assert_eq!(
        Schedule::parse("@reboot", "j").unwrap().canonical(),
        "@reboot"
    );
    assert!(Schedule::parse("@reboot", "j").unwrap().cron().is_none());
    let daily = Schedule::parse("@daily", "j").unwrap();
    assert_eq!(daily.cron().unwrap(), &expr("0 0 * * *"));
    assert_eq!(daily.canonical(), "@daily");
    // only the exact word is the reboot kind, as in the original
    assert!(Schedule::parse(" @reboot", "j").is_err());
    assert!(Schedule::parse("@REBOOT", "j").is_err());
    let midnight = Schedule::parse("@midnight", "j").unwrap_err();
    assert!(midnight.to_string().contains("@daily"), "{midnight}");
    for (name, same_as) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@hourly", "0 * * * *"),
        ("@Hourly", "0 * * * *"),
    ] {
        assert_eq!(expr(name), expr(same_as), "{name}");
    }
}

#[test]
fn texts_and_flags() {
    let e = expr("  */5   *  * * *  ");
    assert_eq!(e.canonical(), "*/5 * * * *");
    assert_eq!(e.to_string(), "*/5 * * * *");
    assert_eq!(e.resolved(), "*/5 * * * *");
    assert!(!e.is_hashed() && !e.has_seconds());
    assert!(expr("*/15 * * * * * *").has_seconds());
    assert!(!expr("0 0 1 1 * 2030").has_seconds());
    let h = CronExpr::parse("H H(2-6) * * H", Some("etl")).unwrap();
    assert!(h.is_hashed());
    let again: CronExpr = h.resolved().parse().unwrap();
    assert_eq!(h, again);
    assert!("H * * * *".parse::<CronExpr>().is_err());
}

#[test]
fn hash_slots_are_pinned() {
    let tab = CronExpr::parse("H H H H H", Some("report-gen")).unwrap();
    assert_eq!(tab.resolved(), "43 9 21 8 6");
    let tick = CronExpr::parse("H * * * * * *", Some("tick")).unwrap();
    assert_eq!(tick.fields().seconds, 1 << 9);
    let x = CronExpr::parse("H/15 * * * *", Some("x")).unwrap();
    assert_eq!(x.resolved(), "1,16,31,46 * * * *");
    // a hashed minute equals the plain spelling of the same minute
    let a = CronExpr::parse("H * * * *", Some("backup-db")).unwrap();
    let minute = a.fields().minutes.trailing_zeros();
    assert_eq!(a, expr(&format!("{minute} * * * *")));
}

fn hash_of(e: &CronExpr) -> u64 {
    let mut h = DefaultHasher::new();
    e.hash(&mut h);
    h.finish()
}

#[test]
fn equality_is_by_firing_set() {
    let equal = [
        ("*/5 * * * *", "0-59/5 * * * *"),
        ("0 0 * * 7", "0 0 * * 0"),
        ("0 0 * * sat-sun", "0 0 * * 6-7"),
        ("0 12 ? * ?", "0 12 * * *"),
        ("0 0 12 ? * mon *", "0 0 12 * * mon *"),
        ("0 0 * * fri#3", "0 0 * * 5#3"),
        ("0 0 * * 7#1", "0 0 * * 0#1"),
        ("0 * * * *", "0 0 * * * * *"),
        ("0 0 1 1 * *", "0 0 1 1 *"),
        // redundant special day forms
        ("0 0 * * 5,L5", "0 0 * * 5"),
        ("0 0 * * *,1#2", "0 0 * * *"),
        ("0 0 1-31,L * *", "0 0 * * *"),
        ("0 0 28-31,L * *", "0 0 28-31 * *"),
    ];
    for (a, b) in equal {
        let (ea, eb) = (expr(a), expr(b));
        assert_eq!(ea, eb, "{a} vs {b}");
        assert_eq!(hash_of(&ea), hash_of(&eb), "{a} vs {b}");
        assert_eq!(ea.normal_form(), eb.normal_form(), "{a} vs {b}");
    }
    let different = [
        ("*/5 * * * *", "0 0 * * *"),
        ("* * * * *", "* * * * * * *"),
        ("0 0 * * *", "0 0 * * * 2026"),
        ("0 0 * * 1,L5", "0 0 * * 1"),
        ("0 0 29-31,L * *", "0 0 29-31 * *"),
    ];
    for (a, b) in different {
        assert_ne!(expr(a), expr(b), "{a} vs {b}");
        assert_ne!(expr(a).normal_form(), expr(b).normal_form(), "{a} vs {b}");
    }
}

#[test]
fn next_is_strictly_future_with_microseconds() {
    let e = expr("* * * * *");
    let from = utc(2026, 1, 7, 12, 0, 30);
    assert_eq!(e.seconds_until_next(from, &TimeBase::Utc), Some(30.0));
    let micro = from + Duration::microseconds(500_000);
    assert_eq!(e.seconds_until_next(micro, &TimeBase::Utc), Some(29.5));
    // a matching "now" yields the following occurrence
    assert_eq!(
        e.next_after(utc(2026, 1, 7, 12, 1, 0), &TimeBase::Utc),
        Some(utc(2026, 1, 7, 12, 2, 0))
    );
    assert_eq!(
        expr("0 0 1 1 * 2020").next_after(from, &TimeBase::Utc),
        None
    );
}

#[test]
fn spring_forward_fires_once_at_the_shifted_time() {
    let e = expr("30 2 * * *");
    let start = wall(New_York, 2026, 3, 7, 12, 0);
    let fires: Vec<_> = e.occurrences(start, &NY).take(2).collect();
    assert_eq!(
        fires,
        vec![utc(2026, 3, 8, 7, 30, 0), utc(2026, 3, 9, 6, 30, 0)]
    );
    // the label the wall clock shows at that instant is 03:30 EDT
    assert_eq!(NY.label(fires[0]).format("%H:%M").to_string(), "03:30");
}

#[test]
fn fall_back_fires_on_the_first_pass_only() {
    let e = expr("30 1 * * *");
    let start = wall(New_York, 2026, 10, 31, 12, 0);
    let fires: Vec<_> = e.occurrences(start, &NY).take(2).collect();
    assert_eq!(
        fires,
        vec![utc(2026, 11, 1, 5, 30, 0), utc(2026, 11, 2, 6, 30, 0)]
    );
}

#[test]
fn second_pass_of_a_repeated_hour_does_not_replay_fires() {
    // 01:30 on the second pass (EST, 06:30Z): the first-pass fires are
    // behind us, the next is 02:00 EST
    let e = expr("*/15 * * * *");
    let second_pass = NY.resolve(
        NaiveDate::from_ymd_opt(2026, 11, 1)
            .unwrap()
            .and_hms_opt(1, 30, 0)
            .unwrap(),
        Fold::After,
    );
    assert_eq!(second_pass, utc(2026, 11, 1, 6, 30, 0));
    assert_eq!(
        e.next_after(second_pass, &NY),
        Some(utc(2026, 11, 1, 7, 0, 0))
    );
    let first_pass = utc(2026, 11, 1, 5, 30, 0);
    assert_eq!(
        e.next_after(first_pass, &NY),
        Some(utc(2026, 11, 1, 5, 45, 0))
    );
}

#[test]
fn a_gap_shifted_fire_is_not_lost_after_the_jump() {
    // "59 2" on 2015-03-08: the 02:59 label does not exist and fires at
    // 07:59Z; a start at 07:00Z (03:00 EDT) must still see it
    let e = expr("59 2 * * *");
    let fire = utc(2015, 3, 8, 7, 59, 0);
    let now = utc(2015, 3, 8, 7, 0, 0);
    assert_eq!(e.seconds_until_next(now, &NY), Some(3540.0));
    assert_eq!(e.prev_before(fire + Duration::seconds(1), &NY), Some(fire));
    assert_eq!(
        e.next_after(utc(2015, 3, 8, 8, 0, 0), &NY),
        Some(utc(2015, 3, 9, 6, 59, 0))
    );
}

#[test]
fn next_and_prev_agree_across_dst_edges() {
    for text in ["*/15 * * * *", "30 2 * * *", "59 2 * * *", "30 1 * * 0"] {
        let e = expr(text);
        for (y, m, d) in [(2026, 3, 8), (2026, 11, 1)] {
            for hour in 0..5 {
                for fold in [Fold::Before, Fold::After] {
                    let label = NaiveDate::from_ymd_opt(y, m, d)
                        .unwrap()
                        .and_hms_opt(hour, 10, 0)
                        .unwrap();
                    let now = NY.resolve(label, fold);
                    let Some(fire) = e.next_after(now, &NY) else {
                        continue;
                    };
                    assert!(fire > now);
                    assert_eq!(
                        e.prev_before(fire + Duration::seconds(1), &NY),
                        Some(fire),
                        "{text} from {label} {fold:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn prev_before_in_zones() {
    // 01:30 EDT fired at 05:30Z; from 03:00 EST (08:00Z) that is 2.5 h ago
    let e = expr("30 1 * * *");
    assert_eq!(
        e.prev_before(utc(2026, 11, 1, 8, 0, 0), &NY),
        Some(utc(2026, 11, 1, 5, 30, 0))
    );
    // the backward walk starts in the gap and must step past it
    let gap = expr("30 2 * * *");
    assert_eq!(
        gap.prev_before(wall(New_York, 2026, 3, 8, 4, 0), &NY),
        Some(utc(2026, 3, 8, 7, 30, 0))
    );
    let half = expr("*/30 * * * *");
    assert_eq!(
        half.prev_before(wall(New_York, 2026, 7, 18, 15, 47), &NY),
        Some(wall(New_York, 2026, 7, 18, 15, 30))
    );
    assert_eq!(
        expr("0 0 1 1 * 2030").prev_before(wall(New_York, 2026, 1, 1, 0, 0), &NY),
        None
    );
    assert_eq!(
        expr("* * * * *").prev_before(utc(1970, 1, 1, 0, 0, 0), &TimeBase::Utc),
        None
    );
    assert_eq!(
        expr("0 0 1 1 * 2020").prev_before(utc(2026, 1, 1, 0, 0, 0), &TimeBase::Utc),
        Some(utc(2020, 1, 1, 0, 0, 0))
    );
}

#[test]
fn prev_from_far_future_is_clamped_to_the_horizon() {
    let far = Utc.with_ymd_and_hms(9999, 1, 1, 0, 0, 0).unwrap();
    let last = expr("* * * * *").prev_before(far, &NY).unwrap();
    assert_eq!(
        NY.label(last).format("%Y-%m-%d %H:%M").to_string(),
        "2099-12-31 23:59"
    );
}

#[test]
fn occurrences_equal_stepping_next_across_dst() {
    for text in [
        "*/5 * * * *",
        "30 2 * * *",
        "0 0 l * *",
        "15 14 1 * *",
        "30 1 * * 0",
    ] {
        let e = expr(text);
        let start = wall(New_York, 2026, 3, 1, 12, 0);
        let got: Vec<_> = e.occurrences(start, &NY).take(120).collect();
        let mut stepped = Vec::new();
        let mut cursor = start;
        while stepped.len() < 120 {
            let Some(next) = e.next_after(cursor, &NY) else {
                break;
            };
            stepped.push(next);
            cursor = next;
        }
        assert_eq!(got, stepped, "{text}");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{text}");
    }
    let once: Vec<_> = expr("0 0 1 1 * 2027")
        .occurrences(utc(2026, 6, 1, 0, 0, 0), &TimeBase::Utc)
        .collect();
    assert_eq!(once, vec![utc(2027, 1, 1, 0, 0, 0)]);
    assert_eq!(
        expr("0 0 30 2 *")
            .occurrences(utc(2026, 6, 1, 0, 0, 0), &TimeBase::Utc)
            .count(),
        0
    );
}

#[test]
fn matches_reads_the_wall_clock_of_the_zone() {
    let e = expr("30 2 * * *");
    assert!(e.matches(wall(New_York, 2026, 1, 7, 2, 30), &NY));
    assert!(!e.matches(wall(New_York, 2026, 1, 7, 7, 30), &NY));
    assert!(e.matches(utc(2026, 1, 7, 2, 30, 0), &TimeBase::Utc));
    let berlin = TimeBase::Zone(chrono_tz::Europe::Berlin);
    assert!(e.matches(utc(2026, 1, 7, 1, 30, 0), &berlin));
}

#[test]
fn business_day_forms_through_the_api() {
    let first = expr("0 0 15W * fri").next_after(utc(2026, 1, 1, 0, 0, 0), &TimeBase::Utc);
    assert_eq!(first, Some(utc(2026, 5, 15, 0, 0, 0)));
    let third_friday = expr("0 0 * * 5#3");
    assert_eq!(
        third_friday.prev_before(utc(2026, 2, 1, 0, 0, 0), &TimeBase::Utc),
        Some(utc(2026, 1, 16, 0, 0, 0))
    );
    assert_eq!(
        expr("0 0 31W 4 *").next_after(utc(2026, 1, 1, 0, 0, 0), &TimeBase::Utc),
        None
    );
}

#[test]
fn year_horizon_and_leap_days() {
    let e = expr("0 0 29 2 *");
    assert_eq!(e.next_after(utc(2097, 3, 1, 0, 0, 0), &TimeBase::Utc), None);
    assert_eq!(
        e.next_after(utc(2095, 3, 1, 0, 0, 0), &TimeBase::Utc),
        Some(utc(2096, 2, 29, 0, 0, 0))
    );
    assert!(e.fires_after(utc(2026, 1, 1, 0, 0, 0), &TimeBase::Utc));
    assert!(!expr("0 0 1 1 * 2020").fires_after(utc(2026, 1, 1, 0, 0, 0), &TimeBase::Utc));
}

#[test]
fn object_form_assembles_like_the_original() {
    let five = ObjectForm {
        minute: Some("*/5"),
        ..ObjectForm::default()
    };
    assert_eq!(five.to_expression().unwrap(), "*/5 * * * *");
    let year = ObjectForm {
        minute: Some("*/5"),
        day_of_month: Some("19"),
        month: Some("7"),
        year: Some("2017"),
        ..ObjectForm::default()
    };
    assert_eq!(year.to_expression().unwrap(), "*/5 * 19 7 * 2017");
    let seconds = ObjectForm {
        second: Some("*/15"),
        ..ObjectForm::default()
    };
    assert_eq!(seconds.to_expression().unwrap(), "*/15 * * * * * *");
    let full = ObjectForm {
        second: Some("0"),
        minute: Some("1"),
        hour: Some("2"),
        day_of_month: Some("3"),
        month: Some("4"),
        day_of_week: Some("5"),
        year: Some("2030"),
    };
    assert_eq!(full.to_expression().unwrap(), "0 1 2 3 4 5 2030");
    let blank = ObjectForm {
        hour: Some(""),
        ..ObjectForm::default()
    };
    let err = blank.to_expression().unwrap_err();
    assert_eq!(err.field(), Some(Field::Hour));
    assert!(err.to_string().starts_with("schedule.hour:"), "{err}");
    let spaced = ObjectForm {
        day_of_week: Some("mon fri"),
        ..ObjectForm::default()
    };
    assert!(spaced
        .to_expression()
        .unwrap_err()
        .to_string()
        .contains("schedule.dayOfWeek"));
}

#[test]
fn half_hour_gap_follows_label_order() {
    // Lord Howe jumps 02:00 -> 02:30 on 2026-10-04 (15:30Z). The skipped
    // 02:20 is read with the old offset and fires at 15:50Z (02:50 on the
    // new clock); the real 02:40 (15:40Z) comes later in label order, and
    // by then its instant is already past, so that day it does not fire.
    // This is the original's policy, pinned here so a change is deliberate.
    let lh = TimeBase::Zone(chrono_tz::Australia::Lord_Howe);
    let e = expr("20,40 2 * * *");
    let fires: Vec<_> = e
        .occurrences(utc(2026, 10, 3, 15, 0, 0), &lh)
        .take(3)
        .collect();
    assert_eq!(
        fires,
        vec![
            utc(2026, 10, 3, 15, 50, 0),
            utc(2026, 10, 4, 15, 20, 0),
            utc(2026, 10, 4, 15, 40, 0)
        ]
    );
    assert_eq!(
        e.prev_before(utc(2026, 10, 3, 15, 50, 1), &lh),
        Some(fires[0])
    );
}

/// The dialect table in `docs/schedules.md` lists each form with its next
/// fires; this keeps the page true.
#[test]
fn documented_fires_are_what_the_engine_answers() {
    let page = include_str!("../../docs/schedules.md");
    let table = page
        .split("## The dialect at a glance")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the dialect table section exists");
    let from = utc(2026, 1, 7, 12, 0, 0);
    let mut rows = 0;
    for line in table
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains('`'))
    {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let [_, example, fires] = cells[..] else {
            panic!("row without three cells: {line}");
        };
        let text = example.trim_matches('`');
        let e = CronExpr::parse(text, Some("refresh-cache"))
            .unwrap_or_else(|err| panic!("{text}: {err}"));
        let got: Vec<String> = e
            .occurrences(from, &TimeBase::Utc)
            .take(3)
            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
            .collect();
        let want = if fires == "never" {
            String::new()
        } else {
            fires.to_owned()
        };
        assert_eq!(got.join(", "), want, "docs row for {text}");
        rows += 1;
    }
    assert!(rows >= 40, "only {rows} rows checked");
}

#[test]
fn expressions_past_the_length_cap_are_refused_before_parsing() {
    let padded = format!("* * * * *{}", " ".repeat(MAX_EXPRESSION_LEN - 9));
    assert_eq!(padded.len(), MAX_EXPRESSION_LEN);
    assert!(CronExpr::parse(&padded, None).is_ok());
    let over = format!("{padded} ");
    let err = CronExpr::parse(&over, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the expression is 4097 bytes long, more than the limit of 4096"
    );
    assert!(Schedule::parse(&"1,".repeat(1 << 20), "job").is_err());
    // Quoted in an error: short text as is, long text cut at 64 characters.
    assert_eq!(quotable("*/5 * * * *"), "*/5 * * * *");
    let long = "é".repeat(5000);
    assert_eq!(quotable(&long), format!("{}...", "é".repeat(64)));
}
