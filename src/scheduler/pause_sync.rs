//! Pauses that hold across a change of leader. Until durable state lands,
//! the leader records every pause and resume of a leader-gated job in the
//! leadership store, beside the takeover catch-up records
//! ([`LeaderRecords::record_pause`]); a node that gains leadership reads
//! them and applies the ones still in force before it fires anything it
//! now leads for.
//!
//! The order, per leadership term:
//! - the term moves (this node gained leadership): the recorded marks are
//!   read, asynchronously like every store call;
//! - until the answer is in, the scheduled fires of leader-gated jobs are
//!   held (kept with their boundary), not launched and not lost; so is
//!   the catch-up of the takeover window, whose answer may come first;
//! - the answer is applied to the local pauses (the newer mark of a job
//!   wins, see [`PauseMark::supersedes`]), then the catch-up runs and the
//!   held fires go through the normal path (a paused job's fire is
//!   recorded as skipped with the `paused` reason).
//!
//! A store that cannot answer does not hold fires for long: the fires go
//! ahead (WARNING once) and the read is tried again at every pass until it
//! answers; a backend that keeps no pauses (gossip) is not asked again.

use super::pause::PauseMark;
use super::ports::{LeaderRecords, RecordsError};
use super::{Event, Scheduler};
use crate::config::model::ClusterPolicy;
use crate::config::JobConfig;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;

/// The answer of a read of the recorded pauses, for leadership term `term`.
#[derive(Debug)]
pub(super) struct PausesRead {
    term: u64,
    result: Result<HashMap<String, PauseMark>, RecordsError>,
}

/// A catch-up whose records came back before the pauses did.
pub(super) type StashedCatchUp = (
    u64,
    DateTime<Utc>,
    Result<HashMap<String, DateTime<Utc>>, RecordsError>,
);

/// The scheduler's bookkeeping of the recorded pauses.
#[derive(Debug, Default)]
pub(super) struct PauseSync {
    /// The leadership term whose recorded pauses are applied (0: none
    /// needed yet, this node never led).
    synced_term: u64,
    /// A read is on its way.
    query: bool,
    /// The last read failed: read again at the next pass (fires are no
    /// longer held for it).
    retry: bool,
    /// A failed read was warned about; reset by a read that works.
    warned: bool,
    /// Scheduled fires held until the read answers: job and boundary.
    held: Vec<(String, DateTime<Utc>)>,
    /// The takeover catch-up, held for the same reason.
    catch_up: Option<StashedCatchUp>,
}

/// Whether a pause of `job` is decided by the cluster's leader (and so
/// recorded for the next one): every policy but `EveryNode`.
pub(super) fn leader_gated(job: &JobConfig) -> bool {
    job.cluster_policy != ClusterPolicy::EveryNode
}

/// What applying the recorded `mark` to the local pause `local` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Apply {
    /// Nothing: the local state is as new, or the mark has lapsed.
    Keep,
    /// Pause with the recorded window.
    Pause,
    /// End the local pause.
    Resume,
}

/// The pure rule: a recorded pause still in force at `now` replaces an
/// older (or no) local pause; a recorded resume ends a local pause taken
/// before it. A local pause that is newer than the mark stays.
pub(crate) fn apply(
    local: Option<&super::pause::PauseWindow>,
    mark: &PauseMark,
    now: DateTime<Utc>,
) -> Apply {
    let local_mark = local.map(|w| PauseMark::Paused(w.clone()));
    let newer = local_mark.as_ref().is_none_or(|l| mark.supersedes(l));
    match mark {
        PauseMark::Paused(window) if window.until > now && newer && local != Some(window) => {
            Apply::Pause
        }
        PauseMark::Resumed { .. } if local.is_some() && newer => Apply::Resume,
        _ => Apply::Keep,
    }
}

impl Scheduler {
    fn pause_records(&self) -> Option<Arc<dyn LeaderRecords>> {
        self.gate.records()
    }

    /// The leadership term whose pauses are not applied yet, if any.
    fn unsynced_term(&self) -> Option<u64> {
        let term = self.gate.leadership_term();
        (term != 0 && term != self.pause_sync.synced_term && self.pause_records().is_some())
            .then_some(term)
    }

    /// Whether the catch-up answer of `term` must wait for the pauses.
    pub(super) fn pauses_pending(&self, term: u64) -> bool {
        self.unsynced_term() == Some(term)
    }

    /// Keeps the catch-up answer until the pauses are applied.
    pub(super) fn stash_catch_up(&mut self, stashed: StashedCatchUp) {
        self.pause_sync.catch_up = Some(stashed);
    }

    /// Every pass, before its fires: read the recorded pauses when this
    /// node gained leadership (or when the last read failed).
    pub(super) fn pause_sync_pass(&mut self) {
        if self.pause_sync.retry || self.unsynced_term().is_some() {
            self.query_pauses();
        }
    }

    /// Holds a scheduled fire of `job` at `at` while the pauses of a new
    /// term are being read; true when held.
    pub(super) fn hold_fire(&mut self, job: &JobConfig, at: DateTime<Utc>) -> bool {
        if !leader_gated(job) || self.unsynced_term().is_none() {
            return false;
        }
        self.query_pauses();
        self.pause_sync.held.push((job.name.clone(), at));
        true
    }

    fn query_pauses(&mut self) {
        if self.pause_sync.query || self.stopping {
            return;
        }
        let Some(records) = self.pause_records() else {
            self.pause_sync.retry = false;
            return;
        };
        self.pause_sync.query = true;
        let term = self.gate.leadership_term();
        let events = self.events_tx.clone();
        tokio::spawn(async move {
            let result = records.pauses().await;
            let _ = events.send(Event::Pauses(PausesRead { term, result }));
        });
    }

    /// The recorded pauses are in (or could not be read): apply them, then
    /// run what waited for them.
    pub(super) fn pauses_read(&mut self, read: PausesRead) {
        self.pause_sync.query = false;
        let current = self.gate.leadership_term();
        match read.result {
            Ok(marks) => {
                tracing::debug!(
                    target: "cronstable::scheduler",
                    "cluster: {} pause record(s) read for leadership term {} ({} fire(s) held)",
                    marks.len(),
                    read.term,
                    self.pause_sync.held.len()
                );
                self.pause_sync.retry = false;
                self.pause_sync.warned = false;
                self.apply_marks(marks);
            }
            Err(err @ (RecordsError::NoRecords | RecordsError::NotSupported { .. })) => {
                tracing::debug!(
                    target: "cronstable::scheduler",
                    "cluster: no pauses to apply for leadership term {} ({err})",
                    read.term
                );
                // Nothing is kept there: nothing to apply, nothing to retry.
                self.pause_sync.retry = false;
            }
            Err(err) => {
                self.pause_sync.retry = true;
                if !std::mem::replace(&mut self.pause_sync.warned, true) {
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "cluster: cannot read the pauses recorded by the previous leader ({err}); \
                         scheduled runs go ahead and the read is retried"
                    );
                }
            }
        }
        // The fires of the term read for go ahead now (a newer term reads
        // again, and holds its own fires).
        self.pause_sync.synced_term = read.term;
        if read.term != current {
            return;
        }
        if let Some((term, upto, result)) = self.pause_sync.catch_up.take() {
            self.start_catch_up(term, upto, result);
        }
        let held = std::mem::take(&mut self.pause_sync.held);
        for (name, at) in held {
            let Some(job) = self.job(&name) else { continue };
            self.firing_at = Some(at);
            if self.is_paused(&name, at) {
                self.record_skipped(&job, at);
            } else {
                self.launch_scheduled(job);
            }
            self.firing_at = None;
        }
    }

    fn apply_marks(&mut self, marks: HashMap<String, PauseMark>) {
        let now = self.clock.now();
        let mut names: Vec<&String> = marks.keys().collect();
        names.sort();
        for name in names {
            let mark = &marks[name];
            if self.job(name).is_none_or(|job| !leader_gated(&job)) {
                continue;
            }
            self.note_pause(name, mark);
            match apply(self.store.pause(name), mark, now) {
                Apply::Keep => {}
                Apply::Pause => {
                    let PauseMark::Paused(window) = mark else {
                        continue;
                    };
                    tracing::info!(
                        target: "cronstable::scheduler",
                        "Job {name} paused until {} by {} ({}), as recorded in the cluster{}",
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
                }
                Apply::Resume => {
                    tracing::info!(
                        target: "cronstable::scheduler",
                        "Job {name} resumed, as recorded in the cluster"
                    );
                    self.store.clear_pause(name);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::pause::PauseWindow;
    use chrono::{TimeDelta, TimeZone};

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_782_241_200 + secs, 0)
            .single()
            .expect("valid")
    }

    fn window(since: i64, until: i64) -> PauseWindow {
        PauseWindow {
            since: at(since),
            until: at(until),
            note: "n".into(),
            by: "ops".into(),
            channel: "api".into(),
        }
    }

    fn resumed(secs: i64) -> PauseMark {
        PauseMark::Resumed {
            at: at(secs),
            by: "api".into(),
        }
    }

    /// Every combination of local state and recorded mark, at `now` = 100.
    #[test]
    fn recorded_marks_apply_when_newer_and_in_force() {
        let now = at(100);
        let cases: Vec<(Option<PauseWindow>, PauseMark, Apply)> = vec![
            // No local pause.
            (None, PauseMark::Paused(window(0, 200)), Apply::Pause),
            (None, PauseMark::Paused(window(0, 100)), Apply::Keep),
            (None, PauseMark::Paused(window(0, 50)), Apply::Keep),
            (None, resumed(50), Apply::Keep),
            // An older local pause.
            (
                Some(window(0, 300)),
                PauseMark::Paused(window(10, 200)),
                Apply::Pause,
            ),
            (Some(window(0, 300)), resumed(10), Apply::Resume),
            (
                Some(window(0, 300)),
                PauseMark::Paused(window(10, 90)),
                Apply::Keep,
            ),
            // The same pause: nothing to do.
            (
                Some(window(10, 200)),
                PauseMark::Paused(window(10, 200)),
                Apply::Keep,
            ),
            // A newer local pause wins over both kinds.
            (
                Some(window(20, 300)),
                PauseMark::Paused(window(10, 200)),
                Apply::Keep,
            ),
            (Some(window(20, 300)), resumed(10), Apply::Keep),
            // A resume at the same instant as the local pause ends it.
            (Some(window(10, 300)), resumed(10), Apply::Resume),
        ];
        for (local, mark, expected) in cases {
            assert_eq!(
                apply(local.as_ref(), &mark, now),
                expected,
                "local {local:?}, mark {mark:?}"
            );
        }
    }

    #[test]
    fn only_jobs_the_leader_runs_are_recorded() {
        use crate::config::{load_sources, Source, SourceKind};
        for (policy, gated) in [
            ("Leader", true),
            ("PreferLeader", true),
            ("EveryNode", false),
        ] {
            let yaml = format!(
                "jobs:\n  - name: j\n    command: 'true'\n    schedule: '@hourly'\n    clusterPolicy: {policy}\n"
            );
            let job = load_sources(&[Source {
                name: "t.yaml".into(),
                text: yaml,
                kind: SourceKind::Yaml,
                include_dir: None,
            }])
            .expect("loads")
            .jobs
            .remove(0);
            assert_eq!(leader_gated(&job), gated, "{policy}");
        }
        // A lapsed window applies nowhere, however new.
        assert_eq!(
            apply(
                None,
                &PauseMark::Paused(window(99, 100)),
                at(100) + TimeDelta::zero()
            ),
            Apply::Keep
        );
    }
}
