//! Streams read back by a field (the artifact streams, where only the
//! newest record of each name is ever read): the newest-first scan, and
//! the append that keeps such a stream bounded by pruning the records a
//! newer one of the same name superseded.
//!
//! The invariant a reader on another node (or the original daemon)
//! relies on: the newest record of a name is never deleted, so readers
//! take the newest by file name and tolerate older versions.

use super::{json_names, Store};
use crate::state::format::fs_safe;
use crate::state::stats::Op;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::ops::ControlFlow;

/// Appends between two name-keyed prune passes of one stream, at least
/// (a pass that leaves more records spaces the next one by that many, so
/// the records read per append stay constant).
pub const PRUNE_EVERY_APPENDS: usize = 8;

/// Streams whose countdown is remembered; past it the map starts over
/// (the cost is one early pass per stream).
const COUNTDOWN_STREAMS_MAX: usize = 4096;

impl Store {
    /// Visits the records of `stream` newest first (by file name) until
    /// `visit` breaks. Records that do not decode are quarantined and
    /// those unreadable right now skipped, as [`Store::read`] does. One
    /// `list` operation.
    pub fn scan_newest_first(
        &self,
        stream: &str,
        mut visit: impl FnMut(&str, Map<String, Value>) -> ControlFlow<()>,
    ) -> std::io::Result<()> {
        self.op(Op::List, || {
            let dir = self.stream_dir(stream);
            let mut names = match json_names(&dir) {
                Ok(names) => names,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            names.sort_unstable_by(|a, b| b.cmp(a));
            for name in names {
                if let Some(data) = self.read_record(&dir, &name) {
                    if visit(&name, data).is_break() {
                        break;
                    }
                }
            }
            Ok(())
        })
    }

    /// Appends `data` to `stream` (as [`Store::append`]) and keeps the
    /// stream bounded by the string `field` of its records: every
    /// [`PRUNE_EVERY_APPENDS`]th append (or later, for a big stream) a
    /// pass deletes the records a newer one with the same `field`
    /// superseded, except the one this append just superseded (a reader
    /// whose listing predates this append may still be about to read it).
    /// A failed pass is logged, never the append's failure.
    pub fn append_latest_by(
        &self,
        stream: &str,
        data: &Value,
        field: &str,
    ) -> std::io::Result<String> {
        self.op(Op::Append, || {
            let name = self.append_unpaced(stream, data)?;
            let token = fs_safe(stream);
            if self.prune_due(&token) {
                let spare = data.get(field).and_then(Value::as_str);
                match self.prune_latest_by(stream, field, spare) {
                    Ok(left) => self.stretch_countdown(&token, left),
                    Err(e) => tracing::warn!(
                        target: "cronstable::state",
                        "state: could not prune stream {} after an append (kept records \
                         linger until the next prune): {e}",
                        crate::pyfmt::repr_str(stream)
                    ),
                }
            }
            Ok(name)
        })
    }

    /// Whether this append of the stream `token` runs a prune pass (the
    /// first one in this process does).
    fn prune_due(&self, token: &str) -> bool {
        let Ok(mut countdown) = self.prune_countdown.lock() else {
            return true;
        };
        let left = countdown.get(token).copied().unwrap_or(0);
        if left == 0 {
            if countdown.len() >= COUNTDOWN_STREAMS_MAX && !countdown.contains_key(token) {
                countdown.clear();
            }
            countdown.insert(token.to_owned(), PRUNE_EVERY_APPENDS - 1);
            return true;
        }
        countdown.insert(token.to_owned(), left - 1);
        false
    }

    /// Spaces the next pass of `token` by the `left` records the last one
    /// kept (only ever lengthens the countdown).
    fn stretch_countdown(&self, token: &str, left: usize) {
        if let Ok(mut countdown) = self.prune_countdown.lock() {
            if let Some(current) = countdown.get_mut(token) {
                *current = (*current).max(left.saturating_sub(1));
            }
        }
    }

    /// Deletes every record of `stream` older than the newest record with
    /// the same string `field`, keeping also the newest superseded record
    /// of the value `spare`. A record that does not read, or whose field
    /// is not a string, is kept and does not count as seen (it could be
    /// the newest of its name). Returns how many records are left.
    fn prune_latest_by(
        &self,
        stream: &str,
        field: &str,
        mut spare: Option<&str>,
    ) -> std::io::Result<usize> {
        let dir = self.stream_dir(stream);
        let mut names = match json_names(&dir) {
            Ok(names) => names,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        names.sort_unstable_by(|a, b| b.cmp(a));
        let mut seen: HashSet<String> = HashSet::new();
        let mut deleted = 0;
        for name in &names {
            let Some(data) = self.read_record(&dir, name) else {
                continue;
            };
            let Some(value) = data.get(field).and_then(Value::as_str) else {
                continue;
            };
            if seen.insert(value.to_owned()) {
                continue;
            }
            if spare == Some(value) {
                spare = None;
                continue;
            }
            // Already gone: a peer's pass raced this one.
            if std::fs::remove_file(dir.join(name)).is_ok() {
                deleted += 1;
            }
        }
        Ok(names.len() - deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use serde_json::json;
    use std::ops::ControlFlow;

    fn open(dir: &std::path::Path) -> Store {
        Store::open_for_tests(dir)
    }

    #[test]
    fn a_name_keyed_stream_stays_bounded_and_keeps_the_newest_of_every_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        for round in 0..40 {
            for name in ["a", "b", "c"] {
                store
                    .append_latest_by("artifacts/s", &json!({"name": name, "n": round}), "name")
                    .expect("append");
            }
        }
        let records = store.read("artifacts/s").expect("read");
        assert!(
            records.len() <= 3 + 1 + super::PRUNE_EVERY_APPENDS,
            "{} records left",
            records.len()
        );
        for name in ["a", "b", "c"] {
            let newest = records
                .iter()
                .rev()
                .find(|(_, d)| d["name"] == name)
                .expect("kept");
            assert_eq!(newest.1["n"], 39, "{name}");
        }
    }

    #[test]
    fn the_scan_goes_newest_first_and_stops_when_told() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(dir.path());
        for n in 0..5 {
            store.append("s", &json!({"n": n})).expect("append");
        }
        let mut seen = Vec::new();
        store
            .scan_newest_first("s", |_, data| {
                seen.push(data["n"].as_i64().unwrap_or(-1));
                if seen.len() == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .expect("scan");
        assert_eq!(seen, [4, 3, 2]);
        store
            .scan_newest_first("absent", |_, _| ControlFlow::Continue(()))
            .expect("an absent stream is empty");
    }
}
