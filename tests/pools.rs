//! Resource pools, black-box: real jobs under the built daemon (one, or
//! two sharing a state store), each run appending its start and end to a
//! file, read back to check the pool's capacity held; the queue's refusal
//! and the views through the HTTP API; a lost claim cancelling its run;
//! the load-time rules through `-v`.

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http;
use support::pools::{assert_no_overlap, intervals, pooled, wait_runs, LONG};

fn header(port: u16, store: &str) -> String {
    format!(
        "web:\n  listen:\n    - http://127.0.0.1:{port}\nstate:\n  path: {store}\npools:\n  \
         one:\n    slots: 1\n"
    )
}

#[test]
fn two_jobs_on_a_one_slot_pool_never_overlap_and_the_api_shows_the_pool() {
    let port = http::free_port();
    let jobs = pooled("a", "one", "{dir}/runs.log", "") + &pooled("b", "one", "{dir}/runs.log", "");
    let daemon = Daemon::start(&format!("{}jobs:\n{jobs}", header(port, "{dir}/state")));
    http::wait_listening(port, Duration::from_secs(20));

    // While it runs: one holder, the other job waiting behind it.
    let start = Instant::now();
    let (pools, jobs) = loop {
        let pools = http::get(port, "/pools").json();
        let jobs = http::get(port, "/jobs").json();
        let held = pools[0]["used"] == 1;
        let waiting = jobs.as_array().is_some_and(|j| {
            j.iter()
                .any(|j| !j["pool"]["queued"].as_array().unwrap().is_empty())
        });
        if held && waiting {
            break (pools, jobs);
        }
        assert!(start.elapsed() < LONG, "{pools}\n{jobs}\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    let pool = &pools[0];
    assert_eq!(pool["name"], "one");
    assert_eq!(pool["slots"], 1);
    assert_eq!(pool["configuredSlots"], 1);
    assert_eq!(pool["maxQueued"], 1000);
    let running: Vec<&Value> = pool["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["state"] == "running")
        .collect();
    assert!(running.len() <= 1, "{pool}");
    for job in jobs.as_array().unwrap() {
        let view = &job["pool"];
        assert_eq!(view["name"], "one", "{job}");
        assert_eq!(view["slots"], 1);
        assert_eq!(view["priority"], 0);
        for queued in view["queued"].as_array().unwrap() {
            assert_eq!(queued["state"], "queued");
            assert_eq!(queued["job"], job["name"]);
            assert!(queued["position"].as_u64().unwrap() >= 1, "{queued}");
            assert!(queued["waitingReason"].is_string(), "{queued}");
        }
    }
    let metrics = http::get(port, "/metrics").body;
    assert!(
        metrics.contains("cronstable_pool_slots{pool=\"one\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cronstable_pool_queued{pool=\"one\"}"),
        "{metrics}"
    );

    let lines = wait_runs(&daemon.path("runs.log"), 8, &|| daemon.log());
    let runs = intervals(&lines);
    assert_no_overlap(&runs);
    for job in ["a ", "b "] {
        assert!(
            runs.iter().any(|r| r.2.starts_with(job)),
            "{job} never ran: {runs:?}"
        );
    }
    // The document is the original's, in the state store.
    let doc = std::fs::read_to_string(daemon.path("state/default/docs/scheduler-pools/one.doc"))
        .expect("the pool document");
    assert!(doc.contains("\"schemaVersion\":\"v1\""), "{doc}");
}

#[test]
fn two_daemons_sharing_one_store_never_overlap_on_a_one_slot_pool() {
    let shared = tempfile::tempdir().expect("temp dir");
    let store = shared.path().join("state").display().to_string();
    let log = shared.path().join("runs.log");
    let election = shared.path().join("election").display().to_string();
    // Each node's entries are its own (EveryNode work stays on the node
    // that queued it), so both must win the one slot in turn; the nodes
    // share a host, so the cluster section names them.
    let node = |name: &str| {
        let port = http::free_port();
        let extra = format!(
            "    clusterPolicy: EveryNode\n    environment:\n      - key: NODE\n        \
             value: {name}\n"
        );
        let jobs = pooled("a", "one", &log.display().to_string(), &extra)
            + &pooled("b", "one", &log.display().to_string(), &extra);
        let cluster = format!(
            "cluster:\n  backend: filesystem\n  nodeName: {name}\n  filesystem:\n    path: \
             {election}\n"
        );
        let daemon = Daemon::start(&format!("{}{cluster}jobs:\n{jobs}", header(port, &store)));
        http::wait_listening(port, Duration::from_secs(20));
        (daemon, port)
    };
    let (first, _) = node("n1");
    let (second, _) = node("n2");
    let logs = || format!("{}\n---\n{}", first.log(), second.log());
    let lines = wait_runs(&log, 12, &logs);
    let runs = intervals(&lines);
    assert_no_overlap(&runs);
    for who in [" n1", " n2"] {
        assert!(
            runs.iter().any(|r| r.2.ends_with(who)),
            "node{who} never ran a job: {runs:?}\n{}",
            logs()
        );
    }
}

#[test]
fn a_full_queue_refuses_with_the_original_reason_and_waiting_work_can_be_cancelled() {
    let port = http::free_port();
    let config = format!(
        "{}  two:\n    slots: 1\n    maxQueued: 1\njobs:\n  - name: hog\n    schedule: '@reboot'\n    \
         pool: two\n    command: sleep 30\n  - name: waiter\n    schedule: '0 0 1 1 *'\n    \
         pool: two\n    command: 'true'\n",
        header(port, "{dir}/state")
    );
    let daemon = Daemon::start(&config);
    http::wait_listening(port, Duration::from_secs(20));
    // The hog holds the only slot.
    let start = Instant::now();
    while http::get(port, "/pools").json()[1]["used"] != 1 {
        assert!(start.elapsed() < LONG, "{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // A manual start queues: 202 with where it waits.
    let queued = http::post(port, "/jobs/waiter/start");
    assert_eq!(queued.status, 202, "{}", queued.body);
    let body = queued.json();
    assert_eq!(body["queued"], "waiter");
    assert_eq!(body["pool"], "two");
    let key = body["queueId"].as_str().expect("a key").to_owned();
    // The queue is full now: the original's reason, as a 409.
    let full = http::post(port, "/jobs/waiter/start");
    assert_eq!(full.status, 409, "{}", full.body);
    assert_eq!(full.json()["error"], "pool queue is full");
    daemon.wait_for_log(
        "Job waiter could not enter pool two: pool queue is full",
        1,
        LONG,
    );
    let start = Instant::now();
    let job = loop {
        let job = http::get(port, "/jobs/waiter").json();
        if job["pool"]["queued"][0]["id"] == key.as_str() {
            break job;
        }
        assert!(start.elapsed() < LONG, "{job}\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        job["pool"]["queued"][0]["waitingReason"],
        "Needs 1 slot; 0 available"
    );
    let hog = &http::get(port, "/jobs/hog").json();
    assert!(hog["pool"]["holders"][0]["holder"].is_string(), "{hog}");

    // Cancelling the waiting entry, then the running one (refused).
    let cancelled = http::post(port, &format!("/pools/two/queue/{key}/cancel"));
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.json()["state"], "cancelled");
    assert_eq!(cancelled.json()["id"], key.as_str());
    let running = http::get(port, "/pools").json()[1]["entries"][0]["id"]
        .as_str()
        .expect("the running entry")
        .to_owned();
    let refused = http::post(port, &format!("/pools/two/queue/{running}/cancel"));
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.json()["error"],
        "only waiting entries can be cancelled"
    );
    let missing = http::post(port, "/pools/two/queue/nope/cancel");
    assert_eq!(missing.status, 409);
    assert_eq!(missing.json()["error"], "queue entry not found");
    // Room again: the next start queues.
    assert_eq!(http::post(port, "/jobs/waiter/start").status, 202);
}

#[test]
fn a_run_that_loses_its_pool_lease_is_cancelled_with_exit_code_minus_100() {
    let port = http::free_port();
    let config = format!(
        "{}jobs:\n  - name: long\n    schedule: '@reboot'\n    pool: one\n    command: |\n      \
         touch {{dir}}/started\n      exec sleep 60\n",
        header(port, "{dir}/state")
    );
    let daemon = Daemon::start(&config);
    http::wait_listening(port, Duration::from_secs(20));
    let start = Instant::now();
    while !daemon.path("started").exists() {
        assert!(start.elapsed() < LONG, "{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The pool's document stops reading: the next renewal fails.
    let doc = daemon.path("state/default/docs/scheduler-pools/one.doc");
    std::fs::write(
        &doc,
        "{\"data\": {\"entries\": {}}, \"schemaVersion\": \"v1\"}",
    )
    .expect("break the document");
    daemon.wait_for_log("pool lease lost for ", 1, LONG);
    let start = Instant::now();
    let run = loop {
        let runs = http::get(port, "/jobs/long/runs").json();
        if let Some(run) = runs["runs"].as_array().and_then(|r| r.first()) {
            break run.clone();
        }
        assert!(start.elapsed() < LONG, "{}", daemon.log());
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["exit_code"], -100, "{run}\n{}", daemon.log());
    assert_eq!(run["outcome"], "failure", "{run}");
    assert_eq!(
        run["fail_reason"],
        "failsWhen=nonzeroReturn and retcode=-100"
    );
}

#[test]
fn pools_need_a_store_and_known_pools_with_room_for_the_job() {
    for (config, error) in [
        (
            "pools:\n  p:\n    slots: 1\n",
            "pools require durable state",
        ),
        (
            "state:\n  path: ./s\npools:\n  p:\n    slots: 1\njobs:\n  - name: j\n    \
             command: 'true'\n    schedule: '* * * * *'\n    pool: q\n",
            "job 'j': unknown pool 'q'",
        ),
        (
            "state:\n  path: ./s\npools:\n  p:\n    slots: 1\njobs:\n  - name: j\n    \
             command: 'true'\n    schedule: '* * * * *'\n    pool: p\n    poolSlots: 2\n",
            "job 'j': poolSlots exceeds pool capacity",
        ),
        (
            "cluster:\n  backend: gossip\n  nodeName: a\n  listen: '127.0.0.1:9000'\n  \
             tls: {ca: ca.pem, cert: a.pem, key: a.key}\n  peers:\n    - host: 'b:9000'\n\
             pools:\n  p:\n    slots: 1\n",
            "pools require durable state: the gossip backend keeps no shared store for the pool \
             queues; set state.path",
        ),
        (
            "state:\n  path: ./s\npools:\n  p:\n    slots: 10001\n",
            "pool slots must be between 1 and 10000",
        ),
        (
            "state:\n  path: ./s\npools:\n  p:\n    slots: 1\n    maxQueued: 0\n",
            "pool maxQueued must be between 1 and 10000",
        ),
        (
            "jobs:\n  - name: j\n    command: 'true'\n    schedule: '* * * * *'\n    \
             queueTimeout: 10\n",
            "poolSlots, queuePriority and queueTimeout need pool",
        ),
    ] {
        let dir = support::cli::write_tree(&[("c.yaml", config)]);
        let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(1), "{config}\n{}", run.stderr);
        assert!(run.stderr.contains(error), "{config}\n{}", run.stderr);
    }
    // Beside a lease backend, its store keeps the pools (a Lease or an
    // etcd key per pool, or its directory), with or without a `state`
    // section.
    for cluster in [
        "cluster:\n  backend: kubernetes\n",
        "cluster:\n  backend: etcd\n",
        "state:\n  slotTtlSeconds: 30\ncluster:\n  backend: etcd\n",
        "state:\n  onStoreUnavailable: fail-closed\ncluster:\n  backend: kubernetes\n",
        "cluster:\n  backend: filesystem\n  filesystem:\n    path: ./shared\n",
    ] {
        let config = format!(
            "{cluster}pools:\n  p:\n    slots: 1\njobs:\n  - name: j\n    command: 'true'\n    \
             schedule: '* * * * *'\n    pool: p\n"
        );
        let dir = support::cli::write_tree(&[("c.yaml", &config)]);
        let run = support::cli::cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(0), "{config}\n{}", run.stderr);
    }
    let dir = support::cli::write_tree(&[
        (
            "conf/a.yaml",
            "state:\n  path: ./s\npools:\n  p:\n    slots: 1\n",
        ),
        ("conf/b.yaml", "pools:\n  p:\n    slots: 2\n"),
    ]);
    let run = support::cli::cronstable(&["-c", "conf", "-v"], dir.path());
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("duplicate pool 'p'"), "{}", run.stderr);
}

#[test]
fn a_pooled_jobs_retries_queue_in_the_pool_and_keep_their_attempts() {
    let port = http::free_port();
    let config = format!(
        "{}jobs:\n  - name: flaky\n    schedule: '@reboot'\n    pool: one\n    command: exit 3\n    \
         onFailure:\n      retry:\n        maximumRetries: 2\n        initialDelay: 0.2\n        \
         maximumDelay: 1\n        backoffMultiplier: 2\n",
        header(port, "{dir}/state")
    );
    let daemon = Daemon::start(&config);
    http::wait_listening(port, Duration::from_secs(20));
    let start = Instant::now();
    let runs = loop {
        let runs = http::get(port, "/jobs/flaky/runs").json()["runs"].clone();
        if runs.as_array().is_some_and(|r| r.len() >= 3) {
            break runs;
        }
        assert!(start.elapsed() < LONG, "{runs}\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(100));
    };
    let seen: Vec<(String, u64)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["trigger"].as_str().unwrap_or_default().to_owned(),
                r["attempt"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("schedule".into(), 0),
            ("retry".into(), 1),
            ("retry".into(), 2)
        ],
        "{}",
        daemon.log()
    );
    // Every attempt went through the pool: three claims, all closed.
    let start = Instant::now();
    loop {
        let pool = http::get(port, "/pools").json()[0].clone();
        let finished = pool["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["state"] == "finished")
            .count();
        if finished == 3 {
            break;
        }
        assert!(finished < 3 && start.elapsed() < LONG, "{pool}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
