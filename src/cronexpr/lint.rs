//! Advisory findings about expressions the parser accepted.
//!
//! The parser rejects what cannot be read; the linter flags what reads fine
//! but probably does not mean what its author thinks. Codes and levels are
//! those of the original (`never-fires`, `day-fields-both-restricted`,
//! `uneven-step`, `skipped-months`, `leap-day-only`, `dst-skipped-time`,
//! `dst-repeated-time`, `hashed-slot`), so API clients keyed on them keep
//! working.

use std::collections::HashMap;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, Utc};
use serde::Serialize;

use super::expr::CronExpr;
use super::field::{Fields, ALL_DAYS, ALL_WEEKDAYS};
use super::parse::{macro_expansion, split_fields};
use super::tz::{self, TimeBase, WallKind};

/// How loud a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LintLevel {
    /// A probable mistake; logged at WARNING.
    Warning,
    /// Deliberate schedules do this too, but know what it does; logged at
    /// INFO.
    Note,
}

impl LintLevel {
    /// `"warning"` or `"note"`, as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            LintLevel::Warning => "warning",
            LintLevel::Note => "note",
        }
    }
}

/// One finding: a stable code, a level, and a self-contained sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintFinding {
    /// Stable identifier, e.g. `"never-fires"`.
    pub code: &'static str,
    /// Warning or note.
    pub level: LintLevel,
    /// One line of plain text, fit for a log line.
    pub message: String,
}

fn finding(code: &'static str, level: LintLevel, message: String) -> LintFinding {
    LintFinding {
        code,
        level,
        message,
    }
}

/// Month names by number (index 0 unused).
pub(super) const MONTH_NAMES: [&str; 13] = [
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Weekday names by number, Sunday first (the engine's 0).
pub(super) const WEEKDAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The longest each month can be (February with its leap day).
const MONTH_MAX: [u32; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// "a", "a and b", "a, b and c".
fn list_join(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {}", init.join(", "), last),
    }
}

/// Lints many expressions against one "now", remembering each zone's
/// transitions for the year ahead so a load of thousands of zoned jobs scans
/// each zone once. Holds no clock: `now` is given.
#[derive(Debug)]
pub struct Linter {
    now: DateTime<Utc>,
    zones: HashMap<chrono_tz::Tz, ZoneYear>,
}

impl Linter {
    /// A linter judging "future" and "the year ahead" from `now`.
    pub fn new(now: DateTime<Utc>) -> Linter {
        Linter {
            now,
            zones: HashMap::new(),
        }
    }

    /// The findings for `expr` evaluated in `tz`; see [`CronExpr::lint`].
    pub fn lint(&mut self, expr: &CronExpr, tz: &TimeBase) -> Vec<LintFinding> {
        let now = self.now;
        let mut out = Vec::new();
        if expr.is_hashed() {
            out.push(finding(
                "hashed-slot",
                LintLevel::Note,
                format!(
                    "'H' resolves to '{}' for this job; the slot is derived from the job \
                     name, so restarts and reloads keep it, but renaming the job moves it",
                    expr.resolved()
                ),
            ));
        }
        let dead = expr.next_after(now, tz).is_none();
        if dead {
            out.push(finding(
                "never-fires",
                LintLevel::Warning,
                expr.never_fires_message(),
            ));
        }
        out.extend(day_fields(expr.fields()));
        out.extend(uneven_steps(expr.canonical()));
        if !dead {
            out.extend(month_lengths(expr.fields()));
            // hours all selected fire straight through a transition
            if let (TimeBase::Zone(zone), true) = (tz, expr.fields().hours.count_ones() < 24) {
                let year = self
                    .zones
                    .entry(*zone)
                    .or_insert_with(|| ZoneYear::scan(zone, now));
                out.extend(dst_notes(expr, zone.name(), year));
            }
        }
        out
    }
}

impl CronExpr {
    /// Findings for this expression evaluated in `tz`, judged from `now`
    /// (which fixes "future" for `never-fires` and the year scanned for DST
    /// transitions, so results are reproducible). To lint many expressions,
    /// a [`Linter`] shares the zone scans between them.
    ///
    /// The DST notes need zone rules, so they are produced only for an IANA
    /// zone ([`TimeBase::Zone`]); UTC never transitions, and host local
    /// time is left alone so findings do not depend on the machine.
    pub fn lint(&self, tz: &TimeBase, now: DateTime<Utc>) -> Vec<LintFinding> {
        Linter::new(now).lint(self, tz)
    }

    fn never_fires_message(&self) -> String {
        if let Some(years) = self.years() {
            // blame the year column only when the expression did fire in
            // some listed year ("0 0 1 1 * 2020"), not when its date never
            // exists at all ("0 0 30 2 * 2099")
            let epoch = NaiveDate::from_ymd_opt(1969, 12, 31).and_then(|d| d.and_hms_opt(0, 0, 0));
            if let (Some(epoch), Some(last)) = (epoch, years.max()) {
                if self.next_civil(epoch).is_some() {
                    return format!(
                        "no future occurrence: the year column ends at {last}, so this \
                         schedule will never fire again"
                    );
                }
            }
        }
        "no future occurrence: no real date satisfies the day, month and weekday fields \
         together, so this schedule will never fire"
            .to_owned()
    }
}

/// Both day columns restricted: here a day must satisfy both, where Vixie
/// cron fires when either matches.
fn day_fields(f: &Fields) -> Option<LintFinding> {
    // a column whose plain values cover everything matches every day
    // whatever special forms ride along; a column of only special forms has
    // no plain values and so counts as restricted
    let dom_restricted = f.dom & ALL_DAYS != ALL_DAYS;
    let dow_restricted = f.dow & ALL_WEEKDAYS != ALL_WEEKDAYS;
    (dom_restricted && dow_restricted).then(|| {
        finding(
            "day-fields-both-restricted",
            LintLevel::Warning,
            "day-of-month and day-of-week are both restricted, and here a day has to \
             match BOTH ('0 0 13 * 5' means Friday the 13th); classic Vixie cron fires \
             when either one matches, so a line copied from a system crontab runs less \
             often here"
                .to_owned(),
        )
    })
}

/// `*/n` (and `H/n`) steps that do not divide their column's span leave a
/// short interval at the wrap; any day-of-month step restarts every month.
fn uneven_steps(canonical: &str) -> Vec<LintFinding> {
    let low = canonical.to_lowercase();
    let text = macro_expansion(&low).unwrap_or(&low);
    let columns = split_fields(text);
    let labels: &[(&str, u32, &str)] = if columns.len() == 7 {
        &[
            ("second", 60, "seconds"),
            ("minute", 60, "minutes"),
            ("hour", 24, "hours"),
            ("day-of-month", 0, "days"),
            ("month", 12, "months"),
            ("day-of-week", 7, "days"),
        ]
    } else {
        // a 6th column is the year, which never wraps
        &[
            ("minute", 60, "minutes"),
            ("hour", 24, "hours"),
            ("day-of-month", 0, "days"),
            ("month", 12, "months"),
            ("day-of-week", 7, "days"),
        ]
    };
    let mut out = Vec::new();
    for ((label, span, unit), column) in labels.iter().zip(&columns) {
        for item in column.split(',') {
            let Some((head, step_text)) = item.split_once('/') else {
                continue;
            };
            if !matches!(head, "*" | "h")
                || step_text.is_empty()
                || !step_text.bytes().all(|b| b.is_ascii_digit())
            {
                continue;
            }
            let step: u32 = step_text.parse().unwrap_or(0);
            if step <= 1 {
                continue;
            }
            if *label == "day-of-month" {
                out.push(finding(
                    "uneven-step",
                    LintLevel::Note,
                    format!(
                        "'{item}' in the day-of-month field starts again at day 1 each \
                         month, and month lengths differ, so the gap between runs changes \
                         at month ends"
                    ),
                ));
                continue;
            }
            if span % step != 0 {
                let gap = span - ((span - 1) / step) * step;
                let unit = if gap == 1 {
                    &unit[..unit.len() - 1]
                } else {
                    unit
                };
                out.push(finding(
                    "uneven-step",
                    LintLevel::Warning,
                    format!(
                        "'{item}' in the {label} field: {step} does not divide the field's \
                         span of {span}, so the interval across the wrap is only {gap} {unit}"
                    ),
                ));
            }
        }
    }
    out
}

/// Selected days that some selected month is too short to reach, and
/// February schedules that only a leap year can satisfy.
fn month_lengths(f: &Fields) -> Vec<LintFinding> {
    // bare L and LW land in every month
    if f.dom_last & 1 == 1 || f.dom_last_weekday {
        return Vec::new();
    }
    let day_like = f.dom | f.dom_nearest;
    if (day_like == 0 && f.dom_last == 0) || f.dom & ALL_DAYS == ALL_DAYS {
        return Vec::new();
    }
    let dmin = (day_like != 0).then(|| day_like.trailing_zeros());
    let omin = (f.dom_last != 0).then(|| f.dom_last.trailing_zeros());
    let reachable = |month: usize| {
        let longest = MONTH_MAX[month];
        dmin.is_some_and(|d| d <= longest) || omin.is_some_and(|o| o < longest)
    };
    let months: Vec<usize> = (1..=12).filter(|m| f.months >> m & 1 == 1).collect();
    let skipped: Vec<usize> = months.iter().copied().filter(|&m| !reachable(m)).collect();
    let mut out = Vec::new();
    if !skipped.is_empty() {
        let mut reasons = Vec::new();
        if let Some(d) = dmin {
            reasons.push(format!("the smallest selected day of month is {d}"));
        }
        if let Some(o) = omin {
            reasons.push(format!("the smallest 'L-' offset counts back {o} days"));
        }
        let names: Vec<&str> = skipped.iter().map(|&m| MONTH_NAMES[m]).collect();
        out.push(finding(
            "skipped-months",
            LintLevel::Warning,
            format!(
                "{}, out of reach in {}; {} skipped entirely",
                reasons.join(" and "),
                list_join(&names),
                if skipped.len() == 1 {
                    "that month is"
                } else {
                    "those months are"
                }
            ),
        ));
    }
    if months.contains(&2) && !skipped.contains(&2) {
        // fires in a leap February but never in a common one
        let fires_common = dmin.is_some_and(|d| d <= 28) || omin.is_some_and(|o| o <= 27);
        if !fires_common {
            out.push(finding(
                "leap-day-only",
                LintLevel::Note,
                "in February only the leap-day 29th lets the selected days land, so the \
                 February runs happen in leap years only"
                    .to_owned(),
            ));
        }
    }
    out
}

/// One transition's disturbed wall times: labels in `[start, end)` are
/// skipped (a gap) or repeated (a fold).
#[derive(Debug)]
struct Window {
    start: NaiveDateTime,
    end: NaiveDateTime,
    kind: WallKind,
}

/// What the transitions in `windows` make of a wall time.
fn kind_of(windows: &[Window], label: NaiveDateTime) -> WallKind {
    windows
        .iter()
        .find(|w| w.start <= label && label < w.end)
        .map_or(WallKind::Normal, |w| w.kind)
}

/// One zone's transitions in the year after "now": their windows of
/// disturbed wall times, and the days whose local midnight changes offset.
#[derive(Debug)]
struct ZoneYear {
    windows: Vec<Window>,
    days: Vec<NaiveDate>,
}

impl ZoneYear {
    fn scan(zone: &chrono_tz::Tz, now: DateTime<Utc>) -> ZoneYear {
        let day0 = tz::label_of(zone, now.naive_utc()).date();
        let last = day0 + Duration::days(366);
        let (Some(scan_from), Some(scan_to)) = (
            (day0 - Duration::days(2)).and_hms_opt(0, 0, 0),
            (last + Duration::days(2)).and_hms_opt(0, 0, 0),
        ) else {
            return ZoneYear {
                windows: Vec::new(),
                days: Vec::new(),
            };
        };
        let instants = tz::transitions(zone, scan_from, scan_to);
        // each transition's window of wall times: the labels between the
        // two readings of the transition instant
        let windows = instants
            .iter()
            .map(|&t| {
                let before = Duration::seconds(tz::offset_at(zone, t - Duration::seconds(1)));
                let after = Duration::seconds(tz::offset_at(zone, t));
                if after > before {
                    Window {
                        start: t + before,
                        end: t + after,
                        kind: WallKind::Gap,
                    }
                } else {
                    Window {
                        start: t + after,
                        end: t + before,
                        kind: WallKind::Fold,
                    }
                }
            })
            .collect();
        // the days within (day0, day0 + 366] whose local midnight has a
        // different offset from the day before's; each transition marks one
        let mut days: Vec<NaiveDate> = Vec::new();
        for &instant in &instants {
            let around = tz::label_of(zone, instant).date();
            for delta in -1..=2 {
                let day = around + Duration::days(delta);
                if day <= day0 || day > last || days.contains(&day) {
                    continue;
                }
                if tz::midnight_offset(zone, day)
                    != tz::midnight_offset(zone, day - Duration::days(1))
                {
                    days.push(day);
                }
            }
        }
        days.sort();
        ZoneYear { windows, days }
    }
}

/// Notes for scheduled wall times that the zone's transitions in the coming
/// year skip or repeat, at most two.
fn dst_notes(expr: &CronExpr, zone_name: &str, year: &ZoneYear) -> Vec<LintFinding> {
    let mut out = Vec::new();
    for &day in &year.days {
        if let Some(note) = dst_note(expr, zone_name, &year.windows, day - Duration::days(1)) {
            out.push(note);
            if out.len() >= 2 {
                break;
            }
        }
    }
    out
}

/// The first scheduled wall time on `first_day` or the day after that a
/// transition skips or repeats.
fn dst_note(
    expr: &CronExpr,
    zone_name: &str,
    windows: &[Window],
    first_day: NaiveDate,
) -> Option<LintFinding> {
    let f = expr.fields();
    let second = f.seconds.trailing_zeros();
    for day in [first_day, first_day + Duration::days(1)] {
        for hour in 0..24u32 {
            if f.hours >> hour & 1 == 0 || !hour_disturbed(windows, day, hour) {
                continue;
            }
            for minute in (0..60u32).filter(|m| f.minutes >> m & 1 == 1) {
                let Some(label) = day.and_hms_opt(hour, minute, second) else {
                    continue;
                };
                if !expr.matches_civil(label) {
                    continue; // the day columns or the year exclude it
                }
                let when = format!(
                    "on {} the wall time {hour:02}:{minute:02}",
                    day.format("%Y-%m-%d")
                );
                match kind_of(windows, label) {
                    WallKind::Gap => {
                        return Some(finding(
                            "dst-skipped-time",
                            LintLevel::Note,
                            format!(
                                "{when} does not exist in {zone_name} (the clocks jump \
                                 forward); the run is not lost, it fires at the shifted wall \
                                 time"
                            ),
                        ))
                    }
                    WallKind::Fold => {
                        return Some(finding(
                            "dst-repeated-time",
                            LintLevel::Note,
                            format!(
                                "{when} happens twice in {zone_name} (the clocks fall back); \
                                 the run fires on the first occurrence only"
                            ),
                        ))
                    }
                    WallKind::Normal => {}
                }
            }
        }
    }
    None
}

/// Whether a transition touches `hour` of `day`, probing :00 and :30 (for
/// the zones that shift by half an hour), as the original does.
fn hour_disturbed(windows: &[Window], day: NaiveDate, hour: u32) -> bool {
    [0, 30].iter().any(|&minute| {
        day.and_hms_opt(hour, minute, 0)
            .is_some_and(|t| kind_of(windows, t) != WallKind::Normal)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 18, 12, 0, 0).unwrap()
    }

    fn lint(expr: &str, tz: &TimeBase) -> Vec<LintFinding> {
        CronExpr::parse(expr, Some("spread"))
            .unwrap()
            .lint(tz, now())
    }

    fn codes(expr: &str) -> Vec<&'static str> {
        lint(expr, &TimeBase::Utc).iter().map(|f| f.code).collect()
    }

    fn by_code(expr: &str, code: &str, tz: &TimeBase) -> LintFinding {
        lint(expr, tz)
            .into_iter()
            .find(|f| f.code == code)
            .unwrap_or_else(|| panic!("no {code} for {expr}"))
    }

    const NY: TimeBase = TimeBase::Zone(chrono_tz::America::New_York);

    #[test]
    fn never_fires() {
        let f = by_code("0 0 30 2 *", "never-fires", &TimeBase::Utc);
        assert_eq!(f.level, LintLevel::Warning);
        assert!(f.message.contains("never fire"));
        assert!(by_code("0 0 1 1 * 2020", "never-fires", &TimeBase::Utc)
            .message
            .contains("2020"));
        let impossible = by_code("0 0 30 2 * 2099", "never-fires", &TimeBase::Utc).message;
        assert!(!impossible.contains("2099"), "{impossible}");
        // "never fires" beats "skips February"
        assert_eq!(codes("0 0 30 2 *"), vec!["never-fires"]);
    }

    #[test]
    fn clean_schedules() {
        assert!(codes("*/15 * * * *").is_empty());
        assert!(codes("@daily").is_empty());
        assert!(codes("0 */6 * * *").is_empty());
        assert!(codes("0 0 * * * 2030/5").is_empty());
        assert!(codes("10-40/7 * * * *").is_empty());
        assert!(codes("0 0 l 2 *").is_empty());
        assert!(codes("0 0 LW 2 *").is_empty());
    }

    #[test]
    fn day_fields_trap() {
        let f = by_code("0 0 13 * 5", "day-fields-both-restricted", &TimeBase::Utc);
        assert!(f.message.contains("Vixie"));
        assert!(!codes("0 0 13 * *").contains(&"day-fields-both-restricted"));
        assert!(!codes("0 0 * * 5").contains(&"day-fields-both-restricted"));
        assert!(codes("0 0 l * 5").contains(&"day-fields-both-restricted"));
        assert!(codes("0 0 13 * l5").contains(&"day-fields-both-restricted"));
        assert!(codes("0 0 15W * fri").contains(&"day-fields-both-restricted"));
        assert!(!codes("0 0 * * 5#3").contains(&"day-fields-both-restricted"));
    }

    #[test]
    fn uneven_steps_named() {
        let f = by_code("*/7 * * * *", "uneven-step", &TimeBase::Utc);
        assert_eq!(f.level, LintLevel::Warning);
        assert!(f.message.contains("4 minutes"), "{}", f.message);
        for e in [
            "0 */5 * * *",
            "0 0 1 */5 *",
            "0 0 * * */2",
            "*/7 * * * * * *",
            "H/7 * * * *",
        ] {
            assert!(codes(e).contains(&"uneven-step"), "{e}");
        }
        let one = by_code("0 0 * * */2", "uneven-step", &TimeBase::Utc).message;
        assert!(
            one.contains("only 1 day") && !one.contains("1 days"),
            "{one}"
        );
        let dom = by_code("0 0 */2 * *", "uneven-step", &TimeBase::Utc);
        assert_eq!(dom.level, LintLevel::Note);
        assert!(dom.message.contains("month lengths differ"));
    }

    #[test]
    fn month_lengths_named() {
        let f = by_code("0 0 31 1,4 *", "skipped-months", &TimeBase::Utc);
        assert!(f.message.contains("April") && !f.message.contains("January"));
        let all = by_code("0 0 31 * *", "skipped-months", &TimeBase::Utc).message;
        for m in ["February", "April", "June", "September", "November"] {
            assert!(all.contains(m), "{all}");
        }
        assert!(!codes("0 0 1,31 * *").contains(&"skipped-months"));
        assert_eq!(
            by_code("0 0 29 2 *", "leap-day-only", &TimeBase::Utc).level,
            LintLevel::Note
        );
        assert!(codes("0 0 29 * *").contains(&"leap-day-only"));
        let w = by_code("0 0 31W 1,4 *", "skipped-months", &TimeBase::Utc).message;
        assert!(w.contains("April") && !w.contains("January"));
        let l = by_code("0 0 L-30 2,4,5 *", "skipped-months", &TimeBase::Utc).message;
        assert!(
            l.contains("February") && l.contains("April") && !l.contains("May"),
            "{l}"
        );
        assert!(codes("0 0 L-28 2 *").contains(&"leap-day-only"));
        assert!(!codes("0 0 L-27 2 *").contains(&"leap-day-only"));
    }

    #[test]
    fn dst_notes_name_date_time_and_zone() {
        let gap = by_code("30 2 * * *", "dst-skipped-time", &NY);
        assert_eq!(gap.level, LintLevel::Note);
        for part in ["2027-03-14", "02:30", "America/New_York"] {
            assert!(gap.message.contains(part), "{}", gap.message);
        }
        let fold = by_code("30 1 * * *", "dst-repeated-time", &NY);
        assert!(fold.message.contains("2026-11-01") && fold.message.contains("first occurrence"));
        assert!(lint("30 * * * *", &NY).is_empty());
        assert!(lint("30 2 * * *", &TimeBase::Utc).is_empty());
        assert!(lint("30 2 * * *", &TimeBase::Zone(chrono_tz::UTC)).is_empty());
        let day_one: Vec<_> = lint("30 2 1 * *", &NY)
            .into_iter()
            .map(|f| f.code)
            .collect();
        assert!(!day_one.contains(&"dst-skipped-time"));
    }

    #[test]
    fn hashed_slot_note() {
        let f = by_code("H * * * *", "hashed-slot", &TimeBase::Utc);
        let resolved = CronExpr::parse("H * * * *", Some("spread"))
            .unwrap()
            .resolved()
            .to_owned();
        assert!(f.message.contains(&resolved));
        assert!(!codes("*/5 * * * *").contains(&"hashed-slot"));
        assert!(!codes("0  0 * * *").contains(&"hashed-slot"));
    }

    #[test]
    fn a_shared_linter_answers_like_single_calls() {
        let mut linter = Linter::new(now());
        let berlin = TimeBase::Zone(chrono_tz::Europe::Berlin);
        for text in [
            "30 2 * * *",
            "30 1 * * *",
            "0 0 13 * 5",
            "*/7 * * * *",
            "0 2 * * *",
        ] {
            for tz in [&NY, &berlin, &TimeBase::Utc] {
                let e = CronExpr::parse(text, None).unwrap();
                assert_eq!(linter.lint(&e, tz), e.lint(tz, now()), "{text} {tz:?}");
            }
        }
        let berlin_gap = by_code("30 2 * * *", "dst-skipped-time", &berlin);
        assert!(
            berlin_gap.message.contains("2027-03-28"),
            "{}",
            berlin_gap.message
        );
    }

    #[test]
    fn findings_serialize_like_the_api() {
        let f = by_code("0 0 30 2 *", "never-fires", &TimeBase::Utc);
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["code"], "never-fires");
        assert_eq!(json["level"], "warning");
        assert!(json["message"].is_string());
    }
}
