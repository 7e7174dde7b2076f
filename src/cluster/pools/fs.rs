//! Pool documents in the state store, as the original keeps them: the
//! document of pool `P` is `docs/scheduler-pools/<fs_safe(P)>.doc` under
//! the store's namespace, beside its `.lock` file, changed under an
//! exclusive `flock` of that lock (the store's document layout and
//! locking, shared with the job-facing KV), and replaced by an atomic,
//! fsynced rename. On a mount shared by several hosts the lock is what
//! keeps admissions from overlapping.
//!
//! The body is `{"data":<pool>,"schemaVersion":"v1"}`, compact with keys
//! sorted at every level, as the original writes it (non-ASCII text is
//! written as UTF-8 rather than escaped; Python's reader takes both).
//! Read and written with `serde_json` directly rather than through the
//! store's Python-value model: a pool's `entries` object holds up to
//! 10,000 keys, and the generic model's ordered dict looks each key up
//! in turn.

use super::{Change, PoolDocs};
use crate::scheduler::pools::queue::PoolDoc;
use crate::scheduler::pools::{PoolError, NAMESPACE};
use crate::state::format::SCHEMA_VERSION;
use crate::state::jobstate::docs::doc_paths;
use crate::state::lease::with_touched_lock;
use crate::state::stats::Op;
use crate::state::store::Store;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The pool documents of one open store.
pub struct FsPoolDocs {
    store: Arc<Store>,
}

impl FsPoolDocs {
    /// Pool documents in `store`.
    pub fn new(store: Arc<Store>) -> FsPoolDocs {
        FsPoolDocs { store }
    }
}

/// The versioned envelope of a stored document.
#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    data: T,
    #[serde(rename = "schemaVersion")]
    schema_version: String,
}

/// A stored document's bytes as a pool document; why not, for the log.
pub fn decode(pool: &str, bytes: &[u8]) -> Result<PoolDoc, String> {
    let envelope: Envelope<PoolDoc> = serde_json::from_slice(bytes)
        .map_err(|e| format!("pool {pool:?}: not a pool document: {e}"))?;
    if envelope.schema_version != SCHEMA_VERSION {
        return Err(format!(
            "pool {pool:?}: unknown schema version {:?}",
            envelope.schema_version
        ));
    }
    Ok(envelope.data)
}

/// A pool document as the bytes to store (keys sorted: a `Value`'s maps
/// are ordered by key).
pub fn encode(doc: &PoolDoc) -> Result<Vec<u8>, String> {
    let data = serde_json::to_value(doc).map_err(|e| e.to_string())?;
    serde_json::to_vec(&Envelope {
        data,
        schema_version: SCHEMA_VERSION.to_owned(),
    })
    .map_err(|e| e.to_string())
}

fn unavailable(pool: &str, e: impl std::fmt::Display) -> PoolError {
    PoolError::Unavailable(format!("pool {pool:?}: {e}"))
}

impl PoolDocs for FsPoolDocs {
    fn mutate(&self, pool: &str, change: Change<'_>) -> Result<(), PoolError> {
        let (dir, lock, path) = doc_paths(&self.store, NAMESPACE, pool);
        self.store.counted(Op::DocMutate, || {
            self.store
                .make_dirs_durable(&dir)
                .map_err(|e| unavailable(pool, e))?;
            with_touched_lock(&lock, || {
                let current = match std::fs::read(&path) {
                    Ok(bytes) => Some(decode(pool, &bytes).map_err(PoolError::Unavailable)?),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(unavailable(pool, e)),
                };
                // A refusal of the change writes nothing.
                if let Some(next) = change(current)? {
                    let bytes = encode(&next).map_err(|e| unavailable(pool, e))?;
                    self.store
                        .write_atomic(&path, &bytes)
                        .map_err(|e| unavailable(pool, e))?;
                }
                Ok(())
            })
            .map_err(|e| unavailable(pool, e))?
        })
    }
}
