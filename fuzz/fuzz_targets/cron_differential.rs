//! A second opinion on the search: for an expression without seconds,
//! `next_after` and `prev_before` in UTC must agree with a plain scan of
//! every minute over an 8-day window (the expression's own `matches` is
//! the judge of each minute). A disagreement is a crash.
//!
//! Input: `expression [\0 hash-key [\0 instant(8 bytes LE)]]`.
#![no_main]

use chrono::{DateTime, Duration, DurationRound, TimeZone, Utc};
use cronstable::cronexpr::{CronExpr, TimeBase};
use libfuzzer_sys::fuzz_target;

/// How far the scan looks either way, in minutes (8 days).
const WINDOW_MINUTES: i64 = 8 * 24 * 60;
/// Instants are drawn from 1970-01-09 to 2099-12-23, so both scans stay
/// inside the engine's 1970..=2099 range (past it the engine answers
/// `None` by design while `matches` may still say yes).
const FIRST: i64 = 8 * 86_400;
const LAST: i64 = 4_102_444_800 - 9 * 86_400;

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
    check_next(&cron, at);
    check_prev(&cron, at);
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
