//! The wallboard (`w`): the board replaced by tiles, worst first, for a
//! screen across the room, with a tally at the foot and a `NO SIGNAL`
//! banner when the data has gone stale.

use super::app::{App, Now};
use super::format::fmt_ago;
use super::text::{cell, fit};
use super::theme::Palette;
use super::view::{glyph, health, Health};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use std::time::{Duration, Instant};

/// A tile's size.
const TILE_W: u16 = 26;
const TILE_H: u16 = 5;

/// Data older than this is stale whatever the interval.
const STALE_MIN: Duration = Duration::from_secs(15);

/// Worst first: failing, then the doubtful, then running, waiting, fine
/// and switched off.
pub fn severity(h: Health) -> u8 {
    match h {
        Health::Fail => 0,
        Health::Unknown => 1,
        Health::Cancelled => 2,
        Health::Run => 3,
        Health::Pending => 4,
        Health::Ok => 5,
        Health::Paused => 6,
        Health::Disabled => 7,
    }
}

/// The jobs in tile order (indices into `app.jobs`).
pub fn order(app: &App) -> Vec<usize> {
    let mut out: Vec<usize> = (0..app.jobs.len()).collect();
    out.sort_by(|&a, &b| {
        let h = |i: usize| app.facts.health.get(i).copied().map_or(9, severity);
        h(a).cmp(&h(b))
            .then(app.jobs[a].name.cmp(&app.jobs[b].name))
    });
    out
}

/// Whether the data is stale: the last poll failed, or none answered for
/// three intervals (at least [`STALE_MIN`]); a paused poll never ages.
pub fn no_signal(app: &App, now: Instant) -> bool {
    if !app.connected {
        return true;
    }
    let (Some(every), Some(at)) = (app.poll, app.answered) else {
        return false;
    };
    now.saturating_duration_since(at) > (every * 3).max(STALE_MIN)
}

/// Draws the wallboard over `area` (the whole screen).
pub fn draw(frame: &mut Frame, app: &App, p: &Palette, area: Rect, now: Now) {
    let mut top = area.y;
    if no_signal(app, now.instant) {
        let why = app
            .offline
            .as_deref()
            .map(cell)
            .unwrap_or_else(|| "no answer".into());
        let banner = Paragraph::new(Line::styled(
            format!(" ▓▓ NO SIGNAL ▓▓  {why}"),
            Style::default()
                .fg(p.bg)
                .bg(p.fail)
                .add_modifier(Modifier::BOLD),
        ));
        frame.render_widget(banner, Rect { height: 1, ..area });
        top += 1;
    }
    let foot_y = area.y + area.height.saturating_sub(1);
    let cols = (area.width / TILE_W).max(1);
    let rows = foot_y.saturating_sub(top) / TILE_H;
    let order = order(app);
    let room = (cols * rows) as usize;
    for (n, &i) in order.iter().take(room).enumerate() {
        let job = &app.jobs[i];
        let (h, word) = health(job);
        let color = match h {
            Health::Fail => p.fail,
            Health::Run => p.run,
            Health::Ok => p.ok,
            Health::Pending => p.pending,
            _ => p.dim,
        };
        let rect = Rect {
            x: area.x + (n as u16 % cols) * TILE_W,
            y: top + (n as u16 / cols) * TILE_H,
            width: TILE_W.min(area.width),
            height: TILE_H,
        };
        let last = job.last_run.as_ref();
        let age = fmt_ago(last.and_then(|r| r.finished_at.as_deref()), now.wall);
        let exit = last
            .and_then(|r| r.exit_code)
            .filter(|_| h == Health::Fail)
            .map(|c| format!(" · exit {c}"))
            .unwrap_or_default();
        let inner = TILE_W.saturating_sub(2) as usize;
        let body = vec![
            Line::styled(
                fit(
                    &format!("{} {}", glyph(h, app.ascii), cell(&job.name)),
                    inner,
                ),
                p.ink(color).add_modifier(Modifier::BOLD),
            ),
            Line::styled(fit(&format!("{word} · {age}{exit}"), inner), p.ink(p.fg)),
            // the recent runs, as the board's sparkline column draws them
            Line::from(p.sparkline(&job.history, inner, p.bg)),
        ];
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(p.ink(color))
            .style(p.base());
        frame.render_widget(Paragraph::new(body).block(block), rect);
    }
    let hidden = order.len().saturating_sub(room);
    let count = |h: Health| app.count(h);
    let mut foot = vec![
        Span::styled(" wallboard ", p.ink(p.accent).add_modifier(Modifier::BOLD)),
        Span::styled(
            format!("✕ {} failing  ", count(Health::Fail)),
            p.ink(p.fail),
        ),
        Span::styled(format!("▶ {} running  ", count(Health::Run)), p.ink(p.run)),
        Span::styled(format!("● {} ok  ", count(Health::Ok)), p.ink(p.ok)),
        Span::styled(format!("{} jobs", app.jobs.len()), p.ink(p.dim)),
    ];
    if hidden > 0 {
        foot.push(Span::styled(
            format!(" · {hidden} more off screen"),
            p.ink(p.dim),
        ));
    }
    foot.push(Span::styled(" · w/esc leave", p.ink(p.dim)));
    frame.render_widget(
        Paragraph::new(Line::from(foot)).style(p.base()),
        Rect {
            y: foot_y,
            height: 1,
            ..area
        },
    );
}
