//! The leadership state: who leads as this node knows it, published by
//! whichever part runs the `cluster` section's backend.
//!
//! One writer per channel: the lease driver owns the state of the lease
//! backend it runs, the gossip manager owns the gossip backend's, and the
//! supervisor owns the choice of which of those channels is current (and
//! the fixed state of a backend that failed to start). The leader gate,
//! the HTTP API (`/cluster`, `/fleet`, `/summary`) and the metrics read
//! through a [`LeadershipWatch`]; none of them writes.

use crate::config::model::sections::Distribution;
use crate::gossip::ClusterView;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

/// Which backend a leadership state comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// A Kubernetes Lease.
    Kubernetes,
    /// An etcd lease.
    Etcd,
    /// A lease file on a shared mount.
    Filesystem,
    /// Mutual-TLS gossip between the peers.
    Gossip,
}

impl BackendKind {
    /// The backend's name as the config, `GET /cluster` and the metrics
    /// spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Kubernetes => "kubernetes",
            BackendKind::Etcd => "etcd",
            BackendKind::Filesystem => "filesystem",
            BackendKind::Gossip => "gossip",
        }
    }
}

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
pub struct LeadershipState {
    /// The backend that produced it.
    pub backend: BackendKind,
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

impl LeadershipState {
    /// Fresh state of a backend about to start.
    pub fn new(backend: BackendKind, node_name: String) -> Self {
        LeadershipState {
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

    /// `distribution` as the API and the metrics spell it: the gossip
    /// view's, else `single-leader` (the lease backends have no other).
    pub fn distribution(&self) -> &'static str {
        self.gossip
            .as_deref()
            .map_or(Distribution::SingleLeader, |g| {
                g.view.identity().distribution
            })
            .as_str()
    }

    /// Whether this node leads at `now`.
    pub fn is_leader(&self, now: Instant) -> bool {
        if self.backend == BackendKind::Gossip {
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
        if self.backend == BackendKind::Gossip {
            return self.running && self.fresh_gossip(now).is_some_and(|g| g.view.is_quorate());
        }
        self.running && self.quorate_until.is_some_and(|t| now < t)
    }

    /// The leader as this node knows it (None when not quorate).
    pub fn leader(&self, now: Instant) -> Option<String> {
        if !self.is_quorate(now) {
            return None;
        }
        if self.backend == BackendKind::Gossip {
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
            if !is_leader && map.contains_key("expiry") && self.backend != BackendKind::Filesystem {
                map.insert("expiry".to_owned(), serde_json::Value::Null);
            }
        }
        serde_json::json!({
            "backend": self.backend.as_str(),
            "node_name": self.node_name,
            "job_set_id": job_set_id,
            "cluster_size": 1,
            "quorum": 1,
            "elect_leader": self.elect_leader,
            "distribution": self.distribution(),
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

/// The reading side: which backend's channel is current (the
/// supervisor's choice), then that channel. Cheap to clone; reading takes
/// no lock that a writer holds for long (a `watch` borrow).
#[derive(Debug, Clone)]
pub struct LeadershipWatch {
    current: watch::Receiver<Option<watch::Receiver<LeadershipState>>>,
}

impl LeadershipWatch {
    /// A watch that never shows a state: no `cluster` section, ever.
    #[cfg(test)]
    pub(crate) fn none() -> LeadershipWatch {
        LeadershipWatch {
            current: watch::channel(None).1,
        }
    }

    /// A watch over one fixed state.
    #[cfg(test)]
    pub(crate) fn fixed(state: LeadershipState) -> LeadershipWatch {
        let (_, inner) = watch::channel(state);
        LeadershipWatch {
            current: watch::channel(Some(inner)).1,
        }
    }

    /// Calls `f` with the state now (None: no `cluster` section), without
    /// copying it. `f` must be quick: the owner waits for it to write.
    pub fn with<T>(&self, f: impl FnOnce(Option<&LeadershipState>) -> T) -> T {
        let current = self.current.borrow();
        match &*current {
            None => f(None),
            Some(inner) => f(Some(&*inner.borrow())),
        }
    }

    /// A copy of the state now.
    pub fn snapshot(&self) -> Option<LeadershipState> {
        self.with(|state| state.cloned())
    }
}

/// The supervisor's side of a [`LeadershipWatch`]: it says which channel
/// is current and writes nothing else.
#[derive(Debug)]
pub struct CurrentLeadership {
    tx: watch::Sender<Option<watch::Receiver<LeadershipState>>>,
}

impl CurrentLeadership {
    /// A pair with no state shown yet.
    pub fn channel() -> (CurrentLeadership, LeadershipWatch) {
        let (tx, current) = watch::channel(None);
        (CurrentLeadership { tx }, LeadershipWatch { current })
    }

    /// Shows the state of a running backend's channel (None: no section).
    pub fn show(&self, state: Option<watch::Receiver<LeadershipState>>) {
        self.tx.send_replace(state);
    }

    /// Shows a state nobody will change (a backend that failed to
    /// start): its channel's sender is dropped at once.
    pub fn show_fixed(&self, state: LeadershipState) {
        let (_, inner) = watch::channel(state);
        self.show(Some(inner));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn readers_follow_the_current_channel_and_its_owner() {
        let (shown, watch) = CurrentLeadership::channel();
        assert!(watch.snapshot().is_none(), "nothing shown: no section");

        // A backend starts and publishes on its own channel.
        let (backend, state) =
            tokio::sync::watch::channel(LeadershipState::new(BackendKind::Etcd, "a".into()));
        shown.show(Some(state));
        let now = Instant::now();
        assert!(watch.with(|s| s.is_some_and(|s| !s.is_leader(now))));
        backend.send_modify(|s| {
            s.running = true;
            s.leading_until = Some(now + Duration::from_secs(60));
            s.quorate_until = Some(now + Duration::from_secs(60));
        });
        let seen = watch.snapshot().expect("a state");
        assert!(seen.is_leader(now) && seen.is_quorate(now));
        assert_eq!(seen.leader(now).as_deref(), Some("a"));
        assert_eq!(seen.to_json("v1:x", now)["backend"], "etcd");

        // The next backend failed to start: a fixed state, nobody leads.
        shown.show_fixed(LeadershipState::new(BackendKind::Gossip, "a".into()));
        let failed = watch.snapshot().expect("a state");
        assert_eq!(failed.backend, BackendKind::Gossip);
        assert!(!failed.running && !failed.is_leader(now));
        // The old backend's writes no longer reach the readers.
        backend.send_modify(|s| s.holder = Some("b".into()));
        assert_eq!(watch.snapshot().and_then(|s| s.holder), None);

        // The section is removed.
        shown.show(None);
        assert!(watch.snapshot().is_none());
    }

    #[test]
    fn distribution_is_the_gossip_views_else_single_leader() {
        use crate::gossip::view::sim::Sim;
        let lease = LeadershipState::new(BackendKind::Kubernetes, "a".into());
        assert_eq!(lease.distribution(), "single-leader");
        for (configured, spelled) in [
            (Distribution::Spread, "spread"),
            (Distribution::SingleLeader, "single-leader"),
        ] {
            let sim = Sim::new(3, configured);
            let now = Instant::now();
            let mut gossip = LeadershipState::new(BackendKind::Gossip, "n0".into());
            gossip.gossip = Some(Arc::new(GossipState {
                view: sim.views[0].clone(),
                job_set_id: "v1:x".into(),
                settled: false,
                vouched: false,
                fresh_until: now,
                origin: now,
                interval: 1,
            }));
            assert_eq!(gossip.distribution(), spelled);
            assert_eq!(gossip.to_json("v1:x", now)["distribution"], spelled);
        }
    }

    #[test]
    fn backend_names_are_the_configs_spelling() {
        let names = [
            BackendKind::Kubernetes,
            BackendKind::Etcd,
            BackendKind::Filesystem,
            BackendKind::Gossip,
        ]
        .map(BackendKind::as_str);
        assert_eq!(names, ["kubernetes", "etcd", "filesystem", "gossip"]);
    }
}
