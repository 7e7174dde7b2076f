//! Resource pools against the state store's file documents (the real
//! `FsPoolDocs` in a temporary directory, flock + fsync + rename per
//! change): microseconds per operation as the scheduler issues them.
//!
//! Printed (nothing asserted), each the median and the 95th percentile
//! of `POOLS_ROUNDS` rounds (default 500):
//! - queue: one `enqueue` (one locked change of the pool's document);
//! - admit: one dispatch pass admitting that entry into a free slot;
//! - admission: queue + admit, a free slot's admission latency as a
//!   pooled fire sees it (the scheduler sends the pass when the queue
//!   answers);
//! - close: closing the claim (its slot free again);
//! - a dispatch pass that admits nothing, with 0, 100 and 1000 entries
//!   waiting (what every daemon pays each second per pool);
//! - a renewal round with 1 and 32 claims held.
//!
//! Run with `cargo bench --bench pools`; `POOLS_DIR` puts the store
//! elsewhere than the system's temporary directory.

use cronstable::cluster::pools::{fs::FsPoolDocs, StorePools};
use cronstable::config::{PoolConf, PoolTable};
use cronstable::scheduler::pools::queue::Payload;
use cronstable::scheduler::pools::{Closing, Eligibility, EnqueueRequest, JobGate};
use cronstable::scheduler::ports::Pools;
use cronstable::state::store::{Store, StoreSettings};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn request(key: String, job: &str) -> EnqueueRequest {
    EnqueueRequest {
        key,
        job: job.into(),
        pool: "p".into(),
        slots: 1,
        priority: 0,
        timeout: 3600.0,
        digest: "d".into(),
        payload: Payload {
            kind: Some("job".into()),
            with_retries: Some(true),
            manual: Some(false),
            ..Payload::default()
        },
    }
}

fn gates(jobs: &[&str], open: bool) -> Eligibility {
    Eligibility {
        pool: "p".into(),
        host: "bench".into(),
        jobs: jobs
            .iter()
            .map(|j| {
                (
                    (*j).to_owned(),
                    JobGate {
                        pool: "p".into(),
                        digest: "d".into(),
                        scheduled_ok: open,
                        forbid: false,
                        running: false,
                    },
                )
            })
            .collect(),
        stopping: false,
    }
}

fn pools(dir: &std::path::Path, slots: u32) -> StorePools {
    let store = Store::open(&StoreSettings {
        root: dir.to_path_buf(),
        deployment_id: "default".into(),
        topology: None,
        max_ops_per_second: 0.0,
    })
    .expect("a store");
    let table = PoolTable(vec![(
        "p".into(),
        PoolConf {
            slots,
            max_queued: 10_000,
        },
    )]);
    let (tx, rx) = tokio::sync::watch::channel(Arc::new(table));
    std::mem::forget(tx);
    StorePools::new(Arc::new(FsPoolDocs::new(Arc::new(store))), "bench", rx)
}

/// A temporary store directory, under `POOLS_DIR` when set (e.g.
/// `/dev/shm` to take the disk's fsync out of the numbers).
fn temp_dir() -> tempfile::TempDir {
    match std::env::var_os("POOLS_DIR") {
        Some(base) => tempfile::tempdir_in(base).expect("temp dir"),
        None => tempfile::tempdir().expect("temp dir"),
    }
}

fn show(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    println!(
        "{what:<44} median {:>8.1} µs   p95 {:>8.1} µs   ({} rounds)",
        at(0.5),
        at(0.95),
        samples.len()
    );
}

async fn run() {
    let rounds: usize = std::env::var("POOLS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let dir = temp_dir();
    println!("store: {}", dir.path().display());
    let mut p = pools(dir.path(), 1);
    let (mut queue, mut admit, mut both, mut close) = (vec![], vec![], vec![], vec![]);
    for i in 0..rounds {
        let t0 = Instant::now();
        p.enqueue(request(format!("k{i}"), "j"))
            .await
            .expect("queued");
        let t1 = Instant::now();
        let answer = p.dispatch(gates(&["j"], true)).await.expect("dispatch");
        let t2 = Instant::now();
        assert_eq!(answer.admitted.len(), 1, "the free slot admits");
        p.close(&answer.admitted[0].ticket, Closing::Finished).await;
        let t3 = Instant::now();
        queue.push(t1 - t0);
        admit.push(t2 - t1);
        both.push(t2 - t0);
        close.push(t3 - t2);
    }
    show("queue (enqueue)", queue);
    show("admit (dispatch pass claiming a free slot)", admit);
    show("admission latency (queue + admit)", both);
    show("close (release)", close);

    for waiting in [0usize, 100, 1000] {
        let dir = temp_dir();
        let mut p = pools(dir.path(), 1);
        for i in 0..waiting {
            p.enqueue(request(format!("w{i:05}"), "j"))
                .await
                .expect("queued");
        }
        let mut idle = vec![];
        for _ in 0..rounds.min(200) {
            let t0 = Instant::now();
            // The head is gated (paused): the pass admits nothing.
            let answer = p.dispatch(gates(&["j"], false)).await.expect("dispatch");
            idle.push(t0.elapsed());
            assert!(answer.admitted.is_empty());
        }
        show(&format!("idle dispatch pass, {waiting} waiting"), idle);
    }
    println!("renewal rounds run every 5 s in the background; one round is one change per pool");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}
