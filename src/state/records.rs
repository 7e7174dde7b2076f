//! The records of each stream, in the original's field names, and the
//! folds that read them (pure: no file is touched here).
//!
//! Streams, per job unless noted: `runs/<job>` (the ledger), `logs/<job>`
//! (archived output), `inflight/<job>` (open/closed), `retries/<job>`
//! (pending/settled), `reboot/<job>` (boot markers), `paused/<job>`
//! (paused/resumed), `catchup/<job>` (open/close checkpoints),
//! `counters/<host>` and `manifests/<host>`.

use super::format::{parse_iso, py_isoformat};
use crate::job::{RunRecord, Trigger};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// Stream name prefixes.
pub mod stream {
    /// The run ledger.
    pub const RUNS: &str = "runs/";
    /// Archived output.
    pub const LOGS: &str = "logs/";
    /// In-flight records.
    pub const INFLIGHT: &str = "inflight/";
    /// Retry ladder records.
    pub const RETRIES: &str = "retries/";
    /// `@reboot` boot markers.
    pub const REBOOT: &str = "reboot/";
    /// Pauses and resumes.
    pub const PAUSED: &str = "paused/";
    /// Catch-up checkpoints.
    pub const CATCHUP: &str = "catchup/";
    /// Counter snapshots, per host.
    pub const COUNTERS: &str = "counters/";
    /// Node manifests, per host.
    pub const MANIFESTS: &str = "manifests/";
    /// Cluster slot cancel requests.
    pub const SLOTS: &str = "slots/";
}

/// Records kept per stream besides the ledger (the original's bounds).
pub mod keep {
    /// `retries/<job>`.
    pub const RETRIES: i64 = 8;
    /// `reboot/<job>`.
    pub const REBOOT: i64 = 32;
    /// `inflight/<job>`.
    pub const INFLIGHT: i64 = 8;
    /// `paused/<job>`.
    pub const PAUSED: i64 = 8;
    /// `catchup/<job>`.
    pub const CATCHUP: i64 = 8;
    /// `counters/<host>`.
    pub const COUNTERS: i64 = 4;
    /// `manifests/<host>`.
    pub const MANIFESTS: i64 = 512;
}

/// A run as the ledger stores it: the shape of `GET /jobs/{name}/runs`
/// rows (`outcome`, `exit_code`, `started_at`, `finished_at`, `duration`,
/// `fail_reason`, `skip_reason`, `resources`, and `ranAt` on every row but
/// a skipped one).
pub fn run_data(run: &RunRecord) -> Value {
    let outcome = run.outcome();
    let hidden = run.skip_reason.is_some() || run.interrupted;
    let finished = py_isoformat(run.finished_at);
    let mut data = json!({
        "outcome": outcome.as_str(),
        "exit_code": if hidden { Value::Null } else { json!(run.retcode) },
        "started_at": if hidden { Value::Null } else { json!(py_isoformat(run.started_at)) },
        "finished_at": finished,
        "duration": run.duration_seconds(),
        "fail_reason": run.fail_reason,
        "skip_reason": run.skip_reason,
        // The ledger keeps the chart series too, so charts survive a
        // restart.
        "resources": run.resources.as_ref().map_or(Value::Null, |r| r.to_json(true)),
    });
    if run.skip_reason.is_none() {
        data["ranAt"] = json!(finished);
    }
    if let Some(verification) = &run.verification {
        data["verification"] = verification.clone();
    }
    if let Some(limits) = &run.limits {
        data["limits"] = limits.to_json();
    }
    data
}

/// A ledger record read back as a run of `job` (None when it carries
/// neither `finished_at` nor `interruptedAt`). Rows from before a restart
/// have no run id, trigger or output: they show as scheduled runs.
pub fn run_from_data(job: &str, data: &Map<String, Value>) -> Option<RunRecord> {
    let instant = |key: &str| data.get(key).and_then(Value::as_str).and_then(parse_iso);
    let finished_at = instant("finished_at").or_else(|| instant("interruptedAt"))?;
    let outcome = data.get("outcome").and_then(Value::as_str).unwrap_or("");
    let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
    let started_at = instant("started_at").unwrap_or(finished_at);
    let retcode = data
        .get("exit_code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    let mut run = RunRecord {
        finished_at,
        retcode: retcode.unwrap_or(0),
        ..RunRecord::begun(0, job.to_owned(), Trigger::Schedule, 0, started_at)
    };
    match outcome {
        "success" => {}
        "failure" => {
            run.fail_reason = Some(text("fail_reason").unwrap_or_else(|| "failure".into()));
            if retcode.is_none() {
                run.retcode = -1;
            }
        }
        "cancelled" => run.cancelled = true,
        "skipped" => run.skip_reason = Some(text("skip_reason").unwrap_or_else(|| "paused".into())),
        "unknown" => {
            run.interrupted = true;
            run.fail_reason = text("fail_reason");
        }
        _ => return None,
    }
    run.verification = data.get("verification").cloned();
    run.resources = data
        .get("resources")
        .and_then(crate::job::monitor::ResourceUsage::from_json);
    run.limits = data
        .get("limits")
        .and_then(crate::job::limits::LimitsRecord::from_json);
    Some(run)
}

/// The instant a ledger row sorts by: its finish, or for an interrupted
/// run its start.
pub fn finish_key(data: &Map<String, Value>) -> Option<DateTime<Utc>> {
    data.get("finished_at")
        .or_else(|| data.get("interruptedAt"))
        .and_then(Value::as_str)
        .and_then(parse_iso)
}

/// The catch-up watermark of a ledger: the newest `finished_at` (rows
/// carrying only `interruptedAt` leave it where it is, so their slot
/// stays owed).
pub fn watermark(rows: &[Map<String, Value>]) -> Option<DateTime<Utc>> {
    rows.iter()
        .filter_map(|d| {
            d.get("finished_at")
                .and_then(Value::as_str)
                .and_then(parse_iso)
        })
        .max()
}

/// The newest success or failure of a ledger by finish time (`unknown`,
/// `cancelled` and `skipped` rows are no verdict); true for a success.
pub fn last_real(rows: &[Map<String, Value>]) -> Option<(DateTime<Utc>, bool)> {
    rows.iter()
        .filter_map(|d| {
            let succeeded = match d.get("outcome").and_then(Value::as_str)? {
                "success" => true,
                "failure" => false,
                _ => return None,
            };
            Some((finish_key(d)?, succeeded))
        })
        .max_by_key(|(at, _)| *at)
}

/// The `open` in-flight record of a run that started on this node.
pub fn inflight_open(
    host: &str,
    proc_token: &str,
    pid: Option<u32>,
    started_at: DateTime<Utc>,
    digest: &str,
) -> Value {
    json!({
        "kind": "open",
        "host": host,
        "proc": proc_token,
        "pid": pid,
        "startedAt": py_isoformat(started_at),
        "jobDigest": digest,
    })
}

/// The `closed` in-flight record (`reason`: `finished`,
/// `reconciled-crash`, `reconciled-takeover`).
pub fn inflight_closed(host: &str, proc_token: &str, reason: &str, at: DateTime<Utc>) -> Value {
    json!({
        "kind": "closed",
        "host": host,
        "proc": proc_token,
        "reason": reason,
        "at": py_isoformat(at),
    })
}

/// An in-flight record another process of this host left open.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRun {
    /// The host that wrote it.
    pub host: String,
    /// The writing process's token.
    pub proc_token: String,
    /// The run's pid, when it started.
    pub pid: Option<u32>,
    /// `startedAt` as written.
    pub started_iso: String,
    /// `startedAt` read.
    pub started_at: Option<DateTime<Utc>>,
}

/// The newest in-flight record when it is `open` (None when the stream's
/// newest record closes it, or there is none).
pub fn open_run(records: &[Map<String, Value>]) -> Option<OpenRun> {
    let newest = records.last()?;
    if newest.get("kind").and_then(Value::as_str) != Some("open") {
        return None;
    }
    let text = |key: &str| {
        newest
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let started_iso = text("startedAt");
    Some(OpenRun {
        host: text("host"),
        proc_token: text("proc"),
        pid: newest
            .get("pid")
            .and_then(Value::as_u64)
            .and_then(|p| u32::try_from(p).ok()),
        started_at: parse_iso(&started_iso),
        started_iso,
    })
}

/// The ledger row crash reconciliation writes for an interrupted run:
/// outcome `unknown`, no exit code, start or duration, the original's
/// `fail_reason`. Under `onMissed: skip` it carries `finished_at` (the
/// run's start: the watermark passes over that slot); otherwise
/// `interruptedAt`, so the slot stays owed to catch-up.
pub fn reconciled_run(open: &OpenRun, on_missed_skip: bool, now: DateTime<Utc>) -> Value {
    let started = if open.started_at.is_some() {
        open.started_iso.clone()
    } else {
        py_isoformat(now)
    };
    let mut data = json!({
        "outcome": "unknown",
        "exit_code": null,
        "started_at": null,
        "duration": null,
        "fail_reason": interrupted_reason(&started, &open.host),
    });
    if on_missed_skip {
        data["finished_at"] = json!(started);
        data["ranAt"] = json!(started);
    } else {
        data["interruptedAt"] = json!(started);
    }
    data
}

/// The `fail_reason` of an interrupted run (the original's text).
pub fn interrupted_reason(started_iso: &str, host: &str) -> String {
    format!(
        "run interrupted: no completion was recorded for the run started at {started_iso} on \
         {host}. The server may have stopped or lost access to saved state before completion"
    )
}

/// A `pending` retry record.
pub fn retry_pending(
    host: &str,
    attempt: u32,
    not_before: DateTime<Utc>,
    digest: &str,
    at: DateTime<Utc>,
) -> Value {
    json!({
        "kind": "pending",
        "attempt": attempt,
        "notBefore": py_isoformat(not_before),
        "jobDigest": digest,
        "host": host,
        "at": py_isoformat(at),
    })
}

/// A `settled` retry record.
pub fn retry_settled(host: &str, reason: &str, attempt: Option<u32>, at: DateTime<Utc>) -> Value {
    let mut data = json!({
        "kind": "settled",
        "reason": reason,
        "host": host,
        "at": py_isoformat(at),
    });
    if let Some(attempt) = attempt {
        data["attempt"] = json!(attempt);
    }
    data
}

/// A pending retry as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The attempt it will be.
    pub attempt: u32,
    /// Its absolute deadline.
    pub not_before: DateTime<Utc>,
    /// The digest of the job it was armed for.
    pub digest: String,
    /// The host that armed it.
    pub host: String,
    /// When it was written.
    pub at: DateTime<Utc>,
}

/// The stream's newest record when it is `pending` (anything else, a
/// settle or an unknown kind such as a `handoff`, leaves nothing to
/// re-arm).
pub fn pending_retry(records: &[Map<String, Value>]) -> Option<Pending> {
    let newest = records.last()?;
    if newest.get("kind").and_then(Value::as_str) != Some("pending") {
        return None;
    }
    let not_before = newest
        .get("notBefore")
        .and_then(Value::as_str)
        .and_then(parse_iso)?;
    Some(Pending {
        attempt: u32::try_from(newest.get("attempt").and_then(Value::as_u64)?).ok()?,
        not_before,
        digest: newest
            .get("jobDigest")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        host: newest
            .get("host")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        at: newest
            .get("at")
            .and_then(Value::as_str)
            .and_then(parse_iso)
            .unwrap_or(not_before),
    })
}

/// A boot marker: this host ran the `@reboot` job of `digest` during the
/// boot identified by `boot_id` / `boot_time`.
pub fn reboot_marker(
    host: &str,
    boot_id: Option<&str>,
    boot_time: Option<f64>,
    digest: &str,
    at: DateTime<Utc>,
) -> Value {
    json!({
        "host": host,
        "bootId": boot_id,
        "bootTime": boot_time,
        "jobDigest": digest,
        "at": py_isoformat(at),
    })
}

/// How far two readings of one boot's start may differ, seconds.
pub const BOOT_TIME_TOLERANCE: f64 = 60.0;

/// Whether the boot markers (`records`, oldest first) cover this boot on
/// `host` for `digest`. The newest marker of this host decides: another
/// digest means the job was redefined (it runs again); otherwise the boot
/// ids must match when both are known, else the boot times must agree
/// within [`BOOT_TIME_TOLERANCE`]. With neither known, nothing covers it
/// (every start counts as a boot).
pub fn boot_marked(
    records: &[Map<String, Value>],
    host: &str,
    boot_id: Option<&str>,
    boot_time: Option<f64>,
    digest: &str,
) -> bool {
    let Some(newest) = records
        .iter()
        .rev()
        .find(|r| r.get("host").and_then(Value::as_str) == Some(host))
    else {
        return false;
    };
    if newest.get("jobDigest").and_then(Value::as_str) != Some(digest) {
        return false;
    }
    let theirs = newest
        .get("bootId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty());
    match (boot_id, theirs) {
        (Some(ours), Some(theirs)) => ours == theirs,
        _ => match (boot_time, newest.get("bootTime").and_then(Value::as_f64)) {
            (Some(ours), Some(theirs)) => (ours - theirs).abs() <= BOOT_TIME_TOLERANCE,
            _ => false,
        },
    }
}

/// A catch-up checkpoint (`open` before a backfill, `close` after).
pub fn catchup_checkpoint(open: bool, watermark: DateTime<Utc>, at: DateTime<Utc>) -> Value {
    json!({
        "kind": if open { "open" } else { "close" },
        "watermark": py_isoformat(watermark),
        "at": py_isoformat(at),
    })
}

/// The watermark of a backfill a restart interrupted: the newest
/// checkpoint's when it is `open`.
pub fn open_checkpoint(records: &[Map<String, Value>]) -> Option<DateTime<Utc>> {
    let newest = records.last()?;
    if newest.get("kind").and_then(Value::as_str) != Some("open") {
        return None;
    }
    newest
        .get("watermark")
        .and_then(Value::as_str)
        .and_then(parse_iso)
}

/// A node manifest: the jobs its config defines and the artifact scopes
/// its jobs may write beyond their names (`global` and every
/// `stateAllowedScopes` entry, given as `scopes`): the GC anchor.
pub fn manifest(
    host: &str,
    job_set_id: &str,
    jobs: &[&str],
    scopes: &[&str],
    at: DateTime<Utc>,
) -> Value {
    let mut sorted: Vec<&str> = jobs.to_vec();
    sorted.sort_unstable();
    let mut advertised: Vec<&str> = scopes.to_vec();
    advertised.push("global");
    advertised.sort_unstable();
    advertised.dedup();
    json!({
        "jobSetId": job_set_id,
        "host": host,
        "jobs": sorted,
        // Load-bearing for the collector: while a recent manifest lacks
        // `scopes` (or `dags`), artifact streams stay unmanaged.
        "scopes": advertised,
        "dags": [],
        "at": py_isoformat(at),
    })
}

#[cfg(test)]
mod tests;
