use super::*;
use crate::tui::app::tests::{job, with_jobs};
use crate::tui::model::Job;
use crate::tui::theme::Theme;
use serde_json::json;
use std::time::Instant;

fn palette() -> Palette {
    Theme {
        hue: 0,
        light: false,
    }
    .palette()
}

fn plain(lines: &[Line]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

fn fleet_answer() -> Value {
    json!({"enabled": true, "nodes": [
        {"node_name": "alpha", "self": true, "status": "ok", "jobs": {
            "backup": {"running": false, "enabled": true, "last": {"outcome": "success"}},
            "report": {"running": true, "enabled": true, "last": null}}},
        {"node_name": "beta", "self": false, "status": "unreachable", "jobs": {
            "backup": {"running": false, "enabled": true, "last": {"outcome": "failure"}}}}
    ]})
}

#[test]
fn the_fleet_matrix_has_a_column_per_node_and_filters_failing() {
    let p = palette();
    let mut feeds = Feeds::default();
    assert!(plain(&fleet(&feeds, false, &p))[0].contains("waiting for /fleet"));
    feeds.put(Feed::Fleet, Ok(json!({"enabled": false, "nodes": []})));
    assert!(plain(&fleet(&feeds, false, &p))[0].contains("no gossip backend"));
    feeds.put(Feed::Fleet, Ok(fleet_answer()));
    let all = plain(&fleet(&feeds, false, &p));
    assert!(all[0].contains("2 nodes · 2 jobs · all jobs"));
    assert!(all[1].contains("1 alpha (this node) · ok"));
    assert!(all[2].contains("2 beta · unreachable"));
    let backup = all.iter().find(|l| l.contains("backup")).expect("row");
    assert!(backup.ends_with("  ●  ✕"), "{backup}");
    let report = all.iter().find(|l| l.contains("report")).expect("row");
    assert!(report.ends_with("  ▶  ·"), "{report}");
    let failing = plain(&fleet(&feeds, true, &p));
    assert!(failing.iter().any(|l| l.contains("backup")));
    assert!(!failing.iter().any(|l| l.contains("report")));
}

#[test]
fn the_heatmap_counts_the_last_day_by_hour_worst_outcome_first() {
    let p = palette();
    let mut feeds = Feeds::default();
    // 2027-01-15T08:00:00Z
    let now = 1_800_000_000.0 - (1_800_000_000 % 3600) as f64;
    let at = |secs_ago: f64| {
        chrono::DateTime::from_timestamp((now - secs_ago) as i64, 0)
            .expect("t")
            .to_rfc3339()
    };
    feeds.put(
        Feed::Activity,
        Ok(json!({"jobs": {
            "busy": [
                {"finished_at": at(90_000.0), "outcome": "failure"},
                {"finished_at": at(30.0), "outcome": "success"},
                {"finished_at": at(60.0), "outcome": "failure"},
                {"finished_at": at(7200.0 + 5.0), "outcome": "success"}],
            "idle": []}})),
    );
    let lines = heatmap(&feeds, &p, now);
    let text = plain(&lines);
    assert!(text[0].contains("1 of 2 jobs ran in the last 24 hours"));
    let row = &lines[2];
    // the name, then 24 hours: the newest (two runs, one failed) last
    assert_eq!(row.spans.len(), 25);
    assert_eq!(row.spans[24].content, "▒▒");
    assert_eq!(row.spans[24].style.fg, Some(p.fail));
    // two hours before: one good run; the day-old failure is out
    assert_eq!(row.spans[22].content, "░░");
    assert_eq!(row.spans[22].style.fg, Some(p.ok));
    assert_eq!(row.spans[1].content, "··");
    assert!(!text.iter().any(|l| l.contains("idle")));
}

#[test]
fn upcoming_runs_are_soonest_first_without_paused_or_disabled_jobs() {
    let p = palette();
    let mut app = with_jobs(vec![
        Job {
            scheduled_in: Some(600.0),
            ..job("later")
        },
        Job {
            scheduled_in: Some(5.0),
            ..job("soon")
        },
        Job {
            scheduled_in: Some(1.0),
            enabled: false,
            ..job("off")
        },
        Job {
            scheduled_in: None,
            ..job("never")
        },
    ]);
    let now = Now {
        instant: app.fetched.unwrap_or_else(Instant::now),
        wall: 0.0,
    };
    app.fetched = Some(now.instant);
    let text = plain(&upcoming(&app, &p, now));
    assert!(text[0].contains("2 jobs have a next fire"));
    assert!(text[1].contains("soon") && text[1].contains("in 5s"));
    assert!(text[2].contains("later") && text[2].contains("in 10m"));
}

#[test]
fn the_state_inspector_summarizes_the_inventory() {
    let p = palette();
    let mut feeds = Feeds::default();
    feeds.put(Feed::State, Ok(json!({"enabled": false})));
    assert!(plain(&state(&feeds, &p))[0].contains("no durable store"));
    feeds.put(
        Feed::State,
        Ok(json!({"enabled": true, "enumerable": true,
            "view": {"backend": "filesystem", "path": "/var/lib/c", "namespace": "default",
                     "topology": "single"},
            "records": {"runs": {"count": 12, "streams": 3, "scopes": []}},
            "documents": {},
            "leases": [{"name": "leader", "holder": "n1", "fence": 4, "expired": true}],
            "quarantine": []})),
    );
    let text = plain(&state(&feeds, &p));
    assert!(text[0].contains("filesystem store at /var/lib/c · namespace default · single"));
    assert!(text
        .iter()
        .any(|l| l.contains("runs") && l.contains("12 files in 3 streams")));
    assert!(text.iter().any(|l| l.contains("1 leases held")));
    assert!(text
        .iter()
        .any(|l| l.contains("leader") && l.contains("n1 · fence 4 · expired")));
}

#[test]
fn the_state_inspector_reads_the_chosen_stream() {
    use crate::tui::app::Overlay;
    use crate::tui::worker::{Command, Update};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let p = palette();
    let inventory = json!({"enabled": true,
        "records": {"runs": {"count": 2, "streams": 1, "scopes": [{"scope": "backup", "count": 2}]},
                    "logs": {"count": 1, "streams": 1, "scopes": [{"scope": "backup", "count": 1}]}},
        "documents": {"kv": {"count": 1, "streams": 1, "scopes": [{"scope": "global", "count": 1}]},
                      "other": {"count": 1, "streams": 1, "scopes": [{"scope": "x", "count": 1}]}}});
    let targets = state_targets(&inventory);
    assert_eq!(
        targets,
        vec![
            (
                "records runs/backup".to_owned(),
                "/state/records?stream=runs%2Fbackup&limit=20".to_owned()
            ),
            (
                "documents kv/global".to_owned(),
                "/state/documents?ns=kv%2Fglobal".to_owned()
            ),
        ]
    );
    let mut app = with_jobs(vec![]);
    app.open(Overlay::State);
    app.update(Update::Feed(Feed::State, Ok(inventory)), Instant::now());
    app.take_effects();
    let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
    app.key(key(KeyCode::Char('j')), Instant::now());
    app.key(key(KeyCode::Char('j')), Instant::now());
    app.key(key(KeyCode::Enter), Instant::now());
    let asked: Vec<String> = crate::tui::app::tests::sent(&mut app)
        .into_iter()
        .filter_map(|c| match c {
            Command::Detail(path) => Some(path),
            _ => None,
        })
        .collect();
    assert_eq!(asked, vec!["/state/documents?ns=kv%2Fglobal".to_owned()]);
    let text = plain(&state(&app.feeds, &p));
    assert!(text.iter().any(|l| l.contains("reading…")));
    app.update(
        Update::Detail(
            "/state/documents?ns=kv%2Fglobal".into(),
            Ok(json!({"namespace": "kv/global", "documents": [{"key": "k1", "valueSize": 3}]})),
        ),
        Instant::now(),
    );
    let text = plain(&state(&app.feeds, &p));
    assert!(
        text.iter().any(|l| l.contains("\"key\":\"k1\"")),
        "{text:?}"
    );
}
