//! Control requests from any replica on the Kubernetes Lease backend, end
//! to end: two real daemons with `cluster: {backend: kubernetes}` on the
//! fake API server, and on a real kube-apiserver (from
//! `KUBEBUILDER_ASSETS`; skipped, saying so, when unset). A `Leader` job
//! appends "<node> <epoch second>" to a file every second.
//!
//! The follower refuses a pause with a 409 naming the leader; the
//! leader's pause lands in the Lease (`cronstable.io/pauses`); after the
//! leader is killed with SIGKILL the survivor takes the Lease over, keeps
//! the job paused (fires skipped, reason `paused`) and runs it again only
//! after the deadline.

mod support;

use serde_json::{json, Value};
use std::time::Duration;
use support::http::{post, request};
use support::kube_daemon::{read_lines, wait_until, Cluster, KubeDaemon, Launch};

const PATIENCE: Duration = Duration::from_secs(30);
/// Past the takeover (lease duration + retry period after the kill).
const PAUSE_SECONDS: i64 = 15;

const JOBS: &str = "  - name: beat\n    command: echo {node} $(date +%s) >> {dir}/runs\n    \
     schedule: '* * * * * * *'\n";

fn start(cluster: &Cluster, node: &str) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    \
         leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
         jobs:\n{}",
        JOBS.replace("{node}", node)
    );
    KubeDaemon::launch(cluster, how)
}

fn runs_by(cluster: &Cluster, node: &str) -> Vec<i64> {
    read_lines(&cluster.path("runs"))
        .iter()
        .filter_map(|line| {
            let (who, at) = line.split_once(' ')?;
            (who == node).then(|| at.trim().parse().ok()).flatten()
        })
        .collect()
}

fn epoch_of(iso: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(iso)
        .unwrap_or_else(|e| panic!("{iso}: {e}"))
        .timestamp()
}

fn skipped_paused(daemon: &KubeDaemon) -> usize {
    daemon.get_json("/jobs/beat/runs")["runs"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["skip_reason"] == "paused").count())
        .unwrap_or(0)
}

fn pause_survives_a_lease_takeover(cluster: &Cluster) {
    let a = start(cluster, "a");
    let b = start(cluster, "b");
    let all = [("a", &a), ("b", &b)];
    let context = || format!("a:\n{}\nb:\n{}", a.log(), b.log());
    let mut leading = None;
    wait_until(
        "one leader both replicas agree on",
        PATIENCE,
        || {
            let views: Vec<Value> = all.iter().map(|(_, d)| d.get_json("/cluster")).collect();
            let leaders: Vec<usize> = (0..2).filter(|i| views[*i]["is_leader"] == true).collect();
            match leaders[..] {
                [i] if views.iter().all(|v| v["leader"] == all[i].0) => {
                    leading = Some(i);
                    true
                }
                _ => false,
            }
        },
        context,
    );
    let i = leading.expect("a leader");
    let (leader, leader_daemon) = all[i];
    let (survivor, survivor_daemon) = all[1 - i];

    // The follower names the leader and refuses the pause.
    let beat = survivor_daemon.job("beat").expect("beat is listed");
    assert_eq!(beat["clusterOwner"], leader, "{beat}");
    let reply = post(survivor_daemon.port, "/jobs/beat/pause");
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(
        reply.json(),
        json!({
            "error": format!("job 'beat' runs on node '{leader}', not on this node: send the request to '{leader}'"),
            "clusterOwner": leader,
        })
    );
    assert_eq!(
        survivor_daemon.job("beat").expect("beat")["paused"],
        Value::Null
    );

    // The leader takes it and records it in the Lease.
    let body = json!({"durationSeconds": PAUSE_SECONDS, "note": "migration", "by": "ops"});
    let reply = request(
        leader_daemon.port,
        "POST",
        "/jobs/beat/pause",
        &[],
        &body.to_string(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let paused = reply.json()["paused"].clone();
    let until = paused["until"].as_str().expect("until").to_owned();
    let (since_epoch, until_epoch) = (
        epoch_of(paused["since"].as_str().expect("since")),
        epoch_of(&until),
    );
    let lease = cluster
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            &cluster.namespace,
            "cronstable-leader",
        )
        .expect("the Lease");
    let record: Value = serde_json::from_str(
        lease["metadata"]["annotations"]["cronstable.io/pauses"]
            .as_str()
            .unwrap_or_else(|| panic!("no pauses annotation: {lease}")),
    )
    .expect("the annotation is JSON");
    assert_eq!(record["beat"]["note"], "migration", "{record}");
    assert_eq!(
        epoch_of(record["beat"]["until"].as_str().expect("until")),
        until_epoch
    );

    // SIGKILL the leader: the survivor takes the Lease over with the pause.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(leader_daemon.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the leader");
    wait_until(
        "the survivor to lead with the recorded pause",
        PATIENCE,
        || {
            survivor_daemon.get_json("/cluster")["is_leader"] == true
                && survivor_daemon
                    .job("beat")
                    .is_some_and(|b| b["paused"].is_object())
        },
        context,
    );
    let beat = survivor_daemon.job("beat").expect("beat");
    assert_eq!(beat["paused"]["until"], until, "{beat}");
    assert_eq!(beat["paused"]["by"], "ops", "{beat}");
    assert_eq!(beat["clusterOwner"], survivor, "{beat}");
    assert!(
        chrono::Utc::now().timestamp() < until_epoch - 1,
        "the takeover left no time to see the pause hold"
    );
    wait_until(
        "the survivor to skip a paused fire",
        PATIENCE,
        || skipped_paused(survivor_daemon) >= 1,
        context,
    );
    let after_pause = || -> Vec<i64> {
        runs_by(cluster, survivor)
            .into_iter()
            .filter(|at| *at > since_epoch)
            .collect()
    };
    wait_until(
        "the survivor to run the job after the deadline",
        Duration::from_secs(PAUSE_SECONDS as u64) + PATIENCE,
        || after_pause().len() >= 2,
        context,
    );
    let early: Vec<i64> = after_pause()
        .into_iter()
        .filter(|at| *at < until_epoch)
        .collect();
    assert!(
        early.is_empty(),
        "the survivor ran the paused job before {until}: {early:?}\n{}",
        context()
    );
}

#[test]
fn a_pause_survives_a_lease_takeover_on_the_fake_api_server() {
    pause_survives_a_lease_takeover(&Cluster::start());
}

#[test]
fn a_pause_survives_a_lease_takeover_on_a_real_api_server() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    pause_survives_a_lease_takeover(&cluster);
}
