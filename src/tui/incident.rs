//! The incident tools' keys: the timeline's selection (`j`/`k`, `f`
//! failures only, `m` the job actions panel over the incident, `Enter`
//! the selected job's logs) and the job actions panel's (`s` start all,
//! `x` cancel all, `a` stop sending, `y` the writeup). The panel's state
//! and texts are in `actions.rs`; the worker does the sends.

use super::actions;
use super::app::{wall_clock, App, Effect, Overlay, Tab, Tone};
use super::keys::Key;
use super::saver::Saved;
use super::view::{self, Health};
use super::worker::{Action, Command, Sent};
use std::time::Instant;

impl App {
    /// The names of the jobs failing now, in the list's order.
    pub(super) fn failing_names(&self) -> Vec<String> {
        self.jobs
            .iter()
            .filter(|j| view::health(j).0 == Health::Fail)
            .map(|j| j.name.clone())
            .collect()
    }

    /// Opens the job actions panel over `names`, labelled `label` (while
    /// a sweep is on its way, over that sweep's set).
    pub(super) fn open_actions(&mut self, names: Vec<String>, label: &str) {
        self.actions.open(names, label);
        self.open(Overlay::Actions);
    }

    /// A key while the timeline is on top; false when it is not one of
    /// the timeline's own (scrolling and the rest go on as for any panel).
    pub(super) fn timeline_key(&mut self, key: Key) -> bool {
        let rows = super::verdict::timeline(&self.jobs, self.timeline_failing);
        let last = rows.len().saturating_sub(1);
        match key {
            Key::Char('j') | Key::Down => self.timeline_sel = (self.timeline_sel + 1).min(last),
            Key::Char('k') | Key::Up => {
                self.timeline_sel = self.timeline_sel.min(last).saturating_sub(1);
            }
            Key::PageDown => self.timeline_sel = (self.timeline_sel + 10).min(last),
            Key::PageUp => self.timeline_sel = self.timeline_sel.min(last).saturating_sub(10),
            Key::Home => self.timeline_sel = 0,
            Key::End => self.timeline_sel = last,
            Key::Char('f') => {
                self.timeline_failing = !self.timeline_failing;
                self.timeline_sel = 0;
            }
            Key::Char('m') => {
                // The verdict's group, else every failing job.
                let names = super::verdict::incident(&self.jobs);
                self.close(Overlay::Timeline);
                self.open_actions(names, "incident set");
            }
            Key::Enter => {
                if let Some(entry) = rows.get(self.timeline_sel.min(last)) {
                    let name = entry.name.clone();
                    self.close(Overlay::Timeline);
                    self.open_drawer(&name, Tab::Logs);
                }
            }
            _ => return false,
        }
        true
    }

    /// A key while the job actions panel is on top.
    pub(super) fn actions_key(&mut self, key: Key) {
        match key {
            Key::Char('s') => self.sweep(Action::Start),
            Key::Char('x') => self.sweep(Action::Cancel),
            Key::Char('a') if self.actions.stop() => self.send(Command::StopSweep),
            Key::Char('y') => {
                let text = actions::writeup(
                    &self.actions.label,
                    &self.actions.names,
                    |name| self.job(name),
                    self.verdict.as_ref(),
                    wall_clock(),
                );
                // The copy first: it stands even when the file cannot be
                // written (the toast of the save says which).
                self.effect(Effect::Copy(text.clone()));
                self.effect(Effect::SaveIncident(text));
            }
            _ => {}
        }
    }

    fn sweep(&mut self, action: Action) {
        let targets = actions::eligible(action, &self.actions.names, |name| self.job(name));
        if let Some((id, jobs)) = self.actions.begin(action, targets) {
            self.send(Command::Sweep { id, action, jobs });
        }
    }

    /// One send of a sweep answered.
    pub(super) fn swept(&mut self, id: u64, job: &str, sent: Sent) {
        self.actions.answered(id, job, &sent);
    }

    /// A sweep is over: the board shows what it did at once.
    pub(super) fn sweep_ended(&mut self, id: u64, sent: usize, stopped: bool) {
        self.actions.ended(id, sent, stopped);
        self.send(Command::Refresh);
    }

    /// A file written on the writer thread: the toast that says how it
    /// went (saved settings say nothing unless they failed).
    pub(super) fn saved(&mut self, saved: Saved, now: Instant) {
        match saved {
            Saved::Log(Ok(path)) => self.toast(Tone::Ok, format!("saved {}", path.display()), now),
            Saved::Log(Err(err)) => {
                self.toast(Tone::Fail, format!("cannot save the log: {err}"), now)
            }
            Saved::Incident(Ok(path)) => {
                let text = format!("writeup copied and saved: {}", path.display());
                self.toast(Tone::Ok, text, now);
            }
            Saved::Incident(Err(err)) => {
                let text = format!("writeup copied to the clipboard, not saved: {err}");
                self.toast(Tone::Warn, text, now);
            }
            Saved::Prefs(Ok(())) => {}
            Saved::Prefs(Err(err)) => {
                self.toast(Tone::Fail, format!("cannot save the settings: {err}"), now);
            }
        }
    }
}

#[cfg(test)]
#[path = "incident_tests.rs"]
mod tests;
