use super::*;
use serde_json::json;

fn open(dir: &std::path::Path) -> Store {
    Store::open_for_tests(dir)
}

#[test]
fn open_makes_the_layout_and_stamps_the_version_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for sub in SUBDIRS {
        assert!(dir.path().join("default").join(sub).is_dir(), "{sub}");
    }
    let meta = store.read("meta").unwrap();
    assert_eq!(meta.len(), 1);
    assert_eq!(meta[0].1.get("storeVersion"), Some(&json!("v1")));
    drop(store);
    let again = open(dir.path());
    assert_eq!(again.read("meta").unwrap().len(), 1, "stamped once");
    assert_eq!(again.topology(), Topology::SingleNode);
}

#[test]
fn appends_read_back_in_write_order_with_the_original_wrapper() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let first = store.append("runs/backup", &json!({"n": 1})).unwrap();
    let second = store
        .append("runs/backup", &json!({"n": 2, "é": "x"}))
        .unwrap();
    assert!(second > first);
    let path = dir
        .path()
        .join("default/records/runs%2Fbackup")
        .join(&first);
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        r#"{"data":{"n":1},"schemaVersion":"v1"}"#
    );
    let read = store.read("runs/backup").unwrap();
    assert_eq!(
        read.iter().map(|r| r.1["n"].clone()).collect::<Vec<_>>(),
        [json!(1), json!(2)]
    );
    assert_eq!(store.read_newest("runs/backup", 1).unwrap()[0].0, second);
    assert!(store.read("runs/none").unwrap().is_empty());
}

#[test]
fn names_keep_growing_past_a_stream_written_in_the_future() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let stream = store.stream_dir("runs/a");
    std::fs::create_dir_all(&stream).unwrap();
    let future = format!("{}.json", record_stem(9_999_999_999.0, "peer", 1));
    std::fs::write(stream.join(&future), br#"{"data":{},"schemaVersion":"v1"}"#).unwrap();
    let name = store.append("runs/a", &json!({})).unwrap();
    assert!(name > future, "{name} sorts after {future}");
}

#[test]
fn corrupt_records_are_quarantined_and_newer_schemes_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.append("runs/a", &json!({"ok": true})).unwrap();
    let stream = store.stream_dir("runs/a");
    std::fs::write(
        stream.join("0000000001.000000-x-000000000001.json"),
        b"{\"data\":",
    )
    .unwrap();
    std::fs::write(stream.join("0000000001.000000-x-000000000002.json"), b"[1]").unwrap();
    let newer = "0000000001.000000-x-000000000003.json";
    std::fs::write(stream.join(newer), br#"{"data":{},"schemaVersion":"v9"}"#).unwrap();
    let read = store.read("runs/a").unwrap();
    assert_eq!(read.len(), 1);
    let quarantined: Vec<_> = std::fs::read_dir(dir.path().join("default/quarantine"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(quarantined.len(), 2, "{quarantined:?}");
    assert!(quarantined.iter().all(|n| n.ends_with(".bad")));
    assert!(stream.join(newer).exists(), "a newer scheme's record stays");
    assert_eq!(store.stats().quarantined_total(), 2);
}

#[test]
fn prune_keeps_the_newest_by_write_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for n in 0..5 {
        store.append("runs/a", &json!({"n": n})).unwrap();
    }
    assert_eq!(store.prune("runs/a", 2).unwrap(), 3);
    let left: Vec<_> = store
        .read("runs/a")
        .unwrap()
        .into_iter()
        .map(|r| r.1["n"].clone())
        .collect();
    assert_eq!(left, [json!(3), json!(4)]);
    assert_eq!(store.prune("runs/a", 0).unwrap(), 2);
}

#[test]
fn stream_names_decode_tokens_and_long_names_use_the_sidecar() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let long = format!("runs/{}", "x".repeat(200));
    for stream in ["runs/Backup.Daily", "runs/con", "logs/a", long.as_str()] {
        store.append(stream, &json!({})).unwrap();
    }
    assert_eq!(
        store.stream_names("runs/").unwrap(),
        vec![
            "runs/Backup.Daily".to_owned(),
            "runs/con".to_owned(),
            long.clone()
        ]
    );
    store.delete_stream("runs/con").unwrap();
    assert_eq!(store.stream_names("runs/").unwrap().len(), 2);
}

#[test]
fn tokens_decode_only_when_they_reencode_exactly() {
    assert_eq!(decode_token("runs%2Fa"), Some("runs/a".into()));
    assert_eq!(decode_token("%63on"), Some("con".into()));
    assert_eq!(
        decode_token("con"),
        None,
        "the encoder never writes a bare device name"
    );
    assert_eq!(decode_token("%61"), None, "'a' is written plain");
    assert_eq!(decode_token("%2"), None);
    assert_eq!(decode_token(""), None);
}

#[test]
fn the_topology_probe_treats_network_file_systems_as_shared() {
    for fs in ["nfs", "nfs4", "cifs", "efs", "cephfs", "fuse.sshfs"] {
        assert_eq!(topology_of_fstype(Some(fs)), Topology::Shared, "{fs}");
    }
    for fs in ["ext4", "xfs", "tmpfs", "overlay", "btrfs"] {
        assert_eq!(topology_of_fstype(Some(fs)), Topology::SingleNode, "{fs}");
    }
    assert_eq!(topology_of_fstype(None), Topology::SingleNode);
}

#[test]
fn the_bucket_paces_past_its_burst() {
    let start = Instant::now();
    let mut bucket = Bucket {
        rate: 10.0,
        tokens: 10.0,
        at: start,
    };
    for _ in 0..10 {
        assert_eq!(bucket.take(start), Duration::ZERO);
    }
    let wait = bucket.take(start);
    assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
    assert_eq!(bucket.take(start + Duration::from_secs(1)), Duration::ZERO);
}

#[test]
fn an_unwritable_root_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let err = Store::open(&StoreSettings {
        root: file.clone(),
        deployment_id: "default".into(),
        topology: None,
        max_ops_per_second: 0.0,
    })
    .unwrap_err();
    assert!(
        err.to_string().contains(&file.display().to_string()),
        "{err}"
    );
}
