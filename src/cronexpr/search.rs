//! The civil (wall-clock) search: the first matching second strictly after
//! a wall time, and the last one strictly before.
//!
//! The search carries field by field, like an odometer: a year outside the
//! year column jumps to the next listed year, a month outside the month
//! column to the next listed month, then one bit-mask lookup finds the
//! matching days of that month and three more the time of day. It never
//! steps minute by minute, so a yearly schedule costs about as much as a
//! per-second one.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Timelike};

use super::calendar::{day_mask, day_matches, month_len};
use super::field::{first_bit, last_bit, next_bit, prev_bit, Fields, YEAR_FLOOR, YEAR_HORIZON};

/// A time of day as (hour, minute, second).
type Hms = (u32, u32, u32);

/// The earliest matching time of day at or after `floor` (`None` = from
/// midnight).
fn first_time(f: &Fields, floor: Option<Hms>) -> Option<Hms> {
    let (hours, minutes, seconds) = (u64::from(f.hours), f.minutes, f.seconds);
    let Some((h, m, s)) = floor else {
        return Some((first_bit(hours)?, first_bit(minutes)?, first_bit(seconds)?));
    };
    let hour = next_bit(hours, h)?;
    if hour > h {
        return Some((hour, first_bit(minutes)?, first_bit(seconds)?));
    }
    if let Some(minute) = next_bit(minutes, m) {
        if minute > m {
            return Some((h, minute, first_bit(seconds)?));
        }
        if let Some(second) = next_bit(seconds, s) {
            return Some((h, m, second));
        }
        if let Some(minute) = next_bit(minutes, m + 1) {
            return Some((h, minute, first_bit(seconds)?));
        }
    }
    let hour = next_bit(hours, h + 1)?;
    Some((hour, first_bit(minutes)?, first_bit(seconds)?))
}

/// The latest matching time of day at or before `ceiling` (`None` = up to
/// the end of the day).
fn last_time(f: &Fields, ceiling: Option<Hms>) -> Option<Hms> {
    let (hours, minutes, seconds) = (u64::from(f.hours), f.minutes, f.seconds);
    let Some((h, m, s)) = ceiling else {
        return Some((last_bit(hours)?, last_bit(minutes)?, last_bit(seconds)?));
    };
    let hour = prev_bit(hours, h)?;
    if hour < h {
        return Some((hour, last_bit(minutes)?, last_bit(seconds)?));
    }
    if let Some(minute) = prev_bit(minutes, m) {
        if minute < m {
            return Some((h, minute, last_bit(seconds)?));
        }
        if let Some(second) = prev_bit(seconds, s) {
            return Some((h, m, second));
        }
        if m > 0 {
            if let Some(minute) = prev_bit(minutes, m - 1) {
                return Some((h, minute, last_bit(seconds)?));
            }
        }
    }
    if h == 0 {
        return None;
    }
    let hour = prev_bit(hours, h - 1)?;
    Some((hour, last_bit(minutes)?, last_bit(seconds)?))
}

fn make(year: i32, month: u32, day: u32, t: Hms) -> Option<NaiveDateTime> {
    NaiveDate::from_ymd_opt(year, month, day)?.and_hms_opt(t.0, t.1, t.2)
}

/// Drops any sub-second part (a leap-second representation included).
fn floor_second(t: NaiveDateTime) -> NaiveDateTime {
    t.with_nanosecond(0).unwrap_or(t)
}

/// The smallest whole-second wall time strictly after `after` that matches
/// every column, or `None` when there is none up to the end of 2099.
pub(crate) fn next_civil(f: &Fields, after: NaiveDateTime) -> Option<NaiveDateTime> {
    if f.dow_empty() {
        return None;
    }
    let base = floor_second(after).checked_add_signed(Duration::seconds(1))?;
    let (mut year, mut month, mut day) = (base.year(), base.month(), base.day());
    let mut floor = Some((base.hour(), base.minute(), base.second()));
    while year <= YEAR_HORIZON {
        if let Some(years) = &f.years {
            if !years.contains(year) {
                year = years.at_or_after(year)?;
                (month, day, floor) = (1, 1, None);
                continue;
            }
        }
        match next_bit(u64::from(f.months), month) {
            None => {
                (year, month, day, floor) = (year + 1, 1, 1, None);
                continue;
            }
            Some(m) if m != month => (month, day, floor) = (m, 1, None),
            Some(_) => {}
        }
        let mask = u64::from(day_mask(f, year, month));
        let mut candidate = next_bit(mask, day);
        while let Some(d) = candidate {
            let t = if d == day { floor } else { None };
            if let Some(time) = first_time(f, t) {
                return make(year, month, d, time);
            }
            candidate = next_bit(mask, d + 1);
        }
        (month, day, floor) = (month + 1, 1, None);
        if month > 12 {
            (year, month) = (year + 1, 1);
        }
    }
    None
}

/// The largest whole-second wall time strictly before `before` that
/// matches every column, or `None` when there is none back to 1970.
pub(crate) fn prev_civil(f: &Fields, before: NaiveDateTime) -> Option<NaiveDateTime> {
    if f.dow_empty() {
        return None;
    }
    let floored = floor_second(before);
    let base = if floored < before {
        floored
    } else {
        floored.checked_sub_signed(Duration::seconds(1))?
    };
    let (mut year, mut month, mut day) = (base.year(), base.month(), base.day());
    let mut ceiling = Some((base.hour(), base.minute(), base.second()));
    while year >= YEAR_FLOOR {
        if let Some(years) = &f.years {
            if !years.contains(year) {
                year = years.at_or_before(year)?;
                (month, day, ceiling) = (12, 31, None);
                continue;
            }
        }
        match prev_bit(u64::from(f.months), month) {
            Some(m) if m >= 1 && m != month => (month, day, ceiling) = (m, 31, None),
            Some(m) if m >= 1 => {}
            _ => {
                (year, month, day, ceiling) = (year - 1, 12, 31, None);
                continue;
            }
        }
        let len = month_len(year, month);
        if day > len {
            (day, ceiling) = (len, None);
        }
        let mask = u64::from(day_mask(f, year, month));
        let mut candidate = prev_bit(mask, day);
        while let Some(d) = candidate {
            let t = if d == day { ceiling } else { None };
            if let Some(time) = last_time(f, t) {
                return make(year, month, d, time);
            }
            candidate = if d > 1 { prev_bit(mask, d - 1) } else { None };
        }
        (month, day, ceiling) = (month - 1, 31, None);
        if month < 1 {
            (year, month) = (year - 1, 12);
        }
    }
    None
}

/// Whether a wall time matches every column; sub-second parts are ignored.
/// The year column bounds only when present: an unrestricted year matches
/// any year, 2150 included (as in the original).
pub(crate) fn matches_civil(f: &Fields, t: NaiveDateTime) -> bool {
    let bit = |mask: u64, v: u32| mask >> v & 1 == 1;
    bit(f.seconds, t.second())
        && bit(f.minutes, t.minute())
        && bit(u64::from(f.hours), t.hour())
        && bit(u64::from(f.months), t.month())
        && f.years.as_ref().is_none_or(|y| y.contains(t.year()))
        && day_matches(f, t.year(), t.month(), t.day())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronexpr::parse::parse;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").unwrap()
    }

    fn next(expr: &str, from: &str) -> Option<String> {
        let f = parse(expr, None).unwrap().fields;
        next_civil(&f, at(from)).map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
    }

    fn prev(expr: &str, from: &str) -> Option<String> {
        let f = parse(expr, None).unwrap().fields;
        prev_civil(&f, at(from)).map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
    }

    #[test]
    fn next_is_strictly_after_and_whole_second() {
        assert_eq!(
            next("* * * * *", "2026-01-07T12:00:00").as_deref(),
            Some("2026-01-07T12:01:00")
        );
        assert_eq!(
            next("* * * * *", "2026-01-07T11:59:59").as_deref(),
            Some("2026-01-07T12:00:00")
        );
        assert_eq!(
            next("* * * * * * *", "2026-01-07T12:00:00.5").as_deref(),
            Some("2026-01-07T12:00:01")
        );
    }

    #[test]
    fn next_carries_through_time_day_month_year() {
        assert_eq!(
            next("0,30 9 * * *", "2026-07-18T09:15:00").as_deref(),
            Some("2026-07-18T09:30:00")
        );
        assert_eq!(
            next("0 9 * * 1-5", "2026-07-18T10:00:00").as_deref(),
            Some("2026-07-20T09:00:00")
        );
        assert_eq!(
            next("0 9 * * 1-5", "2026-08-30T10:00:00").as_deref(),
            Some("2026-08-31T09:00:00")
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-01-01T00:00:00").as_deref(),
            Some("2028-02-29T00:00:00")
        );
        assert_eq!(
            next("15-45/10 30 12 * * * *", "2026-01-07T12:30:45").as_deref(),
            Some("2026-01-08T12:30:15")
        );
        assert_eq!(
            next("0 0 15W * fri", "2026-01-01T00:00:00").as_deref(),
            Some("2026-05-15T00:00:00")
        );
        assert_eq!(
            next("0 0 1 1 * 2027", "2026-06-01T00:00:00").as_deref(),
            Some("2027-01-01T00:00:00")
        );
    }

    #[test]
    fn next_stops_at_the_horizon() {
        assert_eq!(next("* * * * *", "2099-12-31T23:59:30"), None);
        assert_eq!(next("0 0 30 2 *", "2026-01-01T00:00:00"), None);
        assert_eq!(next("0 0 1 1 * 2020", "2026-01-01T00:00:00"), None);
        assert_eq!(next("0 0 * * l7-3", "2026-01-01T00:00:00"), None);
        assert_eq!(
            next("59 59 23 31 12 * 2099", "2099-12-31T23:59:58").as_deref(),
            Some("2099-12-31T23:59:59")
        );
    }

    #[test]
    fn prev_mirrors_next() {
        assert_eq!(
            prev("30 9 * * *", "2026-07-18T09:30:00").as_deref(),
            Some("2026-07-17T09:30:00")
        );
        assert_eq!(
            prev("* * * * *", "2026-07-18T12:00:00.5").as_deref(),
            Some("2026-07-18T12:00:00")
        );
        assert_eq!(
            prev("0 0 1 6 *", "2026-03-01T00:00:00").as_deref(),
            Some("2025-06-01T00:00:00")
        );
        assert_eq!(
            prev("0 0 * 2 *", "2026-03-15T00:00:00").as_deref(),
            Some("2026-02-28T00:00:00")
        );
        assert_eq!(
            prev("0 0 15 * *", "2026-03-10T00:00:00").as_deref(),
            Some("2026-02-15T00:00:00")
        );
        assert_eq!(
            prev("0 0 15 1 *", "2026-01-10T00:00:00").as_deref(),
            Some("2025-01-15T00:00:00")
        );
        assert_eq!(
            prev("0,30 9 * * *", "2026-07-18T09:45:00").as_deref(),
            Some("2026-07-18T09:30:00")
        );
        assert_eq!(
            prev("0,30 8,12 * * * *", "2026-07-18T10:05:00").as_deref(),
            Some("2026-07-18T08:30:00")
        );
        assert_eq!(
            prev("0 9 * * 1-5", "2026-07-19T10:00:00").as_deref(),
            Some("2026-07-17T09:00:00")
        );
        assert_eq!(
            prev("0 9 * * 1-5", "2026-08-01T08:00:00").as_deref(),
            Some("2026-07-31T09:00:00")
        );
        assert_eq!(
            prev("0 0 1 1 * 2020", "2026-01-01T00:00:00").as_deref(),
            Some("2020-01-01T00:00:00")
        );
        assert_eq!(prev("0 0 1 1 * 2030", "2026-01-01T00:00:00"), None);
        assert_eq!(prev("* * * * *", "1970-01-01T00:00:00"), None);
    }

    #[test]
    fn matching_reads_civil_fields() {
        let f = parse("*/5 * * * *", None).unwrap().fields;
        assert!(matches_civil(&f, at("2026-01-07T12:05:00.5")));
        assert!(!matches_civil(&f, at("2026-01-07T12:05:15")));
        assert!(matches_civil(&f, at("2150-01-01T00:00:00")));
        let g = parse("0 0 1 1 * 2027", None).unwrap().fields;
        assert!(!matches_civil(&g, at("2030-01-01T00:00:00")));
    }
}
