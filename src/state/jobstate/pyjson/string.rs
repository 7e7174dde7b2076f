//! Python's `str`: code points (lone surrogates too) kept as generalized
//! UTF-8, with Python's `repr()`, `strip()` and ordering.

use std::fmt::Write;

/// A Python `str`: a sequence of code points, lone surrogates allowed,
/// stored as generalized UTF-8. Equality, hashing and ordering are
/// Python's (by code point).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyString(pub(super) Vec<u8>);

/// Text that can name a scope, key or artifact: `&str`, `String`, or a
/// [`PyString`] read from a job's JSON (which may hold lone surrogates).
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
        self.code_points()
            .map(|cp| char::from_u32(cp).unwrap_or('\u{fffd}'))
            .collect()
    }

    /// The code points, in order.
    pub fn code_points(&self) -> impl Iterator<Item = u32> + '_ {
        code_points(&self.0)
    }

    /// The first lone surrogate, if any.
    pub fn lone_surrogate(&self) -> Option<u32> {
        // A surrogate's generalized UTF-8 starts 0xED 0xA0..=0xBF; plain
        // UTF-8 never has that pair, so most strings skip the decode.
        if !self.0.windows(2).any(|w| w[0] == 0xed && w[1] >= 0xa0) {
            return None;
        }
        self.code_points().find(|cp| is_surrogate(*cp))
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Python's `repr()` of the string.
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

impl std::fmt::Debug for PyString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.repr())
    }
}

/// Python's `str.isspace()` of one code point (Unicode White_Space plus
/// the four ASCII separators `\x1c`..`\x1f`).
pub fn py_isspace(cp: u32) -> bool {
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
