//! Per-job owners under `distribution: spread`.

use super::ClusterView;
use crate::config::model::sections::Distribution;
use crate::gossip::elect::{elect_available_job_owner, elect_job_owner, hrw_owner};
use std::collections::BTreeMap;

impl ClusterView {
    /// The member list for spread ownership: this node, the eligible
    /// candidates and the contenders peers vouch for; `None` below quorum.
    pub(super) fn spread_members(&self) -> Option<Vec<String>> {
        if !self.is_quorate() {
            return None;
        }
        let mut members = self.eligible_candidates();
        members.extend(self.unconfirmed_contenders());
        Some(members)
    }

    /// The quorum-gated owner of `job` under spread; `None` below quorum.
    pub fn job_owner(&self, job: &str) -> Option<String> {
        let live = self.agreeing_peer_names();
        let mut members = self.eligible_candidates();
        members.extend(self.unconfirmed_contenders());
        elect_job_owner(
            job,
            &self.me.node_name,
            &live,
            self.cluster_size(),
            Some(&members),
        )
        .map(str::to_owned)
    }

    /// The owners of many jobs at once (one member-set derivation).
    pub fn job_owners<'a>(
        &self,
        jobs: impl IntoIterator<Item = &'a str>,
    ) -> BTreeMap<String, Option<String>> {
        let members = self.spread_members();
        jobs.into_iter()
            .map(|job| {
                let owner = members
                    .as_ref()
                    .map(|m| hrw_owner(job, &self.me.node_name, m).to_owned());
                (job.to_owned(), owner)
            })
            .collect()
    }

    /// Whether this node owns `job` (a `Leader` job under spread).
    pub fn is_job_owner(&self, job: &str) -> bool {
        self.job_owner(job).as_deref() == Some(self.me.node_name.as_str())
    }

    /// The owner of `job` without the quorum gate.
    pub fn available_job_owner(&self, job: &str) -> String {
        let mut pool = self.agreeing_peer_names();
        pool.extend(self.available_contenders());
        elect_available_job_owner(job, &self.me.node_name, &pool).to_owned()
    }

    /// Whether this node runs the `PreferLeader` job `job` under spread.
    pub fn is_available_job_owner(&mut self, job: &str) -> bool {
        if !self.settled() || self.available_job_owner(job) != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.clone();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_job_owner(job, &me, view) == me)
    }

    /// The quorum-gated owner check the scheduler asks for a `Leader` job,
    /// over either distribution (the conflict gate is the caller's).
    pub fn owns(&self, job: &str) -> bool {
        match self.me.distribution {
            Distribution::SingleLeader => self.is_leader(),
            Distribution::Spread => self.is_job_owner(job),
        }
    }
}
