//! What the leadership store remembers across a failover, end to end:
//! real daemons on a real kube-apiserver (from `KUBEBUILDER_ASSETS`;
//! skipped, saying so, when unset) with `cluster: {backend:
//! kubernetes}`. A Leader `@reboot` job runs once in the cluster (not once
//! per replica, not again on the node that takes over), and a new leader
//! catches up the fires of a job with `onMissed: run-once` that fell in
//! the takeover window.

mod support;

use std::time::Duration;
use support::kube_daemon::{read_lines, wait_until, Cluster, KubeDaemon, Launch};

const PATIENCE: Duration = Duration::from_secs(30);

fn section(node: &str, jobs: &str) -> String {
    format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    \
         leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
         jobs:\n{jobs}"
    )
}

fn start(cluster: &Cluster, node: &str, jobs: &str) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = section(node, &jobs.replace("{node}", node));
    KubeDaemon::launch(cluster, how)
}

fn kill(daemon: &KubeDaemon, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon.pid() as i32), signal)
        .expect("signal the daemon");
}

fn leader<'a>(daemons: &[(&'a str, &'a KubeDaemon)]) -> Option<(&'a str, &'a KubeDaemon)> {
    daemons
        .iter()
        .find(|(_, d)| d.get_json("/cluster")["is_leader"] == true)
        .copied()
}

/// The same jobs on every replica (the record is scoped to the job-set
/// id, so the replicas' configs must match): each run writes the pid of
/// the daemon that started it (the shell's parent).
const REBOOT_JOBS: &str = "  - name: boot\n    command: echo $PPID >> {dir}/boots\n    \
     schedule: '@reboot'\n  - name: boot-everywhere\n    command: echo $PPID >> \
     {dir}/boots-everywhere\n    schedule: '@reboot'\n    clusterPolicy: EveryNode\n";

#[test]
fn a_leader_reboot_job_runs_once_per_cluster_across_takeovers_and_restarts() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let a = start(&cluster, "a", REBOOT_JOBS);
    let b = start(&cluster, "b", REBOOT_JOBS);
    let c = start(&cluster, "c", REBOOT_JOBS);
    let all = [("a", &a), ("b", &b), ("c", &c)];
    let context = || format!("a:\n{}\nb:\n{}\nc:\n{}", a.log(), b.log(), c.log());
    wait_until(
        "the @reboot job ran",
        PATIENCE,
        || !read_lines(&cluster.path("boots")).is_empty(),
        context,
    );
    wait_until(
        "EveryNode @reboot ran on every node",
        PATIENCE,
        || read_lines(&cluster.path("boots-everywhere")).len() == 3,
        context,
    );
    let (first, first_daemon) = leader(&all).expect("a leader");
    assert_eq!(
        read_lines(&cluster.path("boots")),
        vec![first_daemon.pid().to_string()],
        "the leader ran it"
    );
    assert!(first_daemon
        .log()
        .contains("cluster: running deferred @reboot job boot (this node is the elected owner)"));
    // The followers retire it once they read the record.
    for (name, daemon) in &all {
        if *name != first {
            daemon.wait_for_log(
                "cluster: deferred @reboot job boot already ran in the cluster; standing down here",
                1,
                PATIENCE,
            );
        }
    }
    // Under election GET /jobs shows each job's policy.
    let boot = first_daemon.job("boot").expect("boot is listed");
    assert_eq!(boot["clusterPolicy"], "Leader", "{boot}");
    assert!(boot.get("rebootPending").is_none(), "it ran: {boot}");
    let everywhere = first_daemon.job("boot-everywhere").expect("listed");
    assert_eq!(everywhere["clusterPolicy"], "EveryNode", "{everywhere}");
    assert!(
        everywhere.get("slot").is_none(),
        "node-scoped: {everywhere}"
    );
    // The Lease carries the record, scoped to the job-set id.
    let lease = cluster
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            "team-a",
            "cronstable-leader",
        )
        .expect("the Lease");
    let record = lease["metadata"]["annotations"]["cronstable.io/reboot-ran"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(record.contains("\"jobs\":[\"boot\"]"), "{lease}");
    // The leader (the facts' writer) has recorded its own run of the
    // EveryNode job for this boot (keyed `<job>\n<host>`).
    wait_until(
        "the leader's EveryNode @reboot marker in the facts ConfigMap",
        PATIENCE,
        || {
            let markers = cluster
                .get("v1", "ConfigMap", "team-a", "cronstable-facts")
                .and_then(|cm| cm["data"]["reboot.json"].as_str().map(str::to_owned))
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .unwrap_or_default();
            markers
                .as_object()
                .is_some_and(|m| m.keys().any(|k| k.starts_with("boot-everywhere\n")))
        },
        context,
    );

    // kill -9 the leader: the new one does not run it again.
    kill(first_daemon, nix::sys::signal::Signal::SIGKILL);
    let survivors: Vec<(&str, &KubeDaemon)> =
        all.iter().filter(|(n, _)| *n != first).copied().collect();
    wait_until(
        "a survivor leads",
        PATIENCE,
        || leader(&survivors).is_some(),
        context,
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        read_lines(&cluster.path("boots")),
        vec![first_daemon.pid().to_string()],
        "{}",
        context()
    );
    // A restarted replica with the same job set stands down too, and its
    // EveryNode @reboot job, which already ran on this node during this
    // OS boot, is not run again.
    let again = start(&cluster, first, REBOOT_JOBS);
    again.wait_for_log(
        "cluster: deferred @reboot job boot already ran in the cluster; standing down here",
        1,
        PATIENCE,
    );
    again.wait_for_log(
        "Job boot-everywhere (@reboot) already ran during this OS boot; skipping",
        1,
        PATIENCE,
    );
    assert_eq!(read_lines(&cluster.path("boots")).len(), 1, "{}", context());
    assert_eq!(
        read_lines(&cluster.path("boots-everywhere")).len(),
        3,
        "{}\nrestarted:\n{}",
        context(),
        again.log()
    );
}

const CATCH_UP_JOB: &str =
    "  - name: tick\n    command: echo {node} $(date +%s) >> {dir}/fires\n    \
     schedule: '* * * * * * *'\n    onMissed: run-once\n";

#[test]
fn a_new_leader_catches_up_the_takeover_window_of_a_run_once_job() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let a = start(&cluster, "a", CATCH_UP_JOB);
    let b = start(&cluster, "b", CATCH_UP_JOB);
    let all = [("a", &a), ("b", &b)];
    let context = || format!("a:\n{}\nb:\n{}", a.log(), b.log());
    wait_until(
        "three seconds of fires",
        PATIENCE,
        || read_lines(&cluster.path("fires")).len() >= 3,
        context,
    );
    let (first, first_daemon) = leader(&all).expect("a leader");
    let (second, second_daemon) = all
        .iter()
        .find(|(n, _)| *n != first)
        .copied()
        .expect("two nodes");
    // Each fire is recorded in the Lease before it runs.
    let lease = cluster
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            "team-a",
            "cronstable-leader",
        )
        .expect("the Lease");
    assert!(
        lease["metadata"]["annotations"]["cronstable.io/last-fires"]
            .as_str()
            .is_some_and(|f| f.contains("\"tick\"")),
        "{lease}"
    );
    kill(first_daemon, nix::sys::signal::Signal::SIGKILL);
    wait_until(
        "the survivor catches up the window",
        PATIENCE,
        || {
            second_daemon
                .log()
                .contains("catch-up: replaying 1 missed run(s) for tick")
        },
        context,
    );
    wait_until(
        "the survivor runs the job",
        PATIENCE,
        || {
            read_lines(&cluster.path("fires"))
                .iter()
                .filter(|l| l.starts_with(&format!("{second} ")))
                .count()
                >= 2
        },
        context,
    );
    // The survivor never ran the job before it led, and each second it
    // led has one run, plus the one catch-up run.
    let lines = read_lines(&cluster.path("fires"));
    let first_runs: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix(&format!("{first} ")))
        .filter_map(|s| s.parse().ok())
        .collect();
    let second_runs: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix(&format!("{second} ")))
        .filter_map(|s| s.parse().ok())
        .collect();
    let last_of_first = *first_runs.iter().max().expect("the first leader ran");
    let first_of_second = *second_runs.iter().min().expect("the survivor ran");
    assert!(
        first_of_second > last_of_first,
        "no overlap between the leaders: {lines:?}"
    );
    let mut seconds = second_runs.clone();
    seconds.sort_unstable();
    let doubled = seconds.windows(2).filter(|w| w[0] == w[1]).count();
    assert!(
        doubled <= 1,
        "only the catch-up run may share a second with a scheduled one: {lines:?}"
    );
}
