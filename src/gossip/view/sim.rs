//! A simulated gossip cluster for unit tests: views of `n` nodes polling
//! each other through the real payload encoder and decoder, one round at
//! a time, with a link function deciding who can reach whom. Shared by the
//! view's tests and the leader gate's.

use super::{ClusterView, Identity, Observation, Stamp};
use crate::config::model::sections::Distribution;
use crate::gossip::payload::{decode, encode};
use chrono::DateTime;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

pub(crate) const ID: &str = "v1:same";

pub(crate) fn at(secs: u64) -> Stamp {
    Stamp {
        mono: Duration::from_secs(secs),
        wall: DateTime::from_timestamp(1_750_000_000 + secs as i64, 0).unwrap_or_default(),
    }
}

pub(crate) fn identity(name: &str, distribution: Distribution) -> Identity {
    Identity {
        node_name: name.to_owned(),
        instance_id: format!("inst-{name}"),
        elect_leader: true,
        distribution,
        drift_after: 3,
    }
}

/// A simulated cluster: node i is `n{i}` at host `h{i}`.
pub(crate) struct Sim {
    pub(crate) views: Vec<ClusterView>,
    pub(crate) ids: Vec<String>,
    clock: u64,
    restarts: usize,
}

impl Sim {
    pub(crate) fn new(n: usize, distribution: Distribution) -> Self {
        let views = (0..n)
            .map(|i| {
                let hosts = (0..n).filter(|j| *j != i).map(|j| format!("h{j}"));
                ClusterView::new(identity(&format!("n{i}"), distribution), hosts)
            })
            .collect();
        Sim {
            views,
            ids: vec![ID.to_owned(); n],
            clock: 0,
            restarts: 0,
        }
    }

    /// One round in which `link(i, j)` says whether i can poll j. Bodies
    /// go through the real encoder and decoder.
    pub(crate) fn round(&mut self, link: &dyn Fn(usize, usize) -> bool) {
        self.clock += 30;
        let bodies: Vec<Vec<u8>> = self
            .views
            .iter()
            .zip(&self.ids)
            .map(|(v, id)| encode(&v.our_payload(id, &BTreeSet::new(), (BTreeMap::new(), false))))
            .collect();
        for i in 0..self.views.len() {
            for (j, body) in bodies.iter().enumerate() {
                if i == j {
                    continue;
                }
                let obs = if link(i, j) {
                    Observation::Payload(Box::new(decode(body).unwrap()))
                } else {
                    Observation::Unreachable("Cannot connect to host".to_owned())
                };
                let id = self.ids[i].clone();
                self.views[i].observe(&format!("h{j}"), obs, &id, at(self.clock));
            }
            self.views[i].round_completed();
        }
    }

    /// Node `i` alone completes a round, reading every other node's body
    /// as it stands now: rounds of different nodes interleave in any
    /// order, as real nodes' unsynchronized rounds do.
    pub(crate) fn round_of(&mut self, i: usize, link: &dyn Fn(usize, usize) -> bool) {
        self.clock += 1;
        for j in 0..self.views.len() {
            if i == j {
                continue;
            }
            let obs = if link(i, j) {
                let body = encode(&self.views[j].our_payload(
                    &self.ids[j],
                    &BTreeSet::new(),
                    (BTreeMap::new(), false),
                ));
                Observation::Payload(Box::new(decode(&body).unwrap()))
            } else {
                Observation::Unreachable("Cannot connect to host".to_owned())
            };
            let id = self.ids[i].clone();
            self.views[i].observe(&format!("h{j}"), obs, &id, at(self.clock));
        }
        self.views[i].round_completed();
    }

    /// Node `i` is killed and started again at once: a new process (a new
    /// instance id) with an empty view, under the same name.
    pub(crate) fn restart(&mut self, i: usize) {
        self.restarts += 1;
        let distribution = self.views[i].identity().distribution;
        let mut me = identity(&format!("n{i}"), distribution);
        me.instance_id = format!("inst-n{i}-{}", self.restarts);
        let hosts = (0..self.views.len())
            .filter(|j| *j != i)
            .map(|j| format!("h{j}"));
        self.views[i] = ClusterView::new(me, hosts);
    }

    /// The nodes that would launch a single-leader `Leader` fire now, by
    /// the gate's rule: elected, vouched for, no conflict.
    pub(crate) fn acting_leaders(&self) -> Vec<usize> {
        (0..self.views.len())
            .filter(|i| {
                let v = &self.views[*i];
                v.vouched() && v.is_leader() && !v.has_conflict()
            })
            .collect()
    }

    /// The nodes that would launch the spread `Leader` job `job` now.
    pub(crate) fn acting_owners(&self, job: &str) -> Vec<usize> {
        (0..self.views.len())
            .filter(|i| {
                let v = &self.views[*i];
                v.vouched() && v.is_job_owner(job) && !v.has_conflict()
            })
            .collect()
    }

    pub(crate) fn rounds(&mut self, k: usize, link: &dyn Fn(usize, usize) -> bool) {
        for _ in 0..k {
            self.round(link);
        }
    }

    pub(crate) fn leaders(&self) -> Vec<usize> {
        (0..self.views.len())
            .filter(|i| self.views[*i].is_leader() && !self.views[*i].has_conflict())
            .collect()
    }
}

pub(crate) fn all(_: usize, _: usize) -> bool {
    true
}
