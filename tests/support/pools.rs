//! Resource pools under test: pooled jobs that write their start and end
//! to a shared file, the overlap check on what they wrote, and, through
//! the library, two nodes racing on one store's pool document and the
//! admission latency through a store.

use cronstable::cluster::pools::{PoolDocs, StorePools};
use cronstable::config::{PoolConf, PoolTable};
use cronstable::scheduler::pools::queue::{Payload, PoolDoc};
use cronstable::scheduler::pools::{Closing, Eligibility, EnqueueRequest, JobGate};
use cronstable::scheduler::ports::Pools;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::daemon::read_lines;

/// The bound on a wait for runs (never a speed claim).
pub const LONG: Duration = Duration::from_secs(40);

/// A job firing every second on pool `pool`; each run writes
/// `start <job> <node> <ns>` and `end <job> <node> <ns>` to `log`
/// around a short sleep.
pub fn pooled(name: &str, pool: &str, log: &str, extra: &str) -> String {
    format!(
        "  - name: {name}\n    schedule: '* * * * * * *'\n    pool: {pool}\n    command: |\n      \
         echo \"start {name} ${{NODE:-here}} $(date +%s%N)\" >> {log}\n      sleep 0.3\n      \
         echo \"end {name} ${{NODE:-here}} $(date +%s%N)\" >> {log}\n{extra}"
    )
}

/// [`pooled`] jobs `a` and `b` on pool `one` for node `node`: EveryNode
/// (each node's entries are its own, so the nodes take the one slot in
/// turn), with `NODE` set for the lines they write.
pub fn every_node_pair(node: &str, log: &Path) -> String {
    let extra = format!(
        "    clusterPolicy: EveryNode\n    environment:\n      - key: NODE\n        value: {node}\n"
    );
    let log = log.display().to_string();
    pooled("a", "one", &log, &extra) + &pooled("b", "one", &log, &extra)
}

/// The `[start, end]` intervals in `lines`, in nanoseconds, with the job
/// and node of each.
pub fn intervals(lines: &[String]) -> Vec<(u128, u128, String)> {
    let mut open: std::collections::HashMap<String, u128> = Default::default();
    let mut done = Vec::new();
    for line in lines {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [kind, job, node, at] = parts[..] else {
            panic!("unexpected line {line:?}");
        };
        let at: u128 = at.parse().expect("nanoseconds");
        let key = format!("{job} {node}");
        match kind {
            "start" => {
                assert!(
                    open.insert(key.clone(), at).is_none(),
                    "{key} started twice"
                );
            }
            "end" => {
                let start = open.remove(&key).expect("an end after its start");
                done.push((start, at, key));
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    done.sort();
    done
}

/// Panics when any two runs overlapped.
pub fn assert_no_overlap(runs: &[(u128, u128, String)]) {
    for pair in runs.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "{} started at {} before {} ended at {}: {runs:?}",
            pair[1].2,
            pair[1].0,
            pair[0].2,
            pair[0].1
        );
    }
}

/// Waits until `path` holds `count` complete runs.
pub fn wait_runs(path: &Path, count: usize, logs: &dyn Fn() -> String) -> Vec<String> {
    let start = Instant::now();
    loop {
        let lines = read_lines(path);
        if lines.iter().filter(|l| l.starts_with("end ")).count() >= count {
            return lines;
        }
        assert!(
            start.elapsed() < LONG,
            "{count} runs not done after {LONG:?}: {lines:?}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Checks the runs of two nodes in `log`: at least `count` of them, no
/// two overlapping, and each node ran some.
pub fn assert_two_nodes_took_turns(log: &Path, count: usize, logs: &dyn Fn() -> String) {
    let lines = wait_runs(log, count, logs);
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

const CONF: PoolConf = PoolConf {
    slots: 1,
    max_queued: 1000,
};

/// A job's run to queue in pool `p` under `key`.
pub fn request(key: &str) -> EnqueueRequest {
    EnqueueRequest {
        key: key.into(),
        job: "j".into(),
        pool: "p".into(),
        slots: 1,
        priority: 0,
        timeout: 3600.0,
        digest: "d".into(),
        payload: Payload {
            kind: Some("job".into()),
            ..Payload::default()
        },
    }
}

/// Queues `key` in `p` through `docs` (on this thread, which must not be
/// the runtime's), counting the change's calls in `calls`; `hold` runs on
/// the first call, before the change answers.
fn enqueue(docs: &dyn PoolDocs, key: &str, calls: &AtomicU64, hold: &dyn Fn()) {
    docs.mutate("p", &mut |current| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            hold();
        }
        let mut doc = current.unwrap_or_else(|| PoolDoc::new(1));
        doc.enqueue(CONF, &request(key), 1_700_000_000.0)?;
        Ok(Some(doc))
    })
    .unwrap_or_else(|e| panic!("enqueue {key}: {e:?}"));
}

/// Pool `p`'s document as `docs` reads it.
fn read(docs: &dyn PoolDocs) -> PoolDoc {
    let seen = Mutex::new(None);
    docs.mutate("p", &mut |current| {
        *seen.lock().unwrap() = current;
        Ok(None)
    })
    .expect("read the document");
    let doc = seen.lock().unwrap().take();
    doc.expect("a document")
}

/// Runs `work` on a thread of its own (as the pools do) and waits for it
/// without blocking the runtime.
pub async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.await.expect("the thread answers")
}

/// Node `a` reads pool `p`'s document and, before writing, waits while
/// node `b` writes its own change: `a`'s write must lose (a create that
/// meets `b`'s, then a replace on a stale version), and `a` must apply
/// its change again on `b`'s document. Twice: on an absent document and
/// on an existing one. Then four threads, two a node, queue ten entries
/// each at once. No entry may be lost.
pub async fn race_two_nodes(a: Arc<dyn PoolDocs>, b: Arc<dyn PoolDocs>) {
    for round in 0..2 {
        let (wrote_tx, wrote_rx) = mpsc::channel::<()>();
        let (reading_tx, reading_rx) = mpsc::channel::<()>();
        let calls = Arc::new(AtomicU64::new(0));
        let (docs, counted) = (a.clone(), calls.clone());
        let slow = off_runtime(move || {
            let hold = move || {
                reading_tx.send(()).expect("signal the read");
                wrote_rx
                    .recv_timeout(Duration::from_secs(10))
                    .expect("b wrote");
            };
            enqueue(docs.as_ref(), &format!("a{round}"), &counted, &hold);
        });
        let docs = b.clone();
        let fast = off_runtime(move || {
            reading_rx
                .recv_timeout(Duration::from_secs(10))
                .expect("a read");
            enqueue(
                docs.as_ref(),
                &format!("b{round}"),
                &AtomicU64::new(1),
                &|| {},
            );
            wrote_tx.send(()).expect("signal the write");
        });
        let ((), ()) = futures_util::future::join(slow, fast).await;
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "round {round}: a's first write lost the race and its change ran again"
        );
    }
    let docs = b.clone();
    let doc = off_runtime(move || read(docs.as_ref())).await;
    let mut keys: Vec<&String> = doc.entries.keys().collect();
    keys.sort();
    assert_eq!(keys, ["a0", "a1", "b0", "b1"]);
    // Many at once.
    let mut workers = Vec::new();
    for (node, docs) in [("a", &a), ("b", &b)] {
        for thread in 0..2 {
            let docs = docs.clone();
            workers.push(off_runtime(move || {
                let calls = AtomicU64::new(1);
                for n in 0..10 {
                    enqueue(
                        docs.as_ref(),
                        &format!("{node}-{thread}-{n}"),
                        &calls,
                        &|| {},
                    );
                }
            }));
        }
    }
    futures_util::future::join_all(workers).await;
    let docs = a.clone();
    let doc = off_runtime(move || read(docs.as_ref())).await;
    assert_eq!(doc.entries.len(), 44, "{:?}", doc.entries.keys());
}

fn table() -> tokio::sync::watch::Receiver<Arc<PoolTable>> {
    let (tx, rx) = tokio::sync::watch::channel(Arc::new(PoolTable(vec![("q".into(), CONF)])));
    // Kept open for the process's length.
    std::mem::forget(tx);
    rx
}

fn gates(host: &str) -> Eligibility {
    Eligibility {
        pool: "q".into(),
        host: host.into(),
        jobs: [(
            "j".to_owned(),
            JobGate {
                pool: "q".into(),
                digest: "d".into(),
                scheduled_ok: true,
                forbid: false,
                running: false,
            },
        )]
        .into_iter()
        .collect(),
        stopping: false,
    }
}

/// `rounds` admissions through `docs` as the scheduler makes them (queue
/// an entry, dispatch claims it, the run's close), on pool `q`; answers
/// the median time from the enqueue to the claim, in milliseconds.
pub async fn admission_latency(docs: Arc<dyn PoolDocs>, rounds: usize) -> f64 {
    let mut pools = StorePools::new(docs, "bench", table());
    let mut took = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let mut wanted = request(&format!("adm-{n}"));
        wanted.pool = "q".into();
        let start = Instant::now();
        pools.enqueue(wanted).await.expect("queued");
        let answer = pools.dispatch(gates("bench")).await.expect("dispatched");
        took.push(start.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(answer.admitted.len(), 1, "admitted");
        let close = pools.close(&answer.admitted[0].ticket, Closing::Finished);
        close.await;
        pools.settle().await;
    }
    took.sort_by(f64::total_cmp);
    took[took.len() / 2]
}
