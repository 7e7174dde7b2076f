//! The store directory and the blocking operations on it: append a record
//! to a stream, read a stream (quarantining what does not decode), prune,
//! list and delete streams. Every operation is counted and timed for the
//! `cronstable_state_*` families, and, with `maxOpsPerSecond`, paced by a
//! token bucket. Callers run these off the scheduler's thread (see
//! `crate::durable`); the `cronstable state` commands call them directly.

use super::format::{self, decode_record, encode_record, fs_safe, record_stem, wall_now};
use super::stats::{Op, StoreStats};
use crate::platform;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The subdirectories of a store's namespace.
pub const SUBDIRS: [&str; 6] = ["records", "leases", "quarantine", "tmp", "docs", "blobs"];

/// The file a stream directory whose token was shortened keeps its full
/// name in (the original's sidecar).
const STREAM_NAME_SIDECAR: &str = "stream-name.txt";

/// One record as read: its file name (which orders the stream by write
/// time) and its `data` object.
pub type Record = (String, Map<String, Value>);

/// Where a store lives and how it is paced.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSettings {
    /// The configured `state.path`, made absolute.
    pub root: PathBuf,
    /// The namespace (`state.deploymentId`, `default` when unset).
    pub deployment_id: String,
    /// `state.topology`: None for `auto` (probe the mount).
    pub topology: Option<Topology>,
    /// `state.maxOpsPerSecond` (0: unlimited).
    pub max_ops_per_second: f64,
}

/// Whether other hosts share the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// One host reads and writes it.
    SingleNode,
    /// A network mount several hosts share.
    Shared,
}

impl Topology {
    /// The spelling the config, the log line and the metric label use.
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::SingleNode => "single-node",
            Topology::Shared => "shared",
        }
    }
}

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A directory could not be made, or the probe file not written.
    #[error("the store at {path} is not writable: {source}")]
    NotWritable {
        /// The directory that failed.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// File systems whose mounts other hosts share (the `auto` probe).
const SHARED_FILESYSTEMS: [&str; 12] = [
    "nfs",
    "nfs3",
    "nfs4",
    "efs",
    "cifs",
    "smb3",
    "smbfs",
    "lustre",
    "glusterfs",
    "ceph",
    "cephfs",
    "fuse.sshfs",
];

/// The topology `auto` resolves to for a mount of type `fstype`.
pub fn topology_of_fstype(fstype: Option<&str>) -> Topology {
    match fstype {
        Some(fs) if SHARED_FILESYSTEMS.contains(&fs) || fs.starts_with("nfs") => Topology::Shared,
        _ => Topology::SingleNode,
    }
}

/// The token bucket of `maxOpsPerSecond` (one token per operation, a
/// second's worth of burst).
#[derive(Debug)]
struct Bucket {
    rate: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Takes a token; returns how long to wait for it first.
    fn take(&mut self, now: Instant) -> Duration {
        let refill = now.duration_since(self.at).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.rate.max(1.0));
        self.at = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

/// An open store: one deployment's namespace under `state.path`.
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    base: PathBuf,
    deployment_id: String,
    topology: Topology,
    instance: String,
    seq: AtomicU64,
    /// Per stream token, the highest record stem seen or written: new
    /// names always sort above it, even across a wall-clock step back.
    floors: Mutex<HashMap<String, String>>,
    bucket: Option<Mutex<Bucket>>,
    stats: Arc<StoreStats>,
    /// Per stream token, appends left before the next name-keyed prune
    /// pass (see [`Store::append_latest_by`]).
    prune_countdown: Mutex<HashMap<String, usize>>,
}

impl Store {
    /// Opens (and on first use creates) the store: its directories
    /// (`0700`), a write-and-fsync probe, and the version stamp.
    pub fn open(settings: &StoreSettings) -> Result<Store, OpenError> {
        let base = settings.root.join(fs_safe(&settings.deployment_id));
        for sub in SUBDIRS {
            let dir = base.join(sub);
            platform::create_private_dirs(&dir).map_err(|source| OpenError::NotWritable {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let topology = settings.topology.unwrap_or_else(|| {
            topology_of_fstype(
                platform::mount_of(&base)
                    .map(|(fstype, _)| fstype)
                    .as_deref(),
            )
        });
        let rate = settings.max_ops_per_second;
        let store = Store {
            root: settings.root.clone(),
            deployment_id: settings.deployment_id.clone(),
            topology,
            instance: format::process_token(),
            seq: AtomicU64::new(0),
            floors: Mutex::new(HashMap::new()),
            bucket: (rate > 0.0 && rate.is_finite()).then(|| {
                Mutex::new(Bucket {
                    rate,
                    tokens: rate.max(1.0),
                    at: Instant::now(),
                })
            }),
            stats: Arc::new(StoreStats::default()),
            prune_countdown: Mutex::new(HashMap::new()),
            base,
        };
        let probe = store
            .base
            .join("tmp")
            .join(format!("startup-{}.probe", store.instance));
        let probed = (|| {
            use std::io::Write;
            let mut file = platform::create_private_new(&probe)?;
            file.write_all(b"ok")?;
            file.sync_all()
        })();
        let _ = std::fs::remove_file(&probe);
        probed.map_err(|source| OpenError::NotWritable {
            path: store.base.display().to_string(),
            source,
        })?;
        store.stamp_meta();
        Ok(store)
    }

    /// The configured directory (absolute).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The namespace directory (`root/<deploymentId>`).
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The namespace (`deploymentId`).
    pub fn deployment_id(&self) -> &str {
        &self.deployment_id
    }

    /// The resolved topology.
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// This process's token in record and temp file names.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The operation counters (shared with the metrics).
    pub fn stats(&self) -> Arc<StoreStats> {
        Arc::clone(&self.stats)
    }

    /// Writes the version stamp once; warns when a newer record scheme
    /// stamped the store (its records will not read here).
    fn stamp_meta(&self) {
        let dir = self.stream_dir("meta");
        let mut names = json_names(&dir).unwrap_or_default();
        names.sort();
        for name in names.iter().rev() {
            let Ok(bytes) = std::fs::read(dir.join(name)) else {
                continue;
            };
            let Ok(Value::Object(record)) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            if let Some(version) = record.get("schemaVersion") {
                if version.as_str() != Some(format::SCHEMA_VERSION) {
                    tracing::warn!(
                        target: "cronstable::state",
                        "state: the store at {} was last stamped by a build writing record \
                         scheme {} (this build writes '{}'); records this build cannot read are \
                         quarantined; consider `cronstable state migrate-schema`",
                        self.base.display(),
                        py_repr_json(version),
                        format::SCHEMA_VERSION
                    );
                }
                return;
            }
        }
        let _ = self.append(
            "meta",
            &serde_json::json!({"storeVersion": format::SCHEMA_VERSION}),
        );
    }

    /// Waits for a token of `maxOpsPerSecond` (lease operations never
    /// call this: a queued renew could outlive its TTL).
    fn throttle(&self) {
        let Some(bucket) = &self.bucket else {
            return;
        };
        let wait = match bucket.lock() {
            Ok(mut bucket) => bucket.take(Instant::now()),
            Err(_) => Duration::ZERO,
        };
        if !wait.is_zero() {
            self.stats.throttled(wait);
            std::thread::sleep(wait);
        }
    }

    /// Runs `work` as one counted, timed, paced (`maxOpsPerSecond`)
    /// operation of kind `op`; an `Err` counts as a failed one. For the
    /// operations other modules build on the store's files (the
    /// job-facing documents and blobs); never for a lease operation,
    /// which must not wait behind the throttle.
    pub fn counted<T, E>(&self, op: Op, work: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.op(op, work)
    }

    /// Creates `dir` (`0700`, parents too) when missing, and syncs its
    /// parent so the new entry survives a power loss.
    pub fn make_dirs_durable(&self, dir: &Path) -> std::io::Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        platform::create_private_dirs(dir)?;
        if let Some(parent) = dir.parent() {
            platform::sync_dir(parent)?;
        }
        Ok(())
    }

    /// Runs `work` as one counted, timed, paced operation.
    fn op<T, E>(&self, op: Op, work: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        self.throttle();
        let began = Instant::now();
        let result = work();
        self.stats.record(op, began.elapsed(), result.is_err());
        result
    }

    /// The directory of `stream`.
    pub fn stream_dir(&self, stream: &str) -> PathBuf {
        self.base.join("records").join(fs_safe(stream))
    }

    /// A fresh temp file path under `tmp/`.
    fn tmp_path(&self) -> PathBuf {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        self.base
            .join("tmp")
            .join(format!("w-{}-{seq:012}.tmp", self.instance))
    }

    /// Writes `bytes` to `dest` through an fsynced `0600` temp file and a
    /// rename, then syncs the directory (a rename that a power loss can
    /// undo would lose an acknowledged record).
    pub fn write_atomic(&self, dest: &Path, bytes: &[u8]) -> std::io::Result<()> {
        format::write_via_temp(&self.tmp_path(), dest, bytes, true)
    }

    /// A record name above every name `stream` holds or this process
    /// wrote to it.
    fn next_stem(&self, token: &str, dir: &Path) -> String {
        let seeded = self
            .floors
            .lock()
            .map(|floors| floors.contains_key(token))
            .unwrap_or(false);
        let disk = if seeded {
            String::new()
        } else {
            highest_stem(dir)
        };
        let Ok(mut floors) = self.floors.lock() else {
            return record_stem(wall_now(), &self.instance, self.next_seq());
        };
        if floors.len() >= 4096 && !floors.contains_key(token) {
            floors.clear();
        }
        let floor = floors.entry(token.to_owned()).or_default();
        if disk > *floor {
            *floor = disk;
        }
        let mut stem = record_stem(wall_now(), &self.instance, self.next_seq());
        if stem <= *floor {
            let epoch = format::stem_epoch(floor).unwrap_or_default() + 1e-6;
            stem = record_stem(epoch, &self.instance, self.next_seq());
        }
        floor.clone_from(&stem);
        stem
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Appends a record with `data` to `stream`; returns its file name.
    pub fn append(&self, stream: &str, data: &Value) -> std::io::Result<String> {
        self.op(Op::Append, || self.append_unpaced(stream, data))
    }

    fn append_unpaced(&self, stream: &str, data: &Value) -> std::io::Result<String> {
        let token = fs_safe(stream);
        let dir = self.base.join("records").join(&token);
        if !dir.is_dir() {
            self.make_dirs_durable(&dir)?;
            if token.contains("%.") {
                // A shortened token cannot be decoded back into the
                // stream's name: the sidecar keeps it.
                let _ = self.write_atomic(&dir.join(STREAM_NAME_SIDECAR), stream.as_bytes());
            }
        }
        let name = format!("{}.json", self.next_stem(&token, &dir));
        self.write_atomic(&dir.join(&name), &encode_record(data))?;
        Ok(name)
    }

    /// Every record of `stream`, oldest first by write. A record that
    /// does not decode is moved to `quarantine/` (and skipped); one that
    /// will not read just now (an I/O error) is skipped and left.
    pub fn read(&self, stream: &str) -> std::io::Result<Vec<Record>> {
        self.op(Op::List, || self.read_unpaced(stream, None))
    }

    /// The newest `newest` records of `stream`, oldest first.
    pub fn read_newest(&self, stream: &str, newest: usize) -> std::io::Result<Vec<Record>> {
        self.op(Op::List, || self.read_unpaced(stream, Some(newest)))
    }

    fn read_unpaced(&self, stream: &str, newest: Option<usize>) -> std::io::Result<Vec<Record>> {
        let dir = self.stream_dir(stream);
        let mut names = match json_names(&dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        names.sort();
        if let Some(keep) = newest {
            let skip = names.len().saturating_sub(keep);
            names.drain(..skip);
        }
        let mut records = Vec::with_capacity(names.len());
        for name in names {
            if let Some(data) = self.read_record(&dir, &name) {
                records.push((name, data));
            }
        }
        Ok(records)
    }

    /// The `data` of record `name` in `dir`, or None: gone, unreadable
    /// right now (left, with a warning), or undecodable (quarantined when
    /// it will never read).
    fn read_record(&self, dir: &Path, name: &str) -> Option<Map<String, Value>> {
        let path = dir.join(name);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(
                    target: "cronstable::state",
                    "state: record {name} is unreadable right now ({e}); skipped"
                );
                return None;
            }
        };
        let data = decode_record(&bytes);
        if data.is_none() {
            self.quarantine_if_bad(&path, name, &bytes);
        }
        data
    }

    /// Quarantines a record that will never read (bad JSON, no `data`
    /// object); one of another `schemaVersion` is left for the build that
    /// wrote it.
    fn quarantine_if_bad(&self, path: &Path, name: &str, bytes: &[u8]) {
        let reason = match serde_json::from_slice::<Value>(bytes) {
            Err(_) => "unreadable-or-invalid-json",
            Ok(Value::Object(record)) if record.get("data").is_some_and(Value::is_object) => {
                tracing::warn!(
                    target: "cronstable::state",
                    "state: record {name} has unrecognised schemaVersion {}; leaving it in place \
                     (likely written by a newer version)",
                    py_repr_json(record.get("schemaVersion").unwrap_or(&serde_json::Value::Null))
                );
                return;
            }
            Ok(_) => "unknown-schema",
        };
        let dest = self
            .base
            .join("quarantine")
            .join(format!("{name}.{}.bad", self.instance));
        if std::fs::rename(path, &dest).is_ok() {
            self.stats.quarantined();
            tracing::warn!(
                target: "cronstable::state",
                "state: quarantined corrupt record {name} ({reason})"
            );
        }
    }

    /// Deletes the oldest records of `stream` beyond the newest `keep`
    /// (`keep <= 0`: all). Returns how many went.
    pub fn prune(&self, stream: &str, keep: i64) -> std::io::Result<usize> {
        self.op(Op::Prune, || {
            let dir = self.stream_dir(stream);
            let mut names = match json_names(&dir) {
                Ok(names) => names,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
                Err(e) => return Err(e),
            };
            names.sort();
            let keep = usize::try_from(keep.max(0)).unwrap_or(usize::MAX);
            let excess = if keep == 0 {
                names.len()
            } else {
                names.len().saturating_sub(keep)
            };
            let mut deleted = 0;
            for name in &names[..excess] {
                if std::fs::remove_file(dir.join(name)).is_ok() {
                    deleted += 1;
                }
            }
            Ok(deleted)
        })
    }

    /// Deletes the named records of `stream` (one already gone counts as
    /// deleted: a peer pruned it).
    pub fn delete_records(&self, stream: &str, names: &[String]) -> std::io::Result<()> {
        self.op(Op::Prune, || {
            let dir = self.stream_dir(stream);
            for name in names {
                match std::fs::remove_file(dir.join(name)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
    }

    /// The names of the streams starting with `prefix` (those whose
    /// directory names decode), sorted.
    pub fn stream_names(&self, prefix: &str) -> std::io::Result<Vec<String>> {
        self.op(Op::ListStreams, || {
            let token_prefix = fs_safe_fragment(prefix);
            let entries = match std::fs::read_dir(self.base.join("records")) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(e),
            };
            let mut names = Vec::new();
            for entry in entries.flatten() {
                let token = entry.file_name().to_string_lossy().into_owned();
                if !token.starts_with(&token_prefix) {
                    continue;
                }
                let name = if token.contains("%.") {
                    std::fs::read_to_string(entry.path().join(STREAM_NAME_SIDECAR)).ok()
                } else {
                    decode_token(&token)
                };
                if let Some(name) = name.filter(|n| n.starts_with(prefix)) {
                    names.push(name);
                }
            }
            names.sort();
            Ok(names)
        })
    }

    /// The last change of `stream`'s directory (a new or deleted record
    /// moves it), or None when it has none.
    pub fn stream_changed_at(&self, stream: &str) -> Option<std::time::SystemTime> {
        std::fs::metadata(self.stream_dir(stream))
            .and_then(|m| m.modified())
            .ok()
    }

    /// Deletes `stream` with every record in it.
    pub fn delete_stream(&self, stream: &str) -> std::io::Result<()> {
        self.op(Op::Prune, || {
            match std::fs::remove_dir_all(self.stream_dir(stream)) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            }
        })
    }
}

/// A JSON scalar as Python's `repr` shows it in the original's log lines.
fn py_repr_json(value: &Value) -> String {
    match value {
        Value::String(s) => crate::pyfmt::py_repr(&minijinja::Value::from(s.as_str())),
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

/// The `.json` file names in `dir`, unsorted.
fn json_names(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            names.push(name);
        }
    }
    Ok(names)
}

/// The highest record stem in `dir` ("" when none or unreadable).
fn highest_stem(dir: &Path) -> String {
    json_names(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| n.strip_suffix(".json").map(str::to_owned))
        .filter(|stem| format::stem_epoch(stem).is_some())
        .max()
        .unwrap_or_default()
}

/// A stream-name prefix as a directory-name prefix (no Windows-device or
/// length rules: it is never a whole name).
pub fn fs_safe_fragment(prefix: &str) -> String {
    let mut token = String::with_capacity(prefix.len());
    for byte in prefix.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-' {
            token.push(char::from(byte));
        } else {
            token.push_str(&format!("%{byte:02X}"));
        }
    }
    token
}

/// The name a whole (not shortened) token encodes, or None when no name
/// encodes to exactly this token.
pub fn decode_token(token: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(token.len());
    let raw = token.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = token.get(i + 1..i + 3)?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    let name = String::from_utf8(bytes).ok()?;
    (!name.is_empty() && fs_safe(&name) == token).then_some(name)
}

mod latest;
mod lease;

#[cfg(test)]
impl Store {
    /// A store at `root` with the default deployment id and no pacing:
    /// what the unit tests of the store and its users open.
    pub(crate) fn open_for_tests(root: &std::path::Path) -> Store {
        Store::open(&StoreSettings {
            root: root.to_path_buf(),
            deployment_id: "default".into(),
            topology: None,
            max_ops_per_second: 0.0,
        })
        .expect("a test store opens")
    }
}

#[cfg(test)]
mod tests;
