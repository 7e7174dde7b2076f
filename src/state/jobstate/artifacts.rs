//! Named artifacts: payloads in the content-addressed blob store
//! (`blobs/<sha[0:2]>/<sha>.blob`, raw bytes, identical payloads stored
//! once) and one immutable record per publish in the scope's stream
//! `artifacts/<scope>` (`{"at","name","sha256","size"}`), the newest
//! record of a name being the artifact. Publishing prunes the records a
//! newer one superseded (see [`Store::append_latest_by`]); the collector
//! sweeps blobs no record names.

use super::error::JobStateError;
use super::rules::{portability_error, require_scope};
use super::ARTIFACT_STREAM_PREFIX;
use crate::pyjson::{PyJson, PyString, PyText};
use crate::state::format::wall_now;
use crate::state::stats::Op;
use crate::state::store::Store;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;

/// Whether `digest` is a blob name: 64 lowercase hex digits (checked
/// before any path is built from a record's text).
pub fn valid_digest(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The path of blob `digest`, or None when it is not a valid digest.
pub fn blob_path(store: &Store, digest: &str) -> Option<PathBuf> {
    valid_digest(digest).then(|| {
        store
            .base()
            .join("blobs")
            .join(&digest[..2])
            .join(format!("{digest}.blob"))
    })
}

/// The lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Stores `data` as a blob (one `blob-put` operation); returns its
/// digest. A blob already there is not rewritten, only its modification
/// time refreshed (the orphan sweep's age guard: the record naming it is
/// about to land).
pub fn blob_put(store: &Store, data: &[u8]) -> std::io::Result<String> {
    let digest = sha256_hex(data);
    let path = blob_path(store, &digest)
        .ok_or_else(|| std::io::Error::other("a computed digest is always valid"))?;
    store.counted(Op::BlobPut, || {
        if path.exists() {
            if let Ok(file) = std::fs::File::open(&path) {
                let _ = file.set_modified(std::time::SystemTime::now());
            }
            return Ok(());
        }
        if let Some(shard) = path.parent() {
            store.make_dirs_durable(shard)?;
        }
        store.write_atomic(&path, data)
    })?;
    Ok(digest)
}

/// The payload of blob `digest` (one `blob-get` operation): None when
/// absent; an invalid digest is a 500 (a record naming garbage), a read
/// failure a 503.
pub fn blob_get(store: &Store, digest: &str) -> Result<Option<Vec<u8>>, JobStateError> {
    let Some(path) = blob_path(store, digest) else {
        return Err(JobStateError::Internal(format!(
            "invalid blob digest: {}",
            crate::pyfmt::repr_str(digest)
        )));
    };
    store.counted(Op::BlobGet, || match std::fs::read(&path) {
        Ok(data) => Ok(Some(data)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => {
            tracing::warn!(
                target: "cronstable::state",
                "state: cannot read blob {digest} ({e})"
            );
            Err(JobStateError::Unavailable(e))
        }
    })
}

/// The stream of `scope`'s artifacts. A scope with a lone surrogate
/// cannot name a stream here (the original could; no configured job
/// name holds one, so no job is authorized for it).
fn stream_of(scope: &(impl PyText + ?Sized)) -> Result<String, JobStateError> {
    let scope = PyString::of(scope);
    match scope.as_str() {
        Some(text) => Ok(format!("{ARTIFACT_STREAM_PREFIX}{text}")),
        None => Err(JobStateError::BadRequest(
            portability_error(&PyJson::Str(scope)).unwrap_or_default(),
        )),
    }
}

/// What [`artifact_put`] stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The payload's SHA-256, lowercase hex.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
}

/// Publishes `data` as artifact `name` of `scope`. First the size
/// (`maxArtifactBytes`, 0: no limit): 413
/// `"artifact of {n} bytes exceeds the configured limit of {max} bytes"`;
/// then the scope; then the blob and the record (`at` now).
pub fn artifact_put(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    name: &(impl PyText + ?Sized),
    data: &[u8],
    max_bytes: u64,
) -> Result<Published, JobStateError> {
    let size = data.len() as u64;
    if max_bytes > 0 && size > max_bytes {
        return Err(JobStateError::TooLarge(format!(
            "artifact of {size} bytes exceeds the configured limit of {max_bytes} bytes"
        )));
    }
    require_scope(scope)?;
    let stream = stream_of(scope)?;
    let sha256 = blob_put(store, data)?;
    // As the original: a name no node can write fails at the record,
    // after the blob (which the sweep reclaims).
    let name = PyString::of(name);
    let Some(name_text) = name.as_str() else {
        return Err(JobStateError::BadRequest(
            portability_error(&PyJson::Str(name)).unwrap_or_default(),
        ));
    };
    let record = json!({"name": name_text, "sha256": sha256, "size": size, "at": wall_now()});
    store.append_latest_by(&stream, &record, "name")?;
    Ok(Published { sha256, size })
}

/// An artifact as [`artifact_get`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The payload.
    pub data: Vec<u8>,
    /// The `X-Cronstable-Sha256` header: the record's `sha256` as
    /// Python's `str()` writes it.
    pub sha256: String,
    /// The `X-Cronstable-Size` header: the record's `size` as `str()`
    /// writes it (the payload's length when the record has none).
    pub size: String,
}

/// The newest record of `name` in `stream`, newest first (records that
/// do not read are skipped, corrupt ones quarantined).
fn newest_record(
    store: &Store,
    stream: &str,
    name: &PyString,
) -> Result<Option<Map<String, Value>>, JobStateError> {
    let mut found = None;
    store.scan_newest_first(stream, |_, data| {
        let matches = data
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.as_bytes() == name.as_bytes());
        if matches {
            found = Some(data);
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(found)
}

/// The newest version of artifact `name` in `scope`. 404
/// `"artifact {name!r} not found in scope {scope!r}"` when never
/// published; 410 `"artifact {name!r} record survives but its payload
/// blob is gone (garbage collected)"` when its blob was collected.
pub fn artifact_get(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    name: &(impl PyText + ?Sized),
) -> Result<Fetched, JobStateError> {
    require_scope(scope)?;
    let stream = stream_of(scope)?;
    let name = PyString::of(name);
    let Some(record) = newest_record(store, &stream, &name)? else {
        return Err(JobStateError::NotFound(format!(
            "artifact {} not found in scope {}",
            name.repr(),
            PyString::of(scope).repr()
        )));
    };
    let digest = record
        .get("sha256")
        .map(PyJson::from_serde)
        .filter(PyJson::is_truthy);
    let data = match digest {
        Some(digest) => blob_get(store, &digest.py_str().to_string_lossy())?,
        None => None,
    };
    let Some(data) = data else {
        return Err(JobStateError::Gone(format!(
            "artifact {} record survives but its payload blob is gone (garbage collected)",
            name.repr()
        )));
    };
    let header = |field: &str, default: PyJson| {
        record
            .get(field)
            .map_or(default, PyJson::from_serde)
            .py_str()
            .to_string_lossy()
    };
    Ok(Fetched {
        sha256: header("sha256", PyJson::from("")),
        size: header("size", PyJson::Int(data.len() as i128)),
        data,
    })
}

/// One artifact of [`artifact_list`]: its newest record's fields
/// (`null` when one is missing).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The name.
    pub name: String,
    /// The payload's digest.
    pub sha256: PyJson,
    /// The payload's size.
    pub size: PyJson,
    /// When it was published (epoch seconds).
    pub at: PyJson,
}

/// The newest record of every artifact name in `scope`, sorted by name.
pub fn artifact_list(
    store: &Store,
    scope: &(impl PyText + ?Sized),
) -> Result<Vec<Listed>, JobStateError> {
    require_scope(scope)?;
    let stream = stream_of(scope)?;
    let mut newest: BTreeMap<String, Listed> = BTreeMap::new();
    for (_, data) in store.read(&stream)?.into_iter().rev() {
        let Some(name) = data.get("name").and_then(Value::as_str) else {
            continue;
        };
        if newest.contains_key(name) {
            continue;
        }
        let field = |key: &str| data.get(key).map_or(PyJson::Null, PyJson::from_serde);
        newest.insert(
            name.to_owned(),
            Listed {
                name: name.to_owned(),
                sha256: field("sha256"),
                size: field("size"),
                at: field("at"),
            },
        );
    }
    // BTreeMap orders by UTF-8 bytes: Python's code point order.
    Ok(newest.into_values().collect())
}
