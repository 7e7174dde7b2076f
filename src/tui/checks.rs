//! The boot self-test's rows judged from the daemon's answers: pure
//! functions from what a probe got (`probe.rs` asks, on the worker) to a
//! [`Check`], OK, WARN or FAIL with a few words; and [`due`], whether the
//! self-test runs at this start. `boot.rs` shows them.

use super::model::Job;
use super::text::cell;
use super::view::{health, Health};
use serde_json::Value;
use std::time::Duration;

/// The self-test runs again only after this long (seconds).
pub const EVERY: f64 = 12.0 * 3600.0;
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
}
