//! The upcoming fires as an iCalendar (RFC 5545) feed: one `VEVENT` per
//! fire, for `GET /calendar.ics` and `GET /jobs/{name}/calendar.ics`.
//!
//! Fires come from the engine's occurrence walk in each job's clock and
//! are written as UTC instants (`...Z`), so no `VTIMEZONE` is needed and
//! the client shows them in its own zone. An event's `UID` is a hash of
//! the job name plus the instant, stable across refreshes, so subscribed
//! clients update events in place. Events are transparent (a maintenance
//! job does not make anyone busy) and at least five minutes long (a
//! zero-length event is an invisible sliver in week views). Only the job
//! name, its schedule and the schedule's description are written: feeds
//! end up on phones and third-party services, so no command, environment
//! or output goes into one.

use std::collections::HashMap;
use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, Timelike, Utc};
use sha2::{Digest, Sha256};

use super::describe::describe_parsed;
use super::fleet::{zone_label, FleetEntry};

/// Line end of the format.
const CRLF: &str = "\r\n";

/// The shortest event, in seconds.
const MIN_EVENT_SECONDS: u64 = 5 * 60;

/// The longest event, in seconds: a runaway average must not paint whole
/// days solid.
const MAX_EVENT_SECONDS: u64 = 24 * 3600;

/// One job of a feed: its schedule, and its mean run time in seconds over
/// the retained history (`None` without history).
#[derive(Debug, Clone, Copy)]
pub struct CalendarEntry<'a> {
    /// The job.
    pub job: FleetEntry<'a>,
    /// Mean duration of its retained runs.
    pub avg_duration: Option<f64>,
}

/// What a feed covers and how it is labelled.
#[derive(Debug, Clone)]
pub struct CalendarWindow<'a> {
    /// Fires strictly after this instant...
    pub start: DateTime<Utc>,
    /// ...and before `start` plus this many days.
    pub days: u32,
    /// Events per job at most; a job with more is flagged.
    pub per_job: usize,
    /// `X-WR-CALNAME`.
    pub name: &'a str,
    /// `DTSTAMP` of every event (when the feed was made).
    pub now: DateTime<Utc>,
    /// The daemon's version, in `PRODID`.
    pub version: &'a str,
}

/// Escapes a TEXT value (backslash first, then `;` `,` and line breaks).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            ';' => out.push_str("\\;"),
            ',' => out.push_str("\\,"),
            '\r' => {
                // CRLF, or a lone CR, is one line break
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("\\n");
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Folds a content line at 75 octets (continuations start with a space,
/// leaving them 74), never inside a UTF-8 character.
fn fold(line: &str) -> String {
    if line.len() <= 75 {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len() + line.len() / 74 * 3);
    let mut rest = line;
    let mut limit = 75;
    while !rest.is_empty() {
        let mut cut = limit.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if !out.is_empty() {
            out.push_str(CRLF);
            out.push(' ');
        }
        out.push_str(&rest[..cut]);
        rest = &rest[cut..];
        limit = 74;
    }
    out
}

/// `YYYYMMDDTHHMMSSZ`.
fn stamp(at: DateTime<Utc>) -> String {
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// An event's length for a job's mean run time: whole minutes, rounded
/// up, within five minutes and a day.
fn event_seconds(avg: Option<f64>) -> u64 {
    match avg {
        Some(avg) if avg > 0.0 => {
            let minutes = (avg / 60.0).ceil();
            // the clamp below keeps any float in range
            let seconds = (minutes * 60.0).min(MAX_EVENT_SECONDS as f64) as u64;
            seconds.clamp(MIN_EVENT_SECONDS, MAX_EVENT_SECONDS)
        }
        _ => MIN_EVENT_SECONDS,
    }
}

/// An ISO-8601 duration of whole minutes: `PT5M`, `PT1H`, `PT1H30M`.
fn duration_text(seconds: u64) -> String {
    let (hours, minutes) = (seconds / 3600, seconds % 3600 / 60);
    match (hours, minutes) {
        (0, m) => format!("PT{m}M"),
        (h, 0) => format!("PT{h}H"),
        (h, m) => format!("PT{h}H{m}M"),
    }
}

/// A mean run time for people: `42s`, `7m`, `1.5h` (halves round to
/// even, as the original rounds them).
fn runtime_text(avg: f64) -> String {
    if avg < 60.0 {
        return format!("{}s", avg.round_ties_even() as i64);
    }
    let minutes = avg / 60.0;
    if minutes < 60.0 {
        return format!("{}m", minutes.round_ties_even() as i64);
    }
    format!("{:.1}h", minutes / 60.0)
}

/// The first twelve hex digits of the SHA-256 of `name`: the UID's
/// per-job part.
fn uid_prefix(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    let mut hex = String::with_capacity(12);
    for byte in &digest[..6] {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The size at which [`write_calendar`] hands a piece of the feed over.
const PIECE_BYTES: usize = 64 * 1024;

/// The whole `.ics` text for `entries` (in the order given; pass them
/// sorted by name for a stable feed). A job without a fire in the window
/// has no event; no jobs at all is a valid, empty calendar.
pub fn render_calendar(entries: &[CalendarEntry<'_>], window: &CalendarWindow<'_>) -> String {
    let mut out = String::new();
    write_calendar(entries, window, |piece| {
        out.push_str(&piece);
        true
    });
    out
}

/// [`render_calendar`]'s text handed to `emit` in pieces of about 64 KiB
/// (whole events; a job's events may span pieces), so a feed of a
/// hundred megabytes never has to be held whole. `emit` answers whether
/// to go on; `false` (the reader went away) stops the writing.
pub fn write_calendar(
    entries: &[CalendarEntry<'_>],
    window: &CalendarWindow<'_>,
    mut emit: impl FnMut(String) -> bool,
) {
    let end = window.start + Duration::days(i64::from(window.days));
    let mut out = String::with_capacity(PIECE_BYTES + 4096);
    for line in [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        &fold(&format!("PRODID:-//cronstable//{}//EN", window.version)),
        "CALSCALE:GREGORIAN",
        "METHOD:PUBLISH",
        &fold(&format!("X-WR-CALNAME:{}", escape(window.name))),
        // subscription clients honour one of these two refresh hints
        "REFRESH-INTERVAL;VALUE=DURATION:PT1H",
        "X-PUBLISHED-TTL:PT1H",
    ] {
        out.push_str(line);
        out.push_str(CRLF);
    }
    let dtstamp = stamp(window.now);
    // Many jobs share a few schedules: describe each distinct plain
    // expression once (an H slot's sentence is the job's own).
    let mut described: HashMap<&str, String> = HashMap::new();
    for entry in entries {
        let job = &entry.job;
        let mut fires = job
            .expr
            .occurrences(window.start, job.tz)
            .take_while(|fire| *fire < end)
            .peekable();
        if fires.peek().is_none() {
            continue;
        }
        let source = job.expr.canonical();
        let sentence = if job.expr.is_hashed() {
            describe_parsed(source, job.expr)
        } else {
            described
                .entry(source)
                .or_insert_with(|| describe_parsed(source, job.expr))
                .clone()
        };
        let mut description = format!(
            "Schedule: {source}\n{sentence}\nTimezone: {}",
            zone_label(job.tz)
        );
        if let Some(avg) = entry.avg_duration.filter(|avg| *avg > 0.0) {
            let _ = write!(description, "\nTypical runtime: {}", runtime_text(avg));
        }
        let summary = escape(job.name);
        // Every event of the job is the same text around its stamp.
        let head = format!("BEGIN:VEVENT{CRLF}UID:{}-", uid_prefix(job.name));
        let middle = format!("@cronstable{CRLF}DTSTAMP:{dtstamp}{CRLF}DTSTART:");
        let tail = [
            String::new(),
            format!(
                "DURATION:{}",
                duration_text(event_seconds(entry.avg_duration))
            ),
            fold(&format!("SUMMARY:{summary}")),
            fold(&format!("DESCRIPTION:{}", escape(&description))),
            "STATUS:CONFIRMED".to_owned(),
            "TRANSP:TRANSPARENT".to_owned(),
            "END:VEVENT".to_owned(),
        ]
        .join(CRLF);
        let mut truncated = false;
        for (count, fire) in fires.enumerate() {
            if count >= window.per_job {
                truncated = true;
                break;
            }
            let at = stamp(fire);
            for part in [&head, &at, &middle, &at, &tail] {
                out.push_str(part);
            }
            out.push_str(CRLF);
            if out.len() >= PIECE_BYTES {
                let piece = std::mem::replace(&mut out, String::with_capacity(PIECE_BYTES + 4096));
                if !emit(piece) {
                    return;
                }
            }
        }
        if truncated {
            // the cap rides as a parameter: a raw ';' inside a TEXT value
            // is not allowed, and the value (the name) stays unambiguous
            out.push_str(&fold(&format!(
                "X-CRONSTABLE-TRUNCATED;CAP={}:{summary}",
                window.per_job
            )));
            out.push_str(CRLF);
        }
    }
    out.push_str("END:VCALENDAR");
    out.push_str(CRLF);
    emit(out);
}

#[cfg(test)]
#[path = "ics_tests.rs"]
mod tests;
