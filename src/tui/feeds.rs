//! The routes the extra panels read (schedule load, fleet, activity, the
//! state store), asked only while a panel that shows them is open: once
//! when it opens, then after answered polls, no more often than each
//! route's own pace (a fleet-wide schedule walk or every job's run list is
//! not worth asking every three seconds). What asks them is in
//! `polling.rs`.

use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A route a panel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feed {
    /// `GET /schedule/pressure`: the next 24 hours' fires by hour and minute.
    Pressure,
    /// `GET /schedule/duplicates`: groups of jobs firing together.
    Duplicates,
    /// `GET /schedule/suggest`: the least-loaded minute.
    Suggest,
    /// `GET /fleet`: every gossip node's jobs.
    Fleet,
    /// `GET /activity`: every job's recent runs in one answer.
    Activity,
    /// `GET /state`: the durable store's inventory.
    State,
}

impl Feed {
    /// The path and query asked.
    pub fn path(self) -> &'static str {
        match self {
            Feed::Pressure => "/schedule/pressure?hours=24",
            Feed::Duplicates => "/schedule/duplicates",
            Feed::Suggest => "/schedule/suggest?period=hourly",
            Feed::Fleet => "/fleet",
            Feed::Activity => "/activity?limit=24",
            Feed::State => "/state",
        }
    }

    /// The shortest time between two asks while the panel stays open.
    pub fn pace(self) -> Duration {
        match self {
            Feed::Pressure | Feed::Duplicates | Feed::Suggest => Duration::from_secs(60),
            Feed::Activity => Duration::from_secs(30),
            Feed::State => Duration::from_secs(10),
            Feed::Fleet => Duration::ZERO,
        }
    }
}

/// One route's last answer and when it was asked.
#[derive(Debug, Clone, Default)]
struct Slot {
    answer: Option<Result<Value, String>>,
    asked: Option<Instant>,
    waiting: bool,
}

/// The answers the panels show.
#[derive(Debug, Clone, Default)]
pub struct Feeds {
    slots: HashMap<Feed, Slot>,
    /// The state inspector's chosen stream or namespace (an index into
    /// its targets).
    pub sel: usize,
    /// The stream or namespace read: its path, and the answer once in.
    pub detail: Option<(String, Option<Result<Value, String>>)>,
}

impl Feeds {
    /// The last answer of `feed`: `None` before the first.
    pub fn get(&self, feed: Feed) -> Option<&Result<Value, String>> {
        self.slots.get(&feed).and_then(|s| s.answer.as_ref())
    }

    /// Stores an answer.
    pub fn put(&mut self, feed: Feed, answer: Result<Value, String>) {
        let slot = self.slots.entry(feed).or_default();
        slot.answer = Some(answer);
        slot.waiting = false;
    }

    /// Stores the answer for a state read, unless another was asked since.
    pub fn put_detail(&mut self, path: &str, answer: Result<Value, String>) {
        if let Some((asked, slot)) = &mut self.detail {
            if asked == path {
                *slot = Some(answer);
            }
        }
    }

    /// Whether `feed` should be asked now: not while an ask is out, and
    /// not sooner than its pace after the last (`None`: at once).
    pub(super) fn due(&self, feed: Feed, now: Option<Instant>) -> bool {
        let Some(slot) = self.slots.get(&feed) else {
            return true;
        };
        if slot.waiting {
            return false;
        }
        match (now, slot.asked) {
            (Some(now), Some(asked)) => now.saturating_duration_since(asked) >= feed.pace(),
            _ => true,
        }
    }

    pub(super) fn asked(&mut self, feed: Feed, now: Instant) {
        let slot = self.slots.entry(feed).or_default();
        slot.asked = Some(now);
        slot.waiting = true;
    }
}

/// The text of a failed answer or of one not in yet, for a panel's body.
pub fn pending<'a>(
    answer: Option<&'a Result<Value, String>>,
    what: &str,
) -> Result<&'a Value, String> {
    match answer {
        None => Err(format!("waiting for {what}…")),
        Some(Err(why)) => Err(format!("{what}: {why}")),
        Some(Ok(v)) => Ok(v),
    }
}
