//! A Python `str`: Unicode text that may hold lone surrogates.
//!
//! Python decodes POSIX argv with `surrogateescape` (a byte that is not
//! UTF-8 becomes U+DC80..U+DCFF) and `json.loads` keeps a lone `\ud800`
//! escape as a lone surrogate. Neither fits a Rust `String`, yet both
//! reach the wire in the original (escaped in a JSON body, or refused when
//! a query string must be UTF-8), so the client keeps them: ordinary text
//! stays a `String`, and only a string that holds a surrogate is kept as
//! code points.

use std::fmt::Write;

/// A Python `str` (see the module comment).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PyStr {
    /// Text without surrogates.
    Text(String),
    /// Code points, at least one of them a surrogate (U+D800..U+DFFF).
    Points(Vec<u32>),
}

fn is_surrogate(cp: u32) -> bool {
    (0xd800..=0xdfff).contains(&cp)
}

impl PyStr {
    /// The string of `points` (each a Unicode scalar value or a
    /// surrogate).
    pub fn from_points(points: Vec<u32>) -> PyStr {
        if points.iter().any(|&cp| is_surrogate(cp)) {
            return PyStr::Points(points);
        }
        PyStr::Text(points.into_iter().filter_map(char::from_u32).collect())
    }

    /// `bytes` decoded as Python decodes argv and the environment on
    /// POSIX: UTF-8, every byte that is not part of valid UTF-8 becoming
    /// the lone surrogate U+DC00 + byte.
    pub fn from_bytes_surrogateescape(bytes: &[u8]) -> PyStr {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return PyStr::Text(text.to_owned());
        }
        let mut points = Vec::with_capacity(bytes.len());
        for chunk in bytes.utf8_chunks() {
            points.extend(chunk.valid().chars().map(u32::from));
            points.extend(chunk.invalid().iter().map(|&b| 0xdc00 + u32::from(b)));
        }
        PyStr::from_points(points)
    }

    /// An OS string (argv, environment) as Python sees it.
    pub fn from_os(s: &std::ffi::OsStr) -> PyStr {
        PyStr::from_bytes_surrogateescape(&crate::platform::os_str_bytes(s))
    }

    /// The text, when it holds no surrogate.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            PyStr::Text(text) => Some(text),
            PyStr::Points(_) => None,
        }
    }

    /// The code points.
    pub fn points(&self) -> Vec<u32> {
        match self {
            PyStr::Text(text) => text.chars().map(u32::from).collect(),
            PyStr::Points(points) => points.clone(),
        }
    }

    /// Whether the string is empty (Python: falsy).
    pub fn is_empty(&self) -> bool {
        match self {
            PyStr::Text(text) => text.is_empty(),
            PyStr::Points(points) => points.is_empty(),
        }
    }

    /// Writes the string as Python's `json.dumps` does by default
    /// (`ensure_ascii`): short escapes, `\u00XX` for other control
    /// characters, `\uXXXX` (lowercase, surrogate pairs above U+FFFF) for
    /// everything outside ASCII, a lone surrogate as its own escape.
    pub fn write_json(&self, out: &mut String) {
        match self {
            PyStr::Text(text) => crate::pyfmt::write_json_string(out, text, false),
            PyStr::Points(points) => {
                out.push('"');
                for &cp in points {
                    match char::from_u32(cp) {
                        Some(c) if c.is_ascii() => {
                            let mut buf = String::new();
                            crate::pyfmt::write_json_string(
                                &mut buf,
                                c.encode_utf8(&mut [0; 4]),
                                false,
                            );
                            out.push_str(&buf[1..buf.len() - 1]);
                        }
                        Some(c) => {
                            let mut units = [0u16; 2];
                            for unit in c.encode_utf16(&mut units) {
                                let _ = write!(out, "\\u{unit:04x}");
                            }
                        }
                        None => {
                            let _ = write!(out, "\\u{cp:04x}");
                        }
                    }
                }
                out.push('"');
            }
        }
    }

    /// Python's `repr()`: single quotes unless the text holds `'` and no
    /// `"`; backslash escapes for the quote, backslash, `\n`, `\r`, `\t`;
    /// `\xNN`, `\uNNNN` or `\UNNNNNNNN` for characters Python does not
    /// print (see [`is_printable`]).
    pub fn repr(&self) -> String {
        let points = self.points();
        let has = |c: char| points.contains(&u32::from(c));
        let quote = if has('\'') && !has('"') { '"' } else { '\'' };
        let mut out = String::with_capacity(points.len() + 2);
        out.push(quote);
        for cp in points {
            match char::from_u32(cp) {
                Some('\\') => out.push_str("\\\\"),
                Some('\n') => out.push_str("\\n"),
                Some('\r') => out.push_str("\\r"),
                Some('\t') => out.push_str("\\t"),
                Some(c) if c == quote => {
                    out.push('\\');
                    out.push(c);
                }
                Some(c) if is_printable(c) => out.push(c),
                _ => push_code_escape(&mut out, cp),
            }
        }
        out.push(quote);
        out
    }

    /// The text as Python writes it to stderr (`backslashreplace`): a
    /// lone surrogate as `\udcNN`, everything else as is.
    pub fn to_stderr_text(&self) -> String {
        match self {
            PyStr::Text(text) => text.clone(),
            PyStr::Points(points) => {
                let mut out = String::new();
                for &cp in points {
                    match char::from_u32(cp) {
                        Some(c) => out.push(c),
                        None => {
                            let _ = write!(out, "\\u{cp:04x}");
                        }
                    }
                }
                out
            }
        }
    }

    /// The bytes to write for the text: UTF-8, with a surrogate that
    /// `surrogateescape` made from a byte turned back into that byte (so a
    /// file name read from argv round-trips) and any other surrogate as
    /// U+FFFD.
    pub fn to_os_bytes(&self) -> Vec<u8> {
        match self {
            PyStr::Text(text) => text.as_bytes().to_vec(),
            PyStr::Points(points) => {
                let mut out = Vec::with_capacity(points.len());
                for &cp in points {
                    match char::from_u32(cp) {
                        Some(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                        None if (0xdc80..=0xdcff).contains(&cp) => out.push((cp - 0xdc00) as u8),
                        None => out.extend_from_slice("\u{fffd}".as_bytes()),
                    }
                }
                out
            }
        }
    }
}

impl From<&str> for PyStr {
    fn from(text: &str) -> PyStr {
        PyStr::Text(text.to_owned())
    }
}

impl From<String> for PyStr {
    fn from(text: String) -> PyStr {
        PyStr::Text(text)
    }
}

/// `\xNN`, `\uNNNN` or `\UNNNNNNNN`, as Python's repr escapes a code point
/// it does not print.
fn push_code_escape(out: &mut String, cp: u32) {
    let _ = if cp <= 0xff {
        write!(out, "\\x{cp:02x}")
    } else if cp <= 0xffff {
        write!(out, "\\u{cp:04x}")
    } else {
        write!(out, "\\U{cp:08x}")
    };
}

/// Python's `str.isprintable()` for one character, approximated without a
/// Unicode database: the control characters (Cc), the separators other
/// than the ASCII space (Zs, Zl, Zp), private use (Co), the format
/// characters (Cf) of the Latin, Arabic, Syriac, Mongolian, general
/// punctuation, specials and tag blocks, and the noncharacters U+FFFE and
/// U+FFFF are unprintable; every other character prints. (Unassigned code
/// points, which Python also escapes, print here.)
pub fn is_printable(c: char) -> bool {
    let cp = u32::from(c);
    let unprintable = matches!(cp,
        0x00..=0x1f | 0x7f..=0xa0 | 0xad
        | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2
        | 0x1680 | 0x180e
        | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f
        | 0x3000
        | 0xe000..=0xf8ff
        | 0xfeff | 0xfff9..=0xfffb | 0xfffe..=0xffff
        | 0x110bd | 0x110cd | 0x13430..=0x13438
        | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        | 0xe0001 | 0xe0020..=0xe007f
        | 0xf0000..=0x10ffff);
    !unprintable
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_bytes_decode_with_surrogateescape() {
        assert_eq!(
            PyStr::from_bytes_surrogateescape(b"plain"),
            PyStr::Text("plain".into())
        );
        assert_eq!(
            PyStr::from_bytes_surrogateescape("é".as_bytes()),
            PyStr::Text("é".into())
        );
        let s = PyStr::from_bytes_surrogateescape(b"a\xffb\xc3");
        assert_eq!(s, PyStr::Points(vec![0x61, 0xdcff, 0x62, 0xdcc3]));
        assert_eq!(s.to_os_bytes(), b"a\xffb\xc3");
        assert_eq!(s.as_text(), None);
        // A valid sequence after an invalid byte still decodes.
        let s = PyStr::from_bytes_surrogateescape(b"\x80\xc3\xa9");
        assert_eq!(s, PyStr::Points(vec![0xdc80, 0xe9]));
    }

    #[test]
    fn points_without_surrogates_are_text() {
        assert_eq!(
            PyStr::from_points(vec![0x61, 0x1f600]),
            PyStr::Text("a\u{1f600}".into())
        );
        assert!(matches!(PyStr::from_points(vec![0xd800]), PyStr::Points(_)));
        assert!(PyStr::from_points(vec![]).is_empty());
    }

    fn json(s: &PyStr) -> String {
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
        let lone = PyStr::from_points(vec![0x61, 0xd800, 0x22, 0xe9, 0x1f600, 0xdcff]);
        assert_eq!(json(&lone), r#""a\ud800\"\u00e9\ud83d\ude00\udcff""#);
    }

    /// Expected strings from CPython 3.11 `repr()`.
    #[test]
    fn repr_like_python() {
        let cases: &[(PyStr, &str)] = &[
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
            (PyStr::from_points(vec![0x61, 0xdcff]), "'a\\udcff'"),
            (
                "\u{890}\u{8e2}\u{110bd}\u{13430}\u{1bca0}\u{1d173}\u{61c}\u{180e}\u{206f}".into(),
                "'\\u0890\\u08e2\\U000110bd\\U00013430\\U0001bca0\\U0001d173\\u061c\\u180e\\u206f'",
            ),
            ("".into(), "''"),
        ];
        for (s, want) in cases {
            assert_eq!(s.repr(), *want, "{s:?}");
        }
    }

    #[test]
    fn stderr_text_backslash_replaces_surrogates() {
        assert_eq!(
            PyStr::from_points(vec![0x6b, 0xdcff, 0xe9]).to_stderr_text(),
            "k\\udcffé"
        );
        assert_eq!(PyStr::from("k").to_stderr_text(), "k");
    }
}
