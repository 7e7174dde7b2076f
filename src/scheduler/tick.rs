//! When the scheduler wakes: at each minute boundary, or at each second
//! while any enabled job has a seconds field. Pure: "now" is an argument.

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
    fn step(self) -> TimeDelta {
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

/// The first boundary strictly after `now`.
pub fn next_boundary(now: DateTime<Utc>, cadence: Cadence) -> DateTime<Utc> {
    floor(now, cadence) + cadence.step()
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
}
