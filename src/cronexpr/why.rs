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

use super::lint::{MONTH_NAMES, WEEKDAY_NAMES};

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
#[path = "why_tests.rs"]
mod tests;
