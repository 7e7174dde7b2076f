//! The depends-on-past gate (`onlyIfLastSucceeded`): a scheduled fire is
//! skipped while the job's newest real outcome is a failure, or while an
//! earlier instance has not been recorded yet.
//!
//! Only scheduled and `@reboot` fires pass through it
//! ([`Scheduler::launch_scheduled`]): retries exist to run after a failure,
//! catch-up backfills replay owed fires, and a manual start is the
//! operator overriding the gate, so those three launch without asking.
//! Without a durable store the gate decides from the in-memory history
//! alone, so a restart forgets the failure (as in the original).

use super::ports::RealOutcome;
use super::Scheduler;
use crate::config::model::ConcurrencyPolicy;
use crate::config::JobConfig;

/// The gate's rule as a value: true when a scheduled fire may launch.
///
/// `unrecorded_instance` is an instance of the job that has not been
/// recorded yet (still running, or ended with its run not yet taken in):
/// it has not succeeded, so it blocks too, except under `Replace`, whose
/// contract is that a new fire supersedes it (a hung run must not freeze
/// the job). `last` is the newest success or failure; cancelled and
/// skipped runs never reach it, so only a success reopens the gate, and a
/// job with no such run has nothing to depend on.
pub(crate) fn allows(
    only_if_last_succeeded: bool,
    policy: ConcurrencyPolicy,
    unrecorded_instance: bool,
    last: Option<RealOutcome>,
) -> bool {
    if !only_if_last_succeeded {
        return true;
    }
    if unrecorded_instance && policy != ConcurrencyPolicy::Replace {
        return false;
    }
    last.is_none_or(|outcome| outcome.succeeded)
}

impl Scheduler {
    /// Asks the gate about a scheduled fire of `job`; logs the skip in the
    /// original's words when it says no.
    pub(super) fn depends_on_past_allows(&self, job: &JobConfig) -> bool {
        // A run leaves `running` when its record is taken in, so any
        // entry is an instance whose outcome is not on record yet.
        if job.only_if_last_succeeded && self.durable_fails_closed() {
            tracing::warn!(
                target: "cronstable::scheduler",
                "Job {} skipped: onlyIfLastSucceeded cannot read the state store and \
                 onStoreUnavailable is fail-closed",
                job.name
            );
            return false;
        }
        let unrecorded = self.running.get(&job.name).is_some_and(|r| !r.is_empty());
        let last = self.store.last_real_outcome(&job.name);
        if allows(
            job.only_if_last_succeeded,
            job.concurrency_policy,
            unrecorded,
            last,
        ) {
            return true;
        }
        tracing::info!(
            target: "cronstable::scheduler",
            "Job {} skipped: onlyIfLastSucceeded and its last run is not recorded as a success",
            job.name
        );
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::ports::{Admission, LeaderGate, NoSlots};
    use super::super::tests::{job_set, runs, spawn_scheduler};
    use super::*;
    use crate::job::Trigger;
    use chrono::{TimeZone, Utc};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    fn outcome(minute: u32, succeeded: bool) -> Option<RealOutcome> {
        Some(RealOutcome {
            finished_at: Utc.with_ymd_and_hms(2026, 12, 1, 12, minute, 0).unwrap(),
            succeeded,
        })
    }

    const FORBID: ConcurrencyPolicy = ConcurrencyPolicy::Forbid;
    const ALLOW: ConcurrencyPolicy = ConcurrencyPolicy::Allow;
    const REPLACE: ConcurrencyPolicy = ConcurrencyPolicy::Replace;

    #[test]
    fn off_never_blocks() {
        assert!(allows(false, FORBID, true, outcome(1, false)));
        assert!(allows(false, ALLOW, false, outcome(1, false)));
    }

    #[test]
    fn a_failure_blocks_and_a_success_or_no_run_allows() {
        assert!(!allows(true, ALLOW, false, outcome(1, false)));
        assert!(allows(true, ALLOW, false, outcome(1, true)));
        assert!(
            allows(true, ALLOW, false, None),
            "a first fire has nothing to depend on"
        );
    }

    #[test]
    fn an_unrecorded_instance_blocks_except_under_replace() {
        assert!(!allows(true, ALLOW, true, outcome(1, true)));
        assert!(!allows(true, FORBID, true, None));
        assert!(allows(true, REPLACE, true, outcome(1, true)));
        assert!(allows(true, REPLACE, true, None));
        // Replace still judges the last finished outcome.
        assert!(!allows(true, REPLACE, true, outcome(1, false)));
    }

    /// A gate that admits everything and counts the scheduled fires it
    /// was asked about, so a test knows a boundary was handled even when
    /// nothing launched.
    struct CountingGate(Arc<AtomicUsize>);

    impl LeaderGate for CountingGate {
        fn admit(&self, _job: &JobConfig, trigger: Trigger) -> Admission {
            if trigger == Trigger::Schedule {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
            Admission::Launch
        }
    }

    async fn settle_until(mut done: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done() && std::time::Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
    }

    /// Fails its first run, succeeds from then on; every minute.
    fn fails_once(marker: &std::path::Path) -> String {
        format!(
            "jobs:\n  - name: j\n    command: \"test -e '{m}' || {{ touch '{m}'; exit 1; }}\"\n    \
             schedule: \"* * * * *\"\n    onlyIfLastSucceeded: true\n",
            m = marker.display()
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_holds_scheduled_fires_until_a_manual_run_succeeds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let asked = Arc::new(AtomicUsize::new(0));
        let h = spawn_scheduler(
            job_set(&fails_once(&dir.path().join("marker"))),
            Box::new(CountingGate(Arc::clone(&asked))),
            Box::new(NoSlots),
        )
        .await;
        tokio::time::advance(Duration::from_secs(31)).await;
        let first = runs(&h.control, "j", 1).await;
        assert_eq!(first.len(), 1);
        assert!(first[0].failed(), "the first run fails: {first:?}");

        // The next boundary is handled and held back.
        tokio::time::advance(Duration::from_secs(60)).await;
        settle_until(|| asked.load(Ordering::SeqCst) >= 2).await;
        assert_eq!(asked.load(Ordering::SeqCst), 2);

        // A manual start bypasses the gate, and its success reopens it.
        h.control
            .start("j")
            .await
            .expect("a manual start is accepted");
        let after_manual = runs(&h.control, "j", 2).await;
        let triggers: Vec<(Trigger, bool)> = after_manual
            .iter()
            .map(|r| (r.trigger, r.failed()))
            .collect();
        assert_eq!(
            triggers,
            vec![(Trigger::Schedule, true), (Trigger::Manual, false)],
            "the held boundary did not run; the manual start did"
        );

        tokio::time::advance(Duration::from_secs(60)).await;
        let third = runs(&h.control, "j", 3).await;
        let triggers: Vec<(Trigger, bool)> =
            third.iter().map(|r| (r.trigger, r.failed())).collect();
        assert_eq!(
            triggers,
            vec![
                (Trigger::Schedule, true),
                (Trigger::Manual, false),
                (Trigger::Schedule, false)
            ],
            "after a success the next boundary runs"
        );
        h.stop.trigger();
        h.task.await.expect("the scheduler task ends cleanly");
    }
}
