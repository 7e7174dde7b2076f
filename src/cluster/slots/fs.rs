//! Slots in a shared directory, in the original's layout, so both daemons
//! can share one store: under `abspath(path)/fs_safe(deploymentId)`, the
//! slot of job `J` is the lease `leases/slots%2F<fs_safe(J)>.lease` (with
//! its `.lock` side file; the same lease file format and locking as the
//! filesystem election), and cancel requests are records in
//! `records/fs_safe("slots/J")/`, one JSON file each
//! (`{"data":{"at":..,"by":..,"fence":N,"kind":"cancel"},"schemaVersion":"v1"}`),
//! the newest eight kept.

use super::{CancelRequest, SlotLease, SlotStore, SlotStoreError};
use crate::cluster::filesystem::{fs_safe, off_thread, wall_now, LeaseRecord, Store};
use crate::config::cluster::FilesystemSettings;
use crate::config::model::sections::Topology;
use crate::platform;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Cancel records kept per job (older ones are pruned).
const RECORDS_KEPT: usize = 8;

/// A challenger counts a written expiry as passed only this long after it
/// by its own clock (the election's margin for skew between hosts).
const SKEW: f64 = 1.0;

/// How long the blocking work of one operation may take before the
/// caller stops waiting (the caller's own bound is the tighter one).
const THREAD_LIMIT: Duration = super::STORE_OP_TIMEOUT;

/// A cancel record's `data`, keys in sorted order (the file is compact
/// JSON with sorted keys, as the original writes it).
#[derive(Debug, Serialize, Deserialize)]
struct CancelData {
    at: String,
    by: String,
    fence: u64,
    kind: String,
}

/// A record file.
#[derive(Debug, Serialize, Deserialize)]
struct RecordFile {
    data: CancelData,
    #[serde(rename = "schemaVersion")]
    schema_version: String,
}

/// The slot store in a directory.
pub struct FsSlotStore {
    inner: Arc<FsInner>,
}

struct FsInner {
    path: String,
    deployment_id: String,
    /// One lease store per job (each knows its file names).
    leases: Mutex<HashMap<String, Arc<Store>>>,
    /// `abspath(path)/fs_safe(deploymentId)`.
    base: PathBuf,
    /// Unique per process, in record and temp file names.
    instance: String,
    seq: AtomicU64,
}

impl FsSlotStore {
    /// The store under `path` (made absolute now) and `deployment_id`.
    pub fn new(path: &str, deployment_id: &str) -> FsSlotStore {
        let base = crate::cluster::filesystem::absolute_root(path).join(fs_safe(deployment_id));
        FsSlotStore {
            inner: Arc::new(FsInner {
                path: path.to_owned(),
                deployment_id: deployment_id.to_owned(),
                leases: Mutex::new(HashMap::new()),
                base,
                instance: crate::cluster::process_token(),
                seq: AtomicU64::new(0),
            }),
        }
    }

    /// The directory slots live in (`abspath(path)/fs_safe(deploymentId)`).
    pub fn base(&self) -> &std::path::Path {
        &self.inner.base
    }
}

/// The lease name of a job's slot.
pub fn slot_name(job: &str) -> String {
    format!("slots/{job}")
}

impl FsInner {
    fn lease(&self, job: &str) -> Arc<Store> {
        let mut leases = self
            .leases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let store = leases.entry(job.to_owned()).or_insert_with(|| {
            Arc::new(Store::new(&FilesystemSettings {
                path: self.path.clone(),
                election_name: slot_name(job),
                // Not used by the store's operations (the TTL is passed
                // to each); kept equal to the slot default for clarity.
                ttl: super::DEFAULT_TTL,
                deployment_id: self.deployment_id.clone(),
                topology: Topology::Auto,
            }))
        });
        Arc::clone(store)
    }

    fn records_dir(&self, job: &str) -> PathBuf {
        self.base.join("records").join(fs_safe(&slot_name(job)))
    }

    /// The newest record file of a job's stream, parsed; unparsable ones
    /// are skipped (an older readable one still counts).
    fn newest_cancel(&self, job: &str) -> std::io::Result<Option<CancelRequest>> {
        let dir = self.records_dir(job);
        let mut names = match list_json(&dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // Stems start with the zero-padded epoch: name order is time order.
        names.sort();
        for name in names.iter().rev() {
            let Ok(bytes) = std::fs::read(dir.join(name)) else {
                continue;
            };
            let Ok(record) = serde_json::from_slice::<RecordFile>(&bytes) else {
                continue;
            };
            return Ok((record.data.kind == "cancel").then_some(CancelRequest {
                fence: record.data.fence,
                by: record.data.by,
                at: record.data.at,
            }));
        }
        Ok(None)
    }

    fn append_cancel(&self, job: &str, request: CancelRequest) -> std::io::Result<()> {
        let dir = self.records_dir(job);
        platform::create_private_dirs(&dir)?;
        platform::create_private_dirs(&self.base.join("tmp"))?;
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let stem = format!("{:020.6}-{}-{seq:012}", wall_now(), self.instance);
        let body = serde_json::to_vec(&RecordFile {
            data: CancelData {
                at: request.at,
                by: request.by,
                fence: request.fence,
                kind: "cancel".to_owned(),
            },
            schema_version: "v1".to_owned(),
        })
        .map_err(std::io::Error::other)?;
        let tmp = self
            .base
            .join("tmp")
            .join(format!("w-{}-{seq:012}.tmp", self.instance));
        let written = (|| {
            use std::io::Write;
            let mut file = platform::create_private_new(&tmp)?;
            file.write_all(&body)?;
            file.sync_all()?;
            std::fs::rename(&tmp, dir.join(format!("{stem}.json")))
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written?;
        // Prune: only the newest few matter (the holder reads the newest).
        if let Ok(mut names) = list_json(&dir) {
            names.sort();
            let excess = names.len().saturating_sub(RECORDS_KEPT);
            for name in &names[..excess] {
                let _ = std::fs::remove_file(dir.join(name));
            }
        }
        Ok(())
    }
}

fn list_json(dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            names.push(name);
        }
    }
    Ok(names)
}

/// Runs blocking store work off the scheduler's thread.
fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> BoxFuture<'static, Result<T, SlotStoreError>> {
    Box::pin(async move {
        match off_thread(THREAD_LIMIT, work).await {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(e.into()),
            None => Err(SlotStoreError::TimedOut),
        }
    })
}

fn as_slot(record: LeaseRecord, now: f64) -> SlotLease {
    SlotLease {
        live: record.expires_at > now - SKEW,
        holder: record.holder,
        fence: record.fence,
    }
}

impl SlotStore for FsSlotStore {
    fn acquire(
        &self,
        job: &str,
        holder: &str,
        ttl: f64,
    ) -> BoxFuture<'static, Result<Option<u64>, SlotStoreError>> {
        let store = self.inner.lease(job);
        let holder = holder.to_owned();
        blocking(move || {
            store.prepare()?;
            Ok(store.acquire(&holder, ttl)?.map(|record| record.fence))
        })
    }

    fn renew(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
        ttl: f64,
    ) -> BoxFuture<'static, Result<bool, SlotStoreError>> {
        let store = self.inner.lease(job);
        let held = LeaseRecord {
            expires_at: 1.0,
            fence,
            holder: holder.to_owned(),
            name: slot_name(job),
        };
        blocking(move || Ok(store.renew(&held, ttl)?.is_some()))
    }

    fn release(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>> {
        let store = self.inner.lease(job);
        let held = LeaseRecord {
            expires_at: 0.0,
            fence,
            holder: holder.to_owned(),
            name: slot_name(job),
        };
        blocking(move || store.release(&held))
    }

    fn read(&self, job: &str) -> BoxFuture<'static, Result<Option<SlotLease>, SlotStoreError>> {
        let store = self.inner.lease(job);
        blocking(move || Ok(store.read().map(|r| as_slot(r, wall_now()))))
    }

    fn request_cancel(
        &self,
        job: &str,
        request: CancelRequest,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        blocking(move || inner.append_cancel(&job, request))
    }

    fn cancel_request(
        &self,
        job: &str,
    ) -> BoxFuture<'static, Result<Option<CancelRequest>, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        blocking(move || inner.newest_cancel(&job))
    }

    fn fidelity(&self) -> BoxFuture<'static, Result<Option<String>, SlotStoreError>> {
        // The probe needs the directories; any job's store can run it.
        let store = self.inner.lease("");
        blocking(move || {
            store.prepare()?;
            store.lock_fidelity()
        })
    }
}
