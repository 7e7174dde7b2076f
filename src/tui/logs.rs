//! The Logs tab's buffer: the lines of a job's SSE log stream across
//! reconnects. Pure (the worker feeds it what the stream says, the clock
//! is an argument).
//!
//! The daemon replays the retained lines on every attach and names no
//! run, so a follow that re-attaches after a run ended gets the same
//! finished run again. Lines replayed after an end are held aside while
//! they repeat the block on screen: a replay that repeats it whole and
//! ends is the old run again and is dropped; one that departs from it is
//! the next run, and everything held flushes through. A stream that broke
//! mid-run replays the same run on the next attach, so the buffer starts
//! over at the first line then.

use super::text;
use std::collections::VecDeque;

/// Lines kept; older ones leave from the front.
pub const MAX_LINES: usize = 5000;

/// Where a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The job's stdout.
    Out,
    /// The job's stderr.
    Err,
    /// A marker of ours (end of a run, lines skipped).
    Meta,
}

/// One line of the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Where it came from.
    pub stream: Stream,
    /// The line made safe ([`text::log_line`]), SGR kept.
    pub text: String,
    /// Its text without styling, lowercased, for the search.
    pub lower: String,
    /// When it arrived (seconds since the epoch).
    pub at: f64,
}

/// The text of the marker between runs.
pub const END_MARKER: &str = "run ended";

/// The buffer and what the stream last said.
#[derive(Debug, Default)]
pub struct LogBuffer {
    /// The lines, oldest first.
    pub entries: VecDeque<Entry>,
    /// The end reason of the last attach once it ended (`""` for a plain
    /// end, `no-output` when the job has no run to show).
    pub ended: Option<String>,
    /// Why the last attach failed, if it did (`unauthorized` after a 401).
    pub error: Option<String>,
    /// Bumped on every change (caches and the search key on it).
    pub version: u64,
    /// The next line starts the buffer over (the stream broke mid-run).
    restart_next: bool,
    /// The next attach replays a run that already ended.
    dedupe_next: bool,
    /// Replayed lines held while they repeat `expect`.
    staged: Option<Vec<Entry>>,
    /// The block on screen a replay is compared with.
    expect: Vec<(Stream, String)>,
}

impl LogBuffer {
    /// An empty buffer.
    pub fn new() -> LogBuffer {
        LogBuffer::default()
    }

    /// A new attach of the stream begins; `new_run` when the caller knows
    /// it replays a run not shown yet (no line of it is held back then).
    pub fn attach(&mut self, new_run: bool) {
        self.ended = None;
        self.error = None;
        self.staged = None;
        self.expect.clear();
        if self.dedupe_next && !new_run {
            self.expect = self.last_block();
            self.staged = Some(Vec::new());
        }
        self.dedupe_next = false;
        self.version += 1;
    }

    /// One line of the job's output arrived.
    pub fn line(&mut self, stream: &str, raw: &str, at: f64) {
        if self.restart_next {
            self.entries.clear();
            self.restart_next = false;
        }
        let stream = if stream == "stderr" {
            Stream::Err
        } else {
            Stream::Out
        };
        let clean = text::log_line(raw);
        let entry = Entry {
            stream,
            lower: text::plain(&clean).to_lowercase(),
            text: clean,
            at,
        };
        if let Some(staged) = &mut self.staged {
            let next = self.expect.get(staged.len());
            if next.is_some_and(|(s, t)| *s == entry.stream && *t == entry.text) {
                staged.push(entry);
                return;
            }
            let held = std::mem::take(staged);
            self.staged = None;
            self.entries.extend(held);
        }
        self.entries.push_back(entry);
        self.trim();
        self.version += 1;
    }

    /// The stream said the run ended (`reason` from its data).
    pub fn end(&mut self, reason: Option<&str>, at: f64) {
        let reason = reason.unwrap_or("");
        self.ended = Some(reason.to_owned());
        let staged = self.staged.take();
        let repeat = staged
            .as_ref()
            .is_some_and(|s| s.len() == self.expect.len());
        if let Some(held) = staged {
            if !repeat {
                self.entries.extend(held);
            }
        }
        self.dedupe_next = true;
        if !repeat && reason != "no-output" {
            self.meta(END_MARKER, at);
        }
        self.version += 1;
    }

    /// The daemon dropped lines this viewer had not read.
    pub fn skipped(&mut self, count: u64, at: f64) {
        self.meta(&format!("{count} lines skipped"), at);
    }

    /// The attach failed (`unauthorized` for a 401).
    pub fn fail(&mut self, why: &str) {
        self.error = Some(why.to_owned());
        // What comes next replays this run from its start.
        self.restart_next = why != "unauthorized" || !self.entries.is_empty();
        self.dedupe_next = false;
        self.staged = None;
        self.version += 1;
    }

    /// Whether the last attach ended on a 401.
    pub fn unauthorized(&self) -> bool {
        self.error.as_deref() == Some("unauthorized")
    }

    fn meta(&mut self, text: &str, at: f64) {
        self.entries.push_back(Entry {
            stream: Stream::Meta,
            text: text.to_owned(),
            lower: text.to_lowercase(),
            at,
        });
        self.trim();
        self.version += 1;
    }

    fn trim(&mut self) {
        while self.entries.len() > MAX_LINES {
            self.entries.pop_front();
        }
    }

    /// The newest run's lines on screen: those after the last marker but
    /// one (a trailing end marker is skipped).
    fn last_block(&self) -> Vec<(Stream, String)> {
        let mut block = Vec::new();
        for entry in self.entries.iter().rev() {
            if entry.stream == Stream::Meta {
                if block.is_empty() {
                    continue;
                }
                break;
            }
            block.push((entry.stream, entry.text.clone()));
        }
        block.reverse();
        block
    }

    /// The indices of the entries whose text holds `needle` (lowercase).
    pub fn matches(&self, needle: &str) -> Vec<usize> {
        if needle.is_empty() {
            return Vec::new();
        }
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.stream != Stream::Meta && e.lower.contains(needle))
            .map(|(i, _)| i)
            .collect()
    }

    /// The whole buffer as plain text, one line each (for `d`).
    pub fn export(&self) -> String {
        let mut out = String::new();
        for entry in &self.entries {
            match entry.stream {
                Stream::Meta => out.push_str(&format!("-- {} --", entry.text)),
                _ => out.push_str(&text::plain(&entry.text)),
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(buf: &LogBuffer) -> Vec<String> {
        buf.entries.iter().map(|e| e.text.clone()).collect()
    }

    fn run(buf: &mut LogBuffer, lines: &[&str], reason: Option<&str>) {
        buf.attach(false);
        for line in lines {
            buf.line("stdout", line, 0.0);
        }
        buf.end(reason, 0.0);
    }

    #[test]
    fn a_replayed_run_is_dropped_and_a_new_one_stacks() {
        let mut buf = LogBuffer::new();
        run(&mut buf, &["a", "b"], None);
        assert_eq!(texts(&buf), ["a", "b", END_MARKER]);
        // follow re-attaches: the same finished run comes again
        run(&mut buf, &["a", "b"], None);
        assert_eq!(texts(&buf), ["a", "b", END_MARKER]);
        // the next run starts like the last one but goes on
        run(&mut buf, &["a", "c"], None);
        assert_eq!(texts(&buf), ["a", "b", END_MARKER, "a", "c", END_MARKER]);
        // a shorter run that is a prefix of the last: held, then flushed
        run(&mut buf, &["a"], None);
        assert_eq!(
            texts(&buf),
            ["a", "b", END_MARKER, "a", "c", END_MARKER, "a", END_MARKER]
        );
    }

    #[test]
    fn a_run_known_to_be_new_shows_even_when_it_repeats_the_last() {
        let mut buf = LogBuffer::new();
        run(&mut buf, &["same"], None);
        buf.attach(true);
        buf.line("stdout", "same", 0.0);
        buf.end(None, 0.0);
        assert_eq!(texts(&buf), ["same", END_MARKER, "same", END_MARKER]);
    }

    #[test]
    fn no_output_adds_no_marker() {
        let mut buf = LogBuffer::new();
        run(&mut buf, &[], Some("no-output"));
        assert!(buf.entries.is_empty());
        assert_eq!(buf.ended.as_deref(), Some("no-output"));
        run(&mut buf, &[], Some("no-output"));
        assert!(buf.entries.is_empty());
        run(&mut buf, &["first"], None);
        assert_eq!(texts(&buf), ["first", END_MARKER]);
    }

    #[test]
    fn a_broken_stream_replays_its_run_from_the_start() {
        let mut buf = LogBuffer::new();
        buf.attach(false);
        buf.line("stdout", "1", 0.0);
        buf.line("stderr", "2", 0.0);
        buf.fail("connection reset");
        assert_eq!(buf.error.as_deref(), Some("connection reset"));
        buf.attach(false);
        assert_eq!(buf.error, None);
        buf.line("stdout", "1", 0.0);
        assert_eq!(texts(&buf), ["1"], "the replay replaces the broken copy");
        buf.line("stderr", "2", 0.0);
        buf.line("stdout", "3", 0.0);
        assert_eq!(texts(&buf), ["1", "2", "3"]);
        assert_eq!(buf.entries[1].stream, Stream::Err);
    }

    #[test]
    fn a_401_keeps_nothing_it_did_not_have() {
        let mut buf = LogBuffer::new();
        buf.attach(false);
        buf.fail("unauthorized");
        assert!(buf.unauthorized());
        buf.attach(false);
        buf.line("stdout", "x", 0.0);
        assert_eq!(texts(&buf), ["x"]);
    }

    #[test]
    fn lines_are_sanitized_capped_and_searchable() {
        let mut buf = LogBuffer::new();
        buf.attach(false);
        buf.line("stdout", "\x1b[31mRed\x1b[0m\x1b]52;c;x\x07 Alert\r", 1.0);
        assert_eq!(buf.entries[0].text, "\x1b[31mRed\x1b[0m Alert");
        assert_eq!(buf.entries[0].lower, "red alert");
        for i in 0..MAX_LINES + 10 {
            buf.line("stdout", &format!("line {i}"), 0.0);
        }
        assert_eq!(buf.entries.len(), MAX_LINES);
        assert_eq!(buf.entries[0].text, "line 10");
        assert_eq!(buf.matches("line 5009"), vec![4999]);
        assert!(buf.matches("").is_empty());
        buf.skipped(7, 0.0);
        assert_eq!(buf.entries.back().unwrap().text, "7 lines skipped");
        assert!(buf.export().ends_with("line 5009\n-- 7 lines skipped --\n"));
    }

    #[test]
    fn every_change_bumps_the_version() {
        let mut buf = LogBuffer::new();
        let v0 = buf.version;
        buf.attach(false);
        buf.line("stdout", "a", 0.0);
        buf.end(None, 0.0);
        assert!(buf.version > v0 + 2);
    }
}
