//! The `GET /jobs` entries the board shows, read into typed values once
//! per poll (a 10,000-job list is parsed on the worker thread, never per
//! frame). Only the members the dashboard uses are kept. A scalar of an
//! unexpected type reads as empty rather than failing the whole list, so
//! a daemon of another version still shows its jobs. The smaller answers
//! (runs, resources, cluster, node, preview) stay `serde_json::Value`.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;

/// One entry of `GET /jobs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Job {
    /// The job's name.
    #[serde(deserialize_with = "text")]
    pub name: String,
    /// False for a disabled job.
    #[serde(deserialize_with = "flag")]
    pub enabled: bool,
    /// The schedule as configured.
    #[serde(deserialize_with = "text")]
    pub schedule: String,
    /// The `H` form resolved, when the schedule has one.
    #[serde(deserialize_with = "opt_text")]
    pub schedule_resolved: Option<String>,
    /// The schedule in plain English, from daemons that describe.
    #[serde(deserialize_with = "opt_text")]
    pub description: Option<String>,
    /// The command line.
    #[serde(deserialize_with = "text")]
    pub command: String,
    /// The configured time zone.
    #[serde(deserialize_with = "opt_text")]
    pub timezone: Option<String>,
    /// Whether an instance is running.
    #[serde(deserialize_with = "flag")]
    pub running: bool,
    /// Seconds to the next fire, as of the answer.
    #[serde(deserialize_with = "number")]
    pub scheduled_in: Option<f64>,
    /// The last finished run.
    pub last_run: Option<LastRun>,
    /// Recent runs, oldest first.
    pub history: Vec<HistoryEntry>,
    /// `Some(None)` for a job that is not paused, `Some(Some(..))` for a
    /// paused one, `None` from a daemon without pauses (`p` is inert then).
    #[serde(deserialize_with = "present")]
    pub paused: Option<Option<Pause>>,
    /// Live readings of a monitored job's running instances.
    pub running_resources: Option<Live>,
    /// The SLA check's state.
    pub sla: Option<Sla>,
    /// `Some(None)` when the daemon says no node is known to run the job;
    /// `None` when it does not name owners at all.
    #[serde(rename = "clusterOwner", deserialize_with = "present_text")]
    pub cluster_owner: Option<Option<String>>,
    /// A retry ladder in progress.
    pub retry: Option<Retry>,
    /// The schedule linter's findings.
    pub schedule_findings: Vec<Finding>,
}

/// `last_run` of a job.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LastRun {
    /// `success`, `failure`, `cancelled`, `skipped` or `unknown`.
    #[serde(deserialize_with = "text")]
    pub outcome: String,
    /// The exit code.
    #[serde(deserialize_with = "number")]
    pub exit_code: Option<f64>,
    /// When it finished.
    #[serde(deserialize_with = "opt_text")]
    pub finished_at: Option<String>,
    /// How long it ran.
    #[serde(deserialize_with = "number")]
    pub duration: Option<f64>,
    /// Why it failed.
    #[serde(deserialize_with = "opt_text")]
    pub fail_reason: Option<String>,
}

/// One entry of a job's `history`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct HistoryEntry {
    /// As in [`LastRun::outcome`].
    #[serde(deserialize_with = "text")]
    pub outcome: String,
    /// Seconds.
    #[serde(deserialize_with = "number")]
    pub duration: Option<f64>,
}

/// A pause in force.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Pause {
    /// When it ends.
    #[serde(deserialize_with = "opt_text")]
    pub until: Option<String>,
    /// The operator's note.
    #[serde(deserialize_with = "opt_text")]
    pub note: Option<String>,
    /// Who paused.
    #[serde(deserialize_with = "opt_text")]
    pub by: Option<String>,
}

/// `running_resources`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Live {
    /// CPU use since the previous sample (over 100 with several cores).
    #[serde(deserialize_with = "number")]
    pub cpu_percent: Option<f64>,
    /// Resident memory.
    #[serde(deserialize_with = "number")]
    pub rss_bytes: Option<f64>,
}

/// `sla`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Sla {
    /// `ok` or `late`.
    #[serde(deserialize_with = "text")]
    pub state: String,
}

/// `retry`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Retry {
    /// The attempt waiting or running.
    #[serde(deserialize_with = "number")]
    pub attempt: Option<f64>,
}

/// One schedule lint finding.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Finding {
    /// `note`, `warning`, ...
    #[serde(deserialize_with = "text")]
    pub level: String,
    /// The finding in words.
    #[serde(deserialize_with = "text")]
    pub message: String,
}

impl Job {
    /// Whether the job is late on an SLA check.
    pub fn overdue(&self) -> bool {
        self.sla.as_ref().is_some_and(|s| s.state == "late")
    }

    /// The pause in force, if any.
    pub fn pause(&self) -> Option<&Pause> {
        self.paused.as_ref().and_then(Option::as_ref)
    }
}

/// Parses a `GET /jobs` body.
pub fn parse_jobs(body: &[u8]) -> Result<Vec<Job>, String> {
    serde_json::from_slice(body).map_err(|e| format!("cannot read /jobs: {e}"))
}

/// Reads any JSON value as a scalar of type `T`, draining what it is not.
struct Scalar<T>(fn(Seen) -> T);

/// What [`Scalar`] saw.
enum Seen<'a> {
    Str(&'a str),
    Bool(bool),
    Num(f64),
    Other,
}

impl<'de, T> Visitor<'de> for Scalar<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok(self.0(Seen::Str(v)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<T, E> {
        Ok(self.0(Seen::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<T, E> {
        Ok(self.0(Seen::Num(v as f64)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<T, E> {
        Ok(self.0(Seen::Num(v as f64)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<T, E> {
        Ok(self.0(Seen::Num(v)))
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(self.0(Seen::Other))
    }
    fn visit_none<E>(self) -> Result<T, E> {
        Ok(self.0(Seen::Other))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.0(Seen::Other))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(self.0(Seen::Other))
    }
}

fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(Scalar(|seen| match seen {
        Seen::Str(s) => s.to_owned(),
        Seen::Bool(b) => b.to_string(),
        Seen::Num(n) => n.to_string(),
        Seen::Other => String::new(),
    }))
}

fn opt_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(Scalar(|seen| match seen {
        Seen::Str(s) => Some(s.to_owned()),
        _ => None,
    }))
}

fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    d.deserialize_any(Scalar(|seen| matches!(seen, Seen::Bool(true))))
}

fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(Scalar(|seen| match seen {
        Seen::Num(n) if n.is_finite() => Some(n),
        _ => None,
    }))
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<Pause>>, D::Error> {
    // A pause that is not an object (or null) reads as "not paused".
    let value = serde_json::Value::deserialize(d)?;
    Ok(Some(serde_json::from_value(value).unwrap_or(None)))
}

fn present_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    opt_text(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_answer_reads_into_jobs() {
        let body = br#"[
          {"name": "a", "enabled": true, "schedule": "*/5 * * * *", "command": "echo",
           "running": false, "scheduled_in": 12.5, "paused": null,
           "last_run": {"outcome": "failure", "exit_code": 3, "duration": 0.1,
                        "finished_at": "2026-01-01T00:00:00+00:00", "fail_reason": "x"},
           "history": [{"outcome": "success", "duration": 1}, {"outcome": "failure", "duration": null}],
           "sla": {"state": "late", "thresholds": {}, "breaches": []},
           "running_resources": {"cpu_percent": 50.5, "rss_bytes": 1024, "instances": 1},
           "clusterOwner": null, "retry": {"attempt": 2, "maxAttempts": 3},
           "schedule_findings": [{"code": "c", "level": "note", "message": "m"}]},
          {"name": "b", "enabled": false, "schedule": "@daily", "command": "true",
           "paused": {"until": "2026-01-01T01:00:00+00:00", "note": "n", "by": "me"}},
          {"name": "c"}
        ]"#;
        let jobs = parse_jobs(body).unwrap();
        assert_eq!(jobs.len(), 3);
        let a = &jobs[0];
        assert_eq!(a.name, "a");
        assert!(a.enabled && !a.running);
        assert_eq!(a.scheduled_in, Some(12.5));
        assert!(a.overdue());
        assert_eq!(a.paused.as_ref().map(Option::is_none), Some(true));
        assert_eq!(a.cluster_owner, Some(None));
        assert_eq!(a.last_run.as_ref().unwrap().exit_code, Some(3.0));
        assert_eq!(a.history.len(), 2);
        assert_eq!(a.history[1].duration, None);
        assert_eq!(
            a.running_resources.as_ref().unwrap().rss_bytes,
            Some(1024.0)
        );
        assert_eq!(a.retry.as_ref().unwrap().attempt, Some(2.0));
        assert_eq!(a.schedule_findings[0].message, "m");
        let b = &jobs[1];
        assert_eq!(b.pause().unwrap().by.as_deref(), Some("me"));
        assert_eq!(b.cluster_owner, None, "no key: the daemon names no owners");
        let c = &jobs[2];
        assert!(c.paused.is_none(), "no key: a daemon without pauses");
        assert!(!c.enabled);
    }

    #[test]
    fn odd_scalars_read_as_empty_instead_of_failing_the_list() {
        let body = br#"[{"name": 7, "enabled": "yes", "scheduled_in": "@reboot",
                         "schedule": {"x": [1, 2]}, "command": null, "timezone": 5,
                         "paused": "soon"}]"#;
        let jobs = parse_jobs(body).unwrap();
        let j = &jobs[0];
        assert_eq!(j.name, "7");
        assert!(!j.enabled);
        assert_eq!(j.scheduled_in, None);
        assert_eq!(j.schedule, "");
        assert_eq!(j.command, "");
        assert_eq!(j.timezone, None);
        assert_eq!(j.paused.as_ref().map(Option::is_none), Some(true));
        assert!(parse_jobs(b"{\"not\": \"a list\"}").is_err());
    }
}
