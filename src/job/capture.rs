//! Captured output: splitting a byte stream into lines, skipping over-long
//! lines, echoing each line with the stream prefix, and keeping the first
//! and last halves of `saveLimit` lines for reports.

use std::collections::VecDeque;

/// What is kept of one captured stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retention {
    top: Vec<String>,
    bottom: VecDeque<String>,
    top_room: usize,
    bottom_room: usize,
    discarded: u64,
    keep_nothing: bool,
}

impl Retention {
    /// Keeps up to `save_limit` lines: the first `save_limit / 2` and the
    /// last `save_limit - save_limit / 2`.
    pub fn new(save_limit: usize) -> Self {
        let top = save_limit / 2;
        Retention {
            top: Vec::new(),
            bottom: VecDeque::new(),
            top_room: top,
            bottom_room: save_limit - top,
            discarded: 0,
            keep_nothing: save_limit == 0,
        }
    }

    /// Records one line (with its newline, if it had one).
    pub fn push(&mut self, line: String) {
        if self.keep_nothing {
            self.discarded += 1;
        } else if self.top_room > 0 {
            self.top_room -= 1;
            self.top.push(line);
        } else if self.bottom_room > 0 {
            self.bottom_room -= 1;
            self.bottom.push_back(line);
        } else {
            self.bottom.pop_front();
            self.discarded += 1;
            self.bottom.push_back(line);
        }
    }

    /// Lines dropped from the middle (or all of them with `saveLimit: 0`).
    pub fn discarded(&self) -> u64 {
        self.discarded
    }

    /// True when nothing was retained and nothing discarded.
    pub fn is_empty(&self) -> bool {
        self.top.is_empty() && self.bottom.is_empty() && self.discarded == 0
    }

    /// The retained text: the first lines, a marker naming how many lines
    /// were dropped (when some were and the tail is kept), the last lines.
    pub fn text(&self) -> String {
        let mut out: String = self.top.concat();
        if !self.bottom.is_empty() {
            if self.discarded > 0 {
                out.push_str(&format!(
                    "   [.... {} lines discarded ...]\n",
                    self.discarded
                ));
            }
            for line in &self.bottom {
                out.push_str(line);
            }
        }
        out
    }
}

/// Splits a byte stream into lines as chunks arrive, without buffering more
/// than `max_line_length` bytes of one line.
#[derive(Debug)]
pub struct LineSplitter {
    max_line_length: usize,
    partial: Vec<u8>,
    /// Inside a line already known to be too long: drop bytes until `\n`.
    skipping: bool,
}

/// One event from [`LineSplitter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A complete line, decoded (invalid UTF-8 replaced), with its `\n`
    /// when it had one.
    Line(String),
    /// A line longer than `maxLineLength` was dropped.
    TooLong,
}

impl LineSplitter {
    /// A splitter that drops lines longer than `max_line_length` bytes.
    pub fn new(max_line_length: usize) -> Self {
        LineSplitter {
            max_line_length: max_line_length.max(1),
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Feeds a chunk; complete lines (and skips) are appended to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Piece>) {
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(pos) => {
                    let (head, rest) = chunk.split_at(pos + 1);
                    chunk = rest;
                    if self.skipping {
                        self.skipping = false;
                        continue;
                    }
                    if self.partial.len() + pos > self.max_line_length {
                        self.partial.clear();
                        out.push(Piece::TooLong);
                        continue;
                    }
                    self.partial.extend_from_slice(head);
                    out.push(Piece::Line(decode(&self.partial)));
                    self.partial.clear();
                }
                None => {
                    if !self.skipping {
                        if self.partial.len() + chunk.len() > self.max_line_length {
                            self.partial.clear();
                            self.skipping = true;
                            out.push(Piece::TooLong);
                        } else {
                            self.partial.extend_from_slice(chunk);
                        }
                    }
                    chunk = &[];
                }
            }
        }
    }

    /// Ends the stream: a final line without `\n` is emitted as is.
    pub fn finish(&mut self, out: &mut Vec<Piece>) {
        if !self.skipping && !self.partial.is_empty() {
            out.push(Piece::Line(decode(&self.partial)));
        }
        self.partial.clear();
        self.skipping = false;
    }
}

fn decode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Formats `streamPrefix` for one stream: `{job_name}` and `{stream_name}`
/// are replaced, `{{`/`}}` are literal braces.
pub fn format_prefix(template: &str, job_name: &str, stream_name: &str) -> String {
    let mut out = String::with_capacity(template.len() + job_name.len());
    let mut rest = template;
    while let Some(pos) = rest.find(['{', '}']) {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{job_name}") {
            out.push_str(job_name);
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{stream_name}") {
            out.push_str(stream_name);
            rest = after;
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("l{i}\n")).collect()
    }

    #[test]
    fn keeps_everything_under_the_limit() {
        let mut r = Retention::new(10);
        for l in lines(4) {
            r.push(l);
        }
        assert_eq!(r.text(), "l1\nl2\nl3\nl4\n");
        assert_eq!(r.discarded(), 0);
    }

    #[test]
    fn keeps_head_and_tail_with_a_marker() {
        let mut r = Retention::new(4);
        for l in lines(10) {
            r.push(l);
        }
        assert_eq!(r.discarded(), 6);
        assert_eq!(
            r.text(),
            "l1\nl2\n   [.... 6 lines discarded ...]\nl9\nl10\n"
        );
    }

    #[test]
    fn odd_limit_gives_the_extra_line_to_the_tail() {
        let mut r = Retention::new(3);
        for l in lines(6) {
            r.push(l);
        }
        assert_eq!(r.text(), "l1\n   [.... 3 lines discarded ...]\nl5\nl6\n");
    }

    #[test]
    fn limit_one_keeps_only_the_last_line() {
        let mut r = Retention::new(1);
        for l in lines(3) {
            r.push(l);
        }
        assert_eq!(r.text(), "   [.... 2 lines discarded ...]\nl3\n");
    }

    #[test]
    fn zero_limit_counts_every_line_as_discarded() {
        let mut r = Retention::new(0);
        for l in lines(5) {
            r.push(l);
        }
        assert_eq!(r.text(), "");
        assert_eq!(r.discarded(), 5);
        assert!(!r.is_empty(), "discarded output still counts as output");
    }

    #[test]
    fn splitter_handles_chunk_boundaries_and_a_final_partial_line() {
        let mut s = LineSplitter::new(100);
        let mut out = Vec::new();
        s.feed(b"ab", &mut out);
        s.feed(b"c\nde", &mut out);
        s.feed(b"f\n\ng", &mut out);
        s.finish(&mut out);
        assert_eq!(
            out,
            vec![
                Piece::Line("abc\n".into()),
                Piece::Line("def\n".into()),
                Piece::Line("\n".into()),
                Piece::Line("g".into()),
            ]
        );
    }

    #[test]
    fn splitter_skips_lines_over_the_limit_without_buffering_them() {
        let mut s = LineSplitter::new(4);
        let mut out = Vec::new();
        s.feed(b"ok\n0123456", &mut out);
        s.feed(b"789", &mut out);
        assert!(s.partial.is_empty(), "an over-long line is not buffered");
        s.feed(b"abc\nfine\n", &mut out);
        s.feed(b"toolong!\nx", &mut out);
        s.finish(&mut out);
        assert_eq!(
            out,
            vec![
                Piece::Line("ok\n".into()),
                Piece::TooLong,
                Piece::Line("fine\n".into()),
                Piece::TooLong,
                Piece::Line("x".into()),
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut s = LineSplitter::new(100);
        let mut out = Vec::new();
        s.feed(b"a\xffb\n", &mut out);
        assert_eq!(out, vec![Piece::Line("a\u{fffd}b\n".into())]);
    }

    #[test]
    fn prefix_placeholders() {
        assert_eq!(
            format_prefix("[{job_name} {stream_name}] ", "backup", "stderr"),
            "[backup stderr] "
        );
        assert_eq!(format_prefix("", "a", "b"), "");
        assert_eq!(format_prefix("{{x}} {job_name}{", "j", "s"), "{x} j{");
    }
}
