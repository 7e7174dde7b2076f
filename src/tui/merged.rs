//! The live-logs panel (`m`): up to four jobs' SSE tails, each kept in a
//! log buffer of its own (so a replay after a run ends is told apart from
//! new lines, as in the drawer) and shown merged by arrival time with a
//! prefix in the job's own color.

use super::logs::LogBuffer;
use super::text::{cell, fit, plain};
use super::theme::Palette;
use super::worker::LogEvent;
use ratatui::text::{Line, Span};

/// How many jobs the panel tails at once.
pub const MERGED_MAX: usize = 4;

/// The panel's tails.
#[derive(Debug, Default)]
pub struct Merged {
    /// Each job, its tail's generation and its lines.
    pub tails: Vec<(String, u64, LogBuffer)>,
}

impl Merged {
    /// Files a tail's event that arrived at `at` (seconds since the
    /// epoch); false when no tail of the panel has that generation.
    pub fn take(&mut self, generation: u64, event: &LogEvent, at: f64) -> bool {
        let Some((_, _, logs)) = self.tails.iter_mut().find(|t| t.1 == generation) else {
            return false;
        };
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
