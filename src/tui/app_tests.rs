use super::*;
use crate::tui::model::LastRun;
use crate::tui::worker::LogEvent;

pub(crate) fn options() -> Options {
    Options {
        ascii: false,
        theme: Theme {
            hue: 0,
            light: false,
        },
        poll: Some(Duration::from_secs(3)),
        job: None,
    }
}

pub(crate) fn job(name: &str) -> Job {
    Job {
        name: name.to_owned(),
        enabled: true,
        schedule: "*/5 * * * *".to_owned(),
        command: format!("run {name}"),
        paused: Some(None),
        ..Job::default()
    }
}

pub(crate) fn with_jobs(jobs: Vec<Job>) -> App {
    let mut app = App::new(options());
    app.update(Update::Jobs(jobs, Instant::now()), Instant::now());
    app.take_effects();
    app
}

pub(crate) fn sent(app: &mut App) -> Vec<Command> {
    app.take_effects()
        .into_iter()
        .filter_map(|e| match e {
            Effect::Send(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn a_job_flag_opens_its_drawer_and_tail_at_once() {
    let mut app = App::new(Options {
        job: Some("nightly".into()),
        ..options()
    });
    let drawer = app.drawer.as_ref().expect("drawer");
    assert_eq!((drawer.job.as_str(), drawer.tab), ("nightly", Tab::Logs));
    let commands = sent(&mut app);
    assert!(matches!(&commands[..], [Command::Tail { job: Some(j), .. }] if j == "nightly"));
}

#[test]
fn polls_rebuild_the_view_and_keep_the_selection() {
    let mut app = with_jobs(vec![job("b"), job("c"), job("a")]);
    assert!(app.connected);
    assert_eq!(app.view.len(), 3);
    assert_eq!(app.selected_job().map(|j| j.name.as_str()), Some("a"));
    app.sel = 2;
    app.remember_selection();
    assert_eq!(app.selected.as_deref(), Some("c"));
    // a new job sorts in front: the selection follows "c"
    app.update(
        Update::Jobs(
            vec![job("c"), job("aa"), job("a"), job("b")],
            Instant::now(),
        ),
        Instant::now(),
    );
    assert_eq!(app.selected_job().map(|j| j.name.as_str()), Some("c"));
    assert_eq!(app.sel, 3);
    // "c" goes away: the row index stays, clamped
    app.update(Update::Jobs(vec![job("a")], Instant::now()), Instant::now());
    assert_eq!(app.sel, 0);
    app.update(Update::Offline("connection refused".into()), Instant::now());
    assert!(!app.connected);
    assert_eq!(app.offline.as_deref(), Some("connection refused"));
    app.update(Update::JobsUnchanged, Instant::now());
    assert!(app.connected && app.offline.is_none());
    assert_eq!(app.jobs.len(), 1, "a 304 keeps the list");
}

#[test]
fn countdowns_run_from_the_poll() {
    let t0 = Instant::now();
    let mut app = App::new(options());
    app.update(
        Update::Jobs(
            vec![Job {
                scheduled_in: Some(10.0),
                ..job("a")
            }],
            t0,
        ),
        t0,
    );
    let later = t0 + Duration::from_secs(4);
    let left = app.next_in(&app.jobs[0], later).unwrap();
    assert!((left - 6.0).abs() < 1e-6, "{left}");
}

#[test]
fn a_401_opens_the_token_prompt_and_the_token_restarts_the_tail() {
    let mut app = App::new(Options {
        job: Some("a".into()),
        ..options()
    });
    app.take_effects();
    app.open(Overlay::Palette);
    app.update(Update::Unauthorized, Instant::now());
    assert_eq!(app.top(), Some(Overlay::Token));
    assert!(
        !app.is_open(Overlay::Palette),
        "the prompt replaces the palette"
    );
    assert_eq!(app.offline.as_deref(), Some("unauthorized"));
    // a second 401 while it is open leaves it as it is
    app.token_input = "sec".into();
    app.update(Update::Unauthorized, Instant::now());
    assert_eq!(app.token_input, "sec");
    let generation = app.drawer.as_ref().unwrap().generation;
    app.save_token(Instant::now());
    assert!(!app.is_open(Overlay::Token));
    assert!(app.token_input.is_empty());
    let commands = sent(&mut app);
    assert!(matches!(&commands[0], Command::SetToken(Some(t)) if t == "sec"));
    assert!(matches!(commands[1], Command::Refresh));
    assert!(
        commands.iter().any(|c| matches!(c, Command::Tail { job: Some(j), generation: g } if j == "a" && *g != generation)),
        "{commands:?}"
    );
    assert_eq!(
        app.toasts.last().map(|t| t.text.as_str()),
        Some("token set for this session")
    );
}

#[test]
fn log_events_of_a_replaced_tail_are_ignored() {
    let mut app = with_jobs(vec![job("a")]);
    app.open_drawer("a", Tab::Logs);
    let old = app.drawer.as_ref().unwrap().generation;
    app.open_drawer("a", Tab::Logs);
    let new = app.drawer.as_ref().unwrap().generation;
    assert_ne!(old, new);
    app.update(
        Update::Log(old, LogEvent::Line("stdout".into(), "stale".into())),
        Instant::now(),
    );
    app.update(Update::Log(new, LogEvent::Attach(false)), Instant::now());
    app.update(
        Update::Log(new, LogEvent::Line("stderr".into(), "fresh".into())),
        Instant::now(),
    );
    let texts: Vec<&str> = app
        .drawer
        .as_ref()
        .unwrap()
        .logs
        .entries
        .iter()
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(texts, ["fresh"]);
}

#[test]
fn a_scrolled_log_stays_on_its_lines() {
    let mut app = with_jobs(vec![job("a")]);
    app.open_drawer("a", Tab::Logs);
    let g = app.drawer.as_ref().unwrap().generation;
    for i in 0..5 {
        app.update(
            Update::Log(g, LogEvent::Line("stdout".into(), format!("{i}"))),
            Instant::now(),
        );
    }
    app.drawer.as_mut().unwrap().log_scroll = 2;
    app.update(
        Update::Log(g, LogEvent::Line("stdout".into(), "5".into())),
        Instant::now(),
    );
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 3);
}

#[test]
fn action_answers_toast_and_refresh() {
    let mut app = with_jobs(vec![job("a")]);
    app.open_drawer("a", Tab::Logs);
    app.take_effects();
    let now = Instant::now();
    app.update(
        Update::Acted(Action::Start, "a".into(), Ok((200, Value::Null))),
        now,
    );
    assert_eq!(app.toasts.last().unwrap().text, "started a");
    let commands = sent(&mut app);
    assert!(
        matches!(commands[..], [Command::Refresh, Command::Kick]),
        "{commands:?}"
    );
    let refused = serde_json::json!({"error": "job 'a' is disabled"});
    app.update(
        Update::Acted(Action::Start, "a".into(), Ok((409, refused))),
        now,
    );
    assert_eq!(app.toasts.last().unwrap().text, "job 'a' is disabled");
    assert_eq!(app.toasts.last().unwrap().tone, Tone::Warn);
    assert!(
        sent(&mut app).is_empty(),
        "nothing to refresh after a refusal"
    );
    app.update(
        Update::Acted(Action::Cancel, "a".into(), Ok((409, Value::Null))),
        now,
    );
    assert_eq!(app.toasts.last().unwrap().text, "a is not running");
    app.update(
        Update::Acted(Action::Pause, "b".into(), Ok((404, Value::Null))),
        now,
    );
    assert_eq!(app.toasts.last().unwrap().text, "no such job: b");
    app.update(
        Update::Acted(Action::Resume, "a".into(), Err("timed out".into())),
        now,
    );
    assert_eq!(app.toasts.last().unwrap().text, "resume a: timed out");
    app.update(
        Update::Acted(
            Action::Start,
            "x\x1b]0;t\x07".into(),
            Ok((202, Value::Null)),
        ),
        now,
    );
    assert_eq!(
        app.toasts.last().unwrap().text,
        "queued x in its pool",
        "server text is sanitized"
    );
    assert!(app.expire(now + Duration::from_secs(5)));
    assert!(app.toasts.is_empty());
}

#[test]
fn the_drawer_loads_its_tabs_once_and_again_after_a_run() {
    let finished = |at: &str| Job {
        last_run: Some(LastRun {
            outcome: "success".into(),
            finished_at: Some(at.into()),
            ..LastRun::default()
        }),
        ..job("a")
    };
    let mut app = with_jobs(vec![finished("2026-01-01T00:00:00+00:00")]);
    app.open_drawer("a", Tab::History);
    let commands = sent(&mut app);
    assert!(
        matches!(&commands[1], Command::Runs(j) if j == "a"),
        "{commands:?}"
    );
    app.update(
        Update::Runs("a".into(), Ok(serde_json::json!({"runs": []}))),
        Instant::now(),
    );
    assert!(matches!(
        app.drawer.as_ref().unwrap().runs,
        Load::Done(Ok(_))
    ));
    // an unchanged poll asks for nothing
    app.update(
        Update::Jobs(vec![finished("2026-01-01T00:00:00+00:00")], Instant::now()),
        Instant::now(),
    );
    assert!(sent(&mut app).is_empty());
    // a run finished since: the history is asked again
    app.update(
        Update::Jobs(vec![finished("2026-01-01T00:05:00+00:00")], Instant::now()),
        Instant::now(),
    );
    assert!(matches!(&sent(&mut app)[..], [Command::Runs(j)] if j == "a"));
    // an answer for another job's drawer is dropped
    app.update(Update::Runs("b".into(), Ok(Value::Null)), Instant::now());
    assert!(matches!(app.drawer.as_ref().unwrap().runs, Load::Loading));
}

#[test]
fn the_schedule_tab_asks_the_engine_in_the_jobs_zone() {
    let mut app = with_jobs(vec![Job {
        timezone: Some("Europe/Paris".into()),
        ..job("a")
    }]);
    app.open_drawer("a", Tab::Schedule);
    let commands = sent(&mut app);
    let Some(Command::Preview { job: name, query }) = commands.get(1) else {
        panic!("{commands:?}")
    };
    assert_eq!(name, "a");
    let get = |k: &str| query.iter().find(|(q, _)| q == k).map(|(_, v)| v.as_str());
    assert_eq!(get("expr"), Some("*/5 * * * *"));
    assert_eq!(get("seed"), Some("a"));
    assert_eq!(get("tz"), Some("Europe/Paris"));
    // a drawer opened before the list arrived asks once it does
    let mut early = App::new(Options {
        job: Some("a".into()),
        ..options()
    });
    early.drawer.as_mut().unwrap().tab = Tab::Schedule;
    early.take_effects();
    early.update(Update::Jobs(vec![job("a")], Instant::now()), Instant::now());
    assert!(matches!(&sent(&mut early)[..], [Command::Preview { .. }]));
}

#[test]
fn terminate_quits_and_meta_is_kept() {
    let mut app = App::new(options());
    app.update(
        Update::Meta(Some("1.0".into()), Some("v1:abc".into())),
        Instant::now(),
    );
    app.update(Update::Meta(None, None), Instant::now());
    assert_eq!(app.version.as_deref(), Some("1.0"));
    assert_eq!(app.job_set_id.as_deref(), Some("v1:abc"));
    app.update(Update::Terminate, Instant::now());
    assert!(app.quit);
}
