//! Leases of the store (`leases/<name>.lease` beside its `.lock`), taken
//! and released under the side file's lock. Lease operations bypass
//! `maxOpsPerSecond`: a claim held back by the throttle could outlive its
//! TTL.

use super::Store;
use crate::state::format::{fs_safe, wall_now};
use crate::state::lease::{acquire_fence, may_renew, read_lease, with_lock, LeaseRecord};
use crate::state::stats::Op;
use std::path::PathBuf;
use std::time::Instant;

impl Store {
    fn lease_paths(&self, name: &str) -> (PathBuf, PathBuf) {
        let dir = self.base.join("leases");
        let safe = fs_safe(name);
        (
            dir.join(format!("{safe}.lock")),
            dir.join(format!("{safe}.lease")),
        )
    }

    fn lease_op<T>(&self, op: Op, work: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        let began = Instant::now();
        let result = work();
        self.stats.record(op, began.elapsed(), result.is_err());
        result
    }

    /// Takes lease `name` for `holder` for `ttl` seconds unless another
    /// holder's unexpired lease stands; `Ok(None)` when denied (held
    /// elsewhere, or the lease file does not read: an unreadable lease is
    /// never a free one).
    pub fn lease_acquire(
        &self,
        name: &str,
        holder: &str,
        ttl: f64,
    ) -> std::io::Result<Option<LeaseRecord>> {
        let (lock, path) = self.lease_paths(name);
        self.lease_op(Op::LeaseAcquire, || {
            with_lock(&lock, || {
                let current = match read_lease(&path) {
                    Ok(current) => current,
                    Err(why) => {
                        tracing::warn!(
                            target: "cronstable::state",
                            "state: lease {name} unreadable ({why}); denying acquire"
                        );
                        return Ok(None);
                    }
                };
                let now = wall_now();
                let Some(fence) = acquire_fence(current.as_ref(), holder, now) else {
                    return Ok(None);
                };
                let record = LeaseRecord {
                    expires_at: now + ttl,
                    fence,
                    holder: holder.to_owned(),
                    name: name.to_owned(),
                };
                self.write_atomic(&path, &record.encode())?;
                Ok(Some(record))
            })?
        })
    }

    /// Releases `held` in place (expiry 0, holder and fence kept, the file
    /// never deleted) if the file still shows it.
    pub fn lease_release(&self, held: &LeaseRecord) -> std::io::Result<()> {
        let (lock, path) = self.lease_paths(&held.name);
        self.lease_op(Op::LeaseRelease, || {
            with_lock(&lock, || {
                let Ok(Some(current)) = read_lease(&path) else {
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
                self.write_atomic(&path, &released.encode())
            })?
        })
    }

    /// Extends `held` to `ttl` seconds from now if the file still shows
    /// it: same holder, same fence, and not released (a renewal racing
    /// its holder's own release must not bring the lease back). A renewal
    /// slightly past expiry is allowed. `Ok(None)` when refused: taken
    /// over, released, gone, unreadable, or the new expiry could not be
    /// written (a renewal that did not land is a failed one).
    pub fn lease_renew(
        &self,
        held: &LeaseRecord,
        ttl: f64,
    ) -> std::io::Result<Option<LeaseRecord>> {
        let (lock, path) = self.lease_paths(&held.name);
        self.lease_op(Op::LeaseRenew, || {
            with_lock(&lock, || {
                let current = match read_lease(&path) {
                    Ok(current) => current,
                    Err(why) => {
                        tracing::warn!(
                            target: "cronstable::state",
                            "state: lease {} unreadable ({why}); denying renew",
                            held.name
                        );
                        return None;
                    }
                };
                if !may_renew(current.as_ref(), held) {
                    return None;
                }
                let renewed = LeaseRecord {
                    expires_at: wall_now() + ttl,
                    ..held.clone()
                };
                if let Err(e) = self.write_atomic(&path, &renewed.encode()) {
                    tracing::warn!(
                        target: "cronstable::state",
                        "state: lease {} write failed ({e}); denying renew",
                        held.name
                    );
                    return None;
                }
                Some(renewed)
            })
        })
    }

    /// An unlocked look at lease `name`: None when absent or released.
    pub fn lease_read(&self, name: &str) -> std::io::Result<Option<LeaseRecord>> {
        let (_, path) = self.lease_paths(name);
        self.lease_op(Op::LeaseRead, || {
            read_lease(&path)
                .map(|lease| lease.filter(|l| l.expires_at > 0.0))
                .map_err(std::io::Error::other)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use crate::state::lease::LeaseRecord;

    fn open(dir: &std::path::Path) -> Store {
        Store::open_for_tests(dir)
    }

    #[test]
    fn a_lease_excludes_another_holder_until_released_and_fences_grow() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        let held = store
            .lease_acquire("retry-claim/job", "a#1", 30.0)
            .expect("io")
            .expect("free");
        assert_eq!((held.fence, held.holder.as_str()), (1, "a#1"));
        assert!(store
            .lease_acquire("retry-claim/job", "b#2", 30.0)
            .expect("io")
            .is_none());
        let seen = store
            .lease_read("retry-claim/job")
            .expect("io")
            .expect("held");
        assert_eq!(seen, held);
        store.lease_release(&held).expect("release");
        assert!(store.lease_read("retry-claim/job").expect("io").is_none());
        let next = store
            .lease_acquire("retry-claim/job", "b#2", 30.0)
            .expect("io")
            .expect("free again");
        assert_eq!(next.fence, 2, "a takeover after a release is a new fence");
        let file = dir.path().join("default/leases/retry-claim%2Fjob.lease");
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(file).expect("lease file")).expect("json");
        assert_eq!(body["holder"], "b#2");
        assert_eq!(body["name"], "retry-claim/job");
    }

    #[test]
    fn a_renewal_needs_the_same_holder_and_fence_and_an_unreleased_lease() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        // A job lock's slot lease (`jobstate::lock_lease_name`).
        let name = "lock/global/db#0";
        let held = store
            .lease_acquire(name, "h#p#t1", 10.0)
            .expect("io")
            .expect("free");
        let renewed = store
            .lease_renew(&held, 60.0)
            .expect("io")
            .expect("still ours");
        assert_eq!((renewed.fence, &renewed.holder), (held.fence, &held.holder));
        assert!(renewed.expires_at > held.expires_at);
        let file = dir
            .path()
            .join("default/leases/lock%2Fglobal%2Fdb%230.lease");
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).expect("lease file")).expect("json");
        assert_eq!(body["expiresAt"].as_f64(), Some(renewed.expires_at));
        // Another holder's record (wrong holder) or an older fence: refused.
        let stranger = LeaseRecord {
            holder: "other#x#y".to_owned(),
            ..held.clone()
        };
        assert!(store.lease_renew(&stranger, 60.0).expect("io").is_none());
        let stale = LeaseRecord {
            fence: held.fence + 1,
            ..held.clone()
        };
        assert!(store.lease_renew(&stale, 60.0).expect("io").is_none());
        // Released: never renewed again, and the file keeps expiry 0.
        store.lease_release(&renewed).expect("release");
        assert!(store.lease_renew(&renewed, 60.0).expect("io").is_none());
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).expect("lease file")).expect("json");
        assert_eq!(body["expiresAt"].as_f64(), Some(0.0));
        // Absent: refused.
        let ghost = LeaseRecord {
            name: "lock/global/none#0".to_owned(),
            ..held.clone()
        };
        assert!(store.lease_renew(&ghost, 60.0).expect("io").is_none());
        // Unreadable: refused.
        std::fs::write(&file, b"{").expect("write");
        assert!(store.lease_renew(&held, 60.0).expect("io").is_none());
    }

    #[test]
    fn an_expired_lease_is_free_and_a_corrupt_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        let held = store
            .lease_acquire("l", "a#1", -1.0)
            .expect("io")
            .expect("free");
        assert!(held.expires_at < crate::state::format::wall_now());
        assert!(store.lease_acquire("l", "b#2", 30.0).expect("io").is_some());
        std::fs::write(dir.path().join("default/leases/l.lease"), b"{not json").expect("write");
        assert!(store.lease_acquire("l", "c#3", 30.0).expect("io").is_none());
        assert!(store.lease_read("l").is_err());
    }
}
