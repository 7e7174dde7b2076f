//! The job actions panel: a set of jobs with a label (the failing jobs,
//! or the incident's), a bulk sweep over them (start each enabled idle
//! one, or cancel each running one, one send at a time, stoppable
//! between two sends) and the Markdown incident writeup. This is the
//! panel's state and its texts only; the worker sends, the edges copy
//! and save, `incident.rs` wires the keys.

use super::format::fmt_ago;
use super::model::Job;
use super::text::{cell, fit};
use super::theme::Palette;
use super::verdict::Verdict;
use super::worker::{Action, Sent};
use ratatui::style::Modifier;
use ratatui::text::Line;

/// How a log line of the panel reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Narration.
    Plain,
    /// A send the daemon took.
    Ok,
    /// A send that was refused or got no answer.
    Fail,
    /// A stop, a 401.
    Warn,
}

/// A sweep on its way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// Tags its updates (a finished sweep's stragglers are ignored).
    pub id: u64,
    /// What is sent.
    pub action: Action,
    /// How many jobs it was sent for.
    pub total: usize,
    /// Sends answered so far.
    pub sent: usize,
    /// Sends the daemon took (2xx).
    pub ok: usize,
    /// Sends refused or unanswered.
    pub failed: usize,
    /// `a` asked it to stop.
    pub stopping: bool,
}

/// The panel's state.
#[derive(Debug, Default)]
pub struct Actions {
    /// The jobs it acts on.
    pub names: Vec<String>,
    /// What the set is ("failing jobs", "incident set").
    pub label: String,
    /// What happened, oldest first.
    pub log: Vec<(Mark, String)>,
    /// The sweep on its way, if any.
    pub sweep: Option<Sweep>,
    /// The last sweep's id.
    last_id: u64,
}

/// The jobs of `names` that `action` applies to now, in the set's order:
/// for a start the enabled jobs that do not run, for a cancel the
/// running ones. Names the job list no longer has are left out.
pub fn eligible<'a>(
    action: Action,
    names: &[String],
    lookup: impl Fn(&str) -> Option<&'a Job>,
) -> Vec<String> {
    names
        .iter()
        .filter(|name| {
            lookup(name).is_some_and(|job| match action {
                Action::Cancel => job.running,
                _ => job.enabled && !job.running,
            })
        })
        .cloned()
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Actions {
    /// A fresh panel over `names`; while a sweep is on its way the panel
    /// stays on that sweep's set instead (false then).
    pub fn open(&mut self, names: Vec<String>, label: &str) -> bool {
        if self.sweep.is_some() {
            return false;
        }
        self.names = names;
        self.label = label.to_owned();
        self.log.clear();
        true
    }

    fn note(&mut self, mark: Mark, text: String) {
        self.log.push((mark, text));
        // A panel left open for days keeps its last few hundred lines.
        if self.log.len() > 500 {
            self.log.drain(..100);
        }
    }

    /// `s`/`x` with the eligible `targets`: the sweep's id and jobs for
    /// the worker, or None (a sweep is already on its way, or nothing is
    /// eligible; the log says which).
    pub fn begin(&mut self, action: Action, targets: Vec<String>) -> Option<(u64, Vec<String>)> {
        if self.sweep.is_some() {
            self.note(
                Mark::Warn,
                "still sending the last sweep (a stops it)".to_owned(),
            );
            return None;
        }
        let n = targets.len();
        if n == 0 {
            let why = match action {
                Action::Cancel => "nothing to cancel: no job of the set is running",
                _ => "nothing to start: no job of the set is enabled and idle",
            };
            self.note(Mark::Plain, why.to_owned());
            return None;
        }
        let verb = match action {
            Action::Cancel => "cancelling",
            _ => "starting",
        };
        self.note(
            Mark::Plain,
            format!("{verb} {n} job{}, one every 300 ms", plural(n)),
        );
        self.last_id += 1;
        self.sweep = Some(Sweep {
            id: self.last_id,
            action,
            total: n,
            sent: 0,
            ok: 0,
            failed: 0,
            stopping: false,
        });
        Some((self.last_id, targets))
    }

    /// One send's answer.
    pub fn answered(&mut self, id: u64, job: &str, sent: &Sent) {
        let Some(sweep) = self.sweep.as_mut().filter(|s| s.id == id) else {
            return;
        };
        sweep.sent += 1;
        let verb = sweep.action.verb();
        let job = cell(job);
        let (mark, text) = match sent {
            Sent::Answered(status, _) if (200..300).contains(status) => {
                sweep.ok += 1;
                let queued = if *status == 202 {
                    " (queued in its pool)"
                } else {
                    ""
                };
                (Mark::Ok, format!("✓ {verb} {job}: HTTP {status}{queued}"))
            }
            Sent::Answered(status, why) => {
                sweep.failed += 1;
                let why = why.as_deref().map(|w| format!(" {}", cell(w)));
                (
                    Mark::Fail,
                    format!("✕ {verb} {job}: HTTP {status}{}", why.unwrap_or_default()),
                )
            }
            Sent::Unauthorized => {
                sweep.failed += 1;
                (
                    Mark::Warn,
                    format!("✕ {verb} {job}: HTTP 401: set a token, then send again"),
                )
            }
            Sent::Failed(why) => {
                sweep.failed += 1;
                (Mark::Fail, format!("✕ {verb} {job}: {}", cell(why)))
            }
        };
        self.note(mark, text);
    }

    /// `a`: whether a sweep was on its way and is now told to stop (the
    /// worker must be told too).
    pub fn stop(&mut self) -> bool {
        match self.sweep.as_mut() {
            Some(sweep) if !sweep.stopping => {
                sweep.stopping = true;
                self.note(Mark::Warn, "stop sending: nothing more goes out".to_owned());
                true
            }
            _ => false,
        }
    }

    /// The worker says the sweep `id` is over after `sent` sends,
    /// `stopped` before its end.
    pub fn ended(&mut self, id: u64, sent: usize, stopped: bool) {
        if self.sweep.as_ref().is_none_or(|s| s.id != id) {
            return;
        }
        let Some(sweep) = self.sweep.take() else {
            return;
        };
        if stopped {
            self.note(Mark::Warn, format!("aborted ({sent}/{} sent)", sweep.total));
        }
        let mark = if sweep.failed > 0 {
            Mark::Fail
        } else {
            Mark::Plain
        };
        self.note(
            mark,
            format!("done: {} ok, {} failed", sweep.ok, sweep.failed),
        );
    }

    /// Whether a sweep is on its way.
    pub fn running(&self) -> bool {
        self.sweep.is_some()
    }
}

/// `at` (seconds since the epoch) as `YYYY-mm-dd HH:MM:SS UTC`.
fn utc(at: f64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp(at.floor() as i64, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "an unknown time".to_owned())
}

/// The Markdown incident writeup of the set `names` labelled `label`, as
/// of `now` (seconds since the epoch), with the verdict bar's headline
/// when there is one. Names and reasons come from the daemon (under
/// clustering, from other machines): they are written as plain text.
pub fn writeup<'a>(
    label: &str,
    names: &[String],
    lookup: impl Fn(&str) -> Option<&'a Job>,
    verdict: Option<&Verdict>,
    now: f64,
) -> String {
    let mut out = format!(
        "# cronstable incident: {}\n\nAs of {}, {} job{}:\n\n",
        cell(label),
        utc(now),
        names.len(),
        plural(names.len())
    );
    for name in names {
        let mut line = format!("- `{}`", cell(name).replace('`', "'"));
        match lookup(name).map(|j| j.last_run.as_ref()) {
            None => line += ": not in the daemon's job list",
            Some(None) => line += ": no finished run",
            Some(Some(last)) => {
                let exit = match last.exit_code {
                    Some(e) if e.fract() == 0.0 => format!("{}", e as i64),
                    Some(e) => e.to_string(),
                    None => "?".to_owned(),
                };
                line += &format!(": exit code {exit}");
                if let Some(reason) = last.fail_reason.as_deref().filter(|r| !r.is_empty()) {
                    line += &format!(", reason: {}", cell(reason));
                }
                line += &format!(", finished {}", fmt_ago(last.finished_at.as_deref(), now));
            }
        }
        out += &line;
        out.push('\n');
    }
    if let Some(v) = verdict {
        out += &format!("\nVerdict: {}\n\n> {}\n", v.head, v.sub);
    }
    out
}

/// The panel's rows: the set, then the last `rows` log lines.
pub fn body(a: &Actions, p: &Palette, cols: usize, rows: usize) -> Vec<Line<'static>> {
    let n = a.names.len();
    let mut out = vec![Line::styled(
        format!(" {n} job{} · {}", plural(n), cell(&a.label)),
        p.ink(p.bright).add_modifier(Modifier::BOLD),
    )];
    let mut names: Vec<String> = a.names.iter().take(8).map(|s| cell(s)).collect();
    if n > 8 {
        names.push(format!("and {} more", n - 8));
    }
    let shown = if n == 0 {
        "nothing in the set".to_owned()
    } else {
        names.join(", ")
    };
    out.push(Line::styled(fit(&format!(" {shown}"), cols), p.ink(p.dim)));
    out.push(Line::raw(""));
    let skip = a.log.len().saturating_sub(rows.max(3));
    for (mark, text) in a.log.iter().skip(skip) {
        let color = match mark {
            Mark::Plain => p.fg,
            Mark::Ok => p.ok,
            Mark::Fail => p.fail,
            Mark::Warn => p.warn,
        };
        out.push(Line::styled(fit(&format!(" {text}"), cols), p.ink(color)));
    }
    if let Some(sweep) = &a.sweep {
        let text = if sweep.stopping {
            " stopping…".to_owned()
        } else {
            format!(
                " sending {}/{}… (a stops sending)",
                (sweep.sent + 1).min(sweep.total),
                sweep.total
            )
        };
        out.push(Line::styled(text, p.ink(p.warn)));
    }
    out
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
