//! The election's files and the blocking operations on them, made under
//! the lease lock.

use super::rules::{absolute_root, acquire_fence, fs_safe, may_renew, wall_now, LeaseRecord};
use crate::cluster::{pauses, records};
use crate::config::cluster::FilesystemSettings;
use crate::platform;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The subdirectories of a store root (the original's state store layout;
/// the election itself uses `leases/` and `tmp/`).
const SUBDIRS: [&str; 6] = ["records", "leases", "quarantine", "tmp", "docs", "blobs"];

/// The election's files and the blocking operations on them (the slot
/// store of `cluster::slots` uses one per job slot).
pub(crate) struct Store {
    /// The configured directory, absolute (what `GET /cluster` shows).
    pub(super) root: PathBuf,
    /// `root/fs_safe(deploymentId)`.
    pub(crate) base: PathBuf,
    pub(super) election: String,
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
            instance: crate::cluster::process_token(),
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
        crate::state::lease::with_lock(&self.lock_path, work)
    }

    /// Reads the lease file: None when absent; anything else that fails
    /// (I/O, bad content) is `Unreadable`.
    fn read_file(&self) -> Result<Option<LeaseRecord>, Unreadable> {
        crate::state::lease::read_lease(&self.lease_path).map_err(Unreadable)
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
        crate::state::format::write_via_temp(&tmp, dest, bytes, durable)
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
    pub(super) fn read_stream(
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
    pub(super) fn mark_reboot_ran(
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
    pub(super) fn record_fire(
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

    /// Records a pause or resume of `job` unless the stream already has
    /// it or a newer mark; then prunes the records it supersedes and the
    /// marks that lapsed (pauses are rare: every append prunes).
    pub(super) fn record_pause(
        &self,
        held: &LeaseRecord,
        job: &str,
        mark: &crate::scheduler::pause::PauseMark,
    ) -> std::io::Result<bool> {
        let all = self.read_stream(pauses::PAUSES_STREAM, None)?;
        if pauses::marks_in(&all)
            .get(job)
            .is_some_and(|kept| !mark.supersedes(kept))
        {
            return Ok(true);
        }
        let data = pauses::record_body(job, mark);
        if self
            .append_fenced(held, pauses::PAUSES_STREAM, &data)?
            .is_none()
        {
            return Ok(false);
        }
        let all = self.read_stream(pauses::PAUSES_STREAM, None)?;
        let now = chrono::Utc::now();
        self.delete_records(pauses::PAUSES_STREAM, &pauses::records_to_prune(&all, now));
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
