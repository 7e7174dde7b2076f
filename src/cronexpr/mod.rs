//! The schedule engine: parsing the cron dialect, next/previous fire times in
//! UTC, local time and IANA zones, hashed fields and linting. Pure: no I/O
//! and no clock; "now" is always an argument.
//!
//! The dialect is the original daemon's (see `docs/schedules.md`):
//!
//! - 5 fields `minute hour day-of-month month day-of-week`; 6 fields add a
//!   trailing `year`; 7 fields add a leading `second` as well;
//! - `*`, lists, ranges, steps (`*/n`, `a-b/n`, `a/n`), month and weekday
//!   names, `?` alone in a day field, 0 and 7 both Sunday;
//! - day-of-month `L`, `L-n`, `nW`, `LW`; day-of-week `L<d>` and `<d>#<n>`;
//! - `H`, `H(a-b)`, `H/n`, `H(a-b)/n`, hashed from the job name;
//! - `@yearly` `@annually` `@monthly` `@weekly` `@daily` `@hourly`, and
//!   `@reboot` as a kind of its own ([`Schedule::Reboot`]); `@midnight`
//!   belongs to classic crontab files, whose loader rewrites it to `@daily`;
//! - a day must satisfy both day columns when both are restricted.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use cronstable::cronexpr::{Schedule, TimeBase};
//!
//! let Schedule::Cron(expr) = Schedule::parse("30 2 * * *", "nightly").unwrap() else {
//!     unreachable!()
//! };
//! let ny = TimeBase::Zone(chrono_tz::America::New_York);
//! // 02:30 does not exist on 2026-03-08 in New York: it fires at 03:30 EDT
//! let after = Utc.with_ymd_and_hms(2026, 3, 7, 12, 0, 0).unwrap();
//! let fire = expr.next_after(after, &ny).unwrap();
//! assert_eq!(fire, Utc.with_ymd_and_hms(2026, 3, 8, 7, 30, 0).unwrap());
//! ```

mod calendar;
mod describe;
mod error;
mod expr;
mod field;
mod fleet;
mod hash;
mod hint;
mod ics;
mod lint;
mod parse;
mod render;
mod search;
mod tz;
mod week;
mod why;

pub use describe::{describe, describe_parsed, REBOOT_DESCRIPTION};
pub use error::{Field, ParseError};
pub use expr::CronExpr;
pub use field::{Fields, YearSet, YEAR_FLOOR, YEAR_HORIZON};
pub use fleet::{
    duplicates, pressure, python_iso, suggest, zone_label, BasedOn, BusiestMinute, BusiestSlot,
    DuplicateGroup, Excluded, FleetEntry, Period, Pressure, Slot, Suggestion, TopCell,
    MAX_PRESSURE_HOURS,
};
pub use hash::NEEDS_HASH_KEY;
pub use ics::{render_calendar, write_calendar, CalendarEntry, CalendarWindow};
pub use parse::{quotable, MAX_EXPRESSION_LEN};
// For the classic-crontab front end (`config::crontab`), which splits its
// lines and recognises nicknames with the engine's own rules rather than a
// copy of them.
pub use lint::{LintFinding, LintLevel, Linter};
pub(crate) use parse::{is_separator, macro_expansion, MACROS};
pub use tz::{Fold, TimeBase};
pub use week::{fires_by_schedule, FireGroup, MAX_WEEK_FIRES};
pub use why::{
    explain, iso_in, paused_note, why, FieldCheck, Probe, ProbeError, ProbePoint, Verdict, WhyNote,
    WhyReport,
};

/// A job's schedule: a cron expression, or `@reboot` (once, at startup).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Runs once when the daemon starts, never on a timer.
    Reboot,
    /// Runs whenever the expression fires.
    Cron(CronExpr),
}

impl Schedule {
    /// Parses a job's `schedule:` text. Exactly `@reboot` is the reboot
    /// kind; anything else must be a cron expression. `hash_key` is the job
    /// name, which seeds the `H` form.
    pub fn parse(expr: &str, hash_key: &str) -> Result<Schedule, ParseError> {
        if expr == "@reboot" {
            return Ok(Schedule::Reboot);
        }
        CronExpr::parse(expr, Some(hash_key)).map(Schedule::Cron)
    }

    /// The expression, unless this is `@reboot`.
    pub fn cron(&self) -> Option<&CronExpr> {
        match self {
            Schedule::Reboot => None,
            Schedule::Cron(expr) => Some(expr),
        }
    }

    /// The schedule in plain English (see [`describe`]): what the API
    /// shows as `description`.
    pub fn description(&self) -> String {
        match self {
            Schedule::Reboot => REBOOT_DESCRIPTION.to_owned(),
            Schedule::Cron(expr) => describe_parsed(expr.canonical(), expr),
        }
    }

    /// The text the original displays: `@reboot`, or the expression with
    /// whitespace collapsed.
    pub fn canonical(&self) -> &str {
        match self {
            Schedule::Reboot => "@reboot",
            Schedule::Cron(expr) => expr.canonical(),
        }
    }
}

/// The object form of `schedule:` (`minute: "*/5"`, ...), one column each.
///
/// Only the columns in use are emitted, exactly as the original assembles
/// them: without `second` and `year` a classic five-field line; with `year`
/// only, a trailing year; with `second`, all seven (year defaulting to `*`).
/// So `{minute: "*/5"}` is byte for byte `"*/5 * * * *"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectForm<'a> {
    /// `second`, absent by default.
    pub second: Option<&'a str>,
    /// `minute`, `*` by default.
    pub minute: Option<&'a str>,
    /// `hour`, `*` by default.
    pub hour: Option<&'a str>,
    /// `dayOfMonth`, `*` by default.
    pub day_of_month: Option<&'a str>,
    /// `month`, `*` by default.
    pub month: Option<&'a str>,
    /// `dayOfWeek`, `*` by default.
    pub day_of_week: Option<&'a str>,
    /// `year`, absent by default.
    pub year: Option<&'a str>,
}

impl ObjectForm<'_> {
    /// The expression text, or an error naming the key whose value is not
    /// one whitespace-free token (a blank value would drop its column and
    /// an inner space would add one, shifting every later field).
    pub fn to_expression(&self) -> Result<String, ParseError> {
        let columns = [
            (Field::Second, self.second),
            (Field::Minute, self.minute),
            (Field::Hour, self.hour),
            (Field::DayOfMonth, self.day_of_month),
            (Field::Month, self.month),
            (Field::DayOfWeek, self.day_of_week),
            (Field::Year, self.year),
        ];
        for (field, value) in columns {
            if let Some(v) = value {
                if parse::split_fields(v) != [v] {
                    return Err(ParseError::at(
                        field,
                        v,
                        format!(
                            "schedule.{}: must be a single non-empty cron field with no \
                             whitespace, got '{v}' (a blank value would drop this column and \
                             an embedded space would add one; omit the key for its default)",
                            field.object_key()
                        ),
                    ));
                }
            }
        }
        let star = |v: Option<&str>| v.unwrap_or("*").to_owned();
        let middle = [
            star(self.minute),
            star(self.hour),
            star(self.day_of_month),
            star(self.month),
            star(self.day_of_week),
        ]
        .join(" ");
        Ok(match (self.second, self.year) {
            (Some(second), year) => format!("{second} {middle} {}", star(year)),
            (None, Some(year)) => format!("{middle} {year}"),
            (None, None) => middle,
        })
    }
}

#[cfg(test)]
mod tests;
