//! The job-facing state shared with the original (cronstable 1.2.72 from
//! PyPI, installed by scripts/test.sh; found through CRONSTABLE_ORIGINAL
//! or the cache): what this build's `state::jobstate` writes, the
//! original's `cronstable.jobstate` reads, changes and deletes; what the
//! original writes, this build reads; and the two daemons' document
//! locks exclude each other.

use cronstable::pyjson::{loads, PyDict, PyJson};
use cronstable::state::jobstate;
use cronstable::state::store::{Store, StoreSettings};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The original's interpreter, or None (then the test says why it skips;
/// under CI its absence fails the test).
fn original_python() -> Option<PathBuf> {
    let found = std::env::var_os("CRONSTABLE_ORIGINAL")
        .map(PathBuf::from)
        .and_then(|exe| exe.parent().map(|bin| bin.join("python")))
        .or_else(|| {
            std::env::var_os("HOME").map(|home| {
                PathBuf::from(home).join(".cache/cronstable-tools/original-venv/bin/python")
            })
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the original is missing (scripts/test.sh installs it)"
        );
        eprintln!("skipped: the original is not installed (run scripts/test.sh)");
    }
    found
}

fn open(root: &Path) -> Store {
    Store::open(&StoreSettings {
        root: root.to_path_buf(),
        deployment_id: "default".to_owned(),
        topology: None,
        max_ops_per_second: 0.0,
    })
    .expect("open the store")
}

/// Runs `body` (the statements of an `async def main(b)`, `b` the
/// original's backend on `root`) and returns what it printed.
fn run_original(python: &Path, root: &Path, body: &str) -> String {
    let script = format!(
        "import asyncio, json\n\
         from cronstable.state import FilesystemStateBackend\n\
         from cronstable import jobstate\n\
         async def main(b):\n{}\n\
         async def run():\n    \
             b = FilesystemStateBackend({{'path': {root:?}}}, lambda: 'x')\n    \
             await b.start()\n    \
             await main(b)\n    \
             await b.stop()\n\
         asyncio.run(run())\n",
        body.lines()
            .map(|l| format!("    {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
        root = root.display().to_string()
    );
    let out = Command::new(python)
        .args(["-c", &script])
        .output()
        .expect("run the original");
    assert!(
        out.status.success(),
        "the original failed:\n{}\n{script}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn v(text: &str) -> PyJson {
    loads(text).expect("json")
}

#[test]
fn the_original_reads_and_changes_what_this_build_wrote() {
    let Some(python) = original_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let value =
        v(r#"{"z": 1, "a": [1.5, "é😀", null, true], "m": 1e16, "big": 18446744073709551615}"#);
    let at = jobstate::kv_set(&store, "backup", "last run", &value, 0).expect("kv");
    jobstate::kv_set(&store, "backup", "gone", &v("1"), 0).expect("kv");
    jobstate::cursor_advance(&store, "backup", "wm", &v("[2026, 7]"), false, 0).expect("cursor");
    jobstate::idempotency_claim(&store, "backup", "once", 0.0).expect("claim");
    jobstate::artifact_put(&store, "backup", "report", b"old", 0).expect("put");
    let published =
        jobstate::artifact_put(&store, "backup", "report", b"payload \x00\xff", 0).expect("put");
    let out = run_original(
        &python,
        dir.path(),
        "got = await jobstate.kv_get(b, 'backup', 'last run')\n\
         print(json.dumps(got, sort_keys=True))\n\
         print(json.dumps([k['key'] for k in await jobstate.kv_list(b, 'backup')]))\n\
         print(json.dumps(await jobstate.cursor_advance(b, 'backup', 'wm', [2026, 6])))\n\
         print(json.dumps(await jobstate.cursor_advance(b, 'backup', 'wm', [2026, 8])))\n\
         print(json.dumps(await jobstate.idempotency_claim(b, 'backup', 'once')))\n\
         record, data = await jobstate.artifact_get(b, 'backup', 'report')\n\
         print(json.dumps([record['sha256'], record['size'], data.hex()]))\n\
         print(json.dumps([r['name'] for r in await jobstate.artifact_list(b, 'backup')]))\n\
         print(json.dumps(await jobstate.kv_delete(b, 'backup', 'gone')))",
    );
    let lines: Vec<&str> = out.lines().collect();
    let got: serde_json::Value = serde_json::from_str(lines[0]).expect("kv");
    assert_eq!(got["key"], "last run");
    assert_eq!(got["updatedAt"].as_f64(), Some(at));
    assert_eq!(
        got["value"],
        serde_json::json!({"a": [1.5, "é😀", null, true], "big": 18446744073709551615u64, "m": 1e16, "z": 1})
    );
    assert_eq!(lines[1], r#"["gone", "last run"]"#);
    assert_eq!(lines[2], r#"{"value": [2026, 7], "advanced": false}"#);
    assert_eq!(lines[3], r#"{"value": [2026, 8], "advanced": true}"#);
    assert!(
        lines[4].starts_with(r#"{"fresh": false, "claimedAt": "#),
        "{}",
        lines[4]
    );
    assert_eq!(
        lines[5],
        format!(
            r#"["{}", {}, "7061796c6f61642000ff"]"#,
            published.sha256, published.size
        )
    );
    assert_eq!(lines[6], r#"["report"]"#);
    assert_eq!(lines[7], "true");
    // And what the original changed reads back here.
    assert_eq!(
        jobstate::cursor_get(&store, "backup", "wm")
            .expect("cursor")
            .value,
        v("[2026, 8]")
    );
    assert_eq!(
        jobstate::kv_get(&store, "backup", "gone")
            .expect_err("deleted")
            .status(),
        404
    );
}

#[test]
fn this_build_reads_and_changes_what_the_original_wrote() {
    let Some(python) = original_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run_original(
        &python,
        dir.path(),
        "body = await jobstate.kv_set(b, 'etl', 'k', {'b': [1, 2.5], 'a': 'é😀'})\n\
         print(repr(body['updatedAt']))\n\
         await jobstate.cursor_advance(b, 'etl', 'wm', 41)\n\
         await jobstate.idempotency_claim(b, 'etl', 'ttl', ttl=3600)\n\
         rec = await jobstate.artifact_put(b, 'etl', 'out', b'from python')\n\
         print(rec['sha256'])",
    );
    let lines: Vec<&str> = out.lines().collect();
    let store = open(dir.path());
    let got = jobstate::kv_get(&store, "etl", "k").expect("kv");
    assert_eq!(got.value, v(r#"{"a": "é😀", "b": [1, 2.5]}"#));
    assert_eq!(got.updated_at.repr(), lines[0]);
    let (value, moved) =
        jobstate::cursor_advance(&store, "etl", "wm", &v("41.0"), false, 0).expect("cursor");
    assert_eq!((value, moved), (PyJson::Int(41), false));
    let claim = jobstate::idempotency_claim(&store, "etl", "ttl", 0.0).expect("claim");
    assert!(!claim.fresh);
    let fetched = jobstate::artifact_get(&store, "etl", "out").expect("artifact");
    assert_eq!(fetched.data, b"from python");
    assert_eq!(fetched.sha256, lines[1]);
    assert_eq!(fetched.size, "11");
    // The store's documents are byte-identical whoever writes them.
    let doc = dir.path().join("default/docs/kv%2Fetl/k.doc");
    let theirs = std::fs::read(&doc).expect("doc");
    let at = match got.updated_at {
        PyJson::Float(at) => at,
        other => panic!("{other:?}"),
    };
    let body = PyDict::from_iter([
        ("key", PyJson::from("k")),
        ("value", got.value.clone()),
        ("updatedAt", PyJson::Float(at)),
    ]);
    assert_eq!(
        jobstate::docs::encode_document(&body).expect("encode"),
        theirs
    );
}

#[test]
fn the_two_daemons_document_locks_exclude_each_other() {
    let Some(python) = original_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let store = std::sync::Arc::new(open(dir.path()));
    // Both increment one key at once (this build from the original's
    // first write on, while it goes on); every increment lands.
    let doc = dir.path().join("default/docs/kv%2Fs/n.doc");
    let ours = {
        let store = std::sync::Arc::clone(&store);
        std::thread::spawn(move || {
            let began = std::time::Instant::now();
            while !doc.exists() && began.elapsed() < std::time::Duration::from_secs(30) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            for _ in 0..100 {
                jobstate::docs::mutate_document(&store, "kv/s", "n", |current| {
                    let n = current
                        .and_then(|b| b.get("value"))
                        .and_then(|v| v.to_py_int().ok())
                        .unwrap_or(0);
                    let body = PyDict::from_iter([
                        ("key", PyJson::from("n")),
                        ("value", PyJson::Int(n + 1)),
                        ("updatedAt", PyJson::Float(0.0)),
                    ]);
                    Ok((jobstate::docs::DocChange::Put(body), ()))
                })
                .expect("mutate");
            }
        })
    };
    run_original(
        &python,
        dir.path(),
        "def bump(cur):\n    \
             n = (cur or {}).get('value') or 0\n    \
             return {'key': 'n', 'value': n + 1, 'updatedAt': 0.0}, None\n\
         for _ in range(300):\n    \
             await b.mutate_document('kv/s', 'n', bump)",
    );
    ours.join().expect("thread");
    assert_eq!(
        jobstate::kv_get(&store, "s", "n").expect("kv").value,
        PyJson::Int(400)
    );
}
