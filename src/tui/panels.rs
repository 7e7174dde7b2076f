//! The panels drawn over the board: the key overlay, the token prompt,
//! the command palette, the cluster view and the node's resources.

use super::app::{App, Now, Overlay};
use super::format::{fmt_bytes, fmt_in, fmt_percent, parse_iso};
use super::text::{cell, fit, truncate};
use super::theme::Palette;
use super::view::BARS;
use super::{boards, calendar, load, palette};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;
use serde_json::Value;

/// The web page's shortcut table.
const KEYS: [(&str, &str); 17] = [
    ("Ctrl-K / Ctrl-P", "Command palette"),
    ("/", "Focus the filter"),
    ("j / ↓", "Next job"),
    ("k / ↑", "Previous job"),
    ("Enter", "Open the selected job"),
    ("r", "Run the selected job"),
    ("x", "Cancel the selected (running) job"),
    ("p", "Pause or resume the selected job"),
    ("c", "Copy the selected job's command"),
    ("g", "Refresh now"),
    ("t", "Cycle theme"),
    ("T", "Dark / light"),
    ("i", "Incident timeline"),
    ("w", "Wallboard (TV) mode"),
    ("a", "Acknowledge the failure alarm"),
    ("?", "This overlay"),
    ("Esc", "Close the panel or drawer"),
];

/// The terminal's own keys.
const EXTRAS: [(&str, &str); 16] = [
    ("q", "Quit"),
    ("s / S", "Cycle the sort key / direction"),
    ("f", "Cycle the status filter"),
    ("m", "Live logs: add the selected job (up to 4)"),
    (
        "in live logs: j k x",
        "Choose a job, drop it from the panel",
    ),
    ("←/→ or Tab", "Switch drawer tabs"),
    ("PgUp / PgDn", "Scroll"),
    ("in logs: f t w", "Follow · timestamps · wrap"),
    ("in logs: / n N", "Search · next · previous match"),
    ("in logs: d", "Save the log to your home directory"),
    ("in the fleet: f", "Failing jobs only / all"),
    ("in the timeline: f", "Failures only / every finish"),
    (
        "in the timeline: enter",
        "The selected job's logs (j/k choose)",
    ),
    ("in the timeline: m", "Job actions for the incident set"),
    (
        "in job actions: s x a y",
        "Start all · cancel all · stop · writeup",
    ),
    ("in the state: j k enter", "Choose a stream, read it"),
];

/// A rectangle `w` × `h` in the middle of `area`.
fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// How a panel looks: its title, the hint at its foot, its width and
/// how far its body is scrolled.
struct Look<'a> {
    title: &'a str,
    hint: &'a str,
    width: u16,
    scroll: usize,
}

/// A bordered panel with `body`, centered in `area`.
fn panel(frame: &mut Frame, p: &Palette, area: Rect, look: Look, body: Vec<Line<'static>>) {
    let Look {
        title,
        hint,
        width,
        scroll,
    } = look;
    let room = area.height.saturating_sub(4) as usize;
    let start = scroll.min(body.len().saturating_sub(room));
    let shown: Vec<Line> = body.into_iter().skip(start).take(room).collect();
    let rect = centered(area, width, shown.len() as u16 + 3);
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(p.ink(p.accent))
        .title(Span::styled(
            format!(" {title} "),
            p.ink(p.accent).add_modifier(Modifier::BOLD),
        ))
        .style(p.base());
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines = shown;
    lines.push(Line::styled(hint.to_owned(), p.ink(p.dim)));
    frame.render_widget(Paragraph::new(lines).style(p.base()), inner);
}

/// Draws one panel.
pub fn draw(frame: &mut Frame, app: &App, p: &Palette, area: Rect, overlay: Overlay, now: Now) {
    let wide = area.width.saturating_sub(4);
    match overlay {
        Overlay::Help => {
            let row = |(k, a): &(&str, &str), color| {
                Line::from(vec![
                    Span::styled(fit(k, 24), p.ink(color).add_modifier(Modifier::BOLD)),
                    Span::styled(a.to_string(), p.ink(p.fg)),
                ])
            };
            let mut body = vec![Line::styled("as on the web page", p.ink(p.dim))];
            body.extend(KEYS.iter().map(|r| row(r, p.accent)));
            body.push(Line::raw(""));
            body.push(Line::styled("in the terminal only", p.ink(p.dim)));
            body.extend(EXTRAS.iter().map(|r| row(r, p.pending)));
            panel(
                frame,
                p,
                area,
                Look {
                    title: "keyboard shortcuts",
                    hint: "esc close · j/k scroll",
                    width: wide.min(72),
                    scroll: app.panel_scroll,
                },
                body,
            );
        }
        Overlay::Token => {
            let masked = "•".repeat(app.token_input.chars().count());
            let body = vec![
                Line::styled(
                    "This daemon wants an access token (web.authToken).",
                    p.ink(p.fg),
                ),
                Line::styled("It is kept in memory for this session only.", p.ink(p.dim)),
                Line::raw(""),
                Line::from(vec![
                    Span::styled("⚿ ", p.ink(p.accent)),
                    Span::styled(format!("{masked}▌"), p.ink(p.bright)),
                ]),
            ];
            panel(
                frame,
                p,
                area,
                Look {
                    title: "access token",
                    hint: "enter save · esc cancel",
                    width: wide.min(60),
                    scroll: 0,
                },
                body,
            );
        }
        Overlay::Palette => {
            let items = palette::matches(app, &app.palette_input);
            let room = area.height.saturating_sub(8) as usize;
            let sel = app.palette_sel.min(items.len().saturating_sub(1));
            let first = sel.saturating_sub(room.saturating_sub(1));
            let w = wide.min(72);
            let mut body = vec![
                Line::from(vec![
                    Span::styled("› ", p.ink(p.accent)),
                    Span::styled(format!("{}▌", cell(&app.palette_input)), p.ink(p.bright)),
                ]),
                Line::raw(""),
            ];
            for (i, item) in items.iter().enumerate().skip(first).take(room.max(1)) {
                let style = if i == sel {
                    Style::default()
                        .fg(p.bright)
                        .bg(p.sel)
                        .add_modifier(Modifier::BOLD)
                } else {
                    p.ink(p.fg)
                };
                body.push(Line::styled(
                    fit(&item.label, w.saturating_sub(4) as usize),
                    style,
                ));
            }
            if items.is_empty() {
                body.push(Line::styled("nothing matches", p.ink(p.dim)));
            }
            panel(
                frame,
                p,
                area,
                Look {
                    title: "command palette",
                    hint: "↑/↓ choose · enter run · esc close",
                    width: w,
                    scroll: 0,
                },
                body,
            );
        }
        Overlay::Cluster => {
            let body = cluster(app, p, now);
            panel(
                frame,
                p,
                area,
                Look {
                    title: "cluster",
                    hint: "esc close · j/k scroll",
                    width: wide.min(84),
                    scroll: app.panel_scroll,
                },
                body,
            );
        }
        Overlay::Load
        | Overlay::Calendar
        | Overlay::Fleet
        | Overlay::Heatmap
        | Overlay::Upcoming
        | Overlay::Timeline
        | Overlay::State => {
            let (title, body, w) = match overlay {
                Overlay::Load => ("schedule load", load::body(&app.feeds, p, 76), 80),
                Overlay::Calendar => (
                    "week calendar",
                    calendar::body(app.calendar.as_ref(), p),
                    88,
                ),
                Overlay::Fleet => (
                    "fleet",
                    boards::fleet(&app.feeds, app.fleet_failing, p),
                    100,
                ),
                Overlay::Heatmap => (
                    "activity heatmap",
                    boards::heatmap(&app.feeds, p, now.wall),
                    84,
                ),
                Overlay::Upcoming => ("upcoming runs", boards::upcoming(app, p, now), 84),
                Overlay::Timeline => (
                    if app.timeline_failing {
                        "incident timeline — failing only"
                    } else {
                        "incident timeline"
                    },
                    super::verdict::body(
                        &app.jobs,
                        super::verdict::Shown {
                            fail_only: app.timeline_failing,
                            ascii: app.ascii,
                            sel: app.timeline_sel,
                            rows: area.height.saturating_sub(4) as usize,
                        },
                        p,
                        now.wall,
                    ),
                    96,
                ),
                _ => ("state inspector", boards::state(&app.feeds, p), 84),
            };
            panel(
                frame,
                p,
                area,
                Look {
                    title,
                    hint: if overlay == Overlay::Timeline {
                        "j/k move · enter logs · f failing only / all · m actions · esc close"
                    } else if overlay == Overlay::Fleet {
                        "esc close · j/k scroll · f failing only / all"
                    } else {
                        "esc close · j/k scroll"
                    },
                    width: wide.min(w),
                    // the timeline's window follows its selection
                    scroll: if overlay == Overlay::Timeline {
                        0
                    } else {
                        app.panel_scroll
                    },
                },
                body,
            );
        }
        Overlay::Actions => {
            let w = wide.min(88);
            let rows = area.height.saturating_sub(10).min(16) as usize;
            let body = super::actions::body(&app.actions, p, w.saturating_sub(2) as usize, rows);
            panel(
                frame,
                p,
                area,
                Look {
                    title: "job actions",
                    hint: "s start all · x cancel all · a stop sending · y writeup · esc close",
                    width: w,
                    scroll: 0,
                },
                body,
            );
        }
        Overlay::Settings => {
            let body = super::settings::body(app, p);
            panel(
                frame,
                p,
                area,
                Look {
                    title: "settings",
                    hint: "j/k choose · enter/space/←/→ change · esc close",
                    width: wide.min(72),
                    scroll: 0,
                },
                body,
            );
        }
        Overlay::Merged => {
            let rows = area.height.saturating_sub(6) as usize;
            let body = super::merged::body(&app.merged, p, rows);
            let title = format!(
                "live logs ({}/{})",
                app.merged.tails.len(),
                super::merged::MERGED_MAX
            );
            panel(
                frame,
                p,
                area,
                Look {
                    title: &title,
                    hint:
                        "m/esc close · j/k choose · x drop · c clear · PgUp/PgDn scroll · close, select a job, m adds it",
                    width: wide.min(120),
                    scroll: 0,
                },
                body,
            );
        }
        Overlay::Sandbox => {
            let body = super::sandbox::body(&app.sandbox, p);
            panel(
                frame,
                p,
                area,
                Look {
                    title: "schedule preview",
                    hint: " type an expression · ctrl-u clear · esc close",
                    width: wide.min(72),
                    scroll: 0,
                },
                body,
            );
        }
        Overlay::Node => {
            let w = wide.min(64);
            let body = node(app, p, w.saturating_sub(12) as usize);
            panel(
                frame,
                p,
                area,
                Look {
                    title: "node resources",
                    hint: "esc close",
                    width: w,
                    scroll: app.panel_scroll,
                },
                body,
            );
        }
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => cell(s),
        Value::Null => "—".to_owned(),
        other => cell(&other.to_string()),
    }
}

fn cluster(app: &App, p: &Palette, now: Now) -> Vec<Line<'static>> {
    let Some(data) = app.cluster.as_ref() else {
        return vec![Line::styled(" waiting for /cluster…", p.ink(p.dim))];
    };
    if data.get("enabled").and_then(Value::as_bool) != Some(true) {
        return vec![Line::styled(
            " this daemon runs alone (no cluster section)",
            p.ink(p.dim),
        )];
    }
    let flag = |k: &str| data.get(k).and_then(Value::as_bool).unwrap_or(false);
    let leader = data.get("leader").and_then(Value::as_str).map(cell);
    let role = if flag("is_leader") {
        "leader".to_owned()
    } else if !flag("quorate") {
        "no quorum".to_owned()
    } else {
        match leader {
            Some(l) => format!("follower (leader: {l})"),
            None => "follower".to_owned(),
        }
    };
    let get = |k: &str| data.get(k).map(text_of).unwrap_or_else(|| "?".to_owned());
    let mut out = vec![Line::styled(
        format!(
            " {} · {} · {} · {}",
            get("node_name"),
            get("backend"),
            get("distribution"),
            role
        ),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    if flag("conflict") {
        let kind = if flag("size_conflict") {
            "cluster size mismatch"
        } else if flag("policy_conflict") {
            "coordination policy mismatch"
        } else {
            "duplicate node name"
        };
        out.push(Line::styled(
            format!(" ☢ {kind}: Leader jobs held"),
            p.ink(p.fail).add_modifier(Modifier::BOLD),
        ));
    } else if flag("elect_leader") && !flag("quorate") {
        out.push(Line::styled(
            " ☢ no quorum: Leader jobs held",
            p.ink(p.fail).add_modifier(Modifier::BOLD),
        ));
    }
    let peers = data
        .get("peers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !peers.is_empty() {
        out.push(Line::raw(""));
    }
    for peer in &peers {
        let name = ["node_name", "name", "host"]
            .iter()
            .find_map(|k| peer.get(*k).and_then(Value::as_str))
            .map_or("?".to_owned(), cell);
        let status = peer.get("status").map(text_of).unwrap_or_default();
        let agreed = peer
            .get("agree")
            .or_else(|| peer.get("agreed"))
            .and_then(Value::as_bool);
        let (mark, color) = match agreed {
            Some(true) => ("✓", p.ok),
            Some(false) => ("✕", p.fail),
            None => ("·", p.dim),
        };
        let mut extra = String::new();
        if let Some(stats) = peer.get("node_stats").filter(|s| s.is_object()) {
            let pct = |k: &str| fmt_percent(stats.get(k).and_then(Value::as_f64));
            extra = format!(" · {} cpu {} mem", pct("cpu_percent"), pct("mem_percent"));
        }
        out.push(Line::styled(
            format!(" {mark} {} {}{extra}", fit(&name, 22), fit(&status, 12)),
            p.ink(color),
        ));
    }
    if let Some(lease) = data
        .get("lease")
        .and_then(Value::as_object)
        .filter(|l| !l.is_empty())
    {
        out.push(Line::raw(""));
        for (key, label) in [
            ("holder", "held by"),
            ("expiry", "expires"),
            ("fence", "fence"),
            ("name", "lease"),
            ("namespace", "namespace"),
            ("electionName", "election"),
            ("identity", "this node"),
            ("path", "store path"),
        ] {
            let Some(value) = lease.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            let mut text = text_of(value);
            if key == "expiry" {
                if let Some(at) = value.as_str().and_then(parse_iso) {
                    let left = at - now.wall;
                    let when = if left > 0.0 {
                        fmt_in(Some(left))
                    } else {
                        "expired".to_owned()
                    };
                    text = format!("{when} · {}", truncate(&text.replacen('T', " ", 1), 19));
                }
            }
            let ours = key == "holder" && lease.get("identity") == Some(value);
            out.push(Line::from(vec![
                Span::styled(fit(&format!(" {label}"), 16), p.ink(p.dim)),
                Span::styled(text, p.ink(if ours { p.ok } else { p.fg })),
            ]));
        }
    }
    out
}

fn node(app: &App, p: &Palette, cols: usize) -> Vec<Line<'static>> {
    let Some(data) = app.node.as_ref() else {
        return vec![Line::styled(" waiting for /node…", p.ink(p.dim))];
    };
    let name = data.get("node_name").map(text_of).unwrap_or_default();
    let mut out = vec![Line::styled(
        format!(" node: {name}"),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    match data.get("resources").and_then(Value::as_object) {
        Some(resources) => {
            for (key, value) in resources {
                let text = match value.as_f64() {
                    Some(n) if key.contains("percent") => fmt_percent(Some(n)),
                    Some(n) if key.contains("bytes") => fmt_bytes(Some(n)),
                    _ => text_of(value),
                };
                out.push(Line::from(vec![
                    Span::styled(fit(&format!(" {}", cell(key)), 22), p.ink(p.dim)),
                    Span::styled(text, p.ink(p.fg)),
                ]));
            }
        }
        None => out.push(Line::styled(
            " resource sampling is not available here",
            p.ink(p.dim),
        )),
    }
    let points = app
        .node_history
        .as_ref()
        .and_then(|h| h.get("points"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !points.is_empty() {
        let shown = &points[points.len().saturating_sub(cols)..];
        let bars = |column: usize| -> String {
            shown
                .iter()
                .filter_map(|pt| pt.get(column).and_then(Value::as_f64))
                .map(|v| BARS[((v.clamp(0.0, 100.0) / 100.0) * 7.0).round() as usize])
                .collect()
        };
        out.push(Line::raw(""));
        out.push(Line::from(vec![
            Span::styled(" cpu  ", p.ink(p.dim)),
            Span::styled(bars(1), p.ink(p.run)),
        ]));
        out.push(Line::from(vec![
            Span::styled(" mem  ", p.ink(p.dim)),
            Span::styled(bars(2), p.ink(p.accent)),
        ]));
    }
    out
}
