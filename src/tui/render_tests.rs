use super::*;
use crate::tui::app::tests::{job, with_jobs};
use crate::tui::app::Tab;
use crate::tui::model::{LastRun, Live, Pause, Sla};
use crate::tui::worker::{LogEvent, Update};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::Instant;

/// The screen `app` draws on a `cols` x `rows` terminal, as text lines.
fn screen(app: &mut App, cols: u16, rows: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(cols, rows)).expect("terminal");
    let now = Now {
        instant: app.fetched.unwrap_or_else(Instant::now),
        wall: 1_800_000_000.0,
    };
    terminal.draw(|f| draw(f, app, now)).expect("draw");
    let buffer = terminal.backend().buffer();
    (0..rows)
        .map(|y| {
            (0..cols)
                .map(|x| buffer[(x, y)].symbol().to_owned())
                .collect::<String>()
        })
        .collect()
}

fn line<'a>(screen: &'a [String], needle: &str) -> &'a str {
    screen
        .iter()
        .find(|l| l.contains(needle))
        .map_or("", String::as_str)
}

#[test]
fn the_board_shows_each_jobs_state() {
    let t = "2027-01-15T07:59:00+00:00"; // 60 s before the frame's clock
    let mut app = with_jobs(vec![
        Job {
            scheduled_in: Some(90.0),
            last_run: Some(LastRun {
                outcome: "success".into(),
                finished_at: Some(t.into()),
                duration: Some(4.2),
                ..LastRun::default()
            }),
            cluster_owner: Some(None),
            ..job("fine")
        },
        Job {
            running: true,
            sla: Some(Sla {
                state: "late".into(),
            }),
            running_resources: Some(Live {
                cpu_percent: Some(42.0),
                rss_bytes: Some(3.0 * 1048576.0),
            }),
            ..job("busy")
        },
        Job {
            paused: Some(Some(Pause {
                until: Some("2027-01-15T09:30:00+00:00".into()),
                ..Pause::default()
            })),
            ..job("resting")
        },
        Job {
            cluster_owner: Some(Some("node-b".into())),
            ..job("owned")
        },
    ]);
    let s = screen(&mut app, 160, 12);
    assert!(
        s[0].contains("cronstable") && s[0].contains("● online"),
        "{}",
        s[0]
    );
    assert!(s[1].contains("4 jobs"), "{}", s[1]);
    for title in [
        "status", "name", "schedule", "last", "next", "dur", "runs", "cpu/mem", "owner", "command",
    ] {
        assert!(s[2].contains(title), "{title} in {}", s[2]);
    }
    let fine = line(&s, "fine");
    assert!(
        fine.contains("● OK")
            && fine.contains("1m ago")
            && fine.contains("in 1m")
            && fine.contains("4.2s"),
        "{fine}"
    );
    let busy = line(&s, "busy");
    assert!(
        busy.contains("▶ Running   OVERDUE")
            && busy.contains("· · ·")
            && busy.contains("42% 3.0MiB"),
        "{busy}"
    );
    let resting = line(&s, "resting");
    assert!(
        resting.contains("⏸ Paused") && resting.contains("⏸ til 09:30"),
        "{resting}"
    );
    assert!(line(&s, "owned").contains("node-b"), "{s:?}");
    assert!(line(&s, "fine").contains("∅"), "no owner known: {s:?}");
    assert!(s[11].contains("q quit"), "the footer: {}", s[11]);
    app.ascii = true;
    let s = screen(&mut app, 160, 12);
    assert!(line(&s, "resting").contains("p Paused"), "{s:?}");
}

#[test]
fn server_text_never_reaches_the_terminal_raw() {
    let evil = "x\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[31mred\x1b[0m\u{9b}H";
    let mut app = with_jobs(vec![Job {
        command: evil.into(),
        ..job(evil)
    }]);
    app.open_drawer(evil, Tab::Logs);
    let g = app.drawer.as_ref().unwrap().generation;
    app.update(
        Update::Log(g, LogEvent::Line("stdout".into(), evil.into())),
        Instant::now(),
    );
    let s = screen(&mut app, 160, 12);
    let all = s.join("\n");
    assert!(!all.chars().any(|c| c.is_control() && c != '\n'), "{all:?}");
    assert!(
        line(&s, "▏").contains("xredH"),
        "the log line's text stays: {s:?}"
    );
}

#[test]
fn a_narrow_board_drops_columns_and_the_drawer_takes_the_right() {
    let mut app = with_jobs(vec![job("one")]);
    let s = screen(&mut app, 80, 10);
    assert!(
        !s[2].contains("runs") && !s[2].contains("schedule"),
        "{}",
        s[2]
    );
    app.open_drawer("one", Tab::Logs);
    let s = screen(&mut app, 120, 12);
    assert!(
        s[1].contains("logs  history  resources  schedule"),
        "{}",
        s[1]
    );
    assert_eq!(
        s[1].chars().position(|c| c == '│'),
        Some(120 - drawer_width(120) as usize)
    );
    assert!(line(&s, "press / to search").contains("follow on"), "{s:?}");
}

#[test]
fn no_jobs_says_why() {
    let mut app = App::new(crate::tui::app::tests::options());
    assert!(!line(&screen(&mut app, 100, 8), "connecting to the daemon").is_empty());
    app.update(Update::Offline("refused".into()), Instant::now());
    assert!(!line(&screen(&mut app, 100, 8), "no answer from the daemon yet").is_empty());
    let mut app = with_jobs(vec![]);
    assert!(!line(&screen(&mut app, 100, 8), "the daemon has no jobs").is_empty());
    let mut app = with_jobs(vec![job("a")]);
    app.filter = "zzz".into();
    app.recompute_view();
    assert!(!line(&screen(&mut app, 100, 8), "nothing matches the filter").is_empty());
    let s = screen(&mut app, 10, 3);
    assert!(s[0].starts_with("window"), "{s:?}");
}

#[test]
fn the_schedule_load_overlay_draws_over_the_board() {
    use crate::tui::app::Overlay;
    use crate::tui::feeds::Feed;
    let mut app = with_jobs(vec![job("a")]);
    app.open(Overlay::Load);
    let mut grid = vec![vec![0u64; 60]; 24];
    grid[0][5] = 2;
    app.update(
        Update::Feed(
            Feed::Pressure,
            Ok(serde_json::json!({"jobs": 1, "total_fires": 2, "hours": 24,
                "timezone": "UTC", "grid": grid, "by_minute_fires": [],
                "busiest_minute": {"minute": 5, "jobs": 1, "fires": 2}})),
        ),
        Instant::now(),
    );
    let shown = screen(&mut app, 100, 50);
    assert!(line(&shown, "schedule load").contains("schedule load"));
    assert!(line(&shown, "fires in the next 24 h").contains("1 jobs · 2 fires"));
    assert!(line(&shown, " 00 ").contains("·····█"));
    assert!(line(&shown, "waiting for /schedule/duplicates").contains("waiting"));
}

#[test]
fn the_wallboard_puts_the_worst_first_and_says_no_signal() {
    let mut app = with_jobs(vec![
        Job {
            last_run: Some(LastRun {
                outcome: "success".into(),
                ..LastRun::default()
            }),
            ..job("aaa-fine")
        },
        Job {
            last_run: Some(LastRun {
                outcome: "failure".into(),
                exit_code: Some(3.0),
                ..LastRun::default()
            }),
            ..job("zzz-broken")
        },
    ]);
    app.wall = true;
    let shown = screen(&mut app, 60, 20);
    assert!(!shown.iter().any(|l| l.contains("NO SIGNAL")));
    let first = line(&shown, "zzz-broken");
    assert!(first.find("zzz-broken") < first.find("aaa-fine").or(Some(usize::MAX)));
    assert!(shown[1].contains("zzz-broken"), "{shown:?}");
    assert!(line(&shown, "exit 3").contains("Failed"));
    assert!(line(&shown, "wallboard").contains("1 failing"));
    app.update(Update::Offline("connection refused".into()), Instant::now());
    let shown = screen(&mut app, 60, 20);
    assert!(
        shown[0].contains("NO SIGNAL ▓▓  connection refused"),
        "{}",
        shown[0]
    );
}

#[test]
fn the_verdict_bar_sits_above_the_board_until_the_failures_clear() {
    let failed = |name: &str| Job {
        last_run: Some(LastRun {
            outcome: "failure".into(),
            exit_code: Some(69.0),
            finished_at: Some("2027-01-15T07:59:00+00:00".into()),
            ..LastRun::default()
        }),
        ..job(name)
    };
    let mut app = with_jobs(vec![failed("a"), failed("b"), job("c")]);
    let s = screen(&mut app, 140, 14);
    let bar = line(&s, "MULTIPLE FAILURES");
    assert!(bar.contains("2 jobs failing"), "{bar}");
    assert!(bar.contains("×2 share exit code 69"), "{bar}");
    assert!(bar.contains("ALARM (a to ack)"), "{bar}");
    app.alarm.ack();
    assert!(!line(&screen(&mut app, 140, 14), "MULTIPLE").contains("ALARM"));
    app.update(
        Update::Jobs(vec![job("a"), job("b")], Instant::now()),
        Instant::now(),
    );
    assert_eq!(line(&screen(&mut app, 140, 14), "FAILURES"), "");
}

#[test]
fn a_wallboard_tile_carries_the_jobs_recent_runs_as_bars() {
    use crate::tui::model::HistoryEntry;
    let run = |outcome: &str, duration: f64| HistoryEntry {
        outcome: outcome.into(),
        duration: Some(duration),
    };
    let mut app = with_jobs(vec![
        Job {
            history: vec![
                run("success", 1.0),
                run("failure", 8.0),
                run("success", 4.0),
            ],
            ..job("ran-thrice")
        },
        job("never-ran"),
    ]);
    app.wall = true;
    let shown = screen(&mut app, 60, 20);
    // the tile's third row: one bar a run, scaled to the longest; the
    // tile of the job that never ran (left of it) has none
    let tile = shown
        .iter()
        .position(|l| l.contains("ran-thrice"))
        .expect("tile");
    assert!(
        shown[tile + 2].contains("│                        ││▂█▅ "),
        "{shown:?}"
    );
}
