use crate::tui::app::tests::{job, sent, with_jobs};
use crate::tui::app::{Effect, Overlay, Tab};
use crate::tui::model::{Job, LastRun};
use crate::tui::worker::{Action, Command, Sent, Update};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::Instant;

fn press(app: &mut crate::tui::app::App, code: KeyCode) {
    app.key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
}

fn chars(app: &mut crate::tui::app::App, keys: &str) {
    for c in keys.chars() {
        press(app, KeyCode::Char(c));
    }
}

fn finished(name: &str, outcome: &str, at: &str) -> Job {
    Job {
        last_run: Some(LastRun {
            outcome: outcome.to_owned(),
            exit_code: Some(if outcome == "failure" { 3.0 } else { 0.0 }),
            finished_at: Some(at.to_owned()),
            ..LastRun::default()
        }),
        ..job(name)
    }
}

fn jobs() -> Vec<Job> {
    vec![
        finished("old-fail", "failure", "2026-01-01T00:00:00Z"),
        finished("new-ok", "success", "2026-01-01T00:03:00Z"),
        finished("mid-fail", "failure", "2026-01-01T00:02:00Z"),
        Job {
            running: true,
            ..finished("busy", "failure", "2026-01-01T00:01:00Z")
        },
    ]
}

#[test]
fn the_palette_opens_the_panel_over_the_failing_jobs() {
    let mut app = with_jobs(jobs());
    app.key(
        KeyEvent::new(KeyCode::Char('k'), KeyModifiers::CONTROL),
        Instant::now(),
    );
    chars(&mut app, "review actions");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.top(), Some(Overlay::Actions));
    assert_eq!(app.actions.label, "failing jobs");
    // a running job is not failing (its health is running)
    assert_eq!(app.actions.names, ["old-fail", "mid-fail"]);
}

#[test]
fn s_sweeps_the_eligible_jobs_through_the_worker_and_a_stops_it() {
    let mut app = with_jobs(jobs());
    app.open_actions(
        vec!["old-fail".into(), "busy".into(), "mid-fail".into()],
        "incident set",
    );
    sent(&mut app);
    // `a` here is stop sending, not the alarm: nothing to stop yet
    chars(&mut app, "a");
    assert!(sent(&mut app).is_empty());
    chars(&mut app, "s");
    let commands = sent(&mut app);
    let [Command::Sweep { id, action, jobs }] = &commands[..] else {
        panic!("{commands:?}");
    };
    assert_eq!(*action, Action::Start);
    assert_eq!(jobs, &["old-fail", "mid-fail"]);
    let id = *id;
    app.update(
        Update::Swept(id, "old-fail".into(), Sent::Answered(200, None)),
        Instant::now(),
    );
    chars(&mut app, "a");
    assert!(matches!(&sent(&mut app)[..], [Command::StopSweep]));
    app.update(Update::SweepEnded(id, 1, true), Instant::now());
    assert!(matches!(&sent(&mut app)[..], [Command::Refresh]));
    let log: Vec<&str> = app.actions.log.iter().map(|l| l.1.as_str()).collect();
    assert_eq!(log.last().copied(), Some("done: 1 ok, 0 failed"));
    assert!(log.contains(&"aborted (1/2 sent)"), "{log:?}");
    // x: the running one
    chars(&mut app, "x");
    let commands = sent(&mut app);
    assert!(
        matches!(&commands[..], [Command::Sweep { action: Action::Cancel, jobs, .. }] if jobs == &["busy"]),
        "{commands:?}"
    );
}

#[test]
fn y_copies_the_writeup_and_asks_for_the_file() {
    let mut app = with_jobs(jobs());
    app.open_actions(vec!["old-fail".into()], "failing jobs");
    sent(&mut app);
    chars(&mut app, "y");
    let effects = app.take_effects();
    match &effects[..] {
        [Effect::Copy(copied), Effect::SaveIncident(saved)] => {
            assert_eq!(copied, saved);
            assert!(saved.starts_with("# cronstable incident: failing jobs\n"));
            assert!(saved.contains("- `old-fail`: exit code 3, finished "));
            assert!(saved.contains("Verdict: MULTIPLE FAILURES"), "{saved}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_timeline_selection_moves_filters_and_opens_the_logs() {
    let mut app = with_jobs(jobs());
    press(&mut app, KeyCode::Char('i'));
    assert_eq!(app.top(), Some(Overlay::Timeline));
    // newest first: new-ok, mid-fail, busy, old-fail
    chars(&mut app, "jjjjjj");
    assert_eq!(app.timeline_sel, 3);
    chars(&mut app, "k");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.top(), None);
    let drawer = app.drawer.as_ref().expect("a drawer");
    assert_eq!((drawer.job.as_str(), drawer.tab), ("busy", Tab::Logs));
    app.close_drawer();
    // f: failures only, the selection back on top
    chars(&mut app, "i");
    chars(&mut app, "f");
    assert!(app.timeline_failing);
    assert_eq!(app.timeline_sel, 0);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.drawer.as_ref().map(|d| d.job.as_str()),
        Some("mid-fail")
    );
    app.close_drawer();
    // m: the job actions over the incident set
    chars(&mut app, "im");
    assert_eq!(app.top(), Some(Overlay::Actions));
    assert!(!app.is_open(Overlay::Timeline));
    assert_eq!(app.actions.label, "incident set");
    assert_eq!(app.actions.names, ["old-fail", "mid-fail"]);
}
