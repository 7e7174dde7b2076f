//! `concurrencyScope: cluster` slots, black-box: real daemons (the built
//! binary) sharing one directory as their slot store, jobs that are real
//! shell commands appending to a shared file, manual starts through the
//! real HTTP API. Waits are deadlines, never fixed sleeps.

mod support;

use std::path::Path;
use std::time::Duration;
use support::daemon::{read_lines, Daemon};
use support::http::{free_port, post, wait_listening};
use support::kube_daemon::wait_until;

const PATIENCE: Duration = Duration::from_secs(40);

/// A start and an end line per run: "<start|end> <daemon pid> <epoch>".
fn forbid_node(shared: &Path) -> Daemon {
    let shared = shared.display();
    let config = format!(
        "state:\n  path: {shared}/store\n  slotTtlSeconds: 5\n\
         jobs:\n  - name: long\n    command: \"echo start $PPID $(date +%s.%N) >> {shared}/runs; \
         sleep 3; echo end $PPID $(date +%s.%N) >> {shared}/runs\"\n    \
         schedule: \"*/2 * * * * * *\"\n    concurrencyPolicy: Forbid\n    \
         concurrencyScope: cluster\n"
    );
    Daemon::start(&config)
}

/// The runs of the shared file as (pid, start, end), complete ones only.
fn intervals(lines: &[String]) -> Vec<(String, f64, f64)> {
    let mut open: std::collections::HashMap<String, f64> = Default::default();
    let mut done = Vec::new();
    for line in lines {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [kind, pid, at] = parts[..] else {
            panic!("unexpected line {line:?}")
        };
        let at: f64 = at.parse().expect("an epoch");
        match kind {
            "start" => {
                assert!(
                    open.insert(pid.to_owned(), at).is_none(),
                    "two runs at once on one node: {lines:?}"
                );
            }
            "end" => {
                let began = open.remove(pid).expect("an end after a start");
                done.push((pid.to_owned(), began, at));
            }
            other => panic!("unexpected kind {other}"),
        }
    }
    done
}

#[test]
fn a_forbid_cluster_job_never_overlaps_across_two_nodes() {
    let shared = tempfile::tempdir().unwrap();
    let a = forbid_node(shared.path());
    let b = forbid_node(shared.path());
    let runs = shared.path().join("runs");
    // Six complete runs at 3 s each, fired every 2 s on both nodes: most
    // fires find the slot held (here or on the other node).
    wait_until(
        "six complete runs",
        PATIENCE,
        || intervals(&read_lines(&runs)).len() >= 6,
        || format!("{:?}\n{}\n{}", read_lines(&runs), a.log(), b.log()),
    );
    let lines = read_lines(&runs);
    let done = intervals(&lines);
    for (i, (p1, s1, e1)) in done.iter().enumerate() {
        for (p2, s2, e2) in &done[i + 1..] {
            assert!(
                e1 <= s2 || e2 <= s1,
                "runs overlap: {p1} [{s1}, {e1}] and {p2} [{s2}, {e2}]\n{lines:?}"
            );
        }
    }
    let skip = "skipped: its cluster concurrency slot is held by ";
    let line = "(concurrencyPolicy: Forbid, concurrencyScope: cluster)";
    let logs = format!("{}\n{}", a.log(), b.log());
    assert!(
        logs.lines()
            .any(|l| l.contains(&format!("Job long {skip}")) && l.ends_with(line)),
        "no cross-node skip was logged:\n{logs}"
    );
    // The original's lease file for the slot.
    let lease = shared
        .path()
        .join("store/default/leases/slots%2Flong.lease");
    let text = std::fs::read_to_string(&lease).expect("the slot lease file");
    assert!(text.contains("\"name\":\"slots/long\""), "{text}");
    // The state section's start advisory.
    assert!(
        a.log()
            .contains("run history, pending retries and pauses are kept in memory only"),
        "{}",
        a.log()
    );
}

/// A node of the Replace test: the filesystem cluster backend's
/// directory is the slot store, every node runs the job (EveryNode), and
/// the job only ever starts by hand.
fn replace_node(name: &str, shared: &Path) -> (Daemon, u16) {
    let port = free_port();
    let shared = shared.display();
    let config = format!(
        "web:\n  listen:\n    - http://127.0.0.1:{port}\n\
         state:\n  slotTtlSeconds: 5\n\
         cluster:\n  backend: filesystem\n  nodeName: {name}\n  filesystem:\n    \
         path: {shared}/store\n    ttl: 3\n\
         jobs:\n  - name: swap\n    command: \"echo start {name} >> {shared}/runs; sleep 120\"\n    \
         schedule: \"@yearly\"\n    clusterPolicy: EveryNode\n    \
         concurrencyPolicy: Replace\n    concurrencyScope: cluster\n"
    );
    let daemon = Daemon::start(&config);
    wait_listening(port, PATIENCE);
    (daemon, port)
}

#[test]
fn replace_across_nodes_cancels_the_remote_instance_and_launches_here() {
    let shared = tempfile::tempdir().unwrap();
    let (a, port_a) = replace_node("node-a", shared.path());
    let (b, port_b) = replace_node("node-b", shared.path());
    let runs = shared.path().join("runs");
    assert_eq!(post(port_a, "/jobs/swap/start").status, 200);
    let context = || format!("{:?}\n{}\n{}", read_lines(&runs), a.log(), b.log());
    wait_until(
        "node-a's run",
        PATIENCE,
        || read_lines(&runs) == ["start node-a"],
        context,
    );
    assert_eq!(post(port_b, "/jobs/swap/start").status, 200);
    b.wait_for_log(
        "Job swap: cluster Replace: asking the current slot holder (node-a) to yield; the launch \
         is re-attempted when the slot frees",
        1,
        PATIENCE,
    );
    a.wait_for_log(
        "Job swap: node node-b requested this instance be replaced (concurrencyPolicy: Replace, \
         concurrencyScope: cluster); cancelling",
        1,
        PATIENCE,
    );
    b.wait_for_log(
        "Job swap: launched after the previous cluster slot holder yielded (concurrencyPolicy: \
         Replace)",
        1,
        PATIENCE,
    );
    wait_until(
        "node-b's run",
        PATIENCE,
        || read_lines(&runs) == ["start node-a", "start node-b"],
        context,
    );
    // The cancelled instance is no run: no exit-code line, no report.
    a.wait_for_log("Job swap was replaced by a newer instance", 1, PATIENCE);
    assert!(!a.log().contains("Job swap exit code"), "{}", a.log());
}

/// A daemon whose slot store cannot work (its directory's parent is a
/// regular file).
fn broken_store_node(blocker: &Path, policy: &str) -> Daemon {
    let blocker = blocker.display();
    let config = format!(
        "state:\n  path: {blocker}/store\n  onStoreUnavailable: {policy}\n\
         jobs:\n  - name: guarded\n    command: \"echo ran >> {{dir}}/runs\"\n    \
         schedule: \"* * * * * * *\"\n    concurrencyPolicy: Forbid\n    \
         concurrencyScope: cluster\n"
    );
    Daemon::start(&config)
}

#[test]
fn an_unusable_store_degrades_or_fails_closed_as_configured() {
    let tmp = tempfile::tempdir().unwrap();
    let blocker = tmp.path().join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let degrade = broken_store_node(&blocker, "degrade");
    let closed = broken_store_node(&blocker, "fail-closed");
    degrade.wait_for_log(
        "Job guarded: cannot claim its cluster concurrency slot (the state store is \
         unavailable); enforcing concurrencyPolicy on this node only for this run \
         (onStoreUnavailable: degrade)",
        2,
        PATIENCE,
    );
    degrade.wait_for_lines("runs", 2, PATIENCE);
    closed.wait_for_log(
        "Job guarded skipped: cannot claim its cluster concurrency slot (the state store is \
         unavailable) and onStoreUnavailable is fail-closed",
        2,
        PATIENCE,
    );
    assert!(
        read_lines(&closed.path("runs")).is_empty(),
        "fail-closed ran the job:\n{}",
        closed.log()
    );
}
