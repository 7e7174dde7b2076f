//! `cronstable state ACTION` run as a user runs it: the built binary on
//! temp stores, checking what it prints, how it exits and what it leaves
//! on disk (and, when the original is installed, that each reads what
//! the other wrote).

use cronstable::state::format::{encode_record, fs_safe, record_stem, wall_now};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

const DAY: f64 = 86_400.0;
const HOST: &str = "test-host";

/// What a run printed and how it exited.
#[derive(Debug)]
struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

fn run_with(program: &Path, args: &[&str]) -> Run {
    let out = Command::new(program)
        .args(args)
        .env("HOSTNAME", HOST)
        .env_remove("CRONSTABLE_CONFIG")
        .output()
        .expect("the binary runs");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

fn ours(args: &[&str]) -> Run {
    run_with(Path::new(env!("CARGO_BIN_EXE_cronstable")), args)
}

/// A temp dir with a config whose `state:` section points at `store/`.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env::with_state("")
    }

    /// `extra`: more `state:` keys (indented two spaces).
    fn with_state(extra: &str) -> Env {
        let dir = tempfile::tempdir().expect("a temp dir");
        let env = Env { dir };
        env.write_config("store", extra);
        env
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn config(&self) -> String {
        self.path("cronstable.yaml").display().to_string()
    }

    fn write_config(&self, store: &str, extra: &str) {
        let text = format!(
            "jobs:\n  - name: kept\n    command: echo hi\n    schedule: \"0 3 * * *\"\nstate:\n  \
             path: {}\n  topology: single-node\n{extra}",
            self.path(store).display()
        );
        std::fs::write(self.path("cronstable.yaml"), text).expect("write the config");
    }

    /// The namespace directory of the default namespace.
    fn base(&self) -> PathBuf {
        self.path("store/default")
    }

    fn state(&self, args: &[&str]) -> Run {
        let config = self.config();
        let mut all = vec!["state"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-c", &config]);
        ours(&all)
    }
}

/// Writes a record of `stream` at `epoch` into the store at `base`.
fn record(base: &Path, stream: &str, epoch: f64, seq: u64, data: serde_json::Value) -> PathBuf {
    let dir = base.join("records").join(fs_safe(stream));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(format!("{}.json", record_stem(epoch, "aaaaaaaaaaaa", seq)));
    std::fs::write(&path, encode_record(&data)).expect("write a record");
    path
}

fn write(base: &Path, rel: &str, bytes: &[u8]) {
    let path = base.join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn age(path: &Path, seconds: f64) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(SystemTime::now() - Duration::from_secs_f64(seconds))
        .expect("set the mtime");
}

/// Every file under `base`'s carried directories, by relative path.
fn carried(base: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = format!("{rel}/{}", entry.file_name().to_string_lossy());
            if entry.file_type().expect("type").is_dir() {
                walk(&entry.path(), &name, out);
            } else {
                out.insert(name, std::fs::read(entry.path()).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    for sub in ["records", "docs", "blobs", "leases"] {
        walk(&base.join(sub), sub, &mut out);
    }
    out
}

/// A store with something in every carried directory and debris in the
/// others.
fn populate(base: &Path) {
    let now = wall_now();
    record(base, "meta", now - 10.0, 1, json!({"storeVersion": "v1"}));
    record(
        base,
        "runs/kept",
        now - 5.0,
        2,
        json!({"outcome": "success", "é": "ü"}),
    );
    record(
        base,
        "runs/kept",
        now - 4.0,
        3,
        json!({"outcome": "failure"}),
    );
    write(base, "docs/kv%2Fkept/key.doc", br#"{"value":1}"#);
    write(
        base,
        &format!("blobs/ab/{}.blob", "ab".repeat(32)),
        b"payload",
    );
    write(
        base,
        "leases/slots%2Fkept.lease",
        br#"{"expiresAt":0.0,"fence":5,"holder":"h","name":"slots/kept"}"#,
    );
    write(base, "leases/slots%2Fkept.lock", b"");
    write(base, "tmp/w-aaaaaaaaaaaa-000000000009.tmp", b"debris");
    write(base, "quarantine/x.json.aaaaaaaaaaaa.bad", b"{bad");
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

#[test]
fn backup_then_restore_round_trips_byte_equal() {
    let src = Env::new();
    populate(&src.base());
    let archive = src.path("backup.tar.gz");
    let run = src.state(&["backup", "-o", archive.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "state: backed up 7 file(s) from {} to {}\n",
            src.base().display(),
            archive.display()
        )
    );
    #[cfg(unix)]
    assert_eq!(mode(&archive), 0o600, "the archive is owner-only");

    let dest = Env::new();
    let run = dest.state(&["restore", archive.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "state: restored 7 file(s) from {} into {}\n",
            archive.display(),
            dest.base().display()
        )
    );
    assert_eq!(carried(&dest.base()), carried(&src.base()));
    assert!(!dest.base().join("tmp").exists(), "tmp/ is not carried");
    assert!(
        !dest.base().join("quarantine").exists(),
        "quarantine/ is not carried"
    );
    #[cfg(unix)]
    assert_eq!(mode(&dest.base().join("docs/kv%2Fkept/key.doc")), 0o600);
    // No `.restoring` temp is left behind.
    assert!(!carried(&dest.base())
        .keys()
        .any(|k| k.ends_with(".restoring")));
}

#[test]
fn backup_of_a_missing_store_and_a_missing_archive_fail_clearly() {
    let env = Env::new();
    let out = env.path("b.tar.gz");
    let run = env.state(&["backup", "-o", out.to_str().expect("utf-8")]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!(
            "state: nothing to back up: {} does not exist\n",
            env.base().display()
        )
    );
    let run = env.state(&["restore", "/nonexistent/b.tar.gz"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("cronstable state error: cannot read /nonexistent/b.tar.gz: "),
        "{run:?}"
    );
}

#[test]
fn restore_refuses_a_populated_store_without_force() {
    let env = Env::new();
    populate(&env.base());
    let archive = env.path("b.tar.gz");
    assert_eq!(
        env.state(&["backup", "-o", archive.to_str().expect("utf-8")])
            .code,
        0
    );
    let run = env.state(&["restore", archive.to_str().expect("utf-8")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "state: the destination store at {} is not empty. To merge this backup, stop every \
             cronstable process using this store, then pass --force\n",
            env.base().display()
        )
    );
}

#[test]
fn a_forced_merge_keeps_the_higher_lease_fence_and_the_lock_files() {
    let env = Env::new();
    let base = env.base();
    let lease = |fence: u64| {
        format!(r#"{{"expiresAt":0.0,"fence":{fence},"holder":"h","name":"n"}}"#).into_bytes()
    };
    write(&base, "leases/ahead.lease", &lease(5));
    write(&base, "leases/behind.lease", &lease(5));
    write(&base, "leases/ahead.lock", b"archived");
    record(
        &base,
        "runs/kept",
        wall_now(),
        1,
        json!({"outcome": "success"}),
    );
    let archive = env.path("b.tar.gz");
    assert_eq!(
        env.state(&["backup", "-o", archive.to_str().expect("utf-8")])
            .code,
        0
    );
    // Since the backup: one fence moved on, one went back, a lock changed,
    // a record was pruned.
    write(&base, "leases/ahead.lease", &lease(9));
    write(&base, "leases/behind.lease", &lease(1));
    write(&base, "leases/ahead.lock", b"live");
    std::fs::remove_dir_all(base.join("records")).expect("rm");
    let run = env.state(&["restore", archive.to_str().expect("utf-8"), "--force"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "state: restored 2 file(s) from {} into {}\nstate: kept 1 current lease file(s) \
             whose archived fence was older (restoring those would regress fence counters)\n",
            archive.display(),
            base.display()
        )
    );
    assert_eq!(
        std::fs::read(base.join("leases/ahead.lease")).expect("read"),
        lease(9)
    );
    assert_eq!(
        std::fs::read(base.join("leases/behind.lease")).expect("read"),
        lease(5)
    );
    assert_eq!(
        std::fs::read(base.join("leases/ahead.lock")).expect("read"),
        b"live"
    );
    assert_eq!(
        std::fs::read_dir(base.join("records").join(fs_safe("runs/kept")))
            .expect("restored")
            .count(),
        1
    );
}

/// A gzipped tar whose members are named exactly `names` (no checks), as
/// a hostile archive would be.
fn hostile_archive(path: &Path, members: &[(&str, tar::EntryType, &[u8])]) {
    let file = std::fs::File::create(path).expect("create");
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for (name, kind, data) in members {
        let mut header = tar::Header::new_old();
        let raw = &mut header.as_old_mut().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        if *kind == tar::EntryType::Symlink {
            header.set_link_name("/etc/passwd").expect("link name");
        }
        header.set_cksum();
        builder.append(&header, *data).expect("append");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("finish");
}

#[test]
fn a_hostile_archive_restores_only_plain_files_inside_the_store() {
    let env = Env::new();
    let unique = format!("cronstable-abs-{}", std::process::id());
    let absolute = std::env::temp_dir().join(&unique);
    let archive = env.path("evil.tar.gz");
    hostile_archive(
        &archive,
        &[
            ("../evil", tar::EntryType::Regular, b"x"),
            ("records/../../evil2", tar::EntryType::Regular, b"x"),
            (
                absolute.to_str().expect("utf-8"),
                tar::EntryType::Regular,
                b"x",
            ),
            ("records/link", tar::EntryType::Symlink, b""),
            ("records/meta/ok.json", tar::EntryType::Regular, b"{}"),
        ],
    );
    let run = env.state(&["restore", archive.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "state: restored 1 file(s) from {} into {}\n",
            archive.display(),
            env.base().display()
        )
    );
    assert!(!env.path("store/evil").exists());
    assert!(!env.path("evil").exists());
    assert!(!env.path("evil2").exists());
    assert!(!absolute.exists());
    assert!(std::fs::symlink_metadata(env.base().join("records/link")).is_err());
    assert_eq!(
        std::fs::read(env.base().join("records/meta/ok.json")).expect("restored"),
        b"{}"
    );
}

#[test]
fn migrate_copies_to_a_new_path_and_namespace() {
    let env = Env::new();
    populate(&env.base());
    let dest = env.path("elsewhere");
    let run = env.state(&[
        "migrate",
        "--dest",
        dest.to_str().expect("utf-8"),
        "--dest-deployment-id",
        "My.App",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let dest_base = dest.join("%4Dy%2E%41pp");
    assert_eq!(
        run.stdout,
        format!(
            "state: migrated 7 file(s) from {} to {}\nstate: point state.path at the new \
             location (and update deploymentId if you changed it) to cut over\n",
            env.base().display(),
            dest_base.display()
        )
    );
    assert_eq!(carried(&dest_base), carried(&env.base()));
    assert!(!dest_base.join("tmp").exists());

    // Again: the destination now holds files.
    let run = env.state(&[
        "migrate",
        "--dest",
        dest.to_str().expect("utf-8"),
        "--dest-deployment-id",
        "My.App",
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!(
            "state: the destination store at {} is not empty. To overwrite it, stop every \
             cronstable process using this store, then pass --force\n",
            dest_base.display()
        )
    );
    let forced = env.state(&[
        "migrate",
        "--dest",
        dest.to_str().expect("utf-8"),
        "--dest-deployment-id",
        "My.App",
        "--force",
    ]);
    assert_eq!(forced.code, 0, "{forced:?}");

    // Onto itself, or into itself: refused.
    for target in [env.path("store"), env.path("store/default/records")] {
        let run = env.state(&["migrate", "--dest", target.to_str().expect("utf-8")]);
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(
            run.stderr,
            "state: destination must be a store outside the source\n"
        );
    }
}

#[test]
fn check_prints_the_inventory_in_the_original_layout() {
    let env = Env::new();
    let base = env.base();
    let now = wall_now();
    record(&base, "runs/a", now, 1, json!({}));
    record(&base, "runs/a", now, 2, json!({}));
    record(&base, "runs/b", now, 3, json!({}));
    record(&base, "inflight/a", now, 4, json!({}));
    write(&base, "quarantine/x.json.aaaaaaaaaaaa.bad", b"{");
    let run = env.state(&["check"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "state: store at {} is writable\n  backend: filesystem\n  namespace: default\n  \
             topology: single-node\n  shared_locking: False\n  streams: 4 (5 record(s))\n    \
             inflight: 1 record(s)\n    meta: 1 record(s)\n    runs: 3 record(s)\n  \
             quarantined: 1 record(s)\n",
            base.display()
        )
    );
    // The stamp was written once: a second check counts the same.
    assert_eq!(env.state(&["check"]).stdout, run.stdout);
    let run = env.state(&["migrate-schema", "--dry-run"]);
    assert_eq!(
        run.stdout,
        "state: migrate-schema would convert 0 record(s); 5 current, 0 unknown, 0 unreadable, \
         0 failed\n"
    );
    write(
        &base,
        "records/runs%2Fb/0000000000001.000000-x-1.json",
        b"{torn",
    );
    write(
        &base,
        "records/runs%2Fb/0000000000002.000000-x-2.json",
        br#"{"data":{},"schemaVersion":"v7"}"#,
    );
    let run = env.state(&["migrate-schema"]);
    assert_eq!(run.code, 0);
    assert_eq!(
        run.stdout,
        "state: migrate-schema converted 0 record(s); 5 current, 1 unknown, 1 unreadable, 0 \
         failed\n"
    );
}

fn manifest(host: &str, jobs: &[&str], at_epoch: f64) -> serde_json::Value {
    let at = chrono::DateTime::from_timestamp(at_epoch as i64, 0).expect("in range");
    json!({
        "jobSetId": "v1:x", "host": host, "jobs": jobs, "scopes": ["global"], "dags": [],
        "at": cronstable::state::format::py_isoformat(at),
    })
}

/// A store whose manifest history spans the grace (one day): a removed
/// job's old streams, a fresh one, live jobs, hosts, meta and debris.
/// `paused`: with a removed job's pause stream (which the original's
/// `state gc` leaves unmanaged and its daemon pass collects; ours
/// collects it in both).
fn gc_store(env: &Env, paused: bool) {
    let base = env.base();
    let now = wall_now();
    let old = now - 3.0 * DAY;
    record(&base, "meta", old, 1, json!({"storeVersion": "v1"}));
    record(
        &base,
        &format!("manifests/{HOST}"),
        now - 5.0 * DAY,
        2,
        manifest(HOST, &["kept"], now - 5.0 * DAY),
    );
    record(
        &base,
        &format!("manifests/{HOST}"),
        now - 3600.0,
        3,
        manifest(HOST, &["kept", "peer-job"], now - 3600.0),
    );
    record(
        &base,
        "manifests/gone-host",
        old,
        4,
        manifest("gone-host", &["ghost"], old),
    );
    record(&base, "runs/gone", old, 5, json!({}));
    record(&base, "runs/gone", old + 1.0, 6, json!({}));
    record(&base, "logs/gone", old, 7, json!({}));
    if paused {
        record(&base, "paused/gone", old, 8, json!({}));
    }
    record(&base, "runs/ghost", old, 9, json!({}));
    record(&base, "runs/fresh-gone", now - 3600.0, 10, json!({}));
    record(&base, "runs/kept", old, 11, json!({}));
    record(&base, "runs/peer-job", old, 12, json!({}));
    record(&base, "counters/gone-host", old, 13, json!({}));
    record(&base, &format!("counters/{HOST}"), old, 14, json!({}));
    record(&base, "custom/thing", old, 15, json!({}));
    write(&base, "tmp/w-old.tmp", b"");
    age(&base.join("tmp/w-old.tmp"), 2.0 * DAY);
    write(&base, "tmp/w-young.tmp", b"");
    write(&base, "quarantine/old.bad", b"");
    age(&base.join("quarantine/old.bad"), 2.0 * DAY);
    write(&base, "quarantine/young.bad", b"");
    let orphan = format!("blobs/cd/{}.blob", "cd".repeat(32));
    write(&base, &orphan, b"x");
    age(&base.join(&orphan), 2.0 * DAY);
}

#[test]
fn gc_dry_run_reports_and_the_real_pass_removes_exactly_that() {
    let env = Env::with_state("  gcGraceSeconds: 86400\n");
    gc_store(&env, true);
    let before = carried(&env.base());
    let removed = [
        "counters%2Fgone-host",
        "logs%2Fgone",
        "manifests%2Fgone-host",
        "paused%2Fgone",
        "runs%2Fghost",
        "runs%2Fgone",
    ];
    let listing: String = removed.iter().map(|t| format!("  - {t}\n")).collect();
    let dry = env.state(&["gc", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert_eq!(
        dry.stdout,
        format!(
            "state: gc would remove 6 stream(s) (7 record(s)), 1 temp file(s), 1 quarantined \
             record(s); kept 7 stream(s)\nstate: gc would remove 1 orphaned artifact \
             blob(s)\n{listing}"
        )
    );
    assert_eq!(carried(&env.base()), before, "a dry run deletes nothing");
    assert!(env.base().join("tmp/w-old.tmp").exists());

    let real = env.state(&["gc"]);
    assert_eq!(real.code, 0, "{real:?}");
    assert_eq!(real.stdout, dry.stdout.replace("would remove", "removed"));
    let records = env.base().join("records");
    for token in removed {
        assert!(!records.join(token).exists(), "{token} removed");
    }
    for kept in [
        "meta",
        "manifests%2Ftest-host",
        "runs%2Ffresh-gone",
        "runs%2Fkept",
        "runs%2Fpeer-job",
        "counters%2Ftest-host",
        "custom%2Fthing",
    ] {
        assert!(records.join(kept).is_dir(), "{kept} kept");
    }
    assert!(!env.base().join("tmp/w-old.tmp").exists());
    assert!(env.base().join("tmp/w-young.tmp").exists());
    assert!(!env.base().join("quarantine/old.bad").exists());
    assert!(env.base().join("quarantine/young.bad").exists());
    assert!(!env.base().join("blobs/cd").exists());
    // A second pass finds nothing more.
    let again = env.state(&["gc"]);
    assert_eq!(
        again.stdout,
        "state: gc removed 0 stream(s) (0 record(s)), 0 temp file(s), 0 quarantined record(s); \
         kept 7 stream(s)\nstate: gc removed 0 orphaned artifact blob(s)\n"
    );
}

#[test]
fn gc_defers_on_a_young_history_and_refuses_when_disabled() {
    let env = Env::with_state("  gcGraceSeconds: 86400\n");
    let now = wall_now();
    record(&env.base(), "runs/gone", now - 9.0 * DAY, 1, json!({}));
    record(
        &env.base(),
        &format!("manifests/{HOST}"),
        now - 60.0,
        2,
        manifest(HOST, &[], now - 60.0),
    );
    let run = env.state(&["gc"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "state: gc deferred: the manifest history does not yet span gcGraceSeconds, so the \
         store cannot prove what is orphaned\n"
    );
    assert!(env.base().join("records/runs%2Fgone").is_dir());

    let disabled = Env::with_state("  gcGraceSeconds: 0\n");
    let run = disabled.state(&["gc"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "cronstable state error: state.gcGraceSeconds is disabled (<= 0); nothing to collect\n"
    );
}

#[test]
fn config_problems_and_usage_errors_exit_as_the_original() {
    let env = Env::new();
    std::fs::write(
        env.path("cronstable.yaml"),
        "jobs:\n  - name: a\n    command: x\n    schedule: '@daily'\n",
    )
    .expect("write");
    let run = env.state(&["check"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "cronstable state error: the configuration has no `state:` section; `cronstable state` \
         administers the durable store it defines\n"
    );
    // -c before the subcommand works the same.
    let config = env.config();
    let run = ours(&["-c", &config, "state", "check"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("has no `state:` section"), "{run:?}");

    std::fs::write(env.path("cronstable.yaml"), "jobs: [unclosed\n").expect("write");
    let run = env.state(&["check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("cronstable state error: "),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("cronstable.yaml"),
        "names the file: {run:?}"
    );

    let run = ours(&["state"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "cronstable state: no action given (see `cronstable state --help`)\n"
    );
    // The job-facing actions reach the job API (none outside a job; the
    // test process is not one, unless its environment says otherwise).
    if std::env::var_os("CRONSTABLE_STATE_URL").is_none() {
        let run = ours(&["state", "get", "key"]);
        assert_eq!(run.code, 1);
        assert!(
            run.stderr.starts_with(
                "cronstable state: job state connection is unavailable: CRONSTABLE_STATE_URL is \
                 not set."
            ),
            "{run:?}"
        );
    }
    let run = ours(&["state", "backup"]);
    assert_eq!(run.code, 2, "a missing -o is a usage error: {run:?}");
}

/// The original's entry point, when installed.
fn original() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CRONSTABLE_ORIGINAL") {
        return Some(PathBuf::from(path));
    }
    let home = std::env::var_os("HOME")?;
    let path = Path::new(&home).join(".cache/cronstable-tools/original-venv/bin/cronstable");
    path.exists().then_some(path)
}

#[test]
fn the_original_reads_what_we_write_and_we_read_what_it_writes() {
    let Some(original) = original() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the original cronstable is not installed (CRONSTABLE_ORIGINAL or \
             ~/.cache/cronstable-tools/original-venv/bin/cronstable); scripts/test.sh installs it"
        );
        eprintln!("skipped: the original cronstable is not installed");
        return;
    };
    let theirs = |env: &Env, args: &[&str]| {
        let config = env.config();
        let mut all = vec!["state"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-c", &config]);
        run_with(&original, &all)
    };
    // Ours backs up, ours restores; the original checks and backs up
    // the restored store.
    let src = Env::new();
    populate(&src.base());
    let ours_archive = src.path("ours.tar.gz");
    assert_eq!(
        src.state(&["backup", "-o", ours_archive.to_str().expect("utf-8")])
            .code,
        0
    );
    let restored = Env::new();
    assert_eq!(
        restored
            .state(&["restore", ours_archive.to_str().expect("utf-8")])
            .code,
        0
    );
    let their_check = theirs(&restored, &["check"]);
    assert_eq!(their_check.code, 0, "{their_check:?}");
    assert_eq!(restored.state(&["check"]).stdout, their_check.stdout);

    let their_archive = restored.path("theirs.tar.gz");
    let run = theirs(
        &restored,
        &["backup", "-o", their_archive.to_str().expect("utf-8")],
    );
    assert_eq!(run.code, 0, "{run:?}");
    // Ours restores what the original wrote: the same files.
    let again = Env::new();
    let run = again.state(&["restore", their_archive.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(carried(&again.base()), carried(&restored.base()));
    // And the original restores what ours wrote, to the same files.
    let theirs_restored = Env::new();
    let run = theirs(
        &theirs_restored,
        &["restore", ours_archive.to_str().expect("utf-8")],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(carried(&theirs_restored.base()), carried(&src.base()));
    // The same gc report on the same store.
    let env = Env::with_state("  gcGraceSeconds: 86400\n");
    gc_store(&env, false);
    let their_gc = theirs(&env, &["gc", "--dry-run"]);
    assert_eq!(their_gc.code, 0, "{their_gc:?}");
    let our_gc = env.state(&["gc", "--dry-run"]);
    assert_eq!(our_gc.stdout, their_gc.stdout);
}
