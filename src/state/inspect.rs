//! Read-only looks at a store for the state inspector (`GET /state`):
//! per-prefix record and document counts, the leases held, the
//! quarantine's size. Metadata only: no record payload or document value
//! is read here. Every function blocks on the file system; callers run
//! them off the scheduler's thread.

use super::store::Store;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Scopes listed per prefix at most, and leases listed at most (the
/// original's caps).
pub const INVENTORY_CAP: usize = 200;

/// The streams (or document namespaces) sharing one first path segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// Files counted across them.
    pub count: usize,
    /// Directories counted.
    pub streams: usize,
    /// The rest of each name after the first `/` and its file count, in
    /// name order, at most [`INVENTORY_CAP`].
    pub scopes: Vec<(String, usize)>,
}

/// A lease someone holds (or held: `expired`).
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseView {
    /// The lease's name, decoded from its file name.
    pub name: String,
    /// The holder's node name.
    pub holder: String,
    /// The fencing token.
    pub fence: i64,
    /// Unix time it lapses at.
    pub expires_at: f64,
    /// Lapsed already.
    pub expired: bool,
}

/// What `GET /state` lists of a store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inventory {
    /// `records/`, grouped by prefix.
    pub records: BTreeMap<String, Group>,
    /// `docs/`, grouped by prefix.
    pub documents: BTreeMap<String, Group>,
    /// Leases not released, at most [`INVENTORY_CAP`].
    pub leases: Vec<LeaseView>,
    /// Entries in `quarantine/`.
    pub quarantine: usize,
}

impl Inventory {
    /// The inventory's part of the `GET /state` body (`records`,
    /// `documents`, `leases`, `quarantine`).
    pub fn to_json(&self) -> Map<String, Value> {
        let groups = |groups: &BTreeMap<String, Group>| -> Value {
            groups
                .iter()
                .map(|(prefix, g)| {
                    let scopes: Vec<Value> = g
                        .scopes
                        .iter()
                        .map(|(scope, count)| json!({"scope": scope, "count": count}))
                        .collect();
                    (
                        prefix.clone(),
                        json!({"count": g.count, "streams": g.streams, "scopes": scopes}),
                    )
                })
                .collect::<Map<String, Value>>()
                .into()
        };
        let leases: Vec<Value> = self
            .leases
            .iter()
            .map(|l| {
                json!({
                    "name": l.name,
                    "holder": l.holder,
                    "fence": l.fence,
                    "expiresAt": l.expires_at,
                    "expired": l.expired,
                })
            })
            .collect();
        let mut out = Map::new();
        out.insert("records".into(), groups(&self.records));
        out.insert("documents".into(), groups(&self.documents));
        out.insert("leases".into(), leases.into());
        out.insert("quarantine".into(), self.quarantine.into());
        out
    }
}

/// A directory token decoded for display: every `%XX` becomes its byte,
/// anything else stays, and bytes that are not UTF-8 show as U+FFFD (so
/// a shortened token, whose `%.` is no escape, still shows its head).
pub fn unquote_lossy(token: &str) -> String {
    let raw = token.as_bytes();
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let escaped = (raw[i] == b'%')
            .then(|| token.get(i + 1..i + 3))
            .flatten()
            .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                bytes.push(byte);
                i += 3;
            }
            None => {
                bytes.push(raw[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Groups the subdirectories of `root` by the first path segment of
/// their decoded names, counting the files ending in `suffix` in each.
/// An unreadable `root` is an empty map; an unreadable subdirectory is
/// left out.
pub fn walk(root: &Path, suffix: &str) -> BTreeMap<String, Group> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return groups;
    };
    let mut dirs: Vec<(String, std::path::PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    dirs.sort();
    for (token, path) in dirs {
        let Ok(files) = std::fs::read_dir(&path) else {
            continue;
        };
        let count = files
            .flatten()
            .filter(|f| f.file_name().to_string_lossy().ends_with(suffix))
            .count();
        let name = unquote_lossy(&token);
        let (prefix, scope) = name.split_once('/').unwrap_or((&name, ""));
        let group = groups.entry(prefix.to_owned()).or_default();
        group.count += count;
        group.streams += 1;
        if group.scopes.len() < INVENTORY_CAP {
            group.scopes.push((scope.to_owned(), count));
        }
    }
    groups
}

/// The leases in `dir` that are not released (`expiresAt > 0`), in file
/// name order, at most [`INVENTORY_CAP`]; a lease file that does not
/// parse is skipped. `now` is Unix time.
pub fn leases(dir: &Path, now: f64) -> Vec<LeaseView> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".lease"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for file in names {
        if out.len() >= INVENTORY_CAP {
            break;
        }
        let Some(body) = std::fs::read(dir.join(&file))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        else {
            continue;
        };
        let expires_at = body.get("expiresAt").and_then(Value::as_f64).unwrap_or(0.0);
        if expires_at <= 0.0 {
            // Released: nobody holds it.
            continue;
        }
        out.push(LeaseView {
            name: unquote_lossy(file.trim_end_matches(".lease")),
            holder: body
                .get("holder")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            fence: body.get("fence").and_then(Value::as_i64).unwrap_or(0),
            expires_at,
            expired: expires_at <= now,
        });
    }
    out
}

/// The inventory of `store` now (`now`: Unix time, for `expired`).
pub fn inventory(store: &Store, now: f64) -> Inventory {
    let base = store.base();
    Inventory {
        records: walk(&base.join("records"), ".json"),
        documents: walk(&base.join("docs"), ".doc"),
        leases: leases(&base.join("leases"), now),
        quarantine: std::fs::read_dir(base.join("quarantine"))
            .map(|entries| entries.count())
            .unwrap_or(0),
    }
}

/// The newest `limit` records of `stream`, newest first, `data` objects
/// only (a record that does not decode is quarantined, as on every read).
pub fn newest_first(
    store: &Store,
    stream: &str,
    limit: usize,
) -> std::io::Result<Vec<Map<String, Value>>> {
    let mut records = store.read_newest(stream, limit)?;
    records.reverse();
    Ok(records.into_iter().map(|(_, data)| data).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_decode_for_display() {
        assert_eq!(unquote_lossy("runs%2Fbackup"), "runs/backup");
        assert_eq!(
            unquote_lossy("runs%2F%4Eightly%2E%52eport"),
            "runs/Nightly.Report"
        );
        assert_eq!(unquote_lossy("meta"), "meta");
        assert_eq!(unquote_lossy("%C3%A9"), "é");
        // Not UTF-8: replaced, not dropped.
        assert_eq!(unquote_lossy("a%FFb"), "a\u{FFFD}b");
        // No escape: kept as written (a shortened token's `%.`, a `%`
        // at the end, non-hex digits).
        assert_eq!(unquote_lossy("ab%.c2a9"), "ab%.c2a9");
        assert_eq!(unquote_lossy("x%"), "x%");
        assert_eq!(unquote_lossy("x%2"), "x%2");
        assert_eq!(unquote_lossy("%zz"), "%zz");
        assert_eq!(unquote_lossy("%2f"), "/");
    }

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("a temp dir")
    }

    #[test]
    fn walk_groups_by_first_segment_and_counts_only_the_suffix() {
        let dir = temp();
        let root = dir.path();
        for (token, files) in [
            ("runs%2Fb", vec!["1.json", "2.json", "x.tmp"]),
            ("runs%2Fa", vec!["1.json"]),
            ("meta", vec!["1.json"]),
            ("counters%2Fhost%2Ea", vec![]),
        ] {
            std::fs::create_dir(root.join(token)).unwrap();
            for f in files {
                std::fs::write(root.join(token).join(f), b"{}").unwrap();
            }
        }
        // A plain file in the root is no stream.
        std::fs::write(root.join("stray.json"), b"{}").unwrap();
        let groups = walk(root, ".json");
        assert_eq!(
            groups["runs"],
            Group {
                count: 3,
                streams: 2,
                scopes: vec![("a".into(), 1), ("b".into(), 2)],
            }
        );
        assert_eq!(
            groups["meta"],
            Group {
                count: 1,
                streams: 1,
                scopes: vec![(String::new(), 1)],
            }
        );
        assert_eq!(
            groups["counters"],
            Group {
                count: 0,
                streams: 1,
                scopes: vec![("host.a".into(), 0)],
            }
        );
        assert_eq!(groups.len(), 3);
        assert!(walk(&root.join("missing"), ".json").is_empty());
    }

    #[test]
    fn scopes_are_capped_but_counts_are_not() {
        let dir = temp();
        for i in 0..(INVENTORY_CAP + 5) {
            let token = format!("runs%2Fj{i:04}");
            std::fs::create_dir(dir.path().join(&token)).unwrap();
            std::fs::write(dir.path().join(&token).join("r.json"), b"{}").unwrap();
        }
        let groups = walk(dir.path(), ".json");
        assert_eq!(groups["runs"].streams, INVENTORY_CAP + 5);
        assert_eq!(groups["runs"].count, INVENTORY_CAP + 5);
        assert_eq!(groups["runs"].scopes.len(), INVENTORY_CAP);
        assert_eq!(groups["runs"].scopes[0], ("j0000".to_owned(), 1));
    }

    #[test]
    fn leases_list_the_held_ones_and_judge_expiry() {
        let dir = temp();
        let write = |name: &str, body: &str| std::fs::write(dir.path().join(name), body).unwrap();
        write(
            "slots%2Fbackup.lease",
            r#"{"expiresAt":200.5,"fence":3,"holder":"node-a","name":"slots/backup"}"#,
        );
        write(
            "leader.lease",
            r#"{"expiresAt":50.0,"fence":7,"holder":"node-b","name":"leader"}"#,
        );
        write(
            "released.lease",
            r#"{"expiresAt":0.0,"fence":1,"holder":"node-c","name":"released"}"#,
        );
        write("torn.lease", "{");
        write("leader.lock", "");
        let got = leases(dir.path(), 100.0);
        assert_eq!(
            got,
            vec![
                LeaseView {
                    name: "leader".into(),
                    holder: "node-b".into(),
                    fence: 7,
                    expires_at: 50.0,
                    expired: true,
                },
                LeaseView {
                    name: "slots/backup".into(),
                    holder: "node-a".into(),
                    fence: 3,
                    expires_at: 200.5,
                    expired: false,
                },
            ]
        );
    }

    #[test]
    fn inventory_json_has_the_originals_shape() {
        let mut inventory = Inventory {
            quarantine: 2,
            ..Inventory::default()
        };
        inventory.records.insert(
            "runs".into(),
            Group {
                count: 3,
                streams: 1,
                scopes: vec![("backup".into(), 3)],
            },
        );
        inventory.leases.push(LeaseView {
            name: "leader".into(),
            holder: "a".into(),
            fence: 1,
            expires_at: 10.5,
            expired: false,
        });
        assert_eq!(
            Value::Object(inventory.to_json()),
            json!({
                "records": {"runs": {"count": 3, "streams": 1, "scopes": [{"scope": "backup", "count": 3}]}},
                "documents": {},
                "leases": [{"name": "leader", "holder": "a", "fence": 1, "expiresAt": 10.5, "expired": false}],
                "quarantine": 2,
            })
        );
    }
}
