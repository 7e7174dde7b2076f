//! Durable key/value, monotonic cursors and idempotency claims: each a
//! document per key in the scope's namespace (`kv/<scope>`,
//! `cursor/<scope>`, `idem/<scope>`), changed under the document lock so
//! racing nodes on a shared store agree.

use super::docs::{delete_document, list_documents, mutate_document, read_document, DocChange};
use super::error::JobStateError;
use super::rules::{check_size, claim_still_held, cursor_step, require_scope, Incomparable};
use super::{CURSOR_NS_PREFIX, IDEM_NS_PREFIX, KV_NS_PREFIX};
use crate::pyjson::{PyDict, PyJson, PyString, PyText};
use crate::state::format::wall_now;
use crate::state::store::Store;

/// The namespace `prefix + scope`.
fn namespace(prefix: &str, scope: &(impl PyText + ?Sized)) -> PyString {
    PyString::prefixed(prefix, scope)
}

/// A stored value as the job API returns it: the body's `value` and
/// `updatedAt` as stored (`null` when a field is missing).
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The value (a stored `null` is a present key whose value is null).
    pub value: PyJson,
    /// When it was written (epoch seconds, a float as written).
    pub updated_at: PyJson,
}

impl Stored {
    fn of(body: &PyDict) -> Stored {
        Stored {
            value: body.get("value").cloned().unwrap_or(PyJson::Null),
            updated_at: body.get("updatedAt").cloned().unwrap_or(PyJson::Null),
        }
    }
}

/// One key of [`kv_list`].
#[derive(Debug, Clone, PartialEq)]
pub struct KvEntry {
    /// The body's `key` (`null` when missing).
    pub key: PyJson,
    /// The value.
    pub value: PyJson,
    /// When it was written.
    pub updated_at: PyJson,
}

/// The value of `key` in `scope`, read without a lock (a document that
/// does not read counts as absent). 404
/// `"key {key!r} is not set in scope {scope!r}"` when absent.
pub fn kv_get(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> Result<Stored, JobStateError> {
    read_stored(store, KV_NS_PREFIX, "key", scope, key)
}

/// The stored value of document `key` in namespace `prefix + scope`,
/// read without a lock; absent (or unreadable) is the original's 404
/// `"{what} {key!r} is not set in scope {scope!r}"`.
fn read_stored(
    store: &Store,
    prefix: &str,
    what: &str,
    scope: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> Result<Stored, JobStateError> {
    require_scope(scope)?;
    match read_document(store, &namespace(prefix, scope), key) {
        Some(body) => Ok(Stored::of(&body)),
        None => Err(JobStateError::NotFound(format!(
            "{what} {} is not set in scope {}",
            PyString::of(key).repr(),
            PyString::of(scope).repr()
        ))),
    }
}

/// Sets `key` in `scope` to `value` (last write wins, under the key's
/// lock); returns the `updatedAt` written. First the value's
/// portability and size (`maxValueBytes`, 0: no limit, see
/// [`check_size`] with kind `value`), then the scope.
pub fn kv_set(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
    value: &PyJson,
    max_bytes: u64,
) -> Result<f64, JobStateError> {
    check_size("value", value, max_bytes)?;
    let now = wall_now();
    let body = PyDict::from_iter([
        ("key", PyJson::Str(PyString::of(key))),
        ("value", value.clone()),
        ("updatedAt", PyJson::Float(now)),
    ]);
    require_scope(scope)?;
    mutate_document(store, &namespace(KV_NS_PREFIX, scope), key, |_| {
        Ok((DocChange::Put(body), ()))
    })?;
    Ok(now)
}

/// Deletes `key` from `scope`; whether it existed.
pub fn kv_delete(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> Result<bool, JobStateError> {
    require_scope(scope)?;
    delete_document(store, &namespace(KV_NS_PREFIX, scope), key)
}

/// Every key of `scope` with its value, sorted by the text of the key
/// (Python's `str()`; a body without one sorts as `""`). Documents that
/// do not read are left out.
pub fn kv_list(
    store: &Store,
    scope: &(impl PyText + ?Sized),
) -> Result<Vec<KvEntry>, JobStateError> {
    require_scope(scope)?;
    let mut bodies: Vec<(PyString, KvEntry)> =
        list_documents(store, &namespace(KV_NS_PREFIX, scope))?
            .into_iter()
            .map(|body| {
                let sort_key = body
                    .get("key")
                    .map_or_else(PyString::default, PyJson::py_str);
                let stored = Stored::of(&body);
                let entry = KvEntry {
                    key: body.get("key").cloned().unwrap_or(PyJson::Null),
                    value: stored.value,
                    updated_at: stored.updated_at,
                };
                (sort_key, entry)
            })
            .collect();
    // Stable, as Python's sorted(): equal texts keep file-name order.
    bodies.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(bodies.into_iter().map(|(_, entry)| entry).collect())
}

/// Cursor `name` of `scope`, read without a lock. 404
/// `"cursor {name!r} is not set in scope {scope!r}"` when absent.
pub fn cursor_get(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    name: &(impl PyText + ?Sized),
) -> Result<Stored, JobStateError> {
    read_stored(store, CURSOR_NS_PREFIX, "cursor", scope, name)
}

/// Moves cursor `name` of `scope` to `value` if that is greater than
/// what it holds (Python's comparison), or to `value` anyway with
/// `force`, under the cursor's lock; returns the value it holds
/// afterwards and whether it moved (a move is written with a fresh
/// `updatedAt`; no move writes nothing). First the value's portability
/// and size ([`check_size`], kind `cursor value`), then the scope; a
/// value the stored one cannot be compared with is the 409 of
/// [`cursor_step`].
pub fn cursor_advance(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    name: &(impl PyText + ?Sized),
    value: &PyJson,
    force: bool,
    max_bytes: u64,
) -> Result<(PyJson, bool), JobStateError> {
    check_size("cursor value", value, max_bytes)?;
    let now = wall_now();
    require_scope(scope)?;
    mutate_document(
        store,
        &namespace(CURSOR_NS_PREFIX, scope),
        name,
        |current| {
            let cur = current.and_then(|body| body.get("value"));
            let (new, moved) = cursor_step(current.is_some(), cur, value, force, name)?;
            if !moved {
                return Ok((DocChange::Keep, (new, false)));
            }
            let body = PyDict::from_iter([
                ("name", PyJson::Str(PyString::of(name))),
                ("value", new.clone()),
                ("updatedAt", PyJson::Float(now)),
            ]);
            Ok((DocChange::Put(body), (new, true)))
        },
    )
}

/// The outcome of [`idempotency_claim`].
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// This caller won the claim (and should do the work).
    pub fresh: bool,
    /// When the standing claim was made: now for a fresh one, else the
    /// stored `claimedAt` (`null` when missing).
    pub claimed_at: PyJson,
}

/// Claims `key` in `scope` once, fleet-wide, under the key's lock: fresh
/// when no claim stands (none, or its `expiresAt` is at or before now),
/// writing `claimedAt` now and, for `ttl > 0`, `expiresAt` = now + ttl
/// (`ttl <= 0`: a permanent claim); otherwise not fresh, nothing written.
pub fn idempotency_claim(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
    ttl: f64,
) -> Result<Claim, JobStateError> {
    let now = wall_now();
    require_scope(scope)?;
    mutate_document(store, &namespace(IDEM_NS_PREFIX, scope), key, |current| {
        if let Some(body) = current {
            let held = claim_still_held(body.get("expiresAt"), now).map_err(|Incomparable| {
                JobStateError::Internal(format!(
                    "idempotency claim {} holds an expiresAt that is not a number",
                    PyString::of(key).repr()
                ))
            })?;
            if held {
                let claimed_at = body.get("claimedAt").cloned().unwrap_or(PyJson::Null);
                return Ok((
                    DocChange::Keep,
                    Claim {
                        fresh: false,
                        claimed_at,
                    },
                ));
            }
        }
        let mut body = PyDict::from_iter([
            ("key", PyJson::Str(PyString::of(key))),
            ("claimedAt", PyJson::Float(now)),
        ]);
        if ttl > 0.0 {
            body.insert("expiresAt", PyJson::Float(now + ttl));
        }
        Ok((
            DocChange::Put(body),
            Claim {
                fresh: true,
                claimed_at: PyJson::Float(now),
            },
        ))
    })
}

/// Drops the claim on `key` in `scope` (expired or not, whoever made
/// it); whether one existed.
pub fn idempotency_release(
    store: &Store,
    scope: &(impl PyText + ?Sized),
    key: &(impl PyText + ?Sized),
) -> Result<bool, JobStateError> {
    require_scope(scope)?;
    delete_document(store, &namespace(IDEM_NS_PREFIX, scope), key)
}
