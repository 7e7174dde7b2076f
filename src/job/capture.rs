//! Captured output: splitting a byte stream into lines, skipping over-long
//! lines, echoing each line with the stream prefix, and keeping the first
//! and last halves of `saveLimit` lines for reports.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

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

/// Lines of one run kept for viewers who connect late (`GET
/// /jobs/{name}/logs` replays them before following the run live).
pub const LIVE_LOG_LIMIT: usize = 1000;

/// How many published events a live viewer may fall behind before it
/// loses the oldest ones. A slow client never slows the capture: the
/// channel overwrites instead of waiting.
pub const LIVE_SUBSCRIBER_QUEUE: usize = 8192;

/// One event of a run's live output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveEvent {
    /// A captured line, without its trailing newline.
    Line {
        /// `"stdout"` or `"stderr"`.
        stream: &'static str,
        /// The text (shared with the replay ring, so no copy per viewer).
        text: Arc<str>,
    },
    /// The run's output is complete.
    End,
}

#[derive(Debug)]
struct LiveState {
    lines: VecDeque<(&'static str, Arc<str>)>,
    closed: bool,
    /// Made by the first viewer: a channel holds all its
    /// [`LIVE_SUBSCRIBER_QUEUE`] slots from the start (about 600 KiB), and
    /// most runs are never watched, so an eager one made every running
    /// job cost that much (3 GB at 5,000 concurrent jobs).
    tx: Option<broadcast::Sender<LiveEvent>>,
}

/// The observable output of one run: a bounded ring of its most recent
/// lines plus a broadcast of new ones. Publishing and subscribing take the
/// same lock, so a viewer's replay and its live feed neither overlap nor
/// leave a gap.
#[derive(Debug)]
pub struct LiveOutput {
    state: Mutex<LiveState>,
}

/// A viewer's starting point: the lines so far, the feed of later events,
/// and whether the output had already ended when it subscribed.
#[derive(Debug)]
pub struct LiveSubscription {
    /// Lines captured before the subscription, oldest first.
    pub replay: Vec<(&'static str, Arc<str>)>,
    /// Events published after the subscription.
    pub feed: broadcast::Receiver<LiveEvent>,
    /// The run had already finished: nothing will follow the replay.
    pub ended: bool,
}

impl Default for LiveOutput {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveOutput {
    /// An empty, open output.
    pub fn new() -> Self {
        LiveOutput {
            state: Mutex::new(LiveState {
                lines: VecDeque::new(),
                closed: false,
                tx: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic while holding this lock cannot leave the ring
        // inconsistent (every update is a single push or flag), so a
        // poisoned lock is still safe to use.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one line (its trailing newline is dropped) and sends it to
    /// the live viewers, if there are any.
    pub fn publish(&self, stream: &'static str, line: &str) {
        let text: Arc<str> = Arc::from(line.strip_suffix('\n').unwrap_or(line));
        let mut state = self.lock();
        if state.closed {
            return;
        }
        if state.lines.len() == LIVE_LOG_LIMIT {
            state.lines.pop_front();
        }
        state.lines.push_back((stream, Arc::clone(&text)));
        // Without viewers there is nothing to send (and sending would fail).
        if let Some(tx) = state.tx.as_ref().filter(|tx| tx.receiver_count() > 0) {
            let _ = tx.send(LiveEvent::Line { stream, text });
        }
    }

    /// Marks the output complete; viewers get [`LiveEvent::End`].
    pub fn close(&self) {
        let mut state = self.lock();
        if !state.closed {
            state.closed = true;
            if let Some(tx) = &state.tx {
                let _ = tx.send(LiveEvent::End);
            }
        }
    }

    /// Subscribes: the retained lines plus the feed of what follows.
    pub fn subscribe(&self) -> LiveSubscription {
        let mut state = self.lock();
        let feed = state
            .tx
            .get_or_insert_with(|| broadcast::channel(LIVE_SUBSCRIBER_QUEUE).0)
            .subscribe();
        LiveSubscription {
            replay: state.lines.iter().cloned().collect(),
            feed,
            ended: state.closed,
        }
    }

    /// The retained lines, oldest first, without subscribing (a poll of
    /// the output, such as the MCP log tail, makes no channel).
    pub fn lines(&self) -> Vec<(&'static str, Arc<str>)> {
        self.lock().lines.iter().cloned().collect()
    }

    /// True once the output is complete.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
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

    #[test]
    fn live_output_replays_then_follows_then_ends() {
        let out = LiveOutput::new();
        out.publish("stdout", "one\n");
        let mut sub = out.subscribe();
        assert_eq!(sub.replay, vec![("stdout", Arc::from("one"))]);
        assert!(!sub.ended);
        out.publish("stderr", "two");
        out.close();
        out.publish("stdout", "late\n");
        assert_eq!(
            sub.feed.try_recv().ok(),
            Some(LiveEvent::Line {
                stream: "stderr",
                text: Arc::from("two")
            })
        );
        assert_eq!(sub.feed.try_recv().ok(), Some(LiveEvent::End));
        assert!(sub.feed.try_recv().is_err(), "nothing after the end");
        let late = out.subscribe();
        assert!(late.ended);
        assert_eq!(late.replay.len(), 2, "a closed output ignores new lines");
    }

    #[test]
    fn an_unwatched_run_has_no_broadcast_channel() {
        let out = LiveOutput::new();
        out.publish("stdout", "one\n");
        out.close();
        assert!(out.lock().tx.is_none(), "no viewer, no channel");
        let watched = LiveOutput::new();
        let mut sub = watched.subscribe();
        assert!(watched.lock().tx.is_some());
        watched.publish("stdout", "two\n");
        assert_eq!(
            sub.feed.try_recv().ok(),
            Some(LiveEvent::Line {
                stream: "stdout",
                text: Arc::from("two")
            })
        );
    }

    #[test]
    fn live_ring_keeps_only_the_newest_lines() {
        let out = LiveOutput::new();
        for i in 0..LIVE_LOG_LIMIT + 5 {
            out.publish("stdout", &format!("{i}\n"));
        }
        let sub = out.subscribe();
        assert_eq!(sub.replay.len(), LIVE_LOG_LIMIT);
        assert_eq!(&*sub.replay[0].1, "5");
    }

    #[test]
    fn a_lagging_viewer_loses_the_oldest_lines_not_the_end() {
        let out = LiveOutput::new();
        let mut sub = out.subscribe();
        for i in 0..LIVE_SUBSCRIBER_QUEUE + 10 {
            out.publish("stdout", &format!("{i}"));
        }
        out.close();
        match sub.feed.try_recv() {
            Err(broadcast::error::TryRecvError::Lagged(n)) => assert_eq!(n, 11),
            other => panic!("expected a lag, got {other:?}"),
        }
        let mut last = None;
        while let Ok(event) = sub.feed.try_recv() {
            last = Some(event);
        }
        assert_eq!(last, Some(LiveEvent::End));
    }
}
