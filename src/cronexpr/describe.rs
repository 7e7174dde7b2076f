//! Plain-English descriptions of schedules ("At 09:00, on Monday and
//! Friday"), the text `GET /schedule/preview`, `/schedule/why`, `/jobs`,
//! the duplicate groups and the calendar feed show.
//!
//! The wording is the original daemon's, so a client that displays or
//! matches it sees the same sentence from either daemon. It is built from
//! the expression *as written*, not from the parsed sets: `*/15` reads
//! "Every 15 minutes" where `0,15,30,45` lists its minutes. Only
//! expressions the engine accepts are described affirmatively; anything
//! else, and any valid spelling the wording has no sentence for (a
//! special day form beside a `*`, `L` alone in the weekday column), reads
//! `Custom schedule: <text>`.

use super::expr::CronExpr;
use super::lint::{MONTH_NAMES, WEEKDAY_NAMES};
use super::parse::{is_separator, split_fields};

/// The sentence of `@reboot`.
pub const REBOOT_DESCRIPTION: &str = "Once, when cronstable starts (@reboot)";

/// What an `H` schedule's sentence ends with: the slots are the job's own.
const HASHED_SUFFIX: &str = " (H slots hashed from the job name)";

/// The nicknames the engine parses, and their sentences (`@midnight` is
/// not one: only classic crontab files accept it).
const NICKNAMES: [(&str, &str); 6] = [
    ("@yearly", "Once a year, at midnight on 1 January"),
    ("@annually", "Once a year, at midnight on 1 January"),
    ("@monthly", "At midnight on the 1st of every month"),
    ("@weekly", "At midnight every Sunday"),
    ("@daily", "Every day at midnight"),
    ("@hourly", "Every hour, on the hour"),
];

/// The three-letter spellings a month column accepts, January first.
const MONTH_ABBREVIATIONS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// The three-letter spellings a weekday column accepts, Sunday first.
const WEEKDAY_ABBREVIATIONS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Describes schedule text the way a job with name `hash_key` would run
/// it: `@reboot`, a nickname, or an expression (whose `H` items resolve
/// from `hash_key`; without one they make the text unphraseable). Never
/// fails: text the engine refuses reads `Custom schedule: <text>`.
pub fn describe(text: &str, hash_key: Option<&str>) -> String {
    let low = normalized(text);
    if low == "@reboot" {
        return REBOOT_DESCRIPTION.to_owned();
    }
    if let Some(sentence) = nickname_sentence(&low) {
        return sentence.to_owned();
    }
    match CronExpr::parse(text, hash_key) {
        Ok(expr) => describe_parsed(text, &expr),
        Err(_) => custom(text),
    }
}

/// Describes `text` that the caller already parsed into `expr` (under the
/// job's hash key), sparing a second parse. `expr` must be the parse of
/// `text`, or the sentence describes a schedule the daemon does not run.
pub fn describe_parsed(text: &str, expr: &CronExpr) -> String {
    if let Some(sentence) = nickname_sentence(&normalized(text)) {
        return sentence.to_owned();
    }
    if expr.is_hashed() {
        // The slots the hash chose, phrased like any plain expression and
        // marked as derived from the name.
        let resolved = expr.resolved();
        let sentence = sentence_of(resolved).unwrap_or_else(|| custom(resolved));
        return sentence + HASHED_SUFFIX;
    }
    sentence_of(text).unwrap_or_else(|| custom(text))
}

/// The text lower-cased with its surrounding white space removed, the
/// form nicknames are compared in.
fn normalized(text: &str) -> String {
    text.trim_matches(is_separator).to_lowercase()
}

fn nickname_sentence(low: &str) -> Option<&'static str> {
    NICKNAMES
        .iter()
        .find(|(name, _)| *name == low)
        .map(|(_, sentence)| *sentence)
}

fn custom(text: &str) -> String {
    format!("Custom schedule: {text}")
}

/// A column's values as written: `None` for `*` or `?` (any value),
/// else the sorted distinct values.
type Values = Option<Vec<u32>>;

/// Text the wording has no sentence for; the caller falls back to the
/// custom line.
struct Unphraseable;

type Phrased<T> = Result<T, Unphraseable>;

/// The sentence for a plain (no `H`) 5-, 6- or 7-column expression, or
/// `None` when it cannot be phrased.
fn sentence_of(text: &str) -> Option<String> {
    let fields = split_fields(text);
    let (second, core, year) = match fields.as_slice() {
        core if core.len() == 5 => ("0", core, "*"),
        [core @ .., year] if core.len() == 5 => ("0", core, *year),
        [second, core @ .., year] if core.len() == 5 => (*second, core, *year),
        _ => return None,
    };
    let [minute, hour, dom, month, dow] = [core[0], core[1], core[2], core[3], core[4]];
    let columns = Columns::read(second, minute, hour, dom, month, dow, year).ok()?;
    let base = columns.base(minute, hour);
    if fields.len() == 7 && columns.seconds.as_deref() != Some(&[0][..]) {
        return Some(columns.with_seconds(second, base));
    }
    Some(base)
}

/// Every column of an expression, read with the wording's rules.
struct Columns {
    seconds: Values,
    minutes: Values,
    hours: Values,
    /// Plain days; `Some(vec![])` when the column holds special forms only.
    days: Values,
    /// `L`, `L-n`, `nW` and `LW`, as phrases.
    day_phrases: Vec<String>,
    months: Values,
    /// Plain weekdays; `Some(vec![])` when only special forms remain.
    weekdays: Values,
    /// `L<d>` and `<d>#<n>`, as phrases.
    weekday_phrases: Vec<String>,
    years: Values,
}

impl Columns {
    fn read(
        second: &str,
        minute: &str,
        hour: &str,
        dom: &str,
        month: &str,
        dow: &str,
        year: &str,
    ) -> Phrased<Columns> {
        let (plain_days, day_phrases) = split_special(dom, day_of_month_phrase)?;
        let (plain_weekdays, weekday_phrases) = split_special(dow, weekday_phrase)?;
        let minutes = values(minute, 0, 59, None)?;
        let hours = values(hour, 0, 23, None)?;
        let days = restricted(&plain_days, |spec| values(spec, 1, 31, None))?;
        let months = values(month, 1, 12, Some(&MONTH_ABBREVIATIONS))?;
        let weekdays = restricted(&plain_weekdays, |spec| {
            values(spec, 0, 6, Some(&WEEKDAY_ABBREVIATIONS))
        })?;
        let seconds = values(second, 0, 59, None)?;
        let years = if year == "*" {
            None
        } else {
            values(year, 1970, 2099, None)?
        };
        Ok(Columns {
            seconds,
            minutes,
            hours,
            days,
            day_phrases,
            months,
            weekdays,
            weekday_phrases,
            years,
        })
    }

    /// The sentence without its seconds: the time of day, then the day,
    /// month and year clauses.
    fn base(&self, minute: &str, hour: &str) -> String {
        let mut clauses = vec![time_of_day(minute, hour, &self.minutes, &self.hours)];
        let weekday_clause = {
            let mut items: Vec<String> = listed(&self.weekdays)
                .iter()
                .map(|&d| WEEKDAY_NAMES[d as usize % 7].to_owned())
                .collect();
            items.extend(self.weekday_phrases.iter().cloned());
            (!items.is_empty()).then(|| format!("on {}", join_list(&items)))
        };
        let days = listed(&self.days);
        let day_clause = if !self.day_phrases.is_empty() {
            let mut items: Vec<String> = days
                .iter()
                .map(|&d| format!("the {}", ordinal(d)))
                .collect();
            items.extend(self.day_phrases.iter().cloned());
            Some(format!("on {}", join_list(&items)))
        } else if !days.is_empty() {
            let items: Vec<String> = days.iter().map(|&d| ordinal(d)).collect();
            // "of the month" only when no weekday clause follows.
            let tail = if weekday_clause.is_none() {
                " of the month"
            } else {
                ""
            };
            Some(format!("on the {}{tail}", join_list(&items)))
        } else {
            None
        };
        let any_day_clause = weekday_clause.is_some() || day_clause.is_some();
        match (day_clause, weekday_clause) {
            // Both day columns must match (the dialect's AND rule), and the
            // sentence says so.
            (Some(days), Some(weekdays)) => clauses.push(format!("{days}, and only {weekdays}")),
            (Some(one), None) | (None, Some(one)) => clauses.push(one),
            (None, None) => {}
        }
        match &self.months {
            Some(months) => {
                let names: Vec<String> = months
                    .iter()
                    .map(|&m| MONTH_NAMES[(m as usize).saturating_sub(1) % 12 + 1].to_owned())
                    .collect();
                clauses.push(format!("in {}", join_list(&names)));
            }
            None if !any_day_clause => clauses.push("every day".to_owned()),
            None => {}
        }
        if let Some(years) = &self.years {
            let years: Vec<String> = years.iter().map(u32::to_string).collect();
            clauses.push(format!("in {}", join_list(&years)));
        }
        clauses.join(", ")
    }

    /// The sentence of a 7-column expression whose seconds are not just
    /// `0`. A cadence ("Every 5 seconds") stands alone only when nothing
    /// above the seconds is restricted; otherwise the seconds qualify the
    /// minutes the rest selects.
    fn with_seconds(&self, second: &str, base: String) -> String {
        let unrestricted = self.minutes.is_none()
            && self.hours.is_none()
            && self.days.is_none()
            && self.months.is_none()
            && self.weekdays.is_none()
            && self.years.is_none();
        let listing = |values: &[u32]| {
            let plural = if values.len() > 1 { "s" } else { "" };
            format!("second{plural} {}", padded_list(values))
        };
        match (&self.seconds, unrestricted) {
            (None, true) => "Every second".to_owned(),
            (Some(values), true) => match even_step(second, 60) {
                Some(step) => format!("Every {step} seconds"),
                None => format!("At {}", listing(values)),
            },
            (None, false) => format!("{base}, every second"),
            (Some(values), false) => format!("{base}, at {}", listing(values)),
        }
    }
}

/// The values of a column, or `Some(vec![])` for a column whose plain
/// part is empty (it held special forms only).
fn restricted(plain: &str, read: impl Fn(&str) -> Phrased<Values>) -> Phrased<Values> {
    if plain.is_empty() {
        Ok(Some(Vec::new()))
    } else {
        read(plain)
    }
}

fn listed(values: &Values) -> &[u32] {
    values.as_deref().unwrap_or(&[])
}

/// The leading time-of-day phrase.
fn time_of_day(minute: &str, hour: &str, minutes: &Values, hours: &Values) -> String {
    let minute_step = even_step(minute, 60);
    let hour_step = even_step(hour, 24);
    let digits = all_digits;
    match (minutes, hours) {
        (None, None) => return "Every minute".to_owned(),
        (_, None) if minute_step.is_some() => {
            return format!("Every {} minutes", minute_step.unwrap_or_default())
        }
        (None, Some(_)) if hour_step.is_some() => {
            return format!(
                "Every minute, every {} hours",
                hour_step.unwrap_or_default()
            )
        }
        (Some(_), None) if digits(minute) => {
            return format!("Every hour at :{:02}", number(minute))
        }
        _ => {}
    }
    if let (Some(step), true) = (hour_step, digits(minute)) {
        return format!("At :{:02} every {step} hours", number(minute));
    }
    if digits(minute) && digits(hour) {
        return format!("At {:02}:{:02}", number(hour), number(minute));
    }
    let minute_part = match minutes {
        None => "every minute".to_owned(),
        Some(values) => {
            let plural = if values.len() > 1 { "s" } else { "" };
            format!("minute{plural} {}", padded_list(values))
        }
    };
    let hour_part = match hours {
        None => "every hour".to_owned(),
        Some(values) => {
            let plural = if values.len() > 1 { "s" } else { "" };
            format!("hour{plural} {}", padded_list(values))
        }
    };
    format!("At {minute_part} past {hour_part}")
}

/// The step `n` of a `*/n` column as written, when `n` divides `span`
/// (only then is it a true fixed interval; otherwise the gap across the
/// wrap is shorter, and the values are listed instead).
fn even_step(spec: &str, span: u64) -> Option<&str> {
    let step = spec.strip_prefix("*/")?;
    if step.is_empty() || !step.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = step.parse().ok()?;
    (n != 0 && span.is_multiple_of(n)).then_some(step)
}

fn padded_list(values: &[u32]) -> String {
    values
        .iter()
        .map(|v| format!("{v:02}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `1st`, `2nd`, `3rd`, `4th`, ..., `11th`, `12th`, `13th`, `21st`.
fn ordinal(n: u32) -> String {
    let suffix = match (n % 100, n % 10) {
        (10..=19, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// `a`, `a and b`, `a, b and c`.
fn join_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// Splits a day column into its plain items (comma-joined, lower case)
/// and one phrase per special item, which `phrase` recognises (`Ok(None)`
/// for a plain item). A special form beside `*` or `?` is refused: the
/// star already covers every day, so the phrases would overstate the
/// restriction. Repeated phrases (`L0-7` names Sunday twice) are dropped.
fn split_special(
    spec: &str,
    phrase: fn(&str, &mut Vec<String>) -> Phrased<bool>,
) -> Phrased<(String, Vec<String>)> {
    let lowered = spec.trim_matches(is_separator).to_lowercase();
    let mut plain: Vec<&str> = Vec::new();
    let mut phrases: Vec<String> = Vec::new();
    for item in lowered.split(',') {
        if !phrase(item, &mut phrases)? {
            plain.push(item);
        }
    }
    if !phrases.is_empty() && plain.iter().any(|p| matches!(*p, "*" | "?")) {
        return Err(Unphraseable);
    }
    if phrases.is_empty() && plain.is_empty() {
        return Err(Unphraseable);
    }
    let mut distinct: Vec<String> = Vec::with_capacity(phrases.len());
    for p in phrases {
        if !distinct.contains(&p) {
            distinct.push(p);
        }
    }
    Ok((plain.join(","), distinct))
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A number written in decimal digits, saturating (an absurd value is
/// out of every range anyway).
fn number(s: &str) -> u32 {
    s.parse::<u32>().unwrap_or(u32::MAX)
}

/// The phrase of a special day-of-month item (`L`, `LW`, `L-n`, `nW`),
/// pushed onto `out`; `Ok(false)` for a plain item.
fn day_of_month_phrase(item: &str, out: &mut Vec<String>) -> Phrased<bool> {
    if item == "l" {
        out.push("the last day of the month".to_owned());
    } else if item == "lw" {
        out.push("the last weekday of the month".to_owned());
    } else if let Some(offset) = item.strip_prefix("l-") {
        if !all_digits(offset) || !(1..=30).contains(&number(offset)) {
            return Err(Unphraseable);
        }
        // "n days before", never an ordinal like "3rd-to-last", which
        // invites an off-by-one reading.
        out.push(match number(offset) {
            1 => "the day before the last day of the month".to_owned(),
            n => format!("{n} days before the last day of the month"),
        });
    } else if let Some(day) = item.strip_suffix('w').filter(|d| all_digits(d)) {
        let day = number(day);
        if !(1..=31).contains(&day) {
            return Err(Unphraseable);
        }
        out.push(format!("the weekday nearest the {}", ordinal(day)));
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// The phrases of a special day-of-week item (`L<d>`, `L<a>-<b>`,
/// `<d>#<n>`), pushed onto `out`; `Ok(false)` for a plain item.
fn weekday_phrase(item: &str, out: &mut Vec<String>) -> Phrased<bool> {
    if let Some(days) = item.strip_prefix('l').filter(|rest| !rest.is_empty()) {
        let (first, last) = match days.split_once('-') {
            Some((a, b)) if all_digits(a) && all_digits(b) => (number(a), number(b)),
            None if all_digits(days) => (number(days), number(days)),
            _ => return Err(Unphraseable),
        };
        if first > 7 || last > 7 {
            return Err(Unphraseable);
        }
        // A reversed range names no day (and then the item says nothing).
        for day in first..=last {
            out.push(format!(
                "the last {} of the month",
                WEEKDAY_NAMES[day as usize % 7]
            ));
        }
    } else if let Some((day, nth)) = item.split_once('#') {
        let day = match WEEKDAY_ABBREVIATIONS.iter().position(|n| *n == day) {
            Some(index) => index as u32,
            None if all_digits(day) && number(day) <= 7 => number(day) % 7,
            None => return Err(Unphraseable),
        };
        if !all_digits(nth) || !(1..=5).contains(&number(nth)) {
            return Err(Unphraseable);
        }
        out.push(format!(
            "the {} {} of the month",
            ordinal(number(nth)),
            WEEKDAY_NAMES[day as usize]
        ));
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// The values of a plain column as the wording reads them: `*` or `?`
/// alone is any value (`None`); otherwise lists, ranges, steps and names
/// enumerate to sorted distinct values in `low..=high`. In the weekday
/// column (`high == 6`) a 7 is Sunday (0) and a range ending in 0 ends on
/// Sunday-as-7. A value outside the column is unphraseable.
fn values(spec: &str, low: u32, high: u32, names: Option<&[&str]>) -> Phrased<Values> {
    let spec = spec.trim_matches(is_separator).to_lowercase();
    if spec == "*" || spec == "?" {
        return Ok(None);
    }
    let weekday_column = high == 6;
    let value_of = |token: &str| -> Phrased<u32> {
        let token = token.trim_matches(is_separator);
        if let Some(index) = names.and_then(|names| names.iter().position(|n| *n == token)) {
            // names are listed from the column's first value
            return Ok(index as u32 + low);
        }
        if all_digits(token) {
            Ok(number(token))
        } else {
            Err(Unphraseable)
        }
    };
    let mut found: Vec<u32> = Vec::new();
    for part in spec.split(',') {
        let (body, step) = match part.split_once('/') {
            Some((body, step)) => {
                if !all_digits(step) || number(step) < 1 {
                    return Err(Unphraseable);
                }
                (body, number(step))
            }
            None => (part, 1),
        };
        let (start, end) = if body == "*" {
            (low, high)
        } else if let Some((a, b)) = body.split_once('-') {
            let (a, mut b) = (value_of(a)?, value_of(b)?);
            if weekday_column && b == 0 {
                b = 7;
            }
            (a, b)
        } else {
            let v = value_of(body)?;
            (v, if part.contains('/') { high } else { v })
        };
        // A reversed range wraps around the column's end.
        let spans: [(u32, u32); 2] = if start <= end {
            [(start, end), (1, 0)]
        } else {
            [(start, high), (low, end)]
        };
        for (from, to) in spans {
            if from > to {
                continue;
            }
            let mut v = from;
            loop {
                let value = if weekday_column && v == 7 { 0 } else { v };
                if value < low || value > high {
                    return Err(Unphraseable);
                }
                found.push(value);
                match v.checked_add(step) {
                    Some(next) if next <= to => v = next,
                    _ => break,
                }
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(Some(found))
}

#[cfg(test)]
#[path = "describe_tests.rs"]
mod tests;
