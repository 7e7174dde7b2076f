//! Retry ladders on the writer thread: the record-before-run settle of a
//! due retry, and cross-node retry resume on a shared store (the claim of
//! a ladder another node left: a crashed owner's `pending`, stale past
//! its deadline, or a `handoff`).
//!
//! Both run on the writer thread on purpose: the settle must land after
//! the `pending` record of the very attempt it settles (queued before
//! it), and a claim's record must land before its lease is released.
//! Both take the job's `retry-claim/<job>` lease, so a claim and a
//! consume of one ladder never interleave.

use crate::config::model::sections::OnStoreUnavailable;
use crate::scheduler::durable::{DurableEvent, DurableRetry, RetryClaimJob, RetryConsume};
use crate::state::format::{parse_iso, py_isoformat};
use crate::state::records::{self, keep, stream};
use crate::state::store::Store;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Map, Value};

/// How long a claim lease lives (the original's `RETRY_CLAIM_TTL`).
pub const CLAIM_TTL_SECONDS: f64 = 30.0;

/// How long past its deadline another node's `pending` must be before it
/// may be claimed: its owner is presumed dead (the original's grace).
pub const CLAIM_GRACE: TimeDelta = TimeDelta::seconds(30);

/// The claim lease of `job`.
pub fn claim_lease(job: &str) -> String {
    format!("retry-claim/{job}")
}

/// A ladder record another node left that this node may claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimable {
    /// The attempt it is at.
    pub attempt: u32,
    /// When it is due (a hand-off's, now at the earliest).
    pub not_before: DateTime<Utc>,
    /// When the attempt was armed (a run after that resolved it).
    pub armed_at: DateTime<Utc>,
    /// The node it comes from.
    pub from: String,
}

fn text<'a>(rec: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    rec.get(key).and_then(Value::as_str)
}

/// Judges the newest ladder record of `job` (pure): claimable when it is
/// a `handoff` (its owner let go) or another node's `pending` more than
/// [`CLAIM_GRACE`] past due (its owner died), for the job as configured
/// here (same digest, within the retry budget and the starting deadline)
/// and not resolved by a run this node knows of. Anything else declines:
/// settling another node's record on suspicion would race its live owner.
pub fn claimable(
    rec: &Map<String, Value>,
    job: &RetryClaimJob,
    digest: &str,
    me: &str,
    now: DateTime<Utc>,
) -> Option<Claimable> {
    let kind = text(rec, "kind")?;
    if kind != "pending" && kind != "handoff" {
        return None;
    }
    let attempt = rec.get("attempt").filter(|v| !v.is_boolean())?.as_u64()?;
    let attempt = u32::try_from(attempt).ok().filter(|a| *a >= 1)?;
    let not_before = text(rec, "notBefore").and_then(parse_iso)?;
    if text(rec, "jobDigest") != Some(digest) {
        return None;
    }
    if job.maximum_retries != -1 && i64::from(attempt) > job.maximum_retries {
        return None;
    }
    if job
        .starting_deadline
        .is_some_and(|secs| now - not_before > TimeDelta::seconds(secs))
    {
        return None;
    }
    let from = if kind == "pending" {
        let host = text(rec, "host")?;
        if host == me {
            // Our own pending is the start's to re-arm, never a claim's.
            return None;
        }
        host
    } else {
        text(rec, "fromHost").unwrap_or_default()
    };
    let armed_at = text(rec, "armedAt")
        .and_then(parse_iso)
        .or_else(|| text(rec, "at").and_then(parse_iso))
        .unwrap_or(not_before);
    if job.last_run.is_some_and(|ran| ran > armed_at) {
        return None;
    }
    if kind == "handoff" {
        return Some(Claimable {
            attempt,
            not_before: not_before.max(now),
            armed_at,
            from: from.to_owned(),
        });
    }
    (now - not_before.max(armed_at) > CLAIM_GRACE).then(|| Claimable {
        attempt,
        not_before,
        armed_at,
        from: from.to_owned(),
    })
}

/// Whether the newest ladder record was written by another node (a
/// claimer's `pending`, or its `launched` settle): then a local ladder
/// of the job is stale and must stop without writing.
pub fn foreign(rec: Option<&Map<String, Value>>, me: &str) -> bool {
    rec.and_then(|r| text(r, "host"))
        .is_some_and(|host| host != me)
}

/// The newest finish of a run (not a skipped slot) in `rows`.
fn newest_ran(rows: &[Map<String, Value>]) -> Option<DateTime<Utc>> {
    rows.iter()
        .filter(|r| r.contains_key("ranAt"))
        .filter_map(|r| text(r, "finished_at").and_then(parse_iso))
        .max()
}

/// The ladder work of the writer thread.
pub(super) struct Ladders<'a> {
    /// The store.
    pub store: &'a Store,
    /// The `host` of this node's records.
    pub host: &'a str,
    /// This process's lease holder (`host#token`).
    pub holder: String,
    /// `onStoreUnavailable`.
    pub policy: OnStoreUnavailable,
}

impl Ladders<'_> {
    fn newest(&self, job: &str) -> std::io::Result<Option<(String, Map<String, Value>)>> {
        Ok(self
            .store
            .read_newest(&format!("{}{job}", stream::RETRIES), 1)?
            .pop())
    }

    fn append(&self, job: &str, data: &Value) -> std::io::Result<()> {
        let name = format!("{}{job}", stream::RETRIES);
        self.store.append(&name, data)?;
        // A failed prune never fails the append.
        let _ = self.store.prune(&name, keep::RETRIES);
        Ok(())
    }

    /// Settles a due retry before it launches (see
    /// `DurableState::consume_retry`).
    pub fn consume(&self, job: &str, attempt: u32, serialize: bool) -> RetryConsume {
        let fail_closed = self.policy == OnStoreUnavailable::FailClosed;
        let mut lease = None;
        if serialize {
            match self
                .store
                .lease_acquire(&claim_lease(job), &self.holder, CLAIM_TTL_SECONDS)
            {
                Ok(Some(held)) => lease = Some(held),
                Ok(None) => {
                    // A live claimer is at this very ladder: ask again; if it
                    // claimed, the next look stops this ladder.
                    return RetryConsume::Defer;
                }
                Err(e) => {
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "Cron job {job} retry (#{attempt}): the retry-claim store call raised \
                         ({e}); treating the claim as unanswered"
                    );
                    if fail_closed {
                        tracing::warn!(
                            target: "cronstable::scheduler",
                            "Cron job {job} retry (#{attempt}) deferred: cannot serialize with \
                             cross-node claims (store unavailable) and onStoreUnavailable is \
                             fail-closed"
                        );
                        return RetryConsume::Defer;
                    }
                }
            }
        }
        let verdict = self.consume_held(job, attempt, serialize, fail_closed);
        if let Some(held) = lease {
            // The TTL frees it anyway.
            let _ = self.store.lease_release(&held);
        }
        verdict
    }

    fn consume_held(
        &self,
        job: &str,
        attempt: u32,
        serialize: bool,
        fail_closed: bool,
    ) -> RetryConsume {
        if serialize {
            match self.newest(job) {
                Ok(newest) => {
                    if foreign(newest.as_ref().map(|(_, r)| r), self.host) {
                        return RetryConsume::Abort;
                    }
                }
                Err(_) if fail_closed => return RetryConsume::Defer,
                Err(_) => {}
            }
        }
        let settle = records::retry_settled(self.host, "launched", Some(attempt), Utc::now());
        match self.append(job, &settle) {
            Ok(()) => RetryConsume::Launch,
            Err(e) => {
                self.store
                    .stats()
                    .dropped(crate::state::stats::WriteKind::Retry);
                if fail_closed {
                    tracing::warn!(
                        target: "cronstable::scheduler",
                        "Cron job {job} retry (#{attempt}) deferred: cannot settle its durable \
                         record ({e}) and onStoreUnavailable is fail-closed"
                    );
                    RetryConsume::Defer
                } else {
                    tracing::warn!(
                        target: "cronstable::state",
                        "state: cannot settle the durable record for {job} retry (#{attempt}) \
                         ({e}); launching anyway (a crash could replay this attempt after a \
                         restart)"
                    );
                    RetryConsume::Launch
                }
            }
        }
    }

    /// Claims what `jobs` have claimable; each claim goes to `events`.
    pub fn scan(
        &self,
        jobs: &[RetryClaimJob],
        digests: &std::collections::HashMap<String, String>,
        events: &tokio::sync::mpsc::UnboundedSender<DurableEvent>,
    ) {
        // Enumerate first: almost no job has a ladder stream.
        let Ok(streams) = self.store.stream_names(stream::RETRIES) else {
            return;
        };
        let present: std::collections::HashSet<&str> = streams
            .iter()
            .filter_map(|s| s.strip_prefix(stream::RETRIES))
            .collect();
        for job in jobs.iter().filter(|j| present.contains(j.job.as_str())) {
            let Some(digest) = digests.get(&job.job) else {
                continue;
            };
            match self.claim(job, digest) {
                Ok(Some(retry)) => {
                    let _ = events.send(DurableEvent::RetryHandedOver {
                        job: job.job.clone(),
                        retry,
                    });
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    target: "cronstable::state",
                    "state: error scanning job {} for a claimable retry: {e}",
                    job.job
                ),
            }
        }
    }

    fn claim(&self, job: &RetryClaimJob, digest: &str) -> std::io::Result<Option<DurableRetry>> {
        let Some((name, rec)) = self.newest(&job.job)? else {
            return Ok(None);
        };
        let Some(found) = claimable(&rec, job, digest, self.host, Utc::now()) else {
            return Ok(None);
        };
        let Some(held) =
            self.store
                .lease_acquire(&claim_lease(&job.job), &self.holder, CLAIM_TTL_SECONDS)?
        else {
            // A rival claimer, or a consume of the live owner: next scan.
            return Ok(None);
        };
        let claimed = self.claim_held(job, digest, &name, &found);
        let _ = self.store.lease_release(&held);
        let claimed = claimed?;
        if claimed {
            let due = (found.not_before - Utc::now()).num_milliseconds().max(0) as f64 / 1e3;
            tracing::info!(
                target: "cronstable::scheduler",
                "Job {}: claimed pending retry #{} from host {} (cross-node retry resume); due in \
                 {due:.1} seconds",
                job.job,
                found.attempt,
                found.from
            );
        }
        Ok(claimed.then(|| DurableRetry {
            attempt: found.attempt,
            not_before: found.not_before,
            digest: digest.to_owned(),
            recorded_at: found.armed_at,
        }))
    }

    /// The claim's critical section, under the lease: the record must not
    /// have moved, no run in the ledger may have resolved it since it was
    /// armed; then this node's `pending` lands before the lease goes.
    fn claim_held(
        &self,
        job: &RetryClaimJob,
        digest: &str,
        seen: &str,
        found: &Claimable,
    ) -> std::io::Result<bool> {
        if self.newest(&job.job)?.map(|(name, _)| name).as_deref() != Some(seen) {
            return Ok(false);
        }
        let ledger = self
            .store
            .read_newest(&format!("{}{}", stream::RUNS, job.job), 50)?;
        let rows: Vec<_> = ledger.into_iter().map(|(_, r)| r).collect();
        if newest_ran(&rows).is_some_and(|ran| ran > found.armed_at) {
            // The run that resolved it most likely ran on another node (its
            // settle may have been dropped): settle it so scans stop.
            let settle = records::retry_settled(
                self.host,
                "superseded-by-run",
                Some(found.attempt),
                Utc::now(),
            );
            self.append(&job.job, &settle)?;
            return Ok(false);
        }
        let mut claim = records::retry_pending(
            self.host,
            found.attempt,
            found.not_before,
            digest,
            Utc::now(),
        );
        claim["claimedFrom"] = json!(found.from);
        self.append(&job.job, &claim)?;
        Ok(true)
    }
}

/// A `handoff` record: the attempt moves to the job's new owner, due now.
pub fn handoff_record(
    host: &str,
    attempt: u32,
    digest: &str,
    armed_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Value {
    json!({
        "kind": "handoff",
        "attempt": attempt,
        "notBefore": py_isoformat(now),
        "jobDigest": digest,
        "fromHost": host,
        "at": py_isoformat(now),
        "armedAt": py_isoformat(armed_at),
    })
}

#[cfg(test)]
#[path = "claims_tests.rs"]
mod tests;
