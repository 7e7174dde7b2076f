//! The scheduler's leader gate over the leadership state: `clusterPolicy`
//! as the Clustering page defines it, for the lease backends and for the
//! gossip backend (conflicts, `distribution: spread`, the never-skip
//! available leader).

use super::records::{RecordsHandle, RecordsLink};
use crate::config::model::ClusterPolicy;
use crate::config::JobConfig;
use crate::job::Trigger;
use crate::metrics::cluster::ClusterStats;
use crate::scheduler::ports::{self, Admission, LeaderGate, LeaderRecords, SharedCounters};
use std::sync::Arc;
use tokio::sync::watch;
use tokio::time::Instant;

/// Leader launches only on the leader (fails closed when it cannot tell),
/// PreferLeader on the leader or whenever leadership is unknown (never
/// skips; may double-run), EveryNode everywhere.
pub struct ClusterGate {
    counters: SharedCounters,
    step_down: watch::Sender<bool>,
    link: Arc<RecordsLink>,
}

impl ClusterGate {
    /// A gate over the state in `counters`; `step_down` tells the driver
    /// to release the lease when the scheduler drains; `link` carries the
    /// leadership term and routes records requests to the backend.
    pub fn new(
        counters: SharedCounters,
        step_down: watch::Sender<bool>,
        link: Arc<RecordsLink>,
    ) -> Self {
        ClusterGate {
            counters,
            step_down,
            link,
        }
    }
}

/// The gossip gate (the seed's `_cluster_allows`): election off runs
/// everything; `Leader` needs a fresh, conflict-free, quorate view in which
/// this node leads (or owns the job under spread) and fails closed
/// otherwise; `PreferLeader` runs on the available leader (owner), and
/// anywhere while the manager is not answering (never skips).
fn gossip_admit(state: &ClusterStats, job: &JobConfig, now: std::time::Instant) -> Admission {
    if job.cluster_policy == ClusterPolicy::EveryNode {
        return Admission::Launch;
    }
    if state.gossip.as_deref().is_some_and(|g| !g.elect_leader()) {
        return Admission::Launch;
    }
    let live = if state.running && !state.stepped_down {
        state.fresh_gossip(now)
    } else {
        None
    };
    match job.cluster_policy {
        ClusterPolicy::EveryNode => Admission::Launch,
        ClusterPolicy::Leader => {
            let Some(g) = live else {
                return Admission::Defer;
            };
            if g.view.has_conflict() {
                return Admission::Defer;
            }
            let mine = if g.spread() {
                // The same hold as the single leader's (see
                // `ClusterView::vouched_by_quorum`): at start every node
                // sees only itself as a member and would own every job.
                g.vouched && g.view.is_job_owner(&job.name)
            } else {
                state.is_leader(now)
            };
            if mine {
                Admission::Launch
            } else if g.view.is_quorate() {
                Admission::Skip
            } else {
                Admission::Defer
            }
        }
        ClusterPolicy::PreferLeader => {
            let Some(g) = live else {
                return Admission::Launch;
            };
            let mine = if g.spread() {
                g.view.available_job_owner_given(&job.name, g.settled)
            } else {
                g.view.available_leader_given(g.settled)
            };
            if mine {
                Admission::Launch
            } else {
                Admission::Skip
            }
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
            if state.backend == "gossip" {
                return gossip_admit(state, job, now);
            }
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
        self.step_down.send_replace(true);
    }

    fn records(&self) -> Option<Arc<dyn LeaderRecords>> {
        // A configured section leaves its state in place even while its
        // backend is down (calls then answer NoBackend); only a section
        // that is absent (or not a lease backend) has no records.
        // Gossip attestation without election decides nothing: `@reboot`
        // runs at start as without a section.
        let configured = ports::with_counters(&self.counters, |c| {
            c.cluster
                .as_ref()
                .is_some_and(|s| s.gossip.as_deref().is_none_or(|g| g.elect_leader()))
        });
        configured
            .then(|| Arc::new(RecordsHandle::new(Arc::clone(&self.link))) as Arc<dyn LeaderRecords>)
    }

    fn leadership_term(&self) -> u64 {
        self.link.term()
    }

    fn owner(&self, job: &JobConfig) -> Option<Option<String>> {
        if job.cluster_policy == ClusterPolicy::EveryNode {
            return None;
        }
        let now = Instant::now().into_std();
        ports::with_counters(&self.counters, |c| {
            let state = c.cluster.as_ref()?;
            let g = state.gossip.as_deref()?;
            if !g.spread() || !g.elect_leader() {
                return None;
            }
            // A stale view names no owner (null: no quorum to decide).
            if !state.running || state.stepped_down || !g.fresh(now) {
                return Some(None);
            }
            Some(match job.cluster_policy {
                ClusterPolicy::PreferLeader => Some(g.view.available_job_owner(&job.name)),
                _ => g.view.job_owner(&job.name),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load_sources, Source, SourceKind};
    use crate::metrics::prometheus::Counters;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    fn job(policy: &str) -> JobConfig {
        let yaml = format!(
            "jobs:\n  - name: j\n    command: 'true'\n    schedule: '@hourly'\n    clusterPolicy: {policy}\n"
        );
        let mut loaded = load_sources(&[Source {
            name: "t.yaml".into(),
            text: yaml,
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("loads");
        loaded.jobs.remove(0)
    }

    /// (leader, quorate, holder, running) of a test state.
    type Facts = (bool, bool, Option<&'static str>, bool);

    /// A gate over a state with the given facts (None: no cluster).
    fn gate(state: Option<Facts>) -> ClusterGate {
        let counters = Arc::new(Mutex::new(Counters::new(0.0, None)));
        if let Some((leader, quorate, holder, running)) = state {
            let now = std::time::Instant::now();
            let mut stats = ClusterStats::new("kubernetes", "me".into());
            stats.running = running;
            let later = now + Duration::from_secs(60);
            stats.leading_until = leader.then_some(later);
            stats.quorate_until = quorate.then_some(later);
            stats.holder = holder.map(str::to_owned);
            counters.lock().unwrap().cluster = Some(stats);
        }
        let (tx, _) = watch::channel(false);
        ClusterGate::new(counters, tx, RecordsLink::new())
    }

    #[test]
    fn the_policies_follow_the_clustering_page() {
        use Admission::*;
        // (leader, quorate, holder, running) -> Leader, PreferLeader, EveryNode
        let table: [(Option<Facts>, [Admission; 3]); 6] = [
            // No cluster section: every node runs everything.
            (None, [Launch, Launch, Launch]),
            // This node leads.
            (
                Some((true, true, Some("me"), true)),
                [Launch, Launch, Launch],
            ),
            // Another node is known to lead.
            (
                Some((false, true, Some("other"), true)),
                [Skip, Skip, Launch],
            ),
            // The store is silent: Leader fails closed (and retries
            // wait), PreferLeader runs anyway.
            (
                Some((false, false, Some("other"), true)),
                [Defer, Launch, Launch],
            ),
            // Quorate, but nobody holds the lease.
            (Some((false, true, None, true)), [Skip, Launch, Launch]),
            // The backend failed to start.
            (Some((false, false, None, false)), [Defer, Launch, Launch]),
        ];
        for (state, expected) in table {
            let g = gate(state);
            let got = [
                g.admit(&job("Leader"), Trigger::Schedule),
                g.admit(&job("PreferLeader"), Trigger::Schedule),
                g.admit(&job("EveryNode"), Trigger::Schedule),
            ];
            assert_eq!(got, expected, "{state:?}");
        }
    }

    #[tokio::test]
    async fn records_exist_while_a_section_is_configured_even_with_no_backend() {
        assert!(gate(None).records().is_none(), "no election, no records");
        let g = gate(Some((false, false, None, false)));
        let records = g.records().expect("a configured section has records");
        assert_eq!(
            records.reboot_ran("v1:a").await,
            Err(ports::RecordsError::NoBackend)
        );
        assert_eq!(g.leadership_term(), 0);
        g.link.bump_term();
        assert_eq!(g.leadership_term(), 1);
    }

    #[test]
    fn after_stepping_down_leader_jobs_stop_here_at_once() {
        let mut g = gate(Some((true, true, Some("me"), true)));
        assert_eq!(
            g.admit(&job("Leader"), Trigger::Schedule),
            Admission::Launch
        );
        g.step_down();
        ports::with_counters(&g.counters, |c| {
            if let Some(s) = c.cluster.as_mut() {
                s.stepped_down = true;
            }
        });
        assert_eq!(g.admit(&job("Leader"), Trigger::Schedule), Admission::Defer);
        assert_eq!(
            g.admit(&job("EveryNode"), Trigger::Schedule),
            Admission::Launch
        );
        assert!(*g.step_down.borrow(), "the driver was told");
    }
}
