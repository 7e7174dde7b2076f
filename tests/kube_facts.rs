//! The Kubernetes-native durable facts (`--kube` without `state.path`,
//! docs/state.md "Kubernetes without a volume") against a real
//! kube-apiserver (from `KUBEBUILDER_ASSETS`; skipped, saying so, when
//! unset): a pause, a pending retry, the `@reboot` marker and the counters
//! survive a rollout (SIGTERM, start again); a pause the leader accepts
//! holds on the follower within seconds and on the survivor after the
//! leader is killed; a retry the leader leaves pending when a rollout
//! stops it runs once, on the new leader, at its deadline; and the facts
//! ConfigMap is written at most once a second while a job fires every
//! second.

mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::http::request;
use support::kube_daemon::{read_lines, wait_until, Cluster, KubeDaemon, Launch};

const PATIENCE: Duration = Duration::from_secs(30);
const FACTS: &str = "cronstable-facts";

fn facts(cluster: &Cluster) -> Value {
    cluster
        .get("v1", "ConfigMap", &cluster.namespace, FACTS)
        .map(|cm| cm["data"].clone())
        .unwrap_or(Value::Null)
}

/// One key of the facts ConfigMap, parsed (Null when absent).
fn fact(cluster: &Cluster, key: &str) -> Value {
    facts(cluster)[key]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null)
}

/// How many hosts' `@reboot` markers of `job` the facts hold (keyed
/// `<job>\n<host>`).
fn reboot_markers(cluster: &Cluster, job: &str) -> usize {
    let prefix = format!("{job}\n");
    fact(cluster, "reboot.json")
        .as_object()
        .map_or(0, |markers| {
            markers
                .iter()
                .filter(|(key, fact)| key.starts_with(&prefix) && fact.is_object())
                .count()
        })
}

fn stop(daemon: &mut KubeDaemon) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let start = Instant::now();
    while daemon.exited().is_none() {
        assert!(
            start.elapsed() < PATIENCE,
            "no exit after SIGTERM:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pause(daemon: &KubeDaemon, job: &str, seconds: i64) -> Value {
    let body = json!({"durationSeconds": seconds, "note": "rollout", "by": "ops"});
    let reply = request(
        daemon.port,
        "POST",
        &format!("/jobs/{job}/pause"),
        &[],
        &body.to_string(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["paused"].clone()
}

fn successes(daemon: &KubeDaemon, job: &str) -> f64 {
    daemon
        .metric(
            "cronstable_job_runs_total",
            &[("job_name", job), ("status", "success")],
        )
        .unwrap_or(0.0)
}

const ROLLOUT_JOBS: &str = "jobs:\n  - name: beat\n    command: 'true'\n    \
     schedule: '* * * * * * *'\n  - name: flaky\n    \
     command: 'date +%s.%N >> {dir}/tries; exit 1'\n    schedule: '@reboot'\n    \
     onFailure:\n      retry:\n        maximumRetries: 1\n        initialDelay: 20\n        \
     maximumDelay: 60\n        backoffMultiplier: 2\n";

fn rollout_daemon(cluster: &Cluster) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = ROLLOUT_JOBS.to_owned();
    KubeDaemon::launch(cluster, how)
}

#[test]
fn pauses_retries_reboot_markers_and_counters_survive_a_rollout() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let mut first = rollout_daemon(&cluster);
    first.wait_for_log("scheduled to be retried (#1) in 20.0 seconds", 1, PATIENCE);
    wait_until(
        "the pending retry and the @reboot marker in the facts ConfigMap",
        PATIENCE,
        || {
            fact(&cluster, "retries.json")["flaky"]["attempt"] == 1
                && reboot_markers(&cluster, "flaky") == 1
        },
        || format!("{}\n{}", facts(&cluster), first.log()),
    );
    wait_until(
        "beat to succeed",
        PATIENCE,
        || successes(&first, "beat") >= 1.0,
        || first.log(),
    );
    let paused = pause(&first, "beat", 600);
    wait_until(
        "the pause and the counters in the facts ConfigMap",
        PATIENCE,
        || {
            fact(&cluster, "pauses.json")["beat"]["k"] == "p"
                && fact(&cluster, "counters.json")["jobs"]["beat"]["runs"]["success"]
                    .as_f64()
                    .is_some_and(|n| n >= 1.0)
        },
        || format!("{}\n{}", facts(&cluster), first.log()),
    );
    let before = successes(&first, "beat");
    stop(&mut first);
    // The shutdown's counters snapshot is written before the exit.
    let stored = fact(&cluster, "counters.json")["jobs"]["beat"]["runs"]["success"]
        .as_f64()
        .unwrap_or(0.0);
    assert_eq!(stored, before, "{}", facts(&cluster));

    let second = rollout_daemon(&cluster);
    second.wait_for_log(
        "re-armed pending retry #1 from the durable ledger",
        1,
        PATIENCE,
    );
    let beat = second.job("beat").expect("beat");
    assert_eq!(beat["paused"]["until"], paused["until"], "{beat}");
    assert_eq!(beat["paused"]["by"], "ops", "{beat}");
    assert!(
        second
            .log()
            .contains("Job flaky (@reboot) already ran during this OS boot; skipping"),
        "{}",
        second.log()
    );
    assert!(successes(&second, "beat") >= before, "counters carried on");
    // The retry fires at its absolute deadline, once; the boot run is not
    // repeated.
    let tries = || read_lines(&cluster.path("tries"));
    wait_until(
        "the retry",
        PATIENCE,
        || tries().len() >= 2,
        || second.log(),
    );
    std::thread::sleep(Duration::from_secs(2));
    let tries = tries();
    assert_eq!(tries.len(), 2, "{tries:?}");
    let (boot, retry): (f64, f64) = (tries[0].parse().unwrap(), tries[1].parse().unwrap());
    assert!(retry - boot >= 19.5, "too early: {}", retry - boot);
    wait_until(
        "the settled retry to leave the ConfigMap",
        PATIENCE,
        || fact(&cluster, "retries.json").get("flaky").is_none(),
        || facts(&cluster).to_string(),
    );
    // Paused: no success since the pause.
    assert_eq!(successes(&second, "beat"), before, "{}", second.log());
}

fn cluster_daemon(cluster: &Cluster, node: &str) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    \
         leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
         jobs:\n  - name: beat\n    command: 'true'\n    schedule: '* * * * * * *'\n"
    );
    KubeDaemon::launch(cluster, how)
}

/// The ConfigMap writes (create, patch, update) `user` made to the facts
/// ConfigMap, by the second they were received.
fn facts_writes(cluster: &Cluster, user: &str) -> Vec<i64> {
    cluster
        .real_server(|s| s.audit_events())
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete")
        .filter(|e| e["user"]["username"] == user)
        .filter(|e| e["objectRef"]["resource"] == "configmaps")
        .filter(|e| matches!(e["verb"].as_str(), Some("create" | "patch" | "update")))
        .filter(|e| e["objectRef"]["name"] == FACTS || e["verb"] == "create")
        .filter_map(|e| {
            let at = e["requestReceivedTimestamp"].as_str()?;
            Some(chrono::DateTime::parse_from_rfc3339(at).ok()?.timestamp())
        })
        .collect()
}

#[test]
fn a_pause_holds_on_every_replica_and_after_a_leader_change_with_at_most_a_write_a_second() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let a = cluster_daemon(&cluster, "node-a");
    let b = cluster_daemon(&cluster, "node-b");
    let all = [&a, &b];
    let mut leading = None;
    wait_until(
        "one leader",
        PATIENCE,
        || {
            let views: Vec<Value> = all.iter().map(|d| d.get_json("/cluster")).collect();
            let leaders: Vec<usize> = (0..2).filter(|i| views[*i]["is_leader"] == true).collect();
            leading = (leaders.len() == 1).then(|| leaders[0]);
            leading.is_some()
        },
        || format!("{}\n{}", a.log(), b.log()),
    );
    let i = leading.expect("a leader");
    let (leader, follower) = (all[i], all[1 - i]);
    // Fires every second for a while: the writes stay at one a second.
    wait_until(
        "beat to succeed five times on the leader",
        PATIENCE,
        || successes(leader, "beat") >= 5.0,
        || leader.log(),
    );
    let window_start = chrono::Utc::now().timestamp();
    std::thread::sleep(Duration::from_secs(10));
    let window_end = chrono::Utc::now().timestamp();
    let writes: Vec<i64> = facts_writes(&cluster, &leader.user)
        .into_iter()
        .filter(|at| (window_start..window_end).contains(at))
        .collect();
    let mut per_second = std::collections::BTreeMap::new();
    for at in &writes {
        *per_second.entry(*at).or_insert(0) += 1;
    }
    assert!(
        per_second.values().all(|n| *n <= 1),
        "more than one write in a second: {per_second:?}"
    );
    assert!(!writes.is_empty(), "the outcomes were written");
    assert!(
        facts_writes(&cluster, &follower.user).is_empty(),
        "the follower wrote the facts"
    );
    eprintln!(
        "facts ConfigMap writes while beat fires every second: {} in {} s",
        writes.len(),
        window_end - window_start
    );

    // The leader's pause reaches the follower through the ConfigMap.
    let paused = pause(leader, "beat", 60);
    wait_until(
        "the follower to show the pause",
        Duration::from_secs(5),
        || {
            follower
                .job("beat")
                .is_some_and(|b| b["paused"]["until"] == paused["until"])
        },
        || format!("{}\n{}", facts(&cluster), follower.log()),
    );
    let counted = successes(leader, "beat");
    // SIGKILL the leader: the follower takes over with the pause.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(leader.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the leader");
    wait_until(
        "the survivor to lead",
        PATIENCE,
        || follower.get_json("/cluster")["is_leader"] == true,
        || follower.log(),
    );
    std::thread::sleep(Duration::from_secs(3));
    let beat = follower.job("beat").expect("beat");
    assert_eq!(beat["paused"]["until"], paused["until"], "{beat}");
    assert_eq!(
        successes(follower, "beat"),
        0.0,
        "the survivor ran a paused job"
    );
    assert!(counted >= 5.0);
}

fn retry_daemon(cluster: &Cluster, node: &str) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    \
         leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
         jobs:\n  - name: flaky\n    \
         command: 'echo $FACTS_NODE $(date +%s.%N) >> {{dir}}/tries; exit 1'\n    \
         schedule: '@reboot'\n    onFailure:\n      retry:\n        maximumRetries: 1\n        \
         initialDelay: 15\n        maximumDelay: 60\n        backoffMultiplier: 2\n"
    );
    // The same job on both nodes (one digest); the node it ran on comes
    // from the daemon's environment.
    how.env.push(("FACTS_NODE".to_owned(), node.to_owned()));
    KubeDaemon::launch(cluster, how)
}

#[test]
fn a_retry_the_leader_leaves_pending_in_a_rollout_runs_once_on_the_new_leader_at_its_deadline() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let mut a = retry_daemon(&cluster, "node-a");
    wait_until(
        "node-a to lead",
        PATIENCE,
        || a.get_json("/cluster")["is_leader"] == true,
        || a.log(),
    );
    let b = retry_daemon(&cluster, "node-b");
    a.wait_for_log("scheduled to be retried (#1) in 15.0 seconds", 1, PATIENCE);
    wait_until(
        "the pending retry in the facts ConfigMap",
        PATIENCE,
        || fact(&cluster, "retries.json")["flaky"]["attempt"] == 1,
        || format!("{}\n{}", facts(&cluster), a.log()),
    );
    // The follower arms nothing of the leader's: it only reads.
    assert!(
        !b.log().contains("re-armed pending retry"),
        "the follower armed the leader's retry:\n{}",
        b.log()
    );
    // A rollout stops the leader before the retry is due.
    stop(&mut a);
    wait_until(
        "node-b to lead",
        PATIENCE,
        || b.get_json("/cluster")["is_leader"] == true,
        || b.log(),
    );
    b.wait_for_log(
        "Job flaky: re-armed pending retry #1 from the durable ledger",
        1,
        PATIENCE,
    );
    let tries = || cluster.lines("tries");
    wait_until(
        "the retry on node-b",
        PATIENCE,
        || tries().len() >= 2,
        || b.log(),
    );
    // Once: the boot run on node-a, the retry on node-b at its deadline,
    // nothing more.
    std::thread::sleep(Duration::from_secs(3));
    let tries = tries();
    assert_eq!(tries.len(), 2, "{tries:?}\n{}", b.log());
    let parse = |line: &str| -> (String, f64) {
        let (node, at) = line.split_once(' ').expect("node and time");
        (node.to_owned(), at.parse().expect("a time"))
    };
    let (first, boot) = parse(&tries[0]);
    let (second, retry) = parse(&tries[1]);
    assert_eq!((first.as_str(), second.as_str()), ("node-a", "node-b"));
    assert!(retry - boot >= 14.5, "too early: {}", retry - boot);
    wait_until(
        "the settled retry to leave the ConfigMap",
        PATIENCE,
        || fact(&cluster, "retries.json").get("flaky").is_none(),
        || facts(&cluster).to_string(),
    );
}

/// The measurement of docs/performance.md ("the facts ConfigMap"): the
/// facts writes and reads per second of one scheduler at idle (a job a
/// day) and with 200 jobs firing every second. Run by hand:
/// `cargo test --test kube_facts -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, printed; run by hand"]
fn measure_facts_requests_at_idle_and_at_200_fires_a_second() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let window = Duration::from_secs(20);
    for (label, jobs, schedule) in [
        ("idle", 1, "0 3 * * *"),
        ("200 fires/s", 200, "* * * * * * *"),
    ] {
        let mut config = String::from("jobs:\n");
        for i in 0..jobs {
            config.push_str(&format!(
                "  - name: job-{i}\n    command: 'true'\n    schedule: '{schedule}'\n"
            ));
        }
        let mut how = Launch::new(&cluster).args(&["--cronjobsets", "none"]);
        how.config = config;
        let mut daemon = KubeDaemon::launch(&cluster, how);
        std::thread::sleep(Duration::from_secs(5));
        let from = chrono::Utc::now().timestamp();
        std::thread::sleep(window);
        let to = chrono::Utc::now().timestamp();
        let writes = facts_writes(&cluster, &daemon.user)
            .into_iter()
            .filter(|at| (from..to).contains(at))
            .count();
        let reads = cluster
            .real_server(|s| s.audit_events())
            .iter()
            .filter(|e| e["stage"] == "ResponseComplete")
            .filter(|e| e["user"]["username"] == daemon.user.as_str())
            .filter(|e| e["verb"] == "get" && e["objectRef"]["name"] == FACTS)
            .filter(|e| {
                e["requestReceivedTimestamp"]
                    .as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .is_some_and(|t| (from..to).contains(&t.timestamp()))
            })
            .count();
        let seconds = (to - from) as f64;
        eprintln!(
            "facts ConfigMap, {label}: {:.2} writes/s, {:.2} reads/s over {seconds} s",
            writes as f64 / seconds,
            reads as f64 / seconds
        );
        stop(&mut daemon);
    }
}
