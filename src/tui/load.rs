//! The schedule-load overlay: the next 24 hours' fires as an hour-by-minute
//! grid with a minute histogram (`GET /schedule/pressure`), the groups of
//! jobs that fire on the same instants (`/schedule/duplicates`) and the
//! least-loaded minute (`/schedule/suggest`). The daemon walks the
//! schedules; this only lays its answers out.

use super::feeds::{pending, Feed, Feeds};
use super::text::{cell, truncate};
use super::theme::Palette;
use super::view::BARS;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;

/// Shades of a grid cell, from idle to the busiest.
const SHADES: [char; 5] = ['·', '░', '▒', '▓', '█'];

/// The shade of `n` fires where the busiest cell has `max`.
pub fn shade(n: u64, max: u64) -> char {
    if n == 0 || max == 0 {
        return SHADES[0];
    }
    let step = (n * 4).div_ceil(max).clamp(1, 4);
    SHADES[step as usize]
}

/// A bar of eighths for `n` against `max`.
pub fn bar(n: u64, max: u64) -> &'static str {
    if n == 0 || max == 0 {
        return " ";
    }
    BARS[((n * 7).div_ceil(max)).clamp(1, 7) as usize]
}

fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .map(cell)
        .unwrap_or_default()
}

fn counts(v: Option<&Value>) -> Vec<u64> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|n| n.as_u64().unwrap_or(0)).collect())
        .unwrap_or_default()
}

/// The overlay's lines, `cols` wide at most.
pub fn body(feeds: &Feeds, p: &Palette, cols: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    match pending(feeds.get(Feed::Pressure), "/schedule/pressure") {
        Err(why) => out.push(Line::styled(format!(" {why}"), p.ink(p.dim))),
        Ok(data) => pressure(data, p, &mut out),
    }
    out.push(Line::raw(""));
    match pending(feeds.get(Feed::Suggest), "/schedule/suggest") {
        Err(why) => out.push(Line::styled(format!(" {why}"), p.ink(p.dim))),
        Ok(data) => suggest(data, p, &mut out),
    }
    out.push(Line::raw(""));
    match pending(feeds.get(Feed::Duplicates), "/schedule/duplicates") {
        Err(why) => out.push(Line::styled(format!(" {why}"), p.ink(p.dim))),
        Ok(data) => duplicates(data, p, cols, &mut out),
    }
    out
}

fn pressure(data: &Value, p: &Palette, out: &mut Vec<Line<'static>>) {
    let busiest = data.get("busiest_minute").cloned().unwrap_or(Value::Null);
    let excluded = data.get("excluded").cloned().unwrap_or(Value::Null);
    out.push(Line::styled(
        format!(
            " {} jobs · {} fires in the next {} h ({}) · busiest :{:02} ({} jobs, {} fires)",
            num(data, "jobs"),
            num(data, "total_fires"),
            num(data, "hours"),
            text(data, "timezone"),
            num(&busiest, "minute"),
            num(&busiest, "jobs"),
            num(&busiest, "fires"),
        ),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    ));
    let (disabled, reboot) = (num(&excluded, "disabled"), num(&excluded, "reboot"));
    if disabled + reboot > 0 {
        out.push(Line::styled(
            format!(" not counted: {disabled} disabled, {reboot} @reboot"),
            p.ink(p.dim),
        ));
    }
    let rows: Vec<Vec<u64>> = data
        .get("grid")
        .and_then(Value::as_array)
        .map(|g| g.iter().map(|r| counts(Some(r))).collect())
        .unwrap_or_default();
    let max = rows.iter().flatten().copied().max().unwrap_or(0);
    let ticks: String = (0..60)
        .map(|m| if m % 10 == 0 { '╷' } else { ' ' })
        .collect();
    out.push(Line::styled(format!("      {ticks}"), p.ink(p.dim)));
    out.push(Line::styled(
        "      :00       :10       :20       :30       :40       :50".to_owned(),
        p.ink(p.dim),
    ));
    for (hour, row) in rows.iter().enumerate() {
        let cells: String = row.iter().map(|&n| shade(n, max)).collect();
        let total: u64 = row.iter().sum();
        out.push(Line::from(vec![
            Span::styled(format!("  {hour:02}  "), p.ink(p.dim)),
            Span::styled(cells, p.ink(p.accent)),
            Span::styled(format!(" {total}"), p.ink(p.dim)),
        ]));
    }
    let minutes = counts(data.get("by_minute_fires"));
    let top = minutes.iter().copied().max().unwrap_or(0);
    let bars: String = minutes.iter().map(|&n| bar(n, top)).collect();
    out.push(Line::from(vec![
        Span::styled("  fires", p.ink(p.dim)),
        Span::styled(bars, p.ink(p.run)),
        Span::styled(format!(" ≤{top}"), p.ink(p.dim)),
    ]));
}

fn suggest(data: &Value, p: &Palette, out: &mut Vec<Line<'static>>) {
    let busiest = data.get("busiest").cloned().unwrap_or(Value::Null);
    out.push(Line::from(vec![
        Span::styled(" least loaded  ", p.ink(p.dim)),
        Span::styled(
            text(data, "expression"),
            p.ink(p.ok).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(
                "  ({} fires) · busiest :{:02} ({} fires) · or {}",
                num(data, "fires_in_window"),
                num(&busiest, "minute"),
                num(&busiest, "fires_in_window"),
                text(data, "hash_hint"),
            ),
            p.ink(p.fg),
        ),
    ]));
    let others: Vec<String> = data
        .get("alternatives")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| format!("{} ({})", text(s, "expression"), num(s, "fires_in_window")))
                .collect()
        })
        .unwrap_or_default();
    if !others.is_empty() {
        out.push(Line::styled(
            format!(" runners-up    {}", others.join(" · ")),
            p.ink(p.dim),
        ));
    }
}

fn duplicates(data: &Value, p: &Palette, cols: usize, out: &mut Vec<Line<'static>>) {
    let groups = data
        .get("groups")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if groups.is_empty() {
        out.push(Line::styled(
            " no two jobs fire on the same instants",
            p.ink(p.ok),
        ));
        return;
    }
    out.push(Line::styled(
        format!(" {} duplicate-schedule groups", groups.len()),
        p.ink(p.warn).add_modifier(Modifier::BOLD),
    ));
    for group in groups {
        let names: Vec<String> = group
            .get("jobs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(cell).collect())
            .unwrap_or_default();
        let head = format!(
            " ×{} {} ({}) ",
            num(group, "count"),
            text(group, "expression"),
            text(group, "timezone"),
        );
        let room = cols.saturating_sub(super::text::width(&head));
        out.push(Line::from(vec![
            Span::styled(head, p.ink(p.warn)),
            Span::styled(truncate(&names.join(", "), room), p.ink(p.fg)),
        ]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::Theme;
    use serde_json::json;

    fn plain(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn shades_and_bars_scale_to_the_busiest() {
        assert_eq!(shade(0, 10), '·');
        assert_eq!(shade(1, 10), '░');
        assert_eq!(shade(10, 10), '█');
        assert_eq!(shade(6, 10), '▓');
        assert_eq!(bar(0, 5), " ");
        assert_eq!(bar(5, 5), "█");
        assert_eq!(bar(1, 100), BARS[1]);
    }

    #[test]
    fn the_overlay_lays_out_the_three_answers() {
        let p = Theme {
            hue: 0,
            light: false,
        }
        .palette();
        let mut feeds = Feeds::default();
        let lines = plain(&body(&feeds, &p, 80));
        assert!(lines[0].contains("waiting for /schedule/pressure"));
        let mut grid = vec![vec![0u64; 60]; 24];
        grid[3][15] = 4;
        grid[3][16] = 1;
        let mut minutes = vec![0u64; 60];
        minutes[15] = 4;
        feeds.put(
            Feed::Pressure,
            Ok(
                json!({"jobs": 2, "total_fires": 5, "hours": 24, "timezone": "UTC",
                "grid": grid, "by_minute_fires": minutes,
                "busiest_minute": {"minute": 15, "jobs": 2, "fires": 4},
                "excluded": {"disabled": 1, "reboot": 0}}),
            ),
        );
        feeds.put(
            Feed::Suggest,
            Ok(json!({"expression": "47 * * * *", "fires_in_window": 0,
                "busiest": {"minute": 15, "fires_in_window": 4},
                "alternatives": [{"expression": "46 * * * *", "fires_in_window": 0}],
                "hash_hint": "H * * * *"})),
        );
        feeds.put(Feed::Duplicates, Err("HTTP 500".into()));
        let lines = plain(&body(&feeds, &p, 80));
        assert!(lines[0].contains("2 jobs · 5 fires in the next 24 h (UTC) · busiest :15"));
        assert!(lines[1].contains("1 disabled, 0 @reboot"));
        let row = lines
            .iter()
            .find(|l| l.starts_with("  03  "))
            .expect("hour 3");
        assert_eq!(row.chars().nth(6 + 15), Some('█'));
        assert_eq!(row.chars().nth(6 + 16), Some('░'));
        assert!(row.ends_with(" 5"));
        assert!(lines.iter().any(|l| l.contains("least loaded  47 * * * *")));
        assert!(lines.iter().any(|l| l.contains("46 * * * * (0)")));
        assert!(lines
            .iter()
            .any(|l| l.contains("/schedule/duplicates: HTTP 500")));
        feeds.put(
            Feed::Duplicates,
            Ok(json!({"jobs": 3, "groups": [{"expression": "*/5 * * * *",
                "timezone": "UTC", "count": 2, "jobs": ["a", "b"]}]})),
        );
        let lines = plain(&body(&feeds, &p, 80));
        assert!(lines
            .iter()
            .any(|l| l.contains("1 duplicate-schedule groups")));
        assert!(lines
            .iter()
            .any(|l| l.contains("×2 */5 * * * * (UTC) a, b")));
    }
}
