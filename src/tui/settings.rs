//! The settings panel (palette: "Open settings"), the manual's thirteen
//! rows: `j`/`k` choose a row, `Enter`, `Space`, `←` or `→` change it. The edges save every change
//! to the preferences file (see `prefs.rs`). The selected row is the
//! panel's scroll position, which opening a panel resets.

use super::app::App;
use super::keys::{Key, POLL_CHOICES};
use super::text::{cell, fit};
use super::theme::Palette;
use super::worker::Command;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use std::time::{Duration, Instant};

/// A row of the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// The hue.
    Theme,
    /// Dark or paper.
    LightDark,
    /// The color-vision palette.
    ColorVision,
    /// Plain-ASCII glyphs.
    Ascii,
    /// The poll interval.
    Refresh,
    /// The Logs tab's wrap.
    Wrap,
    /// The Logs tab's timestamps.
    Timestamps,
    /// The terminal bell on a new failure.
    Bell,
    /// The boot self-test.
    StartupChecks,
    /// No schedule or sparkline columns.
    Compact,
    /// The wallboard's screensaver.
    Zen,
    /// The screensaver's idle interval.
    ZenIdle,
    /// The header's moving mark.
    LivingLogo,
}

/// The rows, in order.
pub const ROWS: [Row; 13] = [
    Row::Theme,
    Row::LightDark,
    Row::ColorVision,
    Row::Ascii,
    Row::Refresh,
    Row::Wrap,
    Row::Timestamps,
    Row::Bell,
    Row::StartupChecks,
    Row::Compact,
    Row::Zen,
    Row::ZenIdle,
    Row::LivingLogo,
];

impl Row {
    /// The row's label.
    pub fn label(self) -> &'static str {
        match self {
            Row::Theme => "Theme",
            Row::LightDark => "Light / dark",
            Row::ColorVision => "Color vision",
            Row::Ascii => "ASCII glyphs",
            Row::Refresh => "Refresh interval",
            Row::Wrap => "Wrap log lines",
            Row::Timestamps => "Log timestamps",
            Row::Bell => "Audible cues (bell)",
            Row::StartupChecks => "Startup checks",
            Row::Compact => "Compact density",
            Row::Zen => "Zen screensaver",
            Row::ZenIdle => "Zen idle",
            Row::LivingLogo => "Living logo",
        }
    }
}

fn on_off(on: bool) -> String {
    if on { "on" } else { "off" }.to_owned()
}

/// A row's value as shown.
pub fn value(app: &App, row: Row) -> String {
    let a = &app.ambient;
    match row {
        Row::Theme => super::theme::HUES[app.theme.hue % super::theme::HUES.len()].to_owned(),
        Row::LightDark => if app.theme.light { "light" } else { "dark" }.to_owned(),
        Row::ColorVision => a.vision.label().to_owned(),
        Row::Ascii => on_off(app.ascii),
        Row::Refresh => app
            .poll
            .map_or("paused".to_owned(), |d| format!("{}s", d.as_secs())),
        Row::Wrap => on_off(app.wrap),
        Row::Timestamps => on_off(app.timestamps),
        Row::Bell => on_off(a.bell),
        Row::StartupChecks => on_off(a.startup_checks),
        Row::Compact => on_off(a.compact),
        Row::Zen => on_off(a.zen),
        Row::ZenIdle => format!("{}s", a.zen_idle),
        Row::LivingLogo => on_off(a.living_logo),
    }
}

impl App {
    /// A key in the settings panel.
    pub(super) fn settings_key(&mut self, key: Key) {
        let last = ROWS.len() - 1;
        let row = ROWS[self.panel_scroll.min(last)];
        match key {
            Key::Char('j') | Key::Down => self.panel_scroll = (self.panel_scroll + 1).min(last),
            Key::Char('k') | Key::Up => self.panel_scroll = self.panel_scroll.saturating_sub(1),
            Key::Enter | Key::Char(' ') | Key::Right => self.change_setting(row, 1),
            Key::Left => self.change_setting(row, -1),
            _ => {}
        }
    }

    /// Changes a row's value `step` choices on (a switch flips either way).
    pub(super) fn change_setting(&mut self, row: Row, step: isize) {
        let a = &mut self.ambient;
        match row {
            Row::Theme if step > 0 => self.theme = self.theme.next_hue(),
            Row::Theme => {
                let n = super::theme::HUES.len();
                for _ in 0..n - 1 {
                    self.theme = self.theme.next_hue();
                }
            }
            Row::LightDark => self.theme = self.theme.flipped(),
            Row::ColorVision => a.vision = a.vision.step(step),
            Row::Ascii => self.ascii = !self.ascii,
            Row::Refresh => {
                let current = self.poll.map(|d| d.as_secs());
                let n = POLL_CHOICES.len() as isize;
                let at = POLL_CHOICES.iter().position(|c| *c == current).unwrap_or(2) as isize;
                let next = POLL_CHOICES[(at + step).rem_euclid(n) as usize];
                self.poll = next.map(Duration::from_secs);
                self.send(Command::SetPoll(self.poll));
            }
            Row::Wrap => self.wrap = !self.wrap,
            Row::Timestamps => self.timestamps = !self.timestamps,
            Row::Bell => a.bell = !a.bell,
            Row::StartupChecks => a.startup_checks = !a.startup_checks,
            Row::Compact => a.compact = !a.compact,
            Row::Zen => a.zen = !a.zen,
            Row::ZenIdle => a.zen_idle = super::ambient::step_zen_idle(a.zen_idle, step),
            Row::LivingLogo => a.living_logo = !a.living_logo,
        }
    }

    /// A palette row's change of a setting, confirmed by a toast.
    pub(super) fn palette_setting(&mut self, row: Row, now: Instant) {
        self.change_setting(row, 1);
        let text = format!("{}: {}", row.label().to_lowercase(), value(self, row));
        self.toast(super::app::Tone::Info, text, now);
    }
}

/// The panel's rows and the file's path.
pub fn body(app: &App, p: &Palette) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = ROWS
        .iter()
        .map(|row| (row.label(), value(app, *row)))
        .enumerate()
        .map(|(i, (label, value))| {
            let chosen = i == app.panel_scroll;
            let style = if chosen {
                p.ink(p.bright).bg(p.sel).add_modifier(Modifier::BOLD)
            } else {
                p.ink(p.fg)
            };
            Line::from(vec![
                Span::styled(format!(" {}", fit(label, 22)), style),
                Span::styled(format!("‹ {value} ›"), style.fg(p.accent)),
            ])
        })
        .collect();
    let saved = app.prefs_path.as_ref().map_or(
        "no place for a preferences file (set HOME)".to_owned(),
        |p| format!("saved to {}", cell(&p.display().to_string())),
    );
    out.push(Line::default());
    out.push(Line::styled(format!(" {saved}"), p.ink(p.dim)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::tests::{sent, with_jobs};
    use crate::tui::theme::Vision;

    fn values(app: &App) -> Vec<String> {
        ROWS.iter().map(|row| value(app, *row)).collect()
    }

    fn row_of(wanted: Row) -> usize {
        ROWS.iter().position(|r| *r == wanted).expect("a row")
    }

    #[test]
    fn the_rows_change_what_they_name() {
        let mut app = with_jobs(Vec::new());
        assert_eq!(
            values(&app),
            [
                "standard", "dark", "off", "off", "3s", "off", "off", "off", "on", "off", "on",
                "90s", "on"
            ]
        );
        app.settings_key(Key::Enter);
        assert_eq!(values(&app)[0], "carolina");
        app.settings_key(Key::Left);
        app.settings_key(Key::Left);
        assert_eq!(values(&app)[0], "modern", "left wraps backwards");
        app.settings_key(Key::Char('j'));
        app.settings_key(Key::Char(' '));
        assert_eq!(values(&app)[1], "light");
        app.settings_key(Key::Down);
        app.settings_key(Key::Right);
        assert_eq!(values(&app)[2], "red-green");
        app.settings_key(Key::Right);
        assert_eq!(app.ambient.vision, Vision::BlueYellow);
        app.settings_key(Key::Down);
        app.settings_key(Key::Enter);
        app.settings_key(Key::Down);
        app.settings_key(Key::Right);
        assert_eq!(values(&app)[3..5], ["on", "5s"]);
        assert!(sent(&mut app)
            .iter()
            .any(|c| matches!(c, Command::SetPoll(Some(d)) if d.as_secs() == 5)));
        // every switch after the refresh interval flips
        for _ in row_of(Row::Wrap)..ROWS.len() {
            app.settings_key(Key::Down);
            app.settings_key(Key::Enter);
        }
        assert_eq!(
            values(&app)[5..],
            ["on", "on", "on", "off", "on", "off", "120s", "off"]
        );
        app.settings_key(Key::Down);
        assert_eq!(app.panel_scroll, 12, "the last row stays chosen");
        app.settings_key(Key::Left);
        assert_eq!(values(&app)[12], "on", "a switch flips either way");
        app.panel_scroll = row_of(Row::ZenIdle);
        app.settings_key(Key::Left);
        app.settings_key(Key::Left);
        assert_eq!(app.ambient.zen_idle, 60);
        let prefs = crate::tui::prefs::Prefs::of(&app);
        assert_eq!(prefs.theme, "modern-light");
        assert_eq!(prefs.poll_ms, 5000);
        assert!(prefs.wrap && prefs.timestamps && prefs.ascii);
        assert_eq!(prefs.cvd, "tritan");
        assert!(prefs.sound && !prefs.boot && prefs.compact && !prefs.zen && prefs.motion);
        assert_eq!(prefs.zen_idle_s, 60);
        let p = app.theme.palette();
        let text: Vec<String> = body(&app, &p)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[4].contains("Refresh interval") && text[4].contains("‹ 5s ›"));
        assert!(text[7].contains("Audible cues (bell)") && text[7].contains("‹ on ›"));
        assert_eq!(text.len(), 15, "thirteen rows, a gap and the file");
        assert!(text.last().is_some_and(|t| t.contains("set HOME")));
    }

    #[test]
    fn palette_changes_confirm_with_a_toast() {
        let mut app = with_jobs(Vec::new());
        app.palette_setting(Row::Compact, Instant::now());
        assert!(app.ambient.compact);
        assert_eq!(
            app.toasts.last().map(|t| t.text.as_str()),
            Some("compact density: on")
        );
        app.palette_setting(Row::StartupChecks, Instant::now());
        assert!(!app.ambient.startup_checks);
        assert_eq!(
            app.toasts.last().map(|t| t.text.as_str()),
            Some("startup checks: off")
        );
    }
}
