//! The wallboard's zen screensaver: on an idle board (nothing failing or
//! running, the data fresh) the tiles give way to a quiet field, one
//! twinkling dot per job, after the keyboard has been idle for the
//! **Zen idle** interval. Any key wakes it without acting (`intercept`,
//! which also skips the boot self-test); a panel, a drawer, a focused
//! field or the token prompt keeps it away, and one that opens while it
//! shows ends it at the next second's tick. Whether it shows is
//! [`engaged`], a pure function of the conditions and two instants.

use super::app::{App, Now};
use super::format::fmt_in;
use super::text::{cell, fit};
use super::theme::Palette;
use super::view::Health;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use std::time::{Duration, Instant};

/// A job firing sooner than this shows a bright dot.
const SOON: f64 = 60.0;

/// What the screensaver's decision reads.
#[derive(Debug, Clone, Copy)]
pub struct Conditions {
    /// The **Zen screensaver** setting.
    pub enabled: bool,
    /// The wallboard is up.
    pub wall: bool,
    /// A panel, a drawer, a focused field, the token prompt or the boot
    /// self-test is over the board.
    pub covered: bool,
    /// Nothing is failing or running.
    pub quiet: bool,
    /// The data is fresh (no `NO SIGNAL`).
    pub fresh: bool,
    /// The **Zen idle** interval.
    pub idle_after: Duration,
    /// When the last key was pressed.
    pub last_key: Instant,
    /// Now.
    pub now: Instant,
}

/// Whether the screensaver shows: every condition holds and the keyboard
/// has been idle for at least the interval.
pub fn engaged(c: &Conditions) -> bool {
    c.enabled
        && c.wall
        && !c.covered
        && c.quiet
        && c.fresh
        && c.now.saturating_duration_since(c.last_key) >= c.idle_after
}

/// Whether something over the board takes the keys (and so keeps the
/// screensaver away).
pub fn covered(app: &App) -> bool {
    !app.overlays.is_empty()
        || app.drawer.is_some()
        || app.focus.is_some()
        || app.ambient.boot.is_some()
}

impl App {
    /// Decides again whether the screensaver shows (the screen's loop
    /// asks once a second); whether that changed.
    pub fn zen_tick(&mut self, now: Instant) -> bool {
        let conditions = Conditions {
            enabled: self.ambient.zen,
            wall: self.wall,
            covered: covered(self),
            quiet: self.count(Health::Fail) == 0 && self.count(Health::Run) == 0,
            fresh: !super::wall::no_signal(self, now),
            idle_after: Duration::from_secs(self.ambient.zen_idle),
            last_key: self.ambient.last_key,
            now,
        };
        let on = engaged(&conditions);
        let changed = on != self.ambient.zen_on;
        self.ambient.zen_on = on;
        changed
    }

    /// Every key passes here first: it resets the idle time, and it is
    /// spent (true) when it skips the boot self-test or wakes the
    /// screensaver, so it does nothing else.
    pub(super) fn intercept(&mut self, now: Instant) -> bool {
        self.ambient.last_key = now;
        if self.ambient.boot.is_some() {
            self.finish_boot(super::app::wall_clock());
            return true;
        }
        let showing = self.ambient.zen_on && !covered(self);
        self.ambient.zen_on = false;
        showing
    }
}

/// A job name's place in the field: a stable hash (FNV-1a), so a dot
/// stays put from frame to frame and session to session.
pub fn spot(name: &str, cols: u16, rows: u16) -> (u16, u16) {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let x = (hash % u64::from(cols.max(1))) as u16;
    let y = ((hash >> 32) % u64::from(rows.max(1))) as u16;
    (x, y)
}

/// The dot of a job at second `tick`: each twinkles on its own phase;
/// one about to fire is bright.
fn dot(name_phase: u16, tick: u64, soon: bool, ascii: bool) -> (&'static str, bool) {
    if soon {
        return (if ascii { "o" } else { "◉" }, true);
    }
    const ROUND: [&str; 4] = ["·", "∙", "•", "∙"];
    const PLAIN: [&str; 4] = [".", ".", "*", "."];
    let frames = if ascii { PLAIN } else { ROUND };
    (frames[((tick + u64::from(name_phase)) % 4) as usize], false)
}

/// Draws the field over `area` (the whole screen).
pub fn draw(frame: &mut Frame, app: &App, p: &Palette, area: Rect, now: Now) {
    let field_h = area.height.saturating_sub(2).max(1);
    let field_w = area.width.max(1);
    let mut grid: Vec<Vec<(&'static str, Color)>> =
        vec![vec![(" ", p.bg); field_w as usize]; field_h as usize];
    let tick = now.wall.max(0.0) as u64;
    let mut next: Option<(f64, &str)> = None;
    for job in app.jobs.iter().filter(|j| j.enabled) {
        let (x, y) = spot(&job.name, field_w, field_h);
        let due = app.next_in(job, now.instant);
        if let Some(s) = due {
            if next.is_none_or(|(best, _)| s < best) {
                next = Some((s, &job.name));
            }
        }
        let soon = due.is_some_and(|s| s < SOON);
        let (glyph, bright) = dot(x ^ y, tick, soon, app.ascii);
        grid[y as usize][x as usize] = (glyph, if bright { p.ok } else { p.dim });
    }
    let mut lines: Vec<Line<'static>> = grid
        .into_iter()
        .map(|row| {
            Line::from(
                row.into_iter()
                    .map(|(g, c)| Span::styled(g, p.ink(c)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let clock = chrono::DateTime::<chrono::Utc>::from_timestamp(now.wall as i64, 0)
        .map(|t| t.format("%H:%M UTC").to_string())
        .unwrap_or_default();
    let upcoming = next
        .map(|(s, name)| format!(" · next {} {}", cell(name), fmt_in(Some(s))))
        .unwrap_or_default();
    let caption = format!(
        "zen · {} quiet jobs{upcoming} · {clock} · any key wakes",
        app.jobs.len()
    );
    let width = area.width as usize;
    let pad = width.saturating_sub(super::text::width(&caption)) / 2;
    lines.push(Line::default());
    lines.push(Line::styled(
        fit(&format!("{}{caption}", " ".repeat(pad)), width),
        p.ink(p.dim),
    ));
    frame.render_widget(Paragraph::new(lines).style(p.base()), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of the flags, at idle times around the interval.
    #[test]
    fn engages_only_when_every_condition_holds_and_the_keys_rested_long_enough() {
        let key = Instant::now();
        let idle_after = Duration::from_secs(90);
        let idles = [
            (Duration::ZERO, false),
            (Duration::from_millis(89_999), false),
            (Duration::from_secs(90), true),
            (Duration::from_secs(3600), true),
        ];
        for bits in 0..32u8 {
            let flag = |n: u8| bits & (1 << n) != 0;
            for (idle, rested) in idles {
                let c = Conditions {
                    enabled: flag(0),
                    wall: flag(1),
                    covered: flag(2),
                    quiet: flag(3),
                    fresh: flag(4),
                    idle_after,
                    last_key: key,
                    now: key + idle,
                };
                let want = c.enabled && c.wall && !c.covered && c.quiet && c.fresh && rested;
                assert_eq!(engaged(&c), want, "{c:?}");
            }
        }
        // a key pressed "after" now (clocks read out of order) is no rest
        let c = Conditions {
            enabled: true,
            wall: true,
            covered: false,
            quiet: true,
            fresh: true,
            idle_after,
            last_key: key + Duration::from_secs(5),
            now: key,
        };
        assert!(!engaged(&c));
    }

    fn press(app: &mut App, c: char, now: Instant) {
        let key = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        );
        app.key(key, now);
    }

    #[test]
    fn the_wallboard_rests_then_a_key_wakes_it_without_acting() {
        use crate::tui::app::tests::{job, with_jobs};
        let mut app = with_jobs(vec![job("a"), job("b")]);
        let t0 = Instant::now();
        app.ambient.last_key = t0;
        app.ambient.zen_idle = 30;
        app.wall = true;
        // a paused poll never goes stale, so only the keys' rest counts
        app.poll = None;
        assert!(!app.zen_tick(t0 + Duration::from_secs(29)));
        assert!(!app.ambient.zen_on);
        assert!(app.zen_tick(t0 + Duration::from_secs(30)));
        assert!(app.ambient.zen_on);
        // `w` would leave the wallboard: the waking key does not
        press(&mut app, 'w', t0 + Duration::from_secs(31));
        assert!(app.wall && !app.ambient.zen_on);
        assert!(!app.zen_tick(t0 + Duration::from_secs(60)));
        assert!(app.zen_tick(t0 + Duration::from_secs(61)));
        // a token prompt (a 401) ends it at the next tick
        app.update(crate::tui::worker::Update::Unauthorized, t0);
        app.update(
            crate::tui::worker::Update::Jobs(vec![job("a")], t0),
            t0 + Duration::from_secs(61),
        );
        assert!(app.zen_tick(t0 + Duration::from_secs(62)));
        assert!(!app.ambient.zen_on);
        // and a key typed into the prompt is typing, not a wake
        press(&mut app, 'x', t0 + Duration::from_secs(63));
        assert_eq!(app.token_input, "x");
        // the setting off, or a running job, keep it away
        app.close(crate::tui::app::Overlay::Token);
        app.ambient.zen = false;
        assert!(!app.zen_tick(t0 + Duration::from_secs(600)));
        app.ambient.zen = true;
        let mut busy = job("a");
        busy.running = true;
        app.update(crate::tui::worker::Update::Jobs(vec![busy], t0), t0);
        assert!(!app.zen_tick(t0 + Duration::from_secs(600)));
        app.wall = false;
        app.update(crate::tui::worker::Update::Jobs(vec![job("a")], t0), t0);
        assert!(
            !app.zen_tick(t0 + Duration::from_secs(600)),
            "the board has none"
        );
    }

    #[test]
    fn spots_are_stable_and_inside_the_field() {
        for name in ["alpha", "beta", "", "a-very-long-job-name-indeed"] {
            let (x, y) = spot(name, 80, 20);
            assert!(x < 80 && y < 20);
            assert_eq!(spot(name, 80, 20), (x, y));
        }
        assert_eq!(spot("x", 0, 0), (0, 0));
        assert_ne!(spot("alpha", 160, 46), spot("beta", 160, 46));
    }

    #[test]
    fn dots_twinkle_and_a_near_fire_is_bright() {
        let seen: std::collections::HashSet<&str> =
            (0..4).map(|t| dot(3, t, false, false).0).collect();
        assert!(seen.len() >= 3, "{seen:?}");
        assert_eq!(dot(3, 7, true, false), ("◉", true));
        assert_eq!(dot(3, 7, true, true), ("o", true));
        assert!(dot(0, 2, false, true).0.is_ascii());
    }
}
