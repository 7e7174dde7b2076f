//! Events on CronJobSets (and the ConfigMap): a refused spec, a failed
//! run, a run that failed for good. Requests go through a queue to one
//! task, so neither the source nor a finishing run ever waits on the API;
//! the task publishes them with kube-runtime's recorder, which aggregates
//! a repeat into the first event's `series.count` as Kubernetes' own
//! recorders do. Only the writer of status (the leader) publishes events
//! on sets and the ConfigMap: the others drop those. An event about this
//! scheduler's own pod (a ConfigMap it cannot find) is published by every
//! replica, each about itself. A lost Event is a DEBUG line (the status
//! and the log carry the same facts), except one the API server refuses
//! (401, 403): a missing right is a WARNING, once per verb and namespace.

use super::health::Reminders;
use super::sets::{SetKey, SetReports};
use crate::config::JobConfig;
use crate::job::RunRecord;
use crate::report::{Hook, ReportFuture, Reporter};
use crate::status::kube::{EventView, EVENTS_KEPT};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter as EventReporter};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Who the events say reported them.
pub const REPORTING_CONTROLLER: &str = "cronstable.io/scheduler";

/// How long one publication may take before it is given up.
const PUBLISH_DEADLINE: Duration = Duration::from_secs(5);

/// The API server refuses a `note` longer than this many bytes.
const NOTE_LIMIT: usize = 1024;

/// One event to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRequest {
    /// The object the event is about.
    pub regarding: ObjectReference,
    /// A CamelCase word (`InvalidSpec`, `RunFailed`, ...).
    pub reason: &'static str,
    /// What the scheduler did (`Load`, `Run`).
    pub action: &'static str,
    /// The human-readable text.
    pub note: String,
    /// Published by every replica, not only by the writer of status: the
    /// event is about this scheduler's own pod.
    pub every_replica: bool,
}

/// Where requests are queued.
pub type EventSink = mpsc::UnboundedSender<EventRequest>;

fn set_reference(key: &SetKey, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("cronstable.io/v1alpha1".to_owned()),
        kind: Some("CronJobSet".to_owned()),
        namespace: Some(key.namespace.clone()),
        name: Some(key.name.clone()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    }
}

impl EventRequest {
    /// A set the loader refused.
    pub fn invalid_spec(key: &SetKey, uid: Option<&str>, message: String) -> Self {
        EventRequest {
            regarding: set_reference(key, uid),
            reason: "InvalidSpec",
            action: "Load",
            note: message,
            every_replica: false,
        }
    }

    /// A ConfigMap whose config does not load.
    pub fn invalid_config(namespace: &str, name: &str, message: String) -> Self {
        EventRequest {
            regarding: configmap_reference(namespace, name),
            reason: "InvalidConfig",
            action: "Load",
            note: message,
            every_replica: false,
        }
    }

    /// The ConfigMap of `--configmap` does not exist (`deleted`: it did
    /// before). About the scheduler's own pod when it knows it (`pod`),
    /// where `kubectl describe pod` shows it, else about the ConfigMap.
    pub fn configmap_absent(
        namespace: &str,
        name: &str,
        deleted: bool,
        pod: Option<&ObjectReference>,
        note: String,
    ) -> Self {
        EventRequest {
            regarding: pod
                .cloned()
                .unwrap_or_else(|| configmap_reference(namespace, name)),
            reason: if deleted {
                "ConfigMapDeleted"
            } else {
                "ConfigMapMissing"
            },
            action: "Load",
            note,
            every_replica: pod.is_some(),
        }
    }
}

fn configmap_reference(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("ConfigMap".to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

/// The reference to this scheduler's pod, when the pod's name is known
/// (`--pod-name`, which the chart fills from the downward API; with
/// `--pod-uid`, `kubectl describe pod` lists the events too).
pub fn pod_reference(
    namespace: &str,
    name: Option<&str>,
    uid: Option<&str>,
) -> Option<ObjectReference> {
    Some(ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        namespace: Some(namespace.to_owned()),
        name: Some(name?.to_owned()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    })
}

/// Cuts `text` to at most `limit` bytes on a character boundary, marking
/// the cut.
fn clip(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let marker = " …";
    let mut end = limit - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

/// Starts the publishing task; `may_write` says whether this scheduler
/// writes (the leader, or the only scheduler).
pub fn spawn(
    client: kube::Client,
    instance: String,
    may_write: watch::Receiver<bool>,
    log: watch::Sender<Arc<Vec<EventView>>>,
) -> EventSink {
    let (tx, mut rx) = mpsc::unbounded_channel::<EventRequest>();
    let recorder = Recorder::new(
        client,
        EventReporter {
            controller: REPORTING_CONTROLLER.to_owned(),
            instance: Some(instance),
        },
    );
    tokio::spawn(async move {
        let mut refusals = Reminders::default();
        while let Some(request) = rx.recv().await {
            let publish = request.every_replica || *may_write.borrow();
            // The API's list of what was raised here, newest last.
            log.send_modify(|events| {
                let list = Arc::make_mut(events);
                if list.len() >= EVENTS_KEPT {
                    list.remove(0);
                }
                list.push(EventView::of(&request, publish, chrono::Utc::now()));
            });
            if !publish {
                continue;
            }
            let event = Event {
                type_: EventType::Warning,
                reason: request.reason.to_owned(),
                note: Some(clip(&request.note, NOTE_LIMIT)),
                action: request.action.to_owned(),
                secondary: None,
            };
            let published = tokio::time::timeout(
                PUBLISH_DEADLINE,
                recorder.publish(&event, &request.regarding),
            )
            .await;
            let failure = match published {
                Ok(Ok(())) => None,
                Ok(Err(kube::Error::Api(status))) if status.code == 401 || status.code == 403 => {
                    warn_refused(&mut refusals, &request, &status);
                    None
                }
                Ok(Err(err)) => Some(err.to_string()),
                Err(_) => Some(format!("no answer within {} s", PUBLISH_DEADLINE.as_secs())),
            };
            if let Some(reason) = failure {
                // Events are best effort: the status and the log say the
                // same, so a lost event is a debug line, not an alarm.
                tracing::debug!(
                    target: "cronstable::kube",
                    "could not record the {} event on {}/{}: {reason}",
                    request.reason,
                    request.regarding.namespace.as_deref().unwrap_or_default(),
                    request.regarding.name.as_deref().unwrap_or_default()
                );
            }
        }
    });
    tx
}

impl EventView {
    /// `request` as the API lists it, raised `at`.
    fn of(request: &EventRequest, published: bool, at: chrono::DateTime<chrono::Utc>) -> EventView {
        let field = |v: &Option<String>| v.clone().unwrap_or_default();
        EventView {
            at: super::status::timestamp(at),
            kind: field(&request.regarding.kind),
            namespace: field(&request.regarding.namespace),
            name: field(&request.regarding.name),
            type_: "Warning",
            reason: request.reason.to_owned(),
            note: request.note.clone(),
            published,
        }
    }
}

/// The verb a refusal's message names (`... cannot create resource ...`).
fn refused_verb(message: &str) -> &str {
    message
        .split_once("cannot ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or("create or patch")
}

/// An Event the API server refused (401, 403): unlike a lost Event, a
/// missing right does not go away by itself, so it is a WARNING naming
/// the verb, the namespace and the server's message, once per verb and
/// namespace (again every [`super::health::REFUSED_REMINDER`] while it
/// lasts).
fn warn_refused(refusals: &mut Reminders, request: &EventRequest, status: &kube::core::Status) {
    let namespace = request.regarding.namespace.as_deref().unwrap_or_default();
    let verb = refused_verb(&status.message);
    let key = format!("{} {verb} {namespace}", status.code);
    if !refusals.due(&key, std::time::Instant::now()) {
        return;
    }
    let hint = if status.code == 401 {
        "the API server does not accept the daemon's credentials (an expired or revoked token?)"
    } else {
        "the Role (RBAC) of the daemon's service account lacks this right; see the RBAC section \
         of docs/kubernetes.md"
    };
    tracing::warn!(
        target: "cronstable::kube",
        "Kubernetes API refused to {verb} events.k8s.io events in namespace {namespace} ({} {}: \
         {}): {hint}; Events (such as this {} one on {}/{}) are dropped until it is granted, the \
         status and the log carry the same facts",
        status.code,
        status.reason,
        status.message,
        request.reason,
        namespace,
        request.regarding.name.as_deref().unwrap_or_default()
    );
}

/// A reporter that also records an Event on the CronJobSet of a failed
/// run, then hands the run to the daemon's reporters.
pub struct EventingReporter {
    inner: Arc<dyn Reporter>,
    sink: EventSink,
    reports: watch::Receiver<Arc<SetReports>>,
    /// This scheduler's pod, which daemon events are about.
    pod: Option<ObjectReference>,
}

impl EventingReporter {
    /// Wraps `inner`; `reports` tells which jobs belong to which set,
    /// `pod` is the scheduler's own pod (daemon events are recorded on it
    /// when it is known).
    pub fn new(
        inner: Arc<dyn Reporter>,
        sink: EventSink,
        reports: watch::Receiver<Arc<SetReports>>,
        pod: Option<ObjectReference>,
    ) -> Self {
        EventingReporter {
            inner,
            sink,
            reports,
            pod,
        }
    }

    /// The set and the job's own name, when `job` is a set's job.
    fn owner(&self, job: &str) -> Option<(SetKey, Option<String>, String)> {
        let mut parts = job.splitn(3, ':');
        let key = SetKey {
            namespace: parts.next()?.to_owned(),
            name: parts.next()?.to_owned(),
        };
        let reports = self.reports.borrow();
        let report = reports.get(&key)?;
        let own = report
            .jobs
            .iter()
            .find(|(_, scheduled)| scheduled == job)
            .map(|(own, _)| own.clone())?;
        Some((key, report.uid.clone(), own))
    }
}

impl Reporter for EventingReporter {
    fn report(&self, hook: Hook, job: &JobConfig, record: &RunRecord) -> ReportFuture {
        let event = match hook {
            Hook::Success => None,
            Hook::Failure => Some(("RunFailed", "failed")),
            Hook::PermanentFailure => Some(("RunPermanentlyFailed", "failed with no retry left")),
            // Breaches and daemon events have their own calls.
            Hook::Late | Hook::Event => None,
        };
        if let Some((reason, verb)) = event {
            if let Some((key, uid, own)) = self.owner(&job.name) {
                let why = record.fail_reason.as_deref().unwrap_or("failed");
                let _ = self.sink.send(EventRequest {
                    regarding: set_reference(&key, uid.as_deref()),
                    reason,
                    action: "Run",
                    note: format!("Job {own} {verb} (exit code {}): {why}", record.retcode),
                    every_replica: false,
                });
            }
        }
        self.inner.report(hook, job, record)
    }

    fn report_late(&self, job: &JobConfig, breach: crate::report::SlaBreach) -> ReportFuture {
        if let Some((key, uid, own)) = self.owner(&job.name) {
            let _ = self.sink.send(EventRequest {
                regarding: set_reference(&key, uid.as_deref()),
                reason: "SlaBreached",
                action: "Monitor",
                note: format!(
                    "Job {own} is overdue ({}): observed {:.0}s exceeds the threshold of {}s",
                    breach.check, breach.observed_seconds, breach.threshold_seconds
                ),
                every_replica: false,
            });
        }
        self.inner.report_late(job, breach)
    }

    fn report_event(
        &self,
        report: &crate::config::model::Report,
        event: crate::report::DaemonEvent,
    ) -> ReportFuture {
        let reason = match event.event {
            "leader_change" => Some("LeadershipChanged"),
            "quorum_loss" => Some("QuorumLost"),
            _ => None,
        };
        if let (Some(pod), Some(reason)) = (&self.pod, reason) {
            let _ = self.sink.send(EventRequest {
                regarding: pod.clone(),
                reason,
                action: "Elect",
                note: format!("{}: {}", capitalized(&event.subject), event.message),
                every_replica: true,
            });
        }
        self.inner.report_event(report, event)
    }
}

/// `text` with its first letter in upper case.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refused_verb_is_read_from_the_servers_message() {
        assert_eq!(
            refused_verb(
                "events.events.k8s.io is forbidden: User \"u\" cannot create resource \"events\" \
                 in API group \"events.k8s.io\" in the namespace \"ops\""
            ),
            "create"
        );
        assert_eq!(
            refused_verb("... cannot patch resource \"events\" ..."),
            "patch"
        );
        assert_eq!(refused_verb("Unauthorized"), "create or patch");
    }

    #[test]
    fn long_notes_are_clipped_on_a_character_boundary() {
        let text = "é".repeat(600);
        let clipped = clip(&text, NOTE_LIMIT);
        assert!(clipped.len() <= NOTE_LIMIT, "{}", clipped.len());
        assert!(clipped.ends_with(" …"));
        assert_eq!(clip("short", NOTE_LIMIT), "short");
    }
}
