//! Each job's next fire, remembered between API requests.
//!
//! `GET /status`, `GET /jobs` and `/metrics` show every job's next fire.
//! Searching the schedule for it costs microseconds per job, which with
//! 10,000 jobs is milliseconds per request on the scheduler's thread. The
//! answer only changes when the fire passes: the next fire after `t` is the
//! same for every `t` from the moment it was computed up to (not including)
//! the fire itself, because no occurrence lies between. So each job keeps
//! `(computed at, next fire)` and reuses it while `computed at <= now <
//! next fire`. A clock stepped backwards, a fire that passed, or a schedule
//! with no next fire all search again; a new job table clears everything.

use crate::config::JobConfig;
use chrono::{DateTime, Utc};
use std::cell::RefCell;

/// The remembered next fires, by position in the scheduler's job table.
#[derive(Debug, Default)]
pub(super) struct NextFires {
    slots: RefCell<Vec<Option<Remembered>>>,
}

#[derive(Debug, Clone, Copy)]
struct Remembered {
    computed_at: DateTime<Utc>,
    next: DateTime<Utc>,
}

impl NextFires {
    /// Forgets everything; the table now has `jobs` jobs.
    pub(super) fn reset(&mut self, jobs: usize) {
        let slots = self.slots.get_mut();
        slots.clear();
        slots.resize(jobs, None);
    }

    /// The next fire of `job` (at `index` in the table) strictly after
    /// `now`, as [`crate::cronexpr::CronExpr::next_after`] answers it.
    /// `None` for a job without a cron schedule (`@reboot`) or with no
    /// future occurrence.
    pub(super) fn get(
        &self,
        index: usize,
        job: &JobConfig,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let mut slots = self.slots.borrow_mut();
        Self::lookup(&mut slots, index, job, now)
    }

    /// The next fire of every job in `table` (the scheduler's table, in
    /// order), as [`NextFires::get`] answers each: one pass that reads
    /// the remembered answers in order and opens a job's config only to
    /// search again.
    pub(super) fn all(
        &self,
        table: &[std::sync::Arc<JobConfig>],
        now: DateTime<Utc>,
    ) -> Vec<Option<DateTime<Utc>>> {
        let mut slots = self.slots.borrow_mut();
        table
            .iter()
            .enumerate()
            .map(|(index, job)| Self::lookup(&mut slots, index, job, now))
            .collect()
    }

    fn lookup(
        slots: &mut [Option<Remembered>],
        index: usize,
        job: &JobConfig,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        // A remembered answer exists only for a cron schedule (it is what
        // a search of one returned), so it is checked before the config
        // is read: with 10,000 jobs the configs are 10,000 cache misses.
        if let Some(Some(r)) = slots.get(index) {
            if r.computed_at <= now && now < r.next {
                return Some(r.next);
            }
        }
        let cron = job.schedule.parsed.cron()?;
        let next = cron.next_after(now, &job.schedule.time_base);
        if let Some(slot) = slots.get_mut(index) {
            *slot = next.map(|next| Remembered {
                computed_at: now,
                next,
            });
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load_sources, Source, SourceKind};
    use chrono::TimeZone;

    fn jobs(schedules: &[(&str, Option<&str>)]) -> Vec<JobConfig> {
        let mut yaml = String::from("jobs:\n");
        for (i, (schedule, tz)) in schedules.iter().enumerate() {
            yaml.push_str(&format!(
                "  - name: j{i}\n    command: 'true'\n    schedule: '{schedule}'\n"
            ));
            if let Some(tz) = tz {
                yaml.push_str(&format!("    timezone: {tz}\n"));
            }
        }
        load_sources(&[Source {
            name: "t.yaml".into(),
            text: yaml,
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("loads")
        .jobs
    }

    /// Walks the clock forwards in uneven steps (and once backwards)
    /// through DST changes in two zones: the remembered answer always
    /// equals a fresh search.
    #[test]
    fn remembered_fires_equal_a_fresh_search_at_every_instant() {
        let table = jobs(&[
            ("*/7 * * * *", None),
            ("30 1 * * *", Some("America/New_York")),
            ("0 2 * * 0", Some("Europe/Berlin")),
            ("*/13 * * * * * *", None),
            ("59 23 31 12 *", None),
            ("H H * * *", Some("Europe/Berlin")),
            ("@reboot", None),
            ("0 0 1 1 * 2001", None),
        ]);
        let mut cache = NextFires::default();
        cache.reset(table.len());
        // Through the 2026 autumn DST changes in Europe and America.
        let mut now = Utc.with_ymd_and_hms(2026, 10, 24, 23, 0, 0).unwrap();
        let end = Utc.with_ymd_and_hms(2026, 11, 2, 12, 0, 0).unwrap();
        let shared: Vec<std::sync::Arc<JobConfig>> =
            table.iter().cloned().map(std::sync::Arc::new).collect();
        let mut step = 1i64;
        let mut checks = 0;
        while now < end {
            let fresh: Vec<_> = table
                .iter()
                .map(|job| {
                    job.schedule
                        .parsed
                        .cron()
                        .and_then(|c| c.next_after(now, &job.schedule.time_base))
                })
                .collect();
            // One job at a time and the whole table in one pass, in turn.
            if step % 2 == 0 {
                assert_eq!(cache.all(&shared, now), fresh, "at {now}");
                checks += table.len();
            } else {
                for (i, job) in table.iter().enumerate() {
                    assert_eq!(cache.get(i, job, now), fresh[i], "{} at {now}", job.name);
                    checks += 1;
                }
            }
            // Steps of 1 s to ~17 min, landing on fires and between them.
            step = (step * 7 + 13) % 1031;
            now += chrono::Duration::seconds(step);
            if checks == 4000 {
                now -= chrono::Duration::hours(3);
            }
        }
        assert!(checks > 10_000, "{checks}");
    }

    #[test]
    fn a_new_table_forgets_the_old_answers() {
        let first = jobs(&[("0 * * * *", None)]);
        let second = jobs(&[("30 * * * *", None)]);
        let mut cache = NextFires::default();
        cache.reset(1);
        let now = Utc.with_ymd_and_hms(2026, 3, 1, 10, 5, 0).unwrap();
        assert_eq!(
            cache.get(0, &first[0], now),
            Some(Utc.with_ymd_and_hms(2026, 3, 1, 11, 0, 0).unwrap())
        );
        cache.reset(1);
        assert_eq!(
            cache.get(0, &second[0], now),
            Some(Utc.with_ymd_and_hms(2026, 3, 1, 10, 30, 0).unwrap())
        );
        // An index past the table answers without remembering.
        assert_eq!(
            cache.get(5, &second[0], now),
            Some(Utc.with_ymd_and_hms(2026, 3, 1, 10, 30, 0).unwrap())
        );
    }
}
