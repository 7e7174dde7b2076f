//! What the view publishes: this node's payload for its peers, the
//! status counts and the `GET /cluster` view.

use super::{ClusterView, GossipView, PeerRow, Status};
use crate::config::model::sections::Distribution;
use crate::gossip::payload::{
    JobSummary, Member, PeerPayload, MAX_ADVERTISED_REBOOT_JOBS, SCHEME_VERSION,
};
use std::collections::{BTreeMap, BTreeSet};

impl ClusterView {
    /// This node's entries for the `members` field: itself, then every
    /// peer with a fresh identity, flagged whether it agrees.
    pub fn local_members(&self) -> Vec<Member> {
        let mut out = vec![Member {
            node_name: self.me.node_name.clone(),
            instance_id: self.me.instance_id.clone(),
            agreed: true,
        }];
        for peer in &self.peers {
            if peer.status.stale() {
                continue;
            }
            if let (Some(name), Some(instance)) = (&peer.node_name, &peer.instance_id) {
                out.push(Member {
                    node_name: name.clone(),
                    instance_id: instance.clone(),
                    agreed: peer.status == Status::Agreed,
                });
            }
        }
        out
    }

    /// `@reboot` jobs agreeing peers (same job set) report as run.
    pub fn peers_ran_reboot_jobs(&self) -> BTreeSet<String> {
        self.peers
            .iter()
            .filter(|p| p.status == Status::Agreed)
            .flat_map(|p| p.ran_reboot_jobs.iter().flatten().cloned())
            .collect()
    }

    /// The body this node serves on `/peer`. `ran_reboot_jobs` is this
    /// node's full ran-set (capped here, lowest names kept), `summaries`
    /// its fleet-view block (already capped by the caller, with the flag).
    pub fn our_payload(
        &self,
        my_id: &str,
        ran_reboot_jobs: &BTreeSet<String>,
        summaries: (BTreeMap<String, JobSummary>, bool),
    ) -> PeerPayload {
        let mut mutual = self.agreeing_peer_names();
        mutual.sort();
        PeerPayload {
            node_name: Some(self.me.node_name.clone()),
            job_set_id: Some(my_id.to_owned()),
            scheme_version: Some(SCHEME_VERSION.to_owned()),
            instance_id: Some(self.me.instance_id.clone()),
            cluster_size: Some(self.cluster_size() as u64),
            members: Some(self.local_members()),
            mutual_agreeing: Some(mutual.into_iter().collect()),
            ran_reboot_jobs: Some(
                ran_reboot_jobs
                    .iter()
                    .take(MAX_ADVERTISED_REBOOT_JOBS)
                    .cloned()
                    .collect(),
            ),
            distribution: Some(self.me.distribution.as_str().to_owned()),
            elect_leader: Some(self.me.elect_leader),
            quorate_vouched: Some(self.quorate_vouched().into_iter().collect()),
            job_summaries: Some(summaries.0),
            job_summaries_truncated: summaries.1,
        }
    }

    /// How many peers are in each status (the `cronstable_cluster_peers`
    /// gauge).
    pub fn status_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for peer in &self.peers {
            *out.entry(peer.status.as_str()).or_insert(0) += 1;
        }
        out
    }

    /// The `GET /cluster` view.
    pub fn view(&self, my_id: &str) -> GossipView {
        let spread = self.me.distribution == Distribution::Spread;
        let leader = self.leader_name();
        let conflict_names = self.conflict_names();
        let conflicting_sizes = self.conflicting_sizes();
        let conflicting_policies = self.conflicting_policies();
        GossipView {
            backend: "gossip",
            node_name: self.me.node_name.clone(),
            job_set_id: my_id.to_owned(),
            cluster_size: self.cluster_size(),
            quorum: self.quorum(),
            elect_leader: self.me.elect_leader,
            distribution: self.me.distribution,
            conflict: !conflict_names.is_empty()
                || !conflicting_sizes.is_empty()
                || !conflicting_policies.is_empty(),
            size_conflict: !conflicting_sizes.is_empty(),
            policy_conflict: !conflicting_policies.is_empty(),
            conflict_names,
            conflicting_sizes,
            conflicting_policies,
            candidates_truncated: self.candidates_truncated(),
            quorate: leader.is_some(),
            is_leader: !spread && leader.as_deref() == Some(self.me.node_name.as_str()),
            leader: if spread { None } else { leader },
            peers: self
                .peers
                .iter()
                .map(|p| PeerRow {
                    host: p.host.clone(),
                    status: p.status,
                    job_set_id: p.job_set_id.clone(),
                    node_name: p.node_name.clone(),
                    last_seen: p.last_seen.map(crate::pyfmt::python_isoformat),
                    last_error: p.last_error.clone(),
                    mismatch_streak: p.mismatch_streak,
                })
                .collect(),
        }
    }
}
