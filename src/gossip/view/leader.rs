//! The single leader: who it is, whether this node leads, whether the
//! view has settled and whether a quorum vouches for it.

use super::{ClusterView, Status, SETTLE_ROUNDS};
use crate::gossip::elect::{elect_available_job_owner, elect_available_leader, elect_leader};
use crate::gossip::payload::MAX_ADVERTISED_CANDIDATE_NAMES;
use std::collections::BTreeSet;

impl ClusterView {
    /// The single leader as this node sees it; `None` below quorum.
    pub fn leader_name(&self) -> Option<String> {
        let live = self.agreeing_peer_names();
        let mut candidates = self.eligible_candidates();
        candidates.extend(self.pending_peers());
        elect_leader(
            &self.me.node_name,
            &live,
            self.cluster_size(),
            Some(&candidates),
        )
        .map(str::to_owned)
    }

    /// This node is quorate and the lowest eligible name.
    pub fn is_leader(&self) -> bool {
        self.leader_name().as_deref() == Some(self.me.node_name.as_str())
    }

    /// This node sees a quorum of mutually agreeing members.
    pub fn is_quorate(&self) -> bool {
        self.agreeing().len() + 1 >= self.quorum()
    }

    /// Whether the never-skip gates may trust the view yet: not while a
    /// peer is unpolled, nor (for the first rounds) while an agreeing peer
    /// has not yet seen this process's instance.
    pub fn settled(&mut self) -> bool {
        if self.settled_latched {
            return true;
        }
        if self.peers.iter().any(|p| p.status == Status::Unknown) {
            return false;
        }
        if self.rounds >= SETTLE_ROUNDS {
            self.settled_latched = true;
            return true;
        }
        !self.peers.iter().any(|p| {
            p.status == Status::Agreed
                && p.reports_members
                && !p
                    .members
                    .iter()
                    .flatten()
                    .any(|m| m.instance_id == self.me.instance_id)
        })
    }

    /// The leader without the quorum gate (`PreferLeader`).
    pub fn available_leader_name(&self) -> String {
        let mut pool = self.agreeing_peer_names();
        pool.extend(self.available_contenders());
        elect_available_leader(&self.me.node_name, &pool).to_owned()
    }

    /// Mutual-agreement sets of processes that share this node's name with
    /// a lower instance id: on the never-skip path the lowest instance runs.
    pub(super) fn lower_twins(&self) -> Vec<Vec<String>> {
        self.peers
            .iter()
            .filter(|p| !p.status.stale())
            .filter(|p| p.node_name.as_deref() == Some(self.me.node_name.as_str()))
            .filter(|p| {
                p.instance_id
                    .as_deref()
                    .is_some_and(|i| !i.is_empty() && i < self.me.instance_id.as_str())
            })
            .map(|p| p.mutual_agreeing.iter().flatten().cloned().collect())
            .collect()
    }

    /// Whether this node runs `PreferLeader` jobs under single-leader.
    pub fn is_available_leader(&mut self) -> bool {
        if !self.settled() || self.available_leader_name() != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.clone();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_leader(&me, view) == me)
    }

    /// [`ClusterView::is_available_leader`] with the settled flag given
    /// (a published snapshot cannot latch it; the manager computed it).
    pub fn available_leader_given(&self, settled: bool) -> bool {
        if !settled || self.available_leader_name() != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.as_str();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_leader(me, view) == me)
    }

    /// [`ClusterView::is_available_job_owner`] with the settled flag given.
    pub fn available_job_owner_given(&self, job: &str, settled: bool) -> bool {
        if !settled || self.available_job_owner(job) != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.as_str();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_job_owner(job, me, view) == me)
    }

    /// Whether enough agreeing peers list this node in their advertised
    /// `quorate_vouched` to make a quorum with it. A peer's list comes in
    /// the same body as its mutual-agreement set, so a node vouched this
    /// way also sees each voucher as eligible and cannot elect itself over
    /// a lower voucher: the hold that keeps every node from leading on a
    /// view its peers have not confirmed yet (the first rounds at start).
    pub(super) fn vouched_by_quorum(&self) -> bool {
        let me = self.me.node_name.as_str();
        let vouchers = self
            .agreeing()
            .into_iter()
            .filter(|p| p.quorate_vouched.iter().flatten().any(|n| n == me))
            .count();
        vouchers + 1 >= self.quorum()
    }

    /// Whether this node may act on its election: vouched for by a quorum
    /// (`vouched_by_quorum`), and known to every peer that could be
    /// running what this node would run.
    ///
    /// A peer's vouch list is the set it elects from: a peer that lists
    /// this node does not lead over it (when this node's name is lower) and
    /// leaves it the jobs it out-scores the peer for. So waiting until each
    /// such peer lists this node orders a handover: the node that led or
    /// owned a job before steps down in the round that adds this node to
    /// its list, before any poll can see the list. The peers waited for are
    /// the agreeing ones and the reachable ones with this job-set id that
    /// have not seen this process yet but look quorate (they may act on a
    /// view from before it started: when two of three nodes restart, the
    /// survivor is accounted for by nobody else). A quorum of vouches alone
    /// let a restarted leader start while the old one, not among its
    /// vouchers, still ran: a double run whenever the rounds fell that way.
    /// A peer with no list (an older build), a list cut at the cap, or a
    /// mutual set below a quorum (eligible nowhere, so running nothing) is
    /// not waited for. In steady state every list already names every
    /// member, so a takeover is not slowed; a restarted node waits a round
    /// or two.
    pub fn vouched(&self) -> bool {
        self.vouched_by_quorum() && self.unaware_peers().is_empty()
    }

    /// The peers [`Self::vouched`] waits for that do not list this node.
    pub(super) fn unaware_peers(&self) -> Vec<&str> {
        let me = self.me.node_name.as_str();
        let quorum = self.quorum();
        let pending = self.pending_peers();
        let agreeing: BTreeSet<&str> = self
            .agreeing()
            .into_iter()
            .filter_map(|p| p.node_name.as_deref())
            .collect();
        self.peers
            .iter()
            .filter(|p| p.status == Status::Agreed)
            .filter_map(|p| p.node_name.as_deref().map(|name| (p, name)))
            .filter(|(_, name)| {
                *name != me && (agreeing.contains(name) || pending.iter().any(|n| n == name))
            })
            // A peer whose own mutual set is below a quorum is eligible
            // nowhere, so it runs nothing yet (a process that just started
            // and has not formed its view): waiting for its list would only
            // slow a takeover.
            .filter(|(p, _)| p.mutual_agreeing.as_ref().map_or(0, BTreeSet::len) + 1 >= quorum)
            .filter(|(p, _)| match &p.quorate_vouched {
                None => false,
                Some(list) => {
                    list.len() < MAX_ADVERTISED_CANDIDATE_NAMES && !list.iter().any(|n| n == me)
                }
            })
            .map(|(_, name)| name)
            .collect()
    }
}
