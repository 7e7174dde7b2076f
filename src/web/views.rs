//! The JSON and text shapes of the API, built from scheduler snapshots.

use crate::config::model::Command;
use crate::job::outcome::{Outcome, RunRecord};
use crate::scheduler::control::{JobSnapshot, RunSummary};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};
use std::sync::Arc;

mod entries;
mod status;
pub use status::{status_json, status_text, StatusNames};

/// ISO-8601 with an explicit `+00:00` offset, as the original writes.
pub fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Micros, false)
}

fn seconds_until(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<f64> {
    at.map(|t| ((t - now).num_milliseconds().max(0) as f64) / 1000.0)
}

fn is_reboot(config: &crate::config::JobConfig) -> bool {
    config.schedule.parsed.cron().is_none()
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

/// Milliseconds from `now` until `at` (none past zero), the resolution
/// every countdown is shown at; `None` without an instant.
fn countdown_ms(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<i64> {
    at.map(|t| (t - now).num_milliseconds().max(0))
}

/// Countdowns below this many milliseconds (about 31,700 years) are
/// written digit by digit; see [`push_countdown`].
const DIRECT_COUNTDOWN_MS: i64 = 1_000_000_000_000_000;

/// Appends `ms / 1000` seconds as JSON, byte for byte what serde_json
/// writes for the `f64` `ms as f64 / 1000.0` (the countdowns of
/// `/status` and `/jobs`), without the float formatting. serde_json
/// writes the shortest decimal that reads back as the same double; a
/// count of milliseconds below 10^15 is a decimal of at most 15
/// significant digits, which a double tells apart from every other such
/// decimal, so that shortest form is the count itself with the point put
/// in and trailing zeros of the fraction dropped (one kept: `42.0`).
/// Anything larger goes through serde_json.
fn push_countdown(out: &mut Vec<u8>, ms: i64) {
    if !(0..DIRECT_COUNTDOWN_MS).contains(&ms) {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, &(ms as f64 / 1000.0));
        return;
    }
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(digits.format(ms / 1000).as_bytes());
    let fraction = (ms % 1000) as u32;
    let tail = [
        b'.',
        b'0' + (fraction / 100) as u8,
        b'0' + (fraction / 10 % 10) as u8,
        b'0' + (fraction % 10) as u8,
    ];
    let len = if fraction.is_multiple_of(100) {
        2
    } else if fraction.is_multiple_of(10) {
        3
    } else {
        4
    };
    out.extend_from_slice(&tail[..len]);
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
    /// The schedule in plain English (ours: the original's has none).
    description: String,
    enabled: bool,
    history: Vec<HistoryPoint>,
    last_run: Option<RunSummaryView<'a>>,
    /// Jobs with `resourceLimits` only: the configured caps.
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<LimitsView>,
    name: &'a str,
    never_fires: bool,
    paused: Option<PausedView<'a>>,
    pids: &'a [u32],
    /// Pooled jobs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pool: Option<PoolView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<crate::config::model::Priority>,
    #[serde(rename = "rebootPending", skip_serializing_if = "std::ops::Not::not")]
    reboot_pending: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<RetryView>,
    running: bool,
    /// Monitored jobs with a sampled running instance only.
    #[serde(skip_serializing_if = "Option::is_none")]
    running_resources: Option<RunningResourcesView>,
    schedule: &'a str,
    schedule_findings: &'a [crate::cronexpr::LintFinding],
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_resolved: Option<&'a str>,
    scheduled_in: Option<f64>,
    /// Jobs with an `sla` block only.
    #[serde(skip_serializing_if = "Option::is_none")]
    sla: Option<SlaJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<SlotView<'a>>,
    timezone: Option<std::borrow::Cow<'a, str>>,
    utc: bool,
    /// Jobs with a `verify` check only.
    #[serde(skip_serializing_if = "Option::is_none")]
    verification: Option<VerificationView>,
}

/// `limits` of a job entry: the caps `resourceLimits` sets.
#[derive(Debug, serde::Serialize)]
struct LimitsView {
    cpu: Option<f64>,
    memory_bytes: Option<u64>,
    processes: Option<u64>,
    required: bool,
}

/// `pool` of a pooled job's entry: the original's `name`, `slots`,
/// `priority`, `queued` (its waiting entries) and `queueUnavailable`,
/// and (ours) `holders`, its running claims.
#[derive(Debug, serde::Serialize)]
struct PoolView<'a> {
    holders: &'a [Value],
    name: &'a str,
    priority: i64,
    #[serde(
        rename = "queueUnavailable",
        skip_serializing_if = "std::ops::Not::not"
    )]
    queue_unavailable: bool,
    queued: &'a [Value],
    slots: u32,
}

/// `verification` of a job entry: the job has a check, and whether one
/// is running now.
#[derive(Debug, serde::Serialize)]
struct VerificationView {
    configured: bool,
    running: bool,
}

/// `running_resources` of a job entry: the live readings of its
/// monitored running instances, added up.
#[derive(Debug, serde::Serialize)]
struct RunningResourcesView {
    cpu_percent: f64,
    cpu_seconds: f64,
    instances: usize,
    rss_bytes: u64,
}

/// `sla` of a job entry: the thresholds set, `ok` or `late`, and the
/// latched breaches measured now.
#[derive(Debug, serde::Serialize)]
struct SlaJson {
    breaches: Vec<BreachJson>,
    state: &'static str,
    thresholds: std::collections::BTreeMap<&'static str, u64>,
}

#[derive(Debug, serde::Serialize)]
struct BreachJson {
    check: &'static str,
    observed_seconds: f64,
    since: String,
    threshold_seconds: u64,
}

impl SlaJson {
    fn of(view: &crate::scheduler::sla::SlaView) -> SlaJson {
        SlaJson {
            breaches: view
                .breaches
                .iter()
                .map(|b| BreachJson {
                    check: b.check.name(),
                    observed_seconds: b.observed,
                    since: iso(b.since),
                    threshold_seconds: b.threshold,
                })
                .collect(),
            state: if view.breaches.is_empty() {
                "ok"
            } else {
                "late"
            },
            thresholds: view
                .thresholds
                .iter()
                .map(|(check, seconds)| (check.key(), *seconds))
                .collect(),
        }
    }
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
    let timezone = match (&c.schedule.timezone, c.schedule.utc) {
        (Some(tz), _) => Some(std::borrow::Cow::Borrowed(tz.as_str())),
        (None, true) => Some(std::borrow::Cow::Borrowed("UTC")),
        (None, false) => None,
    };
    let hashed = c.schedule.parsed.cron().filter(|expr| expr.is_hashed());
    JobDetail {
        capture_stderr: c.capture_stderr,
        capture_stdout: c.capture_stdout,
        cluster_owner: job.owner.as_ref(),
        cluster_policy: job
            .election
            .then(|| crate::scheduler::ports::cluster_policy_name(c.cluster_policy)),
        command,
        concurrency_scope: job.slot.as_ref().map(|_| "cluster"),
        description: c.schedule.parsed.description(),
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
        pool: c.pool.as_ref().map(|pool| {
            let (queued, holders, unavailable) = match &job.pool {
                Some(seen) => (&seen.queued[..], &seen.holders[..], seen.unavailable),
                None => (&[][..], &[][..], false),
            };
            PoolView {
                holders,
                name: &pool.name,
                priority: pool.priority,
                queue_unavailable: unavailable,
                queued,
                slots: pool.slots,
            }
        }),
        priority: c
            .schedule
            .parsed
            .cron()
            .filter(|_| c.priority != crate::config::model::Priority::Normal)
            .map(|_| c.priority),
        reboot_pending: job.reboot_pending,
        // `retry` and `priority` are shown for cron schedules only, as
        // they always were (an `@reboot` job shows neither).
        retry: c
            .schedule
            .parsed
            .cron()
            .and(job.retry.as_ref())
            .map(|r| RetryView {
                attempt: r.attempt,
                max_attempts: r.max_attempts,
            }),
        running: job.running,
        running_resources: job.running_resources.map(|r| RunningResourcesView {
            cpu_percent: r.cpu_percent,
            cpu_seconds: r.cpu_seconds,
            instances: r.instances,
            rss_bytes: r.rss_bytes,
        }),
        schedule: &c.schedule.text,
        schedule_findings: &c.schedule.findings,
        schedule_resolved: hashed.map(|expr| expr.resolved()),
        scheduled_in,
        sla: job.sla.as_ref().map(SlaJson::of),
        slot: job.slot.as_ref().map(|slot| SlotView {
            held: slot.held,
            holder: slot.holder.as_deref(),
            refs: slot.refs,
        }),
        timezone,
        utc: c.schedule.utc,
        limits: c.resource_limits.as_ref().map(|caps| LimitsView {
            cpu: caps.cpu,
            memory_bytes: caps.memory,
            processes: caps.processes,
            required: caps.required,
        }),
        verification: c.verify.as_ref().map(|_| VerificationView {
            configured: true,
            running: job.verifying,
        }),
    }
}

/// The `GET /jobs` body of one state, rendered once and served to every
/// poller while the state holds. Each countdown (`scheduled_in`) moves
/// with the clock, so it is left out of the rendered text and written at
/// serving time from the absolute instant it counts down to
/// ([`RenderedJobs::body_at`]): the body served is exactly what rendering
/// the same state at that moment gives.
///
/// The rendering keeps the state it shows, and each job's entry is
/// rendered on its own: the next rendering ([`RenderedJobs::render_after`])
/// copies the entry (and its digest) of every job whose snapshot shows
/// the same as before ([`shows_the_same`]) and serializes only the others,
/// so a pause of one job re-renders one entry, not 10,000.
#[derive(Debug)]
pub struct RenderedJobs {
    /// The body with every countdown cut out.
    text: Vec<u8>,
    /// Per job, in order: its entry and countdown.
    entries: Vec<Entry>,
    /// The state rendered, to compare the next one with.
    jobs: Vec<JobSnapshot>,
    /// The entity tag (the tests' `jobs_etag` of the same state).
    etag: String,
}

/// One job's entry in a [`RenderedJobs`].
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Where the entry starts in the text.
    start: usize,
    /// Where its countdown is cut out (the offset in the text).
    cut: usize,
    /// Where it ends.
    end: usize,
    /// The instant the countdown counts down to (`None`: it is `null`).
    at: Option<DateTime<Utc>>,
    /// Whether the entry shows a countdown at all ([`counts_down`]).
    counts_down: bool,
    /// The digest of the entry's text (see [`entry_digest`]).
    digest: [u8; 16],
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

/// Whether a job's entry shows a countdown (`scheduled_in`) from its next
/// fire, as [`job_detail`] decides: not while it is disabled, running or
/// an `@reboot` job.
fn counts_down(job: &JobSnapshot) -> bool {
    let c = &job.config;
    c.enabled && !job.running && !is_reboot(c)
}

/// Whether two snapshots of a job give the same `GET /jobs` entry text
/// (countdown aside, which is written from `next_fire` at serving time):
/// every field the entry is made from is compared, the config by
/// identity (a config is never changed in place; a reload brings new
/// ones). The snapshot is taken apart field by field, so a field added
/// to it does not compile here until it is compared or said to be shown
/// only through the countdown.
fn shows_the_same(a: &JobSnapshot, b: &JobSnapshot) -> bool {
    let JobSnapshot {
        config,
        pids,
        running,
        next_fire: _,
        never_fires,
        last_run,
        history,
        paused,
        retry,
        slot,
        election,
        reboot_pending,
        owner,
        verifying,
        pool,
        running_resources,
        sla,
    } = a;
    Arc::ptr_eq(config, &b.config)
        && *pids == b.pids
        && *running == b.running
        && *never_fires == b.never_fires
        && *last_run == b.last_run
        && *history == b.history
        && *paused == b.paused
        && *retry == b.retry
        && *slot == b.slot
        && *election == b.election
        && *reboot_pending == b.reboot_pending
        && *owner == b.owner
        && *verifying == b.verifying
        && *pool == b.pool
        && *running_resources == b.running_resources
        && *sla == b.sla
}

/// A job's entry serialized with its countdown cut out: the text before
/// the cut and the text after it, back to back in `out` (cleared first);
/// returns the length of the part before.
fn serialize_entry(job: &JobSnapshot, out: &mut Vec<u8>) -> Result<usize, serde_json::Error> {
    let mut detail = job_detail(job, DateTime::<Utc>::UNIX_EPOCH);
    detail.scheduled_in = None;
    out.clear();
    serde_json::to_writer(&mut *out, &detail)?;
    let Some(member) = scheduled_in_member(out) else {
        return Err(serde::ser::Error::custom(
            "a job entry without its scheduled_in member",
        ));
    };
    let cut = member + SCHEDULED_IN_NULL.len() - b"null".len();
    out.drain(cut..cut + b"null".len());
    Ok(cut)
}

/// The digest of one entry's text with its countdown cut out at `cut`:
/// the length before the cut, then the text.
fn entry_digest(text: &[u8], cut: usize) -> [u8; 16] {
    let mut digest = TagDigest::new();
    digest.write(&(cut as u64).to_le_bytes());
    digest.write(text);
    digest.bytes()
}

/// Adds one entry to the bytes a tag digests: the entry's digest and the
/// instant its countdown counts down to (microseconds), so the tag moves
/// with either. The bytes of all entries are digested in one go
/// ([`TagDigest::of`]): per-entry writes cost more than the hashing.
fn tag_entry(tag: &mut Vec<u8>, digest: &[u8; 16], at: Option<DateTime<Utc>>) {
    tag.extend_from_slice(digest);
    match at {
        None => tag.push(0),
        Some(at) => {
            tag.push(1);
            tag.extend_from_slice(&at.timestamp_micros().to_le_bytes());
        }
    }
}

impl RenderedJobs {
    /// Renders `jobs` (in order), computing the tag from the same bytes.
    pub fn render(jobs: Vec<JobSnapshot>) -> Result<RenderedJobs, serde_json::Error> {
        RenderedJobs::render_after(None, jobs)
    }

    /// Renders `jobs` (in order), computing the tag from the same bytes,
    /// reusing from `previous` the entry of every job that shows the
    /// same there (at the same position).
    pub fn render_after(
        previous: Option<&RenderedJobs>,
        jobs: Vec<JobSnapshot>,
    ) -> Result<RenderedJobs, serde_json::Error> {
        let capacity = match previous {
            Some(p) if p.jobs.len() == jobs.len() => p.text.len() + 4096,
            _ => 64 + jobs.len() * 320,
        };
        let mut text = Vec::with_capacity(capacity);
        let mut entries = Vec::with_capacity(jobs.len());
        let mut tag = Vec::with_capacity(jobs.len() * 25);
        let mut scratch = Vec::with_capacity(1024);
        text.push(b'[');
        for (i, job) in jobs.iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            let start = text.len();
            let reused = previous
                .and_then(|p| Some((p.jobs.get(i)?, p.entries.get(i)?, p)))
                .filter(|(old, _, _)| shows_the_same(old, job));
            // A reused entry brings what its config decided, so that the
            // config (10,000 cache misses) is read for new entries only.
            let (cut, digest, counts_down) = match reused {
                Some((_, old, p)) => {
                    text.extend_from_slice(&p.text[old.start..old.end]);
                    (start + (old.cut - old.start), old.digest, old.counts_down)
                }
                None => {
                    let cut = serialize_entry(job, &mut scratch)?;
                    text.extend_from_slice(&scratch);
                    (start + cut, entry_digest(&scratch, cut), counts_down(job))
                }
            };
            let at = if counts_down { job.next_fire } else { None };
            tag_entry(&mut tag, &digest, at);
            entries.push(Entry {
                start,
                cut,
                end: text.len(),
                at,
                counts_down,
                digest,
            });
        }
        text.push(b']');
        Ok(RenderedJobs {
            text,
            entries,
            jobs,
            etag: TagDigest::of(&tag).tag(),
        })
    }

    /// The entity tag.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// The body as of `now`: the rendered text with each countdown
    /// written in.
    pub fn body_at(&self, now: DateTime<Utc>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + self.entries.len() * 12);
        let mut from = 0;
        for entry in &self.entries {
            out.extend_from_slice(&self.text[from..entry.cut]);
            match countdown_ms(entry.at, now) {
                None => out.extend_from_slice(b"null"),
                Some(ms) => push_countdown(&mut out, ms),
            }
            from = entry.cut;
        }
        out.extend_from_slice(&self.text[from..]);
        out
    }
}

/// Two differently seeded 64-bit SipHash digests: 128 bits.
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

    fn of(bytes: &[u8]) -> TagDigest {
        let mut digest = TagDigest::new();
        digest.write(bytes);
        digest
    }

    fn bytes(&self) -> [u8; 16] {
        use std::hash::Hasher;
        let (a, b) = (self.0.finish(), self.1.finish());
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&a.to_be_bytes());
        bytes[8..].copy_from_slice(&b.to_be_bytes());
        bytes
    }

    fn tag(&self) -> String {
        super::conditional::etag_of(&self.bytes())
    }
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
        // The summary only: the chart series is served by
        // `GET /jobs/{name}/resources`, not on the poll loop.
        map.insert(
            "resources".into(),
            run.resources
                .as_ref()
                .map_or(Value::Null, |r| r.to_json(false)),
        );
        if let Some(verification) = &run.verification {
            map.insert("verification".into(), verification.clone());
        }
        if let Some(limits) = &run.limits {
            map.insert("limits".into(), limits.to_json());
        }
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
    // Interrupted runs (crash reconciliation): counted, never a verdict.
    stats.insert("unknown".into(), Value::from(count(Outcome::Unknown)));
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
    stats.extend(crate::job::monitor::run_stats(
        runs.iter().filter_map(|r| r.resources.as_ref()),
        last.and_then(|r| r.resources.as_ref()),
    ));
    Value::Object(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::control::StatusTable;

    /// The entity tag of a `GET /jobs` answer: a digest over every entry as
    /// it would be served, except that each countdown (`scheduled_in`) is
    /// cut out and the absolute instant it counts down to is digested next
    /// to the entry instead. The tag therefore stays put while only the
    /// clock moves (a dashboard that got a 304 keeps its copy and counts
    /// down itself, as with the original) and moves with anything else that
    /// changes. Each entry is digested on its own and the tag digests those
    /// digests (with the instants), so a rendering that reuses an unchanged
    /// entry reuses its digest too; nothing served is left out of it.
    /// [`RenderedJobs`] computes the same tag while rendering; this is its
    /// reference, written from the serialized entries alone.
    pub fn jobs_etag(jobs: &[JobSnapshot]) -> String {
        let mut tag = Vec::new();
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        for job in jobs {
            let mut entry = job_detail(job, epoch);
            let at = entry.scheduled_in.and(job.next_fire);
            entry.scheduled_in = None;
            let text = serde_json::to_vec(&entry).expect("serializes");
            let member = scheduled_in_member(&text).expect("a scheduled_in member");
            let cut = member + SCHEDULED_IN_NULL.len() - b"null".len();
            let mut cut_out = text.clone();
            cut_out.drain(cut..cut + 4);
            tag_entry(&mut tag, &entry_digest(&cut_out, cut), at);
        }
        TagDigest::of(&tag).tag()
    }

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
            "schedule": c.schedule.text,
            "command": command_text(&c.command),
            "description": c.schedule.parsed.description(),
            "captureStdout": c.capture_stdout,
            "captureStderr": c.capture_stderr,
            "utc": c.schedule.utc,
            "timezone": c.schedule.timezone.clone().or_else(|| c.schedule.utc.then(|| "UTC".to_owned())),
            "running": job.running,
            "pids": job.pids,
            "scheduled_in": scheduled_in,
            "never_fires": job.never_fires,
            "schedule_findings": c.schedule.findings,
            "last_run": job.last_run.as_ref().map(run_summary),
            "history": job.history.iter().map(|(o, d)| json!({"outcome": o.as_str(), "duration": d})).collect::<Vec<_>>(),
            "paused": job.paused.as_ref().map(|p| json!({
                "since": iso(p.since), "until": iso(p.until), "note": p.note, "by": p.by, "channel": p.channel,
            })),
        });
        if let (Some(map), Some(expr)) = (v.as_object_mut(), c.schedule.parsed.cron()) {
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
            if let Some(caps) = &c.resource_limits {
                map.insert("limits".into(), caps.payload());
            }
            if c.verify.is_some() {
                map.insert(
                    "verification".into(),
                    json!({"configured": true, "running": job.verifying}),
                );
            }
            if let Some(r) = &job.running_resources {
                map.insert(
                    "running_resources".into(),
                    json!({"cpu_percent": r.cpu_percent, "cpu_seconds": r.cpu_seconds,
                           "rss_bytes": r.rss_bytes, "instances": r.instances}),
                );
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
            verifying: false,
            pool: None,
            running_resources: None,
            sla: None,
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
                "  - name: zoned\n    command: 'true'\n    schedule: 'H H * * *'\n    timezone: Europe/Berlin\n    priority: idle\n    captureStderr: false\n    verify:\n      command: test -s out\n",
                |s| {
                    s.running = true;
                    s.verifying = true;
                    s.running_resources = Some(crate::job::monitor::LiveTotal {
                        cpu_percent: 196.5,
                        cpu_seconds: 8.25,
                        rss_bytes: 21_430_272,
                        instances: 2,
                    });
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
        let rendered = RenderedJobs::render(jobs.clone()).expect("renders");
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
        let empty = RenderedJobs::render(Vec::new()).unwrap();
        assert_eq!(empty.body_at(now), b"[]");
        assert_eq!(empty.etag(), jobs_etag(&[]));
    }

    /// The old input of a `/status` row: one job's state, as the
    /// scheduler handed it over before [`StatusTable`].
    struct StatusSnapshot {
        config: std::sync::Arc<crate::config::JobConfig>,
        pids: Vec<u32>,
        running: bool,
        next_fire: Option<DateTime<Utc>>,
        never_fires: bool,
    }

    /// Each job of `table` in the old shape, as the scheduler built it.
    fn status_snapshots(table: &StatusTable) -> Vec<StatusSnapshot> {
        table
            .jobs
            .iter()
            .enumerate()
            .map(|(index, job)| {
                let live = table.running.iter().find(|(at, _)| *at == index);
                let next_fire = table.next_fires[index];
                StatusSnapshot {
                    config: std::sync::Arc::clone(job),
                    pids: live.map(|(_, pids)| pids.clone()).unwrap_or_default(),
                    running: live.is_some(),
                    next_fire,
                    never_fires: job.enabled
                        && job.schedule.parsed.cron().is_some()
                        && next_fire.is_none(),
                }
            })
            .collect()
    }

    /// One row of `GET /status` (JSON form) as serde wrote it before the
    /// rows were written directly: the reference for [`status_json`].
    /// Fields in the order a JSON object map sorts its keys.
    #[derive(serde::Serialize)]
    struct StatusRow<'a> {
        job: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        never_fires: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        pid: Option<&'a [u32]>,
        #[serde(skip_serializing_if = "ScheduledIn::is_absent")]
        scheduled_in: ScheduledIn,
        status: &'static str,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum ScheduledIn {
        Absent,
        Reboot,
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

    fn status_row(job: &StatusSnapshot, now: DateTime<Utc>) -> StatusRow<'_> {
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

    /// One line of `GET /status` (text form) as it was written with
    /// `std::fmt` before: the reference for [`status_text`].
    fn write_status_line(out: &mut String, job: &StatusSnapshot, now: DateTime<Utc>) {
        use std::fmt::Write as _;
        let name = &job.config.name;
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

    /// A job loaded from `yaml_job`, renamed to `name` (names no config
    /// file would pass, to exercise the escaping).
    fn renamed(yaml_job: &str, name: &str) -> std::sync::Arc<crate::config::JobConfig> {
        let snap = snapshot(yaml_job, |_| {});
        let mut config = (*snap.config).clone();
        config.name = name.to_owned();
        std::sync::Arc::new(config)
    }

    #[test]
    fn countdowns_are_the_bytes_serde_json_writes() {
        let mut values: Vec<i64> = (0..20_000).collect();
        values.extend([
            99_999,
            100_000,
            100_001,
            3_599_999,
            86_400_000,
            123_456_789_012,
            999_999_999_999_999,
            1_000_000_000_000_000,
            1_000_000_000_000_001,
            9_007_199_254_740_993,
            i64::MAX / 2,
            -1,
            -1_500,
        ]);
        // A spread over every magnitude below and around the direct limit.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 18) as u32;
            values.push((x >> 8) as i64 % 10i64.pow(digits).max(1));
        }
        let mut direct = Vec::new();
        for ms in values {
            direct.clear();
            push_countdown(&mut direct, ms);
            let reference = serde_json::to_vec(&(ms as f64 / 1000.0)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&direct),
                String::from_utf8_lossy(&reference),
                "{ms} ms"
            );
        }
    }

    /// The directly written `/status` bodies, both forms, against the
    /// serde rows and the `std::fmt` lines they replace, over every kind
    /// of row and names that need escaping.
    #[test]
    fn status_bodies_are_the_bytes_of_the_old_rendering() {
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 6, 21, 12, 0, 0).unwrap();
        let later = |ms: i64| Some(now + chrono::Duration::milliseconds(ms));
        let cron = "  - name: x\n    command: 'true'\n    schedule: '*/5 * * * *'\n";
        let off =
            "  - name: x\n    command: 'true'\n    schedule: '0 * * * *'\n    enabled: false\n";
        let boot = "  - name: x\n    command: 'true'\n    schedule: '@reboot'\n";
        let dead = "  - name: x\n    command: 'true'\n    schedule: '0 0 1 1 * 2001'\n";
        let names = [
            "plain",
            "with \"quotes\"",
            "back\\slash",
            "new\nline\ttab\r\u{1}\u{1f}\u{7f}",
            "unicode \u{e9}\u{4e2d}\u{1f600}",
            "</script>",
            "",
        ];
        let mut jobs = Vec::new();
        let mut next_fires = Vec::new();
        let mut running = Vec::new();
        for (i, name) in names.iter().enumerate() {
            // Every name in every kind of row.
            let rows = [
                (cron, later(42_100), None),
                (cron, later(0), None),
                (cron, later(-5_000), None),
                (cron, later(59_500), None),
                (cron, later(86_400_000 * 3 + 1), None),
                (off, later(1_000), None),
                (boot, None, None),
                (dead, None, None),
                (cron, later(7), Some(vec![41, 4_000_000_000])),
                (dead, None, Some(vec![])),
                (off, None, Some(vec![9])),
            ];
            for (yaml, next, pids) in rows {
                if let Some(pids) = pids {
                    running.push((jobs.len(), pids));
                }
                jobs.push(renamed(yaml, &format!("{name}{i}")));
                next_fires.push(next);
            }
        }
        let table = StatusTable {
            jobs: std::sync::Arc::new(jobs),
            table_id: 7,
            next_fires,
            running,
        };
        let names = StatusNames::of(&table);
        assert!(names.fits(&table));
        let old = status_snapshots(&table);
        for at in [now, now + chrono::Duration::milliseconds(1_234)] {
            let rows: Vec<StatusRow<'_>> = old.iter().map(|j| status_row(j, at)).collect();
            assert_eq!(
                String::from_utf8(status_json(&names, &table, at)).unwrap(),
                serde_json::to_string(&rows).unwrap()
            );
            let mut lines = String::new();
            for job in &old {
                write_status_line(&mut lines, job, at);
            }
            assert_eq!(
                String::from_utf8(status_text(&names, &table, at)).unwrap(),
                lines
            );
        }
        // No jobs: an empty array and an empty text.
        let empty = StatusTable {
            jobs: std::sync::Arc::new(Vec::new()),
            table_id: 8,
            next_fires: Vec::new(),
            running: Vec::new(),
        };
        assert!(!names.fits(&empty));
        let none = StatusNames::of(&empty);
        assert_eq!(status_json(&none, &empty, now), b"[]");
        assert_eq!(status_text(&none, &empty, now), b"");
    }

    /// A rendering made from the previous one (its unchanged entries
    /// copied) is byte for byte, tag included, the rendering made from
    /// nothing, whatever changed in between.
    #[test]
    fn a_rendering_after_a_change_is_a_fresh_rendering() {
        use crate::scheduler::control::{RetryView, SlotSnapshot};
        use crate::scheduler::pause::PauseWindow;
        use chrono::TimeZone;
        let now = Utc.with_ymd_and_hms(2026, 6, 21, 12, 0, 0).unwrap();
        let later = move |ms: i64| now + chrono::Duration::milliseconds(ms);
        let base: Vec<JobSnapshot> = (0..12)
            .map(|i| {
                let yaml = match i % 4 {
                    0 => format!("  - name: j{i}\n    command: echo \"{i}\\\\\"\n    schedule: '*/5 * * * *'\n"),
                    1 => format!("  - name: j{i}\n    command: [a, 'b c']\n    schedule: '@reboot'\n"),
                    2 => format!("  - name: j{i}\n    command: 'true'\n    schedule: 'H H * * *'\n    enabled: false\n"),
                    _ => format!("  - name: j{i}\n    command: 'true'\n    schedule: '0 0 1 1 * 2001'\n"),
                };
                snapshot(&yaml, |s| {
                    s.next_fire = (i % 4 == 0).then(|| later(1_000 * i));
                    s.never_fires = i % 4 == 3;
                })
            })
            .collect();
        let pause = PauseWindow {
            since: later(-1),
            until: later(60_000),
            note: "n\u{e9}".into(),
            by: "ops".into(),
            channel: "api".into(),
        };
        let run = RunSummary {
            outcome: Outcome::Success,
            exit_code: Some(0),
            started_at: Some(later(-2_000)),
            finished_at: later(-1_000),
            duration: Some(1.0),
            fail_reason: None,
        };
        type Change = Box<dyn Fn(&mut Vec<JobSnapshot>)>;
        let changes: Vec<(&str, Change)> = vec![
            ("nothing", Box::new(|_| {})),
            (
                "a pause",
                Box::new(move |j| j[0].paused = Some(pause.clone())),
            ),
            (
                "a next fire",
                Box::new(move |j| j[4].next_fire = Some(later(99_999))),
            ),
            (
                "a run",
                Box::new(move |j| {
                    j[8].running = true;
                    j[8].pids = vec![12];
                    j[9].last_run = Some(run.clone());
                    j[9].history.push((Outcome::Success, Some(1.0)));
                }),
            ),
            (
                "cluster fields",
                Box::new(|j| {
                    j[1].reboot_pending = true;
                    j[2].election = true;
                    j[3].owner = Some(None);
                    j[5].slot = Some(SlotSnapshot {
                        held: true,
                        holder: Some("n".into()),
                        refs: 1,
                    });
                    j[6].retry = Some(RetryView {
                        attempt: 1,
                        max_attempts: None,
                    });
                }),
            ),
            (
                "a reloaded config",
                Box::new(|j| {
                    let mut config = (*j[0].config).clone();
                    config.command = Command::Shell("echo other".into());
                    j[0].config = std::sync::Arc::new(config);
                }),
            ),
            (
                "a removed job",
                Box::new(|j| {
                    j.remove(3);
                }),
            ),
            (
                "an added job",
                Box::new(|j| {
                    let extra = j[0].clone();
                    j.push(extra);
                }),
            ),
            ("no jobs", Box::new(|j| j.clear())),
        ];
        let fresh = |jobs: &[JobSnapshot], at: DateTime<Utc>| {
            let list: Vec<JobDetail<'_>> = jobs.iter().map(|j| job_detail(j, at)).collect();
            String::from_utf8(serde_json::to_vec(&list).unwrap()).unwrap()
        };
        let mut previous = RenderedJobs::render(base.clone()).unwrap();
        let mut jobs = base;
        for (what, change) in &changes {
            change(&mut jobs);
            let after = RenderedJobs::render_after(Some(&previous), jobs.clone()).unwrap();
            let scratch = RenderedJobs::render(jobs.clone()).unwrap();
            assert_eq!(after.etag(), scratch.etag(), "{what}");
            assert_eq!(after.etag(), jobs_etag(&jobs), "{what}");
            for ms in [0, 1_500] {
                let body = String::from_utf8(after.body_at(later(ms))).unwrap();
                assert_eq!(body, fresh(&jobs, later(ms)), "{what}");
            }
            let moved = *what != "nothing";
            assert_eq!(after.etag() != previous.etag(), moved, "{what}");
            previous = after;
        }
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
