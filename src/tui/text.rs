//! Making server text safe to paint, and fitting it into cells.
//!
//! Everything the dashboard shows comes from the daemon, and under
//! clustering job and node names come from other machines: a job's output
//! or a name must never move the cursor, retitle the window or write the
//! clipboard (OSC 52). Log lines keep their SGR styling (bold, colors),
//! which [`spans`] turns into styles; every other escape sequence and every
//! control character is dropped. Table cells ([`cell`]) keep no styling at
//! all. Pure functions, no I/O.

use unicode_width::UnicodeWidthChar;

/// A color a job asked for with SGR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsiColor {
    /// One of the 16 basic colors (0-7 normal, 8-15 bright): the theme
    /// re-inks these so they stay legible on its background.
    Basic(u8),
    /// A 256-color palette index (`38;5;n`).
    Indexed(u8),
    /// A true color (`38;2;r;g;b`).
    Rgb(u8, u8, u8),
}

/// The SGR state a run of log text is painted in. Backgrounds are not
/// kept: the dashboard owns the background.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sgr {
    /// Foreground, or the theme's text color.
    pub fg: Option<AnsiColor>,
    /// SGR 1.
    pub bold: bool,
    /// SGR 2.
    pub dim: bool,
    /// SGR 3.
    pub italic: bool,
    /// SGR 4.
    pub underline: bool,
    /// SGR 7.
    pub reverse: bool,
}

/// Columns between tab stops.
const TAB: usize = 8;

/// One piece of text split on escape sequences.
enum Piece<'a> {
    /// Text without ESC (it may still hold other control characters).
    Text(&'a str),
    /// An SGR sequence's parameters (`1;31` of `ESC[1;31m`).
    Sgr(&'a str),
    /// Any other escape sequence, dropped.
    Other,
}

/// Splits `text` into text, SGR sequences and other escapes (ECMA-48:
/// CSI, OSC, DCS/SOS/PM/APC strings, two-byte escapes, a bare ESC).
/// An unterminated sequence swallows the rest of the text.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(off) = bytes[i..].iter().position(|&b| b == 0x1b) else {
            out.push(Piece::Text(&text[i..]));
            break;
        };
        if off > 0 {
            out.push(Piece::Text(&text[i..i + off]));
        }
        let start = i + off;
        let Some(&kind) = bytes.get(start + 1) else {
            out.push(Piece::Other);
            break;
        };
        let end = match kind {
            b'[' => {
                let mut j = start + 2;
                while j < bytes.len() && (0x30..=0x3f).contains(&bytes[j]) {
                    j += 1;
                }
                let params_end = j;
                while j < bytes.len() && (0x20..=0x2f).contains(&bytes[j]) {
                    j += 1;
                }
                match bytes.get(j) {
                    Some(&fin) if (0x40..=0x7e).contains(&fin) => {
                        let params = &text[start + 2..params_end];
                        let sgr = fin == b'm'
                            && params_end == j
                            && params.bytes().all(|b| b.is_ascii_digit() || b == b';');
                        out.push(if sgr {
                            Piece::Sgr(params)
                        } else {
                            Piece::Other
                        });
                        j + 1
                    }
                    // Broken off by a byte no CSI holds: the sequence
                    // ends there; at the end of the text it swallows it.
                    Some(_) => {
                        out.push(Piece::Other);
                        j
                    }
                    None => {
                        out.push(Piece::Other);
                        bytes.len()
                    }
                }
            }
            b']' | b'P' | b'X' | b'^' | b'_' => {
                out.push(Piece::Other);
                string_end(bytes, start + 2, kind == b']')
            }
            _ => {
                out.push(Piece::Other);
                let mut j = start + 1;
                while j < bytes.len() && (0x20..=0x2f).contains(&bytes[j]) {
                    j += 1;
                }
                match bytes.get(j) {
                    Some(&fin) if (0x30..=0x7e).contains(&fin) => j + 1,
                    // ESC before a non-ASCII or control byte: drop the ESC
                    // alone and read on from there.
                    Some(_) => j,
                    None => bytes.len(),
                }
            }
        };
        i = end;
    }
    out
}

/// Where a control string that starts at `from` ends: after its ST
/// (`ESC \`), or after BEL for an OSC; the end of the text when it never
/// ends.
fn string_end(bytes: &[u8], from: usize, bel_ends: bool) -> usize {
    let mut j = from;
    while j < bytes.len() {
        match bytes[j] {
            0x07 if bel_ends => return j + 1,
            0x1b if bytes.get(j + 1) == Some(&b'\\') => return j + 2,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// Whether `c` is dropped from text: C0 controls (tab aside), DEL, the
/// 8-bit C1 controls (one-character forms of CSI, OSC, ...) and the
/// bidirectional overrides, which reorder what follows them on screen.
fn dropped(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{a}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The visible text of `text`: escapes and controls dropped, tabs kept.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        if let Piece::Text(t) = piece {
            out.extend(t.chars().filter(|&c| !dropped(c)));
        }
    }
    out
}

/// A job's output line made safe to keep and paint: of the `\r`-separated
/// segments only the last one with visible text stays (a progress bar's
/// final state; the CR of a CRLF line), tabs expand to the next multiple
/// of eight columns, SGR sequences stay, and every other escape and
/// control character goes.
pub fn log_line(raw: &str) -> String {
    let segment = if raw.contains('\r') {
        raw.rsplit('\r')
            .find(|s| !visible(s).is_empty())
            .unwrap_or("")
    } else {
        raw
    };
    let mut out = String::with_capacity(segment.len());
    let mut column = 0;
    for piece in pieces(segment) {
        match piece {
            Piece::Text(t) => {
                for c in t.chars() {
                    if c == '\t' {
                        let spaces = TAB - column % TAB;
                        out.extend(std::iter::repeat_n(' ', spaces));
                        column += spaces;
                    } else if !dropped(c) {
                        out.push(c);
                        column += c.width().unwrap_or(0);
                    }
                }
            }
            Piece::Sgr(params) => {
                out.push_str("\x1b[");
                out.push_str(params);
                out.push('m');
            }
            Piece::Other => {}
        }
    }
    out
}

/// The text of a line [`log_line`] made, without its SGR sequences.
pub fn plain(clean: &str) -> String {
    if !clean.contains('\x1b') {
        return clean.to_owned();
    }
    visible(clean)
}

/// A line [`log_line`] made, as runs of text each in one SGR state.
pub fn spans(clean: &str) -> Vec<(Sgr, String)> {
    let mut out: Vec<(Sgr, String)> = Vec::new();
    let mut state = Sgr::default();
    for piece in pieces(clean) {
        match piece {
            Piece::Text(t) if !t.is_empty() => match out.last_mut() {
                Some((s, text)) if *s == state => text.push_str(t),
                _ => out.push((state, t.to_owned())),
            },
            Piece::Sgr(params) => apply_sgr(&mut state, params),
            _ => {}
        }
    }
    out
}

/// Applies one SGR sequence's parameters to `state`.
pub fn apply_sgr(state: &mut Sgr, params: &str) {
    let codes: Vec<u32> = params
        .split(';')
        .map(|p| {
            if p.is_empty() {
                0
            } else {
                p.parse().unwrap_or(u32::MAX)
            }
        })
        .collect();
    let mut i = 0;
    while i < codes.len() {
        match codes[i] {
            0 => *state = Sgr::default(),
            1 => state.bold = true,
            2 => state.dim = true,
            3 => state.italic = true,
            4 => state.underline = true,
            7 => state.reverse = true,
            22 => {
                state.bold = false;
                state.dim = false;
            }
            23 => state.italic = false,
            24 => state.underline = false,
            27 => state.reverse = false,
            c @ 30..=37 => state.fg = Some(AnsiColor::Basic((c - 30) as u8)),
            c @ 90..=97 => state.fg = Some(AnsiColor::Basic((c - 90 + 8) as u8)),
            39 => state.fg = None,
            c @ (38 | 48) => {
                let byte = |k: usize| codes.get(i + k).and_then(|&v| u8::try_from(v).ok());
                let (color, used) = match codes.get(i + 1) {
                    Some(5) => (byte(2).map(AnsiColor::Indexed), 2),
                    Some(2) => match (byte(2), byte(3), byte(4)) {
                        (Some(r), Some(g), Some(b)) => (Some(AnsiColor::Rgb(r, g, b)), 4),
                        _ => (None, 4),
                    },
                    _ => (None, 0),
                };
                if c == 38 {
                    if let Some(color) = color {
                        state.fg = Some(color);
                    }
                }
                i += used;
            }
            // Backgrounds (40-49, 100-107) and everything else: ignored.
            _ => {}
        }
        i += 1;
    }
}

/// A string from the API (a job or node name, a command, a schedule, a
/// reason) for a one-line cell: every escape and control character
/// dropped, runs of whitespace (newlines included) as one space.
pub fn cell(raw: &str) -> String {
    let simple = raw.bytes().all(|b| (0x21..0x7f).contains(&b) || b == b' ');
    if simple && !raw.contains("  ") && !raw.starts_with(' ') && !raw.ends_with(' ') {
        return raw.to_owned();
    }
    let mut out = String::with_capacity(raw.len());
    for piece in pieces(raw) {
        let Piece::Text(t) = piece else { continue };
        for c in t.chars() {
            if c.is_whitespace() {
                if !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
            } else if !dropped(c) {
                out.push(c);
            }
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// Display columns of `text` (no escapes in it).
pub fn width(text: &str) -> usize {
    if text.is_ascii() {
        return text.len();
    }
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `text` cut to `cols` display columns, the last one an ellipsis when
/// something was cut.
pub fn truncate(text: &str, cols: usize) -> String {
    if width(text) <= cols {
        return text.to_owned();
    }
    if cols == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > cols - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `text` cut or padded with spaces to exactly `cols` display columns.
pub fn fit(text: &str, cols: usize) -> String {
    let mut out = truncate(text, cols);
    let w = width(&out);
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(w)));
    out
}

/// `text` in pieces of at most `cols` display columns (for wrapped log
/// lines); one piece for an empty text.
pub fn wrap(text: &str, cols: usize) -> Vec<String> {
    let cols = cols.max(1);
    let mut out = vec![String::new()];
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > cols && used > 0 {
            out.push(String::new());
            used = 0;
        }
        if let Some(last) = out.last_mut() {
            last.push(c);
        }
        used += w;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sgr_survives_in_log_lines() {
        assert_eq!(log_line("\x1b[1;31mred\x1b[0m"), "\x1b[1;31mred\x1b[0m");
        // cursor moves, clears, private modes: gone
        assert_eq!(log_line("a\x1b[2J\x1b[Hb\x1b[?1049hc"), "abc");
        // OSC 52 (clipboard) and a title, BEL- and ST-terminated
        assert_eq!(log_line("x\x1b]52;c;aGk=\x07y\x1b]0;title\x1b\\z"), "xyz");
        // DCS, APC, PM, SOS strings
        assert_eq!(
            log_line("1\x1bPq#0\x1b\\2\x1b_apc\x1b\\3\x1b^pm\x1b\\4\x1bXs\x1b\\"),
            "1234"
        );
        // two-byte escapes: reset, save/restore cursor, charset
        assert_eq!(log_line("a\x1bcb\x1b7c\x1b8d\x1b(0e"), "abcde");
        // a bare ESC at the end, an unterminated OSC
        assert_eq!(log_line("end\x1b"), "end");
        assert_eq!(log_line("a\x1b]0;never ends"), "a");
        // an SGR with private or intermediate bytes is not styling
        assert_eq!(log_line("a\x1b[?5mb\x1b[1 mc"), "abc");
        // a CSI broken off by other text ends there
        assert_eq!(log_line("a\x1b[31日本"), "a日本");
    }

    #[test]
    fn controls_are_dropped_and_c1_too() {
        assert_eq!(log_line("a\x07b\x08c\x00d\x7fe"), "abcde");
        // U+009B is CSI in one character; U+009D is OSC
        assert_eq!(log_line("a\u{9b}2Jb\u{9d}c"), "a2Jbc");
        assert_eq!(log_line("left\u{202e}right"), "leftright");
        assert_eq!(log_line("ünïcödé 日本"), "ünïcödé 日本");
    }

    #[test]
    fn carriage_returns_keep_the_last_segment_with_text() {
        assert_eq!(log_line("10%\r50%\r100%"), "100%");
        assert_eq!(log_line("crlf line\r"), "crlf line");
        assert_eq!(log_line("done\r\x1b[K"), "done");
        assert_eq!(log_line("50%\r\x1b[K100%"), "100%");
        assert_eq!(log_line("\r\r"), "");
    }

    #[test]
    fn tabs_expand_to_stops_of_eight() {
        assert_eq!(log_line("a\tb"), "a       b");
        assert_eq!(log_line("\tx"), "        x");
        assert_eq!(log_line("12345678\ty"), "12345678        y");
        // colors take no columns
        assert_eq!(log_line("\x1b[31mab\x1b[0m\tc"), "\x1b[31mab\x1b[0m      c");
        // a wide character takes two
        assert_eq!(log_line("日\tx"), "日      x");
    }

    #[test]
    fn spans_follow_the_sgr_state() {
        let got = spans(&log_line("plain \x1b[1;32mgreen\x1b[22m thin\x1b[0m end"));
        let green = Some(AnsiColor::Basic(2));
        assert_eq!(
            got,
            vec![
                (Sgr::default(), "plain ".to_owned()),
                (
                    Sgr {
                        fg: green,
                        bold: true,
                        ..Sgr::default()
                    },
                    "green".to_owned()
                ),
                (
                    Sgr {
                        fg: green,
                        ..Sgr::default()
                    },
                    " thin".to_owned()
                ),
                (Sgr::default(), " end".to_owned()),
            ]
        );
        let mut s = Sgr::default();
        apply_sgr(&mut s, "38;5;208");
        assert_eq!(s.fg, Some(AnsiColor::Indexed(208)));
        apply_sgr(&mut s, "38;2;1;2;3;4");
        assert_eq!(s.fg, Some(AnsiColor::Rgb(1, 2, 3)));
        assert!(s.underline, "the 4 after the color is underline");
        apply_sgr(&mut s, "48;5;1;93");
        assert_eq!(s.fg, Some(AnsiColor::Basic(11)), "background skipped whole");
        apply_sgr(&mut s, "");
        assert_eq!(s, Sgr::default(), "ESC[m resets");
        apply_sgr(&mut s, "7;99999999999;3");
        assert!(s.reverse && s.italic);
    }

    #[test]
    fn plain_drops_the_styling() {
        assert_eq!(plain(&log_line("\x1b[31mred\x1b[0m text")), "red text");
        assert_eq!(plain("as is"), "as is");
    }

    #[test]
    fn cells_hold_one_line_of_plain_text() {
        assert_eq!(cell("backup"), "backup");
        assert_eq!(cell("set -eu\n  run \t it  "), "set -eu run it");
        assert_eq!(cell("\x1b[31mevil\x1b[0m\x1b]0;pwn\x07name"), "evilname");
        assert_eq!(cell("node\x1b[2J\x1b[Ha"), "nodea");
        assert_eq!(cell("  lead"), "lead");
        assert_eq!(cell("a\u{9b}b"), "ab");
    }

    #[test]
    fn fitting_counts_display_columns() {
        assert_eq!(fit("abc", 5), "abc  ");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("日本語", 4), "日… ");
        assert_eq!(fit("x", 0), "");
        assert_eq!(width("日本"), 4);
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(wrap("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(wrap("", 4), vec![""]);
        assert_eq!(wrap("日本語", 3), vec!["日", "本", "語"]);
    }
}
