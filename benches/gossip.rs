//! Gossip backend, whole processes, two measurements (nothing asserted):
//!
//! - **Failover.** Three binaries with `cluster: {backend: gossip}` on
//!   127.0.0.1 (mutual TLS with certificates made here), one Leader job
//!   firing every second that appends `<node> <second>` to a shared file,
//!   and the leader killed (`kill -9`, then restarted) every
//!   `GOSSIP_KILL_EVERY` seconds. Printed: seconds run, run twice (goal 0
//!   at quorum) and not run, and each takeover's time after the kill (to
//!   the first fire after it, by any node).
//! - **Poll traffic.** Clusters of 3 and of 9 nodes left alone; every
//!   node's peers reach it through a TCP relay that counts the bytes it
//!   carries both ways (TLS records included: what crosses the wire).
//!   After a warm-up of three rounds, the bytes over `GOSSIP_TRAFFIC_SECONDS`
//!   are printed per cluster and per node and second.
//!
//! Run with `cargo bench --bench gossip`. Settings (environment):
//! `GOSSIP_INTERVAL` and `GOSSIP_CONNECT_TIMEOUT` (the cluster's `interval`
//! and `connectTimeout`, default 1 and 1; the product's defaults are 30 and
//! 10), `GOSSIP_SECONDS` (length of the kill phase, default 300; 0 skips
//! it), `GOSSIP_KILL_EVERY` (default 20), `GOSSIP_TRAFFIC_NODES` (default
//! `3,9`; empty skips the traffic phase), `GOSSIP_TRAFFIC_SECONDS`
//! (default ten rounds).

#[path = "../tests/support/certs.rs"]
#[allow(dead_code)]
mod certs;
#[path = "../tests/support/http.rs"]
#[allow(dead_code)]
mod http;

/// Replicas, the fires file and the kill loop, shared with
/// benches/failover.rs.
#[path = "common/failover.rs"]
mod common;

use common::Replica;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NAMES: [&str; 9] = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];

/// The cluster's poll settings for one run.
struct Settings {
    interval: u64,
    connect_timeout: u64,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let settings = Settings {
        interval: env_u64("GOSSIP_INTERVAL", 1),
        connect_timeout: env_u64("GOSSIP_CONNECT_TIMEOUT", 1),
    };
    let seconds = env_u64("GOSSIP_SECONDS", 300);
    let kill_every = env_u64("GOSSIP_KILL_EVERY", 20);
    if seconds > 0 {
        failover(&settings, seconds, kill_every);
    }
    let sizes: Vec<usize> = std::env::var("GOSSIP_TRAFFIC_NODES")
        .unwrap_or_else(|_| "3,9".to_owned())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .filter(|n| (1..=NAMES.len()).contains(n))
        .collect();
    if !sizes.is_empty() {
        let window = env_u64("GOSSIP_TRAFFIC_SECONDS", 10 * settings.interval);
        println!(
            "| Poll traffic, gossip (interval {}, connectTimeout {}, {window} s after 3 rounds) | cluster | per node |",
            settings.interval, settings.connect_timeout
        );
        println!("|---|---|---|");
        for size in sizes {
            let bytes = traffic(&settings, size, window);
            let per_second = bytes as f64 / window as f64;
            println!(
                "| {size} nodes | {per_second:.0} B/s | {:.0} B/s |",
                per_second / size as f64
            );
        }
    }
}

/// The config of node `name` listening on `port`, polling `peers`.
fn config(name: &str, port: u16, peers: &[u16], tls: &Path, shared: &Path, s: &Settings) -> String {
    let peers: String = peers
        .iter()
        .map(|p| format!("    - host: '127.0.0.1:{p}'\n"))
        .collect();
    format!(
        "cluster:\n  backend: gossip\n  nodeName: {name}\n  listen: '127.0.0.1:{port}'\n  \
         electLeader: true\n  interval: {i}\n  connectTimeout: {c}\n  tls:\n    ca: {t}/ca.pem\n    \
         cert: {t}/cert.pem\n    key: {t}/key.pem\n  peers:\n{peers}jobs:\n  - name: tick\n    \
         command: \"echo $(cat node) $(date +%s) >> {s}/fires\"\n    schedule: '* * * * * * *'\n",
        i = s.interval,
        c = s.connect_timeout,
        t = tls.display(),
        s = shared.display()
    )
}

/// Writes the configs of a cluster of `size` whose node `n` is reached by
/// its peers at `reach[n]` and listens on `listen[n]`; returns the replicas.
fn cluster(shared: &Path, listen: &[u16], reach: &[u16], s: &Settings) -> Vec<Replica> {
    let ca = certs::Ca::new();
    NAMES
        .iter()
        .take(listen.len())
        .enumerate()
        .map(|(n, name)| {
            let dir = shared.join(name);
            let tls = ca.files(&ca, &dir.join("tls"));
            let peers: Vec<u16> = (0..listen.len())
                .filter(|&m| m != n)
                .map(|m| reach[m])
                .collect();
            let text = config(name, listen[n], &peers, &tls, shared, s);
            std::fs::write(dir.join("config.yaml"), text).expect("config");
            std::fs::write(dir.join("node"), name).expect("node file");
            Replica::new(name, dir.join("config.yaml"), dir)
        })
        .collect()
}

fn failover(settings: &Settings, seconds: u64, kill_every: u64) {
    let shared_dir = tempfile::tempdir().expect("temp dir");
    let shared = shared_dir.path();
    let ports: Vec<u16> = (0..3).map(|_| http::free_port()).collect();
    let mut nodes = cluster(shared, &ports, &ports, settings);
    for node in &mut nodes {
        node.start();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    // The first fire waits for the first quorate round.
    let run = runtime.block_on(common::kill_the_leader_every(
        &mut nodes,
        &shared.join("fires"),
        seconds,
        Duration::from_secs(kill_every),
        Duration::ZERO,
    ));
    let Some(run) = run else {
        eprintln!("no fire within 180 s");
        return;
    };
    println!(
        "| Leader failover, gossip (interval {}, connectTimeout {}) | value |",
        settings.interval, settings.connect_timeout
    );
    println!("|---|---|");
    for (what, value) in run.rows("takeover after kill -9") {
        println!("| {what} | {value} |");
    }
    println!();
}

/// Bytes carried by the relays of a `size`-node cluster over `window`
/// seconds, after three rounds of warm-up.
fn traffic(settings: &Settings, size: usize, window: u64) -> u64 {
    let shared_dir = tempfile::tempdir().expect("temp dir");
    let listen: Vec<u16> = (0..size).map(|_| http::free_port()).collect();
    let counter = Arc::new(AtomicU64::new(0));
    let reach: Vec<u16> = listen
        .iter()
        .map(|&port| relay(port, Arc::clone(&counter)))
        .collect();
    let mut nodes = cluster(shared_dir.path(), &listen, &reach, settings);
    for node in &mut nodes {
        node.start();
    }
    std::thread::sleep(Duration::from_secs(
        3 * settings.interval + settings.connect_timeout,
    ));
    let before = counter.load(Ordering::Relaxed);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(window));
    let bytes = counter.load(Ordering::Relaxed) - before;
    if started.elapsed() > Duration::from_secs(window + 1) {
        eprintln!("the traffic window overran: the machine is loaded");
    }
    bytes
}

/// A TCP relay on a free port of 127.0.0.1 to `target`, adding every byte
/// it carries (both ways) to `counter`. Runs until the process ends.
fn relay(target: u16, counter: Arc<AtomicU64>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("relay port");
    let port = listener.local_addr().expect("relay address").port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue;
            };
            for (from, to) in [
                (client.try_clone(), server.try_clone()),
                (server.try_clone(), client.try_clone()),
            ] {
                let (Ok(from), Ok(to)) = (from, to) else {
                    continue;
                };
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || pump(from, to, &counter));
            }
        }
    });
    port
}

/// Copies `from` to `to` until either side closes, counting the bytes.
fn pump(mut from: TcpStream, mut to: TcpStream, counter: &AtomicU64) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                counter.fetch_add(n as u64, Ordering::Relaxed);
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}
