//! Leader election over a shared directory (`cluster.backend:
//! filesystem`), black-box: three real daemons (the built binary) on one
//! temp directory, each with a web listener and a Leader job that appends
//! "<node> <epoch second>" to a shared file every second. The tests read
//! `GET /cluster`, `/metrics`, the lease file on disk and that shared file;
//! leaders are killed with SIGKILL and stopped with SIGTERM for real.
//!
//! Bounds on takeovers are the protocol's own (lease ttl, renew period,
//! the one-second challenger margin) plus a second of slack for process
//! scheduling; waits are deadlines, never fixed sleeps.

mod support;

use support::kube_daemon::wait_until;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::cluster::{agreed_leader, logs, Member};
use support::daemon::{read_lines, Daemon};
use support::http::{free_port, get, wait_listening};

const TTL: f64 = 3.0;
/// max(1, ttl / 3).
const PERIOD: f64 = 1.0;
const PATIENCE: Duration = Duration::from_secs(30);

/// The cluster tests' member (a daemon with a web port).
type Node = Member;

impl Node {
    fn start(name: &'static str, shared: &Path) -> Node {
        let port = free_port();
        let shared = shared.display();
        let config = format!(
            "web:\n  listen:\n    - http://127.0.0.1:{port}\n\
             cluster:\n  backend: filesystem\n  nodeName: {name}\n  filesystem:\n    \
             path: {shared}\n    ttl: {TTL}\n\
             jobs:\n  - name: beat\n    command: \"echo {name} $(date +%s) >> {shared}/runs\"\n    \
             schedule: \"* * * * * * *\"\n"
        );
        let daemon = Daemon::start(&config);
        wait_listening(port, PATIENCE);
        Node {
            name,
            web: port,
            daemon: Some(daemon),
        }
    }

    fn is_leader_gauge(&self) -> f64 {
        let text = get(self.web, "/metrics").body;
        text.lines()
            .find_map(|l| l.strip_prefix("cronstable_cluster_is_leader "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no cronstable_cluster_is_leader on {}:\n{text}", self.name))
    }
}

fn lease_file(shared: &Path) -> PathBuf {
    shared
        .join("default")
        .join("leases")
        .join("cluster%2Fleader.lease")
}

fn read_lease(shared: &Path) -> Value {
    let bytes = std::fs::read(lease_file(shared)).expect("the lease file exists");
    serde_json::from_slice(&bytes).expect("the lease file is JSON")
}

fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Waits until the lease file names a holder other than `previous`
/// (acquired, not released) and returns it.
fn wait_new_holder(shared: &Path, previous: &str, nodes: &[Node]) -> Value {
    let mut found = Value::Null;
    wait_until(
        "another node to take the lease",
        PATIENCE,
        || {
            let lease = std::fs::read(lease_file(shared))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            match lease {
                Some(l)
                    if l["holder"] != previous && l["expiresAt"].as_f64().unwrap_or(0.0) > 0.0 =>
                {
                    found = l;
                    true
                }
                _ => false,
            }
        },
        || logs(nodes),
    );
    found
}

/// The nodes of the shared file's lines, in order, collapsed into runs.
fn blocks(shared: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in read_lines(&shared.join("runs")) {
        let node = line
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        if out.last() != Some(&node) {
            out.push(node);
        }
    }
    out
}

fn lines_by(shared: &Path, node: &str) -> usize {
    read_lines(&shared.join("runs"))
        .iter()
        .filter(|l| l.split_whitespace().next() == Some(node))
        .count()
}

#[test]
fn three_daemons_on_one_directory_run_leader_jobs_on_exactly_one_node() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let mut nodes = vec![
        Node::start("a", &shared),
        Node::start("b", &shared),
        Node::start("c", &shared),
    ];

    // Steady state: one leader, everyone agrees, the metrics say so.
    let mut first = 0;
    wait_until(
        "the three nodes to agree on one leader",
        PATIENCE,
        || agreed_leader(&nodes).map(|l| first = l).is_some(),
        || logs(&nodes),
    );
    let leader_name = nodes[first].name;
    for node in &nodes {
        let view = node.cluster();
        assert_eq!(view["backend"], "filesystem");
        assert_eq!(view["enabled"], true);
        assert_eq!(view["node_name"], node.name);
        assert_eq!(view["is_leader"], node.name == leader_name, "{view}");
        let lease = &view["lease"];
        assert_eq!(lease["path"], shared.display().to_string(), "{view}");
        assert_eq!(lease["electionName"], "cluster/leader");
        assert_eq!(lease["identity"], node.name);
        assert_eq!(lease["holder"], leader_name);
        assert!(lease["fence"].as_u64().is_some_and(|f| f >= 1), "{view}");
        // `/summary` names the node by its cluster name and carries the
        // compact leadership view (HTTP API page); `/node` the same name.
        let summary = get(node.web, "/summary").json();
        assert_eq!(summary["node_name"], node.name, "{summary}");
        assert_eq!(
            summary["cluster"],
            serde_json::json!({
                "enabled": true,
                "distribution": "single-leader",
                "quorate": true,
                "is_leader": node.name == leader_name,
                "leader": leader_name,
            }),
            "{summary}"
        );
        assert_eq!(get(node.web, "/node").json()["node_name"], node.name);
        assert!(
            lease["expiry"]
                .as_str()
                .is_some_and(|e| e.ends_with("+00:00")),
            "{view}"
        );
    }
    let gauges: f64 = nodes.iter().map(Node::is_leader_gauge).sum();
    assert_eq!(gauges, 1.0, "cronstable_cluster_is_leader sums to 1");

    // The lease file is the original's format.
    let text = std::fs::read_to_string(lease_file(&shared)).expect("lease file");
    let lease = read_lease(&shared);
    let keys: Vec<&String> = lease.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["expiresAt", "fence", "holder", "name"]);
    assert!(
        !text.contains(' ') && text.starts_with("{\"expiresAt\":"),
        "{text}"
    );
    let holder = lease["holder"].as_str().expect("holder").to_owned();
    let (name, token) = holder.rsplit_once('#').expect("name#token");
    assert_eq!(name, leader_name);
    assert!(
        token.len() == 12 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{holder}"
    );
    assert_eq!(lease["name"], "cluster/leader");
    let first_fence = lease["fence"].as_u64().expect("fence");

    // Leader jobs run on the leader only.
    let seen = lines_by(&shared, leader_name);
    wait_until(
        "the leader to run its job three more times",
        PATIENCE,
        || lines_by(&shared, leader_name) >= seen + 3,
        || logs(&nodes),
    );
    assert_eq!(
        blocks(&shared),
        [leader_name],
        "only the leader ran the job"
    );

    // SIGKILL: no release; the lease must run out (ttl), then the
    // challenger's margin (1 s), then its next round (one period).
    let killed_at = wall_now();
    if let Some(d) = nodes[first].daemon.as_mut() {
        d.signal(nix::sys::signal::Signal::SIGKILL);
        d.wait_exit(PATIENCE);
    }
    nodes[first].daemon = None;
    let taken = wait_new_holder(&shared, &holder, &nodes);
    let acquired_at = taken["expiresAt"].as_f64().expect("expiresAt") - TTL;
    let takeover = acquired_at - killed_at;
    assert!(
        takeover <= TTL + PERIOD + 1.0 + 3.0,
        "takeover after SIGKILL took {takeover:.2} s (bound ttl + period + margin + 1 s slack)"
    );
    eprintln!("measured takeover: SIGKILL {takeover:.2} s");
    assert_eq!(
        taken["fence"].as_u64(),
        Some(first_fence + 1),
        "a takeover bumps the fence"
    );
    let mut second = 0;
    wait_until(
        "the survivors to agree on the new leader",
        PATIENCE,
        || agreed_leader(&nodes).map(|l| second = l).is_some(),
        || logs(&nodes),
    );
    assert_ne!(second, first);
    let second_name = nodes[second].name;
    let second_holder = taken["holder"].as_str().unwrap_or_default().to_owned();
    assert!(
        second_holder.starts_with(&format!("{second_name}#")),
        "{taken}"
    );
    let seen = lines_by(&shared, second_name);
    wait_until(
        "the new leader to run the job",
        PATIENCE,
        || lines_by(&shared, second_name) >= seen + 2,
        || logs(&nodes),
    );
    let gauges: f64 = nodes
        .iter()
        .filter(|n| n.alive())
        .map(Node::is_leader_gauge)
        .sum();
    assert_eq!(gauges, 1.0);

    // SIGTERM: the leader releases before it drains, so the survivor
    // takes over at its next round (one period, plus slack).
    let stopped_at = wall_now();
    if let Some(d) = nodes[second].daemon.as_mut() {
        d.signal(nix::sys::signal::Signal::SIGTERM);
    }
    let taken = wait_new_holder(&shared, &second_holder, &nodes);
    let acquired_at = taken["expiresAt"].as_f64().expect("expiresAt") - TTL;
    let takeover = acquired_at - stopped_at;
    assert!(
        takeover <= PERIOD + 3.0,
        "takeover after SIGTERM took {takeover:.2} s (bound: one period + 1 s slack)"
    );
    eprintln!("measured takeover: SIGTERM {takeover:.2} s");
    if let Some(d) = nodes[second].daemon.as_mut() {
        assert_eq!(d.wait_exit(PATIENCE), Some(0));
        let log = d.log();
        assert!(log.contains("Stopping cluster manager"), "{log}");
    }
    let second_log = nodes[second].log();
    nodes[second].daemon = None;
    let third = 3 - first - second;
    let third_name = nodes[third].name;
    wait_until(
        "the last node to lead",
        PATIENCE,
        || agreed_leader(&nodes) == Some(third),
        || format!("{}\n--- stopped ---\n{second_log}", logs(&nodes)),
    );
    let seen = lines_by(&shared, third_name);
    wait_until(
        "the last leader to run the job",
        PATIENCE,
        || lines_by(&shared, third_name) >= seen + 2,
        || logs(&nodes),
    );
    assert_eq!(nodes[third].is_leader_gauge(), 1.0);

    // Never two leaders: the file's lines come in one unbroken block per
    // leader, in the order leadership passed.
    assert_eq!(
        blocks(&shared),
        [leader_name, second_name, third_name],
        "lines interleaved between nodes:\n{}",
        read_lines(&shared.join("runs")).join("\n")
    );
    assert!(nodes[third]
        .log()
        .contains("cluster: this node acquired scheduled-job leadership"));
}
