//! Leader election through a coordination.k8s.io Lease, end to end: three
//! real daemons against a real kube-apiserver (from `KUBEBUILDER_ASSETS`;
//! skipped, saying so, when unset; the fake for the 503 outage), each with
//! `cluster: {backend: kubernetes}`, and a Leader job firing every second
//! that appends `<node> <epoch second>` to one shared file. What counts is
//! the file: one runner per second, takeover after kill -9 and after
//! SIGTERM, standing down when the API server stops answering.

mod support;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::kube_daemon::{cronjobset, read_lines, wait_until, Cluster, KubeDaemon, Launch};

const PATIENCE: Duration = Duration::from_secs(30);

/// Lease timings of these tests: duration 4 s, renew deadline 2 s, retry
/// 1 s (the loader's rules: 2 + 1 < 4).
fn cluster_section(node: &str) -> String {
    format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    \
         leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
         jobs:\n  - name: tick\n    command: echo {node} $(date +%s) >> {{dir}}/fires\n    \
         schedule: '* * * * * * *'\n    clusterPolicy: Leader\n  - name: everywhere\n    \
         command: echo {node} >> {{dir}}/every-{node}\n    schedule: '* * * * * * *'\n    \
         clusterPolicy: EveryNode\n"
    )
}

fn start_node(cluster: &Cluster, node: &str) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = cluster_section(node);
    KubeDaemon::launch(cluster, how)
}

/// Runners per second, from the shared file.
fn runners(lines: &[String]) -> BTreeMap<u64, Vec<String>> {
    let mut by_second: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in lines {
        let mut parts = line.split_whitespace();
        if let (Some(node), Some(second)) = (parts.next(), parts.next()) {
            if let Ok(second) = second.parse() {
                by_second.entry(second).or_default().push(node.to_owned());
            }
        }
    }
    by_second
}

fn leaders(daemons: &[(&str, &KubeDaemon)]) -> Vec<String> {
    daemons
        .iter()
        .filter(|(_, d)| d.get_json("/cluster")["is_leader"] == true)
        .map(|(name, _)| (*name).to_owned())
        .collect()
}

fn kill(daemon: &KubeDaemon, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon.pid() as i32), signal)
        .expect("signal the daemon");
}

/// The node that ran the newest line of the file.
fn last_runner(cluster: &Cluster) -> Option<String> {
    read_lines(&cluster.path("fires"))
        .last()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
}

#[test]
fn one_leader_runs_each_fire_and_the_others_take_over_after_kill_and_term() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let a = start_node(&cluster, "a");
    let b = start_node(&cluster, "b");
    let c = start_node(&cluster, "c");
    let all = [("a", &a), ("b", &b), ("c", &c)];
    let context = || format!("a:\n{}\nb:\n{}\nc:\n{}", a.log(), b.log(), c.log());
    wait_until(
        "six seconds of Leader fires",
        PATIENCE,
        || runners(&read_lines(&cluster.path("fires"))).len() >= 6,
        context,
    );
    // Every node runs its EveryNode job meanwhile.
    for node in ["a", "b", "c"] {
        wait_until(
            "EveryNode fires on every node",
            PATIENCE,
            || read_lines(&cluster.path(&format!("every-{node}"))).len() >= 2,
            context,
        );
    }
    let steady = runners(&read_lines(&cluster.path("fires")));
    for (second, nodes) in &steady {
        assert_eq!(nodes.len(), 1, "second {second} ran on {nodes:?}");
    }
    let leader = leaders(&all);
    assert_eq!(leader.len(), 1, "one leader: {leader:?}");
    let leader = leader[0].clone();
    assert_eq!(last_runner(&cluster).as_deref(), Some(leader.as_str()));
    // Every node agrees on who leads.
    for (_, d) in &all {
        let view = d.get_json("/cluster");
        assert_eq!(view["backend"], "kubernetes", "{view}");
        assert_eq!(view["leader"], json!(leader), "{view}");
        assert_eq!(view["quorate"], true, "{view}");
        assert_eq!(view["lease"]["name"], "cronstable-leader", "{view}");
        assert_eq!(view["lease"]["holder"], json!(leader), "{view}");
        // A lease carries nothing between the nodes: no fleet view.
        assert_eq!(d.get_json("/fleet"), json!({"enabled": false, "nodes": []}));
    }
    let leading: f64 = all
        .iter()
        .map(|(_, d)| {
            d.metric("cronstable_cluster_is_leader", &[])
                .unwrap_or(-1.0)
        })
        .sum();
    assert_eq!(leading, 1.0);
    // The Lease holds `<node>#<token>`.
    let lease = cluster
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            "team-a",
            "cronstable-leader",
        )
        .expect("the Lease exists");
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(holder.starts_with(&format!("{leader}#")), "{lease}");

    // kill -9 the leader: another takes over once the lease runs out.
    let victim = all
        .iter()
        .find(|(n, _)| *n == leader)
        .map(|(_, d)| *d)
        .unwrap();
    let killed_at = Instant::now();
    kill(victim, nix::sys::signal::Signal::SIGKILL);
    let survivors: Vec<(&str, &KubeDaemon)> =
        all.iter().filter(|(n, _)| *n != leader).copied().collect();
    wait_until(
        "a survivor runs the Leader job",
        PATIENCE,
        || last_runner(&cluster).is_some_and(|r| r != leader),
        context,
    );
    let takeover = killed_at.elapsed();
    let second = last_runner(&cluster).expect("a runner");
    assert_eq!(leaders(&survivors), vec![second.clone()]);
    eprintln!("takeover after kill -9: {takeover:?} (lease duration 4 s, retry 1 s)");

    // SIGTERM the new leader: it releases before draining, the last node
    // takes over at its next round.
    let second_daemon = survivors
        .iter()
        .find(|(n, _)| *n == second)
        .map(|(_, d)| *d)
        .unwrap();
    let third = survivors
        .iter()
        .find(|(n, _)| *n != second)
        .map(|(n, _)| (*n).to_owned())
        .unwrap();
    let termed_at = Instant::now();
    kill(second_daemon, nix::sys::signal::Signal::SIGTERM);
    wait_until(
        "the last node runs the Leader job",
        PATIENCE,
        || last_runner(&cluster).as_deref() == Some(third.as_str()),
        context,
    );
    eprintln!("takeover after SIGTERM: {:?}", termed_at.elapsed());
    wait_until(
        "the released Lease names the last node",
        PATIENCE,
        || {
            cluster
                .get(
                    "coordination.k8s.io/v1",
                    "Lease",
                    "team-a",
                    "cronstable-leader",
                )
                .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
                .is_some_and(|h| h.starts_with(&format!("{third}#")))
        },
        context,
    );
    assert!(
        second_daemon.log().contains("Stopping cluster manager"),
        "{}",
        second_daemon.log()
    );
    // Over the whole run, no second had two runners.
    for (second, nodes) in runners(&read_lines(&cluster.path("fires"))) {
        assert_eq!(nodes.len(), 1, "second {second} ran on {nodes:?}");
    }
}

#[test]
fn the_leader_stands_down_when_the_api_server_stops_answering() {
    let cluster = Cluster::start();
    let a = start_node(&cluster, "a");
    wait_until(
        "the single node leads",
        PATIENCE,
        || a.get_json("/cluster")["is_leader"] == true,
        || a.log(),
    );
    cluster.fake().set_unavailable(true);
    // Within the renew deadline (2 s) plus a round, Leader fires stop;
    // EveryNode fires go on.
    wait_until(
        "leadership lost",
        PATIENCE,
        || a.get_json("/cluster")["is_leader"] == false,
        || a.log(),
    );
    let stopped_at = read_lines(&cluster.path("fires")).len();
    let every_before = read_lines(&cluster.path("every-a")).len();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        read_lines(&cluster.path("fires")).len(),
        stopped_at,
        "no Leader fire without the lease"
    );
    assert!(read_lines(&cluster.path("every-a")).len() > every_before);
    let view = a.get_json("/cluster");
    assert_eq!(view["is_leader"], false, "{view}");
    assert!(a
        .log()
        .contains("cluster: this node lost scheduled-job leadership"));
    assert_eq!(
        a.log()
            .matches("cluster: kubernetes lease round failed")
            .count(),
        1,
        "one warning per outage:\n{}",
        a.log()
    );
    cluster.fake().set_unavailable(false);
    wait_until(
        "leadership back",
        PATIENCE,
        || a.get_json("/cluster")["is_leader"] == true,
        || a.log(),
    );
    let back = read_lines(&cluster.path("fires")).len();
    wait_until(
        "Leader fires again",
        PATIENCE,
        || read_lines(&cluster.path("fires")).len() > back,
        || a.log(),
    );
}

#[test]
fn only_the_leader_writes_cronjobset_status() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let mut how = Launch::new(&cluster);
    how.config = "cluster:\n  backend: kubernetes\n  nodeName: a\n  kubernetes:\n    \
                  leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    \
                  retryPeriodSeconds: 1\n"
        .to_owned();
    let a = KubeDaemon::launch(&cluster, how.clone());
    how.config = how.config.replace("nodeName: a", "nodeName: b");
    let b = KubeDaemon::launch(&cluster, how);
    let set = cronjobset(
        "team-a",
        "nightly",
        json!({}),
        json!({"jobs": [{"name": "tick", "command": "true", "schedule": "* * * * * * *"}]}),
    );
    cluster.apply(set);
    wait_until(
        "a status on the set",
        PATIENCE,
        || cluster.status("team-a", "nightly")["jobs"][0]["lastScheduleTime"].is_string(),
        || format!("a:\n{}\nb:\n{}", a.log(), b.log()),
    );
    let writes = |d: &KubeDaemon| -> u64 { d.kube()["statusWrites"].as_u64().unwrap_or_default() };
    let (leader, follower) = if a.get_json("/cluster")["is_leader"] == true {
        (&a, &b)
    } else {
        (&b, &a)
    };
    assert!(writes(leader) >= 1);
    assert_eq!(writes(follower), 0, "the follower writes nothing");
    // What the API server itself saw (its audit log; each daemon has an
    // identity of its own): every status write came from the leader.
    let status_writers: std::collections::BTreeSet<String> = cluster.real_server(|server| {
        server
            .audit_events()
            .iter()
            .filter(|e| {
                e["objectRef"]["resource"] == "cronjobsets"
                    && e["objectRef"]["subresource"] == "status"
                    && e["verb"] != "get"
            })
            .filter_map(|e| e["user"]["username"].as_str().map(str::to_owned))
            .collect()
    });
    assert_eq!(
        status_writers,
        std::collections::BTreeSet::from([leader.user.clone()]),
        "status writers in the audit log (leader {}, follower {})",
        leader.user,
        follower.user
    );
    // The status names the node that ran the job: the leader's host.
    let result: Value = cluster.status("team-a", "nightly")["jobs"][0]["lastResult"].clone();
    assert!(result["node"].is_string(), "{result}");
}

#[test]
fn a_changed_cluster_section_restarts_the_backend_and_a_removed_one_stops_it() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let a = start_node(&cluster, "a");
    wait_until(
        "the node leads",
        PATIENCE,
        || a.get_json("/cluster")["is_leader"] == true,
        || a.log(),
    );
    // Rename the Lease: the old one is released, the new one taken.
    let config = std::fs::read_to_string(&a.config_path).expect("the config");
    let renamed = config.replace(
        "  kubernetes:\n",
        "  kubernetes:\n    leaseName: renamed-leader\n",
    );
    std::fs::write(&a.config_path, renamed).expect("rewrite the config");
    wait_until(
        "the new Lease is held",
        PATIENCE,
        || {
            cluster
                .get(
                    "coordination.k8s.io/v1",
                    "Lease",
                    "team-a",
                    "renamed-leader",
                )
                .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
                .is_some_and(|h| h.starts_with("a#"))
        },
        || a.log(),
    );
    assert!(
        a.log().contains("cluster: configuration changed, stopping"),
        "{}",
        a.log()
    );
    let old = cluster
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            "team-a",
            "cronstable-leader",
        )
        .expect("the old Lease is still there");
    assert!(
        old["spec"]["holderIdentity"].is_null(),
        "released on the change: {old}"
    );
    assert_eq!(a.get_json("/cluster")["lease"]["name"], "renamed-leader");
    // Remove the section: no election, every job runs, /cluster says so.
    let without = strip_cluster_section(&config);
    std::fs::write(&a.config_path, without).expect("rewrite the config");
    wait_until(
        "no cluster any more",
        PATIENCE,
        || a.get_json("/cluster") == json!({"enabled": false, "peers": []}),
        || a.log(),
    );
    let released = cluster
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            "team-a",
            "renamed-leader",
        )
        .expect("the renamed Lease");
    assert!(released["spec"]["holderIdentity"].is_null(), "{released}");
    let before = read_lines(&cluster.path("fires")).len();
    wait_until(
        "the Leader job still runs without a cluster",
        PATIENCE,
        || read_lines(&cluster.path("fires")).len() > before + 1,
        || a.log(),
    );
}

/// The config without its `cluster:` block (every line from `cluster:` up
/// to the next top-level key).
fn strip_cluster_section(config: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in config.lines() {
        if line.starts_with("cluster:") {
            inside = true;
            continue;
        }
        if inside && !line.starts_with(' ') {
            inside = false;
        }
        if !inside {
            out.push(line);
        }
    }
    out.join("\n") + "\n"
}
