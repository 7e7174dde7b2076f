//! The writer thread: takes the scheduler's queued writes in order and
//! appends them to the store. A failed write is dropped: logged with the
//! original's words and counted (`cronstable_state_dropped_writes_total`).

use super::codec::pause_data;
use super::DurableSettings;
use crate::scheduler::durable::DurableWrite;
use crate::state::records::{self, keep, stream};
use crate::state::stats::WriteKind;
use crate::state::store::Store;
use chrono::Utc;
use serde_json::{json, Value};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most one counters snapshot per this long (a shutdown's is forced).
pub const COUNTERS_EVERY: Duration = Duration::from_secs(15);

/// Manifests are refreshed at least this often while the jobs stay put.
pub const MANIFEST_EVERY: Duration = Duration::from_secs(6 * 3600);

/// A garbage-collection pass runs this often (the first a day after the
/// start; a young store's pass defers anyway).
pub const GC_EVERY: Duration = Duration::from_secs(24 * 3600);

/// How often the writer looks at its chores while no write comes.
const CHORES_EVERY: Duration = Duration::from_secs(60);

/// One item of the writer's queue.
#[derive(Debug)]
pub(super) enum Task {
    /// A write of the scheduler, with the job's digest filled in.
    Write {
        /// The write.
        write: DurableWrite,
        /// The digest of its job (for the records that carry one).
        digest: String,
    },
    /// This node's manifest changed.
    Manifest {
        /// The configured jobs.
        jobs: Vec<String>,
        /// The scopes they may use beyond their names and `global`
        /// (advertised, and kept by the collector).
        scopes: Vec<String>,
        /// Their job-set id.
        job_set_id: String,
    },
    /// Answer once everything queued before it is written.
    Flush(tokio::sync::oneshot::Sender<()>),
    /// Settle a due retry before it launches, and say whether it may.
    ConsumeRetry {
        /// The job.
        job: String,
        /// The attempt.
        attempt: u32,
        /// Under the claim lease, only while the ladder is still ours.
        serialize: bool,
        /// Where the verdict goes.
        reply: tokio::sync::oneshot::Sender<crate::scheduler::durable::RetryConsume>,
    },
    /// Claim the retries other nodes left for these jobs.
    ClaimRetries {
        /// The jobs this node owns and arms no ladder of.
        jobs: Vec<crate::scheduler::durable::RetryClaimJob>,
        /// Their digests as installed.
        digests: std::collections::HashMap<String, String>,
    },
}

/// The dropped-write kind of a write.
pub(super) fn kind_of(write: &DurableWrite) -> WriteKind {
    match write {
        DurableWrite::Run { .. } => WriteKind::RunRecord,
        DurableWrite::InflightOpen { .. }
        | DurableWrite::InflightClosed { .. }
        | DurableWrite::SlotTakeover { .. } => WriteKind::Inflight,
        DurableWrite::RetryPending { .. }
        | DurableWrite::RetrySettled { .. }
        | DurableWrite::RetryHandoff { .. } => WriteKind::Retry,
        DurableWrite::RebootMarker { .. } => WriteKind::RebootMarker,
        DurableWrite::Pause { .. } => WriteKind::Pause,
        DurableWrite::Catchup { .. } => WriteKind::Checkpoint,
        DurableWrite::Counters { .. } => WriteKind::Counters,
    }
}

/// Starts the writer thread over `queue`.
pub(super) fn spawn(
    store: Arc<Store>,
    settings: DurableSettings,
    proc_token: String,
    queue: Receiver<Task>,
    events: tokio::sync::mpsc::UnboundedSender<crate::scheduler::durable::DurableEvent>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("cronstable-state-write".to_owned())
        .spawn(move || {
            let mut writer = Writer {
                store,
                settings,
                proc_token,
                events,
                counters_at: None,
                manifest: None,
                manifest_set: None,
                gc_at: Instant::now(),
            };
            loop {
                match queue.recv_timeout(CHORES_EVERY) {
                    Ok(task) => writer.run(task),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
                writer.chores();
            }
        })
        .map(|_| ())
}

struct Writer {
    store: Arc<Store>,
    settings: DurableSettings,
    proc_token: String,
    /// Where reconciled runs go back to the scheduler.
    events: tokio::sync::mpsc::UnboundedSender<crate::scheduler::durable::DurableEvent>,
    /// When the last counters snapshot was written.
    counters_at: Option<Instant>,
    /// The last manifest written: its jobs, their scopes, and when.
    manifest: Option<(Vec<String>, Vec<String>, Instant)>,
    /// The job-set id of the last manifest asked for.
    manifest_set: Option<String>,
    /// When the last garbage-collection pass ran (or the writer started).
    gc_at: Instant,
}

impl Writer {
    fn run(&mut self, task: Task) {
        match task {
            Task::Write { write, digest } => {
                let kind = kind_of(&write);
                let job = job_of(&write);
                if let Err(e) = self.write(write, &digest) {
                    self.store.stats().dropped(kind);
                    warn_dropped(kind, job.as_deref(), &e);
                }
            }
            Task::Manifest {
                mut jobs,
                scopes,
                job_set_id,
            } => {
                jobs.sort_unstable();
                self.manifest_set = Some(job_set_id.clone());
                let fresh = self
                    .manifest
                    .as_ref()
                    .is_some_and(|(written, written_scopes, at)| {
                        *written == jobs
                            && *written_scopes == scopes
                            && at.elapsed() < MANIFEST_EVERY
                    });
                if fresh {
                    return;
                }
                let names: Vec<&str> = jobs.iter().map(String::as_str).collect();
                let scope_names: Vec<&str> = scopes.iter().map(String::as_str).collect();
                let data = records::manifest(
                    &self.settings.host,
                    &job_set_id,
                    &names,
                    &scope_names,
                    Utc::now(),
                );
                match self.append(
                    &format!("{}{}", stream::MANIFESTS, self.settings.host),
                    &data,
                    keep::MANIFESTS,
                ) {
                    Ok(()) => self.manifest = Some((jobs, scopes, Instant::now())),
                    Err(e) => {
                        self.store.stats().dropped(WriteKind::Manifest);
                        tracing::warn!(
                            target: "cronstable::state",
                            "state: failed to record the job manifest: {e}"
                        );
                    }
                }
            }
            Task::Flush(done) => {
                let _ = done.send(());
            }
            Task::ConsumeRetry {
                job,
                attempt,
                serialize,
                reply,
            } => {
                let verdict = self.ladders().consume(&job, attempt, serialize);
                let _ = reply.send(verdict);
            }
            Task::ClaimRetries { jobs, digests } => {
                let events = self.events.clone();
                self.ladders().scan(&jobs, &digests, &events);
            }
        }
    }

    fn ladders(&self) -> super::claims::Ladders<'_> {
        super::claims::Ladders {
            store: &self.store,
            host: &self.settings.host,
            holder: format!("{}#{}", self.settings.host, self.proc_token),
            policy: self.settings.policy,
        }
    }

    /// Appends `data` to `stream`, pruning it to `keep` records.
    fn append(&self, stream: &str, data: &Value, keep: i64) -> std::io::Result<()> {
        self.store.append(stream, data)?;
        if keep > 0 {
            // A failed prune never fails the append: the records linger
            // until the next one.
            if let Err(e) = self.store.prune(stream, keep) {
                tracing::warn!(
                    target: "cronstable::state",
                    "state: could not prune stream '{stream}' after an append (kept records \
                     linger until the next prune): {e}"
                );
            }
        }
        Ok(())
    }

    fn write(&mut self, write: DurableWrite, digest: &str) -> std::io::Result<()> {
        let host = self.settings.host.clone();
        let now = Utc::now();
        match write {
            DurableWrite::Run {
                record,
                archive,
                redact,
            } => {
                let job = record.job.clone();
                self.append(
                    &format!("{}{job}", stream::RUNS),
                    &records::run_data(&record),
                    self.settings.max_runs,
                )?;
                if archive {
                    self.append(
                        &format!("{}{job}", stream::LOGS),
                        &archive_data(&record, redact),
                        self.settings.max_runs,
                    )?;
                }
                Ok(())
            }
            DurableWrite::InflightOpen {
                job,
                pid,
                started_at,
                ..
            } => self.append(
                &format!("{}{job}", stream::INFLIGHT),
                &records::inflight_open(&host, &self.proc_token, pid, started_at, digest),
                keep::INFLIGHT,
            ),
            DurableWrite::SlotTakeover {
                job,
                on_missed_skip,
            } => self.reconcile_takeover(&job, on_missed_skip),
            DurableWrite::InflightClosed { job } => self.append(
                &format!("{}{job}", stream::INFLIGHT),
                &records::inflight_closed(&host, &self.proc_token, "finished", now),
                keep::INFLIGHT,
            ),
            DurableWrite::RetryPending {
                job,
                attempt,
                not_before,
                ..
            } => self.append(
                &format!("{}{job}", stream::RETRIES),
                &records::retry_pending(&host, attempt, not_before, digest, now),
                keep::RETRIES,
            ),
            DurableWrite::RetrySettled {
                job,
                attempt,
                reason,
            } => self.append(
                &format!("{}{job}", stream::RETRIES),
                &records::retry_settled(&host, reason, Some(attempt), now),
                keep::RETRIES,
            ),
            DurableWrite::RetryHandoff {
                job,
                attempt,
                armed_at,
            } => self.append(
                &format!("{}{job}", stream::RETRIES),
                &super::claims::handoff_record(&host, attempt, digest, armed_at, now),
                keep::RETRIES,
            ),
            DurableWrite::RebootMarker { job, .. } => self.append(
                &format!("{}{job}", stream::REBOOT),
                &records::reboot_marker(
                    &host,
                    crate::platform::boot_id().as_deref(),
                    crate::platform::boot_time(),
                    digest,
                    now,
                ),
                keep::REBOOT,
            ),
            DurableWrite::Pause { job, mark } => self.append(
                &format!("{}{job}", stream::PAUSED),
                &pause_data(&mark, &host),
                keep::PAUSED,
            ),
            DurableWrite::Catchup {
                job,
                open,
                watermark,
            } => self.append(
                &format!("{}{job}", stream::CATCHUP),
                &records::catchup_checkpoint(open, watermark, now),
                keep::CATCHUP,
            ),
            DurableWrite::Counters { snapshot, force } => {
                if !force
                    && self
                        .counters_at
                        .is_some_and(|at| at.elapsed() < COUNTERS_EVERY)
                {
                    return Ok(());
                }
                let mut snapshot = snapshot;
                if let Value::Object(map) = &mut snapshot {
                    map.insert("at".into(), json!(crate::state::format::py_isoformat(now)));
                }
                self.append(
                    &format!("{}{host}", stream::COUNTERS),
                    &snapshot,
                    keep::COUNTERS,
                )?;
                self.counters_at = Some(Instant::now());
                Ok(())
            }
        }
    }
}

impl Writer {
    /// What the writer does on its own between writes: refresh this node's
    /// manifest every 6 hours (the GC anchor: a node that stops
    /// manifesting stops protecting its jobs) and run a GC pass every 24.
    fn chores(&mut self) {
        let stale = self
            .manifest
            .as_ref()
            .is_some_and(|(_, _, at)| at.elapsed() >= MANIFEST_EVERY);
        if stale {
            if let (Some((jobs, scopes, at)), Some(job_set_id)) =
                (self.manifest.clone(), self.manifest_set.clone())
            {
                // Forget it first: an unchanged manifest is otherwise
                // "fresh" and not written again.
                self.manifest = None;
                self.run(Task::Manifest {
                    jobs: jobs.clone(),
                    scopes: scopes.clone(),
                    job_set_id,
                });
                if self.manifest.is_none() {
                    // Not written: keep what the collector anchors on,
                    // still stale, so the next chores try again.
                    self.manifest = Some((jobs, scopes, at));
                }
            }
        }
        let Some(grace) = self.settings.gc_grace else {
            return;
        };
        if self.gc_at.elapsed() < GC_EVERY {
            return;
        }
        self.gc_at = Instant::now();
        let (jobs, scopes) = self
            .manifest
            .as_ref()
            .map(|(jobs, scopes, _)| (jobs.clone(), scopes.clone()))
            .unwrap_or_default();
        match crate::state::admin::gc::collect_garbage_scoped(
            &self.store,
            &jobs,
            &scopes,
            grace,
            false,
            &self.settings.host,
        ) {
            Ok(report) => {
                for line in report.lines() {
                    tracing::info!(target: "cronstable::state", "{line}");
                }
            }
            Err(e) => tracing::warn!(
                target: "cronstable::state",
                "state: garbage collection pass skipped: {e}"
            ),
        }
    }

    /// The slot-takeover reconciliation: the newest in-flight record of
    /// `job`, when it is `open` and not of a run that still runs here, is
    /// closed (`reconciled-takeover`) and its run becomes an `unknown` row.
    /// An expired slot proves only that its holder stopped renewing, not
    /// that its run died: the row says so, as the original's does.
    fn reconcile_takeover(&self, job: &str, on_missed_skip: bool) -> std::io::Result<()> {
        let stream = format!("{}{job}", stream::INFLIGHT);
        let newest: Vec<_> = self
            .store
            .read_newest(&stream, 1)?
            .into_iter()
            .map(|(_, d)| d)
            .collect();
        let Some(open) = records::open_run(&newest) else {
            return Ok(());
        };
        let ours = open.host == self.settings.host;
        if ours && (open.proc_token == self.proc_token || super::rehydrate::still_running(&open)) {
            return Ok(());
        }
        let now = Utc::now();
        let row = records::reconciled_run(&open, on_missed_skip, now);
        self.store.append(
            &stream,
            &records::inflight_closed(
                &self.settings.host,
                &self.proc_token,
                "reconciled-takeover",
                now,
            ),
        )?;
        self.append(
            &format!("{}{job}", stream::RUNS),
            &row,
            self.settings.max_runs,
        )?;
        tracing::warn!(
            target: "cronstable::state",
            "Job {job}: reconciled an interrupted run (reconciled-takeover): {}",
            row["fail_reason"].as_str().unwrap_or_default()
        );
        if let serde_json::Value::Object(data) = &row {
            if let Some(run) = records::run_from_data(job, data) {
                let _ = self
                    .events
                    .send(crate::scheduler::durable::DurableEvent::Interrupted(
                        Box::new(run),
                    ));
            }
        }
        Ok(())
    }
}

/// The job a write is about, for the log line.
fn job_of(write: &DurableWrite) -> Option<String> {
    match write {
        DurableWrite::Run { record, .. } => Some(record.job.clone()),
        DurableWrite::InflightOpen { job, .. }
        | DurableWrite::InflightClosed { job }
        | DurableWrite::SlotTakeover { job, .. }
        | DurableWrite::RetryPending { job, .. }
        | DurableWrite::RetrySettled { job, .. }
        | DurableWrite::RetryHandoff { job, .. }
        | DurableWrite::RebootMarker { job, .. }
        | DurableWrite::Pause { job, .. }
        | DurableWrite::Catchup { job, .. } => Some(job.clone()),
        DurableWrite::Counters { .. } => None,
    }
}

/// The warning for a dropped write (the original's lines where it has one).
fn warn_dropped(kind: WriteKind, job: Option<&str>, error: &std::io::Error) {
    let job = job.unwrap_or_default();
    match kind {
        WriteKind::RunRecord => tracing::warn!(
            target: "cronstable::state",
            "state: failed to persist run record for {job}: {error}"
        ),
        WriteKind::Counters => tracing::warn!(
            target: "cronstable::state",
            "state: failed to persist the counter snapshot: {error}"
        ),
        WriteKind::Inflight => tracing::warn!(
            target: "cronstable::state",
            "state: failed to record the in-flight run of {job}: {error}"
        ),
        WriteKind::Retry => tracing::warn!(
            target: "cronstable::state",
            "state: failed to persist retry state for {job}: {error}"
        ),
        WriteKind::Pause => tracing::warn!(
            target: "cronstable::state",
            "state: cannot write the pause record of job {job} ({error}); it holds in memory only"
        ),
        other => tracing::warn!(
            target: "cronstable::state",
            "state: failed to persist the {} record of {job}: {error}",
            other.label()
        ),
    }
}

/// The archived output of a run (`logs/<job>`): its lines per stream,
/// redacted first when asked.
pub fn archive_data(run: &crate::job::RunRecord, redact: bool) -> Value {
    let mut streams = Vec::new();
    let mut texts = Vec::new();
    for (name, output) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for line in output.text.lines() {
            streams.push(name);
            texts.push(line);
        }
    }
    // One pass over every line: a private-key block spans lines.
    let texts: Vec<String> = if redact {
        crate::redact::redact_lines(&texts)
            .into_iter()
            .map(std::borrow::Cow::into_owned)
            .collect()
    } else {
        texts.into_iter().map(str::to_owned).collect()
    };
    let lines: Vec<Value> = streams
        .into_iter()
        .zip(texts)
        .map(|(name, text)| json!({"stream": name, "line": text}))
        .collect();
    let dropped = run.stdout.discarded + run.stderr.discarded;
    let hidden = run.skip_reason.is_some() || run.interrupted;
    json!({
        "finished_at": crate::state::format::py_isoformat(run.finished_at),
        "outcome": run.outcome().as_str(),
        "exit_code": if hidden { Value::Null } else { json!(run.retcode) },
        "redacted": redact,
        "dropped_lines": dropped,
        "lines": lines,
    })
}
