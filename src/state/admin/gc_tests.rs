use super::*;
use serde_json::json;

const DAY: f64 = 86_400.0;
const GRACE: f64 = 7.0 * DAY;
/// 2026-07-04T00:00:00Z.
const NOW: f64 = 1_783_123_200.0;

fn iso(epoch: f64) -> String {
    let at = chrono::DateTime::from_timestamp_micros((epoch * 1e6) as i64).expect("in range");
    crate::state::format::py_isoformat(at)
}

fn manifest(host: &str, jobs: &[&str], at: f64) -> Map<String, Value> {
    let Value::Object(m) = json!({
        "jobSetId": "v1:x", "host": host, "jobs": jobs,
        "scopes": ["global"], "dags": [], "at": iso(at),
    }) else {
        unreachable!()
    };
    m
}

fn facts(name: &str, records: usize, newest: f64) -> StreamFacts {
    StreamFacts {
        token: fs_safe(name),
        records,
        newest,
        nameable: true,
    }
}

fn input<'a>(
    streams: &'a [StreamFacts],
    manifests: &'a [Map<String, Value>],
    jobs: &'a [String],
) -> GcInput<'a> {
    GcInput {
        streams,
        manifests,
        config_jobs: jobs,
        config_scopes: &[],
        host: "me",
        now: NOW,
        grace: GRACE,
        dag_runs_present: false,
    }
}

fn removed(plan: &Plan) -> Vec<String> {
    match plan {
        Plan::Collect { remove, .. } => remove.clone(),
        Plan::Deferred => panic!("deferred"),
    }
}

/// A manifest history that spans the grace (an old one) and names `jobs`
/// recently.
fn history(jobs: &[&str]) -> Vec<Map<String, Value>> {
    vec![
        manifest("me", jobs, NOW - 10.0 * DAY),
        manifest("me", jobs, NOW - DAY),
    ]
}

#[test]
fn record_epoch_reads_the_name_head_and_keeps_the_unknown() {
    assert_eq!(
        record_epoch("0001783449600.123456-3fa9c2d17b04-000000000007.json"),
        1_783_449_600.123456
    );
    assert_eq!(record_epoch("junk.json"), f64::INFINITY);
    assert_eq!(record_epoch("nan-x.json"), f64::INFINITY);
    assert_eq!(record_epoch("inf-x.json"), f64::INFINITY);
    assert_eq!(record_epoch(""), f64::INFINITY);
}

#[test]
fn no_manifest_or_a_young_history_defers() {
    assert!(deferred(&[], NOW, GRACE));
    // Only a recent manifest: absence cannot be proven yet.
    assert!(deferred(&[manifest("me", &[], NOW - DAY)], NOW, GRACE));
    // An unparseable `at` counts for nothing.
    let mut bad = manifest("me", &[], NOW - 10.0 * DAY);
    bad.insert("at".into(), json!("yesterday"));
    assert!(deferred(&[bad.clone()], NOW, GRACE));
    bad.insert("at".into(), json!(12));
    assert!(deferred(&[bad], NOW, GRACE));
    // Exactly one grace old: spans it.
    assert!(!deferred(&[manifest("me", &[], NOW - GRACE)], NOW, GRACE));
    assert!(deferred(
        &[manifest("me", &[], NOW - GRACE + 1.0)],
        NOW,
        GRACE
    ));
    // The oldest decides, whatever the order.
    assert!(!deferred(
        &[
            manifest("me", &[], NOW - DAY),
            manifest("b", &[], NOW - 8.0 * DAY)
        ],
        NOW,
        GRACE
    ));
    let streams = [facts("runs/gone", 3, NOW - 30.0 * DAY)];
    let manifests = [manifest("me", &[], NOW - DAY)];
    assert_eq!(plan(&input(&streams, &manifests, &[])), Plan::Deferred);
}

#[test]
fn an_unreferenced_old_job_loses_every_managed_stream() {
    let old = NOW - 30.0 * DAY;
    let streams: Vec<StreamFacts> = JOB_PREFIXES
        .iter()
        .map(|p| facts(&format!("{p}gone"), 2, old))
        .collect();
    let manifests = history(&["kept"]);
    let got = plan(&input(&streams, &manifests, &[]));
    let mut expected: Vec<String> = JOB_PREFIXES
        .iter()
        .map(|p| fs_safe(&format!("{p}gone")))
        .collect();
    expected.sort();
    assert_eq!(
        got,
        Plan::Collect {
            remove: expected,
            records_removed: 2 * JOB_PREFIXES.len(),
            streams_kept: 0,
            artifacts_managed: true,
        }
    );
}

#[test]
fn config_jobs_and_recently_manifested_jobs_are_kept() {
    let old = NOW - 30.0 * DAY;
    let streams = [
        facts("runs/in-config", 1, old),
        facts("runs/in-manifest", 1, old),
        facts("runs/Nightly Report", 1, old),
        facts("logs/in-manifest", 1, old),
        facts("runs/gone", 1, old),
    ];
    let manifests = history(&["in-manifest", "Nightly Report"]);
    let jobs = ["in-config".to_owned()];
    let got = plan(&input(&streams, &manifests, &jobs));
    assert_eq!(removed(&got), vec![fs_safe("runs/gone")]);
    let Plan::Collect { streams_kept, .. } = got else {
        unreachable!()
    };
    assert_eq!(streams_kept, 4);
}

#[test]
fn a_job_only_in_stale_manifests_is_not_kept() {
    let old = NOW - 30.0 * DAY;
    let streams = [facts("runs/old-job", 1, old)];
    let manifests = vec![
        manifest("me", &["old-job"], NOW - 10.0 * DAY),
        manifest("me", &[], NOW - DAY),
    ];
    assert_eq!(
        removed(&plan(&input(&streams, &manifests, &[]))),
        vec![fs_safe("runs/old-job")]
    );
}

#[test]
fn a_fresh_record_keeps_an_unreferenced_stream() {
    let streams = [
        facts("runs/young", 1, NOW - DAY),
        // Younger than the grace by a millisecond: kept; exactly a grace
        // old: collected (the original keeps only `newest > cutoff`).
        facts("runs/edge", 1, NOW - GRACE + 0.001),
        facts("runs/older", 1, NOW - GRACE),
        // Unknown age (an unparseable name, an unlistable directory).
        facts("runs/unknown", 1, f64::INFINITY),
        facts("runs/nan", 1, f64::NAN),
    ];
    let manifests = history(&[]);
    assert_eq!(
        removed(&plan(&input(&streams, &manifests, &[]))),
        vec![fs_safe("runs/older")]
    );
}

#[test]
fn meta_unrecognised_and_unnameable_streams_are_never_touched() {
    let old = NOW - 300.0 * DAY;
    let mut unnameable = facts("runs/x", 1, old);
    unnameable.token = format!(
        "runs%2F{}%.0123456789abcdef0123456789abcdef",
        "a".repeat(89)
    );
    unnameable.nameable = false;
    let streams = [
        facts("meta", 5, old),
        facts("manifests", 1, old),
        facts("catchup-dag/d", 1, old),
        facts("custom/thing", 1, old),
        facts("runsx", 1, old),
        unnameable,
    ];
    let manifests = history(&[]);
    let got = plan(&input(&streams, &manifests, &[]));
    assert_eq!(
        got,
        Plan::Collect {
            remove: vec![],
            records_removed: 0,
            streams_kept: 6,
            artifacts_managed: true,
        }
    );
}

#[test]
fn host_streams_of_quiet_hosts_go_and_this_host_and_recent_hosts_stay() {
    let old = NOW - 30.0 * DAY;
    let streams = [
        facts("counters/me", 1, old),
        facts("counters/peer", 1, old),
        facts("counters/gone", 1, old),
        facts("manifests/gone", 3, old),
        facts("manifests/peer", 3, old),
    ];
    let mut manifests = history(&[]);
    manifests.push(manifest("peer", &[], NOW - 2.0 * DAY));
    // A host that last manifested long ago is not recent.
    manifests.push(manifest("gone", &[], NOW - 20.0 * DAY));
    let got = plan(&input(&streams, &manifests, &[]));
    assert_eq!(
        removed(&got),
        vec![fs_safe("counters/gone"), fs_safe("manifests/gone")]
    );
}

#[test]
fn artifacts_are_managed_only_when_every_recent_manifest_advertises_scopes() {
    let old = NOW - 30.0 * DAY;
    let streams = [
        facts("artifacts/gone", 1, old),
        facts("artifacts/global", 1, old),
        facts("artifacts/shared", 1, old),
        facts("artifacts/job-a", 1, old),
    ];
    let mut manifests = history(&["job-a"]);
    manifests[1].insert("scopes".into(), json!(["global", "shared"]));
    let got = plan(&input(&streams, &manifests, &[]));
    assert_eq!(removed(&got), vec![fs_safe("artifacts/gone")]);

    // A recent manifest without scopes (an older node): unmanaged.
    let mut older_node = manifests.clone();
    older_node.push(manifest("peer", &[], NOW - DAY));
    older_node[2].remove("scopes");
    let got = plan(&input(&streams, &older_node, &[]));
    assert_eq!(
        got,
        Plan::Collect {
            remove: vec![],
            records_removed: 0,
            streams_kept: 4,
            artifacts_managed: false
        }
    );
    // Nor without dags.
    let mut no_dags = manifests.clone();
    no_dags[1].remove("dags");
    assert!(removed(&plan(&input(&streams, &no_dags, &[]))).is_empty());
    // A stale manifest without scopes does not matter.
    let mut stale = manifests.clone();
    stale[0].remove("scopes");
    assert_eq!(
        removed(&plan(&input(&streams, &stale, &[]))),
        vec![fs_safe("artifacts/gone")]
    );
    // Dag-run documents present: their XCom scopes cannot be named here.
    let mut with_dags = input(&streams, &manifests, &[]);
    with_dags.dag_runs_present = true;
    assert!(removed(&plan(&with_dags)).is_empty());
}

#[test]
fn keep_set_folds_recent_manifests_only() {
    let mut recent = manifest("peer", &["a", "b"], NOW - DAY);
    recent.insert("jobs".into(), json!(["a", 7]));
    let stale = manifest("old", &["z"], NOW - 9.0 * DAY);
    let mut hostless = manifest("", &["c"], NOW - DAY);
    hostless.insert("jobs".into(), json!("not a list"));
    let manifests = [recent, stale, hostless];
    let jobs = ["cfg".to_owned()];
    let keep = keep_set(&input(&[], &manifests, &jobs));
    assert_eq!(keep.recent, 2);
    let names: Vec<&str> = keep.prefixes[stream::RUNS]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["7", "a", "cfg"]);
    let hosts: Vec<&str> = keep.prefixes[stream::COUNTERS]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(hosts, ["me", "peer"]);
    let scopes: Vec<&str> = keep.prefixes[ARTIFACTS]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(scopes, ["7", "a", "cfg", "global"]);
    for prefix in JOB_PREFIXES {
        assert_eq!(
            keep.prefixes[prefix],
            keep.prefixes[stream::RUNS],
            "{prefix}"
        );
    }
}

#[test]
fn a_long_job_name_is_kept_through_its_shortened_token() {
    let long = "j".repeat(200);
    let old = NOW - 30.0 * DAY;
    let streams = [facts(&format!("runs/{long}"), 1, old)];
    assert!(streams[0].token.contains("%."));
    let jobs = [long];
    let manifests = history(&[]);
    assert!(removed(&plan(&input(&streams, &manifests, &jobs))).is_empty());
    assert_eq!(removed(&plan(&input(&streams, &manifests, &[]))).len(), 1);
}

#[test]
fn the_report_prints_the_original_lines() {
    let report = GcReport {
        deferred: false,
        dry_run: true,
        removed: vec!["runs%2Fgone".into(), "logs%2Fgone".into()],
        records_removed: 5,
        streams_kept: 3,
        tmp_removed: 1,
        quarantine_removed: 2,
        idem_docs_removed: 6,
        locks_removed: 7,
        blobs_removed: 4,
        blob_sweep_skipped: None,
    };
    assert_eq!(
        report.lines(),
        [
            "state: gc would remove 2 stream(s) (5 record(s)), 1 temp file(s), 2 quarantined \
             record(s); kept 3 stream(s)",
            "state: gc would remove 4 orphaned artifact blob(s)",
            "  - runs%2Fgone",
            "  - logs%2Fgone",
        ]
    );
    let real = GcReport {
        dry_run: false,
        blob_sweep_skipped: Some("why".into()),
        removed: vec![],
        ..report
    };
    assert_eq!(
        real.lines(),
        [
            "state: gc removed 0 stream(s) (5 record(s)), 1 temp file(s), 2 quarantined \
             record(s); kept 3 stream(s)",
            "state: orphan-blob sweep skipped: why",
        ]
    );
    let deferred = GcReport {
        deferred: true,
        ..GcReport::default()
    };
    assert_eq!(
        deferred.lines(),
        [
            "state: gc deferred: the manifest history does not yet span gcGraceSeconds, so the \
          store cannot prove what is orphaned"
        ]
    );
}

fn touch_old(path: &std::path::Path, age: f64) {
    let when = std::time::SystemTime::now() - Duration::from_secs_f64(age);
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(when).expect("set mtime");
}

#[test]
fn sweeps_take_old_regular_files_only() {
    let dir = tempfile::tempdir().expect("tmp");
    let now = crate::state::format::wall_now();
    for (name, age) in [("old.tmp", 2.0 * DAY), ("young.tmp", 10.0)] {
        let path = dir.path().join(name);
        std::fs::write(&path, b"x").expect("write");
        touch_old(&path, age);
    }
    std::fs::create_dir(dir.path().join("subdir")).expect("mkdir");
    assert_eq!(sweep_dir(dir.path(), now - DAY, true), 1);
    assert!(dir.path().join("old.tmp").exists());
    assert_eq!(sweep_dir(dir.path(), now - DAY, false), 1);
    assert!(!dir.path().join("old.tmp").exists());
    assert!(dir.path().join("young.tmp").exists());
    assert!(dir.path().join("subdir").exists());
    assert_eq!(sweep_dir(&dir.path().join("missing"), now, false), 0);
}

#[test]
fn blob_sweep_keeps_referenced_and_young_blobs() {
    let dir = tempfile::tempdir().expect("tmp");
    let records = dir.path().join("records");
    let blobs = dir.path().join("blobs");
    let stream = records.join(fs_safe("artifacts/job"));
    std::fs::create_dir_all(&stream).expect("mkdir");
    let live = "ab".repeat(32);
    let orphan = "cd".repeat(32);
    let young = "ef".repeat(32);
    std::fs::write(
        stream.join("0001783449600.000000-aaaaaaaaaaaa-000000000001.json"),
        crate::state::format::encode_record(&json!({"sha256": live})),
    )
    .expect("write");
    for (digest, age) in [(&live, 30.0 * DAY), (&orphan, 30.0 * DAY), (&young, 1.0)] {
        let shard = blobs.join(&digest[..2]);
        std::fs::create_dir_all(&shard).expect("mkdir");
        let path = shard.join(format!("{digest}.blob"));
        std::fs::write(&path, b"payload").expect("write");
        touch_old(&path, age);
    }
    let now = crate::state::format::wall_now();
    let referenced = referenced_blobs(&records, &BTreeSet::new()).expect("readable");
    assert_eq!(referenced, BTreeSet::from([live.clone()]));
    assert_eq!(sweep_blobs(&blobs, &referenced, now - GRACE, true), 1);
    assert_eq!(sweep_blobs(&blobs, &referenced, now - GRACE, false), 1);
    assert!(!blobs.join("cd").exists(), "the emptied shard goes too");
    assert!(blobs.join("ab").join(format!("{live}.blob")).exists());
    assert!(blobs.join("ef").join(format!("{young}.blob")).exists());

    // A dry run's removed stream no longer references its blobs.
    let token = fs_safe("artifacts/job");
    let without = referenced_blobs(&records, &BTreeSet::from([token.as_str()])).expect("ok");
    assert!(without.is_empty());

    // A record of an unknown scheme stands the sweep down.
    std::fs::write(
        stream.join("0001783449601.000000-aaaaaaaaaaaa-000000000002.json"),
        br#"{"data":{"sha256":"x"},"schemaVersion":"v9"}"#,
    )
    .expect("write");
    let err = referenced_blobs(&records, &BTreeSet::new()).expect_err("unreadable");
    assert!(
        err.starts_with(
            "an artifact record could not be read, so its blob reference cannot be ruled out ("
        ),
        "{err}"
    );

    // So does an artifact stream that cannot be named.
    let unnamed = records.join(format!(
        "artifacts%2F{}%.{}",
        "a".repeat(86),
        "0".repeat(32)
    ));
    std::fs::create_dir_all(unnamed).expect("mkdir");
    assert_eq!(
        referenced_blobs(&records, &BTreeSet::new()).expect_err("unnameable"),
        "an artifact stream exists whose records cannot be enumerated, so its blob references \
         cannot be ruled out"
    );
}

#[test]
fn gather_streams_reads_counts_ages_and_names() {
    let dir = tempfile::tempdir().expect("tmp");
    let records = dir.path();
    let runs = records.join(fs_safe("runs/a"));
    std::fs::create_dir_all(&runs).expect("mkdir");
    std::fs::write(
        runs.join("0001783449600.000000-aaaaaaaaaaaa-000000000001.json"),
        b"{}",
    )
    .expect("write");
    std::fs::write(
        runs.join("0001783449700.500000-aaaaaaaaaaaa-000000000002.json"),
        b"{}",
    )
    .expect("write");
    std::fs::write(runs.join("stray.txt"), b"").expect("write");
    std::fs::create_dir_all(records.join(fs_safe("logs/empty"))).expect("mkdir");
    let long = format!("runs/{}", "q".repeat(200));
    let truncated = records.join(fs_safe(&long));
    std::fs::create_dir_all(&truncated).expect("mkdir");
    std::fs::write(records.join("a-file"), b"").expect("write");
    let mut got = gather_streams(records);
    got.sort_by(|a, b| a.token.cmp(&b.token));
    assert_eq!(got.len(), 3, "{got:?}");
    let by = |name: &str| got.iter().find(|f| f.token == fs_safe(name)).expect(name);
    assert_eq!(by("runs/a").records, 2);
    assert_eq!(by("runs/a").newest, 1_783_449_700.5);
    assert!(by("runs/a").nameable);
    let empty = by("logs/empty");
    assert_eq!(empty.records, 0);
    assert!((empty.newest - crate::state::format::wall_now()).abs() < 60.0);
    assert!(!by(&long).nameable, "no sidecar yet");
    std::fs::write(truncated.join("stream-name.txt"), "runs/other").expect("write");
    let got = gather_streams(records);
    assert!(
        !got.iter()
            .find(|f| f.token == fs_safe(&long))
            .expect("there")
            .nameable,
        "a sidecar that does not encode back to the token names nothing"
    );
    std::fs::write(truncated.join("stream-name.txt"), &long).expect("write");
    let got = gather_streams(records);
    assert!(
        got.iter()
            .find(|f| f.token == fs_safe(&long))
            .expect("there")
            .nameable
    );
}

#[test]
fn config_scopes_keep_their_artifact_streams() {
    let old = NOW - 30.0 * DAY;
    let streams = [
        facts("artifacts/shared", 1, old),
        facts("artifacts/gone", 1, old),
    ];
    let manifests = history(&["job-a"]);
    let scopes = vec!["shared".to_owned()];
    let mut with_scopes = input(&streams, &manifests, &[]);
    with_scopes.config_scopes = &scopes;
    assert_eq!(
        removed(&plan(&with_scopes)),
        vec![fs_safe("artifacts/gone")]
    );
    assert_eq!(
        removed(&plan(&input(&streams, &manifests, &[]))),
        vec![fs_safe("artifacts/gone"), fs_safe("artifacts/shared")]
    );
}

/// A store whose manifest history spans the grace (so a pass is not
/// deferred), with this host's config naming `job`.
fn store_with_history(dir: &std::path::Path) -> Store {
    let store = Store::open_for_tests(dir);
    let now = crate::state::format::wall_now();
    for at in [now - 10.0 * DAY, now - DAY] {
        store
            .append("manifests/me", &Value::Object(manifest("me", &["job"], at)))
            .expect("manifest");
    }
    store
}

#[test]
fn lapsed_claims_and_idle_orphan_locks_go_and_nothing_else_does() {
    use crate::pyjson::loads;
    use crate::state::jobstate;
    let dir = tempfile::tempdir().expect("tmp");
    let store = store_with_history(dir.path());
    let base = store.base().to_path_buf();
    let now = crate::state::format::wall_now();
    let old = 30.0 * DAY;
    // Job-facing state, all of it old.
    jobstate::kv_set(&store, "job", "k", &loads("1").expect("json"), 0).expect("kv");
    jobstate::cursor_advance(&store, "job", "c", &loads("1").expect("json"), false, 0)
        .expect("cursor");
    jobstate::idempotency_claim(&store, "job", "permanent", 0.0).expect("claim");
    jobstate::idempotency_claim(&store, "job", "live", 10.0 * DAY).expect("claim");
    let idem = base.join("docs").join(fs_safe("idem/job"));
    let lapsed = |name: &str, expires: f64| {
        std::fs::write(
            idem.join(format!("{name}.doc")),
            format!(
                r#"{{"data":{{"claimedAt":{},"expiresAt":{expires},"key":"{name}"}},"schemaVersion":"v1"}}"#,
                expires - 1.0
            ),
        )
        .expect("write");
        std::fs::write(idem.join(format!("{name}.lock")), b"\0").expect("lock");
    };
    lapsed("lapsed", now - 20.0 * DAY);
    lapsed("recently-lapsed", now - DAY);
    lapsed("bool", 0.0);
    std::fs::write(
        idem.join("bool.doc"),
        br#"{"data":{"claimedAt":1,"expiresAt":true,"key":"bool"},"schemaVersion":"v1"}"#,
    )
    .expect("write");
    std::fs::write(idem.join("corrupt.doc"), b"{").expect("write");
    // A released job lock lease (never collected) and a bare lease lock.
    let lease = store
        .lease_acquire(&jobstate::lock_lease_name("job", "db", 0), "h#p#t", 30.0)
        .expect("io")
        .expect("free");
    store.lease_release(&lease).expect("release");
    let leases = base.join("leases");
    std::fs::write(leases.join("bare.lock"), b"\0").expect("bare");
    // A deleted key's lock, and a young orphan.
    jobstate::kv_set(&store, "job", "deleted", &loads("1").expect("json"), 0).expect("kv");
    jobstate::kv_delete(&store, "job", "deleted").expect("delete");
    jobstate::kv_set(&store, "job", "young", &loads("1").expect("json"), 0).expect("kv");
    jobstate::kv_delete(&store, "job", "young").expect("delete");
    let kv = base.join("docs").join(fs_safe("kv/job"));
    for dir in [
        &idem,
        &kv,
        &base.join("docs").join(fs_safe("cursor/job")),
        &leases,
    ] {
        for file in entries(dir) {
            if file.file_name() != "young.lock" {
                touch_old(&file.path(), old);
            }
        }
    }
    let grace = Duration::from_secs_f64(GRACE);
    let dry = collect_garbage(&store, &["job".to_owned()], grace, true, "me").expect("dry");
    // Dry, the lapsed claim's document stays, so its lock is no orphan.
    assert_eq!((dry.idem_docs_removed, dry.locks_removed), (1, 2));
    assert!(
        idem.join("lapsed.doc").exists(),
        "a dry run deletes nothing"
    );
    let report = collect_garbage(&store, &["job".to_owned()], grace, false, "me").expect("gc");
    assert!(!report.deferred);
    assert_eq!(report.idem_docs_removed, 1);
    // The lapsed claim's doc; its lock (swept in the same pass), the
    // deleted key's and the bare lease lock.
    assert_eq!(report.locks_removed, 3);
    assert!(!idem.join("lapsed.doc").exists());
    assert!(!idem.join("lapsed.lock").exists());
    assert!(!kv.join("deleted.lock").exists());
    assert!(!leases.join("bare.lock").exists());
    for kept in [
        idem.join("permanent.doc"),
        idem.join("live.doc"),
        idem.join("recently-lapsed.doc"),
        idem.join("bool.doc"),
        idem.join("corrupt.doc"),
        idem.join("permanent.lock"),
        kv.join("k.doc"),
        kv.join("k.lock"),
        kv.join("young.lock"),
        base.join("docs").join(fs_safe("cursor/job")).join("c.doc"),
        leases.join(format!("{}.lease", fs_safe("lock/job/db#0"))),
        leases.join(format!("{}.lock", fs_safe("lock/job/db#0"))),
    ] {
        assert!(kept.exists(), "{} was collected", kept.display());
    }
    assert_eq!(
        jobstate::kv_get(&store, "job", "k").expect("kv").value,
        loads("1").expect("json")
    );
}

#[test]
fn a_claim_held_by_a_peer_is_skipped_this_pass() {
    let dir = tempfile::tempdir().expect("tmp");
    let docs = dir.path().join("docs");
    let idem = docs.join(fs_safe("idem/s"));
    std::fs::create_dir_all(&idem).expect("mkdir");
    std::fs::write(
        idem.join("k.doc"),
        br#"{"data":{"claimedAt":1.0,"expiresAt":2.0,"key":"k"},"schemaVersion":"v1"}"#,
    )
    .expect("write");
    touch_old(&idem.join("k.doc"), 30.0 * DAY);
    let cutoff = crate::state::format::wall_now() - GRACE;
    let lock = idem.join("k.lock");
    let swept = crate::state::lease::with_lock(&lock, || {
        // Another open file description: the try-lock sees it held.
        std::thread::scope(|s| {
            s.spawn(|| sweep_idem_docs(&docs, cutoff, false))
                .join()
                .expect("thread")
        })
    })
    .expect("lock");
    assert_eq!(swept, 0);
    assert!(idem.join("k.doc").exists());
    assert_eq!(sweep_idem_docs(&docs, cutoff, false), 1);
    assert!(!idem.join("k.doc").exists());
}
