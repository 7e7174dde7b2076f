//! The jobs board's logic: each job's health, the status filter, the sort
//! orders, the text filter, the board's columns for a terminal width, the
//! duration sparkline and the scroll window. Pure: values in, values out.

use super::model::{HistoryEntry, Job};
use std::cmp::Ordering;

/// A job's state on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Health {
    /// The last run succeeded.
    Ok,
    /// The last run failed.
    Fail,
    /// An instance runs.
    Run,
    /// No run yet (or the last slot was skipped).
    Pending,
    /// Disabled in the config.
    Disabled,
    /// Paused at run time.
    Paused,
    /// The last run was cancelled.
    Cancelled,
    /// The last run's end is unknown (a crash interrupted it).
    Unknown,
}

/// A finished run's outcome, as the history and sparkline color it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `success` (and anything unrecognized).
    Ok,
    /// `failure`.
    Fail,
    /// `cancelled`.
    Cancelled,
    /// `unknown`.
    Unknown,
    /// `skipped`: a slot a pause held back, no verdict on the job.
    Skipped,
}

impl Outcome {
    /// The outcome an API spelling names.
    pub fn of(outcome: &str) -> Outcome {
        match outcome {
            "failure" => Outcome::Fail,
            "cancelled" => Outcome::Cancelled,
            "unknown" => Outcome::Unknown,
            "skipped" => Outcome::Skipped,
            _ => Outcome::Ok,
        }
    }
}

/// A job's health and the word the status column shows.
pub fn health(job: &Job) -> (Health, &'static str) {
    if !job.enabled {
        return (Health::Disabled, "Disabled");
    }
    // A pause holds future fires only: a run in progress still shows.
    if job.pause().is_some() && !job.running {
        return (Health::Paused, "Paused");
    }
    if job.running {
        return (Health::Run, "Running");
    }
    match job.last_run.as_ref().map(|r| r.outcome.as_str()) {
        None => (Health::Pending, "Pending"),
        Some("failure") => (Health::Fail, "Failed"),
        Some("cancelled") => (Health::Cancelled, "Cancelled"),
        Some("unknown") => (Health::Unknown, "Unknown"),
        Some("skipped") => (Health::Pending, "Skipped"),
        Some(_) => (Health::Ok, "OK"),
    }
}

/// The status glyph of a health, or of a run's outcome.
pub fn glyph(health: Health, ascii: bool) -> &'static str {
    let (fancy, plain) = match health {
        Health::Ok => ("●", "o"),
        Health::Fail => ("✕", "x"),
        Health::Run => ("▶", ">"),
        Health::Pending => ("◔", "."),
        Health::Disabled => ("◌", "-"),
        Health::Paused => ("⏸", "p"),
        Health::Cancelled => ("⊘", "/"),
        Health::Unknown => ("◍", "?"),
    };
    if ascii {
        plain
    } else {
        fancy
    }
}

/// The glyph of a run outcome.
pub fn outcome_glyph(outcome: Outcome, ascii: bool) -> &'static str {
    match outcome {
        Outcome::Ok => glyph(Health::Ok, ascii),
        Outcome::Fail => glyph(Health::Fail, ascii),
        Outcome::Cancelled | Outcome::Skipped => glyph(Health::Cancelled, ascii),
        Outcome::Unknown => glyph(Health::Unknown, ascii),
    }
}

/// The status filter (`f` cycles it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// Every job.
    All,
    /// Healthy.
    Ok,
    /// Failing.
    Fail,
    /// Running.
    Run,
    /// Disabled.
    Off,
}

impl Segment {
    /// In toolbar order.
    pub const ALL: [Segment; 5] = [
        Segment::All,
        Segment::Ok,
        Segment::Fail,
        Segment::Run,
        Segment::Off,
    ];

    /// The toolbar's word.
    pub fn name(self) -> &'static str {
        match self {
            Segment::All => "all",
            Segment::Ok => "ok",
            Segment::Fail => "fail",
            Segment::Run => "run",
            Segment::Off => "off",
        }
    }

    /// The next one.
    pub fn next(self) -> Segment {
        let at = Segment::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Segment::ALL[(at + 1) % Segment::ALL.len()]
    }

    /// Whether a job of `health` shows under this filter (pending,
    /// paused, cancelled and unknown jobs show under `all` only).
    pub fn admits(self, health: Health) -> bool {
        match self {
            Segment::All => true,
            Segment::Ok => health == Health::Ok,
            Segment::Fail => health == Health::Fail,
            Segment::Run => health == Health::Run,
            Segment::Off => health == Health::Disabled,
        }
    }
}

/// The board's sort key (`s` cycles it, `S` flips the direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// By name, case-insensitively.
    Name,
    /// Running first, then failing, pending, ..., disabled last.
    Status,
    /// Most recently finished first.
    Last,
    /// Soonest next fire first.
    Next,
    /// Longest last run first.
    Duration,
}

impl SortKey {
    /// In cycling order.
    pub const ALL: [SortKey; 5] = [
        SortKey::Name,
        SortKey::Status,
        SortKey::Last,
        SortKey::Next,
        SortKey::Duration,
    ];

    /// The toolbar's word.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Name => "name",
            SortKey::Status => "status",
            SortKey::Last => "last",
            SortKey::Next => "next",
            SortKey::Duration => "duration",
        }
    }

    /// The next one.
    pub fn next(self) -> SortKey {
        let at = SortKey::ALL.iter().position(|s| *s == self).unwrap_or(0);
        SortKey::ALL[(at + 1) % SortKey::ALL.len()]
    }
}

fn status_rank(health: Health) -> u8 {
    match health {
        Health::Run => 0,
        Health::Fail => 1,
        Health::Pending => 2,
        Health::Unknown => 3,
        Health::Cancelled => 4,
        Health::Ok => 5,
        Health::Paused => 6,
        Health::Disabled => 7,
    }
}

/// What one poll's jobs are read into once, so filtering and sorting
/// never recompute them per keystroke.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    /// Each job's health (same order as the jobs).
    pub health: Vec<Health>,
    /// Each job's name, lowercased.
    pub lower_name: Vec<String>,
    /// Each job's command, lowercased.
    pub lower_command: Vec<String>,
    /// Each job's last finish, epoch seconds.
    pub finished: Vec<Option<f64>>,
    /// How many jobs of each health (indexed like [`Facts::count`]).
    counts: [usize; 8],
    /// Some job has live resource readings.
    pub monitored: bool,
    /// Some job names its cluster owner.
    pub spread: bool,
    /// Some job is late on an SLA.
    pub overdue: bool,
    /// Some job is paused.
    pub paused: bool,
}

fn health_index(health: Health) -> usize {
    status_rank(health) as usize
}

impl Facts {
    /// Reads `jobs`.
    pub fn of(jobs: &[Job]) -> Facts {
        let mut facts = Facts {
            health: Vec::with_capacity(jobs.len()),
            lower_name: Vec::with_capacity(jobs.len()),
            lower_command: Vec::with_capacity(jobs.len()),
            finished: Vec::with_capacity(jobs.len()),
            ..Facts::default()
        };
        for job in jobs {
            let (health, _) = health(job);
            facts.counts[health_index(health)] += 1;
            facts.health.push(health);
            facts.lower_name.push(job.name.to_lowercase());
            facts.lower_command.push(job.command.to_lowercase());
            facts.finished.push(
                job.last_run
                    .as_ref()
                    .and_then(|r| r.finished_at.as_deref())
                    .and_then(super::format::parse_iso),
            );
            facts.monitored |= job.running_resources.is_some();
            facts.spread |= job.cluster_owner.is_some();
            facts.overdue |= job.overdue();
            facts.paused |= job.pause().is_some();
        }
        facts
    }

    /// How many jobs have `health`.
    pub fn count(&self, health: Health) -> usize {
        self.counts[health_index(health)]
    }
}

/// The board's rows: indices into `jobs`, filtered by `needle` (a
/// case-insensitive substring of the name or the command) and `segment`,
/// sorted by `key` (ties by name; `descending` reverses the whole order).
pub fn compute_view(
    jobs: &[Job],
    facts: &Facts,
    needle: &str,
    segment: Segment,
    key: SortKey,
    descending: bool,
) -> Vec<usize> {
    let needle = needle.trim().to_lowercase();
    let mut rows: Vec<usize> = (0..jobs.len())
        .filter(|&i| segment.admits(facts.health[i]))
        .filter(|&i| {
            needle.is_empty()
                || facts.lower_name[i].contains(&needle)
                || facts.lower_command[i].contains(&needle)
        })
        .collect();
    let by_name = |a: usize, b: usize| {
        name_order(
            &jobs[a].name,
            &facts.lower_name[a],
            &jobs[b].name,
            &facts.lower_name[b],
        )
    };
    let key_order = |a: usize, b: usize| -> Ordering {
        match key {
            SortKey::Name => Ordering::Equal,
            SortKey::Status => status_rank(facts.health[a]).cmp(&status_rank(facts.health[b])),
            // newest first: a larger stamp sorts earlier; none last
            SortKey::Last => cmp_f64(
                facts.finished[b].unwrap_or(0.0),
                facts.finished[a].unwrap_or(0.0),
            ),
            SortKey::Next => cmp_f64(
                jobs[a].scheduled_in.unwrap_or(f64::INFINITY),
                jobs[b].scheduled_in.unwrap_or(f64::INFINITY),
            ),
            SortKey::Duration => {
                let d = |i: usize| {
                    jobs[i]
                        .last_run
                        .as_ref()
                        .and_then(|r| r.duration)
                        .unwrap_or(-1.0)
                };
                cmp_f64(d(b), d(a))
            }
        }
    };
    rows.sort_by(|&a, &b| {
        let order = key_order(a, b).then_with(|| by_name(a, b));
        if descending {
            order.reverse()
        } else {
            order
        }
    });
    rows
}

fn cmp_f64(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// Names in dictionary order: case-insensitive first, then lowercase
/// before uppercase on a tie (`apple` < `Backup` < `backup2`, `backup` <
/// `Backup`), then code points, so the order is total.
pub fn name_order(a: &str, a_lower: &str, b: &str, b_lower: &str) -> Ordering {
    a_lower.cmp(b_lower).then_with(|| {
        let swap = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().next().unwrap_or(c)
                    } else {
                        c.to_uppercase().next().unwrap_or(c)
                    }
                })
                .collect()
        };
        swap(a).cmp(&swap(b)).then_with(|| a.cmp(b))
    })
}

/// A board column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// Glyph and status word (and OVERDUE).
    Status,
    /// The job's name.
    Name,
    /// The schedule.
    Schedule,
    /// Last run's age (or the retry in progress).
    Last,
    /// Next fire's countdown (or the pause's end).
    Next,
    /// Last run's duration.
    Duration,
    /// Recent runs' durations as bars.
    Spark,
    /// Live CPU and memory of a monitored job.
    Resources,
    /// The node that runs the job.
    Owner,
    /// The command.
    Command,
}

impl Column {
    /// The header word.
    pub fn title(self) -> &'static str {
        match self {
            Column::Status => "status",
            Column::Name => "name",
            Column::Schedule => "schedule",
            Column::Last => "last",
            Column::Next => "next",
            Column::Duration => "dur",
            Column::Spark => "runs",
            Column::Resources => "cpu/mem",
            Column::Owner => "owner",
            Column::Command => "command",
        }
    }
}

/// The columns for a board `cols` wide, each with its width (one space
/// between columns and a one-column selection marker in front are not
/// counted in the widths). Optional columns show only when some job needs
/// them; when the board is narrow the least needed go first; what is left
/// over widens the name and the command.
pub fn columns(cols: usize, facts: &Facts) -> Vec<(Column, usize)> {
    columns_at(cols, facts, false)
}

/// [`columns`], and with `compact` (the compact density setting) never
/// the schedule or the sparkline.
pub fn columns_at(cols: usize, facts: &Facts, compact: bool) -> Vec<(Column, usize)> {
    let mut layout = vec![
        (Column::Status, 11),
        (Column::Name, 24),
        (Column::Schedule, 14),
    ];
    layout.extend([
        (Column::Last, 10),
        (Column::Next, 8),
        (Column::Duration, 8),
        (Column::Spark, 11),
    ]);
    if compact {
        layout.retain(|(c, _)| !matches!(c, Column::Schedule | Column::Spark));
    }
    if facts.monitored {
        layout.push((Column::Resources, 15));
    }
    if facts.spread {
        layout.push((Column::Owner, 12));
    }
    layout.push((Column::Command, 20));
    let total = |layout: &[(Column, usize)]| 1 + layout.iter().map(|(_, w)| w + 1).sum::<usize>();
    for drop in [
        Column::Spark,
        Column::Resources,
        Column::Schedule,
        Column::Duration,
        Column::Command,
        Column::Owner,
    ] {
        if total(&layout) <= cols {
            break;
        }
        layout.retain(|(c, _)| *c != drop);
    }
    let mut slack = cols.saturating_sub(total(&layout));
    // The wider pause and OVERDUE cells come out of the slack only: they
    // never push a whole column off the board.
    for (want_col, want) in [
        (Column::Next, if facts.paused { 4 } else { 0 }),
        (Column::Status, if facts.overdue { 8 } else { 0 }),
    ] {
        if let Some((_, w)) = layout.iter_mut().find(|(c, _)| *c == want_col) {
            let take = want.min(slack);
            *w += take;
            slack -= take;
        }
    }
    let flexible: Vec<usize> = layout
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| matches!(c, Column::Name | Column::Command))
        .map(|(i, _)| i)
        .collect();
    if !flexible.is_empty() {
        let share = slack / flexible.len();
        for i in flexible {
            layout[i].1 += share;
        }
    }
    // Narrower than even the two columns left: shrink the name to fit.
    let over = total(&layout).saturating_sub(cols);
    if over > 0 {
        if let Some((_, w)) = layout.iter_mut().find(|(c, _)| *c == Column::Name) {
            *w = w.saturating_sub(over).max(1);
        }
    }
    layout
}

/// The bars of the sparkline, lowest first.
pub const BARS: [&str; 8] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/// The last `width` runs of `history` as bars, oldest first: each run's
/// height is its duration against the longest shown, colored by outcome.
pub fn sparkline(history: &[HistoryEntry], width: usize) -> Vec<(&'static str, Outcome)> {
    let tail = &history[history.len().saturating_sub(width)..];
    let top = tail
        .iter()
        .filter_map(|r| r.duration)
        .fold(0.0_f64, f64::max);
    tail.iter()
        .map(|run| {
            let d = run.duration.unwrap_or(0.0).max(0.0);
            let level = if top > 0.0 {
                ((d / top) * (BARS.len() - 1) as f64 + 0.5) as usize
            } else {
                0
            };
            (BARS[level.min(BARS.len() - 1)], Outcome::of(&run.outcome))
        })
        .collect()
}

/// The first row to show of `total` rows in a window `visible` tall so
/// that `cursor` stays inside it, moving from `offset` as little as
/// possible.
pub fn scroll_window(total: usize, visible: usize, cursor: usize, offset: usize) -> usize {
    if total <= visible {
        return 0;
    }
    let mut offset = offset.min(total - visible);
    if cursor < offset {
        offset = cursor;
    } else if visible > 0 && cursor >= offset + visible {
        offset = cursor + 1 - visible;
    }
    offset
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
