//! Calendar arithmetic and the per-month day sets.
//!
//! The day columns depend on the month's shape (its length and the weekday
//! of its first day), so the search asks for one month's matching days at a
//! time, as a bit mask with bit `d` for day `d`.

use super::field::{Fields, ALL_DAYS};

/// Whether `year` is a Gregorian leap year.
pub(crate) fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// The number of days in `month` (1-12) of `year`.
pub(crate) fn month_len(year: i32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`), valid for every year the engine can reach.
fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The weekday of a date, cron numbering: Sunday = 0 .. Saturday = 6.
pub(crate) fn weekday(year: i32, month: u32, day: u32) -> u32 {
    // 1970-01-01 was a Thursday (4)
    u32::try_from((days_from_civil(year, month, day) + 4).rem_euclid(7)).unwrap_or(0)
}

/// The day a `W` item fires on for target day `target`: Saturday moves to
/// the Friday before and Sunday to the Monday after, turned inward at the
/// month's edges so the fire never leaves the month.
fn nearest_weekday(target: u32, first_weekday: u32, len: u32) -> u32 {
    match (first_weekday + target - 1) % 7 {
        6 if target > 1 => target - 1,
        6 => target + 2,
        0 if target < len => target + 1,
        0 => target - 2,
        _ => target,
    }
}

/// Bits 1..=len.
fn valid_days(len: u32) -> u32 {
    ALL_DAYS & (u32::MAX >> (31 - len))
}

/// The days of a month whose weekday is in `set` (bit 0 = Sunday), given
/// the weekday of the 1st.
fn weekday_days(set: u8, first_weekday: u32) -> u32 {
    let set = u64::from(set);
    // bit i of `week` is day i+1 of the first week
    let week = ((set >> first_weekday) | (set << (7 - first_weekday))) & 0x7F;
    let month = week | week << 7 | week << 14 | week << 21 | week << 28;
    u32::try_from((month << 1) & u64::from(ALL_DAYS)).unwrap_or(0)
}

/// The days of `month` in `year` on which both day columns match.
///
/// Day-of-month and day-of-week are ANDed, as in the original: an
/// unrestricted column already holds every value, so the AND leaves the
/// other column in charge (`0 0 13 * 5` is Friday the 13th, not Vixie
/// cron's "the 13th or any Friday").
pub(crate) fn day_mask(f: &Fields, year: i32, month: u32) -> u32 {
    let len = month_len(year, month);
    let valid = valid_days(len);
    let first = weekday(year, month, 1);
    let mut dom = f.dom & valid;
    let mut dow = weekday_days(f.dow, first);
    if !f.days_plain() {
        let mut offsets = f.dom_last;
        while offsets != 0 {
            let k = offsets.trailing_zeros();
            offsets &= offsets - 1;
            if k < len {
                dom |= 1 << (len - k);
            }
        }
        if f.dom_last_weekday {
            dom |= 1 << nearest_weekday(len, first, len);
        }
        let mut targets = f.dom_nearest;
        while targets != 0 {
            let n = targets.trailing_zeros();
            targets &= targets - 1;
            if n <= len {
                dom |= 1 << nearest_weekday(n, first, len);
            }
        }
        let last_weekday = (first + len - 1) % 7;
        for d in 0..7u32 {
            if f.dow_last >> d & 1 == 1 {
                dow |= 1 << (len - (last_weekday + 7 - d) % 7);
            }
            let nth = f.dow_nth[d as usize];
            if nth != 0 {
                let first_such = 1 + (d + 7 - first) % 7;
                for n in 1..=5u32 {
                    let day = first_such + 7 * (n - 1);
                    if nth >> n & 1 == 1 && day <= len {
                        dow |= 1 << day;
                    }
                }
            }
        }
    }
    dom & dow & valid
}

/// Whether one date satisfies both day columns, computed directly from the
/// definitions rather than through [`day_mask`]; the property tests use
/// the two as each other's check.
pub(crate) fn day_matches(f: &Fields, year: i32, month: u32, day: u32) -> bool {
    let len = month_len(year, month);
    if day == 0 || day > len {
        return false;
    }
    let first = weekday(year, month, 1);
    let wd = weekday(year, month, day);
    let dom_ok = f.dom >> day & 1 == 1
        || (len - day < 31 && f.dom_last >> (len - day) & 1 == 1)
        || (f.dom_last_weekday && day == nearest_weekday(len, first, len))
        || (1..=len).any(|n| f.dom_nearest >> n & 1 == 1 && nearest_weekday(n, first, len) == day);
    let dow_ok = f.dow >> wd & 1 == 1
        || (f.dow_last >> wd & 1 == 1 && day + 7 > len)
        || f.dow_nth[wd as usize] >> ((day - 1) / 7 + 1) & 1 == 1;
    dom_ok && dow_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronexpr::parse::parse;

    fn days(expr: &str, year: i32, month: u32) -> Vec<u32> {
        let f = parse(expr, None).unwrap().fields;
        let mask = day_mask(&f, year, month);
        (1..=31).filter(|d| mask >> d & 1 == 1).collect()
    }

    #[test]
    fn weekdays_and_lengths() {
        assert_eq!(weekday(1970, 1, 1), 4);
        assert_eq!(weekday(2026, 1, 11), 0); // a Sunday
        assert_eq!(weekday(2026, 2, 13), 5); // Friday the 13th
        assert_eq!(weekday(2000, 2, 29), 2);
        assert_eq!(month_len(2028, 2), 29);
        assert_eq!(month_len(2100, 2), 28);
        assert_eq!(month_len(2000, 2), 29);
        assert_eq!(month_len(2026, 4), 30);
    }

    #[test]
    fn business_day_forms_on_known_dates() {
        // 2026: Jan 31 is a Saturday, Feb 1 a Sunday, May 31 a Sunday,
        // Aug 1 a Saturday
        assert_eq!(days("0 0 LW * *", 2026, 1), vec![30]);
        assert_eq!(days("0 0 1W * *", 2026, 2), vec![2]);
        assert_eq!(days("0 0 1W * *", 2026, 8), vec![3]);
        assert_eq!(days("0 0 31W * *", 2026, 5), vec![29]);
        assert_eq!(days("0 0 31W * *", 2026, 4), Vec::<u32>::new());
        assert_eq!(days("0 0 17W * *", 2026, 1), vec![16]);
        assert_eq!(days("0 0 L-3 * *", 2026, 2), vec![25]);
        assert_eq!(days("0 0 L-30 * *", 2026, 1), vec![1]);
        assert_eq!(days("0 0 L-30 * *", 2026, 2), Vec::<u32>::new());
        assert_eq!(days("0 0 * * 5#3", 2026, 1), vec![16]);
        assert_eq!(days("0 0 * * 0#5", 2026, 3), vec![29]);
        assert_eq!(days("0 0 * * 0#5", 2026, 1), Vec::<u32>::new());
        assert_eq!(days("0 0 * * L5", 2026, 1), vec![30]);
        assert_eq!(days("0 0 * * mon#1,L5", 2026, 1), vec![5, 30]);
        assert_eq!(days("0 0 13 * 5", 2026, 2), vec![13]);
        assert_eq!(days("0 0 13 * 5", 2026, 1), Vec::<u32>::new());
    }

    #[test]
    fn mask_agrees_with_direct_test() {
        for expr in [
            "0 0 1,15W,L,l-3,LW * mon#1,L5,tue",
            "0 0 LW * 1-5",
            "0 0 */3 * sat-sun",
            "0 0 31W,1W,L-30 * *",
            "0 0 * * 0#5,6#1,l0-6",
        ] {
            let f = parse(expr, None).unwrap().fields;
            for year in [2024, 2026, 2027, 2100] {
                for month in 1..=12 {
                    let mask = day_mask(&f, year, month);
                    for day in 1..=31 {
                        assert_eq!(
                            mask >> day & 1 == 1,
                            day_matches(&f, year, month, day),
                            "{expr} {year}-{month}-{day}"
                        );
                    }
                }
            }
        }
    }
}
