//! The fleet-wide panels: the fleet matrix (jobs × gossip nodes, from
//! `GET /fleet`), the activity heatmap (each job's runs of the last 24
//! hours by hour, from `GET /activity`), the upcoming runs (from the job
//! list) and the state inspector (`GET /state`).

use super::app::{App, Now};
use super::feeds::{pending, Feed, Feeds};
use super::format::{fmt_in, parse_iso};
use super::text::{cell, fit};
use super::theme::Palette;
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a missing object reads as.
static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> =
    std::sync::LazyLock::new(serde_json::Map::new);

/// The most rows a panel builds (it scrolls; a 10,000-job fleet says how
/// many more there are).
pub const ROWS_MAX: usize = 500;

/// A fleet cell: its glyph and whether it counts as failing.
fn fleet_cell(job: Option<&Value>) -> (&'static str, bool) {
    let Some(job) = job else { return ("·", false) };
    let flag = |k: &str| job.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("running") {
        return ("▶", false);
    }
    if !flag("enabled") {
        return ("◌", false);
    }
    match job
        .get("last")
        .and_then(|l| l.get("outcome"))
        .and_then(Value::as_str)
    {
        Some("failure") => ("✕", true),
        Some("success") => ("●", false),
        Some(_) => ("◔", false),
        None => ("○", false),
    }
}

/// The fleet matrix's lines.
pub fn fleet(feeds: &Feeds, failing_only: bool, p: &Palette) -> Vec<Line<'static>> {
    let data = match pending(feeds.get(Feed::Fleet), "/fleet") {
        Ok(d) => d,
        Err(why) => return vec![Line::styled(format!(" {why}"), p.ink(p.dim))],
    };
    if data.get("enabled").and_then(Value::as_bool) != Some(true) {
        return vec![Line::styled(
            " no fleet view: this daemon runs no gossip backend",
            p.ink(p.dim),
        )];
    }
    let nodes = data
        .get("nodes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    for node in nodes {
        if let Some(jobs) = node.get("jobs").and_then(Value::as_object) {
            names.extend(jobs.keys().map(|k| (k.clone(), ())));
        }
    }
    let filter = if failing_only {
        "failing only"
    } else {
        "all jobs"
    };
    let mut out = vec![Line::styled(
        format!(
            " {} nodes · {} jobs · {filter} (f toggles)",
            nodes.len(),
            names.len()
        ),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    for (i, node) in nodes.iter().enumerate() {
        let name = node
            .get("node_name")
            .and_then(Value::as_str)
            .map_or("?".into(), cell);
        let status = node
            .get("status")
            .and_then(Value::as_str)
            .map(cell)
            .unwrap_or_default();
        let own = node.get("self").and_then(Value::as_bool) == Some(true);
        out.push(Line::styled(
            format!(
                " {:>2} {name}{} · {status}",
                i + 1,
                if own { " (this node)" } else { "" }
            ),
            p.ink(if status == "ok" || own { p.fg } else { p.warn }),
        ));
    }
    let header: String = (1..=nodes.len()).map(|i| format!("{i:>3}")).collect();
    out.push(Line::styled(
        format!(" {:<28}{header}", "job"),
        p.ink(p.dim),
    ));
    let mut shown = 0;
    for name in names.keys() {
        let cells: Vec<(&str, bool)> = nodes
            .iter()
            .map(|n| fleet_cell(n.get("jobs").and_then(|j| j.get(name))))
            .collect();
        if failing_only && !cells.iter().any(|c| c.1) {
            continue;
        }
        shown += 1;
        if shown > ROWS_MAX {
            continue;
        }
        let mut spans = vec![Span::styled(
            format!(" {}", fit(&cell(name), 28)),
            p.ink(p.fg),
        )];
        for (glyph, failing) in cells {
            let color = match glyph {
                "▶" => p.run,
                "●" => p.ok,
                _ if failing => p.fail,
                _ => p.dim,
            };
            spans.push(Span::styled(format!("{glyph:>3}"), p.ink(color)));
        }
        out.push(Line::from(spans));
    }
    if shown == 0 {
        out.push(Line::styled(" nothing failing on any node", p.ink(p.ok)));
    } else if shown > ROWS_MAX {
        out.push(Line::styled(
            format!(" … {} more", shown - ROWS_MAX),
            p.ink(p.dim),
        ));
    }
    out
}

/// One hour of a job's runs: how many, and the worst outcome's color.
fn hour_color(p: &Palette, runs: u32, failed: bool, other: bool) -> Color {
    match (runs, failed, other) {
        (0, ..) => p.dim,
        (_, true, _) => p.fail,
        (_, _, true) => p.pending,
        _ => p.ok,
    }
}

/// The heatmap's lines: one row per job that ran in the 24 hours before
/// `now` (seconds since the epoch), one cell per hour, oldest left.
pub fn heatmap(feeds: &Feeds, p: &Palette, now: f64) -> Vec<Line<'static>> {
    let data = match pending(feeds.get(Feed::Activity), "/activity") {
        Ok(d) => d,
        Err(why) => return vec![Line::styled(format!(" {why}"), p.ink(p.dim))],
    };
    let jobs = data
        .get("jobs")
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY);
    let mut rows = Vec::new();
    for (name, runs) in jobs {
        let mut hours = [(0u32, false, false); 24];
        for run in runs.as_array().map(Vec::as_slice).unwrap_or_default() {
            let Some(at) = run
                .get("finished_at")
                .and_then(Value::as_str)
                .and_then(parse_iso)
            else {
                continue;
            };
            let ago = now - at;
            if !(0.0..86_400.0).contains(&ago) {
                continue;
            }
            let slot = &mut hours[23 - (ago / 3600.0) as usize];
            slot.0 += 1;
            match run.get("outcome").and_then(Value::as_str) {
                Some("failure") => slot.1 = true,
                Some("success") => {}
                _ => slot.2 = true,
            }
        }
        if hours.iter().any(|h| h.0 > 0) {
            rows.push((name.clone(), hours));
        }
    }
    let mut out = vec![
        Line::styled(
            format!(
                " {} of {} jobs ran in the last 24 hours",
                rows.len(),
                jobs.len()
            ),
            p.ink(p.bright).add_modifier(Modifier::BOLD),
        ),
        Line::styled(format!(" {:<28}-24h{:>45}", "job", "now"), p.ink(p.dim)),
    ];
    for (name, hours) in rows.iter().take(ROWS_MAX) {
        let mut spans = vec![Span::styled(
            format!(" {}", fit(&cell(name), 28)),
            p.ink(p.fg),
        )];
        for &(runs, failed, other) in hours {
            let glyph = match runs {
                0 => "·",
                1 => "░",
                2..=3 => "▒",
                4..=9 => "▓",
                _ => "█",
            };
            let color = hour_color(p, runs, failed, other);
            spans.push(Span::styled(format!("{glyph}{glyph}"), p.ink(color)));
        }
        out.push(Line::from(spans));
    }
    if rows.len() > ROWS_MAX {
        out.push(Line::styled(
            format!(" … {} more", rows.len() - ROWS_MAX),
            p.ink(p.dim),
        ));
    }
    out
}

/// The upcoming runs: the enabled jobs' next fires, soonest first.
pub fn upcoming(app: &App, p: &Palette, now: Now) -> Vec<Line<'static>> {
    let mut next: Vec<(f64, usize)> = app
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.enabled && j.pause().is_none())
        .filter_map(|(i, j)| app.next_in(j, now.instant).map(|s| (s, i)))
        .collect();
    next.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = vec![Line::styled(
        format!(" {} jobs have a next fire", next.len()),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    for &(secs, i) in next.iter().take(ROWS_MAX) {
        let job = &app.jobs[i];
        out.push(Line::from(vec![
            Span::styled(format!(" {:<12}", fmt_in(Some(secs))), p.ink(p.accent)),
            Span::styled(fit(&cell(&job.name), 30), p.ink(p.fg)),
            Span::styled(format!(" {}", cell(&job.schedule)), p.ink(p.dim)),
        ]));
    }
    out
}

/// The state inspector's readable targets, as `(label, path)`: each
/// record stream (`prefix/scope`) but the raw-output `logs`, and each
/// `kv`, `cursor` and `idem` document namespace.
pub fn state_targets(data: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (key, kinds) in [
        ("records", None),
        ("documents", Some(["kv", "cursor", "idem"])),
    ] {
        let Some(groups) = data.get(key).and_then(Value::as_object) else {
            continue;
        };
        for (prefix, group) in groups {
            let allowed = match kinds {
                None => prefix != "logs",
                Some(kinds) => kinds.contains(&prefix.as_str()),
            };
            if !allowed {
                continue;
            }
            let scopes: Vec<String> = group
                .get("scopes")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.get("scope").and_then(Value::as_str))
                        .map(|s| format!("{prefix}/{s}"))
                        .collect()
                })
                .unwrap_or_default();
            for name in scopes {
                let seg = super::worker::path_segment(&name);
                let path = if key == "records" {
                    format!("/state/records?stream={seg}&limit=20")
                } else {
                    format!("/state/documents?ns={seg}")
                };
                out.push((format!("{key} {name}"), path));
            }
        }
    }
    out
}

/// The state read's lines: each record's or document's JSON on a line.
fn state_detail(feeds: &Feeds, p: &Palette, out: &mut Vec<Line<'static>>) {
    let Some((path, answer)) = &feeds.detail else {
        return;
    };
    out.push(Line::raw(""));
    out.push(Line::styled(format!(" {}", cell(path)), p.ink(p.accent)));
    let items = match answer {
        None => {
            out.push(Line::styled("   reading…", p.ink(p.dim)));
            return;
        }
        Some(Err(why)) => {
            out.push(Line::styled(format!("   {}", cell(why)), p.ink(p.fail)));
            return;
        }
        Some(Ok(v)) => v
            .get("records")
            .or_else(|| v.get("documents"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default(),
    };
    if items.is_empty() {
        out.push(Line::styled("   empty", p.ink(p.dim)));
    }
    for item in items.iter().take(100) {
        out.push(Line::styled(
            format!("   {}", super::text::truncate(&cell(&item.to_string()), 96)),
            p.ink(p.fg),
        ));
    }
}

/// The state inspector's lines.
pub fn state(feeds: &Feeds, p: &Palette) -> Vec<Line<'static>> {
    let data = match pending(feeds.get(Feed::State), "/state") {
        Ok(d) => d,
        Err(why) => return vec![Line::styled(format!(" {why}"), p.ink(p.dim))],
    };
    if data.get("enabled").and_then(Value::as_bool) != Some(true) {
        return vec![Line::styled(
            " no durable store: this daemon has no state section",
            p.ink(p.dim),
        )];
    }
    let view = data.get("view").cloned().unwrap_or(Value::Null);
    let text = |v: &Value, k: &str| {
        v.get(k).map_or(String::new(), |x| match x {
            Value::String(s) => cell(s),
            other => cell(&other.to_string()),
        })
    };
    let mut out = vec![Line::styled(
        format!(
            " {} store at {} · namespace {} · {}",
            text(&view, "backend"),
            text(&view, "path"),
            text(&view, "namespace"),
            text(&view, "topology"),
        ),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    if data.get("enumerable").and_then(Value::as_bool) == Some(false) {
        out.push(Line::styled(
            " the inventory walk failed: counts are empty",
            p.ink(p.warn),
        ));
    }
    for (key, title) in [
        ("records", "record streams"),
        ("documents", "document namespaces"),
    ] {
        out.push(Line::raw(""));
        out.push(Line::styled(format!(" {title}"), p.ink(p.dim)));
        let groups = data.get(key).and_then(Value::as_object).unwrap_or(&EMPTY);
        if groups.is_empty() {
            out.push(Line::styled("   none", p.ink(p.dim)));
        }
        for (prefix, group) in groups {
            out.push(Line::styled(
                format!(
                    "   {}  {} files in {} streams",
                    fit(&cell(prefix), 20),
                    text(group, "count"),
                    text(group, "streams"),
                ),
                p.ink(p.fg),
            ));
        }
    }
    let leases = data
        .get("leases")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    out.push(Line::raw(""));
    out.push(Line::styled(
        format!(" {} leases held", leases.len()),
        p.ink(p.dim),
    ));
    for lease in leases {
        let expired = lease.get("expired").and_then(Value::as_bool) == Some(true);
        out.push(Line::styled(
            format!(
                "   {}  {} · fence {}{}",
                fit(&text(lease, "name"), 24),
                text(lease, "holder"),
                text(lease, "fence"),
                if expired { " · expired" } else { "" }
            ),
            p.ink(if expired { p.warn } else { p.fg }),
        ));
    }
    let targets = state_targets(data);
    if !targets.is_empty() {
        let sel = feeds.sel.min(targets.len() - 1);
        out.push(Line::raw(""));
        out.push(Line::styled(
            " read (j/k choose · enter read)",
            p.ink(p.dim),
        ));
        for (i, (label, _)) in targets.iter().enumerate().take(ROWS_MAX) {
            let style = if i == sel {
                ratatui::style::Style::default().fg(p.bright).bg(p.sel)
            } else {
                p.ink(p.fg)
            };
            out.push(Line::styled(format!("   {}", cell(label)), style));
        }
    }
    state_detail(feeds, p, &mut out);
    let quarantine = data
        .get("quarantine")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if quarantine > 0 {
        out.push(Line::styled(
            format!(" {quarantine} entries in quarantine"),
            p.ink(p.warn),
        ));
    }
    out
}

#[cfg(test)]
#[path = "boards_tests.rs"]
mod tests;
