//! Mutable documents of the store, in the original's layout: one JSON
//! file per key, `docs/<namespace>/<key>.doc`, beside the `.lock` side
//! file every change takes an exclusive `flock` on (the `.doc` itself is
//! replaced by a rename, so it cannot carry the lock). A change reads the
//! document strictly under the lock (a document that does not read fails
//! the change rather than being overwritten); plain reads and listings
//! take no lock and treat an unreadable document as absent.
//!
//! Content: `{"data":<body>,"schemaVersion":"v1"}`, compact, keys sorted
//! at every level, non-ASCII escaped (the original's default encoder;
//! raw UTF-8 from an orjson node reads the same).

use super::error::JobStateError;
use super::rules::{portability_error, INT_MAX, INT_MIN};
use crate::pyjson::{loads, Dumps, PyDict, PyJson, PyText};
use crate::state::format::{fs_safe_bytes, SCHEMA_VERSION};
use crate::state::lease::with_touched_lock;
use crate::state::stats::Op;
use crate::state::store::Store;
use std::convert::Infallible;
use std::path::{Path, PathBuf};

/// What a change does to the document it read.
#[derive(Debug, Clone, PartialEq)]
pub enum DocChange {
    /// Leave it as it is (no write).
    Keep,
    /// Write this body.
    Put(PyDict),
    /// Delete it (the `.lock` stays: on a shared mount a waiter's check
    /// that its lock file is still the named one can be answered from a
    /// stale cache; the collector removes idle orphans).
    Delete,
}

/// The directory of `namespace`.
pub fn namespace_dir(store: &Store, namespace: &(impl PyText + ?Sized)) -> PathBuf {
    store
        .base()
        .join("docs")
        .join(fs_safe_bytes(namespace.wtf8()))
}

/// The `(directory, .lock, .doc)` paths of one document.
pub fn doc_paths(
    store: &Store,
    namespace: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> (PathBuf, PathBuf, PathBuf) {
    let dir = namespace_dir(store, namespace);
    let token = fs_safe_bytes(key.wtf8());
    let lock = dir.join(format!("{token}.lock"));
    let doc = dir.join(format!("{token}.doc"));
    (dir, lock, doc)
}

/// A document file's body, or why it does not read: not UTF-8, not JSON
/// (as Python's `json.loads` reads it), an integer literal outside the
/// portable 64-bit range (the original's reader refuses those), not an
/// object, a `schemaVersion` other than `"v1"`, or a `data` that is not
/// an object.
pub fn decode_document(bytes: &[u8]) -> Result<PyDict, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let value = loads(text).map_err(|e| e.to_string())?;
    if let Some(literal) = wide_int(&value) {
        return Err(format!(
            "integer literal {literal} is outside the portable signed/unsigned 64-bit range \
             [-9223372036854775808, 18446744073709551615] (the stdlib parser preserves it \
             exactly while orjson silently narrows it to a lossy float)"
        ));
    }
    let PyJson::Dict(mut doc) = value else {
        return Err(NOT_A_DOCUMENT.to_owned());
    };
    let versioned = matches!(
        doc.get("schemaVersion"),
        Some(PyJson::Str(v)) if v.as_bytes() == SCHEMA_VERSION.as_bytes()
    );
    match doc.remove("data") {
        Some(PyJson::Dict(data)) if versioned => Ok(data),
        _ => Err(NOT_A_DOCUMENT.to_owned()),
    }
}

/// Why a JSON file is not a document (the original's wording).
const NOT_A_DOCUMENT: &str = "unknown-schema-or-not-a-document";

/// The first integer of `value` outside the portable range, as text.
fn wide_int(value: &PyJson) -> Option<String> {
    match value {
        PyJson::Int(n) if *n < INT_MIN || *n > INT_MAX => Some(n.to_string()),
        PyJson::BigInt(digits) => Some(digits.clone()),
        PyJson::List(items) => items.iter().find_map(wide_int),
        PyJson::Dict(dict) => dict.iter().find_map(|(_, v)| wide_int(v)),
        _ => None,
    }
}

/// A document file's bytes for `body`, or the portability violation
/// that keeps it from being written (the 400 text).
pub fn encode_document(body: &PyDict) -> Result<Vec<u8>, String> {
    let doc = PyJson::object([
        ("schemaVersion", PyJson::from(SCHEMA_VERSION)),
        ("data", PyJson::Dict(body.clone())),
    ]);
    if let Some(detail) = portability_error(&doc) {
        return Err(detail);
    }
    Ok(doc.dumps(Dumps::SORTED).into_bytes())
}

/// Reads a document file without its lock: None when it is absent or
/// does not read (for any reason).
fn read_lenient(path: &Path) -> Option<PyDict> {
    decode_document(&std::fs::read(path).ok()?).ok()
}

/// Reads a document file under its lock: None only when it is absent.
fn read_strict(path: &Path) -> Result<Option<PyDict>, JobStateError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(JobStateError::Unavailable(e)),
    };
    decode_document(&bytes).map(Some).map_err(|why| {
        JobStateError::Unavailable(std::io::Error::other(format!(
            "document {} does not read: {why}",
            path.display()
        )))
    })
}

fn never<T>(result: Result<T, Infallible>) -> T {
    match result {
        Ok(value) => value,
        Err(never) => match never {},
    }
}

/// The body of document `key` in `namespace`, read without its lock
/// (one `doc-read` operation): None when absent, and also when it does
/// not read (best effort, as the original's plain read).
pub fn read_document(
    store: &Store,
    namespace: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> Option<PyDict> {
    let (_, _, doc) = doc_paths(store, namespace, key);
    never(store.counted(Op::DocRead, || Ok(read_lenient(&doc))))
}

/// Every readable document body of `namespace`, in file-name order (one
/// `doc-list` operation); documents that do not read are skipped. A
/// namespace directory that cannot be listed (other than absent) is the
/// store failing.
pub fn list_documents(
    store: &Store,
    namespace: &(impl PyText + ?Sized),
) -> Result<Vec<PyDict>, JobStateError> {
    let dir = namespace_dir(store, namespace);
    store.counted(Op::DocList, || {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(JobStateError::Unavailable(e)),
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".doc"))
            .collect();
        names.sort();
        Ok(names
            .iter()
            .filter_map(|name| read_lenient(&dir.join(name)))
            .collect())
    })
}

/// Changes document `key` of `namespace` under its lock (one
/// `doc-mutate` operation, paced by `maxOpsPerSecond`): creates the
/// namespace directory, takes the `.lock` (touching its modification
/// time), reads the document strictly, hands its body (None: absent) to
/// `transform`, and applies the [`DocChange`] it returns (an atomic
/// rename, or an unlink made durable). Returns `transform`'s result.
///
/// A document that does not read, and any I/O failure, is
/// [`JobStateError::Unavailable`] (nothing written); an error of
/// `transform` is returned as it is; a body that is not portable is the
/// 400 of its violation (nothing written).
pub fn mutate_document<R>(
    store: &Store,
    namespace: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
    transform: impl FnOnce(Option<&PyDict>) -> Result<(DocChange, R), JobStateError>,
) -> Result<R, JobStateError> {
    let (dir, lock, doc) = doc_paths(store, namespace, key);
    store.counted(Op::DocMutate, || {
        store.make_dirs_durable(&dir)?;
        with_touched_lock(&lock, || {
            let current = read_strict(&doc)?;
            let (change, result) = transform(current.as_ref())?;
            match change {
                DocChange::Keep => {}
                DocChange::Delete => match std::fs::remove_file(&doc) {
                    // Without the directory sync a deleted key can come
                    // back after a power loss, undoing a release.
                    Ok(()) => crate::platform::sync_dir(&dir)?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(JobStateError::Unavailable(e)),
                },
                DocChange::Put(body) => {
                    let bytes = encode_document(&body).map_err(JobStateError::BadRequest)?;
                    store.write_atomic(&doc, &bytes)?;
                }
            }
            Ok(result)
        })?
    })
}

/// Deletes document `key` of `namespace` under its lock; whether a
/// (readable) document existed. One that does not read is
/// [`JobStateError::Unavailable`] and stays.
pub fn delete_document(
    store: &Store,
    namespace: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> Result<bool, JobStateError> {
    mutate_document(store, namespace, key, |current| {
        Ok((DocChange::Delete, current.is_some()))
    })
}
