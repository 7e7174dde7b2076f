//! The store's on-disk format, shared by every writer of a store
//! directory (the state store, the filesystem leadership backend and its
//! slot leases): file-name tokens, record file names and the record
//! wrapper. These are the original's formats, so both daemons can share
//! one directory.

use crate::platform;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::path::{Component, PathBuf};

/// The record format version the filesystem store writes and reads.
pub const SCHEMA_VERSION: &str = "v1";

/// Tokens longer than this are shortened (with a digest of the name).
const FS_SAFE_MAX: usize = 130;

/// A name as a file-name token: every UTF-8 byte outside `[a-z0-9_-]` is
/// written `%XX` (uppercase hex), so the mapping is injective even on
/// case-insensitive file systems and never yields `.` or `..`. A Windows
/// device name gets its first character escaped, an empty name is `_`,
/// and a token over 130 characters keeps its first 96 followed by `%.` and
/// 32 hex digits of the name's SHA-256.
pub fn fs_safe(name: &str) -> String {
    fs_safe_bytes(name.as_bytes())
}

/// [`fs_safe`] of a name given as its bytes: UTF-8, or, for a name that
/// holds lone surrogates (a job-supplied key can), the generalized UTF-8
/// Python's `encode("utf-8", "surrogatepass")` writes, so both daemons
/// name the same file.
pub fn fs_safe_bytes(name: &[u8]) -> String {
    let mut token = String::with_capacity(name.len());
    for &byte in name {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-' {
            token.push(char::from(byte));
        } else {
            token.push_str(&format!("%{byte:02X}"));
        }
    }
    if token.is_empty() {
        token.push('_');
    }
    if is_windows_device(&token) {
        let first = token.as_bytes()[0];
        token = format!("%{first:02X}{}", &token[1..]);
    }
    if token.len() > FS_SAFE_MAX {
        let digest = Sha256::digest(name);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        token = format!("{}%.{}", &token[..FS_SAFE_MAX - 34], &hex[..32]);
    }
    token
}

fn is_windows_device(token: &str) -> bool {
    matches!(token, "con" | "prn" | "aux" | "nul")
        || (token.len() == 4
            && (token.starts_with("com") || token.starts_with("lpt"))
            && matches!(token.as_bytes()[3], b'1'..=b'9'))
}

/// `path` made absolute (against the working directory) with `~`
/// expanded and `.`/`..` resolved by name, symlinks left alone.
pub fn absolute_root(path: &str) -> PathBuf {
    let expanded = match path.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match platform::home_dir() {
            Some(home) => home.join(rest.trim_start_matches('/')),
            None => PathBuf::from(path),
        },
        _ => PathBuf::from(path),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(&expanded))
            .unwrap_or(expanded)
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Wall-clock time as Unix seconds (0 before 1970).
pub fn wall_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// JSON text as Python's `json.dumps(.., separators=(",", ":"))` writes
/// it: compact, and every non-ASCII character escaped `\uXXXX` (UTF-16,
/// surrogate pairs above the BMP), so the bytes match the original's.
pub fn ascii_json(value: &Value) -> String {
    let text = value.to_string();
    if text.is_ascii() {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// A record file's stem: write time (epoch seconds, zero-padded so names
/// sort by time), the writer's instance and its sequence number.
pub fn record_stem(epoch: f64, instance: &str, seq: u64) -> String {
    format!("{epoch:020.6}-{instance}-{seq:012}")
}

/// The write time a record file name starts with, if it has one.
pub fn stem_epoch(name: &str) -> Option<f64> {
    let head = name.split('-').next()?;
    if head.len() != 20 {
        return None;
    }
    head.parse().ok().filter(|e: &f64| e.is_finite())
}

/// A record file's bytes: `{"data":..,"schemaVersion":"v1"}`, compact,
/// keys sorted (serde_json's maps are sorted).
pub fn encode_record(data: &Value) -> Vec<u8> {
    ascii_json(&json!({"data": data, "schemaVersion": SCHEMA_VERSION})).into_bytes()
}

/// A record file's `data`, when it is a v1 record with an object body.
pub fn decode_record(bytes: &[u8]) -> Option<Map<String, Value>> {
    let Value::Object(mut record) = serde_json::from_slice::<Value>(bytes).ok()? else {
        return None;
    };
    if record.get("schemaVersion").and_then(Value::as_str) != Some(SCHEMA_VERSION) {
        return None;
    }
    match record.remove("data")? {
        Value::Object(data) => Some(data),
        _ => None,
    }
}

/// An instant as the store's records write it (Python's
/// `datetime.isoformat()` in UTC).
pub use crate::pyfmt::py_isoformat;

/// Reads an ISO 8601 / RFC 3339 instant (any offset; a naive one is
/// taken as UTC) as UTC.
pub fn parse_iso(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|n| n.and_utc())
}

/// RFC 3339 with whole seconds and `Z` (`2026-06-23T19:00:00Z`).
pub fn rfc3339_secs(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A per-process token appended to the holder identity (`name#token`),
/// so two processes with the same node name never both hold the lease.
pub fn process_token() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{:012x}", hasher.finish() & 0xffff_ffff_ffff)
}

/// Writes `bytes` to `dest` through the fresh `0600` temp file `tmp`,
/// fsynced, then a rename (a reader sees the old file or the new one,
/// never half of one); syncs `dest`'s directory too when `sync_dir` (a
/// rename a power loss can undo would lose an acknowledged write). The
/// temp file is removed when anything fails.
pub fn write_via_temp(
    tmp: &std::path::Path,
    dest: &std::path::Path,
    bytes: &[u8],
    sync_dir: bool,
) -> std::io::Result<()> {
    let written = (|| {
        use std::io::Write;
        let mut file = platform::create_private_new(tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(tmp, dest)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    if sync_dir {
        if let Some(dir) = dest.parent() {
            platform::sync_dir(dir)?;
        }
    }
    Ok(())
}
