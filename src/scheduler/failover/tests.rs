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
        &[],
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
            &[],
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
        &[],
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
        &[],
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
        &[],
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
        &[],
    );
    assert_eq!(owed.count, 3, "10:08, 10:09, 10:10");
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 10, 0),
        Some(at(10, 10, 30)),
        OnMissed::RunOnce,
        &[],
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
        &[],
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
        &[],
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

/// What `owed_fires` must answer, by brute force: every fire in
/// `(after, upto]`, at or after `cutoff`, outside every window.
fn oracle(
    expr: &CronExpr,
    after: DateTime<Utc>,
    upto: DateTime<Utc>,
    cutoff: Option<DateTime<Utc>>,
    mode: OnMissed,
    excused: &[Excused],
) -> Owed {
    let mut fires = Vec::new();
    let mut cursor = after;
    while let Some(next) = expr.next_after(cursor, &TimeBase::Utc) {
        if next > upto {
            break;
        }
        cursor = next;
        if cutoff.is_some_and(|c| next < c) || excused.iter().any(|w| w.covers(next)) {
            continue;
        }
        fires.push(next);
    }
    match mode {
        OnMissed::Skip => Owed {
            count: 0,
            newest: None,
            capped: false,
        },
        OnMissed::RunOnce => Owed {
            count: u32::from(!fires.is_empty()),
            newest: fires.last().copied(),
            capped: false,
        },
        OnMissed::RunAll => {
            let kept = fires.len().min(MAX_CATCHUP as usize);
            Owed {
                count: kept as u32,
                newest: kept.checked_sub(1).map(|i| fires[i]),
                capped: fires.len() > MAX_CATCHUP as usize,
            }
        }
    }
}

fn span(since: DateTime<Utc>, until: DateTime<Utc>) -> Excused {
    Excused { since, until }
}

/// Every window (and every pair of windows) on a grid around a ten-minute
/// gap, every mode, with and without a deadline, for two schedules:
/// `owed_fires` matches the brute-force answer in each case.
#[test]
fn pause_windows_excuse_exactly_the_fires_inside_them() {
    let after = at(10, 0, 0);
    let cutoffs = [None, Some(at(10, 4, 30)), Some(at(10, 6, 0))];
    let uptos = [at(10, 0, 0), at(10, 5, 0), at(10, 10, 0), at(10, 10, 20)];
    let grid = |step: i64| -> Vec<DateTime<Utc>> {
        (0..)
            .map(|i| at(9, 59, 0) + ChronoDuration::seconds(i * step))
            .take_while(|t| *t <= at(10, 11, 0))
            .collect()
    };
    let singles: Vec<Excused> = {
        let points = grid(30);
        points
            .iter()
            .flat_map(|&s| {
                points
                    .iter()
                    .filter(move |&&u| u > s)
                    .map(move |&u| span(s, u))
            })
            .collect()
    };
    let pairs: Vec<Vec<Excused>> = {
        let points = grid(90);
        let windows: Vec<Excused> = points
            .iter()
            .flat_map(|&s| {
                points
                    .iter()
                    .filter(move |&&u| u > s)
                    .map(move |&u| span(s, u))
            })
            .collect();
        windows
            .iter()
            .flat_map(|a| windows.iter().map(move |b| vec![*a, *b]))
            .collect()
    };
    let sets: Vec<Vec<Excused>> = std::iter::once(Vec::new())
        .chain(singles.into_iter().map(|w| vec![w]))
        .chain(pairs)
        .collect();
    let mut checked = 0;
    for text in ["* * * * *", "*/3 * * * *"] {
        let expr = CronExpr::parse(text, None).unwrap();
        for excused in &sets {
            for &upto in &uptos {
                for &cutoff in &cutoffs {
                    for mode in [OnMissed::RunOnce, OnMissed::RunAll] {
                        let got =
                            owed_fires(&expr, &TimeBase::Utc, after, upto, cutoff, mode, excused);
                        let want = oracle(&expr, after, upto, cutoff, mode, excused);
                        assert_eq!(
                            got, want,
                            "{text} {mode:?} upto {upto} cutoff {cutoff:?} windows {excused:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 20_000, "{checked}");
}

#[test]
fn run_once_owes_nothing_when_every_missed_fire_was_paused() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 5, 30),
        None,
        OnMissed::RunOnce,
        &[span(at(9, 0, 0), at(10, 5, 30))],
    );
    assert_eq!(owed.count, 0);
    // A fire before the window is still owed: the window is not a floor.
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 5, 30),
        None,
        OnMissed::RunOnce,
        &[span(at(10, 1, 30), at(10, 6, 0))],
    );
    assert_eq!((owed.count, owed.newest), (1, Some(at(10, 1, 0))));
    // A fire exactly on `until` is owed.
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 5, 30),
        None,
        OnMissed::RunOnce,
        &[span(at(10, 0, 30), at(10, 5, 0))],
    );
    assert_eq!((owed.count, owed.newest), (1, Some(at(10, 5, 0))));
}

#[test]
fn run_all_owes_only_the_fires_outside_the_windows_and_caps_those() {
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(10, 0, 0),
        at(10, 10, 0),
        None,
        OnMissed::RunAll,
        &[
            span(at(10, 1, 30), at(10, 4, 0)),
            span(at(10, 7, 0), at(10, 9, 0)),
        ],
    );
    // 10:01, 10:04, 10:05, 10:06, 10:09, 10:10.
    assert_eq!(owed.count, 6);
    assert_eq!(owed.newest, Some(at(10, 10, 0)));
    // The cap counts owed fires only: 150 minutes with the first hour
    // paused leave 90 owed, under the cap.
    let owed = owed_fires(
        &every_minute(),
        &TimeBase::Utc,
        at(8, 0, 0),
        at(10, 30, 0),
        None,
        OnMissed::RunAll,
        &[span(at(8, 0, 30), at(9, 0, 30))],
    );
    assert_eq!((owed.count, owed.capped), (90, false));
}

#[test]
fn a_week_long_pause_of_a_per_second_job_is_stepped_over_at_once() {
    let every_second = CronExpr::parse("* * * * * * *", None).unwrap();
    let from = at(0, 0, 0);
    let until = from + ChronoDuration::days(7);
    let started = std::time::Instant::now();
    let owed = owed_fires(
        &every_second,
        &TimeBase::Utc,
        from,
        until + ChronoDuration::seconds(4),
        None,
        OnMissed::RunAll,
        &[span(from, until)],
    );
    // `until` itself and the four seconds after it.
    assert_eq!(owed.count, 5);
    assert_eq!(owed.newest, Some(until + ChronoDuration::seconds(4)));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the window is jumped, not walked: {:?}",
        started.elapsed()
    );
}

#[test]
fn pause_windows_follow_the_jobs_time_zone() {
    // 02:30 Europe/Berlin on the spring-forward day does not exist; the
    // fire shifts to 03:00 local (01:00 UTC). A window covering that
    // instant excuses it.
    let tz = TimeBase::Zone("Europe/Berlin".parse().unwrap());
    let expr = CronExpr::parse("30 2 * * *", None).unwrap();
    let day = |d: u32, h: u32, m: u32| Utc.with_ymd_and_hms(2026, 3, d, h, m, 0).unwrap();
    let plain = owed_fires(
        &expr,
        &tz,
        day(28, 12, 0),
        day(30, 12, 0),
        None,
        OnMissed::RunAll,
        &[],
    );
    assert_eq!(plain.count, 2);
    let shifted = expr.next_after(day(28, 12, 0), &tz).unwrap();
    let owed = owed_fires(
        &expr,
        &tz,
        day(28, 12, 0),
        day(30, 12, 0),
        None,
        OnMissed::RunAll,
        &[span(shifted, shifted + ChronoDuration::minutes(1))],
    );
    assert_eq!(owed.count, 1);
    assert_eq!(owed.newest, Some(day(30, 0, 30)), "02:30 CEST");
}
