//! The scheduler's leader gate over the leadership state: `clusterPolicy`
//! as the Clustering page defines it for lease backends.

use crate::config::model::ClusterPolicy;
use crate::config::JobConfig;
use crate::job::Trigger;
use crate::scheduler::ports::{self, Admission, LeaderGate, SharedCounters};
use tokio::sync::watch;
use tokio::time::Instant;

/// Leader launches only on the leader (fails closed when it cannot tell),
/// PreferLeader on the leader or whenever leadership is unknown (never
/// skips; may double-run), EveryNode everywhere.
pub struct ClusterGate {
    counters: SharedCounters,
    step_down: watch::Sender<bool>,
}

impl ClusterGate {
    /// A gate over the state in `counters`; `step_down` tells the driver
    /// to release the lease when the scheduler drains.
    pub fn new(counters: SharedCounters, step_down: watch::Sender<bool>) -> Self {
        ClusterGate {
            counters,
            step_down,
        }
    }
}

impl LeaderGate for ClusterGate {
    fn admit(&self, job: &JobConfig, _trigger: Trigger) -> Admission {
        let now = Instant::now().into_std();
        ports::with_counters(&self.counters, |c| {
            let Some(state) = c.cluster.as_ref() else {
                // No leadership configured (yet): every node runs.
                return Admission::Launch;
            };
            match job.cluster_policy {
                ClusterPolicy::EveryNode => Admission::Launch,
                ClusterPolicy::Leader => {
                    if state.is_leader(now) {
                        Admission::Launch
                    } else if state.is_quorate(now) && !state.stepped_down {
                        // Someone else leads: theirs to run.
                        Admission::Skip
                    } else {
                        // Unknown: fail closed, and ask again for retries.
                        Admission::Defer
                    }
                }
                ClusterPolicy::PreferLeader => {
                    let known_other = state.is_quorate(now)
                        && !state.is_leader(now)
                        && state.leader(now).is_some()
                        && !state.stepped_down;
                    if known_other {
                        Admission::Skip
                    } else {
                        Admission::Launch
                    }
                }
            }
        })
    }

    fn step_down(&mut self) {
        let _ = self.step_down.send(true);
    }
}
