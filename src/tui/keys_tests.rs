use super::*;
use crate::tui::app::tests::{job, sent, with_jobs};
use crate::tui::model::{Job, Pause};
use crate::tui::view::{Segment, SortKey};
use crate::tui::worker::{LogEvent, Update};

fn press(app: &mut App, code: KeyCode) {
    app.key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

fn ctrl(app: &mut App, c: char) {
    app.key(
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
        Instant::now(),
    );
}

fn selected(app: &App) -> &str {
    app.selected_job().map_or("", |j| j.name.as_str())
}

fn board() -> App {
    with_jobs(vec![
        job("alpha"),
        Job {
            running: true,
            ..job("beta")
        },
        Job {
            enabled: false,
            ..job("gamma")
        },
        Job {
            paused: Some(Some(Pause::default())),
            ..job("delta")
        },
        Job {
            paused: None,
            ..job("epsilon")
        },
    ])
}

#[test]
fn j_and_k_move_and_wrap() {
    let mut app = board();
    assert_eq!(selected(&app), "alpha");
    typed(&mut app, "j");
    assert_eq!(selected(&app), "beta");
    press(&mut app, KeyCode::Down);
    assert_eq!(selected(&app), "delta");
    typed(&mut app, "kk");
    assert_eq!(selected(&app), "alpha");
    press(&mut app, KeyCode::Up);
    assert_eq!(
        selected(&app),
        "gamma",
        "k from the top wraps to the bottom"
    );
    press(&mut app, KeyCode::Home);
    assert_eq!(selected(&app), "alpha");
    press(&mut app, KeyCode::End);
    assert_eq!(selected(&app), "gamma");
}

#[test]
fn r_x_and_p_act_on_the_selected_job_when_they_can() {
    let mut app = board();
    // alpha: idle and enabled
    typed(&mut app, "r");
    assert!(matches!(&sent(&mut app)[..], [Command::Act(Action::Start, j)] if j == "alpha"));
    typed(&mut app, "x");
    assert!(sent(&mut app).is_empty(), "x needs a running job");
    typed(&mut app, "p");
    assert!(matches!(&sent(&mut app)[..], [Command::Act(Action::Pause, j)] if j == "alpha"));
    // beta runs: r is inert, x cancels
    typed(&mut app, "jr");
    assert!(sent(&mut app).is_empty());
    typed(&mut app, "x");
    assert!(matches!(&sent(&mut app)[..], [Command::Act(Action::Cancel, j)] if j == "beta"));
    // delta is paused: p resumes
    typed(&mut app, "jp");
    assert!(matches!(&sent(&mut app)[..], [Command::Act(Action::Resume, j)] if j == "delta"));
    // epsilon comes from a daemon without pauses: p is inert
    typed(&mut app, "jp");
    assert_eq!(selected(&app), "epsilon");
    assert!(sent(&mut app).is_empty());
    // gamma is disabled: r is inert
    typed(&mut app, "jr");
    assert!(sent(&mut app).is_empty());
}

#[test]
fn the_filter_takes_typing_until_enter_or_esc() {
    let mut app = board();
    typed(&mut app, "/");
    assert_eq!(app.focus, Some(Focus::Filter));
    typed(&mut app, "ta");
    assert_eq!(app.filter, "ta");
    let names: Vec<&str> = app
        .view
        .iter()
        .map(|&i| app.jobs[i].name.as_str())
        .collect();
    assert_eq!(names, ["beta", "delta"]);
    typed(&mut app, "q");
    assert!(!app.quit, "q is text while the filter has the cursor");
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.focus, None);
    typed(&mut app, "/");
    ctrl(&mut app, 'u');
    assert_eq!(app.filter, "");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.focus, None);
    assert_eq!(app.view.len(), 5);
}

#[test]
fn f_s_and_shift_s_change_the_view() {
    let mut app = board();
    typed(&mut app, "f");
    assert_eq!(app.segment, Segment::Ok);
    typed(&mut app, "fff");
    assert_eq!(app.segment, Segment::Off);
    assert_eq!(app.view.len(), 1);
    typed(&mut app, "f");
    assert_eq!(app.segment, Segment::All);
    typed(&mut app, "s");
    assert_eq!(app.sort, SortKey::Status);
    assert_eq!(selected(&app), "gamma", "the selection follows its job");
    typed(&mut app, "S");
    assert!(app.descending);
    assert_eq!(app.toasts.last().unwrap().text, "sort: status ↓");
}

#[test]
fn enter_opens_the_drawer_and_esc_closes_it() {
    let mut app = board();
    typed(&mut app, "j");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.drawer.as_ref().map(|d| d.job.as_str()), Some("beta"));
    assert!(matches!(&sent(&mut app)[..], [Command::Tail { job: Some(j), .. }] if j == "beta"));
    // in the drawer r and x go to its job, whatever its state
    typed(&mut app, "r");
    assert!(matches!(&sent(&mut app)[..], [Command::Act(Action::Start, j)] if j == "beta"));
    press(&mut app, KeyCode::Esc);
    assert!(app.drawer.is_none());
    assert!(matches!(
        &sent(&mut app)[..],
        [Command::Tail { job: None, .. }]
    ));
}

#[test]
fn tabs_switch_and_load() {
    let mut app = board();
    press(&mut app, KeyCode::Enter);
    sent(&mut app);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.drawer.as_ref().unwrap().tab, Tab::History);
    assert!(matches!(&sent(&mut app)[..], [Command::Runs(j)] if j == "alpha"));
    press(&mut app, KeyCode::Right);
    assert_eq!(app.drawer.as_ref().unwrap().tab, Tab::Resources);
    assert!(matches!(&sent(&mut app)[..], [Command::Resources(_)]));
    press(&mut app, KeyCode::Left);
    assert_eq!(app.drawer.as_ref().unwrap().tab, Tab::History);
    assert!(sent(&mut app).is_empty(), "loaded once");
    app.key(
        KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT),
        Instant::now(),
    );
    press(&mut app, KeyCode::Left);
    assert_eq!(app.drawer.as_ref().unwrap().tab, Tab::Schedule);
}

#[test]
fn log_keys_toggle_search_and_save() {
    let mut app = board();
    press(&mut app, KeyCode::Enter);
    let g = app.drawer.as_ref().unwrap().generation;
    for line in ["one", "Two", "three", "two again"] {
        app.update(
            Update::Log(g, LogEvent::Line("stdout".into(), line.into())),
            Instant::now(),
        );
    }
    sent(&mut app);
    typed(&mut app, "f");
    assert!(!app.follow);
    assert!(matches!(&sent(&mut app)[..], [Command::Follow(false)]));
    typed(&mut app, "tw");
    assert!(app.timestamps && app.wrap);
    typed(&mut app, "/two");
    assert_eq!(app.focus, Some(Focus::LogSearch));
    assert_eq!(app.drawer.as_ref().unwrap().search, "two");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.focus, None);
    // on the first match (entry 1): three entries below it
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 2);
    typed(&mut app, "n");
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 0);
    typed(&mut app, "n");
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 2, "n wraps");
    typed(&mut app, "N");
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 0);
    press(&mut app, KeyCode::Home);
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 3);
    press(&mut app, KeyCode::End);
    assert_eq!(app.drawer.as_ref().unwrap().log_scroll, 0);
    typed(&mut app, "d");
    let effects = app.take_effects();
    assert!(
        matches!(&effects[..], [Effect::SaveLog(j, text)] if j == "alpha" && text == "one\nTwo\nthree\ntwo again\n")
    );
    // Esc blurs a search first, then closes the drawer
    typed(&mut app, "/");
    press(&mut app, KeyCode::Esc);
    assert!(app.drawer.is_some());
    press(&mut app, KeyCode::Esc);
    assert!(app.drawer.is_none());
}

#[test]
fn the_palette_and_the_token_prompt_take_every_key() {
    let mut app = board();
    ctrl(&mut app, 'k');
    assert_eq!(app.top(), Some(Overlay::Palette));
    typed(&mut app, "cluster q");
    assert!(!app.quit);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.top(), Some(Overlay::Cluster));
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.top(), None);
    ctrl(&mut app, 'p');
    typed(&mut app, "run alpha");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(&sent(&mut app)[..], [Command::Act(Action::Start, j)] if j == "alpha"));
    app.open(Overlay::Token);
    typed(&mut app, "s3cret");
    press(&mut app, KeyCode::Backspace);
    assert_eq!(app.token_input, "s3cre");
    press(&mut app, KeyCode::Esc);
    assert!(!app.is_open(Overlay::Token));
    assert!(app.token_input.is_empty());
}

#[test]
fn help_opens_with_question_mark_and_q_or_ctrl_c_quit() {
    let mut app = board();
    typed(&mut app, "?");
    assert_eq!(app.top(), Some(Overlay::Help));
    typed(&mut app, "jj");
    assert_eq!(app.panel_scroll, 2);
    typed(&mut app, "?");
    assert_eq!(app.top(), None);
    typed(&mut app, "q");
    assert!(app.quit);
    let mut other = board();
    ctrl(&mut other, 'c');
    assert!(other.quit);
}

#[test]
fn the_poll_interval_cycles_to_paused_and_back() {
    let mut app = board();
    let now = Instant::now();
    app.cycle_poll(now);
    assert_eq!(app.poll, Some(Duration::from_secs(5)));
    app.cycle_poll(now);
    app.cycle_poll(now);
    assert_eq!(app.poll, None);
    app.cycle_poll(now);
    assert_eq!(app.poll, Some(Duration::from_secs(1)));
    let commands = sent(&mut app);
    assert!(
        matches!(commands.last(), Some(Command::SetPoll(Some(d))) if *d == Duration::from_secs(1))
    );
}

#[test]
fn w_toggles_the_wallboard_and_esc_leaves_it_last() {
    use crate::tui::app::Overlay;
    let mut app = with_jobs(vec![job("a")]);
    press(&mut app, KeyCode::Char('w'));
    assert!(app.wall);
    app.open(Overlay::Fleet);
    press(&mut app, KeyCode::Char('f'));
    assert!(app.fleet_failing, "f filters the fleet while it is on top");
    press(&mut app, KeyCode::Esc);
    assert!(
        app.wall && !app.is_open(Overlay::Fleet),
        "esc closes the panel first"
    );
    press(&mut app, KeyCode::Esc);
    assert!(!app.wall);
    press(&mut app, KeyCode::Char('w'));
    press(&mut app, KeyCode::Char('w'));
    assert!(!app.wall);
}

fn failing(name: &str, exit: f64) -> Job {
    Job {
        last_run: Some(crate::tui::model::LastRun {
            outcome: "failure".into(),
            exit_code: Some(exit),
            finished_at: Some("2027-01-15T07:59:00+00:00".into()),
            ..Default::default()
        }),
        ..job(name)
    }
}

#[test]
fn i_toggles_the_timeline_and_a_acknowledges_the_alarm_once() {
    let mut app = with_jobs(vec![failing("a", 69.0), failing("b", 69.0), job("c")]);
    assert!(app.alarm.raised());
    let v = app.verdict.clone().expect("a verdict");
    assert_eq!(v.sub, "×2 share exit code 69 within 1s — may share a cause");
    press(&mut app, KeyCode::Char('a'));
    assert!(!app.alarm.raised());
    assert_eq!(app.toasts.len(), 1);
    press(&mut app, KeyCode::Char('a'));
    assert_eq!(app.toasts.len(), 1, "nothing left to acknowledge");
    press(&mut app, KeyCode::Char('i'));
    assert_eq!(app.top(), Some(Overlay::Timeline));
    press(&mut app, KeyCode::Char('f'));
    assert!(app.timeline_failing);
    press(&mut app, KeyCode::Char('i'));
    assert_eq!(app.top(), None);
}

fn merged_line(stream: &str, text: &str) -> LogEvent {
    LogEvent::Line(stream.to_owned(), text.to_owned())
}

#[test]
fn m_tails_up_to_four_jobs_and_merges_their_lines() {
    let names = ["a", "b", "c", "d", "e"];
    let mut app = with_jobs(names.iter().map(|n| job(n)).collect());
    let now = Instant::now();
    for i in 0..5 {
        app.sel = i;
        app.toggle_merged(now);
        assert!(app.is_open(Overlay::Merged));
        if i < 4 {
            app.toggle_merged(now);
            assert!(!app.is_open(Overlay::Merged));
        }
    }
    let tails: Vec<&str> = app.merged.tails.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(tails, ["a", "b", "c", "d"], "a fifth is refused");
    assert!(app.toasts.iter().any(|t| t.text.contains("full")));
    let merges: Vec<Vec<(String, u64)>> = sent(&mut app)
        .into_iter()
        .filter_map(|c| match c {
            Command::Merge(jobs) => Some(jobs),
            _ => None,
        })
        .collect();
    let last = merges.last().expect("a merge");
    assert_eq!(last.len(), 4);
    assert_eq!(merges[merges.len() - 2], Vec::new(), "closing stops them");
    let gen = |i: usize| app.merged.tails[i].1;
    let (ga, gc) = (gen(0), gen(2));
    assert!(app.merged.take(ga, &merged_line("stdout", "from a"), 1.0));
    assert!(app
        .merged
        .take(gc, &merged_line("stderr", "from \x1b[31mc"), 2.0));
    assert!(app.merged.take(ga, &merged_line("stdout", "a again"), 3.0));
    assert!(!app.merged.take(9999, &merged_line("stdout", "stray"), 0.0));
    let merged = app.merged.tail(10);
    let texts: Vec<&str> = merged.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["from a", "from c", "a again"]);
    assert_eq!(merged.iter().map(|m| m.0).collect::<Vec<_>>(), [0, 2, 0]);
    assert_eq!(app.merged.tail(1).len(), 1);
    let p = app.theme.palette();
    let rows: Vec<String> = crate::tui::merged::body(&app.merged, &p, 10)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert!(
        rows[0].contains("▸ a") && rows[0].contains("■ d"),
        "{rows:?}"
    );
    assert!(
        rows[2].starts_with(" c") && rows[2].ends_with("│ from c"),
        "{rows:?}"
    );
    app.clear_merged();
    assert!(app.merged.tails.is_empty() && !app.is_open(Overlay::Merged));
}

#[test]
fn the_sandbox_takes_the_typing_and_asks_about_each_text() {
    let mut app = board();
    ctrl(&mut app, 'k');
    typed(&mut app, "schedule preview");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.top(), Some(Overlay::Sandbox));
    sent(&mut app);
    // `q`, `m`, `i` are text here, not the board's keys
    typed(&mut app, "q m i");
    assert!(!app.quit);
    assert_eq!(app.sandbox.input, "q m i");
    assert_eq!(app.top(), Some(Overlay::Sandbox));
    let asked: Vec<String> = sent(&mut app)
        .into_iter()
        .filter_map(|c| match c {
            Command::Sandbox(expr) => Some(expr),
            _ => None,
        })
        .collect();
    // a blank that changes nothing once trimmed asks nothing
    assert_eq!(asked, ["q", "q m", "q m i"]);
    ctrl(&mut app, 'u');
    assert!(app.sandbox.input.is_empty());
    assert!(sent(&mut app).is_empty(), "an empty row asks nothing");
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.top(), None);
}

#[test]
fn x_in_live_logs_drops_the_chosen_job_and_stops_only_its_stream() {
    let mut app = with_jobs(["a", "b", "c"].iter().map(|n| job(n)).collect());
    let now = Instant::now();
    for i in 0..3 {
        app.sel = i;
        app.toggle_merged(now);
        if i < 2 {
            app.toggle_merged(now);
        }
    }
    sent(&mut app);
    let gen_b = app.merged.tails[1].1;
    assert!(app
        .merged
        .take(gen_b, &merged_line("stdout", "from b"), 1.0));
    // j/k move the choice within the three: to c and back to b
    typed(&mut app, "kjjjk");
    assert_eq!(app.merged.sel, 1);
    typed(&mut app, "x");
    assert!(app.is_open(Overlay::Merged), "the panel stays open");
    let names: Vec<&str> = app.merged.tails.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    assert!(app.merged.tail(10).is_empty(), "b's lines went with it");
    let commands = sent(&mut app);
    assert!(
        matches!(&commands[..], [Command::Unmerge(g)] if *g == gen_b),
        "{commands:?}"
    );
    assert!(app.toasts.iter().any(|t| t.text == "live logs: dropped b"));
    typed(&mut app, "xx");
    assert!(app.merged.tails.is_empty());
    typed(&mut app, "x");
    assert_eq!(sent(&mut app).len(), 2, "nothing left to drop");
    // the board's x (cancel) is not reached while the panel is open
    assert!(app.is_open(Overlay::Merged));
}
