//! The scheduler's side of the HTTP API: answering control requests from
//! its own state (snapshots, manual start and cancel, pauses, metrics).

use super::control::{
    ActivityRow, Control, ControlError, JobProgress, JobSnapshot, JobsAnswer, Progress, Recording,
    RetryView, RunSummary, SlotSnapshot, Stamp, StatusTable,
};
use super::pause;
use super::pause::PauseMark;
use super::ports;
use super::ports::Runner;
use super::Scheduler;
use crate::config::model::ConcurrencyScope;
use crate::gossip::fleet::{self, OwnJob, OwnJobs};
use crate::gossip::payload::LastRun;
use crate::job::{RunHandle, RunRecord, Trigger};
use crate::metrics::prometheus::{self, DaemonGauges, JobGauges};
use chrono::{DateTime, Utc};
use std::sync::Arc;

impl Scheduler {
    pub(super) fn handle_control(&mut self, request: Control) {
        match request {
            Control::Jobs { only, reply } => {
                let snapshots = self.snapshots(only.as_deref());
                let _ = reply.send(snapshots);
            }
            Control::JobsSince { since, reply } => {
                let now = self.clock.now();
                let answer = if since.is_some_and(|s| self.stamp_holds(&s, now)) {
                    JobsAnswer::Unchanged
                } else {
                    let jobs = self.snapshots(None);
                    let cluster_fields = jobs.iter().any(|j| {
                        j.election || j.owner.is_some() || j.slot.is_some() || j.pool.is_some()
                    });
                    let stamp = if cluster_fields {
                        None
                    } else {
                        let horizon = jobs
                            .iter()
                            .flat_map(|j| [j.next_fire, j.paused.as_ref().map(|p| p.until)])
                            .flatten()
                            .min();
                        self.stamp(now, horizon)
                    };
                    JobsAnswer::Changed { stamp, jobs }
                };
                let _ = reply.send(answer);
            }
            Control::Status { reply } => {
                let _ = reply.send(self.status_table());
            }
            Control::Runs { job, reply } => {
                let runs = self.job(&job).map(|_| {
                    let mut runs: Vec<RunRecord> = self
                        .store
                        .runs_newest_first(&job)
                        .into_iter()
                        .cloned()
                        .collect();
                    runs.reverse();
                    runs
                });
                let _ = reply.send(runs);
            }
            Control::Logs { job, reply } => {
                let answer = match self.job(&job) {
                    None => Err(ControlError::NotFound(job)),
                    Some(_) => Ok(self
                        .running
                        .get(&job)
                        .and_then(|runs| runs.last())
                        .map(RunHandle::output)
                        .or_else(|| self.last_output.get(&job).cloned())),
                };
                let _ = reply.send(answer);
            }
            Control::Running { job, reply } => {
                let answer = match self.job(&job) {
                    None => Err(ControlError::NotFound(job)),
                    Some(config) => Ok((
                        config,
                        self.running
                            .get(&job)
                            .map(|runs| runs.iter().filter(|r| !r.has_ended()).cloned().collect())
                            .unwrap_or_default(),
                    )),
                };
                let _ = reply.send(answer);
            }
            Control::Activity { reply } => {
                let rows = self
                    .jobs
                    .iter()
                    .map(|job| {
                        let mut runs: Vec<ActivityRow> = self
                            .store
                            .runs_newest_first(&job.name)
                            .into_iter()
                            .map(|r| {
                                let summary = RunSummary::of(r);
                                ActivityRow {
                                    started_at: summary.started_at,
                                    finished_at: summary.finished_at,
                                    outcome: summary.outcome,
                                }
                            })
                            .collect();
                        runs.reverse();
                        (job.name.clone(), runs)
                    })
                    .collect();
                let _ = reply.send(rows);
            }
            Control::Progress {
                prefix,
                since,
                reply,
            } => {
                let answer =
                    (since != Some(self.api.progress_version)).then(|| self.progress(&prefix));
                let _ = reply.send(answer);
            }
            Control::Start { job, here, reply } => match self.manual_start(&job, here) {
                Ok(Some(pooled)) => self.pool_manual_start(&pooled, reply),
                other => {
                    let _ = reply.send(other.map(|_| None));
                }
            },
            Control::Pools { reply } => {
                let _ = reply.send(super::control::PoolRead::new(self.pools.snapshot()));
            }
            Control::PoolCancel { pool, key, reply } => {
                let _ = reply.send(super::control::PoolRead::new(
                    self.pools.cancel(&pool, &key),
                ));
            }
            Control::Cancel { job, reply } => {
                let _ = reply.send(self.manual_cancel(&job));
            }
            Control::Pause {
                job,
                request,
                reply,
            } => {
                let _ = reply.send(self.manual_pause(&job, &request));
            }
            Control::Resume { job, by, reply } => {
                let _ = reply.send(self.manual_resume(&job, by));
            }
            Control::Metrics { reply } => {
                let snapshot = self.metrics_snapshot();
                let _ = reply.send(snapshot);
            }
            Control::JobSetId { reply } => {
                let _ = reply.send(self.job_set_id.clone());
            }
            Control::Fleet { reply } => {
                let _ = reply.send(self.fleet_jobs());
            }
        }
    }

    /// This node's jobs as the fleet view advertises them: at most the
    /// payload's cap, chosen by name before any is summarized.
    fn fleet_jobs(&self) -> OwnJobs {
        let now = self.clock.now();
        let (chosen, truncated) = fleet::advertised(
            self.jobs
                .iter()
                .enumerate()
                .map(|(index, job)| (index, job.name.as_str())),
        );
        let mut jobs = std::collections::BTreeMap::new();
        for index in chosen {
            let job = &self.jobs[index];
            let running = self
                .running
                .get(&job.name)
                .is_some_and(|r| r.iter().any(|h| !h.has_ended()));
            let counts_down_to = (job.enabled && !running)
                .then(|| self.api.next_fires.get(index, job, now))
                .flatten();
            // A skipped slot is not a run; the fleet view shows runs.
            let last = self
                .store
                .runs_newest_first(&job.name)
                .into_iter()
                .find(|r| r.skip_reason.is_none())
                .map(|r| {
                    let run = RunSummary::of(r);
                    LastRun {
                        outcome: run.outcome.as_str().to_owned(),
                        finished_at: crate::pyfmt::python_isoformat(run.finished_at),
                        duration: run.duration,
                        exit_code: run.exit_code.map(i64::from),
                    }
                });
            jobs.insert(
                job.name.clone(),
                OwnJob {
                    running,
                    enabled: job.enabled,
                    counts_down_to,
                    last,
                },
            );
        }
        OwnJobs { jobs, truncated }
    }

    /// Keeps the output of a run that just finished, so a log viewer
    /// opened after the run still sees its lines. Called before the run's
    /// handle leaves the running set.
    pub(super) fn keep_last_output(&mut self, job: &str, run_id: u64) {
        let finished = self
            .running
            .get(job)
            .and_then(|runs| runs.iter().find(|r| r.run_id == run_id));
        if let Some(handle) = finished {
            self.last_output.insert(job.to_owned(), handle.output());
        }
    }

    /// Where `name`'s scheduled fires run, for a control request: the
    /// runner when it is this node, else the refusal naming the other
    /// node (409) or saying none is known (503).
    fn routed(&self, name: &str) -> Result<(Arc<crate::config::JobConfig>, Runner), ControlError> {
        let job = self
            .job(name)
            .ok_or_else(|| ControlError::NotFound(name.to_owned()))?;
        match self.gate.runner(&job) {
            Runner::Elsewhere(runner) => Err(ControlError::Elsewhere {
                job: name.to_owned(),
                runner,
            }),
            Runner::Unknown => Err(ControlError::NoRunner {
                job: name.to_owned(),
            }),
            runner => Ok((job, runner)),
        }
    }

    /// The store write that makes a pause or resume of `job` hold on the
    /// next leader, when this node decides for the cluster.
    fn record_mark(&self, job: &str, runner: &Runner, mark: PauseMark) -> Option<Recording> {
        if *runner != Runner::Leader {
            return None;
        }
        let records = self.gate.records()?;
        Some(Recording::new(records.record_pause(job, mark)))
    }

    fn manual_pause(
        &mut self,
        name: &str,
        request: &pause::PauseRequest,
    ) -> Result<(pause::PauseWindow, Option<Recording>), ControlError> {
        if self.job(name).is_none() {
            return Err(ControlError::NotFound(name.to_owned()));
        }
        // A bad window is refused wherever the request landed.
        let window = pause::window(request, self.clock.now()).map_err(ControlError::BadRequest)?;
        let (_, runner) = self.routed(name)?;
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {name} paused until {} by {} ({}){}",
            crate::report::context::python_isoformat(window.until),
            window.by,
            window.channel,
            if window.note.is_empty() {
                String::new()
            } else {
                format!(": {}", window.note)
            }
        );
        self.store.set_pause(name, window.clone());
        self.persist_pause(name, PauseMark::Paused(window.clone()));
        let recording = self.record_mark(name, &runner, PauseMark::Paused(window.clone()));
        Ok((window, recording))
    }

    fn manual_resume(&mut self, name: &str, by: String) -> Result<Option<Recording>, ControlError> {
        let (_, runner) = self.routed(name)?;
        if self.store.clear_pause(name) {
            tracing::info!(target: "cronstable::scheduler", "Job {name} resumed");
        }
        let at = self.clock.now();
        self.persist_pause(name, PauseMark::Resumed { at, by: by.clone() });
        Ok(self.record_mark(name, &runner, PauseMark::Resumed { at, by }))
    }

    /// A manual start through the gates; a pooled job is handed back to
    /// be queued (its answer waits for the store).
    fn manual_start(
        &mut self,
        name: &str,
        here: bool,
    ) -> Result<Option<Arc<crate::config::JobConfig>>, ControlError> {
        let job = if here {
            self.job(name)
                .ok_or_else(|| ControlError::NotFound(name.to_owned()))?
        } else {
            self.routed(name)?.0
        };
        if !job.enabled {
            return Err(ControlError::Conflict(format!("job '{name}' is disabled")));
        }
        if self.stopping {
            return Err(ControlError::Conflict("the daemon is shutting down".into()));
        }
        tracing::info!(target: "cronstable::scheduler", "Job {name}: manual start");
        if job.pool.is_some() {
            return Ok(Some(job));
        }
        self.maybe_launch(job, Trigger::Manual, 0);
        Ok(None)
    }

    fn manual_cancel(&mut self, name: &str) -> Result<usize, ControlError> {
        if self.job(name).is_none() && !self.running.contains_key(name) {
            return Err(ControlError::NotFound(name.to_owned()));
        }
        let live: Vec<&RunHandle> = self
            .running
            .get(name)
            .map(|runs| runs.iter().filter(|r| !r.has_ended()).collect())
            .unwrap_or_default();
        if live.is_empty() {
            // Nothing here to cancel: the node that runs it may have one.
            if self.job(name).is_some() {
                self.routed(name)?;
            }
            return Err(ControlError::Conflict(format!(
                "job '{name}' is not running"
            )));
        }
        for handle in &live {
            handle.cancel();
        }
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {name}: cancelling {} running instance(s) on request",
            live.len()
        );
        Ok(live.len())
    }

    fn snapshots(&self, only: Option<&str>) -> Vec<JobSnapshot> {
        let now = self.clock.now();
        let election = self.gate.records().is_some();
        // Every job's next fire in one pass over the remembered ones, or
        // the one job's.
        let (indices, next_fires): (Vec<usize>, Vec<Option<DateTime<Utc>>>) = match only {
            None => (
                (0..self.jobs.len()).collect(),
                self.api.next_fires.all(&self.jobs, now),
            ),
            Some(name) => self
                .by_name
                .get(name)
                .map(|&index| {
                    (
                        index,
                        self.api.next_fires.get(index, &self.jobs[index], now),
                    )
                })
                .into_iter()
                .unzip(),
        };
        // The live instances of the jobs that run, by position (ascending,
        // as the jobs are visited): one pass over the running set rather
        // than a lookup by name per job.
        let mut live_runs: Vec<(usize, Vec<&RunHandle>)> = self
            .running
            .iter()
            .filter_map(|(name, runs)| {
                let live: Vec<&RunHandle> = runs.iter().filter(|r| !r.has_ended()).collect();
                // A job a reload removed while it ran is not in the table.
                (!live.is_empty()).then_some((*self.by_name.get(name)?, live))
            })
            .collect();
        live_runs.sort_unstable_by_key(|(index, _)| *index);
        let mut live_runs = live_runs.into_iter().peekable();
        // Only a cluster section names job owners (see LeaderGate::owner):
        // asked once here rather than once per job.
        let owners = self.gate.clustered();
        indices
            .into_iter()
            .zip(next_fires)
            .map(|(index, next_fire)| {
                let job = &self.jobs[index];
                while live_runs.next_if(|(at, _)| *at < index).is_some() {}
                let live = live_runs
                    .next_if(|(at, _)| *at == index)
                    .map(|(_, live)| live)
                    .unwrap_or_default();
                let never_fires =
                    job.enabled && job.schedule.parsed.cron().is_some() && next_fire.is_none();
                let runs = self.store.runs_newest_first(&job.name);
                let history = runs
                    .iter()
                    .take(20)
                    .rev()
                    .map(|r| (r.outcome(), r.duration_seconds()))
                    .collect();
                JobSnapshot {
                    config: Arc::clone(job),
                    pids: live.iter().filter_map(|r| r.pid()).collect(),
                    running: !live.is_empty(),
                    next_fire,
                    never_fires,
                    last_run: runs.first().map(|r| RunSummary::of(r)),
                    history,
                    paused: self
                        .store
                        .pause(&job.name)
                        .filter(|w| w.until > now)
                        .cloned(),
                    retry: self.retries.get(&job.name).map(|state| RetryView {
                        attempt: state.ladder.count(),
                        max_attempts: (job.retry.maximum_retries != -1)
                            .then_some(job.retry.maximum_retries),
                    }),
                    slot: (job.concurrency_scope == ConcurrencyScope::Cluster).then(|| {
                        let view = self.slots.view(&job.name);
                        SlotSnapshot {
                            held: view.held,
                            holder: if view.held { view.holder } else { None },
                            refs: if view.held { live.len() } else { 0 },
                        }
                    }),
                    election,
                    reboot_pending: self.reboot_pending(&job.name),
                    owner: if owners { self.gate.owner(job) } else { None },
                    verifying: live.iter().any(|r| r.verifying()),
                    pool: job
                        .pool
                        .as_ref()
                        .map(|pool| self.pool_queue(&job.name, &pool.name)),
                    running_resources: crate::job::monitor::LiveTotal::of(
                        live.iter().filter_map(|r| r.monitor()?.live()),
                    ),
                    sla: self.sla_view(job),
                }
            })
            .collect()
    }

    fn status_table(&self) -> StatusTable {
        let now = self.clock.now();
        let mut running: Vec<(usize, Vec<u32>)> = self
            .running
            .iter()
            .filter(|(_, runs)| runs.iter().any(|r| !r.has_ended()))
            // A job a reload removed while it ran is not in the table.
            .filter_map(|(name, runs)| {
                let index = *self.by_name.get(name)?;
                let pids = runs
                    .iter()
                    .filter(|r| !r.has_ended())
                    .filter_map(|r| r.pid())
                    .collect();
                Some((index, pids))
            })
            .collect();
        running.sort_unstable_by_key(|(index, _)| *index);
        StatusTable {
            jobs: Arc::clone(&self.jobs),
            table_id: self.api.table_id,
            next_fires: self.api.next_fires.all(&self.jobs, now),
            running,
        }
    }

    fn progress(&self, prefix: &str) -> Progress {
        let now = self.clock.now();
        let jobs = self
            .jobs
            .iter()
            .filter(|j| j.name.starts_with(prefix))
            .map(|job| {
                let runs = self.store.runs_newest_first(&job.name);
                JobProgress {
                    name: job.name.clone(),
                    active: self
                        .running
                        .get(&job.name)
                        .map(|r| r.iter().filter(|h| !h.has_ended()).count())
                        .unwrap_or(0),
                    next_fire: job
                        .schedule
                        .parsed
                        .cron()
                        .and_then(|c| c.next_after(now, &job.schedule.time_base)),
                    last_scheduled: self.last_scheduled.get(&job.name).copied(),
                    last_run: runs.first().map(|r| RunSummary::of(r)),
                    last_success: runs
                        .iter()
                        .find(|r| r.outcome() == crate::job::outcome::Outcome::Success)
                        .map(|r| r.finished_at),
                }
            })
            .collect();
        Progress {
            version: self.api.progress_version,
            jobs,
        }
    }

    /// The stamp of the state now, for a rendering that may be reused
    /// until `horizon` (the earliest instant at which a value shown moves
    /// by itself), or `None` when it must not be reused: while any
    /// instance is in the running set, because an instance's end is seen
    /// (its `ended` flag) before the event that reports it; and while a
    /// cluster section is configured, because leadership and ownership
    /// move on the backend's task.
    fn stamp(&self, now: DateTime<Utc>, horizon: Option<DateTime<Utc>>) -> Option<Stamp> {
        if self.running.values().any(|runs| !runs.is_empty()) {
            return None;
        }
        if self.gate.clustered() {
            return None;
        }
        if self.sla.any_latched() {
            // A latched breach's observed seconds move with the clock.
            return None;
        }
        Some(Stamp {
            generation: self.api.generation,
            taken: now,
            until: horizon.unwrap_or(DateTime::<Utc>::MAX_UTC),
        })
    }

    /// Whether a rendering of the state stamped `stamp` still shows the
    /// state now: no turn of the loop changed anything since, the clock
    /// is inside the stamp's span, and nothing that moves without an
    /// event (see [`Scheduler::stamp`]) has appeared.
    fn stamp_holds(&self, stamp: &Stamp, now: DateTime<Utc>) -> bool {
        stamp.generation == self.api.generation
            && stamp.taken <= now
            && now < stamp.until
            && self.stamp(now, None).is_some()
    }

    fn metrics_snapshot(&mut self) -> prometheus::Snapshot {
        let now = self.clock.now();
        // The latest load outcome first (bounds, reload gauges).
        let epoch = self.counters().epoch();
        if let Some((stamp, rows_epoch, rows)) = &self.api.metrics_rows {
            if *rows_epoch == epoch && self.stamp_holds(stamp, now) {
                let gauges = DaemonGauges {
                    version: env!("CARGO_PKG_VERSION"),
                    job_set_id: &self.job_set_id,
                    jobs: Vec::new(),
                };
                return prometheus::Snapshot::take_with_rows(&self.counters, &gauges, rows)
                    .with_sla(self.sla_series())
                    .with_pools(self.pool_gauges())
                    .with_limits(self.limits_series());
            }
        }
        let mut horizon: Option<DateTime<Utc>> = None;
        let mut earliest = |at: Option<DateTime<Utc>>| {
            if let Some(at) = at {
                horizon = Some(horizon.map_or(at, |h| h.min(at)));
            }
        };
        let jobs: Vec<JobGauges<'_>> = self
            .jobs
            .iter()
            .enumerate()
            .map(|(index, job)| JobGauges {
                name: &job.name,
                schedule: &job.schedule.text,
                cluster_policy: ports::cluster_policy_name(job.cluster_policy),
                enabled: job.enabled,
                running: self
                    .running
                    .get(&job.name)
                    .map(|r| r.iter().filter(|h| !h.has_ended()).count())
                    .unwrap_or(0),
                next_run: job
                    .enabled
                    .then(|| self.api.next_fires.get(index, job, now))
                    .flatten()
                    .inspect(|t| earliest(Some(*t)))
                    .map(|t| t.timestamp_micros() as f64 / 1e6),
                last_run: self
                    .store
                    .runs_newest_first(&job.name)
                    .into_iter()
                    .find(|r| r.skip_reason.is_none()),
                paused: self
                    .store
                    .pause(&job.name)
                    .filter(|w| w.until > now)
                    .inspect(|w| earliest(Some(w.until)))
                    .is_some(),
            })
            .collect();
        let gauges = DaemonGauges {
            version: env!("CARGO_PKG_VERSION"),
            job_set_id: &self.job_set_id,
            jobs,
        };
        let previous = self.api.metrics_last_rows.take();
        let snapshot = match &previous {
            Some(rows) => prometheus::Snapshot::take_reusing(&self.counters, &gauges, rows),
            None => prometheus::Snapshot::take(&self.counters, &gauges),
        };
        drop(gauges);
        drop(previous);
        let stamp = self.stamp(now, horizon);
        self.api.metrics_rows = stamp.map(|stamp| (stamp, epoch, snapshot.rows()));
        self.api.metrics_last_rows = Some(snapshot.rows());
        snapshot
            .with_sla(self.sla_series())
            .with_pools(self.pool_gauges())
            .with_limits(self.limits_series())
    }
}
