//! The live-logs panel (`m`): up to four jobs' SSE tails, each kept in a
//! log buffer of its own (so a replay after a run ends is told apart from
//! new lines, as in the drawer) and shown merged by arrival time with a
//! prefix in the job's own color. PgUp/PgDn scroll back through the
//! merged lines; at the bottom it follows again. `j`/`k` choose a job in
//! the heading and `x` drops it (its stream stopped, the others kept).

use super::logs::LogBuffer;
use super::text::{cell, fit, plain};
use super::theme::Palette;
use super::worker::LogEvent;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// How many jobs the panel tails at once.
pub const MERGED_MAX: usize = 4;

/// The panel's tails.
#[derive(Debug, Default)]
pub struct Merged {
    /// Each job, its tail's generation and its lines.
    pub tails: Vec<(String, u64, LogBuffer)>,
    /// Lines scrolled up from the newest (0 follows the end).
    pub scroll: usize,
    /// The lines the last frame showed (a page, and the scroll's limit).
    pub shown: std::cell::Cell<usize>,
    /// The chosen job in the heading (an index into `tails`).
    pub sel: usize,
}

impl Merged {
    /// Files a tail's event that arrived at `at` (seconds since the
    /// epoch); false when no tail of the panel has that generation.
    pub fn take(&mut self, generation: u64, event: &LogEvent, at: f64) -> bool {
        let Some((_, _, logs)) = self.tails.iter_mut().find(|t| t.1 == generation) else {
            return false;
        };
        let before = logs.entries.len();
        match event {
            LogEvent::Attach(new_run) => logs.attach(*new_run),
            LogEvent::Line(stream, line) => logs.line(stream, line, at),
            LogEvent::End(reason) => logs.end(reason.as_deref(), at),
            LogEvent::Skipped(n) => logs.skipped(*n, at),
            LogEvent::Failed(why) => logs.fail(why),
        }
        // Scrolled up: stay on the same lines while new ones arrive.
        if self.scroll > 0 {
            self.scroll += logs.entries.len().saturating_sub(before);
        }
        true
    }

    /// Moves the chosen job `step` places, within the tails.
    pub fn choose(&mut self, step: isize) {
        let last = self.tails.len().saturating_sub(1);
        self.sel = self.sel.min(last).saturating_add_signed(step).min(last);
    }

    /// Drops the chosen job's tail (its lines go with it); its job and
    /// generation, so its stream can be stopped. The choice stays on the
    /// same place, or the new last job.
    pub fn remove_chosen(&mut self) -> Option<(String, u64)> {
        if self.tails.is_empty() {
            return None;
        }
        let at = self.sel.min(self.tails.len() - 1);
        let (job, generation, _) = self.tails.remove(at);
        self.sel = at.min(self.tails.len().saturating_sub(1));
        // the lines above the view may be fewer now
        self.scroll = self.scroll.min(self.total());
        Some((job, generation))
    }

    /// Every line the tails hold.
    pub fn total(&self) -> usize {
        self.tails.iter().map(|t| t.2.entries.len()).sum()
    }

    /// Scrolls `up` lines back (negative: down), within the lines held;
    /// back at the bottom it follows again.
    pub fn scroll_by(&mut self, up: isize) {
        let limit = self.total().saturating_sub(self.shown.get().max(1));
        self.scroll = self.scroll.min(limit).saturating_add_signed(up).min(limit);
    }

    /// `rows` lines of all the tails by arrival time, as (tail index,
    /// text): the newest, or as far back as the panel is scrolled.
    pub fn tail(&self, rows: usize) -> Vec<(usize, String)> {
        let scroll = self.scroll.min(self.total().saturating_sub(rows));
        let want = rows + scroll;
        let mut all: Vec<(f64, usize, usize, &str)> = Vec::new();
        for (i, (_, _, logs)) in self.tails.iter().enumerate() {
            let skip = logs.entries.len().saturating_sub(want);
            for (n, e) in logs.entries.iter().enumerate().skip(skip) {
                all.push((e.at, i, n, &e.text));
            }
        }
        // stable: a tail's own lines keep their order on equal times
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let end = all.len().saturating_sub(scroll);
        all.into_iter()
            .take(end)
            .skip(end.saturating_sub(rows))
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
    let chosen = m.sel.min(m.tails.len() - 1);
    for (i, (job, _, logs)) in m.tails.iter().enumerate() {
        let (mark, style) = if i == chosen && m.tails.len() > 1 {
            ("▸", p.ink(identity(p, i)).add_modifier(Modifier::REVERSED))
        } else {
            ("■", p.ink(identity(p, i)))
        };
        head.push(Span::styled(format!("{mark} {} ", cell(job)), style));
        if let Some(why) = &logs.error {
            head.push(Span::styled(format!("({}) ", cell(why)), p.ink(p.fail)));
        }
    }
    m.shown.set(rows);
    let scroll = m.scroll.min(m.total().saturating_sub(rows));
    if scroll > 0 {
        head.push(Span::styled(
            format!("· ↑ {scroll} lines back (PgDn/End to follow)"),
            p.ink(p.warn),
        ));
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

    /// Two tails, `n` lines each, interleaved in time (a0 b0 a1 b1 ...).
    fn two(n: usize) -> Merged {
        let mut m = Merged::default();
        for (i, job) in ["a", "b"].iter().enumerate() {
            let mut logs = LogBuffer::new();
            for k in 0..n {
                logs.line("stdout", &format!("{job}{k}"), (2 * k + i) as f64);
            }
            m.tails.push(((*job).to_owned(), i as u64 + 1, logs));
        }
        m
    }

    fn texts(m: &Merged, rows: usize) -> Vec<String> {
        m.tail(rows).into_iter().map(|(_, t)| t).collect()
    }

    #[test]
    fn page_up_goes_back_and_page_down_returns_to_the_end() {
        let mut m = two(10);
        m.shown.set(4);
        assert_eq!(texts(&m, 4), ["a8", "b8", "a9", "b9"]);
        m.scroll_by(10);
        assert_eq!(m.scroll, 10);
        assert_eq!(texts(&m, 4), ["a3", "b3", "a4", "b4"]);
        // no further back than the first page
        m.scroll_by(100);
        assert_eq!(m.scroll, 16);
        assert_eq!(texts(&m, 4), ["a0", "b0", "a1", "b1"]);
        m.scroll_by(-10);
        m.scroll_by(-10);
        assert_eq!(m.scroll, 0, "following again");
        assert_eq!(texts(&m, 4), ["a8", "b8", "a9", "b9"]);
    }

    #[test]
    fn x_drops_the_chosen_job_and_keeps_the_others_lines() {
        let mut m = two(3);
        m.choose(5);
        assert_eq!(m.sel, 1, "no further than the last job");
        assert_eq!(m.remove_chosen(), Some(("b".to_owned(), 2)));
        assert_eq!(texts(&m, 10), ["a0", "a1", "a2"]);
        assert_eq!(m.sel, 0);
        // a straggler of the dropped stream finds no tail
        assert!(!m.take(2, &LogEvent::Line("stdout".into(), "late".into()), 9.0));
        m.choose(-3);
        assert_eq!(m.remove_chosen(), Some(("a".to_owned(), 1)));
        assert_eq!(m.remove_chosen(), None);
        assert_eq!(m.sel, 0);
    }

    #[test]
    fn new_lines_do_not_move_a_scrolled_view() {
        let mut m = two(10);
        m.shown.set(4);
        m.scroll_by(4);
        let before = texts(&m, 4);
        let line = LogEvent::Line("stdout".into(), "fresh".into());
        assert!(m.take(1, &line, 100.0));
        assert!(m.take(2, &line, 101.0));
        assert_eq!(texts(&m, 4), before);
        m.scroll = 0;
        assert_eq!(texts(&m, 2), ["fresh", "fresh"]);
        // while following, new lines show at once
        assert!(m.take(1, &LogEvent::Line("stdout".into(), "newest".into()), 102.0));
        assert_eq!(texts(&m, 1), ["newest"]);
    }
}
