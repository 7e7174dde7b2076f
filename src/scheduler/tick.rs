//! When the scheduler wakes: at each minute boundary, or at each second
//! while any enabled job has a seconds field; and which boundaries a pass
//! must evaluate when the loop fell behind (a slow reload, a busy launch,
//! a clock step). Pure: "now" is an argument.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// The scheduler's wake-up cadence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    /// Wake at every whole minute.
    Minute,
    /// Wake at every whole second.
    Second,
}

impl Cadence {
    /// The distance between two boundaries.
    pub fn step(self) -> TimeDelta {
        match self {
            Cadence::Minute => TimeDelta::minutes(1),
            Cadence::Second => TimeDelta::seconds(1),
        }
    }
}

/// The boundary at or before `now`.
pub fn floor(now: DateTime<Utc>, cadence: Cadence) -> DateTime<Utc> {
    now.duration_trunc(cadence.step()).unwrap_or(now)
}

/// The boundary at or after `now`.
fn ceil(now: DateTime<Utc>, cadence: Cadence) -> DateTime<Utc> {
    let below = floor(now, cadence);
    if below < now {
        below + cadence.step()
    } else {
        below
    }
}

/// The first boundary strictly after `now`.
pub fn next_boundary(now: DateTime<Utc>, cadence: Cadence) -> DateTime<Utc> {
    floor(now, cadence) + cadence.step()
}

/// How far back a pass still fires boundaries it missed. A loop that fell
/// behind by less (a reload or a launch burst that outlasted a boundary)
/// catches up every missed boundary; older ones can only come from a
/// suspended machine or a wall clock stepped forward, and firing them all
/// would start a burst of stale runs, so they are skipped (and logged).
pub const CATCH_UP_WINDOW: TimeDelta = TimeDelta::seconds(60);

/// What a pass at `now` has to do, given the last boundary it evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Due {
    /// Boundaries to evaluate, oldest first; each exactly once.
    pub fire: Vec<DateTime<Utc>>,
    /// Boundaries that passed too long ago to fire (see
    /// [`CATCH_UP_WINDOW`]).
    pub skipped: Option<Skipped>,
    /// The last boundary evaluated once this pass is done.
    pub evaluated: DateTime<Utc>,
}

/// A run of boundaries a pass skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    /// The oldest skipped boundary.
    pub first: DateTime<Utc>,
    /// The newest skipped boundary.
    pub last: DateTime<Utc>,
    /// How many were skipped.
    pub count: i64,
}

/// The boundaries in (`evaluated`, `now`] under `cadence`, oldest first,
/// minus those older than `window` before `now`. A clock that went back
/// (`now` before `evaluated`) yields nothing and keeps `evaluated`, so a
/// boundary is never evaluated twice.
pub fn due(
    evaluated: DateTime<Utc>,
    now: DateTime<Utc>,
    cadence: Cadence,
    window: TimeDelta,
) -> Due {
    let step = cadence.step();
    let first = next_boundary(evaluated, cadence);
    let newest = floor(now, cadence);
    if newest < first {
        return Due {
            fire: Vec::new(),
            skipped: None,
            evaluated,
        };
    }
    // The oldest boundary still worth firing: at most `window` old.
    let oldest_fresh = ceil(now - window, cadence).max(first);
    let skipped = (oldest_fresh > first).then(|| {
        let last = oldest_fresh - step;
        Skipped {
            first,
            last,
            count: (last - first).num_milliseconds() / step.num_milliseconds() + 1,
        }
    });
    let mut fire = Vec::new();
    let mut at = oldest_fresh;
    while at <= newest {
        fire.push(at);
        at += step;
    }
    Due {
        fire,
        skipped,
        evaluated: newest,
    }
}

/// The last evaluated boundary after a reload that began at `started` and
/// switched the cadence from `old` to `new`. Boundaries of the old cadence
/// that had passed by then but were not evaluated yet stay due (the pass
/// fires them on the new definitions); boundaries that only the new
/// cadence has and that passed before the reload began are not due: no job
/// needed them when they passed.
pub fn rebase(
    evaluated: DateTime<Utc>,
    started: DateTime<Utc>,
    old: Cadence,
    new: Cadence,
) -> DateTime<Utc> {
    if old == new {
        return evaluated;
    }
    let pending_old = next_boundary(evaluated, old);
    let anchor = if pending_old <= started {
        // Keep `pending_old` itself due under the new cadence.
        pending_old - new.step()
    } else {
        floor(started, new)
    };
    evaluated.max(anchor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32, ms: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap() + TimeDelta::milliseconds(ms.into())
    }

    #[test]
    fn minute_boundaries_ignore_the_start_offset() {
        assert_eq!(
            next_boundary(at(10, 0, 17, 450), Cadence::Minute),
            at(10, 1, 0, 0)
        );
        assert_eq!(
            next_boundary(at(10, 59, 59, 999), Cadence::Minute),
            at(11, 0, 0, 0)
        );
        assert_eq!(
            next_boundary(at(10, 1, 0, 0), Cadence::Minute),
            at(10, 2, 0, 0)
        );
    }

    #[test]
    fn second_boundaries() {
        assert_eq!(
            next_boundary(at(10, 0, 17, 450), Cadence::Second),
            at(10, 0, 18, 0)
        );
        assert_eq!(floor(at(10, 0, 17, 450), Cadence::Second), at(10, 0, 17, 0));
    }

    fn secs(list: &[DateTime<Utc>]) -> Vec<(u32, u32)> {
        use chrono::Timelike;
        list.iter().map(|t| (t.minute(), t.second())).collect()
    }

    const W: TimeDelta = CATCH_UP_WINDOW;

    #[test]
    fn nothing_is_due_before_the_next_boundary() {
        let d = due(at(10, 0, 17, 0), at(10, 0, 17, 999), Cadence::Second, W);
        assert!(d.fire.is_empty());
        assert_eq!(d.skipped, None);
        assert_eq!(d.evaluated, at(10, 0, 17, 0));
    }

    #[test]
    fn an_on_time_pass_fires_exactly_its_boundary() {
        let d = due(at(10, 0, 17, 0), at(10, 0, 18, 0), Cadence::Second, W);
        assert_eq!(secs(&d.fire), vec![(0, 18)]);
        assert_eq!(d.evaluated, at(10, 0, 18, 0));
        let d = due(at(10, 0, 17, 0), at(10, 0, 18, 3), Cadence::Second, W);
        assert_eq!(secs(&d.fire), vec![(0, 18)]);
    }

    #[test]
    fn a_late_pass_fires_every_missed_boundary_in_order() {
        // A reload that began at .998 and ended at .004 of the next-but-one
        // second: both boundaries are fired, oldest first.
        let d = due(at(10, 0, 17, 0), at(10, 0, 19, 4), Cadence::Second, W);
        assert_eq!(secs(&d.fire), vec![(0, 18), (0, 19)]);
        assert_eq!(d.skipped, None);
        assert_eq!(d.evaluated, at(10, 0, 19, 0));
        let d = due(at(10, 0, 0, 0), at(10, 2, 0, 500), Cadence::Minute, W);
        // Two minutes late is outside the window: only 10:02 is fresh.
        assert_eq!(secs(&d.fire), vec![(2, 0)]);
        assert_eq!(
            d.skipped,
            Some(Skipped {
                first: at(10, 1, 0, 0),
                last: at(10, 1, 0, 0),
                count: 1
            })
        );
    }

    #[test]
    fn no_boundary_is_fired_twice_across_passes() {
        let mut evaluated = at(10, 0, 0, 0);
        let mut fired = Vec::new();
        // Passes at irregular, sometimes repeated, instants.
        for (s, ms) in [(0, 300), (1, 0), (1, 0), (1, 999), (4, 2), (4, 500), (5, 0)] {
            let d = due(evaluated, at(10, 0, s, ms), Cadence::Second, W);
            fired.extend(d.fire);
            evaluated = d.evaluated;
        }
        assert_eq!(secs(&fired), vec![(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)]);
    }

    #[test]
    fn a_clock_stepped_back_fires_nothing_until_it_catches_up() {
        let evaluated = at(10, 0, 30, 0);
        let d = due(evaluated, at(9, 0, 0, 0), Cadence::Second, W);
        assert!(d.fire.is_empty());
        assert_eq!(d.evaluated, evaluated);
        let d = due(evaluated, at(10, 0, 30, 500), Cadence::Second, W);
        assert!(d.fire.is_empty());
        let d = due(evaluated, at(10, 0, 31, 0), Cadence::Second, W);
        assert_eq!(secs(&d.fire), vec![(0, 31)]);
    }

    #[test]
    fn a_big_forward_jump_fires_only_the_window_and_names_the_rest() {
        let d = due(at(10, 0, 0, 0), at(11, 0, 0, 250), Cadence::Second, W);
        // The window holds 10:59:00.250 .. 11:00:00.250: 10:59:01 to 11:00:00.
        assert_eq!(d.fire.len(), 60);
        assert_eq!(d.fire.first(), Some(&at(10, 59, 1, 0)));
        assert_eq!(d.fire.last(), Some(&at(11, 0, 0, 0)));
        assert_eq!(
            d.skipped,
            Some(Skipped {
                first: at(10, 0, 1, 0),
                last: at(10, 59, 0, 0),
                count: 3540
            })
        );
        assert_eq!(d.evaluated, at(11, 0, 0, 0));
        let d = due(at(10, 0, 0, 0), at(23, 0, 0, 0), Cadence::Minute, W);
        assert_eq!(d.fire, vec![at(22, 59, 0, 0), at(23, 0, 0, 0)]);
        assert_eq!(d.skipped.map(|s| s.count), Some(12 * 60 + 58));
    }

    #[test]
    fn the_window_edge_is_inclusive() {
        // Exactly `window` old still fires.
        let d = due(at(10, 0, 0, 0), at(10, 1, 1, 0), Cadence::Second, W);
        assert_eq!(d.fire.first(), Some(&at(10, 0, 1, 0)));
        assert_eq!(d.fire.len(), 61);
        assert_eq!(d.skipped, None);
        let d = due(at(10, 0, 0, 0), at(10, 1, 1, 1), Cadence::Second, W);
        assert_eq!(d.fire.first(), Some(&at(10, 0, 2, 0)));
        assert_eq!(d.skipped.map(|s| s.count), Some(1));
    }

    #[test]
    fn rebase_keeps_the_cadence_when_it_did_not_change() {
        for c in [Cadence::Second, Cadence::Minute] {
            assert_eq!(
                rebase(at(10, 0, 0, 0), at(10, 3, 7, 1), c, c),
                at(10, 0, 0, 0)
            );
        }
    }

    #[test]
    fn rebase_minute_to_second_skips_seconds_no_job_needed() {
        // Reload at 10:00:30.4 adds a per-second job: the first second it
        // can fire at is 10:00:31, not the 30 seconds before the reload.
        let r = rebase(
            at(10, 0, 0, 0),
            at(10, 0, 30, 400),
            Cadence::Minute,
            Cadence::Second,
        );
        assert_eq!(r, at(10, 0, 30, 0));
        let d = due(r, at(10, 0, 31, 2), Cadence::Second, W);
        assert_eq!(secs(&d.fire), vec![(0, 31)]);
    }

    #[test]
    fn rebase_minute_to_second_keeps_a_passed_minute_due() {
        // The wake for 10:01:00 reloads first: 10:01:00 stays due.
        let r = rebase(
            at(10, 0, 0, 0),
            at(10, 1, 0, 3),
            Cadence::Minute,
            Cadence::Second,
        );
        let d = due(r, at(10, 1, 0, 5), Cadence::Second, W);
        assert_eq!(secs(&d.fire), vec![(1, 0)]);
    }

    #[test]
    fn rebase_second_to_minute_waits_for_the_next_minute() {
        let r = rebase(
            at(10, 0, 17, 0),
            at(10, 0, 18, 100),
            Cadence::Second,
            Cadence::Minute,
        );
        assert_eq!(r, at(10, 0, 17, 0));
        assert!(due(r, at(10, 0, 59, 0), Cadence::Minute, W).fire.is_empty());
        let d = due(r, at(10, 1, 0, 1), Cadence::Minute, W);
        assert_eq!(secs(&d.fire), vec![(1, 0)]);
        // A minute boundary passed during the reload stays due.
        let r = rebase(
            at(10, 0, 59, 0),
            at(10, 0, 59, 990),
            Cadence::Second,
            Cadence::Minute,
        );
        let d = due(r, at(10, 1, 0, 4), Cadence::Minute, W);
        assert_eq!(secs(&d.fire), vec![(1, 0)]);
    }

    /// Many irregular pass sequences (late passes, repeated passes, clock
    /// steps back and forward, both cadences): every boundary up to the
    /// newest pass is either fired or reported skipped, exactly once, and
    /// fires come out in increasing order.
    #[test]
    fn every_boundary_is_fired_or_skipped_exactly_once() {
        let mut seed: u64 = 0x5eed;
        let mut next = |bound: i64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % bound as u64) as i64
        };
        for cadence in [Cadence::Second, Cadence::Minute] {
            let step = cadence.step().num_milliseconds();
            for _ in 0..300 {
                let start = at(10, 0, 0, 0);
                let mut evaluated = start;
                let mut now = start;
                let mut seen: Vec<DateTime<Utc>> = Vec::new();
                let mut newest = start;
                for _ in 0..40 {
                    // Mostly small steps forward; sometimes a stall, a big
                    // jump, or a step back.
                    let delta = match next(10) {
                        0 => -next(5 * step),
                        1 => next(200 * step),
                        2 => 0,
                        _ => next(3 * step),
                    };
                    now += TimeDelta::milliseconds(delta);
                    let d = due(evaluated, now, cadence, W);
                    for pair in d.fire.windows(2) {
                        assert_eq!(pair[1] - pair[0], cadence.step());
                    }
                    if let Some(skipped) = d.skipped {
                        let mut b = skipped.first;
                        for _ in 0..skipped.count {
                            seen.push(b);
                            b += cadence.step();
                        }
                        assert_eq!(b - cadence.step(), skipped.last);
                        assert_eq!(Some(&b), d.fire.first(), "skips end where fires begin");
                    }
                    for b in &d.fire {
                        assert!(now - *b <= W, "a stale boundary fired");
                        assert!(*b <= now, "a future boundary fired");
                    }
                    seen.extend(d.fire.iter().copied());
                    assert!(d.evaluated >= evaluated, "evaluation never goes back");
                    evaluated = d.evaluated;
                    newest = newest.max(floor(now, cadence));
                }
                let expected: Vec<DateTime<Utc>> = (1..)
                    .map(|k| start + cadence.step() * k)
                    .take_while(|b| *b <= newest)
                    .collect();
                assert_eq!(seen, expected);
            }
        }
    }
}
