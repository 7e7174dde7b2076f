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
    // The state section opens the durable store beside the slots.
    assert!(
        a.log().contains("state: filesystem backend ready at "),
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

/// Asserts that no two complete runs of the shared file overlap in time.
fn assert_no_overlap(lines: &[String]) {
    let done = intervals(lines);
    for (i, (p1, s1, e1)) in done.iter().enumerate() {
        for (p2, s2, e2) in &done[i + 1..] {
            assert!(
                e1 <= s2 || e2 <= s1,
                "runs overlap: {p1} [{s1}, {e1}] and {p2} [{s2}, {e2}]\n{lines:?}"
            );
        }
    }
}

/// A cluster Forbid job that runs 3 s, fired every 2 s on every node
/// (EveryNode: the election does not pick one), appending
/// "<start|end> <node> <epoch>" to `runs`.
fn long_job(name: &str, node: &str, runs: &str) -> String {
    format!(
        "jobs:\n  - name: {name}\n    command: \"echo start {node} $(date +%s.%N) >> {runs}; \
         sleep 3; echo end {node} $(date +%s.%N) >> {runs}\"\n    \
         schedule: \"*/2 * * * * * *\"\n    clusterPolicy: EveryNode\n    \
         concurrencyPolicy: Forbid\n    concurrencyScope: cluster\n"
    )
}

/// A cluster Replace job started by hand only, running 120 s.
fn swap_job(node: &str, runs: &str) -> String {
    format!(
        "jobs:\n  - name: swap\n    command: \"echo start {node} >> {runs}; sleep 120\"\n    \
         schedule: \"@yearly\"\n    clusterPolicy: EveryNode\n    \
         concurrencyPolicy: Replace\n    concurrencyScope: cluster\n"
    )
}

const SKIP_LINE: &str = "(concurrencyPolicy: Forbid, concurrencyScope: cluster)";

/// Asserts that the store answered every claim and renewal (no degraded
/// launch, no renewal error): the exclusion seen came from the store.
fn assert_store_answered(logs: &str) {
    for trouble in [
        "cannot claim its cluster concurrency slot",
        "cluster concurrency slot renewal errored",
        "was taken over by",
    ] {
        assert!(!logs.contains(trouble), "{trouble:?} logged:\n{logs}");
    }
}

fn logged_a_cross_node_skip(job: &str, logs: &str) -> bool {
    let skip = format!("Job {job} skipped: its cluster concurrency slot is held by ");
    logs.lines()
        .any(|l| l.contains(&skip) && l.ends_with(SKIP_LINE))
}

/// The Replace flow of two started nodes: `a` starts the job, `b` asks
/// for it, `a` cancels its instance and `b` launches. `start` posts the
/// manual start on a node; `log` reads a node's log.
fn replace_flow(runs: &Path, start: impl Fn(&str) -> u16, log: impl Fn(&str) -> String) {
    let context = || format!("{:?}\na:\n{}\nb:\n{}", read_lines(runs), log("a"), log("b"));
    let wait_log = |node: &str, needle: &str| {
        wait_until(
            &format!("{needle:?} in {node}'s log"),
            PATIENCE,
            || log(node).contains(needle),
            context,
        )
    };
    assert_eq!(start("a"), 200);
    wait_until(
        "node a's run",
        PATIENCE,
        || read_lines(runs) == ["start a"],
        context,
    );
    assert_eq!(start("b"), 200);
    wait_log(
        "b",
        "Job swap: cluster Replace: asking the current slot holder (a) to yield; the launch is \
         re-attempted when the slot frees",
    );
    wait_log(
        "a",
        "Job swap: node b requested this instance be replaced (concurrencyPolicy: Replace, \
         concurrencyScope: cluster); cancelling",
    );
    wait_log(
        "b",
        "Job swap: launched after the previous cluster slot holder yielded (concurrencyPolicy: \
         Replace)",
    );
    wait_until(
        "node b's run",
        PATIENCE,
        || read_lines(runs) == ["start a", "start b"],
        context,
    );
    wait_log("a", "Job swap was replaced by a newer instance");
    assert!(!log("a").contains("Job swap exit code"), "{}", log("a"));
}

mod on_kubernetes {
    //! Slots on Leases, against a real kube-apiserver (from
    //! `KUBEBUILDER_ASSETS`; skipped, saying so, when unset): real
    //! resourceVersion conflicts, two daemons in Kubernetes mode.

    use super::*;
    use sha2::Digest;
    use support::kube_daemon::{Cluster, KubeDaemon, Launch};

    fn start(cluster: &Cluster, node: &str, jobs: &str) -> KubeDaemon {
        let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
        how.config = format!(
            "state:\n  slotTtlSeconds: 5\n\
             cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    \
             leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
             {jobs}"
        );
        KubeDaemon::launch(cluster, how)
    }

    fn lease(cluster: &Cluster, name: &str) -> Option<serde_json::Value> {
        cluster.get("coordination.k8s.io/v1", "Lease", &cluster.namespace, name)
    }

    #[test]
    fn a_forbid_cluster_job_never_overlaps_across_two_nodes() {
        let Some(cluster) = Cluster::real() else {
            return;
        };
        let runs = cluster.path("runs");
        // A name that is no valid Lease name as it is: sanitized, and
        // suffixed with the first 8 hex digits of its SHA-256.
        let job = "Long_Job";
        let a = start(
            &cluster,
            "a",
            &long_job(job, "a", &runs.display().to_string()),
        );
        let b = start(
            &cluster,
            "b",
            &long_job(job, "b", &runs.display().to_string()),
        );
        let context = || format!("{:?}\na:\n{}\nb:\n{}", read_lines(&runs), a.log(), b.log());
        wait_until(
            "six complete runs",
            PATIENCE,
            || intervals(&read_lines(&runs)).len() >= 6,
            context,
        );
        assert_no_overlap(&read_lines(&runs));
        assert!(
            logged_a_cross_node_skip(job, &format!("{}\n{}", a.log(), b.log())),
            "no skip line:\n{}",
            context()
        );
        assert_store_answered(&format!("{}\n{}", a.log(), b.log()));
        let hash = format!("{:x}", sha2::Sha256::digest(job.as_bytes()));
        let name = format!("cronstable-leader-slot-long-job-{}", &hash[..8]);
        let slot = lease(&cluster, &name).unwrap_or_else(|| panic!("no Lease {name}"));
        let spec = &slot["spec"];
        assert_eq!(spec["leaseDurationSeconds"], 5, "{slot}");
        // Taken over at least once per run after the first.
        assert!(spec["leaseTransitions"].as_u64() >= Some(5), "{slot}");
        assert!(
            spec["renewTime"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{slot}"
        );
        if let Some(holder) = spec["holderIdentity"].as_str() {
            assert!(
                holder.starts_with("a#") || holder.starts_with("b#"),
                "{slot}"
            );
        }
        // The election's own Lease is a separate object.
        assert!(lease(&cluster, "cronstable-leader").is_some());
    }

    #[test]
    fn replace_across_nodes_cancels_the_remote_instance() {
        let Some(cluster) = Cluster::real() else {
            return;
        };
        let runs = cluster.path("runs");
        let a = start(&cluster, "a", &swap_job("a", &runs.display().to_string()));
        let b = start(&cluster, "b", &swap_job("b", &runs.display().to_string()));
        let node = |n: &str| if n == "a" { &a } else { &b };
        replace_flow(&runs, |n| node(n).start_job("swap"), |n| node(n).log());
        // The request stays on the slot Lease as an annotation, and node
        // b holds the slot now.
        let slot = lease(&cluster, "cronstable-leader-slot-swap").expect("the slot Lease");
        let request: serde_json::Value = serde_json::from_str(
            slot["metadata"]["annotations"]["cronstable.io/cancel"]
                .as_str()
                .unwrap_or_else(|| panic!("no cancel annotation: {slot}")),
        )
        .expect("JSON");
        assert_eq!(request["kind"], "cancel", "{request}");
        assert_eq!(request["by"], "b", "{request}");
        assert!(request["fence"].is_u64(), "{request}");
        wait_until(
            "node b to hold the slot",
            PATIENCE,
            || {
                lease(&cluster, "cronstable-leader-slot-swap").is_some_and(|l| {
                    l["spec"]["holderIdentity"]
                        .as_str()
                        .is_some_and(|h| h.starts_with("b#"))
                })
            },
            || format!("{:?}", lease(&cluster, "cronstable-leader-slot-swap")),
        );
    }
}

mod on_etcd {
    //! Slots on etcd keys, against a real etcd server, two daemons.

    use super::*;
    use support::daemon::Daemon;
    use support::etcd::{self, Etcd};

    fn start(etcd: &Etcd, node: &str, jobs: &str) -> (Daemon, u16) {
        let port = free_port();
        let config = format!(
            "web:\n  listen:\n    - http://127.0.0.1:{port}\n\
             state:\n  slotTtlSeconds: 5\n\
             cluster:\n  backend: etcd\n  nodeName: {node}\n  etcd:\n    \
             endpoints: [{}]\n    ttl: 3\n{jobs}",
            etcd.endpoint()
        );
        let daemon = Daemon::start(&config);
        wait_listening(port, PATIENCE);
        (daemon, port)
    }

    #[test]
    fn a_forbid_cluster_job_never_overlaps_across_two_nodes() {
        if !etcd::available() {
            return;
        }
        let etcd = Etcd::start();
        let shared = tempfile::tempdir().unwrap();
        let runs = shared.path().join("runs");
        let r = runs.display().to_string();
        let (a, _) = start(&etcd, "a", &long_job("long", "a", &r));
        let (b, _) = start(&etcd, "b", &long_job("long", "b", &r));
        let context = || format!("{:?}\na:\n{}\nb:\n{}", read_lines(&runs), a.log(), b.log());
        // The slot key while a run holds it: the holder, bound to a lease.
        let mut seen = None;
        wait_until(
            "six complete runs",
            PATIENCE,
            || {
                if seen.is_none() {
                    seen = etcd.get("cronstable/leader/slots/long");
                }
                intervals(&read_lines(&runs)).len() >= 6
            },
            context,
        );
        assert_no_overlap(&read_lines(&runs));
        assert!(
            logged_a_cross_node_skip("long", &format!("{}\n{}", a.log(), b.log())),
            "no skip line:\n{}",
            context()
        );
        assert_store_answered(&format!("{}\n{}", a.log(), b.log()));
        let (holder, lease) = seen.expect("the slot key was seen while held");
        assert!(
            holder.starts_with("a#") || holder.starts_with("b#"),
            "{holder}"
        );
        assert_ne!(lease, "0", "the slot key is bound to a lease");
        // Not the election's lease: a slot lease of its own, with the
        // slot TTL.
        let election = etcd.get("cronstable/leader").map(|(_, l)| l);
        assert_ne!(Some(lease.clone()), election);
        let ttl = etcd.call("/v3/lease/timetolive", &serde_json::json!({"ID": lease}));
        let granted = ttl["grantedTTL"].as_str().unwrap_or("");
        // A finished run revokes its lease (etcd then says TTL -1); a live
        // one was granted the slot TTL.
        assert!(granted == "5" || ttl["TTL"] == "-1", "{ttl}");
    }

    #[test]
    fn replace_across_nodes_cancels_the_remote_instance() {
        if !etcd::available() {
            return;
        }
        let etcd = Etcd::start();
        let shared = tempfile::tempdir().unwrap();
        let runs = shared.path().join("runs");
        let r = runs.display().to_string();
        let (a, port_a) = start(&etcd, "a", &swap_job("a", &r));
        let (b, port_b) = start(&etcd, "b", &swap_job("b", &r));
        let node = |n: &str| if n == "a" { (&a, port_a) } else { (&b, port_b) };
        replace_flow(
            &runs,
            |n| post(node(n).1, "/jobs/swap/start").status,
            |n| node(n).0.log(),
        );
        let (text, lease) = etcd
            .get("cronstable/leader/slot-cancels/swap")
            .expect("the cancel key");
        assert_eq!(lease, "0", "a plain key, kept after the holding ends");
        let request: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(request["kind"], "cancel", "{request}");
        assert_eq!(request["by"], "b", "{request}");
        let (holder, _) = etcd
            .get("cronstable/leader/slots/swap")
            .expect("the slot key, held by b");
        assert!(holder.starts_with("b#"), "{holder}");
        // The fence asked to yield was a's holding: older than b's key.
        let b_key = etcd.call(
            "/v3/kv/range",
            &serde_json::json!({"key": base64_of("cronstable/leader/slots/swap")}),
        );
        let b_revision: u64 = b_key["kvs"][0]["create_revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .expect("create_revision");
        assert!(
            request["fence"].as_u64().expect("fence") < b_revision,
            "{request} {b_key}"
        );
    }

    fn base64_of(text: &str) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(text)
    }
}
