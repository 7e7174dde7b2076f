use super::*;
use crate::scheduler::pools::queue::{Payload, LEASE_SECONDS};
use crate::scheduler::pools::JobGate;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Documents in memory, one lock for all; `down` makes every change
/// fail as an unreachable store would.
#[derive(Default)]
struct MemoryDocs {
    docs: Mutex<HashMap<String, PoolDoc>>,
    down: AtomicBool,
}

impl PoolDocs for MemoryDocs {
    fn mutate(&self, pool: &str, change: Change<'_>) -> Result<(), PoolError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(PoolError::Unavailable("down".into()));
        }
        let mut docs = lock(&self.docs);
        if let Some(next) = change(docs.get(pool).cloned())? {
            docs.insert(pool.to_owned(), next);
        }
        Ok(())
    }
    fn blocks(&self) -> bool {
        false
    }
}

/// Wall-clock seconds that follow tokio's (paused) clock.
fn paused_wall() -> WallClock {
    let start = tokio::time::Instant::now();
    Arc::new(move || 1_700_000_000.0 + start.elapsed().as_secs_f64())
}

fn node(docs: &Arc<MemoryDocs>, host: &str, slots: u32, max_queued: u32) -> StorePools {
    StorePools::with_clock(docs.clone(), host, table(slots, max_queued), paused_wall())
}

fn table(slots: u32, max_queued: u32) -> watch::Receiver<Arc<PoolTable>> {
    let (tx, rx) = watch::channel(Arc::new(PoolTable(vec![(
        "p".into(),
        PoolConf { slots, max_queued },
    )])));
    // Kept open for the test's length.
    std::mem::forget(tx);
    rx
}

/// A run of `job` to queue in pool `p` under `key` (the optimistic
/// store's tests queue the same).
pub(super) fn request(key: &str, job: &str) -> EnqueueRequest {
    EnqueueRequest {
        key: key.into(),
        job: job.into(),
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

fn gates(host: &str, jobs: &[&str]) -> Eligibility {
    Eligibility {
        pool: "p".into(),
        host: host.into(),
        jobs: jobs
            .iter()
            .map(|j| {
                (
                    (*j).to_owned(),
                    JobGate {
                        pool: "p".into(),
                        digest: "d".into(),
                        scheduled_ok: true,
                        forbid: false,
                        running: false,
                    },
                )
            })
            .collect(),
        stopping: false,
    }
}

#[tokio::test(start_paused = true)]
async fn two_nodes_on_one_store_never_hold_more_than_the_slots() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 10);
    let mut b = node(&docs, "node-b", 1, 10);
    a.enqueue(request("k1", "j")).await.expect("queued");
    b.enqueue(request("k2", "j")).await.expect("queued");
    let won_a = a.dispatch(gates("node-a", &["j"])).await.expect("dispatch");
    let won_b = b.dispatch(gates("node-b", &["j"])).await.expect("dispatch");
    assert_eq!(won_a.admitted.len() + won_b.admitted.len(), 1);
    assert_eq!(won_a.admitted[0].entry.id, "k1", "the earlier entry first");
    assert_eq!((won_b.used, won_b.queued), (1, 1));
    assert!(won_a.admitted[0].ticket.owner.starts_with("node-a#"));
    // a closes: b's next pass takes the freed slot.
    drop(a.close(&won_a.admitted[0].ticket, Closing::Finished));
    a.settle().await;
    let won_b = b.dispatch(gates("node-b", &["j"])).await.expect("dispatch");
    assert_eq!(won_b.admitted[0].entry.id, "k2");
    let view = &b.snapshot().await.expect("snapshot")[0];
    assert_eq!(view["used"], 1);
    assert_eq!(view["entries"][0]["holder"], "node-b");
    assert_eq!(view["entries"][1]["state"], "finished");
}

#[tokio::test(start_paused = true)]
async fn held_claims_are_renewed_and_outlive_the_lease() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 10);
    a.enqueue(request("k1", "j")).await.expect("queued");
    let won = a.dispatch(gates("node-a", &["j"])).await.expect("dispatch");
    let first = lock(&docs.docs)["p"].entries["k1"]
        .lease_until
        .expect("lease");
    // Three leases later the claim still holds (renewed every 5 s).
    tokio::time::sleep(Duration::from_secs_f64(LEASE_SECONDS * 3.0)).await;
    let doc = lock(&docs.docs)["p"].clone();
    assert_eq!(doc.entries["k1"].state, EntryState::Running);
    assert!(doc.entries["k1"].lease_until.expect("lease") > first);
    assert!(
        tokio::time::timeout(Duration::from_millis(1), a.next_lost())
            .await
            .is_err(),
        "nothing lost"
    );
    drop(a.close(&won.admitted[0].ticket, Closing::Finished));
    a.settle().await;
    assert_eq!(
        lock(&docs.docs)["p"].entries["k1"].state,
        EntryState::Finished
    );
}

#[tokio::test(start_paused = true)]
async fn a_claim_nobody_renews_lapses_and_the_work_is_admitted_again() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 10);
    let mut b = node(&docs, "node-b", 1, 10);
    a.enqueue(request("k1", "j")).await.expect("queued");
    let won = a.dispatch(gates("node-a", &["j"])).await.expect("dispatch");
    assert_eq!(won.admitted.len(), 1);
    // node-a vanishes (its renewer with it).
    drop(a);
    tokio::time::sleep(Duration::from_secs_f64(LEASE_SECONDS - 1.0)).await;
    assert!(b
        .dispatch(gates("node-b", &["j"]))
        .await
        .expect("dispatch")
        .admitted
        .is_empty());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = b.dispatch(gates("node-b", &["j"])).await.expect("dispatch");
    assert_eq!(again.admitted[0].entry.id, "k1");
    assert!(again.admitted[0].ticket.owner.starts_with("node-b#"));
}

#[tokio::test(start_paused = true)]
async fn a_store_that_fails_a_renewal_loses_the_claim() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 10);
    a.enqueue(request("k1", "j")).await.expect("queued");
    let won = a.dispatch(gates("node-a", &["j"])).await.expect("dispatch");
    docs.down.store(true, Ordering::SeqCst);
    let lost = tokio::time::timeout(RENEW_EVERY * 2, a.next_lost())
        .await
        .expect("reported lost");
    assert_eq!(lost, won.admitted[0].ticket);
    // A close of a lost claim is not written (the claim is not ours).
    docs.down.store(false, Ordering::SeqCst);
    drop(a.close(&lost, Closing::Finished));
    a.settle().await;
    assert_eq!(
        lock(&docs.docs)["p"].entries["k1"].state,
        EntryState::Running,
        "left for its lease to lapse"
    );
}

#[tokio::test(start_paused = true)]
async fn a_claim_taken_over_after_a_lapse_is_lost_by_its_first_holder() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 10);
    a.enqueue(request("k1", "j")).await.expect("queued");
    let won = a.dispatch(gates("node-a", &["j"])).await.expect("dispatch");
    // Another node's document change gives the entry to another owner
    // (as a lapse and a re-admission elsewhere would).
    lock(&docs.docs)
        .get_mut("p")
        .unwrap()
        .entries
        .get_mut("k1")
        .unwrap()
        .owner = Some("node-b#x:0".into());
    let lost = tokio::time::timeout(RENEW_EVERY * 2, a.next_lost())
        .await
        .expect("reported lost");
    assert_eq!(lost, won.admitted[0].ticket);
}

#[tokio::test(start_paused = true)]
async fn a_close_the_store_refuses_is_written_on_a_later_round_and_not_renewed() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 10);
    a.enqueue(request("k1", "j")).await.expect("queued");
    let won = a.dispatch(gates("node-a", &["j"])).await.expect("dispatch");
    docs.down.store(true, Ordering::SeqCst);
    drop(a.close(&won.admitted[0].ticket, Closing::Finished));
    a.settle().await;
    docs.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(RENEW_EVERY + Duration::from_millis(10)).await;
    assert_eq!(
        lock(&docs.docs)["p"].entries["k1"].state,
        EntryState::Finished
    );
    assert!(lock(&a.inner.held).is_empty());
    assert!(
        tokio::time::timeout(Duration::from_millis(1), a.next_lost())
            .await
            .is_err(),
        "a closing claim is never reported lost"
    );
}

#[tokio::test(start_paused = true)]
async fn operations_answer_the_original_refusals() {
    let docs = Arc::new(MemoryDocs::default());
    let mut a = node(&docs, "node-a", 1, 1);
    a.enqueue(request("k1", "j")).await.expect("queued");
    assert_eq!(a.enqueue(request("k2", "j")).await, Err(PoolError::Full));
    let mut other = request("k3", "j");
    other.pool = "nope".into();
    let err = a.enqueue(other).await.expect_err("unknown");
    assert_eq!(err.to_string(), "unknown pool 'nope'");
    assert_eq!(a.cancel("p", "zz").await, Err(PoolError::NotFound));
    let cancelled = a.cancel("p", "k1").await.expect("waiting");
    assert_eq!(cancelled.reason.as_deref(), Some("cancelled by operator"));
    docs.down.store(true, Ordering::SeqCst);
    let err = a.enqueue(request("k4", "j")).await.expect_err("down");
    assert!(err.unavailable());
    assert_eq!(err.to_string(), "pool state is unavailable");
    assert!(a.snapshot().await.expect_err("down").unavailable());
}

#[test]
fn documents_in_the_state_store_use_the_original_layout_and_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = crate::state::store::Store::open(&crate::state::store::StoreSettings {
        root: dir.path().to_path_buf(),
        deployment_id: "default".into(),
        topology: None,
        max_ops_per_second: 0.0,
    })
    .expect("store opens");
    let docs = fs::FsPoolDocs::new(Arc::new(store));
    docs.mutate("warehouse", &mut |current| {
        assert!(current.is_none());
        let mut doc = PoolDoc::new(2);
        doc.enqueue(
            PoolConf {
                slots: 2,
                max_queued: 5,
            },
            &request("k1", "j"),
            1_700_000_000.5,
        )?;
        Ok(Some(doc))
    })
    .expect("written");
    let path = dir
        .path()
        .join("default/docs/scheduler-pools/warehouse.doc");
    let text = std::fs::read_to_string(&path).expect("the document");
    assert!(
        text.starts_with(
            r#"{"data":{"entries":{"k1":{"digest":"d","expiresAt":1700003600.5,"id":"k1","#
        ),
        "{text}"
    );
    assert!(
        text.ends_with(r#""slots":2},"schemaVersion":"v1"}"#),
        "{text}"
    );
    assert!(dir
        .path()
        .join("default/docs/scheduler-pools/warehouse.lock")
        .exists());
    // A document that does not read is never overwritten.
    std::fs::write(&path, r#"{"data":{"entries":{}},"schemaVersion":"v1"}"#).expect("write");
    let err = docs
        .mutate("warehouse", &mut |_| Ok(Some(PoolDoc::new(1))))
        .expect_err("unreadable");
    assert!(err.unavailable(), "{err:?}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("kept"),
        r#"{"data":{"entries":{}},"schemaVersion":"v1"}"#
    );
}
