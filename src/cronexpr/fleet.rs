//! Schedule intelligence over a whole fleet: when the jobs fire in the
//! hours ahead ([`pressure`], the hour-by-minute heatmap), which jobs fire
//! on identical instants ([`duplicates`]), and the least-loaded slot for a
//! new job ([`suggest`]).
//!
//! Every fire comes from the engine's own occurrence walk in each job's
//! clock, so the answers cannot disagree with the scheduler. Pure: "now"
//! is an argument, and the caller builds the fleet from its job table.

use std::collections::HashMap;

use chrono::{DateTime, Duration, NaiveDateTime, Timelike, Utc};
use serde::Serialize;

use super::describe::describe;
use super::expr::CronExpr;
use super::field::Fields;
use super::tz::TimeBase;

/// One scheduled job as the analyses see it: an enabled job with a cron
/// schedule (disabled and `@reboot` jobs never fire on a timetable, so
/// they cannot collide with anything and the caller leaves them out).
#[derive(Debug, Clone, Copy)]
pub struct FleetEntry<'a> {
    /// The job's name.
    pub name: &'a str,
    /// Its schedule, parsed under its name (so `H` is resolved).
    pub expr: &'a CronExpr,
    /// The clock the schedule runs in.
    pub tz: &'a TimeBase,
}

/// Job names a heatmap cell carries at most, so one cell hundreds of jobs
/// share keeps the payload small.
const NAMES_PER_CELL: usize = 10;

/// How many cells `top_cells` lists.
const TOP_CELLS: usize = 6;

/// The widest window [`pressure`] walks, in hours (a week).
pub const MAX_PRESSURE_HOURS: u32 = 168;

/// The window [`suggest`] scores, in hours.
const SUGGEST_HOURS: u32 = 24;

/// Cells of the day grid: hour of day times minute of hour.
const CELLS: usize = 24 * 60;

/// A clock's name as the payloads show it: the zone's name, `UTC`, or
/// `local` for the host's clock.
pub fn zone_label(tz: &TimeBase) -> &'static str {
    tz.name().unwrap_or("local")
}

/// An instant as Python's `isoformat` writes it in `tz`: whole seconds
/// when there is no fraction, else six digits of it, and the offset.
pub fn python_iso(tz: &TimeBase, instant: DateTime<Utc>) -> String {
    let label = tz.label(instant);
    let offset = (label - instant.naive_utc()).num_seconds();
    let sign = if offset < 0 { '-' } else { '+' };
    let offset = offset.unsigned_abs();
    let (hours, minutes, seconds) = (offset / 3600, offset / 60 % 60, offset % 60);
    let micros = label.nanosecond() / 1000;
    let mut text = label.format("%Y-%m-%dT%H:%M:%S").to_string();
    if micros != 0 {
        text.push_str(&format!(".{micros:06}"));
    }
    text.push_str(&format!("{sign}{hours:02}:{minutes:02}"));
    if seconds != 0 {
        text.push_str(&format!(":{seconds:02}"));
    }
    text
}

/// The fires of one distinct schedule (one walk serves every job that
/// shares the schedule and the clock), as day-grid cells.
struct Walk {
    /// The cell of each fire, in order.
    cells: Vec<u16>,
    /// Fires per selected minute (more than one for a seconds column).
    weight: u64,
    /// How many entries share the walk.
    members: u64,
}

/// Every entry's fires over `[start, start + hours)`, walked once per
/// distinct (schedule, clock), each fire labelled with its hour and
/// minute in `display`. Returns the walks and, per entry, its walk.
fn walk_fleet(
    entries: &[FleetEntry<'_>],
    start: DateTime<Utc>,
    hours: u32,
    display: &TimeBase,
) -> (Vec<Walk>, Vec<usize>) {
    let end = start + Duration::hours(i64::from(hours));
    // A minute-grained walk cannot fire more often than once a minute;
    // the cap is a backstop, never reached.
    let cap = hours as usize * 60 + 2;
    let mut index: HashMap<(Fields, TimeBase), usize> = HashMap::new();
    let mut walks: Vec<Walk> = Vec::new();
    let mut of_entry = Vec::with_capacity(entries.len());
    for entry in entries {
        let key = (*entry.expr.fields(), *entry.tz);
        if let Some(&at) = index.get(&key) {
            walks[at].members += 1;
            of_entry.push(at);
            continue;
        }
        let (twin, weight) = entry.expr.minute_twin();
        let mut cells = Vec::new();
        let mut cursor = start;
        while cells.len() < cap {
            match twin.next_after(cursor, entry.tz) {
                Some(fire) if fire < end => {
                    cells.push(cell_of(display.label(fire)));
                    cursor = fire;
                }
                _ => break,
            }
        }
        index.insert(key, walks.len());
        of_entry.push(walks.len());
        walks.push(Walk {
            cells,
            weight: u64::from(weight),
            members: 1,
        });
    }
    (walks, of_entry)
}

fn cell_of(label: NaiveDateTime) -> u16 {
    // hour < 24 and minute < 60, so the cell fits
    (label.hour() * 60 + label.minute()) as u16
}

/// Fires per cell of the day grid.
fn grid_of(walks: &[Walk]) -> Vec<u64> {
    let mut grid = vec![0u64; CELLS];
    for walk in walks {
        let share = walk.weight * walk.members;
        for &cell in &walk.cells {
            grid[usize::from(cell)] += share;
        }
    }
    grid
}

/// The fleet's collision heatmap (`GET /schedule/pressure`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pressure {
    /// The window's start in the display clock (ISO-8601).
    pub start: String,
    /// The window's length after clamping (1 to 168).
    pub hours: u32,
    /// The display clock's name.
    pub timezone: String,
    /// Jobs analyzed.
    pub jobs: usize,
    /// Fires in the window.
    pub total_fires: u64,
    /// 24 rows (hour of day) of 60 fire counts (minute of hour).
    pub grid: Vec<Vec<u64>>,
    /// Fires at each minute of the hour, over the whole window.
    pub by_minute_fires: Vec<u64>,
    /// Distinct jobs firing at each minute of the hour.
    pub by_minute_jobs: Vec<u64>,
    /// Fires per hour row.
    pub by_hour: Vec<u64>,
    /// The minute with the most jobs (then fires), earliest on a tie.
    pub busiest_minute: BusiestMinute,
    /// The minutes of the hour nothing fires on.
    pub empty_minutes: Vec<u32>,
    /// The busiest cells, each naming up to ten of its jobs.
    pub top_cells: Vec<TopCell>,
    /// Jobs left out: `{disabled, reboot}`, counted by the caller.
    pub excluded: Excluded,
}

/// `busiest_minute` of [`Pressure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BusiestMinute {
    /// Minute of the hour.
    pub minute: u32,
    /// Distinct jobs firing at it.
    pub jobs: u64,
    /// Fires at it.
    pub fires: u64,
}

/// One of the busiest cells of [`Pressure`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopCell {
    /// Hour of day.
    pub hour: u32,
    /// Minute of hour.
    pub minute: u32,
    /// Fires in the cell.
    pub fires: u64,
    /// Up to ten of the jobs firing in it, in fleet order.
    pub jobs: Vec<String>,
}

/// The jobs a fleet analysis leaves out, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Excluded {
    /// Disabled jobs.
    pub disabled: usize,
    /// Enabled `@reboot` jobs.
    pub reboot: usize,
}

/// Every entry's fires over `[start, start + hours)` (hours clamped to
/// 1..=168), bucketed by hour and minute in `display`. A fall-back hour's
/// repeated wall time counts both real fires in its cell.
pub fn pressure(
    entries: &[FleetEntry<'_>],
    start: DateTime<Utc>,
    hours: u32,
    display: &TimeBase,
    excluded: Excluded,
) -> Pressure {
    let hours = hours.clamp(1, MAX_PRESSURE_HOURS);
    let (walks, of_entry) = walk_fleet(entries, start, hours, display);
    let grid = grid_of(&walks);
    let mut by_minute_fires = vec![0u64; 60];
    let mut by_hour = vec![0u64; 24];
    for (cell, &fires) in grid.iter().enumerate() {
        by_minute_fires[cell % 60] += fires;
        by_hour[cell / 60] += fires;
    }
    // Jobs per minute of the hour: each walk counts its members once for
    // every minute it touches (job names are unique in a fleet).
    let mut by_minute_jobs = vec![0u64; 60];
    let mut touched: Vec<[u64; CELLS.div_ceil(64)]> = Vec::with_capacity(walks.len());
    for walk in &walks {
        let mut minutes = 0u64;
        let mut cells = [0u64; CELLS.div_ceil(64)];
        for &cell in &walk.cells {
            let cell = usize::from(cell);
            minutes |= 1 << (cell % 60);
            cells[cell / 64] |= 1 << (cell % 64);
        }
        for (minute, jobs) in by_minute_jobs.iter_mut().enumerate() {
            if minutes >> minute & 1 == 1 {
                *jobs += walk.members;
            }
        }
        touched.push(cells);
    }
    let busiest = (0..60)
        .max_by_key(|&m| (by_minute_jobs[m], by_minute_fires[m], std::cmp::Reverse(m)))
        .unwrap_or(0);
    let mut ranked: Vec<usize> = (0..CELLS).filter(|&c| grid[c] > 0).collect();
    ranked.sort_by_key(|&c| (std::cmp::Reverse(grid[c]), c));
    let top_cells = ranked
        .into_iter()
        .take(TOP_CELLS)
        .map(|cell| {
            let jobs = entries
                .iter()
                .zip(&of_entry)
                .filter(|(_, &walk)| touched[walk][cell / 64] >> (cell % 64) & 1 == 1)
                .take(NAMES_PER_CELL)
                .map(|(entry, _)| entry.name.to_owned())
                .collect();
            TopCell {
                hour: (cell / 60) as u32,
                minute: (cell % 60) as u32,
                fires: grid[cell],
                jobs,
            }
        })
        .collect();
    Pressure {
        start: python_iso(display, start),
        hours,
        timezone: zone_label(display).to_owned(),
        jobs: entries.len(),
        total_fires: by_hour.iter().sum(),
        grid: grid.chunks(60).map(<[u64]>::to_vec).collect(),
        busiest_minute: BusiestMinute {
            minute: busiest as u32,
            jobs: by_minute_jobs[busiest],
            fires: by_minute_fires[busiest],
        },
        empty_minutes: (0..60u32)
            .filter(|&m| by_minute_fires[m as usize] == 0)
            .collect(),
        by_minute_fires,
        by_minute_jobs,
        by_hour,
        top_cells,
        excluded,
    }
}

/// A group of jobs whose schedules fire on identical instants
/// (`GET /schedule/duplicates`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DuplicateGroup {
    /// The members' most common spelling (the first seen on a tie).
    pub expression: String,
    /// The shared schedule in plain English.
    pub description: String,
    /// The members' clock.
    pub timezone: String,
    /// How many members.
    pub count: usize,
    /// The members' names, sorted.
    pub jobs: Vec<String>,
}

/// The groups of two or more entries whose schedules are equal by the
/// engine's semantic equality (`*/5` equals `0-59/5`, an `H` slot equals
/// the plain spelling it resolved to) in the same clock (the same
/// schedule in two zones never fires together). Largest group first, then
/// by expression.
pub fn duplicates(entries: &[FleetEntry<'_>]) -> Vec<DuplicateGroup> {
    let mut index: HashMap<(Fields, &'static str), usize> = HashMap::new();
    let mut groups: Vec<Vec<&FleetEntry<'_>>> = Vec::new();
    for entry in entries {
        let key = (entry.expr.fields().normalized(), zone_label(entry.tz));
        let at = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[at].push(entry);
    }
    let mut out: Vec<DuplicateGroup> = groups
        .into_iter()
        .filter(|members| members.len() > 1)
        .map(|members| {
            let expression = most_common(members.iter().map(|e| e.expr.canonical()));
            let resolved = most_common(members.iter().map(|e| e.expr.resolved()));
            let mut jobs: Vec<String> = members.iter().map(|e| e.name.to_owned()).collect();
            jobs.sort();
            DuplicateGroup {
                expression: expression.to_owned(),
                description: describe(resolved, None),
                timezone: zone_label(members[0].tz).to_owned(),
                count: members.len(),
                jobs,
            }
        })
        .collect();
    // stable: groups that tie keep their first-seen order
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.expression.cmp(&b.expression))
    });
    out
}

/// The most frequent item, the first seen among equals.
fn most_common<'a>(items: impl Iterator<Item = &'a str>) -> &'a str {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for item in items {
        match counts.iter_mut().find(|(seen, _)| *seen == item) {
            Some((_, n)) => *n += 1,
            None => counts.push((item, 1)),
        }
    }
    let mut best: (&str, usize) = ("", 0);
    for (item, n) in counts {
        if n > best.1 {
            best = (item, n);
        }
    }
    best.0
}

/// What [`suggest`] picks: a minute of the hour, or a time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// `<m> * * * *`.
    Hourly,
    /// `<m> <h> * * *`.
    Daily,
}

impl Period {
    /// Reads `hourly` or `daily`; the error is the 400 message.
    pub fn parse(text: &str) -> Result<Period, String> {
        match text {
            "hourly" => Ok(Period::Hourly),
            "daily" => Ok(Period::Daily),
            other => Err(format!(
                "period must be 'hourly' or 'daily', got {}",
                crate::pyfmt::repr_str(other)
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Period::Hourly => "hourly",
            Period::Daily => "daily",
        }
    }
}

/// One candidate slot of a [`Suggestion`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Slot {
    /// Hour of day (daily suggestions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hour: Option<u32>,
    /// Minute of the hour.
    pub minute: u32,
    /// The schedule that fires in the slot.
    pub expression: String,
    /// Fires already in the slot over the scored day.
    pub fires_in_window: u64,
}

/// The busiest slot of a [`Suggestion`], for contrast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BusiestSlot {
    /// Hour of day (daily suggestions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hour: Option<u32>,
    /// Minute of the hour.
    pub minute: u32,
    /// Fires in the slot over the scored day.
    pub fires_in_window: u64,
}

/// What the scoring was based on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BasedOn {
    /// Jobs in the fleet.
    pub jobs: usize,
    /// The scored window's start in the display clock.
    pub start: String,
    /// The scored window's length (always 24).
    pub hours: u32,
}

/// The least-loaded slot for a new job (`GET /schedule/suggest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// `hourly` or `daily`.
    pub period: &'static str,
    /// The display clock's name.
    pub timezone: String,
    /// The fleet and window scored.
    pub based_on: BasedOn,
    /// The winner, its members at the top level.
    #[serde(flatten)]
    pub slot: Slot,
    /// The most crowded slot.
    pub busiest: BusiestSlot,
    /// The two runners-up.
    pub alternatives: Vec<Slot>,
    /// The `H` spelling that spreads jobs without picking slots by hand.
    pub hash_hint: &'static str,
}

/// The least-loaded slot over the day after `start`, in `display`'s
/// clock: fewest fires first, then the slot farthest around the clock
/// from the busiest one (an idle fleet gets `:30`, away from the top of
/// the hour), then the earliest. Deterministic for a given fleet and
/// window.
pub fn suggest(
    entries: &[FleetEntry<'_>],
    period: Period,
    start: DateTime<Utc>,
    display: &TimeBase,
) -> Suggestion {
    let (walks, _) = walk_fleet(entries, start, SUGGEST_HOURS, display);
    let grid = grid_of(&walks);
    // The slots of the period with their loads: 60 minutes, or the 1,440
    // minutes of the day.
    let loads: Vec<u64> = match period {
        Period::Hourly => (0..60)
            .map(|m| (0..24).map(|h| grid[h * 60 + m]).sum())
            .collect(),
        Period::Daily => grid,
    };
    let span = loads.len();
    // The earliest of the most loaded slots.
    let busiest = (0..span)
        .max_by_key(|&s| (loads[s], std::cmp::Reverse(s)))
        .unwrap_or(0);
    let distance = |s: usize| {
        let d = (s + span - busiest) % span;
        d.min(span - d)
    };
    let mut order: Vec<usize> = (0..span).collect();
    order.sort_by_key(|&s| (loads[s], std::cmp::Reverse(distance(s)), s));
    let slot = |s: usize| {
        let (hour, minute) = match period {
            Period::Hourly => (None, s as u32),
            Period::Daily => (Some((s / 60) as u32), (s % 60) as u32),
        };
        Slot {
            hour,
            minute,
            expression: match hour {
                None => format!("{minute} * * * *"),
                Some(hour) => format!("{minute} {hour} * * *"),
            },
            fires_in_window: loads[s],
        }
    };
    let mut slots = order.into_iter().take(3).map(slot);
    let winner = slots.next().unwrap_or_else(|| slot(0));
    let busiest_slot = slot(busiest);
    Suggestion {
        period: period.name(),
        timezone: zone_label(display).to_owned(),
        based_on: BasedOn {
            jobs: entries.len(),
            start: python_iso(display, start),
            hours: SUGGEST_HOURS,
        },
        slot: winner,
        busiest: BusiestSlot {
            hour: busiest_slot.hour,
            minute: busiest_slot.minute,
            fires_in_window: busiest_slot.fires_in_window,
        },
        alternatives: slots.collect(),
        hash_hint: match period {
            Period::Hourly => "H * * * *",
            Period::Daily => "H H * * *",
        },
    }
}

#[cfg(test)]
#[path = "fleet_tests.rs"]
mod tests;
