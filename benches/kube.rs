//! Kubernetes mode, whole process: the release binary with `--kube` against
//! an API server holding 1,000 CronJobSets of 10 jobs: the fake API server
//! of the tests (the default), or with `KUBE_BENCH_SERVER=real` a real
//! kube-apiserver with etcd from `KUBEBUILDER_ASSETS` (tests/support/envtest.rs).
//!
//! Measured (printed as a Markdown table; against the fake with each
//! figure's regression budget and whether it is within it; nothing
//! asserted):
//! - sync: from the daemon's start to all 10,000 jobs in the table, and
//!   to `GET /readyz` answering 200;
//! - apply: from a spec edit accepted by the API server to the new job
//!   table in force (`GET /job-set-id` changes), p50/p95/max over 40 edits;
//! - idle RSS with the 10,000 jobs loaded;
//! - status writes: with 200 fires/s spread over the 1,000 sets, status
//!   patches per second and the daemon's CPU share over 20 s (on the real
//!   server over 60 s after a settle of 30 s, with also the writes the
//!   server's audit log saw from the daemon, how long the server took over
//!   each, and the CPU share of kube-apiserver + etcd).
//!
//! On the real server the sets are created through the API (16 creates in
//! flight; the time it took is printed too), and the daemon talks to it
//! as an admin identity of its own (`cronstable`).
//!
//! Run with `cargo bench --bench kube` (or `scripts/bench.sh --kube`;
//! `scripts/bench.sh --kube-real [1.28|1.32]` for the real server).
//! Set `KUBE_BENCH_SETS` to change the number of sets, `KUBE_BENCH_LOG` to
//! a file to keep the daemon's DEBUG log (its timings of each apply).

#[path = "../tests/support/kube_fake/mod.rs"]
#[allow(dead_code)]
mod kube_fake;

/// The test-time CA that envtest.rs reaches as `super::certs`.
#[path = "../tests/support/certs.rs"]
#[allow(dead_code)]
mod certs;
/// The real kube-apiserver harness.
#[path = "../tests/support/envtest.rs"]
#[allow(dead_code)]
mod envtest;

/// The real server's setup, creates and audit log, shared with
/// benches/kube_replicas.rs.
#[path = "common/kube_real.rs"]
#[allow(dead_code)]
mod kube_real;

use kube_fake::{FakeApiServer, Settings};
use kube_real::{cpu_ticks, cpu_ticks_of, Real};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const JOBS_PER_SET: usize = 10;
const NAMESPACE: &str = "bench";
/// The sets of a run without `KUBE_BENCH_SETS`: the size the budgets are for.
const DEFAULT_SETS: usize = 1000;
/// The daemon's identity on the real server (the audit log's user).
const DAEMON_USER: &str = "cronstable";

// The regression budget at the default size: about 1.3 times the figures
// measured on 2026-12-01 and 2026-12-02 on two cores (docs/performance.md,
// "Kubernetes mode"), against the fake. A change that takes a figure past
// its budget needs a reason in its commit, or a fix.
/// Start to 10,000 jobs in force.
const BUDGET_START_MS: f64 = 850.0;
/// Idle RSS with 10,000 jobs.
const BUDGET_IDLE_RSS_MB: f64 = 75.0;
/// p95 of a spec edit to the table in force.
const BUDGET_EDIT_P95_MS: f64 = 75.0;
/// Daemon CPU at 200 fires/s with their status writes.
const BUDGET_CPU_PERCENT: f64 = 21.0;

/// One line of the table: what, the value as shown, and the measured
/// number with its budget (when it has one).
type Row = (String, String, Option<(f64, f64)>);

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

fn sets_wanted() -> usize {
    std::env::var("KUBE_BENCH_SETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SETS)
}

/// Whether `KUBE_BENCH_SERVER=real` asks for the real kube-apiserver.
fn real_wanted() -> bool {
    match std::env::var("KUBE_BENCH_SERVER").as_deref() {
        Ok("real") => true,
        Ok("fake") | Ok("") | Err(_) => false,
        Ok(other) => {
            eprintln!("KUBE_BENCH_SERVER={other}: use fake or real; running on the fake");
            false
        }
    }
}

/// One set's spec; `seconds` makes one job of the set fire every five
/// seconds at offset `i % 5` (200 fires/s over 1,000 sets).
fn spec(set: usize, seconds: bool, variant: usize) -> Value {
    let jobs: Vec<Value> = (0..JOBS_PER_SET)
        .map(|j| {
            let schedule = if seconds && j == 0 {
                format!("{}/5 * * * * * *", set % 5)
            } else {
                format!("H H * * {}", j % 7)
            };
            // The variant changes the command, so every edit is a change.
            let command = format!("true {variant}");
            json!({"name": format!("job-{j}"), "command": command, "schedule": schedule})
        })
        .collect();
    json!({ "jobs": jobs })
}

fn set_object(set: usize, seconds: bool) -> Value {
    json!({
        "apiVersion": "cronstable.io/v1alpha1",
        "kind": "CronJobSet",
        "metadata": {"name": format!("set-{set:04}"), "namespace": NAMESPACE},
        "spec": spec(set, seconds, 0),
    })
}

/// The API server of one phase, holding that phase's sets.
enum Server {
    /// The tests' fake (tests/support/kube_fake).
    Fake(FakeApiServer),
    /// kube-apiserver + etcd from `KUBEBUILDER_ASSETS`.
    Real(Box<Real>),
}

impl Server {
    /// A server holding `sets` sets (`seconds`: see [`spec`]); `None` when
    /// the real one was asked for and `KUBEBUILDER_ASSETS` is unset. Also
    /// returns how long creating the sets through the API took (real only:
    /// the fake is seeded directly).
    async fn with_sets(
        real: bool,
        sets: usize,
        seconds: bool,
    ) -> Option<(Server, Option<Duration>)> {
        let objects = (0..sets).map(|set| set_object(set, seconds));
        if real {
            let real = Real::start("benches/kube.rs").await?;
            let took = real.create_sets(NAMESPACE, objects.collect()).await;
            return Some((Server::Real(Box::new(real)), Some(took)));
        }
        let fake = FakeApiServer::start_with(Settings {
            history_limit: 100_000,
            ..Settings::default()
        })
        .await
        .expect("the fake starts");
        fake.install_crd_yaml(kube_real::CRD_YAML)
            .expect("the CRD installs");
        for object in objects {
            fake.seed(object).expect("a set seeds");
        }
        Some((Server::Fake(fake), None))
    }

    /// Writes the daemon's kubeconfig (context namespace [`NAMESPACE`]).
    fn write_kubeconfig(&self, path: &Path) {
        match self {
            Server::Fake(fake) => fake.write_kubeconfig(path, NAMESPACE).expect("kubeconfig"),
            Server::Real(real) => real
                .server
                .write_kubeconfig_as(path, DAEMON_USER, NAMESPACE),
        }
    }

    /// A merge patch of one set's spec; whether the server accepted it.
    async fn edit(&self, client: &reqwest::Client, set: usize, spec: Value) -> bool {
        let name = format!("set-{set:04}");
        let body = json!({ "spec": spec });
        match self {
            Server::Fake(fake) => {
                let url = format!(
                    "{}/apis/cronstable.io/v1alpha1/namespaces/{NAMESPACE}/cronjobsets/{name}",
                    fake.url()
                );
                let answer = client
                    .patch(&url)
                    .header("Content-Type", "application/merge-patch+json")
                    .body(body.to_string())
                    .send()
                    .await;
                answer.is_ok_and(|a| a.status().is_success())
            }
            Server::Real(real) => real.patch_set(NAMESPACE, &name, body).await,
        }
    }

    /// What the table's header calls it.
    fn label(&self) -> String {
        match self {
            Server::Fake(_) => "fake API server".to_owned(),
            Server::Real(real) => format!("kube-apiserver {}", real.server.version),
        }
    }
}

struct Daemon {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start_daemon(server: &Server) -> Daemon {
    let dir = tempfile::tempdir().expect("a temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig);
    let port = free_port();
    let config = dir.path().join("web.yaml");
    // KUBE_BENCH_LOG=FILE keeps the daemon's DEBUG log there.
    let log = std::env::var_os("KUBE_BENCH_LOG");
    std::fs::write(
        &config,
        format!("web:\n  listen:\n    - http://127.0.0.1:{port}\njobs: []\n"),
    )
    .expect("config");
    let child = Command::new(env!("CARGO_BIN_EXE_cronstable"))
        .env_remove("KUBECONFIG")
        .arg("--kube")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("-c")
        .arg(&config)
        .args(["-l", if log.is_some() { "DEBUG" } else { "WARNING" }])
        .stdout(Stdio::null())
        .stderr(
            match log.and_then(|p| {
                std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(p)
                    .ok()
            }) {
                Some(file) => Stdio::from(file),
                None => Stdio::null(),
            },
        )
        .spawn()
        .expect("the daemon starts");
    Daemon {
        child,
        port,
        _dir: dir,
    }
}

async fn get_json(client: &reqwest::Client, url: &str) -> Option<Value> {
    let response = client
        .get(url)
        .header("Accept", "application/json")
        .send()
        .await
        .ok()?;
    let text = response.text().await.ok()?;
    serde_json::from_str(&text).ok()
}

/// The id alone (text): cheap for the daemon to answer, so polling it
/// does not slow down what is measured.
async fn job_set_id(client: &reqwest::Client, port: u16) -> Option<String> {
    let response = client
        .get(format!("http://127.0.0.1:{port}/job-set-id"))
        .send()
        .await
        .ok()?;
    response.text().await.ok()
}

/// The id and the job count (JSON; the daemon counts its jobs for it).
async fn job_set(client: &reqwest::Client, port: u16) -> Option<(String, u64)> {
    let v = get_json(client, &format!("http://127.0.0.1:{port}/job-set-id")).await?;
    Some((v["job_set_id"].as_str()?.to_owned(), v["jobs"].as_u64()?))
}

/// Whether `GET /readyz` answers 200.
async fn ready(client: &reqwest::Client, port: u16) -> bool {
    client
        .get(format!("http://127.0.0.1:{port}/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status().as_u16() == 200)
}

fn proc_field(pid: u32, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// When the daemon's start was followed by what.
struct Startup {
    /// To `jobs` jobs in the table.
    loaded: Option<Duration>,
    /// To `/readyz` answering 200 (which may come first: it says the
    /// watches have listed, and the table takes the listed sets after).
    ready: Option<Duration>,
}

/// From now until the daemon counts `jobs` jobs and until `/readyz`
/// answers 200; each `None` after two minutes.
async fn wait_for_jobs(client: &reqwest::Client, port: u16, jobs: u64) -> Startup {
    let start = Instant::now();
    let mut seen = Startup {
        loaded: None,
        ready: None,
    };
    while start.elapsed() < Duration::from_secs(120)
        && (seen.loaded.is_none() || seen.ready.is_none())
    {
        if seen.loaded.is_none() && job_set(client, port).await.is_some_and(|(_, n)| n == jobs) {
            seen.loaded = Some(start.elapsed());
        }
        if seen.ready.is_none() && ready(client, port).await {
            seen.ready = Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    seen
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn run() {
    let sets = sets_wanted();
    let real = real_wanted();
    let jobs = (sets * JOBS_PER_SET) as u64;
    let client = reqwest::Client::new();
    let mut rows: Vec<Row> = Vec::new();

    // Phase 1: sync, apply latency, idle RSS.
    let Some((server, created)) = Server::with_sets(real, sets, false).await else {
        return;
    };
    let label = server.label();
    if let Some(took) = created {
        rows.push((
            format!(
                "creating the {sets} sets through the API ({} in flight; not the daemon)",
                kube_real::CREATE_CONCURRENCY
            ),
            format!("{:.1} s", took.as_secs_f64()),
            None,
        ));
    }
    let daemon = start_daemon(&server);
    let startup = wait_for_jobs(&client, daemon.port, jobs).await;
    let Some(loaded) = startup.loaded else {
        eprintln!("the daemon never loaded {jobs} jobs");
        return;
    };
    rows.push((
        format!("start to {jobs} jobs in force ({sets} sets)"),
        format!("{:.0} ms", ms(loaded)),
        Some((ms(loaded), BUDGET_START_MS)),
    ));
    rows.push((
        "start to `/readyz` 200".to_owned(),
        startup
            .ready
            .map_or("never (2 min)".to_owned(), |r| format!("{:.0} ms", ms(r))),
        None,
    ));
    // Let the first status writes and the allocator settle.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pid = daemon.child.id();
    if let Some(rss) = proc_field(pid, "status", "VmRSS:") {
        let mb = rss as f64 / 1024.0;
        rows.push((
            format!("idle RSS with {jobs} jobs"),
            format!("{mb:.1} MB"),
            Some((mb, BUDGET_IDLE_RSS_MB)),
        ));
    }
    let mut latencies = Vec::new();
    for edit in 0..40usize {
        let set = (edit * 37) % sets;
        let before = job_set_id(&client, daemon.port).await;
        let sent = Instant::now();
        if !server.edit(&client, set, spec(set, false, edit + 1)).await {
            eprintln!("edit {edit} refused");
            continue;
        }
        loop {
            let now = job_set_id(&client, daemon.port).await;
            if now.is_some() && now != before {
                latencies.push(ms(sent.elapsed()));
                break;
            }
            if sent.elapsed() > Duration::from_secs(30) {
                eprintln!("edit {edit} never landed");
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    latencies.sort_by(f64::total_cmp);
    if !latencies.is_empty() {
        let p95 = percentile(&latencies, 0.95);
        rows.push((
            format!("spec edit to table in force, {} edits", latencies.len()),
            format!(
                "p50 {:.1} ms, p95 {p95:.1} ms, max {:.1} ms",
                percentile(&latencies, 0.5),
                latencies[latencies.len() - 1]
            ),
            Some((p95, BUDGET_EDIT_P95_MS)),
        ));
    }
    drop(daemon);
    drop(server);

    // Phase 2: status writes under 200 fires/s (at 1,000 sets).
    let Some((server, _)) = Server::with_sets(real, sets, true).await else {
        return;
    };
    let daemon = start_daemon(&server);
    if wait_for_jobs(&client, daemon.port, jobs)
        .await
        .loaded
        .is_none()
    {
        eprintln!("the daemon never loaded {jobs} jobs (phase 2)");
        return;
    }
    // On the real server the first status of every set takes seconds to
    // write: let it finish, and measure over a longer window (the daemon's
    // counter moves once per writer pass, and a pass takes seconds there).
    let (settle, window) = if real {
        (Duration::from_secs(30), Duration::from_secs(60))
    } else {
        (Duration::from_secs(5), Duration::from_secs(20))
    };
    tokio::time::sleep(settle).await;
    let writes = |v: &Value| -> Option<(u64, u64)> {
        Some((
            v["statusWrites"].as_u64()?,
            v["statusWriteFailures"].as_u64()?,
        ))
    };
    let url = format!("http://127.0.0.1:{}/kube", daemon.port);
    let pid = daemon.child.id();
    let server_pids = match &server {
        Server::Real(real) => real.pids(),
        Server::Fake(_) => Vec::new(),
    };
    let first = get_json(&client, &url).await.as_ref().and_then(writes);
    let ticks_before = cpu_ticks(pid);
    let server_ticks_before = cpu_ticks_of(&server_pids);
    let window_start = chrono::Utc::now();
    tokio::time::sleep(window).await;
    let last = get_json(&client, &url).await.as_ref().and_then(writes);
    let ticks_after = cpu_ticks(pid);
    let server_ticks_after = cpu_ticks_of(&server_pids);
    let window_end = chrono::Utc::now();
    if let (Some((w0, f0)), Some((w1, f1))) = (first, last) {
        rows.push((
            format!("status patches at {} fires/s over {sets} sets", sets / 5),
            format!(
                "{:.0} /s ({} failed)",
                (w1 - w0) as f64 / window.as_secs_f64(),
                f1 - f0
            ),
            Some(((f1 - f0) as f64, 0.0)),
        ));
    }
    if let (Some(t0), Some(t1)) = (ticks_before, ticks_after) {
        // Linux reports 100 ticks per second to user space.
        let cpu = (t1 - t0) as f64 / 100.0 / window.as_secs_f64() * 100.0;
        rows.push((
            "daemon CPU during that window (runs + status)".to_owned(),
            format!("{cpu:.0} % of one core"),
            Some((cpu, BUDGET_CPU_PERCENT)),
        ));
    }
    if let Server::Real(real) = &server {
        let cpu = (server_ticks_after - server_ticks_before) as f64 / 100.0 / window.as_secs_f64()
            * 100.0;
        rows.push((
            "kube-apiserver + etcd CPU during that window".to_owned(),
            format!("{cpu:.0} % of one core"),
            None,
        ));
        let requests = real.requests_between(window_start, window_end);
        let counts = kube_real::by_verb(&requests, DAEMON_USER);
        let seconds = (window_end - window_start).num_milliseconds() as f64 / 1e3;
        let status: usize = counts
            .iter()
            .filter(|(what, _)| what.ends_with("cronjobsets/status"))
            .map(|(_, n)| n)
            .sum();
        let mine: Vec<&Value> = requests
            .iter()
            .filter(|e| e["user"]["username"].as_str() == Some(DAEMON_USER))
            .collect();
        let failed = mine
            .iter()
            .filter(|e| {
                e["responseStatus"]["code"]
                    .as_u64()
                    .is_some_and(|c| c >= 400)
            })
            .count();
        rows.push((
            "the daemon's requests in that window, from the audit log".to_owned(),
            format!(
                "status writes {:.0} /s; {} ({failed} answered >= 400)",
                status as f64 / seconds,
                kube_real::describe(&counts)
            ),
            None,
        ));
        let mut took: Vec<f64> = mine
            .iter()
            .filter(|e| e["objectRef"]["subresource"].as_str() == Some("status"))
            .filter_map(|e| kube_real::latency_ms(e))
            .collect();
        took.sort_by(f64::total_cmp);
        if !took.is_empty() {
            rows.push((
                "a status write inside the server (received to answered, audit log)".to_owned(),
                format!(
                    "p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
                    percentile(&took, 0.5),
                    percentile(&took, 0.95),
                    took[took.len() - 1]
                ),
                None,
            ));
        }
    }
    drop(daemon);

    // The budgets are for the fake at the default size; another size or
    // the real server prints none.
    let budgeted = sets == DEFAULT_SETS && !real;
    println!(
        "| Kubernetes mode, {label} ({sets} sets x {JOBS_PER_SET} jobs) | value | budget | within? |"
    );
    println!("|---|---|---|---|");
    for (what, value, budget) in rows {
        match budget.filter(|_| budgeted) {
            Some((measured, limit)) => println!(
                "| {what} | {value} | {limit} | {} |",
                if measured <= limit { "yes" } else { "**no**" }
            ),
            None => println!("| {what} | {value} | | |"),
        }
    }
}
