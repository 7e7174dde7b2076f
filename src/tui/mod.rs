//! `cronstable tui`: the terminal dashboard, a client of a running daemon's
//! HTTP API (the routes the web dashboard uses). Three threads: this one
//! owns the terminal and the state ([`app::App`]) and draws; a reader
//! turns key presses into updates; the worker ([`worker`]) talks to the
//! daemon. Both feed one channel, so the screen redraws when something
//! arrived and once a second for the clock and the countdowns, never
//! waiting on the network.

mod actions;
mod ambient;
pub mod app;
pub mod args;
mod boards;
mod boot;
mod calendar;
mod checks;
mod drawer;
mod drawer_state;
mod feeds;
pub mod format;
mod incident;
mod keys;
mod load;
mod logo;
pub mod logs;
mod merged;
pub mod model;
mod palette;
mod panels;
mod polling;
pub mod prefs;
mod probe;
pub mod render;
mod sandbox;
mod saver;
mod settings;
pub mod sse;
pub mod text;
pub mod theme;
pub mod verdict;
pub mod view;
mod wall;
pub mod worker;
mod zen;

use app::{App, Effect, Options};
use args::TuiArgs;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use saver::Save;
use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};
use worker::Update;

/// The message (and exit 2) without a terminal, as the manual words it.
pub const NOT_A_TTY: &str =
    "cronstable tui needs an interactive terminal (stdin/stdout are not a tty)";

/// The shortest time between two frames (a log flood redraws at most
/// this often).
const FRAME: Duration = Duration::from_millis(33);
/// How often the boot self-test's screen moves on.
const BOOT_FRAME: Duration = Duration::from_millis(60);

/// Runs the dashboard; returns the process's exit code.
pub fn run(args: &TuiArgs) -> u8 {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!("{NOT_A_TTY}");
        return 2;
    }
    let env = |name: &str| std::env::var(name).ok();
    // Resolved before the screen changes, so a bad token or TLS file is a
    // plain line on an intact terminal.
    let prepared = args
        .connect
        .token(&env)
        .and_then(|token| Ok((token, args.connect.client(&env, worker::REQUEST_TIMEOUT)?)));
    let (token, client) = match prepared {
        Ok(ready) => ready,
        Err(err) => {
            eprintln!("cronstable tui: {err}");
            return 2;
        }
    };
    let (tx, rx) = mpsc::channel();
    let prefs_path = prefs::path(crate::platform::user_config_dir().as_deref());
    let remembered = prefs::load(prefs_path.as_deref());
    // A flag given on the command line wins over the remembered value.
    let poll = if args.poll.is_some() {
        args.interval()
    } else {
        remembered.poll()
    };
    let commands = match worker::start(&args.connect.url, client, token, poll, tx.clone()) {
        Ok(commands) => commands,
        Err(err) => {
            eprintln!("cronstable tui: cannot start: {err}");
            return 1;
        }
    };
    let to_screen = tx.clone();
    let saver = match saver::Saver::start(move |saved| {
        // The screen is gone only when the process ends.
        let _ = to_screen.send(Update::Saved(saved));
    }) {
        Ok(saver) => saver,
        Err(err) => {
            eprintln!("cronstable tui: cannot start: {err}");
            return 1;
        }
    };
    let theme = args
        .theme
        .as_deref()
        .and_then(theme::Theme::named)
        .unwrap_or_else(|| remembered.theme());
    let mut app = App::new(Options {
        ascii: args.ascii || remembered.ascii,
        theme,
        poll,
        job: args.job.clone(),
    });
    app.wall = args.tv;
    app.wrap = remembered.wrap;
    app.timestamps = remembered.timestamps;
    app.prefs_path = prefs_path;
    app.ambient = remembered.ambient(Instant::now());
    let (on, last) = (remembered.boot, remembered.boot_last);
    if checks::due(args.boot_forced(), on, last, app::wall_clock()) {
        app.start_boot(Instant::now());
    }
    if let Err(err) = enter() {
        leave();
        eprintln!("cronstable tui: cannot set up the terminal: {err}");
        return 1;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        leave();
        previous(info);
    }));
    std::thread::Builder::new()
        .name("tui-keys".into())
        .spawn(move || {
            while let Ok(event) = crossterm::event::read() {
                if tx.send(Update::Input(event)).is_err() {
                    break;
                }
            }
        })
        .ok();
    let result = event_loop(&mut app, &rx, &commands, &saver);
    leave();
    match result {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("cronstable tui: {err}");
            1
        }
    }
}

/// Raw mode and the alternate screen.
fn enter() -> std::io::Result<()> {
    terminal::enable_raw_mode()?;
    crossterm::execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        crossterm::event::EnableBracketedPaste,
        crossterm::cursor::Hide
    )
}

/// The terminal as it was (safe to call twice, and from the panic hook).
fn leave() {
    let _ = crossterm::execute!(
        std::io::stdout(),
        crossterm::event::DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = terminal::disable_raw_mode();
}

fn event_loop(
    app: &mut App,
    rx: &mpsc::Receiver<Update>,
    commands: &tokio::sync::mpsc::UnboundedSender<worker::Command>,
    saver: &saver::Saver,
) -> std::io::Result<()> {
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut dirty = true;
    let mut drawn_at: Option<Instant> = None;
    let mut second = app::wall_clock() as i64;
    let mut saved = prefs::Prefs::of(app);
    loop {
        carry_out(app, commands, saver, &mut terminal);
        // Every change of a remembered setting is saved at once (on the
        // writer thread; a failure comes back as a toast).
        let current = prefs::Prefs::of(app);
        if current != saved {
            if let Some(path) = &app.prefs_path {
                saver.save(Save::Prefs(path.clone(), current.clone()));
            }
            saved = current;
        }
        if app.quit {
            return Ok(());
        }
        let now = Instant::now();
        let wall = app::wall_clock();
        if wall as i64 != second {
            second = wall as i64;
            app.expire(now);
            app.zen_tick(now);
            dirty = true;
        }
        dirty |= app.boot_tick(now, wall);
        let since = drawn_at.map_or(FRAME, |t| now.duration_since(t));
        if dirty && since >= FRAME {
            terminal.draw(|frame| render::draw(frame, app, app::Now { instant: now, wall }))?;
            drawn_at = Some(now);
            dirty = false;
        }
        let wait = if dirty {
            FRAME.saturating_sub(since)
        } else {
            // until the clock's next second
            Duration::from_secs_f64(1.0 - wall.fract()).max(Duration::from_millis(5))
        };
        let wait = match app.ambient.boot {
            Some(_) => wait.min(BOOT_FRAME),
            None => wait,
        };
        match rx.recv_timeout(wait) {
            Ok(update) => {
                take(app, update, &mut terminal)?;
                while let Ok(update) = rx.try_recv() {
                    take(app, update, &mut terminal)?;
                }
                dirty = true;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

type Term = Terminal<CrosstermBackend<std::io::Stdout>>;

fn take(app: &mut App, update: Update, terminal: &mut Term) -> std::io::Result<()> {
    let now = Instant::now();
    match update {
        Update::Input(Event::Key(key)) => app.key(key, now),
        Update::Input(Event::Paste(text)) => {
            // Pasted text is typing, never hotkeys: only a text field (or
            // the token prompt) takes it.
            let typing = app.focus.is_some()
                || matches!(app.top(), Some(app::Overlay::Token | app::Overlay::Palette));
            if typing {
                for c in text.chars().filter(|c| !c.is_control()) {
                    app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), now);
                }
            }
        }
        Update::Input(Event::Resize(..)) => terminal.autoresize()?,
        Update::Input(_) => {}
        other => app.update(other, now),
    }
    Ok(())
}

/// Does what the state asked for.
fn carry_out(
    app: &mut App,
    commands: &tokio::sync::mpsc::UnboundedSender<worker::Command>,
    saver: &saver::Saver,
    terminal: &mut Term,
) {
    if std::mem::take(&mut app.ambient.bell_due) {
        let out = terminal.backend_mut();
        let _ = write!(out, "\x07");
        let _ = out.flush();
    }
    for effect in app.take_effects() {
        match effect {
            Effect::Send(command) => {
                // The worker ends only with the process.
                let _ = commands.send(command);
            }
            Effect::Copy(text) => {
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
                let out = terminal.backend_mut();
                let _ = write!(out, "\x1b]52;c;{data}\x07");
                let _ = out.flush();
                // Both paths, as the manual says: the platform's copy tool
                // too, on a thread of its own (it may take a moment), best
                // effort since OSC 52 cannot be checked either.
                let _ = std::thread::Builder::new()
                    .name("tui-copy".into())
                    .spawn(move || crate::platform::copy_to_clipboard(&text));
            }
            Effect::SaveLog(job, contents) => saver.save(Save::Log { job, contents }),
            // The copy went out before: a failed write leaves it.
            Effect::SaveIncident(text) => saver.save(Save::Incident(text)),
        }
    }
}
