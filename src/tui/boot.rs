//! The BIOS-style boot self-test: at start (at most once per 12 hours,
//! unless `--boot` forces it or `--no-boot` or the **Startup checks**
//! setting skips it) a full screen of checks against the live daemon:
//! the link's latency, the daemon's version, the job set, its schedules
//! and the cluster, each OK, WARN or FAIL. The probes run on the worker
//! (`probe.rs`), which sends each [`Check`] as it is judged; this module
//! judges the answers (pure), reveals the rows one by one, draws them,
//! and hands over to the board when the verdict has been read, or at
//! any key.

use super::app::{App, Now};
use super::model::Job;
use super::text::{cell, fit};
use super::theme::Palette;
use super::view::{health, Health};
use super::worker::Command;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The self-test runs again only after this long (seconds).
pub const EVERY: f64 = 12.0 * 3600.0;
/// The pause between two rows appearing.
const STEP: Duration = Duration::from_millis(180);
/// How long the verdict stays before the board comes.
const HOLD: Duration = Duration::from_millis(2500);
/// A link slower than this is a warning.
const SLOW: Duration = Duration::from_secs(1);

/// What a row checks, in screen order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// A timed `GET /version`.
    Link,
    /// The daemon's version.
    Firmware,
    /// `GET /jobs` and `/job-set-id`.
    JobSet,
    /// The jobs' schedules, read by the engine.
    Schedules,
    /// `GET /cluster`.
    Cluster,
}

impl Item {
    /// Every row, in order.
    pub const ALL: [Item; 5] = [
        Item::Link,
        Item::Firmware,
        Item::JobSet,
        Item::Schedules,
        Item::Cluster,
    ];

    /// The row's label.
    pub fn label(self) -> &'static str {
        match self {
            Item::Link => "link",
            Item::Firmware => "firmware",
            Item::JobSet => "job set",
            Item::Schedules => "schedules",
            Item::Cluster => "cluster",
        }
    }
}

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// Fine.
    Ok,
    /// Works, with something to look at.
    Warn,
    /// Broken.
    Fail,
}

impl Mark {
    /// The bracketed word at the row's end.
    pub fn word(self) -> &'static str {
        match self {
            Mark::Ok => "[  OK  ]",
            Mark::Warn => "[ WARN ]",
            Mark::Fail => "[ FAIL ]",
        }
    }
}

/// One judged row.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Which row.
    pub item: Item,
    /// Its outcome.
    pub mark: Mark,
    /// What was found, in a few words.
    pub detail: String,
}

fn check(item: Item, mark: Mark, detail: impl Into<String>) -> Check {
    Check {
        item,
        mark,
        detail: detail.into(),
    }
}

/// How a probe's request went.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    /// 200, read.
    Got(T),
    /// 401: a token is needed.
    Locked,
    /// Another status, or an unreadable body: why.
    Refused(String),
    /// No answer: why.
    Down(String),
}

/// Whether the self-test runs at this start: `--boot`/`--no-boot` decide
/// when given; otherwise the setting, and 12 hours since the last one (a
/// last run in the future, after a clock change, counts as long ago).
pub fn due(forced: Option<bool>, enabled: bool, last: f64, now: f64) -> bool {
    forced.unwrap_or(enabled && (now - last >= EVERY || last > now))
}

/// The link row: the timed request answered at all (a 401 is an answer).
pub fn judge_link(version: &Answer<String>, took: Duration) -> Check {
    let ms = took.as_millis();
    match version {
        Answer::Down(why) => check(Item::Link, Mark::Fail, format!("no answer: {}", cell(why))),
        _ if took >= SLOW => check(Item::Link, Mark::Warn, format!("{ms} ms (slow)")),
        _ => check(Item::Link, Mark::Ok, format!("{ms} ms")),
    }
}

/// The firmware row: the daemon's version (and this client's when they
/// differ).
pub fn judge_firmware(version: &Answer<String>) -> Check {
    let ours = env!("CARGO_PKG_VERSION");
    match version {
        Answer::Got(v) if v.trim() == ours => {
            check(Item::Firmware, Mark::Ok, format!("cronstable {}", cell(v)))
        }
        Answer::Got(v) => check(
            Item::Firmware,
            Mark::Ok,
            format!("cronstable {} (this tui {ours})", cell(v.trim())),
        ),
        Answer::Locked => check(Item::Firmware, Mark::Warn, "locked (a token is needed)"),
        Answer::Refused(why) => check(
            Item::Firmware,
            Mark::Warn,
            format!("unknown ({})", cell(why)),
        ),
        Answer::Down(_) => check(Item::Firmware, Mark::Fail, "unknown (no answer)"),
    }
}

/// The job-set row: how many jobs, how many off and failing, and the
/// job-set id.
pub fn judge_jobs(jobs: &Answer<Vec<Job>>, id: Option<&str>) -> Check {
    let list = match jobs {
        Answer::Got(list) => list,
        Answer::Locked => return check(Item::JobSet, Mark::Warn, "locked (a token is needed)"),
        Answer::Refused(why) | Answer::Down(why) => {
            return check(
                Item::JobSet,
                Mark::Fail,
                format!("no job list: {}", cell(why)),
            )
        }
    };
    let n = list.len();
    let mut text = format!("{n} job{}", if n == 1 { "" } else { "s" });
    let off = list.iter().filter(|j| !j.enabled).count();
    if off > 0 {
        text.push_str(&format!(" · {off} disabled"));
    }
    let failing = list.iter().filter(|j| health(j).0 == Health::Fail).count();
    if failing > 0 {
        text.push_str(&format!(" · {failing} failing"));
    }
    if let Some(id) = id.map(str::trim).filter(|i| !i.is_empty()) {
        let short: String = cell(id).chars().take(12).collect();
        text.push_str(&format!(" · id {short}"));
    }
    let mark = if failing > 0 { Mark::Warn } else { Mark::Ok };
    check(Item::JobSet, mark, text)
}

/// The schedules row: every enabled job's schedule read by the engine,
/// and the soonest next fire.
pub fn judge_schedules(jobs: &Answer<Vec<Job>>) -> Check {
    let Answer::Got(list) = jobs else {
        return check(Item::Schedules, Mark::Warn, "not checked (no job list)");
    };
    let timed: Vec<&Job> = list
        .iter()
        .filter(|j| j.enabled && !j.schedule.trim().is_empty())
        .collect();
    let bad = timed
        .iter()
        .filter(|j| crate::cronexpr::Schedule::parse(j.schedule.trim(), &j.name).is_err())
        .count();
    if bad > 0 {
        let of = timed.len();
        return check(
            Item::Schedules,
            Mark::Warn,
            format!("{bad} of {of} do not parse"),
        );
    }
    if timed.is_empty() {
        return check(Item::Schedules, Mark::Ok, "nothing scheduled");
    }
    let next = timed
        .iter()
        .filter_map(|j| j.scheduled_in.map(|s| (s, &j.name)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let all = format!("all {} parse", timed.len());
    match next {
        Some((s, name)) => check(
            Item::Schedules,
            Mark::Ok,
            format!(
                "{all} · next fire {} ({})",
                super::format::fmt_in(Some(s)),
                cell(name)
            ),
        ),
        None => check(Item::Schedules, Mark::Ok, format!("{all} · none due")),
    }
}

/// The cluster row: standalone, or the backend with its quorum.
pub fn judge_cluster(cluster: &Answer<Value>) -> Check {
    let data = match cluster {
        Answer::Got(data) => data,
        Answer::Locked => return check(Item::Cluster, Mark::Warn, "locked (a token is needed)"),
        Answer::Refused(why) => {
            return check(
                Item::Cluster,
                Mark::Warn,
                format!("unknown ({})", cell(why)),
            )
        }
        Answer::Down(_) => return check(Item::Cluster, Mark::Fail, "unknown (no answer)"),
    };
    if !data
        .get("enabled")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        return check(Item::Cluster, Mark::Ok, "standalone");
    }
    if let Some((why, _)) = super::verdict::cluster_alert(Some(data)) {
        return check(Item::Cluster, Mark::Warn, why);
    }
    let backend = data
        .get("backend")
        .and_then(Value::as_str)
        .unwrap_or("cluster");
    let peers = data
        .get("peers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let quorum = match data.get("quorate").and_then(Value::as_bool) {
        Some(true) => " · quorate",
        _ => "",
    };
    check(
        Item::Cluster,
        Mark::Ok,
        format!(
            "{} · {peers} peer{}{quorum}",
            cell(backend),
            if peers == 1 { "" } else { "s" }
        ),
    )
}

/// The self-test on screen.
#[derive(Debug, Clone)]
pub struct Boot {
    /// The rows judged so far, by [`Item`] order.
    pub checks: [Option<Check>; 5],
    /// How many rows show.
    pub shown: usize,
    /// When the last row appeared (or the test began).
    pub stepped: Instant,
    /// When the last row appeared, once all have.
    pub done_at: Option<Instant>,
}

impl Boot {
    /// A self-test beginning at `now`.
    pub fn new(now: Instant) -> Boot {
        Boot {
            checks: Default::default(),
            shown: 0,
            stepped: now,
            done_at: None,
        }
    }

    /// A row's judgement arrived.
    pub fn take(&mut self, check: Check) {
        let at = Item::ALL.iter().position(|i| *i == check.item).unwrap_or(0);
        self.checks[at] = Some(check);
    }

    /// Shows the next row when it is judged and its pause is over;
    /// whether the verdict has been up long enough to hand over.
    pub fn advance(&mut self, now: Instant) -> bool {
        let next_ready = self.checks.get(self.shown).is_some_and(Option::is_some);
        if next_ready && now.saturating_duration_since(self.stepped) >= STEP {
            self.shown += 1;
            self.stepped = now;
        }
        if self.shown == Item::ALL.len() && self.done_at.is_none() {
            self.done_at = Some(now);
        }
        self.done_at
            .is_some_and(|at| now.saturating_duration_since(at) >= HOLD)
    }

    /// The summary, once every row shows: the worst mark and its words.
    pub fn verdict(&self) -> Option<(Mark, String)> {
        self.done_at?;
        let marks: Vec<Mark> = self.checks.iter().flatten().map(|c| c.mark).collect();
        let count = |m: Mark| marks.iter().filter(|x| **x == m).count();
        let plural = |n: usize| if n == 1 { "" } else { "S" };
        let (fails, warns) = (count(Mark::Fail), count(Mark::Warn));
        Some(if fails > 0 {
            (Mark::Fail, format!("{fails} CHECK{} FAILED", plural(fails)))
        } else if warns > 0 {
            (Mark::Warn, format!("{warns} WARNING{}", plural(warns)))
        } else {
            (Mark::Ok, "ALL CHECKS PASSED".to_owned())
        })
    }
}

impl App {
    /// Puts the self-test on screen and asks the worker for its probes.
    pub fn start_boot(&mut self, now: Instant) {
        self.ambient.boot = Some(Boot::new(now));
        self.send(Command::Boot);
    }

    /// A probe's judgement (dropped when the test was skipped).
    pub fn boot_report(&mut self, check: Check) {
        if let Some(boot) = &mut self.ambient.boot {
            boot.take(check);
        }
    }

    /// Moves the self-test on at `now`, handing over to the board when
    /// it is over; whether it is still (or was until now) on screen.
    pub fn boot_tick(&mut self, now: Instant, wall: f64) -> bool {
        let Some(boot) = &mut self.ambient.boot else {
            return false;
        };
        if boot.advance(now) {
            self.finish_boot(wall);
        }
        true
    }

    /// Ends the self-test (done or skipped), noting when it ran.
    pub fn finish_boot(&mut self, wall: f64) {
        if self.ambient.boot.take().is_some() {
            self.ambient.boot_last = wall;
        }
    }
}

/// Draws the self-test over the whole screen.
pub fn draw(frame: &mut Frame, app: &App, boot: &Boot, p: &Palette, area: Rect, now: Now) {
    let width = area.width as usize;
    let mark = super::ambient::mark(app.ambient.living_logo, true, app.ascii, now.wall);
    let title = format!(
        " {mark} CRONSTABLE TUI {} · POWER-ON SELF-TEST",
        env!("CARGO_PKG_VERSION")
    );
    let mut lines = vec![
        Line::default(),
        Line::styled(title, p.ink(p.accent).add_modifier(Modifier::BOLD)),
        Line::default(),
    ];
    let detail_w = width.saturating_sub(36).clamp(10, 60);
    for (n, item) in Item::ALL.iter().enumerate() {
        let label = format!(
            "   {} {}",
            item.label(),
            ".".repeat(14 - item.label().len())
        );
        if n < boot.shown {
            let Some(c) = &boot.checks[n] else { continue };
            let color = match c.mark {
                Mark::Ok => p.ok,
                Mark::Warn => p.warn,
                Mark::Fail => p.fail,
            };
            lines.push(Line::from(vec![
                Span::styled(label, p.ink(p.fg)),
                Span::styled(format!(" {} ", fit(&c.detail, detail_w)), p.ink(p.bright)),
                Span::styled(c.mark.word(), p.ink(color).add_modifier(Modifier::BOLD)),
            ]));
        } else if n == boot.shown {
            let dots = ".".repeat(1 + (now.wall.max(0.0) * 3.0) as usize % 3);
            lines.push(Line::from(vec![
                Span::styled(label, p.ink(p.fg)),
                Span::styled(format!(" probing{dots}"), p.ink(p.dim)),
            ]));
        }
    }
    lines.push(Line::default());
    if let Some((m, words)) = boot.verdict() {
        let color = match m {
            Mark::Ok => p.ok,
            Mark::Warn => p.warn,
            Mark::Fail => p.fail,
        };
        lines.push(Line::from(vec![
            Span::styled(
                format!(" {words}"),
                p.ink(color).add_modifier(Modifier::BOLD),
            ),
            Span::styled(" · starting the board", p.ink(p.dim)),
        ]));
        lines.push(Line::default());
    }
    lines.push(Line::styled(
        " any key skips · the checks run at most every 12 hours (--boot, --no-boot)",
        p.ink(p.dim),
    ));
    frame.render_widget(Paragraph::new(lines).style(p.base()), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::model::LastRun;

    fn job(name: &str, schedule: &str, next: Option<f64>) -> Job {
        Job {
            name: name.into(),
            enabled: true,
            schedule: schedule.into(),
            scheduled_in: next,
            ..Job::default()
        }
    }

    #[test]
    fn it_is_due_twelve_hours_after_the_last_unless_a_flag_or_the_setting_says() {
        let now = 1_000_000.0;
        assert!(due(None, true, 0.0, now));
        assert!(due(None, true, now - EVERY, now));
        assert!(!due(None, true, now - EVERY + 1.0, now));
        assert!(due(None, true, now + 60.0, now), "a last run in the future");
        assert!(!due(None, false, 0.0, now));
        assert!(due(Some(true), false, now, now));
        assert!(!due(Some(false), true, 0.0, now));
    }

    #[test]
    fn the_link_and_firmware_rows_read_the_version_request() {
        let ms = Duration::from_millis;
        let got = Answer::Got(env!("CARGO_PKG_VERSION").to_owned());
        assert_eq!(judge_link(&got, ms(3)).mark, Mark::Ok);
        assert_eq!(judge_link(&got, ms(3)).detail, "3 ms");
        assert_eq!(judge_link(&got, ms(1500)).mark, Mark::Warn);
        assert_eq!(judge_link(&Answer::Locked, ms(3)).mark, Mark::Ok);
        let down = Answer::Down("connection refused".into());
        let link = judge_link(&down, ms(3));
        assert_eq!(
            (link.mark, link.detail.as_str()),
            (Mark::Fail, "no answer: connection refused")
        );
        let fw = judge_firmware(&got);
        assert_eq!(fw.mark, Mark::Ok);
        assert_eq!(
            fw.detail,
            format!("cronstable {}", env!("CARGO_PKG_VERSION"))
        );
        let other = judge_firmware(&Answer::Got("0.0.1".into()));
        assert!(other.detail.contains("(this tui "), "{other:?}");
        assert_eq!(judge_firmware(&Answer::Locked).mark, Mark::Warn);
        assert_eq!(
            judge_firmware(&Answer::Refused("HTTP 404".into())).detail,
            "unknown (HTTP 404)"
        );
        assert_eq!(judge_firmware(&down).mark, Mark::Fail);
    }

    #[test]
    fn the_job_set_row_counts_and_warns_of_failures() {
        let mut failing = job("b", "* * * * *", None);
        failing.last_run = Some(LastRun {
            outcome: "failure".into(),
            ..LastRun::default()
        });
        let mut off = job("c", "@daily", None);
        off.enabled = false;
        let ok = judge_jobs(
            &Answer::Got(vec![job("a", "* * * * *", None)]),
            Some(" 0123456789abcdef "),
        );
        assert_eq!(
            (ok.mark, ok.detail.as_str()),
            (Mark::Ok, "1 job · id 0123456789ab")
        );
        let list = vec![job("a", "* * * * *", None), failing, off];
        let warn = judge_jobs(&Answer::Got(list), None);
        assert_eq!(
            (warn.mark, warn.detail.as_str()),
            (Mark::Warn, "3 jobs · 1 disabled · 1 failing")
        );
        assert_eq!(judge_jobs(&Answer::Locked, None).mark, Mark::Warn);
        assert_eq!(
            judge_jobs(&Answer::Down("timed out".into()), None).mark,
            Mark::Fail
        );
        assert_eq!(
            judge_jobs(&Answer::Refused("HTTP 500".into()), None).mark,
            Mark::Fail
        );
    }

    #[test]
    fn the_schedules_row_parses_each_and_names_the_soonest() {
        let list = vec![
            job("later", "0 3 * * *", Some(7200.0)),
            job("soon", "*/5 * * * *", Some(90.0)),
            job("boot", "@reboot", None),
            job("manual", "", None),
        ];
        let c = judge_schedules(&Answer::Got(list.clone()));
        assert_eq!(
            (c.mark, c.detail.as_str()),
            (Mark::Ok, "all 3 parse · next fire in 1m (soon)")
        );
        let mut bad = list;
        bad.push(job("typo", "61 * * * *", None));
        let c = judge_schedules(&Answer::Got(bad));
        assert_eq!(
            (c.mark, c.detail.as_str()),
            (Mark::Warn, "1 of 4 do not parse")
        );
        let c = judge_schedules(&Answer::Got(vec![job("b", "@reboot", None)]));
        assert_eq!(c.detail, "all 1 parse · none due");
        assert_eq!(
            judge_schedules(&Answer::Got(Vec::new())).detail,
            "nothing scheduled"
        );
        assert_eq!(judge_schedules(&Answer::Locked).mark, Mark::Warn);
    }

    #[test]
    fn the_cluster_row_reads_standalone_quorum_and_alerts() {
        let c = judge_cluster(&Answer::Got(
            serde_json::json!({"enabled": false, "peers": []}),
        ));
        assert_eq!((c.mark, c.detail.as_str()), (Mark::Ok, "standalone"));
        let fine = serde_json::json!({"enabled": true, "elect_leader": true, "backend": "gossip",
            "quorate": true, "peers": [{}, {}]});
        let c = judge_cluster(&Answer::Got(fine));
        assert_eq!(
            (c.mark, c.detail.as_str()),
            (Mark::Ok, "gossip · 2 peers · quorate")
        );
        let lost = serde_json::json!({"enabled": true, "elect_leader": true, "backend": "gossip",
            "quorate": false, "peers": []});
        let c = judge_cluster(&Answer::Got(lost));
        assert_eq!(
            (c.mark, c.detail.as_str()),
            (Mark::Warn, "no quorum — Leader jobs paused")
        );
        assert_eq!(
            judge_cluster(&Answer::Refused("HTTP 404".into())).mark,
            Mark::Warn
        );
        assert_eq!(judge_cluster(&Answer::Down("x".into())).mark, Mark::Fail);
    }

    #[test]
    fn rows_appear_in_order_and_the_verdict_holds_before_the_board() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut boot = Boot::new(t0);
        assert!(!boot.advance(at(1000)));
        assert_eq!(boot.shown, 0, "nothing judged yet");
        // the cluster answers first: it waits behind the link
        boot.take(check(Item::Cluster, Mark::Ok, "standalone"));
        boot.take(check(Item::Link, Mark::Ok, "2 ms"));
        assert!(!boot.advance(at(1000)));
        assert_eq!(boot.shown, 1);
        assert!(!boot.advance(at(1100)));
        assert_eq!(boot.shown, 1, "no next row yet");
        for item in [Item::Firmware, Item::JobSet, Item::Schedules] {
            boot.take(check(item, Mark::Warn, "w"));
        }
        assert!(!boot.advance(at(1100)));
        assert_eq!(boot.shown, 1, "the pause between rows");
        let mut t = 1180;
        for shown in 2..=5 {
            assert!(!boot.advance(at(t)));
            assert_eq!(boot.shown, shown);
            t += 180;
        }
        assert_eq!(boot.done_at, Some(at(1720)));
        assert_eq!(boot.verdict(), Some((Mark::Warn, "3 WARNINGS".to_owned())));
        assert!(!boot.advance(at(1720 + 2499)));
        assert!(boot.advance(at(1720 + 2500)));
    }

    #[test]
    fn verdicts_name_the_worst() {
        let mut boot = Boot::new(Instant::now());
        for item in Item::ALL {
            boot.take(check(item, Mark::Ok, ""));
        }
        assert_eq!(boot.verdict(), None, "not before every row shows");
        boot.done_at = Some(Instant::now());
        assert_eq!(
            boot.verdict(),
            Some((Mark::Ok, "ALL CHECKS PASSED".to_owned()))
        );
        boot.take(check(Item::Link, Mark::Fail, ""));
        boot.take(check(Item::Cluster, Mark::Warn, ""));
        assert_eq!(
            boot.verdict(),
            Some((Mark::Fail, "1 CHECK FAILED".to_owned()))
        );
    }

    #[test]
    fn a_skip_ends_it_and_remembers_when() {
        let mut app = crate::tui::app::tests::with_jobs(Vec::new());
        let now = Instant::now();
        app.start_boot(now);
        assert!(crate::tui::app::tests::sent(&mut app)
            .iter()
            .any(|c| matches!(c, Command::Boot)));
        assert!(app.boot_tick(now, 10.0));
        app.key(
            crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('w'),
                crossterm::event::KeyModifiers::NONE,
            ),
            now,
        );
        assert!(app.ambient.boot.is_none());
        assert!(!app.wall, "the skipping key did nothing else");
        assert!(app.ambient.boot_last > 0.0);
        app.boot_report(check(Item::Link, Mark::Ok, "late"));
        assert!(!app.boot_tick(now, 20.0));
    }
}
