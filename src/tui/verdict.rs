//! The verdict bar (one headline for what is wrong, with the guess that
//! failures sharing an exit code and reason may share a cause), the
//! incident timeline (each job's latest finish, newest first) and the
//! failure alarm that `a` acknowledges. All read the polled `/jobs` list
//! and `/cluster`; nothing here does I/O.

use super::format::{fmt_ago, fmt_duration, parse_iso};
use super::model::Job;
use super::text::{cell, fit, truncate, width};
use super::theme::Palette;
use super::view::{self, Health, Outcome};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;
use std::collections::HashMap;

/// Failures that finished within this many seconds of each other are
/// said to have happened together.
const TOGETHER_SECS: f64 = 60.0;

/// The largest group of failing jobs with the same exit code and reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Correlation {
    /// How many share them (two or more).
    pub n: usize,
    /// Seconds between the group's first and last finish.
    pub span: f64,
    /// The shared exit code.
    pub exit: Option<f64>,
    /// The shared fail reason.
    pub reason: Option<String>,
    /// The members' names.
    pub jobs: Vec<String>,
}

/// An exit code as the API's integer, `?` when absent.
fn exit_text(exit: Option<f64>) -> String {
    match exit {
        None => "?".to_owned(),
        Some(e) if e.fract() == 0.0 => format!("{}", e as i64),
        Some(e) => e.to_string(),
    }
}

/// Groups the failing jobs by exit code and fail reason; the largest
/// group of two or more wins, the first seen on a tie.
pub fn correlate(failing: &[&Job]) -> Option<Correlation> {
    let mut order: Vec<(String, Vec<&Job>)> = Vec::new();
    for job in failing {
        let last = job.last_run.as_ref();
        let key = format!(
            "{}|{}",
            exit_text(last.and_then(|l| l.exit_code)),
            last.and_then(|l| l.fail_reason.as_deref()).unwrap_or("")
        );
        match order.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(job),
            None => order.push((key, vec![job])),
        }
    }
    let mut best: Option<Correlation> = None;
    for (_, group) in order {
        if group.len() < 2 || best.as_ref().is_some_and(|b| b.n >= group.len()) {
            continue;
        }
        let times: Vec<f64> = group
            .iter()
            .filter_map(|j| j.last_run.as_ref()?.finished_at.as_deref())
            .filter_map(parse_iso)
            .collect();
        let span = match (
            times.iter().copied().reduce(f64::max),
            times.iter().copied().reduce(f64::min),
        ) {
            (Some(hi), Some(lo)) => hi - lo,
            _ => 0.0,
        };
        let last = group[0].last_run.as_ref();
        best = Some(Correlation {
            n: group.len(),
            span,
            exit: last.and_then(|l| l.exit_code),
            reason: last.and_then(|l| l.fail_reason.clone()),
            jobs: group.iter().map(|j| j.name.clone()).collect(),
        });
    }
    best
}

/// The bar's headline.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Critical (the fail color) rather than a warning.
    pub critical: bool,
    /// What is wrong.
    pub head: String,
    /// The detail.
    pub sub: String,
    /// The failing run's finish stamp (one failing job only).
    pub ago: Option<String>,
}

/// A cluster in trouble, read from `GET /cluster`: why, and this node's
/// name. None when the cluster is fine or absent.
pub fn cluster_alert(cluster: Option<&Value>) -> Option<(String, Option<String>)> {
    let data = cluster?;
    let flag = |k: &str| data.get(k).and_then(Value::as_bool).unwrap_or(false);
    if !flag("enabled") || !flag("elect_leader") {
        return None;
    }
    let why = if flag("conflict") {
        let kind = if data.get("conflict_names").is_some_and(|v| {
            v.as_array().is_some_and(|a| !a.is_empty()) || v.as_bool() == Some(true)
        }) {
            "duplicate nodeName"
        } else if flag("size_conflict") {
            "cluster size mismatch"
        } else if flag("policy_conflict") {
            "coordination policy mismatch"
        } else {
            "conflict"
        };
        format!("{kind} — Leader jobs paused")
    } else if !flag("quorate") {
        match data.get("backend").and_then(Value::as_str) {
            Some(b) if b != "gossip" => {
                "lease store unreachable — Leader jobs failing closed".to_owned()
            }
            _ => "no quorum — Leader jobs paused".to_owned(),
        }
    } else {
        return None;
    };
    let node = data.get("node_name").and_then(Value::as_str).map(cell);
    Some((why, node))
}

/// The verdict and the incident's jobs (the correlated group, else every
/// failing job). None when nothing is wrong.
pub fn verdict(jobs: &[Job], alert: Option<&(String, Option<String>)>) -> Option<Verdict> {
    let failing: Vec<&Job> = jobs
        .iter()
        .filter(|j| view::health(j).0 == Health::Fail)
        .collect();
    if let Some((why, node)) = alert {
        let mut sub = node
            .as_ref()
            .map(|n| format!("this node: {n} · "))
            .unwrap_or_default();
        sub += &match failing.len() {
            0 => "leadership / quorum degraded".to_owned(),
            1 => "1 job also failing".to_owned(),
            n => format!("{n} jobs also failing"),
        };
        return Some(Verdict {
            critical: true,
            head: format!("CLUSTER ALERT — {}", why.to_uppercase()),
            sub,
            ago: None,
        });
    }
    match failing.as_slice() {
        [] => None,
        [job] => {
            let last = job.last_run.as_ref();
            let mut sub = format!("exit {}", exit_text(last.and_then(|l| l.exit_code)));
            if let Some(reason) = last.and_then(|l| l.fail_reason.as_deref()) {
                sub += &format!(" · {}", cell(reason));
            }
            Some(Verdict {
                critical: false,
                head: format!("JOB FAILING — {}", cell(&job.name)),
                sub,
                ago: last.and_then(|l| l.finished_at.clone()),
            })
        }
        many => {
            let sub = match correlate(many) {
                Some(c) => {
                    let mut sub = format!("×{} share exit code {}", c.n, exit_text(c.exit));
                    if let Some(reason) = c.reason.as_deref().filter(|r| !r.is_empty()) {
                        sub += &format!(" ({})", cell(reason));
                    }
                    if c.span <= TOGETHER_SECS {
                        sub += &format!(" within {}s", c.span.round().max(1.0) as u64);
                    }
                    sub + " — may share a cause"
                }
                None => "no two share an exit code and reason".to_owned(),
            };
            Some(Verdict {
                critical: true,
                head: format!("MULTIPLE FAILURES — {} jobs failing", many.len()),
                sub,
                ago: None,
            })
        }
    }
}

/// The failure alarm: raised while any job's last run failed, acknowledged
/// by `a`, raised again by the next new failure.
#[derive(Debug, Default)]
pub struct Alarm {
    /// Each job of the previous poll, with its last finish stamp (none
    /// for a job that had not finished a run yet).
    seen: HashMap<String, Option<String>>,
    /// Some job's last run failed.
    pub failing: bool,
    /// `a` silenced it.
    pub acked: bool,
    /// At least one poll was read.
    primed: bool,
}

impl Alarm {
    /// Reads a poll; answers the jobs that newly finished with a failure
    /// (none on the first poll, whose failures are old news).
    pub fn observe(&mut self, jobs: &[Job]) -> Vec<String> {
        let mut fresh = Vec::new();
        let mut seen = HashMap::with_capacity(jobs.len());
        for job in jobs {
            let last = job.last_run.as_ref();
            let fin = last.and_then(|l| l.finished_at.as_ref());
            // A job the previous poll listed whose finish stamp moved,
            // from none included (its first run failed), finished anew;
            // a job new to this poll (a reload added it) is old news.
            let before = self.seen.get(&job.name);
            if let (Some(fin), Some(before)) = (fin, before) {
                if before.as_ref() != Some(fin) && last.is_some_and(|l| l.outcome == "failure") {
                    fresh.push(job.name.clone());
                }
            }
            let stamp = fin.or(before.and_then(Option::as_ref)).cloned();
            seen.insert(job.name.clone(), stamp);
        }
        if !self.primed {
            fresh.clear();
            self.primed = true;
        }
        self.seen = seen;
        self.failing = jobs
            .iter()
            .any(|j| j.last_run.as_ref().is_some_and(|l| l.outcome == "failure"));
        if !fresh.is_empty() || !self.failing {
            self.acked = false;
        }
        fresh
    }

    /// The alarm sounds: failing and not acknowledged.
    pub fn raised(&self) -> bool {
        self.failing && !self.acked
    }

    /// `a`: true when there was something to acknowledge.
    pub fn ack(&mut self) -> bool {
        let was = self.raised();
        self.acked = self.failing;
        was
    }
}

/// One timeline row: a job's latest finish.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The job.
    pub name: String,
    /// The finish stamp.
    pub finished_at: Option<String>,
    /// The API's outcome.
    pub outcome: String,
    /// The exit code.
    pub exit: Option<f64>,
    /// The fail reason.
    pub reason: Option<String>,
    /// Seconds it ran.
    pub duration: Option<f64>,
}

/// Every job's latest finish, newest first; only failures when
/// `fail_only`.
pub fn timeline(jobs: &[Job], fail_only: bool) -> Vec<Entry> {
    let mut out: Vec<(f64, Entry)> = jobs
        .iter()
        .filter_map(|j| {
            let last = j.last_run.as_ref()?;
            if fail_only && last.outcome != "failure" {
                return None;
            }
            let at = last
                .finished_at
                .as_deref()
                .and_then(parse_iso)
                .unwrap_or(0.0);
            Some((
                at,
                Entry {
                    name: j.name.clone(),
                    finished_at: last.finished_at.clone(),
                    outcome: last.outcome.clone(),
                    exit: last.exit_code,
                    reason: last.fail_reason.clone(),
                    duration: last.duration,
                },
            ))
        })
        .collect();
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter().map(|(_, e)| e).collect()
}

/// The incident's jobs: the correlated group when there is one, else
/// every failing job.
pub fn incident(jobs: &[Job]) -> Vec<String> {
    let failing: Vec<&Job> = jobs
        .iter()
        .filter(|j| view::health(j).0 == Health::Fail)
        .collect();
    match correlate(&failing) {
        Some(c) => c.jobs,
        None => failing.iter().map(|j| j.name.clone()).collect(),
    }
}

/// The bar's one line, `cols` wide.
pub fn bar(v: &Verdict, alarm: bool, p: &Palette, cols: usize, now: f64) -> Line<'static> {
    let mut text = format!(" ▲ {} — {}", v.head, v.sub);
    if v.ago.is_some() {
        text += &format!(" · {}", fmt_ago(v.ago.as_deref(), now));
    }
    if alarm {
        text += " · ◔ ALARM (a to ack)";
    }
    text += "   (i timeline)";
    let bg = if v.critical { p.fail } else { p.warn };
    Line::styled(
        fit(&text, cols),
        p.ink(p.bg).bg(bg).add_modifier(Modifier::BOLD),
    )
}

/// How the timeline panel is drawn: failures only, ASCII glyphs, the
/// selected entry and how many rows fit.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    /// Failures only.
    pub fail_only: bool,
    /// Plain-ASCII glyphs.
    pub ascii: bool,
    /// The selected entry (clamped to the last).
    pub sel: usize,
    /// The rows that fit; the window keeps the selection in it.
    pub rows: usize,
}

/// The timeline panel's rows: only those of the window around the
/// selection are built, whatever the number of jobs.
pub fn body(jobs: &[Job], shown: Shown, p: &Palette, now: f64) -> Vec<Line<'static>> {
    let Shown {
        fail_only,
        ascii,
        sel,
        rows,
    } = shown;
    let entries = timeline(jobs, fail_only);
    let blast = incident(jobs);
    let sel = sel.min(entries.len().saturating_sub(1));
    let rows = rows.max(1);
    let first = (sel + 1).saturating_sub(rows);
    let mut out = Vec::new();
    if entries.is_empty() {
        let hint = if fail_only {
            " nothing failing — f shows every finish"
        } else {
            " nothing has finished yet"
        };
        out.push(Line::styled(hint, p.ink(p.dim)));
    }
    for (i, e) in entries.iter().enumerate().skip(first).take(rows) {
        let outcome = Outcome::of(&e.outcome);
        let color = match outcome {
            Outcome::Ok => p.ok,
            Outcome::Fail => p.fail,
            _ => p.dim,
        };
        let mut detail = String::new();
        if outcome == Outcome::Fail {
            detail = format!("exit {}", exit_text(e.exit));
            if let Some(r) = e.reason.as_deref().filter(|r| !r.is_empty()) {
                detail += &format!(" · {}", cell(r));
            }
        }
        if e.duration.is_some() {
            if !detail.is_empty() {
                detail += " · ";
            }
            detail += &fmt_duration(e.duration);
        }
        // The incident mark goes first so a long reason cannot push it
        // off the panel.
        let mark = if blast.contains(&e.name) {
            "◉ incident · "
        } else {
            ""
        };
        let (cursor, bg) = if i == sel {
            ("▎", p.sel)
        } else {
            (" ", p.bg)
        };
        let line = Line::from(vec![
            Span::styled(cursor, p.ink(p.accent)),
            Span::styled(
                format!("{} ", fit(&fmt_ago(e.finished_at.as_deref(), now), 9)),
                p.ink(p.dim),
            ),
            Span::styled(
                format!("{} ", view::outcome_glyph(outcome, ascii)),
                p.ink(color),
            ),
            Span::styled(fit(&cell(&e.name), 26), p.ink(color)),
            Span::styled(format!(" {mark}"), p.ink(p.warn)),
            Span::styled(truncate(&detail, 52 - width(mark)), p.ink(p.dim)),
        ]);
        out.push(line.patch_style(ratatui::style::Style::default().bg(bg)));
    }
    out
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
