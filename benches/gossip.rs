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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODES: [&str; 3] = ["a", "b", "c"];

struct Node {
    name: &'static str,
    dir: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn start(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_cronstable"))
            .args(["-c", "config.yaml", "-l", "WARNING"])
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the daemon starts");
        self.child = Some(child);
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runners per second, from the shared file.
fn fires(shared: &Path) -> BTreeMap<u64, Vec<String>> {
    let text = std::fs::read_to_string(shared.join("fires")).unwrap_or_default();
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(node), Some(Ok(second))) = (parts.next(), parts.next().map(str::parse)) {
            out.entry(second).or_default().push(node.to_owned());
        }
    }
    out
}

fn last_fire(shared: &Path) -> Option<(u64, String)> {
    fires(shared)
        .into_iter()
        .next_back()
        .and_then(|(s, nodes)| nodes.into_iter().next().map(|n| (s, n)))
}

fn epoch_second() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn main() {
    let seconds: u64 = std::env::var("GOSSIP_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let shared_dir = tempfile::tempdir().expect("temp dir");
    let shared = shared_dir.path();
    let ca = certs::Ca::new();
    let ports: Vec<u16> = NODES.iter().map(|_| http::free_port()).collect();
    let mut nodes: Vec<Node> = NODES
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
            Node {
                name,
                dir,
                child: None,
            }
        })
        .collect();
    for node in &mut nodes {
        node.start();
    }
    let begin = Instant::now();
    while last_fire(shared).is_none() && begin.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some((first_second, _)) = last_fire(shared) else {
        eprintln!("no fire within 60 s");
        return;
    };
    let start = Instant::now();
    let mut kills = 0;
    let mut takeovers = Vec::new();
    while start.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(20));
        let Some((_, leader)) = last_fire(shared) else {
            continue;
        };
        let Some(node) = nodes.iter_mut().find(|n| n.name == leader) else {
            continue;
        };
        let killed = Instant::now();
        let killed_second = epoch_second();
        node.kill();
        kills += 1;
        // Restart it at once: it rejoins and, being the lowest name, may
        // lead again once the others agree with it.
        node.start();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if last_fire(shared).is_some_and(|(second, _)| second > killed_second) {
                takeovers.push(killed.elapsed().as_secs_f64());
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let observed = fires(shared);
    let last_second = observed.keys().next_back().copied().unwrap_or(first_second);
    let doubles = observed.values().filter(|n| n.len() > 1).count();
    let missed = (first_second..=last_second)
        .filter(|s| !observed.contains_key(s))
        .count();
    println!("| Leader failover, gossip (interval 1, connectTimeout 1) | value |");
    println!("|---|---|");
    println!(
        "| fires over {} s, leader killed every 20 s ({kills} kills) | {} seconds run, {doubles} run twice, {missed} not run |",
        last_second - first_second + 1,
        observed.len()
    );
    if !takeovers.is_empty() {
        takeovers.sort_by(f64::total_cmp);
        println!(
            "| takeover after kill -9 | min {:.1} s, median {:.1} s, max {:.1} s |",
            takeovers[0],
            takeovers[takeovers.len() / 2],
            takeovers[takeovers.len() - 1]
        );
    }
}
