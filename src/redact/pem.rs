//! PEM private-key blocks: the header line pattern, and the line walk that
//! redacts a block's body, which no per-line pattern can recognize.

use std::borrow::Cow;

use super::scan::{class_run, find_from, fold, match_ci};
use super::{redact, Hit, REDACTED};

/// The end of a `-----BEGIN … PRIVATE KEY-----` (or `END`, per `word`:
/// `"begin "` or `"end "`) marker starting at `at`, any case. The label
/// between is `[A-Z0-9 ]*`; its run is maximal, and `PRIVATE KEY` must close
/// it exactly, since the `-` after it is outside the class.
fn marker_at(text: &str, at: usize, word: &str) -> Option<usize> {
    let dashes = "-----";
    let label = match_ci(text, at + dashes.len(), word)?;
    let (end, count) = class_run(text, label, |c| {
        c.is_ascii_digit() || c == ' ' || fold(c).is_some()
    });
    if count < "private key".len() || !text[end..].starts_with(dashes) {
        return None;
    }
    let tail = text[..end].chars().rev().take(11);
    let spelled = tail.zip("yek etavirp".chars()).all(|(c, want)| {
        if want == ' ' {
            c == ' '
        } else {
            fold(c) == Some(want)
        }
    });
    spelled.then_some(end + dashes.len())
}

/// The leftmost marker (start, end) at or after `from`.
fn search(text: &str, from: usize, word: &str) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(p) = find_from(text, at, "-----") {
        if let Some(end) = marker_at(text, p, word) {
            return Some((p, end));
        }
        at = p + 1;
    }
    None
}

/// Pattern 12: a private-key header and the rest of its line (up to a
/// `\n`; a `\r` is redacted with it, as the original's `.*` does).
pub(super) fn find_header_line(text: &str, pos: usize) -> Option<Hit> {
    let (start, end) = search(text, pos, "begin ")?;
    let stop = text.as_bytes()[end..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |i| end + i);
    Some(Hit {
        cut: (start, stop),
        end: stop,
    })
}

/// Whether a PEM block is open after `line`, given whether it was before:
/// the markers are walked in position order, so a line carrying an `END`
/// and the next key's `BEGIN` ends open.
fn open_after(line: &str, mut open: bool) -> bool {
    let mut pos = 0;
    while let Some((_, end)) = search(line, pos, if open { "end " } else { "begin " }) {
        open = !open;
        pos = end;
    }
    open
}

/// Whether the lines start inside a block whose `BEGIN` was cut off (the
/// first marker is an `END`): the bounded output ring evicted the header
/// of a key printed early, and its body must still not leak.
fn starts_open<S: AsRef<str>>(lines: &[S]) -> bool {
    for line in lines {
        let line = line.as_ref();
        if !line.contains("-----") {
            continue;
        }
        let begin = search(line, 0, "begin ");
        let end = search(line, 0, "end ");
        match (begin, end) {
            (None, None) => continue,
            (_, None) => return false,
            (None, Some(_)) => return true,
            (Some(b), Some(e)) => return e.0 < b.0,
        }
    }
    false
}

/// Redacts an ordered sequence of output lines (a run's archived output):
/// [`redact`] on each line, and every line of a PEM private-key block from
/// its `BEGIN` line's end through its `END` line replaced by [`REDACTED`]
/// whole. An unterminated block stays redacted to the last line; lines
/// that begin inside a block (its `BEGIN` evicted) are redacted up to the
/// `END`. Unchanged lines are borrowed.
pub fn redact_lines<S: AsRef<str>>(lines: &[S]) -> Vec<Cow<'_, str>> {
    let mut open = starts_open(lines);
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let line = line.as_ref();
        out.push(if open {
            Cow::Borrowed(REDACTED)
        } else {
            redact(line)
        });
        if line.contains("-----") {
            open = open_after(line, open);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_need_private_key_right_before_the_closing_dashes() {
        let text = "x -----BEGIN RSA PRIVATE KEY----- y";
        assert_eq!(search(text, 0, "begin "), Some((2, 33)));
        assert_eq!(search("-----BEGIN PRIVATE KEYS-----", 0, "begin "), None);
        assert_eq!(search("-----BEGIN PUBLIC KEY-----", 0, "begin "), None);
        assert_eq!(
            search("-----begin private key-----", 0, "begin "),
            Some((0, 27))
        );
        assert_eq!(
            search("------END EC PRIVATE KEY-----", 0, "end "),
            Some((1, 29))
        );
        assert_eq!(search("-----BEGIN PRIVATE KEY", 0, "begin "), None);
        // The label may hold any number of [A-Z0-9 ], `PRIVATE KEY` included.
        let label = "-----BEGIN PRIVATE KEY PRIVATE KEY-----";
        assert_eq!(search(label, 0, "begin "), Some((0, label.len())));
        // Folded letters count as one character each.
        let folded = "-----BEG\u{130}N PR\u{131}VATE \u{212A}EY-----";
        assert_eq!(search(folded, 0, "begin ").map(|m| m.1), Some(folded.len()));
    }

    #[test]
    fn block_state_walks_markers_in_position_order() {
        let begin = "-----BEGIN PRIVATE KEY-----";
        let end = "-----END PRIVATE KEY-----";
        assert!(open_after(begin, false));
        assert!(!open_after(&format!("{begin}{end}"), false));
        assert!(open_after(&format!("{end}{begin}"), true));
        assert!(open_after(&format!("{end}{begin}"), false));
        assert!(!open_after("-----", false));
        assert!(starts_open(&["body", end, begin]));
        assert!(!starts_open(&["body", begin, end]));
        assert!(starts_open(&[format!("{end} {begin}")]));
        assert!(!starts_open(&["no markers", "-----"]));
    }
}
