//! Gossip failover, whole process: three binaries with `cluster: {backend:
//! gossip}` on 127.0.0.1 (mutual TLS with certificates made here, `interval:
//! 1`, `connectTimeout: 1`), one Leader job firing every second that
//! appends `<node> <second>` to a shared file, and the leader killed
//! (`kill -9`, then restarted) every 20 seconds.
//!
//! Printed (nothing asserted): seconds run, run twice (goal 0 at quorum)
//! and not run, and each takeover's time after the kill (to the first
//! fire after it, by any node).
//!
//! Run with `cargo bench --bench gossip`; `GOSSIP_SECONDS` sets the length
//! of the kill phase (default 300).

#[path = "../tests/support/certs.rs"]
mod certs;
#[path = "../tests/support/http.rs"]
#[allow(dead_code)]
mod http;

/// Replicas, the fires file and the kill loop, shared with
/// benches/failover.rs.
#[path = "common/failover.rs"]
mod common;

use common::Replica;
use std::time::Duration;

const NODES: [&str; 3] = ["a", "b", "c"];

fn main() {
    let seconds: u64 = std::env::var("GOSSIP_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let shared_dir = tempfile::tempdir().expect("temp dir");
    let shared = shared_dir.path();
    let ca = certs::Ca::new();
    let ports: Vec<u16> = NODES.iter().map(|_| http::free_port()).collect();
    let mut nodes: Vec<Replica> = NODES
        .iter()
        .zip(&ports)
        .map(|(name, port)| {
            let dir = shared.join(name);
            let tls = ca.files(&ca, &dir.join("tls"));
            let peers: String = ports
                .iter()
                .filter(|p| *p != port)
                .map(|p| format!("    - host: '127.0.0.1:{p}'\n"))
                .collect();
            let config = format!(
                "cluster:\n  backend: gossip\n  nodeName: {name}\n  listen: '127.0.0.1:{port}'\n  \
                 electLeader: true\n  interval: 1\n  connectTimeout: 1\n  tls:\n    ca: {t}/ca.pem\n    \
                 cert: {t}/cert.pem\n    key: {t}/key.pem\n  peers:\n{peers}jobs:\n  - name: tick\n    \
                 command: \"echo $(cat node) $(date +%s) >> {s}/fires\"\n    schedule: '* * * * * * *'\n",
                t = tls.display(),
                s = shared.display()
            );
            std::fs::write(dir.join("config.yaml"), config).expect("config");
            std::fs::write(dir.join("node"), name).expect("node file");
            Replica::new(name, dir.join("config.yaml"), dir)
        })
        .collect();
    for node in &mut nodes {
        node.start();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let run = runtime.block_on(common::kill_the_leader_every_20s(
        &mut nodes,
        &shared.join("fires"),
        seconds,
        Duration::ZERO,
    ));
    let Some(run) = run else {
        eprintln!("no fire within 60 s");
        return;
    };
    println!("| Leader failover, gossip (interval 1, connectTimeout 1) | value |");
    println!("|---|---|");
    for (what, value) in run.rows("takeover after kill -9") {
        println!("| {what} | {value} |");
    }
}
