//! The gossip backend, black-box: real daemons (the built binary) on
//! 127.0.0.1, each with its own mTLS `/peer` listener and certificates
//! made at test time, polling each other every second. Each runs `Leader`
//! jobs that append "<node> <job> <epoch second>" to one shared file; the
//! tests read that file, `GET /cluster`, `GET /jobs` and `/metrics`, and
//! kill (SIGKILL) or freeze (SIGSTOP) nodes for real. A fake peer (a TLS
//! server of the test's own, certificate from the test CA) plays a hostile
//! member, and certificates are rotated in place under running daemons.
//!
//! The job set must be the same on every node (peers compare job-set ids),
//! so the command reads the node's name from a file in its own directory.
//! Waits are deadlines, never fixed speed assertions.

mod support;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::certs::Ca;
use support::cluster::{agreed_leader, logs, Member};
use support::daemon::{read_lines, Daemon};
use support::http::{free_port, get, wait_listening};
use support::kube_daemon::wait_until;

const PATIENCE: Duration = Duration::from_secs(40);
/// `interval` and `connectTimeout` of every node here.
const INTERVAL: u64 = 1;
const CONNECT_TIMEOUT: u64 = 1;

/// One planned member: its name, web port and peer port.
#[derive(Clone)]
struct Plan {
    name: &'static str,
    web: u16,
    peer: u16,
}

/// The cluster tests' member (a daemon with a web port).
type Node = Member;

/// What differs between the clusters of the tests.
#[derive(Clone, Copy, Default)]
struct Options {
    spread: bool,
    /// Jobs (names `j0`..), all `Leader`.
    jobs: usize,
}

fn config(
    me: &Plan,
    plans: &[Plan],
    tls: &Path,
    shared: &Path,
    extra_peers: &[u16],
    opts: Options,
) -> String {
    let mut peers = String::new();
    for p in plans.iter().filter(|p| p.peer != me.peer) {
        peers.push_str(&format!("    - host: '127.0.0.1:{}'\n", p.peer));
    }
    for port in extra_peers {
        peers.push_str(&format!("    - host: '127.0.0.1:{port}'\n"));
    }
    let tls = tls.display();
    let shared = shared.display();
    let mut jobs = String::new();
    for j in 0..opts.jobs.max(1) {
        jobs.push_str(&format!(
            "  - name: j{j}\n    command: \"echo $(cat node) j{j} $(date +%s) >> {shared}/runs\"\n    \
             schedule: \"* * * * * * *\"\n    clusterPolicy: Leader\n"
        ));
    }
    format!(
        "web:\n  listen:\n    - http://127.0.0.1:{web}\n\
         cluster:\n  backend: gossip\n  nodeName: {name}\n  listen: '127.0.0.1:{peer}'\n  \
         electLeader: true\n  distribution: {dist}\n  interval: {INTERVAL}\n  \
         connectTimeout: {CONNECT_TIMEOUT}\n  tls:\n    ca: {tls}/ca.pem\n    \
         cert: {tls}/cert.pem\n    key: {tls}/key.pem\n  peers:\n{peers}\
         jobs:\n{jobs}",
        web = me.web,
        name = me.name,
        peer = me.peer,
        dist = if opts.spread {
            "spread"
        } else {
            "single-leader"
        },
    )
}

fn plan(names: &[&'static str]) -> Vec<Plan> {
    names
        .iter()
        .map(|name| Plan {
            name,
            web: free_port(),
            peer: free_port(),
        })
        .collect()
}

impl Node {
    fn start(me: &Plan, config: &str) -> Node {
        let daemon = Daemon::start(config);
        std::fs::write(daemon.path("node"), me.name).expect("node file");
        wait_listening(me.web, PATIENCE);
        Node {
            name: me.name,
            web: me.web,
            daemon: Some(daemon),
        }
    }
}

/// (node, job, second) of every line of the shared file.
fn runs(shared: &Path) -> Vec<(String, String, u64)> {
    read_lines(&shared.join("runs"))
        .iter()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            Some((
                parts.next()?.to_owned(),
                parts.next()?.to_owned(),
                parts.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// (job, second) pairs that more than one node ran.
fn doubles(shared: &Path) -> Vec<(String, u64, BTreeSet<String>)> {
    let mut by: BTreeMap<(String, u64), BTreeSet<String>> = BTreeMap::new();
    for (node, job, second) in runs(shared) {
        by.entry((job, second)).or_default().insert(node);
    }
    by.into_iter()
        .filter(|(_, nodes)| nodes.len() > 1)
        .map(|((job, second), nodes)| (job, second, nodes))
        .collect()
}

fn lines_by(shared: &Path, node: &str) -> usize {
    runs(shared).iter().filter(|(n, _, _)| n == node).count()
}

/// Where a member's TLS files live (its certificate is issued at start).
fn tls_dir(shared: &Path, me: &Plan) -> PathBuf {
    shared.join(format!("tls-{}-{}", me.name, me.peer))
}

fn start_cluster(names: &[&'static str], shared: &Path, opts: Options) -> (Vec<Node>, Ca) {
    let ca = Ca::new();
    let nodes = start_planned(&plan(names), &ca, shared, &[], opts);
    (nodes, ca)
}

/// One config per plan, each with a certificate from `ca`, listing the
/// others and `extra_peers` as its peers.
fn planned_configs(
    plans: &[Plan],
    ca: &Ca,
    shared: &Path,
    extra_peers: &[u16],
    opts: Options,
) -> Vec<String> {
    plans
        .iter()
        .map(|p| {
            let tls = ca.files(ca, &tls_dir(shared, p));
            config(p, plans, &tls, shared, extra_peers, opts)
        })
        .collect()
}

/// Starts one member per plan (see [`planned_configs`]).
fn start_planned(
    plans: &[Plan],
    ca: &Ca,
    shared: &Path,
    extra_peers: &[u16],
    opts: Options,
) -> Vec<Node> {
    start_configs(
        plans,
        &planned_configs(plans, ca, shared, extra_peers, opts),
    )
}

/// Starts plan i on config i.
fn start_configs(plans: &[Plan], configs: &[String]) -> Vec<Node> {
    plans
        .iter()
        .zip(configs)
        .map(|(p, c)| Node::start(p, c))
        .collect()
}

#[test]
fn three_daemons_run_leader_jobs_once_and_a_killed_leader_is_replaced() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let (mut nodes, _ca) = start_cluster(&["a", "b", "c"], &shared, Options::default());

    let mut first = 0;
    wait_until(
        "the three nodes to agree on one leader",
        PATIENCE,
        || agreed_leader(&nodes).map(|l| first = l).is_some(),
        || logs(&nodes),
    );
    // The lowest name leads a converged cluster.
    assert_eq!(nodes[first].name, "a");
    for node in &nodes {
        let view = node.cluster();
        assert_eq!(view["backend"], "gossip", "{view}");
        assert_eq!(view["enabled"], true);
        assert_eq!(view["cluster_size"], 3);
        assert_eq!(view["quorum"], 2);
        assert_eq!(view["conflict"], false);
        let statuses: Vec<&str> = view["peers"]
            .as_array()
            .expect("peers")
            .iter()
            .filter_map(|p| p["status"].as_str())
            .collect();
        assert_eq!(statuses, ["agreed", "agreed"], "{view}");
        let metrics = get(node.web, "/metrics").body;
        assert!(
            metrics.contains("cronstable_cluster_peers{status=\"agreed\"} 2"),
            "{metrics}"
        );
        assert!(metrics.contains("cronstable_cluster_size 3"), "{metrics}");
        assert!(
            metrics.contains("cronstable_cluster_conflict{kind=\"nodename\"} 0"),
            "{metrics}"
        );
    }
    let seen = lines_by(&shared, "a");
    wait_until(
        "the leader to run its job three more times",
        PATIENCE,
        || lines_by(&shared, "a") >= seen + 3,
        || logs(&nodes),
    );
    let others: Vec<_> = runs(&shared)
        .into_iter()
        .filter(|(n, _, _)| n != "a")
        .collect();
    assert!(
        others.is_empty(),
        "only the leader runs: {others:?}\n{}",
        logs(&nodes)
    );
    assert!(nodes[0].log().contains("serving mTLS /peer on 127.0.0.1:"));
    assert!(nodes[0]
        .log()
        .contains("cluster: this node acquired scheduled-job leadership"));

    // SIGKILL the leader: the survivors notice at their next poll and
    // re-elect (documented bound: about one interval plus a poll timeout;
    // asserted with generous slack, and printed).
    let killed = Instant::now();
    kill(&mut nodes, first);
    let mut second = 0;
    wait_until(
        "the survivors to agree on a new leader",
        PATIENCE,
        || agreed_leader(&nodes).map(|l| second = l).is_some(),
        || logs(&nodes),
    );
    let takeover = killed.elapsed();
    eprintln!("measured gossip takeover after SIGKILL: {takeover:?}");
    assert_eq!(nodes[second].name, "b");
    assert!(
        takeover <= takeover_deadline(),
        "takeover took {takeover:?}"
    );
    let seen = lines_by(&shared, "b");
    wait_until(
        "the new leader to run the job",
        PATIENCE,
        || lines_by(&shared, "b") >= seen + 2,
        || logs(&nodes),
    );
    let view = nodes[2].cluster();
    let dead = view["peers"]
        .as_array()
        .expect("peers")
        .iter()
        .find(|p| p["node_name"] == "a")
        .cloned()
        .unwrap_or_default();
    assert_eq!(dead["status"], "unreachable", "{view}");
    assert!(
        doubles(&shared).is_empty(),
        "no second ran twice: {:?}",
        doubles(&shared)
    );
}

/// The failover benchmark's double run: the runner killed and started
/// again at once (a new process under the same name), six times at
/// different phases of the second. The node that took over hands back to
/// the restarted lower name only after it has stepped down (the hold of
/// `ClusterView::vouched`), so no second runs twice, and the job keeps
/// running.
#[test]
fn a_runner_restarted_at_once_takes_over_again_without_a_double_run() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let ca = Ca::new();
    let plans = plan(&["a", "b", "c"]);
    // Kept to start a killed node again with the same config.
    let configs = planned_configs(&plans, &ca, &shared, &[], Options::default());
    let mut nodes = start_configs(&plans, &configs);
    wait_until(
        "a to lead the converged cluster",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0) && lines_by(&shared, "a") >= 2,
        || logs(&nodes),
    );
    for cycle in 0..6u64 {
        std::thread::sleep(Duration::from_millis(1000 + 170 * cycle));
        let runner = runs(&shared).last().map(|(n, _, _)| n.clone());
        let index = nodes
            .iter()
            .position(|n| Some(n.name) == runner.as_deref())
            .expect("the newest fire names a node");
        kill(&mut nodes, index);
        nodes[index] = Node::start(&plans[index], &configs[index]);
        let seen = runs(&shared).len();
        wait_until(
            "the job to run three more times after the restart",
            PATIENCE,
            || runs(&shared).len() >= seen + 3,
            || logs(&nodes),
        );
    }
    wait_until(
        "a to lead again",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    assert!(
        doubles(&shared).is_empty(),
        "no second ran twice: {:?}\n{}",
        doubles(&shared),
        logs(&nodes)
    );
}

#[test]
fn a_frozen_node_runs_nothing_until_it_re_agrees() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let (nodes, _ca) = start_cluster(&["a", "b", "c"], &shared, Options::default());
    wait_until(
        "one agreed leader",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    // Freeze the leader: the other two are a majority and keep one leader.
    let frozen = nodes[0].daemon.as_ref().expect("a runs");
    frozen.signal(nix::sys::signal::Signal::SIGSTOP);
    wait_until(
        "b to lead while a is frozen",
        PATIENCE,
        || {
            let b = nodes[1].cluster();
            let c = nodes[2].cluster();
            b["is_leader"] == true && c["leader"] == "b" && c["is_leader"] == false
        },
        || logs(&nodes),
    );
    let seen = lines_by(&shared, "b");
    wait_until(
        "b to run the job",
        PATIENCE,
        || lines_by(&shared, "b") >= seen + 3,
        || logs(&nodes),
    );
    let frozen_lines = lines_by(&shared, "a");
    // Thaw: a's view is stale and its peers do not vouch for it yet, so it
    // runs nothing until it has re-agreed; then it leads again (lowest
    // name) and b stands down, with no second run twice.
    frozen.signal(nix::sys::signal::Signal::SIGCONT);
    wait_until(
        "a to lead again",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    let seen = lines_by(&shared, "a");
    wait_until(
        "a to run the job again",
        PATIENCE,
        || lines_by(&shared, "a") >= seen + 2,
        || logs(&nodes),
    );
    assert!(lines_by(&shared, "a") > frozen_lines);
    assert!(
        doubles(&shared).is_empty(),
        "no second ran on two nodes: {:?}\n{}",
        doubles(&shared),
        logs(&nodes)
    );
}

/// Asserts that no line is added over `seconds` seconds (every job here
/// fires every second, so a running gate would add some).
fn assert_no_runs_for(shared: &Path, nodes: &[Node], seconds: u64) {
    let before = runs(shared).len();
    std::thread::sleep(Duration::from_secs(seconds));
    let after = runs(shared).len();
    assert_eq!(
        before,
        after,
        "Leader jobs ran during a conflict\n{}",
        logs(nodes)
    );
}

#[test]
fn a_duplicate_node_name_stands_leader_jobs_down_everywhere() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    // Two members both named "a".
    let (nodes, _ca) = start_cluster(&["a", "b", "a"], &shared, Options::default());
    wait_until(
        "every node to see the duplicate name",
        PATIENCE,
        || {
            nodes.iter().all(|n| {
                let v = n.cluster();
                v["conflict"] == true && v["conflict_names"] == serde_json::json!(["a"])
            })
        },
        || logs(&nodes),
    );
    assert_no_runs_for(&shared, &nodes, 4);
    assert!(runs(&shared).is_empty(), "{:?}", runs(&shared));
    let metrics = get(nodes[1].web, "/metrics").body;
    assert!(
        metrics.contains("cronstable_cluster_conflict{kind=\"nodename\"} 1"),
        "{metrics}"
    );
    assert!(nodes[1]
        .log()
        .contains("cluster: duplicate nodeName detected (a) -- Leader jobs will stand down"));
}

#[test]
fn a_differing_cluster_size_stands_leader_jobs_down_everywhere() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let ca = Ca::new();
    let plans = plan(&["a", "b", "c"]);
    // c lists one more (absent) peer: it declares 4, the others 3.
    let ghost = free_port();
    let nodes: Vec<Node> = plans
        .iter()
        .map(|p| {
            let tls = ca.files(&ca, &shared.join(format!("tls-{}", p.name)));
            let extra: &[u16] = if p.name == "c" { &[ghost] } else { &[] };
            Node::start(
                p,
                &config(p, &plans, &tls, &shared, extra, Options::default()),
            )
        })
        .collect();
    wait_until(
        "a and b to see the size conflict",
        PATIENCE,
        || {
            nodes[..2].iter().all(|n| {
                let v = n.cluster();
                v["size_conflict"] == true && v["conflicting_sizes"] == serde_json::json!([4])
            })
        },
        || logs(&nodes),
    );
    assert_no_runs_for(&shared, &nodes, 4);
    assert!(runs(&shared).is_empty(), "{:?}", runs(&shared));
    assert!(nodes[0].log().contains(
        "cluster: cluster-size disagreement -- agreeing peers declare 4 but we declare 3"
    ));
}

#[test]
fn a_node_with_a_certificate_from_another_ca_is_untrusted_and_ignored() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let ca = Ca::new();
    let rogue = Ca::new();
    let plans = plan(&["a", "b", "c"]);
    let nodes: Vec<Node> = plans
        .iter()
        .map(|p| {
            // "a" (the name that would lead) has a certificate from a CA
            // the others do not trust, and trusts only that CA.
            let tls = if p.name == "a" {
                rogue.files(&rogue, &shared.join("tls-a"))
            } else {
                ca.files(&ca, &shared.join(format!("tls-{}", p.name)))
            };
            Node::start(
                p,
                &config(p, &plans, &tls, &shared, &[], Options::default()),
            )
        })
        .collect();
    wait_until(
        "b and c to agree on b, with a untrusted",
        PATIENCE,
        || {
            let b = nodes[1].cluster();
            let c = nodes[2].cluster();
            let a_row = c["peers"]
                .as_array()
                .and_then(|p| {
                    p.iter()
                        .find(|r| {
                            r["host"]
                                .as_str()
                                .is_some_and(|h| h.ends_with(&format!(":{}", plans[0].peer)))
                        })
                        .cloned()
                })
                .unwrap_or_default();
            b["is_leader"] == true && c["leader"] == "b" && a_row["status"] == "untrusted"
        },
        || logs(&nodes),
    );
    let seen = lines_by(&shared, "b");
    wait_until(
        "b to run the job",
        PATIENCE,
        || lines_by(&shared, "b") >= seen + 3,
        || logs(&nodes),
    );
    let a = nodes[0].cluster();
    assert_eq!(a["quorate"], false, "{a}");
    assert_eq!(lines_by(&shared, "a"), 0, "the untrusted node ran nothing");
    assert_eq!(lines_by(&shared, "c"), 0);
    assert!(nodes[1]
        .log()
        .contains("is untrusted -- TLS/cert verification failed"));
}

#[test]
fn spread_runs_each_job_on_exactly_one_node_and_names_its_owner() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let opts = Options {
        spread: true,
        jobs: 6,
    };
    let (nodes, _ca) = start_cluster(&["a", "b", "c"], &shared, opts);
    // Every node names the same owner for every job.
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    wait_until(
        "the nodes to agree on every job's owner",
        PATIENCE,
        || {
            let mut seen: Vec<BTreeMap<String, String>> = Vec::new();
            for n in &nodes {
                let jobs = get(n.web, "/jobs").json();
                let mut map = BTreeMap::new();
                for job in jobs.as_array().into_iter().flatten() {
                    if let (Some(name), Some(owner)) =
                        (job["name"].as_str(), job["clusterOwner"].as_str())
                    {
                        map.insert(name.to_owned(), owner.to_owned());
                    }
                }
                seen.push(map);
            }
            let agreed = seen.iter().all(|m| m.len() == 6 && *m == seen[0]);
            if agreed {
                owners = seen[0].clone();
            }
            agreed
        },
        || logs(&nodes),
    );
    for n in &nodes {
        let v = n.cluster();
        assert_eq!(v["distribution"], "spread");
        assert_eq!(v["leader"], Value::Null);
        assert_eq!(v["is_leader"], false);
        assert_eq!(v["quorate"], true, "{v}");
    }
    let start = runs(&shared).len();
    wait_until(
        "each job to run a few times",
        PATIENCE,
        || runs(&shared).len() >= start + 6 * 3,
        || logs(&nodes),
    );
    // After agreement, each job ran only on its owner.
    let later: Vec<_> = runs(&shared).into_iter().skip(start).collect();
    for (node, job, second) in &later {
        assert_eq!(
            owners.get(job),
            Some(node),
            "{job} at {second} ran on {node}, owners {owners:?}"
        );
    }
    let distinct: BTreeSet<&String> = owners.values().collect();
    assert!(
        distinct.len() >= 2,
        "six jobs spread over more than one node: {owners:?}"
    );
    assert!(doubles(&shared).is_empty(), "{:?}", doubles(&shared));
}

/// The row of `fleet`'s nodes whose host ends in `:port`, or this node's
/// own row for `None`.
fn fleet_row(fleet: &Value, port: Option<u16>) -> Value {
    fleet["nodes"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| match port {
                    None => r["self"] == true,
                    Some(port) => r["host"]
                        .as_str()
                        .is_some_and(|h| h.ends_with(&format!(":{port}"))),
                })
                .cloned()
        })
        .unwrap_or_default()
}

#[test]
fn the_fleet_view_shows_what_every_node_runs_from_any_node() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let opts = Options {
        spread: true,
        jobs: 6,
    };
    let ca = Ca::new();
    let plans = plan(&["a", "b", "c"]);
    let nodes = start_planned(&plans, &ca, &shared, &[], opts);
    // Who owns what once all three agree, as every node's /jobs says.
    let owners_seen_by = |node: &Node| -> BTreeMap<String, String> {
        get(node.web, "/jobs")
            .json()
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|j| {
                Some((
                    j["name"].as_str()?.into(),
                    j["clusterOwner"].as_str()?.into(),
                ))
            })
            .collect()
    };
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    wait_until(
        "the three nodes to agree and name the same owners",
        PATIENCE,
        || {
            let all_agreed = nodes.iter().all(|n| {
                let view = n.cluster();
                view["quorate"] == true
                    && view["peers"]
                        .as_array()
                        .is_some_and(|p| p.iter().all(|r| r["status"] == "agreed"))
            });
            let seen: Vec<_> = nodes.iter().map(owners_seen_by).collect();
            owners = seen[0].clone();
            all_agreed && owners.len() == 6 && seen.iter().all(|o| *o == owners)
        },
        || logs(&nodes),
    );
    // Every node's /fleet shows all three nodes, and for each job the run
    // its owner made.
    let port_of = |name: &str| plans.iter().find(|p| p.name == name).map(|p| p.peer);
    for node in &nodes {
        let seen = std::cell::RefCell::new(Value::Null);
        wait_until(
            &format!(
                "{}'s /fleet to show each job's runs on its owner",
                node.name
            ),
            PATIENCE,
            || {
                let fleet = get(node.web, "/fleet").json();
                let shown = owners.iter().all(|(job, owner)| {
                    let row = if owner == node.name {
                        fleet_row(&fleet, None)
                    } else {
                        fleet_row(&fleet, port_of(owner))
                    };
                    row["jobs"][job]["last"]["outcome"] == "success"
                });
                *seen.borrow_mut() = fleet;
                shown
            },
            || format!("{:#}\n{}", seen.borrow(), logs(&nodes)),
        );
        let last = seen.into_inner();
        assert_eq!(last["enabled"], true, "{last}");
        assert_eq!(last["backend"], "gossip");
        assert_eq!(last["node_name"], node.name);
        assert_eq!(last["distribution"], "spread");
        assert_eq!(last["elect_leader"], true);
        assert_eq!(last["interval"], INTERVAL);
        let rows = last["nodes"].as_array().expect("nodes");
        assert_eq!(rows.len(), 3, "{last}");
        assert_eq!(rows[0]["self"], true, "this node first: {last}");
        assert_eq!(rows[0]["status"], "self");
        assert_eq!(rows[0]["host"], Value::Null);
        assert!(rows[0]["as_of"]
            .as_str()
            .is_some_and(|t| t.ends_with("+00:00")));
        for row in &rows[1..] {
            assert_eq!(row["self"], false);
            assert_eq!(row["status"], "agreed", "{row}");
            assert!(row["as_of"].is_string(), "{row}");
            assert_eq!(row["node_stats"], Value::Null);
            assert_eq!(row["truncated"], false);
        }
        let names: BTreeSet<&str> = rows
            .iter()
            .filter_map(|r| r["node_name"].as_str())
            .collect();
        assert_eq!(names, BTreeSet::from(["a", "b", "c"]));
        for row in rows {
            let jobs = row["jobs"].as_object().expect("every node sends its jobs");
            assert_eq!(jobs.len(), 6, "{row}");
            for (job, entry) in jobs {
                assert_eq!(entry["enabled"], true, "{entry}");
                // Before the three agreed, a job may have run on an owner
                // of a smaller membership; its owner has surely run it.
                let owned_here = owners.get(job).map(String::as_str) == row["node_name"].as_str();
                if owned_here {
                    let run = &entry["last"];
                    assert_eq!(run["exit_code"], 0, "{entry}");
                    assert!(
                        run["duration"].as_f64().is_some_and(|d| d >= 0.0),
                        "{entry}"
                    );
                    assert!(run["finished_at"]
                        .as_str()
                        .is_some_and(|t| t.ends_with("+00:00")));
                }
                // Every-second jobs: the countdown is under a second, or
                // null while an instance runs.
                match entry["scheduled_in"].as_f64() {
                    Some(left) => assert!((0.0..=1.0).contains(&left), "{entry}"),
                    None => assert_eq!(entry["running"], true, "{entry}"),
                }
            }
        }
    }
    // A node that is gone keeps its last known jobs, with its old time.
    let mut nodes = nodes;
    let victim = nodes.iter().position(|n| n.name == "c").expect("c");
    kill(&mut nodes, victim);
    wait_until(
        "a's /fleet to show c unreachable with its last jobs",
        PATIENCE,
        || {
            let row = fleet_row(&get(nodes[0].web, "/fleet").json(), port_of("c"));
            row["status"] == "unreachable"
                && row["node_name"] == "c"
                && row["jobs"].as_object().is_some_and(|j| j.len() == 6)
        },
        || format!("{:#}", get(nodes[0].web, "/fleet").json()),
    );
}

#[test]
fn the_quickstart_script_starts_three_nodes_that_elect_one_leader() {
    // The web ports of examples/gossip/node-{a,b,c}.yaml (and 9441-9443
    // for the peers): fixed, so they must be free.
    let ports = [8081, 8082, 8083];
    for port in ports.into_iter().chain([9441, 9442, 9443]) {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} is taken: the quickstart's fixed ports must be free"
        );
    }
    let dir = tempfile::tempdir().expect("quickstart dir");
    // The jobs' output (the daemons' stdout) and the daemons' logs.
    let log_file = std::fs::File::create(dir.path().join("log")).expect("log");
    let script = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/gossip_quickstart.sh"
        ))
        .args(["--seconds", "120"])
        .env("CRONSTABLE_BIN", env!("CARGO_BIN_EXE_cronstable"))
        .env("QUICKSTART_DIR", dir.path())
        .stdout(log_file.try_clone().expect("log"))
        .stderr(log_file)
        .spawn()
        .expect("run the quickstart");
    // Ends the script (and so its daemons) with a TERM whatever happens.
    struct Script(std::process::Child);
    impl Script {
        fn stop(&mut self) -> std::process::ExitStatus {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            self.0.wait().expect("the script ends")
        }
    }
    impl Drop for Script {
        fn drop(&mut self) {
            if matches!(self.0.try_wait(), Ok(None)) {
                self.stop();
            }
        }
    }
    let mut script = Script(script);
    let log = || std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    let cluster = |port: u16| -> Value {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(_) => get(port, "/cluster").json(),
            Err(_) => Value::Null,
        }
    };
    wait_until(
        "the quickstart's nodes to agree on one leader",
        PATIENCE,
        || {
            let views: Vec<Value> = ports.iter().map(|&p| cluster(p)).collect();
            views
                .iter()
                .all(|v| v["quorate"] == true && v["leader"] == "node-a")
                && views.iter().filter(|v| v["is_leader"] == true).count() == 1
        },
        log,
    );
    wait_until(
        "the leader-report job to run on node-a",
        PATIENCE,
        || log().contains("leader-report ran on node-a"),
        log,
    );
    let fleet = get(8082, "/fleet").json();
    let names: Vec<&str> = fleet["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["node_name"].as_str())
        .collect();
    assert_eq!(names, ["node-b", "node-a", "node-c"], "{fleet}");
    // A TERM to the script stops all three.
    let status = script.stop();
    assert!(status.success(), "{status}\n{}", log());
    for port in ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still served after the script ended"
        );
    }
    assert!(!log().contains("leader-report ran on node-b"), "{}", log());
}

/// SIGKILLs member `index` and waits for it to be gone.
fn kill(nodes: &mut [Node], index: usize) {
    if let Some(d) = nodes[index].daemon.as_mut() {
        d.signal(nix::sys::signal::Signal::SIGKILL);
        d.wait_exit(PATIENCE);
    }
    nodes[index].daemon = None;
}

/// The documented takeover bound (about one interval plus a poll timeout)
/// with generous slack for a loaded machine: a deadline, not a speed test.
fn takeover_deadline() -> Duration {
    Duration::from_secs(2 * INTERVAL + CONNECT_TIMEOUT + 5)
}

/// Kills the agreed leader `index`, waits (within the takeover deadline)
/// for the survivors to agree on `successor`, prints the time it took and
/// returns it.
fn kill_leader_and_wait_for(nodes: &mut [Node], index: usize, successor: &str) -> Duration {
    let killed = Instant::now();
    kill(nodes, index);
    let mut next = 0;
    wait_until(
        &format!(
            "the survivors to agree on {successor} after {} died",
            nodes[index].name
        ),
        PATIENCE,
        || agreed_leader(nodes).map(|l| next = l).is_some(),
        || logs(nodes),
    );
    let takeover = killed.elapsed();
    let survivors = nodes.iter().filter(|n| n.alive()).count();
    eprintln!(
        "measured gossip takeover after SIGKILL of {} ({survivors} of {} left): {takeover:?}",
        nodes[index].name,
        nodes.len()
    );
    assert_eq!(nodes[next].name, successor, "{}", logs(nodes));
    assert!(
        takeover <= takeover_deadline(),
        "takeover took {takeover:?}\n{}",
        logs(nodes)
    );
    takeover
}

/// Waits until `node` has run the job `more` more times than now.
fn wait_for_runs_by(shared: &Path, nodes: &[Node], node: &str, more: usize) {
    let seen = lines_by(shared, node);
    wait_until(
        &format!("{node} to run the job {more} more times"),
        PATIENCE,
        || lines_by(shared, node) >= seen + more,
        || logs(nodes),
    );
}

/// Asserts that every fired second so far had exactly one runner (no
/// second was run by two nodes), and prints how many seconds ran and how
/// many in between did not (a skipped second is allowed around a
/// takeover; a double never is).
fn assert_one_runner_per_second(shared: &Path, nodes: &[Node]) {
    let mut by_second: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for (node, _, second) in runs(shared) {
        by_second.entry(second).or_default().insert(node);
    }
    let twice: Vec<_> = by_second.iter().filter(|(_, n)| n.len() > 1).collect();
    assert!(
        twice.is_empty(),
        "seconds run by more than one node: {twice:?}\n{}",
        logs(nodes)
    );
    if let (Some(first), Some(last)) = (by_second.keys().next(), by_second.keys().next_back()) {
        eprintln!(
            "fires so far: {} seconds run once each, {} not run between {first} and {last}",
            by_second.len(),
            (last - first + 1) as usize - by_second.len()
        );
    }
}

#[test]
fn five_daemons_keep_one_runner_through_two_kills_and_stop_below_quorum() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let (mut nodes, _ca) = start_cluster(&["a", "b", "c", "d", "e"], &shared, Options::default());
    wait_until(
        "the five nodes to agree on a",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    for node in &nodes {
        let view = node.cluster();
        assert_eq!(view["cluster_size"], 5, "{view}");
        assert_eq!(view["quorum"], 3, "{view}");
        let statuses: Vec<&str> = view["peers"]
            .as_array()
            .expect("peers")
            .iter()
            .filter_map(|p| p["status"].as_str())
            .collect();
        assert_eq!(statuses, ["agreed"; 4], "{view}");
    }
    // Steady state: the leader alone runs, once per second.
    wait_for_runs_by(&shared, &nodes, "a", 4);
    assert_eq!(runs(&shared).len(), lines_by(&shared, "a"), "only a ran");
    assert_one_runner_per_second(&shared, &nodes);

    // One loss: b takes over.
    kill_leader_and_wait_for(&mut nodes, 0, "b");
    wait_for_runs_by(&shared, &nodes, "b", 3);
    assert_one_runner_per_second(&shared, &nodes);

    // Two losses: 3 of 5 are still a quorum, c takes over.
    kill_leader_and_wait_for(&mut nodes, 1, "c");
    wait_for_runs_by(&shared, &nodes, "c", 3);
    assert_one_runner_per_second(&shared, &nodes);
    for node in nodes.iter().filter(|n| n.alive()) {
        let view = node.cluster();
        assert_eq!(view["quorate"], true, "{view}");
    }

    // Three losses: 2 of 5 are no quorum, so no Leader job runs anywhere.
    kill(&mut nodes, 2);
    wait_until(
        "d and e to leave quorum",
        PATIENCE,
        || {
            nodes[3..].iter().all(|n| {
                let v = n.cluster();
                v["quorate"] == false && v["leader"] == Value::Null && v["is_leader"] == false
            })
        },
        || logs(&nodes),
    );
    assert_no_runs_for(&shared, &nodes, 4 * INTERVAL);
    assert_eq!(lines_by(&shared, "d") + lines_by(&shared, "e"), 0);
    assert!(nodes[3]
        .log()
        .contains("cluster: this node left quorum; no majority reachable"));
    assert_one_runner_per_second(&shared, &nodes);
}

/// What the fake peer answers to `GET /peer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hostile {
    /// `200` with a body that is not JSON.
    GarbageBody,
    /// `200` announcing (and sending) a body over the 256 KiB cap.
    Oversized,
    /// `200` with no length, over the cap, then the close: only counting
    /// the bytes finds it too big.
    OversizedUnframed,
    /// `200`, gzip: a small body that inflates to many times the cap.
    GzipBomb,
    /// Not HTTP at all: bytes, then the close.
    NotHttp,
    /// `200` announcing 100000 bytes, then one byte a second: never done.
    Dribble,
    /// A well-formed body from a node with another job set, whose job
    /// summaries are mostly malformed: it is a syncing or drifted peer,
    /// and the fleet view keeps only its well-formed entries.
    MalformedSummaries,
}

/// The fake peer's body in [`Hostile::MalformedSummaries`]: two entries the
/// fleet view keeps (one of them with every field of the wrong type) and
/// four it drops.
fn hostile_summaries() -> Vec<u8> {
    serde_json::json!({
        "node_name": "intruder",
        "instance_id": "fake-1",
        "job_set_id": "v1:not-ours",
        "scheme_version": "v1",
        "cluster_size": 4,
        "members": [],
        "distribution": "single-leader",
        "elect_leader": true,
        "job_summaries": {
            "good": {"running": true, "enabled": true, "scheduled_in": null, "last": null},
            "odd": {"running": "yes", "enabled": 0, "scheduled_in": "soon",
                    "last": {"outcome": "exploded", "finished_at": "x"}},
            "bell\u{0007}": {"running": true},
            "": {"running": true},
            "long": [1, 2, 3],
            ("x".repeat(129)): {"running": true},
        },
    })
    .to_string()
    .into_bytes()
}

/// What the nodes' `GET /cluster` must say about a fake peer answering
/// `mode` (the poller's and the payload decoder's texts, as the original
/// words them): (status, whether `last_error` fits).
fn classified(mode: Hostile, port: u16, status: &str, error: &str) -> bool {
    let oversized = "oversized /peer response (> 262144 bytes)";
    if mode == Hostile::MalformedSummaries {
        return matches!(status, "syncing" | "drifted");
    }
    status == "unreachable"
        && match mode {
            Hostile::GarbageBody => error == "invalid JSON in /peer response",
            Hostile::Oversized | Hostile::OversizedUnframed | Hostile::GzipBomb => {
                error == oversized
            }
            Hostile::NotHttp => {
                error.starts_with(&format!("Cannot connect to host 127.0.0.1:{port}"))
            }
            Hostile::Dribble => error.starts_with(&format!("timed out polling 127.0.0.1:{port}")),
            Hostile::MalformedSummaries => unreachable!("a well-formed body"),
        }
}

/// Bytes that are neither JSON nor HTTP (zeros, controls, invalid UTF-8).
fn garbage() -> Vec<u8> {
    (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect()
}

/// A small gzip body that inflates to 16 MiB.
fn gzip_bomb() -> Vec<u8> {
    let mut packer = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..16 {
        packer.write_all(&zeros).expect("compress");
    }
    let bomb = packer.finish().expect("compress");
    assert!(
        bomb.len() < 64 * 1024,
        "a bomb, not a big body: {}",
        bomb.len()
    );
    bomb
}

/// The PEM certificates in `path`.
fn pem_certificates(path: &Path) -> Vec<CertificateDer<'static>> {
    let bytes = std::fs::read(path).expect("read certificate file");
    CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .expect("PEM certificates")
}

/// The cluster CA of a TLS directory, as a root store.
fn roots(tls: &Path) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in pem_certificates(&tls.join("ca.pem")) {
        roots.add(cert).expect("CA certificate");
    }
    Arc::new(roots)
}

fn private_key(tls: &Path) -> PrivateKeyDer<'static> {
    let bytes = std::fs::read(tls.join("key.pem")).expect("read key");
    PrivateKeyDer::from_pem_slice(&bytes).expect("PEM key")
}

/// A peer of the cluster that is not a cronstable: a TLS server with a
/// certificate from the cluster CA (for 127.0.0.1) that, like a real
/// member, requires a client certificate from that CA, and answers every
/// `GET /peer` as its current [`Hostile`] mode says, on a thread per
/// connection.
struct FakePeer {
    port: u16,
    mode: Arc<Mutex<Hostile>>,
    /// Requests read (whole heads from an authenticated client).
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl FakePeer {
    fn start(tls: &Path, mode: Hostile) -> FakePeer {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            roots(tls),
            provider.clone(),
        )
        .build()
        .expect("client verifier");
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(pem_certificates(&tls.join("cert.pem")), private_key(tls))
            .expect("server config");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake peer");
        let port = listener.local_addr().expect("address").port();
        let fake = FakePeer {
            port,
            mode: Arc::new(Mutex::new(mode)),
            requests: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (modes, requests, stop) = (
            Arc::clone(&fake.mode),
            Arc::clone(&fake.requests),
            Arc::clone(&fake.stop),
        );
        let bodies = Arc::new((garbage(), gzip_bomb()));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (config, modes, requests, bodies) = (
                    Arc::clone(&config),
                    Arc::clone(&modes),
                    Arc::clone(&requests),
                    Arc::clone(&bodies),
                );
                std::thread::spawn(move || {
                    let _ = answer(stream, config, &modes, &requests, &bodies);
                });
            }
        });
        fake
    }

    fn set(&self, mode: Hostile) {
        *self.mode.lock().expect("mode") = mode;
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for FakePeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One connection to the fake peer: the handshake (which checks the
/// client's certificate), one request head, then the hostile answer.
fn answer(
    stream: TcpStream,
    config: Arc<rustls::ServerConfig>,
    mode: &Mutex<Hostile>,
    requests: &AtomicUsize,
    bodies: &(Vec<u8>, Vec<u8>),
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let connection = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tls.read(&mut chunk)?;
        if n == 0 || head.len() > 64 * 1024 {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let (garbage, bomb) = bodies;
    let mode = *mode.lock().expect("mode");
    let mut reply = |head: String, body: &[u8]| -> std::io::Result<()> {
        tls.write_all(head.as_bytes())?;
        tls.write_all(body)?;
        tls.flush()
    };
    match mode {
        Hostile::GarbageBody => reply(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                garbage.len()
            ),
            garbage,
        )?,
        Hostile::Oversized => {
            let body = vec![b'['; 300_000];
            reply(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                ),
                &body,
            )?
        }
        Hostile::OversizedUnframed => reply(
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".to_owned(),
            &vec![b'['; 300_000],
        )?,
        Hostile::GzipBomb => reply(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                bomb.len()
            ),
            bomb,
        )?,
        Hostile::NotHttp => reply(String::new(), garbage)?,
        Hostile::MalformedSummaries => {
            let body = hostile_summaries();
            reply(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                ),
                &body,
            )?
        }
        Hostile::Dribble => {
            reply(
                "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_owned(),
                b"{",
            )?;
            // Until the poller gives up and the writes fail.
            loop {
                std::thread::sleep(Duration::from_secs(1));
                tls.write_all(b" ")?;
                tls.flush()?;
            }
        }
    }
    tls.conn.send_close_notify();
    tls.flush()
}

/// The row of `view`'s peers for the peer at `port`.
fn peer_row(view: &Value, port: u16) -> Value {
    view["peers"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| {
                    r["host"]
                        .as_str()
                        .is_some_and(|h| h.ends_with(&format!(":{port}")))
                })
                .cloned()
        })
        .unwrap_or_default()
}

/// The fewest descriptors `node` holds over a few looks (a job's pipes come
/// and go; a leak stays).
fn settled_fds(node: &Node) -> usize {
    let daemon = node.daemon.as_ref().expect("running");
    (0..5)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            daemon.open_fds()
        })
        .min()
        .unwrap_or_default()
}

#[test]
fn a_hostile_peer_is_classified_and_cannot_crash_stall_or_drain_the_daemons() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let ca = Ca::new();
    let fake_tls = ca.files(&ca, &shared.join("tls-fake"));
    let fake = FakePeer::start(&fake_tls, Hostile::GarbageBody);
    // Three members and the fake peer: a size of 4, so a quorum of 3, which
    // the three real members reach on their own.
    let plans = plan(&["a", "b", "c"]);
    let nodes = start_planned(&plans, &ca, &shared, &[fake.port], Options::default());
    wait_until(
        "the three real nodes to agree on a",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    for node in &nodes {
        let view = node.cluster();
        assert_eq!(view["cluster_size"], 4, "{view}");
        assert_eq!(view["quorum"], 3, "{view}");
    }
    /// Polls of the fake peer per phase: about four rounds of each node.
    const POLLS_PER_PHASE: usize = 12;
    let mut baseline: Vec<usize> = Vec::new();
    let mut since_baseline = 0;
    // Consecutive modes leave different texts, so each wait sees the new one.
    for mode in [
        Hostile::GarbageBody,
        Hostile::Oversized,
        Hostile::Dribble,
        Hostile::GzipBomb,
        Hostile::NotHttp,
        Hostile::OversizedUnframed,
        Hostile::MalformedSummaries,
    ] {
        let started = Instant::now();
        fake.set(mode);
        let asked = fake.requests();
        let ran = lines_by(&shared, "a");
        wait_until(
            &format!("the real nodes to classify {mode:?}, stay agreed and keep a leading"),
            PATIENCE,
            || {
                fake.requests() >= asked + POLLS_PER_PHASE
                    && lines_by(&shared, "a") >= ran + 2
                    && nodes.iter().all(|n| {
                        let view = n.cluster();
                        let row = peer_row(&view, fake.port);
                        let real_agreed = plans
                            .iter()
                            .filter(|p| p.name != n.name)
                            .all(|p| peer_row(&view, p.peer)["status"] == "agreed");
                        classified(
                            mode,
                            fake.port,
                            row["status"].as_str().unwrap_or_default(),
                            row["last_error"].as_str().unwrap_or_default(),
                        ) && real_agreed
                            && view["quorate"] == true
                            && view["leader"] == "a"
                    })
            },
            || {
                let rows: Vec<Value> = nodes
                    .iter()
                    .map(|n| peer_row(&n.cluster(), fake.port))
                    .collect();
                format!("fake peer rows: {rows:?}\n{}", logs(&nodes))
            },
        );
        for node in &nodes {
            let daemon = node.daemon.as_ref().expect("started");
            assert!(daemon.running(), "{} died\n{}", node.name, node.log());
        }
        let fds: Vec<usize> = nodes.iter().map(settled_fds).collect();
        eprintln!(
            "{mode:?}: classified by every node in {:?} ({}); fake peer polled {} times; \
             fds {fds:?}",
            started.elapsed(),
            peer_row(&nodes[1].cluster(), fake.port)["last_error"],
            fake.requests() - asked
        );
        if baseline.is_empty() {
            baseline = fds;
        } else {
            since_baseline += fake.requests() - asked;
        }
    }
    // About 20 hostile polls per node since the baseline: a descriptor kept
    // per poll would show far above the slack (a job's pipes, the polls in
    // flight, the real peers' connections coming and going).
    const FD_SLACK: usize = 10;
    assert!(
        since_baseline >= 2 * FD_SLACK * nodes.len(),
        "{since_baseline}"
    );
    for (node, before) in nodes.iter().zip(&baseline) {
        let now = settled_fds(node);
        assert!(
            now <= before + FD_SLACK,
            "{} holds {now} descriptors, {before} at the baseline",
            node.name
        );
    }
    // The last mode's summaries: the fleet view shows the intruder with
    // its two well-formed entries, the bad ones dropped one by one.
    for node in &nodes {
        let fleet = get(node.web, "/fleet").json();
        let row = fleet_row(&fleet, Some(fake.port));
        assert_eq!(row["node_name"], "intruder", "{fleet}");
        assert_eq!(
            row["jobs"],
            serde_json::json!({
                "good": {"running": true, "enabled": true, "scheduled_in": null, "last": null},
                "odd": {"running": false, "enabled": true, "scheduled_in": null, "last": null},
            }),
            "{fleet}"
        );
        assert_eq!(fleet["nodes"].as_array().map(Vec::len), Some(4), "{fleet}");
    }
    assert_eq!(
        runs(&shared).len(),
        lines_by(&shared, "a"),
        "only the leader ran"
    );
    assert_one_runner_per_second(&shared, &nodes);
}

/// Replaces `name` in `dir` with `text` the way renewal tools do: written
/// next to its target and renamed over it, so a reader never sees a
/// half-written file.
fn replace_file(dir: &Path, name: &str, text: &str) {
    let staged = dir.join(format!(".{name}.new"));
    std::fs::write(&staged, text).expect("stage the new file");
    std::fs::rename(&staged, dir.join(name)).expect("rename over the old file");
}

/// Replaces `cert.pem` and `key.pem` in `dir` with a new key and a
/// certificate `issuer` signs, one file after the other (`ca.pem` is left
/// alone). Returns the new certificate.
fn rotate(issuer: &Ca, dir: &Path) -> CertificateDer<'static> {
    let (cert, key) = issuer.issue();
    replace_file(dir, "cert.pem", &cert);
    replace_file(dir, "key.pem", &key);
    CertificateDer::from_pem_slice(cert.as_bytes()).expect("the new certificate")
}

/// The certificate a node's `/peer` listener serves to a new connection,
/// read by a TLS client presenting the certificate in `client` (the
/// listener requires one from the cluster CA) and trusting its CA.
fn served_certificate(port: u16, client: &Path) -> Option<CertificateDer<'static>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots(client))
        .with_client_auth_cert(
            pem_certificates(&client.join("cert.pem")),
            private_key(client),
        )
        .expect("client config");
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("server name");
    let mut connection = rustls::ClientConnection::new(Arc::new(config), name).ok()?;
    let mut socket = TcpStream::connect(("127.0.0.1", port)).ok()?;
    socket.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    while connection.is_handshaking() {
        connection.complete_io(&mut socket).ok()?;
    }
    connection.peer_certificates()?.first().cloned()
}

#[test]
fn a_certificate_renewed_in_place_is_served_at_once_and_the_cluster_stays_agreed() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let ca = Ca::new();
    let plans = plan(&["a", "b", "c"]);
    let nodes = start_planned(&plans, &ca, &shared, &[], Options::default());
    let probe = ca.files(&ca, &shared.join("tls-probe"));
    wait_until(
        "the three nodes to agree on a",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    // Renewal from the same CA (new key), written one file at a time as a
    // renewal tool may: while only the certificate is new, it does not
    // match the key, so b keeps the loaded pair and says so.
    let b = nodes[1].daemon.as_ref().expect("b runs");
    let b_tls = tls_dir(&shared, &plans[1]);
    let old = served_certificate(plans[1].peer, &probe).expect("b serves a certificate");
    let (cert, key) = ca.issue();
    let renewed = CertificateDer::from_pem_slice(cert.as_bytes()).expect("new certificate");
    assert_ne!(old, renewed);
    replace_file(&b_tls, "cert.pem", &cert);
    b.wait_for_log(
        "cluster: the changed TLS files do not load, keeping the loaded certificates",
        1,
        PATIENCE,
    );
    assert_eq!(
        served_certificate(plans[1].peer, &probe).as_ref(),
        Some(&old),
        "a mismatched pair is kept out"
    );
    // With the key in place the pair loads: b switches without a restart
    // and serves the new certificate to new connections.
    replace_file(&b_tls, "key.pem", &key);
    wait_until(
        "b to serve its renewed certificate",
        PATIENCE,
        || served_certificate(plans[1].peer, &probe).as_ref() == Some(&renewed),
        || logs(&nodes),
    );
    b.wait_for_log(
        "cluster: TLS files changed, now using the new certificates",
        1,
        PATIENCE,
    );
    // b's polls now present the new certificate (its client is rebuilt on
    // the switch); a peer refusing it would be untrusted in b's view. The
    // cluster stays agreed with a leading, one runner per second.
    wait_for_runs_by(&shared, &nodes, "a", 3);
    for node in &nodes {
        let view = node.cluster();
        let statuses: Vec<&str> = view["peers"]
            .as_array()
            .expect("peers")
            .iter()
            .filter_map(|p| p["status"].as_str())
            .collect();
        assert_eq!(statuses, ["agreed", "agreed"], "{}: {view}", node.name);
    }
    assert_eq!(agreed_leader(&nodes), Some(0), "{}", logs(&nodes));
    assert_eq!(runs(&shared).len(), lines_by(&shared, "a"), "only a ran");
    assert_one_runner_per_second(&shared, &nodes);
}

#[test]
fn a_node_rotated_in_place_to_another_ca_is_untrusted_and_the_quorum_runs_on() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let ca = Ca::new();
    let plans = plan(&["a", "b", "c"]);
    let nodes = start_planned(&plans, &ca, &shared, &[], Options::default());
    wait_until(
        "the three nodes to agree on a",
        PATIENCE,
        || agreed_leader(&nodes) == Some(0),
        || logs(&nodes),
    );
    // The leader's certificate and key are replaced in place by ones from
    // another CA (its ca.pem unchanged), as a botched renewal would. Its
    // peers must mark it untrusted (the docs: a node accepts a peer only
    // when the peer's certificate chains to the cluster CA), it can no
    // longer reach a quorum, and b and c run the Leader job, once per
    // second.
    let rogue = Ca::new();
    rotate(&rogue, &tls_dir(&shared, &plans[0]));
    wait_until(
        "b and c to mark a untrusted and agree on b",
        PATIENCE,
        || {
            let b = nodes[1].cluster();
            let c = nodes[2].cluster();
            peer_row(&b, plans[0].peer)["status"] == "untrusted"
                && peer_row(&c, plans[0].peer)["status"] == "untrusted"
                && b["is_leader"] == true
                && c["leader"] == "b"
        },
        || {
            let rows: Vec<Value> = nodes[1..]
                .iter()
                .map(|n| peer_row(&n.cluster(), plans[0].peer))
                .collect();
            format!("b's and c's rows for a: {rows:?}\n{}", logs(&nodes))
        },
    );
    let a = nodes[0].cluster();
    assert_eq!(a["quorate"], false, "{a}");
    let a_ran = lines_by(&shared, "a");
    wait_for_runs_by(&shared, &nodes, "b", 3);
    assert_eq!(lines_by(&shared, "a"), a_ran, "a ran without a quorum");
    assert_eq!(lines_by(&shared, "c"), 0);
    assert!(nodes[1].log().contains(&format!(
        "cluster: peer 127.0.0.1:{} is untrusted",
        plans[0].peer
    )));
    assert_one_runner_per_second(&shared, &nodes);
}
