//! The job drawer on the right: the job's title and pause, the tab row,
//! and the tab: the live log tail, the run history, the resources, the
//! schedule explained.

use super::app::{App, Drawer, Focus, Load, Now, Tab};
use super::format::{fmt_bytes, fmt_duration, fmt_in, fmt_percent, fmt_til, local_stamp};
use super::logs::{Entry, Stream};
use super::text::{self, cell, fit, truncate};
use super::theme::Palette;
use super::view::{glyph, health, outcome_glyph, Health, Outcome, BARS};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;
use serde_json::Value;

/// Draws the drawer into `area`.
pub fn draw(frame: &mut Frame, app: &App, p: &Palette, area: Rect, now: Now) {
    let Some(drawer) = &app.drawer else { return };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::LEFT)
        .border_style(p.ink(p.accent))
        .style(p.base());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let w = inner.width as usize;
    let job = app.job(&drawer.job);
    let (health, label) = job.map_or((Health::Unknown, "?"), health);
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!(" {} {}", glyph(health, app.ascii), cell(&drawer.job)),
            p.ink(p.health(health)).add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("  {label}"), p.ink(p.dim)),
        Span::styled("   r run  x cancel  esc back", p.ink(p.dim)),
    ])];
    if let Some(pause) = job.and_then(|j| j.pause()) {
        let mut bits = vec![format!("paused {}", fmt_til(pause.until.as_deref()))];
        bits.extend(pause.note.as_deref().map(cell));
        bits.extend(pause.by.as_deref().map(|b| format!("by {}", cell(b))));
        let text = format!(" {} {}", glyph(Health::Paused, app.ascii), bits.join(" · "));
        lines.push(Line::styled(text, p.ink(p.warn)));
    }
    let mut tabs = vec![Span::raw(" ")];
    for tab in Tab::ALL {
        let style = if tab == drawer.tab {
            Style::default()
                .fg(p.bright)
                .bg(p.sel)
                .add_modifier(Modifier::BOLD)
        } else {
            p.ink(p.dim)
        };
        tabs.push(Span::styled(format!(" {} ", tab.title()), style));
    }
    tabs.push(Span::styled("  ←/→ tabs", p.ink(p.dim)));
    lines.push(Line::from(tabs));
    lines.push(Line::styled(
        "─".repeat(w.saturating_sub(1)),
        p.ink(p.border),
    ));
    let rows = (inner.height as usize).saturating_sub(lines.len());
    match drawer.tab {
        Tab::Logs => lines.extend(logs(app, drawer, p, w, rows)),
        Tab::History => lines.extend(scrolled(history(app, drawer, p, w), drawer.scroll, rows)),
        Tab::Resources => lines.extend(scrolled(resources(drawer, p, w), drawer.scroll, rows)),
        Tab::Schedule => lines.extend(scrolled(schedule(app, drawer, p, now), drawer.scroll, rows)),
    }
    frame.render_widget(Paragraph::new(lines).style(p.base()), inner);
}

/// `rows` lines from `scroll` on (the scroll stops at the last screen).
fn scrolled(lines: Vec<Line<'static>>, scroll: usize, rows: usize) -> Vec<Line<'static>> {
    let start = scroll.min(lines.len().saturating_sub(rows));
    lines.into_iter().skip(start).take(rows).collect()
}

fn logs(app: &App, drawer: &Drawer, p: &Palette, w: usize, rows: usize) -> Vec<Line<'static>> {
    let buffer = &drawer.logs;
    let searching = app.focus == Some(Focus::LogSearch);
    let needle = drawer.search.trim().to_lowercase();
    let matches = buffer.matches(&needle);
    let current = matches
        .get(drawer.search_at.min(matches.len().saturating_sub(1)))
        .copied();
    let mut status = vec![format!("follow {}", if app.follow { "on" } else { "off" })];
    if !needle.is_empty() {
        let s = if matches.len() == 1 { "" } else { "es" };
        status.push(format!("{} match{s}", matches.len()));
    }
    if app.wrap {
        status.push("wrap".to_owned());
    }
    if drawer.log_scroll > 0 {
        status.push(format!("↑{} (End follows)", drawer.log_scroll));
    }
    let head = if searching {
        format!(" ⌕ {}▌", cell(&drawer.search))
    } else if drawer.search.is_empty() {
        " ⌕ press / to search".to_owned()
    } else {
        format!(" ⌕ {}", cell(&drawer.search))
    };
    let mut out = vec![Line::from(vec![
        Span::styled(head, p.ink(if searching { p.bright } else { p.dim })),
        Span::styled(format!("   {}", status.join(" · ")), p.ink(p.dim)),
    ])];
    let available = rows.saturating_sub(1);
    let mut tail: Vec<Line<'static>> = Vec::new();
    if let Some(error) = &buffer.error {
        tail.push(Line::styled(format!("  ⚠ {}", cell(error)), p.ink(p.fail)));
    } else if buffer.ended.as_deref() == Some("no-output") && buffer.entries.is_empty() {
        tail.push(Line::styled("  ── no run of this job yet ──", p.ink(p.dim)));
    } else if buffer.entries.is_empty() && buffer.ended.is_none() {
        tail.push(Line::styled("  waiting for the first line…", p.ink(p.dim)));
    }
    let stamp_w = if app.timestamps { 9 } else { 0 };
    let content = w.saturating_sub(3 + stamp_w).max(8);
    // Walk back from the newest entry shown until the pane is full.
    let mut body: Vec<Line<'static>> = Vec::new();
    let room = available.saturating_sub(tail.len());
    let last = buffer.entries.len().saturating_sub(drawer.log_scroll);
    for index in (0..last).rev() {
        if body.len() >= room {
            break;
        }
        let entry = &buffer.entries[index];
        let hit = !needle.is_empty() && matches.binary_search(&index).is_ok();
        let mut lines = entry_lines(app, p, entry, content, hit, current == Some(index));
        while let Some(line) = lines.pop() {
            if body.len() < room {
                body.push(line);
            }
        }
    }
    body.reverse();
    out.extend(body);
    out.extend(tail);
    out
}

/// One buffer entry as screen lines (several when wrapped).
fn entry_lines(
    app: &App,
    p: &Palette,
    entry: &Entry,
    content: usize,
    hit: bool,
    current: bool,
) -> Vec<Line<'static>> {
    if entry.stream == Stream::Meta {
        return vec![Line::styled(
            format!("  ── {} ──", entry.text),
            p.ink(p.dim),
        )];
    }
    let marker = Span::styled(
        " ▏",
        p.ink(if entry.stream == Stream::Err {
            p.fail
        } else {
            p.border
        }),
    );
    let stamp = app.timestamps.then(|| {
        let at = chrono::DateTime::<chrono::Utc>::from_timestamp(entry.at as i64, 0)
            .map(|t| {
                t.with_timezone(&chrono::Local)
                    .format("%H:%M:%S ")
                    .to_string()
            })
            .unwrap_or_default();
        Span::styled(at, p.ink(p.dim))
    });
    let pieces: Vec<(Style, String)> = if hit {
        let bg = if current { p.accent } else { p.sel };
        vec![(
            Style::default().fg(p.bright).bg(bg),
            text::plain(&entry.text),
        )]
    } else {
        text::spans(&entry.text)
            .into_iter()
            .map(|(sgr, t)| (p.sgr(&sgr), t))
            .collect()
    };
    let rows = if app.wrap {
        wrap_pieces(pieces, content)
    } else {
        vec![pieces]
    };
    rows.into_iter()
        .map(|row| {
            let mut spans = vec![marker.clone()];
            spans.extend(stamp.clone());
            spans.extend(row.into_iter().map(|(style, t)| Span::styled(t, style)));
            Line::from(spans)
        })
        .collect()
}

/// Styled text cut into rows at most `cols` wide.
fn wrap_pieces(pieces: Vec<(Style, String)>, cols: usize) -> Vec<Vec<(Style, String)>> {
    let mut rows: Vec<Vec<(Style, String)>> = vec![Vec::new()];
    let mut used = 0;
    for (style, piece) in pieces {
        let mut rest = piece.as_str();
        while !rest.is_empty() {
            if used >= cols {
                rows.push(Vec::new());
                used = 0;
            }
            let chunks = text::wrap(rest, cols - used);
            let first = chunks.into_iter().next().unwrap_or_default();
            let taken = first.len().max(1).min(rest.len());
            used += text::width(&first).max(1);
            if let Some(row) = rows.last_mut() {
                row.push((style, first));
            }
            rest = rest.get(taken..).unwrap_or("");
        }
    }
    rows
}

fn load_state(load: &Load, what: &str, p: &Palette) -> Result<Value, Vec<Line<'static>>> {
    match load {
        Load::Idle | Load::Loading => Err(vec![Line::styled(
            format!("  loading {what}…"),
            p.ink(p.dim),
        )]),
        Load::Done(Err(why)) => Err(vec![Line::styled(
            format!("  ⚠ {}", cell(why)),
            p.ink(p.fail),
        )]),
        Load::Done(Ok(value)) => Ok(value.clone()),
    }
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(cell)
}

fn history(app: &App, drawer: &Drawer, p: &Palette, w: usize) -> Vec<Line<'static>> {
    let data = match load_state(&drawer.runs, "run history", p) {
        Ok(v) => v,
        Err(lines) => return lines,
    };
    let stats = data.get("stats").cloned().unwrap_or(Value::Null);
    let count = |k: &str| num(&stats, k).unwrap_or(0.0) as u64;
    let rate = num(&stats, "success_rate");
    let mut out = vec![
        Line::from(vec![
            Span::styled(
                format!(" {} runs:", count("total")),
                p.ink(p.bright).add_modifier(Modifier::BOLD),
            ),
            Span::styled(
                format!(
                    " {} ok, {} failed, {} cancelled, {} unknown",
                    count("success"),
                    count("failure"),
                    count("cancelled"),
                    count("unknown")
                ),
                p.ink(p.dim),
            ),
        ]),
        Line::from(vec![
            Span::styled(
                format!(
                    " {} succeeded",
                    rate.map_or("—".to_owned(), |r| format!("{}%", (r * 100.0).round()))
                ),
                p.ink(if rate.unwrap_or(0.0) >= 0.9 {
                    p.ok
                } else {
                    p.warn
                }),
            ),
            Span::styled(
                format!(
                    " · mean {} · shortest {} · longest {}",
                    fmt_duration(num(&stats, "avg_duration")),
                    fmt_duration(num(&stats, "min_duration")),
                    fmt_duration(num(&stats, "max_duration"))
                ),
                p.ink(p.dim),
            ),
        ]),
    ];
    if let Some(cpu) = num(&stats, "avg_cpu_seconds") {
        out.push(Line::styled(
            format!(
                " CPU {cpu:.1}s a run on average · memory peak {}",
                fmt_bytes(num(&stats, "max_rss_bytes"))
            ),
            p.ink(p.dim),
        ));
    }
    out.push(Line::styled(
        "─".repeat(w.saturating_sub(1)),
        p.ink(p.border),
    ));
    let runs: Vec<Value> = data
        .get("runs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if runs.is_empty() {
        out.push(Line::styled("  no runs recorded yet", p.ink(p.dim)));
    }
    let top = runs
        .iter()
        .filter_map(|r| num(r, "duration"))
        .fold(0.0, f64::max);
    const BAR: usize = 12;
    for run in runs.iter().rev() {
        let kind = string(run, "outcome").unwrap_or_default();
        let outcome = Outcome::of(&kind);
        let duration = num(run, "duration");
        let bar = match duration {
            Some(d) if top > 0.0 => "▪".repeat(((d / top) * BAR as f64).max(1.0) as usize),
            _ => String::new(),
        };
        let started = run
            .get("started_at")
            .or_else(|| run.get("finished_at"))
            .and_then(Value::as_str);
        let mut detail = String::new();
        if kind == "failure" {
            let code = num(run, "exit_code").map_or("?".to_owned(), |c| format!("{c}"));
            detail.push_str(&format!(" exit {code}"));
            if let Some(reason) = string(run, "fail_reason") {
                detail.push_str(&format!(" · {reason}"));
            }
        } else if kind == "skipped" {
            detail.push_str(" skipped");
            if let Some(reason) = string(run, "skip_reason") {
                detail.push_str(&format!(" · {reason}"));
            }
        }
        if let Some(trigger) = string(run, "trigger").filter(|t| t != "schedule") {
            detail.push_str(&format!(" · {trigger}"));
        }
        if let Some(cpu) = run
            .get("resources")
            .and_then(|r| num(r, "cpu_total_seconds"))
        {
            detail.push_str(&format!(" · {cpu:.1}s cpu"));
        }
        let color = p.outcome(outcome);
        out.push(Line::from(vec![
            Span::styled(
                format!(" {}", outcome_glyph(outcome, app.ascii)),
                p.ink(color),
            ),
            Span::styled(format!(" {} ", local_stamp(started)), p.ink(p.fg)),
            Span::styled(fit(&fmt_duration(duration), 8), p.ink(p.dim)),
            Span::styled(fit(&bar, BAR + 1), p.ink(color)),
            Span::styled(truncate(&detail, w.saturating_sub(33 + BAR)), p.ink(p.dim)),
        ]));
    }
    out
}

/// The bars of a resource series' column (`[t, cpu, rss]` points):
/// each point against the series' peak.
fn series_bars(series: &[Value], column: usize, cols: usize) -> String {
    let values: Vec<f64> = series
        .iter()
        .filter_map(|pt| pt.get(column).and_then(Value::as_f64))
        .collect();
    let shown = &values[values.len().saturating_sub(cols)..];
    let top = shown.iter().copied().fold(0.0, f64::max);
    shown
        .iter()
        .map(|v| {
            let level = if top > 0.0 {
                ((v / top) * 7.0).round() as usize
            } else {
                0
            };
            BARS[level.min(7)]
        })
        .collect()
}

fn resources(drawer: &Drawer, p: &Palette, w: usize) -> Vec<Line<'static>> {
    let data = match load_state(&drawer.resources, "resource data", p) {
        Ok(v) => v,
        Err(lines) => return lines,
    };
    let mut out = Vec::new();
    if data.get("monitored").and_then(Value::as_bool) != Some(true) {
        out.push(Line::styled(
            "  resources are not sampled for this job",
            p.ink(p.dim),
        ));
        out.push(Line::styled(
            "  (monitorResources: true on the job turns it on)",
            p.ink(p.dim),
        ));
        return out;
    }
    let live = data
        .get("live")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(newest) = live.last() {
        let current = newest.get("current").unwrap_or(newest);
        out.push(Line::styled(
            format!(
                " live: {} cpu · {} rss",
                fmt_percent(num(current, "cpu_percent")),
                fmt_bytes(num(current, "rss_bytes"))
            ),
            p.ink(p.run).add_modifier(Modifier::BOLD),
        ));
        let series = newest
            .get("series")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let cols = w.saturating_sub(8);
        out.push(Line::from(vec![
            Span::styled(" cpu  ", p.ink(p.dim)),
            Span::styled(series_bars(&series, 1, cols), p.ink(p.run)),
        ]));
        out.push(Line::from(vec![
            Span::styled(" rss  ", p.ink(p.dim)),
            Span::styled(series_bars(&series, 2, cols), p.ink(p.accent)),
        ]));
        out.push(Line::raw(""));
    }
    out.push(Line::styled(
        format!(
            " {}{}{}rss over the run",
            fit("started", 16),
            fit("cpu", 9),
            fit("peak rss", 11)
        ),
        p.ink(p.dim).add_modifier(Modifier::BOLD),
    ));
    let runs = data
        .get("runs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if runs.is_empty() {
        out.push(Line::styled("  no monitored run yet", p.ink(p.dim)));
    }
    for run in runs.iter().rev() {
        let usage = run
            .get("resources")
            .filter(|r| r.is_object())
            .unwrap_or(run);
        let cpu = num(usage, "cpu_total_seconds").map_or("—".to_owned(), |c| format!("{c:.1}s"));
        let series = usage
            .get("series")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let started = run.get("started_at").and_then(Value::as_str);
        out.push(Line::from(vec![
            Span::styled(format!(" {}", fit(&local_stamp(started), 16)), p.ink(p.fg)),
            Span::styled(fit(&cpu, 9), p.ink(p.dim)),
            Span::styled(
                fit(&fmt_bytes(num(usage, "max_rss_bytes")), 11),
                p.ink(p.dim),
            ),
            Span::styled(
                series_bars(&series, 2, w.saturating_sub(38)),
                p.ink(p.accent),
            ),
        ]));
    }
    out
}

fn schedule(app: &App, drawer: &Drawer, p: &Palette, now: Now) -> Vec<Line<'static>> {
    let Some(job) = app.job(&drawer.job) else {
        return vec![Line::styled("  waiting for the job list…", p.ink(p.dim))];
    };
    let preview = match &drawer.preview {
        Load::Done(Ok(v)) => Some(v.clone()),
        _ => None,
    };
    let mut out = vec![Line::styled(
        format!(" {}", cell(&job.schedule)),
        p.ink(p.accent).add_modifier(Modifier::BOLD),
    )];
    let described = job
        .description
        .clone()
        .or_else(|| preview.as_ref().and_then(|v| string(v, "description")));
    if let Some(text) = described {
        out.push(Line::styled(format!(" {}", cell(&text)), p.ink(p.bright)));
    }
    if let Some(resolved) = job
        .schedule_resolved
        .as_ref()
        .filter(|r| r.trim() != job.schedule.trim())
    {
        out.push(Line::styled(
            format!(" resolves to {}", cell(resolved)),
            p.ink(p.dim),
        ));
    }
    out.push(Line::raw(""));
    let zone = job.timezone.as_deref().map_or("UTC".to_owned(), cell);
    out.push(Line::styled(format!(" time zone: {zone}"), p.ink(p.dim)));
    let reboot = job.schedule.trim().eq_ignore_ascii_case("@reboot");
    match (&drawer.preview, &preview) {
        _ if reboot => out.push(Line::styled(
            " @reboot: runs once, when the daemon starts",
            p.ink(p.dim),
        )),
        (_, Some(v)) => {
            let fires: Vec<String> = v
                .get("fires")
                .and_then(Value::as_array)
                .map(|f| {
                    f.iter()
                        .filter_map(Value::as_str)
                        .map(|s| cell(&s.replacen('T', " ", 1)))
                        .collect()
                })
                .unwrap_or_default();
            if v.get("valid").and_then(Value::as_bool) == Some(false) {
                let why = string(v, "error").unwrap_or_default();
                out.push(Line::styled(
                    format!(" the engine rejects it: {why}"),
                    p.ink(p.fail),
                ));
            } else if fires.is_empty() {
                out.push(Line::styled(" never fires", p.ink(p.warn)));
            } else {
                out.push(Line::raw(""));
                out.push(Line::styled(" next runs:", p.ink(p.dim)));
                out.extend(
                    fires
                        .into_iter()
                        .map(|f| Line::styled(format!("  {f}"), p.ink(p.fg))),
                );
            }
        }
        (Load::Done(Err(why)), None) => {
            out.push(Line::styled(
                format!(" ⚠ preview: {}", cell(why)),
                p.ink(p.fail),
            ));
        }
        _ => out.push(Line::styled(" loading the next fires…", p.ink(p.dim))),
    }
    if !job.schedule_findings.is_empty() {
        out.push(Line::raw(""));
        for finding in &job.schedule_findings {
            let color = if finding.level == "note" {
                p.dim
            } else {
                p.warn
            };
            out.push(Line::styled(
                format!(" {}: {}", cell(&finding.level), cell(&finding.message)),
                p.ink(color),
            ));
        }
    }
    if let Some(next) = app
        .next_in(job, now.instant)
        .filter(|_| job.enabled && !job.running)
    {
        out.push(Line::raw(""));
        out.push(Line::styled(
            format!(" the daemon says: next fire {}", fmt_in(Some(next))),
            p.ink(p.ok),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_pieces_keep_their_styles_and_widths() {
        let a = Style::default().add_modifier(Modifier::BOLD);
        let b = Style::default();
        let rows = wrap_pieces(vec![(a, "abcde".into()), (b, "fgh".into())], 4);
        let texts: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(|(_, t)| t.as_str()).collect())
            .collect();
        assert_eq!(texts, vec![vec!["abcd"], vec!["e", "fgh"]]);
        assert_eq!(rows[1][0].0, a);
        let wide = wrap_pieces(vec![(b, "日本語".into())], 4);
        assert_eq!(wide.len(), 2);
    }

    #[test]
    fn series_bars_scale_to_the_peak() {
        let series: Vec<Value> =
            serde_json::from_str("[[0, 0, 10], [1, 50, 20], [2, 100, 40]]").unwrap();
        assert_eq!(series_bars(&series, 1, 10), "▁▅█");
        assert_eq!(series_bars(&series, 2, 2), "▅█");
        assert_eq!(series_bars(&[], 1, 5), "");
    }
}
