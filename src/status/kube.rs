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
    /// The latest watch or list error, cleared when the API answers again.
    pub last_error: Option<String>,
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
    /// The latest watch or list error, cleared when the API answers again.
    pub last_error: Option<String>,
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
}

/// The reading side of the Kubernetes mode's state. Cheap to clone.
#[derive(Debug, Clone)]
pub struct KubeWatch {
    scope: Arc<KubeScope>,
    health: watch::Receiver<WatchHealth>,
    sets: watch::Receiver<SetCounts>,
    writes: watch::Receiver<StatusWrites>,
}

impl KubeWatch {
    /// The channels of a Kubernetes mode following `scope`, all parts at
    /// their start values.
    pub fn channel(scope: KubeScope) -> (KubePublishers, KubeWatch) {
        let (health, health_rx) = watch::channel(WatchHealth::default());
        let (sets, sets_rx) = watch::channel(SetCounts::default());
        let (writes, writes_rx) = watch::channel(StatusWrites::default());
        (
            KubePublishers {
                health,
                sets,
                writes,
            },
            KubeWatch {
                scope: Arc::new(scope),
                health: health_rx,
                sets: sets_rx,
                writes: writes_rx,
            },
        )
    }

    /// Whether every watched collection has been listed once.
    pub fn synced(&self) -> bool {
        self.health.borrow().synced
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
}
