use super::*;
use crate::config::sections::PoolConf;
use crate::scheduler::pools::queue::PoolDoc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One stored document with a version bumped by every write; a read
/// lingers `linger` before answering, so concurrent changes race.
#[derive(Default)]
struct Versions {
    stored: Mutex<(Option<Vec<u8>>, u64)>,
    linger: Duration,
    conflicts: AtomicU64,
    writes: AtomicU64,
    /// Every write conflicts (another writer always got there first).
    always_late: AtomicBool,
    /// Reads never answer.
    hang: AtomicBool,
}

#[derive(Clone)]
struct Shared(Arc<Versions>);

impl VersionedDocs for Shared {
    type Seen = u64;

    fn read<'a>(&'a self, _pool: &'a str) -> BoxFuture<'a, Result<Read<u64>, String>> {
        Box::pin(async move {
            if self.0.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            let (bytes, version) = self.0.stored.lock().unwrap().clone();
            std::thread::sleep(self.0.linger);
            let seen = bytes.is_some().then_some(version);
            Ok((bytes, seen))
        })
    }

    fn write<'a>(
        &'a self,
        _pool: &'a str,
        bytes: Vec<u8>,
        seen: Option<u64>,
    ) -> BoxFuture<'a, Result<Written, String>> {
        Box::pin(async move {
            let mut stored = self.0.stored.lock().unwrap();
            let current = stored.0.is_some().then_some(stored.1);
            if current != seen || self.0.always_late.load(Ordering::SeqCst) {
                self.0.conflicts.fetch_add(1, Ordering::SeqCst);
                return Ok(Written::Conflict);
            }
            *stored = (Some(bytes), stored.1 + 1);
            self.0.writes.fetch_add(1, Ordering::SeqCst);
            Ok(Written::Done)
        })
    }
}

const CONF: PoolConf = PoolConf {
    slots: 1,
    max_queued: 1000,
};

/// Queues `key` in pool `p` through `docs`, counting the change's calls.
fn enqueue(docs: &dyn PoolDocs, key: &str, calls: &AtomicU64) -> Result<(), PoolError> {
    docs.mutate("p", &mut |current| {
        calls.fetch_add(1, Ordering::SeqCst);
        let mut doc = current.unwrap_or_else(|| PoolDoc::new(1));
        doc.enqueue(
            CONF,
            &crate::cluster::pools::tests::request(key, "j"),
            1_700_000_000.0,
        )?;
        Ok(Some(doc))
    })
}

fn stored_doc(versions: &Versions) -> PoolDoc {
    let bytes = versions.stored.lock().unwrap().0.clone().expect("written");
    decode("p", &bytes).expect("a pool document")
}

/// Runs `work` on a thread of its own (as the pools do) and waits for it
/// without blocking the runtime.
async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.await.expect("the thread answers")
}

#[tokio::test]
async fn concurrent_changes_from_two_nodes_lose_no_update() {
    let versions = Arc::new(Versions {
        linger: Duration::from_millis(2),
        ..Versions::default()
    });
    let handle = tokio::runtime::Handle::current();
    let calls = Arc::new(AtomicU64::new(0));
    // Two nodes, two threads each, ten entries a thread.
    let mut workers = Vec::new();
    for node in 0..2 {
        let docs = Arc::new(Optimistic::new(Shared(versions.clone()), handle.clone()));
        for thread in 0..2 {
            let (docs, calls) = (docs.clone(), calls.clone());
            workers.push(off_runtime(move || {
                for n in 0..10 {
                    enqueue(docs.as_ref(), &format!("k{node}-{thread}-{n}"), &calls)?;
                }
                Ok::<(), PoolError>(())
            }));
        }
    }
    for result in futures_util::future::join_all(workers).await {
        result.expect("every change lands");
    }
    let doc = stored_doc(&versions);
    assert_eq!(
        doc.entries.len(),
        40,
        "no entry lost: {:?}",
        doc.entries.keys()
    );
    assert_eq!(versions.writes.load(Ordering::SeqCst), 40);
    // The races happened, and each lost one ran the change again.
    let conflicts = versions.conflicts.load(Ordering::SeqCst);
    assert!(conflicts > 0, "the changes never raced");
    assert_eq!(calls.load(Ordering::SeqCst), 40 + conflicts);
}

#[tokio::test]
async fn a_document_that_keeps_changing_is_unavailable_after_the_attempts() {
    let versions = Arc::new(Versions::default());
    versions.always_late.store(true, Ordering::SeqCst);
    let docs = Optimistic::new(Shared(versions.clone()), tokio::runtime::Handle::current());
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let err = off_runtime(move || enqueue(&docs, "k", &counted))
        .await
        .expect_err("gave up");
    assert!(err.unavailable(), "{err:?}");
    assert!(format!("{err:?}").contains("kept changing"), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), u64::from(ATTEMPTS));
    assert!(versions.stored.lock().unwrap().0.is_none());
}

#[tokio::test]
async fn refusals_and_unreadable_documents_write_nothing() {
    let versions = Arc::new(Versions::default());
    let docs = Arc::new(Optimistic::new(
        Shared(versions.clone()),
        tokio::runtime::Handle::current(),
    ));
    // The change's own refusal comes back as it is.
    let refusing = docs.clone();
    let err = off_runtime(move || refusing.mutate("p", &mut |_| Err(PoolError::Full)))
        .await
        .expect_err("refused");
    assert_eq!(err, PoolError::Full);
    // Nothing to change: nothing written.
    let idle = docs.clone();
    off_runtime(move || idle.mutate("p", &mut |_| Ok(None)))
        .await
        .expect("done");
    assert_eq!(versions.writes.load(Ordering::SeqCst), 0);
    // A stored document that does not read is never overwritten.
    versions.stored.lock().unwrap().0 = Some(b"{\"data\":{}}".to_vec());
    let broken = docs.clone();
    let called = Arc::new(AtomicBool::new(false));
    let seen = called.clone();
    let err = off_runtime(move || {
        broken.mutate("p", &mut |_| {
            seen.store(true, Ordering::SeqCst);
            Ok(Some(PoolDoc::new(1)))
        })
    })
    .await
    .expect_err("unreadable");
    assert!(err.unavailable(), "{err:?}");
    assert!(!called.load(Ordering::SeqCst), "the change never saw it");
    assert_eq!(versions.writes.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_store_that_does_not_answer_ends_the_change_within_the_budget() {
    let versions = Arc::new(Versions::default());
    versions.hang.store(true, Ordering::SeqCst);
    let mut docs = Optimistic::new(Shared(versions), tokio::runtime::Handle::current());
    docs.budget = Duration::from_millis(200);
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let err = off_runtime(move || enqueue(&docs, "k", &counted))
        .await
        .expect_err("no answer");
    assert!(format!("{err:?}").contains("did not answer"), "{err:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn small_documents_stay_plain_and_large_ones_round_trip_compressed() {
    assert_eq!(
        pack(b"{}".to_vec(), 2).expect("packed"),
        Packed::Plain(b"{}".to_vec())
    );
    let text = b"{\"entries\":[1,2,3]}".repeat(100);
    let Packed::Gzip(bytes) = pack(text.clone(), 10).expect("packed") else {
        panic!("compressed");
    };
    assert!(bytes.len() < text.len() / 5, "{}", bytes.len());
    assert_eq!(unpack_gzip(&bytes).expect("inflates"), text);
    assert!(unpack_gzip(b"plain text").is_err());
}

#[test]
fn backoff_grows_and_stays_short() {
    for attempt in 1..ATTEMPTS {
        let wait = backoff(attempt);
        let ceiling = 5u64 << attempt.min(5);
        assert!(wait >= Duration::from_millis(ceiling / 2), "{wait:?}");
        assert!(wait <= Duration::from_millis(ceiling), "{wait:?}");
    }
    // The whole ladder fits the budget with room for the requests.
    let worst: u64 = (1..ATTEMPTS).map(|a| 5u64 << a.min(5)).sum();
    assert!(Duration::from_millis(worst) < BUDGET, "{worst} ms");
}
