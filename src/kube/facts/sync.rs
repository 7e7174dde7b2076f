//! The facts task: once a second it reads the facts ConfigMap (the
//! changes another node wrote become events for this node's scheduler)
//! and, while this node may write and something waits, writes the keys
//! that changed in one merge patch (or creates the object). Every call
//! is bounded by [`super::FactsSettings::deadline`]; a failure only
//! delays what waits to the next pass.

use super::doc::{Delta, Facts, OutcomeFact, RebootFact, RetryOp, BUDGET};
use crate::scheduler::durable::DurableEvent;
use crate::scheduler::history::RealOutcome;
use crate::scheduler::pause::PauseMark;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// The field manager the facts are written under.
pub const FIELD_MANAGER: &str = "cronstable-facts";

/// One of the scheduler's writes, as the task folds it.
#[derive(Debug)]
pub(super) enum Op {
    Pause(String, PauseMark),
    Retry(String, RetryOp),
    Outcome(String, OutcomeFact),
    Reboot(String, RebootFact),
    Counters(serde_json::Value),
    /// Resolve once what waits now was written (or could not be).
    Flush(oneshot::Sender<()>),
}

/// What the task needs.
pub(super) struct Task {
    pub(super) api: Api<ConfigMap>,
    pub(super) name: String,
    pub(super) interval: Duration,
    pub(super) deadline: Duration,
    pub(super) may_write: watch::Receiver<bool>,
    pub(super) events: mpsc::UnboundedSender<DurableEvent>,
    pub(super) writes: watch::Sender<u64>,
}

/// What the task remembers between passes.
#[derive(Default)]
struct State {
    /// The document as the server last showed it (None before the first
    /// read that worked: nothing is written before, so a write never
    /// replaces what it has not seen).
    base: Option<Facts>,
    /// The server's values of [`Facts::values`] keys, to send only what
    /// changed.
    raw: BTreeMap<String, String>,
    exists: bool,
    delta: Delta,
    waiters: Vec<oneshot::Sender<()>>,
    available: bool,
    write_failing: bool,
    trimmed: Vec<String>,
    bad_keys: Vec<String>,
}

impl Task {
    /// Runs until the scheduler's side is dropped.
    pub(super) async fn run(self, mut ops: mpsc::UnboundedReceiver<Op>) {
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut state = State {
            available: true,
            ..State::default()
        };
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                op = ops.recv() => match op {
                    Some(op) => {
                        fold(&mut state, op);
                        continue;
                    }
                    None => return,
                },
            }
            self.pass(&mut state).await;
            for waiter in state.waiters.drain(..) {
                let _ = waiter.send(());
            }
        }
    }

    async fn pass(&self, state: &mut State) {
        self.read(state).await;
        if !*self.may_write.borrow() {
            // Only the writer writes: what a follower's scheduler hands in
            // (its own counters, runs of `EveryNode` jobs) is the
            // leader's to record.
            state.delta = Delta::default();
            return;
        }
        if state.delta.is_empty() {
            return;
        }
        let Some(base) = &state.base else {
            return;
        };
        let mut doc = base.clone();
        doc.apply(&state.delta);
        let (values, dropped) = doc.encode(chrono::Utc::now(), BUDGET);
        if !dropped.is_empty() && dropped != state.trimmed {
            tracing::warn!(
                target: "cronstable::state",
                "state: the facts ConfigMap {} would exceed its {} KiB budget; dropped {}",
                self.name,
                BUDGET / 1024,
                dropped.join(", ")
            );
        }
        state.trimmed = dropped;
        let changed: BTreeMap<String, String> = values
            .iter()
            .filter(|(k, v)| state.raw.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if changed.is_empty() {
            state.delta = Delta::default();
            return;
        }
        match tokio::time::timeout(self.deadline, self.write(state.exists, &changed, &values)).await
        {
            Ok(Ok(())) => {
                state.base = Some(doc);
                state.raw = values;
                state.exists = true;
                state.delta = Delta::default();
                self.writes.send_modify(|w| *w += 1);
                if state.write_failing {
                    state.write_failing = false;
                    tracing::info!(
                        target: "cronstable::state",
                        "state: the facts ConfigMap {} is written again",
                        self.name
                    );
                }
            }
            outcome => {
                let why = match &outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {} s", self.deadline.as_secs()),
                };
                if let Ok(Err(WriteError::Exists)) = outcome {
                    // Created by another writer since the last read:
                    // patched at the next pass.
                    state.exists = true;
                }
                if !state.write_failing {
                    state.write_failing = true;
                    tracing::warn!(
                        target: "cronstable::state",
                        "state: cannot write the facts ConfigMap {} ({why}); keeping the changes \
                         and trying again every second",
                        self.name
                    );
                }
            }
        }
    }

    /// Reads the object; changes are sent as events.
    async fn read(&self, state: &mut State) {
        let got = tokio::time::timeout(self.deadline, self.api.get_opt(&self.name)).await;
        let data = match got {
            Ok(Ok(found)) => {
                state.exists = found.is_some();
                found.and_then(|cm| cm.data).unwrap_or_default()
            }
            failed => {
                let why = match failed {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!("no answer within {} s", self.deadline.as_secs()),
                };
                if state.available {
                    state.available = false;
                    tracing::warn!(
                        target: "cronstable::state",
                        "state: cannot read the facts ConfigMap {} ({why}); pauses and outcomes \
                         the leader records are not seen until it can",
                        self.name
                    );
                    let _ = self.events.send(DurableEvent::Available(false));
                }
                return;
            }
        };
        if !state.available {
            state.available = true;
            tracing::info!(
                target: "cronstable::state",
                "state: the facts ConfigMap {} answers again",
                self.name
            );
            let _ = self.events.send(DurableEvent::Available(true));
        }
        if state.base.is_some() && data == state.raw {
            return;
        }
        let (facts, warnings) = Facts::decode(&data);
        if !warnings.is_empty() && warnings != state.bad_keys {
            tracing::warn!(
                target: "cronstable::state",
                "state: the facts ConfigMap {}: {}",
                self.name,
                warnings.join("; ")
            );
        }
        state.bad_keys = warnings;
        let before = state.base.take().unwrap_or_default();
        let (pauses, outcomes) = facts.changes_since(&before);
        for (job, mark) in pauses {
            let _ = self.events.send(DurableEvent::Pause { job, mark });
        }
        for (job, fact) in outcomes {
            let _ = self.events.send(DurableEvent::LastOutcome {
                job,
                outcome: RealOutcome {
                    finished_at: fact.at,
                    succeeded: fact.ok,
                },
            });
        }
        state.base = Some(facts);
        state.raw = data;
    }

    /// One write: a merge patch of the changed keys, or the object with
    /// every key when it does not exist (a patch that finds it gone
    /// creates it too).
    async fn write(
        &self,
        exists: bool,
        changed: &BTreeMap<String, String>,
        all: &BTreeMap<String, String>,
    ) -> Result<(), WriteError> {
        if exists {
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_owned()),
                ..PatchParams::default()
            };
            let body = serde_json::json!({ "data": changed });
            match self
                .api
                .patch(&self.name, &params, &Patch::Merge(&body))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(WriteError::Failed(e.to_string())),
            }
        }
        let object: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": self.name,
                "labels": {
                    "app.kubernetes.io/managed-by": "cronstable",
                    "app.kubernetes.io/component": "facts",
                },
            },
            "data": all,
        }))
        .map_err(|e| WriteError::Failed(e.to_string()))?;
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match self.api.create(&params, &object).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Err(WriteError::Exists),
            Err(e) => Err(WriteError::Failed(e.to_string())),
        }
    }
}

/// Why a write did not land.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("it was created by another writer meanwhile")]
    Exists,
    #[error("{0}")]
    Failed(String),
}

fn fold(state: &mut State, op: Op) {
    let delta = &mut state.delta;
    match op {
        Op::Pause(job, mark) => delta.pause(&job, &mark),
        Op::Retry(job, op) => delta.retry(&job, op),
        Op::Outcome(job, fact) => delta.outcome(&job, fact),
        Op::Reboot(job, fact) => {
            delta.reboot.insert(job, fact);
        }
        Op::Counters(snapshot) => delta.counters = Some(snapshot),
        Op::Flush(waiter) => state.waiters.push(waiter),
    }
}
