//! The live-logs panel (`m`): up to four jobs' SSE tails, each kept in a
//! log buffer of its own (so a replay after a run ends is told apart from
//! new lines, as in the drawer) and shown merged by arrival time with a
//! prefix in the job's own color.

use super::app::{App, Overlay, Tone};
use super::logs::LogBuffer;
use super::text::{cell, fit, plain};
use super::theme::Palette;
use super::worker::{Command, LogEvent};
use ratatui::text::{Line, Span};
use std::time::Instant;

/// How many jobs the panel tails at once.
pub const MERGED_MAX: usize = 4;

/// The panel's tails.
#[derive(Debug, Default)]
pub struct Merged {
    /// Each job, its tail's generation and its lines.
    pub tails: Vec<(String, u64, LogBuffer)>,
}

impl Merged {
    /// Files a tail's event; false when no tail of the panel has that
    /// generation.
    pub fn take(&mut self, generation: u64, event: &LogEvent) -> bool {
        let Some((_, _, logs)) = self.tails.iter_mut().find(|t| t.1 == generation) else {
            return false;
        };
        let at = super::app::wall_clock();
        match event {
            LogEvent::Attach(new_run) => logs.attach(*new_run),
            LogEvent::Line(stream, line) => logs.line(stream, line, at),
            LogEvent::End(reason) => logs.end(reason.as_deref(), at),
            LogEvent::Skipped(n) => logs.skipped(*n, at),
            LogEvent::Failed(why) => logs.fail(why),
        }
        true
    }

    /// The last `rows` lines of all the tails by arrival time, as
    /// (tail index, text).
    pub fn tail(&self, rows: usize) -> Vec<(usize, String)> {
        let mut all: Vec<(f64, usize, usize, &str)> = Vec::new();
        for (i, (_, _, logs)) in self.tails.iter().enumerate() {
            let skip = logs.entries.len().saturating_sub(rows);
            for (n, e) in logs.entries.iter().enumerate().skip(skip) {
                all.push((e.at, i, n, &e.text));
            }
        }
        // stable: a tail's own lines keep their order on equal times
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let skip = all.len().saturating_sub(rows);
        all.into_iter()
            .skip(skip)
            .map(|(_, i, _, t)| (i, plain(t)))
            .collect()
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
        if let Some(name) = chosen {
            if self.merged.tails.iter().any(|t| t.0 == name) {
            } else if self.merged.tails.len() >= MERGED_MAX {
                self.toast(
                    Tone::Warn,
                    format!("live logs is full ({MERGED_MAX} jobs)"),
                    now,
                );
            } else {
                self.merged.tails.push((name, 0, LogBuffer::new()));
            }
        }
        let mut wanted = Vec::new();
        for (job, generation, logs) in &mut self.merged.tails {
            *generation = self.next_generation;
            self.next_generation += 1;
            *logs = LogBuffer::new();
            wanted.push((job.clone(), *generation));
        }
        self.send(Command::Merge(wanted));
        self.open(Overlay::Merged);
    }

    /// `c` in the panel: forget its jobs and close it.
    pub(super) fn clear_merged(&mut self) {
        self.close(Overlay::Merged);
        self.merged.tails.clear();
    }
}

/// The color of the `i`th tail's prefix.
fn identity(p: &Palette, i: usize) -> ratatui::style::Color {
    [p.accent, p.ok, p.warn, p.run][i % MERGED_MAX]
}

/// The panel's rows: the jobs, then the merged lines.
pub fn body(m: &Merged, p: &Palette, rows: usize) -> Vec<Line<'static>> {
    if m.tails.is_empty() {
        return vec![Line::styled(
            " no job chosen: select one on the board and press m",
            p.ink(p.dim),
        )];
    }
    let mut head = vec![Span::styled(" tailing ", p.ink(p.dim))];
    for (i, (job, _, logs)) in m.tails.iter().enumerate() {
        head.push(Span::styled(
            format!("■ {} ", cell(job)),
            p.ink(identity(p, i)),
        ));
        if let Some(why) = &logs.error {
            head.push(Span::styled(format!("({}) ", cell(why)), p.ink(p.fail)));
        }
    }
    let mut out = vec![Line::from(head)];
    let lines = m.tail(rows);
    if lines.is_empty() {
        out.push(Line::styled(" waiting for output…", p.ink(p.dim)));
    }
    for (i, text) in lines {
        out.push(Line::from(vec![
            Span::styled(
                format!(" {} │ ", fit(&cell(&m.tails[i].0), 12)),
                p.ink(identity(p, i)),
            ),
            Span::styled(text, p.ink(p.fg)),
        ]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::tests::{job, sent, with_jobs};

    fn line(stream: &str, text: &str) -> LogEvent {
        LogEvent::Line(stream.to_owned(), text.to_owned())
    }

    #[test]
    fn m_tails_up_to_four_jobs_and_merges_their_lines() {
        let names = ["a", "b", "c", "d", "e"];
        let mut app = with_jobs(names.iter().map(|n| job(n)).collect());
        let now = Instant::now();
        for i in 0..5 {
            app.sel = i;
            app.toggle_merged(now);
            assert!(app.is_open(Overlay::Merged));
            if i < 4 {
                app.toggle_merged(now);
                assert!(!app.is_open(Overlay::Merged));
            }
        }
        let tails: Vec<&str> = app.merged.tails.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(tails, ["a", "b", "c", "d"], "a fifth is refused");
        assert!(app.toasts.iter().any(|t| t.text.contains("full")));
        let merges: Vec<Vec<(String, u64)>> = sent(&mut app)
            .into_iter()
            .filter_map(|c| match c {
                Command::Merge(jobs) => Some(jobs),
                _ => None,
            })
            .collect();
        let last = merges.last().expect("a merge");
        assert_eq!(last.len(), 4);
        assert_eq!(merges[merges.len() - 2], Vec::new(), "closing stops them");
        let gen = |i: usize| app.merged.tails[i].1;
        let (ga, gc) = (gen(0), gen(2));
        assert!(app.merged.take(ga, &line("stdout", "from a")));
        assert!(app.merged.take(gc, &line("stderr", "from \x1b[31mc")));
        assert!(app.merged.take(ga, &line("stdout", "a again")));
        assert!(!app.merged.take(9999, &line("stdout", "stray")));
        let merged = app.merged.tail(10);
        let texts: Vec<&str> = merged.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["from a", "from c", "a again"]);
        assert_eq!(merged.iter().map(|m| m.0).collect::<Vec<_>>(), [0, 2, 0]);
        assert_eq!(app.merged.tail(1).len(), 1);
        let p = app.theme.palette();
        let rows: Vec<String> = body(&app.merged, &p, 10)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(
            rows[0].contains("■ a") && rows[0].contains("■ d"),
            "{rows:?}"
        );
        assert!(
            rows[2].starts_with(" c") && rows[2].ends_with("│ from c"),
            "{rows:?}"
        );
        app.clear_merged();
        assert!(app.merged.tails.is_empty() && !app.is_open(Overlay::Merged));
    }
}
