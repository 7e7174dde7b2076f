//! `check` and `migrate-schema`: open the store as the daemon does (the
//! writability probe, the version stamp) and report on its records.

use super::{AdminError, Report, Target};
use crate::state::format::SCHEMA_VERSION;
use crate::state::store::{Store, Topology};
use std::collections::BTreeMap;
use std::path::Path;

/// The per-prefix record counts of a `records/` directory: (entries in
/// it, `.json` files in its stream directories, per prefix). The prefix
/// is the token before its first `%2F` (the encoded `/`), else the whole
/// token; entries that are not directories count as entries only.
pub fn inventory(records: &Path) -> (usize, usize, BTreeMap<String, usize>) {
    let mut tokens: Vec<(String, std::path::PathBuf)> = match std::fs::read_dir(records) {
        Ok(entries) => entries
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect(),
        Err(_) => Vec::new(),
    };
    tokens.sort();
    let mut total = 0;
    let mut per_prefix = BTreeMap::new();
    for (token, path) in &tokens {
        if !path.is_dir() {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(path) else {
            continue;
        };
        let count = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .count();
        total += count;
        let prefix = token.split("%2F").next().unwrap_or(token).to_owned();
        *per_prefix.entry(prefix).or_insert(0) += count;
    }
    (tokens.len(), total, per_prefix)
}

/// Python's spelling of a bool (`True` / `False`).
fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

/// `check`: opens the store (which probes that it is writable and stamps
/// it) and prints its inventory in the original's layout.
pub fn check(target: &Target) -> Result<Report, AdminError> {
    let store = Store::open(&target.settings)?;
    let base = store.base();
    let mut lines = vec![
        format!("state: store at {} is writable", base.display()),
        "  backend: filesystem".to_owned(),
        format!("  namespace: {}", store.deployment_id()),
        format!("  topology: {}", store.topology().as_str()),
        format!(
            "  shared_locking: {}",
            py_bool(store.topology() == Topology::Shared)
        ),
    ];
    let (streams, records, per_prefix) = inventory(&base.join("records"));
    lines.push(format!("  streams: {streams} ({records} record(s))"));
    for (prefix, count) in per_prefix {
        lines.push(format!("    {prefix}: {count} record(s)"));
    }
    let quarantined = std::fs::read_dir(base.join("quarantine"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    lines.push(format!("  quarantined: {quarantined} record(s)"));
    Ok(Report::ok(lines))
}

/// The record counts of a schema migration pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaCounts {
    /// Records rewritten (or that would be) to the current scheme.
    pub converted: usize,
    /// Records already in the current scheme.
    pub current: usize,
    /// Records of a scheme no converter knows.
    pub unknown: usize,
    /// Files that do not parse as JSON (or could not be read).
    pub unreadable: usize,
    /// Conversions that failed.
    pub failed: usize,
}

/// How one record file's bytes count in a schema migration: `v1` is the
/// only scheme, so there is no older one to convert.
pub fn classify_record(bytes: &[u8], counts: &mut SchemaCounts) {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Err(_) => counts.unreadable += 1,
        Ok(value) => {
            if value.get("schemaVersion").and_then(|v| v.as_str()) == Some(SCHEMA_VERSION) {
                counts.current += 1;
            } else {
                counts.unknown += 1;
            }
        }
    }
}

/// `migrate-schema [--dry-run]`: counts the records by scheme (and would
/// rewrite those of an older known scheme; there is none yet).
pub fn migrate_schema(target: &Target, dry_run: bool) -> Result<Report, AdminError> {
    let store = Store::open(&target.settings)?;
    let mut counts = SchemaCounts::default();
    let records = store.base().join("records");
    let mut streams: Vec<_> = std::fs::read_dir(&records)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    streams.sort();
    for stream in streams.iter().filter(|p| p.is_dir()) {
        let Ok(entries) = std::fs::read_dir(stream) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        for name in names {
            match std::fs::read(stream.join(&name)) {
                Ok(bytes) => classify_record(&bytes, &mut counts),
                Err(_) => counts.unreadable += 1,
            }
        }
    }
    let verb = if dry_run {
        "would convert"
    } else {
        "converted"
    };
    Ok(Report::ok([format!(
        "state: migrate-schema {verb} {} record(s); {} current, {} unknown, {} unreadable, {} \
         failed",
        counts.converted, counts.current, counts.unknown, counts.unreadable, counts.failed
    )]))
}
