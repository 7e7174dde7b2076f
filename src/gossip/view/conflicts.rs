//! The three conflict kinds: a name claimed twice, a different declared
//! size, a different policy.

use super::{repr, ClusterView, Status};
use std::collections::{BTreeMap, BTreeSet};

impl ClusterView {
    /// Node names claimed by two distinct instances. First-hand identities
    /// (this node, and each peer as polled) always count; an identity only
    /// heard of through peers' member lists counts once two peers report
    /// it, so one lying peer cannot fabricate a conflict.
    pub fn conflict_names(&self) -> Vec<String> {
        type Seen<'a> = BTreeMap<String, BTreeMap<String, BTreeSet<&'a str>>>;
        let mut first: Seen = BTreeMap::new();
        let mut heard: Seen = BTreeMap::new();
        first
            .entry(self.me.node_name.clone())
            .or_default()
            .entry(self.me.instance_id.clone())
            .or_default()
            .insert("self");
        for peer in &self.peers {
            if peer.status.stale() || peer.status == Status::SelfNode {
                continue;
            }
            if let Some(name) = &peer.node_name {
                let instance = peer
                    .instance_id
                    .clone()
                    .unwrap_or_else(|| format!("host:{}", peer.host));
                first
                    .entry(name.clone())
                    .or_default()
                    .entry(instance)
                    .or_default()
                    .insert(&peer.host);
            }
            for m in peer.members.iter().flatten() {
                heard
                    .entry(m.node_name.clone())
                    .or_default()
                    .entry(m.instance_id.clone())
                    .or_default()
                    .insert(&peer.host);
            }
        }
        let names: BTreeSet<&String> = first.keys().chain(heard.keys()).collect();
        names
            .into_iter()
            .filter(|name| {
                let mut credible: BTreeSet<&String> = first
                    .get(*name)
                    .map(|m| m.keys().collect())
                    .unwrap_or_default();
                for (instance, reporters) in heard.get(*name).into_iter().flatten() {
                    if reporters.len() >= 2 {
                        credible.insert(instance);
                    }
                }
                credible.len() >= 2
            })
            .cloned()
            .collect()
    }

    /// Cluster sizes declared by agreeing peers that differ from this
    /// node's.
    pub fn conflicting_sizes(&self) -> Vec<u64> {
        let mine = self.cluster_size() as u64;
        let sizes: BTreeSet<u64> = self
            .peers
            .iter()
            .filter(|p| p.status == Status::Agreed)
            .filter_map(|p| p.declared_size.filter(|s| *s != mine))
            .collect();
        sizes.into_iter().collect()
    }

    /// Policy differences declared by agreeing peers, as
    /// `distribution 'spread' != 'single-leader'` /
    /// `electLeader False != True`.
    pub fn conflicting_policies(&self) -> Vec<String> {
        let mine = self.me.distribution.as_str();
        let py_bool = |b: bool| if b { "True" } else { "False" };
        let mut out = BTreeSet::new();
        for peer in self.peers.iter().filter(|p| p.status == Status::Agreed) {
            if let Some(theirs) = peer.declared_distribution.as_deref().filter(|d| *d != mine) {
                out.insert(format!("distribution {} != {}", repr(theirs), repr(mine)));
            }
            if let Some(theirs) = peer
                .declared_elect_leader
                .filter(|e| *e != self.me.elect_leader)
            {
                out.insert(format!(
                    "electLeader {} != {}",
                    py_bool(theirs),
                    py_bool(self.me.elect_leader)
                ));
            }
        }
        out.into_iter().collect()
    }

    /// Any conflict that makes the election unsafe (`Leader` jobs stand
    /// down while one is visible).
    pub fn has_conflict(&self) -> bool {
        !self.conflict_names().is_empty()
            || !self.conflicting_sizes().is_empty()
            || !self.conflicting_policies().is_empty()
    }
}
