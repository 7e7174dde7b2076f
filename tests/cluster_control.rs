//! Control requests from any replica, black-box: three real daemons
//! electing over one shared directory (`cluster.backend: filesystem`),
//! each with a web listener, as replicas behind one Service would be. A
//! `Leader` job appends "<node> <epoch second>" to a shared file every
//! second; an `EveryNode` job runs on every node.
//!
//! - A follower refuses start, cancel, pause and resume of the Leader job
//!   with a 409 naming the leader (`clusterOwner`), changes nothing, and
//!   still answers for its own `EveryNode` job; `?local=true` starts the
//!   Leader job on the follower on purpose.
//! - `GET /jobs` on every node names the leader as the Leader job's
//!   `clusterOwner`.
//! - A pause posted to the leader is recorded in the shared directory;
//!   after the leader is killed with SIGKILL, the new leader keeps the job
//!   paused (its fires are recorded as skipped, reason `paused`) until the
//!   pause's deadline, and runs it again after.

mod support;

use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;
use support::cluster::{agreed_leader, logs, Member};
use support::daemon::{read_lines, Daemon};
use support::http::{free_port, get, post, request, wait_listening};
use support::kube_daemon::wait_until;

const TTL: f64 = 3.0;
const PATIENCE: Duration = Duration::from_secs(30);
/// How long the leader's pause lasts: past the takeover (ttl + period +
/// margin after the kill) with seconds to spare.
const PAUSE_SECONDS: i64 = 20;

fn start(name: &'static str, shared: &Path) -> Member {
    let port = free_port();
    let shared = shared.display();
    let config = format!(
        "web:\n  listen:\n    - http://127.0.0.1:{port}\n\
         cluster:\n  backend: filesystem\n  nodeName: {name}\n  filesystem:\n    \
         path: {shared}\n    ttl: {TTL}\n\
         jobs:\n  - name: beat\n    command: \"echo {name} $(date +%s) >> {shared}/runs\"\n    \
         schedule: \"* * * * * * *\"\n\
         \x20 - name: everywhere\n    command: \"true\"\n    schedule: \"@hourly\"\n    \
         clusterPolicy: EveryNode\n"
    );
    let daemon = Daemon::start(&config);
    wait_listening(port, PATIENCE);
    Member {
        name,
        web: port,
        daemon: Some(daemon),
    }
}

fn post_json(port: u16, path: &str, body: &Value) -> support::http::Reply {
    request(port, "POST", path, &[], &body.to_string())
}

/// The epoch seconds of the shared file's lines written by `node`.
fn runs_by(shared: &Path, node: &str) -> Vec<i64> {
    read_lines(&shared.join("runs"))
        .iter()
        .filter_map(|line| {
            let (who, at) = line.split_once(' ')?;
            (who == node).then(|| at.trim().parse().ok()).flatten()
        })
        .collect()
}

fn job(member: &Member, name: &str) -> Value {
    let jobs = get(member.web, "/jobs").json();
    jobs.as_array()
        .and_then(|all| all.iter().find(|j| j["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no job {name} on {}: {jobs}", member.name))
}

fn skipped_paused(member: &Member) -> usize {
    let runs = get(member.web, "/jobs/beat/runs").json();
    runs["runs"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["skip_reason"] == "paused").count())
        .unwrap_or(0)
}

fn epoch_of(iso: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(iso)
        .unwrap_or_else(|e| panic!("{iso}: {e}"))
        .timestamp()
}

#[test]
fn control_requests_reach_the_leader_and_its_pauses_survive_a_takeover() {
    let shared_dir = tempfile::tempdir().expect("shared dir");
    let shared = shared_dir.path().to_path_buf();
    let mut nodes = vec![
        start("a", &shared),
        start("b", &shared),
        start("c", &shared),
    ];
    let mut first = 0;
    wait_until(
        "the three nodes to agree on one leader",
        PATIENCE,
        || agreed_leader(&nodes).map(|l| first = l).is_some(),
        || logs(&nodes),
    );
    let leader = nodes[first].name;
    let follower = (first + 1) % 3;
    let f = &nodes[follower];

    // GET /jobs names the node that runs each Leader job, on every node;
    // an EveryNode job has no owner.
    for node in &nodes {
        let beat = job(node, "beat");
        assert_eq!(beat["clusterPolicy"], "Leader", "{beat}");
        assert_eq!(beat["clusterOwner"], leader, "on {}: {beat}", node.name);
        let one = get(node.web, "/jobs/beat").json();
        assert_eq!(one["clusterOwner"], leader, "{one}");
        let everywhere = job(node, "everywhere");
        assert_eq!(everywhere["clusterPolicy"], "EveryNode");
        assert!(everywhere.get("clusterOwner").is_none(), "{everywhere}");
    }

    // A follower refuses every control request for the Leader job with a
    // 409 naming the leader, and nothing changes anywhere.
    let expected_error = format!(
        "job 'beat' runs on node '{leader}', not on this node: send the request to '{leader}'"
    );
    for path in [
        "/jobs/beat/pause",
        "/jobs/beat/resume",
        "/jobs/beat/start",
        "/jobs/beat/cancel",
    ] {
        let reply = post(f.web, path);
        assert_eq!(reply.status, 409, "{path}: {}", reply.body);
        assert_eq!(
            reply.json(),
            json!({"error": expected_error, "clusterOwner": leader}),
            "{path}"
        );
    }
    // The same for a pause with a body (validated first, then routed).
    let reply = post_json(f.web, "/jobs/beat/pause", &json!({"durationSeconds": 60}));
    assert_eq!(reply.status, 409, "{}", reply.body);
    let reply = post_json(f.web, "/jobs/beat/pause", &json!({"durationSeconds": 0}));
    assert_eq!(
        reply.status, 400,
        "a bad window is a 400 anywhere: {}",
        reply.body
    );
    for node in &nodes {
        assert_eq!(job(node, "beat")["paused"], Value::Null, "{}", node.name);
    }
    let seen = runs_by(&shared, leader).len();
    wait_until(
        "the leader to keep running the job",
        PATIENCE,
        || runs_by(&shared, leader).len() >= seen + 2,
        || logs(&nodes),
    );
    // The follower's own EveryNode job answers locally.
    let reply = post_json(
        f.web,
        "/jobs/everywhere/pause",
        &json!({"durationSeconds": 60}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(job(f, "everywhere")["paused"].is_object());
    assert_eq!(post(f.web, "/jobs/everywhere/resume").status, 200);
    assert_eq!(job(f, "everywhere")["paused"], Value::Null);
    // `?local=true` starts the Leader job on the follower on purpose.
    let reply = post(f.web, "/jobs/beat/start?local=true");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json(), json!({"started": "beat"}));
    wait_until(
        "the follower's manual run",
        PATIENCE,
        || !runs_by(&shared, f.name).is_empty(),
        || logs(&nodes),
    );
    assert_eq!(post(f.web, "/jobs/beat/start?local=maybe").status, 400);

    // The leader takes the pause and records it in the shared directory.
    let reply = post_json(
        nodes[first].web,
        "/jobs/beat/pause",
        &json!({"durationSeconds": PAUSE_SECONDS, "note": "migration", "by": "ops"}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let paused = reply.json()["paused"].clone();
    let until = paused["until"].as_str().expect("until").to_owned();
    let until_epoch = epoch_of(&until);
    let since_epoch = epoch_of(paused["since"].as_str().expect("since"));
    // Lines written after the pause was taken (the manual run above came
    // before it).
    let after_pause = |node: &str| -> Vec<i64> {
        runs_by(&shared, node)
            .into_iter()
            .filter(|at| *at > since_epoch)
            .collect()
    };
    let stream = shared
        .join("default")
        .join("records")
        .join("cluster%2Fpauses");
    let files: Vec<String> = std::fs::read_dir(&stream)
        .expect("the pauses stream exists")
        .filter_map(|e| e.ok())
        .map(|e| std::fs::read_to_string(e.path()).expect("readable record"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let record: Value = serde_json::from_str(&files[0]).expect("a JSON record");
    assert_eq!(record["schemaVersion"], "v1", "{record}");
    assert_eq!(record["data"]["job"], "beat", "{record}");
    assert_eq!(record["data"]["note"], "migration", "{record}");
    assert_eq!(record["data"]["by"], "ops", "{record}");
    assert_eq!(
        epoch_of(record["data"]["until"].as_str().expect("until")),
        until_epoch
    );
    wait_until(
        "the leader to skip a paused fire",
        PATIENCE,
        || skipped_paused(&nodes[first]) >= 1,
        || logs(&nodes),
    );

    // SIGKILL the leader: the next leader applies the recorded pause
    // before it fires anything.
    if let Some(d) = nodes[first].daemon.as_mut() {
        d.signal(nix::sys::signal::Signal::SIGKILL);
        d.wait_exit(PATIENCE);
    }
    nodes[first].daemon = None;
    let mut second = first;
    wait_until(
        "the survivors to agree on a new leader",
        PATIENCE,
        || {
            agreed_leader(&nodes)
                .map(|l| second = l)
                .is_some_and(|_| second != first)
        },
        || logs(&nodes),
    );
    let next = &nodes[second];
    // The new leader reads the record as it takes over (its fires wait
    // for the answer, which the runs file checks below).
    wait_until(
        "the new leader to show the recorded pause",
        PATIENCE,
        || job(next, "beat")["paused"].is_object(),
        || logs(&nodes),
    );
    let now = chrono::Utc::now().timestamp();
    assert!(
        now < until_epoch - 2,
        "the takeover left no time to check the pause ({now} vs {until_epoch})"
    );
    let beat = job(next, "beat");
    assert_eq!(beat["clusterOwner"], next.name, "{beat}");
    assert_eq!(beat["paused"]["until"], until, "{beat}");
    assert_eq!(beat["paused"]["note"], "migration", "{beat}");
    assert_eq!(beat["paused"]["by"], "ops", "{beat}");
    assert_eq!(beat["paused"]["since"], paused["since"], "{beat}");
    wait_until(
        "the new leader to skip a paused fire",
        PATIENCE,
        || skipped_paused(next) >= 1,
        || logs(&nodes),
    );
    assert!(
        next.log().contains("Job beat paused until ")
            && next.log().contains("as recorded in the cluster: migration"),
        "{}",
        next.log()
    );
    // The other survivor sends control requests to the new leader.
    let other = 3 - first - second;
    let reply = post(nodes[other].web, "/jobs/beat/resume");
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert_eq!(reply.json()["clusterOwner"], next.name);

    // After the deadline the new leader runs the job again; never before.
    wait_until(
        "the new leader to run the job after the pause",
        Duration::from_secs(PAUSE_SECONDS as u64) + PATIENCE,
        || after_pause(next.name).len() >= 2,
        || logs(&nodes),
    );
    let early: Vec<i64> = after_pause(next.name)
        .into_iter()
        .filter(|at| *at < until_epoch)
        .collect();
    assert!(
        early.is_empty(),
        "the new leader ran the paused job before {until} at {early:?}\n{}",
        logs(&nodes)
    );
    assert_eq!(job(next, "beat")["paused"], Value::Null);
}
