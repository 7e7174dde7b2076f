//! The `cronstable_cluster_*` families, encoded from a copy of the
//! leadership state (`crate::status::leadership`) taken for one scrape.

use super::encode::{gauge, single_gauge};
use crate::status::LeadershipState;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::time::Instant;

/// The `cronstable_cluster_*` families of one scrape (lease backends).
#[derive(Debug)]
pub(super) struct ClusterFamilies {
    /// The state, or None without a cluster section.
    pub(super) stats: Option<LeadershipState>,
    /// When the scrape was taken.
    pub(super) now: Instant,
}

impl Collector for ClusterFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(s) = &self.stats else {
            return single_gauge(
                &mut encoder,
                "cronstable_cluster_enabled",
                "Whether a cluster leadership backend is currently running.",
                &0i64,
            );
        };
        single_gauge(
            &mut encoder,
            "cronstable_cluster_enabled",
            "Whether a cluster leadership backend is currently running.",
            &i64::from(s.running),
        )?;
        for (name, help, value) in [
            (
                "cronstable_cluster_leader_transitions",
                "Times this node acquired or lost scheduled-job leadership (observed at scheduler cadence).",
                s.leader_transitions,
            ),
            (
                "cronstable_cluster_quorum_transitions",
                "Times this node joined or left quorum (observed at scheduler cadence).",
                s.quorum_transitions,
            ),
        ] {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            family.encode_counter::<NoLabelSet, u64, f64>(&value, None)?;
        }
        if !s.running {
            return Ok(());
        }
        let gossip = s.gossip.as_deref();
        let distribution = s.distribution();
        let (size, quorum) = gossip.map_or((1, 1), |g| {
            (g.view.cluster_size() as i64, g.view.quorum() as i64)
        });
        let mut info = encoder.encode_descriptor(
            "cronstable_cluster_info",
            "Static cluster configuration facts for this node.",
            None,
            MetricType::Gauge,
        )?;
        gauge(
            &mut info.encode_family(&[
                ("backend", s.backend.as_str()),
                ("node_name", s.node_name.as_str()),
                ("distribution", distribution),
            ])?,
            &1i64,
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_cluster_size",
            "Effective cluster size N this node coordinates against.",
            &size,
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_cluster_quorum",
            "Number of agreeing nodes required for leader election.",
            &quorum,
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_cluster_quorate",
            "Whether this node is currently part of a quorum.",
            &i64::from(s.is_quorate(self.now)),
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_cluster_is_leader",
            "Whether this node holds scheduled-job leadership (always 0 under distribution: spread; ownership is per job).",
            &i64::from(s.is_leader(self.now)),
        )?;
        if let Some(leader) = s.leader(self.now) {
            let mut family = encoder.encode_descriptor(
                "cronstable_cluster_leader_info",
                "The current cluster leader as observed by this node.",
                None,
                MetricType::Gauge,
            )?;
            gauge(
                &mut family.encode_family(&[("leader", leader.as_str())])?,
                &1i64,
            )?;
        }
        let mut conflict = encoder.encode_descriptor(
            "cronstable_cluster_conflict",
            "Detected coordination conflicts by kind; any 1 makes Leader jobs stand down cluster-wide.",
            None,
            MetricType::Gauge,
        )?;
        let kinds = gossip.map_or([false; 3], |g| {
            [
                !g.view.conflict_names().is_empty(),
                !g.view.conflicting_sizes().is_empty(),
                !g.view.conflicting_policies().is_empty(),
            ]
        });
        for (kind, on) in ["nodename", "size", "policy"].into_iter().zip(kinds) {
            gauge(
                &mut conflict.encode_family(&[("kind", kind)])?,
                &i64::from(on),
            )?;
        }
        // Only a backend with peers has per-peer statuses (never a lease
        // backend, whose `peers` is always empty).
        if let Some(g) = gossip.filter(|g| !g.view.peers().is_empty()) {
            let mut peers = encoder.encode_descriptor(
                "cronstable_cluster_peers",
                "Configured gossip peers by observed status.",
                None,
                MetricType::Gauge,
            )?;
            // Every status, zeros included, so a dashboard's series never
            // vanish (the original's order).
            let counts = g.view.status_counts();
            for status in [
                "unknown",
                "self",
                "agreed",
                "syncing",
                "drifted",
                "unreachable",
                "untrusted",
                "conflict",
            ] {
                let count = counts.get(status).copied().unwrap_or(0);
                gauge(
                    &mut peers.encode_family(&[("status", status)])?,
                    &(count as i64),
                )?;
            }
        }
        Ok(())
    }
}
