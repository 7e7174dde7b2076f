//! Manifest-anchored garbage collection of the store: the streams of
//! jobs no config references any more, the counter and manifest streams
//! of hosts gone quiet, the artifact streams of scopes no config names,
//! idempotency claims that lapsed a grace ago, idle orphaned lock side
//! files, crashed write temps, old quarantined records and orphaned
//! artifact blobs. Key/value and cursor documents and job-lock leases are
//! never collected.
//!
//! Biased to keep: nothing goes until the manifest history spans one
//! grace window (before that, "nobody manifested it" proves nothing); a
//! stream goes only when its prefix is one the collector manages, its
//! name is in no keep set, and its newest record is older than the
//! grace; `meta`, unrecognised and unnameable streams are never touched.
//!
//! [`plan`] decides (pure); [`collect_garbage`] gathers the facts from the
//! store, asks it, and deletes.

use crate::state::format::{fs_safe, parse_iso};
use crate::state::jobstate::docs::decode_document;
use crate::state::jobstate::rules::claim_expired_before;
use crate::state::jobstate::IDEM_NS_PREFIX;
use crate::state::lease::{try_with_lock, with_lock};
use crate::state::records::stream;
use crate::state::store::{decode_token, fs_safe_fragment, Store};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// Write temps older than this (seconds) are crash debris.
pub const TMP_MAX_AGE: f64 = 86_400.0;
/// Manifest streams read per pass (the first, by name).
pub const MANIFEST_HOSTS_CAP: usize = 2000;
/// Manifest records read per host stream (the newest).
pub const MANIFEST_STREAM_KEEP: usize = 512;
/// The shared artifact scope every config may write.
pub const GLOBAL_SCOPE: &str = "global";
/// The prefix of artifact streams.
pub const ARTIFACTS: &str = "artifacts/";
/// The prefix of the documents of dag runs (whose XCom scopes this build
/// cannot name: their presence leaves artifact streams unmanaged).
pub const DAGRUN_DOCS: &str = "dagrun/";
/// Streams never collected: the version stamp (and a bare `manifests`).
pub const PROTECTED_STREAMS: [&str; 2] = ["meta", "manifests"];
/// The job-keyed stream prefixes the collector manages.
pub const JOB_PREFIXES: [&str; 8] = [
    stream::RUNS,
    stream::LOGS,
    stream::CATCHUP,
    stream::RETRIES,
    stream::REBOOT,
    stream::INFLIGHT,
    stream::SLOTS,
    stream::PAUSED,
];
/// The host-keyed stream prefixes the collector manages.
pub const HOST_PREFIXES: [&str; 2] = [stream::COUNTERS, stream::MANIFESTS];

/// What the collector knows of one stream directory.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFacts {
    /// The directory name (the encoded stream name).
    pub token: String,
    /// Its `.json` records.
    pub records: usize,
    /// The write time (Unix seconds) of its newest record; for an empty
    /// directory its own change time; `+inf` when unknown (kept).
    pub newest: f64,
    /// Whether its name is known: false for a shortened token without a
    /// sidecar that encodes back to it (such a stream is never deleted:
    /// no keep set could have named it).
    pub nameable: bool,
}

/// Everything a collection decision depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct GcInput<'a> {
    /// Every stream directory of `records/`.
    pub streams: &'a [StreamFacts],
    /// The `data` of the manifest records read (any host, any order).
    pub manifests: &'a [Map<String, Value>],
    /// The job names of the config this pass runs with.
    pub config_jobs: &'a [String],
    /// The artifact scopes that config lets its jobs write beyond their
    /// own names and `global` (every job's `stateAllowedScopes`).
    pub config_scopes: &'a [String],
    /// This host (its counter and manifest streams are always kept).
    pub host: &'a str,
    /// Now, Unix seconds.
    pub now: f64,
    /// `gcGraceSeconds`.
    pub grace: f64,
    /// Whether `docs/` holds dag-run documents (whose XCom artifact scopes
    /// this build cannot name, so artifact streams stay unmanaged).
    pub dag_runs_present: bool,
}

/// The names each managed stream prefix keeps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeepSet {
    /// Prefix (`runs/`, ...) to the names (jobs, hosts, scopes) kept.
    pub prefixes: BTreeMap<&'static str, BTreeSet<String>>,
    /// How many manifests were recent (within the grace).
    pub recent: usize,
}

/// The decision of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The manifest history does not span the grace: delete nothing.
    Deferred,
    /// Delete these streams.
    Collect {
        /// The tokens of the streams to delete, sorted.
        remove: Vec<String>,
        /// Their records.
        records_removed: usize,
        /// Streams kept.
        streams_kept: usize,
        /// Whether artifact streams were managed (their blob references
        /// then decide the blob sweep too).
        artifacts_managed: bool,
    },
}

/// The write time a record file name starts with (`+inf`, "keep", when
/// it has none).
pub fn record_epoch(name: &str) -> f64 {
    let head = name.split('-').next().unwrap_or(name);
    match head.parse::<f64>() {
        Ok(epoch) if epoch.is_finite() => epoch,
        _ => f64::INFINITY,
    }
}

/// A manifest's `at`, Unix seconds.
fn manifest_at(manifest: &Map<String, Value>) -> Option<f64> {
    let at = parse_iso(manifest.get("at")?.as_str()?)?;
    Some(at.timestamp_micros() as f64 / 1e6)
}

/// The strings of a manifest's list field (None when not a list).
fn manifest_list(manifest: &Map<String, Value>, key: &str) -> Option<Vec<String>> {
    let Value::Array(items) = manifest.get(key)? else {
        return None;
    };
    Some(
        items
            .iter()
            .map(|item| match item {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
    )
}

/// Whether the pass must wait: no manifest has a readable `at`, or the
/// oldest is younger than the grace.
pub fn deferred(manifests: &[Map<String, Value>], now: f64, grace: f64) -> bool {
    let oldest = manifests
        .iter()
        .filter_map(manifest_at)
        .fold(None, |acc: Option<f64>, at| {
            Some(acc.map_or(at, |a| a.min(at)))
        });
    oldest.is_none_or(|oldest| now - oldest < grace)
}

/// The keep sets: the config's jobs and every job a recent manifest
/// names (for the job streams); this host and every recently manifesting
/// host (counters, manifests); and, when every recent manifest advertises
/// its scopes and dags and no dag-run document exists, the artifact
/// scopes (`global`, job names, the config's and the advertised scopes).
pub fn keep_set(input: &GcInput<'_>) -> KeepSet {
    let mut names: BTreeSet<String> = input.config_jobs.iter().cloned().collect();
    let mut hosts = BTreeSet::from([input.host.to_owned()]);
    let mut scopes = BTreeSet::from([GLOBAL_SCOPE.to_owned()]);
    scopes.extend(input.config_scopes.iter().cloned());
    let mut recent = 0;
    let mut covers_scopes = true;
    for manifest in input.manifests {
        let Some(at) = manifest_at(manifest) else {
            continue;
        };
        if input.now - at > input.grace {
            continue;
        }
        recent += 1;
        if let Some(jobs) = manifest_list(manifest, "jobs") {
            names.extend(jobs);
        }
        if let Some(host) = manifest.get("host").and_then(Value::as_str) {
            if !host.is_empty() {
                hosts.insert(host.to_owned());
            }
        }
        match manifest_list(manifest, "scopes") {
            Some(advertised) => scopes.extend(advertised),
            None => covers_scopes = false,
        }
        if manifest_list(manifest, "dags").is_none() {
            covers_scopes = false;
        }
    }
    let mut prefixes = BTreeMap::new();
    for prefix in JOB_PREFIXES {
        prefixes.insert(prefix, names.clone());
    }
    for prefix in HOST_PREFIXES {
        prefixes.insert(prefix, hosts.clone());
    }
    // A node predating advertised scopes proves nothing about the
    // artifact scopes it writes; no recent manifest proves nothing at all.
    if recent > 0 && covers_scopes && !input.dag_runs_present {
        scopes.extend(names);
        prefixes.insert(ARTIFACTS, scopes);
    }
    KeepSet { prefixes, recent }
}

/// Decides a pass: deferred until the manifest history spans the grace;
/// then each stream is kept when its token is protected or kept, its
/// prefix is not managed, its name unknown, or its newest record younger
/// than the grace — and removed otherwise.
pub fn plan(input: &GcInput<'_>) -> Plan {
    if deferred(input.manifests, input.now, input.grace) {
        return Plan::Deferred;
    }
    let keep = keep_set(input);
    let mut keep_tokens: BTreeSet<String> = PROTECTED_STREAMS.iter().map(|s| fs_safe(s)).collect();
    let mut prefix_tokens = Vec::new();
    for (prefix, suffixes) in &keep.prefixes {
        prefix_tokens.push(fs_safe_fragment(prefix));
        keep_tokens.extend(suffixes.iter().map(|s| fs_safe(&format!("{prefix}{s}"))));
    }
    let cutoff = input.now - input.grace.max(0.0);
    let mut streams: Vec<&StreamFacts> = input.streams.iter().collect();
    streams.sort_by(|a, b| a.token.cmp(&b.token));
    let mut remove = Vec::new();
    let mut records_removed = 0;
    let mut streams_kept = 0;
    for facts in streams {
        let managed = prefix_tokens.iter().any(|p| facts.token.starts_with(p));
        if keep_tokens.contains(&facts.token)
            || !managed
            || !facts.nameable
            || facts.newest.is_nan()
            || facts.newest > cutoff
        {
            streams_kept += 1;
            continue;
        }
        remove.push(facts.token.clone());
        records_removed += facts.records;
    }
    Plan::Collect {
        remove,
        records_removed,
        streams_kept,
        artifacts_managed: keep.prefixes.contains_key(ARTIFACTS),
    }
}

/// What a pass did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GcReport {
    /// Nothing was considered: the manifest history is too young.
    pub deferred: bool,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// The tokens of the streams removed.
    pub removed: Vec<String>,
    /// Their records.
    pub records_removed: usize,
    /// Streams kept.
    pub streams_kept: usize,
    /// Write temps swept.
    pub tmp_removed: usize,
    /// Quarantined records swept.
    pub quarantine_removed: usize,
    /// Idempotency documents swept (their claim lapsed a grace ago).
    pub idem_docs_removed: usize,
    /// Orphaned `.lock` side files swept.
    pub locks_removed: usize,
    /// Orphaned artifact blobs swept.
    pub blobs_removed: usize,
    /// Why the blob sweep stood down, if it did.
    pub blob_sweep_skipped: Option<String>,
}

impl GcReport {
    /// The report lines `cronstable state gc` prints.
    pub fn lines(&self) -> Vec<String> {
        if self.deferred {
            return vec![
                "state: gc deferred: the manifest history does not yet span gcGraceSeconds, so \
                 the store cannot prove what is orphaned"
                    .to_owned(),
            ];
        }
        let verb = if self.dry_run {
            "would remove"
        } else {
            "removed"
        };
        let mut lines = vec![format!(
            "state: gc {verb} {} stream(s) ({} record(s)), {} temp file(s), {} quarantined \
             record(s); kept {} stream(s)",
            self.removed.len(),
            self.records_removed,
            self.tmp_removed,
            self.quarantine_removed,
            self.streams_kept
        )];
        match &self.blob_sweep_skipped {
            Some(reason) => lines.push(format!("state: orphan-blob sweep skipped: {reason}")),
            None => lines.push(format!(
                "state: gc {verb} {} orphaned artifact blob(s)",
                self.blobs_removed
            )),
        }
        lines.extend(self.removed.iter().map(|token| format!("  - {token}")));
        lines
    }
}

/// Why a pass failed before deciding anything.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// The manifest streams could not be listed or read.
    #[error("state: cannot read the manifest streams: {0}")]
    Manifests(#[source] std::io::Error),
}

/// One garbage-collection pass over `store`, keeping `config_jobs` and
/// what recent manifests name, with `grace` as `gcGraceSeconds`; `host`
/// is this node's name. With `dry_run` nothing is deleted and the report
/// says what would be. (The config's extra artifact scopes: see
/// [`collect_garbage_scoped`].)
pub fn collect_garbage(
    store: &Store,
    config_jobs: &[String],
    grace: Duration,
    dry_run: bool,
    host: &str,
) -> Result<GcReport, GcError> {
    collect_garbage_scoped(store, config_jobs, &[], grace, dry_run, host)
}

/// [`collect_garbage`] also keeping the artifact streams of
/// `config_scopes` (the config's `stateAllowedScopes`, which its jobs may
/// write beyond their own names and `global`).
pub fn collect_garbage_scoped(
    store: &Store,
    config_jobs: &[String],
    config_scopes: &[String],
    grace: Duration,
    dry_run: bool,
    host: &str,
) -> Result<GcReport, GcError> {
    let mut manifests = Vec::new();
    let names = store
        .stream_names(stream::MANIFESTS)
        .map_err(GcError::Manifests)?;
    for name in names.iter().take(MANIFEST_HOSTS_CAP) {
        let records = store
            .read_newest(name, MANIFEST_STREAM_KEEP)
            .map_err(GcError::Manifests)?;
        manifests.extend(records.into_iter().map(|(_, data)| data));
    }
    let base = store.base();
    let streams = gather_streams(&base.join("records"));
    let now = crate::state::format::wall_now();
    let grace = grace.as_secs_f64();
    let input = GcInput {
        streams: &streams,
        manifests: &manifests,
        config_jobs,
        config_scopes,
        host,
        now,
        grace,
        dag_runs_present: dag_runs_present(&base.join("docs")),
    };
    let Plan::Collect {
        remove,
        records_removed,
        streams_kept,
        artifacts_managed: _,
    } = plan(&input)
    else {
        return Ok(GcReport {
            deferred: true,
            dry_run,
            ..GcReport::default()
        });
    };
    if !dry_run {
        for token in &remove {
            let dir = base.join("records").join(token);
            // A straggler that will not go leaves the directory; the next
            // pass converges.
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    let cutoff = now - grace;
    // Before the orphan-lock sweep: a claim document deleted here leaves
    // its `.lock`, idle since the claim was written, for that sweep.
    let idem_docs_removed = sweep_idem_docs(&base.join("docs"), cutoff, dry_run);
    let locks_removed = sweep_orphan_locks(base, cutoff, dry_run);
    let tmp_removed = sweep_dir(&base.join("tmp"), now - TMP_MAX_AGE, dry_run);
    let quarantine_removed = sweep_dir(&base.join("quarantine"), cutoff, dry_run);
    // A dry run only reported the streams it would remove: their records
    // are still there but must not count as references. After a real
    // removal they are gone (or, a straggler, still referencing).
    let removed_set: BTreeSet<&str> = if dry_run {
        remove.iter().map(String::as_str).collect()
    } else {
        BTreeSet::new()
    };
    let (blobs_removed, blob_sweep_skipped) =
        match referenced_blobs(&base.join("records"), &removed_set) {
            Ok(referenced) => (
                sweep_blobs(&base.join("blobs"), &referenced, cutoff, dry_run),
                None,
            ),
            Err(reason) => (0, Some(reason)),
        };
    Ok(GcReport {
        deferred: false,
        dry_run,
        removed: remove,
        records_removed,
        streams_kept,
        tmp_removed,
        quarantine_removed,
        idem_docs_removed,
        locks_removed,
        blobs_removed,
        blob_sweep_skipped,
    })
}

/// The entries of `dir` (none when it does not list).
fn entries(dir: &Path) -> Vec<std::fs::DirEntry> {
    std::fs::read_dir(dir)
        .map(|list| list.flatten().collect())
        .unwrap_or_default()
}

/// Deletes (or, dry, counts) the idempotency documents under `docs`
/// whose claim lapsed at or before `cutoff` (a numeric `expiresAt`) and
/// which were last written before it. Permanent claims, live ones and
/// documents that do not read are kept. Each is judged again under a
/// try-lock of its `.lock`: one a peer holds is skipped this pass, and
/// one re-won since the first look is kept.
pub fn sweep_idem_docs(docs: &Path, cutoff: f64, dry_run: bool) -> usize {
    let prefix = fs_safe_fragment(IDEM_NS_PREFIX);
    let expired = |path: &Path| {
        let body = std::fs::read(path)
            .ok()
            .and_then(|bytes| decode_document(&bytes).ok());
        claim_expired_before(body.as_ref(), cutoff)
    };
    let mut removed = 0;
    for namespace in entries(docs) {
        let token = namespace.file_name().to_string_lossy().into_owned();
        if !token.starts_with(&prefix) || !namespace.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for file in entries(&namespace.path()) {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".doc") else {
                continue;
            };
            let path = file.path();
            // A claim lapsed a grace ago was written before that: a
            // younger file needs no reading.
            if !mtime(&path).is_some_and(|m| m < cutoff) || !expired(&path) {
                continue;
            }
            if dry_run {
                removed += 1;
                continue;
            }
            let lock = namespace.path().join(format!("{stem}.lock"));
            let gone = try_with_lock(&lock, || {
                expired(&path)
                    && match std::fs::remove_file(&path) {
                        Ok(()) => true,
                        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
                    }
            });
            if matches!(gone, Ok(Some(true))) {
                removed += 1;
            }
        }
    }
    removed
}

/// Deletes (or, dry, counts) the `.lock` side files whose data file is
/// absent (a document's `.doc`, a lease's `.lease`) and which nobody
/// touched since `cutoff`, each judged again and unlinked while holding
/// its own lock (a waiter on it then finds the path gone and retries on
/// a new file).
pub fn sweep_orphan_locks(base: &Path, cutoff: f64, dry_run: bool) -> usize {
    let mut removed = 0;
    let mut sweep = |dir: &Path, sibling: &str| {
        for file in entries(dir) {
            let name = file.file_name().to_string_lossy().into_owned();
            if let Some(stem) = name.strip_suffix(".lock") {
                let data = dir.join(format!("{stem}{sibling}"));
                if reclaim_idle_lock(&file.path(), &data, cutoff, dry_run) {
                    removed += 1;
                }
            }
        }
    };
    for namespace in entries(&base.join("docs")) {
        if namespace.file_type().is_ok_and(|t| t.is_dir()) {
            sweep(&namespace.path(), ".doc");
        }
    }
    sweep(&base.join("leases"), ".lease");
    removed
}

/// Whether one orphaned lock file went (or, dry, would go).
fn reclaim_idle_lock(lock: &Path, data: &Path, cutoff: f64, dry_run: bool) -> bool {
    let idle = || mtime(lock).is_some_and(|m| m < cutoff) && !data.exists();
    if !idle() {
        return false;
    }
    if dry_run {
        return true;
    }
    with_lock(lock, || idle() && std::fs::remove_file(lock).is_ok()).unwrap_or(false)
}

/// The name a stream directory stands for: its token decoded, or for a
/// shortened token the sidecar's name when it encodes back to the token.
fn stream_name(dir: &Path, token: &str) -> Option<String> {
    if token.contains("%.") {
        let name = std::fs::read_to_string(dir.join("stream-name.txt")).ok()?;
        (!name.is_empty() && fs_safe(&name) == token).then_some(name)
    } else {
        decode_token(token)
    }
}

/// The facts of every stream directory under `records`.
pub fn gather_streams(records: &Path) -> Vec<StreamFacts> {
    let Ok(entries) = std::fs::read_dir(records) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let token = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        let nameable = stream_name(&dir, &token).is_some();
        let (records, newest) = match std::fs::read_dir(&dir) {
            Ok(files) => {
                let names: Vec<String> = files
                    .flatten()
                    .map(|f| f.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".json"))
                    .collect();
                let newest = if names.is_empty() {
                    // An empty directory a writer may have just made: age
                    // the directory itself.
                    mtime(&dir).unwrap_or(f64::INFINITY)
                } else {
                    names
                        .iter()
                        .map(|n| record_epoch(n))
                        .fold(f64::NEG_INFINITY, f64::max)
                };
                (names.len(), newest)
            }
            Err(_) => (0, f64::INFINITY),
        };
        out.push(StreamFacts {
            token,
            records,
            newest,
            nameable,
        });
    }
    out
}

/// A path's modification time, Unix seconds.
fn mtime(path: &Path) -> Option<f64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(since.as_secs_f64())
}

/// Whether `docs/` holds a dag-run namespace.
fn dag_runs_present(docs: &Path) -> bool {
    let prefix = fs_safe_fragment(DAGRUN_DOCS);
    std::fs::read_dir(docs).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&prefix))
    })
}

/// Deletes (or, dry, counts) the regular files of `dir` last modified
/// before `cutoff`.
fn sweep_dir(dir: &Path, cutoff: f64, dry_run: bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|d| d.as_secs_f64() < cutoff);
        if !meta.is_file() || !old {
            continue;
        }
        if dry_run || std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Every blob digest the surviving artifact records name (streams in
/// `removed` are left out: a dry run only reported them). Err with the
/// reason to stand the sweep down when a stream cannot be named or a
/// record cannot be read: a missed reference would present a live blob
/// as an orphan.
fn referenced_blobs(records: &Path, removed: &BTreeSet<&str>) -> Result<BTreeSet<String>, String> {
    let prefix = fs_safe_fragment(ARTIFACTS);
    let mut referenced = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(records) else {
        return Ok(referenced);
    };
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let token = entry.file_name().to_string_lossy().into_owned();
        if !token.starts_with(&prefix) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if stream_name(&entry.path(), &token).is_none() {
            return Err(
                "an artifact stream exists whose records cannot be enumerated, so its \
                        blob references cannot be ruled out"
                    .to_owned(),
            );
        }
        if !removed.contains(token.as_str()) {
            dirs.push(entry.path());
        }
    }
    for dir in dirs {
        let unreadable = |e: String| {
            format!(
                "an artifact record could not be read, so its blob reference cannot be ruled \
                 out ({e})"
            )
        };
        let files =
            std::fs::read_dir(&dir).map_err(|e| unreadable(format!("{}: {e}", dir.display())))?;
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".json") {
                continue;
            }
            let bytes = match std::fs::read(file.path()) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(unreadable(format!("cannot read record {name}: {e}"))),
            };
            let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(&bytes) else {
                // Corrupt: quarantined on its next read; it names nothing.
                continue;
            };
            if record.get("schemaVersion").and_then(Value::as_str)
                != Some(crate::state::format::SCHEMA_VERSION)
            {
                return Err(unreadable(format!(
                    "record {name} has an unrecognised schemaVersion"
                )));
            }
            if let Some(digest) = record
                .get("data")
                .and_then(|d| d.get("sha256"))
                .and_then(Value::as_str)
            {
                referenced.insert(digest.to_owned());
            }
        }
    }
    Ok(referenced)
}

/// Deletes (or, dry, counts) the `blobs/<hh>/<sha256>.blob` files no
/// digest in `referenced` names and older than `cutoff` (a younger one
/// may be a put whose record has not landed yet).
fn sweep_blobs(blobs: &Path, referenced: &BTreeSet<String>, cutoff: f64, dry_run: bool) -> usize {
    let Ok(shards) = std::fs::read_dir(blobs) else {
        return 0;
    };
    let mut removed = 0;
    for shard in shards.flatten() {
        let Ok(files) = std::fs::read_dir(shard.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let Some(digest) = name.strip_suffix(".blob") else {
                continue;
            };
            if referenced.contains(digest) {
                continue;
            }
            if !mtime(&file.path()).is_some_and(|m| m < cutoff) {
                continue;
            }
            if dry_run || std::fs::remove_file(file.path()).is_ok() {
                removed += 1;
            }
        }
        if !dry_run {
            // An emptied shard is debris; one still holding blobs stays.
            let _ = std::fs::remove_dir(shard.path());
        }
    }
    removed
}

#[cfg(test)]
#[path = "gc_tests.rs"]
mod tests;
