//! The `filesystem` backend: a lease file in a directory every node shares
//! (normally a network mount), in the same layout and format as the
//! original's, so both daemons can elect over one directory.
//!
//! The store root is `abspath(path)/fs_safe(deploymentId)`; the lease is
//! `leases/<fs_safe(electionName)>.lease`, a compact JSON object with
//! sorted keys (`expiresAt`, `fence`, `holder`, `name`), and every change
//! to it is made while holding an exclusive `flock` on the `.lock` side
//! file (the lease file itself is replaced by rename, which would swap a
//! lock taken on it). Writes go to a temp file in `tmp/`, are fsynced and
//! renamed into place. `expiresAt` is wall-clock epoch seconds; `<= 0`
//! means released. The fence grows by one on every takeover and survives
//! releases (the file is never deleted).
//!
//! Wall clocks of different hosts are compared here, so two margins of
//! one second each keep the election safe under NTP-sized skew: a holder
//! counts itself leader only until (monotonic) `anchor + ttl - 1 s`, the
//! anchor taken before its locked write, and a challenger takes over only
//! once the written expiry is a second in the past by its own clock.
//!
//! The cluster's records are record streams beside the lease, in the
//! original's records format: `records/cluster%2Freboot-ran/` holds one
//! `{"jobSetId":..,"job":..}` record per `@reboot` job run (the original's
//! stream, so both daemons share the set; the newest 512 are read and
//! kept) and `records/cluster%2Flast-fires/` one `{"job":..,"at":..}` per
//! recorded fire (ours; the latest `at` per job wins, superseded records
//! are pruned). Appending new files rather than rewriting one document
//! means a late write from a former leader can add a record but never
//! erase a newer one; every append is made under the lease lock and only
//! while the lease file still names this node's holder and fence.
//!
//! All file I/O blocks, so each operation runs on a thread of its own and
//! the round waits for it with a timeout. A plain thread rather than
//! Tokio's blocking pool: an operation wedged on a dead mount must not
//! hold the runtime's shutdown (which waits for the pool) hostage.

use super::election::display_holder;
use super::records::{self, RecordsAnswer, RecordsOp, RecordsResult};
use super::{Backend, Round};
use crate::config::cluster::FilesystemSettings;
use crate::config::model::sections::Topology;
use crate::platform;
use crate::scheduler::ports::RecordsError;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Component, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The margin, each side, for clock skew between hosts.
const SKEW: f64 = 1.0;

/// Store operations one round may make in sequence (renew or read,
/// acquire, a confirming read, and one spare): the per-operation timeout
/// is sized so all of them fit the round's deadline.
const OPS_PER_ROUND: f64 = 4.0;

/// The holder shown when a lease names someone this node cannot name.
const UNKNOWN_HOLDER: &str = "<unknown holder>";

/// Tokens longer than this are shortened (with a digest of the name).
const FS_SAFE_MAX: usize = 130;

/// The subdirectories of a store root (the original's state store layout;
/// the election itself uses `leases/` and `tmp/`).
const SUBDIRS: [&str; 6] = ["records", "leases", "quarantine", "tmp", "docs", "blobs"];

/// A name as a file-name token: every UTF-8 byte outside `[a-z0-9_-]` is
/// written `%XX` (uppercase hex), so the mapping is injective even on
/// case-insensitive file systems and never yields `.` or `..`. A Windows
/// device name gets its first character escaped, an empty name is `_`,
/// and a token over 130 characters keeps its first 96 followed by `%.` and
/// 32 hex digits of the name's SHA-256.
pub fn fs_safe(name: &str) -> String {
    let mut token = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-' {
            token.push(char::from(byte));
        } else {
            token.push_str(&format!("%{byte:02X}"));
        }
    }
    if token.is_empty() {
        token.push('_');
    }
    if is_windows_device(&token) {
        let first = token.as_bytes()[0];
        token = format!("%{first:02X}{}", &token[1..]);
    }
    if token.len() > FS_SAFE_MAX {
        let digest = Sha256::digest(name.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        token = format!("{}%.{}", &token[..FS_SAFE_MAX - 34], &hex[..32]);
    }
    token
}

fn is_windows_device(token: &str) -> bool {
    matches!(token, "con" | "prn" | "aux" | "nul")
        || (token.len() == 4
            && (token.starts_with("com") || token.starts_with("lpt"))
            && matches!(token.as_bytes()[3], b'1'..=b'9'))
}

/// The lease file's content.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeaseRecord {
    /// Wall-clock epoch seconds the lease is valid until (`<= 0`:
    /// released).
    #[serde(rename = "expiresAt")]
    pub expires_at: f64,
    /// Grows by one on every takeover.
    pub fence: u64,
    /// `<nodeName>#<token>`.
    pub holder: String,
    /// The election name.
    pub name: String,
}

impl LeaseRecord {
    /// The file's bytes: compact JSON, keys sorted (the field order).
    pub fn encode(&self) -> Vec<u8> {
        // Serialising four plain fields cannot fail; an empty file would
        // read as corrupt (and so deny acquires) rather than mislead.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a lease file's bytes; the error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<LeaseRecord, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let Value::Object(map) = value else {
            return Err("lease file is not a JSON object".to_owned());
        };
        let field = |key: &str| map.get(key).ok_or_else(|| format!("missing key '{key}'"));
        let text = |key: &str| -> Result<String, String> {
            match field(key)? {
                Value::String(s) => Ok(s.clone()),
                other => Ok(other.to_string()),
            }
        };
        let fence = match field("fence")? {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| "fence is not a non-negative integer".to_owned())?;
        let expires_at = match field("expiresAt")? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|f: &f64| !f.is_nan())
        .ok_or_else(|| "expiresAt is not a number".to_owned())?;
        Ok(LeaseRecord {
            expires_at,
            fence,
            holder: text("holder")?,
            name: text("name")?,
        })
    }
}

/// What an acquire under the lock may write, given the record read and
/// the wall clock `now`: the fence to write, or None (deny: someone else
/// holds an unexpired lease).
pub fn acquire_fence(current: Option<&LeaseRecord>, holder: &str, now: f64) -> Option<u64> {
    match current {
        None => Some(1),
        Some(c) if c.holder != holder && c.expires_at > now => None,
        // Our own live lease: a renewal in effect, same fence.
        Some(c) if c.expires_at > now => Some(c.fence),
        // Expired or released (even ours): a new incarnation.
        Some(c) => Some(c.fence + 1),
    }
}

/// Whether a renewal of `held` may be written over `current`: still ours
/// (holder and fence), and not released. A renewal slightly past expiry
/// is fine; one after our own release must not bring it back.
pub fn may_renew(current: Option<&LeaseRecord>, held: &LeaseRecord) -> bool {
    current.is_some_and(|c| c.holder == held.holder && c.fence == held.fence && c.expires_at > 0.0)
}

/// What an unlocked read of the lease tells a node that does not hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sighting {
    /// It names our own token (an acquire that timed out landed after
    /// all): adopt it, and let the next locked renewal grant leadership.
    Ours,
    /// Someone else holds it, or it expired less than the skew margin ago
    /// by our clock: wait.
    Held,
    /// Absent, released, or expired beyond the margin: campaign.
    Free,
}

/// Classifies an unlocked read (`None`: absent or released) at wall
/// clock `now`.
pub fn sighting(observed: Option<&LeaseRecord>, token: &str, now: f64) -> Sighting {
    match observed {
        Some(o) if o.holder == token => Sighting::Ours,
        Some(o) if o.expires_at > now - SKEW => Sighting::Held,
        _ => Sighting::Free,
    }
}

/// `expiresAt` the way the original shows it (Python's
/// `datetime.isoformat()` in UTC: microseconds only when non-zero).
pub fn iso_expiry(expires_at: f64) -> Option<String> {
    if expires_at <= 0.0 || !expires_at.is_finite() {
        return None;
    }
    let micros = (expires_at * 1e6).round() as i64;
    let at = chrono::DateTime::<chrono::Utc>::from_timestamp_micros(micros)?;
    Some(if at.timestamp_subsec_micros() == 0 {
        at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    } else {
        at.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
    })
}

/// `path` made absolute (against the working directory) with `~`
/// expanded and `.`/`..` resolved by name, symlinks left alone.
pub fn absolute_root(path: &str) -> PathBuf {
    let expanded = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match platform::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => PathBuf::from(path),
        },
        _ => PathBuf::from(path),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(&expanded))
            .unwrap_or(expanded)
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub(crate) fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// The election's files and the blocking operations on them (the slot
/// store of `cluster::slots` uses one per job slot).
pub(crate) struct Store {
    /// The configured directory, absolute (what `GET /cluster` shows).
    root: PathBuf,
    /// `root/fs_safe(deploymentId)`.
    pub(crate) base: PathBuf,
    election: String,
    lock_path: PathBuf,
    lease_path: PathBuf,
    /// Unique per process, in temp file names (no two writers collide).
    instance: String,
    seq: AtomicU64,
    /// The newest record epoch this process wrote (bits of an f64):
    /// record names only ever grow, even across a wall-clock step back.
    record_floor: AtomicU64,
    /// Last-fires appends so far (the superseded records are pruned every
    /// [`PRUNE_FIRES_EVERY`] appends, not at each: a prune reads them all).
    fire_appends: AtomicU64,
}

/// How many last-fires appends pass between prunes.
const PRUNE_FIRES_EVERY: u64 = 16;

/// The lease file could not be trusted (it exists but does not read).
struct Unreadable(String);

impl Store {
    pub(crate) fn new(settings: &FilesystemSettings) -> Store {
        let root = absolute_root(&settings.path);
        let base = root.join(fs_safe(&settings.deployment_id));
        let safe = fs_safe(&settings.election_name);
        Store {
            lock_path: base.join("leases").join(format!("{safe}.lock")),
            lease_path: base.join("leases").join(format!("{safe}.lease")),
            election: settings.election_name.clone(),
            instance: super::process_token(),
            seq: AtomicU64::new(0),
            record_floor: AtomicU64::new(0),
            fire_appends: AtomicU64::new(0),
            root,
            base,
        }
    }

    pub(crate) fn prepare(&self) -> std::io::Result<()> {
        for sub in SUBDIRS {
            platform::create_private_dirs(&self.base.join(sub))?;
        }
        Ok(())
    }

    /// Checks that the mount's locks exclude: two opens of one file must
    /// not both get the exclusive lock, and an NFS mount must not keep
    /// its locks on this host. Returns the reason to refuse, if any.
    pub(crate) fn lock_fidelity(&self) -> std::io::Result<Option<String>> {
        if let Some((fstype, options)) = platform::mount_of(&self.base) {
            if fstype.starts_with("nfs") {
                let options: Vec<&str> = options.split(',').collect();
                let host_local = if options.contains(&"nolock") {
                    Some("'nolock'".to_owned())
                } else {
                    options
                        .iter()
                        .find(|o| matches!(**o, "local_lock=flock" | "local_lock=all"))
                        .map(|o| format!("'{o}'"))
                };
                if let Some(option) = host_local {
                    return Ok(Some(format!(
                        "the NFS mount is mounted with {option}, so file locks are host-local \
                         and cannot fence other nodes"
                    )));
                }
            }
        }
        let probe = self
            .base
            .join("tmp")
            .join(format!("lock-probe-{}", self.instance));
        let outcome = (|| {
            let first = platform::open_private_rw(&probe)?;
            let second = platform::open_private_rw(&probe)?;
            platform::lock_exclusive(&first)?;
            platform::try_lock_exclusive(&second)
        })();
        let _ = std::fs::remove_file(&probe);
        Ok(outcome?.then(|| {
            format!(
                "the mount at {} grants two exclusive locks on one file (its locks are no-ops)",
                self.root.display()
            )
        }))
    }

    /// Runs `work` holding the lock on the side file. The path is checked
    /// to still name the locked file after the wait (another tool may
    /// have replaced it); if not, the lock is taken again on the new one.
    fn locked<T>(&self, work: impl FnOnce() -> T) -> std::io::Result<T> {
        loop {
            let file = platform::open_private_rw(&self.lock_path)?;
            if file.metadata()?.len() == 0 {
                // Byte-range locks (other platforms' readers of this
                // directory) need a byte to lock.
                use std::io::Write;
                (&file).write_all(b"\0")?;
            }
            platform::lock_exclusive(&file)?;
            let same = match (file.metadata(), std::fs::metadata(&self.lock_path)) {
                (Ok(held), Ok(named)) => platform::same_file(&held, &named),
                _ => false,
            };
            if same {
                return Ok(work());
            }
        }
    }

    /// Reads the lease file: None when absent; anything else that fails
    /// (I/O, bad content) is `Unreadable`.
    fn read_file(&self) -> Result<Option<LeaseRecord>, Unreadable> {
        match std::fs::read(&self.lease_path) {
            Ok(bytes) => LeaseRecord::decode(&bytes).map(Some).map_err(Unreadable),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Unreadable(e.to_string())),
        }
    }

    /// Writes the lease through a fsynced temp file and a rename; the
    /// directory is synced too when `durable` (a fence change: losing it
    /// in a crash would hand the same fence out twice).
    fn write(&self, record: &LeaseRecord, durable: bool) -> std::io::Result<()> {
        self.write_atomic(&self.lease_path, &record.encode(), durable)
    }

    /// Writes `bytes` to `dest` through a fsynced temp file and a rename
    /// (readers see the old file or the new one, never half of one);
    /// syncs the directory too when `durable`.
    fn write_atomic(
        &self,
        dest: &std::path::Path,
        bytes: &[u8],
        durable: bool,
    ) -> std::io::Result<()> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let tmp = self
            .base
            .join("tmp")
            .join(format!("w-{}-{seq:012}.tmp", self.instance));
        let written = (|| {
            use std::io::Write;
            let mut file = platform::create_private_new(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, dest)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        if durable {
            if let Some(dir) = dest.parent() {
                platform::sync_dir(dir)?;
            }
        }
        Ok(())
    }

    fn stream_dir(&self, stream: &str) -> PathBuf {
        self.base.join("records").join(fs_safe(stream))
    }

    /// The record files of `stream`, oldest first (names sort by write
    /// time); none when the stream was never written.
    fn list_stream(&self, stream: &str) -> std::io::Result<Vec<String>> {
        let entries = match std::fs::read_dir(self.stream_dir(stream)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        for entry in entries {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// The bodies of the newest `newest` records of `stream` (all when
    /// None), with their file names. Records that vanish meanwhile (a
    /// prune) or do not read are skipped.
    fn read_stream(
        &self,
        stream: &str,
        newest: Option<usize>,
    ) -> std::io::Result<Vec<(String, serde_json::Map<String, Value>)>> {
        let mut names = self.list_stream(stream)?;
        if let Some(keep) = newest {
            let skip = names.len().saturating_sub(keep);
            names.drain(..skip);
        }
        let dir = self.stream_dir(stream);
        let mut bodies = Vec::with_capacity(names.len());
        for name in names {
            match std::fs::read(dir.join(&name)) {
                Ok(bytes) => {
                    if let Some(body) = records::decode_record(&bytes) {
                        bodies.push((name, body));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(bodies)
    }

    /// Appends a record with `data` to `stream` if the lease file still
    /// shows `held` (same holder and fence, not released), checked and
    /// written under the lease lock. False when the lease is no longer
    /// ours. Returns the stream's file names after the append.
    fn append_fenced(
        &self,
        held: &LeaseRecord,
        stream: &str,
        data: &Value,
    ) -> std::io::Result<Option<Vec<String>>> {
        self.locked(|| {
            let current = self.read_file().ok().flatten();
            let ours = current
                .as_ref()
                .is_some_and(|c| c.holder == held.holder && c.fence == held.fence)
                && current.as_ref().is_some_and(|c| c.expires_at > wall_now());
            if !ours {
                return Ok(None);
            }
            let dir = self.stream_dir(stream);
            platform::create_private_dirs(&dir)?;
            let mut names = self.list_stream(stream)?;
            let floor = names
                .last()
                .and_then(|n| records::stem_epoch(n))
                .unwrap_or(0.0)
                .max(f64::from_bits(self.record_floor.load(Ordering::Relaxed)));
            let epoch = wall_now().max(floor);
            self.record_floor.store(epoch.to_bits(), Ordering::Relaxed);
            let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
            let name = format!("{}.json", records::record_stem(epoch, &self.instance, seq));
            self.write_atomic(&dir.join(&name), &records::encode_record(data), true)?;
            names.push(name);
            Ok(Some(names))
        })?
    }

    /// Deletes the named records of `stream` (best effort: one already
    /// gone was pruned by another node).
    fn delete_records(&self, stream: &str, names: &[String]) {
        let dir = self.stream_dir(stream);
        for name in names {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }

    /// Records `job` of `job_set_id` as run, unless the stream already
    /// has it; keeps the newest [`records::REBOOT_RAN_WINDOW`] records.
    fn mark_reboot_ran(
        &self,
        held: &LeaseRecord,
        job_set_id: &str,
        job: &str,
    ) -> std::io::Result<bool> {
        let window =
            self.read_stream(records::REBOOT_RAN_STREAM, Some(records::REBOOT_RAN_WINDOW))?;
        let bodies: Vec<_> = window.into_iter().map(|(_, body)| body).collect();
        if records::reboot_jobs_in(&bodies, job_set_id).contains(job) {
            return Ok(true);
        }
        let data = json!({"jobSetId": job_set_id, "job": job});
        let Some(names) = self.append_fenced(held, records::REBOOT_RAN_STREAM, &data)? else {
            return Ok(false);
        };
        let excess = names.len().saturating_sub(records::REBOOT_RAN_WINDOW);
        self.delete_records(records::REBOOT_RAN_STREAM, &names[..excess]);
        Ok(true)
    }

    /// Records `job`'s fire at `at`; every few appends, prunes the
    /// records a later fire of the same job supersedes.
    fn record_fire(
        &self,
        held: &LeaseRecord,
        job: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> std::io::Result<bool> {
        let data = json!({"job": job, "at": records::rfc3339(at)});
        if self
            .append_fenced(held, records::LAST_FIRES_STREAM, &data)?
            .is_none()
        {
            return Ok(false);
        }
        if self
            .fire_appends
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_FIRES_EVERY)
        {
            let all = self.read_stream(records::LAST_FIRES_STREAM, None)?;
            self.delete_records(records::LAST_FIRES_STREAM, &records::fires_to_prune(&all));
        }
        Ok(true)
    }

    /// Takes the lease for `holder` unless someone else holds it; None
    /// when denied (held elsewhere, or the file cannot be trusted).
    pub(crate) fn acquire(&self, holder: &str, ttl: f64) -> std::io::Result<Option<LeaseRecord>> {
        self.locked(|| {
            let current = match self.read_file() {
                Ok(current) => current,
                Err(Unreadable(why)) => {
                    // An unreadable lease is not a free one.
                    tracing::warn!(
                        target: "cronstable::cluster",
                        "state: lease {} unreadable ({why}); denying acquire",
                        self.election
                    );
                    return None;
                }
            };
            let now = wall_now();
            let fence = acquire_fence(current.as_ref(), holder, now)?;
            let record = LeaseRecord {
                expires_at: now + ttl,
                fence,
                holder: holder.to_owned(),
                name: self.election.clone(),
            };
            let durable = current.as_ref().is_none_or(|c| c.fence != fence);
            if let Err(e) = self.write(&record, durable) {
                tracing::warn!(
                    target: "cronstable::cluster",
                    "state: lease {} write failed ({e}); denying acquire",
                    self.election
                );
                return None;
            }
            Some(record)
        })
    }

    /// Extends `held` by `ttl` if it is still ours; None when refused.
    pub(crate) fn renew(
        &self,
        held: &LeaseRecord,
        ttl: f64,
    ) -> std::io::Result<Option<LeaseRecord>> {
        self.locked(|| {
            let current = match self.read_file() {
                Ok(current) => current,
                Err(Unreadable(why)) => {
                    // Without a trusted read we cannot prove it is ours.
                    tracing::warn!(
                        target: "cronstable::cluster",
                        "state: lease {} unreadable ({why}); denying renew",
                        self.election
                    );
                    return None;
                }
            };
            if !may_renew(current.as_ref(), held) {
                return None;
            }
            let record = LeaseRecord {
                expires_at: wall_now() + ttl,
                ..held.clone()
            };
            if let Err(e) = self.write(&record, false) {
                tracing::warn!(
                    target: "cronstable::cluster",
                    "state: lease {} write failed ({e}); denying renew",
                    self.election
                );
                return None;
            }
            Some(record)
        })
    }

    /// Marks `held` released in place (expiry 0, holder and fence kept)
    /// if the file still shows it.
    pub(crate) fn release(&self, held: &LeaseRecord) -> std::io::Result<()> {
        self.locked(|| {
            let Ok(Some(current)) = self.read_file() else {
                // Absent or untrusted: it expires on its own.
                return Ok(());
            };
            if current.holder != held.holder || current.fence != held.fence {
                return Ok(());
            }
            let released = LeaseRecord {
                expires_at: 0.0,
                ..held.clone()
            };
            self.write(&released, false)
        })?
    }

    /// An unlocked look at the lease: None when absent, released or
    /// unreadable.
    pub(crate) fn read(&self) -> Option<LeaseRecord> {
        self.read_file()
            .ok()
            .flatten()
            .filter(|record| record.expires_at > 0.0)
    }
}

/// Runs blocking `work` on a thread of its own, waiting at most `limit`.
/// None when it did not finish in time (it may still land later).
pub(crate) async fn off_thread<T: Send + 'static>(
    limit: Duration,
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Option<std::io::Result<T>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("cronstable-lease".to_owned())
        .spawn(move || {
            let _ = tx.send(work());
        });
    if let Err(e) = spawned {
        return Some(Err(e));
    }
    match tokio::time::timeout(limit, rx).await {
        Ok(Ok(result)) => Some(result),
        Ok(Err(_)) => Some(Err(std::io::Error::other("the store operation panicked"))),
        Err(_) => None,
    }
}

/// The shared-directory lease backend.
pub struct FilesystemLease {
    store: Arc<Store>,
    /// `<nodeName>#<token>`, unique per process.
    token: String,
    /// The node name (the display identity).
    display: String,
    ttl: f64,
    connect_timeout: Duration,
    topology: Topology,
    /// The lease this node holds (or adopted), to renew and release.
    held: Option<LeaseRecord>,
    /// Leading until then (the last locked write's anchor + ttl - 1 s).
    leading_until: Option<Instant>,
    /// The holder as last positively observed (display form).
    holder: Option<String>,
    /// The fence as last observed.
    fence: Option<u64>,
    /// The written expiry as last observed (for followers too).
    expiry: Option<String>,
}

/// What one round saw, when it saw the lease.
enum Seen {
    /// This node holds it (a locked write succeeded at `anchor`).
    Won(Instant, LeaseRecord),
    /// Someone holds it (perhaps us, adopted from an unlocked read).
    Other(LeaseRecord),
}

impl FilesystemLease {
    /// Prepares the store directory for `settings` (creating it 0700),
    /// checks that its locks exclude, and logs the topology warning.
    /// `node_name` and `connect_timeout` come from the `cluster` section;
    /// errors are the reason the backend cannot start.
    pub async fn open(
        settings: &FilesystemSettings,
        node_name: &str,
        connect_timeout: Duration,
    ) -> Result<FilesystemLease, String> {
        let store = Arc::new(Store::new(settings));
        let checking = Arc::clone(&store);
        let probed = off_thread(connect_timeout, move || {
            checking.prepare()?;
            checking.lock_fidelity()
        })
        .await;
        let root = store.root.display().to_string();
        match probed {
            None => {
                return Err(format!(
                    "cluster.backend filesystem: the directory {root} did not answer within {} s",
                    connect_timeout.as_secs()
                ))
            }
            Some(Err(e)) => {
                return Err(format!(
                    "cluster.backend filesystem: cannot prepare {}: {e}",
                    store.base.display()
                ))
            }
            Some(Ok(Some(reason))) => {
                return Err(format!(
                    "cluster.backend filesystem: refusing to elect over {root}: {reason}"
                ))
            }
            Some(Ok(None)) => {}
        }
        let topology = match settings.topology {
            Topology::Auto => match platform::mount_of(&store.base) {
                Some((fstype, _)) if is_shared_fstype(&fstype) => Topology::Shared,
                _ => Topology::SingleNode,
            },
            explicit => explicit,
        };
        if topology == Topology::SingleNode {
            tracing::warn!(
                target: "cronstable::cluster",
                "cluster: the filesystem election store at {root} resolved topology 'single-node', \
                 so its locks only exclude processes on THIS host{}; if the directory really is a \
                 shared network mount, set cluster.filesystem.topology: shared",
                if platform::IS_WINDOWS {
                    " (Windows/macOS cannot probe the mount)"
                } else {
                    ""
                }
            );
        }
        Ok(FilesystemLease {
            token: format!("{node_name}#{}", super::process_token()),
            display: node_name.to_owned(),
            ttl: settings.ttl,
            connect_timeout,
            topology,
            store,
            held: None,
            leading_until: None,
            holder: None,
            fence: None,
            expiry: None,
        })
    }

    fn period_secs(&self) -> f64 {
        (self.ttl / 3.0).max(1.0)
    }

    fn round_deadline_secs(&self) -> f64 {
        (self.ttl - self.period_secs() - SKEW).max(1.0)
    }

    fn op_timeout(&self) -> Duration {
        let secs = (self.round_deadline_secs() / OPS_PER_ROUND)
            .max(0.5)
            .min(self.connect_timeout.as_secs_f64());
        Duration::from_secs_f64(secs)
    }

    /// Records a positive observation of the lease.
    fn observe(&mut self, seen: Seen) {
        let record = match seen {
            Seen::Won(anchor, record) => {
                let lead = Duration::from_secs_f64((self.ttl - SKEW).max(0.0));
                self.leading_until = Some(anchor + lead);
                self.held = Some(record.clone());
                record
            }
            Seen::Other(record) => {
                self.leading_until = None;
                // Adopted when it is ours: the next round renews it under
                // the lock, which is what grants leadership.
                self.held = (record.holder == self.token).then(|| record.clone());
                record
            }
        };
        let name = display_holder(&record.holder);
        self.holder = Some(if name.is_empty() {
            UNKNOWN_HOLDER.to_owned()
        } else {
            name.to_owned()
        });
        self.fence = Some(record.fence);
        self.expiry = iso_expiry(record.expires_at);
    }

    fn answered(&self) -> Round {
        Round {
            leading_until: self.leading_until,
            answered: true,
            holder: self.holder.clone(),
            error: None,
        }
    }

    /// A round that observed nothing: the state runs out on its deadlines.
    fn unanswered(&self, error: Option<String>) -> Round {
        Round {
            leading_until: self.leading_until,
            answered: false,
            holder: self.holder.clone(),
            error,
        }
    }

    async fn run_round(&mut self) -> Round {
        let limit = self.op_timeout();
        if let Some(held) = self.held.clone() {
            let store = Arc::clone(&self.store);
            let ttl = self.ttl;
            let anchor = Instant::now();
            match off_thread(limit, move || store.renew(&held, ttl)).await {
                None => {
                    // It may still land: change nothing, and above all do
                    // not extend leadership from the unlocked read below.
                    tracing::debug!(
                        target: "cronstable::cluster",
                        "cluster: filesystem lease renew timed out; leaving state to its deadlines"
                    );
                    return self.unanswered(None);
                }
                Some(Err(e)) => return self.unanswered(Some(e.to_string())),
                Some(Ok(Some(renewed))) => {
                    self.observe(Seen::Won(anchor, renewed));
                    return self.answered();
                }
                Some(Ok(None)) => {
                    // Refused: no longer provably ours, so not leading
                    // from this instant; look again like any follower.
                    self.held = None;
                    self.leading_until = None;
                }
            }
        }
        let store = Arc::clone(&self.store);
        let observed = match off_thread(limit, move || Ok(store.read())).await {
            None => return self.unanswered(None),
            Some(Err(e)) => return self.unanswered(Some(e.to_string())),
            Some(Ok(observed)) => observed,
        };
        match sighting(observed.as_ref(), &self.token, wall_now()) {
            Sighting::Ours | Sighting::Held => {
                if let Some(record) = observed {
                    self.observe(Seen::Other(record));
                }
                return self.answered();
            }
            Sighting::Free => {}
        }
        let store = Arc::clone(&self.store);
        let (token, ttl) = (self.token.clone(), self.ttl);
        let anchor = Instant::now();
        match off_thread(limit, move || store.acquire(&token, ttl)).await {
            // Unknown: it may land; the adoption branch picks it up.
            None => return self.unanswered(None),
            Some(Err(e)) => return self.unanswered(Some(e.to_string())),
            Some(Ok(Some(acquired))) => {
                self.observe(Seen::Won(anchor, acquired));
                return self.answered();
            }
            Some(Ok(None)) => {}
        }
        // Denied: a rival was faster, or the store refused; a confirming
        // read tells which (only a lease seen counts as contact).
        let store = Arc::clone(&self.store);
        match off_thread(limit, move || Ok(store.read())).await {
            Some(Ok(Some(record))) => {
                self.observe(Seen::Other(record));
                self.answered()
            }
            _ => self.unanswered(None),
        }
    }

    /// The lease this node holds while it leads (writes need it).
    fn held_while_leading(&self) -> Result<LeaseRecord, RecordsError> {
        let leading = self
            .leading_until
            .is_some_and(|until| Instant::now() < until);
        match &self.held {
            Some(held) if leading => Ok(held.clone()),
            _ => Err(records::not_the_leader()),
        }
    }

    async fn run_records(&mut self, op: RecordsOp) -> RecordsResult {
        // Reading a stream is a directory listing plus one small file per
        // record: give it the round's whole deadline, not one op's share.
        let limit = self.round_deadline();
        let store = Arc::clone(&self.store);
        // A write that finds the lease no longer ours is refused.
        let landed = |ours: bool| {
            if ours {
                Ok(RecordsAnswer::Done)
            } else {
                Err(records::not_the_leader())
            }
        };
        let outcome: Option<std::io::Result<RecordsResult>> = match op {
            RecordsOp::RebootRan { job_set_id } => {
                off_thread(limit, move || {
                    let window = store.read_stream(
                        records::REBOOT_RAN_STREAM,
                        Some(records::REBOOT_RAN_WINDOW),
                    )?;
                    let bodies: Vec<_> = window.into_iter().map(|(_, body)| body).collect();
                    Ok(Ok(RecordsAnswer::Jobs(records::reboot_jobs_in(
                        &bodies,
                        &job_set_id,
                    ))))
                })
                .await
            }
            RecordsOp::LastFires => {
                off_thread(limit, move || {
                    let all = store.read_stream(records::LAST_FIRES_STREAM, None)?;
                    Ok(Ok(RecordsAnswer::Fires(
                        records::fires_in(&all).into_iter().collect(),
                    )))
                })
                .await
            }
            RecordsOp::MarkRebootRan { job_set_id, job } => {
                let held = self.held_while_leading()?;
                off_thread(limit, move || {
                    store.mark_reboot_ran(&held, &job_set_id, &job).map(landed)
                })
                .await
            }
            RecordsOp::RecordFire { job, at } => {
                let held = self.held_while_leading()?;
                off_thread(limit, move || {
                    store.record_fire(&held, &job, at).map(landed)
                })
                .await
            }
        };
        match outcome {
            None => Err(RecordsError::Store("the store did not answer".to_owned())),
            Some(Ok(result)) => result,
            Some(Err(e)) => Err(RecordsError::Store(e.to_string())),
        }
    }

    async fn run_release(&mut self) -> Result<(), String> {
        self.leading_until = None;
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let store = Arc::clone(&self.store);
        match off_thread(self.connect_timeout, move || store.release(&held)).await {
            None => Err(format!(
                "no answer within {} s",
                self.connect_timeout.as_secs()
            )),
            Some(result) => result.map_err(|e| e.to_string()),
        }
    }
}

/// File system types (as `/proc/mounts` names them) whose locks reach
/// other hosts.
fn is_shared_fstype(fstype: &str) -> bool {
    matches!(
        fstype,
        "nfs"
            | "nfs4"
            | "nfs3"
            | "efs"
            | "cifs"
            | "smb3"
            | "smbfs"
            | "lustre"
            | "glusterfs"
            | "ceph"
            | "cephfs"
            | "fuse.sshfs"
    )
}

impl Backend for FilesystemLease {
    fn name(&self) -> &'static str {
        "filesystem"
    }

    fn start_line(&self) -> String {
        let topology = match self.topology {
            Topology::Shared => "shared",
            _ => "single-node",
        };
        tracing::debug!(
            target: "cronstable::cluster",
            "cluster: filesystem election store {} (topology {topology}, renew every {:.1} s, \
             round deadline {:.1} s)",
            self.store.base.display(),
            self.period_secs(),
            self.round_deadline_secs()
        );
        format!(
            "cluster: filesystem election ready at {} (election={}, identity={}, ttl={:.0}s)",
            self.store.root.display(),
            self.store.election,
            self.display,
            self.ttl
        )
    }

    fn round(&mut self) -> BoxFuture<'_, Round> {
        Box::pin(self.run_round())
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(self.run_release())
    }

    fn records(&mut self, op: RecordsOp) -> BoxFuture<'_, RecordsResult> {
        Box::pin(self.run_records(op))
    }

    fn period(&self) -> Duration {
        Duration::from_secs_f64(self.period_secs())
    }

    fn round_deadline(&self) -> Duration {
        Duration::from_secs_f64(self.round_deadline_secs())
    }

    fn quorum_window(&self) -> Duration {
        Duration::from_secs_f64(self.ttl)
    }

    fn lease_view(&self) -> Value {
        json!({
            "path": self.store.root.display().to_string(),
            "electionName": self.store.election,
            "identity": self.display,
            "holder": self.holder,
            "fence": self.fence,
            "expiry": self.expiry,
        })
    }

    fn initial_failure_line(&self, error: &str) -> String {
        format!("cluster: filesystem election: first round did not complete ({error}); starting unquorate")
    }

    fn round_failure_line(&self, error: &str) -> String {
        format!("cluster: filesystem election round failed: {error}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn fs_safe_escapes_everything_outside_lowercase_digits_dash_underscore() {
        assert_eq!(fs_safe("cluster/leader"), "cluster%2Fleader");
        assert_eq!(fs_safe("default"), "default");
        assert_eq!(fs_safe("Prod.EU_1-a"), "%50rod%2E%45%55_1-a");
        assert_eq!(fs_safe("é"), "%C3%A9");
        assert_eq!(fs_safe(""), "_");
    }

    #[test]
    fn fs_safe_escapes_the_first_character_of_windows_device_names() {
        assert_eq!(fs_safe("con"), "%63on");
        assert_eq!(fs_safe("nul"), "%6Eul");
        assert_eq!(fs_safe("com1"), "%63om1");
        assert_eq!(fs_safe("lpt9"), "%6Cpt9");
        assert_eq!(fs_safe("com0"), "com0");
        assert_eq!(fs_safe("cons"), "cons");
    }

    #[test]
    fn fs_safe_shortens_long_tokens_with_a_digest() {
        let name = "x".repeat(131);
        let token = fs_safe(&name);
        assert_eq!(token.len(), 130);
        assert!(token.starts_with(&"x".repeat(96)));
        let digest = Sha256::digest(name.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&token[96..], format!("%.{}", &hex[..32]));
        // 130 is kept whole; escapes count towards the length.
        assert_eq!(fs_safe(&"y".repeat(130)), "y".repeat(130));
        assert_eq!(fs_safe(&"/".repeat(44)).len(), 130);
        assert_ne!(fs_safe(&"x".repeat(132)), token);
    }

    #[test]
    fn records_encode_as_compact_sorted_json_and_read_back() {
        let record = LeaseRecord {
            expires_at: 1750000015.123,
            fence: 3,
            holder: "node-a#0a1b2c3d4e5f".to_owned(),
            name: "cluster/leader".to_owned(),
        };
        let bytes = record.encode();
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"{"expiresAt":1750000015.123,"fence":3,"holder":"node-a#0a1b2c3d4e5f","name":"cluster/leader"}"#
        );
        assert_eq!(LeaseRecord::decode(&bytes), Ok(record.clone()));
        let released = LeaseRecord {
            expires_at: 0.0,
            ..record
        };
        assert!(String::from_utf8_lossy(&released.encode()).contains(r#""expiresAt":0.0,"#));
    }

    #[test]
    fn records_written_by_python_read_and_corrupt_ones_do_not() {
        let python =
            br#"{"expiresAt": 1750000015, "fence": 2.0, "holder": "b#1", "name": "n", "x": 1}"#;
        let read = LeaseRecord::decode(python).expect("python's spelling reads");
        assert_eq!((read.expires_at, read.fence), (1750000015.0, 2));
        for bad in [
            &b""[..],
            b"[]",
            b"{\"fence\":1,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":1,\"fence\":-1,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":1,\"fence\":1.5,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":\"soon\",\"fence\":1,\"holder\":\"a\",\"name\":\"n\"}",
            b"{\"expiresAt\":1,\"fence\":1,\"hol",
        ] {
            assert!(
                LeaseRecord::decode(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    fn lease(holder: &str, fence: u64, expires_at: f64) -> LeaseRecord {
        LeaseRecord {
            expires_at,
            fence,
            holder: holder.to_owned(),
            name: "cluster/leader".to_owned(),
        }
    }

    #[test]
    fn acquire_fences_count_takeovers_and_deny_live_foreign_leases() {
        let now = 1000.0;
        assert_eq!(acquire_fence(None, "a#1", now), Some(1));
        assert_eq!(
            acquire_fence(Some(&lease("b#2", 4, 1000.5)), "a#1", now),
            None
        );
        assert_eq!(
            acquire_fence(Some(&lease("b#2", 4, 1000.0)), "a#1", now),
            Some(5)
        );
        assert_eq!(
            acquire_fence(Some(&lease("b#2", 4, 0.0)), "a#1", now),
            Some(5)
        );
        assert_eq!(
            acquire_fence(Some(&lease("a#1", 4, 1010.0)), "a#1", now),
            Some(4)
        );
        assert_eq!(
            acquire_fence(Some(&lease("a#1", 4, 0.0)), "a#1", now),
            Some(5)
        );
    }

    #[test]
    fn renewals_need_the_same_holder_and_fence_and_no_release() {
        let held = lease("a#1", 4, 1010.0);
        assert!(
            may_renew(Some(&lease("a#1", 4, 990.0)), &held),
            "a hair past expiry is fine"
        );
        assert!(
            !may_renew(Some(&lease("a#1", 4, 0.0)), &held),
            "released stays released"
        );
        assert!(!may_renew(Some(&lease("a#1", 5, 1010.0)), &held));
        assert!(!may_renew(Some(&lease("b#2", 4, 1010.0)), &held));
        assert!(!may_renew(None, &held));
    }

    #[test]
    fn challengers_wait_a_second_past_the_written_expiry() {
        let now = 1000.0;
        assert_eq!(sighting(None, "a#1", now), Sighting::Free);
        assert_eq!(
            sighting(Some(&lease("b#2", 1, 1005.0)), "a#1", now),
            Sighting::Held
        );
        assert_eq!(
            sighting(Some(&lease("b#2", 1, 999.5)), "a#1", now),
            Sighting::Held
        );
        assert_eq!(
            sighting(Some(&lease("b#2", 1, 999.0)), "a#1", now),
            Sighting::Free
        );
        assert_eq!(
            sighting(Some(&lease("a#1", 1, 10.0)), "a#1", now),
            Sighting::Ours
        );
    }

    #[test]
    fn expiry_is_shown_the_way_python_prints_it() {
        assert_eq!(
            iso_expiry(1782241215.123456).as_deref(),
            Some("2026-06-23T19:00:15.123456+00:00")
        );
        assert_eq!(
            iso_expiry(1782241215.0).as_deref(),
            Some("2026-06-23T19:00:15+00:00")
        );
        assert_eq!(iso_expiry(0.0), None);
    }

    #[test]
    fn roots_are_absolute_and_normalised_by_name() {
        assert_eq!(absolute_root("/srv/./a/../b/"), PathBuf::from("/srv/b"));
        let relative = absolute_root("shared");
        assert!(relative.is_absolute() && relative.ends_with("shared"));
    }

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
}
