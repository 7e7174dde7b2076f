//! A second opinion on the search, for expressions without seconds:
//!
//! - `next_after` in a zone chosen by the input (UTC, America/New_York,
//!   Europe/Berlin, Australia/Lord_Howe with its 30-minute shift,
//!   America/Sao_Paulo with its midnight transitions) must agree with a
//!   walk over wall times, minute by minute, that reads each wall time with
//!   the manual's DST rule (the reference in tests/support/cron_scan.rs,
//!   which the property tests use too);
//! - `next_after` and `prev_before` in UTC must agree with a plain scan of
//!   every minute over an 8-day window (the expression's own `matches` is
//!   the judge of each minute).
//!
//! A disagreement is a crash.
//!
//! Input: `expression [\0 hash-key [\0 tail]]`; the tail's first 8 bytes
//! (little-endian) pick the instant, its 9th byte the zone, and its 10th,
//! when present and odd, moves the instant next to one of the zone's
//! offset changes that year (random instants rarely land on a DST night).
#![no_main]

use chrono::{DateTime, Datelike, Duration, DurationRound, TimeZone, Utc};
use chrono_tz::Tz;
use cronstable::cronexpr::{CronExpr, TimeBase};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/cron_scan.rs"]
mod cron_scan;

/// How far the scan looks either way, in minutes (8 days).
const WINDOW_MINUTES: i64 = 8 * 24 * 60;
/// Instants are drawn from 1970-01-09 to 2099-12-23, so both scans stay
/// inside the engine's 1970..=2099 range (past it the engine answers
/// `None` by design while `matches` may still say yes).
const FIRST: i64 = 8 * 86_400;
const LAST: i64 = 4_102_444_800 - 9 * 86_400;
/// The zones the tail's 9th byte selects from (UTC without one).
const ZONES: [Tz; 5] = [
    chrono_tz::UTC,
    chrono_tz::America::New_York,
    chrono_tz::Europe::Berlin,
    chrono_tz::Australia::Lord_Howe,
    chrono_tz::America::Sao_Paulo,
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let expr = parts.next().unwrap_or_default();
    let key = parts.next().unwrap_or("job");
    let tail = parts.next().map(str::as_bytes).unwrap_or_default();

    let Ok(cron) = CronExpr::parse(expr, Some(key)) else {
        return;
    };
    if cron.has_seconds() {
        return;
    }
    let at = pick_instant(tail);
    let zone = ZONES[usize::from(tail.get(8).copied().unwrap_or(0)) % ZONES.len()];
    let at = match tail.get(9) {
        Some(b) if b % 2 == 1 => near_transition(zone, at, *b),
        _ => at,
    };
    check_next(&cron, at);
    check_prev(&cron, at);
    check_next_in_zone(&cron, zone, at);
});

/// The instant the tail selects (a fixed default when it is short), with
/// an odd number of seconds past the minute unless the tail says otherwise.
fn pick_instant(tail: &[u8]) -> DateTime<Utc> {
    let default = Utc.timestamp_opt(1_774_744_217, 0).single();
    let Some(default) = default else {
        unreachable!("a fixed, valid instant")
    };
    if tail.len() < 8 {
        return default;
    }
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&tail[..8]);
    let secs = FIRST + i64::from_le_bytes(raw).rem_euclid(LAST - FIRST);
    DateTime::from_timestamp(secs, 0).unwrap_or(default)
}

/// `at` moved to within about two hours of one of the zone's offset
/// changes in its year (unchanged when the zone has none that year).
fn near_transition(zone: Tz, at: DateTime<Utc>, pick: u8) -> DateTime<Utc> {
    let list = cron_scan::transitions(&zone, at.year());
    if list.is_empty() {
        return at;
    }
    let change = list[usize::from(pick / 2) % list.len()];
    // from 128 minutes before the change to 126 after, plus the original
    // instant's seconds
    let shift = Duration::minutes(i64::from(pick / 2 % 128) * 2 - 128);
    let moved = (change + shift).and_utc() + Duration::seconds(at.timestamp().rem_euclid(60));
    if (FIRST..LAST).contains(&moved.timestamp()) {
        moved
    } else {
        at
    }
}

/// `next_after` in `zone` against the wall-time walk over 8 days.
fn check_next_in_zone(cron: &CronExpr, zone: Tz, at: DateTime<Utc>) {
    let base = TimeBase::Zone(zone);
    let got = cron.next_after(at, &base);
    match cron_scan::brute_next(cron, &zone, at, Duration::minutes(WINDOW_MINUTES)) {
        Ok(want) => assert_eq!(
            got,
            Some(want),
            "next_after({at}) of {:?} in {}: the wall-time walk says {want}",
            cron.canonical(),
            zone.name()
        ),
        Err(end) => {
            // Nothing within the walk: the engine must not know of a fire
            // inside it either (allowing for a DST shift at the edge).
            if let Some(got) = got {
                assert!(
                    base.label(got) > end - Duration::hours(26),
                    "next_after({at}) of {:?} in {} = {got}, inside the walk that found nothing",
                    cron.canonical(),
                    zone.name()
                );
            }
        }
    }
    if let Some(fire) = got {
        assert!(fire > at, "next_after({at}) in {} = {fire}", zone.name());
    }
}

fn minute_floor(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::minutes(1)).unwrap_or(at)
}

fn check_next(cron: &CronExpr, at: DateTime<Utc>) {
    let start = minute_floor(at) + Duration::minutes(1);
    let end = start + Duration::minutes(WINDOW_MINUTES);
    let expected = (0..WINDOW_MINUTES)
        .map(|i| start + Duration::minutes(i))
        .find(|m| cron.matches(*m, &TimeBase::Utc));
    let got = cron.next_after(at, &TimeBase::Utc);
    match expected {
        Some(want) => assert_eq!(
            got,
            Some(want),
            "next_after({at}) of {:?}: scan says {want}",
            cron.canonical()
        ),
        None => assert!(
            got.is_none_or(|g| g >= end),
            "next_after({at}) of {:?} = {got:?}, but the scan found nothing before {end}",
            cron.canonical()
        ),
    }
}

fn check_prev(cron: &CronExpr, at: DateTime<Utc>) {
    let floor = minute_floor(at);
    // Strictly before: a whole-minute instant is not its own predecessor.
    let start = if floor == at {
        floor - Duration::minutes(1)
    } else {
        floor
    };
    let end = start - Duration::minutes(WINDOW_MINUTES);
    let expected = (0..WINDOW_MINUTES)
        .map(|i| start - Duration::minutes(i))
        .find(|m| cron.matches(*m, &TimeBase::Utc));
    let got = cron.prev_before(at, &TimeBase::Utc);
    match expected {
        Some(want) => assert_eq!(
            got,
            Some(want),
            "prev_before({at}) of {:?}: scan says {want}",
            cron.canonical()
        ),
        None => assert!(
            got.is_none_or(|g| g <= end),
            "prev_before({at}) of {:?} = {got:?}, but the scan found nothing after {end}",
            cron.canonical()
        ),
    }
}
