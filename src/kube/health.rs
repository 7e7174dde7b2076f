//! The watches' health as a pure state machine, fed with each watch's
//! failures and answers (and the time), answering with what to log and
//! what to publish. Kept apart from the watch task so every sequence can
//! be tested without an API server or a clock.
//!
//! Three kinds of failure:
//! - **expired** (410 Gone): the history behind a watch was compacted; a
//!   routine relist, not an outage;
//! - **unreachable** (connection refused or cut, timeouts, 5xx): one
//!   warning when the first watch fails, one line when every watch that
//!   failed so has answered again (a refusal is an answer too);
//! - **refused** (401, 403): the API server answers and says no. That is
//!   no outage and does not go away by waiting: one warning per watch
//!   naming what it may not do, again only when the refusal changes or
//!   after [`REFUSED_REMINDER`], and one line when the watch is allowed.
//!
//! Each watch keeps its own last error: only its own next answer clears
//! it, so another watch's answers (a status write seen on the sets'
//! watch, say) never hide a failing ConfigMap watch.

use crate::status::kube::{WatchState, WatchStatus, Watched};
use std::time::{Duration, Instant};

/// How often a refusal that does not change is logged again.
pub const REFUSED_REMINDER: Duration = Duration::from_secs(600);

/// How a failed request of a watch reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone: relist.
    Expired {
        /// The error, for a DEBUG line.
        message: String,
    },
    /// No usable answer from the API server.
    Unreachable {
        /// The error, as `GET /kube` and the warning show it.
        message: String,
    },
    /// 401 or 403.
    Refused(Refusal),
}

/// A 401 or 403 answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 401 or 403.
    pub code: u16,
    /// The Status reason (`Forbidden`, `Unauthorized`).
    pub reason: String,
    /// `list` or `watch`.
    pub verb: &'static str,
    /// The API server's message.
    pub message: String,
}

/// What the watch task logs after a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A 410: relisting (DEBUG).
    Relisting {
        /// The error.
        message: String,
    },
    /// The API stopped answering (WARNING).
    Unreachable {
        /// The first error.
        message: String,
    },
    /// Every watch that could not reach the API is answered again (INFO).
    ReachableAgain {
        /// How long the outage lasted.
        after: Duration,
    },
    /// A watch is refused (WARNING).
    Refused {
        /// Which watch.
        watch: Watched,
        /// The refusal.
        refusal: Refusal,
    },
    /// A refused watch is answered again (INFO).
    Allowed {
        /// Which watch.
        watch: Watched,
    },
}

/// One watch's part of the machine.
#[derive(Debug, Clone)]
struct Slot {
    watch: Watched,
    state: WatchState,
    error: Option<String>,
    refusal: Option<Refusal>,
    /// The refusal last logged and when, to log it again only on a change
    /// or after the reminder interval (kept across other states, so a
    /// refusal interrupted by an outage is not logged again at once).
    warned: Option<(Refusal, Instant)>,
    /// A sequence number of its latest failure (to pick the latest error).
    failed_seq: u64,
}

/// The machine: every watch's state and the outage clock.
#[derive(Debug, Clone)]
pub struct HealthMachine {
    slots: Vec<Slot>,
    down_since: Option<Instant>,
    seq: u64,
}

impl HealthMachine {
    /// A machine for `watches`, each pending.
    pub fn new(watches: &[Watched]) -> Self {
        HealthMachine {
            slots: watches
                .iter()
                .map(|&watch| Slot {
                    watch,
                    state: WatchState::Pending,
                    error: None,
                    refusal: None,
                    warned: None,
                    failed_seq: 0,
                })
                .collect(),
            down_since: None,
            seq: 0,
        }
    }

    fn slot(&mut self, watch: Watched) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.watch == watch)
    }

    fn any_unreachable(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.state == WatchState::Unreachable)
    }

    /// The outage ends when no watch is left that the API did not answer.
    fn outage_over(&mut self, now: Instant, notices: &mut Vec<Notice>) {
        if self.any_unreachable() {
            return;
        }
        if let Some(since) = self.down_since.take() {
            notices.push(Notice::ReachableAgain {
                after: now.saturating_duration_since(since),
            });
        }
    }

    /// `watch` failed with `failure` at `now`.
    pub fn failed(&mut self, watch: Watched, failure: Failure, now: Instant) -> Vec<Notice> {
        let mut notices = Vec::new();
        self.seq += 1;
        let seq = self.seq;
        let first_outage = self.down_since.is_none();
        let Some(slot) = self.slot(watch) else {
            return notices;
        };
        match failure {
            Failure::Expired { message } => notices.push(Notice::Relisting { message }),
            Failure::Unreachable { message } => {
                slot.state = WatchState::Unreachable;
                slot.error = Some(message.clone());
                slot.refusal = None;
                slot.failed_seq = seq;
                if first_outage {
                    self.down_since = Some(now);
                    notices.push(Notice::Unreachable { message });
                }
            }
            Failure::Refused(refusal) => {
                slot.state = WatchState::Refused;
                slot.error = Some(refused_error(watch, &refusal));
                slot.failed_seq = seq;
                let repeat = match &slot.warned {
                    Some((warned, at)) => {
                        *warned != refusal || now.saturating_duration_since(*at) >= REFUSED_REMINDER
                    }
                    None => true,
                };
                if repeat {
                    slot.warned = Some((refusal.clone(), now));
                    notices.push(Notice::Refused {
                        watch,
                        refusal: refusal.clone(),
                    });
                }
                slot.refusal = Some(refusal);
                // A refusal is an answer: if this watch was the last one
                // out of reach, the API is reachable again.
                self.outage_over(now, &mut notices);
            }
        }
        notices
    }

    /// `watch` got an answer (an event, a list) at `now`.
    pub fn answered(&mut self, watch: Watched, now: Instant) -> Vec<Notice> {
        let mut notices = Vec::new();
        let Some(slot) = self.slot(watch) else {
            return notices;
        };
        let before = slot.state;
        slot.state = WatchState::Ok;
        slot.error = None;
        slot.refusal = None;
        match before {
            WatchState::Ok | WatchState::Pending => {}
            WatchState::Refused => {
                slot.warned = None;
                notices.push(Notice::Allowed { watch });
            }
            WatchState::Unreachable => self.outage_over(now, &mut notices),
        }
        notices
    }

    /// Every watch answers.
    pub fn connected(&self) -> bool {
        self.slots.iter().all(|s| s.state == WatchState::Ok)
    }

    /// The error of the watch that failed last among those still failing.
    pub fn last_error(&self) -> Option<String> {
        self.slots
            .iter()
            .filter(|s| s.error.is_some())
            .max_by_key(|s| s.failed_seq)
            .and_then(|s| s.error.clone())
    }

    /// Each watch's state, as published.
    pub fn statuses(&self, describe: impl Fn(Watched, &Refusal) -> String) -> Vec<WatchStatus> {
        self.slots
            .iter()
            .map(|s| WatchStatus {
                watch: s.watch,
                state: s.state,
                last_error: s.error.clone(),
                refusal: s.refusal.as_ref().map(|r| describe(s.watch, r)),
            })
            .collect()
    }
}

/// Says when a refusal that is not a watch's (an Event the Role does not
/// allow, say) is due a WARNING: the first time for its key, then again
/// only after [`REFUSED_REMINDER`], however often it recurs meanwhile.
#[derive(Debug, Default)]
pub struct Reminders {
    last: std::collections::HashMap<String, Instant>,
}

impl Reminders {
    /// Whether the refusal `key` (what was refused, and where) is to be
    /// logged at `now`; noted as logged when it is.
    pub fn due(&mut self, key: &str, now: Instant) -> bool {
        let due = self
            .last
            .get(key)
            .is_none_or(|at| now.saturating_duration_since(*at) >= REFUSED_REMINDER);
        if due {
            self.last.insert(key.to_owned(), now);
        }
        due
    }
}

/// A refused watch's error as `GET /kube` shows it.
fn refused_error(watch: Watched, refusal: &Refusal) -> String {
    let what = match watch {
        Watched::Sets => "CronJobSets",
        Watched::ConfigMap => "ConfigMap",
    };
    format!(
        "{what}: {} refused ({} {}): {}",
        refusal.verb, refusal.code, refusal.reason, refusal.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forbidden() -> Failure {
        Failure::Refused(refusal("list"))
    }

    fn refusal(verb: &'static str) -> Refusal {
        Refusal {
            code: 403,
            reason: "Forbidden".into(),
            verb,
            message: format!(
                "configmaps is forbidden: User \"u\" cannot {verb} resource \"configmaps\" in API \
                 group \"\" in the namespace \"team-a\""
            ),
        }
    }

    fn down() -> Failure {
        Failure::Unreachable {
            message: "CronJobSets: connection refused".into(),
        }
    }

    fn at(start: Instant, seconds: f64) -> Instant {
        start + Duration::from_secs_f64(seconds)
    }

    fn count(notices: &[Notice], pick: fn(&Notice) -> bool) -> usize {
        notices.iter().filter(|n| pick(n)).count()
    }

    #[test]
    fn a_refused_configmap_warns_once_and_the_sets_answers_never_clear_it() {
        let t0 = Instant::now();
        let mut m = HealthMachine::new(&[Watched::Sets, Watched::ConfigMap]);
        let mut notices = Vec::new();
        // Eight seconds: the sets' watch answers every 100 ms (status
        // writes come back as events), the ConfigMap's list is refused at
        // each retry of its backoff.
        let retries = [0.0, 0.8, 2.4, 5.6];
        for tenth in 0..80 {
            let now = at(t0, f64::from(tenth) / 10.0);
            notices.extend(m.answered(Watched::Sets, now));
            if retries.iter().any(|r| (r * 10.0) as i32 == tenth) {
                notices.extend(m.failed(Watched::ConfigMap, forbidden(), now));
            }
            if tenth > 0 {
                let error = m.last_error().expect("the ConfigMap's error stays");
                assert!(error.contains("403 Forbidden"), "{error}");
                assert!(!m.connected());
            }
        }
        assert_eq!(
            count(&notices, |n| matches!(n, Notice::Refused { .. })),
            1,
            "{notices:?}"
        );
        assert_eq!(notices.len(), 1, "nothing else: {notices:?}");
        let statuses = m.statuses(|w, r| format!("{w:?} {} {}", r.verb, r.code));
        let configmap = &statuses[1];
        assert_eq!(configmap.state, WatchState::Refused);
        assert_eq!(configmap.refusal.as_deref(), Some("ConfigMap list 403"));
        assert_eq!(statuses[0].state, WatchState::Ok);
        assert_eq!(statuses[0].last_error, None);
    }

    #[test]
    fn a_refusal_is_repeated_on_a_change_or_after_the_reminder_only() {
        let t0 = Instant::now();
        let mut m = HealthMachine::new(&[Watched::ConfigMap]);
        assert_eq!(m.failed(Watched::ConfigMap, forbidden(), t0).len(), 1);
        assert!(m
            .failed(Watched::ConfigMap, forbidden(), at(t0, 30.0))
            .is_empty());
        // Another verb refused: a change, logged.
        let watch = m.failed(
            Watched::ConfigMap,
            Failure::Refused(refusal("watch")),
            at(t0, 60.0),
        );
        assert!(matches!(&watch[..], [Notice::Refused { refusal, .. }] if refusal.verb == "watch"));
        assert!(m
            .failed(
                Watched::ConfigMap,
                Failure::Refused(refusal("watch")),
                at(t0, 600.0)
            )
            .is_empty());
        // The reminder, ten minutes after the last warning.
        assert_eq!(
            m.failed(
                Watched::ConfigMap,
                Failure::Refused(refusal("watch")),
                at(t0, 660.0)
            )
            .len(),
            1
        );
    }

    #[test]
    fn allowed_again_is_said_once_and_a_new_refusal_warns_again() {
        let t0 = Instant::now();
        let mut m = HealthMachine::new(&[Watched::Sets, Watched::ConfigMap]);
        m.answered(Watched::Sets, t0);
        m.failed(Watched::ConfigMap, forbidden(), t0);
        assert_eq!(
            m.answered(Watched::ConfigMap, at(t0, 5.0)),
            vec![Notice::Allowed {
                watch: Watched::ConfigMap
            }]
        );
        assert!(m.answered(Watched::ConfigMap, at(t0, 6.0)).is_empty());
        assert!(m.connected());
        assert_eq!(m.last_error(), None);
        // The right removed again: warned again at once.
        assert_eq!(
            m.failed(Watched::ConfigMap, forbidden(), at(t0, 7.0)).len(),
            1
        );
    }

    #[test]
    fn an_outage_warns_once_and_ends_when_every_failed_watch_answers() {
        let t0 = Instant::now();
        let mut m = HealthMachine::new(&[Watched::Sets, Watched::ConfigMap]);
        m.answered(Watched::Sets, t0);
        m.answered(Watched::ConfigMap, t0);
        assert!(m.connected());
        let first = m.failed(Watched::Sets, down(), at(t0, 1.0));
        assert_eq!(
            first,
            vec![Notice::Unreachable {
                message: "CronJobSets: connection refused".into()
            }]
        );
        assert!(m.failed(Watched::ConfigMap, down(), at(t0, 1.1)).is_empty());
        assert!(m.failed(Watched::Sets, down(), at(t0, 3.0)).is_empty());
        // One watch back: not over, the other's error stays.
        assert!(m.answered(Watched::ConfigMap, at(t0, 10.0)).is_empty());
        assert!(!m.connected());
        assert!(m.last_error().is_some());
        assert_eq!(
            m.answered(Watched::Sets, at(t0, 11.0)),
            vec![Notice::ReachableAgain {
                after: Duration::from_secs(10)
            }]
        );
        assert!(m.connected());
        assert_eq!(m.last_error(), None);
        // A 410 is no outage.
        let relist = m.failed(
            Watched::Sets,
            Failure::Expired {
                message: "410".into(),
            },
            at(t0, 12.0),
        );
        assert!(matches!(&relist[..], [Notice::Relisting { .. }]));
        assert!(m.connected());
    }

    #[test]
    fn a_refusal_after_an_outage_ends_it_without_a_second_refusal_warning() {
        let t0 = Instant::now();
        let mut m = HealthMachine::new(&[Watched::Sets, Watched::ConfigMap]);
        m.answered(Watched::Sets, t0);
        assert_eq!(m.failed(Watched::ConfigMap, forbidden(), t0).len(), 1);
        // The API server goes away...
        assert_eq!(m.failed(Watched::Sets, down(), at(t0, 1.0)).len(), 1);
        assert!(m.failed(Watched::ConfigMap, down(), at(t0, 1.5)).is_empty());
        // ...comes back: the sets answer, the ConfigMap is refused again.
        assert!(m.answered(Watched::Sets, at(t0, 9.0)).is_empty());
        assert_eq!(
            m.failed(Watched::ConfigMap, forbidden(), at(t0, 9.5)),
            vec![Notice::ReachableAgain {
                after: Duration::from_millis(8500)
            }],
            "reachable (the refusal is an answer), and the refusal is the one logged before"
        );
        assert!(!m.connected());
    }

    #[test]
    fn a_reminder_is_due_once_per_key_and_interval() {
        let t0 = Instant::now();
        let mut reminders = Reminders::default();
        assert!(reminders.due("create events in ops", t0));
        assert!(!reminders.due("create events in ops", at(t0, 1.0)));
        assert!(
            reminders.due("patch events in ops", at(t0, 1.0)),
            "another key"
        );
        assert!(!reminders.due("create events in ops", at(t0, 599.0)));
        assert!(reminders.due("create events in ops", at(t0, 600.0)));
        assert!(!reminders.due("create events in ops", at(t0, 601.0)));
    }

    #[test]
    fn the_latest_error_is_the_latest_failing_watchs() {
        let t0 = Instant::now();
        let mut m = HealthMachine::new(&[Watched::Sets, Watched::ConfigMap]);
        m.failed(Watched::ConfigMap, forbidden(), t0);
        m.failed(Watched::Sets, down(), at(t0, 1.0));
        assert_eq!(
            m.last_error().as_deref(),
            Some("CronJobSets: connection refused")
        );
        m.answered(Watched::Sets, at(t0, 2.0));
        let error = m.last_error().expect("the ConfigMap's");
        assert!(
            error.starts_with("ConfigMap: list refused (403 Forbidden): configmaps is forbidden"),
            "{error}"
        );
        // Pending watches are not connected.
        assert!(!HealthMachine::new(&[Watched::Sets]).connected());
        assert!(HealthMachine::new(&[]).connected());
    }
}
