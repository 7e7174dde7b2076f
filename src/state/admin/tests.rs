use super::archive::{lease_fence, lease_may_replace, member_path};
use super::inspect::{classify_record, inventory, SchemaCounts};
use super::*;

#[test]
fn member_paths_stay_strictly_inside() {
    let ok = |s: &str| member_path(Path::new(s)).map(|p| p.to_string_lossy().into_owned());
    assert_eq!(
        ok("records/runs%2Fa/x.json").as_deref(),
        Some("records/runs%2Fa/x.json")
    );
    assert_eq!(ok("./records/x.json").as_deref(), Some("records/x.json"));
    assert_eq!(ok("../evil"), None);
    assert_eq!(ok("records/../../evil"), None);
    assert_eq!(ok("records/../x"), None);
    assert_eq!(ok("/etc/passwd"), None);
    assert_eq!(ok("."), None);
    assert_eq!(ok(""), None);
}

#[test]
fn lease_fences_merge_only_forward() {
    assert_eq!(lease_fence(br#"{"fence":7,"holder":"h"}"#), Some(7));
    assert_eq!(lease_fence(br#"{"fence":"12"}"#), Some(12));
    assert_eq!(lease_fence(br#"{"fence":3.9}"#), Some(3));
    assert_eq!(lease_fence(br#"{"fence":null}"#), None);
    assert_eq!(lease_fence(br#"{"holder":"h"}"#), None);
    assert_eq!(lease_fence(b"not json"), None);
    let lease = |f: i64| format!(r#"{{"expiresAt":0.0,"fence":{f},"holder":"h","name":"n"}}"#);
    // No current file: always restored.
    assert!(lease_may_replace(None, lease(1).as_bytes()));
    assert!(lease_may_replace(None, b"garbage"));
    // Newer or equal archived fence replaces; older keeps the current.
    assert!(lease_may_replace(
        Some(lease(5).as_bytes()),
        lease(9).as_bytes()
    ));
    assert!(lease_may_replace(
        Some(lease(5).as_bytes()),
        lease(5).as_bytes()
    ));
    assert!(!lease_may_replace(
        Some(lease(9).as_bytes()),
        lease(5).as_bytes()
    ));
    // Either side unprovable: keep the current.
    assert!(!lease_may_replace(Some(b"garbage"), lease(9).as_bytes()));
    assert!(!lease_may_replace(Some(lease(1).as_bytes()), b"garbage"));
}

#[test]
fn inventory_counts_records_per_prefix_and_every_entry() {
    let dir = tempfile::tempdir().expect("tmp");
    let records = dir.path();
    for (token, n) in [("runs%2Fa", 2), ("runs%2Fb", 1), ("meta", 1), ("custom", 0)] {
        let d = records.join(token);
        std::fs::create_dir_all(&d).expect("mkdir");
        for i in 0..n {
            std::fs::write(d.join(format!("{i}.json")), b"{}").expect("write");
        }
        std::fs::write(d.join("stream-name.txt"), b"x").expect("write");
    }
    std::fs::write(records.join("stray"), b"").expect("write");
    let (streams, total, per_prefix) = inventory(records);
    assert_eq!((streams, total), (5, 4));
    let got: Vec<(String, usize)> = per_prefix.into_iter().collect();
    assert_eq!(
        got,
        [("custom".into(), 0), ("meta".into(), 1), ("runs".into(), 3)]
    );
    assert_eq!(inventory(&records.join("missing")).0, 0);
}

#[test]
fn schema_classification_counts_current_unknown_and_unreadable() {
    let mut counts = SchemaCounts::default();
    classify_record(br#"{"data":{},"schemaVersion":"v1"}"#, &mut counts);
    classify_record(br#"{"data":{},"schemaVersion":"v2"}"#, &mut counts);
    classify_record(br#"[1]"#, &mut counts);
    classify_record(b"{torn", &mut counts);
    assert_eq!(
        counts,
        SchemaCounts {
            converted: 0,
            current: 1,
            unknown: 2,
            unreadable: 1,
            failed: 0
        }
    );
}

#[test]
fn settings_and_namespace_follow_the_section() {
    assert_eq!(namespace_of(None), "default");
    assert_eq!(namespace_of(Some("")), "default");
    assert_eq!(namespace_of(Some("My.App")), "My.App");
    assert_eq!(
        base_of(Path::new("/s"), "My.App"),
        PathBuf::from("/s/%4Dy%2E%41pp")
    );
    let state: config::model::sections::StateConfig = serde_json::from_value(
        serde_json::json!({"path": "/var/lib/c/../s", "deploymentId": "x", "topology": "shared"}),
    )
    .expect("a section");
    let settings = settings_of(&state).expect("a path");
    assert_eq!(settings.root, PathBuf::from("/var/lib/s"));
    assert_eq!(settings.deployment_id, "x");
    assert_eq!(settings.topology, Some(Topology::Shared));
    let empty: config::model::sections::StateConfig =
        serde_json::from_value(serde_json::json!({})).expect("a section");
    assert_eq!(settings_of(&empty), None);
}

#[test]
fn walk_carried_lists_carried_files_only_in_order() {
    let dir = tempfile::tempdir().expect("tmp");
    let base = dir.path();
    for file in [
        "records/runs%2Fa/2.json",
        "records/runs%2Fa/1.json",
        "records/meta/1.json",
        "leases/x.lease",
        "leases/x.lock",
        "docs/kv%2Fj/k.doc",
        "blobs/ab/abcd.blob",
        "tmp/w-1.tmp",
        "quarantine/a.json.x.bad",
    ] {
        let path = base.join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, file).expect("write");
    }
    let names: Vec<String> = walk_carried(base).into_iter().map(|(_, a)| a).collect();
    assert_eq!(
        names,
        [
            "records/meta/1.json",
            "records/runs%2Fa/1.json",
            "records/runs%2Fa/2.json",
            "docs/kv%2Fj/k.doc",
            "blobs/ab/abcd.blob",
            "leases/x.lease",
            "leases/x.lock",
        ]
    );
    assert!(populated(base));
    assert!(!populated(&base.join("nothing")));
}

#[test]
fn real_path_resolves_what_exists_and_appends_the_rest() {
    let dir = tempfile::tempdir().expect("tmp");
    let real = dir.path().canonicalize().expect("canonical");
    assert_eq!(real_path(&dir.path().join("a/b")), real.join("a/b"));
    #[cfg(unix)]
    {
        std::fs::create_dir(dir.path().join("target")).expect("mkdir");
        std::os::unix::fs::symlink(dir.path().join("target"), dir.path().join("link"))
            .expect("symlink");
        assert_eq!(real_path(&dir.path().join("link/x")), real.join("target/x"));
    }
}

#[test]
fn the_target_names_every_jobs_allowed_scopes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("c.yaml");
    std::fs::write(
        &config,
        format!(
            "state:\n  path: {}\ndefaults:\n  stateAllowedScopes:\n    - shared\njobs:\n  - name: a\n    \
             command: x\n    schedule: '@daily'\n    stateAllowedScopes:\n      - own\n  - name: b\n    \
             command: x\n    schedule: '@daily'\n",
            dir.path().join("store").display()
        ),
    )
    .expect("write");
    let target = load_target(&config).expect("target");
    assert_eq!(target.jobs, ["a", "b"]);
    assert_eq!(target.scopes, ["own", "shared"]);
}
