//! Pool documents in the state store, as the original keeps them: the
//! document of pool `P` is `docs/scheduler-pools/<fs_safe(P)>.doc` under
//! the store's namespace, beside its `.lock` file, changed under an
//! exclusive `flock` of that lock (the store's document machinery, shared
//! with the job-facing KV). On a mount shared by several hosts the lock
//! is what keeps admissions from overlapping.

use super::{Change, PoolDocs};
use crate::pyjson::{PyDict, PyJson};
use crate::scheduler::pools::queue::PoolDoc;
use crate::scheduler::pools::{PoolError, NAMESPACE};
use crate::state::jobstate::docs::{mutate_document, DocChange};
use crate::state::jobstate::JobStateError;
use crate::state::store::Store;
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

/// A stored body as a pool document; why not, for the log.
pub fn decode(pool: &str, body: &PyDict) -> Result<PoolDoc, String> {
    let value = PyJson::Dict(body.clone())
        .to_serde()
        .ok_or_else(|| format!("pool {pool:?}: a value that is not portable JSON"))?;
    serde_json::from_value(value).map_err(|e| format!("pool {pool:?}: not a pool document: {e}"))
}

/// A pool document as the body to store.
pub fn encode(doc: &PoolDoc) -> Result<PyDict, String> {
    match serde_json::to_value(doc).map(|v| PyJson::from_serde(&v)) {
        Ok(PyJson::Dict(body)) => Ok(body),
        Ok(_) => Err("a pool document that is not an object".into()),
        Err(e) => Err(e.to_string()),
    }
}

impl PoolDocs for FsPoolDocs {
    fn mutate(&self, pool: &str, change: Change<'_>) -> Result<(), PoolError> {
        let mut refused: Option<PoolError> = None;
        let written = mutate_document(&self.store, NAMESPACE, pool, |current| {
            let doc = match current.map(|body| decode(pool, body)).transpose() {
                Ok(doc) => doc,
                Err(why) => return Err(JobStateError::Unavailable(std::io::Error::other(why))),
            };
            match change(doc) {
                Ok(Some(next)) => {
                    let body = encode(&next).map_err(JobStateError::Internal)?;
                    Ok((DocChange::Put(body), ()))
                }
                Ok(None) => Ok((DocChange::Keep, ())),
                Err(err) => {
                    // The pool's own refusal: nothing is written.
                    refused = Some(err);
                    Ok((DocChange::Keep, ()))
                }
            }
        });
        if let Some(err) = refused {
            return Err(err);
        }
        written.map_err(|e| PoolError::Unavailable(e.log_detail().unwrap_or_else(|| e.to_string())))
    }
}
