//! The week calendar overlay: the next seven days in UTC as a day-by-hour
//! grid and an agenda. The fires are walked here, with the daemon's own
//! engine (`crate::cronexpr`), from the job list already polled: asking
//! the daemon for each job's preview is one request per job, and the
//! `.ics` feed of 10,000 jobs is megabytes. A job firing more often than
//! [`HUM_AT`] times in the week is one line of the background hum, and
//! its walk stops there, so a fleet of every-minute jobs costs no more
//! than [`HUM_AT`] steps each.

use super::model::Job;
use super::text::{cell, fit};
use super::theme::Palette;
use crate::cronexpr::{Schedule, TimeBase};
use chrono::{DateTime, Datelike, TimeZone, Timelike, Utc};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// More fires than this in the week: the job is background hum.
pub const HUM_AT: usize = 24;
/// The agenda keeps at most this many fires.
const AGENDA_MAX: usize = 2000;
/// The week, in seconds.
const WEEK: i64 = 7 * 24 * 3600;

/// A frequent job: its name and the gap between its first two fires.
#[derive(Debug, Clone, PartialEq)]
pub struct Hum {
    /// The job.
    pub job: String,
    /// Seconds between its next two fires.
    pub every: i64,
}

/// The week as walked.
#[derive(Debug, Clone, Default)]
pub struct Week {
    /// The first instant (seconds since the epoch, UTC).
    pub start: i64,
    /// Fires of the calendar's jobs by date (from `start`'s date: seven
    /// days from a time of day touch eight dates) and hour.
    pub grid: [[u32; 24]; 8],
    /// The calendar's fires, soonest first: instant and job.
    pub agenda: Vec<(i64, String)>,
    /// The frequent jobs.
    pub hum: Vec<Hum>,
    /// Jobs with a schedule that could not be read here.
    pub unreadable: usize,
}

/// A job's clock as `/jobs` names it: a zone, `UTC`, or none for the
/// host's (the daemon's) local time, which is taken to be this machine's.
fn zone(name: Option<&str>) -> TimeBase {
    match name {
        Some(tz) => tz.parse().map(TimeBase::Zone).unwrap_or(TimeBase::Utc),
        None => TimeBase::Local,
    }
}

/// Walks the enabled cron jobs' fires in `[start, start + 7 days)`.
pub fn walk(jobs: &[Job], start: DateTime<Utc>) -> Week {
    let midnight = start.date_naive().and_hms_opt(0, 0, 0).map(|d| d.and_utc());
    let day0 = midnight.unwrap_or(start).timestamp();
    let end = start.timestamp() + WEEK;
    let mut week = Week {
        start: start.timestamp(),
        ..Week::default()
    };
    for job in jobs.iter().filter(|j| j.enabled) {
        let Ok(schedule) = Schedule::parse(job.schedule.trim(), &job.name) else {
            week.unreadable += 1;
            continue;
        };
        let Some(expr) = schedule.cron() else {
            continue;
        };
        let tz = zone(job.timezone.as_deref());
        let fires: Vec<i64> = expr
            .occurrences(start, &tz)
            .map(|t| t.timestamp())
            .take_while(|&t| t < end)
            .take(HUM_AT + 1)
            .collect();
        if fires.len() > HUM_AT {
            week.hum.push(Hum {
                job: job.name.clone(),
                every: fires[1] - fires[0],
            });
            continue;
        }
        for at in fires {
            let day = ((at - day0) / 86_400).clamp(0, 7) as usize;
            let hour = ((at - day0).rem_euclid(86_400) / 3600) as usize;
            week.grid[day][hour] += 1;
            week.agenda.push((at, job.name.clone()));
        }
    }
    week.agenda.sort();
    week.agenda.truncate(AGENDA_MAX);
    week.hum
        .sort_by(|a, b| a.every.cmp(&b.every).then(a.job.cmp(&b.job)));
    week
}

/// A gap in words: `1m`, `5m`, `2h`, `1h30m`.
pub fn every(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

/// The overlay's lines.
pub fn body(week: Option<&Week>, p: &Palette) -> Vec<Line<'static>> {
    let Some(week) = week else {
        return vec![Line::styled(" waiting for the job list…", p.ink(p.dim))];
    };
    let Some(start) = Utc.timestamp_opt(week.start, 0).single() else {
        return Vec::new();
    };
    let total: u32 = week.grid.iter().flatten().sum();
    let mut out = vec![Line::styled(
        format!(
            " the next 7 days (UTC): {total} fires · {} frequent jobs in the hum",
            week.hum.len()
        ),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    if week.unreadable > 0 {
        out.push(Line::styled(
            format!(" {} schedules not readable here", week.unreadable),
            p.ink(p.warn),
        ));
    }
    let max = week.grid.iter().flatten().copied().max().unwrap_or(0);
    let hours: String = (0..24).map(|h| format!("{h:<3}")).collect::<String>();
    out.push(Line::styled(format!("            {hours}"), p.ink(p.dim)));
    for (d, row) in week.grid.iter().enumerate() {
        let day = start + chrono::Duration::days(d as i64);
        let label = format!(" {} {:02}-{:02} ", day.weekday(), day.month(), day.day());
        let cells: String = row
            .iter()
            .map(|&n| {
                let c = super::load::shade(u64::from(n), u64::from(max));
                format!("{c}{c} ")
            })
            .collect();
        let sum: u32 = row.iter().sum();
        out.push(Line::from(vec![
            Span::styled(fit(&label, 12), p.ink(p.dim)),
            Span::styled(cells, p.ink(p.accent)),
            Span::styled(format!("{sum}"), p.ink(p.dim)),
        ]));
    }
    if !week.hum.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::styled(" background hum", p.ink(p.dim)));
        for hum in &week.hum {
            out.push(Line::styled(
                format!("   every {:<8} {}", every(hum.every), cell(&hum.job)),
                p.ink(p.fg),
            ));
        }
    }
    out.push(Line::raw(""));
    out.push(Line::styled(" agenda", p.ink(p.dim)));
    if week.agenda.is_empty() {
        out.push(Line::styled(
            "   nothing else fires this week",
            p.ink(p.dim),
        ));
    }
    for (at, job) in &week.agenda {
        let Some(t) = Utc.timestamp_opt(*at, 0).single() else {
            continue;
        };
        out.push(Line::from(vec![
            Span::styled(
                format!(
                    "   {} {:02}-{:02} {:02}:{:02}  ",
                    t.weekday(),
                    t.month(),
                    t.day(),
                    t.hour(),
                    t.minute()
                ),
                p.ink(p.accent),
            ),
            Span::styled(cell(job), p.ink(p.fg)),
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str) -> Job {
        Job {
            name: name.to_owned(),
            enabled: true,
            schedule: "*/5 * * * *".to_owned(),
            timezone: Some("UTC".to_owned()),
            ..Job::default()
        }
    }

    #[test]
    fn the_walk_splits_the_hum_from_the_calendar() {
        // Friday 2027-01-15 08:00 UTC
        let start = Utc
            .with_ymd_and_hms(2027, 1, 15, 8, 0, 0)
            .single()
            .expect("t");
        let jobs = vec![
            Job {
                schedule: "30 9 * * *".into(),
                ..job("daily")
            },
            job("often"), // */5
            Job {
                enabled: false,
                schedule: "0 0 * * *".into(),
                ..job("off")
            },
            Job {
                schedule: "@reboot".into(),
                ..job("boot")
            },
            Job {
                schedule: "not a schedule".into(),
                ..job("bad")
            },
        ];
        let week = walk(&jobs, start);
        assert_eq!(week.agenda.len(), 7);
        assert_eq!(week.agenda[0].1, "daily");
        assert_eq!(week.grid[0][9], 1);
        assert_eq!(week.grid[6][9], 1);
        assert_eq!(week.grid.iter().flatten().sum::<u32>(), 7);
        assert_eq!(
            week.hum,
            vec![Hum {
                job: "often".into(),
                every: 300
            }]
        );
        assert_eq!(week.unreadable, 1);
        let p = crate::tui::theme::Theme {
            hue: 0,
            light: false,
        }
        .palette();
        let text: Vec<String> = body(Some(&week), &p)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[0].contains("7 fires · 1 frequent jobs"));
        assert!(text.iter().any(|l| l.contains("every 5m       often")));
        assert!(text.iter().any(|l| l.contains("Fri 01-15 09:30  daily")));
        assert!(text.iter().any(|l| l.starts_with(" Thu 01-21 ")));
        assert_eq!(every(90), "1m30s");
        assert_eq!(every(5400), "1h30m");
        // a zone moves the fires: 09:30 in Tokyo is 00:30 UTC
        let tokyo = vec![Job {
            schedule: "30 9 * * *".into(),
            timezone: Some("Asia/Tokyo".into()),
            ..job("tokyo")
        }];
        let week = walk(&tokyo, start);
        assert_eq!(week.grid[1][0], 1);
        assert_eq!(week.grid[7][0], 1, "the eighth date holds the last fire");
        assert_eq!(week.agenda.len(), 7);
    }
}
