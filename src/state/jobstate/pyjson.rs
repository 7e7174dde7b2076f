//! JSON values as the original's Python sees them. A job's values reach
//! the original through `json.loads`, which accepts more than JSON proper
//! (`NaN`, `Infinity`, integers of any width, strings with lone
//! surrogates) and which keeps the `int`/`float` distinction; its
//! portability gate, size limit, cursor comparisons and error texts all
//! judge those Python values. [`PyJson`] holds exactly them, [`parse`]
//! reads them as `json.loads` does, and [`PyJson::dumps`] writes them as
//! `json.dumps` does (ASCII-only, as the original's default install).
//!
//! Strings are [`PyString`]: Python's code points, lone surrogates
//! included, kept as generalized UTF-8 (the bytes Python's
//! `encode("utf-8", "surrogatepass")` writes, which also name files).

use crate::pyfmt::py_float;
use std::fmt::Write;

/// The deepest nesting [`parse`] reads; deeper input is an error, as
/// Python's recursion limit makes it one for the original (whose exact
/// bound depends on its stack at the time).
pub const MAX_PARSE_DEPTH: usize = 1000;

/// The most digits of an integer literal Python converts (its
/// `int_max_str_digits` default).
pub const MAX_INT_DIGITS: usize = 4300;

/// A Python `str`: a sequence of code points, lone surrogates allowed,
/// stored as generalized UTF-8. Equality, hashing and ordering are
/// Python's (by code point).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PyString(Vec<u8>);

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
fn push_code_point(out: &mut Vec<u8>, cp: u32) {
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

/// A Python `dict` of a JSON object: string keys in insertion order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PyDict(Vec<(PyString, PyJson)>);

impl PyDict {
    /// An empty dict.
    pub fn new() -> PyDict {
        PyDict(Vec::new())
    }

    /// The value of `key`.
    pub fn get(&self, key: &(impl PyText + ?Sized)) -> Option<&PyJson> {
        let key = key.wtf8();
        self.0
            .iter()
            .find(|(k, _)| k.as_bytes() == key)
            .map(|(_, v)| v)
    }

    /// Sets `key` as Python's `d[key] = value` does: an existing key
    /// keeps its place, a new one goes last.
    pub fn insert(&mut self, key: impl Into<PyString>, value: PyJson) {
        let key = key.into();
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// Removes `key`, returning its value (Python's `dict.pop`).
    pub fn remove(&mut self, key: &(impl PyText + ?Sized)) -> Option<PyJson> {
        let key = key.wtf8();
        let at = self.0.iter().position(|(k, _)| k.as_bytes() == key)?;
        Some(self.0.remove(at).1)
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&PyString, &PyJson)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<PyString>> FromIterator<(K, PyJson)> for PyDict {
    fn from_iter<I: IntoIterator<Item = (K, PyJson)>>(items: I) -> PyDict {
        let mut dict = PyDict::new();
        for (k, v) in items {
            dict.insert(k, v);
        }
        dict
    }
}

/// A value of Python's `json.loads`. `PartialEq` is structural (a float
/// is never equal to an int here); [`crate::state::jobstate::rules::py_eq`]
/// is Python's `==`.
#[derive(Clone, Debug, PartialEq)]
pub enum PyJson {
    /// `None`.
    Null,
    /// `True`/`False`.
    Bool(bool),
    /// An `int` that fits in 128 bits.
    Int(i128),
    /// An `int` beyond 128 bits, as its decimal digits (with a leading
    /// `-` when negative). Never portable; kept to name it in errors.
    BigInt(String),
    /// A `float` (non-finite ones too: `json.loads` reads `NaN`).
    Float(f64),
    /// A `str`.
    Str(PyString),
    /// A `list`.
    List(Vec<PyJson>),
    /// A `dict`.
    Dict(PyDict),
}

impl From<&str> for PyJson {
    fn from(text: &str) -> PyJson {
        PyJson::Str(PyString::new(text))
    }
}

impl From<PyString> for PyJson {
    fn from(text: PyString) -> PyJson {
        PyJson::Str(text)
    }
}

impl From<f64> for PyJson {
    fn from(x: f64) -> PyJson {
        PyJson::Float(x)
    }
}

impl From<i64> for PyJson {
    fn from(n: i64) -> PyJson {
        PyJson::Int(i128::from(n))
    }
}

impl From<bool> for PyJson {
    fn from(b: bool) -> PyJson {
        PyJson::Bool(b)
    }
}

impl From<PyDict> for PyJson {
    fn from(dict: PyDict) -> PyJson {
        PyJson::Dict(dict)
    }
}

/// How [`PyJson::dumps`] writes: always ASCII-only (`ensure_ascii`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dumps {
    /// Keys sorted at every level (`sort_keys=True`).
    pub sort_keys: bool,
    /// `separators=(",", ":")` rather than the default `", "`, `": "`.
    pub compact: bool,
}

impl Dumps {
    /// The store's and the job API's encoding: compact, insertion order.
    pub const COMPACT: Dumps = Dumps {
        sort_keys: false,
        compact: true,
    };
    /// The store's document encoding: compact, keys sorted.
    pub const SORTED: Dumps = Dumps {
        sort_keys: true,
        compact: true,
    };
    /// `json.dumps(obj)` with its default separators.
    pub const SPACED: Dumps = Dumps {
        sort_keys: false,
        compact: false,
    };
}

/// Why a conversion of [`PyJson::to_py_float`] or [`PyJson::to_py_int`]
/// failed, by the Python exception it raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyConvError {
    /// `TypeError` (None, a list, a dict).
    Type,
    /// `ValueError` (a string that is not a number, `int(nan)`).
    Value,
    /// `OverflowError` (an int too big for a float, `int(inf)`).
    Overflow,
}

impl PyJson {
    /// A dict from `(key, value)` pairs, in order.
    pub fn object<K: Into<PyString>>(items: impl IntoIterator<Item = (K, PyJson)>) -> PyJson {
        PyJson::Dict(items.into_iter().collect())
    }

    /// The dict, if this is one.
    pub fn as_dict(&self) -> Option<&PyDict> {
        match self {
            PyJson::Dict(d) => Some(d),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_py_str(&self) -> Option<&PyString> {
        match self {
            PyJson::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value of `key`, if this is a dict holding it.
    pub fn get(&self, key: &(impl PyText + ?Sized)) -> Option<&PyJson> {
        self.as_dict()?.get(key)
    }

    /// Python's truthiness (`bool(x)`).
    pub fn is_truthy(&self) -> bool {
        match self {
            PyJson::Null => false,
            PyJson::Bool(b) => *b,
            PyJson::Int(n) => *n != 0,
            PyJson::BigInt(_) => true,
            PyJson::Float(x) => *x != 0.0,
            PyJson::Str(s) => !s.is_empty(),
            PyJson::List(items) => !items.is_empty(),
            PyJson::Dict(d) => !d.is_empty(),
        }
    }

    /// The name of its Python type (`type(x).__name__`).
    pub fn type_name(&self) -> &'static str {
        match self {
            PyJson::Null => "NoneType",
            PyJson::Bool(_) => "bool",
            PyJson::Int(_) | PyJson::BigInt(_) => "int",
            PyJson::Float(_) => "float",
            PyJson::Str(_) => "str",
            PyJson::List(_) => "list",
            PyJson::Dict(_) => "dict",
        }
    }

    /// Python's `repr()`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        self.write_repr(&mut out);
        out
    }

    fn write_repr(&self, out: &mut String) {
        match self {
            PyJson::Null => out.push_str("None"),
            PyJson::Bool(true) => out.push_str("True"),
            PyJson::Bool(false) => out.push_str("False"),
            PyJson::Int(n) => {
                let _ = write!(out, "{n}");
            }
            PyJson::BigInt(digits) => out.push_str(digits),
            PyJson::Float(x) => out.push_str(&py_float(*x)),
            PyJson::Str(s) => out.push_str(&s.repr()),
            PyJson::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write_repr(out);
                }
                out.push(']');
            }
            PyJson::Dict(dict) => {
                out.push('{');
                for (i, (k, v)) in dict.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&k.repr());
                    out.push_str(": ");
                    v.write_repr(out);
                }
                out.push('}');
            }
        }
    }

    /// Python's `str()`: a string itself, anything else its `repr()`.
    pub fn py_str(&self) -> PyString {
        match self {
            PyJson::Str(s) => s.clone(),
            other => PyString::from(other.repr()),
        }
    }

    /// Python's `float(x)`.
    pub fn to_py_float(&self) -> Result<f64, PyConvError> {
        match self {
            PyJson::Null | PyJson::List(_) | PyJson::Dict(_) => Err(PyConvError::Type),
            PyJson::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
            // Both casts round to nearest, ties to even, as Python does.
            PyJson::Int(n) => Ok(*n as f64),
            PyJson::BigInt(digits) => digits
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or(PyConvError::Overflow),
            PyJson::Float(x) => Ok(*x),
            PyJson::Str(s) => s
                .as_str()
                .and_then(parse_py_float_text)
                .ok_or(PyConvError::Value),
        }
    }

    /// Python's `int(x)`, saturated to the 128-bit range (an `int` that
    /// wide only ever fails a range check anyway).
    pub fn to_py_int(&self) -> Result<i128, PyConvError> {
        match self {
            PyJson::Null | PyJson::List(_) | PyJson::Dict(_) => Err(PyConvError::Type),
            PyJson::Bool(b) => Ok(i128::from(*b)),
            PyJson::Int(n) => Ok(*n),
            PyJson::BigInt(digits) => Ok(if digits.starts_with('-') {
                i128::MIN
            } else {
                i128::MAX
            }),
            PyJson::Float(x) if x.is_nan() => Err(PyConvError::Value),
            PyJson::Float(x) if x.is_infinite() => Err(PyConvError::Overflow),
            // `as` truncates toward zero and saturates.
            PyJson::Float(x) => Ok(*x as i128),
            PyJson::Str(s) => s
                .as_str()
                .and_then(parse_py_int_text)
                .ok_or(PyConvError::Value),
        }
    }

    /// The JSON text Python's `json.dumps(.., ensure_ascii=True)` writes
    /// (floats as `float.__repr__`, `NaN`/`Infinity` tokens for the
    /// non-finite ones).
    pub fn dumps(&self, style: Dumps) -> String {
        let mut out = String::new();
        self.write_json(&mut out, style);
        out
    }

    fn write_json(&self, out: &mut String, style: Dumps) {
        match self {
            PyJson::Null => out.push_str("null"),
            PyJson::Bool(true) => out.push_str("true"),
            PyJson::Bool(false) => out.push_str("false"),
            PyJson::Int(n) => {
                let _ = write!(out, "{n}");
            }
            PyJson::BigInt(digits) => out.push_str(digits),
            PyJson::Float(x) if x.is_nan() => out.push_str("NaN"),
            PyJson::Float(x) if x.is_infinite() => {
                out.push_str(if *x > 0.0 { "Infinity" } else { "-Infinity" })
            }
            PyJson::Float(x) => out.push_str(&py_float(*x)),
            PyJson::Str(s) => write_json_string(out, s),
            PyJson::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if style.compact { "," } else { ", " });
                    }
                    item.write_json(out, style);
                }
                out.push(']');
            }
            PyJson::Dict(dict) => {
                let mut entries: Vec<&(PyString, PyJson)> = dict.0.iter().collect();
                if style.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(&b.0));
                }
                out.push('{');
                for (i, (k, v)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(if style.compact { "," } else { ", " });
                    }
                    write_json_string(out, k);
                    out.push_str(if style.compact { ":" } else { ": " });
                    v.write_json(out, style);
                }
                out.push('}');
            }
        }
    }

    /// The value as a `serde_json` value, when it has one: no non-finite
    /// float, no lone surrogate, no integer beyond 128 bits that serde
    /// cannot hold (ints beyond 64 bits become floats there).
    pub fn to_serde(&self) -> Option<serde_json::Value> {
        use serde_json::Value;
        Some(match self {
            PyJson::Null => Value::Null,
            PyJson::Bool(b) => Value::Bool(*b),
            PyJson::Int(n) => match (i64::try_from(*n), u64::try_from(*n)) {
                (Ok(v), _) => Value::from(v),
                (_, Ok(v)) => Value::from(v),
                _ => Value::from(*n as f64),
            },
            PyJson::BigInt(_) => return None,
            PyJson::Float(x) => Value::Number(serde_json::Number::from_f64(*x)?),
            PyJson::Str(s) => Value::String(s.as_str()?.to_owned()),
            PyJson::List(items) => Value::Array(
                items
                    .iter()
                    .map(PyJson::to_serde)
                    .collect::<Option<Vec<_>>>()?,
            ),
            PyJson::Dict(dict) => {
                let mut map = serde_json::Map::new();
                for (k, v) in dict.iter() {
                    map.insert(k.as_str()?.to_owned(), v.to_serde()?);
                }
                Value::Object(map)
            }
        })
    }

    /// A `serde_json` value as Python reads the same JSON (integers stay
    /// `int`, numbers with a fraction or exponent `float`).
    pub fn from_serde(value: &serde_json::Value) -> PyJson {
        use serde_json::Value;
        match value {
            Value::Null => PyJson::Null,
            Value::Bool(b) => PyJson::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    PyJson::Int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    PyJson::Int(i128::from(u))
                } else {
                    PyJson::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => PyJson::Str(PyString::new(s)),
            Value::Array(items) => PyJson::List(items.iter().map(PyJson::from_serde).collect()),
            Value::Object(map) => PyJson::Dict(
                map.iter()
                    .map(|(k, v)| (PyString::new(k), PyJson::from_serde(v)))
                    .collect(),
            ),
        }
    }
}

/// Writes `s` as an ASCII-only JSON string (Python's `ensure_ascii`):
/// the short escapes, `\u00XX` for other controls and DEL, `\uXXXX`
/// (lowercase, surrogate pairs above U+FFFF) beyond ASCII.
fn write_json_string(out: &mut String, s: &PyString) {
    out.push('"');
    for cp in s.code_points() {
        match cp {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x20..=0x7e => out.push(char::from(cp as u8)),
            0x10000.. => {
                let v = cp - 0x10000;
                let _ = write!(
                    out,
                    "\\u{:04x}\\u{:04x}",
                    0xd800 + (v >> 10),
                    0xdc00 + (v & 0x3ff)
                );
            }
            _ => {
                let _ = write!(out, "\\u{cp:04x}");
            }
        }
    }
    out.push('"');
}

/// Python's `float(str)` of ASCII text: surrounding whitespace allowed,
/// a sign, digits with single `_` between them, a fraction, an exponent,
/// or `inf`/`infinity`/`nan` in any case.
fn parse_py_float_text(text: &str) -> Option<f64> {
    let t = text.trim_matches(|c: char| py_isspace(u32::from(c)));
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(sign * f64::INFINITY);
    }
    if lower == "nan" {
        return Some(f64::NAN);
    }
    // Underscores only between digits.
    let bytes = body.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'_' {
            let before = i.checked_sub(1).and_then(|j| bytes.get(j));
            let after = bytes.get(i + 1);
            if !before.is_some_and(u8::is_ascii_digit) || !after.is_some_and(u8::is_ascii_digit) {
                return None;
            }
        }
    }
    let plain: String = body.chars().filter(|c| *c != '_').collect();
    let valid = {
        let b = plain.as_bytes();
        let mut i = 0;
        let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
        i += int_digits;
        let mut frac_digits = 0;
        if b.get(i) == Some(&b'.') {
            i += 1;
            frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            i += frac_digits;
        }
        let mut ok = int_digits + frac_digits > 0;
        if ok && matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let exp_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            ok = exp_digits > 0;
            i += exp_digits;
        }
        ok && i == b.len()
    };
    if !valid {
        return None;
    }
    plain.parse::<f64>().ok().map(|x| sign * x)
}

/// Python's `int(str)` in base 10 of ASCII text (saturated to 128 bits).
fn parse_py_int_text(text: &str) -> Option<i128> {
    let t = text.trim_matches(|c: char| py_isspace(u32::from(c)));
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let bytes = body.as_bytes();
    if bytes.is_empty()
        || !bytes.first().is_some_and(u8::is_ascii_digit)
        || !bytes.last().is_some_and(u8::is_ascii_digit)
    {
        return None;
    }
    let mut value: i128 = 0;
    let mut digits = 0;
    let mut previous_underscore = false;
    for b in bytes {
        match b {
            b'_' if !previous_underscore => previous_underscore = true,
            b'0'..=b'9' => {
                previous_underscore = false;
                digits += 1;
                let d = i128::from(b - b'0');
                value = value.saturating_mul(10).saturating_add(d);
            }
            _ => return None,
        }
    }
    if digits > MAX_INT_DIGITS {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// Why [`parse`] refused its input (the text says where).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct ParseError {
    /// What was expected or wrong.
    pub what: &'static str,
    /// The byte offset.
    pub at: usize,
}

/// Reads `text` as Python's `json.loads(text)` does: `NaN`, `Infinity`
/// and `-Infinity` accepted, integers of any width (up to Python's 4300
/// digit conversion limit), lone surrogates from `\u` escapes kept, a
/// repeated key keeping its first place and its last value, only
/// space, tab, newline and carriage return as whitespace, and no control
/// character inside a string.
pub fn parse(text: &str) -> Result<PyJson, ParseError> {
    let mut parser = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    parser.ws();
    let value = parser.value(0)?;
    parser.ws();
    if parser.i != parser.b.len() {
        return Err(parser.err("extra data"));
    }
    Ok(value)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> ParseError {
        ParseError { what, at: self.i }
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &str, value: PyJson) -> Result<PyJson, ParseError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(value)
        } else {
            Err(self.err("expecting value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<PyJson, ParseError> {
        match self.b.get(self.i) {
            Some(b'"') => self.string().map(PyJson::Str),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'n') => self.literal("null", PyJson::Null),
            Some(b't') => self.literal("true", PyJson::Bool(true)),
            Some(b'f') => self.literal("false", PyJson::Bool(false)),
            Some(b'N') => self.literal("NaN", PyJson::Float(f64::NAN)),
            Some(b'I') => self.literal("Infinity", PyJson::Float(f64::INFINITY)),
            Some(b'-') if self.b[self.i..].starts_with(b"-Infinity") => {
                self.i += "-Infinity".len();
                Ok(PyJson::Float(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err("expecting value")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<PyJson, ParseError> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("expecting value")),
        }
        let int_end = self.i;
        let mut is_float = false;
        if self.b.get(self.i) == Some(&b'.')
            && self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit)
        {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            let mark = self.i;
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                // Not an exponent: the number ends before the `e`.
                self.i = mark;
            } else {
                is_float = true;
            }
        }
        // The slice is ASCII by construction.
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("0");
        if is_float {
            return text
                .parse::<f64>()
                .map(PyJson::Float)
                .map_err(|_| self.err("bad number"));
        }
        let digits = int_end - start - usize::from(text.starts_with('-'));
        if digits > MAX_INT_DIGITS {
            return Err(self.err("integer literal over the 4300 digit limit"));
        }
        Ok(match text.parse::<i128>() {
            Ok(n) => PyJson::Int(n),
            Err(_) => PyJson::BigInt(text.to_owned()),
        })
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let hex = self
            .b
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.err("invalid \\uXXXX escape"))?;
        let mut cp = 0u32;
        for h in hex {
            let d = (*h as char)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\uXXXX escape"))?;
            cp = cp * 16 + d;
        }
        self.i += 4;
        Ok(cp)
    }

    fn string(&mut self) -> Result<PyString, ParseError> {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(&byte) = self.b.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            match byte {
                b'"' => {
                    self.i += 1;
                    return Ok(PyString(out));
                }
                b'\\' => {
                    self.i += 1;
                    let Some(&esc) = self.b.get(self.i) else {
                        return Err(self.err("unterminated string"));
                    };
                    self.i += 1;
                    let simple = match esc {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return Err(self.err("invalid escape")),
                    };
                    if let Some(c) = simple {
                        out.push(c);
                        continue;
                    }
                    let mut cp = self.hex4()?;
                    // A high surrogate escape directly followed by a low
                    // one is one code point; anything else stays lone.
                    if (0xd800..=0xdbff).contains(&cp)
                        && self.b.get(self.i..self.i + 2) == Some(b"\\u")
                    {
                        let mark = self.i;
                        self.i += 2;
                        let low = self.hex4()?;
                        if (0xdc00..=0xdfff).contains(&low) {
                            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                        } else {
                            self.i = mark;
                        }
                    }
                    push_code_point(&mut out, cp);
                }
                0..=0x1f => return Err(self.err("invalid control character")),
                _ => {
                    out.push(byte);
                    self.i += 1;
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<PyJson, ParseError> {
        if depth > MAX_PARSE_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.i += 1;
        let mut entries: Vec<(PyString, PyJson)> = Vec::new();
        let mut index: std::collections::HashMap<PyString, usize> =
            std::collections::HashMap::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(PyJson::Dict(PyDict(entries)));
        }
        loop {
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.err("expecting property name enclosed in double quotes"));
            }
            let key = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.err("expecting ':' delimiter"));
            }
            self.i += 1;
            self.ws();
            let value = self.value(depth)?;
            match index.get(&key) {
                Some(&at) => entries[at].1 = value,
                None => {
                    index.insert(key.clone(), entries.len());
                    entries.push((key, value));
                }
            }
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(PyJson::Dict(PyDict(entries)));
                }
                _ => return Err(self.err("expecting ',' delimiter")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<PyJson, ParseError> {
        if depth > MAX_PARSE_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(PyJson::List(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(PyJson::List(items));
                }
                _ => return Err(self.err("expecting ',' delimiter")),
            }
        }
    }
}

#[cfg(test)]
#[path = "pyjson_tests.rs"]
mod tests;
