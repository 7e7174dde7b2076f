//! The pauses record: the pauses and resumes a leader accepted, kept in
//! the leadership store beside the takeover catch-up records so the next
//! leader keeps a paused job paused (see `scheduler::pause_sync`). Pure
//! formats and merges; each backend stores the text in its own way:
//!
//! - one document (a Kubernetes Lease annotation, an etcd key): a compact
//!   JSON object keyed by job, each value the job's newest mark,
//!   `{"by":"ops","channel":"api","note":"db migration","since":"2026-06-23T19:00:00Z","until":"2026-06-23T20:00:00Z"}`
//!   for a pause, `{"by":"api","resumed":"2026-06-23T19:30:00Z"}` for a
//!   resume;
//! - a record stream (the shared directory): one record per mark, the
//!   same object with the job's name under `job`; the newest mark per job
//!   wins, whatever order the files were written in.
//!
//! Marks merge by time ([`PauseMark::supersedes`]), so two requests in
//! flight at once, or a late write, never bring back an older state.
//! Lapsed pauses and resumes older than [`crate::scheduler::pause::RESUME_KEPT`]
//! are dropped whenever the record is written.

use super::records::{ascii_json, parse_instant};
use crate::scheduler::pause::{PauseMark, PauseWindow};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The Kubernetes annotation holding the pauses.
pub const PAUSES_ANNOTATION: &str = "cronstable.io/pauses";

/// The filesystem record stream of the pauses.
pub const PAUSES_STREAM: &str = "cluster/pauses";

/// Most bytes the encoded document may take (the Lease's annotations
/// share 256 KiB with the `@reboot` set and the last fires' 128 KiB).
pub const PAUSES_MAX_BYTES: usize = 64 * 1024;

/// An instant as the record writes it: RFC 3339 UTC with as many
/// fraction digits as it has, so it reads back exactly (a mark compared
/// with the local pause it came from must compare equal).
fn instant(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// One mark as the record stores it (without the job's name).
pub fn entry(mark: &PauseMark) -> Value {
    match mark {
        PauseMark::Paused(window) => json!({
            "by": window.by,
            "channel": window.channel,
            "note": window.note,
            "since": instant(window.since),
            "until": instant(window.until),
        }),
        PauseMark::Resumed { at, by } => json!({"by": by, "resumed": instant(*at)}),
    }
}

/// A stored mark, when it reads: a pause needs `since` and `until`, a
/// resume `resumed` (text fields default to what the API would write).
pub fn read_entry(value: &Value) -> Option<PauseMark> {
    let map = value.as_object()?;
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    let time = |key: &str| text(key).and_then(parse_instant);
    let by = text("by").unwrap_or("api").to_owned();
    if let Some(at) = time("resumed") {
        return Some(PauseMark::Resumed { at, by });
    }
    let (since, until) = (time("since")?, time("until")?);
    (since < until).then(|| {
        PauseMark::Paused(PauseWindow {
            since,
            until,
            note: text("note").unwrap_or_default().to_owned(),
            by,
            channel: text("channel").unwrap_or("api").to_owned(),
        })
    })
}

/// Puts `mark` for `job` into `marks` unless the mark there is as new.
/// True when it changed anything.
pub fn merge(marks: &mut BTreeMap<String, PauseMark>, job: &str, mark: PauseMark) -> bool {
    match marks.get(job) {
        Some(kept) if !mark.supersedes(kept) => false,
        _ => {
            marks.insert(job.to_owned(), mark);
            true
        }
    }
}

/// The document as stored; entries (or a whole document) that do not
/// read are skipped: a record someone else wrote badly must never stop
/// the scheduler.
pub fn decode_pauses(raw: Option<&str>) -> BTreeMap<String, PauseMark> {
    let Some(Value::Object(map)) = raw.and_then(|r| serde_json::from_str::<Value>(r).ok()) else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(job, value)| Some((job.clone(), read_entry(value)?)))
        .collect()
}

/// The document's text at `now`: marks that no longer say anything are
/// dropped, then, past [`PAUSES_MAX_BYTES`], the oldest marks.
pub fn encode_pauses(marks: &BTreeMap<String, PauseMark>, now: DateTime<Utc>) -> String {
    let mut kept: BTreeMap<&String, &PauseMark> =
        marks.iter().filter(|(_, mark)| mark.live(now)).collect();
    let mut by_age: Vec<(DateTime<Utc>, &String)> =
        kept.iter().map(|(job, mark)| (mark.at(), *job)).collect();
    by_age.sort();
    let mut oldest = by_age.into_iter();
    loop {
        let object: Map<String, Value> = kept
            .iter()
            .map(|(job, mark)| ((*job).clone(), entry(mark)))
            .collect();
        let text = ascii_json(&Value::Object(object));
        if text.len() <= PAUSES_MAX_BYTES {
            return text;
        }
        match oldest.next() {
            Some((_, job)) => kept.remove(job),
            None => return text,
        };
    }
}

/// The new document after recording `mark` for `job` at `now`, or None
/// when the document already holds that mark or a newer one (no write).
pub fn with_mark(
    raw: Option<&str>,
    job: &str,
    mark: PauseMark,
    now: DateTime<Utc>,
) -> Option<String> {
    let mut marks = decode_pauses(raw);
    merge(&mut marks, job, mark).then(|| encode_pauses(&marks, now))
}

/// One record of the filesystem stream: the mark and the job's name.
pub fn record_body(job: &str, mark: &PauseMark) -> Value {
    let mut body = entry(mark);
    body["job"] = json!(job);
    body
}

/// The newest mark per job among `(file name, body)` records.
pub fn marks_in(records: &[(String, Map<String, Value>)]) -> BTreeMap<String, PauseMark> {
    let mut marks = BTreeMap::new();
    for (_, body) in records {
        let Some(job) = body.get("job").and_then(Value::as_str) else {
            continue;
        };
        if let Some(mark) = read_entry(&Value::Object(body.clone())) {
            merge(&mut marks, job, mark);
        }
    }
    marks
}

/// The record files a prune deletes at `now`: every record but the one
/// holding each job's newest mark, and that one too once it no longer
/// says anything. Files that do not read are left alone.
pub fn records_to_prune(
    records: &[(String, Map<String, Value>)],
    now: DateTime<Utc>,
) -> Vec<String> {
    // job -> (name, mark) of the record to keep.
    let mut keep: BTreeMap<&str, (&String, PauseMark)> = BTreeMap::new();
    let mut prune = Vec::new();
    for (name, body) in records {
        let Some(job) = body.get("job").and_then(Value::as_str) else {
            continue;
        };
        let Some(mark) = read_entry(&Value::Object(body.clone())) else {
            continue;
        };
        match keep.get(job) {
            Some((_, kept)) if !mark.supersedes(kept) => prune.push(name.clone()),
            _ => {
                if let Some((older, _)) = keep.insert(job, (name, mark)) {
                    prune.push(older.clone());
                }
            }
        }
    }
    prune.extend(
        keep.into_values()
            .filter(|(_, mark)| !mark.live(now))
            .map(|(name, _)| name.clone()),
    );
    prune
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeDelta, TimeZone};

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_782_241_200 + secs, 0)
            .single()
            .expect("valid")
    }

    fn paused(since: i64, until: i64) -> PauseMark {
        PauseMark::Paused(PauseWindow {
            since: at(since),
            until: at(until),
            note: "db migration".into(),
            by: "ops".into(),
            channel: "api".into(),
        })
    }

    fn resumed(secs: i64) -> PauseMark {
        PauseMark::Resumed {
            at: at(secs),
            by: "api".into(),
        }
    }

    fn body(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn marks_are_compact_sorted_json_and_read_back_exactly() {
        let text = with_mark(None, "backup", paused(0, 3600), at(0)).expect("written");
        assert_eq!(
            text,
            r#"{"backup":{"by":"ops","channel":"api","note":"db migration","since":"2026-06-23T19:00:00Z","until":"2026-06-23T20:00:00Z"}}"#
        );
        let text = with_mark(Some(&text), "backup", resumed(60), at(60)).expect("written");
        assert_eq!(
            text,
            r#"{"backup":{"by":"api","resumed":"2026-06-23T19:01:00Z"}}"#
        );
        // Sub-second instants survive the round trip to the nanosecond,
        // so a mark compares equal to the local pause it was made from.
        let fine = at(0) + TimeDelta::nanoseconds(123_456_789);
        let mark = PauseMark::Paused(PauseWindow {
            since: fine,
            until: fine + TimeDelta::hours(1),
            note: "é".into(),
            by: "b".into(),
            channel: "api".into(),
        });
        let text = with_mark(None, "j", mark.clone(), at(0)).expect("written");
        assert!(
            text.contains(r#""since":"2026-06-23T19:00:00.123456789Z""#),
            "{text}"
        );
        assert!(
            text.contains(r#""note":"\u00e9""#),
            "non-ASCII escaped: {text}"
        );
        assert_eq!(decode_pauses(Some(&text)).get("j"), Some(&mark));
    }

    #[test]
    fn the_newer_mark_wins_whatever_order_the_writes_land_in() {
        // (already stored, then written) -> what the document holds.
        let cases = [
            (paused(0, 100), resumed(10), resumed(10)),
            (resumed(10), paused(0, 100), resumed(10)),
            (paused(0, 100), paused(5, 50), paused(5, 50)),
            (paused(5, 50), paused(0, 100), paused(5, 50)),
            (resumed(10), resumed(5), resumed(10)),
            // At the same instant a resume beats a pause, both ways.
            (paused(10, 100), resumed(10), resumed(10)),
            (resumed(10), paused(10, 100), resumed(10)),
        ];
        for (stored, written, expected) in cases {
            let first = with_mark(None, "j", stored.clone(), at(0)).expect("first write");
            let after = with_mark(Some(&first), "j", written.clone(), at(0));
            let doc = after.as_deref().unwrap_or(&first);
            assert_eq!(
                decode_pauses(Some(doc)).get("j"),
                Some(&expected),
                "{stored:?} then {written:?}"
            );
            // No write at all when nothing changes.
            assert_eq!(
                after.is_none(),
                expected == stored,
                "{stored:?} then {written:?}"
            );
        }
        // Other jobs are left alone.
        let doc = with_mark(None, "a", paused(0, 100), at(0)).expect("a");
        let doc = with_mark(Some(&doc), "b", resumed(5), at(5)).expect("b");
        let marks = decode_pauses(Some(&doc));
        assert_eq!(marks.get("a"), Some(&paused(0, 100)));
        assert_eq!(marks.get("b"), Some(&resumed(5)));
    }

    #[test]
    fn lapsed_marks_are_dropped_when_written() {
        let doc = with_mark(None, "short", paused(0, 30), at(0)).expect("short");
        let doc = with_mark(Some(&doc), "done", resumed(0), at(0)).expect("done");
        // An hour and a minute later: the pause ended, the resume is old.
        let later = at(3660);
        let doc = with_mark(Some(&doc), "long", paused(3600, 7200), later).expect("long");
        let marks = decode_pauses(Some(&doc));
        assert_eq!(marks.keys().collect::<Vec<_>>(), ["long"]);
        // A pause ending exactly now is over; a resume younger than an
        // hour is kept.
        assert!(!paused(0, 60).live(at(60)));
        assert!(paused(0, 60).live(at(59)));
        assert!(resumed(0).live(at(3599)));
        assert!(!resumed(0).live(at(3600)));
    }

    #[test]
    fn junk_reads_as_nothing_and_bad_entries_are_skipped() {
        for junk in [None, Some(""), Some("["), Some("[1]"), Some("3")] {
            assert!(decode_pauses(junk).is_empty(), "{junk:?}");
        }
        let doc = r#"{
            "ok": {"since": "2026-06-23T19:00:00Z", "until": "2026-06-23T20:00:00+00:00"},
            "no-until": {"since": "2026-06-23T19:00:00Z"},
            "backwards": {"since": "2026-06-23T20:00:00Z", "until": "2026-06-23T19:00:00Z"},
            "bad-time": {"resumed": "soon"},
            "number": 3,
            "resumed": {"resumed": "2026-06-23T21:00:00+02:00"}
        }"#;
        let marks = decode_pauses(Some(doc));
        assert_eq!(
            marks.keys().collect::<Vec<_>>(),
            ["ok", "resumed"],
            "{marks:?}"
        );
        // Missing texts default to what the API writes.
        assert_eq!(
            marks["ok"],
            PauseMark::Paused(PauseWindow {
                since: at(0),
                until: at(3600),
                note: String::new(),
                by: "api".into(),
                channel: "api".into(),
            })
        );
        assert_eq!(marks["resumed"], resumed(0));
    }

    #[test]
    fn the_document_is_capped_dropping_the_oldest_marks() {
        let mut marks = BTreeMap::new();
        for i in 0..400i64 {
            let mark = PauseMark::Paused(PauseWindow {
                since: at(i),
                until: at(100_000),
                note: "x".repeat(400),
                by: "ops".into(),
                channel: "api".into(),
            });
            marks.insert(format!("job-{i:03}"), mark);
        }
        let text = encode_pauses(&marks, at(500));
        assert!(text.len() <= PAUSES_MAX_BYTES, "{}", text.len());
        let kept = decode_pauses(Some(&text));
        assert!(kept.len() < 400 && kept.len() > 100, "{}", kept.len());
        assert!(kept.contains_key("job-399"), "the newest stays");
        assert!(!kept.contains_key("job-000"), "the oldest goes first");
        let first = kept.keys().next().cloned().unwrap_or_default();
        assert!(
            (first["job-".len()..].parse::<usize>().unwrap_or(0)..400)
                .all(|i| kept.contains_key(&format!("job-{i:03}"))),
            "a contiguous run of the newest"
        );
    }

    #[test]
    fn record_streams_keep_the_newest_mark_per_job_and_prune_the_rest() {
        let rec = |name: &str, job: &str, mark: PauseMark| {
            (name.to_owned(), body(record_body(job, &mark)))
        };
        let records = vec![
            rec("1", "a", paused(0, 5000)),
            rec("2", "a", resumed(10)),
            rec("3", "b", paused(20, 5000)),
            // Written later, but older: a late write from a former leader.
            rec("4", "b", paused(5, 9000)),
            rec("5", "c", paused(0, 100)),
            ("6".to_owned(), body(json!({"job": "d", "since": "x"}))),
            (
                "7".to_owned(),
                body(json!({"since": "2026-06-23T19:00:00Z"})),
            ),
        ];
        let marks = marks_in(&records);
        assert_eq!(marks.get("a"), Some(&resumed(10)));
        assert_eq!(marks.get("b"), Some(&paused(20, 5000)));
        assert_eq!(marks.get("c"), Some(&paused(0, 100)));
        assert_eq!(marks.len(), 3, "{marks:?}");
        assert_eq!(record_body("a", &resumed(10))["job"], "a");
        // At 200 s: c's pause ended; superseded a and b records go; the
        // unreadable ones stay.
        let mut pruned = records_to_prune(&records, at(200));
        pruned.sort();
        assert_eq!(pruned, ["1", "4", "5"]);
        // Once the resume is older than an hour it goes too.
        let mut pruned = records_to_prune(&records, at(3610));
        pruned.sort();
        assert_eq!(pruned, ["1", "2", "4", "5"]);
    }
}
