//! The slot engine over the real directory store: two engines (two
//! "nodes") on one temp directory, real files, real locks, real time at
//! the smallest TTL the config allows.

use super::fs::FsSlotStore;
use super::*;
use crate::config::model::ConcurrencyScope;

const TTL: f64 = 5.0;

fn node(dir: &std::path::Path, name: &str, fail_closed: bool) -> ClusterSlots {
    let store = Arc::new(FsSlotStore::new(&dir.display().to_string(), "default"));
    ClusterSlots::new(
        store,
        name,
        SlotSettings {
            ttl: TTL,
            fail_closed,
        },
    )
}

fn job(policy: ConcurrencyPolicy) -> JobConfig {
    let yaml = "jobs:\n  - name: Nightly.Job\n    command: x\n    schedule: '@daily'\n";
    let loaded = crate::config::load_sources(&[crate::config::Source {
        name: "t.yaml".into(),
        text: yaml.into(),
        kind: crate::config::SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("loads");
    let mut job = loaded.jobs.into_iter().next().expect("one job");
    job.concurrency_policy = policy;
    job.concurrency_scope = ConcurrencyScope::Cluster;
    job
}

#[test]
fn periods_follow_the_ttl_with_a_one_second_floor() {
    assert_eq!(renew_period(30.0), Duration::from_secs(10));
    assert_eq!(renew_period(2.0), Duration::from_secs(1));
    assert_eq!(pursuit_period(30.0), Duration::from_secs(5));
    assert_eq!(pursuit_period(5.0), Duration::from_secs(1));
    assert_eq!(pursuit_deadline(30.0), Duration::from_secs(60));
}

#[tokio::test]
async fn forbid_sees_the_other_node_and_a_release_frees_the_slot() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = node(dir.path(), "node-a", false);
    let mut b = node(dir.path(), "node-b", false);
    let forbid = job(ConcurrencyPolicy::Forbid);
    assert_eq!(a.claim(&forbid).await, SlotClaim::Claimed);
    assert!(a.view("Nightly.Job").held);
    assert_eq!(b.claim(&forbid).await, SlotClaim::HeldBy("node-a".into()));
    assert_eq!(b.view("Nightly.Job").holder.as_deref(), Some("node-a"));
    // The original's file name, and its lease format.
    let lease = dir
        .path()
        .join("default/leases/slots%2F%4Eightly%2E%4Aob.lease");
    let text = std::fs::read_to_string(&lease).expect("the slot lease file");
    assert!(text.contains("\"name\":\"slots/Nightly.Job\""), "{text}");
    assert!(text.contains("\"holder\":\"node-a#"), "{text}");
    a.release("Nightly.Job");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match b.claim(&forbid).await {
            SlotClaim::Claimed => break,
            other if std::time::Instant::now() > deadline => panic!("still {other:?}"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let text = std::fs::read_to_string(&lease).unwrap();
    assert!(
        text.contains("\"fence\":2"),
        "a takeover bumps the fence: {text}"
    );
}

#[tokio::test]
async fn replace_asks_the_holder_to_yield_and_takes_the_slot_after_the_release() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = node(dir.path(), "node-a", false);
    let mut b = node(dir.path(), "node-b", false);
    let replace = job(ConcurrencyPolicy::Replace);
    assert_eq!(a.claim(&replace).await, SlotClaim::Claimed);
    let pursuit = tokio::spawn(b.claim(&replace));
    // The holder hears of it through its renewal (within ~ttl/3).
    let request = tokio::time::timeout(Duration::from_secs(10), a.next_yield())
        .await
        .expect("the yield request reached the holder");
    assert_eq!(
        request,
        SlotYield {
            job: "Nightly.Job".into(),
            by: "node-b".into()
        }
    );
    let records: Vec<_> =
        std::fs::read_dir(dir.path().join("default/records/slots%2F%4Eightly%2E%4Aob"))
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect();
    assert_eq!(records.len(), 1);
    assert!(
        records[0].starts_with("{\"data\":{\"at\":\"")
            && records[0].contains(
                "\"by\":\"node-b\",\"fence\":1,\"kind\":\"cancel\"},\"schemaVersion\":\"v1\"}"
            ),
        "{}",
        records[0]
    );
    a.release("Nightly.Job");
    assert_eq!(
        pursuit.await.unwrap(),
        SlotClaim::ClaimedAfterYield,
        "the requester took the freed slot"
    );
    assert!(b.view("Nightly.Job").held);
}

#[tokio::test]
async fn a_holder_that_never_yields_leaves_the_pursuit_to_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = node(dir.path(), "node-a", false);
    let mut b = node(dir.path(), "node-b", false);
    let replace = job(ConcurrencyPolicy::Replace);
    assert_eq!(a.claim(&replace).await, SlotClaim::Claimed);
    // `a` keeps renewing and ignores the request.
    let began = std::time::Instant::now();
    let answer = b.claim(&replace).await;
    assert_eq!(
        answer,
        SlotClaim::NotYielded {
            holder: "node-a".into(),
            waited_secs: 2.0 * TTL
        }
    );
    assert!(began.elapsed() >= Duration::from_secs_f64(2.0 * TTL - 1.0));
    drop(a);
}

#[tokio::test]
async fn a_store_that_cannot_be_written_is_unavailable_with_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the store's directory should be.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    for fail_closed in [false, true] {
        let mut a = node(&blocked, "node-a", fail_closed);
        assert_eq!(
            a.claim(&job(ConcurrencyPolicy::Forbid)).await,
            SlotClaim::Unavailable {
                reason: "the state store is unavailable".into(),
                fail_closed
            }
        );
    }
}

#[test]
fn store_errors_keep_the_wording_of_the_debug_lines() {
    assert_eq!(
        SlotStoreError::TimedOut.to_string(),
        "the store operation timed out"
    );
    assert_eq!(
        SlotStoreError::LeaseVanished.to_string(),
        "the Lease vanished"
    );
    assert_eq!(
        SlotStoreError::LeaseKeptChanging {
            lease: "cronstable-leader-slot-backup".to_owned(),
            attempts: 3,
        }
        .to_string(),
        "the Lease cronstable-leader-slot-backup kept changing; not written after 3 attempts"
    );
    assert_eq!(
        SlotStoreError::KeepaliveFailed(serde_json::json!({"error": "lease not found"}))
            .to_string(),
        "keepalive failed: {\"error\":\"lease not found\"}"
    );
}
