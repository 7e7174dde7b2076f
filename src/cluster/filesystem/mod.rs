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

mod backend;
mod rules;
mod store;
#[cfg(test)]
mod tests;

pub use backend::FilesystemLease;
pub(crate) use rules::wall_now;
pub use rules::{
    absolute_root, acquire_fence, fs_safe, iso_expiry, may_renew, sighting, LeaseRecord, Sighting,
};
pub(crate) use store::{off_thread, Store};
