//! The view's rules, driven through the simulated cluster.

use super::*;
use proptest::prelude::*;

use crate::gossip::view::sim::*;

#[test]
fn a_full_mesh_agrees_on_one_leader() {
    let mut sim = Sim::new(3, Distribution::SingleLeader);
    sim.round(&all);
    // After one round each node sees the others agreed, but nobody has
    // yet been attested back: mutual agreement takes a second round.
    assert!(sim
        .views
        .iter()
        .all(|v| v.peers().iter().all(|p| p.status == Status::Agreed)));
    assert!(sim.leaders().is_empty());
    // Round two confirms the two-way edges, round three advertises them
    // (every body here is built before any poll of its round: the
    // slowest convergence a real cluster can see).
    sim.rounds(2, &all);
    assert_eq!(sim.leaders(), [0]);
    for v in &sim.views {
        assert_eq!(v.leader_name().as_deref(), Some("n0"));
        assert!(v.is_quorate() && !v.has_conflict());
        assert_eq!((v.cluster_size(), v.quorum()), (3, 2));
    }
    let view = sim.views[1].view(ID);
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(json["backend"], "gossip");
    assert_eq!(json["leader"], "n0");
    assert_eq!(json["is_leader"], false);
    assert_eq!(json["distribution"], "single-leader");
    assert_eq!(json["peers"][0]["status"], "agreed");
    assert_eq!(json["peers"][0]["last_seen"], "2025-06-15T15:08:10+00:00");
    // The documented members, in the documented order.
    let text = serde_json::to_string(&view).unwrap();
    let head = r#"{"backend":"gossip","node_name":"n1","job_set_id":"v1:same","cluster_size":3,"quorum":2,"elect_leader":true,"distribution":"single-leader","conflict":false,"conflict_names":[],"size_conflict":false,"conflicting_sizes":[],"policy_conflict":false,"conflicting_policies":[],"candidates_truncated":0,"quorate":true,"leader":"n0","is_leader":false,"peers":[{"host":"h0","status":"agreed","job_set_id":"v1:same","node_name":"n0","last_seen":"2025-06-15T15:08:10+00:00","last_error":null,"mismatch_streak":0},"#;
    assert!(text.starts_with(head), "{text}");
}

#[test]
fn killing_the_leader_moves_leadership_and_a_minority_stands_down() {
    let mut sim = Sim::new(3, Distribution::SingleLeader);
    sim.rounds(3, &all);
    assert_eq!(sim.leaders(), [0]);
    // n0 dies. For one round the survivors still read n0 as quorate
    // in each other's (pre-death) gossip and defer to it: the page's
    // transient skip, never a double run. The next round n1 leads.
    let dead0 = |i: usize, j: usize| i != 0 && j != 0;
    sim.round(&dead0);
    assert!(sim.leaders().is_empty());
    sim.round(&dead0);
    assert_eq!(sim.leaders(), [1]);
    // n1 dies too: n2 alone is a minority and runs no Leader job, but
    // still runs PreferLeader jobs.
    let only2 = |_: usize, _: usize| false;
    sim.round(&only2);
    assert!(!sim.views[2].is_quorate());
    assert_eq!(sim.views[2].leader_name(), None);
    assert_eq!(sim.views[2].job_owner("j"), None);
    assert!(sim.views[2].is_available_leader());
    assert!(!sim.views[2].view(ID).quorate);
}

#[test]
fn spread_gives_every_job_exactly_one_owner() {
    let mut sim = Sim::new(5, Distribution::Spread);
    sim.rounds(3, &all);
    let jobs: Vec<String> = (0..200).map(|i| format!("job-{i}")).collect();
    let mut per_node = vec![0; 5];
    for job in &jobs {
        let owners: Vec<usize> = (0..5).filter(|i| sim.views[*i].is_job_owner(job)).collect();
        assert_eq!(owners.len(), 1, "{job}: {owners:?}");
        per_node[owners[0]] += 1;
        let named: BTreeSet<Option<String>> = sim.views.iter().map(|v| v.job_owner(job)).collect();
        assert_eq!(named.len(), 1, "{job}: {named:?}");
    }
    assert!(per_node.iter().all(|n| *n > 10), "{per_node:?}");
    let view = sim.views[0].view(ID);
    assert_eq!(
        (view.leader, view.is_leader, view.quorate),
        (None, false, true)
    );
    // Losing n4 moves only n4's jobs. While n4's death spreads through
    // the gossip (two hops of stale vouching), its jobs may be skipped
    // but no job ever has two owners.
    let before: Vec<Option<String>> = jobs.iter().map(|j| sim.views[0].job_owner(j)).collect();
    let without4 = |i: usize, j: usize| i != 4 && j != 4;
    for _ in 0..3 {
        sim.round(&without4);
        for job in &jobs {
            let owners = (0..4).filter(|i| sim.views[*i].is_job_owner(job)).count();
            assert!(owners <= 1, "{job}");
        }
    }
    for (job, was) in jobs.iter().zip(before) {
        let now = sim.views[0].job_owner(job);
        if was.as_deref() != Some("n4") {
            assert_eq!(now, was, "{job}");
        }
        let owners = (0..4).filter(|i| sim.views[*i].is_job_owner(job)).count();
        assert_eq!(owners, 1, "{job}");
    }
}

#[test]
fn drift_is_debounced_and_failures_neither_advance_nor_reset_it() {
    let me = identity("a", Distribution::SingleLeader);
    let mut view = ClusterView::new(me, ["hb".to_owned()]);
    let peer = |id: &str| {
        Observation::Payload(Box::new(PeerPayload {
            node_name: Some("b".into()),
            instance_id: Some("ib".into()),
            job_set_id: Some(id.into()),
            scheme_version: Some("v1".into()),
            ..PeerPayload::default()
        }))
    };
    let status = |v: &ClusterView| (v.peers()[0].status, v.peers()[0].mismatch_streak);
    assert_eq!(status(&view), (Status::Unknown, 0));
    view.observe("hb", peer("v1:other"), ID, at(1));
    assert_eq!(status(&view), (Status::Syncing, 1));
    view.observe("hb", peer("v1:other"), ID, at(2));
    assert_eq!(status(&view), (Status::Syncing, 2));
    view.observe("hb", Observation::Unreachable("timeout".into()), ID, at(3));
    assert_eq!(status(&view), (Status::Unreachable, 2));
    view.observe("hb", Observation::NotModified, ID, at(4));
    assert_eq!(status(&view), (Status::Drifted, 3));
    assert_eq!(view.peers()[0].last_error, None);
    view.observe("hb", peer(ID), ID, at(5));
    assert_eq!(status(&view), (Status::Agreed, 0));
    // A different fingerprint scheme drifts at once.
    view.observe(
        "hb",
        Observation::Payload(Box::new(PeerPayload {
            node_name: Some("b".into()),
            job_set_id: Some("v2:x".into()),
            scheme_version: Some("v2".into()),
            ..PeerPayload::default()
        })),
        ID,
        at(6),
    );
    assert_eq!(status(&view), (Status::Drifted, 0));
    assert_eq!(
        view.peers()[0].last_error.as_deref(),
        Some("fingerprint scheme mismatch: 'v2' != 'v1'")
    );
    view.observe(
        "hb",
        Observation::Untrusted("certificate verify failed".into()),
        ID,
        at(7),
    );
    assert_eq!(status(&view).0, Status::Untrusted);
    view.observe(
        "hb",
        Observation::Invalid("invalid JSON in /peer response".into()),
        ID,
        at(8),
    );
    assert_eq!(status(&view).0, Status::Unreachable);
    assert_eq!(
        view.observe("nowhere", Observation::NotModified, ID, at(9)),
        None
    );
}

#[test]
fn an_unsolicited_304_is_a_failure() {
    let mut view = ClusterView::new(identity("a", Distribution::SingleLeader), ["hb".to_owned()]);
    view.observe("hb", Observation::NotModified, ID, at(1));
    assert_eq!(view.peers()[0].status, Status::Unreachable);
    assert_eq!(
        view.peers()[0].last_error.as_deref(),
        Some("unsolicited 304 to an unconditional /peer poll")
    );
}

fn payload(name: &str, instance: &str) -> PeerPayload {
    PeerPayload {
        node_name: Some(name.into()),
        instance_id: Some(instance.into()),
        job_set_id: Some(ID.into()),
        scheme_version: Some("v1".into()),
        members: Some(vec![
            Member {
                node_name: name.into(),
                instance_id: instance.into(),
                agreed: true,
            },
            Member {
                node_name: "a".into(),
                instance_id: "inst-a".into(),
                agreed: true,
            },
        ]),
        cluster_size: Some(3),
        distribution: Some("single-leader".into()),
        elect_leader: Some(true),
        ..PeerPayload::default()
    }
}

fn three() -> ClusterView {
    ClusterView::new(
        identity("a", Distribution::SingleLeader),
        ["hb".to_owned(), "hc".to_owned()],
    )
}

#[test]
fn a_duplicate_node_name_is_a_conflict() {
    let mut view = three();
    view.observe(
        "hb",
        Observation::Payload(Box::new(payload("a", "inst-other"))),
        ID,
        at(1),
    );
    view.observe(
        "hc",
        Observation::Payload(Box::new(payload("c", "ic"))),
        ID,
        at(1),
    );
    assert_eq!(view.peers()[0].status, Status::Conflict);
    assert_eq!(
        view.peers()[0].last_error.as_deref(),
        Some("duplicate nodeName 'a': peer is a different instance")
    );
    assert_eq!(view.conflict_names(), ["a"]);
    assert!(view.has_conflict());
    let json = serde_json::to_value(view.view(ID)).unwrap();
    assert_eq!(json["conflict"], true);
    assert_eq!(json["conflict_names"], serde_json::json!(["a"]));
    assert_eq!(json["peers"][0]["status"], "conflict");
}

#[test]
fn a_transitive_duplicate_needs_two_witnesses() {
    let mut view = three();
    let mut b = payload("b", "ib");
    b.members.as_mut().unwrap().push(Member {
        node_name: "x".into(),
        instance_id: "x1".into(),
        agreed: true,
    });
    b.members.as_mut().unwrap().push(Member {
        node_name: "x".into(),
        instance_id: "x2".into(),
        agreed: true,
    });
    view.observe("hb", Observation::Payload(Box::new(b.clone())), ID, at(1));
    view.observe(
        "hc",
        Observation::Payload(Box::new(payload("c", "ic"))),
        ID,
        at(1),
    );
    // One peer alone claims "x" runs twice: not credible.
    assert!(view.conflict_names().is_empty());
    let mut c = payload("c", "ic");
    c.members = b.members.clone();
    view.observe("hc", Observation::Payload(Box::new(c)), ID, at(2));
    assert_eq!(view.conflict_names(), ["x"]);
    // The witnesses going stale clears it.
    view.observe("hc", Observation::Unreachable("down".into()), ID, at(3));
    assert!(view.conflict_names().is_empty());
}

#[test]
fn size_and_policy_disagreements_are_conflicts_and_do_not_count() {
    let mut view = three();
    let mut b = payload("b", "ib");
    b.cluster_size = Some(5);
    let mut c = payload("c", "ic");
    c.distribution = Some("spread".into());
    c.elect_leader = Some(false);
    view.observe("hb", Observation::Payload(Box::new(b)), ID, at(1));
    view.observe("hc", Observation::Payload(Box::new(c)), ID, at(1));
    assert_eq!(view.conflicting_sizes(), [5]);
    assert_eq!(
        view.conflicting_policies(),
        [
            "distribution 'spread' != 'single-leader'",
            "electLeader False != True"
        ]
    );
    assert!(view.has_conflict());
    assert!(view.agreeing_peer_names().is_empty());
    assert!(!view.is_quorate());
    let json = serde_json::to_value(view.view(ID)).unwrap();
    assert_eq!(
        (
            json["size_conflict"].clone(),
            json["policy_conflict"].clone()
        ),
        (true.into(), true.into())
    );
    // A peer too old to declare these fields is no evidence either way.
    let mut legacy = payload("c", "ic");
    legacy.cluster_size = None;
    legacy.distribution = None;
    legacy.elect_leader = None;
    view.observe("hc", Observation::Payload(Box::new(legacy)), ID, at(2));
    assert!(view.conflicting_policies().is_empty());
    assert_eq!(view.agreeing_peer_names(), ["c"]);
}

#[test]
fn agreement_must_be_two_way_except_for_legacy_peers() {
    let mut view = three();
    let mut b = payload("b", "ib");
    b.members.as_mut().unwrap().retain(|m| m.node_name != "a");
    view.observe("hb", Observation::Payload(Box::new(b.clone())), ID, at(1));
    assert_eq!(view.peers()[0].status, Status::Agreed);
    assert!(view.agreeing_peer_names().is_empty());
    b.members = None;
    view.observe("hb", Observation::Payload(Box::new(b)), ID, at(2));
    assert_eq!(view.agreeing_peer_names(), ["b"]);
}

#[test]
fn self_listing_and_multi_homed_peers_shrink_the_cluster() {
    let mut view = ClusterView::new(
        identity("a", Distribution::SingleLeader),
        ["hb".to_owned(), "hb2".to_owned(), "hself".to_owned()],
    );
    assert_eq!(view.cluster_size(), 4);
    view.observe(
        "hself",
        Observation::Payload(Box::new(payload("a", "inst-a"))),
        ID,
        at(1),
    );
    assert_eq!(view.peers()[2].status, Status::SelfNode);
    assert_eq!(view.cluster_size(), 3);
    // A hairpin failure keeps it "self".
    view.observe(
        "hself",
        Observation::Unreachable("refused".into()),
        ID,
        at(2),
    );
    assert_eq!(view.peers()[2].status, Status::SelfNode);
    // One node at two addresses counts once, also while it is down.
    let mut b2 = payload("b", "ib");
    b2.cluster_size = Some(2);
    view.observe("hb", Observation::Payload(Box::new(b2.clone())), ID, at(3));
    view.observe("hb2", Observation::Payload(Box::new(b2.clone())), ID, at(3));
    assert_eq!(view.cluster_size(), 2);
    assert_eq!(view.agreeing_peer_names(), ["b"]);
    view.observe("hb", Observation::Unreachable("down".into()), ID, at(4));
    view.observe("hb2", Observation::Unreachable("down".into()), ID, at(4));
    assert_eq!(view.cluster_size(), 2);
    assert!(!view.conflict_names().contains(&"a".to_owned()));
}

#[test]
fn never_skip_gates_wait_for_the_view_to_settle() {
    let mut sim = Sim::new(3, Distribution::SingleLeader);
    assert!(!sim.views[0].is_available_leader(), "unpolled peers");
    sim.round(&all);
    // Peers agreed but have not yet listed this instance back.
    assert!(!sim.views[0].settled());
    sim.round(&all);
    assert!(sim.views[0].is_available_leader());
    assert!(!sim.views[1].is_available_leader());
    let mut sim = Sim::new(3, Distribution::Spread);
    sim.rounds(2, &all);
    for i in 0..50 {
        let job = format!("j{i}");
        let runners = (0..3)
            .filter(|n| sim.views[*n].is_available_job_owner(&job))
            .count();
        assert_eq!(runners, 1, "{job}");
    }
}

#[test]
fn a_304_replays_the_body_and_ages_summaries_from_receipt() {
    let mut view = three();
    let mut b = payload("b", "ib");
    b.job_summaries = Some(
        [(
            "backup".to_owned(),
            JobSummary {
                running: false,
                enabled: true,
                scheduled_in: Some(100.0),
                last: None,
            },
        )]
        .into(),
    );
    view.observe("hb", Observation::Payload(Box::new(b)), ID, at(10));
    view.observe("hb", Observation::NotModified, ID, at(40));
    let peer = &view.peers()[0];
    assert_eq!(peer.status, Status::Agreed);
    assert_eq!(peer.last_seen, Some(at(40).wall));
    let aged = peer.aged_summaries(Duration::from_secs(70)).unwrap();
    assert_eq!(aged["backup"].scheduled_in, Some(40.0));
    let aged = peer.aged_summaries(Duration::from_secs(500)).unwrap();
    assert_eq!(aged["backup"].scheduled_in, Some(0.0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any split of a cluster into two sides that cannot see each other
    /// (nodes may also be down): at most one leader overall, exactly one
    /// when some side is a majority; under spread each job at most one
    /// owner, exactly one with a majority side.
    #[test]
    fn partitions_never_elect_two_leaders(n in 1usize..8, side in proptest::collection::vec(0u8..3, 8), spread in any::<bool>()) {
        let distribution = if spread { Distribution::Spread } else { Distribution::SingleLeader };
        let mut sim = Sim::new(n, distribution);
        sim.rounds(3, &all);
        // side 2 = down; sides 0 and 1 see only their own side.
        let link = |i: usize, j: usize| side[i] != 2 && side[j] != 2 && side[i] == side[j];
        sim.rounds(3, &link);
        let majority = (0..2u8).any(|s| (0..n).filter(|i| side[*i] == s).count() > n / 2);
        let up: Vec<usize> = (0..n).filter(|i| side[*i] != 2).collect();
        if spread {
            for k in 0..20 {
                let job = format!("job-{k}");
                let owners = up.iter().filter(|i| sim.views[**i].is_job_owner(&job)).count();
                prop_assert!(owners <= 1);
                prop_assert_eq!(owners == 1, majority);
            }
        } else {
            let leaders: Vec<usize> = sim.leaders().into_iter().filter(|i| side[*i] != 2).collect();
            prop_assert!(leaders.len() <= 1, "{:?}", leaders);
            prop_assert_eq!(leaders.len() == 1, majority);
        }
    }

    /// Nodes killed and started again (a new process under the old
    /// name) while the others' rounds run unsynchronized, in any
    /// interleaving: after every single round, at most one node would
    /// launch a `Leader` fire (single-leader), or a given job (spread),
    /// by the gate's rule (elected, vouched for, no conflict). Dead
    /// nodes launch nothing. Once everyone is up again and a few
    /// rounds pass, exactly one does: the hold never wedges.
    #[test]
    fn restarts_in_unsynchronized_rounds_never_give_two_runners(
        five in any::<bool>(),
        spread in any::<bool>(),
        steps in proptest::collection::vec((0u8..8, 0usize..5), 1..160),
    ) {
        let n = if five { 5 } else { 3 };
        let distribution = if spread { Distribution::Spread } else { Distribution::SingleLeader };
        let mut sim = Sim::new(n, distribution);
        sim.rounds(3, &all);
        let jobs: Vec<String> = (0..8).map(|k| format!("job-{k}")).collect();
        let mut down: Vec<bool> = vec![false; n];
        let check = |sim: &Sim, down: &[bool]| -> Result<(), TestCaseError> {
            if spread {
                for job in &jobs {
                    let owners: Vec<usize> = sim.acting_owners(job).into_iter().filter(|i| !down[*i]).collect();
                    prop_assert!(owners.len() <= 1, "{} owned by {:?}", job, owners);
                }
            } else {
                let leaders: Vec<usize> = sim.acting_leaders().into_iter().filter(|i| !down[*i]).collect();
                prop_assert!(leaders.len() <= 1, "leaders {:?}", leaders);
            }
            Ok(())
        };
        check(&sim, &down)?;
        for (op, node) in steps {
            let node = node % n;
            match op {
                // Kill: at most a minority down at once.
                0 if 2 * (down.iter().filter(|d| **d).count() + 1) < n => {
                    down[node] = true;
                }
                // Start again (a new instance), or restart at once.
                1 => {
                    down[node] = false;
                    sim.restart(node);
                }
                _ if !down[node] => {
                    let dead = down.clone();
                    sim.round_of(node, &|i, j| !dead[i] && !dead[j]);
                }
                _ => {}
            }
            check(&sim, &down)?;
        }
        for (i, dead) in down.iter().enumerate() {
            if *dead {
                sim.restart(i);
            }
        }
        sim.rounds(4, &all);
        if spread {
            for job in &jobs {
                prop_assert_eq!(sim.acting_owners(job).len(), 1, "{}", job);
            }
        } else {
            prop_assert_eq!(sim.acting_leaders().len(), 1);
        }
    }
}
