//! What a CronJobSet's status should say, computed from the source's
//! report on the set and the scheduler's progress of its jobs. Pure: the
//! writer decides when to send it.

use super::crd::{
    Condition, ConditionStatus, ConditionType, CronJobSetStatus, JobStatus, RunResult,
};
use super::sets::SetReport;
use crate::job::outcome::Outcome;
use crate::scheduler::control::JobProgress;
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::HashMap;

/// A time as status fields spell it (RFC 3339, UTC, seconds).
pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The status `report`'s set should carry now, complete: the writer
/// applies it whole, and a field left out of it is removed from the
/// object. `progress` maps scheduler job names to their progress;
/// `previous` holds the conditions last written (or found on the object),
/// whose transition times are kept while their status does not change;
/// `node` names this host. `jobs` lists the set's jobs in the scheduler's
/// table (`report.jobs`: the running generation's, in spec order), and
/// `jobCount`/`jobNames` count and name exactly those.
pub fn desired(
    report: &SetReport,
    progress: &HashMap<&str, &JobProgress>,
    previous: &[Condition],
    node: &str,
    now: DateTime<Utc>,
) -> CronJobSetStatus {
    let generation = report.generation;
    let accepted = match &report.verdict {
        Ok(()) => (
            ConditionStatus::True,
            "Valid",
            format!("{} job(s) loaded", report.jobs.len()),
        ),
        Err(message) => (ConditionStatus::False, "Invalid", message.clone()),
    };
    let ready = match (report.running_generation, report.suspended) {
        (None, _) => (
            ConditionStatus::False,
            "NotAccepted",
            "no spec of this set is scheduled".to_owned(),
        ),
        (Some(_), true) => (
            ConditionStatus::False,
            "Suspended",
            "spec.suspend is true: scheduled fires are skipped".to_owned(),
        ),
        (Some(running), false) if Some(running) != generation => (
            ConditionStatus::True,
            "PreviousSpecScheduled",
            format!(
                "generation {} was refused; the jobs of generation {running} keep running",
                generation.unwrap_or(0)
            ),
        ),
        (Some(_), false) => (
            ConditionStatus::True,
            "Scheduled",
            format!("{} job(s) scheduled", report.jobs.len()),
        ),
    };
    let condition =
        |type_: ConditionType, (status, reason, message): (ConditionStatus, &str, String)| {
            let since = previous
                .iter()
                .find(|c| c.type_ == type_ && c.status == status)
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| timestamp(now));
            Condition {
                type_,
                status,
                reason: reason.to_owned(),
                message,
                last_transition_time: since,
                observed_generation: generation,
            }
        };
    let jobs: Vec<JobStatus> = report
        .jobs
        .iter()
        .map(|(own, scheduled)| {
            job_status(
                own,
                progress.get(scheduled.as_str()).copied(),
                report.suspended,
                node,
            )
        })
        .collect();
    let last_schedule_time = jobs
        .iter()
        .filter_map(|j| j.last_schedule_time.as_ref())
        .max()
        .cloned();
    // The printer columns' values: one number and one string, because the
    // server's Table API prints only the first match of a list's JSONPath.
    let job_count = jobs.len() as i64;
    let job_names = jobs
        .iter()
        .map(|j| j.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    CronJobSetStatus {
        observed_generation: generation,
        conditions: vec![
            condition(ConditionType::Accepted, accepted),
            condition(ConditionType::Ready, ready),
        ],
        job_set_id: report.job_set_id.clone(),
        last_schedule_time,
        job_count,
        job_names,
        jobs,
    }
}

fn job_status(own: &str, progress: Option<&JobProgress>, suspended: bool, node: &str) -> JobStatus {
    let Some(p) = progress else {
        return JobStatus {
            name: own.to_owned(),
            ..JobStatus::default()
        };
    };
    JobStatus {
        name: own.to_owned(),
        last_schedule_time: p.last_scheduled.map(timestamp),
        last_successful_time: p.last_success.map(timestamp),
        last_result: p.last_run.as_ref().map(|run| RunResult {
            outcome: outcome_name(run.outcome).to_owned(),
            exit_code: run.exit_code.map(i64::from),
            fail_reason: run.fail_reason.clone(),
            finished_at: timestamp(run.finished_at),
            node: Some(node.to_owned()),
        }),
        next_schedule_time: if suspended {
            None
        } else {
            p.next_fire.map(timestamp)
        },
        active: p.active as i64,
    }
}

fn outcome_name(outcome: Outcome) -> &'static str {
    outcome.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::sets::SetKey;
    use crate::scheduler::control::RunSummary;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, h, m, s)
            .single()
            .expect("a time")
    }

    fn report(verdict: Result<(), String>, running: Option<i64>, suspended: bool) -> SetReport {
        SetReport {
            key: SetKey {
                namespace: "ops".into(),
                name: "nightly".into(),
            },
            uid: Some("u1".into()),
            generation: Some(3),
            verdict,
            running_generation: running,
            suspended,
            jobs: vec![("backup".into(), "ops:nightly:backup".into())],
            job_set_id: Some("v1:abc".into()),
            seen_conditions: Vec::new(),
        }
    }

    fn progress() -> JobProgress {
        JobProgress {
            name: "ops:nightly:backup".into(),
            active: 1,
            next_fire: Some(at(2, 0, 0)),
            last_scheduled: Some(at(1, 0, 0)),
            last_run: Some(RunSummary {
                outcome: Outcome::Failure,
                exit_code: Some(3),
                started_at: Some(at(0, 59, 0)),
                finished_at: at(0, 59, 30),
                duration: Some(30.0),
                fail_reason: Some("exit code 3".into()),
            }),
            last_success: Some(at(0, 30, 0)),
        }
    }

    #[test]
    fn an_accepted_set_reports_its_jobs_and_conditions() {
        let p = progress();
        let index: HashMap<&str, &JobProgress> = [(p.name.as_str(), &p)].into();
        let status = desired(
            &report(Ok(()), Some(3), false),
            &index,
            &[],
            "host-a",
            at(1, 0, 5),
        );
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.job_set_id.as_deref(), Some("v1:abc"));
        assert_eq!(
            status.last_schedule_time.as_deref(),
            Some("2026-12-01T01:00:00Z")
        );
        let [accepted, ready] = &status.conditions[..] else {
            panic!("two conditions: {:?}", status.conditions)
        };
        assert_eq!(
            (accepted.type_, accepted.status),
            (ConditionType::Accepted, ConditionStatus::True)
        );
        assert_eq!(accepted.reason, "Valid");
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::True, "Scheduled")
        );
        assert_eq!(ready.last_transition_time, "2026-12-01T01:00:05Z");
        let job = &status.jobs[0];
        assert_eq!(job.name, "backup");
        assert_eq!(job.active, 1);
        assert_eq!(
            job.next_schedule_time.as_deref(),
            Some("2026-12-01T02:00:00Z")
        );
        assert_eq!(
            job.last_successful_time.as_deref(),
            Some("2026-12-01T00:30:00Z")
        );
        let result = job.last_result.as_ref().expect("a result");
        assert_eq!(result.outcome, "failure");
        assert_eq!(result.exit_code, Some(3));
        assert_eq!(result.fail_reason.as_deref(), Some("exit code 3"));
        assert_eq!(result.finished_at, "2026-12-01T00:59:30Z");
        assert_eq!(result.node.as_deref(), Some("host-a"));
    }

    #[test]
    fn transition_times_survive_while_the_status_holds_and_move_when_it_flips() {
        let index = HashMap::new();
        let first = desired(
            &report(Ok(()), Some(3), false),
            &index,
            &[],
            "h",
            at(1, 0, 0),
        );
        let again = desired(
            &report(Ok(()), Some(3), false),
            &index,
            &first.conditions,
            "h",
            at(1, 5, 0),
        );
        assert_eq!(first.conditions, again.conditions);
        let refused = desired(
            &report(Err("bad schedule".into()), Some(2), false),
            &index,
            &again.conditions,
            "h",
            at(1, 6, 0),
        );
        let accepted = &refused.conditions[0];
        assert_eq!(accepted.status, ConditionStatus::False);
        assert_eq!(accepted.reason, "Invalid");
        assert_eq!(accepted.message, "bad schedule");
        assert_eq!(accepted.last_transition_time, "2026-12-01T01:06:00Z");
        // The previous generation keeps running: still ready, same time.
        let ready = &refused.conditions[1];
        assert_eq!(
            (ready.status, ready.reason.as_str()),
            (ConditionStatus::True, "PreviousSpecScheduled")
        );
        assert_eq!(ready.last_transition_time, "2026-12-01T01:00:00Z");
        assert!(ready.message.contains("generation 2"), "{}", ready.message);
    }

    #[test]
    fn a_refused_new_set_is_not_ready_and_a_suspended_one_has_no_next_time() {
        let p = progress();
        let index: HashMap<&str, &JobProgress> = [(p.name.as_str(), &p)].into();
        let mut refused = report(Err("nope".into()), None, false);
        refused.jobs.clear();
        let status = desired(&refused, &index, &[], "h", at(1, 0, 0));
        assert_eq!(status.conditions[1].reason, "NotAccepted");
        assert!(status.jobs.is_empty());
        assert_eq!(status.last_schedule_time, None);
        let suspended = desired(
            &report(Ok(()), Some(3), true),
            &index,
            &[],
            "h",
            at(1, 0, 0),
        );
        assert_eq!(suspended.conditions[1].reason, "Suspended");
        assert_eq!(suspended.conditions[1].status, ConditionStatus::False);
        assert_eq!(suspended.jobs[0].next_schedule_time, None);
        assert_eq!(
            suspended.jobs[0].last_schedule_time.as_deref(),
            Some("2026-12-01T01:00:00Z")
        );
    }

    #[test]
    fn a_job_the_scheduler_does_not_know_yet_is_listed_empty() {
        let status = desired(
            &report(Ok(()), Some(3), false),
            &HashMap::new(),
            &[],
            "h",
            at(1, 0, 0),
        );
        assert_eq!(
            status.jobs,
            vec![JobStatus {
                name: "backup".into(),
                ..JobStatus::default()
            }]
        );
    }

    fn three_jobs(verdict: Result<(), String>, running: Option<i64>, suspended: bool) -> SetReport {
        let mut r = report(verdict, running, suspended);
        // Spec order, which is not alphabetical.
        r.jobs = ["prune", "backup", "report"]
            .iter()
            .map(|j| (j.to_string(), format!("ops:nightly:{j}")))
            .collect();
        r
    }

    #[test]
    fn job_count_and_names_follow_the_jobs_listed_in_spec_order() {
        let index = HashMap::new();
        for (report, what) in [
            (three_jobs(Ok(()), Some(3), false), "accepted"),
            (
                three_jobs(Ok(()), Some(3), true),
                "suspended: the jobs are held, not gone",
            ),
            (
                three_jobs(Err("bad".into()), Some(2), false),
                "refused edit: the previous generation's jobs run",
            ),
        ] {
            let status = desired(&report, &index, &[], "h", at(1, 0, 0));
            assert_eq!(status.job_count, 3, "{what}");
            assert_eq!(status.job_names, "prune, backup, report", "{what}");
            let listed: Vec<&str> = status.jobs.iter().map(|j| j.name.as_str()).collect();
            assert_eq!(listed, ["prune", "backup", "report"], "{what}");
        }
        // One job: no separator.
        let one = desired(
            &report(Ok(()), Some(3), false),
            &index,
            &[],
            "h",
            at(1, 0, 0),
        );
        assert_eq!((one.job_count, one.job_names.as_str()), (1, "backup"));
    }

    #[test]
    fn a_set_with_nothing_running_counts_zero_jobs_and_names_none() {
        let mut refused = report(Err("nope".into()), None, false);
        refused.jobs.clear();
        let status = desired(&refused, &HashMap::new(), &[], "h", at(1, 0, 0));
        assert_eq!(status.job_count, 0);
        assert_eq!(status.job_names, "");
        // On the wire the count is always there (the Jobs column reads 0)
        // and the names are left out (the Names column is blank).
        let wire = serde_json::to_value(&status).expect("JSON");
        assert_eq!(wire["jobCount"], 0, "{wire}");
        assert!(wire.get("jobNames").is_none(), "{wire}");
    }

    #[test]
    fn the_status_on_the_wire_is_complete_and_keeps_its_shape() {
        let p = progress();
        let index: HashMap<&str, &JobProgress> = [(p.name.as_str(), &p)].into();
        let status = desired(
            &report(Ok(()), Some(3), false),
            &index,
            &[],
            "host-a",
            at(1, 0, 5),
        );
        let wire = serde_json::to_value(&status).expect("JSON");
        let mut keys: Vec<&str> = wire
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "conditions",
                "jobCount",
                "jobNames",
                "jobSetId",
                "jobs",
                "lastScheduleTime",
                "observedGeneration"
            ],
            "{wire}"
        );
        assert_eq!(wire["jobCount"], 1);
        assert_eq!(wire["jobNames"], "backup");
        assert_eq!(wire["observedGeneration"], 3);
        assert_eq!(
            wire["jobs"][0],
            serde_json::json!({
                "name": "backup",
                "lastScheduleTime": "2026-12-01T01:00:00Z",
                "lastSuccessfulTime": "2026-12-01T00:30:00Z",
                "lastResult": {
                    "outcome": "failure",
                    "exitCode": 3,
                    "failReason": "exit code 3",
                    "finishedAt": "2026-12-01T00:59:30Z",
                    "node": "host-a",
                },
                "nextScheduleTime": "2026-12-01T02:00:00Z",
                "active": 1,
            })
        );
        assert_eq!(
            wire["conditions"][0],
            serde_json::json!({
                "type": "Accepted",
                "status": "True",
                "reason": "Valid",
                "message": "1 job(s) loaded",
                "lastTransitionTime": "2026-12-01T01:00:05Z",
                "observedGeneration": 3,
            })
        );
        // What is written reads back as the same status (the writer
        // compares the object the server returns with what it sent).
        let back: CronJobSetStatus = serde_json::from_value(wire).expect("reads back");
        assert_eq!(back, status);
    }
}
