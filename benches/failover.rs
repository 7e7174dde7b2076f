//! Leader failover, whole process: three release binaries electing through
//! a Kubernetes Lease on the tests' fake API server, one Leader job firing
//! every second that appends `<node> <second>` to a shared file, and the
//! leader killed (`kill -9`, then restarted) every 20 seconds.
//!
//! Printed (nothing asserted): fires observed, seconds run twice (goal 0),
//! seconds not run (the takeover windows: this job has `onMissed: skip`),
//! the runs of a second every-second job with `onMissed: run-all` against
//! the boundaries (goal: equal, the new leader replaying each window),
//! each takeover's time after the kill, and the Lease requests per second
//! per replica at the default timings.
//!
//! Run with `cargo bench --bench failover`; `FAILOVER_SECONDS` sets the
//! length of the kill phase (default 300).

#[path = "../tests/support/kube_fake/mod.rs"]
#[allow(dead_code)]
mod kube_fake;

/// The real etcd of the tests (its helper reaches `super::http`).
#[path = "../tests/support/etcd.rs"]
#[allow(dead_code)]
mod etcd;
#[path = "../tests/support/http.rs"]
#[allow(dead_code)]
mod http;

/// Replicas, the fires file and the kill loop, shared with benches/gossip.rs.
#[path = "common/failover.rs"]
mod common;

use common::Replica;
use kube_fake::FakeApiServer;
use std::path::{Path, PathBuf};
use std::time::Duration;

const NODES: [&str; 3] = ["a", "b", "c"];

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

/// A replica's config: the every-second `tick` job (`onMissed: skip`),
/// and with `run_all` a second every-second job with `onMissed: run-all`
/// (whose fire records add one Lease write per second on the leader).
fn write_config(
    dir: &Path,
    node: &str,
    kubeconfig: &Path,
    timings: &str,
    run_all: bool,
) -> PathBuf {
    let path = dir.join(format!("{node}.yaml"));
    let tock = if run_all {
        format!(
            "  - name: tock\n    command: echo {node} $(date +%s) >> {d}/fires-run-all\n    \
             schedule: '* * * * * * *'\n    onMissed: run-all\n",
            d = dir.display()
        )
    } else {
        String::new()
    };
    let text = format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n    kubeconfig: \
         {kc}\n    leaseNamespace: default\n{timings}jobs:\n  - name: tick\n    command: echo \
         {node} $(date +%s) >> {d}/fires\n    schedule: '* * * * * * *'\n{tock}",
        kc = kubeconfig.display(),
        d = dir.display()
    );
    std::fs::write(&path, text).expect("config");
    path
}

/// Runs of the `onMissed: run-all` job that started within `seconds`
/// (each line holds the second it ran in).
fn run_all_runs(dir: &Path, seconds: std::ops::RangeInclusive<u64>) -> u64 {
    std::fs::read_to_string(dir.join("fires-run-all"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .filter(|s| seconds.contains(s))
        .count() as u64
}

async fn run() {
    let seconds: u64 = std::env::var("FAILOVER_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rows = Vec::new();

    // Phase 1: requests per replica at the default timings (retry 2 s).
    {
        let fake = FakeApiServer::start().await.expect("the fake starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        fake.write_kubeconfig(&kubeconfig, "default")
            .expect("kubeconfig");
        let mut nodes: Vec<Replica> = NODES
            .iter()
            .map(|n| {
                let config = write_config(dir.path(), n, &kubeconfig, "", false);
                Replica::new(n, config, dir.path().to_path_buf())
            })
            .collect();
        for node in &mut nodes {
            node.start();
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        fake.clear_requests();
        let window = Duration::from_secs(30);
        tokio::time::sleep(window).await;
        let lease_requests = fake
            .requests()
            .iter()
            .filter(|r| r.path.contains("/leases"))
            .count();
        rows.push((
            "Lease requests per replica at the defaults (duration 15, renew 10, retry 2)"
                .to_owned(),
            format!(
                "{:.2} /s (3 replicas, {} requests in {} s)",
                lease_requests as f64 / 3.0 / window.as_secs_f64(),
                lease_requests,
                window.as_secs()
            ),
        ));
    }

    // Phase 1b: etcd requests per replica at the default ttl (15 s), read
    // from etcd's own request counter.
    if etcd::binary().is_some() {
        rows.push((
            "etcd requests per replica at the default ttl (15)".to_owned(),
            etcd_request_rate().await,
        ));
    } else {
        eprintln!("etcd is not installed: no etcd request rate");
    }

    // Phase 2: kill the leader every 20 s.
    let fake = FakeApiServer::start().await.expect("the fake starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    fake.write_kubeconfig(&kubeconfig, "default")
        .expect("kubeconfig");
    let timings =
        "    leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n";
    let mut nodes: Vec<Replica> = NODES
        .iter()
        .map(|n| {
            let config = write_config(dir.path(), n, &kubeconfig, timings, true);
            Replica::new(n, config, dir.path().to_path_buf())
        })
        .collect();
    for node in &mut nodes {
        node.start();
    }
    // Waits 6 s before counting, for the last catch-up.
    let Some(run) = common::kill_the_leader_every(
        &mut nodes,
        &dir.path().join("fires"),
        seconds,
        Duration::from_secs(20),
        Duration::from_secs(6),
    )
    .await
    else {
        eprintln!("no fire within 180 s");
        return;
    };
    let (first_second, last_second) = (run.first_second, run.last_second);
    rows.extend(run.rows("takeover after kill -9 (duration 4, renew 2, retry 1)"));
    // The run-all job fires at the same boundaries; its catch-up replays
    // those of each takeover window, so its runs should equal them.
    let boundaries = last_second - first_second + 1;
    let run_all_runs = run_all_runs(dir.path(), first_second..=last_second);
    rows.push((
        "the same every-second job with onMissed: run-all".to_owned(),
        format!(
            "{run_all_runs} runs for {boundaries} boundaries ({} missing, {} extra)",
            boundaries.saturating_sub(run_all_runs),
            run_all_runs.saturating_sub(boundaries)
        ),
    ));
    println!("| Leader failover, Kubernetes Lease | value |");
    println!("|---|---|");
    for (what, value) in rows {
        println!("| {what} | {value} |");
    }
}

/// Every gRPC request etcd handled so far (the v3 JSON gateway forwards
/// each call as one).
fn etcd_handled(etcd: &etcd::Etcd) -> f64 {
    let reply = http::request(etcd.port, "GET", "/metrics", &[], "");
    reply
        .body
        .lines()
        .filter(|l| l.starts_with("grpc_server_handled_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn etcd_request_rate() -> String {
    let etcd = etcd::Etcd::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut nodes: Vec<Replica> = NODES
        .iter()
        .map(|n| {
            let config = dir.path().join(format!("{n}.yaml"));
            let text = format!(
                "cluster:\n  backend: etcd\n  nodeName: {n}\n  etcd:\n    endpoints: [{}]\n\
                 jobs:\n  - name: tick\n    command: 'true'\n    schedule: '* * * * *'\n",
                etcd.endpoint()
            );
            std::fs::write(&config, text).expect("config");
            Replica::new(n, config, dir.path().to_path_buf())
        })
        .collect();
    for node in &mut nodes {
        node.start();
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = etcd_handled(&etcd);
    let window = Duration::from_secs(30);
    tokio::time::sleep(window).await;
    let requests = etcd_handled(&etcd) - before;
    format!(
        "{:.2} /s (3 replicas, {requests} requests in {} s)",
        requests / 3.0 / window.as_secs_f64(),
        window.as_secs()
    )
}
