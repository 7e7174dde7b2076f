//! Who agrees: the effective cluster size, its quorum, the agreeing peers
//! and the candidates each election may consider.

use super::{ClusterView, PeerState, Status};
use crate::gossip::elect::quorum_size;
use crate::gossip::payload::MAX_ADVERTISED_CANDIDATE_NAMES;
use std::collections::{BTreeMap, BTreeSet};

impl ClusterView {
    /// The effective cluster size: the configured peers plus this node,
    /// minus entries that turned out to be this node, and counting one
    /// node seen at two addresses (same instance id) once.
    pub fn cluster_size(&self) -> usize {
        let mut seen = BTreeSet::new();
        let mut uncounted = 0;
        for peer in &self.peers {
            if peer.status == Status::SelfNode {
                uncounted += 1;
            } else if let Some(instance) = &peer.instance_id {
                if !seen.insert(instance.as_str()) {
                    uncounted += 1;
                }
            }
        }
        self.peers.len() + 1 - uncounted
    }

    /// The strict majority of [`ClusterView::cluster_size`].
    pub fn quorum(&self) -> usize {
        quorum_size(self.cluster_size())
    }

    pub(super) fn diverges<T: PartialEq>(declared: &Option<T>, ours: &T) -> bool {
        declared.as_ref().is_some_and(|d| d != ours)
    }

    /// Peers agreeing with this node both ways, on job set, size and
    /// policy, each instance once.
    pub(super) fn agreeing(&self) -> Vec<&PeerState> {
        let size = self.cluster_size() as u64;
        let distribution = self.me.distribution.as_str().to_owned();
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for peer in &self.peers {
            let counts = peer.status == Status::Agreed
                && peer.node_name.is_some()
                // An older build sends no members list and cannot attest
                // back; it counts one-way rather than halting the cluster.
                && (peer.attests(&self.me.instance_id) || !peer.reports_members)
                && !Self::diverges(&peer.declared_size, &size)
                && !Self::diverges(&peer.declared_distribution, &distribution)
                && !Self::diverges(&peer.declared_elect_leader, &self.me.elect_leader);
            if !counts {
                continue;
            }
            if let Some(instance) = &peer.instance_id {
                if !seen.insert(instance.as_str()) {
                    continue;
                }
            }
            out.push(peer);
        }
        out
    }

    /// Names of the peers this node mutually agrees with (its gossiped
    /// `mutual_agreeing`).
    pub fn agreeing_peer_names(&self) -> Vec<String> {
        self.agreeing()
            .into_iter()
            .filter_map(|p| p.node_name.clone())
            .collect()
    }

    /// Nodes reached only through agreeing peers that enough of them
    /// report mutual agreement with to be quorate (sorted, uncapped).
    pub(super) fn bridge_confirmed(&self) -> Vec<String> {
        let agreeing = self.agreeing();
        let mut direct: BTreeSet<&str> = BTreeSet::from([self.me.node_name.as_str()]);
        direct.extend(agreeing.iter().filter_map(|p| p.node_name.as_deref()));
        let mut witnesses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for peer in &agreeing {
            let Some(witness) = peer.node_name.as_deref() else {
                continue;
            };
            for name in peer.mutual_agreeing.iter().flatten() {
                if !direct.contains(name.as_str()) {
                    witnesses.entry(name).or_default().insert(witness);
                }
            }
        }
        let quorum = self.quorum();
        witnesses
            .into_iter()
            .filter(|(_, seen)| seen.len() + 1 >= quorum)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    pub(super) fn bridge_candidates(&self) -> Vec<String> {
        let mut confirmed = self.bridge_confirmed();
        confirmed.truncate(MAX_ADVERTISED_CANDIDATE_NAMES);
        confirmed
    }

    /// The names this node may elect: agreeing peers whose own mutual set
    /// shows them quorate, plus bridge-confirmed nodes. A peer that cannot
    /// itself run is never elected (that would stand a healthy majority
    /// down).
    pub fn eligible_candidates(&self) -> Vec<String> {
        let quorum = self.quorum();
        let mut out: Vec<String> = self
            .agreeing()
            .into_iter()
            .filter(|p| p.mutual_agreeing.as_ref().map_or(0, BTreeSet::len) + 1 >= quorum)
            .filter_map(|p| p.node_name.clone())
            .collect();
        out.extend(self.bridge_candidates());
        out
    }

    /// The advertised `quorate_vouched` list: sorted, capped.
    pub fn quorate_vouched(&self) -> Vec<String> {
        let mut vouched = self.eligible_candidates();
        vouched.sort();
        vouched.dedup();
        vouched.truncate(MAX_ADVERTISED_CANDIDATE_NAMES);
        vouched
    }

    pub(super) fn candidates_truncated(&self) -> usize {
        let bridge = self.bridge_confirmed().len();
        let mut union = self.eligible_candidates();
        union.sort();
        union.dedup();
        [bridge, union.len()]
            .into_iter()
            .filter(|n| *n > MAX_ADVERTISED_CANDIDATE_NAMES)
            .max()
            .unwrap_or(0)
    }

    /// Names some agreeing peer vouches quorate that this node cannot
    /// account for: possible co-owners under spread, so a job one of them
    /// out-scores this node for is left to it; and the pending peers.
    pub(super) fn unconfirmed_contenders(&self) -> Vec<String> {
        let agreeing = self.agreeing();
        let mut accounted: BTreeSet<String> = BTreeSet::from([self.me.node_name.clone()]);
        accounted.extend(agreeing.iter().filter_map(|p| p.node_name.clone()));
        accounted.extend(self.eligible_candidates());
        let mut out = BTreeSet::new();
        for peer in agreeing {
            for name in peer.quorate_vouched.iter().flatten() {
                if !accounted.contains(name) {
                    out.insert(name.clone());
                }
            }
        }
        out.extend(self.pending_peers());
        out.into_iter().collect()
    }

    /// Peers reachable with this node's job-set id that have not seen this
    /// process yet (their member list does not show it) but look quorate:
    /// they may be acting on a view from before this process started, so
    /// they are deferred to like candidates (a lower name leads, a higher
    /// score owns the job) without counting toward the quorum, until they
    /// poll this process.
    pub(super) fn pending_peers(&self) -> Vec<String> {
        let quorum = self.quorum();
        self.peers
            .iter()
            .filter(|p| {
                p.status == Status::Agreed
                    && p.reports_members
                    && !p.attests(&self.me.instance_id)
                    && p.mutual_agreeing.as_ref().map_or(0, BTreeSet::len) + 1 >= quorum
            })
            .filter_map(|p| p.node_name.clone())
            .filter(|name| *name != self.me.node_name)
            .collect()
    }

    /// Nodes an agreeing peer mutually agrees with that this node cannot
    /// see: folded into the never-skip sets so two mutually blind nodes
    /// still pick one runner.
    pub(super) fn available_contenders(&self) -> Vec<String> {
        let agreeing = self.agreeing();
        let mut accounted: BTreeSet<&str> = BTreeSet::from([self.me.node_name.as_str()]);
        accounted.extend(agreeing.iter().filter_map(|p| p.node_name.as_deref()));
        let mut out = BTreeSet::new();
        for peer in &agreeing {
            for name in peer.mutual_agreeing.iter().flatten() {
                if !accounted.contains(name.as_str()) {
                    out.insert(name.clone());
                }
            }
        }
        out.into_iter().collect()
    }
}
