//! The catch-up's arithmetic: owed launches and the jitter offset.

use super::*;
use crate::cronexpr::{CronExpr, TimeBase};
use chrono::TimeZone;

fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, h, m, s).unwrap()
}

fn every_minute() -> CronExpr {
    CronExpr::parse("* * * * *", None).unwrap()
}

#[test]
fn run_once_owes_one_launch_for_any_number_of_missed_fires() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 5, 30),
        None,
        OnMissed::RunOnce,
    );
    assert_eq!(owed.count, 1);
    assert_eq!(owed.newest, Some(at(10, 5, 0)));
    assert!(!owed.capped);
}

#[test]
fn nothing_is_owed_when_no_fire_fell_in_the_window() {
    for mode in [OnMissed::RunOnce, OnMissed::RunAll, OnMissed::Skip] {
        let owed = owed_fires(
            &every_minute(),
            &TimeBase::Utc,
            at(10, 0, 0),
            at(10, 0, 59),
            None,
            mode,
        );
        assert_eq!(owed.count, 0, "{mode:?}");
        assert_eq!(owed.newest, None, "{mode:?}");
    }
}

#[test]
fn the_recorded_fire_itself_is_not_owed_but_the_upper_bound_is() {
    // `after` is exclusive (that fire ran), `upto` inclusive (that
    // boundary was evaluated while another node should have led).
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 1, 0),
        None,
        OnMissed::RunAll,
    );
    assert_eq!(owed.count, 1);
    assert_eq!(owed.newest, Some(at(10, 1, 0)));
}

#[test]
fn run_all_owes_one_launch_per_missed_fire() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 7, 0),
        None,
        OnMissed::RunAll,
    );
    assert_eq!(owed.count, 7);
    assert_eq!(owed.newest, Some(at(10, 7, 0)));
}

#[test]
fn run_all_is_capped() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(0, 0, 0),
        at(9, 0, 0),
        None,
        OnMissed::RunAll,
    );
    assert_eq!(owed.count, MAX_CATCHUP);
    assert!(owed.capped);
    // The oldest fires are replayed first, as the original does.
    assert_eq!(owed.newest, Some(at(1, 40, 0)));
}

#[test]
fn the_starting_deadline_drops_older_fires() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 10, 0),
        Some(at(10, 7, 30)),
        OnMissed::RunAll,
    );
    assert_eq!(owed.count, 3, "10:08, 10:09, 10:10");
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 10, 0),
        Some(at(10, 10, 30)),
        OnMissed::RunOnce,
    );
    assert_eq!(owed.count, 0, "every missed fire is past the deadline");
    // A cutoff exactly on a fire keeps that fire.
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 10, 0),
        Some(at(10, 10, 0)),
        OnMissed::RunOnce,
    );
    assert_eq!(owed.count, 1);
}

#[test]
fn skip_owes_nothing() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(11, 0, 0),
        None,
        OnMissed::Skip,
    );
    assert_eq!(owed.count, 0);
}

#[test]
fn the_jitter_offset_is_stable_and_in_range() {
    assert_eq!(jitter_offset("backup", 0), Duration::ZERO);
    let one = jitter_offset("backup", 30);
    assert_eq!(one, jitter_offset("backup", 30));
    assert!(one < Duration::from_secs(30));
    let spread: HashSet<Duration> = (0..50)
        .map(|i| jitter_offset(&format!("job-{i}"), 30))
        .collect();
    assert!(
        spread.len() > 10,
        "offsets spread over the range: {spread:?}"
    );
}
