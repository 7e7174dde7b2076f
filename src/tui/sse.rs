//! The Server-Sent Events framing of `GET /jobs/{name}/logs`, read from
//! the bytes as they arrive: `event:` and `data:` fields, a blank line
//! ends an event, lines starting with `:` are comments (the daemon's
//! keep-alive `: ping` and its `: N lines skipped`). Pure.

/// What the stream said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// One event: its type (`message` when unnamed) and its data lines
    /// joined with newlines.
    Event {
        /// `line`, `end`, ...
        event: String,
        /// The payload (JSON for this daemon).
        data: String,
    },
    /// A comment line, without the colon and one leading space.
    Comment(String),
}

/// Reassembles frames from chunks cut anywhere.
#[derive(Debug, Default)]
pub struct Parser {
    pending: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl Parser {
    /// A parser at the start of a stream.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Takes the next chunk; returns the frames it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Frame> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(off) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + off;
            let mut line = &self.pending[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, &mut out);
        }
        self.pending.drain(..start);
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<Frame>) {
        if line.is_empty() {
            let event = self.event.take();
            if !self.data.is_empty() {
                out.push(Frame::Event {
                    event: event.unwrap_or_else(|| "message".to_owned()),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            out.push(Frame::Comment(
                comment.strip_prefix(' ').unwrap_or(comment).to_owned(),
            ));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => self.data.push(value.to_owned()),
            _ => {}
        }
    }
}

/// The count of a `: N lines skipped` comment.
pub fn skipped_lines(comment: &str) -> Option<u64> {
    comment.strip_suffix(" lines skipped")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: &str, data: &str) -> Frame {
        Frame::Event {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn frames_come_whole_from_chunks_cut_anywhere() {
        let stream = b"event: line\ndata: {\"stream\": \"stdout\", \"line\": \"a\"}\n\n: ping\n\nevent: end\r\ndata: {}\r\n\r\n";
        let whole = Parser::new().feed(stream);
        let expected = vec![
            event("line", "{\"stream\": \"stdout\", \"line\": \"a\"}"),
            Frame::Comment("ping".to_owned()),
            event("end", "{}"),
        ];
        assert_eq!(whole, expected);
        for cut in 1..stream.len() {
            let mut p = Parser::new();
            let mut got = p.feed(&stream[..cut]);
            got.extend(p.feed(&stream[cut..]));
            assert_eq!(got, expected, "cut at {cut}");
        }
        let mut p = Parser::new();
        let mut got = Vec::new();
        for b in stream {
            got.extend(p.feed(&[*b]));
        }
        assert_eq!(got, expected, "byte by byte");
    }

    #[test]
    fn data_lines_join_and_unnamed_events_are_messages() {
        let got = Parser::new().feed(b"data: one\ndata:two\nid: 7\n\nevent: x\n\n");
        assert_eq!(got, vec![event("message", "one\ntwo")]);
        // a type without data dispatches nothing and does not stick
        let got = Parser::new().feed(b"event: x\n\ndata: y\n\n");
        assert_eq!(got, vec![event("message", "y")]);
        // a split UTF-8 character survives the cut
        let text = "data: é\n\n".as_bytes();
        let mut p = Parser::new();
        let mut got = p.feed(&text[..7]);
        got.extend(p.feed(&text[7..]));
        assert_eq!(got, vec![event("message", "é")]);
    }

    #[test]
    fn skipped_counts_read_from_the_comment() {
        assert_eq!(skipped_lines("12 lines skipped"), Some(12));
        assert_eq!(skipped_lines("ping"), None);
    }
}
