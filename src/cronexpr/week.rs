//! The fleet's fires over a short window, grouped by schedule: what a
//! week calendar draws (`GET /schedule/week`). Jobs that share a schedule
//! and a clock share one walk and one list of fires, so 10,000 jobs on a
//! few hundred schedules cost a few hundred walks and the answer names
//! each fire once. A schedule that fires more than `max` times in the
//! window is reported as frequent, without its fires: a calendar shows
//! such a job as background, not as hundreds of chips.
//!
//! Pure: the window is an argument, and the caller builds the fleet.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::field::Fields;
use super::fleet::FleetEntry;
use super::tz::TimeBase;

/// The most fires a schedule may list before it counts as frequent.
pub const MAX_WEEK_FIRES: usize = 500;

/// The jobs sharing one schedule and clock, and their fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FireGroup {
    /// The jobs, in the order the fleet lists them.
    pub jobs: Vec<String>,
    /// Each fire in the window, as Unix seconds, in order; empty when
    /// `frequent`.
    pub fires: Vec<i64>,
    /// Whether the schedule fires more than `max` times in the window.
    pub frequent: bool,
}

/// Every entry's fires in `[start, end)`, grouped by distinct (schedule,
/// clock) in the order each group first appears; a group with more than
/// `max` fires is `frequent` and lists none.
pub fn fires_by_schedule(
    entries: &[FleetEntry<'_>],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    max: usize,
) -> Vec<FireGroup> {
    let mut index: HashMap<(Fields, TimeBase), usize> = HashMap::new();
    let mut groups: Vec<FireGroup> = Vec::new();
    for entry in entries {
        let key = (*entry.expr.fields(), *entry.tz);
        if let Some(&at) = index.get(&key) {
            groups[at].jobs.push(entry.name.to_owned());
            continue;
        }
        // From just before the start, so a fire on the start itself
        // (midnight, for a calendar that begins at midnight) is in.
        let mut cursor = start - Duration::seconds(1);
        let mut fires = Vec::new();
        let mut frequent = false;
        while let Some(fire) = entry.expr.next_after(cursor, entry.tz) {
            if fire >= end {
                break;
            }
            if fire >= start {
                if fires.len() == max {
                    frequent = true;
                    fires.clear();
                    break;
                }
                fires.push(fire.timestamp());
            }
            cursor = fire;
        }
        index.insert(key, groups.len());
        groups.push(FireGroup {
            jobs: vec![entry.name.to_owned()],
            fires,
            frequent,
        });
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn expr(text: &str, name: &str) -> super::super::CronExpr {
        super::super::CronExpr::parse(text, Some(name)).expect("a valid schedule")
    }

    #[test]
    fn shared_schedules_share_one_group_and_frequent_ones_list_nothing() {
        let start = Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap();
        let end = start + Duration::days(7);
        let daily = expr("0 0 * * *", "a");
        let also_daily = expr("0 0 * * *", "b");
        let weekly = expr("30 9 * * 1", "c");
        let pollers = expr("*/5 * * * *", "d");
        let utc = TimeBase::Utc;
        let berlin = TimeBase::Zone(chrono_tz::Europe::Berlin);
        let entries = [
            FleetEntry {
                name: "a",
                expr: &daily,
                tz: &utc,
            },
            FleetEntry {
                name: "c",
                expr: &weekly,
                tz: &berlin,
            },
            FleetEntry {
                name: "b",
                expr: &also_daily,
                tz: &utc,
            },
            FleetEntry {
                name: "d",
                expr: &pollers,
                tz: &utc,
            },
            FleetEntry {
                name: "e",
                expr: &daily,
                tz: &berlin,
            },
        ];
        let groups = fires_by_schedule(&entries, start, end, 56);
        assert_eq!(groups.len(), 4);
        assert_eq!(groups[0].jobs, ["a", "b"]);
        // Midnight on the start is in, the end is out.
        let days: Vec<i64> = (0..7)
            .map(|d| (start + Duration::days(d)).timestamp())
            .collect();
        assert_eq!(groups[0].fires, days);
        assert!(!groups[0].frequent);
        // Monday 09:30 in Berlin is 08:30 UTC in March (before DST).
        let monday = Utc
            .with_ymd_and_hms(2026, 3, 2, 8, 30, 0)
            .unwrap()
            .timestamp();
        assert_eq!(
            (groups[1].jobs.clone(), groups[1].fires.clone()),
            (vec!["c".to_owned()], vec![monday])
        );
        assert_eq!(groups[2].jobs, ["d"]);
        assert!(groups[2].frequent && groups[2].fires.is_empty());
        // The same schedule in another clock is another group.
        assert_eq!(groups[3].jobs, ["e"]);
        assert_eq!(groups[3].fires[0], start.timestamp() + 23 * 3600);
        // Exactly `max` fires is not frequent; one more is.
        assert!(!fires_by_schedule(&entries[..1], start, end, 7)[0].frequent);
        assert!(fires_by_schedule(&entries[..1], start, end, 6)[0].frequent);
    }

    #[test]
    fn a_window_without_fires_gives_empty_groups() {
        let start = Utc.with_ymd_and_hms(2026, 3, 2, 0, 0, 0).unwrap();
        let yearly = expr("0 0 1 1 *", "y");
        let utc = TimeBase::Utc;
        let entries = [FleetEntry {
            name: "y",
            expr: &yearly,
            tz: &utc,
        }];
        let groups = fires_by_schedule(&entries, start, start + Duration::days(7), 56);
        assert_eq!(
            groups,
            [FireGroup {
                jobs: vec!["y".into()],
                fires: vec![],
                frequent: false
            }]
        );
        assert!(fires_by_schedule(&[], start, start, 56).is_empty());
    }
}
