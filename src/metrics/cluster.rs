//! What the leadership backend shows: the state behind `GET /cluster`,
//! the `cronstable_cluster_*` metrics and the leader gate. The backend's
//! driver (`src/cluster/`) updates it; the scheduler's gate and the API
//! read it. Plain data, so the layers below the backends can hold it.

use super::encode::{gauge, single_gauge};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::time::Instant;

/// The leadership state of this node.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterStats {
    /// `kubernetes`, `etcd` or `filesystem`.
    pub backend: &'static str,
    /// This node's name.
    pub node_name: String,
    /// The backend is running (false: it failed to start, or stopped).
    pub running: bool,
    /// Leading until this instant (local monotonic deadline).
    pub leading_until: Option<Instant>,
    /// Quorate (the store answered) until this instant.
    pub quorate_until: Option<Instant>,
    /// The holder as last read (display name, without the token).
    pub holder: Option<String>,
    /// The backend's `lease` block of `GET /cluster`.
    pub lease: serde_json::Value,
    /// Times this node acquired or lost leadership.
    pub leader_transitions: u64,
    /// Times this node joined or left quorum.
    pub quorum_transitions: u64,
    /// Rounds that failed (no answer, or an error).
    pub round_failures: u64,
    /// Leadership was given up for the shutdown: Leader jobs stop here.
    pub stepped_down: bool,
}

impl ClusterStats {
    /// Fresh state of a backend about to start.
    pub fn new(backend: &'static str, node_name: String) -> Self {
        ClusterStats {
            backend,
            node_name,
            running: false,
            leading_until: None,
            quorate_until: None,
            holder: None,
            lease: serde_json::Value::Null,
            leader_transitions: 0,
            quorum_transitions: 0,
            round_failures: 0,
            stepped_down: false,
        }
    }

    /// Whether this node leads at `now`.
    pub fn is_leader(&self, now: Instant) -> bool {
        self.running && !self.stepped_down && self.leading_until.is_some_and(|t| now < t)
    }

    /// Whether the store answered recently enough to know who leads.
    pub fn is_quorate(&self, now: Instant) -> bool {
        self.running && self.quorate_until.is_some_and(|t| now < t)
    }

    /// The leader as this node knows it (None when not quorate).
    pub fn leader(&self, now: Instant) -> Option<String> {
        if !self.is_quorate(now) {
            return None;
        }
        if self.is_leader(now) {
            return Some(self.node_name.clone());
        }
        self.holder.clone()
    }

    /// The body of `GET /cluster` (`job_set_id` from the scheduler).
    pub fn to_json(&self, job_set_id: &str, now: Instant) -> serde_json::Value {
        let is_leader = self.is_leader(now);
        let mut lease = self.lease.clone();
        if let Some(map) = lease.as_object_mut() {
            map.insert(
                "holder".to_owned(),
                serde_json::json!(if is_leader {
                    Some(self.node_name.clone())
                } else {
                    self.holder.clone()
                }),
            );
            if !is_leader && map.contains_key("expiry") && self.backend != "filesystem" {
                map.insert("expiry".to_owned(), serde_json::Value::Null);
            }
        }
        serde_json::json!({
            "backend": self.backend,
            "node_name": self.node_name,
            "job_set_id": job_set_id,
            "cluster_size": 1,
            "quorum": 1,
            "elect_leader": true,
            "distribution": "single-leader",
            "conflict": false,
            "conflict_names": [],
            "size_conflict": false,
            "conflicting_sizes": [],
            "policy_conflict": false,
            "conflicting_policies": [],
            "quorate": self.is_quorate(now),
            "leader": self.leader(now),
            "is_leader": is_leader,
            "peers": [],
            "lease": lease,
            "enabled": self.running,
        })
    }
}

/// The `cronstable_cluster_*` families of one scrape (lease backends).
#[derive(Debug)]
pub(super) struct ClusterFamilies {
    /// The state, or None without a cluster section.
    pub(super) stats: Option<ClusterStats>,
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
        let mut info = encoder.encode_descriptor(
            "cronstable_cluster_info",
            "Static cluster configuration facts for this node.",
            None,
            MetricType::Gauge,
        )?;
        gauge(
            &mut info.encode_family(&[
                ("backend", s.backend),
                ("node_name", s.node_name.as_str()),
                ("distribution", "single-leader"),
            ])?,
            &1i64,
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_cluster_size",
            "Effective cluster size N this node coordinates against.",
            &1i64,
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_cluster_quorum",
            "Number of agreeing nodes required for leader election.",
            &1i64,
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
        for kind in ["nodename", "size", "policy"] {
            gauge(&mut conflict.encode_family(&[("kind", kind)])?, &0i64)?;
        }
        Ok(())
    }
}
