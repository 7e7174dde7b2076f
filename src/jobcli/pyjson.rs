//! JSON as Python's `json` module reads and writes it.
//!
//! The original client parses `state set --json VALUE` and every reply
//! with `json.loads`, and writes request bodies and printed values with
//! `json.dumps`. The observable details are Python's: object keys keep
//! their first position (a repeated key's last value wins), integers have
//! no size limit (up to 4300 digits), `NaN`/`Infinity` are accepted and
//! written, `-0` is the integer `0`, floats print as `repr(float)`, the
//! output is ASCII with `", "` and `": "` separators, and a malformed
//! document fails with the exact `JSONDecodeError` text of CPython 3.11's
//! C scanner (`Expecting value: line 1 column 1 (char 0)`).

use super::pynum::INT_MAX_STR_DIGITS;
use super::pystr::PyStr;
use std::collections::HashMap;

/// A JSON document as Python holds it after `json.loads`.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `null` (`None`).
    None,
    /// `true` / `false`.
    Bool(bool),
    /// An integer of any size, as canonical decimal text (`-12`, `0`).
    Int(String),
    /// A float (`NaN`, `Infinity` included).
    Float(f64),
    /// A string.
    Str(PyStr),
    /// An array.
    List(Vec<PyValue>),
    /// An object, in insertion order, keys unique.
    Dict(Vec<(PyStr, PyValue)>),
}

impl PyValue {
    /// A string value.
    pub fn str(text: impl Into<PyStr>) -> PyValue {
        PyValue::Str(text.into())
    }

    /// An object from `(key, value)` pairs (keys assumed unique).
    pub fn dict<const N: usize>(pairs: [(&str, PyValue); N]) -> PyValue {
        PyValue::Dict(
            pairs
                .into_iter()
                .map(|(k, v)| (PyStr::from(k), v))
                .collect(),
        )
    }

    /// An optional string: `None` when absent.
    pub fn opt_str(text: Option<&PyStr>) -> PyValue {
        text.map_or(PyValue::None, |t| PyValue::Str(t.clone()))
    }

    /// `dict.get(key)` on an object; None for a missing key or a value
    /// that is not an object.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Dict(pairs) => pairs
                .iter()
                .find(|(k, _)| k.as_text() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Python truthiness: `None`, `False`, `0`, `0.0`, `""`, `[]`, `{}`
    /// are false (NaN is true).
    pub fn truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(digits) => digits != "0",
            PyValue::Float(x) => *x != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::List(items) => !items.is_empty(),
            PyValue::Dict(pairs) => !pairs.is_empty(),
        }
    }

    /// Python's `json.dumps(value)` with its defaults.
    pub fn dumps(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    fn write_json(&self, out: &mut String) {
        match self {
            PyValue::None => out.push_str("null"),
            PyValue::Bool(true) => out.push_str("true"),
            PyValue::Bool(false) => out.push_str("false"),
            PyValue::Int(digits) => out.push_str(digits),
            PyValue::Float(x) if x.is_nan() => out.push_str("NaN"),
            PyValue::Float(x) if x.is_infinite() => {
                out.push_str(if *x > 0.0 { "Infinity" } else { "-Infinity" })
            }
            PyValue::Float(x) => out.push_str(&crate::pyfmt::py_float(*x)),
            PyValue::Str(s) => s.write_json(out),
            PyValue::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write_json(out);
                }
                out.push(']');
            }
            PyValue::Dict(pairs) => {
                out.push('{');
                for (i, (key, value)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    key.write_json(out);
                    out.push_str(": ");
                    value.write_json(out);
                }
                out.push('}');
            }
        }
    }

    /// Python's `str(value)`: a string as it is (lone surrogates as
    /// `\udcNN`, as stderr would show them), everything else as `repr`.
    pub fn py_str(&self) -> String {
        match self {
            PyValue::Str(s) => s.to_stderr_text(),
            other => other.py_repr(),
        }
    }

    /// Python's `repr(value)`: `None`, `True`, `1.0`, `'text'`,
    /// `[1, 'a']`, `{'k': None}`.
    pub fn py_repr(&self) -> String {
        match self {
            PyValue::None => "None".to_owned(),
            PyValue::Bool(true) => "True".to_owned(),
            PyValue::Bool(false) => "False".to_owned(),
            PyValue::Int(digits) => digits.clone(),
            PyValue::Float(x) => crate::pyfmt::py_float(*x),
            PyValue::Str(s) => s.repr(),
            PyValue::List(items) => {
                let inner: Vec<String> = items.iter().map(PyValue::py_repr).collect();
                format!("[{}]", inner.join(", "))
            }
            PyValue::Dict(pairs) => {
                let inner: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", k.repr(), v.py_repr()))
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
        }
    }
}

/// Why `json.loads` refused a document: the text of Python's exception.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How deep arrays and objects may nest before Python's recursion limit
/// (1000 frames, a few of them taken by the CLI's own calls) stops the C
/// scanner.
const MAX_DEPTH: usize = 989;

/// Python's `json.loads(text)` for a `str` argument.
pub fn loads(text: &PyStr) -> Result<PyValue, LoadError> {
    let points = text.points();
    let parser = Parser { s: &points };
    if points.first() == Some(&0xfeff) {
        return Err(parser.error("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0));
    }
    let start = parser.skip_ws(0);
    let (value, end) = parser.scan(start)?;
    let end = parser.skip_ws(end);
    if end != points.len() {
        return Err(parser.error("Extra data", end));
    }
    Ok(value)
}

/// Python's `json.loads(body)` for a `bytes` reply: UTF-8 (a leading BOM
/// dropped, as `utf-8-sig` does); None when the bytes do not decode or do
/// not parse. (Python would also detect UTF-16/32 by their NUL bytes; no
/// server sends those, and here they read as unparseable.)
pub fn loads_bytes(body: &[u8]) -> Option<PyValue> {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let text = std::str::from_utf8(body).ok()?;
    loads(&PyStr::from(text)).ok()
}

struct Parser<'a> {
    s: &'a [u32],
}

/// An array or object being read: its items so far (and, for an object,
/// the index of each key and the key whose value comes next).
enum Open {
    List(Vec<PyValue>),
    Dict {
        pairs: Vec<(PyStr, PyValue)>,
        index: HashMap<PyStr, usize>,
        key: PyStr,
    },
}

/// What a failed scan reports: a `JSONDecodeError`, or Python's
/// `StopIteration(idx)` that the caller turns into `Expecting value`.
type Scan<T> = Result<T, LoadError>;

fn is_ws(cp: u32) -> bool {
    matches!(cp, 0x20 | 0x09 | 0x0a | 0x0d)
}

fn is_digit(cp: u32) -> bool {
    (0x30..=0x39).contains(&cp)
}

impl Parser<'_> {
    fn at(&self, idx: usize) -> Option<u32> {
        self.s.get(idx).copied()
    }

    fn skip_ws(&self, mut idx: usize) -> usize {
        while self.at(idx).is_some_and(is_ws) {
            idx += 1;
        }
        idx
    }

    /// `JSONDecodeError(msg, doc, pos)`: `"{msg}: line L column C (char P)"`.
    fn error(&self, msg: &str, pos: usize) -> LoadError {
        let before = &self.s[..pos.min(self.s.len())];
        let line = before.iter().filter(|&&c| c == 0x0a).count() + 1;
        let column = match before.iter().rposition(|&c| c == 0x0a) {
            Some(nl) => pos - nl,
            None => pos + 1,
        };
        LoadError(format!("{msg}: line {line} column {column} (char {pos})"))
    }

    fn expecting_value(&self, pos: usize) -> LoadError {
        self.error("Expecting value", pos)
    }

    fn matches(&self, idx: usize, word: &str) -> bool {
        word.chars()
            .enumerate()
            .all(|(i, c)| self.at(idx + i) == Some(u32::from(c)))
    }

    /// One value at `idx` (the C scanner's `scan_once_unicode` with its
    /// `_parse_object_unicode` and `_parse_array_unicode`); returns it and
    /// the index after it. Containers are tracked on an explicit stack
    /// rather than by recursion, so nesting cannot overflow the stack.
    fn scan(&self, mut idx: usize) -> Scan<(PyValue, usize)> {
        let mut stack: Vec<Open> = Vec::new();
        'value: loop {
            // Expecting a value at idx.
            let (mut value, mut end) = match self.at(idx).and_then(char::from_u32) {
                Some('[') => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(Self::too_deep("array"));
                    }
                    let next = self.skip_ws(idx + 1);
                    if self.at(next) == Some(u32::from(']')) {
                        (PyValue::List(Vec::new()), next + 1)
                    } else {
                        stack.push(Open::List(Vec::new()));
                        idx = next;
                        continue 'value;
                    }
                }
                Some('{') => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(Self::too_deep("object"));
                    }
                    let next = self.skip_ws(idx + 1);
                    if self.at(next) == Some(u32::from('}')) {
                        (PyValue::Dict(Vec::new()), next + 1)
                    } else {
                        let (key, after) = self.scan_key(next)?;
                        stack.push(Open::Dict {
                            pairs: Vec::new(),
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
                let Some(mut open) = stack.pop() else {
                    return Ok((value, end));
                };
                let next = self.skip_ws(end);
                let close = match &mut open {
                    Open::List(items) => {
                        items.push(value);
                        ']'
                    }
                    Open::Dict { pairs, index, key } => {
                        let key = std::mem::replace(key, PyStr::from(""));
                        match index.get(&key) {
                            Some(&at) => pairs[at].1 = value,
                            None => {
                                index.insert(key.clone(), pairs.len());
                                pairs.push((key, value));
                            }
                        }
                        '}'
                    }
                };
                if self.at(next) == Some(u32::from(close)) {
                    value = match open {
                        Open::List(items) => PyValue::List(items),
                        Open::Dict { pairs, .. } => PyValue::Dict(pairs),
                    };
                    end = next + 1;
                    continue;
                }
                if self.at(next) != Some(u32::from(',')) {
                    return Err(self.error("Expecting ',' delimiter", next));
                }
                idx = self.skip_ws(next + 1);
                if let Open::Dict { key, .. } = &mut open {
                    let (next_key, after_key) = self.scan_key(idx)?;
                    *key = next_key;
                    idx = after_key;
                }
                stack.push(open);
                continue 'value;
            }
        }
    }

    /// An object key at `idx` and its `:`; returns the key and the index
    /// of the value after the delimiter and whitespace.
    fn scan_key(&self, idx: usize) -> Scan<(PyStr, usize)> {
        if self.at(idx) != Some(u32::from('"')) {
            return Err(self.error("Expecting property name enclosed in double quotes", idx));
        }
        let (key, next) = self.scan_string(idx + 1)?;
        let colon = self.skip_ws(next);
        if self.at(colon) != Some(u32::from(':')) {
            return Err(self.error("Expecting ':' delimiter", colon));
        }
        Ok((key, self.skip_ws(colon + 1)))
    }

    /// A string, literal or number at `idx`.
    fn scan_scalar(&self, idx: usize) -> Scan<(PyValue, usize)> {
        let Some(c) = self.at(idx) else {
            return Err(self.expecting_value(idx));
        };
        match char::from_u32(c) {
            Some('"') => {
                let (s, end) = self.scan_string(idx + 1)?;
                return Ok((PyValue::Str(s), end));
            }
            Some('n') if self.matches(idx, "null") => return Ok((PyValue::None, idx + 4)),
            Some('t') if self.matches(idx, "true") => return Ok((PyValue::Bool(true), idx + 4)),
            Some('f') if self.matches(idx, "false") => return Ok((PyValue::Bool(false), idx + 5)),
            Some('N') if self.matches(idx, "NaN") => {
                return Ok((PyValue::Float(f64::NAN), idx + 3))
            }
            Some('I') if self.matches(idx, "Infinity") => {
                return Ok((PyValue::Float(f64::INFINITY), idx + 8))
            }
            Some('-') if self.matches(idx, "-Infinity") => {
                return Ok((PyValue::Float(f64::NEG_INFINITY), idx + 9))
            }
            _ => {}
        }
        self.scan_number(idx)
    }

    /// A number at `idx` (`_match_number_unicode`): `-`? then `0` or
    /// `[1-9][0-9]*`, then `.digits` only when a digit follows the dot,
    /// then an exponent only when it has digits (else backtrack).
    fn scan_number(&self, start: usize) -> Scan<(PyValue, usize)> {
        let mut idx = start;
        if self.at(idx) == Some(u32::from('-')) {
            idx += 1;
        }
        match self.at(idx) {
            Some(c) if (0x31..=0x39).contains(&c) => {
                idx += 1;
                while self.at(idx).is_some_and(is_digit) {
                    idx += 1;
                }
            }
            Some(0x30) => idx += 1,
            _ => return Err(self.expecting_value(start)),
        }
        let mut is_float = false;
        if self.at(idx) == Some(u32::from('.')) && self.at(idx + 1).is_some_and(is_digit) {
            is_float = true;
            idx += 2;
            while self.at(idx).is_some_and(is_digit) {
                idx += 1;
            }
        }
        if matches!(self.at(idx), Some(0x65 | 0x45)) && idx + 1 < self.s.len() {
            let e_start = idx;
            idx += 1;
            if matches!(self.at(idx), Some(0x2b | 0x2d)) && idx + 1 < self.s.len() {
                idx += 1;
            }
            while self.at(idx).is_some_and(is_digit) {
                idx += 1;
            }
            if self.at(idx - 1).is_some_and(is_digit) {
                is_float = true;
            } else {
                idx = e_start;
            }
        }
        let text: String = self.s[start..idx]
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        if is_float {
            // The grammar above is a subset of what Rust parses.
            let x = text.parse::<f64>().unwrap_or(f64::NAN);
            return Ok((PyValue::Float(x), idx));
        }
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
        };
        if digits.len() > INT_MAX_STR_DIGITS {
            return Err(LoadError(format!(
                "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string conversion: \
                 value has {} digits; use sys.set_int_max_str_digits() to increase the limit",
                digits.len()
            )));
        }
        let canonical = if negative && digits != "0" {
            text.clone()
        } else {
            digits.to_owned()
        };
        Ok((PyValue::Int(canonical), idx))
    }

    /// A string whose opening quote is just before `end`
    /// (`scanstring_unicode`, strict); returns it and the index after the
    /// closing quote.
    fn scan_string(&self, mut end: usize) -> Scan<(PyStr, usize)> {
        let begin = end - 1;
        let len = self.s.len();
        let mut out: Vec<u32> = Vec::new();
        loop {
            let mut next = end;
            let mut c = 0;
            while next < len {
                c = self.s[next];
                if c == 0x22 || c == 0x5c {
                    break;
                }
                if c <= 0x1f {
                    return Err(self.error("Invalid control character at", next));
                }
                next += 1;
            }
            if next >= len || !(c == 0x22 || c == 0x5c) {
                return Err(self.error("Unterminated string starting at", begin));
            }
            out.extend_from_slice(&self.s[end..next]);
            next += 1;
            if c == 0x22 {
                return Ok((PyStr::from_points(out), next));
            }
            if next == len {
                return Err(self.error("Unterminated string starting at", begin));
            }
            let esc = self.s[next];
            if esc != u32::from('u') {
                end = next + 1;
                let decoded = match char::from_u32(esc) {
                    Some('"') => '"',
                    Some('\\') => '\\',
                    Some('/') => '/',
                    Some('b') => '\u{8}',
                    Some('f') => '\u{c}',
                    Some('n') => '\n',
                    Some('r') => '\r',
                    Some('t') => '\t',
                    _ => return Err(self.error("Invalid \\escape", end - 2)),
                };
                out.push(u32::from(decoded));
                continue;
            }
            next += 1;
            end = next + 4;
            if end >= len {
                return Err(self.error("Invalid \\uXXXX escape", next - 1));
            }
            let mut cp = self
                .hex4(next)
                .ok_or_else(|| self.error("Invalid \\uXXXX escape", end - 5))?;
            // A high surrogate followed by a `\u` escape of a low one is a
            // pair; the C scanner only looks when a character follows the
            // second escape.
            if (0xd800..=0xdbff).contains(&cp)
                && end + 6 < len
                && self.s[end] == 0x5c
                && self.s[end + 1] == u32::from('u')
            {
                let low = self
                    .hex4(end + 2)
                    .ok_or_else(|| self.error("Invalid \\uXXXX escape", end + 1))?;
                if (0xdc00..=0xdfff).contains(&low) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                    end += 6;
                }
            }
            out.push(cp);
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut value = 0;
        for i in 0..4 {
            let digit = char::from_u32(self.at(at + i)?)?.to_digit(16)?;
            value = value * 16 + digit;
        }
        Some(value)
    }

    fn too_deep(what: &str) -> LoadError {
        LoadError(format!(
            "maximum recursion depth exceeded while decoding a JSON {what} from a unicode string"
        ))
    }
}

#[cfg(test)]
mod tests;
