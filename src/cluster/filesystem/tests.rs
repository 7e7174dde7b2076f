//! The store and the backend on a real directory.

use super::*;
use crate::cluster::Backend;
use crate::config::cluster::FilesystemSettings;
use crate::config::model::sections::Topology;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

fn settings(dir: &Path) -> FilesystemSettings {
    FilesystemSettings {
        path: dir.display().to_string(),
        election_name: "cluster/leader".to_owned(),
        ttl: 3.0,
        deployment_id: "default".to_owned(),
        topology: Topology::SingleNode,
    }
}

#[test]
fn the_store_takes_renews_and_releases_under_the_lock() {
    // A TTL long enough that a loaded machine never lets a lease lapse
    // between two steps: this test is about the lock and the format.
    const TTL: f64 = 60.0;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::new(&settings(dir.path()));
    store.prepare().expect("prepare");
    assert_eq!(
        store.lock_fidelity().expect("probe"),
        None,
        "local locks exclude"
    );
    let lease_file = dir.path().join("default/leases/cluster%2Fleader.lease");
    let a = store.acquire("a#1", TTL).expect("io").expect("granted");
    assert_eq!(a.fence, 1);
    assert!(lease_file.exists());
    assert_eq!(store.acquire("b#2", TTL).expect("io"), None, "held by a");
    let renewed = store.renew(&a, TTL).expect("io").expect("renewed");
    assert_eq!(renewed.fence, 1);
    assert_eq!(store.read(), Some(renewed.clone()));
    store.release(&renewed).expect("release");
    assert_eq!(store.read(), None, "released reads as nobody");
    let on_disk = LeaseRecord::decode(&std::fs::read(&lease_file).expect("read")).expect("ok");
    assert_eq!((on_disk.expires_at, on_disk.fence), (0.0, 1));
    assert_eq!(
        store.renew(&renewed, TTL).expect("io"),
        None,
        "no resurrection"
    );
    let b = store.acquire("b#2", TTL).expect("io").expect("granted");
    assert_eq!(b.fence, 2, "a takeover bumps the fence");
    std::fs::write(&lease_file, b"{not json").expect("corrupt");
    assert_eq!(
        store.acquire("c#3", TTL).expect("io"),
        None,
        "corrupt denies"
    );
    let leftovers = std::fs::read_dir(dir.path().join("default/tmp"))
        .expect("tmp")
        .count();
    assert_eq!(leftovers, 0, "no temp files left behind");
    use std::os::unix::fs::PermissionsExt;
    for private in [
        "default",
        "default/leases",
        "default/tmp",
        "default/leases/cluster%2Fleader.lock",
        "default/leases/cluster%2Fleader.lease",
    ] {
        let mode = std::fs::metadata(dir.path().join(private))
            .map(|m| m.permissions().mode())
            .expect("stat");
        assert_eq!(mode & 0o077, 0, "{private} is private: {mode:o}");
    }
}

#[tokio::test]
async fn two_backends_on_one_directory_elect_one_and_hand_over_on_release() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A long TTL: with 3 s each operation had 0.5 s and a lease 2 s of
    // leadership, which a loaded CI machine outran (it failed there);
    // this test is about who wins and the hand-over, not expiry.
    let s = FilesystemSettings {
        ttl: 60.0,
        ..settings(dir.path())
    };
    let timeout = Duration::from_secs(5);
    let mut a = FilesystemLease::open(&s, "a", timeout)
        .await
        .expect("a opens");
    let mut b = FilesystemLease::open(&s, "b", timeout)
        .await
        .expect("b opens");
    let ra = a.round().await;
    let rb = b.round().await;
    let now = Instant::now();
    assert!(ra.leading_until.is_some_and(|t| t > now), "{ra:?}");
    assert_eq!(rb.leading_until, None);
    assert!(rb.answered);
    assert_eq!(rb.holder.as_deref(), Some("a"));
    assert_eq!(b.lease_view()["fence"], json!(1));
    assert!(
        b.lease_view()["expiry"].is_string(),
        "followers see the expiry"
    );
    a.release().await.expect("released");
    let rb = b.round().await;
    assert!(
        rb.leading_until.is_some(),
        "released means free at once: {rb:?}"
    );
    assert_eq!(b.lease_view()["fence"], json!(2));
    let ra = a.round().await;
    assert_eq!(ra.leading_until, None);
    assert_eq!(ra.holder.as_deref(), Some("b"));
}
