//! The pure core of a resource pool: one document per pool (its capacity
//! and its entries, waiting, running and recently ended), and the rules
//! every node applies to it under the store's lock: admission order, the
//! head that waits for all its slots, the waiting-work limit, queue
//! deadlines, running leases that lapse, and the history kept.
//!
//! No I/O and no clock: every rule takes the time (`now`, Unix seconds,
//! the original's `time.time()`) as a value. The document's shape and key
//! names are the original's (namespace `scheduler-pools`, one document per
//! pool), so a fleet can mix this daemon and the original on one store;
//! keys this version does not use (DAG task entries, retry generations)
//! are kept as they were read.

use super::{Eligibility, EnqueueRequest, PoolError, Verdict};
use crate::config::sections::PoolConf;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// How long a running claim holds its slots without a renewal, seconds.
pub const LEASE_SECONDS: f64 = 30.0;

/// How many ended entries a document keeps (the newest by end time).
pub const ENDED_KEPT: usize = 100;

/// How many heads one dispatch pass admits at most.
pub const DISPATCH_BATCH: usize = 32;

/// The reason of an entry whose queue deadline passed.
pub const QUEUE_TIMEOUT: &str = "queue timeout";

/// The reason of an entry whose job changed, was disabled or removed.
pub const JOB_CHANGED: &str = "job removed, disabled, or configuration changed";

/// Where an entry is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryState {
    /// Waiting for admission.
    Queued,
    /// Admitted: its run holds its slots under a renewable lease.
    Running,
    /// Its run ended.
    Finished,
    /// Its queue deadline passed before admission.
    Expired,
    /// Cancelled while waiting.
    Cancelled,
}

impl EntryState {
    /// Ended for good (kept for the pool view, then dropped).
    pub fn ended(self) -> bool {
        matches!(
            self,
            EntryState::Finished | EntryState::Expired | EntryState::Cancelled
        )
    }

    /// The spelling in the document and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Queued => "queued",
            EntryState::Running => "running",
            EntryState::Finished => "finished",
            EntryState::Expired => "expired",
            EntryState::Cancelled => "cancelled",
        }
    }
}

/// What launched the work an entry waits for, and how to launch it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payload {
    /// `job` for a job's run (a DAG task's entry says `task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The run arms the job's retries when it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_retries: Option<bool>,
    /// An operator's start: not held by pauses or the leader gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual: Option<bool>,
    /// The node that must run it (an `EveryNode` job's or a manual
    /// start's); any eligible node when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_host: Option<String>,
    /// The scheduled fire it belongs to (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_at: Option<String>,
    /// A retry's attempt: `{count, delay}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryMark>,
    /// Keys this version does not use, kept as read.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The retry an entry carries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetryMark {
    /// The attempt (1 for the first retry).
    pub count: u32,
    /// The delay that led to it, seconds.
    pub delay: f64,
}

/// One piece of work in a pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Its key, unique in the pool.
    pub id: String,
    /// The job it runs.
    pub job: String,
    /// Where it is in its life.
    pub state: EntryState,
    /// Capacity it occupies while running.
    pub slots: u32,
    /// Higher runs first.
    pub priority: i64,
    /// When it was queued.
    pub queued_at: f64,
    /// Its queue deadline.
    pub expires_at: f64,
    /// The job's config digest when it was queued (a changed job cancels
    /// the entries queued under the old one).
    pub digest: String,
    /// The claim running it (`node#token:nonce`), while running.
    #[serde(default)]
    pub owner: Option<String>,
    /// How to launch it.
    #[serde(default)]
    pub payload: Payload,
    /// When its running lease lapses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<f64>,
    /// Why it ended (or went back to the queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<f64>,
    /// Keys this version does not use, kept as read.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Entry {
    /// A DAG task's entry that ended unseen by its DAG scheduler: kept,
    /// and counted against the backlog, until it is observed.
    fn unobserved_task(&self) -> bool {
        matches!(self.state, EntryState::Cancelled | EntryState::Expired)
            && self.payload.kind.as_deref() == Some("task")
            && !self.rest.get("observed").is_some_and(truthy)
    }

    /// A job's run (not a DAG task's).
    pub fn is_job(&self) -> bool {
        self.payload.kind.as_deref() == Some("job")
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Admission order: higher priority first, then earlier queued, then key.
pub fn queue_order(a: &Entry, b: &Entry) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then(a.queued_at.total_cmp(&b.queued_at))
        .then(a.id.cmp(&b.id))
}

/// One pool's document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolDoc {
    /// The capacity admission works against (the configured one, once
    /// the work admitted under an older one has drained).
    pub slots: u32,
    /// Every entry by key.
    pub entries: BTreeMap<String, Entry>,
    /// Keys this version does not use (retry generations), kept as read.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// What a claim in a dispatch pass took: the entry now running.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The entry, as it is now (running, with its owner and lease).
    pub entry: Entry,
}

/// What one dispatch pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dispatch {
    /// Entries admitted in order, each now running under `owner`.
    pub claimed: Vec<Entry>,
    /// Entries cancelled because their job changed (key, job).
    pub cancelled: Vec<(String, String)>,
    /// Why the head that stopped the pass waits (None: the queue is
    /// empty).
    pub blocked: Option<Blocked>,
}

/// Why the queue's head was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocked {
    /// It needs more slots than are free.
    Capacity {
        /// The head's key.
        key: String,
        /// Slots it needs.
        needs: u32,
        /// Slots free.
        free: u32,
    },
    /// This node may not run it now (another node's, paused, gated,
    /// Forbid with an instance still running, a DAG task).
    NotHere {
        /// The head's key.
        key: String,
    },
}

impl PoolDoc {
    /// A fresh document for a pool of `slots`.
    pub fn new(slots: u32) -> PoolDoc {
        PoolDoc {
            slots,
            entries: BTreeMap::new(),
            rest: Map::new(),
        }
    }

    /// Slots held by running entries.
    pub fn used(&self) -> u32 {
        self.entries
            .values()
            .filter(|e| e.state == EntryState::Running)
            .map(|e| e.slots)
            .sum()
    }

    /// Slots free for admission (none when over capacity).
    pub fn free(&self) -> u32 {
        self.slots.saturating_sub(self.used())
    }

    /// Entries waiting.
    pub fn queued(&self) -> usize {
        self.entries
            .values()
            .filter(|e| e.state == EntryState::Queued)
            .count()
    }

    /// The waiting entries in admission order.
    pub fn waiting(&self) -> Vec<&Entry> {
        let mut waiting: Vec<&Entry> = self
            .entries
            .values()
            .filter(|e| e.state == EntryState::Queued)
            .collect();
        waiting.sort_by(|a, b| queue_order(a, b));
        waiting
    }

    /// The entry admission considers next.
    pub fn head(&self) -> Option<&Entry> {
        self.entries
            .values()
            .filter(|e| e.state == EntryState::Queued)
            .min_by(|a, b| queue_order(a, b))
    }

    /// The housekeeping every change starts with: a running claim whose
    /// lease lapsed goes back to the queue (its work may be admitted
    /// again), a waiting entry past its deadline expires, and only the
    /// newest [`ENDED_KEPT`] ended entries stay. True when anything
    /// changed.
    pub fn maintain(&mut self, now: f64) -> bool {
        let mut changed = false;
        for entry in self.entries.values_mut() {
            if entry.state == EntryState::Running && entry.lease_until.is_none_or(|t| t <= now) {
                entry.state = EntryState::Queued;
                entry.owner = None;
                changed = true;
            }
            if entry.state == EntryState::Queued && entry.expires_at <= now {
                entry.state = EntryState::Expired;
                entry.reason = Some(QUEUE_TIMEOUT.into());
                entry.finished_at = Some(now);
                changed = true;
            }
        }
        let mut ended: Vec<(f64, String)> = self
            .entries
            .values()
            .filter(|e| e.state.ended() && !e.unobserved_task())
            .map(|e| (e.finished_at.unwrap_or(0.0), e.id.clone()))
            .collect();
        if ended.len() > ENDED_KEPT {
            ended.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
            for (_, key) in &ended[ENDED_KEPT..] {
                self.entries.remove(key);
            }
            changed = true;
        }
        changed
    }

    /// Switches to the configured capacity once nothing admitted or
    /// queued under the stored one is left (the drain of a capacity
    /// change). True when it switched.
    pub fn adopt_capacity(&mut self, configured: u32) -> bool {
        if self.slots == configured || self.entries.values().any(|e| !e.state.ended()) {
            return false;
        }
        self.slots = configured;
        true
    }

    /// Queues `request` (or finds the entry already queued under its
    /// key). Refused while the pool drains for a capacity change, and
    /// when the waiting work is at `maxQueued`.
    pub fn enqueue(
        &mut self,
        conf: PoolConf,
        request: &EnqueueRequest,
        now: f64,
    ) -> Result<Entry, PoolError> {
        if let Some(old) = self.entries.get(&request.key) {
            return Ok(old.clone());
        }
        if self.slots != conf.slots {
            return Err(PoolError::Draining);
        }
        let backlog = self
            .entries
            .values()
            .filter(|e| e.state == EntryState::Queued || e.unobserved_task())
            .count();
        if backlog >= conf.max_queued as usize {
            return Err(PoolError::Full);
        }
        let entry = Entry {
            id: request.key.clone(),
            job: request.job.clone(),
            state: EntryState::Queued,
            slots: request.slots,
            priority: request.priority,
            queued_at: now,
            expires_at: now + request.timeout,
            digest: request.digest.clone(),
            owner: None,
            payload: request.payload.clone(),
            lease_until: None,
            reason: None,
            finished_at: None,
            rest: Map::new(),
        };
        self.entries.insert(entry.id.clone(), entry.clone());
        Ok(entry)
    }

    /// Admits heads while they fit, in order, up to [`DISPATCH_BATCH`]:
    /// the head waits until all its slots are free, and the entries
    /// behind it wait too (a lower priority waits behind a head this node
    /// may not run). `gates` says, for each head, whether this node runs
    /// it now, leaves it waiting, or cancels it (its job changed); a
    /// claim runs under `owner` with a lease of [`LEASE_SECONDS`].
    pub fn dispatch(&mut self, gates: &mut Eligibility, owner: &str, now: f64) -> Dispatch {
        let mut pass = Dispatch::default();
        while pass.claimed.len() < DISPATCH_BATCH {
            let Some(head) = self.head() else {
                return pass;
            };
            let key = head.id.clone();
            match gates.verdict(head) {
                Verdict::Cancel => {
                    let job = head.job.clone();
                    if let Some(entry) = self.entries.get_mut(&key) {
                        entry.state = EntryState::Cancelled;
                        entry.reason = Some(JOB_CHANGED.into());
                        entry.finished_at = Some(now);
                    }
                    pass.cancelled.push((key, job));
                }
                Verdict::Wait => {
                    pass.blocked = Some(Blocked::NotHere { key });
                    return pass;
                }
                Verdict::Admit => {
                    let (needs, free) = (head.slots, self.free());
                    if needs > free {
                        pass.blocked = Some(Blocked::Capacity { key, needs, free });
                        return pass;
                    }
                    let Some(entry) = self.entries.get_mut(&key) else {
                        return pass;
                    };
                    entry.state = EntryState::Running;
                    entry.owner = Some(owner.to_owned());
                    entry.lease_until = Some(now + LEASE_SECONDS);
                    gates.admitted(entry);
                    pass.claimed.push(entry.clone());
                }
            }
        }
        pass
    }

    /// Extends the lease of the claim `owner` holds on `key`; false when
    /// the claim is gone (lapsed and re-queued, re-admitted elsewhere, or
    /// the entry was dropped): its run must stop.
    pub fn renew(&mut self, key: &str, owner: &str, now: f64) -> bool {
        match self.entries.get_mut(key) {
            Some(e) if e.state == EntryState::Running && e.owner.as_deref() == Some(owner) => {
                e.lease_until = Some(now + LEASE_SECONDS);
                true
            }
            _ => false,
        }
    }

    /// Closes the claim `owner` holds on `key` as `state` (its slots are
    /// free again); [`EntryState::Queued`] puts the work back in line.
    /// A claim that is no longer `owner`'s is left alone. True when it
    /// changed.
    pub fn finish(
        &mut self,
        key: &str,
        owner: &str,
        state: EntryState,
        reason: Option<&str>,
        now: f64,
    ) -> bool {
        match self.entries.get_mut(key) {
            Some(e) if e.owner.as_deref() == Some(owner) => {
                e.state = state;
                e.reason = reason.map(str::to_owned);
                e.finished_at = Some(now);
                e.owner = None;
                true
            }
            _ => false,
        }
    }

    /// Cancels waiting entry `key` (an operator's request). One already
    /// cancelled is answered as it is.
    pub fn cancel(&mut self, key: &str, reason: &str, now: f64) -> Result<Entry, PoolError> {
        let entry = self.entries.get_mut(key).ok_or(PoolError::NotFound)?;
        match entry.state {
            EntryState::Cancelled => {}
            EntryState::Queued => {
                entry.state = EntryState::Cancelled;
                entry.reason = Some(reason.to_owned());
                entry.finished_at = Some(now);
            }
            _ => return Err(PoolError::NotWaiting),
        }
        Ok(entry.clone())
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
