//! Late-run detection (`sla`): the three checks of a job, their breach
//! latches and the counts the metrics show. Pure: the scheduler feeds it
//! what happened (a slot fell due, a run started, a run succeeded) and,
//! once a minute, the facts of every job with checks; it answers with the
//! transitions to log, meter and report. Nothing here reads a clock, a
//! file or the network.
//!
//! The rules, from the manual's Late-Run-Detection page:
//! - `maxTimeSinceSuccess`: breached when the time since the last
//!   successful finish (else since the job was first seen) exceeds the
//!   threshold; time the job spent paused or disabled is not counted.
//! - `lateAfter`: a slot fell due and no run has started since; breached
//!   when the slot is older than the threshold, unless a run is in
//!   progress (an overrun is `maxRuntime`'s to report).
//! - `maxRuntime`: breached while a running instance is older than the
//!   threshold; it never stops anything.
//!
//! A breach latches: the transition into it fires `onLate` once, the
//! transition out of it logs and clears. A disabled, paused or not-owned
//! job is excused: its latches are dropped, and a breach that persists
//! latches again (and reports again) once the job is eligible.

use crate::config::job::SlaThresholds;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// One of the three checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// `maxTimeSinceSuccessSeconds`.
    MaxTimeSinceSuccess,
    /// `lateAfterSeconds`.
    LateAfter,
    /// `maxRuntimeSeconds`.
    MaxRuntime,
}

/// Every check, in the order the config block, the payload and the
/// metrics list them.
pub const CHECKS: [Check; 3] = [
    Check::MaxTimeSinceSuccess,
    Check::LateAfter,
    Check::MaxRuntime,
];

/// How many banked pause spans a job keeps (the oldest go first, which
/// understates the credit: it errs towards reporting).
const PAUSE_SPANS_MAX: usize = 32;

impl Check {
    /// The check's name: the config key without `Seconds` (the metric's
    /// `check` label, the payload's `check`, `{{sla_check}}`).
    pub fn name(self) -> &'static str {
        match self {
            Check::MaxTimeSinceSuccess => "maxTimeSinceSuccess",
            Check::LateAfter => "lateAfter",
            Check::MaxRuntime => "maxRuntime",
        }
    }

    /// The config key of its threshold.
    pub fn key(self) -> &'static str {
        match self {
            Check::MaxTimeSinceSuccess => "maxTimeSinceSuccessSeconds",
            Check::LateAfter => "lateAfterSeconds",
            Check::MaxRuntime => "maxRuntimeSeconds",
        }
    }

    /// Its threshold in `sla`, when set.
    pub fn threshold(self, sla: &SlaThresholds) -> Option<u64> {
        match self {
            Check::MaxTimeSinceSuccess => sla.max_time_since_success,
            Check::LateAfter => sla.late_after,
            Check::MaxRuntime => sla.max_runtime,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One check measured now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Which check.
    pub check: Check,
    /// Its threshold, seconds.
    pub threshold: u64,
    /// The measured value, seconds.
    pub observed: f64,
    /// Whether the measure exceeds the threshold.
    pub breached: bool,
}

/// What changed at a pass, for the scheduler to log, meter and report.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// A check went into breach: `onLate` fires once.
    Breached {
        /// The job.
        job: String,
        /// What was measured.
        observation: Observation,
        /// The job's last known success.
        last_success: Option<DateTime<Utc>>,
    },
    /// A latched check is back within its threshold: logged, not reported.
    Recovered {
        /// The job.
        job: String,
        /// What was measured.
        observation: Observation,
    },
}

/// A job's facts at a pass, gathered by the scheduler.
#[derive(Debug, Clone, Copy)]
pub struct JobFacts<'a> {
    /// The job.
    pub name: &'a str,
    /// Its thresholds (`None`: no `sla` block, or a reload removed it).
    pub sla: Option<&'a SlaThresholds>,
    /// Enabled, and its scheduled fires not held (a suspended set's are).
    pub enabled: bool,
    /// The pause in force now: (since, until).
    pub paused: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// This node runs the job's scheduled fires (always, without an
    /// election): only the owner evaluates, so one breach pages once.
    pub owned: bool,
    /// What runs now.
    pub running: Running,
}

/// The job's live instances, as the checks need them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Running {
    /// Any instance is running.
    pub any: bool,
    /// The earliest launch instant among them.
    pub oldest_start: Option<DateTime<Utc>>,
}

/// `GET /jobs`' `sla` object of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaView {
    /// The thresholds that are set, in check order.
    pub thresholds: Vec<(Check, u64)>,
    /// The latched breaches, measured now.
    pub breaches: Vec<BreachView>,
}

/// One latched breach in [`SlaView`].
#[derive(Debug, Clone, PartialEq)]
pub struct BreachView {
    /// Which check.
    pub check: Check,
    /// When the monitor latched it.
    pub since: DateTime<Utc>,
    /// The measure now, seconds.
    pub observed: f64,
    /// The threshold, seconds.
    pub threshold: u64,
}

/// One metric series: a job's check the monitor has evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The job.
    pub job: String,
    /// The check.
    pub check: Check,
    /// `cronstable_job_late`: breached now.
    pub late: bool,
    /// `cronstable_job_sla_breaches_total`.
    pub breaches: u64,
}

/// What the monitor keeps of one job between passes.
#[derive(Debug, Clone, Default)]
struct Track {
    /// When the monitor first saw the job (the staleness reference while
    /// no success is known).
    first_seen: Option<DateTime<Utc>>,
    /// The newest successful finish.
    last_success: Option<DateTime<Utc>>,
    /// The slot `lateAfter` measures from, when one is owed.
    due: Option<DateTime<Utc>>,
    /// The newest launch of any kind.
    last_start: Option<DateTime<Utc>>,
    /// Disabled since (banked as a pause span when it is enabled again).
    disabled_since: Option<DateTime<Utc>>,
    /// The pause seen in force at the last pass, banked once it ends.
    pause_seen: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Disjoint, sorted spans the job was held, credited against
    /// `maxTimeSinceSuccess`.
    held: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// Per check: when the breach latched.
    latched: [Option<DateTime<Utc>>; 3],
    /// Per check: evaluated at least once (its series exists).
    evaluated: [bool; 3],
    /// Per check: breaches counted.
    breaches: [u64; 3],
}

/// The SLA monitor of one scheduler.
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    jobs: HashMap<String, Track>,
    /// Breach counts an earlier process persisted, per job and check,
    /// added to a job's counts when the monitor first tracks it (so a
    /// restart does not reset `cronstable_job_sla_breaches_total`).
    carried: HashMap<String, [u64; 3]>,
}

impl Monitor {
    fn track(&mut self, name: &str, now: DateTime<Utc>) -> &mut Track {
        let carried = &mut self.carried;
        let track = self.jobs.entry(name.to_owned()).or_insert_with(|| Track {
            breaches: carried.remove(name).unwrap_or_default(),
            ..Track::default()
        });
        track.first_seen.get_or_insert(now);
        track
    }

    /// Adds `count` breaches of the check named `check` (its metric
    /// label) that an earlier process counted for `job`. An unknown check
    /// name is ignored. Knowing the count does not make the monitor know
    /// the job ([`Monitor::knows`]).
    pub fn carry_breaches(&mut self, job: &str, check: &str, count: u64) {
        let Some(check) = CHECKS.iter().find(|c| c.name() == check) else {
            return;
        };
        let slot = match self.jobs.get_mut(job) {
            Some(track) => &mut track.breaches[check.index()],
            None => &mut self.carried.entry(job.to_owned()).or_default()[check.index()],
        };
        *slot = slot.saturating_add(count);
    }

    /// Per job, the breach counts to persist: every evaluated check's
    /// (zero included, as the original keeps them), and counts carried
    /// from an earlier process that no evaluation took up yet.
    pub fn persisted_breaches(&self) -> Vec<(String, Vec<(&'static str, u64)>)> {
        let tracked = self.jobs.iter().map(|(job, track)| {
            let counts = CHECKS
                .iter()
                .filter(|c| track.evaluated[c.index()] || track.breaches[c.index()] > 0)
                .map(|c| (c.name(), track.breaches[c.index()]))
                .collect();
            (job.clone(), counts)
        });
        let carried = self.carried.iter().map(|(job, counts)| {
            let counts = CHECKS
                .iter()
                .filter(|c| counts[c.index()] > 0)
                .map(|c| (c.name(), counts[c.index()]))
                .collect();
            (job.clone(), counts)
        });
        let mut out: Vec<(String, Vec<(&'static str, u64)>)> = tracked
            .chain(carried)
            .filter(|(_, counts): &(String, Vec<_>)| !counts.is_empty())
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Whether the monitor knows `name` (it was evaluated, or something
    /// was recorded for it).
    pub fn knows(&self, name: &str) -> bool {
        self.jobs.contains_key(name)
    }

    /// Forgets jobs no longer configured.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.jobs.retain(|name, _| keep(name));
        self.carried.retain(|name, _| keep(name));
    }

    /// A scheduled slot of `name` fell due at `at` on this node (owned,
    /// not paused): `lateAfter` measures from it until a run starts.
    pub fn slot_due(&mut self, name: &str, at: DateTime<Utc>) {
        self.track(name, at).due = Some(at);
    }

    /// The slot owed is not late after all: the concurrency policy
    /// dropped it while an instance ran, or another node runs it.
    pub fn slot_excused(&mut self, name: &str) {
        if let Some(track) = self.jobs.get_mut(name) {
            track.due = None;
        }
    }

    /// A run of `name` started at `at` (scheduled, retry, manual or
    /// catch-up): it serves every slot owed so far.
    pub fn started(&mut self, name: &str, at: DateTime<Utc>) {
        let track = self.track(name, at);
        if track.last_start.is_none_or(|s| at > s) {
            track.last_start = Some(at);
        }
    }

    /// A run of `name` finished successfully at `at` (or the ledger says
    /// one did): the staleness reference moves forward, never back.
    pub fn succeeded(&mut self, name: &str, at: DateTime<Utc>, now: DateTime<Utc>) {
        let track = self.track(name, now);
        if track.last_success.is_none_or(|s| at > s) {
            track.last_success = Some(at);
        }
    }

    /// Whether any check of any job is latched in breach now.
    pub fn any_latched(&self) -> bool {
        self.jobs
            .values()
            .any(|t| t.latched.iter().any(Option::is_some))
    }

    /// The last success known for `name`.
    pub fn last_success(&self, name: &str) -> Option<DateTime<Utc>> {
        self.jobs.get(name).and_then(|t| t.last_success)
    }

    /// One pass over `jobs` at `now`: drops the latches of excused jobs,
    /// measures the others, latches and counts; returns the transitions
    /// in job order, then check order.
    pub fn evaluate<'a>(
        &mut self,
        jobs: impl IntoIterator<Item = JobFacts<'a>>,
        now: DateTime<Utc>,
    ) -> Vec<Transition> {
        let mut out = Vec::new();
        for facts in jobs {
            self.evaluate_job(&facts, now, &mut out);
        }
        out
    }

    fn evaluate_job(&mut self, facts: &JobFacts, now: DateTime<Utc>, out: &mut Vec<Transition>) {
        let Some(sla) = facts.sla else {
            // A reload removed the block: nothing stays latched.
            if let Some(track) = self.jobs.get_mut(facts.name) {
                track.latched = [None; 3];
            }
            return;
        };
        let track = self.track(facts.name, now);
        if !facts.enabled {
            track.latched = [None; 3];
            // Re-enabled, it gets a full threshold whether or not it ever
            // succeeded: the span is banked then, and a job that never
            // succeeded measures from when it came back.
            track.first_seen = Some(now);
            track.disabled_since.get_or_insert(now);
            track.due = None;
            return;
        }
        if let Some(since) = track.disabled_since.take() {
            bank(track, since, now);
        }
        match (facts.paused, track.pause_seen) {
            (Some(window), _) => track.pause_seen = Some(window),
            (None, Some((since, until))) => {
                track.pause_seen = None;
                bank(track, since, until.min(now));
            }
            (None, None) => {}
        }
        if facts.paused.is_some() {
            track.latched = [None; 3];
            return;
        }
        if !facts.owned {
            // A slot recorded while this node owned the job must not page
            // when ownership comes back for a slot another node ran.
            track.latched = [None; 3];
            track.due = None;
            return;
        }
        let observations = observe(track, sla, facts.running, now);
        for check in CHECKS {
            let i = check.index();
            let Some(observation) = observations.iter().find(|o| o.check == check) else {
                // A reload dropped this one check: its latch goes too.
                track.latched[i] = None;
                continue;
            };
            track.evaluated[i] = true;
            match (observation.breached, track.latched[i]) {
                (true, None) => {
                    track.latched[i] = Some(now);
                    track.breaches[i] += 1;
                    out.push(Transition::Breached {
                        job: facts.name.to_owned(),
                        observation: *observation,
                        last_success: track.last_success,
                    });
                }
                (false, Some(_)) => {
                    track.latched[i] = None;
                    out.push(Transition::Recovered {
                        job: facts.name.to_owned(),
                        observation: *observation,
                    });
                }
                _ => {}
            }
        }
    }

    /// The `sla` object of a job with checks: its thresholds and latched
    /// breaches, measured at `now` (so a dashboard shows a moving value).
    pub fn view(
        &self,
        name: &str,
        sla: &SlaThresholds,
        running: Running,
        now: DateTime<Utc>,
    ) -> SlaView {
        let thresholds = CHECKS
            .iter()
            .filter_map(|&c| Some((c, c.threshold(sla)?)))
            .collect();
        let breaches = match self.jobs.get(name) {
            Some(track) => observe(track, sla, running, now)
                .into_iter()
                .filter_map(|o| {
                    Some(BreachView {
                        check: o.check,
                        since: track.latched[o.check.index()]?,
                        observed: o.observed,
                        threshold: o.threshold,
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        SlaView {
            thresholds,
            breaches,
        }
    }

    /// Every evaluated (job, check), sorted by job then check.
    pub fn series(&self) -> Vec<Series> {
        let mut out: Vec<Series> = self
            .jobs
            .iter()
            .flat_map(|(job, track)| {
                CHECKS
                    .iter()
                    .filter(|c| track.evaluated[c.index()])
                    .map(|&check| Series {
                        job: job.clone(),
                        check,
                        late: track.latched[check.index()].is_some(),
                        breaches: track.breaches[check.index()],
                    })
            })
            .collect();
        out.sort_by(|a, b| (&a.job, a.check).cmp(&(&b.job, b.check)));
        out
    }
}

/// Banks `[since, until)` as a span the job was held, merging it with
/// the spans already banked; spans the staleness reference has passed are
/// dropped, and only the newest [`PAUSE_SPANS_MAX`] are kept.
fn bank(track: &mut Track, since: DateTime<Utc>, until: DateTime<Utc>) {
    if until <= since {
        return;
    }
    let mut spans = std::mem::take(&mut track.held);
    spans.push((since, until));
    spans.sort();
    let mut merged: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::with_capacity(spans.len());
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let reference = stale_reference(track);
    merged.retain(|span| reference.is_none_or(|r| span.1 > r));
    let excess = merged.len().saturating_sub(PAUSE_SPANS_MAX);
    merged.drain(..excess);
    track.held = merged;
}

/// What `maxTimeSinceSuccess` measures from: the last success, else when
/// the job was first seen.
fn stale_reference(track: &Track) -> Option<DateTime<Utc>> {
    track.last_success.or(track.first_seen)
}

/// Seconds of `[reference, now]` covered by the banked spans.
fn held_seconds(track: &Track, reference: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    track
        .held
        .iter()
        .map(|&(start, end)| seconds(now.min(end) - reference.max(start)).max(0.0))
        .sum()
}

fn seconds(d: chrono::Duration) -> f64 {
    d.num_microseconds()
        .map_or(d.num_seconds() as f64, |us| us as f64 / 1e6)
}

/// The configured checks of a job measured at `now`, in check order.
fn observe(
    track: &Track,
    sla: &SlaThresholds,
    running: Running,
    now: DateTime<Utc>,
) -> Vec<Observation> {
    let mut out = Vec::with_capacity(3);
    for check in CHECKS {
        let Some(threshold) = check.threshold(sla) else {
            continue;
        };
        let limit = threshold as f64;
        let (observed, breached) = match check {
            Check::MaxTimeSinceSuccess => {
                let reference = stale_reference(track).unwrap_or(now);
                let observed = seconds(now - reference) - held_seconds(track, reference, now);
                (observed, observed > limit)
            }
            Check::LateAfter => match track.due {
                // Nothing owed yet (also the baseline after a restart).
                None => (0.0, false),
                Some(due) => {
                    let observed = seconds(now - due);
                    let served = track.last_start.is_some_and(|s| s >= due);
                    (observed, observed > limit && !served && !running.any)
                }
            },
            Check::MaxRuntime => {
                let observed = running
                    .oldest_start
                    .map_or(0.0, |start| seconds(now - start).max(0.0));
                (observed, observed > limit)
            }
        };
        out.push(Observation {
            check,
            threshold,
            observed,
            breached,
        });
    }
    out
}

#[cfg(test)]
#[path = "sla_tests.rs"]
mod tests;
