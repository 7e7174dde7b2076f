//! The `cronstable_kube_*` families: watch health, objects seen, status
//! writes and how long a change takes to reach the job table, encoded
//! from a copy of the Kubernetes mode's state (`crate::status::kube`)
//! taken for one scrape.

use super::encode::{gauge, single_gauge};
use crate::status::KubeState;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// The `cronstable_kube_*` families of one scrape.
#[derive(Debug)]
pub(super) struct KubeFamilies(pub(super) KubeState);

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
