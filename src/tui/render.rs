//! Drawing a frame: the header, the toolbar, the jobs board (only the
//! rows on screen are built, so a 10,000-job board costs what a 40-job
//! one does), the footer and the toasts; the drawer and the panels are
//! drawn by their own modules on top.

use super::app::{App, Now, Tone};
use super::format::{fmt_ago, fmt_bytes, fmt_duration, fmt_in, fmt_percent, fmt_til};
use super::model::Job;
use super::text::{cell, fit, width};
use super::theme::Palette;
use super::view::{self, glyph, health, Column, Health, Segment};
use super::{drawer, panels};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

/// The drawer's width on a screen `cols` wide.
pub fn drawer_width(cols: u16) -> u16 {
    (cols * 3 / 5).clamp(46, 90).min(cols)
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App, now: Now) {
    let p = app.theme.palette_for(app.ambient.vision);
    let area = frame.area();
    frame.render_widget(Block::default().style(p.base()), area);
    if area.height < 4 || area.width < 20 {
        frame.render_widget(Paragraph::new("window too small").style(p.base()), area);
        return;
    }
    if let Some(boot) = &app.ambient.boot {
        return super::boot::draw(frame, app, boot, &p, area, now);
    }
    if app.wall {
        if app.ambient.zen_on {
            super::zen::draw(frame, app, &p, area, now);
        } else {
            super::wall::draw(frame, app, &p, area, now);
        }
        if app.drawer.is_some() {
            let w = drawer_width(area.width);
            let right = Rect {
                x: area.x + area.width - w,
                width: w,
                height: area.height - 1,
                ..area
            };
            drawer::draw(frame, app, &p, right, now);
        }
    } else if app.drawer.is_some() {
        // The board keeps the left, the drawer takes the right (above the
        // footer, which spans the screen).
        let w = drawer_width(area.width);
        let left = Rect {
            width: area.width - w,
            ..area
        };
        let right = Rect {
            x: area.x + area.width - w,
            width: w,
            height: area.height - 1,
            ..area
        };
        board(frame, app, &p, left, now);
        drawer::draw(frame, app, &p, right, now);
    } else {
        board(frame, app, &p, area, now);
    }
    if !app.wall {
        footer(frame, app, &p, area);
    }
    for overlay in app.overlays.clone() {
        panels::draw(frame, app, &p, area, overlay, now);
    }
    toasts(frame, app, &p, area);
}

fn header(app: &App, p: &Palette, cols: u16, now: Now) -> Line<'static> {
    let (living, connected) = (app.ambient.living_logo, app.connected);
    let mark = super::logo::mark(living, connected, app.ascii, now.wall);
    let mut left = vec![
        Span::styled(
            format!(" {mark}"),
            p.ink(p.accent).add_modifier(Modifier::BOLD),
        ),
        Span::styled(" cronstable", p.ink(p.bright).add_modifier(Modifier::BOLD)),
        Span::styled(" tui ", p.ink(p.accent)),
    ];
    if let Some(v) = &app.version {
        left.push(Span::styled(format!("v{} ", cell(v)), p.ink(p.dim)));
    }
    if let Some(id) = &app.job_set_id {
        let short: String = cell(id).chars().take(10).collect();
        left.push(Span::styled(format!("· {short} "), p.ink(p.dim)));
    }
    if let Some(res) = app
        .node
        .as_ref()
        .and_then(|n| n.get("resources"))
        .filter(|r| r.is_object())
    {
        let num = |k: &str| res.get(k).and_then(serde_json::Value::as_f64);
        left.push(Span::styled(
            format!(
                "· {} cpu {} mem ",
                fmt_percent(num("cpu_percent")),
                fmt_percent(num("mem_percent"))
            ),
            p.ink(p.dim),
        ));
    }
    let clock = chrono::DateTime::<chrono::Utc>::from_timestamp(now.wall as i64, 0)
        .map(|t| t.format("%H:%M:%S UTC ").to_string())
        .unwrap_or_default();
    let live = if app.connected {
        Span::styled("● online ", p.ink(p.ok))
    } else {
        let why = app
            .offline
            .as_deref()
            .map_or("connecting…".to_owned(), cell);
        let why: String = why.chars().take(60).collect();
        Span::styled(
            format!("◌ {why} "),
            p.ink(p.fail).add_modifier(Modifier::BOLD),
        )
    };
    let right = vec![live, Span::styled(clock, p.ink(p.bright))];
    let used: usize = left
        .iter()
        .chain(right.iter())
        .map(|s| width(&s.content))
        .sum();
    let gap = (cols as usize).saturating_sub(used).max(1);
    left.push(Span::styled(" ".repeat(gap), p.base()));
    left.extend(right);
    Line::from(left)
}

fn toolbar(app: &App, p: &Palette) -> Line<'static> {
    let focused = app.focus == Some(super::app::Focus::Filter);
    let mut text = format!("/{}", cell(&app.filter));
    if app.filter.is_empty() && !focused {
        text.push('…');
    }
    if focused {
        text.push('▌');
    }
    let mut spans = vec![Span::styled(
        format!(" {} ", fit(&text, 18)),
        if focused {
            Style::default().fg(p.bright).bg(p.sel)
        } else {
            p.ink(p.dim)
        },
    )];
    for seg in Segment::ALL {
        let on = seg == app.segment;
        let style = if on {
            Style::default()
                .fg(p.bright)
                .bg(p.sel)
                .add_modifier(Modifier::BOLD)
        } else {
            p.ink(p.dim)
        };
        spans.push(Span::styled(format!(" {} ", seg.name()), style));
    }
    let arrow = if app.descending { "↓" } else { "↑" };
    spans.push(Span::styled(
        format!("  sort:{}{arrow}", app.sort.name()),
        p.ink(p.dim),
    ));
    let poll = app
        .poll
        .map_or("off".to_owned(), |d| format!("{}s", d.as_secs()));
    spans.push(Span::styled(format!("  poll:{poll}"), p.ink(p.dim)));
    spans.push(Span::styled(
        format!("   {} jobs ", app.jobs.len()),
        p.ink(p.fg),
    ));
    for health in [Health::Run, Health::Fail, Health::Ok] {
        let n = app.count(health);
        if n > 0 {
            spans.push(Span::styled(
                format!("{} {n} ", glyph(health, app.ascii)),
                p.ink(p.health(health)),
            ));
        }
    }
    if app.view.len() != app.jobs.len() {
        spans.push(Span::styled(
            format!(" ({} shown)", app.view.len()),
            p.ink(p.dim),
        ));
    }
    Line::from(spans)
}

fn board(frame: &mut Frame, app: &mut App, p: &Palette, area: Rect, now: Now) {
    let cols = area.width as usize;
    let layout = view::columns_at(cols, &app.facts, app.ambient.compact);
    let mut lines = vec![header(app, p, area.width, now), toolbar(app, p)];
    if let Some(v) = &app.verdict {
        lines.push(super::verdict::bar(
            v,
            app.alarm.raised(),
            p,
            cols,
            now.wall,
        ));
    }
    let title: String = layout
        .iter()
        .map(|(c, w)| fit(c.title(), *w))
        .collect::<Vec<_>>()
        .join(" ");
    lines.push(Line::styled(
        format!(" {title}"),
        p.ink(p.dim).add_modifier(Modifier::BOLD),
    ));
    // header, toolbar (and the verdict bar), titles above; the footer below
    let body = (area.height as usize).saturating_sub(lines.len() + 2);
    app.offset = view::scroll_window(app.view.len(), body, app.sel, app.offset);
    let end = (app.offset + body).min(app.view.len());
    for row in app.offset..end {
        let job = &app.jobs[app.view[row]];
        lines.push(job_row(app, p, job, &layout, row == app.sel, now));
    }
    if app.view.is_empty() {
        let hint = if !app.jobs.is_empty() {
            "nothing matches the filter"
        } else if app.offline.is_some() {
            "no answer from the daemon yet (the header says why)"
        } else if !app.connected {
            "connecting to the daemon…"
        } else {
            "the daemon has no jobs"
        };
        lines.push(Line::styled(format!("   {hint}"), p.ink(p.dim)));
    }
    frame.render_widget(Paragraph::new(lines).style(p.base()), area);
}

fn job_row(
    app: &App,
    p: &Palette,
    job: &Job,
    layout: &[(Column, usize)],
    selected: bool,
    now: Now,
) -> Line<'static> {
    let (health, label) = health(job);
    let color = p.health(health);
    let bg = if selected { p.sel } else { p.bg };
    let st = |fg| Style::default().fg(fg).bg(bg);
    let last = job.last_run.as_ref();
    let mut spans = vec![if selected {
        Span::styled("▎", st(p.accent).add_modifier(Modifier::BOLD))
    } else {
        Span::styled(" ", st(p.fg))
    }];
    for (i, (column, w)) in layout.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" ", st(p.fg)));
        }
        let w = *w;
        match column {
            Column::Status => {
                let overdue = job.overdue() && w > 8;
                let text = format!("{} {label}", glyph(health, app.ascii));
                let mut style = st(color);
                if matches!(health, Health::Fail | Health::Run) {
                    style = style.add_modifier(Modifier::BOLD);
                }
                spans.push(Span::styled(
                    fit(&text, if overdue { w - 8 } else { w }),
                    style,
                ));
                if overdue {
                    spans.push(Span::styled(
                        " OVERDUE",
                        st(p.fail).add_modifier(Modifier::BOLD),
                    ));
                }
            }
            Column::Name => {
                let fg = if selected { p.bright } else { p.fg };
                spans.push(Span::styled(fit(&cell(&job.name), w), st(fg)));
            }
            Column::Schedule => spans.push(Span::styled(fit(&cell(&job.schedule), w), st(p.dim))),
            Column::Last => match job.retry.as_ref().and_then(|r| r.attempt) {
                Some(attempt) => spans.push(Span::styled(
                    fit(&format!("↻ try {attempt}"), w),
                    st(p.warn),
                )),
                None => {
                    let text = fmt_ago(last.and_then(|r| r.finished_at.as_deref()), now.wall);
                    spans.push(Span::styled(fit(&text, w), st(p.fg)));
                }
            },
            Column::Next => {
                let text = if job.running {
                    "· · ·".to_owned()
                } else if !job.enabled {
                    "—".to_owned()
                } else if let Some(pause) = job.pause() {
                    format!(
                        "{} {}",
                        glyph(Health::Paused, app.ascii),
                        fmt_til(pause.until.as_deref())
                    )
                } else {
                    fmt_in(app.next_in(job, now.instant))
                };
                spans.push(Span::styled(fit(&text, w), st(p.fg)));
            }
            Column::Duration => {
                spans.push(Span::styled(
                    fit(&fmt_duration(last.and_then(|r| r.duration)), w),
                    st(p.dim),
                ));
            }
            Column::Spark => spans.extend(p.sparkline(&job.history, w, bg)),
            Column::Resources => {
                let text = job.running_resources.as_ref().map_or(String::new(), |r| {
                    format!("{} {}", fmt_percent(r.cpu_percent), fmt_bytes(r.rss_bytes))
                });
                spans.push(Span::styled(fit(&text, w), st(p.run)));
            }
            Column::Owner => {
                let text = match &job.cluster_owner {
                    Some(Some(owner)) => cell(owner),
                    Some(None) => "∅".to_owned(),
                    None => String::new(),
                };
                spans.push(Span::styled(fit(&text, w), st(p.dim)));
            }
            Column::Command => spans.push(Span::styled(fit(&cell(&job.command), w), st(p.dim))),
        }
    }
    Line::from(spans)
}

fn footer(frame: &mut Frame, app: &App, p: &Palette, area: Rect) {
    let hints = if app.drawer.is_some() {
        "←/→ tab · r run · x cancel · logs: / search · n/N · f follow · t time · w wrap · d save · esc close · q quit"
    } else {
        "j/k move · enter open · r run · x cancel · p pause · c copy · / filter · f status · s/S sort · g refresh · w wall · ctrl-k palette · ? help · q quit"
    };
    let row = Rect {
        y: area.y + area.height - 1,
        height: 1,
        ..area
    };
    frame.render_widget(Paragraph::new(format!(" {hints}")).style(p.ink(p.dim)), row);
}

fn toasts(frame: &mut Frame, app: &App, p: &Palette, area: Rect) {
    let shown = app.toasts.iter().rev().take(4);
    for (i, toast) in shown.enumerate() {
        let Some(y) = (area.y + area.height).checked_sub(2 + i as u16) else {
            break;
        };
        let text = format!(
            " {} ",
            super::text::truncate(&toast.text, (area.width / 2).max(10) as usize)
        );
        let w = (width(&text) as u16).min(area.width);
        let color = match toast.tone {
            Tone::Ok => p.ok,
            Tone::Warn => p.warn,
            Tone::Fail => p.fail,
            Tone::Info => p.accent,
        };
        let rect = Rect {
            x: area.x + area.width - w,
            y,
            width: w,
            height: 1,
        };
        let style = Style::default()
            .fg(p.bg)
            .bg(color)
            .add_modifier(Modifier::BOLD);
        frame.render_widget(Paragraph::new(text).style(style), rect);
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
