//! What asks the panels' routes: once when a panel opens, then after
//! each answered poll at each route's pace, and nothing while the panel
//! is closed; the week calendar is walked again at most once a minute.

use super::app::{App, Overlay};
use super::feeds::Feed;
use super::worker::Command;
use super::{boards, calendar};
use std::time::Instant;

/// The routes `overlay` shows.
pub fn feeds_of(overlay: Overlay) -> &'static [Feed] {
    match overlay {
        Overlay::Load => &[Feed::Pressure, Feed::Duplicates, Feed::Suggest],
        Overlay::Fleet => &[Feed::Fleet],
        Overlay::Heatmap => &[Feed::Activity],
        Overlay::State => &[Feed::State],
        _ => &[],
    }
}

impl App {
    /// Asks for what `overlay` shows (it just opened).
    pub(super) fn open_feeds(&mut self, overlay: Overlay, now: Instant) {
        for &feed in feeds_of(overlay) {
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
            for &feed in feeds_of(overlay) {
                if self.feeds.due(feed, Some(now)) {
                    self.feeds.asked(feed, now);
                    self.send(Command::Feed(feed));
                }
            }
        }
    }

    /// The state inspector's Enter: reads the chosen stream's newest
    /// records or namespace's documents.
    pub(super) fn read_state(&mut self) {
        let Some(Ok(data)) = self.feeds.get(Feed::State) else {
            return;
        };
        let targets = boards::state_targets(data);
        let Some(sel) = targets
            .len()
            .checked_sub(1)
            .map(|last| self.feeds.sel.min(last))
        else {
            return;
        };
        let path = targets[sel].1.clone();
        self.feeds.detail = Some((path.clone(), None));
        self.send(Command::Detail(path));
    }

    /// Walks the week from the job list as it stands.
    pub(super) fn walk_calendar(&mut self) {
        self.calendar = Some(calendar::walk(&self.jobs, chrono::Utc::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::tests::{sent, with_jobs};
    use crate::tui::worker::Update;
    use serde_json::Value;
    use std::time::Duration;

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
