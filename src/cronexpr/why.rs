//! Why a schedule did or did not select one instant.
//!
//! The linter judges a whole schedule; this module judges one timestamp. It
//! splits the engine's own match test into one verdict per column, so the
//! answer can never disagree with what the scheduler computes: `matches` is
//! exactly [`CronExpr::matches_civil`], and each day column is tested alone
//! through the same month mask the search uses.
//!
//! Pure like the rest of the engine: the probe is an argument, no clock is
//! read. The HTTP API serves the result as `GET /schedule/why`.
//!
//! ```
//! use cronstable::cronexpr::{why, Probe, Schedule, TimeBase};
//!
//! let schedule = Schedule::parse("0 9 * * mon,fri", "weekday-report").unwrap();
//! let probe = Probe::parse("2026-07-14T09:00").unwrap(); // a Tuesday
//! let report = why(&schedule, &TimeBase::Utc, &probe);
//! assert!(!report.matches);
//! assert_eq!(report.failed, ["day-of-week"]);
//! assert_eq!(report.next_fire.as_deref(), Some("2026-07-17T09:00:00+00:00"));
//! ```

use std::fmt;
use std::str::FromStr;

use chrono::{
    DateTime, Datelike, FixedOffset, LocalResult, NaiveDate, NaiveDateTime, SecondsFormat,
    TimeZone, Timelike, Utc,
};
use serde::{Serialize, Serializer};

use super::calendar::{day_mask, weekday};
use super::error::Field;
use super::expr::CronExpr;
use super::field::{Fields, ALL_DAYS, ALL_WEEKDAYS};
use super::lint::LintLevel;
use super::tz::{Fold, TimeBase, WallKind};
use super::Schedule;

const MONTH_NAMES: [&str; 13] = [
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

const WEEKDAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

// ---------------------------------------------------------------------------
// The probe
// ---------------------------------------------------------------------------

/// A timestamp to explain, as the caller wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// No offset: a wall time read in the job's own clock.
    Wall(NaiveDateTime),
    /// With an offset (or `Z`): a real instant, converted into the job's
    /// clock before the columns are checked.
    Instant(DateTime<FixedOffset>),
}

/// An `at` text that is not an ISO-8601 timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeError {
    text: String,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot read '{}' as an ISO-8601 timestamp; write it like 2026-07-14T09:00 \
             (wall time in the job's zone), 2026-07-14T09:00:00+02:00 or 2026-07-14T07:00:00Z",
            self.text
        )
    }
}

impl std::error::Error for ProbeError {}

/// Reads exactly `n` ASCII digits from the front of `s`.
fn digits(s: &str, n: usize) -> Option<(u32, &str)> {
    let head = s.get(..n)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, &s[n..]))
}

/// `HH[:MM[:SS[.fraction]]]`, all of `s`.
fn parse_time(s: &str) -> Option<(u32, u32, u32, u32)> {
    let (hour, rest) = digits(s, 2)?;
    if rest.is_empty() {
        return Some((hour, 0, 0, 0));
    }
    let (minute, rest) = digits(rest.strip_prefix(':')?, 2)?;
    if rest.is_empty() {
        return Some((hour, minute, 0, 0));
    }
    let (second, rest) = digits(rest.strip_prefix(':')?, 2)?;
    if rest.is_empty() {
        return Some((hour, minute, second, 0));
    }
    let fraction = rest.strip_prefix('.')?;
    if fraction.is_empty() || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // pad to nanoseconds: ".5" is 500 ms
    let nanos = format!("{fraction:0<9}").parse().ok()?;
    Some((hour, minute, second, nanos))
}

/// `Z`, `±HH`, `±HHMM`, `±HH:MM` or `±HH:MM:SS`, all of `s`.
fn parse_offset(s: &str) -> Option<FixedOffset> {
    if s.eq_ignore_ascii_case("z") {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let (hours, rest) = digits(rest, 2)?;
    let (minutes, seconds) = match rest.len() {
        0 => (0, 0),
        2 => (digits(rest, 2)?.0, 0),
        3 => (digits(rest.strip_prefix(':')?, 2)?.0, 0),
        6 => {
            let (m, tail) = digits(rest.strip_prefix(':')?, 2)?;
            (m, digits(tail.strip_prefix(':')?, 2)?.0)
        }
        _ => return None,
    };
    if minutes > 59 || seconds > 59 {
        return None;
    }
    let total = i32::try_from(hours * 3600 + minutes * 60 + seconds).ok()?;
    FixedOffset::east_opt(sign * total)
}

fn parse_probe(text: &str) -> Option<Probe> {
    let (year, rest) = digits(text, 4)?;
    let (month, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let (day, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    if year == 0 {
        return None;
    }
    let mut chars = rest.chars();
    let (time, offset) = match chars.next() {
        None => ("00", ""),
        Some('T' | 't' | ' ') => {
            let rest = chars.as_str();
            let split = rest.find(['+', '-', 'Z', 'z', ' ']).unwrap_or(rest.len());
            rest.split_at(split)
        }
        Some(_) => return None,
    };
    // an unencoded `+` in a query string arrives as a space
    let plus;
    let offset = match offset.strip_prefix(' ') {
        Some(tail) => {
            plus = format!("+{tail}");
            plus.as_str()
        }
        None => offset,
    };
    let (hour, minute, second, nanos) = parse_time(time)?;
    // at most nine fraction digits, so never chrono's leap-second spelling
    let wall = date.and_hms_nano_opt(hour, minute, second, nanos)?;
    if offset.is_empty() {
        return Some(Probe::Wall(wall));
    }
    let zone = parse_offset(offset)?;
    match zone.from_local_datetime(&wall) {
        LocalResult::Single(at) => Some(Probe::Instant(at)),
        _ => None,
    }
}

impl Probe {
    /// Reads an ISO-8601 timestamp: `YYYY-MM-DD`, optionally followed by
    /// `T` (or a space) and `HH`, `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff`,
    /// optionally followed by `Z` or an offset (`+02:00`, `+0200`, `+02`).
    /// Surrounding whitespace is ignored. A date alone is its midnight. A
    /// space where the offset's sign belongs reads as `+`: that is what an
    /// unencoded `+` in a URL's query string decodes to.
    pub fn parse(text: &str) -> Result<Probe, ProbeError> {
        let trimmed = text.trim();
        parse_probe(trimmed).ok_or_else(|| ProbeError {
            text: trimmed.to_owned(),
        })
    }

    /// Places the probe on the clock `tz`: an instant is converted into it,
    /// and a wall time is read there with the engine's own rule (a skipped
    /// or repeated wall time takes the offset in force before the change).
    pub fn locate(&self, tz: &TimeBase) -> ProbePoint {
        match *self {
            Probe::Wall(civil) => ProbePoint {
                civil,
                instant: tz.resolve(civil, Fold::Before),
            },
            Probe::Instant(at) => {
                let instant = at.with_timezone(&Utc);
                ProbePoint {
                    civil: tz.label(instant),
                    instant,
                }
            }
        }
    }
}

impl FromStr for Probe {
    type Err = ProbeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Probe::parse(s)
    }
}

/// A probe placed on a job's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbePoint {
    /// The wall-clock time the columns are checked against.
    pub civil: NaiveDateTime,
    /// The real instant it stands for.
    pub instant: DateTime<Utc>,
}

impl ProbePoint {
    /// The wall time with the offset that makes it this instant, in
    /// ISO-8601 (`2026-07-14T09:00:00+02:00`). A wall time skipped by a
    /// spring-forward keeps its own label and shows the offset in force
    /// before the jump (`2026-03-08T02:30:00-05:00` in New York).
    pub fn iso(&self) -> String {
        with_offset(self.civil, self.instant)
    }
}

/// `civil` written with the offset `civil - instant`.
fn with_offset(civil: NaiveDateTime, instant: DateTime<Utc>) -> String {
    let seconds = (civil - instant.naive_utc()).num_seconds();
    let offset = i32::try_from(seconds).ok().and_then(FixedOffset::east_opt);
    match offset.map(|o| o.from_local_datetime(&civil)) {
        Some(LocalResult::Single(at)) => at.to_rfc3339_opts(SecondsFormat::AutoSi, false),
        // unreachable for real zones (offsets stay within a day); fall back
        // to the instant itself rather than fail
        _ => instant.to_rfc3339_opts(SecondsFormat::AutoSi, false),
    }
}

/// An instant in ISO-8601 with the offset `tz` shows at that instant
/// (`2026-07-17T09:00:00+02:00`).
pub fn iso_in(tz: &TimeBase, instant: DateTime<Utc>) -> String {
    with_offset(tz.label(instant), instant)
}

// ---------------------------------------------------------------------------
// The verdict
// ---------------------------------------------------------------------------

fn field_label<S: Serializer>(field: &Field, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(field.label())
}

/// One column's verdict on the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldCheck {
    /// The column (`"day-of-week"` in JSON).
    #[serde(serialize_with = "field_label")]
    pub field: Field,
    /// The probe's value in cron terms (Sunday is 0).
    pub value: i32,
    /// The value for people: a number, or a month or weekday name.
    pub label: String,
    /// The values the column accepts, as prose (`"any"` when unrestricted).
    pub allowed: String,
    /// Whether the column accepts the probe.
    pub matched: bool,
}

/// Something about the answer worth knowing: a stable code, a level, and a
/// self-contained sentence (the shape of a lint finding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyNote {
    /// `day-fields-and-rule`, `dst-skipped-time`, `dst-repeated-time`,
    /// `reboot` or `paused`.
    pub code: &'static str,
    /// Always [`LintLevel::Note`] today.
    pub level: LintLevel,
    /// One line of plain text.
    pub message: String,
}

fn note(code: &'static str, message: String) -> WhyNote {
    WhyNote {
        code,
        level: LintLevel::Note,
        message,
    }
}

/// The column-by-column decomposition of one match test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether every column matched: the engine's own answer.
    pub matches: bool,
    /// One row per column, always seven, in order: second, minute, hour,
    /// day-of-month, month, day-of-week, year.
    pub checks: Vec<FieldCheck>,
    /// The columns that did not match, in column order.
    pub failed: Vec<&'static str>,
    /// `day-fields-and-rule`, `dst-skipped-time`, `dst-repeated-time`.
    pub notes: Vec<WhyNote>,
}

/// "a", "a and b", "a, b and c".
fn list_join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Ascending values with runs of three or more written `first-last`;
/// shorter runs stay listed one by one.
fn value_runs(values: &[u32], name: impl Fn(u32) -> String) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j + 1 < values.len() && values[j + 1] == values[j] + 1 {
            j += 1;
        }
        if j - i >= 2 {
            out.push(format!("{}-{}", name(values[i]), name(values[j])));
        } else {
            out.extend(values[i..=j].iter().map(|&v| name(v)));
        }
        i = j + 1;
    }
    out
}

fn bits(mask: u64, range: std::ops::RangeInclusive<u32>) -> Vec<u32> {
    range.filter(|&v| mask >> v & 1 == 1).collect()
}

/// A plain column as prose: `"any"` when every value in `range` is set.
fn allowed_plain(mask: u64, range: std::ops::RangeInclusive<u32>, names: &[&str]) -> String {
    let values = bits(mask, range.clone());
    if values.len() == range.count() {
        return "any".to_owned();
    }
    let name = |v: u32| {
        names
            .get(v as usize)
            .map_or_else(|| v.to_string(), |n| (*n).to_owned())
    };
    list_join(&value_runs(&values, name))
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn weekday_name(d: u32) -> &'static str {
    WEEKDAY_NAMES.get(d as usize).copied().unwrap_or("?")
}

/// The day-of-month column as prose: plain days, then `nW`, `L`/`L-n`, `LW`.
fn allowed_dom(f: &Fields) -> String {
    if f.dom & ALL_DAYS == ALL_DAYS {
        return "any".to_owned();
    }
    let mut parts = value_runs(&bits(u64::from(f.dom), 1..=31), |v| v.to_string());
    parts.extend(
        bits(u64::from(f.dom_nearest), 1..=31)
            .into_iter()
            .map(|n| format!("the weekday nearest day {n} ({n}W)")),
    );
    for k in bits(u64::from(f.dom_last), 0..=30) {
        parts.push(match k {
            0 => "the month's last day (L)".to_owned(),
            1 => "1 day before the month's last (L-1)".to_owned(),
            k => format!("{k} days before the month's last (L-{k})"),
        });
    }
    if f.dom_last_weekday {
        parts.push("the month's last weekday (LW)".to_owned());
    }
    list_join(&parts)
}

/// The day-of-week column as prose: plain weekdays, then `L<d>`, `<d>#<n>`.
fn allowed_dow(f: &Fields) -> String {
    if f.dow & ALL_WEEKDAYS == ALL_WEEKDAYS {
        return "any".to_owned();
    }
    let mut parts = value_runs(&bits(u64::from(f.dow), 0..=6), |d| {
        weekday_name(d).to_owned()
    });
    parts.extend(
        bits(u64::from(f.dow_last), 0..=6)
            .into_iter()
            .map(|d| format!("the month's last {}", weekday_name(d))),
    );
    for d in 0..7u32 {
        let nth = f.dow_nth.get(d as usize).copied().unwrap_or(0);
        for n in bits(u64::from(nth), 1..=5) {
            parts.push(format!("the month's {} {}", ordinal(n), weekday_name(d)));
        }
    }
    list_join(&parts)
}

/// Each day column on its own, through the engine's month mask: opening the
/// other column to every day leaves the AND to this one.
fn day_sides(f: &Fields, year: i32, month: u32, day: u32) -> (bool, bool) {
    let dom_only = Fields {
        dow: ALL_WEEKDAYS,
        dow_last: 0,
        dow_nth: [0; 7],
        ..*f
    };
    let dow_only = Fields {
        dom: ALL_DAYS,
        dom_last: 0,
        dom_nearest: 0,
        dom_last_weekday: false,
        ..*f
    };
    let has = |mask: u32| mask >> day & 1 == 1;
    (
        has(day_mask(&dom_only, year, month)),
        has(day_mask(&dow_only, year, month)),
    )
}

fn kind_in<T: TimeZone>(tz: &T, civil: NaiveDateTime) -> WallKind {
    match tz.offset_from_local_datetime(&civil) {
        LocalResult::Single(_) => WallKind::Normal,
        LocalResult::Ambiguous(..) => WallKind::Fold,
        LocalResult::None => WallKind::Gap,
    }
}

fn wall_kind(tz: &TimeBase, civil: NaiveDateTime) -> WallKind {
    match tz {
        TimeBase::Utc => WallKind::Normal,
        TimeBase::Local => kind_in(&chrono::Local, civil),
        TimeBase::Zone(zone) => kind_in(zone, civil),
    }
}

fn zone_name(tz: &TimeBase) -> &'static str {
    tz.name().unwrap_or("the host's local zone")
}

/// Splits `expr`'s match test at the wall time `civil` (sub-second parts
/// ignored, as the engine ignores them) into one row per column.
///
/// `tz` is the job's clock; it only feeds the DST notes, since the columns
/// are checked against the wall time itself. Notes:
///
/// - `day-fields-and-rule` when both day columns are restricted, exactly one
///   of them matched and every other column matched: the AND of the day
///   columns alone blocked a fire that Vixie cron would have made;
/// - `dst-skipped-time` / `dst-repeated-time` when the wall time matched
///   and a DST change in `tz` skips or repeats it.
pub fn explain(expr: &CronExpr, civil: NaiveDateTime, tz: &TimeBase) -> Verdict {
    let civil = civil.with_nanosecond(0).unwrap_or(civil);
    let f = expr.fields();
    let (year, month, day) = (civil.year(), civil.month(), civil.day());
    let dow = weekday(year, month, day);
    let (dom_ok, dow_ok) = day_sides(f, year, month, day);
    let plain = |field, value: u32, mask: u64, range, names: &[&str]| {
        let label = names
            .get(value as usize)
            .map_or_else(|| value.to_string(), |n| (*n).to_owned());
        FieldCheck {
            field,
            value: i32::try_from(value).unwrap_or(i32::MAX),
            label,
            allowed: allowed_plain(mask, range, names),
            matched: mask >> value & 1 == 1,
        }
    };
    let checks = vec![
        plain(Field::Second, civil.second(), f.seconds, 0..=59, &[]),
        plain(Field::Minute, civil.minute(), f.minutes, 0..=59, &[]),
        plain(Field::Hour, civil.hour(), u64::from(f.hours), 0..=23, &[]),
        FieldCheck {
            field: Field::DayOfMonth,
            value: i32::try_from(day).unwrap_or(i32::MAX),
            label: day.to_string(),
            allowed: allowed_dom(f),
            matched: dom_ok,
        },
        plain(
            Field::Month,
            month,
            u64::from(f.months),
            1..=12,
            &MONTH_NAMES,
        ),
        FieldCheck {
            field: Field::DayOfWeek,
            value: i32::try_from(dow).unwrap_or(0),
            label: weekday_name(dow).to_owned(),
            allowed: allowed_dow(f),
            matched: dow_ok,
        },
        FieldCheck {
            field: Field::Year,
            value: year,
            label: year.to_string(),
            allowed: match &f.years {
                None => "any".to_owned(),
                Some(years) => {
                    let list: Vec<u32> =
                        years.iter().filter_map(|y| u32::try_from(y).ok()).collect();
                    list_join(&value_runs(&list, |y| y.to_string()))
                }
            },
            matched: f.years.as_ref().is_none_or(|y| y.contains(year)),
        },
    ];
    let matches = checks.iter().all(|c| c.matched);
    let failed: Vec<&'static str> = checks
        .iter()
        .filter(|c| !c.matched)
        .map(|c| c.field.label())
        .collect();
    let mut notes = Vec::new();
    let days_restricted = f.dom & ALL_DAYS != ALL_DAYS && f.dow & ALL_WEEKDAYS != ALL_WEEKDAYS;
    let others_ok = checks
        .iter()
        .filter(|c| !matches!(c.field, Field::DayOfMonth | Field::DayOfWeek))
        .all(|c| c.matched);
    if days_restricted && dom_ok != dow_ok && others_ok {
        let (hit, miss) = if dom_ok {
            ("day-of-month", "day-of-week")
        } else {
            ("day-of-week", "day-of-month")
        };
        notes.push(note(
            "day-fields-and-rule",
            format!(
                "both day fields are restricted, so a day has to satisfy both of them: \
                 {hit} matched and {miss} did not; classic Vixie cron fires when either \
                 one matches and would have run this schedule at this time"
            ),
        ));
    }
    if matches {
        match wall_kind(tz, civil) {
            WallKind::Normal => {}
            WallKind::Gap => {
                let shifted = tz.label(tz.resolve(civil, Fold::Before));
                notes.push(note(
                    "dst-skipped-time",
                    format!(
                        "{} does not exist on {} in {}: the clocks jump forward over it, \
                         so the scheduler fires once, at the shifted wall time {}",
                        civil.time(),
                        civil.date(),
                        zone_name(tz),
                        shifted.time()
                    ),
                ));
            }
            WallKind::Fold => notes.push(note(
                "dst-repeated-time",
                format!(
                    "{} happens twice on {} in {} as the clocks fall back; the scheduler \
                     fires on the first pass only",
                    civil.time(),
                    civil.date(),
                    zone_name(tz)
                ),
            )),
        }
    }
    Verdict {
        matches,
        checks,
        failed,
        notes,
    }
}

// ---------------------------------------------------------------------------
// The whole answer
// ---------------------------------------------------------------------------

/// Everything the schedule says about one probe: the expression, the
/// verdict, and the nearest real fires around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhyReport {
    /// The schedule as written, whitespace collapsed (`@reboot` for a
    /// reboot job).
    pub expression: String,
    /// Whether the schedule is `@reboot` (then there are no checks).
    pub reboot: bool,
    /// The probe on the job's clock ([`ProbePoint::iso`]); absent for
    /// `@reboot`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_in_zone: Option<String>,
    /// The expression with `H` replaced, for hashed schedules only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// See [`Verdict::matches`]; `false` for `@reboot`.
    pub matches: bool,
    /// See [`Verdict::checks`]; empty for `@reboot`.
    pub checks: Vec<FieldCheck>,
    /// See [`Verdict::failed`].
    pub failed: Vec<&'static str>,
    /// See [`Verdict::notes`]; `@reboot` carries a `reboot` note. Callers
    /// add their own (a `paused` note, see [`paused_note`]).
    pub notes: Vec<WhyNote>,
    /// The last real fire strictly before the probe, in the job's zone.
    pub previous_fire: Option<String>,
    /// The first real fire strictly after the probe, in the job's zone.
    pub next_fire: Option<String>,
}

/// Explains `schedule`, evaluated in `tz`, at `probe`, with the nearest
/// fires on either side computed by the engine's own next/previous search
/// (so under the scheduler's DST policy).
pub fn why(schedule: &Schedule, tz: &TimeBase, probe: &Probe) -> WhyReport {
    let expr = match schedule {
        Schedule::Reboot => {
            return WhyReport {
                expression: schedule.canonical().to_owned(),
                reboot: true,
                at_in_zone: None,
                resolved: None,
                matches: false,
                checks: Vec::new(),
                failed: Vec::new(),
                notes: vec![note(
                    "reboot",
                    "@reboot jobs run once when the daemon starts and never on a timetable, \
                     so no timestamp can match"
                        .to_owned(),
                )],
                previous_fire: None,
                next_fire: None,
            }
        }
        Schedule::Cron(expr) => expr,
    };
    let point = probe.locate(tz);
    let verdict = explain(expr, point.civil, tz);
    WhyReport {
        expression: expr.canonical().to_owned(),
        reboot: false,
        at_in_zone: Some(point.iso()),
        resolved: expr.is_hashed().then(|| expr.resolved().to_owned()),
        matches: verdict.matches,
        checks: verdict.checks,
        failed: verdict.failed,
        notes: verdict.notes,
        previous_fire: expr.prev_before(point.instant, tz).map(|t| iso_in(tz, t)),
        next_fire: expr.next_after(point.instant, tz).map(|t| iso_in(tz, t)),
    }
}

/// The `paused` note: a schedule match does not say a fire would launch
/// while the job is paused. Names the end of the pause (in the job's
/// zone), who took it and its note (when not empty).
pub fn paused_note(tz: &TimeBase, until: DateTime<Utc>, by: &str, note_text: &str) -> WhyNote {
    let mut message = format!(
        "paused by {by} until {}: scheduled fires are skipped until then, whatever the \
         schedule says",
        iso_in(tz, until)
    );
    if !note_text.is_empty() {
        message.push_str(&format!(" (note: {note_text})"));
    }
    note("paused", message)
}

#[cfg(test)]
mod tests {
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
}
