//! The JSON and text shapes of the API, built from scheduler snapshots.

use crate::config::model::Command;
use crate::job::outcome::{Outcome, RunRecord};
use crate::scheduler::control::{JobSnapshot, RunSummary, StatusSnapshot};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};

/// ISO-8601 with an explicit `+00:00` offset, as the original writes.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, false)
}

fn seconds_until(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<f64> {
    at.map(|t| ((t - now).num_milliseconds().max(0) as f64) / 1000.0)
}

fn is_reboot(config: &crate::config::JobConfig) -> bool {
    config.parsed_schedule.cron().is_none()
}

/// One row of `GET /status` (JSON form), serialized straight from the
/// snapshot: a 10,000-job answer builds no intermediate JSON maps.
///
/// Fields are declared in the order a JSON object map sorts its keys, so
/// the bytes are the ones the map-based rows had.
#[derive(Debug, serde::Serialize)]
pub struct StatusRow<'a> {
    job: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    never_fires: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pid: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "ScheduledIn::is_absent")]
    scheduled_in: ScheduledIn,
    status: &'static str,
}

/// The `scheduled_in` member of a status row.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ScheduledIn {
    /// Not part of the row (running or disabled jobs).
    Absent,
    /// `"@reboot"`.
    Reboot,
    /// Seconds until the next fire, or `null` when there is none.
    Seconds(Option<f64>),
}

impl ScheduledIn {
    fn is_absent(&self) -> bool {
        *self == ScheduledIn::Absent
    }
}

impl serde::Serialize for ScheduledIn {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        match self {
            ScheduledIn::Absent | ScheduledIn::Seconds(None) => out.serialize_none(),
            ScheduledIn::Reboot => out.serialize_str("@reboot"),
            ScheduledIn::Seconds(Some(secs)) => out.serialize_f64(*secs),
        }
    }
}

/// One row of `GET /status` (JSON form).
pub fn status_row(job: &StatusSnapshot, now: DateTime<Utc>) -> StatusRow<'_> {
    let row = |status, never_fires, pid, scheduled_in| StatusRow {
        job: &job.config.name,
        never_fires,
        pid,
        scheduled_in,
        status,
    };
    if job.running {
        return row(
            "running",
            job.never_fires,
            Some(&job.pids[..]),
            ScheduledIn::Absent,
        );
    }
    if !job.config.enabled {
        return row("disabled", false, None, ScheduledIn::Absent);
    }
    if is_reboot(&job.config) {
        return row("scheduled", false, None, ScheduledIn::Reboot);
    }
    if job.never_fires {
        return row("scheduled", true, None, ScheduledIn::Seconds(None));
    }
    row(
        "scheduled",
        false,
        None,
        ScheduledIn::Seconds(seconds_until(job.next_fire, now)),
    )
}

/// Appends one line of `GET /status` (text form), newline included, to
/// `out`: the whole answer is written into one buffer.
pub fn write_status_line(out: &mut String, job: &StatusSnapshot, now: DateTime<Utc>) {
    use std::fmt::Write as _;
    let name = &job.config.name;
    // Writing into a String cannot fail.
    let _ = if job.running {
        let _ = write!(out, "{name}: running (pid: ");
        for (i, pid) in job.pids.iter().enumerate() {
            let _ = write!(out, "{}{pid}", if i == 0 { "" } else { ", " });
        }
        writeln!(out, ")")
    } else if !job.config.enabled {
        writeln!(out, "{name}: disabled")
    } else if is_reboot(&job.config) {
        writeln!(out, "{name}: scheduled (@reboot)")
    } else {
        match seconds_until(job.next_fire, now) {
            None => writeln!(
                out,
                "{name}: never fires (schedule has no future occurrence)"
            ),
            Some(secs) => {
                let (count, unit) = relative(secs);
                writeln!(out, "{name}: scheduled (in {count} {unit})")
            }
        }
    };
}

/// A countdown in whole seconds, minutes, hours or days (rounded down
/// after rounding to the second), as the text status words it.
fn relative(secs: f64) -> (i64, &'static str) {
    let s = secs.round() as i64;
    if s < 60 {
        (s, "seconds")
    } else if s < 3600 {
        (s / 60, "minutes")
    } else if s < 86_400 {
        (s / 3600, "hours")
    } else {
        (s / 86_400, "days")
    }
}

fn run_summary(run: &RunSummary) -> Value {
    json!({
        "outcome": run.outcome.as_str(),
        "exit_code": run.exit_code,
        "started_at": run.started_at.map(iso),
        "finished_at": iso(run.finished_at),
        "duration": run.duration,
        "fail_reason": run.fail_reason,
    })
}

/// One entry of `GET /jobs` (and the body of `GET /jobs/{name}`),
/// serialized straight from the snapshot into the response buffer: with
/// 10,000 jobs an intermediate JSON tree per job costs more than the
/// writing itself.
///
/// Fields are declared in the order a JSON object map sorts its keys
/// (bytewise: upper case before lower case, `_` before letters), so the
/// bytes are the ones a map-built entry has; a test holds that.
#[derive(Debug, serde::Serialize)]
pub struct JobDetail<'a> {
    #[serde(rename = "captureStderr")]
    capture_stderr: bool,
    #[serde(rename = "captureStdout")]
    capture_stdout: bool,
    /// Under spread only; null while no quorum names an owner.
    #[serde(rename = "clusterOwner", skip_serializing_if = "Option::is_none")]
    cluster_owner: Option<&'a Option<String>>,
    #[serde(rename = "clusterPolicy", skip_serializing_if = "Option::is_none")]
    cluster_policy: Option<&'static str>,
    command: std::borrow::Cow<'a, str>,
    #[serde(rename = "concurrencyScope", skip_serializing_if = "Option::is_none")]
    concurrency_scope: Option<&'static str>,
    enabled: bool,
    history: Vec<HistoryPoint>,
    last_run: Option<RunSummaryView<'a>>,
    name: &'a str,
    never_fires: bool,
    paused: Option<PausedView<'a>>,
    pids: &'a [u32],
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<crate::config::model::Priority>,
    #[serde(rename = "rebootPending", skip_serializing_if = "std::ops::Not::not")]
    reboot_pending: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<RetryView>,
    running: bool,
    schedule: &'a str,
    schedule_findings: &'a [crate::cronexpr::LintFinding],
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_resolved: Option<&'a str>,
    scheduled_in: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<SlotView<'a>>,
    timezone: Option<std::borrow::Cow<'a, str>>,
    utc: bool,
}

#[derive(Debug, serde::Serialize)]
struct HistoryPoint {
    duration: Option<f64>,
    outcome: &'static str,
}

#[derive(Debug, serde::Serialize)]
struct RunSummaryView<'a> {
    duration: Option<f64>,
    exit_code: Option<i32>,
    fail_reason: Option<&'a str>,
    finished_at: String,
    outcome: &'static str,
    started_at: Option<String>,
}

#[derive(Debug, serde::Serialize)]
struct PausedView<'a> {
    by: &'a str,
    channel: &'a str,
    note: &'a str,
    since: String,
    until: String,
}

#[derive(Debug, serde::Serialize)]
struct RetryView {
    attempt: u32,
    #[serde(rename = "maxAttempts")]
    max_attempts: Option<i64>,
}

#[derive(Debug, serde::Serialize)]
struct SlotView<'a> {
    held: bool,
    holder: Option<&'a str>,
    refs: usize,
}

/// One entry of `GET /jobs` (see [`JobDetail`]).
pub fn job_detail(job: &JobSnapshot, now: DateTime<Utc>) -> JobDetail<'_> {
    let c = &job.config;
    let scheduled_in = if !c.enabled || job.running || is_reboot(&job.config) {
        None
    } else {
        seconds_until(job.next_fire, now)
    };
    let command = match &c.command {
        Command::Shell(s) => std::borrow::Cow::Borrowed(s.as_str()),
        Command::Argv(argv) => std::borrow::Cow::Owned(argv.join(" ")),
    };
    let timezone = match (&c.timezone, c.utc) {
        (Some(tz), _) => Some(std::borrow::Cow::Borrowed(tz.as_str())),
        (None, true) => Some(std::borrow::Cow::Borrowed("UTC")),
        (None, false) => None,
    };
    let hashed = c.parsed_schedule.cron().filter(|expr| expr.is_hashed());
    JobDetail {
        capture_stderr: c.capture_stderr,
        capture_stdout: c.capture_stdout,
        cluster_owner: job.owner.as_ref(),
        cluster_policy: job
            .election
            .then(|| crate::scheduler::ports::cluster_policy_name(c.cluster_policy)),
        command,
        concurrency_scope: job.slot.as_ref().map(|_| "cluster"),
        enabled: c.enabled,
        history: job
            .history
            .iter()
            .map(|(outcome, duration)| HistoryPoint {
                duration: *duration,
                outcome: outcome.as_str(),
            })
            .collect(),
        last_run: job.last_run.as_ref().map(|run| RunSummaryView {
            duration: run.duration,
            exit_code: run.exit_code,
            fail_reason: run.fail_reason.as_deref(),
            finished_at: iso(run.finished_at),
            outcome: run.outcome.as_str(),
            started_at: run.started_at.map(iso),
        }),
        name: &c.name,
        never_fires: job.never_fires,
        paused: job.paused.as_ref().map(|p| PausedView {
            by: &p.by,
            channel: &p.channel,
            note: &p.note,
            since: iso(p.since),
            until: iso(p.until),
        }),
        pids: &job.pids,
        priority: c
            .parsed_schedule
            .cron()
            .filter(|_| c.priority != crate::config::model::Priority::Normal)
            .map(|_| c.priority),
        reboot_pending: job.reboot_pending,
        // `retry` and `priority` are shown for cron schedules only, as
        // they always were (an `@reboot` job shows neither).
        retry: c
            .parsed_schedule
            .cron()
            .and(job.retry.as_ref())
            .map(|r| RetryView {
                attempt: r.attempt,
                max_attempts: r.max_attempts,
            }),
        running: job.running,
        schedule: &c.schedule,
        schedule_findings: &c.schedule_findings,
        schedule_resolved: hashed.map(|expr| expr.resolved()),
        scheduled_in,
        slot: job.slot.as_ref().map(|slot| SlotView {
            held: slot.held,
            holder: slot.holder.as_deref(),
            refs: slot.refs,
        }),
        timezone,
        utc: c.utc,
    }
}

/// The `GET /jobs` body of one state, rendered once and served to every
/// poller while the state holds. Each countdown (`scheduled_in`) moves
/// with the clock, so it is left out of the rendered text and written at
/// serving time from the absolute instant it counts down to
/// ([`RenderedJobs::body_at`]): the body served is exactly what rendering
/// the same state at that moment gives.
#[derive(Debug)]
pub struct RenderedJobs {
    /// The body with every countdown cut out.
    text: Vec<u8>,
    /// Where each cut is (an offset into `text`), with the instant the
    /// countdown there counts down to (`None`: the value is `null`).
    cuts: Vec<(usize, Option<DateTime<Utc>>)>,
    /// The entity tag ([`jobs_etag`] of the same state).
    etag: String,
}

/// The member a countdown is cut from, as the entry is serialized with
/// the countdown set to `null`. A `"` inside a JSON string is always
/// escaped, so this text (with its unescaped quotes) can only be the
/// member itself.
const SCHEDULED_IN_NULL: &[u8] = b",\"scheduled_in\":null";

/// Where [`SCHEDULED_IN_NULL`] starts in a serialized entry. Searched
/// from the end: only the short cluster and time zone members follow it.
fn scheduled_in_member(entry: &[u8]) -> Option<usize> {
    let len = SCHEDULED_IN_NULL.len();
    (0..=entry.len().checked_sub(len)?)
        .rev()
        .find(|&at| entry[at] == b',' && &entry[at..at + len] == SCHEDULED_IN_NULL)
}

impl RenderedJobs {
    /// Renders `jobs` (in order), computing the tag from the same bytes.
    pub fn render(jobs: &[JobSnapshot]) -> Result<RenderedJobs, serde_json::Error> {
        let mut digest = TagDigest::new();
        let mut text = Vec::with_capacity(64 + jobs.len() * 320);
        let mut cuts = Vec::with_capacity(jobs.len());
        let mut entry = Vec::with_capacity(1024);
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        text.push(b'[');
        for (i, job) in jobs.iter().enumerate() {
            let mut detail = job_detail(job, epoch);
            // The instant counted down to, where a countdown is shown.
            let at = detail.scheduled_in.and(job.next_fire);
            detail.scheduled_in = None;
            entry.clear();
            serde_json::to_writer(&mut entry, &detail)?;
            let Some(member) = scheduled_in_member(&entry) else {
                return Err(serde::ser::Error::custom(
                    "a job entry without its scheduled_in member",
                ));
            };
            let cut = member + SCHEDULED_IN_NULL.len() - b"null".len();
            let (head, tail) = (&entry[..cut], &entry[cut + b"null".len()..]);
            if i > 0 {
                text.push(b',');
            }
            text.extend_from_slice(head);
            cuts.push((text.len(), at));
            text.extend_from_slice(tail);
            // The tag's bytes: the entry with the instant in place of the
            // countdown (see jobs_etag).
            digest.write(head);
            let instant = at.map(|t| t.timestamp_micros() as f64 / 1e6);
            serde_json::to_writer(&mut digest, &instant)?;
            digest.write(tail);
        }
        text.push(b']');
        Ok(RenderedJobs {
            text,
            cuts,
            etag: digest.tag(),
        })
    }

    /// The entity tag.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The body as of `now`: the rendered text with each countdown
    /// written in.
    pub fn body_at(&self, now: DateTime<Utc>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + self.cuts.len() * 12);
        let mut from = 0;
        for &(at, instant) in &self.cuts {
            out.extend_from_slice(&self.text[from..at]);
            match seconds_until(instant, now) {
                None => out.extend_from_slice(b"null"),
                Some(secs) => {
                    // Writing into a Vec cannot fail.
                    let _ = serde_json::to_writer(&mut out, &secs);
                }
            }
            from = at;
        }
        out.extend_from_slice(&self.text[from..]);
        out
    }
}

/// Two differently seeded 64-bit SipHash digests: 128 bits of tag.
struct TagDigest(
    std::collections::hash_map::DefaultHasher,
    std::collections::hash_map::DefaultHasher,
);

impl TagDigest {
    fn new() -> TagDigest {
        use std::hash::Hasher;
        let mut digest = TagDigest(Default::default(), Default::default());
        digest.1.write_u8(0x5a);
        digest
    }

    fn write(&mut self, bytes: &[u8]) {
        use std::hash::Hasher;
        self.0.write(bytes);
        self.1.write(bytes);
    }

    fn tag(&self) -> String {
        use std::hash::Hasher;
        let (a, b) = (self.0.finish(), self.1.finish());
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&a.to_be_bytes());
        bytes[8..].copy_from_slice(&b.to_be_bytes());
        super::conditional::etag_of(&bytes)
    }
}

impl std::io::Write for TagDigest {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        TagDigest::write(self, bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The entity tag of a `GET /jobs` answer: a digest of every entry as it
/// would be served, except that each countdown (`scheduled_in`) is
/// replaced by the absolute instant it counts down to. The tag therefore
/// stays put while only the clock moves (a dashboard that got a 304 keeps
/// its copy and counts down itself, as with the original) and moves with
/// anything else that changes. It is computed by serializing into the
/// digest, so nothing served can be left out of it. [`RenderedJobs`]
/// computes the same tag while rendering; this is its reference.
#[cfg(test)]
pub fn jobs_etag(jobs: &[JobSnapshot]) -> String {
    let mut digest = TagDigest::new();
    let epoch = DateTime::<Utc>::UNIX_EPOCH;
    for job in jobs {
        let mut entry = job_detail(job, epoch);
        entry.scheduled_in = entry
            .scheduled_in
            .and(job.next_fire)
            .map(|t| t.timestamp_micros() as f64 / 1e6);
        // Writing into a digest cannot fail; a tag from a partial write
        // would still change with the content.
        let _ = serde_json::to_writer(&mut digest, &entry);
    }
    digest.tag()
}

/// One run of `GET /jobs/{name}/runs`.
pub fn run_entry(run: &RunRecord) -> Value {
    let mut entry = run_summary(&RunSummary::of(run));
    if let Some(map) = entry.as_object_mut() {
        map.insert(
            "trigger".into(),
            serde_json::to_value(run.trigger).unwrap_or(Value::Null),
        );
        map.insert("attempt".into(), Value::from(run.attempt));
        map.insert("stdout".into(), Value::from(run.stdout.text.clone()));
        map.insert("stderr".into(), Value::from(run.stderr.text.clone()));
        map.insert("resources".into(), Value::Null);
        if let Some(reason) = &run.skip_reason {
            map.insert("skip_reason".into(), Value::from(reason.clone()));
            for key in ["exit_code", "started_at", "duration"] {
                map.remove(key);
            }
        } else {
            map.insert("ranAt".into(), Value::from(iso(run.finished_at)));
        }
    }
    entry
}

/// The `stats` block of `GET /jobs/{name}/runs`, over every retained run.
pub fn run_stats(runs: &[RunRecord]) -> Value {
    let count = |o: Outcome| runs.iter().filter(|r| r.outcome() == o).count();
    let (success, failure, cancelled) = (
        count(Outcome::Success),
        count(Outcome::Failure),
        count(Outcome::Cancelled),
    );
    let completed = success + failure;
    let durations: Vec<f64> = runs
        .iter()
        .filter_map(RunRecord::duration_seconds)
        .collect();
    let last = runs
        .iter()
        .filter(|r| r.skip_reason.is_none())
        .max_by_key(|r| r.finished_at);
    let mut stats = Map::new();
    stats.insert("total".into(), Value::from(runs.len()));
    stats.insert("success".into(), Value::from(success));
    stats.insert("failure".into(), Value::from(failure));
    stats.insert("cancelled".into(), Value::from(cancelled));
    stats.insert(
        "success_rate".into(),
        if completed == 0 {
            Value::Null
        } else {
            Value::from(success as f64 / completed as f64)
        },
    );
    let avg =
        (!durations.is_empty()).then(|| durations.iter().sum::<f64>() / durations.len() as f64);
    stats.insert("avg_duration".into(), json!(avg));
    stats.insert(
        "min_duration".into(),
        json!(durations.iter().copied().reduce(f64::min)),
    );
    stats.insert(
        "max_duration".into(),
        json!(durations.iter().copied().reduce(f64::max)),
    );
    stats.insert(
        "last_duration".into(),
        json!(last.and_then(RunRecord::duration_seconds)),
    );
    for key in [
        "avg_cpu_seconds",
        "max_cpu_seconds",
        "last_cpu_seconds",
        "avg_rss_bytes",
        "max_rss_bytes",
        "last_rss_bytes",
    ] {
        stats.insert(key.into(), Value::Null);
    }
    Value::Object(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `GET /jobs` entry as it was built before it was serialized
    /// straight from the snapshot: a JSON map per job. The direct form
    /// must give the same bytes.
    fn command_text(command: &Command) -> String {
        match command {
            Command::Shell(s) => s.clone(),
            Command::Argv(argv) => argv.join(" "),
        }
    }
    fn map_built_entry(job: &JobSnapshot, now: DateTime<Utc>) -> Value {
        let c = &job.config;
        let scheduled_in = if !c.enabled || job.running || is_reboot(&job.config) {
            None
        } else {
            seconds_until(job.next_fire, now)
        };
        let mut v = json!({
            "name": c.name,
            "enabled": c.enabled,
            "schedule": c.schedule,
            "command": command_text(&c.command),
            "captureStdout": c.capture_stdout,
            "captureStderr": c.capture_stderr,
            "utc": c.utc,
            "timezone": c.timezone.clone().or_else(|| c.utc.then(|| "UTC".to_owned())),
            "running": job.running,
            "pids": job.pids,
            "scheduled_in": scheduled_in,
            "never_fires": job.never_fires,
            "schedule_findings": c.schedule_findings,
            "last_run": job.last_run.as_ref().map(run_summary),
            "history": job.history.iter().map(|(o, d)| json!({"outcome": o.as_str(), "duration": d})).collect::<Vec<_>>(),
            "paused": job.paused.as_ref().map(|p| json!({
                "since": iso(p.since), "until": iso(p.until), "note": p.note, "by": p.by, "channel": p.channel,
            })),
        });
        if let (Some(map), Some(expr)) = (v.as_object_mut(), c.parsed_schedule.cron()) {
            if expr.is_hashed() {
                map.insert("schedule_resolved".into(), Value::from(expr.resolved()));
            }
            if let Some(retry) = &job.retry {
                map.insert(
                    "retry".into(),
                    json!({"attempt": retry.attempt, "maxAttempts": retry.max_attempts}),
                );
            }
            if c.priority != crate::config::model::Priority::Normal {
                let name = serde_json::to_value(c.priority).unwrap_or(Value::Null);
                map.insert("priority".into(), name);
            }
        }
        // Cluster members, each only where it means something (the HTTP-API
        // page's rule, keeping the common single-node payload lean).
        if let Some(map) = v.as_object_mut() {
            if job.reboot_pending {
                map.insert("rebootPending".into(), Value::Bool(true));
            }
            if let Some(slot) = &job.slot {
                map.insert("concurrencyScope".into(), Value::from("cluster"));
                map.insert(
                    "slot".into(),
                    json!({"held": slot.held, "holder": slot.holder, "refs": slot.refs}),
                );
            }
            if job.election {
                map.insert(
                    "clusterPolicy".into(),
                    Value::from(crate::scheduler::ports::cluster_policy_name(
                        c.cluster_policy,
                    )),
                );
            }
            if let Some(owner) = &job.owner {
                // Under spread only; null while no quorum names an owner.
                map.insert("clusterOwner".into(), json!(owner));
            }
        }
        v
    }

    fn snapshot(yaml_job: &str, tweak: impl FnOnce(&mut JobSnapshot)) -> JobSnapshot {
        use crate::config::{load_sources, Source, SourceKind};
        let mut loaded = load_sources(&[Source {
            name: "t.yaml".into(),
            text: format!("jobs:\n{yaml_job}"),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("loads");
        let config = std::sync::Arc::new(loaded.jobs.remove(0));
        let mut snap = JobSnapshot {
            config,
            pids: vec![],
            running: false,
            next_fire: None,
            never_fires: false,
            last_run: None,
            history: vec![],
            paused: None,
            retry: None,
            slot: None,
            election: false,
            reboot_pending: false,
            owner: None,
        };
        tweak(&mut snap);
        snap
    }

    #[test]
    fn job_entries_are_the_bytes_a_json_map_gives() {
        use crate::scheduler::control::{RetryView, SlotSnapshot};
        use crate::scheduler::pause::PauseWindow;
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 6, 21, 12, 0, 0).unwrap();
        let later = |s: i64| now + chrono::Duration::milliseconds(s);
        let run = RunSummary {
            outcome: Outcome::Failure,
            exit_code: Some(3),
            started_at: Some(later(-5_000)),
            finished_at: later(-1_250),
            duration: Some(3.75),
            fail_reason: Some("exit code 3 \"quoted\" \u{e9}".into()),
        };
        let cases = vec![
            snapshot("  - name: plain\n    command: echo hi\n    schedule: '*/5 * * * *'\n", |s| {
                s.next_fire = Some(later(42_100));
            }),
            snapshot(
                "  - name: argv\n    command: [echo, a b, c]\n    schedule: '@reboot'\n    utc: false\n    priority: high\n",
                |s| {
                    s.reboot_pending = true;
                    s.election = true;
                    s.retry = Some(RetryView { attempt: 2, max_attempts: None });
                },
            ),
            snapshot(
                "  - name: zoned\n    command: 'true'\n    schedule: 'H H * * *'\n    timezone: Europe/Berlin\n    priority: idle\n    captureStderr: false\n",
                |s| {
                    s.running = true;
                    s.pids = vec![41, 42];
                    s.next_fire = Some(later(1));
                    s.last_run = Some(run.clone());
                    s.history = vec![(Outcome::Success, Some(0.5)), (Outcome::Failure, None), (Outcome::Cancelled, Some(12.0))];
                    s.paused = Some(PauseWindow { since: later(-60_000), until: later(3_600_000), note: "deploy \n window".into(), by: "ops".into(), channel: "api".into() });
                    s.retry = Some(RetryView { attempt: 1, max_attempts: Some(5) });
                    s.slot = Some(SlotSnapshot { held: true, holder: Some("node-a".into()), refs: 2 });
                    s.election = true;
                    s.owner = Some(Some("node-b".into()));
                },
            ),
            snapshot(
                "  - name: dead\n    command: 'true'\n    schedule: '0 0 1 1 * 2001'\n    enabled: false\n    utc: false\n",
                |s| {
                    s.never_fires = true;
                    s.slot = Some(SlotSnapshot { held: false, holder: None, refs: 0 });
                    s.election = true;
                    s.owner = Some(None);
                    s.last_run = Some(RunSummary { exit_code: None, started_at: None, duration: None, fail_reason: None, ..run.clone() });
                },
            ),
        ];
        for snap in &cases {
            let direct = serde_json::to_string(&job_detail(snap, now)).unwrap();
            let mapped = serde_json::to_string(&map_built_entry(snap, now)).unwrap();
            assert_eq!(direct, mapped, "{}", snap.config.name);
        }
    }

    /// A rendering served later writes the countdowns for the moment it
    /// is served: the body is byte for byte what serializing the same
    /// state then gives, and the tag is the reference tag.
    #[test]
    fn a_rendering_served_later_has_the_countdowns_of_that_moment() {
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 6, 21, 12, 0, 0).unwrap();
        let later = |ms: i64| now + chrono::Duration::milliseconds(ms);
        let jobs = vec![
            snapshot("  - name: a\n    command: echo ',\"scheduled_in\":null'\n    schedule: '*/5 * * * *'\n", |s| {
                s.next_fire = Some(later(42_100));
            }),
            snapshot("  - name: boot\n    command: 'true'\n    schedule: '@reboot'\n", |_| {}),
            snapshot("  - name: busy\n    command: 'true'\n    schedule: '* * * * *'\n", |s| {
                s.running = true;
                s.pids = vec![7];
                s.next_fire = Some(later(500));
            }),
            snapshot("  - name: dead\n    command: 'true'\n    schedule: '0 0 1 1 * 2001'\n", |s| {
                s.never_fires = true;
            }),
            snapshot("  - name: z\n    command: 'true'\n    schedule: '0 * * * *'\n    timezone: Europe/Berlin\n", |s| {
                s.next_fire = Some(later(3_599_999));
            }),
        ];
        let rendered = RenderedJobs::render(&jobs).expect("renders");
        assert_eq!(rendered.etag(), jobs_etag(&jobs));
        let fresh = |at: DateTime<Utc>| {
            let list: Vec<JobDetail<'_>> = jobs.iter().map(|j| job_detail(j, at)).collect();
            serde_json::to_vec(&list).unwrap()
        };
        for ms in [0, 999, 1_000, 1_500, 42_099, 42_100, 60_000] {
            let at = later(ms);
            assert_eq!(
                String::from_utf8(rendered.body_at(at)).unwrap(),
                String::from_utf8(fresh(at)).unwrap(),
                "served {ms} ms after rendering"
            );
        }
        // The countdown moves between seconds; nothing else does.
        let (first, second) = (rendered.body_at(later(0)), rendered.body_at(later(1_000)));
        let parsed = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
        assert_eq!(parsed(&first)[0]["scheduled_in"], 42.1);
        assert_eq!(parsed(&second)[0]["scheduled_in"], 41.1);
        assert_eq!(parsed(&second)[4]["scheduled_in"], 3598.999);
        assert_eq!(parsed(&first)[1]["scheduled_in"], Value::Null);
        assert_eq!(parsed(&first)[2]["scheduled_in"], Value::Null);
        // A job list without jobs is an empty array.
        let empty = RenderedJobs::render(&[]).unwrap();
        assert_eq!(empty.body_at(now), b"[]");
        assert_eq!(empty.etag(), jobs_etag(&[]));
    }

    #[test]
    fn relative_times() {
        assert_eq!(relative(14.2), (14, "seconds"));
        assert_eq!(relative(59.4), (59, "seconds"));
        assert_eq!(relative(59.6), (1, "minutes"));
        assert_eq!(relative(125.0), (2, "minutes"));
        assert_eq!(relative(7300.0), (2, "hours"));
        assert_eq!(relative(200_000.0), (2, "days"));
    }

    #[test]
    fn iso_has_an_explicit_offset() {
        use chrono::TimeZone;
        let at = Utc.with_ymd_and_hms(2026, 6, 21, 12, 0, 0).unwrap();
        assert_eq!(iso(at), "2026-06-21T12:00:00.000000+00:00");
    }
}
