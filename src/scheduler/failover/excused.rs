//! The pause windows a catch-up owes nothing for: pure, tested on their own.
//!
//! The manual's rule (Pausing-Jobs, "Catch-up owes nothing for the
//! window"): a missed slot inside a pause window `[since, until)` is not
//! owed, including a window that began and lapsed while the daemon was
//! down. A resume, or a later pause overwriting the window, ends it early.
//! The windows come from a job's pause marks, which the scheduler keeps in
//! a small [`PauseLog`] fed from every place a mark is seen: the durable
//! store's `paused/<job>` records read at start, the marks other nodes
//! write there (the poller), the leadership store's newest mark read at a
//! takeover, and the pauses and resumes this node accepts.

use crate::scheduler::pause::PauseMark;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Marks kept per job: twice what the durable store retains per job
/// (8), so the records read at start and the marks seen live since both
/// fit. Older marks only describe windows older than every kept one.
pub const MARKS_KEPT: usize = 16;

/// A span `[since, until)` whose slots a catch-up owes nothing for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Excused {
    /// The first instant excused.
    pub since: DateTime<Utc>,
    /// The first instant owed again (a slot exactly here is owed, as the
    /// live pause check reads a pause whose `until` has come as over).
    pub until: DateTime<Utc>,
}

impl Excused {
    /// Whether the slot at `at` falls inside this window.
    pub fn covers(&self, at: DateTime<Utc>) -> bool {
        self.since <= at && at < self.until
    }
}

/// Orders marks the way [`PauseMark::supersedes`] decides between them:
/// by instant, a resume after a pause made at the same instant.
fn mark_order(a: &PauseMark, b: &PauseMark) -> std::cmp::Ordering {
    let rank = |m: &PauseMark| u8::from(matches!(m, PauseMark::Resumed { .. }));
    a.at().cmp(&b.at()).then(rank(a).cmp(&rank(b)))
}

/// The windows a job's pause marks describe, oldest first and disjoint.
/// Each pause covers `[since, until)`, cut short by the next mark: a
/// resume ends it, and a new pause replaces it from its own `since` (an
/// overwrite may shorten the window; a longer one simply follows on).
/// The marks may come in any order and repeat.
pub fn pause_windows(marks: &[PauseMark]) -> Vec<Excused> {
    let mut sorted: Vec<&PauseMark> = Vec::with_capacity(marks.len());
    for mark in marks {
        // The same mark can reach the log from several places.
        if !sorted.contains(&mark) {
            sorted.push(mark);
        }
    }
    sorted.sort_by(|a, b| mark_order(a, b));
    let mut windows: Vec<Excused> = Vec::new();
    for mark in sorted {
        if let Some(last) = windows.last_mut() {
            last.until = last.until.min(mark.at());
        }
        if let PauseMark::Paused(window) = mark {
            windows.push(Excused {
                since: window.since,
                until: window.until,
            });
        }
    }
    windows.retain(|w| w.since < w.until);
    windows
}

/// The window covering `at` that ends last, if any (the walk jumps to its
/// end: nothing before it is owed).
pub fn covering(windows: &[Excused], at: DateTime<Utc>) -> Option<Excused> {
    windows
        .iter()
        .filter(|w| w.covers(at))
        .max_by_key(|w| w.until)
        .copied()
}

/// Per job, the newest pause marks this node has seen (at most
/// [`MARKS_KEPT`] each), for the windows a catch-up excuses.
#[derive(Debug, Default)]
pub struct PauseLog {
    marks: HashMap<String, Vec<PauseMark>>,
}

impl PauseLog {
    /// Keeps `mark` of `job` (a repeat of a kept mark changes nothing).
    pub fn note(&mut self, job: &str, mark: PauseMark) {
        let kept = self.marks.entry(job.to_owned()).or_default();
        if kept.contains(&mark) {
            return;
        }
        kept.push(mark);
        kept.sort_by(mark_order);
        if kept.len() > MARKS_KEPT {
            let excess = kept.len() - MARKS_KEPT;
            kept.drain(..excess);
        }
    }

    /// The windows `job`'s kept marks describe (see [`pause_windows`]).
    pub fn windows(&self, job: &str) -> Vec<Excused> {
        self.marks
            .get(job)
            .map(|marks| pause_windows(marks))
            .unwrap_or_default()
    }
}
