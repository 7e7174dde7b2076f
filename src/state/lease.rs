//! The lease of the state store's `leases/` directory: a JSON body
//! (`{"expiresAt","fence","holder","name"}`, keys sorted) beside a lock
//! side-file, changed only under an exclusive lock on that side-file.
//! The filesystem election, the cluster slots and the cross-node retry
//! claims all use it (the original's lease files, so both daemons fence
//! each other on a shared store).

use crate::platform;
use serde_json::Value;
use std::path::Path;

/// The lease file's content.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LeaseRecord {
    /// Wall-clock epoch seconds the lease is valid until (`<= 0`:
    /// released).
    #[serde(rename = "expiresAt")]
    pub expires_at: f64,
    /// Grows by one on every takeover.
    pub fence: u64,
    /// `<nodeName>#<token>`.
    pub holder: String,
    /// The lease's name (the election, `slots/<job>`, `retry-claim/<job>`).
    pub name: String,
}

impl LeaseRecord {
    /// The file's bytes: compact JSON, keys sorted (the field order),
    /// non-ASCII escaped as the original's default (stdlib) encoder
    /// writes it, so a lease named after a non-ASCII scope or lock has the
    /// same bytes from either daemon.
    pub fn encode(&self) -> Vec<u8> {
        // Serialising four plain fields cannot fail; an empty file would
        // read as corrupt (and so deny acquires) rather than mislead.
        serde_json::to_value(self)
            .map(|value| super::format::ascii_json(&value).into_bytes())
            .unwrap_or_default()
    }

    /// Reads a lease file's bytes; the error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<LeaseRecord, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let Value::Object(map) = value else {
            return Err("lease file is not a JSON object".to_owned());
        };
        let field = |key: &str| map.get(key).ok_or_else(|| format!("missing key '{key}'"));
        let text = |key: &str| -> Result<String, String> {
            match field(key)? {
                Value::String(s) => Ok(s.clone()),
                other => Ok(other.to_string()),
            }
        };
        let fence = match field("fence")? {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| "fence is not a non-negative integer".to_owned())?;
        let expires_at = match field("expiresAt")? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|f: &f64| !f.is_nan())
        .ok_or_else(|| "expiresAt is not a number".to_owned())?;
        Ok(LeaseRecord {
            expires_at,
            fence,
            holder: text("holder")?,
            name: text("name")?,
        })
    }
}

/// What an acquire under the lock may write, given the record read and
/// the wall clock `now`: the fence to write, or None (deny: someone else
/// holds an unexpired lease).
pub fn acquire_fence(current: Option<&LeaseRecord>, holder: &str, now: f64) -> Option<u64> {
    match current {
        None => Some(1),
        Some(c) if c.holder != holder && c.expires_at > now => None,
        // Our own live lease: a renewal in effect, same fence.
        Some(c) if c.expires_at > now => Some(c.fence),
        // Expired or released (even ours): a new incarnation.
        Some(c) => Some(c.fence + 1),
    }
}

/// Whether a renewal of `held` may be written over `current`: still ours
/// (holder and fence), and not released. A renewal slightly past expiry
/// is fine; one after our own release must not bring it back.
pub fn may_renew(current: Option<&LeaseRecord>, held: &LeaseRecord) -> bool {
    current.is_some_and(|c| c.holder == held.holder && c.fence == held.fence && c.expires_at > 0.0)
}

/// Runs `work` holding the exclusive lock on the side file `lock_path`.
/// The path is checked to still name the locked file after the wait
/// (another tool may have replaced it); if not, the lock is taken again
/// on the new one.
pub fn with_lock<T>(lock_path: &Path, work: impl FnOnce() -> T) -> std::io::Result<T> {
    let _held = acquire(lock_path, false, true)?;
    Ok(work())
}

/// [`with_lock`] that also sets the side file's modification time once
/// the lock is held: `flock` never does, and the orphan-lock sweep of the
/// garbage collector takes that time as the document's last activity.
pub fn with_touched_lock<T>(lock_path: &Path, work: impl FnOnce() -> T) -> std::io::Result<T> {
    let _held = acquire(lock_path, true, true)?;
    Ok(work())
}

/// [`with_lock`] without waiting: `Ok(None)` (and `work` not run) when
/// another holder has the lock. The collector's lane: a sweep can always
/// skip an entry and retry on its next pass.
pub fn try_with_lock<T>(lock_path: &Path, work: impl FnOnce() -> T) -> std::io::Result<Option<T>> {
    let held = acquire(lock_path, false, false)?;
    Ok(held.is_some().then(work))
}

/// Opens and locks the side file (the lock lasts as long as the returned
/// file is open); with `blocking` false, None when another holder has
/// it (a blocking acquire always returns the file).
fn acquire(
    lock_path: &Path,
    touch: bool,
    blocking: bool,
) -> std::io::Result<Option<std::fs::File>> {
    loop {
        let file = platform::open_private_rw(lock_path)?;
        if file.metadata()?.len() == 0 {
            // Byte-range locks (other platforms' readers of this
            // directory) need a byte to lock.
            use std::io::Write;
            (&file).write_all(b"\0")?;
        }
        if blocking {
            platform::lock_exclusive(&file)?;
        } else if !platform::try_lock_exclusive(&file)? {
            return Ok(None);
        }
        let same = match (file.metadata(), std::fs::metadata(lock_path)) {
            (Ok(held), Ok(named)) => platform::same_file(&held, &named),
            _ => false,
        };
        if same {
            if touch {
                // Best effort: a missed touch only ages the lock towards
                // the sweep, which also requires the document absent and
                // takes this same lock.
                let _ = file.set_modified(std::time::SystemTime::now());
            }
            return Ok(Some(file));
        }
    }
}

/// Reads a lease file: `Ok(None)` when absent; anything else that fails
/// (I/O, bad content) is an error saying what is wrong, and an unreadable
/// lease must never be taken for a free one.
pub fn read_lease(path: &Path) -> Result<Option<LeaseRecord>, String> {
    match std::fs::read(path) {
        Ok(bytes) => LeaseRecord::decode(&bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}
