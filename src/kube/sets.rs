//! What the Kubernetes source concludes about each CronJobSet, in the
//! form the status writer and the event recorder read it. A module of its
//! own so the source, the writer and the recorder share it without
//! importing one another.

use super::crd::Condition;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A set's identity: namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SetKey {
    /// The set's namespace.
    pub namespace: String,
    /// The set's name.
    pub name: String,
}

impl SetKey {
    /// The prefix every scheduler name of this set's jobs starts with.
    pub fn job_prefix(&self) -> String {
        super::convert::job_name(&self.namespace, &self.name, "")
    }
}

/// What the source concluded about one set: what the status writer
/// writes and the event recorder refers to.
#[derive(Debug, Clone, PartialEq)]
pub struct SetReport {
    /// The set.
    pub key: SetKey,
    /// Its `metadata.uid`.
    pub uid: Option<String>,
    /// The `metadata.generation` this verdict is about.
    pub generation: Option<i64>,
    /// `Ok` when the current spec loaded, else the loader's message.
    pub verdict: Result<(), String>,
    /// The generation whose jobs are scheduled when the current one was
    /// refused (None: nothing of this set runs).
    pub running_generation: Option<i64>,
    /// `spec.suspend` of the jobs scheduled.
    pub suspended: bool,
    /// (name in the set, name in the scheduler) of every job scheduled.
    pub jobs: Vec<(String, String)>,
    /// The job-set id of this set's scheduled jobs.
    pub job_set_id: Option<String>,
    /// The conditions the object carried when first seen, so a restarted
    /// scheduler keeps their transition times.
    pub seen_conditions: Vec<Condition>,
}

/// Every selected set's report.
pub type SetReports = BTreeMap<SetKey, Arc<SetReport>>;

impl SetReport {
    /// The set as the API shows it (`GET /kube/sets`).
    pub fn view(&self) -> crate::status::kube::SetView {
        crate::status::kube::SetView {
            namespace: self.key.namespace.clone(),
            name: self.key.name.clone(),
            generation: self.generation,
            accepted: self.verdict.is_ok(),
            message: self.verdict.as_ref().err().cloned(),
            running_generation: self.running_generation,
            suspended: self.suspended,
            jobs: self
                .jobs
                .iter()
                .map(|(name, job)| crate::status::kube::SetJobView {
                    name: name.clone(),
                    job: job.clone(),
                })
                .collect(),
            job_set_id: self.job_set_id.clone(),
        }
    }
}
