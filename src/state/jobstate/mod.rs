//! The job-facing state of the loopback job API, over the store in the
//! original's formats (so the Python daemon and this one share a store):
//! durable key/value, monotonic cursors and idempotency claims (one
//! document per key, changed under its `flock`), named artifacts
//! (content-addressed blobs and per-scope record streams), and the names
//! of the leases job locks take. Every operation is a blocking function
//! on a [`Store`](crate::state::store::Store) (the job API runs them off
//! its event loop) returning a [`JobStateError`] that carries the HTTP
//! status and the original's exact text.
//!
//! Values are Python's JSON values ([`PyJson`](crate::pyjson::PyJson)): a
//! job's request is read as the original's `json.loads` reads it, judged
//! by its rules (the fleet portability gate, the size limit measured as
//! its default install encodes, Python's comparisons for cursors) and
//! written as its default encoder writes.

pub mod artifacts;
pub mod docs;
pub mod error;
pub mod ops;
pub mod rules;

pub use artifacts::{artifact_get, artifact_list, artifact_put, Fetched, Listed, Published};
pub use error::JobStateError;
pub use ops::{
    cursor_advance, cursor_get, idempotency_claim, idempotency_release, kv_delete, kv_get, kv_list,
    kv_set, Claim, KvEntry, Stored,
};

/// The document namespace prefix of key/value state (`kv/<scope>`).
pub const KV_NS_PREFIX: &str = "kv/";
/// The document namespace prefix of cursors (`cursor/<scope>`).
pub const CURSOR_NS_PREFIX: &str = "cursor/";
/// The document namespace prefix of idempotency claims (`idem/<scope>`).
pub const IDEM_NS_PREFIX: &str = "idem/";
/// The record stream prefix of artifacts (`artifacts/<scope>`).
pub const ARTIFACT_STREAM_PREFIX: &str = "artifacts/";
/// The shared scope every job may use.
pub const GLOBAL_SCOPE: &str = "global";
/// The lease name prefix of job locks.
pub const LOCK_LEASE_PREFIX: &str = "lock/";

/// The lease a job lock takes for permit `slot` (0-based):
/// `lock/<scope>/<name>#<slot>`.
pub fn lock_lease_name(scope: &str, name: &str, slot: u32) -> String {
    format!("{LOCK_LEASE_PREFIX}{scope}/{name}#{slot}")
}

#[cfg(test)]
mod tests;
