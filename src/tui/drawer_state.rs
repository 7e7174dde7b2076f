//! The job drawer's life: opening it (and its log tail), closing it,
//! asking for what each tab shows once, asking again after the job
//! finished a run, and filing the answers and the tail's events. The
//! drawer's state itself is [`Drawer`] in `app.rs`.

use super::app::{wall_clock, App, Drawer, Focus, Load, Tab};
use super::logs::LogBuffer;
use super::worker::{Command, LogEvent};
use serde_json::Value;

impl App {
    /// Opens the drawer on `job` (closing one open on another).
    pub fn open_drawer(&mut self, job: &str, tab: Tab) {
        let generation = self.next_generation;
        self.next_generation += 1;
        self.drawer = Some(Drawer {
            job: job.to_owned(),
            tab,
            logs: LogBuffer::new(),
            generation,
            log_scroll: 0,
            search: String::new(),
            search_at: 0,
            scroll: 0,
            runs: Load::Idle,
            resources: Load::Idle,
            preview: Load::Idle,
            seen_finish: self.last_finish(job),
        });
        if self.focus == Some(Focus::LogSearch) {
            self.focus = None;
        }
        self.send(Command::Tail {
            job: Some(job.to_owned()),
            generation,
        });
        self.load_tab();
    }

    /// Closes the drawer and its tail.
    pub fn close_drawer(&mut self) {
        if self.drawer.take().is_some() {
            self.send(Command::Tail {
                job: None,
                generation: 0,
            });
        }
        if self.focus == Some(Focus::LogSearch) {
            self.focus = None;
        }
    }

    fn last_finish(&self, job: &str) -> Option<String> {
        self.job(job)
            .and_then(|j| j.last_run.as_ref())
            .and_then(|r| r.finished_at.clone())
    }

    /// Asks for what the drawer's tab shows, when not asked yet.
    pub fn load_tab(&mut self) {
        let Some(drawer) = &self.drawer else { return };
        let job = drawer.job.clone();
        let tab = drawer.tab;
        let idle = |load: &Load| matches!(load, Load::Idle);
        let command = match tab {
            Tab::History if idle(&drawer.runs) => Some(Command::Runs(job)),
            Tab::Resources if idle(&drawer.resources) => Some(Command::Resources(job)),
            Tab::Schedule if idle(&drawer.preview) => self.preview_command(&job),
            _ => None,
        };
        if let Some(command) = command {
            if let Some(drawer) = &mut self.drawer {
                match tab {
                    Tab::History => drawer.runs = Load::Loading,
                    Tab::Resources => drawer.resources = Load::Loading,
                    _ => drawer.preview = Load::Loading,
                }
            }
            self.send(command);
        }
    }

    /// The preview request for a job's schedule (its resolved `H` form
    /// seeded with its name, in its zone), once the job is known.
    fn preview_command(&self, name: &str) -> Option<Command> {
        let job = self.job(name)?;
        if job.schedule.trim().is_empty() {
            return None;
        }
        let mut query = vec![
            ("expr".to_owned(), job.schedule.trim().to_owned()),
            ("seed".to_owned(), job.name.clone()),
            ("limit".to_owned(), "8".to_owned()),
        ];
        if let Some(tz) = job.timezone.as_ref().filter(|t| !t.is_empty()) {
            query.push(("tz".to_owned(), tz.clone()));
        }
        Some(Command::Preview {
            job: job.name.clone(),
            query,
        })
    }

    /// After a poll: reload what the drawer shows when its job finished a
    /// run since, and the live resources while it runs.
    pub(super) fn refresh_drawer(&mut self) {
        let Some(drawer) = &self.drawer else { return };
        let name = drawer.job.clone();
        let finish = self.last_finish(&name);
        let running = self.job(&name).is_some_and(|j| j.running);
        let changed = finish != drawer.seen_finish;
        let tab = drawer.tab;
        let preview_idle = matches!(drawer.preview, Load::Idle);
        if let Some(drawer) = &mut self.drawer {
            drawer.seen_finish = finish;
            if changed {
                drawer.runs = Load::Idle;
                drawer.resources = Load::Idle;
            }
            if running && tab == Tab::Resources && !matches!(drawer.resources, Load::Loading) {
                drawer.resources = Load::Idle;
            }
        }
        if changed || tab == Tab::Resources || (tab == Tab::Schedule && preview_idle) {
            self.load_tab();
        }
    }

    pub(super) fn drawer_load(
        &mut self,
        job: &str,
        slot: fn(&mut Drawer) -> &mut Load,
        answer: Result<Value, String>,
    ) {
        if let Some(drawer) = self.drawer.as_mut().filter(|d| d.job == job) {
            *slot(drawer) = Load::Done(answer);
        }
    }

    pub(super) fn log_event(&mut self, generation: u64, event: LogEvent) {
        if self.merged.take(generation, &event, wall_clock()) {
            return;
        }
        let Some(drawer) = self.drawer.as_mut().filter(|d| d.generation == generation) else {
            return;
        };
        let at = wall_clock();
        let logs = &mut drawer.logs;
        let before = logs.entries.len();
        match event {
            LogEvent::Attach(new_run) => logs.attach(new_run),
            LogEvent::Line(stream, line) => logs.line(&stream, &line, at),
            LogEvent::End(reason) => logs.end(reason.as_deref(), at),
            LogEvent::Skipped(n) => logs.skipped(n, at),
            LogEvent::Failed(why) => logs.fail(&why),
        }
        // Scrolled up: stay on the same lines while new ones arrive.
        if drawer.log_scroll > 0 {
            let grown = logs.entries.len().saturating_sub(before);
            drawer.log_scroll += grown;
        }
    }
}
