//! The facts document, pure: what each key of the facts ConfigMap holds,
//! how a batch of the scheduler's writes folds into it, how it is kept
//! under its size budget, and which changes another node's write is for
//! this node's scheduler. No I/O here; `super::sync` does the calls.

use crate::scheduler::durable::DurableRetry;
use crate::scheduler::pause::{PauseMark, PauseWindow};
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// The ConfigMap key of the pauses and resumes.
pub const KEY_PAUSES: &str = "pauses.json";
/// The ConfigMap key of the pending retries.
pub const KEY_RETRIES: &str = "retries.json";
/// The ConfigMap key of each job's last real outcome.
pub const KEY_OUTCOMES: &str = "outcomes.json";
/// The ConfigMap key of the `@reboot` markers.
pub const KEY_REBOOT: &str = "reboot.json";
/// The ConfigMap key of the Prometheus counters snapshot.
pub const KEY_COUNTERS: &str = "counters.json";

/// Every key this document writes, in the order they are trimmed last
/// to first (pauses are the last thing given up).
pub const KEYS: [&str; 5] = [
    KEY_PAUSES,
    KEY_RETRIES,
    KEY_REBOOT,
    KEY_OUTCOMES,
    KEY_COUNTERS,
];

/// The most the document's values may hold together, in bytes: half of
/// the API server's 1 MiB object limit, so the object with its metadata
/// never comes near it.
pub const BUDGET: usize = 512 * 1024;

/// How long a lapsed pause or a resume stays in the document (so a
/// follower that polls late still sees the resume) before it is dropped.
pub const PAUSE_KEEP: TimeDelta = TimeDelta::hours(1);

/// A pause or resume as stored (`k`: `p` paused, `r` resumed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseFact {
    /// `p` or `r`.
    pub k: String,
    /// When the mark was made (the pause's `since`, the resume's `at`).
    pub at: DateTime<Utc>,
    /// A pause's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// Who asked.
    #[serde(default)]
    pub by: String,
    /// A pause's note.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// A pause's channel.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ch: String,
}

impl PauseFact {
    /// The stored form of `mark`.
    pub fn from_mark(mark: &PauseMark) -> PauseFact {
        match mark {
            PauseMark::Paused(w) => PauseFact {
                k: "p".into(),
                at: w.since,
                until: Some(w.until),
                by: w.by.clone(),
                note: w.note.clone(),
                ch: w.channel.clone(),
            },
            PauseMark::Resumed { at, by } => PauseFact {
                k: "r".into(),
                at: *at,
                until: None,
                by: by.clone(),
                note: String::new(),
                ch: String::new(),
            },
        }
    }

    /// The mark it stands for (None for a kind this version does not know).
    pub fn mark(&self) -> Option<PauseMark> {
        match self.k.as_str() {
            "p" => Some(PauseMark::Paused(PauseWindow {
                since: self.at,
                until: self.until?,
                note: self.note.clone(),
                by: self.by.clone(),
                channel: if self.ch.is_empty() {
                    "api".into()
                } else {
                    self.ch.clone()
                },
            })),
            "r" => Some(PauseMark::Resumed {
                at: self.at,
                by: self.by.clone(),
            }),
            _ => None,
        }
    }

    /// Whether it is still worth keeping at `now`.
    fn live(&self, now: DateTime<Utc>) -> bool {
        let end = self.until.unwrap_or(self.at);
        end + PAUSE_KEEP > now
    }
}

/// A pending retry as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryFact {
    /// The attempt it will be.
    pub attempt: u32,
    /// Its absolute deadline.
    pub due: DateTime<Utc>,
    /// The digest of the job it was armed for.
    pub digest: String,
    /// When it was recorded.
    pub at: DateTime<Utc>,
}

impl RetryFact {
    /// The port's form.
    pub fn to_port(&self) -> DurableRetry {
        DurableRetry {
            attempt: self.attempt,
            not_before: self.due,
            digest: self.digest.clone(),
            recorded_at: self.at,
        }
    }
}

/// A job's last success or failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeFact {
    /// When the run finished.
    pub at: DateTime<Utc>,
    /// Whether it succeeded.
    pub ok: bool,
}

/// An `@reboot` job's run: by which pod, in which boot of its node, for
/// which definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebootFact {
    /// The host (the pod's name).
    pub host: String,
    /// The kernel's boot id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<String>,
    /// The boot time (seconds since the epoch), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bt: Option<f64>,
    /// The job's config digest.
    pub digest: String,
    /// When it was recorded.
    pub at: DateTime<Utc>,
}

/// The key of `host`'s marker of `job` in [`Facts::reboot`]: the job
/// name, a newline, the host. A host (a pod name) has no newline, so the
/// last newline splits any key back into its two parts.
pub fn reboot_key(job: &str, host: &str) -> String {
    format!("{job}\n{host}")
}

impl Facts {
    /// Whether the document holds a marker of `job` covering this boot
    /// of `host` for `digest` ([`RebootFact::covers`]): this host's own,
    /// or the one marker per job an older document kept.
    pub fn reboot_covers(
        &self,
        job: &str,
        host: &str,
        boot: Option<&str>,
        bt: Option<f64>,
        digest: &str,
    ) -> bool {
        [
            self.reboot.get(&reboot_key(job, host)),
            self.reboot.get(job),
        ]
        .into_iter()
        .flatten()
        .any(|m| m.covers(host, boot, bt, digest))
    }
}

impl RebootFact {
    /// Whether this marker covers the current boot of `host` for `digest`
    /// (the boot ids equal when both are known, else the boot times
    /// within a minute; with neither, every start counts as a boot).
    pub fn covers(&self, host: &str, boot: Option<&str>, bt: Option<f64>, digest: &str) -> bool {
        if self.host != host || self.digest != digest {
            return false;
        }
        match (boot, self.boot.as_deref()) {
            (Some(ours), Some(theirs)) => ours == theirs,
            _ => matches!((bt, self.bt), (Some(a), Some(b)) if (a - b).abs() <= 60.0),
        }
    }
}

/// The whole document, decoded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Per job, its newest pause or resume.
    pub pauses: BTreeMap<String, PauseFact>,
    /// Per job, a retry still pending.
    pub retries: BTreeMap<String, RetryFact>,
    /// Per job, its last success or failure.
    pub outcomes: BTreeMap<String, OutcomeFact>,
    /// The newest `@reboot` marker per job and host, under
    /// [`reboot_key`] (an `EveryNode` job runs on every pod, and each
    /// pod's marker must survive the others'). Documents written before
    /// hold one marker per job under the bare job name; those still count.
    pub reboot: BTreeMap<String, RebootFact>,
    /// The counters snapshot (`{"buckets": [...], "jobs": {...}}`).
    pub counters: Option<Value>,
}

/// What another node's write changed: per job, the new pause mark and
/// the new last outcome.
pub type Changes = (Vec<(String, PauseMark)>, Vec<(String, OutcomeFact)>);

/// A retry change waiting to be written.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryOp {
    /// Armed (or re-armed).
    Pending(RetryFact),
    /// The ladder at `attempt` ended or launches.
    Settled(u32),
}

/// The scheduler's writes since the last write that landed, folded per
/// job (the newest wins), so a burst of fires costs one entry per job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delta {
    /// Pauses and resumes.
    pub pauses: BTreeMap<String, PauseFact>,
    /// Retry changes.
    pub retries: BTreeMap<String, RetryOp>,
    /// Last outcomes.
    pub outcomes: BTreeMap<String, OutcomeFact>,
    /// `@reboot` markers, under [`reboot_key`].
    pub reboot: BTreeMap<String, RebootFact>,
    /// A newer counters snapshot.
    pub counters: Option<Value>,
}

impl Delta {
    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.pauses.is_empty()
            && self.retries.is_empty()
            && self.outcomes.is_empty()
            && self.reboot.is_empty()
            && self.counters.is_none()
    }

    /// Folds a pause or resume in (a newer mark replaces an older one).
    pub fn pause(&mut self, job: &str, mark: &PauseMark) {
        let newer = match self.pauses.get(job).and_then(PauseFact::mark) {
            Some(old) => mark.supersedes(&old),
            None => true,
        };
        if newer {
            self.pauses
                .insert(job.to_owned(), PauseFact::from_mark(mark));
        }
    }

    /// Folds a retry change in: a settlement of an older attempt than the
    /// one pending does not remove it.
    pub fn retry(&mut self, job: &str, op: RetryOp) {
        if let (Some(RetryOp::Pending(p)), RetryOp::Settled(a)) = (self.retries.get(job), &op) {
            if p.attempt > *a {
                return;
            }
        }
        self.retries.insert(job.to_owned(), op);
    }

    /// Folds a finished run's verdict in (a later finish wins).
    pub fn outcome(&mut self, job: &str, fact: OutcomeFact) {
        if self.outcomes.get(job).is_none_or(|o| o.at <= fact.at) {
            self.outcomes.insert(job.to_owned(), fact);
        }
    }
}

impl Facts {
    /// Applies `delta` on top of this document (what the server holds).
    pub fn apply(&mut self, delta: &Delta) {
        for (job, fact) in &delta.pauses {
            let newer = match (self.pauses.get(job).and_then(PauseFact::mark), fact.mark()) {
                (Some(old), Some(new)) => new.supersedes(&old),
                _ => true,
            };
            if newer {
                self.pauses.insert(job.clone(), fact.clone());
            }
        }
        for (job, op) in &delta.retries {
            match op {
                RetryOp::Pending(fact) => {
                    self.retries.insert(job.clone(), fact.clone());
                }
                RetryOp::Settled(attempt) => {
                    if self.retries.get(job).is_some_and(|r| r.attempt <= *attempt) {
                        self.retries.remove(job);
                    }
                }
            }
        }
        for (job, fact) in &delta.outcomes {
            if self.outcomes.get(job).is_none_or(|o| o.at <= fact.at) {
                self.outcomes.insert(job.clone(), *fact);
            }
        }
        for (job, fact) in &delta.reboot {
            self.reboot.insert(job.clone(), fact.clone());
        }
        if let Some(counters) = &delta.counters {
            self.counters = Some(compact_counters(counters));
        }
    }

    /// Reads the ConfigMap's `data`. A key that does not parse is read as
    /// empty and named in the returned warnings (the next write replaces
    /// it); a key this version does not know is left alone.
    pub fn decode(data: &BTreeMap<String, String>) -> (Facts, Vec<String>) {
        let mut warnings = Vec::new();
        fn read<T: for<'de> Deserialize<'de> + Default>(
            data: &BTreeMap<String, String>,
            key: &str,
            warnings: &mut Vec<String>,
        ) -> T {
            match data.get(key) {
                None => T::default(),
                Some(text) => serde_json::from_str(text).unwrap_or_else(|e| {
                    warnings.push(format!("key {key} does not parse ({e}); read as empty"));
                    T::default()
                }),
            }
        }
        let facts = Facts {
            pauses: read(data, KEY_PAUSES, &mut warnings),
            retries: read(data, KEY_RETRIES, &mut warnings),
            outcomes: read(data, KEY_OUTCOMES, &mut warnings),
            reboot: read(data, KEY_REBOOT, &mut warnings),
            counters: read::<Option<Value>>(data, KEY_COUNTERS, &mut warnings)
                .filter(|v| !v.is_null()),
        };
        (facts, warnings)
    }

    /// Encodes each key, dropping lapsed pauses first and then, while the
    /// whole is over `budget`, the least useful entries (see
    /// [`trim`]); returns the values and what was dropped to fit.
    pub fn encode(
        &mut self,
        now: DateTime<Utc>,
        budget: usize,
    ) -> (BTreeMap<String, String>, Vec<String>) {
        self.pauses.retain(|_, p| p.live(now));
        let dropped = trim(self, budget);
        (self.values(), dropped)
    }

    /// The values as they are written (no trimming).
    pub fn values(&self) -> BTreeMap<String, String> {
        let text = |v: Result<String, serde_json::Error>| v.unwrap_or_else(|_| "{}".to_owned());
        let mut out = BTreeMap::new();
        out.insert(
            KEY_PAUSES.to_owned(),
            text(serde_json::to_string(&self.pauses)),
        );
        out.insert(
            KEY_RETRIES.to_owned(),
            text(serde_json::to_string(&self.retries)),
        );
        out.insert(
            KEY_OUTCOMES.to_owned(),
            text(serde_json::to_string(&self.outcomes)),
        );
        out.insert(
            KEY_REBOOT.to_owned(),
            text(serde_json::to_string(&self.reboot)),
        );
        out.insert(
            KEY_COUNTERS.to_owned(),
            text(serde_json::to_string(
                self.counters.as_ref().unwrap_or(&Value::Null),
            )),
        );
        out
    }

    /// The events another node's write means for this node: each job
    /// whose pause mark or last outcome differs from `before`.
    pub fn changes_since(&self, before: &Facts) -> Changes {
        let pauses = self
            .pauses
            .iter()
            .filter(|(job, fact)| before.pauses.get(*job) != Some(*fact))
            .filter_map(|(job, fact)| Some((job.clone(), fact.mark()?)))
            .collect();
        let outcomes = self
            .outcomes
            .iter()
            .filter(|(job, fact)| before.outcomes.get(*job) != Some(*fact))
            .map(|(job, fact)| (job.clone(), *fact))
            .collect();
        (pauses, outcomes)
    }

    /// The pending retries, in the port's form.
    pub fn port_retries(&self) -> HashMap<String, DurableRetry> {
        self.retries
            .iter()
            .map(|(job, r)| (job.clone(), r.to_port()))
            .collect()
    }
}

/// The counters snapshot without what seeds nothing: the original's
/// compatibility fields (always zero here) and zero counts. Roughly
/// halves a job's entry.
pub fn compact_counters(snapshot: &Value) -> Value {
    let mut out = snapshot.clone();
    if let Some(jobs) = out.get_mut("jobs").and_then(Value::as_object_mut) {
        for job in jobs.values_mut() {
            if let Some(fields) = job.as_object_mut() {
                fields.retain(|key, value| {
                    !matches!(
                        key.as_str(),
                        "cpu_user_sum"
                            | "cpu_system_sum"
                            | "cpu_count"
                            | "max_rss_observed"
                            | "sla_breaches"
                    ) && !is_zero(value)
                });
            }
        }
    }
    out
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn size(facts: &Facts) -> usize {
    facts.values().values().map(String::len).sum()
}

/// When a job's counters last moved (its last success or failure).
fn activity(job: &Map<String, Value>) -> f64 {
    let time = |k: &str| job.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    time("last_success_time").max(time("last_failure_time"))
}

/// Brings `facts` under `budget` bytes, least useful first: the counters'
/// duration histograms (run counts are kept), then the counters of the
/// jobs that ran longest ago, then the oldest outcomes, `@reboot`
/// markers and retries (by when they were recorded), then the oldest
/// pauses. Returns a line per kind of entry dropped.
pub fn trim(facts: &mut Facts, budget: usize) -> Vec<String> {
    let mut dropped = Vec::new();
    if size(facts) <= budget {
        return dropped;
    }
    if let Some(jobs) = facts
        .counters
        .as_mut()
        .and_then(|c| c.get_mut("jobs"))
        .and_then(Value::as_object_mut)
    {
        for job in jobs.values_mut() {
            if let Some(fields) = job.as_object_mut() {
                for key in ["bucket_counts", "duration_sum", "duration_count"] {
                    fields.remove(key);
                }
            }
        }
        dropped.push("the counters' duration histograms".to_owned());
    }
    // Drop whole entries in batches sized from the overshoot, so a large
    // document is trimmed in a few encodes rather than one per entry.
    let mut removed = 0usize;
    while size(facts) > budget {
        let jobs = facts
            .counters
            .as_mut()
            .and_then(|c| c.get_mut("jobs"))
            .and_then(Value::as_object_mut);
        let Some(jobs) = jobs.filter(|j| !j.is_empty()) else {
            break;
        };
        let mut order: Vec<(f64, String)> = jobs
            .iter()
            .map(|(name, v)| (v.as_object().map_or(0.0, activity), name.clone()))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let batch = (order.len() / 8).max(1);
        for (_, name) in order.into_iter().take(batch) {
            jobs.remove(&name);
            removed += 1;
        }
    }
    if removed > 0 {
        dropped.push(format!(
            "the counters of {removed} job(s) that ran longest ago"
        ));
    }
    /// Removes the oldest eighth (at least one) of `map`'s entries;
    /// how many it removed.
    fn oldest<T>(map: &mut BTreeMap<String, T>, at: impl Fn(&T) -> DateTime<Utc>) -> usize {
        let mut order: Vec<(DateTime<Utc>, String)> =
            map.iter().map(|(job, v)| (at(v), job.clone())).collect();
        order.sort();
        let batch = (order.len() / 8).max(1).min(order.len());
        for (_, job) in order.into_iter().take(batch) {
            map.remove(&job);
        }
        batch
    }
    for kind in ["outcomes", "@reboot markers", "pending retries", "pauses"] {
        let mut count = 0usize;
        while size(facts) > budget {
            let gone = match kind {
                "outcomes" => oldest(&mut facts.outcomes, |o| o.at),
                "@reboot markers" => oldest(&mut facts.reboot, |r| r.at),
                "pending retries" => oldest(&mut facts.retries, |r| r.at),
                _ => oldest(&mut facts.pauses, |p| p.at),
            };
            if gone == 0 {
                break;
            }
            count += gone;
        }
        if count > 0 {
            dropped.push(format!("the {count} oldest {kind}"));
        }
    }
    dropped
}

#[cfg(test)]
#[path = "doc_tests.rs"]
mod tests;
