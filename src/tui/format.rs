//! Short spellings of times, durations and sizes for the dashboard's
//! cells (the web page's: `in 42s`, `3m ago`, `4.2s`, `12.5MiB`). Pure.

use chrono::{DateTime, NaiveDateTime, Utc};

/// An ISO-8601 stamp from the API as seconds since the epoch; a stamp
/// without an offset is taken as UTC. None for anything unreadable.
pub fn parse_iso(text: &str) -> Option<f64> {
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.timestamp_micros() as f64 / 1e6);
    }
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()?;
    Some(naive.and_utc().timestamp_micros() as f64 / 1e6)
}

/// Seconds as the largest whole unit that fits: `42s`, `3m`, `5h`
/// (under two days), `3d`.
fn span(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 60.0 {
        format!("{}s", s as u64)
    } else if s < 3600.0 {
        format!("{}m", (s / 60.0) as u64)
    } else if s < 172_800.0 {
        format!("{}h", (s / 3600.0) as u64)
    } else {
        format!("{}d", (s / 86_400.0) as u64)
    }
}

/// The next-fire column: `in 42s`, `in 3m`, `now` once due, `—` unknown.
pub fn fmt_in(seconds: Option<f64>) -> String {
    match seconds {
        None => "—".to_owned(),
        Some(s) if s <= 0.0 => "now".to_owned(),
        Some(s) => format!("in {}", span(s)),
    }
}

/// An age: `42s ago`, `3m ago`; `—` for no stamp.
pub fn fmt_ago(stamp: Option<&str>, now: f64) -> String {
    match stamp.and_then(parse_iso) {
        None => "—".to_owned(),
        Some(at) => format!("{} ago", span(now - at)),
    }
}

/// A pause's end as `til HH:MM` (UTC); `til ?` without a readable one.
pub fn fmt_til(stamp: Option<&str>) -> String {
    match stamp
        .and_then(parse_iso)
        .and_then(|t| DateTime::<Utc>::from_timestamp(t.floor() as i64, 0))
    {
        Some(at) => format!("til {}", at.format("%H:%M")),
        None => "til ?".to_owned(),
    }
}

/// A run's duration: `850ms`, `4.2s`, `42s`, `3m10s`, `2h04m`.
pub fn fmt_duration(seconds: Option<f64>) -> String {
    let Some(s) = seconds.filter(|s| s.is_finite()) else {
        return "—".to_owned();
    };
    let s = s.max(0.0);
    if s < 1.0 {
        format!("{}ms", (s * 1000.0).round() as u64)
    } else if s < 10.0 {
        format!("{s:.1}s")
    } else if s < 60.0 {
        format!("{}s", s.round() as u64)
    } else if s < 3600.0 {
        let whole = s.round() as u64;
        format!("{}m{:02}s", whole / 60, whole % 60)
    } else {
        let whole = s as u64;
        format!("{}h{:02}m", whole / 3600, (whole % 3600) / 60)
    }
}

/// A percentage: one decimal under 10 (`4.2%`), whole above (`42%`).
pub fn fmt_percent(p: Option<f64>) -> String {
    match p.filter(|p| p.is_finite()) {
        None => "—".to_owned(),
        Some(p) if p < 10.0 => format!("{p:.1}%"),
        Some(p) => format!("{}%", p.round() as i64),
    }
}

/// A byte count in binary units: `512B`, `1.5KiB`, `12.0MiB`.
pub fn fmt_bytes(n: Option<f64>) -> String {
    let Some(mut value) = n.filter(|n| n.is_finite() && *n >= 0.0) else {
        return "—".to_owned();
    };
    if value < 1024.0 {
        return format!("{}B", value as u64);
    }
    for unit in ["KiB", "MiB", "GiB"] {
        value /= 1024.0;
        if value < 1024.0 {
            return format!("{value:.1}{unit}");
        }
    }
    format!("{:.1}TiB", value / 1024.0)
}

/// An API stamp in the local zone as `MM-DD HH:MM:SS`; `?` unreadable.
pub fn local_stamp(stamp: Option<&str>) -> String {
    stamp
        .and_then(parse_iso)
        .and_then(|t| DateTime::<Utc>::from_timestamp(t.floor() as i64, 0))
        .map(|at| {
            at.with_timezone(&chrono::Local)
                .format("%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| "?".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_parse_with_or_without_an_offset() {
        assert_eq!(parse_iso("1970-01-01T00:01:00+00:00"), Some(60.0));
        assert_eq!(parse_iso("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(parse_iso("1970-01-01T00:00:01.5Z"), Some(1.5));
        assert_eq!(parse_iso("1970-01-01T00:00:02"), Some(2.0));
        assert_eq!(parse_iso("1970-01-01 00:00:03.25"), Some(3.25));
        assert_eq!(parse_iso("yesterday"), None);
    }

    #[test]
    fn countdowns_and_ages() {
        assert_eq!(fmt_in(None), "—");
        assert_eq!(fmt_in(Some(-1.0)), "now");
        assert_eq!(fmt_in(Some(0.0)), "now");
        assert_eq!(fmt_in(Some(42.9)), "in 42s");
        assert_eq!(fmt_in(Some(185.0)), "in 3m");
        assert_eq!(fmt_in(Some(7200.0)), "in 2h");
        assert_eq!(fmt_in(Some(172_799.0)), "in 47h");
        assert_eq!(fmt_in(Some(3.0 * 86_400.0)), "in 3d");
        let at = "1970-01-01T00:00:00+00:00";
        assert_eq!(fmt_ago(Some(at), 42.0), "42s ago");
        assert_eq!(fmt_ago(Some(at), 3600.0), "1h ago");
        assert_eq!(fmt_ago(Some(at), -5.0), "0s ago", "a clock behind reads 0s");
        assert_eq!(fmt_ago(None, 1.0), "—");
        assert_eq!(fmt_til(Some("2026-01-02T13:45:10+00:00")), "til 13:45");
        assert_eq!(fmt_til(Some("2026-01-02T13:45:10+02:00")), "til 11:45");
        assert_eq!(fmt_til(None), "til ?");
    }

    #[test]
    fn durations_percentages_and_sizes() {
        assert_eq!(fmt_duration(Some(0.85)), "850ms");
        assert_eq!(fmt_duration(Some(4.24)), "4.2s");
        assert_eq!(fmt_duration(Some(42.4)), "42s");
        assert_eq!(fmt_duration(Some(190.0)), "3m10s");
        assert_eq!(fmt_duration(Some(7440.0)), "2h04m");
        assert_eq!(fmt_duration(None), "—");
        assert_eq!(fmt_duration(Some(f64::NAN)), "—");
        assert_eq!(fmt_percent(Some(4.24)), "4.2%");
        assert_eq!(fmt_percent(Some(142.4)), "142%");
        assert_eq!(fmt_percent(None), "—");
        assert_eq!(fmt_bytes(Some(512.0)), "512B");
        assert_eq!(fmt_bytes(Some(1536.0)), "1.5KiB");
        assert_eq!(fmt_bytes(Some(12.0 * 1024.0 * 1024.0)), "12.0MiB");
        assert_eq!(fmt_bytes(Some(3.0 * 1024f64.powi(4))), "3.0TiB");
        assert_eq!(fmt_bytes(Some(-1.0)), "—");
    }
}
