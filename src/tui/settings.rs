//! The settings panel (palette: "Open settings"): `j`/`k` choose a row,
//! `Enter`, `Space`, `←` or `→` change it. The edges save every change
//! to the preferences file (see `prefs.rs`). The selected row is the
//! panel's scroll position, which opening a panel resets.

use super::app::App;
use super::keys::{Key, POLL_CHOICES};
use super::text::{cell, fit};
use super::theme::Palette;
use super::worker::Command;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use std::time::Duration;

/// The rows' labels, in order.
pub const ROWS: [&str; 6] = [
    "Theme",
    "Light / dark",
    "Refresh interval",
    "Wrap log lines",
    "Log timestamps",
    "ASCII glyphs",
];

fn on_off(on: bool) -> String {
    if on { "on" } else { "off" }.to_owned()
}

/// Each row's value as shown.
pub fn values(app: &App) -> [String; 6] {
    [
        super::theme::HUES[app.theme.hue % super::theme::HUES.len()].to_owned(),
        if app.theme.light { "light" } else { "dark" }.to_owned(),
        app.poll
            .map_or("paused".to_owned(), |d| format!("{}s", d.as_secs())),
        on_off(app.wrap),
        on_off(app.timestamps),
        on_off(app.ascii),
    ]
}

impl App {
    /// A key in the settings panel.
    pub(super) fn settings_key(&mut self, key: Key) {
        let last = ROWS.len() - 1;
        match key {
            Key::Char('j') | Key::Down => self.panel_scroll = (self.panel_scroll + 1).min(last),
            Key::Char('k') | Key::Up => self.panel_scroll = self.panel_scroll.saturating_sub(1),
            Key::Enter | Key::Char(' ') | Key::Right => self.change_setting(1),
            Key::Left => self.change_setting(-1),
            _ => {}
        }
    }

    fn change_setting(&mut self, step: isize) {
        match self.panel_scroll {
            0 if step > 0 => self.theme = self.theme.next_hue(),
            0 => {
                let n = super::theme::HUES.len();
                for _ in 0..n - 1 {
                    self.theme = self.theme.next_hue();
                }
            }
            1 => self.theme = self.theme.flipped(),
            2 => {
                let current = self.poll.map(|d| d.as_secs());
                let n = POLL_CHOICES.len() as isize;
                let at = POLL_CHOICES.iter().position(|c| *c == current).unwrap_or(2) as isize;
                let next = POLL_CHOICES[(at + step).rem_euclid(n) as usize];
                self.poll = next.map(Duration::from_secs);
                self.send(Command::SetPoll(self.poll));
            }
            3 => self.wrap = !self.wrap,
            4 => self.timestamps = !self.timestamps,
            _ => self.ascii = !self.ascii,
        }
    }
}

/// The panel's rows and the file's path.
pub fn body(app: &App, p: &Palette) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = ROWS
        .iter()
        .zip(values(app))
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

    #[test]
    fn the_rows_change_what_they_name() {
        let mut app = with_jobs(Vec::new());
        assert_eq!(
            values(&app),
            ["standard", "dark", "3s", "off", "off", "off"]
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
        assert_eq!(values(&app)[2], "5s");
        assert!(sent(&mut app)
            .iter()
            .any(|c| matches!(c, Command::SetPoll(Some(d)) if d.as_secs() == 5)));
        for _ in 0..3 {
            app.settings_key(Key::Down);
            app.settings_key(Key::Enter);
        }
        assert_eq!(values(&app)[3..], ["on", "on", "on"]);
        app.settings_key(Key::Down);
        assert_eq!(app.panel_scroll, 5, "the last row stays chosen");
        let prefs = crate::tui::prefs::Prefs::of(&app);
        assert_eq!(prefs.theme, "modern-light");
        assert_eq!(prefs.poll_ms, 5000);
        assert!(prefs.wrap && prefs.timestamps && prefs.ascii);
        let p = app.theme.palette();
        let text: Vec<String> = body(&app, &p)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[2].contains("Refresh interval") && text[2].contains("‹ 5s ›"));
        assert!(text.last().is_some_and(|t| t.contains("set HOME")));
    }
}
