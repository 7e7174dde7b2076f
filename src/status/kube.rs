//! The Kubernetes mode's state: watch health, the CronJobSets taken and
//! the status writes, each part published by the one task that produces
//! it (the watches, the source, the status writer) on a channel of its
//! own. `GET /kube`, `/readyz` and the metrics read them through a
//! [`KubeWatch`]; none of them writes.

use super::Histogram;
use std::sync::Arc;
use tokio::sync::watch;

/// Bounds (seconds) of `cronstable_kube_apply_duration_seconds`: a change
/// normally lands in milliseconds; the tail shows a loaded scheduler.
pub const APPLY_BUCKETS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// The state of the Kubernetes sources and the status writer, as one
/// copy: what `GET /kube` and the metrics show.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeState {
    /// The scheduler's namespace.
    pub namespace: String,
    /// The ConfigMap followed, if any.
    pub configmap: Option<String>,
    /// `--cronjobsets` as given (`namespace`, `all`, `none`).
    pub scope: String,
    /// `--selector`, if any.
    pub selector: Option<String>,
    /// The watches are established (false during an outage).
    pub connected: bool,
    /// Every watched collection has been listed once since start.
    pub synced: bool,
    /// Unix time of the latest complete list or watch event applied.
    pub last_sync: Option<f64>,
    /// Times a watch failed and was re-established.
    pub watch_restarts: u64,
    /// The latest error of a watch that has not answered since (each
    /// watch's error is cleared only by that watch's own next answer).
    pub last_error: Option<String>,
    /// Each watch's own state and error.
    pub watches: Vec<WatchStatus>,
    /// Whether the ConfigMap followed exists (`Unknown` before its first
    /// list, and without `--configmap`).
    pub configmap_state: ConfigMapState,
    /// CronJobSets currently selected.
    pub sets_seen: u64,
    /// Of those, the ones loaded into the job table.
    pub sets_accepted: u64,
    /// Of those, the ones refused by the loader.
    pub sets_rejected: u64,
    /// Of the accepted ones, the suspended ones.
    pub sets_suspended: u64,
    /// Status patches that succeeded.
    pub status_writes: u64,
    /// Status patches that failed (each retried later).
    pub status_write_failures: u64,
    /// From a watch event's arrival to the job table holding its result.
    pub apply_duration: Histogram,
}

impl KubeState {
    /// Fresh numbers for a scheduler about to connect.
    pub fn new(
        namespace: String,
        configmap: Option<String>,
        scope: String,
        selector: Option<String>,
    ) -> Self {
        KubeState {
            namespace,
            configmap,
            scope,
            selector,
            connected: false,
            synced: false,
            last_sync: None,
            watch_restarts: 0,
            last_error: None,
            watches: Vec::new(),
            configmap_state: ConfigMapState::Unknown,
            sets_seen: 0,
            sets_accepted: 0,
            sets_rejected: 0,
            sets_suspended: 0,
            status_writes: 0,
            status_write_failures: 0,
            apply_duration: Histogram::new(&APPLY_BUCKETS),
        }
    }

    /// The JSON body of `GET /kube` (`enabled` is always true here).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "enabled": true,
            "namespace": self.namespace,
            "configMap": self.configmap,
            "cronJobSets": self.scope,
            "selector": self.selector,
            "connected": self.connected,
            "synced": self.synced,
            "lastSyncTime": self.last_sync.and_then(|t| {
                chrono::DateTime::from_timestamp_micros((t * 1e6) as i64)
                    .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            }),
            "watchRestarts": self.watch_restarts,
            "lastError": self.last_error,
            "watches": self
                .watches
                .iter()
                .map(|w| {
                    (
                        w.watch.key().to_owned(),
                        serde_json::json!({"state": w.state.as_str(), "lastError": w.last_error}),
                    )
                })
                .collect::<serde_json::Map<String, serde_json::Value>>(),
            "configMapState": self.configmap.as_ref().map(|_| self.configmap_state.as_str()),
            "sets": {
                "seen": self.sets_seen,
                "accepted": self.sets_accepted,
                "rejected": self.sets_rejected,
                "suspended": self.sets_suspended,
            },
            "statusWrites": self.status_writes,
            "statusWriteFailures": self.status_write_failures,
        })
    }
}

impl KubeState {
    /// Why `/readyz` must answer 503 in Kubernetes mode, or None when the
    /// mode is ready. Before the first sync: a watch the API server refuses
    /// (401/403) is named with what it may not do, else the sync itself;
    /// after it, a ConfigMap that has not existed since start. A ConfigMap
    /// deleted later, or a refusal after the first sync, leaves the pod
    /// ready: the running config is kept, and the log, the Events and
    /// `GET /kube` say what is wrong.
    pub fn not_ready_reason(&self) -> Option<String> {
        if !self.synced {
            if let Some(refusal) = self.watches.iter().find_map(|w| w.refusal.as_ref()) {
                return Some(refusal.clone());
            }
        }
        if self.configmap_state == ConfigMapState::Missing {
            if let Some(name) = &self.configmap {
                return Some(format!(
                    "the ConfigMap {}/{name} (--configmap) does not exist",
                    self.namespace
                ));
            }
        }
        if !self.synced {
            return Some("the first sync with the Kubernetes API server is not done".to_owned());
        }
        None
    }
}

/// One of the two watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Watched {
    /// The selected CronJobSets.
    Sets,
    /// The ConfigMap of `--configmap`.
    ConfigMap,
}

impl Watched {
    /// Its key in `GET /kube`'s `watches`.
    pub fn key(self) -> &'static str {
        match self {
            Watched::Sets => "cronJobSets",
            Watched::ConfigMap => "configMap",
        }
    }
}

/// Where a watch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchState {
    /// Nothing answered yet since start.
    Pending,
    /// Its latest request was answered.
    Ok,
    /// Its latest request failed without an answer from the API server
    /// (connection refused or cut, a timeout, a 5xx).
    Unreachable,
    /// The API server answered its latest request with 401 or 403: the
    /// credentials or the RBAC rules do not allow it.
    Refused,
}

impl WatchState {
    /// The spelling of `GET /kube`.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchState::Pending => "pending",
            WatchState::Ok => "ok",
            WatchState::Unreachable => "unreachable",
            WatchState::Refused => "refused",
        }
    }
}

/// One watch's state, as published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchStatus {
    /// Which watch.
    pub watch: Watched,
    /// Where it stands.
    pub state: WatchState,
    /// Its latest error, cleared only when this watch answers again.
    pub last_error: Option<String>,
    /// While refused: what it may not do and why, for `/readyz` (`the
    /// Kubernetes API refuses to list configmaps in namespace team-a (403
    /// Forbidden) ...`).
    pub refusal: Option<String>,
}

/// Whether the ConfigMap of `--configmap` exists, as its watch last saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConfigMapState {
    /// Not listed yet (or no `--configmap`).
    #[default]
    Unknown,
    /// It exists and its config is taken.
    Found,
    /// It has not existed since start: nothing is taken from it.
    Missing,
    /// It existed and was deleted: the config it gave keeps running.
    Deleted,
}

impl ConfigMapState {
    /// The spelling of `GET /kube`'s `configMapState`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigMapState::Unknown => "unknown",
            ConfigMapState::Found => "found",
            ConfigMapState::Missing => "missing",
            ConfigMapState::Deleted => "deleted",
        }
    }
}

/// What the command line says the Kubernetes mode follows: fixed at start.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeScope {
    /// The scheduler's namespace.
    pub namespace: String,
    /// The ConfigMap followed, if any.
    pub configmap: Option<String>,
    /// `--cronjobsets` as given (`namespace`, `all`, `none`).
    pub scope: String,
    /// `--selector`, if any.
    pub selector: Option<String>,
}

/// The watches' health, written by the watch tasks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WatchHealth {
    /// The watches are established (false during an outage).
    pub connected: bool,
    /// Every watched collection has been listed once since start.
    pub synced: bool,
    /// Unix time of the latest complete list or watch event applied.
    pub last_sync: Option<f64>,
    /// Times a watch failed and was re-established.
    pub restarts: u64,
    /// The latest error of a watch that has not answered since.
    pub last_error: Option<String>,
    /// Each watch's own state and error.
    pub watches: Vec<WatchStatus>,
}

/// The CronJobSets taken, written by the source after each assembly.
#[derive(Debug, Clone, PartialEq)]
pub struct SetCounts {
    /// CronJobSets currently selected.
    pub seen: u64,
    /// Of those, the ones loaded into the job table.
    pub accepted: u64,
    /// Of those, the ones refused by the loader.
    pub rejected: u64,
    /// Of the accepted ones, the suspended ones.
    pub suspended: u64,
    /// From a watch event's arrival to the job table holding its result.
    pub apply_duration: Histogram,
}

impl Default for SetCounts {
    fn default() -> Self {
        SetCounts {
            seen: 0,
            accepted: 0,
            rejected: 0,
            suspended: 0,
            apply_duration: Histogram::new(&APPLY_BUCKETS),
        }
    }
}

/// The status patches, written by the status writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatusWrites {
    /// Patches that succeeded.
    pub written: u64,
    /// Patches that failed (each retried later).
    pub failed: u64,
}

/// One CronJobSet as `GET /kube/sets` shows it: what the source concluded
/// about it and the jobs it put in the table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetView {
    /// The set's namespace.
    pub namespace: String,
    /// The set's name.
    pub name: String,
    /// The `metadata.generation` the verdict is about.
    pub generation: Option<i64>,
    /// Whether that generation's spec loaded.
    pub accepted: bool,
    /// The loader's message when it did not.
    pub message: Option<String>,
    /// The generation whose jobs run (an older one when the current was
    /// refused; None: nothing of the set runs).
    pub running_generation: Option<i64>,
    /// `spec.suspend` of the jobs scheduled.
    pub suspended: bool,
    /// Every job scheduled: its name in the set and in the job table.
    pub jobs: Vec<SetJobView>,
    /// The job-set id of the set's scheduled jobs.
    pub job_set_id: Option<String>,
}

/// One job of a [`SetView`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SetJobView {
    /// Its name in the set.
    pub name: String,
    /// Its name in the scheduler's job table (`GET /jobs`).
    pub job: String,
}

/// One Event this scheduler raised, as `GET /kube/sets` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EventView {
    /// When it was raised (RFC 3339, UTC).
    pub at: String,
    /// The kind of the object it is about (`CronJobSet`, `ConfigMap`,
    /// `Pod`).
    pub kind: String,
    /// That object's namespace.
    pub namespace: String,
    /// That object's name.
    pub name: String,
    /// `Warning` (every Event the scheduler raises is one).
    #[serde(rename = "type")]
    pub type_: &'static str,
    /// The CamelCase reason (`InvalidSpec`, `RunFailed`, ...).
    pub reason: String,
    /// The text.
    pub note: String,
    /// False when this replica dropped it because another one (the
    /// leader) writes the Events.
    pub published: bool,
}

/// How many Events [`KubeWatch::events`] keeps (the newest).
pub const EVENTS_KEPT: usize = 200;

/// The writing sides, handed out at start: each to the one task that
/// produces that part.
#[derive(Debug)]
pub struct KubePublishers {
    /// To the watch tasks.
    pub health: watch::Sender<WatchHealth>,
    /// To the source.
    pub sets: watch::Sender<SetCounts>,
    /// To the status writer.
    pub writes: watch::Sender<StatusWrites>,
    /// To the source (it decides what a missing ConfigMap means).
    pub configmap: watch::Sender<ConfigMapState>,
    /// To the task that follows the source's reports.
    pub set_views: watch::Sender<Arc<Vec<SetView>>>,
    /// To the event recorder.
    pub events: watch::Sender<Arc<Vec<EventView>>>,
}

/// The reading side of the Kubernetes mode's state. Cheap to clone.
#[derive(Debug, Clone)]
pub struct KubeWatch {
    scope: Arc<KubeScope>,
    health: watch::Receiver<WatchHealth>,
    sets: watch::Receiver<SetCounts>,
    writes: watch::Receiver<StatusWrites>,
    configmap: watch::Receiver<ConfigMapState>,
    set_views: watch::Receiver<Arc<Vec<SetView>>>,
    events: watch::Receiver<Arc<Vec<EventView>>>,
}

impl KubeWatch {
    /// The channels of a Kubernetes mode following `scope`, all parts at
    /// their start values.
    pub fn channel(scope: KubeScope) -> (KubePublishers, KubeWatch) {
        let (health, health_rx) = watch::channel(WatchHealth::default());
        let (sets, sets_rx) = watch::channel(SetCounts::default());
        let (writes, writes_rx) = watch::channel(StatusWrites::default());
        let (configmap, configmap_rx) = watch::channel(ConfigMapState::Unknown);
        let (set_views, set_views_rx) = watch::channel(Arc::default());
        let (events, events_rx) = watch::channel(Arc::default());
        (
            KubePublishers {
                health,
                sets,
                writes,
                configmap,
                set_views,
                events,
            },
            KubeWatch {
                scope: Arc::new(scope),
                health: health_rx,
                sets: sets_rx,
                writes: writes_rx,
                configmap: configmap_rx,
                set_views: set_views_rx,
                events: events_rx,
            },
        )
    }

    /// Every selected CronJobSet as the source last concluded.
    pub fn set_views(&self) -> Arc<Vec<SetView>> {
        Arc::clone(&self.set_views.borrow())
    }

    /// The newest Events this scheduler raised (at most [`EVENTS_KEPT`]),
    /// oldest first.
    pub fn events(&self) -> Arc<Vec<EventView>> {
        Arc::clone(&self.events.borrow())
    }

    /// Whether every watched collection has been listed once.
    pub fn synced(&self) -> bool {
        self.health.borrow().synced
    }

    /// Why the Kubernetes mode is not ready (see
    /// [`KubeState::not_ready_reason`]), or None.
    pub fn not_ready_reason(&self) -> Option<String> {
        self.snapshot().not_ready_reason()
    }

    /// A copy of every part now.
    pub fn snapshot(&self) -> KubeState {
        let health = self.health.borrow().clone();
        let sets = self.sets.borrow().clone();
        let writes = *self.writes.borrow();
        KubeState {
            namespace: self.scope.namespace.clone(),
            configmap: self.scope.configmap.clone(),
            scope: self.scope.scope.clone(),
            selector: self.scope.selector.clone(),
            connected: health.connected,
            synced: health.synced,
            last_sync: health.last_sync,
            watch_restarts: health.restarts,
            last_error: health.last_error,
            watches: health.watches,
            configmap_state: *self.configmap.borrow(),
            sets_seen: sets.seen,
            sets_accepted: sets.accepted,
            sets_rejected: sets.rejected,
            sets_suspended: sets.suspended,
            status_writes: writes.written,
            status_write_failures: writes.failed,
            apply_duration: sets.apply_duration,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_joins_what_each_owner_published() {
        let (publishers, watch) = KubeWatch::channel(KubeScope {
            namespace: "ops".into(),
            configmap: Some("jobs".into()),
            scope: "namespace".into(),
            selector: None,
        });
        assert!(!watch.synced());
        let start = watch.snapshot();
        assert_eq!(
            start,
            KubeState::new("ops".into(), Some("jobs".into()), "namespace".into(), None)
        );
        publishers.health.send_modify(|h| {
            h.connected = true;
            h.synced = true;
            h.restarts = 2;
        });
        publishers.sets.send_modify(|s| {
            s.seen = 3;
            s.accepted = 2;
            s.rejected = 1;
            s.apply_duration.observe(0.002);
        });
        publishers.writes.send_modify(|w| {
            w.written = 5;
            w.failed = 1;
        });
        assert!(watch.synced());
        let now = watch.snapshot();
        assert!(now.connected && now.synced);
        assert_eq!(now.watch_restarts, 2);
        assert_eq!(
            (now.sets_seen, now.sets_accepted, now.sets_rejected),
            (3, 2, 1)
        );
        assert_eq!((now.status_writes, now.status_write_failures), (5, 1));
        assert_eq!(now.apply_duration.count(), 1);
        let body = now.to_json();
        assert_eq!(body["configMap"], "jobs");
        assert_eq!(body["sets"]["accepted"], 2);
        assert_eq!(body["statusWrites"], 5);
    }

    fn state() -> KubeState {
        KubeState::new("ops".into(), Some("jobs".into()), "namespace".into(), None)
    }

    fn refused_configmap() -> WatchStatus {
        WatchStatus {
            watch: Watched::ConfigMap,
            state: WatchState::Refused,
            last_error: Some("ConfigMap: list refused (403 Forbidden): no".into()),
            refusal: Some(
                "the Kubernetes API refuses to list configmaps (jobs) in namespace ops (403 Forbidden): ..."
                    .into(),
            ),
        }
    }

    #[test]
    fn readiness_names_a_refusal_then_a_missing_configmap_then_the_sync() {
        let mut s = state();
        assert_eq!(
            s.not_ready_reason().as_deref(),
            Some("the first sync with the Kubernetes API server is not done")
        );
        // A refused watch before the first sync is named.
        s.watches = vec![refused_configmap()];
        let reason = s.not_ready_reason().expect("not ready");
        assert!(
            reason.contains("403 Forbidden") && reason.contains("configmaps"),
            "{reason}"
        );
        assert!(reason.contains("namespace ops"), "{reason}");
        // Synced, but the ConfigMap was missing at start.
        s.watches.clear();
        s.synced = true;
        s.configmap_state = ConfigMapState::Missing;
        assert_eq!(
            s.not_ready_reason().as_deref(),
            Some("the ConfigMap ops/jobs (--configmap) does not exist")
        );
        // Found, or deleted later (its config keeps running): ready.
        s.configmap_state = ConfigMapState::Found;
        assert_eq!(s.not_ready_reason(), None);
        s.configmap_state = ConfigMapState::Deleted;
        assert_eq!(s.not_ready_reason(), None);
        // A refusal after the first sync keeps the pod ready too.
        s.watches = vec![refused_configmap()];
        assert_eq!(s.not_ready_reason(), None);
    }

    #[test]
    fn kube_json_shows_each_watch_and_the_configmap_state() {
        let mut s = state();
        s.watches = vec![
            WatchStatus {
                watch: Watched::Sets,
                state: WatchState::Ok,
                last_error: None,
                refusal: None,
            },
            refused_configmap(),
        ];
        s.configmap_state = ConfigMapState::Deleted;
        let body = s.to_json();
        assert_eq!(body["watches"]["cronJobSets"]["state"], "ok");
        assert!(body["watches"]["cronJobSets"]["lastError"].is_null());
        assert_eq!(body["watches"]["configMap"]["state"], "refused");
        assert_eq!(
            body["watches"]["configMap"]["lastError"],
            "ConfigMap: list refused (403 Forbidden): no"
        );
        assert_eq!(body["configMapState"], "deleted");
        let without = KubeState::new("ops".into(), None, "namespace".into(), None).to_json();
        assert!(without["configMapState"].is_null(), "{without}");
        assert_eq!(without["watches"], serde_json::json!({}));
    }
}
