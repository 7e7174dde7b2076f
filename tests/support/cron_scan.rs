//! A reference for the cron engine's search, stated from first principles:
//! walk wall times one step at a time and read each with the rule the
//! manual gives for DST (a wall time in a gap or a fold is taken at its
//! fold-0 instant, the one with the offset in force before the change).
//!
//! Shared by the property tests (tests/cron_props.rs), the replay of the
//! fuzz seeds (tests/fuzz_regressions.rs) and the `cron_differential` fuzz
//! target, so all three judge the engine by the same reference.

#![allow(dead_code)]

use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone,
    Timelike, Utc,
};
use chrono_tz::Tz;
use cronstable::cronexpr::CronExpr;

/// The UTC offset of `zone` at the UTC instant `instant`, in seconds.
pub fn offset_at(zone: &Tz, instant: NaiveDateTime) -> i64 {
    i64::from(
        zone.offset_from_utc_datetime(&instant)
            .fix()
            .local_minus_utc(),
    )
}

/// The offset changes of `zone` during `year`, found by daily sampling.
pub fn transitions(zone: &Tz, year: i32) -> Vec<NaiveDateTime> {
    let mut out = Vec::new();
    let Some(start) = NaiveDate::from_ymd_opt(year, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0))
    else {
        return out;
    };
    let mut t = start;
    while t.year() == year {
        let next = t + Duration::days(1);
        if offset_at(zone, t) != offset_at(zone, next) {
            let (mut a, mut b) = (t, next);
            while (b - a).num_seconds() > 1 {
                let mid = a + Duration::seconds((b - a).num_seconds() / 2);
                if offset_at(zone, mid) == offset_at(zone, a) {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            out.push(b);
        }
        t = next;
    }
    out
}

/// The fold-0 instant of a wall time, stated from first principles.
pub fn fold0(zone: &Tz, label: NaiveDateTime) -> NaiveDateTime {
    match zone.offset_from_local_datetime(&label) {
        LocalResult::Single(o) => label - Duration::seconds(i64::from(o.fix().local_minus_utc())),
        LocalResult::Ambiguous(a, b) => {
            let (x, y) = (
                label - Duration::seconds(i64::from(a.fix().local_minus_utc())),
                label - Duration::seconds(i64::from(b.fix().local_minus_utc())),
            );
            x.min(y)
        }
        // in a gap: the offset in force a day earlier (before the jump)
        LocalResult::None => label - Duration::seconds(offset_at(zone, label - Duration::days(1))),
    }
}

/// Brute force: walk wall times from 26 hours before now's wall time, one
/// step at a time, and take the first that matches and whose fold-0 instant
/// is after now. `Err(end)` when nothing turned up before the wall time
/// `end`.
pub fn brute_next(
    expr: &CronExpr,
    zone: &Tz,
    now: DateTime<Utc>,
    window: Duration,
) -> Result<DateTime<Utc>, NaiveDateTime> {
    let now = now.naive_utc();
    let label = now + Duration::seconds(offset_at(zone, now));
    let step = if expr.has_seconds() {
        Duration::seconds(1)
    } else {
        Duration::minutes(1)
    };
    // first candidate: the step boundary after (label - 26h)
    let start = label - Duration::hours(26);
    let mut t = start.with_nanosecond(0).unwrap_or(start);
    if !expr.has_seconds() {
        t = t.with_second(0).unwrap_or(t);
    }
    while t <= start {
        t += step;
    }
    let end = label + window;
    while t <= end {
        if t.year() > 2099 {
            return Err(t);
        }
        if expr.matches_civil(t) {
            let instant = fold0(zone, t);
            if instant > now {
                return Ok(instant.and_utc());
            }
        }
        t += step;
    }
    Err(end)
}
