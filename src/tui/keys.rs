//! What each key does. The order of the checks is the web page's: the
//! token prompt and the palette take every key while open, `Esc` closes
//! the top thing, a focused text field takes typing, then the panel on
//! top, then the drawer, then the board.

use super::app::{App, Effect, Focus, Overlay, Tab, Tone};
use super::palette;
use super::worker::{Action, Command};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::time::{Duration, Instant};

/// The refresh intervals `Cycle refresh interval` steps through.
pub const POLL_CHOICES: [Option<u64>; 6] = [Some(1), Some(2), Some(3), Some(5), Some(10), None];

/// A key as the handlers read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Key {
    Char(char),
    Ctrl(char),
    Enter,
    Esc,
    Backspace,
    Tab,
    BackTab,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    Other,
}

fn read(event: KeyEvent) -> Key {
    let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
    match event.code {
        KeyCode::Char(c) if ctrl => Key::Ctrl(c.to_ascii_lowercase()),
        // Alt+key means nothing here (and an Escape typed fast before a
        // key reads as one).
        KeyCode::Char(_) if event.modifiers.contains(KeyModifiers::ALT) => Key::Other,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => Key::Other,
    }
}

/// Edits `text` with `key`; whether the key was an edit.
fn edit(text: &mut String, key: Key) -> bool {
    match key {
        Key::Backspace => {
            text.pop();
            true
        }
        Key::Ctrl('u') => {
            text.clear();
            true
        }
        Key::Char(c) if !c.is_control() => {
            text.push(c);
            true
        }
        _ => false,
    }
}

impl App {
    /// Takes one key press.
    pub fn key(&mut self, event: KeyEvent, now: Instant) {
        if event.kind == KeyEventKind::Release {
            return;
        }
        let key = read(event);
        if key == Key::Ctrl('c') {
            self.quit = true;
            return;
        }
        if self.intercept(now) {
            return;
        }
        match self.top() {
            Some(Overlay::Token) => return self.token_key(key, now),
            Some(Overlay::Palette) => return self.palette_key(key, now),
            Some(Overlay::Sandbox) if !matches!(key, Key::Ctrl('k') | Key::Ctrl('p')) => {
                return self.sandbox_key(key);
            }
            _ => {}
        }
        if matches!(key, Key::Ctrl('k') | Key::Ctrl('p')) {
            self.palette_input.clear();
            self.palette_sel = 0;
            self.open(Overlay::Palette);
            return;
        }
        if key == Key::Esc {
            return self.close_topmost();
        }
        match self.focus {
            Some(Focus::Filter) => return self.filter_key(key),
            Some(Focus::LogSearch) => return self.search_key(key),
            None => {}
        }
        if key == Key::Char('q') {
            self.quit = true;
            return;
        }
        // The panel's `a` is stop sending, not the alarm's.
        if self.top() == Some(Overlay::Actions) {
            return self.actions_key(key);
        }
        match key {
            Key::Char('i') if matches!(self.top(), None | Some(Overlay::Timeline)) => {
                self.toggle(Overlay::Timeline);
                return;
            }
            Key::Char('m') if matches!(self.top(), None | Some(Overlay::Merged)) => {
                return self.toggle_merged(now);
            }
            Key::Char('c') if self.top() == Some(Overlay::Merged) => {
                return self.clear_merged();
            }
            Key::Char('x') if self.top() == Some(Overlay::Merged) => {
                return self.drop_merged(now);
            }
            Key::Char('a') => {
                if self.alarm.ack() {
                    self.toast(Tone::Info, "◔ alarm acknowledged", now);
                }
                return;
            }
            _ => {}
        }
        if let Some(top) = self.top() {
            return self.panel_key(top, key);
        }
        if self.drawer.is_some() {
            return self.drawer_key(key, now);
        }
        self.board_key(key, now);
    }

    fn close_topmost(&mut self) {
        if self.focus.is_some() {
            self.focus = None;
        } else if let Some(top) = self.top() {
            self.close(top);
        } else if self.drawer.is_some() {
            self.close_drawer();
        } else {
            self.wall = false;
        }
    }

    fn token_key(&mut self, key: Key, now: Instant) {
        match key {
            Key::Enter => self.save_token(now),
            Key::Esc => {
                self.token_input.clear();
                self.close(Overlay::Token);
            }
            _ => {
                edit(&mut self.token_input, key);
            }
        }
    }

    fn palette_key(&mut self, key: Key, now: Instant) {
        match key {
            Key::Esc => self.close(Overlay::Palette),
            Key::Down => self.palette_sel += 1,
            Key::Up => self.palette_sel = self.palette_sel.saturating_sub(1),
            Key::Enter => {
                let items = palette::matches(self, &self.palette_input);
                let chosen = items
                    .get(self.palette_sel.min(items.len().saturating_sub(1)))
                    .cloned();
                self.close(Overlay::Palette);
                if let Some(item) = chosen {
                    palette::run(self, &item.action, now);
                }
            }
            _ => {
                if edit(&mut self.palette_input, key) {
                    self.palette_sel = 0;
                }
            }
        }
    }

    /// The sandbox's row takes the typing; each edit asks the worker
    /// (which waits for a pause) about the new text.
    fn sandbox_key(&mut self, key: Key) {
        match key {
            Key::Esc => self.close(Overlay::Sandbox),
            _ => {
                let before = self.sandbox.expr().map(str::to_owned);
                if edit(&mut self.sandbox.input, key) {
                    let after = self.sandbox.expr().map(str::to_owned);
                    if let Some(expr) = after.filter(|a| before.as_ref() != Some(a)) {
                        self.send(Command::Sandbox(expr));
                    }
                }
            }
        }
    }

    fn filter_key(&mut self, key: Key) {
        match key {
            Key::Enter | Key::Tab => self.focus = None,
            _ => {
                if edit(&mut self.filter, key) {
                    self.recompute_view();
                }
            }
        }
    }

    fn search_key(&mut self, key: Key) {
        let Some(drawer) = &mut self.drawer else {
            self.focus = None;
            return;
        };
        match key {
            Key::Enter => {
                self.focus = None;
                drawer.search_at = 0;
                self.jump_to_match(0);
            }
            _ => {
                if edit(&mut drawer.search, key) {
                    drawer.search_at = 0;
                }
            }
        }
    }

    fn panel_key(&mut self, top: Overlay, key: Key) {
        if top == Overlay::Settings {
            return self.settings_key(key);
        }
        if top == Overlay::Timeline && self.timeline_key(key) {
            return;
        }
        match key {
            Key::Char('?') if top == Overlay::Help => self.close(Overlay::Help),
            Key::Char('j') | Key::Down if top == Overlay::State => self.feeds.sel += 1,
            Key::Char('k') | Key::Up if top == Overlay::State => {
                self.feeds.sel = self.feeds.sel.saturating_sub(1);
            }
            Key::Enter if top == Overlay::State => self.read_state(),
            Key::PageUp if top == Overlay::Merged => self.merged.scroll_by(10),
            Key::PageDown if top == Overlay::Merged => self.merged.scroll_by(-10),
            Key::End if top == Overlay::Merged => self.merged.scroll = 0,
            Key::Char('j') | Key::Down if top == Overlay::Merged => self.merged.choose(1),
            Key::Char('k') | Key::Up if top == Overlay::Merged => self.merged.choose(-1),
            Key::Char('j') | Key::Down => self.panel_scroll += 1,
            Key::Char('k') | Key::Up => self.panel_scroll = self.panel_scroll.saturating_sub(1),
            Key::PageDown => self.panel_scroll += 10,
            Key::PageUp => self.panel_scroll = self.panel_scroll.saturating_sub(10),
            Key::Home => self.panel_scroll = 0,
            Key::Char('g') => self.send(Command::Refresh),
            Key::Char('f') if top == Overlay::Fleet => self.fleet_failing = !self.fleet_failing,
            _ => {}
        }
    }

    fn board_key(&mut self, key: Key, now: Instant) {
        let rows = self.view.len();
        match key {
            Key::Char('j') | Key::Down if rows > 0 => self.select((self.sel + 1) % rows),
            Key::Char('k') | Key::Up if rows > 0 => self.select((self.sel + rows - 1) % rows),
            Key::PageDown if rows > 0 => self.select((self.sel + 10).min(rows - 1)),
            Key::PageUp => self.select(self.sel.saturating_sub(10)),
            Key::Home => self.select(0),
            Key::End => self.select(rows.saturating_sub(1)),
            Key::Char('/') => self.focus = Some(Focus::Filter),
            Key::Char('?') => self.open(Overlay::Help),
            Key::Char('w') => self.wall = !self.wall,
            Key::Char('g') => {
                self.send(Command::Refresh);
                self.toast(Tone::Info, "refreshing", now);
            }
            Key::Char('t') => {
                self.theme = self.theme.next_hue();
                self.toast(Tone::Info, format!("theme: {}", self.theme.name()), now);
            }
            Key::Char('T') => self.theme = self.theme.flipped(),
            Key::Enter => {
                if let Some(name) = self.selected_job().map(|j| j.name.clone()) {
                    self.open_drawer(&name, Tab::Logs);
                }
            }
            Key::Char('r') => {
                let ready = self
                    .selected_job()
                    .filter(|j| j.enabled && !j.running)
                    .map(|j| j.name.clone());
                if let Some(name) = ready {
                    self.send(Command::Act(Action::Start, name));
                }
            }
            Key::Char('x') => {
                let running = self
                    .selected_job()
                    .filter(|j| j.running)
                    .map(|j| j.name.clone());
                if let Some(name) = running {
                    self.send(Command::Act(Action::Cancel, name));
                }
            }
            Key::Char('p') => self.pause_selected(),
            Key::Char('c') => {
                if let Some(command) = self.selected_job().map(|j| j.command.clone()) {
                    self.effect(Effect::Copy(command));
                    self.toast(Tone::Ok, "copied the command", now);
                }
            }
            Key::Char('s') => {
                self.sort = self.sort.next();
                self.recompute_view();
                self.toast(Tone::Info, format!("sort: {}", self.sort.name()), now);
            }
            Key::Char('S') => {
                self.descending = !self.descending;
                self.recompute_view();
                let arrow = if self.descending { "↓" } else { "↑" };
                self.toast(
                    Tone::Info,
                    format!("sort: {} {arrow}", self.sort.name()),
                    now,
                );
            }
            Key::Char('f') => {
                self.segment = self.segment.next();
                self.recompute_view();
            }
            _ => {}
        }
    }

    /// `p`: pause a running-or-idle job, resume a paused one; nothing
    /// against a daemon whose `/jobs` knows no pauses.
    fn pause_selected(&mut self) {
        let Some(job) = self.selected_job() else {
            return;
        };
        let Some(paused) = &job.paused else { return };
        let action = if paused.is_some() {
            Action::Resume
        } else {
            Action::Pause
        };
        let name = job.name.clone();
        self.send(Command::Act(action, name));
    }

    fn select(&mut self, row: usize) {
        self.sel = row;
        self.remember_selection();
    }

    fn drawer_key(&mut self, key: Key, now: Instant) {
        let Some(drawer) = &mut self.drawer else {
            return;
        };
        let step = match key {
            Key::Right | Key::Tab => Some(1),
            Key::Left | Key::BackTab => Some(-1),
            _ => None,
        };
        if let Some(step) = step {
            drawer.tab = drawer.tab.step(step);
            drawer.scroll = 0;
            self.load_tab();
            return;
        }
        let job = drawer.job.clone();
        match key {
            Key::Char('r') => return self.send(Command::Act(Action::Start, job)),
            Key::Char('x') => return self.send(Command::Act(Action::Cancel, job)),
            Key::Char('g') => {
                drawer.runs = super::app::Load::Idle;
                drawer.resources = super::app::Load::Idle;
                drawer.preview = super::app::Load::Idle;
                self.send(Command::Refresh);
                self.load_tab();
                return;
            }
            _ => {}
        }
        if drawer.tab == Tab::Logs {
            return self.logs_key(key, now);
        }
        match key {
            Key::Char('j') | Key::Down => drawer.scroll += 1,
            Key::Char('k') | Key::Up => drawer.scroll = drawer.scroll.saturating_sub(1),
            Key::PageDown => drawer.scroll += 10,
            Key::PageUp => drawer.scroll = drawer.scroll.saturating_sub(10),
            Key::Home => drawer.scroll = 0,
            _ => {}
        }
    }

    fn logs_key(&mut self, key: Key, now: Instant) {
        let Some(drawer) = &mut self.drawer else {
            return;
        };
        let top = drawer.logs.entries.len().saturating_sub(1);
        match key {
            Key::Char('/') => self.focus = Some(Focus::LogSearch),
            Key::Char('j') | Key::Down => drawer.log_scroll = drawer.log_scroll.saturating_sub(1),
            Key::Char('k') | Key::Up => drawer.log_scroll = (drawer.log_scroll + 1).min(top),
            Key::PageDown => drawer.log_scroll = drawer.log_scroll.saturating_sub(10),
            Key::PageUp => drawer.log_scroll = (drawer.log_scroll + 10).min(top),
            Key::End => drawer.log_scroll = 0,
            Key::Home => drawer.log_scroll = top,
            Key::Char('n') => self.jump_to_match(1),
            Key::Char('N') => self.jump_to_match(-1),
            Key::Char('f') => {
                self.follow = !self.follow;
                self.send(Command::Follow(self.follow));
                let word = if self.follow { "on" } else { "off" };
                self.toast(Tone::Info, format!("follow: {word}"), now);
            }
            Key::Char('t') => self.timestamps = !self.timestamps,
            Key::Char('w') => self.wrap = !self.wrap,
            Key::Char('d') => {
                let contents = drawer.logs.export();
                let job = drawer.job.clone();
                self.effect(Effect::SaveLog(job, contents));
            }
            _ => {}
        }
    }

    /// Moves the search cursor `step` matches (0: stay) and scrolls the
    /// log so that match shows.
    fn jump_to_match(&mut self, step: isize) {
        let Some(drawer) = &mut self.drawer else {
            return;
        };
        let needle = drawer.search.trim().to_lowercase();
        let matches = drawer.logs.matches(&needle);
        if matches.is_empty() {
            return;
        }
        let n = matches.len() as isize;
        let at = (drawer.search_at.min(matches.len() - 1) as isize + step).rem_euclid(n) as usize;
        drawer.search_at = at;
        let total = drawer.logs.entries.len();
        drawer.log_scroll = total - 1 - matches[at];
    }

    /// Steps the poll interval to the next choice.
    pub fn cycle_poll(&mut self, now: Instant) {
        let current = self.poll.map(|d| d.as_secs());
        let at = POLL_CHOICES.iter().position(|c| *c == current).unwrap_or(2);
        let next = POLL_CHOICES[(at + 1) % POLL_CHOICES.len()];
        self.poll = next.map(Duration::from_secs);
        self.send(Command::SetPoll(self.poll));
        let text = match next {
            Some(s) => format!("refresh every {s}s"),
            None => "refresh paused (g refreshes)".to_owned(),
        };
        self.toast(Tone::Info, text, now);
    }
}

impl App {
    /// `m`: closes the panel when open; else adds the selected job (up to
    /// four) and opens it, every tail attaching afresh.
    pub(super) fn toggle_merged(&mut self, now: Instant) {
        if self.is_open(Overlay::Merged) {
            return self.close(Overlay::Merged);
        }
        let chosen = self
            .drawer
            .as_ref()
            .map(|d| d.job.clone())
            .or_else(|| self.selected_job().map(|j| j.name.clone()));
        // A job already in the panel is simply shown again.
        let adding = chosen.filter(|name| !self.merged.tails.iter().any(|t| &t.0 == name));
        if let Some(name) = adding {
            if self.merged.tails.len() >= super::merged::MERGED_MAX {
                self.toast(
                    Tone::Warn,
                    format!("live logs is full ({} jobs)", super::merged::MERGED_MAX),
                    now,
                );
            } else {
                self.merged
                    .tails
                    .push((name, 0, super::logs::LogBuffer::new()));
            }
        }
        let mut wanted = Vec::new();
        for (job, generation, logs) in &mut self.merged.tails {
            *generation = self.next_generation;
            self.next_generation += 1;
            *logs = super::logs::LogBuffer::new();
            wanted.push((job.clone(), *generation));
        }
        self.merged.scroll = 0;
        self.send(Command::Merge(wanted));
        self.open(Overlay::Merged);
    }

    /// `x` in the panel: stop tailing the chosen job (the others keep
    /// their streams and lines).
    pub(super) fn drop_merged(&mut self, now: Instant) {
        if let Some((job, generation)) = self.merged.remove_chosen() {
            self.send(Command::Unmerge(generation));
            self.toast(
                Tone::Info,
                format!("live logs: dropped {}", super::text::cell(&job)),
                now,
            );
        }
    }

    /// `c` in the panel: forget its jobs and close it.
    pub(super) fn clear_merged(&mut self) {
        self.close(Overlay::Merged);
        self.merged.tails.clear();
        self.merged.scroll = 0;
        self.merged.sel = 0;
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
