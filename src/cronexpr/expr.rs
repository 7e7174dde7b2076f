//! [`CronExpr`]: one parsed expression and the questions it answers.

use std::fmt;
use std::hash::{Hash, Hasher};

use chrono::{DateTime, Duration, NaiveDateTime, Utc};

use super::error::ParseError;
use super::field::{Fields, YearSet};
use super::parse::parse;
use super::search::{matches_civil, next_civil, prev_civil};
use super::tz::{self, TimeBase};

/// A parsed cron expression (5, 6 or 7 fields, or an `@` nickname).
///
/// Equality is semantic: two expressions are equal when their columns,
/// with redundant day forms dropped, are the same sets, which means they
/// fire on exactly the same instants (`*/5 * * * *` == `0-59/5 * * * *`,
/// `@daily` == `0 0 * * *`, `H * * * *` == the minute it hashed to). `Hash`
/// agrees with `==`.
#[derive(Debug, Clone)]
pub struct CronExpr {
    fields: Fields,
    seven: bool,
    source: Box<str>,
    resolved: Option<Box<str>>,
}

impl CronExpr {
    /// Parses `text`. `hash_key` (the job name) resolves `H` items; without
    /// one, an `H` is an error. `@reboot` is not an expression (see
    /// [`Schedule`](super::Schedule)) and neither is `@midnight`, which only
    /// classic crontab files accept.
    pub fn parse(text: &str, hash_key: Option<&str>) -> Result<CronExpr, ParseError> {
        let parsed = parse(text, hash_key)?;
        Ok(CronExpr {
            fields: parsed.fields,
            seven: parsed.seven,
            source: parsed.source.into_boxed_str(),
            resolved: parsed.resolved.map(String::into_boxed_str),
        })
    }

    /// The expression as written with runs of whitespace collapsed (a
    /// nickname in lower case): the form the original daemon displays,
    /// stable across reloads, and what the API shows as `schedule`.
    pub fn canonical(&self) -> &str {
        &self.source
    }

    /// The expression with every `H` item replaced by the values it hashed
    /// to; equal to [`canonical`](Self::canonical) when there is no `H`.
    /// Always plain dialect, so it parses again without a hash key.
    pub fn resolved(&self) -> &str {
        self.resolved.as_deref().unwrap_or(&self.source)
    }

    /// Whether the expression used `H` (so [`resolved`](Self::resolved)
    /// says more than [`canonical`](Self::canonical)).
    pub fn is_hashed(&self) -> bool {
        self.resolved.is_some()
    }

    /// Whether this is the 7-field form with a leading seconds column, which
    /// makes the scheduler tick every second.
    pub fn has_seconds(&self) -> bool {
        self.seven
    }

    /// The parsed columns, for introspection (linting, describing).
    pub fn fields(&self) -> &Fields {
        &self.fields
    }

    /// The year column, if one restricts the expression.
    pub fn years(&self) -> Option<&YearSet> {
        self.fields.years.as_ref()
    }

    /// The first fire strictly after `after`, in the clock `tz`, or `None`
    /// when the expression never fires again (nothing is searched past the
    /// end of 2099).
    ///
    /// In a zone with DST, a wall time skipped by a spring-forward fires
    /// once at the shifted time, and a wall time repeated by a fall-back
    /// fires on its first occurrence only.
    pub fn next_after(&self, after: DateTime<Utc>, tz: &TimeBase) -> Option<DateTime<Utc>> {
        let now = after.naive_utc();
        let civil = |t| next_civil(&self.fields, t);
        let fire = match tz {
            TimeBase::Utc => civil(now),
            TimeBase::Local => tz::next_in_zone(&chrono::Local, now, civil),
            TimeBase::Zone(zone) => tz::next_in_zone(zone, now, civil),
        };
        fire.map(|t| t.and_utc())
    }

    /// The last fire strictly before `before`, under the same DST policy as
    /// [`next_after`](Self::next_after); `None` when there is none back to
    /// 1970.
    pub fn prev_before(&self, before: DateTime<Utc>, tz: &TimeBase) -> Option<DateTime<Utc>> {
        let now = before.naive_utc();
        let next = |t| next_civil(&self.fields, t);
        let prev = |t| prev_civil(&self.fields, t);
        let fire = match tz {
            TimeBase::Utc => tz::prev_in_zone(&Utc, now, next, prev),
            TimeBase::Local => tz::prev_in_zone(&chrono::Local, now, next, prev),
            TimeBase::Zone(zone) => tz::prev_in_zone(zone, now, next, prev),
        };
        fire.map(|t| t.and_utc())
    }

    /// Successive fires strictly after `after`, in order, each real instant
    /// once, ending at the 2099 horizon.
    pub fn occurrences<'a>(
        &'a self,
        after: DateTime<Utc>,
        tz: &'a TimeBase,
    ) -> impl Iterator<Item = DateTime<Utc>> + 'a {
        let mut cursor = Some(after);
        std::iter::from_fn(move || {
            let next = self.next_after(cursor?, tz);
            cursor = next;
            next
        })
    }

    /// Whether the wall-clock label of `at` in `tz` matches every column
    /// (sub-second parts ignored). An unrestricted year column matches any
    /// year, even past 2099.
    pub fn matches(&self, at: DateTime<Utc>, tz: &TimeBase) -> bool {
        matches_civil(&self.fields, tz.label(at))
    }

    /// Whether a wall-clock time matches every column.
    pub fn matches_civil(&self, label: NaiveDateTime) -> bool {
        matches_civil(&self.fields, label)
    }

    /// The first matching wall time strictly after `label`, ignoring zones
    /// (the civil search every clock builds on).
    pub fn next_civil(&self, label: NaiveDateTime) -> Option<NaiveDateTime> {
        next_civil(&self.fields, label)
    }

    /// The last matching wall time strictly before `label`, ignoring zones.
    pub fn prev_civil(&self, label: NaiveDateTime) -> Option<NaiveDateTime> {
        prev_civil(&self.fields, label)
    }

    /// Whether the expression can ever fire again after `after`: the
    /// `never-fires` lint in boolean form.
    pub fn fires_after(&self, after: DateTime<Utc>, tz: &TimeBase) -> bool {
        self.next_after(after, tz).is_some()
    }

    /// Seconds from `after` to the next fire, as the original's `next()`
    /// reports it (`/status`'s `scheduled_in`).
    pub fn seconds_until_next(&self, after: DateTime<Utc>, tz: &TimeBase) -> Option<f64> {
        let fire = self.next_after(after, tz)?;
        Some(seconds(fire - after))
    }

    /// The same expression firing only at second 0 of each minute it
    /// selects, and how many times the expression fires within such a
    /// minute: a count by the minute walks a per-second schedule a
    /// sixtieth as often and weighs each minute instead.
    pub(crate) fn minute_twin(&self) -> (CronExpr, u32) {
        let weight = self.fields.seconds.count_ones();
        let mut fields = self.fields;
        fields.seconds = 1;
        let twin = CronExpr {
            fields,
            seven: false,
            source: self.source.clone(),
            resolved: self.resolved.clone(),
        };
        (twin, weight)
    }

    /// A normal form that is equal for equal expressions and different for
    /// different ones: seven fields, values sorted, ranges compacted, and
    /// redundant day forms dropped. Suitable as a grouping key (duplicate
    /// detection) and parseable again.
    pub fn normal_form(&self) -> String {
        super::render::normal_form(&self.fields.normalized())
    }
}

/// A duration as fractional seconds, exact to the microsecond.
pub(crate) fn seconds(d: Duration) -> f64 {
    match d.num_microseconds() {
        Some(us) => us as f64 / 1e6,
        None => d.num_seconds() as f64,
    }
}

impl PartialEq for CronExpr {
    fn eq(&self, other: &Self) -> bool {
        self.fields.normalized() == other.fields.normalized()
    }
}

impl Eq for CronExpr {}

impl Hash for CronExpr {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fields.normalized().hash(state);
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for CronExpr {
    type Err = ParseError;

    /// Parses without a hash key, so `H` is refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CronExpr::parse(s, None)
    }
}
