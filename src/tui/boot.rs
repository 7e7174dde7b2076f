//! The BIOS-style boot self-test on screen: at start (see
//! [`super::checks::due`]) a full screen of checks against the live
//! daemon, the link's latency, its version, the job set, its schedules
//! and the cluster, each OK, WARN or FAIL. The probes run on the worker
//! (`probe.rs`), which sends each row as `checks.rs` judged it; here the
//! rows appear one by one, and the board takes over when the verdict has
//! been read, or at any key.

use super::app::{App, Now};
use super::checks::{Check, Item, Mark};
use super::text::fit;
use super::theme::Palette;
use super::worker::Command;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use std::time::{Duration, Instant};

/// The pause between two rows appearing.
const STEP: Duration = Duration::from_millis(180);
/// How long the verdict stays before the board comes.
const HOLD: Duration = Duration::from_millis(2500);

/// The self-test on screen.
#[derive(Debug, Clone)]
pub struct Boot {
    /// The rows judged so far, by [`Item`] order.
    pub checks: [Option<Check>; 5],
    /// How many rows show.
    pub shown: usize,
    /// When the last row appeared (or the test began).
    pub stepped: Instant,
    /// When the last row appeared, once all have.
    pub done_at: Option<Instant>,
}

impl Boot {
    /// A self-test beginning at `now`.
    pub fn new(now: Instant) -> Boot {
        Boot {
            checks: Default::default(),
            shown: 0,
            stepped: now,
            done_at: None,
        }
    }

    /// A row's judgement arrived.
    pub fn take(&mut self, check: Check) {
        let at = Item::ALL.iter().position(|i| *i == check.item).unwrap_or(0);
        self.checks[at] = Some(check);
    }

    /// Shows the next row when it is judged and its pause is over;
    /// whether the verdict has been up long enough to hand over.
    pub fn advance(&mut self, now: Instant) -> bool {
        let next_ready = self.checks.get(self.shown).is_some_and(Option::is_some);
        if next_ready && now.saturating_duration_since(self.stepped) >= STEP {
            self.shown += 1;
            self.stepped = now;
        }
        if self.shown == Item::ALL.len() && self.done_at.is_none() {
            self.done_at = Some(now);
        }
        self.done_at
            .is_some_and(|at| now.saturating_duration_since(at) >= HOLD)
    }

    /// The summary, once every row shows: the worst mark and its words.
    pub fn verdict(&self) -> Option<(Mark, String)> {
        self.done_at?;
        let marks: Vec<Mark> = self.checks.iter().flatten().map(|c| c.mark).collect();
        let count = |m: Mark| marks.iter().filter(|x| **x == m).count();
        let plural = |n: usize| if n == 1 { "" } else { "S" };
        let (fails, warns) = (count(Mark::Fail), count(Mark::Warn));
        Some(if fails > 0 {
            (Mark::Fail, format!("{fails} CHECK{} FAILED", plural(fails)))
        } else if warns > 0 {
            (Mark::Warn, format!("{warns} WARNING{}", plural(warns)))
        } else {
            (Mark::Ok, "ALL CHECKS PASSED".to_owned())
        })
    }
}

impl App {
    /// Puts the self-test on screen and asks the worker for its probes.
    pub fn start_boot(&mut self, now: Instant) {
        self.ambient.boot = Some(Boot::new(now));
        self.send(Command::Boot);
    }

    /// A probe's judgement (dropped when the test was skipped).
    pub fn boot_report(&mut self, check: Check) {
        if let Some(boot) = &mut self.ambient.boot {
            boot.take(check);
        }
    }

    /// Moves the self-test on at `now`, handing over to the board when
    /// it is over; whether it is still (or was until now) on screen.
    pub fn boot_tick(&mut self, now: Instant, wall: f64) -> bool {
        let Some(boot) = &mut self.ambient.boot else {
            return false;
        };
        if boot.advance(now) {
            self.finish_boot(wall);
        }
        true
    }

    /// Ends the self-test (done or skipped), noting when it ran.
    pub fn finish_boot(&mut self, wall: f64) {
        if self.ambient.boot.take().is_some() {
            self.ambient.boot_last = wall;
        }
    }
}

/// Draws the self-test over the whole screen.
pub fn draw(frame: &mut Frame, app: &App, boot: &Boot, p: &Palette, area: Rect, now: Now) {
    let width = area.width as usize;
    let mark = super::logo::mark(app.ambient.living_logo, true, app.ascii, now.wall);
    let title = format!(
        " {mark} CRONSTABLE TUI {} · POWER-ON SELF-TEST",
        env!("CARGO_PKG_VERSION")
    );
    let mut lines = vec![
        Line::default(),
        Line::styled(title, p.ink(p.accent).add_modifier(Modifier::BOLD)),
        Line::default(),
    ];
    let detail_w = width.saturating_sub(36).clamp(10, 60);
    for (n, item) in Item::ALL.iter().enumerate() {
        let label = format!(
            "   {} {}",
            item.label(),
            ".".repeat(14 - item.label().len())
        );
        if n < boot.shown {
            let Some(c) = &boot.checks[n] else { continue };
            let color = match c.mark {
                Mark::Ok => p.ok,
                Mark::Warn => p.warn,
                Mark::Fail => p.fail,
            };
            lines.push(Line::from(vec![
                Span::styled(label, p.ink(p.fg)),
                Span::styled(format!(" {} ", fit(&c.detail, detail_w)), p.ink(p.bright)),
                Span::styled(c.mark.word(), p.ink(color).add_modifier(Modifier::BOLD)),
            ]));
        } else if n == boot.shown {
            let dots = ".".repeat(1 + (now.wall.max(0.0) * 3.0) as usize % 3);
            lines.push(Line::from(vec![
                Span::styled(label, p.ink(p.fg)),
                Span::styled(format!(" probing{dots}"), p.ink(p.dim)),
            ]));
        }
    }
    lines.push(Line::default());
    if let Some((m, words)) = boot.verdict() {
        let color = match m {
            Mark::Ok => p.ok,
            Mark::Warn => p.warn,
            Mark::Fail => p.fail,
        };
        lines.push(Line::from(vec![
            Span::styled(
                format!(" {words}"),
                p.ink(color).add_modifier(Modifier::BOLD),
            ),
            Span::styled(" · starting the board", p.ink(p.dim)),
        ]));
        lines.push(Line::default());
    }
    lines.push(Line::styled(
        " any key skips · the checks run at most every 12 hours (--boot, --no-boot)",
        p.ink(p.dim),
    ));
    frame.render_widget(Paragraph::new(lines).style(p.base()), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(item: Item, mark: Mark, detail: &str) -> Check {
        Check {
            item,
            mark,
            detail: detail.into(),
        }
    }

    #[test]
    fn rows_appear_in_order_and_the_verdict_holds_before_the_board() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut boot = Boot::new(t0);
        assert!(!boot.advance(at(1000)));
        assert_eq!(boot.shown, 0, "nothing judged yet");
        // the cluster answers first: it waits behind the link
        boot.take(check(Item::Cluster, Mark::Ok, "standalone"));
        boot.take(check(Item::Link, Mark::Ok, "2 ms"));
        assert!(!boot.advance(at(1000)));
        assert_eq!(boot.shown, 1);
        assert!(!boot.advance(at(1100)));
        assert_eq!(boot.shown, 1, "no next row yet");
        for item in [Item::Firmware, Item::JobSet, Item::Schedules] {
            boot.take(check(item, Mark::Warn, "w"));
        }
        assert!(!boot.advance(at(1100)));
        assert_eq!(boot.shown, 1, "the pause between rows");
        let mut t = 1180;
        for shown in 2..=5 {
            assert!(!boot.advance(at(t)));
            assert_eq!(boot.shown, shown);
            t += 180;
        }
        assert_eq!(boot.done_at, Some(at(1720)));
        assert_eq!(boot.verdict(), Some((Mark::Warn, "3 WARNINGS".to_owned())));
        assert!(!boot.advance(at(1720 + 2499)));
        assert!(boot.advance(at(1720 + 2500)));
    }

    #[test]
    fn verdicts_name_the_worst() {
        let mut boot = Boot::new(Instant::now());
        for item in Item::ALL {
            boot.take(check(item, Mark::Ok, ""));
        }
        assert_eq!(boot.verdict(), None, "not before every row shows");
        boot.done_at = Some(Instant::now());
        assert_eq!(
            boot.verdict(),
            Some((Mark::Ok, "ALL CHECKS PASSED".to_owned()))
        );
        boot.take(check(Item::Link, Mark::Fail, ""));
        boot.take(check(Item::Cluster, Mark::Warn, ""));
        assert_eq!(
            boot.verdict(),
            Some((Mark::Fail, "1 CHECK FAILED".to_owned()))
        );
    }

    #[test]
    fn a_skip_ends_it_and_remembers_when() {
        let mut app = crate::tui::app::tests::with_jobs(Vec::new());
        let now = Instant::now();
        app.start_boot(now);
        assert!(crate::tui::app::tests::sent(&mut app)
            .iter()
            .any(|c| matches!(c, Command::Boot)));
        assert!(app.boot_tick(now, 10.0));
        app.key(
            crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('w'),
                crossterm::event::KeyModifiers::NONE,
            ),
            now,
        );
        assert!(app.ambient.boot.is_none());
        assert!(!app.wall, "the skipping key did nothing else");
        assert!(app.ambient.boot_last > 0.0);
        app.boot_report(check(Item::Link, Mark::Ok, "late"));
        assert!(!app.boot_tick(now, 20.0));
    }
}
