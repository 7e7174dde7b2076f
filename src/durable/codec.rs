//! Pause records (`paused/<job>`) in the original's fields: the mark type
//! lives in the scheduler, so its codec lives here, above both.

use crate::scheduler::pause::{PauseMark, PauseWindow};
use crate::state::format::{parse_iso, py_isoformat};
use serde_json::{json, Map, Value};

/// The record of a pause or resume `host` accepted.
pub fn pause_data(mark: &PauseMark, host: &str) -> Value {
    match mark {
        PauseMark::Paused(window) => json!({
            "kind": "paused",
            "since": py_isoformat(window.since),
            "until": py_isoformat(window.until),
            "note": window.note,
            "by": window.by,
            "channel": window.channel,
            "at": py_isoformat(window.since),
            "host": host,
        }),
        PauseMark::Resumed { at, by } => json!({
            "kind": "resumed",
            "by": by,
            "channel": "api",
            "at": py_isoformat(*at),
            "host": host,
        }),
    }
}

/// A pause record read back (None when it does not read: a record of
/// another kind, or a field missing).
pub fn pause_from_data(data: &Map<String, Value>) -> Option<PauseMark> {
    let text = |key: &str| data.get(key).and_then(Value::as_str);
    let instant = |key: &str| text(key).and_then(parse_iso);
    match text("kind")? {
        "paused" => Some(PauseMark::Paused(PauseWindow {
            since: instant("since").or_else(|| instant("at"))?,
            until: instant("until")?,
            note: text("note").unwrap_or_default().to_owned(),
            by: text("by").unwrap_or("api").to_owned(),
            channel: text("channel").unwrap_or("api").to_owned(),
        })),
        "resumed" => Some(PauseMark::Resumed {
            at: instant("at")?,
            by: text("by").unwrap_or("api").to_owned(),
        }),
        _ => None,
    }
}

/// Every pause mark of a stream's records (oldest first) that reads, in
/// the same order: the history the catch-up's pause windows come from.
pub fn pause_marks(records: &[(String, Map<String, Value>)]) -> Vec<PauseMark> {
    records
        .iter()
        .filter_map(|(_, data)| pause_from_data(data))
        .collect()
}

/// The newest pause mark of a stream's records (oldest first): the last
/// one that reads.
pub fn newest_pause(records: &[(String, Map<String, Value>)]) -> Option<PauseMark> {
    records
        .iter()
        .rev()
        .find_map(|(_, data)| pause_from_data(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn record(data: Value) -> (String, Map<String, Value>) {
        ("r".into(), data.as_object().cloned().expect("an object"))
    }

    #[test]
    fn every_readable_mark_comes_back_in_stream_order() {
        let at = |m: u32| Utc.with_ymd_and_hms(2026, 12, 1, 10, m, 0).unwrap();
        let pause = PauseMark::Paused(PauseWindow {
            since: at(1),
            until: at(5),
            note: "n".into(),
            by: "ops".into(),
            channel: "api".into(),
        });
        let resume = PauseMark::Resumed {
            at: at(3),
            by: "ops".into(),
        };
        let records = vec![
            record(pause_data(&pause, "h1")),
            record(json!({"kind": "paused", "until": "not a time"})),
            record(json!({"kind": "something-else"})),
            record(pause_data(&resume, "h2")),
        ];
        assert_eq!(pause_marks(&records), vec![pause, resume.clone()]);
        assert_eq!(newest_pause(&records), Some(resume));
        assert!(pause_marks(&[]).is_empty());
        // The original's record shape without `since` reads from `at`.
        let bare = record(json!({
            "kind": "paused",
            "until": "2026-12-01T10:05:00+00:00",
            "at": "2026-12-01T10:01:00+00:00",
        }));
        match pause_marks(&[bare]).as_slice() {
            [PauseMark::Paused(w)] => assert_eq!((w.since, w.until), (at(1), at(5))),
            other => panic!("{other:?}"),
        }
    }
}
