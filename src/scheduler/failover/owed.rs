//! What a job is owed for the fires it missed, and the stable jitter a
//! catch-up launch waits: pure, tested on their own.

use super::excused::{covering, Excused};
use crate::config::model::OnMissed;
use crate::cronexpr::{CronExpr, TimeBase};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use std::time::Duration;

/// The most launches one catch-up replays for a `run-all` job (the
/// original's cap).
pub const MAX_CATCHUP: u32 = 100;

/// What a job is owed for the fires it missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    /// Launches owed (0: nothing missed).
    pub count: u32,
    /// The newest missed fire (the watermark recorded with the launches).
    pub newest: Option<DateTime<Utc>>,
    /// `run-all` found more than [`MAX_CATCHUP`] fires and dropped the rest.
    pub capped: bool,
}

/// The launches a job with catch-up policy `mode` is owed for its fires
/// after `after` (exclusive) up to `upto` (inclusive), ignoring fires
/// before `cutoff` (`startingDeadlineSeconds`) and fires inside a pause
/// window of `excused` (the windows are stepped over, never used as a
/// floor: a fire before a window is still owed). Pure: the catch-up's
/// whole decision, tested on its own.
pub fn owed_fires(
    expr: &CronExpr,
    tz: &TimeBase,
    after: DateTime<Utc>,
    upto: DateTime<Utc>,
    cutoff: Option<DateTime<Utc>>,
    mode: OnMissed,
    excused: &[Excused],
) -> Owed {
    let nothing = Owed {
        count: 0,
        newest: None,
        capped: false,
    };
    // Fires older than the deadline are not owed: start the walk there.
    let from = match cutoff {
        Some(cutoff) if cutoff > after => cutoff - ChronoDuration::nanoseconds(1),
        _ => after,
    };
    if upto <= from {
        return nothing;
    }
    match mode {
        OnMissed::Skip => nothing,
        OnMissed::RunOnce => {
            // The newest fire at or before `upto` outside every pause
            // window; owed when it is after the start of the window. One
            // launch covers them all. A fire inside a window sends the
            // search to before that window's start (each window is
            // passed at most once, so this ends).
            let mut before = upto + ChronoDuration::nanoseconds(1);
            while let Some(newest) = expr.prev_before(before, tz) {
                if newest <= from {
                    break;
                }
                let Some(window) = excused
                    .iter()
                    .filter(|w| w.covers(newest))
                    .min_by_key(|w| w.since)
                else {
                    return Owed {
                        count: 1,
                        newest: Some(newest),
                        capped: false,
                    };
                };
                before = window.since;
            }
            nothing
        }
        OnMissed::RunAll => {
            let mut count = 0;
            let mut newest = None;
            let mut cursor = from;
            while let Some(next) = expr.next_after(cursor, tz) {
                if next > upto {
                    break;
                }
                if let Some(window) = covering(excused, next) {
                    // Jump to the window's end rather than stepping each
                    // excused fire (a paused per-second job would walk
                    // every second of the pause). One nanosecond back, so
                    // a fire exactly on `until` is owed.
                    cursor = window.until - ChronoDuration::nanoseconds(1);
                    continue;
                }
                if count == MAX_CATCHUP {
                    return Owed {
                        count,
                        newest,
                        capped: true,
                    };
                }
                count += 1;
                newest = Some(next);
                cursor = next;
            }
            Owed {
                count,
                newest,
                capped: false,
            }
        }
    }
}

/// A stable offset in `[0, n)` seconds for `name` (the original's
/// deterministic per-job jitter: the same job waits the same on every node).
pub(super) fn jitter_offset(name: &str, n: i64) -> Duration {
    if n <= 0 {
        return Duration::ZERO;
    }
    // FNV-1a: stable across processes and releases, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    Duration::from_secs(hash % n.unsigned_abs())
}
