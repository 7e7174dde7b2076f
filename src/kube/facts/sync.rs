//! The facts task: once a second it reads the facts ConfigMap (the
//! changes another node wrote become events for this node's scheduler)
//! and, while this node may write and something waits, writes the keys
//! that changed in one merge patch (or creates the object). Every call
//! is bounded by [`super::FactsSettings::deadline`]; a failure only
//! delays what waits to the next pass.

use super::doc::{reboot_key, Delta, Facts, OutcomeFact, RebootFact, RetryOp, BUDGET};
use crate::scheduler::durable::{DurableError, DurableEvent, RetryConsume};
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
    /// A due retry about to launch: its settle is written first and the
    /// verdict says whether it may launch (record-before-run).
    Consume {
        job: String,
        attempt: u32,
        reply: oneshot::Sender<Result<RetryConsume, DurableError>>,
    },
}

/// A due retry waiting for its settle to land.
struct Consumer {
    job: String,
    attempt: u32,
    /// Its pending record was still in this node's unwritten changes (so
    /// the document cannot show it yet).
    unwritten: bool,
    reply: oneshot::Sender<Result<RetryConsume, DurableError>>,
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
    /// Leader election decides the writer: when this node becomes it, the
    /// pending retries of the document are handed to its scheduler, and
    /// a due retry launches only while the document still holds it.
    pub(super) hand_over: bool,
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
    consumers: Vec<Consumer>,
    /// Per job, the attempt whose settle this node queued but could not
    /// write when its retry asked (the retry was deferred, or launched
    /// anyway under `degrade`): the settle lands later, and the document
    /// then lacks a record that is still this node's.
    failed_settles: BTreeMap<String, u32>,
    /// This node is the writer and its scheduler was handed the
    /// document's pending retries (false again when it stops writing).
    handed_over: bool,
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
        let fresh = self.read(state).await;
        if !*self.may_write.borrow() {
            // Only the writer writes: what a follower's scheduler hands in
            // (its own counters, runs of `EveryNode` jobs) is the
            // leader's to record, and a retry it cannot record as
            // launched is the leader's to run.
            state.delta = Delta::default();
            state.handed_over = false;
            state.failed_settles.clear();
            answer(&mut state.consumers, Ok(RetryConsume::Abort));
            return;
        }
        if self.hand_over && !state.handed_over && fresh {
            // Just became the writer: the retries the previous one left
            // pending are this node's now (read from the server this
            // pass, so its last settles are in).
            if let Some(base) = &state.base {
                for (job, fact) in &base.retries {
                    let _ = self.events.send(DurableEvent::RetryHandedOver {
                        job: job.clone(),
                        retry: fact.to_port(),
                    });
                }
                state.handed_over = true;
            }
        }
        if state.delta.is_empty() {
            return;
        }
        let Some(base) = &state.base else {
            answer(&mut state.consumers, {
                Err(DurableError(
                    "the facts ConfigMap has not been read yet".to_owned(),
                ))
            });
            return;
        };
        if self.hand_over {
            // Under election a due retry whose record the document no
            // longer holds at this attempt was settled (launched) by
            // another writer, or replaced by a newer ladder: running it
            // here could run an attempt twice.
            let (kept, mut stale): (Vec<_>, Vec<_>) = std::mem::take(&mut state.consumers)
                .into_iter()
                .partition(|c| still_ours(c, base, &state.failed_settles));
            state.consumers = kept;
            answer(&mut stale, Ok(RetryConsume::Abort));
        }
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
            answer(&mut state.consumers, Ok(RetryConsume::Launch));
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
                answer(&mut state.consumers, Ok(RetryConsume::Launch));
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
                for consumer in &state.consumers {
                    state
                        .failed_settles
                        .insert(consumer.job.clone(), consumer.attempt);
                }
                answer(&mut state.consumers, {
                    Err(DurableError(format!(
                        "cannot write the facts ConfigMap {} ({why})",
                        self.name
                    )))
                });
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

    /// Reads the object; changes are sent as events. Says whether the
    /// read worked.
    async fn read(&self, state: &mut State) -> bool {
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
                return false;
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
            return true;
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
        true
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
        Op::Retry(job, op) => {
            if matches!(op, RetryOp::Pending(_)) {
                state.failed_settles.remove(&job);
            }
            delta.retry(&job, op);
        }
        Op::Outcome(job, fact) => delta.outcome(&job, fact),
        Op::Reboot(job, fact) => {
            delta.reboot.insert(reboot_key(&job, &fact.host), fact);
        }
        Op::Counters(snapshot) => delta.counters = Some(snapshot),
        Op::Flush(waiter) => state.waiters.push(waiter),
        Op::Consume {
            job,
            attempt,
            reply,
        } => {
            let unwritten = matches!(delta.retries.get(&job), Some(RetryOp::Pending(p)) if p.attempt == attempt);
            delta.retry(&job, RetryOp::Settled(attempt));
            state.consumers.push(Consumer {
                job,
                attempt,
                unwritten,
                reply,
            });
        }
    }
}

/// Under election, whether a due retry is still this node's to run: its
/// pending record was never written (armed here since the last write),
/// its settle was queued here before (a write that failed, landed
/// since), or the document still holds it at this attempt.
fn still_ours(consumer: &Consumer, doc: &Facts, failed_settles: &BTreeMap<String, u32>) -> bool {
    consumer.unwritten
        || failed_settles.get(&consumer.job) == Some(&consumer.attempt)
        || doc
            .retries
            .get(&consumer.job)
            .is_some_and(|r| r.attempt == consumer.attempt)
}

/// Gives every waiting retry its verdict.
fn answer(consumers: &mut Vec<Consumer>, verdict: Result<RetryConsume, DurableError>) {
    for consumer in consumers.drain(..) {
        let _ = consumer.reply.send(verdict.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::facts::doc::RetryFact;

    fn pending(attempt: u32) -> RetryOp {
        RetryOp::Pending(RetryFact {
            attempt,
            due: chrono::Utc::now(),
            digest: "d".into(),
            at: chrono::Utc::now(),
        })
    }

    fn consume(
        state: &mut State,
        job: &str,
        attempt: u32,
    ) -> oneshot::Receiver<Result<RetryConsume, DurableError>> {
        let (reply, rx) = oneshot::channel();
        fold(
            state,
            Op::Consume {
                job: job.into(),
                attempt,
                reply,
            },
        );
        rx
    }

    #[test]
    fn a_retry_armed_since_the_last_write_is_ours_though_the_document_lacks_it() {
        let mut state = State::default();
        fold(&mut state, Op::Retry("j".into(), pending(1)));
        let _rx = consume(&mut state, "j", 1);
        let c = &state.consumers[0];
        assert!(c.unwritten);
        assert!(still_ours(c, &Facts::default(), &state.failed_settles));
        // The settle replaced the unwritten pending record in the delta.
        assert_eq!(state.delta.retries.get("j"), Some(&RetryOp::Settled(1)));
    }

    #[test]
    fn a_retry_the_document_holds_at_another_attempt_or_not_at_all_is_not_ours() {
        let mut state = State::default();
        let _rx = consume(&mut state, "j", 1);
        let c = &state.consumers[0];
        assert!(!c.unwritten);
        let mut doc = Facts::default();
        assert!(
            !still_ours(c, &doc, &state.failed_settles),
            "settled elsewhere"
        );
        let RetryOp::Pending(fact) = pending(2) else {
            unreachable!()
        };
        doc.retries.insert("j".into(), fact.clone());
        assert!(
            !still_ours(c, &doc, &state.failed_settles),
            "a newer ladder"
        );
        doc.retries
            .insert("j".into(), RetryFact { attempt: 1, ..fact });
        assert!(still_ours(c, &doc, &state.failed_settles), "still held");
    }

    #[test]
    fn a_settle_that_failed_here_keeps_the_retry_ours_until_a_new_ladder() {
        let mut state = State::default();
        state.failed_settles.insert("j".into(), 1);
        let _rx = consume(&mut state, "j", 1);
        assert!(still_ours(
            &state.consumers[0],
            &Facts::default(),
            &state.failed_settles
        ));
        fold(&mut state, Op::Retry("j".into(), pending(2)));
        assert!(state.failed_settles.is_empty());
    }

    #[test]
    fn every_waiting_retry_gets_the_verdict() {
        let mut state = State::default();
        let mut first = consume(&mut state, "a", 1);
        let mut second = consume(&mut state, "b", 3);
        answer(&mut state.consumers, Ok(RetryConsume::Abort));
        assert!(state.consumers.is_empty());
        assert_eq!(first.try_recv(), Ok(Ok(RetryConsume::Abort)));
        assert_eq!(second.try_recv(), Ok(Ok(RetryConsume::Abort)));
    }
}
