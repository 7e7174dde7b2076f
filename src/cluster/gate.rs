//! The scheduler's leader gate over the leadership state: `clusterPolicy`
//! as the Clustering page defines it, for the lease backends and for the
//! gossip backend (conflicts, `distribution: spread`, the never-skip
//! available leader).

use super::records::{RecordsHandle, RecordsLink};
use crate::config::model::ClusterPolicy;
use crate::config::JobConfig;
use crate::job::Trigger;
use crate::scheduler::ports::{Admission, LeaderGate, LeaderRecords, Runner};
use crate::status::{BackendKind, LeadershipState, LeadershipWatch};
use std::sync::Arc;
use tokio::sync::watch;
use tokio::time::Instant;

/// Leader launches only on the leader (fails closed when it cannot tell),
/// PreferLeader on the leader or whenever leadership is unknown (never
/// skips; may double-run), EveryNode everywhere.
pub struct ClusterGate {
    leadership: LeadershipWatch,
    step_down: watch::Sender<bool>,
    /// Set the moment the scheduler's drain begins: `Leader` jobs stop
    /// here at once, before the backend has published its step-down.
    stepping_down: bool,
    link: Arc<RecordsLink>,
}

impl ClusterGate {
    /// A gate over the published leadership state; `step_down` tells the
    /// driver to release the lease when the scheduler drains; `link`
    /// carries the leadership term and routes records requests to the
    /// backend.
    pub fn new(
        leadership: LeadershipWatch,
        step_down: watch::Sender<bool>,
        link: Arc<RecordsLink>,
    ) -> Self {
        ClusterGate {
            leadership,
            step_down,
            stepping_down: false,
            link,
        }
    }
}

/// The gossip gate (the seed's `_cluster_allows`): election off runs
/// everything; `Leader` needs a fresh, conflict-free, quorate view in which
/// this node leads (or owns the job under spread) and fails closed
/// otherwise; `PreferLeader` runs on the available leader (owner), and
/// anywhere while the manager is not answering (never skips).
fn gossip_admit(state: &LeadershipState, job: &JobConfig, now: std::time::Instant) -> Admission {
    if job.cluster_policy == ClusterPolicy::EveryNode {
        return Admission::Launch;
    }
    if !state.elect_leader || state.gossip.as_deref().is_some_and(|g| !g.elect_leader()) {
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
                // `ClusterView::vouched`): at start every node
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
        let stepping_down = self.stepping_down;
        self.leadership.with(|state| {
            let Some(state) = state else {
                // No leadership configured (yet): every node runs.
                return Admission::Launch;
            };
            if stepping_down && !state.stepped_down {
                // The drain began: the backend publishes its step-down
                // shortly, the gate acts on it now (only while draining,
                // so the copy costs nothing in normal running).
                let mut stepped = state.clone();
                stepped.stepped_down = true;
                return admit(&stepped, job, now);
            }
            admit(state, job, now)
        })
    }

    fn step_down(&mut self) {
        self.stepping_down = true;
        self.step_down.send_replace(true);
    }

    fn records(&self) -> Option<Arc<dyn LeaderRecords>> {
        // A configured section leaves its state in place even while its
        // backend is down (calls then answer NoBackend); only a section
        // that is absent (or not a lease backend) has no records.
        // Gossip attestation without election decides nothing: `@reboot`
        // runs at start as without a section.
        let configured = self.leadership.with(|state| {
            state.is_some_and(|s| {
                s.elect_leader && s.gossip.as_deref().is_none_or(|g| g.elect_leader())
            })
        });
        configured
            .then(|| Arc::new(RecordsHandle::new(Arc::clone(&self.link))) as Arc<dyn LeaderRecords>)
    }

    fn leadership_term(&self) -> u64 {
        self.link.term()
    }

    fn clustered(&self) -> bool {
        self.leadership.with(|state| state.is_some())
    }

    fn runner(&self, job: &JobConfig) -> Runner {
        let now = Instant::now().into_std();
        let stepping_down = self.stepping_down;
        self.leadership.with(|state| match state {
            None => Runner::Here,
            Some(state) => runner_of(state, job, now, stepping_down),
        })
    }

    fn owner(&self, job: &JobConfig) -> Option<Option<String>> {
        if job.cluster_policy == ClusterPolicy::EveryNode {
            return None;
        }
        let now = Instant::now().into_std();
        let stepping_down = self.stepping_down;
        self.leadership.with(|state| {
            let state = state?;
            let spread = state.gossip.as_deref().filter(|g| g.spread());
            let Some(g) = spread else {
                // One leader runs every leader-gated job: it is the owner
                // (null while none is known), as the control API routes.
                return match runner_of(state, job, now, stepping_down) {
                    Runner::Leader => Some(Some(state.node_name.clone())),
                    Runner::Elsewhere(node) => Some(Some(node)),
                    Runner::Unknown => Some(None),
                    Runner::Here if elects(state) => Some(None),
                    Runner::Here => None,
                };
            };
            if !g.elect_leader() {
                return None;
            }
            // A stale view names no owner (null: no quorum to decide).
            if !state.running || state.stepped_down || stepping_down || !g.fresh(now) {
                return Some(None);
            }
            Some(match job.cluster_policy {
                ClusterPolicy::PreferLeader => Some(g.view.available_job_owner(&job.name)),
                _ => g.view.job_owner(&job.name),
            })
        })
    }
}

/// Whether the section elects anyone (gossip attestation alone does not).
fn elects(state: &LeadershipState) -> bool {
    state.elect_leader && state.gossip.as_deref().is_none_or(|g| g.elect_leader())
}

/// Which node runs `job`'s scheduled fires in the state `state` at `now`
/// (the control API's routing, [`LeaderGate::runner`]), following the
/// same rules as [`admit`]: this node when it would launch the fire as the
/// leader (or owner), the other node when one is known to, and nobody
/// known for a `Leader` job while leadership is unsettled. `EveryNode`
/// jobs, and `PreferLeader` jobs with no leader known (they then run on
/// every node), run here.
fn runner_of(
    state: &LeadershipState,
    job: &JobConfig,
    now: std::time::Instant,
    stepping_down: bool,
) -> Runner {
    if job.cluster_policy == ClusterPolicy::EveryNode || !elects(state) {
        return Runner::Here;
    }
    let live = state.running && !state.stepped_down && !stepping_down;
    let me = state.node_name.as_str();
    let named = match state.gossip.as_deref() {
        Some(g) if g.spread() => {
            let fresh = live && g.fresh(now);
            match job.cluster_policy {
                ClusterPolicy::PreferLeader => fresh.then(|| g.view.available_job_owner(&job.name)),
                _ if fresh && g.vouched && g.view.is_job_owner(&job.name) => Some(me.to_owned()),
                _ => fresh
                    .then(|| g.view.job_owner(&job.name))
                    .flatten()
                    .filter(|owner| owner != me),
            }
        }
        _ if live && state.is_leader(now) => Some(me.to_owned()),
        _ if live => state.leader(now).filter(|leader| leader != me),
        _ => None,
    };
    match named {
        Some(node) if node == me => Runner::Leader,
        Some(node) => Runner::Elsewhere(node),
        None if job.cluster_policy == ClusterPolicy::PreferLeader => Runner::Here,
        None => Runner::Unknown,
    }
}

/// The verdict of the state `state` for one launch of `job` at `now`.
fn admit(state: &LeadershipState, job: &JobConfig, now: std::time::Instant) -> Admission {
    if state.backend == BackendKind::Gossip {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load_sources, Source, SourceKind};
    use std::sync::Arc;
    use std::time::Duration;

    fn job(policy: &str) -> JobConfig {
        named_job("j", policy)
    }

    fn named_job(name: &str, policy: &str) -> JobConfig {
        let yaml = format!(
            "jobs:\n  - name: {name}\n    command: 'true'\n    schedule: '@hourly'\n    clusterPolicy: {policy}\n"
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
        let leadership = match state {
            None => LeadershipWatch::none(),
            Some((leader, quorate, holder, running)) => {
                let now = std::time::Instant::now();
                let mut stats = LeadershipState::new(BackendKind::Kubernetes, "me".into());
                stats.running = running;
                let later = now + Duration::from_secs(60);
                stats.leading_until = leader.then_some(later);
                stats.quorate_until = quorate.then_some(later);
                stats.holder = holder.map(str::to_owned);
                LeadershipWatch::fixed(stats)
            }
        };
        let (tx, _) = watch::channel(false);
        ClusterGate::new(leadership, tx, RecordsLink::new())
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

    /// The control API's routing over the same states as the launch
    /// table above: who runs each policy's fires, and what `GET /jobs`
    /// names as its `clusterOwner`.
    #[test]
    fn the_runner_and_owner_follow_the_same_rules_as_the_launches() {
        use Runner::*;
        let other = || Elsewhere("other".to_owned());
        let owner = |name: &str| Some(Some(name.to_owned()));
        // (state) -> (Leader, PreferLeader) runners and owners; EveryNode
        // always runs here and has no owner.
        type Row = (Option<Facts>, [Runner; 2], [Option<Option<String>>; 2]);
        let table: [Row; 6] = [
            (None, [Here, Here], [None, None]),
            (
                Some((true, true, Some("me"), true)),
                [Leader, Leader],
                [owner("me"), owner("me")],
            ),
            (
                Some((false, true, Some("other"), true)),
                [other(), other()],
                [owner("other"), owner("other")],
            ),
            // The store is silent: nobody known for Leader; PreferLeader
            // runs on every node, this one included.
            (
                Some((false, false, Some("other"), true)),
                [Unknown, Here],
                [Some(None), Some(None)],
            ),
            (
                Some((false, true, None, true)),
                [Unknown, Here],
                [Some(None), Some(None)],
            ),
            (
                Some((false, false, None, false)),
                [Unknown, Here],
                [Some(None), Some(None)],
            ),
        ];
        for (state, runners, owners) in table {
            let g = gate(state);
            assert_eq!(
                [g.runner(&job("Leader")), g.runner(&job("PreferLeader"))],
                runners,
                "{state:?}"
            );
            assert_eq!(
                [g.owner(&job("Leader")), g.owner(&job("PreferLeader"))],
                owners,
                "{state:?}"
            );
            assert_eq!(g.runner(&job("EveryNode")), Here, "{state:?}");
            assert_eq!(g.owner(&job("EveryNode")), None, "{state:?}");
        }
        // A lease still naming this node after its leadership ran out:
        // not a runner anyone can name.
        let g = gate(Some((false, true, Some("me"), true)));
        assert_eq!(g.runner(&job("Leader")), Unknown);
        // Draining: this node stops naming itself at once.
        let mut g = gate(Some((true, true, Some("me"), true)));
        g.step_down();
        assert_eq!(g.runner(&job("Leader")), Unknown);
        assert_eq!(g.runner(&job("PreferLeader")), Here);
    }

    #[tokio::test]
    async fn records_exist_while_a_section_is_configured_even_with_no_backend() {
        assert!(gate(None).records().is_none(), "no election, no records");
        let g = gate(Some((false, false, None, false)));
        let records = g.records().expect("a configured section has records");
        assert_eq!(
            records.reboot_ran("v1:a").await,
            Err(crate::scheduler::ports::RecordsError::NoBackend)
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
        // The published state still says this node leads (the driver
        // has not processed the step-down yet): the gate stops anyway.
        g.step_down();
        assert!(g.leadership.with(|s| s.is_some_and(|s| !s.stepped_down)));
        assert_eq!(g.admit(&job("Leader"), Trigger::Schedule), Admission::Defer);
        assert_eq!(
            g.admit(&job("EveryNode"), Trigger::Schedule),
            Admission::Launch
        );
        assert!(*g.step_down.borrow(), "the driver was told");
    }

    /// A gate over node `i` of a simulated gossip cluster, with the
    /// snapshot fresh (or stale) as the manager would publish it.
    fn gossip_gate(sim: &mut crate::gossip::view::sim::Sim, i: usize, fresh: bool) -> ClusterGate {
        use crate::status::GossipState;
        let now = std::time::Instant::now();
        let view = &mut sim.views[i];
        let settled = view.settled();
        let vouched = view.vouched();
        let mut stats =
            LeadershipState::new(BackendKind::Gossip, view.identity().node_name.clone());
        stats.running = true;
        stats.gossip = Some(Arc::new(GossipState {
            view: view.clone(),
            job_set_id: crate::gossip::view::sim::ID.to_owned(),
            settled,
            vouched,
            fresh_until: if fresh {
                now + Duration::from_secs(60)
            } else {
                now.checked_sub(Duration::from_millis(1)).unwrap_or(now)
            },
            origin: now,
            interval: 1,
        }));
        let (tx, _) = watch::channel(false);
        ClusterGate::new(LeadershipWatch::fixed(stats), tx, RecordsLink::new())
    }

    fn admissions(g: &ClusterGate, name: &str) -> [Admission; 3] {
        ["Leader", "PreferLeader", "EveryNode"]
            .map(|p| g.admit(&named_job(name, p), Trigger::Schedule))
    }

    #[test]
    fn gossip_single_leader_runs_leader_jobs_on_the_elected_node_only() {
        use crate::config::model::sections::Distribution;
        use crate::gossip::view::sim::{all, Sim};
        use Admission::*;
        let mut sim = Sim::new(3, Distribution::SingleLeader);
        // One round: everyone agreed, nobody attested back yet, so no
        // node is vouched for: Leader jobs launch nowhere.
        sim.round(&all);
        for i in 0..3 {
            let g = gossip_gate(&mut sim, i, true);
            assert_ne!(
                g.admit(&job("Leader"), Trigger::Schedule),
                Launch,
                "node {i}"
            );
        }
        // Two more rounds confirm the two-way edges, a third carries the
        // peers' quorate vouching for n0 back to it.
        sim.rounds(3, &all);
        let leader = gossip_gate(&mut sim, 0, true);
        assert_eq!(admissions(&leader, "j"), [Launch, Launch, Launch]);
        assert_eq!(leader.runner(&job("Leader")), Runner::Leader);
        for i in 1..3 {
            let g = gossip_gate(&mut sim, i, true);
            assert_eq!(admissions(&g, "j"), [Skip, Skip, Launch], "node {i}");
            // Under single-leader the leader owns every leader-gated
            // job, and the control API sends requests there.
            assert_eq!(g.owner(&job("Leader")), Some(Some("n0".to_owned())));
            assert_eq!(g.runner(&job("Leader")), Runner::Elsewhere("n0".into()));
        }
        // A stale snapshot (the poll loop stalled): the leader fails
        // closed for Leader jobs and PreferLeader never skips.
        let stale = gossip_gate(&mut sim, 0, false);
        assert_eq!(admissions(&stale, "j"), [Defer, Launch, Launch]);
        let stale_follower = gossip_gate(&mut sim, 1, false);
        assert_eq!(admissions(&stale_follower, "j"), [Defer, Launch, Launch]);
        // Stepped down for the shutdown: Leader jobs stop at once.
        let mut stepping = gossip_gate(&mut sim, 0, true);
        stepping.step_down();
        assert_eq!(admissions(&stepping, "j"), [Defer, Launch, Launch]);
    }

    #[test]
    fn gossip_minority_defers_leader_jobs_and_still_runs_prefer_leader() {
        use crate::config::model::sections::Distribution;
        use crate::gossip::view::sim::{all, Sim};
        use Admission::*;
        let mut sim = Sim::new(3, Distribution::SingleLeader);
        sim.rounds(3, &all);
        // n2 loses both peers for good.
        let cut = |i: usize, j: usize| i != 2 && j != 2;
        sim.rounds(3, &cut);
        let alone = gossip_gate(&mut sim, 2, true);
        assert_eq!(admissions(&alone, "j"), [Defer, Launch, Launch]);
        // The majority side keeps one runner: n0 leads, n1 skips.
        let n0 = gossip_gate(&mut sim, 0, true);
        let n1 = gossip_gate(&mut sim, 1, true);
        assert_eq!(admissions(&n0, "j"), [Launch, Launch, Launch]);
        assert_eq!(admissions(&n1, "j"), [Skip, Skip, Launch]);
    }

    #[test]
    fn gossip_duplicate_name_stands_leader_jobs_down_on_every_node() {
        use crate::config::model::sections::Distribution;
        use crate::gossip::view::sim::{all, identity, Sim};
        use crate::gossip::ClusterView;
        use Admission::*;
        let mut sim = Sim::new(3, Distribution::SingleLeader);
        // Node 2 is misconfigured with node 0's name.
        let mut twin = identity("n0", Distribution::SingleLeader);
        twin.instance_id = "inst-twin".to_owned();
        sim.views[2] = ClusterView::new(twin, ["h0".to_owned(), "h1".to_owned()]);
        sim.rounds(4, &all);
        for i in 0..3 {
            let g = gossip_gate(&mut sim, i, true);
            let [leader, _, every] = admissions(&g, "j");
            assert_eq!((leader, every), (Defer, Launch), "node {i}");
        }
    }

    #[test]
    fn gossip_spread_gives_each_leader_job_one_node_and_shows_the_owner() {
        use crate::config::model::sections::Distribution;
        use crate::gossip::view::sim::{all, Sim};
        use Admission::*;
        let mut sim = Sim::new(3, Distribution::Spread);
        sim.rounds(4, &all);
        let gates: Vec<ClusterGate> = (0..3).map(|i| gossip_gate(&mut sim, i, true)).collect();
        let mut owners_used = std::collections::BTreeSet::new();
        for k in 0..24 {
            let name = format!("job{k}");
            for policy in ["Leader", "PreferLeader"] {
                let j = named_job(&name, policy);
                let launches: Vec<usize> = (0..3)
                    .filter(|i| gates[*i].admit(&j, Trigger::Schedule) == Launch)
                    .collect();
                assert_eq!(launches.len(), 1, "{name} {policy}: {launches:?}");
                for (i, g) in gates.iter().enumerate() {
                    if i != launches[0] {
                        assert_eq!(
                            g.admit(&j, Trigger::Schedule),
                            Skip,
                            "{name} {policy} on n{i}"
                        );
                    }
                }
                // Every node names the same owner, the one that launches, and
                // routes control requests to it.
                let owner = format!("n{}", launches[0]);
                for (i, g) in gates.iter().enumerate() {
                    assert_eq!(g.owner(&j), Some(Some(owner.clone())), "{name} {policy}");
                    let runner = if i == launches[0] {
                        Runner::Leader
                    } else {
                        Runner::Elsewhere(owner.clone())
                    };
                    assert_eq!(g.runner(&j), runner, "{name} {policy} on n{i}");
                }
                owners_used.insert(owner);
            }
            assert_eq!(gates[0].owner(&named_job(&name, "EveryNode")), None);
        }
        assert_eq!(owners_used.len(), 3, "24 jobs spread over all three nodes");
        // A stale view names no owner and launches no Leader job.
        let stale = gossip_gate(&mut sim, 0, false);
        assert_eq!(stale.owner(&named_job("job0", "Leader")), Some(None));
        assert_eq!(
            stale.admit(&named_job("job0", "Leader"), Trigger::Schedule),
            Defer
        );
    }

    #[test]
    fn gossip_attestation_only_decides_nothing_even_when_the_manager_failed() {
        use Admission::*;
        for (elect, expected) in [
            (false, [Launch, Launch, Launch]),
            (true, [Defer, Launch, Launch]),
        ] {
            // What the supervisor leaves when the manager cannot start.
            let mut stats = LeadershipState::new(BackendKind::Gossip, "me".into());
            stats.elect_leader = elect;
            let (tx, _) = watch::channel(false);
            let g = ClusterGate::new(LeadershipWatch::fixed(stats), tx, RecordsLink::new());
            assert_eq!(admissions(&g, "j"), expected, "electLeader: {elect}");
            assert_eq!(g.records().is_some(), elect, "records only under election");
            // With election the manager's absence names no leader.
            let (runner, owner) = if elect {
                (Runner::Unknown, Some(None))
            } else {
                (Runner::Here, None)
            };
            assert_eq!(g.runner(&job("Leader")), runner);
            assert_eq!(g.owner(&job("Leader")), owner);
        }
    }
}
