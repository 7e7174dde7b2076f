//! The routes the extra panels read (schedule load, fleet, activity, the
//! state store), asked only while a panel that shows them is open: once
//! when it opens, then after answered polls, no more often than each
//! route's own pace (a fleet-wide schedule walk or every job's run list is
//! not worth asking every three seconds).

use super::app::{App, Overlay};
use super::worker::Command;
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

    /// The routes `overlay` shows.
    pub fn of(overlay: Overlay) -> &'static [Feed] {
        match overlay {
            Overlay::Load => &[Feed::Pressure, Feed::Duplicates, Feed::Suggest],
            Overlay::Fleet => &[Feed::Fleet],
            Overlay::Heatmap => &[Feed::Activity],
            Overlay::State => &[Feed::State],
            _ => &[],
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

    /// Whether `feed` should be asked now: not while an ask is out, and
    /// not sooner than its pace after the last (`None`: at once).
    fn due(&self, feed: Feed, now: Option<Instant>) -> bool {
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

    fn asked(&mut self, feed: Feed, now: Instant) {
        let slot = self.slots.entry(feed).or_default();
        slot.asked = Some(now);
        slot.waiting = true;
    }
}

/// The text of a failed answer or of one not in yet, for a panel's body.
pub fn pending(answer: Option<&Result<Value, String>>, what: &str) -> Result<Value, String> {
    match answer {
        None => Err(format!("waiting for {what}…")),
        Some(Err(why)) => Err(format!("{what}: {why}")),
        Some(Ok(v)) => Ok(v.clone()),
    }
}

impl App {
    /// Asks for what `overlay` shows (it just opened).
    pub(super) fn open_feeds(&mut self, overlay: Overlay, now: Instant) {
        for &feed in Feed::of(overlay) {
            if self.feeds.due(feed, None) {
                self.feeds.asked(feed, now);
                self.send(Command::Feed(feed));
            }
        }
    }

    /// After an answered poll: asks again what the open panels show, each
    /// at its pace.
    pub(super) fn poll_feeds(&mut self, now: Instant) {
        // The week is walked again from a fresher list, once a minute.
        let stale = self.calendar.as_ref().is_none_or(|w| {
            w.agenda.is_empty() && w.hum.is_empty()
                || super::app::wall_clock() as i64 - w.start >= 60
        });
        if self.is_open(Overlay::Calendar) && stale {
            self.walk_calendar();
        }
        for overlay in self.overlays.clone() {
            for &feed in Feed::of(overlay) {
                if self.feeds.due(feed, Some(now)) {
                    self.feeds.asked(feed, now);
                    self.send(Command::Feed(feed));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::tests::{sent, with_jobs};
    use crate::tui::worker::Update;

    fn feeds_sent(app: &mut App) -> Vec<Feed> {
        sent(app)
            .into_iter()
            .filter_map(|c| match c {
                Command::Feed(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn panels_ask_only_while_open_and_at_their_pace() {
        let mut app = with_jobs(vec![]);
        let t0 = Instant::now();
        // nothing open: a poll asks nothing
        app.update(Update::JobsUnchanged, t0);
        assert!(feeds_sent(&mut app).is_empty());
        app.open(Overlay::Load);
        assert_eq!(
            feeds_sent(&mut app),
            vec![Feed::Pressure, Feed::Duplicates, Feed::Suggest]
        );
        // still out: not asked twice
        app.update(Update::JobsUnchanged, t0 + Duration::from_secs(120));
        assert!(feeds_sent(&mut app).is_empty());
        app.update(Update::Feed(Feed::Pressure, Ok(Value::Null)), t0);
        app.update(Update::JobsUnchanged, t0 + Duration::from_secs(5));
        assert!(feeds_sent(&mut app).is_empty());
        app.update(Update::JobsUnchanged, t0 + Duration::from_secs(120));
        assert_eq!(feeds_sent(&mut app), vec![Feed::Pressure]);
        // the fleet goes at every poll while open, and stops when closed
        app.close(Overlay::Load);
        app.open(Overlay::Fleet);
        assert_eq!(feeds_sent(&mut app), vec![Feed::Fleet]);
        app.update(Update::Feed(Feed::Fleet, Ok(Value::Null)), t0);
        app.update(Update::JobsUnchanged, t0 + Duration::from_secs(121));
        assert_eq!(feeds_sent(&mut app), vec![Feed::Fleet]);
        app.update(Update::Feed(Feed::Fleet, Ok(Value::Null)), t0);
        app.close(Overlay::Fleet);
        app.update(Update::JobsUnchanged, t0 + Duration::from_secs(200));
        assert!(feeds_sent(&mut app).is_empty());
    }
}
