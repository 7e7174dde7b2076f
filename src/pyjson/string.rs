//! Python's `str`: code points (lone surrogates too) kept as generalized
//! UTF-8, with Python's `repr()`, `strip()` and ordering, and the ways
//! the original reads one from bytes and writes one out.
//!
//! Lone surrogates are everyday values here, not corruption: Python
//! decodes POSIX argv with `surrogateescape` (a byte that is not UTF-8
//! becomes U+DC80..U+DCFF) and `json.loads` keeps a lone `\ud800` escape.
//! Both reach the wire and the store in the original, so they must
//! survive here as the same code points.

use crate::pyfmt::write_json_chars;
use std::fmt::Write;

/// A Python `str`: a sequence of code points, lone surrogates allowed,
/// stored as generalized UTF-8 (each code point encoded on its own, so a
/// surrogate is the three bytes Python's `encode("utf-8",
/// "surrogatepass")` writes). Equality, hashing and ordering are
/// Python's: generalized UTF-8 sorts as its code points do.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyString(pub(super) Vec<u8>);

/// Text that can name a scope, key or artifact: `&str`, `String`, or a
/// [`PyString`] read from a job's JSON or argv (which may hold lone
/// surrogates). Functions take it so callers need not convert.
pub trait PyText {
    /// The generalized UTF-8 bytes (plain UTF-8 for a Rust string).
    fn wtf8(&self) -> &[u8];
}

impl PyText for str {
    fn wtf8(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PyText for String {
    fn wtf8(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PyText for PyString {
    fn wtf8(&self) -> &[u8] {
        &self.0
    }
}

impl<T: PyText + ?Sized> PyText for &T {
    fn wtf8(&self) -> &[u8] {
        (**self).wtf8()
    }
}

/// Appends code point `cp` (a surrogate too) as generalized UTF-8.
pub(super) fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7f => out.push(cp as u8),
        0x80..=0x7ff => out.extend([0xc0 | (cp >> 6) as u8, 0x80 | (cp & 0x3f) as u8]),
        0x800..=0xffff => out.extend([
            0xe0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3f) as u8,
            0x80 | (cp & 0x3f) as u8,
        ]),
        _ => out.extend([
            0xf0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3f) as u8,
            0x80 | ((cp >> 6) & 0x3f) as u8,
            0x80 | (cp & 0x3f) as u8,
        ]),
    }
}

/// The code points of generalized UTF-8 `bytes` (well formed: built by
/// this module or taken from a Rust string).
fn code_points(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let lead = *bytes.get(i)?;
        let (len, init) = match lead {
            0..=0x7f => (1, u32::from(lead)),
            0xc0..=0xdf => (2, u32::from(lead & 0x1f)),
            0xe0..=0xef => (3, u32::from(lead & 0x0f)),
            _ => (4, u32::from(lead & 0x07)),
        };
        let mut cp = init;
        for k in 1..len {
            cp = (cp << 6) | u32::from(bytes.get(i + k).copied().unwrap_or(0x80) & 0x3f);
        }
        i += len;
        Some(cp)
    })
}

fn is_surrogate(cp: u32) -> bool {
    (0xd800..=0xdfff).contains(&cp)
}

/// Whether `bytes` may hold a surrogate: its generalized UTF-8 starts
/// 0xED 0xA0..=0xBF, a pair plain UTF-8 never has, so most strings are
/// known to be plain text without decoding them.
fn may_hold_surrogate(bytes: &[u8]) -> bool {
    bytes.windows(2).any(|w| w[0] == 0xed && w[1] >= 0xa0)
}

/// A stretch of a [`PyString`]: a run of ordinary text, or one lone
/// surrogate. Every way of writing a string out treats the runs as Rust
/// text and only the surrogates differently.
enum Piece<'a> {
    Text(&'a str),
    Surrogate(u32),
}

/// The pieces of generalized UTF-8 `bytes`, in order.
fn pieces(bytes: &[u8]) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if let [0xed, b1 @ 0xa0..=0xbf, b2, tail @ ..] = rest {
            let cp = 0xd000 | (u32::from(*b1 & 0x3f) << 6) | u32::from(*b2 & 0x3f);
            rest = tail;
            return Some(Piece::Surrogate(cp));
        }
        // Up to the next surrogate the bytes are UTF-8 (a string is only
        // ever built from Rust text and whole code points), so UTF-8
        // validation finds where the text ends; a byte that is neither
        // (never written by this module) is passed over as U+FFFD.
        let end = match std::str::from_utf8(rest) {
            Ok(_) => rest.len(),
            Err(e) => e.valid_up_to().max(1),
        };
        let (text, tail) = rest.split_at(end);
        rest = tail;
        Some(Piece::Text(std::str::from_utf8(text).unwrap_or("\u{fffd}")))
    })
}

impl PyString {
    /// A string of Rust text.
    pub fn new(text: &str) -> PyString {
        PyString(text.as_bytes().to_vec())
    }

    /// A string of any text (a scope, key or name argument).
    pub fn of(text: &(impl PyText + ?Sized)) -> PyString {
        PyString(text.wtf8().to_vec())
    }

    /// `prefix` followed by `rest` (a namespace: `kv/` and a scope).
    pub fn prefixed(prefix: &str, rest: &(impl PyText + ?Sized)) -> PyString {
        let mut bytes = prefix.as_bytes().to_vec();
        bytes.extend_from_slice(rest.wtf8());
        PyString(bytes)
    }

    /// A string of code points (each at most U+10FFFF; surrogates allowed).
    pub fn from_code_points(points: impl IntoIterator<Item = u32>) -> PyString {
        let mut out = Vec::new();
        for cp in points {
            push_code_point(&mut out, cp.min(0x10ffff));
        }
        PyString(out)
    }

    /// `bytes` decoded as Python decodes argv and the environment on
    /// POSIX (`utf-8` with `surrogateescape`): every byte that is not part
    /// of valid UTF-8 becomes the lone surrogate U+DC00 + byte, so the
    /// bytes come back whole from [`PyString::to_os_bytes`].
    pub fn from_surrogateescape(bytes: &[u8]) -> PyString {
        if std::str::from_utf8(bytes).is_ok() {
            return PyString(bytes.to_vec());
        }
        let mut out = Vec::with_capacity(bytes.len() + 8);
        for chunk in bytes.utf8_chunks() {
            out.extend_from_slice(chunk.valid().as_bytes());
            for &b in chunk.invalid() {
                push_code_point(&mut out, 0xdc00 + u32::from(b));
            }
        }
        PyString(out)
    }

    /// An OS string (argv, environment) as Python sees it.
    pub fn from_os(s: &std::ffi::OsStr) -> PyString {
        PyString::from_surrogateescape(&crate::platform::os_str_bytes(s))
    }

    /// Appends `more` (Python's `+`: code points side by side, a lone
    /// high and low surrogate staying two code points).
    pub fn push(&mut self, more: &(impl PyText + ?Sized)) {
        self.0.extend_from_slice(more.wtf8());
    }

    /// The generalized UTF-8 bytes (Python's `surrogatepass` encoding).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text, when it holds no lone surrogate.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The text with every lone surrogate replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        self.write_pieces(|out, _| out.push('\u{fffd}'))
    }

    /// The text as Python writes it where errors are `backslashreplace`
    /// (stderr): a lone surrogate as `\udcNN`, everything else as is.
    pub fn backslashreplace(&self) -> String {
        self.write_pieces(|out, cp| {
            let _ = write!(out, "\\u{cp:04x}");
        })
    }

    /// The text with each lone surrogate written by `surrogate`.
    fn write_pieces(&self, surrogate: impl Fn(&mut String, u32)) -> String {
        let mut out = String::with_capacity(self.0.len());
        for piece in pieces(&self.0) {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Surrogate(cp) => surrogate(&mut out, cp),
            }
        }
        out
    }

    /// The bytes to hand the OS (a file name, a header, output): UTF-8,
    /// with a surrogate that `surrogateescape` made from a byte turned
    /// back into that byte (so a name read from argv round-trips) and any
    /// other surrogate as U+FFFD (where Python would raise instead).
    pub fn to_os_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len());
        for piece in pieces(&self.0) {
            match piece {
                Piece::Text(text) => out.extend_from_slice(text.as_bytes()),
                Piece::Surrogate(cp @ 0xdc80..=0xdcff) => out.push((cp - 0xdc00) as u8),
                Piece::Surrogate(_) => out.extend_from_slice("\u{fffd}".as_bytes()),
            }
        }
        out
    }

    /// The code points, in order.
    pub fn code_points(&self) -> impl Iterator<Item = u32> + '_ {
        code_points(&self.0)
    }

    /// The first lone surrogate, if any.
    pub fn lone_surrogate(&self) -> Option<u32> {
        if !may_hold_surrogate(&self.0) {
            return None;
        }
        self.code_points().find(|cp| is_surrogate(*cp))
    }

    /// Whether the string is empty (Python: falsy).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Python's `repr()` of the string: single quotes unless the text
    /// holds `'` and no `"`; backslash escapes for the quote, backslash,
    /// `\n`, `\r`, `\t`; `\xNN`, `\uNNNN` or `\UNNNNNNNN` for a code point
    /// Python does not print.
    pub fn repr(&self) -> String {
        let has_single = self.0.contains(&b'\'');
        let has_double = self.0.contains(&b'"');
        let quote = if has_single && !has_double { '"' } else { '\'' };
        let mut out = String::with_capacity(self.0.len() + 2);
        out.push(quote);
        for cp in self.code_points() {
            match cp {
                0x5c => out.push_str("\\\\"),
                0x0a => out.push_str("\\n"),
                0x0d => out.push_str("\\r"),
                0x09 => out.push_str("\\t"),
                _ if cp == u32::from(quote) => {
                    out.push('\\');
                    out.push(quote);
                }
                _ if !py_printable(cp) => {
                    let _ = match cp {
                        0..=0xff => write!(out, "\\x{cp:02x}"),
                        0x100..=0xffff => write!(out, "\\u{cp:04x}"),
                        _ => write!(out, "\\U{cp:08x}"),
                    };
                }
                _ => out.push(char::from_u32(cp).unwrap_or('\u{fffd}')),
            }
        }
        out.push(quote);
        out
    }

    /// Python's `str.strip()`: without leading and trailing whitespace.
    pub fn strip(&self) -> PyString {
        let points: Vec<u32> = self.code_points().collect();
        let start = points
            .iter()
            .position(|cp| !py_isspace(*cp))
            .unwrap_or(points.len());
        let end = points
            .iter()
            .rposition(|cp| !py_isspace(*cp))
            .map_or(start, |i| i + 1);
        PyString::from_code_points(points[start..end.max(start)].iter().copied())
    }

    /// Writes the string as `json.dumps` does by default (`ensure_ascii`):
    /// the short escapes, `\u00XX` for other controls and DEL, `\uXXXX`
    /// (lowercase, surrogate pairs above U+FFFF) beyond ASCII, and a lone
    /// surrogate as its own escape.
    pub(super) fn write_json(&self, out: &mut String) {
        out.push('"');
        // Most strings hold no surrogate: one pass of validation, then
        // the text whole (the store writes every key and value this way).
        if let Some(text) = self.as_str() {
            write_json_chars(out, text, false);
        } else {
            for piece in pieces(&self.0) {
                match piece {
                    Piece::Text(text) => write_json_chars(out, text, false),
                    Piece::Surrogate(cp) => {
                        let _ = write!(out, "\\u{cp:04x}");
                    }
                }
            }
        }
        out.push('"');
    }
}

impl From<&str> for PyString {
    fn from(text: &str) -> PyString {
        PyString::new(text)
    }
}

impl From<String> for PyString {
    fn from(text: String) -> PyString {
        PyString(text.into_bytes())
    }
}

impl From<&PyString> for PyString {
    fn from(text: &PyString) -> PyString {
        text.clone()
    }
}

impl std::fmt::Debug for PyString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repr())
    }
}

/// Python's `str.isspace()` of one code point (Unicode White_Space plus
/// the four ASCII separators `\x1c`..`\x1f`).
fn py_isspace(cp: u32) -> bool {
    (0x1c..=0x1f).contains(&cp) || char::from_u32(cp).is_some_and(char::is_whitespace)
}

/// Python's `str.isprintable()` of one code point, for `repr()`: false
/// for controls, format characters, surrogates, private use, separators
/// other than the space, and non-characters. (Python also escapes code
/// points its Unicode tables list as unassigned; those are printed here.)
fn py_printable(cp: u32) -> bool {
    let cc = cp < 0x20 || (0x7f..=0x9f).contains(&cp);
    let zs_zl_zp = matches!(
        cp,
        0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000
    );
    let cf = matches!(
        cp,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x2064
            | 0x2066..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let co = matches!(cp, 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd);
    let noncharacter = (0xfdd0..=0xfdef).contains(&cp) || cp & 0xfffe == 0xfffe;
    !(cc || zs_zl_zp || cf || co || is_surrogate(cp) || noncharacter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(s: &PyString) -> Vec<u32> {
        s.code_points().collect()
    }

    #[test]
    fn argv_bytes_decode_with_surrogateescape() {
        assert_eq!(
            PyString::from_surrogateescape(b"plain"),
            PyString::new("plain")
        );
        assert_eq!(
            PyString::from_surrogateescape("é".as_bytes()),
            PyString::new("é")
        );
        let s = PyString::from_surrogateescape(b"a\xffb\xc3");
        assert_eq!(points(&s), [0x61, 0xdcff, 0x62, 0xdcc3]);
        assert_eq!(s.to_os_bytes(), b"a\xffb\xc3");
        assert_eq!(s.as_str(), None);
        // A valid sequence after an invalid byte still decodes.
        let s = PyString::from_surrogateescape(b"\x80\xc3\xa9");
        assert_eq!(points(&s), [0xdc80, 0xe9]);
        // The bytes of an encoded surrogate are not UTF-8: each escapes.
        let s = PyString::from_surrogateescape(b"\xed\xa0\x80");
        assert_eq!(points(&s), [0xdced, 0xdca0, 0xdc80]);
        assert_eq!(s.to_os_bytes(), b"\xed\xa0\x80");
    }

    #[test]
    fn os_bytes_turn_only_escaped_bytes_back() {
        let s = PyString::from_code_points([0x6b, 0xdcff, 0xd800, 0xdc7f, 0xe9, 0x1f600]);
        assert_eq!(
            s.to_os_bytes(),
            b"k\xff\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9\xf0\x9f\x98\x80"
        );
        assert_eq!(PyString::new("k é").to_os_bytes(), "k é".as_bytes());
    }

    #[test]
    fn lone_surrogates_write_out_backslashed_or_replaced() {
        let s = PyString::from_code_points([0x6b, 0xdcff, 0xe9, 0xd800, 0xd800]);
        assert_eq!(s.backslashreplace(), "k\\udcffé\\ud800\\ud800");
        assert_eq!(s.to_string_lossy(), "k\u{fffd}é\u{fffd}\u{fffd}");
        assert_eq!(PyString::new("k").backslashreplace(), "k");
        assert_eq!(PyString::default().backslashreplace(), "");
    }

    #[test]
    fn strings_keep_lone_surrogates_and_order_by_code_point() {
        let lone = PyString::from_code_points([0x61, 0xd800, 0x62]);
        assert_eq!(lone.as_str(), None);
        assert_eq!(lone.lone_surrogate(), Some(0xd800));
        assert_eq!(
            lone.as_bytes(),
            b"a\xed\xa0\x80b",
            "Python's surrogatepass bytes"
        );
        assert_eq!(PyString::new("\u{1f600}").lone_surrogate(), None);
        // A high and a low surrogate side by side stay two code points,
        // as in Python ('\ud83d' + '\ude00' != '\U0001f600').
        let mut pair = PyString::from_code_points([0xd83d]);
        pair.push(&PyString::from_code_points([0xde00]));
        assert_eq!(points(&pair), [0xd83d, 0xde00]);
        assert_ne!(pair, PyString::new("\u{1f600}"));
        // Code point order: U+D7FF < U+D800 (lone) < U+E000 < U+10000.
        let ordered = [
            PyString::new("\u{d7ff}"),
            PyString::from_code_points([0xd800]),
            PyString::new("\u{e000}"),
            PyString::new("\u{10000}"),
        ];
        assert!(ordered.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(PyString::prefixed("kv/", "job").as_str(), Some("kv/job"));
    }

    fn json(s: &PyString) -> String {
        let mut out = String::new();
        s.write_json(&mut out);
        out
    }

    /// Expected strings from CPython 3.11 `json.dumps`.
    #[test]
    fn json_escapes_like_python() {
        assert_eq!(json(&"a\"b\\c/".into()), r#""a\"b\\c/""#);
        assert_eq!(
            json(&"\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}".into()),
            r#""\n\r\t\b\f\u0000\u001f\u007f""#
        );
        assert_eq!(json(&"é€\u{1f600}".into()), r#""\u00e9\u20ac\ud83d\ude00""#);
        let lone = PyString::from_code_points([0x61, 0xd800, 0x22, 0xe9, 0x1f600, 0xdcff]);
        assert_eq!(json(&lone), r#""a\ud800\"\u00e9\ud83d\ude00\udcff""#);
        assert_eq!(
            json(&PyString::from_code_points([0xdcff, 0xd800])),
            r#""\udcff\ud800""#
        );
    }

    /// Expected strings from CPython 3.11 `repr()`.
    #[test]
    fn repr_like_python() {
        let cases: &[(PyString, &str)] = &[
            ("abc".into(), "'abc'"),
            ("it's".into(), "\"it's\""),
            ("it's \"x\"".into(), "'it\\'s \"x\"'"),
            ("a\\b\n\r\t".into(), "'a\\\\b\\n\\r\\t'"),
            (
                "\u{0}\u{1b}\u{7f}\u{85}\u{a0}".into(),
                "'\\x00\\x1b\\x7f\\x85\\xa0'",
            ),
            ("é€日本\u{1f600}".into(), "'é€日本\u{1f600}'"),
            (
                "\u{ad}\u{200b}\u{2028}\u{3000}\u{feff}".into(),
                "'\\xad\\u200b\\u2028\\u3000\\ufeff'",
            ),
            (
                "\u{e000}\u{10ffff}\u{e0001}".into(),
                "'\\ue000\\U0010ffff\\U000e0001'",
            ),
            (PyString::from_code_points([0x61, 0xdcff]), "'a\\udcff'"),
            (
                "\u{890}\u{8e2}\u{110bd}\u{13430}\u{1bca0}\u{1d173}\u{61c}\u{180e}\u{206f}".into(),
                "'\\u0890\\u08e2\\U000110bd\\U00013430\\U0001bca0\\U0001d173\\u061c\\u180e\\u206f'",
            ),
            // Non-characters and Python 3.11's unassigned format range.
            (
                "\u{fdd0}\u{1fffe}\u{13439}\u{1343f}".into(),
                "'\\ufdd0\\U0001fffe\\U00013439\\U0001343f'",
            ),
            ("".into(), "''"),
        ];
        for (s, want) in cases {
            assert_eq!(s.repr(), *want, "{s:?}");
        }
    }

    #[test]
    fn strip_is_pythons() {
        let cases = [
            ("  a b  ", "a b"),
            ("\u{a0}x\u{3000}", "x"),
            ("\u{1c}\u{1f}y\u{85}", "y"),
            ("\u{200b}z", "\u{200b}z"),
            (" \t\n\r\u{b}\u{c} ", ""),
            ("", ""),
        ];
        for (input, want) in cases {
            assert_eq!(
                PyString::new(input).strip(),
                PyString::new(want),
                "{input:?}"
            );
        }
    }
}
