//! Python's `json.loads`, producing [`PyJson`]: what it accepts, what it
//! builds, and CPython 3.11's exact error texts (its C scanner's, such as
//! `Expecting value: line 1 column 1 (char 0)`), which the client prints
//! and the server logs.
//!
//! The observable details are Python's: `NaN`, `Infinity` and
//! `-Infinity` are accepted; integers have no size limit short of the
//! 4300-digit conversion limit, and `-0` is the integer `0`; a `\u`
//! escape of a lone surrogate stays one; a repeated key keeps its first
//! place and its last value; only space, tab, newline and carriage return
//! are whitespace; no control character may stand in a string; positions
//! count code points, not bytes.

use super::number::INT_MAX_STR_DIGITS;
use super::string::push_code_point;
use super::{PyDict, PyJson, PyString, PyText};
use std::collections::HashMap;

/// The deepest nesting [`loads`] reads by default. Python's recursion
/// limit (1000 frames) is what stops its scanner; how many frames the
/// caller has taken already moves the exact bound, so a caller that knows
/// its own depth passes it to [`loads_with_depth`].
pub const MAX_DEPTH: usize = 1000;

/// Why `json.loads` refused a document: the text of the exception Python
/// raises (`JSONDecodeError`, or the `ValueError`/`RecursionError` of a
/// number or nesting past Python's limits).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    message: String,
}

impl LoadError {
    /// The exception's text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Python's `json.loads(text)` for a `str` argument (lone surrogates in
/// `text` are characters like any other inside a string), nesting up to
/// [`MAX_DEPTH`].
pub fn loads(text: &(impl PyText + ?Sized)) -> Result<PyJson, LoadError> {
    loads_with_depth(text, MAX_DEPTH)
}

/// [`loads`], refusing arrays and objects nested deeper than `max_depth`
/// as Python's recursion limit would.
pub fn loads_with_depth(
    text: &(impl PyText + ?Sized),
    max_depth: usize,
) -> Result<PyJson, LoadError> {
    let parser = Parser {
        s: text.wtf8(),
        max_depth,
    };
    if parser.s.starts_with("\u{feff}".as_bytes()) {
        return Err(parser.error("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0));
    }
    let start = parser.skip_ws(0);
    let (value, end) = parser.scan(start)?;
    let end = parser.skip_ws(end);
    if end != parser.s.len() {
        return Err(parser.error("Extra data", end));
    }
    Ok(value)
}

/// The scanner over the generalized UTF-8 bytes of the document; indexes
/// are byte offsets, turned into code point positions only for an error.
struct Parser<'a> {
    s: &'a [u8],
    max_depth: usize,
}

/// An array or object being read: its items so far (and, for an object,
/// the index of each key and the key whose value comes next).
enum Open {
    List(Vec<PyJson>),
    Dict {
        entries: Vec<(PyString, PyJson)>,
        index: HashMap<PyString, usize>,
        key: PyString,
    },
}

/// The words `json.loads` reads as values (`-Infinity` before a number
/// can claim its `-`).
const LITERALS: [(&str, PyJson); 6] = [
    ("null", PyJson::Null),
    ("true", PyJson::Bool(true)),
    ("false", PyJson::Bool(false)),
    ("NaN", PyJson::Float(f64::NAN)),
    ("Infinity", PyJson::Float(f64::INFINITY)),
    ("-Infinity", PyJson::Float(f64::NEG_INFINITY)),
];

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The number of code points in generalized UTF-8 `bytes` (every byte
/// but a continuation byte starts one).
fn count_points(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .filter(|&&b| !(0x80..=0xbf).contains(&b))
        .count()
}

impl Parser<'_> {
    fn at(&self, idx: usize) -> Option<u8> {
        self.s.get(idx).copied()
    }

    fn is_digit_at(&self, idx: usize) -> bool {
        self.at(idx).is_some_and(|b| b.is_ascii_digit())
    }

    fn skip_ws(&self, mut idx: usize) -> usize {
        while self.at(idx).is_some_and(is_ws) {
            idx += 1;
        }
        idx
    }

    /// `JSONDecodeError(msg, doc, pos)`: `"{msg}: line L column C (char P)"`,
    /// with `pos` (a byte offset here) as Python's code point index.
    fn error(&self, msg: &str, pos: usize) -> LoadError {
        let before = &self.s[..pos.min(self.s.len())];
        let char_pos = count_points(before);
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = match before.iter().rposition(|&b| b == b'\n') {
            Some(nl) => count_points(&before[nl..]),
            None => char_pos + 1,
        };
        LoadError {
            message: format!("{msg}: line {line} column {column} (char {char_pos})"),
        }
    }

    fn expecting_value(&self, pos: usize) -> LoadError {
        self.error("Expecting value", pos)
    }

    fn too_deep(what: &str) -> LoadError {
        LoadError {
            message: format!(
                "maximum recursion depth exceeded while decoding a JSON {what} from a unicode \
                 string"
            ),
        }
    }

    /// One value at `idx` (the C scanner's `scan_once_unicode` with its
    /// `_parse_object_unicode` and `_parse_array_unicode`); returns it and
    /// the index after it. Containers are tracked on an explicit stack
    /// rather than by recursion, so nesting cannot overflow the stack.
    fn scan(&self, mut idx: usize) -> Result<(PyJson, usize), LoadError> {
        let mut stack: Vec<Open> = Vec::new();
        'value: loop {
            // Expecting a value at idx.
            let (mut value, mut end) = match self.at(idx) {
                Some(b'[') => {
                    if stack.len() >= self.max_depth {
                        return Err(Self::too_deep("array"));
                    }
                    let next = self.skip_ws(idx + 1);
                    if self.at(next) == Some(b']') {
                        (PyJson::List(Vec::new()), next + 1)
                    } else {
                        stack.push(Open::List(Vec::new()));
                        idx = next;
                        continue 'value;
                    }
                }
                Some(b'{') => {
                    if stack.len() >= self.max_depth {
                        return Err(Self::too_deep("object"));
                    }
                    let next = self.skip_ws(idx + 1);
                    if self.at(next) == Some(b'}') {
                        (PyJson::Dict(PyDict::new()), next + 1)
                    } else {
                        let (key, after) = self.scan_key(next)?;
                        stack.push(Open::Dict {
                            entries: Vec::new(),
                            index: HashMap::new(),
                            key,
                        });
                        idx = after;
                        continue 'value;
                    }
                }
                _ => self.scan_scalar(idx)?,
            };
            // A value is complete: hand it to the innermost open container
            // and read what follows it there.
            loop {
                let Some(open) = stack.last_mut() else {
                    return Ok((value, end));
                };
                let next = self.skip_ws(end);
                let close = match open {
                    Open::List(items) => {
                        items.push(value);
                        b']'
                    }
                    Open::Dict {
                        entries,
                        index,
                        key,
                    } => {
                        // A repeated key keeps its first place, its last
                        // value (Python's dict assignment).
                        let key = std::mem::take(key);
                        match index.get(&key) {
                            Some(&at) => entries[at].1 = value,
                            None => {
                                index.insert(key.clone(), entries.len());
                                entries.push((key, value));
                            }
                        }
                        b'}'
                    }
                };
                if self.at(next) == Some(close) {
                    value = match stack.pop() {
                        Some(Open::List(items)) => PyJson::List(items),
                        Some(Open::Dict { entries, .. }) => PyJson::Dict(PyDict(entries)),
                        // Not reached: `last_mut` has just found it.
                        None => PyJson::Null,
                    };
                    end = next + 1;
                    continue;
                }
                if self.at(next) != Some(b',') {
                    return Err(self.error("Expecting ',' delimiter", next));
                }
                idx = self.skip_ws(next + 1);
                if let Some(Open::Dict { key, .. }) = stack.last_mut() {
                    let (next_key, after_key) = self.scan_key(idx)?;
                    *key = next_key;
                    idx = after_key;
                }
                continue 'value;
            }
        }
    }

    /// An object key at `idx` and its `:`; returns the key and the index
    /// of the value after the delimiter and whitespace.
    fn scan_key(&self, idx: usize) -> Result<(PyString, usize), LoadError> {
        if self.at(idx) != Some(b'"') {
            return Err(self.error("Expecting property name enclosed in double quotes", idx));
        }
        let (key, next) = self.scan_string(idx + 1)?;
        let colon = self.skip_ws(next);
        if self.at(colon) != Some(b':') {
            return Err(self.error("Expecting ':' delimiter", colon));
        }
        Ok((key, self.skip_ws(colon + 1)))
    }

    /// A string, literal or number at `idx`.
    fn scan_scalar(&self, idx: usize) -> Result<(PyJson, usize), LoadError> {
        let rest = &self.s[idx.min(self.s.len())..];
        match rest.first() {
            Some(b'"') => {
                let (s, end) = self.scan_string(idx + 1)?;
                return Ok((PyJson::Str(s), end));
            }
            Some(b'n' | b't' | b'f' | b'N' | b'I' | b'-') => {
                for (word, value) in LITERALS {
                    if rest.starts_with(word.as_bytes()) {
                        return Ok((value, idx + word.len()));
                    }
                }
            }
            _ => {}
        }
        self.scan_number(idx)
    }

    /// A number at `idx` (`_match_number_unicode`): `-`? then `0` or
    /// `[1-9][0-9]*`, then `.digits` only when a digit follows the dot,
    /// then an exponent only when it has digits (else the number ends
    /// before the `e`).
    fn scan_number(&self, start: usize) -> Result<(PyJson, usize), LoadError> {
        let mut idx = start;
        if self.at(idx) == Some(b'-') {
            idx += 1;
        }
        match self.at(idx) {
            Some(b'1'..=b'9') => {
                idx += 1;
                while self.is_digit_at(idx) {
                    idx += 1;
                }
            }
            Some(b'0') => idx += 1,
            _ => return Err(self.expecting_value(start)),
        }
        let int_end = idx;
        let mut is_float = false;
        if self.at(idx) == Some(b'.') && self.is_digit_at(idx + 1) {
            is_float = true;
            idx += 2;
            while self.is_digit_at(idx) {
                idx += 1;
            }
        }
        if matches!(self.at(idx), Some(b'e' | b'E')) {
            let mut exp = idx + 1;
            if matches!(self.at(exp), Some(b'+' | b'-')) {
                exp += 1;
            }
            let digits = exp;
            while self.is_digit_at(exp) {
                exp += 1;
            }
            if exp > digits {
                is_float = true;
                idx = exp;
            }
        }
        // The slice is ASCII by construction.
        let text = std::str::from_utf8(&self.s[start..idx]).unwrap_or("0");
        if is_float {
            // The grammar above is a subset of what Rust parses.
            let x = text.parse::<f64>().unwrap_or(f64::NAN);
            return Ok((PyJson::Float(x), idx));
        }
        let digits = int_end - start - usize::from(text.starts_with('-'));
        if digits > INT_MAX_STR_DIGITS {
            return Err(LoadError {
                message: format!(
                    "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string \
                     conversion: value has {digits} digits; use sys.set_int_max_str_digits() \
                     to increase the limit"
                ),
            });
        }
        // Canonical already (no leading zeros); `-0` parses to 0.
        Ok((PyJson::int_from_decimal(text), idx))
    }

    /// A string whose opening quote is just before `end`
    /// (`scanstring_unicode`, strict); returns it and the index after the
    /// closing quote.
    fn scan_string(&self, mut end: usize) -> Result<(PyString, usize), LoadError> {
        let begin = end - 1;
        let len = self.s.len();
        let mut out: Vec<u8> = Vec::new();
        loop {
            let mut next = end;
            let mut c = 0;
            while next < len {
                c = self.s[next];
                if c == b'"' || c == b'\\' {
                    break;
                }
                if c <= 0x1f {
                    return Err(self.error("Invalid control character at", next));
                }
                next += 1;
            }
            if next >= len || !(c == b'"' || c == b'\\') {
                return Err(self.error("Unterminated string starting at", begin));
            }
            out.extend_from_slice(&self.s[end..next]);
            next += 1;
            if c == b'"' {
                return Ok((PyString(out), next));
            }
            if next == len {
                return Err(self.error("Unterminated string starting at", begin));
            }
            let esc = self.s[next];
            if esc != b'u' {
                end = next + 1;
                let decoded = match esc {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    _ => return Err(self.error("Invalid \\escape", end - 2)),
                };
                out.push(decoded);
                continue;
            }
            next += 1;
            end = next + 4;
            // Both failures point at the `u`; the escape's hex digits are
            // ASCII when valid, so byte and code point counts agree on
            // whichever is reported.
            if end >= len {
                return Err(self.error("Invalid \\uXXXX escape", next - 1));
            }
            let mut cp = self
                .hex4(next)
                .ok_or_else(|| self.error("Invalid \\uXXXX escape", next - 1))?;
            // A high surrogate followed by a `\u` escape of a low one is a
            // pair; the C scanner only looks when a character follows the
            // second escape.
            if (0xd800..=0xdbff).contains(&cp)
                && end + 6 < len
                && self.s[end] == b'\\'
                && self.s[end + 1] == b'u'
            {
                let low = self
                    .hex4(end + 2)
                    .ok_or_else(|| self.error("Invalid \\uXXXX escape", end + 1))?;
                if (0xdc00..=0xdfff).contains(&low) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                    end += 6;
                }
            }
            push_code_point(&mut out, cp);
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut value = 0;
        for i in 0..4 {
            let digit = char::from(self.at(at + i)?).to_digit(16)?;
            value = value * 16 + digit;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests;
