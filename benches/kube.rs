//! Kubernetes mode, whole process: the release binary with `--kube` against
//! the fake API server of the tests, holding 1,000 CronJobSets of 10 jobs.
//!
//! Measured (printed as a Markdown table with each figure's regression
//! budget and whether it is within it; nothing asserted):
//! - sync: from the daemon's start to all 10,000 jobs in the table;
//! - apply: from a spec edit accepted by the API server to the new job
//!   table in force (`GET /job-set-id` changes), p50/p95/max over 40 edits;
//! - idle RSS with the 10,000 jobs loaded;
//! - status writes: with 200 fires/s spread over the 1,000 sets, status
//!   patches per second and the daemon's CPU share over 20 s.
//!
//! Run with `cargo bench --bench kube` (or `scripts/bench.sh --kube`).
//! Set `KUBE_BENCH_SETS` to change the number of sets, `KUBE_BENCH_LOG` to
//! a file to keep the daemon's DEBUG log (its timings of each apply).

#[path = "../tests/support/kube_fake/mod.rs"]
#[allow(dead_code)]
mod kube_fake;

use kube_fake::{FakeApiServer, Settings};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const JOBS_PER_SET: usize = 10;
const NAMESPACE: &str = "bench";
/// The sets of a run without `KUBE_BENCH_SETS`: the size the budgets are for.
const DEFAULT_SETS: usize = 1000;

// The regression budget at the default size: about 1.3 times the figures
// measured on 2026-12-01 and 2026-12-02 on two cores (docs/performance.md,
// "Kubernetes mode"). A change that takes a figure past its budget needs
// a reason in its commit, or a fix.
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

fn start_daemon(fake: &FakeApiServer) -> Daemon {
    let dir = tempfile::tempdir().expect("a temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    fake.write_kubeconfig(&kubeconfig, NAMESPACE)
        .expect("kubeconfig");
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

fn proc_field(pid: u32, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

async fn fake_with_sets(sets: usize, seconds: bool) -> FakeApiServer {
    let fake = FakeApiServer::start_with(Settings {
        history_limit: 100_000,
        ..Settings::default()
    })
    .await
    .expect("the fake starts");
    let crd = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/crds/cronjobset.yaml"))
        .expect("the CRD file");
    fake.install_crd_yaml(&crd).expect("the CRD installs");
    for set in 0..sets {
        fake.seed(set_object(set, seconds)).expect("a set seeds");
    }
    fake
}

async fn wait_for_jobs(client: &reqwest::Client, port: u16, jobs: u64) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        if let Some((_, count)) = job_set(client, port).await {
            if count == jobs {
                return Some(start.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

async fn run() {
    let sets = sets_wanted();
    let jobs = (sets * JOBS_PER_SET) as u64;
    let client = reqwest::Client::new();
    let mut rows: Vec<Row> = Vec::new();

    // Phase 1: sync, apply latency, idle RSS.
    let fake = fake_with_sets(sets, false).await;
    let started = Instant::now();
    let daemon = start_daemon(&fake);
    let Some(_) = wait_for_jobs(&client, daemon.port, jobs).await else {
        eprintln!("the daemon never loaded {jobs} jobs");
        return;
    };
    let start_ms = started.elapsed().as_secs_f64() * 1e3;
    rows.push((
        format!("start to {jobs} jobs in force ({sets} sets)"),
        format!("{start_ms:.0} ms"),
        Some((start_ms, BUDGET_START_MS)),
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
        let url = format!(
            "{}/apis/cronstable.io/v1alpha1/namespaces/{NAMESPACE}/cronjobsets/set-{set:04}",
            fake.url()
        );
        let body = json!({ "spec": spec(set, false, edit + 1) });
        let sent = Instant::now();
        let answer = client
            .patch(&url)
            .header("Content-Type", "application/merge-patch+json")
            .body(body.to_string())
            .send()
            .await;
        if !answer.as_ref().is_ok_and(|a| a.status().is_success()) {
            eprintln!("edit {edit} refused: {answer:?}");
            continue;
        }
        loop {
            let now = job_set_id(&client, daemon.port).await;
            if now.is_some() && now != before {
                latencies.push(sent.elapsed().as_secs_f64() * 1e3);
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
    drop(fake);

    // Phase 2: status writes under 200 fires/s (at 1,000 sets).
    let fake = fake_with_sets(sets, true).await;
    let daemon = start_daemon(&fake);
    if wait_for_jobs(&client, daemon.port, jobs).await.is_none() {
        eprintln!("the daemon never loaded {jobs} jobs (phase 2)");
        return;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let writes = |v: &Value| -> Option<(u64, u64)> {
        Some((
            v["statusWrites"].as_u64()?,
            v["statusWriteFailures"].as_u64()?,
        ))
    };
    let url = format!("http://127.0.0.1:{}/kube", daemon.port);
    let pid = daemon.child.id();
    let first = get_json(&client, &url).await.as_ref().and_then(writes);
    let ticks_before = cpu_ticks(pid);
    let window = Duration::from_secs(20);
    tokio::time::sleep(window).await;
    let last = get_json(&client, &url).await.as_ref().and_then(writes);
    let ticks_after = cpu_ticks(pid);
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
    drop(daemon);

    // The budgets are for the default size; another size prints none.
    let budgeted = sets == DEFAULT_SETS;
    println!("| Kubernetes mode ({sets} sets x {JOBS_PER_SET} jobs) | value | budget | within? |");
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
