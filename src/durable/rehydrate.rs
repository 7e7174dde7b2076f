//! The read at start: for each configured job, its ledger tail and last
//! real outcome, its pause marks, its pending retry, its boot marker and its
//! catch-up watermark, and this host's last counters snapshot. Before the
//! ledger is read, this host's interrupted runs are reconciled: an `open`
//! in-flight record another process of this host left behind, whose run
//! is gone, is closed and becomes an `unknown` row.

use super::codec::{newest_pause, pause_marks};
use super::DurableSettings;
use crate::config::model::OnMissed;
use crate::config::JobConfig;
use crate::cronexpr::Schedule;
use crate::scheduler::durable::{DurableRetry, Rehydrated};
use crate::scheduler::history::{RealOutcome, RUN_HISTORY_LIMIT};
use crate::state::records::{self, keep, stream};
use crate::state::store::Store;
use chrono::Utc;
use std::collections::HashMap;
use std::sync::Arc;

/// How far a live pid's start may trail the recorded start and still be
/// that run (a recycled pid started later), seconds.
const PID_START_SLACK: f64 = 60.0;

/// Reads everything a start needs for `jobs`.
pub(super) fn read(
    store: &Store,
    settings: &DurableSettings,
    proc_token: &str,
    jobs: &Arc<Vec<Arc<JobConfig>>>,
    digests: &HashMap<String, String>,
) -> std::io::Result<Rehydrated> {
    let mut out = Rehydrated::default();
    let host = settings.host.as_str();
    let boot_id = crate::platform::boot_id();
    let boot_time = crate::platform::boot_time();
    let now = Utc::now();
    for job in jobs.iter() {
        let name = job.name.as_str();
        let digest = digests.get(name).map(String::as_str).unwrap_or_default();
        let is_reboot = matches!(job.schedule.parsed, Schedule::Reboot);
        // Crash reconciliation first, so the ledger read below has the row.
        let inflight = store.read_newest(
            &format!("{}{name}", stream::INFLIGHT),
            keep::INFLIGHT as usize,
        )?;
        let ours: Vec<_> = inflight
            .iter()
            .filter(|(_, d)| d.get("host").and_then(serde_json::Value::as_str) == Some(host))
            .map(|(_, d)| d.clone())
            .collect();
        if let Some(open) = records::open_run(&ours).filter(|o| o.proc_token != proc_token) {
            if still_running(&open) {
                tracing::warn!(
                    target: "cronstable::state",
                    "Job {name}: the previous daemon's run (pid {}) still appears to be running; \
                     leaving its in-flight record open",
                    open.pid.unwrap_or_default()
                );
                if is_reboot {
                    out.reboot_survivors.insert(name.to_owned());
                }
            } else {
                let skip = job.on_missed == OnMissed::Skip;
                let row = records::reconciled_run(&open, skip, now);
                store.append(
                    &format!("{}{name}", stream::INFLIGHT),
                    &records::inflight_closed(host, proc_token, "reconciled-crash", now),
                )?;
                store.append(&format!("{}{name}", stream::RUNS), &row)?;
                tracing::warn!(
                    target: "cronstable::state",
                    "Job {name}: reconciled an interrupted run (reconciled-crash): {}",
                    row["fail_reason"].as_str().unwrap_or_default()
                );
            }
        }
        // The newest rows are what the history shows; the whole ledger
        // is read only where a fold over it is needed.
        let runs_stream = format!("{}{name}", stream::RUNS);
        let newest: Vec<_> = store
            .read_newest(&runs_stream, RUN_HISTORY_LIMIT)?
            .into_iter()
            .map(|(_, d)| d)
            .collect();
        let whole =
            |store: &Store| -> std::io::Result<Vec<serde_json::Map<String, serde_json::Value>>> {
                Ok(store
                    .read(&runs_stream)?
                    .into_iter()
                    .map(|(_, d)| d)
                    .collect())
            };
        let tail: Vec<_> = newest
            .iter()
            .filter_map(|d| records::run_from_data(name, d))
            .collect();
        if !tail.is_empty() {
            out.runs.insert(name.to_owned(), tail);
        }
        let mut last = records::last_real(&newest);
        if last.is_none() && job.only_if_last_succeeded && newest.len() >= RUN_HISTORY_LIMIT {
            last = records::last_real(&whole(store)?);
        }
        if let Some((finished_at, succeeded)) = last {
            out.last_real.insert(
                name.to_owned(),
                RealOutcome {
                    finished_at,
                    succeeded,
                },
            );
        }
        if job.on_missed != OnMissed::Skip {
            let mut mark = if newest.len() >= RUN_HISTORY_LIMIT {
                records::watermark(&whole(store)?)
            } else {
                records::watermark(&newest)
            };
            let checkpoints = store.read_newest(
                &format!("{}{name}", stream::CATCHUP),
                keep::CATCHUP as usize,
            )?;
            let checkpoints: Vec<_> = checkpoints.into_iter().map(|(_, d)| d).collect();
            if let Some(open) = records::open_checkpoint(&checkpoints) {
                if mark.is_none_or(|m| open < m) {
                    mark = Some(open);
                }
            }
            if let Some(mark) = mark {
                out.watermarks.insert(name.to_owned(), mark);
            }
        }
        // The writer prunes each pause stream to `keep::PAUSED` records,
        // so this bounded read is the job's whole retained history: every
        // window the catch-up below the scheduler can still excuse.
        let pauses =
            store.read_newest(&format!("{}{name}", stream::PAUSED), keep::PAUSED as usize)?;
        if let Some(mark) = newest_pause(&pauses) {
            out.pauses.insert(name.to_owned(), mark);
        }
        let history = pause_marks(&pauses);
        if !history.is_empty() {
            out.pause_history.insert(name.to_owned(), history);
        }
        let retries = store.read_newest(
            &format!("{}{name}", stream::RETRIES),
            keep::RETRIES as usize,
        )?;
        let retries: Vec<_> = retries.into_iter().map(|(_, d)| d).collect();
        if let Some(pending) = records::pending_retry(&retries).filter(|p| p.host == host) {
            out.retries.insert(
                name.to_owned(),
                DurableRetry {
                    attempt: pending.attempt,
                    not_before: pending.not_before,
                    digest: pending.digest,
                    recorded_at: pending.at,
                },
            );
        }
        if is_reboot {
            let markers =
                store.read_newest(&format!("{}{name}", stream::REBOOT), keep::REBOOT as usize)?;
            let markers: Vec<_> = markers.into_iter().map(|(_, d)| d).collect();
            if records::boot_marked(&markers, host, boot_id.as_deref(), boot_time, digest) {
                out.reboot_ran.insert(name.to_owned());
            }
        }
    }
    let counters = store.read_newest(&format!("{}{host}", stream::COUNTERS), 1)?;
    out.counters = counters
        .into_iter()
        .next()
        .map(|(_, d)| serde_json::Value::Object(d));
    Ok(out)
}

/// Whether an open record's run still runs: its pid exists and started
/// no later than a minute after the recorded start (else the pid was
/// recycled).
pub(super) fn still_running(open: &records::OpenRun) -> bool {
    let (Some(pid), Some(started)) = (open.pid, open.started_at) else {
        return false;
    };
    match crate::platform::process_started_at(pid) {
        Some(process_start) => {
            process_start <= started.timestamp_micros() as f64 / 1e6 + PID_START_SLACK
        }
        None => false,
    }
}
