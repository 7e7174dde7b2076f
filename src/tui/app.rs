//! The dashboard's state: the jobs as last polled, the board's view of
//! them, the open drawer and panels, the toasts. It takes the worker's
//! updates ([`App::update`]) and the keys ([`App::key`], in `keys.rs`)
//! and answers with [`Effect`]s for the edges to carry out; it does no
//! I/O itself, so tests drive it directly.

use super::logs::LogBuffer;
use super::model::Job;
use super::theme::Theme;
use super::view::{self, Facts, Health, Segment, SortKey};
use super::worker::{Action, Command, Update};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a toast stays.
const TOAST_FOR: Duration = Duration::from_secs(4);

/// A panel over the board (the drawer aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    /// `?`: the keys.
    Help,
    /// The bearer-token prompt.
    Token,
    /// Ctrl-K: the command palette.
    Palette,
    /// The cluster view (`GET /cluster`).
    Cluster,
    /// This node's resources (`GET /node`).
    Node,
    /// The next 24 hours' schedule load (`/schedule/pressure` and kin).
    Load,
    /// The week calendar, walked locally from the job list.
    Calendar,
    /// Every gossip node's jobs (`GET /fleet`).
    Fleet,
    /// Each job's recent runs by hour (`GET /activity`).
    Heatmap,
    /// The next fires, soonest first, from the job list.
    Upcoming,
    /// The durable store's inventory (`GET /state`).
    State,
    /// `i`: each job's latest finish, newest first.
    Timeline,
    /// `m`: up to four jobs' live logs merged.
    Merged,
    /// The settings (palette: "Open settings").
    Settings,
    /// The job actions panel over a set of jobs (palette, or `m` in the
    /// timeline).
    Actions,
    /// The schedule preview sandbox (palette: "Schedule preview").
    Sandbox,
}

/// Which text field takes the typing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    /// The board's filter (`/`).
    Filter,
    /// The Logs tab's search (`/` in the drawer).
    LogSearch,
}

/// The job drawer's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// The live log tail.
    Logs,
    /// Runs with stats.
    History,
    /// CPU and memory.
    Resources,
    /// The schedule explained.
    Schedule,
}

impl Tab {
    /// In order.
    pub const ALL: [Tab; 4] = [Tab::Logs, Tab::History, Tab::Resources, Tab::Schedule];

    /// The tab's title.
    pub fn title(self) -> &'static str {
        match self {
            Tab::Logs => "logs",
            Tab::History => "history",
            Tab::Resources => "resources",
            Tab::Schedule => "schedule",
        }
    }

    /// The tab `step` places on (wrapping).
    pub fn step(self, step: isize) -> Tab {
        let at = Tab::ALL.iter().position(|t| *t == self).unwrap_or(0) as isize;
        let n = Tab::ALL.len() as isize;
        Tab::ALL[((at + step).rem_euclid(n)) as usize]
    }
}

/// A toast's tone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Done.
    Ok,
    /// Refused or nothing to do.
    Warn,
    /// Failed.
    Fail,
    /// For information.
    Info,
}

/// A short message at the bottom right.
#[derive(Debug, Clone)]
pub struct Toast {
    /// Its tone.
    pub tone: Tone,
    /// Its text.
    pub text: String,
    /// When it goes.
    pub until: Instant,
}

/// Something the edges must do.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Send this to the worker.
    Send(Command),
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
    /// Save this job's log to a file in the home directory.
    SaveLog(String, String),
    /// Save this incident writeup to a file in the home directory.
    SaveIncident(String),
}

/// A per-job answer the drawer shows: not asked yet, asked, answered.
#[derive(Debug, Clone, Default)]
pub enum Load {
    /// Not asked for.
    #[default]
    Idle,
    /// Asked for, no answer yet.
    Loading,
    /// The answer (or why there is none).
    Done(Result<Value, String>),
}

/// The job drawer.
#[derive(Debug)]
pub struct Drawer {
    /// The job.
    pub job: String,
    /// The tab shown.
    pub tab: Tab,
    /// The log tail's lines.
    pub logs: LogBuffer,
    /// Tags this drawer's tail.
    pub generation: u64,
    /// Entries scrolled up from the newest (0 follows the end).
    pub log_scroll: usize,
    /// The search text.
    pub search: String,
    /// The match the cursor is on (an index into the matches).
    pub search_at: usize,
    /// Rows scrolled in the other tabs.
    pub scroll: usize,
    /// `GET /jobs/{name}/runs`.
    pub runs: Load,
    /// `GET /jobs/{name}/resources`.
    pub resources: Load,
    /// `GET /schedule/preview` of the job's schedule.
    pub preview: Load,
    /// The last run's finish stamp the loads above saw.
    pub seen_finish: Option<String>,
}

/// How the dashboard starts.
#[derive(Debug, Clone)]
pub struct Options {
    /// Plain-ASCII glyphs.
    pub ascii: bool,
    /// The colors.
    pub theme: Theme,
    /// The poll interval (`None`: paused).
    pub poll: Option<Duration>,
    /// A drawer to open at once.
    pub job: Option<String>,
}

/// The whole state.
#[derive(Debug)]
pub struct App {
    /// Plain-ASCII glyphs.
    pub ascii: bool,
    /// The colors.
    pub theme: Theme,
    /// The poll interval.
    pub poll: Option<Duration>,
    /// The jobs as last polled.
    pub jobs: Vec<Job>,
    /// Where each job is in `jobs`.
    pub by_name: HashMap<String, usize>,
    /// What was read from them once.
    pub facts: Facts,
    /// When the list was answered (countdowns run from then).
    pub fetched: Option<Instant>,
    /// The board's rows (indices into `jobs`).
    pub view: Vec<usize>,
    /// The last poll answered.
    pub connected: bool,
    /// Why the last poll failed.
    pub offline: Option<String>,
    /// The daemon's version.
    pub version: Option<String>,
    /// The job-set id.
    pub job_set_id: Option<String>,
    /// `GET /cluster`.
    pub cluster: Option<Value>,
    /// `GET /node`.
    pub node: Option<Value>,
    /// `GET /node/history`.
    pub node_history: Option<Value>,
    /// The filter text.
    pub filter: String,
    /// The text field taking keys.
    pub focus: Option<Focus>,
    /// The status filter.
    pub segment: Segment,
    /// The sort key.
    pub sort: SortKey,
    /// The sort direction.
    pub descending: bool,
    /// The selected row of the view.
    pub sel: usize,
    /// The first row shown.
    pub offset: usize,
    /// The selected job's name (kept across polls).
    pub selected: Option<String>,
    /// Panels, bottom to top.
    pub overlays: Vec<Overlay>,
    /// The drawer.
    pub drawer: Option<Drawer>,
    /// Log lines with arrival times.
    pub timestamps: bool,
    /// Long log lines wrap.
    pub wrap: bool,
    /// Re-attach the log after a run ends.
    pub follow: bool,
    /// Messages.
    pub toasts: Vec<Toast>,
    /// The token being typed.
    pub token_input: String,
    /// The palette's text.
    pub palette_input: String,
    /// The palette's selected row.
    pub palette_sel: usize,
    /// Rows scrolled in a panel.
    pub panel_scroll: usize,
    /// Leave at the next turn.
    pub quit: bool,
    /// What the extra panels read (asked only while they are open).
    pub feeds: super::feeds::Feeds,
    /// The week calendar, walked when it opens.
    pub calendar: Option<super::calendar::Week>,
    /// The fleet matrix shows only jobs failing somewhere.
    pub fleet_failing: bool,
    /// The wallboard replaces the board.
    pub wall: bool,
    /// The failure alarm `a` acknowledges.
    pub alarm: super::verdict::Alarm,
    /// The verdict bar's headline, read again at each poll.
    pub verdict: Option<super::verdict::Verdict>,
    /// The timeline shows only failures.
    pub timeline_failing: bool,
    /// The timeline's selected row.
    pub timeline_sel: usize,
    /// The job actions panel.
    pub actions: super::actions::Actions,
    /// When a poll last answered (the wallboard's NO SIGNAL).
    pub answered: Option<Instant>,
    /// The preferences file, when there is a place for one.
    pub prefs_path: Option<std::path::PathBuf>,
    /// The live-logs panel.
    pub merged: super::merged::Merged,
    /// The schedule preview sandbox.
    pub sandbox: super::sandbox::Sandbox,
    /// The later settings and the zen, boot and bell state (`ambient.rs`).
    pub ambient: super::ambient::Ambient,
    /// The next tail's generation (drawer and live-logs panel).
    pub(super) next_generation: u64,
    /// What the edges must do.
    effects: Vec<Effect>,
}

impl App {
    /// The dashboard before its first poll.
    pub fn new(options: Options) -> App {
        let mut app = App {
            ascii: options.ascii,
            theme: options.theme,
            poll: options.poll,
            jobs: Vec::new(),
            by_name: HashMap::new(),
            facts: Facts::default(),
            fetched: None,
            view: Vec::new(),
            connected: false,
            offline: None,
            version: None,
            job_set_id: None,
            cluster: None,
            node: None,
            node_history: None,
            filter: String::new(),
            focus: None,
            segment: Segment::All,
            sort: SortKey::Name,
            descending: false,
            sel: 0,
            offset: 0,
            selected: None,
            overlays: Vec::new(),
            drawer: None,
            timestamps: false,
            wrap: false,
            follow: true,
            toasts: Vec::new(),
            token_input: String::new(),
            palette_input: String::new(),
            palette_sel: 0,
            panel_scroll: 0,
            quit: false,
            feeds: Default::default(),
            calendar: None,
            fleet_failing: false,
            wall: false,
            alarm: Default::default(),
            timeline_failing: false,
            timeline_sel: 0,
            actions: Default::default(),
            verdict: None,
            merged: Default::default(),
            sandbox: Default::default(),
            ambient: Default::default(),
            prefs_path: None,
            answered: None,
            next_generation: 1,
            effects: Vec::new(),
        };
        if let Some(job) = options.job {
            app.open_drawer(&job, Tab::Logs);
        }
        app
    }

    /// What the edges must do, oldest first.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// Queues a command for the worker.
    pub(super) fn send(&mut self, command: Command) {
        self.effects.push(Effect::Send(command));
    }

    /// Queues something for the edges to do.
    pub(super) fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    /// Shows a toast from now.
    pub fn toast(&mut self, tone: Tone, text: impl Into<String>, now: Instant) {
        self.toasts.push(Toast {
            tone,
            text: text.into(),
            until: now + TOAST_FOR,
        });
        if self.toasts.len() > 8 {
            self.toasts.remove(0);
        }
    }

    /// Drops the toasts whose time is up; whether any went.
    pub fn expire(&mut self, now: Instant) -> bool {
        let before = self.toasts.len();
        self.toasts.retain(|t| t.until > now);
        before != self.toasts.len()
    }

    /// The panel on top, if any.
    pub fn top(&self) -> Option<Overlay> {
        self.overlays.last().copied()
    }

    /// Whether `overlay` is open.
    pub fn is_open(&self, overlay: Overlay) -> bool {
        self.overlays.contains(&overlay)
    }

    /// Opens `overlay` on top (moving it there when open).
    pub fn open(&mut self, overlay: Overlay) {
        self.overlays.retain(|o| *o != overlay);
        self.overlays.push(overlay);
        self.panel_scroll = 0;
        if overlay == Overlay::Node {
            self.send(Command::NodeHistory);
        }
        if overlay == Overlay::Calendar {
            self.walk_calendar();
        }
        self.open_feeds(overlay, Instant::now());
    }

    /// Closes `overlay`.
    pub fn close(&mut self, overlay: Overlay) {
        if overlay == Overlay::Merged && self.is_open(overlay) {
            self.send(Command::Merge(Vec::new()));
        }
        self.overlays.retain(|o| *o != overlay);
        self.panel_scroll = 0;
    }

    /// Opens or closes `overlay`.
    pub fn toggle(&mut self, overlay: Overlay) {
        if self.is_open(overlay) {
            self.close(overlay);
        } else {
            self.open(overlay);
        }
    }

    /// The job of the selected row.
    pub fn selected_job(&self) -> Option<&Job> {
        self.view.get(self.sel).map(|&i| &self.jobs[i])
    }

    /// A job by name.
    pub fn job(&self, name: &str) -> Option<&Job> {
        self.by_name.get(name).map(|&i| &self.jobs[i])
    }

    /// Seconds to a job's next fire, counted down from the poll.
    pub fn next_in(&self, job: &Job, now: Instant) -> Option<f64> {
        let drift = self
            .fetched
            .map_or(0.0, |f| now.saturating_duration_since(f).as_secs_f64());
        job.scheduled_in.map(|s| s - drift)
    }

    /// Rebuilds the board's rows (after new jobs, a filter or a sort),
    /// keeping the selected job selected when it is still shown.
    pub fn recompute_view(&mut self) {
        self.view = view::compute_view(
            &self.jobs,
            &self.facts,
            &self.filter,
            self.segment,
            self.sort,
            self.descending,
        );
        let keep = self
            .selected
            .as_ref()
            .and_then(|name| self.by_name.get(name))
            .and_then(|&i| self.view.iter().position(|&v| v == i));
        self.sel = match keep {
            Some(at) => at,
            None => self.sel.min(self.view.len().saturating_sub(1)),
        };
        self.remember_selection();
    }

    /// Notes the selected job's name after the selection moved (an empty
    /// view keeps the last one, to find it again when the filter widens).
    pub fn remember_selection(&mut self) {
        if let Some(job) = self.selected_job() {
            self.selected = Some(job.name.clone());
        }
    }

    /// Takes one update from the worker.
    pub fn update(&mut self, update: Update, now: Instant) {
        match update {
            Update::Input(_) => {}
            Update::Jobs(jobs, fetched) => {
                self.take_jobs(jobs, fetched);
                self.answered = Some(now);
                self.poll_feeds(now);
            }
            Update::JobsUnchanged => {
                self.connected = true;
                self.offline = None;
                self.answered = Some(now);
                self.poll_feeds(now);
            }
            Update::Feed(feed, answer) => self.feeds.put(feed, answer),
            Update::Detail(path, answer) => self.feeds.put_detail(&path, answer),
            Update::Offline(why) => {
                self.connected = false;
                self.offline = Some(why);
            }
            Update::Unauthorized => self.unauthorized(),
            Update::Cluster(v) => {
                self.cluster = Some(v);
                self.judge();
            }
            Update::Node(v) => self.node = Some(v),
            Update::NodeHistory(v) => self.node_history = Some(v),
            Update::Meta(version, id) => {
                self.version = version.or(self.version.take());
                self.job_set_id = id.or(self.job_set_id.take());
            }
            Update::Runs(job, answer) => self.drawer_load(&job, |d| &mut d.runs, answer),
            Update::Resources(job, answer) => self.drawer_load(&job, |d| &mut d.resources, answer),
            Update::Preview(job, answer) => self.drawer_load(&job, |d| &mut d.preview, answer),
            Update::Sandbox(expr, answer) => {
                self.sandbox.take(expr, answer);
            }
            Update::Log(generation, event) => self.log_event(generation, event),
            Update::Acted(action, job, answer) => self.acted(action, &job, answer, now),
            Update::Swept(id, job, sent) => self.swept(id, &job, sent),
            Update::SweepEnded(id, sent, stopped) => self.sweep_ended(id, sent, stopped),
            Update::Saved(saved) => self.saved(saved, now),
            Update::Terminate => self.quit = true,
            Update::Boot(check) => self.boot_report(check),
        }
    }

    fn take_jobs(&mut self, jobs: Vec<Job>, fetched: Instant) {
        self.connected = true;
        self.offline = None;
        self.facts = Facts::of(&jobs);
        self.ambient.fresh_failures(self.alarm.observe(&jobs).len());
        self.by_name = jobs
            .iter()
            .enumerate()
            .map(|(i, j)| (j.name.clone(), i))
            .collect();
        self.jobs = jobs;
        self.judge();
        self.fetched = Some(fetched);
        self.recompute_view();
        self.refresh_drawer();
    }

    /// Reads the verdict again from the jobs and the cluster.
    fn judge(&mut self) {
        let alert = super::verdict::cluster_alert(self.cluster.as_ref());
        self.verdict = super::verdict::verdict(&self.jobs, alert.as_ref());
    }

    /// A 401: the token prompt opens (over everything, taking the keys).
    fn unauthorized(&mut self) {
        self.connected = false;
        self.offline = Some("unauthorized".to_owned());
        if !self.is_open(Overlay::Token) {
            self.close(Overlay::Palette);
            self.token_input.clear();
            self.open(Overlay::Token);
        }
    }

    /// The prompt's Enter: the token for the rest of the session, then
    /// everything a 401 stopped is asked again.
    pub fn save_token(&mut self, now: Instant) {
        let token = self.token_input.trim().to_owned();
        self.token_input.clear();
        self.close(Overlay::Token);
        let set = !token.is_empty();
        self.send(Command::SetToken(Some(token).filter(|t| !t.is_empty())));
        self.send(Command::Refresh);
        self.toast(
            Tone::Ok,
            if set {
                "token set for this session"
            } else {
                "token cleared"
            },
            now,
        );
        if let Some(drawer) = &self.drawer {
            let (job, tab) = (drawer.job.clone(), drawer.tab);
            self.open_drawer(&job, tab);
        }
    }

    fn acted(
        &mut self,
        action: Action,
        job: &str,
        answer: Result<(u16, Value), String>,
        now: Instant,
    ) {
        let (status, body) = match answer {
            Err(why) if why == "unauthorized" => return,
            Err(why) => {
                self.toast(Tone::Fail, format!("{} {job}: {why}", action.verb()), now);
                return;
            }
            Ok(answer) => answer,
        };
        let reason = body.get("error").and_then(Value::as_str).map(str::to_owned);
        let (tone, text) = match (action, status) {
            (Action::Start, 200) => (Tone::Ok, format!("started {job}")),
            (Action::Start, 202) => (Tone::Ok, format!("queued {job} in its pool")),
            (Action::Cancel, 200) => (Tone::Ok, format!("cancelled {job}")),
            (Action::Pause, 200) => (Tone::Ok, format!("paused {job}")),
            (Action::Resume, 200) => (Tone::Ok, format!("resumed {job}")),
            (Action::Cancel, 409) => (
                Tone::Warn,
                reason.unwrap_or_else(|| format!("{job} is not running")),
            ),
            (_, 409) => (
                Tone::Warn,
                reason.unwrap_or_else(|| format!("{job} is disabled")),
            ),
            (_, 404) => (Tone::Fail, format!("no such job: {job}")),
            (_, 403) => (Tone::Fail, reason.unwrap_or_else(|| "forbidden".to_owned())),
            (_, status) => (
                Tone::Fail,
                format!(
                    "{} {job}: {}",
                    action.verb(),
                    reason.unwrap_or_else(|| format!("HTTP {status}"))
                ),
            ),
        };
        let done = tone == Tone::Ok;
        self.toast(tone, super::text::cell(&text), now);
        if done {
            self.send(Command::Refresh);
            let ours = self.drawer.as_ref().is_some_and(|d| d.job == job);
            if ours && action == Action::Start {
                // The new run's output: attach now rather than after the
                // follow pause.
                self.send(Command::Kick);
            }
        }
    }

    /// How many jobs of a health the board counts.
    pub fn count(&self, health: Health) -> usize {
        self.facts.count(health)
    }
}

/// The clock values a frame is drawn at.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// For countdowns since the poll.
    pub instant: Instant,
    /// Seconds since the epoch, for ages and the clock.
    pub wall: f64,
}

/// Seconds since the epoch now.
pub fn wall_clock() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
#[path = "app_tests.rs"]
pub(crate) mod tests;
