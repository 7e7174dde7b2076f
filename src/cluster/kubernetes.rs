//! The `kubernetes` backend: one `coordination.k8s.io/v1` Lease, taken and
//! renewed by optimistic concurrency the way client-go's leader election
//! does it: read, decide ([`super::election::Elector`]), then create, or
//! replace with the observed resourceVersion; a 409 means another node
//! wrote first. The holder identity is `<identity>#<token>` with a token
//! per process. A graceful release clears `holderIdentity` so a survivor
//! takes over at its next round.
//!
//! The cluster's records live on the same Lease as annotations
//! (`cronstable.io/reboot-ran`, `cronstable.io/last-fires`,
//! `cronstable.io/pauses`): every write
//! of the Lease (renewal, takeover, release) carries them over, and only
//! the holder changes them, with a renewal (so a record write is fenced by
//! the resourceVersion like any other holder write).

use super::election::{display_holder, Action, Elector, Observed, Timings};
use super::pauses;
use super::records::{self, RecordsAnswer, RecordsOp, RecordsResult};
use super::{Backend, BackendError, Round};
use crate::config::cluster::KubernetesSettings;
use crate::scheduler::ports::RecordsError;
use futures_util::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant;

/// The Lease backend.
pub struct KubernetesLease {
    api: Api<Lease>,
    name: String,
    namespace: String,
    identity: String,
    display: String,
    elector: Elector,
    /// The record as last read (kept to write renewals and releases).
    current: Option<Lease>,
    /// When the lease expires for others, while this node leads (for
    /// `GET /cluster`).
    expiry: Option<chrono::DateTime<chrono::Utc>>,
}

/// A MicroTime as the API server writes it.
fn micro_time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

impl KubernetesLease {
    /// A backend on `client` for the resolved settings, in `namespace`
    /// (the settings' `leaseNamespace` already applied by the caller).
    pub fn new(client: kube::Client, namespace: String, settings: &KubernetesSettings) -> Self {
        let identity = format!("{}#{}", settings.identity, super::process_token());
        let timings = Timings {
            lease_duration: Duration::from_secs(settings.lease_duration_seconds),
            renew_deadline: Duration::from_secs(settings.renew_deadline_seconds),
            retry_period: Duration::from_secs(settings.retry_period_seconds),
        };
        KubernetesLease {
            api: Api::namespaced(client, &namespace),
            name: settings.lease_name.clone(),
            namespace,
            display: settings.identity.clone(),
            elector: Elector::new(identity.clone(), timings),
            identity,
            current: None,
            expiry: None,
        }
    }

    fn body(&self, action: Action, now: chrono::DateTime<chrono::Utc>) -> Value {
        let spec = self.current.as_ref().and_then(|l| l.spec.as_ref());
        let transitions = spec.and_then(|s| s.lease_transitions).unwrap_or(0);
        let acquire_time = match action {
            Action::Renew => spec
                .and_then(|s| s.acquire_time.as_ref())
                .and_then(|t| serde_json::to_value(t).ok())
                .unwrap_or_else(|| json!(micro_time(now))),
            _ => json!(micro_time(now)),
        };
        let transitions = match action {
            Action::Create => 0,
            Action::Renew => transitions,
            _ => transitions + 1,
        };
        let mut metadata = json!({"name": self.name, "namespace": self.namespace});
        if let Some(current) = &self.current {
            if action != Action::Create {
                metadata["resourceVersion"] = json!(current.metadata.resource_version);
                if let Some(annotations) = &current.metadata.annotations {
                    metadata["annotations"] = json!(annotations);
                }
            }
        }
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.elector.timings().lease_duration.as_secs(),
                "acquireTime": acquire_time,
                "renewTime": micro_time(now),
                "leaseTransitions": transitions,
            }
        })
    }

    /// Takes the Lease this node just wrote (a create, a renewal, or a
    /// records write, which renews too) as held: leadership anchored at the
    /// send time `anchor`, expiry shown from the wall time `now`.
    fn adopt_written(
        &mut self,
        stored: Lease,
        anchor: Instant,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let version = stored.metadata.resource_version.clone().unwrap_or_default();
        self.elector.won(
            anchor,
            Observed {
                holder: Some(self.identity.clone()),
                version,
            },
        );
        self.current = Some(stored);
        self.expiry = Some(now + self.elector.timings().lease_duration);
    }

    async fn run_round(&mut self) -> Round {
        let anchor = Instant::now();
        let read = match self.api.get_opt(&self.name).await {
            Ok(read) => read,
            Err(err) => {
                self.elector.unanswered();
                return Round {
                    leading_until: self.elector.leading_until(),
                    error: Some(err.to_string()),
                    ..Round::default()
                };
            }
        };
        let observed = read.as_ref().map(|lease| Observed {
            holder: lease.spec.as_ref().and_then(|s| s.holder_identity.clone()),
            version: lease.metadata.resource_version.clone().unwrap_or_default(),
        });
        self.current = read;
        let action = self.elector.decide(anchor, observed.as_ref());
        let holder = observed
            .as_ref()
            .and_then(|o| o.holder.as_deref())
            .filter(|h| !h.is_empty())
            .map(|h| display_holder(h).to_owned());
        if action == Action::Wait {
            self.expiry = None;
            return Round {
                leading_until: None,
                answered: true,
                holder,
                error: None,
            };
        }
        let now = chrono::Utc::now();
        let body = self.body(action, now);
        let lease: Lease = match serde_json::from_value(body) {
            Ok(lease) => lease,
            Err(err) => {
                return Round {
                    answered: true,
                    holder,
                    error: Some(format!("cannot build the Lease: {err}")),
                    ..Round::default()
                }
            }
        };
        let written = if action == Action::Create {
            self.api.create(&PostParams::default(), &lease).await
        } else {
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
        };
        match written {
            Ok(stored) => {
                self.adopt_written(stored, anchor, now);
                Round {
                    leading_until: self.elector.leading_until(),
                    answered: true,
                    holder: Some(self.display.clone()),
                    error: None,
                }
            }
            Err(kube::Error::Api(status)) if status.code == 409 => {
                // Another node wrote first (or created it): not ours.
                self.elector.lost();
                self.expiry = None;
                Round {
                    leading_until: None,
                    answered: true,
                    holder,
                    error: None,
                }
            }
            Err(err) => {
                self.elector.unanswered();
                Round {
                    leading_until: self.elector.leading_until(),
                    answered: false,
                    holder,
                    error: Some(err.to_string()),
                }
            }
        }
    }

    /// The Lease to read records from: as the last round (or record
    /// write) left it while this node leads (only the holder writes, and
    /// its acquiring write was based on the newest version, so nothing
    /// newer exists); read afresh otherwise.
    async fn records_lease(&mut self) -> Result<Option<Lease>, RecordsError> {
        if self.elector.is_leader(Instant::now()) && self.current.is_some() {
            return Ok(self.current.clone());
        }
        let read = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| RecordsError::Store(e.to_string()))?;
        self.current = read.clone();
        Ok(read)
    }

    async fn read_annotation(&mut self, key: &str) -> Result<Option<String>, RecordsError> {
        Ok(self
            .records_lease()
            .await?
            .and_then(|lease| lease.metadata.annotations)
            .and_then(|mut annotations| annotations.remove(key)))
    }

    /// Changes annotation `key` with `change` (None from it: nothing to
    /// write) in a renewal of the Lease this node holds. A 409 (the Lease
    /// changed since this node last read it) re-reads and tries again,
    /// as long as the Lease is still ours.
    async fn write_annotation(
        &mut self,
        key: &str,
        change: impl Fn(Option<&str>) -> Option<String>,
    ) -> RecordsResult {
        for _ in 0..records::CAS_ATTEMPTS {
            if !self.elector.is_leader(Instant::now()) {
                return Err(RecordsError::NotLeader);
            }
            let Some(current) = self.current.as_ref() else {
                return Err(RecordsError::NotLeader);
            };
            let holder = current
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref());
            if holder != Some(self.identity.as_str()) {
                return Err(RecordsError::NotLeader);
            }
            let stored = current
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .map(String::as_str);
            let Some(text) = change(stored) else {
                return Ok(RecordsAnswer::Done);
            };
            let anchor = Instant::now();
            let now = chrono::Utc::now();
            let mut body = self.body(Action::Renew, now);
            body["metadata"]["annotations"][key] = json!(text);
            let lease: Lease = serde_json::from_value(body)
                .map_err(|e| RecordsError::Store(format!("cannot build the Lease: {e}")))?;
            match self
                .api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
            {
                Ok(stored) => {
                    // The write renewed the lease too.
                    self.adopt_written(stored, anchor, now);
                    return Ok(RecordsAnswer::Done);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    let fresh = self
                        .api
                        .get_opt(&self.name)
                        .await
                        .map_err(|e| RecordsError::Store(e.to_string()))?;
                    self.current = fresh;
                }
                Err(err) => return Err(RecordsError::Store(err.to_string())),
            }
        }
        Err(RecordsError::LeaseKeptChanging {
            key: key.to_owned(),
            attempts: records::CAS_ATTEMPTS,
        })
    }

    async fn run_records(&mut self, op: RecordsOp) -> RecordsResult {
        match op {
            RecordsOp::RebootRan { job_set_id } => {
                let raw = self.read_annotation(records::REBOOT_RAN_ANNOTATION).await?;
                Ok(RecordsAnswer::Jobs(records::reboot_jobs_for(
                    raw.as_deref(),
                    &job_set_id,
                )))
            }
            RecordsOp::LastFires => {
                let raw = self.read_annotation(records::LAST_FIRES_ANNOTATION).await?;
                Ok(RecordsAnswer::Fires(
                    records::decode_fires(raw.as_deref()).into_iter().collect(),
                ))
            }
            RecordsOp::MarkRebootRan { job_set_id, job } => {
                self.write_annotation(records::REBOOT_RAN_ANNOTATION, |raw| {
                    records::with_reboot_job(raw, &job_set_id, &job)
                })
                .await
            }
            RecordsOp::RecordFire { job, at } => {
                self.write_annotation(records::LAST_FIRES_ANNOTATION, |raw| {
                    records::with_fire(raw, &job, at)
                })
                .await
            }
            RecordsOp::Pauses => {
                let raw = self.read_annotation(pauses::PAUSES_ANNOTATION).await?;
                Ok(RecordsAnswer::Pauses(
                    pauses::decode_pauses(raw.as_deref()).into_iter().collect(),
                ))
            }
            RecordsOp::RecordPause { job, mark } => {
                self.write_annotation(pauses::PAUSES_ANNOTATION, |raw| {
                    pauses::with_mark(raw, &job, mark.clone(), chrono::Utc::now())
                })
                .await
            }
        }
    }

    async fn run_release(&mut self) -> Result<(), BackendError> {
        let was_leading = self.elector.is_leader(Instant::now());
        self.elector.released();
        self.expiry = None;
        let Some(current) = self.current.clone() else {
            return Ok(());
        };
        let ours = current
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.as_deref())
            == Some(self.identity.as_str());
        if !ours && !was_leading {
            return Ok(());
        }
        let mut released = current;
        if let Some(spec) = released.spec.as_mut() {
            spec.holder_identity = None;
        }
        self.api
            .replace(&self.name, &PostParams::default(), &released)
            .await
            .map(|_| ())
            .map_err(BackendError::from)
    }
}

impl Backend for KubernetesLease {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    fn start_line(&self) -> String {
        let t = self.elector.timings();
        format!(
            "cluster: kubernetes backend (http transport), identity '{}', lease {}/{} (duration \
             {}s, renew {}s, retry {}s)",
            self.display,
            self.namespace,
            self.name,
            t.lease_duration.as_secs(),
            t.renew_deadline.as_secs(),
            t.retry_period.as_secs()
        )
    }

    fn round(&mut self) -> BoxFuture<'_, Round> {
        Box::pin(self.run_round())
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.run_release())
    }

    fn records(&mut self, op: RecordsOp) -> BoxFuture<'_, RecordsResult> {
        Box::pin(self.run_records(op))
    }

    fn period(&self) -> Duration {
        self.elector.timings().retry_period
    }

    fn round_deadline(&self) -> Duration {
        self.elector.timings().renew_deadline
    }

    fn quorum_window(&self) -> Duration {
        self.elector.timings().lease_duration
    }

    fn lease_view(&self) -> Value {
        json!({
            "name": self.name,
            "namespace": self.namespace,
            "identity": self.display,
            "holder": null,
            "expiry": self.expiry.map(micro_time),
        })
    }
}
