//! Kubernetes mode replicas against a real kube-apiserver (etcd and
//! kube-apiserver from `KUBEBUILDER_ASSETS`, tests/support/envtest.rs), the
//! release binary run as the chart runs it (`--kube --configmap cronstable`,
//! the sets of its namespace; with three replicas a `cluster:` section on
//! the kubernetes backend at the chart's default Lease timings: duration
//! 15 s, renew deadline 10 s, retry period 2 s). Each daemon talks to the
//! server as an admin identity of its own, so the server's audit log tells
//! their requests apart.
//!
//! Measured (a Markdown table; nothing asserted):
//! - API requests per second per replica at idle (no job fires in the
//!   window), counted from the audit log by user and by verb and resource
//!   over `KUBE_IDLE_SECONDS` (default 300: the watches are renewed about
//!   every 290 s, kube-runtime's watch timeout) after a settle of 20 s:
//!   one replica without a Lease and, at the same time in another
//!   namespace, three replicas on a Lease; also each daemon's CPU share. (`apiserver_request_total` has no user label, so
//!   the server's metrics cannot split requests by replica; the audit log
//!   can.)
//! - takeover: three replicas on a Lease, a Leader job firing every second
//!   that appends `<node> <epoch.nanoseconds>` to a file; the leader gets
//!   `kill -9` or SIGTERM (alternately, `KUBE_TAKEOVER_ROUNDS` of each,
//!   default 5); the time from the signal to the first fire on another
//!   node, each round and the median. The victim is restarted and settles
//!   as a follower before the next round.
//!
//! Run with `cargo bench --bench kube_replicas` with `KUBEBUILDER_ASSETS`
//! set (or `scripts/bench.sh --kube-real [1.28|1.32]`); without it the bench
//! says it is skipped. `KUBE_IDLE_SETS` (default 100) sets the CronJobSets
//! each idle namespace holds.

/// The test-time CA that envtest.rs reaches as `super::certs`.
#[path = "../tests/support/certs.rs"]
#[allow(dead_code)]
mod certs;
/// The real kube-apiserver harness.
#[path = "../tests/support/envtest.rs"]
#[allow(dead_code)]
mod envtest;

/// The real server's setup, creates and audit log, shared with
/// benches/kube.rs.
#[path = "common/kube_real.rs"]
#[allow(dead_code)]
mod kube_real;

use kube_real::{by_verb, cpu_ticks, describe, Real};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The chart's default Lease timings (charts/cronstable/values.yaml,
/// `leaderElection`).
const CHART_TIMINGS: &str =
    "    leaseDurationSeconds: 15\n    renewDeadlineSeconds: 10\n    retryPeriodSeconds: 2\n";
const NODES: [&str; 3] = ["a", "b", "c"];
/// What a wait for the daemons may take before the bench gives up.
const PATIENCE: Duration = Duration::from_secs(120);

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One daemon in Kubernetes mode: its node name, identity, web port and
/// the process (None when stopped).
struct Replica {
    node: &'static str,
    user: String,
    port: u16,
    command: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Replica {
    /// A replica as `user` in `namespace`, whose local config (`-c`) holds
    /// its web listener and `extra` (a `cluster:` section, jobs).
    fn new(
        real: &Real,
        dir: &Path,
        node: &'static str,
        user: &str,
        namespace: &str,
        extra: &str,
    ) -> Replica {
        let port = free_port();
        let kubeconfig = real.kubeconfig(user, namespace);
        let config = dir.join(format!("{user}.yaml"));
        std::fs::write(
            &config,
            format!("web:\n  listen:\n    - http://127.0.0.1:{port}\n{extra}"),
        )
        .expect("write a replica's config");
        let command = [
            "--kube",
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "--namespace",
            namespace,
            "--configmap",
            "cronstable",
            "-c",
            &config.display().to_string(),
            "-l",
            "WARNING",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Replica {
            node,
            user: user.to_owned(),
            port,
            command,
            log: dir.join(format!("{user}.log")),
            child: None,
        }
    }

    fn start(&mut self) {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("a replica's log");
        let child = Command::new(env!("CARGO_BIN_EXE_cronstable"))
            .env_remove("KUBECONFIG")
            .args(&self.command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the daemon starts");
        self.child = Some(child);
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Sends `signal` and returns the process to reap.
    fn signal(&mut self, signal: nix::sys::signal::Signal) -> Option<Child> {
        let child = self.child.take()?;
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal);
        Some(child)
    }

    /// `GET path` on its web port, as JSON.
    fn get(&self, path: &str) -> Option<(u16, Value)> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        let code = text.split_whitespace().nth(1)?.parse().ok()?;
        let body = text.split_once("\r\n\r\n")?.1;
        Some((code, serde_json::from_str(body).unwrap_or(Value::Null)))
    }

    fn ready(&self) -> bool {
        self.child.is_some() && self.get("/readyz").is_some_and(|(code, _)| code == 200)
    }

    fn leads(&self) -> bool {
        self.child.is_some()
            && self
                .get("/cluster")
                .is_some_and(|(_, v)| v["is_leader"] == true)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reaps a signalled process (SIGKILL after 30 s).
fn reap(mut child: Child) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

async fn wait_for(what: &str, replicas: &[Replica], mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !check() {
        if start.elapsed() > PATIENCE {
            eprintln!("waited {PATIENCE:?} for {what}; logs:");
            for r in replicas {
                eprintln!("--- {} ---\n{}", r.user, r.log_tail());
            }
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

/// The one replica that says it leads, if exactly one does.
fn leader(replicas: &[Replica]) -> Option<usize> {
    let leading: Vec<usize> = (0..replicas.len())
        .filter(|i| replicas[*i].leads())
        .collect();
    match leading[..] {
        [one] => Some(one),
        _ => None,
    }
}

fn cluster_section(node: &str) -> String {
    format!("cluster:\n  backend: kubernetes\n  nodeName: {node}\n  kubernetes:\n{CHART_TIMINGS}")
}

/// Sets whose ten jobs never fire in the window (3:00 on January 1st).
fn idle_sets(namespace: &str, sets: usize) -> Vec<Value> {
    (0..sets)
        .map(|set| {
            let jobs: Vec<Value> = (0..10)
                .map(|j| json!({"name": format!("job-{j}"), "command": "true", "schedule": "0 3 1 1 *"}))
                .collect();
            json!({
                "apiVersion": "cronstable.io/v1alpha1",
                "kind": "CronJobSet",
                "metadata": {"name": format!("set-{set:04}"), "namespace": namespace},
                "spec": {"jobs": jobs},
            })
        })
        .collect()
}

/// Requests per second per replica at idle, for each group of daemons
/// (a label and its replicas, in a namespace of their own), all started
/// together and measured over the same window; one table row per replica.
async fn idle_rows(real: &Real, groups: &mut [(String, Vec<Replica>)]) -> Vec<(String, String)> {
    let seconds = env_number("KUBE_IDLE_SECONDS", 300);
    for (_, replicas) in groups.iter_mut() {
        for replica in replicas.iter_mut() {
            replica.start();
        }
    }
    for (_, replicas) in groups.iter() {
        if !wait_for("every replica ready", replicas, || {
            replicas.iter().all(Replica::ready)
        })
        .await
        {
            return Vec::new();
        }
        if replicas.len() > 1
            && !wait_for("one leader", replicas, || leader(replicas).is_some()).await
        {
            return Vec::new();
        }
    }
    // The first status writes and the election settle.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let ticks: Vec<Vec<Option<u64>>> = groups
        .iter()
        .map(|(_, replicas)| {
            replicas
                .iter()
                .map(|r| r.pid().and_then(cpu_ticks))
                .collect()
        })
        .collect();
    let from = chrono::Utc::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let to = chrono::Utc::now();
    let window = (to - from).num_milliseconds() as f64 / 1e3;
    let requests = real.requests_between(from, to);
    let mut rows = Vec::new();
    for ((what, replicas), ticks) in groups.iter().zip(ticks) {
        let leading = (replicas.len() > 1).then(|| leader(replicas)).flatten();
        for (i, replica) in replicas.iter().enumerate() {
            let counts = by_verb(&requests, &replica.user);
            let total: usize = counts.values().sum();
            let cpu = match (ticks[i], replica.pid().and_then(cpu_ticks)) {
                (Some(t0), Some(t1)) => format!("{:.2} %", (t1 - t0) as f64 / window),
                _ => "?".to_owned(),
            };
            let role = match leading {
                Some(l) if l == i => " (leader)",
                Some(_) => " (follower)",
                None => "",
            };
            rows.push((
                format!(
                    "API requests at idle, {what}: replica {}{role}",
                    replica.node
                ),
                format!(
                    "{:.3} /s ({total} in {window:.0} s: {}); daemon CPU {cpu} of one core",
                    total as f64 / window,
                    describe(&counts)
                ),
            ));
        }
    }
    rows
}

/// The fires file's lines after `since` (epoch seconds) by a node other
/// than `not`: the first one's time.
fn first_fire_elsewhere(file: &Path, not: &str, since: f64) -> Option<f64> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let node = parts.next()?;
            let at: f64 = parts.next()?.parse().ok()?;
            (node != not && at > since).then_some(at)
        })
        .reduce(f64::min)
}

fn summary(times: &[f64]) -> String {
    if times.is_empty() {
        return "no round completed".to_owned();
    }
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let each: Vec<String> = times.iter().map(|t| format!("{t:.1}")).collect();
    format!(
        "median {:.1} s (each: {} s)",
        sorted[sorted.len() / 2],
        each.join(", ")
    )
}

async fn takeover_rows(real: &Real, dir: &Path) -> Vec<(String, String)> {
    use nix::sys::signal::Signal;
    let rounds = env_number("KUBE_TAKEOVER_ROUNDS", 5);
    let namespace = "takeover";
    real.namespace(namespace);
    real.configmap(
        namespace,
        "cronstable",
        json!({"cronstable.yaml": "jobs: []\n"}),
    );
    let fires = dir.join("fires");
    let mut replicas: Vec<Replica> = NODES
        .iter()
        .map(|node| {
            let extra = format!(
                "{}jobs:\n  - name: tick\n    command: echo {node} $(date +%s.%N) >> {}\n    \
                 schedule: '* * * * * * *'\n    clusterPolicy: Leader\n",
                cluster_section(node),
                fires.display()
            );
            Replica::new(
                real,
                dir,
                node,
                &format!("takeover-{node}"),
                namespace,
                &extra,
            )
        })
        .collect();
    for replica in &mut replicas {
        replica.start();
    }
    let (mut killed, mut termed) = (Vec::new(), Vec::new());
    for round in 0..rounds * 2 {
        let signal = if round % 2 == 0 {
            Signal::SIGKILL
        } else {
            Signal::SIGTERM
        };
        if !wait_for("one leader", &replicas, || leader(&replicas).is_some()).await {
            break;
        }
        // The followers have seen the leader renew a few times.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let Some(victim) = leader(&replicas) else {
            continue;
        };
        let node = replicas[victim].node;
        let at = epoch_now();
        let Some(child) = replicas[victim].signal(signal) else {
            continue;
        };
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut took = None;
        while Instant::now() < deadline {
            if let Some(fire) = first_fire_elsewhere(&fires, node, at) {
                took = Some(fire - at);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        match took {
            Some(t) if signal == Signal::SIGKILL => killed.push(t),
            Some(t) => termed.push(t),
            None => eprintln!("round {round}: no fire elsewhere within 90 s of {signal} to {node}"),
        }
        reap(child);
        replicas[victim].start();
        let restarted = &replicas[victim];
        if !wait_for("the restarted replica ready", &replicas, || {
            restarted.ready()
        })
        .await
        {
            break;
        }
    }
    let doubles = doubled_seconds(&fires);
    vec![
        (
            format!(
                "takeover after kill -9 of the leader, chart timings (15/10/2), {} rounds",
                killed.len()
            ),
            summary(&killed),
        ),
        (
            format!(
                "takeover after SIGTERM of the leader, chart timings, {} rounds",
                termed.len()
            ),
            summary(&termed),
        ),
        (
            "seconds the Leader job ran on two nodes over the takeover run".to_owned(),
            doubles.to_string(),
        ),
    ]
}

/// Whole seconds with more than one fire line (by any nodes).
fn doubled_seconds(file: &Path) -> usize {
    let mut per_second = std::collections::BTreeMap::<u64, usize>::new();
    for line in std::fs::read_to_string(file).unwrap_or_default().lines() {
        if let Some(at) = line
            .split_whitespace()
            .nth(1)
            .and_then(|t| t.parse::<f64>().ok())
        {
            *per_second.entry(at as u64).or_default() += 1;
        }
    }
    per_second.values().filter(|n| **n > 1).count()
}

async fn run() {
    let Some(real) = Real::start("benches/kube_replicas.rs").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let sets = env_number("KUBE_IDLE_SETS", 100) as usize;
    let mut rows = Vec::new();

    // One replica without a Lease (the chart's replicaCount 1) and three
    // on a Lease at the chart's timings, each in a namespace of its own
    // with the same sets, measured over the same window.
    let mut groups = Vec::new();
    for (namespace, nodes) in [("idle-one", &NODES[..1]), ("idle-three", &NODES[..])] {
        real.create_sets(namespace, idle_sets(namespace, sets))
            .await;
        real.configmap(
            namespace,
            "cronstable",
            json!({"cronstable.yaml": "jobs: []\n"}),
        );
        let lease = nodes.len() > 1;
        let replicas: Vec<Replica> = nodes
            .iter()
            .map(|node| {
                let extra = if lease {
                    cluster_section(node)
                } else {
                    String::new()
                };
                Replica::new(
                    &real,
                    dir.path(),
                    node,
                    &format!("{namespace}-{node}"),
                    namespace,
                    &extra,
                )
            })
            .collect();
        let what = if lease {
            format!("3 replicas on a Lease (15/10/2), {sets} sets")
        } else {
            format!("1 replica, no Lease, {sets} sets")
        };
        groups.push((what, replicas));
    }
    rows.extend(idle_rows(&real, &mut groups).await);
    drop(groups);

    rows.extend(takeover_rows(&real, dir.path()).await);

    println!(
        "| Kubernetes mode replicas, kube-apiserver {} | value |",
        real.server.version
    );
    println!("|---|---|");
    for (what, value) in rows {
        println!("| {what} | {value} |");
    }
}
