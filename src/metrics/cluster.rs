//! What the leadership backend shows: the state behind `GET /cluster`,
//! the `cronstable_cluster_*` metrics and the leader gate. The backend's
//! driver (`src/cluster/`) updates it; the scheduler's gate and the API
//! read it. Plain data, so the layers below the backends can hold it.

use super::encode::{gauge, single_gauge};
use crate::config::model::sections::Distribution;
use crate::gossip::ClusterView;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::Arc;
use std::time::Instant;

/// What the gossip manager publishes after each poll round: a snapshot of
/// its peer table (pure data; every decision is drawn from it by the
/// gate, `GET /cluster` and the metrics, so all three agree) and the facts
/// the table alone cannot tell.
#[derive(Debug, Clone, PartialEq)]
pub struct GossipState {
    /// The peer table as of the last completed round.
    pub view: ClusterView,
    /// The job-set id this node compared its peers against.
    pub job_set_id: String,
    /// The never-skip gates may trust the view (see `ClusterView::settled`).
    pub settled: bool,
    /// A quorum of agreeing peers, and every agreeing peer, names this
    /// node among the nodes they see quorate (see `ClusterView::vouched`);
    /// `Leader` jobs wait for it under both distributions.
    pub vouched: bool,
    /// After this instant the snapshot is too old to act on: the poll loop
    /// stalled, and `Leader` jobs fail closed.
    pub fresh_until: Instant,
    /// The origin of the view's monotonic stamps (a peer's data is aged
    /// by `now - origin` minus when it arrived).
    pub origin: Instant,
    /// `interval`, in seconds (how old a healthy peer's data may be).
    pub interval: u64,
}

impl GossipState {
    /// Whether the snapshot may still be acted on at `now`.
    pub fn fresh(&self, now: Instant) -> bool {
        now < self.fresh_until
    }

    /// Whether `distribution: spread` is in force.
    pub fn spread(&self) -> bool {
        self.view.identity().distribution == Distribution::Spread
    }

    /// `electLeader`.
    pub fn elect_leader(&self) -> bool {
        self.view.identity().elect_leader
    }
}

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
    /// The gossip backend's snapshot (None for the lease backends, and
    /// before the gossip manager's first round).
    pub gossip: Option<Arc<GossipState>>,
    /// The section elects a leader (false only for gossip with
    /// `electLeader: false`, which attests and decides nothing). Known
    /// from the config, so it holds even when the backend failed to start.
    pub elect_leader: bool,
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
            gossip: None,
            elect_leader: true,
        }
    }

    /// The gossip snapshot, when it is the gossip backend's state and the
    /// snapshot is fresh at `now` (a stale one counts as no answer).
    pub fn fresh_gossip(&self, now: Instant) -> Option<&GossipState> {
        self.gossip.as_deref().filter(|g| g.fresh(now))
    }

    /// Whether this node leads at `now`.
    pub fn is_leader(&self, now: Instant) -> bool {
        if self.backend == "gossip" {
            return self.running
                && !self.stepped_down
                && self.fresh_gossip(now).is_some_and(|g| {
                    !g.spread() && g.elect_leader() && g.vouched && g.view.is_leader()
                });
        }
        self.running && !self.stepped_down && self.leading_until.is_some_and(|t| now < t)
    }

    /// Whether the store answered recently enough to know who leads.
    pub fn is_quorate(&self, now: Instant) -> bool {
        if self.backend == "gossip" {
            return self.running && self.fresh_gossip(now).is_some_and(|g| g.view.is_quorate());
        }
        self.running && self.quorate_until.is_some_and(|t| now < t)
    }

    /// The leader as this node knows it (None when not quorate).
    pub fn leader(&self, now: Instant) -> Option<String> {
        if !self.is_quorate(now) {
            return None;
        }
        if self.backend == "gossip" {
            return self
                .fresh_gossip(now)
                .filter(|g| !g.spread())
                .and_then(|g| g.view.leader_name());
        }
        if self.is_leader(now) {
            return Some(self.node_name.clone());
        }
        self.holder.clone()
    }

    /// The body of `GET /cluster` (`job_set_id` from the scheduler).
    pub fn to_json(&self, job_set_id: &str, now: Instant) -> serde_json::Value {
        if let Some(gossip) = &self.gossip {
            // The table as of the last round, whatever its age: a stalled
            // loop shows its last peer rows, and `enabled` says whether
            // the manager still runs.
            let mut body = serde_json::to_value(gossip.view.view(job_set_id))
                .unwrap_or_else(|_| serde_json::json!({}));
            if let Some(map) = body.as_object_mut() {
                if !gossip.fresh(now) {
                    map.insert("quorate".to_owned(), serde_json::Value::Bool(false));
                    map.insert("leader".to_owned(), serde_json::Value::Null);
                    map.insert("is_leader".to_owned(), serde_json::Value::Bool(false));
                }
                map.insert(
                    "is_leader".to_owned(),
                    serde_json::Value::Bool(self.is_leader(now)),
                );
                map.insert(
                    "enabled".to_owned(),
                    serde_json::Value::Bool(self.running && !self.stepped_down),
                );
            }
            return body;
        }
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
            "elect_leader": self.elect_leader,
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
        let gossip = s.gossip.as_deref();
        let distribution = match gossip {
            Some(g) if g.spread() => "spread",
            _ => "single-leader",
        };
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
                ("backend", s.backend),
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
