//! The status writer: once a second it asks the scheduler what moved,
//! computes each set's status ([`super::status::desired`]) and applies it
//! (server-side apply, field manager [`FIELD_MANAGER`]) to the sets whose
//! status differs from what it last wrote. That makes the
//! coalescing natural (at most one patch per object per tick, however
//! many runs ended in between), keeps the scheduler free of any API call
//! (it only answers a snapshot request), and lets a failed write be
//! retried with backoff without holding anything else up. Only a writer
//! allowed by `may_write` (the leader, or the only scheduler) writes.

use super::crd::{Condition, CronJobSet, CronJobSetStatus};
use super::sets::{SetKey, SetReports};
use super::status;
use crate::scheduler::control::{ControlHandle, JobProgress, Progress};
use crate::status::kube::StatusWrites;
use chrono::Utc;
use futures_util::stream::{self, StreamExt};
use kube::api::{Api, Patch, PatchParams};
use kube::Resource;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How the writer paces itself.
#[derive(Debug, Clone, Copy)]
pub struct WriterSettings {
    /// Time between passes: the most often one object is written.
    pub interval: Duration,
    /// How long one write may take (the apply, and the merge patch that
    /// may follow it).
    pub deadline: Duration,
    /// The longest wait before retrying a failed write.
    pub max_backoff: Duration,
    /// Writes in flight at once.
    pub concurrency: usize,
}

impl Default for WriterSettings {
    fn default() -> Self {
        WriterSettings {
            interval: Duration::from_secs(1),
            deadline: Duration::from_secs(5),
            max_backoff: Duration::from_secs(60),
            concurrency: 8,
        }
    }
}

/// What was written to one set, and when a failed write may be retried.
#[derive(Debug, Default)]
struct Slot {
    written: Option<CronJobSetStatus>,
    failures: u32,
    retry_at: Option<Instant>,
}

/// Starts the writer task.
pub fn spawn(
    client: kube::Client,
    reports: watch::Receiver<Arc<SetReports>>,
    control: ControlHandle,
    writes: watch::Sender<StatusWrites>,
    may_write: watch::Receiver<bool>,
    node: String,
    settings: WriterSettings,
) {
    tokio::spawn(run(
        client, reports, control, writes, may_write, node, settings,
    ));
}

async fn run(
    client: kube::Client,
    reports: watch::Receiver<Arc<SetReports>>,
    control: ControlHandle,
    writes: watch::Sender<StatusWrites>,
    may_write: watch::Receiver<bool>,
    node: String,
    settings: WriterSettings,
) {
    let mut ticks = tokio::time::interval(settings.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut slots: HashMap<SetKey, Slot> = HashMap::new();
    let mut progress: Option<Progress> = None;
    let mut outage_logged = false;
    let mut last_reports: Option<Arc<SetReports>> = None;
    loop {
        ticks.tick().await;
        if !*may_write.borrow() {
            // A writer that lost the right forgets what it wrote: when it
            // gets it back, another writer may have written since.
            slots.clear();
            last_reports = None;
            continue;
        }
        let now = Utc::now();
        // Times move without a run starting (a next fire passes on a node
        // that did not launch it): ask afresh when one written is past.
        let stale = progress.as_ref().is_some_and(|p| {
            p.jobs
                .iter()
                .any(|j| j.next_fire.is_some_and(|at| at <= now))
        });
        let since = if stale {
            None
        } else {
            progress.as_ref().map(|p| p.version)
        };
        let moved = match control.progress("", since).await {
            Ok(Some(fresh)) => {
                progress = Some(fresh);
                true
            }
            Ok(None) => false,
            // The scheduler is gone: the daemon is stopping.
            Err(_) => return,
        };
        let reports = reports.borrow().clone();
        let retry_pending = slots.values().any(|s| s.retry_at.is_some());
        if !moved
            && !retry_pending
            && last_reports
                .as_ref()
                .is_some_and(|r| Arc::ptr_eq(r, &reports))
        {
            // Nothing the statuses are made of changed since the last pass.
            continue;
        }
        last_reports = Some(Arc::clone(&reports));
        let empty = Vec::new();
        let jobs = progress.as_ref().map(|p| &p.jobs).unwrap_or(&empty);
        let index: HashMap<&str, &JobProgress> =
            jobs.iter().map(|j| (j.name.as_str(), j)).collect();
        slots.retain(|key, _| reports.contains_key(key));
        let clock = Instant::now();
        let mut due = Vec::new();
        for (key, report) in reports.iter() {
            let slot = slots.entry(key.clone()).or_default();
            if slot.retry_at.is_some_and(|at| at > clock) {
                continue;
            }
            let previous: &[Condition] = match &slot.written {
                Some(written) => &written.conditions,
                None => &report.seen_conditions,
            };
            let wanted = status::desired(report, &index, previous, &node, now);
            if slot.written.as_ref() != Some(&wanted) {
                due.push((key.clone(), wanted));
            }
        }
        let results: Vec<(SetKey, CronJobSetStatus, Result<(), WriteError>)> = stream::iter(due)
            .map(|(key, wanted)| {
                let client = client.clone();
                async move {
                    let result = write(client, &key, &wanted, settings.deadline).await;
                    (key, wanted, result)
                }
            })
            .buffer_unordered(settings.concurrency.max(1))
            .collect()
            .await;
        let mut written = 0u64;
        let mut failed = 0u64;
        let mut first_failure = None;
        for (key, wanted, result) in results {
            match result {
                Ok(()) => {
                    written += 1;
                    slots.insert(
                        key,
                        Slot {
                            written: Some(wanted),
                            ..Slot::default()
                        },
                    );
                }
                Err(WriteError::Gone) => {
                    // Deleted since: the next report drops it.
                    slots.remove(&key);
                }
                Err(WriteError::Failed(reason)) => {
                    failed += 1;
                    let slot = slots.entry(key.clone()).or_default();
                    slot.failures += 1;
                    let backoff = settings
                        .interval
                        .saturating_mul(1 << slot.failures.min(6))
                        .min(settings.max_backoff);
                    slot.retry_at = Some(Instant::now() + backoff);
                    first_failure.get_or_insert((key, reason));
                }
            }
        }
        if written > 0 || failed > 0 {
            writes.send_modify(|w| {
                w.written += written;
                w.failed += failed;
            });
        }
        match first_failure {
            Some((key, reason)) if !outage_logged => {
                outage_logged = true;
                tracing::warn!(
                    target: "cronstable::kube",
                    "could not write the status of CronJobSet {}/{} ({reason}); retrying with \
                     backoff",
                    key.namespace,
                    key.name
                );
            }
            None if written > 0 && outage_logged => {
                outage_logged = false;
                tracing::info!(target: "cronstable::kube", "status writes succeed again");
            }
            _ => {}
        }
    }
}

/// Why a write did not land.
enum WriteError {
    /// The object no longer exists.
    Gone,
    /// Anything else; retried.
    Failed(String),
}

/// The field manager the status is applied under: `kubectl get cjs -o
/// yaml --show-managed-fields` names it as the owner of `status`.
pub const FIELD_MANAGER: &str = "cronstable";

/// Writes `wanted` as the set's whole status: a server-side apply on the
/// status subresource as [`FIELD_MANAGER`], forced (status is the
/// scheduler's alone; another writer's values give way). Apply removes
/// what this manager set before and no longer sends, which covers what
/// the merge patch spelled with `null`s. It cannot remove what another
/// manager owns, as a status written by an earlier version through merge
/// patches is (a stale job entry, a `jobSetId` no longer set), so when
/// the object the server returns still differs from `wanted`, a merge
/// patch of the whole status follows and takes those leftovers out.
async fn write(
    client: kube::Client,
    key: &SetKey,
    wanted: &CronJobSetStatus,
    deadline: Duration,
) -> Result<(), WriteError> {
    let api: Api<CronJobSet> = Api::namespaced(client, &key.namespace);
    let calls = async {
        let applied = api
            .patch_status(
                &key.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&apply_body(&key.name, wanted)),
            )
            .await?;
        if applied.status.as_ref() == Some(wanted) {
            return Ok(());
        }
        tracing::debug!(
            target: "cronstable::kube",
            "CronJobSet {}/{}: the applied status kept fields another manager owns; \
             replacing the status with a merge patch",
            key.namespace,
            key.name
        );
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let body = serde_json::json!({ "status": merge_body(wanted) });
        api.patch_status(&key.name, &params, &Patch::Merge(&body))
            .await
            .map(drop)
    };
    match tokio::time::timeout(deadline, calls).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => Err(WriteError::Gone),
        Ok(Err(err)) => Err(WriteError::Failed(err.to_string())),
        Err(_) => Err(WriteError::Failed(format!(
            "no answer within {} s",
            deadline.as_secs()
        ))),
    }
}

/// The object a status apply sends: the identity server-side apply needs
/// (apiVersion, kind, name) and the complete status; nothing of the spec,
/// so the scheduler never owns a spec field.
fn apply_body(name: &str, status: &CronJobSetStatus) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": CronJobSet::api_version(&()),
        "kind": CronJobSet::kind(&()),
        "metadata": { "name": name },
        "status": status,
    })
}

/// The status as a merge patch must spell it to replace what is there:
/// lists are replaced whole by a merge patch anyway, and the optional
/// top-level fields are written as `null` when absent so a stale value is
/// removed.
fn merge_body(status: &CronJobSetStatus) -> serde_json::Value {
    let mut body = serde_json::to_value(status).unwrap_or_default();
    if let Some(map) = body.as_object_mut() {
        for key in [
            "observedGeneration",
            "jobSetId",
            "lastScheduleTime",
            "jobNames",
        ] {
            map.entry(key).or_insert(serde_json::Value::Null);
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::crd::{ConditionStatus, ConditionType, JobStatus};
    use serde_json::json;

    fn status() -> CronJobSetStatus {
        CronJobSetStatus {
            observed_generation: Some(2),
            conditions: vec![Condition {
                type_: ConditionType::Accepted,
                status: ConditionStatus::True,
                reason: "Valid".into(),
                message: "2 job(s) loaded".into(),
                last_transition_time: "2026-12-01T00:00:00Z".into(),
                observed_generation: Some(2),
            }],
            job_set_id: Some("v1:abc".into()),
            last_schedule_time: None,
            job_count: 2,
            job_names: "a, b".into(),
            jobs: vec![
                JobStatus {
                    name: "a".into(),
                    ..JobStatus::default()
                },
                JobStatus {
                    name: "b".into(),
                    active: 1,
                    ..JobStatus::default()
                },
            ],
        }
    }

    #[test]
    fn the_apply_body_names_the_object_and_carries_the_whole_status_only() {
        let wanted = status();
        let body = apply_body("nightly", &wanted);
        assert_eq!(body["apiVersion"], "cronstable.io/v1alpha1");
        assert_eq!(body["kind"], "CronJobSet");
        assert_eq!(body["metadata"], json!({"name": "nightly"}));
        let mut top: Vec<&str> = body
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        top.sort_unstable();
        assert_eq!(top, ["apiVersion", "kind", "metadata", "status"]);
        // Every field of the status, nothing more: what apply leaves out
        // it removes.
        assert_eq!(body["status"], serde_json::to_value(&wanted).expect("JSON"));
        assert_eq!(body["status"]["jobCount"], 2);
        assert_eq!(body["status"]["jobNames"], "a, b");
        assert_eq!(body["status"]["jobs"][1], json!({"name": "b", "active": 1}));
        // No nulls: in an apply a null is a value the manager owns, not a
        // removal; an absent field is removed.
        assert!(body["status"].get("lastScheduleTime").is_none(), "{body}");
        assert!(!body.to_string().contains("null"), "{body}");
    }

    #[test]
    fn the_merge_body_removes_every_optional_field_the_status_lacks() {
        let mut wanted = status();
        wanted.job_set_id = None;
        wanted.observed_generation = None;
        wanted.job_names = String::new();
        wanted.job_count = 0;
        wanted.jobs.clear();
        let body = merge_body(&wanted);
        for key in [
            "observedGeneration",
            "jobSetId",
            "lastScheduleTime",
            "jobNames",
        ] {
            assert_eq!(body[key], serde_json::Value::Null, "{key}: {body}");
        }
        // The rest replace what is there: lists whole, the count as 0.
        assert_eq!(body["jobs"], json!([]));
        assert_eq!(body["jobCount"], 0);
        assert_eq!(body["conditions"][0]["type"], "Accepted");
        // Applied to a status an older writer left behind, it leaves
        // exactly the wanted status.
        let mut stale = json!({
            "observedGeneration": 1,
            "jobSetId": "v1:old",
            "lastScheduleTime": "2026-11-30T00:00:00Z",
            "jobCount": 3,
            "jobNames": "a, b, gone",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Scheduled",
                            "message": "", "lastTransitionTime": "2026-11-30T00:00:00Z"}],
            "jobs": [{"name": "gone", "active": 0}],
        });
        json_merge(&mut stale, &body);
        let merged: CronJobSetStatus = serde_json::from_value(stale).expect("a status");
        assert_eq!(merged, wanted);
    }

    /// RFC 7386, enough for the test above.
    fn json_merge(target: &mut serde_json::Value, patch: &serde_json::Value) {
        let (Some(target), Some(patch)) = (target.as_object_mut(), patch.as_object()) else {
            *target = patch.clone();
            return;
        };
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                json_merge(
                    target.entry(key.clone()).or_insert(serde_json::Value::Null),
                    value,
                );
            }
        }
    }
}
