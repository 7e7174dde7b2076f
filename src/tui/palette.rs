//! The command palette (Ctrl-K): the dashboard's actions and each job's,
//! narrowed by a fuzzy match on what is typed.

use super::app::{App, Overlay, Tab, Tone};
use super::settings::Row;
use super::worker::{Action, Command};
use std::time::Instant;

/// What a palette row does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Do {
    /// Poll now.
    Refresh,
    /// Open or close a panel.
    Toggle(Overlay),
    /// The wallboard on or off.
    Wall,
    /// Open the token prompt.
    Token,
    /// Put the cursor in the filter.
    Filter,
    /// Next hue.
    Theme,
    /// Dark and light.
    Flip,
    /// Next refresh interval.
    Poll,
    /// ASCII glyphs on or off.
    Ascii,
    /// A settings row changed (`settings.rs`).
    Setting(super::settings::Row),
    /// Open a job's drawer.
    Open(String),
    /// A job action.
    Act(Action, String),
    /// The job actions panel over the failing jobs.
    Actions,
    /// Put this text on the clipboard.
    Copy(String),
}

/// One row.
#[derive(Debug, Clone)]
pub struct Item {
    /// What it says.
    pub label: String,
    /// What it does.
    pub action: Do,
}

/// How well `query` matches `label`: a substring scores by how early it
/// starts (100 at the start), the letters in order anywhere score 1, no
/// match 0. An empty query matches everything with 1.
pub fn score(query: &str, label: &str) -> u32 {
    let query = query.to_lowercase();
    let label = label.to_lowercase();
    if query.is_empty() {
        return 1;
    }
    if let Some(at) = label.find(&query) {
        let chars = label[..at].chars().count() as u32;
        return 100u32.saturating_sub(chars).max(2);
    }
    let mut wanted = query.chars().peekable();
    for c in label.chars() {
        if wanted.peek() == Some(&c) {
            wanted.next();
        }
    }
    u32::from(wanted.peek().is_none())
}

/// Every row, dashboard actions first, then each job's.
fn items(app: &App) -> Vec<Item> {
    let item = |label: &str, action: Do| Item {
        label: label.to_owned(),
        action,
    };
    let mut out = vec![
        item("Refresh now", Do::Refresh),
        item("Toggle cluster panel", Do::Toggle(Overlay::Cluster)),
        item("Toggle node resources", Do::Toggle(Overlay::Node)),
        item("Toggle schedule load", Do::Toggle(Overlay::Load)),
        item("Toggle week calendar", Do::Toggle(Overlay::Calendar)),
        item("Toggle fleet view", Do::Toggle(Overlay::Fleet)),
        item("Toggle activity heatmap", Do::Toggle(Overlay::Heatmap)),
        item("Toggle upcoming runs", Do::Toggle(Overlay::Upcoming)),
        item("Toggle state inspector", Do::Toggle(Overlay::State)),
        item("Schedule preview", Do::Toggle(Overlay::Sandbox)),
        item("Incident timeline", Do::Toggle(Overlay::Timeline)),
        item("Review actions for failing jobs", Do::Actions),
        item("Open settings", Do::Toggle(Overlay::Settings)),
        item("Toggle wallboard", Do::Wall),
        item("Keyboard shortcuts", Do::Toggle(Overlay::Help)),
        item("Set access token", Do::Token),
        item("Focus filter", Do::Filter),
        item("Cycle theme", Do::Theme),
        item("Toggle light / dark", Do::Flip),
        item("Cycle refresh interval", Do::Poll),
        item("Toggle ASCII glyphs", Do::Ascii),
        item("Cycle color vision mode", Do::Setting(Row::ColorVision)),
        item("Toggle compact density", Do::Setting(Row::Compact)),
        item("Toggle startup checks", Do::Setting(Row::StartupChecks)),
    ];
    if let Some(version) = &app.version {
        out.push(item("Copy version", Do::Copy(version.clone())));
    }
    if let Some(id) = &app.job_set_id {
        out.push(item("Copy job-set ID", Do::Copy(id.clone())));
    }
    for job in &app.jobs {
        let name = super::text::cell(&job.name);
        out.push(item(&format!("Open {name}"), Do::Open(job.name.clone())));
        if job.enabled && !job.running {
            out.push(item(
                &format!("Run {name}"),
                Do::Act(Action::Start, job.name.clone()),
            ));
        }
        if job.running {
            out.push(item(
                &format!("Cancel {name}"),
                Do::Act(Action::Cancel, job.name.clone()),
            ));
        }
        match &job.paused {
            Some(Some(_)) => out.push(item(
                &format!("Resume {name}"),
                Do::Act(Action::Resume, job.name.clone()),
            )),
            Some(None) => out.push(item(
                &format!("Pause {name}"),
                Do::Act(Action::Pause, job.name.clone()),
            )),
            None => {}
        }
    }
    out
}

/// The rows matching `query`, best first (ties keep their order).
pub fn matches(app: &App, query: &str) -> Vec<Item> {
    let mut scored: Vec<(u32, usize, Item)> = items(app)
        .into_iter()
        .enumerate()
        .map(|(i, item)| (score(query, &item.label), i, item))
        .filter(|(s, _, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, item)| item).collect()
}

/// Carries out a row.
pub fn run(app: &mut App, action: &Do, now: Instant) {
    match action {
        Do::Refresh => app.send(Command::Refresh),
        Do::Toggle(overlay) => app.toggle(*overlay),
        Do::Wall => app.wall = !app.wall,
        Do::Token => {
            app.token_input.clear();
            app.open(Overlay::Token);
        }
        Do::Filter => app.focus = Some(super::app::Focus::Filter),
        Do::Theme => app.theme = app.theme.next_hue(),
        Do::Flip => app.theme = app.theme.flipped(),
        Do::Poll => app.cycle_poll(now),
        Do::Ascii => {
            app.ascii = !app.ascii;
            let word = if app.ascii { "on" } else { "off" };
            app.toast(Tone::Info, format!("ASCII glyphs {word}"), now);
        }
        Do::Setting(row) => app.palette_setting(*row, now),
        Do::Open(name) => app.open_drawer(name, Tab::Logs),
        Do::Act(action, name) => app.send(Command::Act(*action, name.clone())),
        Do::Actions => app.open_actions(app.failing_names(), "failing jobs"),
        Do::Copy(text) => {
            app.effect(super::app::Effect::Copy(text.clone()));
            app.toast(Tone::Ok, "copied", now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_prefer_early_substrings() {
        assert_eq!(score("", "anything"), 1);
        assert_eq!(score("run", "Run backup"), 100);
        assert_eq!(score("backup", "Run backup"), 96);
        assert_eq!(score("rbk", "Run backup"), 1);
        assert_eq!(score("zz", "Run backup"), 0);
        assert!(score("run", "Run backup") > score("run", "Cancel run-it"));
    }
}
