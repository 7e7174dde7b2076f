//! The job-facing operations over a real (temporary) store: the files
//! they write are the original's, byte for byte; changes under the
//! document lock do not lose updates; the texts and statuses are the
//! original's (the cursor scenarios were recorded from its
//! `jobstate.cursor_advance`).

use super::artifacts::{blob_get, blob_path, blob_put, sha256_hex};
use super::docs::{decode_document, encode_document, mutate_document, read_document, DocChange};
use super::*;
use crate::pyjson::{loads, Dumps, PyDict, PyJson};
use crate::state::store::{Store, StoreSettings};
use std::path::Path;
use std::sync::Arc;

fn open(dir: &Path) -> Store {
    open_paced(dir, 0.0)
}

fn open_paced(dir: &Path, rate: f64) -> Store {
    Store::open(&StoreSettings {
        root: dir.to_path_buf(),
        deployment_id: "default".to_owned(),
        topology: None,
        max_ops_per_second: rate,
    })
    .expect("open")
}

fn v(text: &str) -> PyJson {
    loads(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn ops(store: &Store) -> Vec<(&'static str, u64, u64)> {
    store
        .stats()
        .op_totals()
        .into_iter()
        .filter(|t| t.ops > 0)
        .map(|t| (t.op.label(), t.ops, t.errors))
        .collect()
}

#[test]
fn a_kv_document_is_the_originals_file_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let value = v(r#"{"z": 1, "a": [1.5, "é😀", null, true], "m": 1e16}"#);
    let at = kv_set(&store, "backup", "k", &value, 0).expect("set");
    let doc = dir.path().join("default/docs/kv%2Fbackup/k.doc");
    let lock = dir.path().join("default/docs/kv%2Fbackup/k.lock");
    let bytes = std::fs::read(&doc).expect("doc");
    // What the original wrote for the same call (its probe, only the
    // clock differs).
    let want = format!(
        "{{\"data\":{{\"key\":\"k\",\"updatedAt\":{},\"value\":{{\"a\":[1.5,\"\\u00e9\\ud83d\\ude00\",null,true],\"m\":1e+16,\"z\":1}}}},\"schemaVersion\":\"v1\"}}",
        crate::pyfmt::py_float(at)
    );
    assert_eq!(String::from_utf8(bytes).expect("ascii"), want);
    assert_eq!(std::fs::read(&lock).expect("lock"), b"\0");
    let got = kv_get(&store, "backup", "k").expect("get");
    assert_eq!(got.updated_at, PyJson::Float(at));
    // Keys come back sorted, as the file holds them.
    assert_eq!(
        got.value.dumps(Dumps::COMPACT),
        r#"{"a":[1.5,"\u00e9\ud83d\ude00",null,true],"m":1e+16,"z":1}"#
    );
}

#[test]
fn documents_in_raw_utf8_or_escaped_read_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let ns = dir.path().join("default/docs/kv%2Fs");
    std::fs::create_dir_all(&ns).expect("mkdir");
    // An orjson node writes raw UTF-8; the default install escapes.
    std::fs::write(
        ns.join("raw.doc"),
        "{\"data\":{\"key\":\"raw\",\"updatedAt\":1.5,\"value\":\"é😀\"},\"schemaVersion\":\"v1\"}",
    )
    .expect("write");
    std::fs::write(
        ns.join("esc.doc"),
        r#"{"data":{"key":"esc","updatedAt":1.5,"value":"\u00e9\ud83d\ude00"},"schemaVersion":"v1"}"#,
    )
    .expect("write");
    let raw = kv_get(&store, "s", "raw").expect("raw");
    let esc = kv_get(&store, "s", "esc").expect("esc");
    assert_eq!(raw.value, esc.value);
    assert_eq!(raw.value, PyJson::from("é😀"));
}

#[test]
fn kv_round_trip_list_and_delete() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let e = kv_get(&store, "backup", "x").expect_err("absent");
    assert_eq!(
        (e.status(), e.message()),
        (404, "key 'x' is not set in scope 'backup'".to_owned())
    );
    kv_set(&store, "backup", "b", &v("2"), 0).expect("set");
    kv_set(&store, "backup", "a", &v("null"), 0).expect("set");
    kv_set(&store, "backup", "B", &v(r#""three""#), 0).expect("set");
    kv_set(&store, "other", "a", &v("9"), 0).expect("set");
    // A stored null is a present key.
    assert_eq!(
        kv_get(&store, "backup", "a").expect("a").value,
        PyJson::Null
    );
    let listed = kv_list(&store, "backup").expect("list");
    let keys: Vec<String> = listed.iter().map(|e| e.key.repr()).collect();
    assert_eq!(keys, ["'B'", "'a'", "'b'"]);
    assert_eq!(listed[2].value, PyJson::Int(2));
    assert!(kv_list(&store, "nobody").expect("empty").is_empty());
    // Last write wins.
    kv_set(&store, "backup", "b", &v("[3]"), 0).expect("set");
    assert_eq!(kv_get(&store, "backup", "b").expect("b").value, v("[3]"));
    assert!(kv_delete(&store, "backup", "b").expect("delete"));
    assert!(!kv_delete(&store, "backup", "b").expect("delete again"));
    assert!(kv_get(&store, "backup", "b").is_err());
    // The lock side file stays (the collector reclaims idle orphans).
    assert!(dir.path().join("default/docs/kv%2Fbackup/b.lock").exists());
    assert_eq!(
        kv_get(&store, "other", "a").expect("other").value,
        PyJson::Int(9)
    );
}

#[test]
fn kv_checks_value_then_scope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let e = kv_set(&store, " pad", "k", &v("NaN"), 0).expect_err("nan");
    assert_eq!(e.status(), 400);
    assert!(e
        .message()
        .starts_with("value is not portable across the fleet: non-finite"));
    let e = kv_set(&store, " pad", "k", &v(r#""12345""#), 3).expect_err("big");
    assert_eq!(
        (e.status(), e.message()),
        (
            413,
            "value of 7 bytes exceeds the configured limit of 3 bytes".to_owned()
        )
    );
    let e = kv_set(&store, " pad", "k", &v("1"), 3).expect_err("scope");
    assert_eq!(e.status(), 400);
    assert!(e.message().starts_with("scope ' pad' carries leading"));
    let e = kv_set(&store, "", "k", &v("1"), 3).expect_err("scope");
    assert_eq!(e.message(), "a non-empty scope is required");
    for scope in ["", "  "] {
        assert_eq!(kv_get(&store, scope, "k").expect_err("get").status(), 400);
        assert_eq!(kv_list(&store, scope).expect_err("list").status(), 400);
        assert_eq!(
            kv_delete(&store, scope, "k").expect_err("del").status(),
            400
        );
        assert_eq!(
            cursor_get(&store, scope, "k").expect_err("cur").status(),
            400
        );
        assert_eq!(
            idempotency_claim(&store, scope, "k", 0.0)
                .expect_err("claim")
                .status(),
            400
        );
        assert_eq!(
            artifact_list(&store, scope).expect_err("arts").status(),
            400
        );
    }
}

#[test]
fn a_key_with_a_lone_surrogate_names_its_file_as_python_but_cannot_be_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let PyJson::Str(key) = v(r#""\ud800""#) else {
        panic!("string");
    };
    let e = kv_set(&store, "s", &key, &v("1"), 0).expect_err("unportable");
    assert_eq!(
        (e.status(), e.message()),
        (
            400,
            "string containing lone surrogate '\\ud800' is not portable across the fleet (the \
             stdlib writes an escape orjson can neither emit nor parse)"
                .to_owned()
        )
    );
    // The original takes the lock before it finds out: the same file.
    assert!(dir
        .path()
        .join("default/docs/kv%2Fs/%ED%A0%80.lock")
        .exists());
    assert!(!dir
        .path()
        .join("default/docs/kv%2Fs/%ED%A0%80.doc")
        .exists());
    assert!(!kv_delete(&store, "s", &key).expect("delete works"));
}

#[test]
fn an_unreadable_document_fails_changes_and_reads_as_absent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    kv_set(&store, "s", "good", &v("1"), 0).expect("set");
    let ns = dir.path().join("default/docs/kv%2Fs");
    let corrupt = [
        &b"{not json"[..],
        b"[1]",
        br#"{"data":{"key":"bad"},"schemaVersion":"v2"}"#,
        br#"{"data":[1],"schemaVersion":"v1"}"#,
        br#"{"data":{"value":18446744073709551616},"schemaVersion":"v1"}"#,
        b"\xff\xfe",
        b"\xef\xbb\xbf{\"data\":{},\"schemaVersion\":\"v1\"}",
    ];
    for bytes in corrupt {
        std::fs::write(ns.join("bad.doc"), bytes).expect("write");
        assert!(decode_document(bytes).is_err(), "{bytes:?}");
        assert_eq!(
            kv_get(&store, "s", "bad").expect_err("absent").status(),
            404
        );
        let e = kv_set(&store, "s", "bad", &v("2"), 0).expect_err("strict");
        assert_eq!(e.status(), 503);
        assert_eq!(
            e.message(),
            "state backend unavailable; the reason is in the cronstable log"
        );
        assert!(e.log_detail().is_some_and(|d| d.contains("bad.doc")));
        assert_eq!(
            kv_delete(&store, "s", "bad").expect_err("strict").status(),
            503
        );
        assert_eq!(std::fs::read(ns.join("bad.doc")).expect("kept"), bytes);
        // The listing skips it.
        let listed = kv_list(&store, "s").expect("list");
        assert_eq!(listed.len(), 1);
    }
}

#[test]
fn concurrent_changes_under_the_lock_all_land() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(open(dir.path()));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for _ in 0..25 {
                    mutate_document(&store, "kv/s", "counter", |current| {
                        let n = current
                            .and_then(|b| b.get("value"))
                            .and_then(|v| v.to_py_int().ok())
                            .unwrap_or(0);
                        let body = PyDict::from_iter([
                            ("key", PyJson::from("counter")),
                            ("value", PyJson::Int(n + 1)),
                            ("updatedAt", PyJson::Float(0.0)),
                        ]);
                        Ok((DocChange::Put(body), ()))
                    })
                    .expect("mutate");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    assert_eq!(
        kv_get(&store, "s", "counter").expect("get").value,
        PyJson::Int(100)
    );
}

#[test]
fn cursor_scenarios_recorded_from_the_original() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let table = include_str!("testdata/cursor_scenarios.jsonl");
    for line in table.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("row");
        let name = row[0].as_str().expect("name");
        let given = v(row[1].as_str().expect("value"));
        let force = row[2].as_bool().expect("force");
        let want = &row[3];
        let got = cursor_advance(&store, "s", name, &given, force, 0);
        match (want[0].as_str(), got) {
            (Some("ok"), Ok((value, moved))) => {
                assert_eq!(
                    (value.dumps(Dumps::COMPACT), moved),
                    (
                        want[1].as_str().expect("value").to_owned(),
                        want[2].as_bool().expect("advanced")
                    ),
                    "{line}"
                );
            }
            (Some("err"), Err(e)) => {
                assert_eq!(
                    (u64::from(e.status()), e.message()),
                    (
                        want[1].as_u64().expect("status"),
                        want[2].as_str().expect("text").to_owned()
                    ),
                    "{line}"
                );
            }
            (_, got) => panic!("{line}: got {got:?}"),
        }
    }
}

#[test]
fn a_cursor_that_does_not_move_is_not_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let e = cursor_get(&store, "s", "c").expect_err("absent");
    assert_eq!(
        (e.status(), e.message()),
        (404, "cursor 'c' is not set in scope 's'".to_owned())
    );
    cursor_advance(&store, "s", "c", &v("5"), false, 0).expect("advance");
    let doc = dir.path().join("default/docs/cursor%2Fs/c.doc");
    let before = std::fs::read(&doc).expect("doc");
    let at = cursor_get(&store, "s", "c").expect("get").updated_at;
    let (value, moved) = cursor_advance(&store, "s", "c", &v("4"), false, 0).expect("advance");
    assert_eq!((value, moved), (PyJson::Int(5), false));
    assert_eq!(std::fs::read(&doc).expect("doc"), before);
    assert_eq!(cursor_get(&store, "s", "c").expect("get").updated_at, at);
    let body = decode_document(&before).expect("decode");
    assert_eq!(body.get("name"), Some(&PyJson::from("c")));
    let e = cursor_advance(&store, "s", "c", &v(r#""12""#), false, 3).expect_err("size");
    assert_eq!(
        e.message(),
        "cursor value of 4 bytes exceeds the configured limit of 3 bytes"
    );
}

#[test]
fn idempotency_claims_once_until_expiry_or_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let first = idempotency_claim(&store, "s", "k", 0.0).expect("claim");
    assert!(first.fresh);
    let second = idempotency_claim(&store, "s", "k", 0.0).expect("claim");
    assert_eq!(
        second,
        Claim {
            fresh: false,
            claimed_at: first.claimed_at.clone()
        }
    );
    let doc = dir.path().join("default/docs/idem%2Fs/k.doc");
    let body = decode_document(&std::fs::read(&doc).expect("doc")).expect("decode");
    assert_eq!(body.get("expiresAt"), None, "a permanent claim");
    assert!(idempotency_release(&store, "s", "k").expect("release"));
    assert!(!idempotency_release(&store, "s", "k").expect("release"));
    assert!(
        idempotency_claim(&store, "s", "k", 0.0)
            .expect("claim")
            .fresh
    );
    // A TTL claim: held until its expiry, then re-won.
    let ttl = idempotency_claim(&store, "s", "t", 60.0).expect("claim");
    assert!(ttl.fresh);
    let body = decode_document(
        &std::fs::read(dir.path().join("default/docs/idem%2Fs/t.doc")).expect("doc"),
    )
    .expect("decode");
    let (Some(PyJson::Float(claimed)), Some(PyJson::Float(expires))) =
        (body.get("claimedAt"), body.get("expiresAt"))
    else {
        panic!("{body:?}");
    };
    assert!((expires - claimed - 60.0).abs() < 1e-6);
    assert!(
        !idempotency_claim(&store, "s", "t", 60.0)
            .expect("claim")
            .fresh
    );
    // An expiry in the past (written by hand): re-won.
    std::fs::write(
        dir.path().join("default/docs/idem%2Fs/old.doc"),
        r#"{"data":{"claimedAt":1.0,"expiresAt":2.0,"key":"old"},"schemaVersion":"v1"}"#,
    )
    .expect("write");
    assert!(
        idempotency_claim(&store, "s", "old", -5.0)
            .expect("claim")
            .fresh
    );
    let body = decode_document(
        &std::fs::read(dir.path().join("default/docs/idem%2Fs/old.doc")).expect("doc"),
    )
    .expect("decode");
    assert_eq!(body.get("expiresAt"), None, "ttl <= 0: permanent");
    // An expiry Python cannot compare: the original's 500.
    std::fs::write(
        dir.path().join("default/docs/idem%2Fs/odd.doc"),
        r#"{"data":{"claimedAt":1.0,"expiresAt":"soon","key":"odd"},"schemaVersion":"v1"}"#,
    )
    .expect("write");
    assert_eq!(
        idempotency_claim(&store, "s", "odd", 0.0)
            .expect_err("odd")
            .status(),
        500
    );
}

#[test]
fn artifacts_dedupe_keep_the_newest_and_say_when_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let e = artifact_get(&store, "s", "report").expect_err("absent");
    assert_eq!(
        (e.status(), e.message()),
        (404, "artifact 'report' not found in scope 's'".to_owned())
    );
    let one = artifact_put(&store, "s", "report", b"hello", 0).expect("put");
    assert_eq!(
        one,
        Published {
            sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824".to_owned(),
            size: 5
        }
    );
    let blob = dir.path().join(
        "default/blobs/2c/2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824.blob",
    );
    assert_eq!(std::fs::read(&blob).expect("blob"), b"hello");
    // Same payload under another name: one blob.
    artifact_put(&store, "s", "copy", b"hello", 0).expect("put");
    artifact_put(&store, "s", "report", b"second", 0).expect("put");
    artifact_put(&store, "s", "empty", b"", 0).expect("empty is fine");
    let blobs: usize = std::fs::read_dir(dir.path().join("default/blobs"))
        .expect("blobs")
        .flatten()
        .map(|shard| std::fs::read_dir(shard.path()).map_or(0, |f| f.count()))
        .sum();
    assert_eq!(blobs, 3);
    let got = artifact_get(&store, "s", "report").expect("get");
    assert_eq!(got.data, b"second");
    assert_eq!(got.sha256, sha256_hex(b"second"));
    assert_eq!(got.size, "6");
    let listed = artifact_list(&store, "s").expect("list");
    let names: Vec<&str> = listed.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["copy", "empty", "report"]);
    assert_eq!(listed[2].size, PyJson::Int(6));
    assert!(matches!(listed[2].at, PyJson::Float(_)));
    // The record is the original's format.
    let stream = dir.path().join("default/records/artifacts%2Fs");
    let mut files: Vec<_> = std::fs::read_dir(&stream)
        .expect("stream")
        .flatten()
        .map(|f| f.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let newest =
        std::fs::read_to_string(stream.join(files.last().expect("records"))).expect("read");
    assert!(
        newest.starts_with(r#"{"data":{"at":"#)
            && newest.ends_with(&format!(
                r#","name":"empty","sha256":"{}","size":0}},"schemaVersion":"v1"}}"#,
                sha256_hex(b"")
            )),
        "{newest}"
    );
    // The blob collected: 410.
    std::fs::remove_file(blob_path(&store, &sha256_hex(b"second")).expect("path")).expect("rm");
    let e = artifact_get(&store, "s", "report").expect_err("gone");
    assert_eq!(
        (e.status(), e.message()),
        (
            410,
            "artifact 'report' record survives but its payload blob is gone (garbage collected)"
                .to_owned()
        )
    );
}

#[test]
fn artifact_size_is_checked_before_the_scope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let e = artifact_put(&store, " s", "a", b"12345", 4).expect_err("size");
    assert_eq!(
        (e.status(), e.message()),
        (
            413,
            "artifact of 5 bytes exceeds the configured limit of 4 bytes".to_owned()
        )
    );
    assert_eq!(
        artifact_put(&store, " s", "a", b"1234", 4)
            .expect_err("scope")
            .status(),
        400
    );
    assert!(artifact_put(&store, "s", "a", b"1234", 4).is_ok());
    assert!(artifact_put(&store, "s", "a", &[0; 100], 0).is_ok());
}

#[test]
fn blobs_are_refreshed_not_rewritten_and_digests_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let digest = blob_put(&store, b"payload").expect("put");
    let path = blob_path(&store, &digest).expect("path");
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    std::fs::File::open(&path)
        .and_then(|f| f.set_modified(old))
        .expect("age it");
    assert_eq!(blob_put(&store, b"payload").expect("again"), digest);
    let modified = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    assert!(modified > old, "the put refreshed the blob's age");
    assert_eq!(
        blob_get(&store, &digest).expect("get").as_deref(),
        Some(&b"payload"[..])
    );
    assert_eq!(
        blob_get(&store, &sha256_hex(b"other")).expect("absent"),
        None
    );
    for bad in [
        "../etc/passwd",
        "ABCD",
        &"A".repeat(64),
        &"g".repeat(64),
        "",
    ] {
        assert_eq!(blob_get(&store, bad).expect_err(bad).status(), 500);
    }
}

#[test]
fn operations_are_counted_under_the_originals_labels_and_paced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let base = ops(&store);
    kv_set(&store, "s", "k", &v("1"), 0).expect("set");
    let _ = kv_get(&store, "s", "k");
    kv_list(&store, "s").expect("list");
    artifact_put(&store, "s", "a", b"x", 0).expect("put");
    artifact_get(&store, "s", "a").expect("get");
    let mut after = ops(&store);
    after.retain(|op| !base.contains(op));
    let labels: Vec<&str> = after.iter().map(|(l, _, _)| *l).collect();
    for label in [
        "append",
        "list",
        "doc-read",
        "doc-mutate",
        "doc-list",
        "blob-put",
        "blob-get",
    ] {
        assert!(labels.contains(&label), "{label} in {labels:?}");
    }
    // A failed change counts as an error of its operation.
    std::fs::write(dir.path().join("default/docs/kv%2Fs/k.doc"), b"{").expect("corrupt");
    let _ = kv_set(&store, "s", "k", &v("1"), 0);
    let mutate = ops(&store)
        .into_iter()
        .find(|(l, _, _)| *l == "doc-mutate")
        .expect("counted");
    assert_eq!((mutate.1, mutate.2), (2, 1));
    // maxOpsPerSecond paces document operations.
    let dir = tempfile::tempdir().expect("tempdir");
    let paced = open_paced(dir.path(), 20.0);
    let began = std::time::Instant::now();
    for _ in 0..30 {
        let _ = read_document(&paced, "kv/s", "k");
    }
    assert!(began.elapsed() >= std::time::Duration::from_millis(300));
    assert!(paced.stats().throttle_totals().0 > 0);
}

#[test]
fn documents_encode_sorted_and_refuse_unportable_bodies() {
    let body = v(r#"{"b": {"y": 1, "x": [2, {"d": 0, "c": 1}]}, "a": "é"}"#)
        .as_dict()
        .cloned()
        .expect("dict");
    let bytes = encode_document(&body).expect("encode");
    assert_eq!(
        String::from_utf8(bytes.clone()).expect("ascii"),
        r#"{"data":{"a":"\u00e9","b":{"x":[2,{"c":1,"d":0}],"y":1}},"schemaVersion":"v1"}"#
    );
    assert_eq!(decode_document(&bytes).expect("decode").len(), 2);
    let bad = v(r#"{"v": Infinity}"#).as_dict().cloned().expect("dict");
    assert_eq!(
        encode_document(&bad).expect_err("unportable"),
        "non-finite float inf is not portable across the fleet (NaN/Infinity serializes \
         differently with and without orjson)"
    );
}

#[test]
fn lock_lease_names_are_the_servers_slots() {
    assert_eq!(
        lock_lease_name("global", "db-maintenance", 0),
        "lock/global/db-maintenance#0"
    );
    assert_eq!(
        crate::state::format::fs_safe(&lock_lease_name("global", "db-maintenance", 0)),
        "lock%2Fglobal%2Fdb-maintenance%230"
    );
}
