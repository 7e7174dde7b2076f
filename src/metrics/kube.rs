//! The Kubernetes mode's own numbers: watch health, objects seen, status
//! writes and how long a change takes to reach the job table. The
//! Kubernetes source and status writer update them through the shared
//! counters; `/metrics` and `GET /kube` read them.

use super::encode::{gauge, single_gauge, Histogram};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// Bounds (seconds) of `cronstable_kube_apply_duration_seconds`: a change
/// normally lands in milliseconds; the tail shows a loaded scheduler.
pub const APPLY_BUCKETS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// The state of the Kubernetes sources and the status writer.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeStats {
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

impl KubeStats {
    /// Fresh numbers for a scheduler about to connect.
    pub fn new(
        namespace: String,
        configmap: Option<String>,
        scope: String,
        selector: Option<String>,
    ) -> Self {
        KubeStats {
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

/// The `cronstable_kube_*` families of one scrape.
#[derive(Debug)]
pub(super) struct KubeFamilies(pub(super) KubeStats);

impl Collector for KubeFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        single_gauge(
            &mut encoder,
            "cronstable_kube_connected",
            "Whether the watches on the Kubernetes API are established.",
            &i64::from(s.connected),
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_kube_synced",
            "Whether every watched collection has been listed since start.",
            &i64::from(s.synced),
        )?;
        if let Some(at) = s.last_sync {
            single_gauge(
                &mut encoder,
                "cronstable_kube_last_sync_timestamp_seconds",
                "Unix time of the latest list or watch event applied.",
                &at,
            )?;
        }
        let counters: [(&str, &str, u64); 3] = [
            (
                "cronstable_kube_watch_restarts",
                "Watches on the Kubernetes API that failed and were re-established.",
                s.watch_restarts,
            ),
            (
                "cronstable_kube_status_writes",
                "CronJobSet status patches written.",
                s.status_writes,
            ),
            (
                "cronstable_kube_status_write_failures",
                "CronJobSet status patches that failed (each is retried).",
                s.status_write_failures,
            ),
        ];
        for (name, help, value) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            family.encode_counter::<NoLabelSet, u64, f64>(&value, None)?;
        }
        let mut objects = encoder.encode_descriptor(
            "cronstable_kube_objects",
            "CronJobSets selected by this scheduler, by state.",
            None,
            MetricType::Gauge,
        )?;
        for (state, count) in [
            ("accepted", s.sets_accepted),
            ("rejected", s.sets_rejected),
            ("suspended", s.sets_suspended),
        ] {
            gauge(
                &mut objects.encode_family(&[("kind", "CronJobSet"), ("state", state)])?,
                &(count as i64),
            )?;
        }
        let mut apply = encoder.encode_descriptor(
            "cronstable_kube_apply_duration_seconds",
            "Time from a Kubernetes change arriving to the job table holding it.",
            None,
            MetricType::Histogram,
        )?;
        apply.encode_histogram::<NoLabelSet>(
            s.apply_duration.sum(),
            s.apply_duration.count(),
            &s.apply_duration.buckets(),
            None,
        )?;
        Ok(())
    }
}
