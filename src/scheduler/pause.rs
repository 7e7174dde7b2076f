//! Runtime pauses: a job's scheduled fires are skipped until a deadline.
//! Pure validation of a pause request; the scheduler keeps the windows.

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Default pause length.
pub const DEFAULT_SECONDS: i64 = 3600;
/// Longest pause.
pub const MAX_SECONDS: i64 = 30 * 24 * 3600;

/// An active pause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PauseWindow {
    /// When it was taken.
    pub since: DateTime<Utc>,
    /// When it lapses.
    pub until: DateTime<Utc>,
    /// Audit note.
    pub note: String,
    /// Who took it.
    pub by: String,
    /// Through what (`api`).
    pub channel: String,
}

/// A pause or a resume as the cluster's leadership store remembers it, so
/// a new leader keeps the pauses its predecessor accepted. The newer mark
/// of a job wins ([`PauseMark::supersedes`]), whatever order the writes
/// land in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PauseMark {
    /// The job was paused with this window.
    Paused(PauseWindow),
    /// The job's pause was ended at `at` by `by`.
    Resumed {
        /// When the resume was accepted.
        at: DateTime<Utc>,
        /// Who asked (the resume body's `by`, else `api`).
        by: String,
    },
}

impl PauseMark {
    /// When the mark was made: the pause's `since`, the resume's `at`.
    pub fn at(&self) -> DateTime<Utc> {
        match self {
            PauseMark::Paused(window) => window.since,
            PauseMark::Resumed { at, .. } => *at,
        }
    }

    /// Whether this mark replaces `other` for the same job: the later one
    /// wins; at the same instant a resume wins over a pause (ending a
    /// pause is the deliberate act), and two marks of one kind keep the
    /// one already there, so a merge never flips between equals.
    pub fn supersedes(&self, other: &PauseMark) -> bool {
        match self.at().cmp(&other.at()) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => matches!(
                (self, other),
                (PauseMark::Resumed { .. }, PauseMark::Paused(_))
            ),
        }
    }

    /// Whether the mark still says something at `now`: a pause until its
    /// end, a resume for [`RESUME_KEPT`] (long enough to override any
    /// older pause write still on its way to the store).
    pub fn live(&self, now: DateTime<Utc>) -> bool {
        match self {
            PauseMark::Paused(window) => window.until > now,
            PauseMark::Resumed { at, .. } => *at + TimeDelta::seconds(RESUME_KEPT) > now,
        }
    }
}

/// How long a recorded resume is kept, seconds: a pause written before it
/// but landing after it (two requests in flight at once) must still lose.
/// A store write is bounded to seconds; an hour is ample.
pub const RESUME_KEPT: i64 = 3600;

/// The body of `POST /jobs/{name}/pause`; every field optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PauseRequest {
    /// Pause length in seconds (1 to 30 days).
    pub duration_seconds: Option<i64>,
    /// Absolute end (ISO-8601; UTC when no offset is given).
    pub until: Option<String>,
    /// Audit note (at most 500 characters).
    pub note: Option<String>,
    /// Operator (at most 100 characters).
    pub by: Option<String>,
    /// The channel the pause came through, when not the REST API (`mcp`
    /// for the MCP tool); never read from a request body.
    #[serde(skip)]
    pub channel: Option<&'static str>,
}

/// Turns a request into a window starting `now`, or says what is wrong.
pub fn window(request: &PauseRequest, now: DateTime<Utc>) -> Result<PauseWindow, String> {
    let until = match (&request.duration_seconds, &request.until) {
        (Some(_), Some(_)) => return Err("durationSeconds and until are exclusive".into()),
        (Some(secs), None) => {
            if !(1..=MAX_SECONDS).contains(secs) {
                return Err(format!(
                    "durationSeconds must be between 1 and {MAX_SECONDS} (30 days)"
                ));
            }
            now + TimeDelta::seconds(*secs)
        }
        (None, Some(text)) => {
            let at = parse_instant(text)
                .ok_or_else(|| format!("until '{text}' is not an ISO-8601 instant"))?;
            if at <= now {
                return Err("until must be in the future".into());
            }
            if at - now > TimeDelta::seconds(MAX_SECONDS) {
                return Err("until must be at most 30 days away".into());
            }
            at
        }
        (None, None) => now + TimeDelta::seconds(DEFAULT_SECONDS),
    };
    let note = request.note.clone().unwrap_or_default();
    if note.chars().count() > 500 {
        return Err("note must be at most 500 characters".into());
    }
    let by = request.by.clone().unwrap_or_else(|| "api".into());
    if by.chars().count() > 100 {
        return Err("by must be at most 100 characters".into());
    }
    Ok(PauseWindow {
        since: now,
        until,
        note,
        by,
        channel: request.channel.unwrap_or("api").into(),
    })
}

fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(naive) = chrono::NaiveDateTime::parse_from_str(text, format) {
            return Some(naive.and_utc());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap()
    }

    #[test]
    fn default_is_one_hour_by_api() {
        let w = window(&PauseRequest::default(), now()).unwrap();
        assert_eq!(w.until - w.since, TimeDelta::hours(1));
        assert_eq!(w.by, "api");
        assert_eq!(w.channel, "api");
    }

    #[test]
    fn duration_and_until() {
        let w = window(
            &PauseRequest {
                duration_seconds: Some(60),
                ..Default::default()
            },
            now(),
        )
        .unwrap();
        assert_eq!(w.until, now() + TimeDelta::seconds(60));
        let w = window(
            &PauseRequest {
                until: Some("2026-11-30T13:30:00".into()),
                ..Default::default()
            },
            now(),
        )
        .unwrap();
        assert_eq!(
            w.until,
            Utc.with_ymd_and_hms(2026, 11, 30, 13, 30, 0).unwrap()
        );
    }

    #[test]
    fn bad_requests_say_why() {
        let bad = |r: PauseRequest| window(&r, now()).unwrap_err();
        assert!(bad(PauseRequest {
            duration_seconds: Some(0),
            ..Default::default()
        })
        .contains("between 1 and"));
        assert!(bad(PauseRequest {
            duration_seconds: Some(5),
            until: Some("2026-12-01T00:00:00Z".into()),
            ..Default::default()
        })
        .contains("exclusive"));
        assert!(bad(PauseRequest {
            until: Some("2026-11-30T11:00:00Z".into()),
            ..Default::default()
        })
        .contains("future"));
        assert!(bad(PauseRequest {
            until: Some("2027-02-01T00:00:00Z".into()),
            ..Default::default()
        })
        .contains("30 days"));
        assert!(bad(PauseRequest {
            note: Some("x".repeat(501)),
            ..Default::default()
        })
        .contains("500"));
    }
}
