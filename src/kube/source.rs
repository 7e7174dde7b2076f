//! The Kubernetes job source: the files of `-c` (if any), the ConfigMap's
//! keys and every selected CronJobSet, assembled into one job table and
//! handed to the scheduler through the same [`JobSource`] port the file
//! source uses, so a change swaps the table exactly as a file reload does.
//!
//! Isolation: each set is loaded on its own against the sections of the
//! rest of the config. A set the loader refuses is left out (or, when it
//! was accepted before, keeps running its last accepted spec) and reported
//! on its status and with an Event; the other sets are untouched. A broken
//! file or ConfigMap keeps the last good version of that part, as a broken
//! file does without `--kube`, and so does a deleted ConfigMap: the config
//! it gave (jobs, web and every other section) keeps running until it is
//! created again, said with a WARNING and an Event, as is a ConfigMap
//! missing at start ([`super::presence`]).
//!
//! Cost: a change to one set loads that set only; the table is then the
//! cached jobs of every set concatenated. A status write on a set (same
//! `metadata.generation`) changes nothing and delivers nothing.

use super::convert::{to_source, SetSource};
use super::crd::{Condition, CronJobSet, CronJobSetSpec};
use super::events::{EventRequest, EventSink};
use super::presence::{self, Announce};
use super::sets::{SetKey, SetReport, SetReports};
use super::watch::{Arrived, Change};
use crate::config::sections::Sections;
use crate::config::stamp::ConfigStamp;
use crate::config::{self, JobConfig, LoadedConfig, Source, SourceKind};
use crate::scheduler::ports::{JobSet, JobSource};
use crate::scheduler::sections::LiveSections;
use crate::status::kube::{ConfigMapState, SetCounts};
use chrono::Utc;
use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::DynamicObject;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, watch};

/// A set's spec as loaded once (cached until its generation or the rest
/// of the config changes).
#[derive(Debug, Clone)]
struct Loaded {
    generation: Option<i64>,
    base_version: u64,
    jobs: Vec<Arc<JobConfig>>,
    /// The jobs' fingerprint digests, kept so the whole table's id is
    /// computed without hashing unchanged sets again.
    digests: Vec<String>,
    names: Vec<(String, String)>,
    suspend: bool,
    job_set_id: String,
}

/// One selected set.
#[derive(Debug)]
struct SetEntry {
    uid: Option<String>,
    generation: Option<i64>,
    /// The spec as last seen (the rest of the object is not kept: a real
    /// API server's `managedFields` alone can outweigh the jobs).
    spec: serde_json::Value,
    /// The verdict on `generation` against `base_version`, once checked.
    checked: Option<(Option<i64>, u64, Result<(), String>)>,
    /// The latest accepted spec.
    good: Option<Loaded>,
    seen_conditions: Vec<Condition>,
}

/// The files and the ConfigMap: the part of the config that may hold
/// sections. Its last good load is kept.
struct Base {
    jobs: Vec<Arc<JobConfig>>,
    digests: Vec<String>,
    sections: Sections,
    version: u64,
}

/// The Kubernetes job source (see the module documentation).
pub struct KubeSource {
    root: Option<PathBuf>,
    stamp: Option<ConfigStamp>,
    namespace: String,
    configmap_name: Option<String>,
    /// The ConfigMap's data as last seen (kept when it is deleted).
    configmap: Option<BTreeMap<String, String>>,
    /// Whether it exists, published (written here only).
    configmap_state: watch::Sender<ConfigMapState>,
    /// This scheduler's pod, which the ConfigMap's absence is evented on.
    pod: Option<ObjectReference>,
    base: Base,
    base_dirty: bool,
    sets: BTreeMap<SetKey, SetEntry>,
    /// Sets whose jobs changed since the last delivery.
    dirty: bool,
    changes: mpsc::UnboundedReceiver<Arrived>,
    /// The earliest change not yet in force.
    pending_since: Option<Instant>,
    last_id: String,
    last_suspended: HashSet<String>,
    /// The sets taken, published (written here only).
    set_counts: watch::Sender<SetCounts>,
    sections: LiveSections,
    reports_tx: watch::Sender<Arc<SetReports>>,
    events: EventSink,
}

/// Where the source sends what it produces besides job sets.
pub struct SourceOutputs {
    /// The counts of the sets taken, published for `GET /kube` and the
    /// metrics (the source is their one writer).
    pub set_counts: watch::Sender<SetCounts>,
    /// Events on the sets (refusals, clashes) and the ConfigMap.
    pub events: EventSink,
    /// Whether the ConfigMap exists, published for `GET /kube` and
    /// `/readyz` (the source is its one writer).
    pub configmap_state: watch::Sender<ConfigMapState>,
    /// This scheduler's pod, if known (`--pod-name`): a missing ConfigMap
    /// is evented on it.
    pub pod: Option<ObjectReference>,
}

impl KubeSource {
    /// A source over the optional `-c` path (whose first load the caller
    /// did, and put in force: `sections`) and the watch task's `changes`;
    /// returns the initial job set (the files' jobs: the cluster's arrive
    /// when the watches list).
    pub fn open(
        root: Option<PathBuf>,
        loaded: LoadedConfig,
        namespace: String,
        configmap_name: Option<String>,
        changes: mpsc::UnboundedReceiver<Arrived>,
        sections: LiveSections,
        outputs: SourceOutputs,
    ) -> (Self, JobSet) {
        let stamp = root
            .as_ref()
            .map(|root| ConfigStamp::take(root, &loaded.files));
        let (reports_tx, _) = watch::channel(Arc::new(SetReports::new()));
        let digests = crate::fingerprint::job_digests(&loaded.jobs);
        let jobs = config::shared_without_specs(loaded.jobs);
        let initial = JobSet {
            job_set_id: crate::fingerprint::id_from_digests(digests.clone()),
            jobs: jobs.clone(),
            sources: loaded
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect(),
            requested_at: Utc::now(),
            suspended: HashSet::new(),
        };
        let source = KubeSource {
            root,
            stamp,
            namespace,
            configmap_name,
            configmap: None,
            configmap_state: outputs.configmap_state,
            pod: outputs.pod,
            last_id: initial.job_set_id.clone(),
            base: Base {
                jobs,
                digests,
                sections: loaded.sections,
                version: 0,
            },
            base_dirty: false,
            sets: BTreeMap::new(),
            dirty: false,
            changes,
            pending_since: None,
            last_suspended: HashSet::new(),
            set_counts: outputs.set_counts,
            sections,
            reports_tx,
            events: outputs.events,
        };
        (source, initial)
    }

    /// Every selected set's report, updated whenever a set is (re)checked.
    pub fn reports(&self) -> watch::Receiver<Arc<SetReports>> {
        self.reports_tx.subscribe()
    }

    /// Takes one change into the source's picture.
    fn apply(&mut self, arrived: Arrived) {
        self.pending_since.get_or_insert(arrived.at);
        match arrived.change {
            Change::SetsListed(objects) => {
                let mut listed = BTreeMap::new();
                for object in objects {
                    if let Some(key) = key_of(&object) {
                        listed.insert(key, object);
                    }
                }
                let before = self.sets.len();
                self.sets.retain(|key, _| listed.contains_key(key));
                if self.sets.len() != before {
                    self.dirty = true;
                }
                for (key, object) in listed {
                    self.upsert(key, object);
                }
                // Re-examined even when nothing moved: the reports are
                // published anew after every list.
                self.dirty = true;
            }
            Change::SetApplied(object) => {
                if let Some(key) = key_of(&object) {
                    self.upsert(key, *object);
                }
            }
            Change::SetDeleted { namespace, name } => {
                let key = SetKey { namespace, name };
                if self.sets.remove(&key).is_some() {
                    self.dirty = true;
                }
            }
            Change::ConfigMap(data) => {
                self.note_configmap(data.is_some());
                // Missing or deleted: the data last seen stays, and with it
                // the running config (never lost to bad input).
                if data.is_some() && data != self.configmap {
                    self.configmap = data;
                    self.base_dirty = true;
                }
                self.dirty = true;
            }
        }
    }

    fn upsert(&mut self, key: SetKey, mut object: DynamicObject) {
        let uid = object.metadata.uid.clone();
        let generation = object.metadata.generation;
        let spec = object
            .data
            .get_mut("spec")
            .map(serde_json::Value::take)
            .unwrap_or(serde_json::Value::Null);
        match self.sets.get_mut(&key) {
            Some(entry) if entry.uid == uid && entry.generation == generation => {
                // A status write or a label change: the spec is the same.
            }
            Some(entry) if entry.uid == uid => {
                entry.generation = generation;
                entry.spec = spec;
                self.dirty = true;
            }
            _ => {
                let seen_conditions = object
                    .data
                    .get("status")
                    .and_then(|s| s.get("conditions"))
                    .and_then(|c| serde_json::from_value(c.clone()).ok())
                    .unwrap_or_default();
                self.sets.insert(
                    key,
                    SetEntry {
                        uid,
                        generation,
                        spec,
                        checked: None,
                        good: None,
                        seen_conditions,
                    },
                );
                self.dirty = true;
            }
        }
    }

    /// Follows whether the ConfigMap exists, and says so once per change.
    fn note_configmap(&mut self, present: bool) {
        let Some(name) = self.configmap_name.clone() else {
            return;
        };
        let (next, announce) = presence::step(*self.configmap_state.borrow(), present);
        self.configmap_state.send_if_modified(|state| {
            let changed = *state != next;
            *state = next;
            changed
        });
        let namespace = &self.namespace;
        let note = match announce {
            None => return,
            Some(Announce::Found { again }) => {
                tracing::info!(
                    target: "cronstable::kube",
                    "ConfigMap {namespace}/{name} (--configmap) {}; loading it",
                    if again { "was created again" } else { "now exists" }
                );
                return;
            }
            Some(Announce::Missing) => format!(
                "ConfigMap {namespace}/{name} (--configmap) does not exist: nothing is taken from \
                 it (no jobs, no web section) until it is created; check the name and the namespace"
            ),
            Some(Announce::Deleted) => format!(
                "ConfigMap {namespace}/{name} (--configmap) was deleted: keeping the running config \
                 it gave (jobs, web and the other sections) until it is created again"
            ),
        };
        tracing::warn!(target: "cronstable::kube", "{note}");
        let _ = self.events.send(EventRequest::configmap_absent(
            namespace,
            &name,
            announce == Some(Announce::Deleted),
            self.pod.as_ref(),
            note,
        ));
    }

    /// Takes every change already waiting.
    fn drain(&mut self) {
        while let Ok(arrived) = self.changes.try_recv() {
            self.apply(arrived);
        }
    }

    /// Notices edited files of `-c`.
    fn check_files(&mut self) {
        if let (Some(root), Some(stamp)) = (&self.root, &self.stamp) {
            if stamp.changed(root) {
                self.base_dirty = true;
                self.dirty = true;
            }
        }
    }

    /// Reloads the files and the ConfigMap; keeps the last good load (and
    /// logs why) when they are broken.
    fn reload_base(&mut self) {
        self.base_dirty = false;
        let sources = self.configmap_sources();
        let loaded = config::load_path_and_sources(self.root.as_deref(), &sources);
        if let (Some(root), Some(stamp)) = (&self.root, &mut self.stamp) {
            let files = match &loaded {
                Ok(loaded) => loaded.files.clone(),
                Err(_) => stamp.files().to_vec(),
            };
            *stamp = ConfigStamp::take(root, &files);
        }
        match loaded {
            Ok(loaded) => {
                for warning in &loaded.warnings {
                    tracing::warn!(target: "cronstable::config", "{warning}");
                }
                self.sections.apply(&loaded.sections);
                self.base = Base {
                    digests: crate::fingerprint::job_digests(&loaded.jobs),
                    jobs: config::shared_without_specs(loaded.jobs),
                    sections: loaded.sections,
                    version: self.base.version + 1,
                };
            }
            Err(err) => {
                self.sections.failed();
                tracing::error!(
                    target: "cronstable::scheduler",
                    "Error in configuration file(s), so not updating any of the config.:\n{err}"
                );
                if let Some(name) = &self.configmap_name {
                    if self.configmap.is_some() {
                        let _ = self.events.send(EventRequest::invalid_config(
                            &self.namespace,
                            name,
                            err.to_string(),
                        ));
                    }
                }
            }
        }
    }

    /// The ConfigMap's keys as config sources, in key order.
    fn configmap_sources(&self) -> Vec<Source> {
        let (Some(name), Some(data)) = (&self.configmap_name, &self.configmap) else {
            return Vec::new();
        };
        data.iter()
            .filter_map(|(key, text)| {
                let kind = SourceKind::of_path(Path::new(key))?;
                Some(Source {
                    name: format!("configmap/{}/{name}:{key}", self.namespace),
                    text: text.clone(),
                    kind,
                    include_dir: None,
                })
            })
            .collect()
    }

    /// Checks every set whose spec or base moved; events refusals.
    fn check_sets(&mut self) {
        let base_version = self.base.version;
        for (key, entry) in &mut self.sets {
            let current = (entry.generation, base_version);
            if entry
                .checked
                .as_ref()
                .is_some_and(|(g, b, _)| (*g, *b) == current)
            {
                continue;
            }
            let verdict = match load_set(key, &entry.spec, &self.base.sections) {
                Ok((set, loaded)) => {
                    for warning in &loaded.warnings {
                        tracing::warn!(target: "cronstable::config", "{warning}");
                    }
                    let digests = crate::fingerprint::job_digests(&loaded.jobs);
                    entry.good = Some(Loaded {
                        generation: entry.generation,
                        base_version,
                        job_set_id: crate::fingerprint::id_from_digests(digests.clone()),
                        digests,
                        jobs: config::shared_without_specs(loaded.jobs),
                        names: set.jobs,
                        suspend: set.suspend,
                    });
                    Ok(())
                }
                Err(message) => {
                    tracing::error!(
                        target: "cronstable::kube",
                        "CronJobSet {}/{} refused (generation {}): {message}",
                        key.namespace,
                        key.name,
                        entry.generation.unwrap_or(0)
                    );
                    let _ = self.events.send(EventRequest::invalid_spec(
                        key,
                        entry.uid.as_deref(),
                        message.clone(),
                    ));
                    // An accepted spec checked against an older base must
                    // still hold against this one to keep running.
                    if let Some(good) = &entry.good {
                        if good.base_version != base_version {
                            entry.good = None;
                        }
                    }
                    Err(message)
                }
            };
            entry.checked = Some((entry.generation, base_version, verdict));
        }
    }

    /// Builds the job table if anything moved; None when it is the one in
    /// force.
    fn assemble(&mut self) -> Option<JobSet> {
        if !self.dirty && !self.base_dirty {
            // Only status writes or label changes arrived: nothing to time.
            self.pending_since = None;
            return None;
        }
        let requested_at = Utc::now();
        let began = Instant::now();
        if self.base_dirty {
            self.reload_base();
        }
        self.check_sets();
        let checked = began.elapsed();
        self.dirty = false;
        let mut names: HashSet<&str> = self.base.jobs.iter().map(|j| j.name.as_str()).collect();
        let mut jobs: Vec<Arc<JobConfig>> = self.base.jobs.clone();
        let mut digests: Vec<&str> = self.base.digests.iter().map(String::as_str).collect();
        let mut suspended = HashSet::new();
        let mut reports = SetReports::new();
        let (mut accepted, mut rejected, mut paused) = (0u64, 0u64, 0u64);
        let mut sources: Vec<String> = Vec::new();
        let mut clashes: Vec<(SetKey, String)> = Vec::new();
        for (key, entry) in &self.sets {
            let verdict = entry
                .checked
                .as_ref()
                .map(|(_, _, v)| v.clone())
                .unwrap_or(Ok(()));
            let mut running = entry.good.as_ref();
            if let Some(good) = running {
                if let Some(clash) = good.jobs.iter().find(|j| names.contains(j.name.as_str())) {
                    clashes.push((
                        key.clone(),
                        format!(
                            "a job named '{}' is already defined elsewhere in the config; job \
                             names must be unique across the whole config",
                            clash.name
                        ),
                    ));
                    running = None;
                }
            }
            let verdict = match clashes.last() {
                Some((clashed, message)) if clashed == key => Err(message.clone()),
                _ => verdict,
            };
            if verdict.is_ok() {
                accepted += 1;
            } else {
                rejected += 1;
            }
            if let Some(good) = running {
                for job in good.jobs.iter() {
                    names.insert(job.name.as_str());
                }
                jobs.extend(good.jobs.iter().cloned());
                digests.extend(good.digests.iter().map(String::as_str));
                if good.suspend {
                    paused += 1;
                    suspended.extend(good.jobs.iter().map(|j| j.name.clone()));
                }
                sources.push(super::convert::source_name(&key.namespace, &key.name));
            }
            reports.insert(
                key.clone(),
                Arc::new(SetReport {
                    key: key.clone(),
                    uid: entry.uid.clone(),
                    generation: entry.generation,
                    running_generation: running.and_then(|g| g.generation),
                    verdict,
                    suspended: running.is_some_and(|g| g.suspend),
                    jobs: running.map(|g| g.names.clone()).unwrap_or_default(),
                    job_set_id: running.map(|g| g.job_set_id.clone()),
                    seen_conditions: entry.seen_conditions.clone(),
                }),
            );
        }
        for (key, message) in clashes {
            let uid = self.sets.get(&key).and_then(|e| e.uid.clone());
            tracing::error!(
                target: "cronstable::kube",
                "CronJobSet {}/{} refused: {message}",
                key.namespace,
                key.name
            );
            let _ = self
                .events
                .send(EventRequest::invalid_spec(&key, uid.as_deref(), message));
        }
        self.reports_tx.send_replace(Arc::new(reports));
        let job_set_id = crate::fingerprint::id_from_digests(digests);
        let pending_since = self.pending_since.take();
        let seen = self.sets.len() as u64;
        self.set_counts.send_modify(|counts| {
            counts.seen = seen;
            counts.accepted = accepted;
            counts.rejected = rejected;
            counts.suspended = paused;
            if let Some(since) = pending_since {
                counts.apply_duration.observe(since.elapsed().as_secs_f64());
            }
        });
        tracing::debug!(
            target: "cronstable::kube",
            "assembled {} job(s) from {} CronJobSet(s) in {:.1} ms ({:.1} ms loading)",
            jobs.len(),
            self.sets.len(),
            began.elapsed().as_secs_f64() * 1e3,
            checked.as_secs_f64() * 1e3
        );
        if job_set_id == self.last_id && suspended == self.last_suspended {
            return None;
        }
        self.last_id = job_set_id.clone();
        self.last_suspended = suspended.clone();
        let mut all_sources: Vec<String> =
            self.root.iter().map(|r| r.display().to_string()).collect();
        if let (Some(name), Some(_)) = (&self.configmap_name, &self.configmap) {
            all_sources.push(format!("configmap/{}/{name}", self.namespace));
        }
        all_sources.extend(sources);
        Some(JobSet {
            jobs,
            job_set_id,
            sources: all_sources,
            requested_at,
            suspended,
        })
    }
}

/// The set's namespace and name (every object from the API has both).
fn key_of(object: &DynamicObject) -> Option<SetKey> {
    Some(SetKey {
        namespace: object.metadata.namespace.clone()?,
        name: object.metadata.name.clone()?,
    })
}

/// Loads one set on its own against the rest of the config's sections.
fn load_set(
    key: &SetKey,
    spec: &serde_json::Value,
    sections: &Sections,
) -> Result<(SetSource, LoadedConfig), String> {
    let spec: CronJobSetSpec = serde_json::from_value(spec.clone()).map_err(|e| {
        format!(
            "{}: the spec does not match the CronJobSet schema: {e}",
            super::convert::source_name(&key.namespace, &key.name)
        )
    })?;
    let mut set = CronJobSet::new(&key.name, spec);
    set.metadata.namespace = Some(key.namespace.clone());
    let source = to_source(&set).map_err(|e| e.to_string())?;
    let loaded = config::load_jobs_against(std::slice::from_ref(&source.source), sections)
        .map_err(|e| e.to_string())?;
    Ok((source, loaded))
}

impl JobSource for KubeSource {
    fn poll(&mut self) -> Option<JobSet> {
        self.check_files();
        self.drain();
        self.assemble()
    }

    fn next(&mut self) -> BoxFuture<'_, JobSet> {
        Box::pin(async move {
            loop {
                // Cancel-safe: a change is only taken off the channel
                // together with the synchronous work that uses it.
                let Some(arrived) = self.changes.recv().await else {
                    // The watch task ended (the runtime is stopping).
                    std::future::pending::<()>().await;
                    continue;
                };
                self.apply(arrived);
                self.drain();
                if let Some(set) = self.assemble() {
                    return set;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Harness {
        source: KubeSource,
        tx: mpsc::UnboundedSender<Arrived>,
        events: mpsc::UnboundedReceiver<EventRequest>,
        set_counts: watch::Receiver<SetCounts>,
        configmap_state: watch::Receiver<ConfigMapState>,
    }

    fn harness(configmap: Option<&str>, file_jobs: &str) -> Harness {
        let loaded = config::load_sources(&[Source {
            name: "files.yaml".into(),
            text: file_jobs.into(),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("the file part loads");
        let (counts_tx, set_counts) = watch::channel(SetCounts::default());
        let (configmap_tx, configmap_state) = watch::channel(ConfigMapState::Unknown);
        let sections = LiveSections::start(&loaded.sections, 0.0);
        let (tx, rx) = mpsc::unbounded_channel();
        let (sink, events) = mpsc::unbounded_channel();
        let (source, _) = KubeSource::open(
            None,
            loaded,
            "ops".into(),
            configmap.map(str::to_owned),
            rx,
            sections,
            SourceOutputs {
                set_counts: counts_tx,
                events: sink,
                configmap_state: configmap_tx,
                pod: None,
            },
        );
        Harness {
            source,
            tx,
            events,
            set_counts,
            configmap_state,
        }
    }

    fn set(name: &str, generation: i64, spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "cronstable.io/v1alpha1",
            "kind": "CronJobSet",
            "metadata": {
                "name": name,
                "namespace": "ops",
                "uid": format!("uid-{name}"),
                "generation": generation,
                "resourceVersion": format!("{}", generation * 100),
            },
            "spec": spec,
        }))
        .expect("a set object")
    }

    fn job(name: &str, schedule: &str) -> serde_json::Value {
        json!({"name": name, "command": "true", "schedule": schedule})
    }

    impl Harness {
        fn send(&self, change: Change) {
            self.tx
                .send(Arrived {
                    change,
                    at: Instant::now(),
                })
                .expect("the source listens");
        }

        fn report(&self, name: &str) -> Arc<SetReport> {
            let reports = self.source.reports_tx.borrow().clone();
            let key = SetKey {
                namespace: "ops".into(),
                name: name.into(),
            };
            Arc::clone(reports.get(&key).expect("a report for the set"))
        }

        fn events(&mut self) -> Vec<EventRequest> {
            let mut out = Vec::new();
            while let Ok(e) = self.events.try_recv() {
                out.push(e);
            }
            out
        }
    }

    fn names(set: &JobSet) -> Vec<&str> {
        set.jobs.iter().map(|j| j.name.as_str()).collect()
    }

    fn schedule_of<'a>(set: &'a JobSet, name: &str) -> &'a str {
        &set.jobs
            .iter()
            .find(|j| j.name == name)
            .expect("the job")
            .schedule
            .text
    }

    #[test]
    fn a_bad_set_is_left_out_alone_and_its_neighbours_load() {
        let mut h = harness(
            None,
            "jobs:\n  - name: local\n    command: 'true'\n    schedule: '@daily'\n",
        );
        h.send(Change::SetsListed(vec![
            set(
                "good",
                1,
                json!({"jobs": [job("a", "*/5 * * * *"), job("b", "@hourly")]}),
            ),
            set("bad", 1, json!({"jobs": [job("x", "61 * * * *")]})),
        ]));
        let delivered = h.source.poll().expect("a new table");
        assert_eq!(names(&delivered), ["local", "ops:good:a", "ops:good:b"]);
        let bad = h.report("bad");
        let message = bad.verdict.clone().expect_err("refused");
        assert!(message.contains("cronjobset/ops/bad"), "{message}");
        assert!(
            message.contains("ops:bad:x") && message.contains("schedule"),
            "{message}"
        );
        assert_eq!(bad.running_generation, None);
        assert!(bad.jobs.is_empty());
        let good = h.report("good");
        assert_eq!(good.verdict, Ok(()));
        assert_eq!(good.running_generation, Some(1));
        assert_eq!(
            good.jobs,
            vec![
                ("a".to_owned(), "ops:good:a".to_owned()),
                ("b".to_owned(), "ops:good:b".to_owned())
            ]
        );
        let events = h.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].reason, "InvalidSpec");
        assert_eq!(events[0].regarding.name.as_deref(), Some("bad"));
        assert_eq!(events[0].regarding.uid.as_deref(), Some("uid-bad"));
        let counts = h.set_counts.borrow().clone();
        assert_eq!((counts.seen, counts.accepted, counts.rejected), (2, 1, 1));
        assert_eq!(counts.apply_duration.count(), 1);
    }

    #[test]
    fn a_status_write_changes_nothing_and_a_spec_edit_swaps_the_table() {
        let mut h = harness(None, "jobs: []\n");
        h.send(Change::SetsListed(vec![set(
            "s",
            1,
            json!({"jobs": [job("a", "@hourly")]}),
        )]));
        assert!(h.source.poll().is_some());
        // Same generation, new resourceVersion and a status: our own write.
        let mut written = set("s", 1, json!({"jobs": [job("a", "@hourly")]}));
        written.metadata.resource_version = Some("101".into());
        written.data["status"] = json!({"observedGeneration": 1});
        h.send(Change::SetApplied(Box::new(written)));
        assert!(
            h.source.poll().is_none(),
            "a status write must not swap the table"
        );
        h.send(Change::SetApplied(Box::new(set(
            "s",
            2,
            json!({"jobs": [job("a", "@daily")]}),
        ))));
        let delivered = h.source.poll().expect("the edit lands");
        assert_eq!(schedule_of(&delivered, "ops:s:a"), "@daily");
        assert!(h.events().is_empty());
    }

    #[test]
    fn a_breaking_edit_keeps_the_last_accepted_spec_running() {
        let mut h = harness(None, "jobs: []\n");
        h.send(Change::SetsListed(vec![set(
            "s",
            1,
            json!({"jobs": [job("a", "@hourly")]}),
        )]));
        let first = h.source.poll().expect("loads");
        h.send(Change::SetApplied(Box::new(set(
            "s",
            2,
            json!({"jobs": [job("a", "not a schedule")]}),
        ))));
        assert!(h.source.poll().is_none(), "the running table stays");
        let report = h.report("s");
        assert!(report.verdict.is_err());
        assert_eq!(report.generation, Some(2));
        assert_eq!(report.running_generation, Some(1));
        assert_eq!(report.jobs, vec![("a".to_owned(), "ops:s:a".to_owned())]);
        assert_eq!(h.events().len(), 1);
        // Fixing it swaps in the fix.
        h.send(Change::SetApplied(Box::new(set(
            "s",
            3,
            json!({"jobs": [job("a", "@daily")]}),
        ))));
        let fixed = h.source.poll().expect("the fix lands");
        assert_ne!(fixed.job_set_id, first.job_set_id);
        assert_eq!(h.report("s").verdict, Ok(()));
    }

    #[test]
    fn suspend_marks_the_sets_jobs_and_delete_removes_them() {
        let mut h = harness(None, "jobs: []\n");
        h.send(Change::SetsListed(vec![
            set("s", 1, json!({"jobs": [job("a", "@hourly")]})),
            set("t", 1, json!({"jobs": [job("b", "@hourly")]})),
        ]));
        let first = h.source.poll().expect("loads");
        assert!(first.suspended.is_empty());
        h.send(Change::SetApplied(Box::new(set(
            "s",
            2,
            json!({"jobs": [job("a", "@hourly")], "suspend": true}),
        ))));
        let suspended = h.source.poll().expect("suspend is a change");
        assert_eq!(suspended.suspended, HashSet::from(["ops:s:a".to_owned()]));
        assert_eq!(suspended.job_set_id, first.job_set_id, "same jobs");
        assert!(h.report("s").suspended);
        h.send(Change::SetDeleted {
            namespace: "ops".into(),
            name: "s".into(),
        });
        let after = h.source.poll().expect("the delete lands");
        assert_eq!(names(&after), ["ops:t:b"]);
        assert!(after.suspended.is_empty());
        assert!(!h.source.reports_tx.borrow().contains_key(&SetKey {
            namespace: "ops".into(),
            name: "s".into()
        }));
    }

    #[test]
    fn a_relist_forgets_sets_that_are_gone() {
        let mut h = harness(None, "jobs: []\n");
        h.send(Change::SetsListed(vec![
            set("s", 1, json!({"jobs": [job("a", "@hourly")]})),
            set("t", 1, json!({"jobs": [job("b", "@hourly")]})),
        ]));
        assert!(h.source.poll().is_some());
        h.send(Change::SetsListed(vec![set(
            "t",
            1,
            json!({"jobs": [job("b", "@hourly")]}),
        )]));
        let after = h.source.poll().expect("s is gone");
        assert_eq!(names(&after), ["ops:t:b"]);
    }

    #[test]
    fn configmap_keys_are_config_and_a_broken_configmap_keeps_the_last_good_one() {
        let mut h = harness(Some("cronstable"), "jobs: []\n");
        let data = |yaml: &str| {
            Some(BTreeMap::from([
                ("jobs.yaml".to_owned(), yaml.to_owned()),
                (
                    "crontab".to_owned(),
                    "*/10 * * * * echo from-crontab\n".to_owned(),
                ),
                ("README.md".to_owned(), "not config".to_owned()),
            ]))
        };
        h.send(Change::ConfigMap(data(
            "jobs:\n  - name: from-yaml\n    command: 'true'\n    schedule: '@hourly'\n",
        )));
        let loaded = h.source.poll().expect("the ConfigMap loads");
        assert_eq!(loaded.jobs.len(), 2, "{:?}", names(&loaded));
        assert!(names(&loaded).contains(&"from-yaml"));
        assert!(loaded
            .sources
            .contains(&"configmap/ops/cronstable".to_owned()));
        h.send(Change::ConfigMap(data(
            "jobs:\n  - name: broken\n    schedule: '@hourly'\n",
        )));
        assert!(h.source.poll().is_none(), "the running config stays");
        let events = h.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].reason, "InvalidConfig");
        assert_eq!(events[0].regarding.kind.as_deref(), Some("ConfigMap"));
        assert!(
            events[0]
                .note
                .contains("configmap/ops/cronstable:jobs.yaml"),
            "{}",
            events[0].note
        );
        // The ConfigMap deleted: its jobs stay (the running config is
        // never lost to bad input), said with an Event.
        h.send(Change::ConfigMap(None));
        assert!(h.source.poll().is_none(), "the running config stays");
        assert_eq!(*h.configmap_state.borrow(), ConfigMapState::Deleted);
        let events = h.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].reason, "ConfigMapDeleted");
    }

    fn one_job(name: &str) -> Option<BTreeMap<String, String>> {
        Some(BTreeMap::from([(
            "jobs.yaml".to_owned(),
            format!("jobs:\n  - name: {name}\n    command: 'true'\n    schedule: '@hourly'\n"),
        )]))
    }

    #[test]
    fn a_configmap_missing_at_start_is_evented_once_and_taken_when_created() {
        let mut h = harness(Some("cronstable"), "jobs: []\n");
        assert_eq!(*h.configmap_state.borrow(), ConfigMapState::Unknown);
        h.send(Change::ConfigMap(None));
        assert!(h.source.poll().is_none(), "nothing to take");
        assert_eq!(*h.configmap_state.borrow(), ConfigMapState::Missing);
        let events = h.events();
        assert_eq!(events.len(), 1, "{events:?}");
        let missing = &events[0];
        assert_eq!(missing.reason, "ConfigMapMissing");
        assert_eq!(missing.regarding.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(missing.regarding.name.as_deref(), Some("cronstable"));
        assert!(!missing.every_replica, "about the ConfigMap: the writer's");
        assert!(
            missing
                .note
                .starts_with("ConfigMap ops/cronstable (--configmap) does not exist"),
            "{}",
            missing.note
        );
        // Relists that still find nothing say nothing again.
        h.send(Change::ConfigMap(None));
        h.send(Change::ConfigMap(None));
        assert!(h.source.poll().is_none());
        assert!(h.events().is_empty());
        // Created: its jobs are taken.
        h.send(Change::ConfigMap(one_job("late")));
        let loaded = h.source.poll().expect("the ConfigMap's job");
        assert_eq!(names(&loaded), ["late"]);
        assert_eq!(*h.configmap_state.borrow(), ConfigMapState::Found);
        assert!(h.events().is_empty());
    }

    #[test]
    fn a_deleted_configmap_keeps_its_jobs_until_it_is_created_again() {
        let mut h = harness(Some("cronstable"), "jobs: []\n");
        h.source.pod = crate::kube::events::pod_reference("ops", Some("sched-0"), Some("u-1"));
        h.send(Change::ConfigMap(one_job("first")));
        assert_eq!(names(&h.source.poll().expect("loads")), ["first"]);
        h.send(Change::ConfigMap(None));
        assert!(h.source.poll().is_none(), "the running config stays");
        // A relist while it is gone changes nothing either.
        h.send(Change::ConfigMap(None));
        assert!(h.source.poll().is_none());
        let events = h.events();
        assert_eq!(events.len(), 1, "{events:?}");
        let deleted = &events[0];
        assert_eq!(deleted.reason, "ConfigMapDeleted");
        assert_eq!(deleted.regarding.kind.as_deref(), Some("Pod"));
        assert_eq!(deleted.regarding.name.as_deref(), Some("sched-0"));
        assert_eq!(deleted.regarding.uid.as_deref(), Some("u-1"));
        assert!(deleted.every_replica, "each replica says it of its pod");
        assert!(
            deleted.note.contains("keeping the running config"),
            "{}",
            deleted.note
        );
        // Recreated with the same data: nothing to swap; with new data:
        // the new jobs.
        h.send(Change::ConfigMap(one_job("first")));
        assert!(h.source.poll().is_none());
        assert_eq!(*h.configmap_state.borrow(), ConfigMapState::Found);
        h.send(Change::ConfigMap(one_job("second")));
        assert_eq!(names(&h.source.poll().expect("the edit")), ["second"]);
        assert!(h.events().is_empty());
    }

    #[test]
    fn a_set_job_clashing_with_a_file_job_refuses_the_set() {
        let mut h = harness(
            None,
            "jobs:\n  - name: 'ops:s:a'\n    command: 'true'\n    schedule: '@daily'\n",
        );
        h.send(Change::SetsListed(vec![set(
            "s",
            1,
            json!({"jobs": [job("a", "@hourly")]}),
        )]));
        assert!(
            h.source.poll().is_none(),
            "only the file job runs, as before"
        );
        let report = h.report("s");
        let message = report.verdict.clone().expect_err("refused");
        assert!(message.contains("'ops:s:a'"), "{message}");
        assert_eq!(report.running_generation, None);
        assert_eq!(h.events()[0].reason, "InvalidSpec");
    }

    #[test]
    fn a_spec_of_the_wrong_shape_is_refused_with_the_objects_name() {
        let mut h = harness(None, "jobs: []\n");
        // The CRD's schema refuses this; an object stored before the CRD
        // was installed (or with an older one) can still look like it.
        h.send(Change::SetsListed(vec![set(
            "odd",
            1,
            json!({"jobs": "not a list"}),
        )]));
        assert!(h.source.poll().is_none());
        let message = h.report("odd").verdict.clone().expect_err("refused");
        assert!(
            message
                .starts_with("cronjobset/ops/odd: the spec does not match the CronJobSet schema"),
            "{message}"
        );
        assert_eq!(h.events()[0].reason, "InvalidSpec");
    }

    #[test]
    fn a_sets_defaults_apply_to_its_jobs() {
        let mut h = harness(None, "jobs: []\n");
        let mut object = set("s", 1, json!({"jobs": [job("a", "@hourly")]}));
        object.data["spec"]["defaults"] = json!({"killTimeout": 3});
        h.send(Change::SetsListed(vec![object]));
        let loaded = h.source.poll().expect("defaults are fine");
        assert_eq!(loaded.jobs[0].kill_timeout, 3.0);
    }
}
