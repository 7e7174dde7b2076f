//! Python's JSON values, as the original's interpreter holds them. Both
//! ends of the job API talk to Python through its `json` module: the
//! server reads a job's request with `json.loads` and judges the Python
//! values it gets (portability, size, cursor comparisons, error texts);
//! the client parses `state set --json VALUE` and every reply with
//! `json.loads`, writes request bodies and printed values with
//! `json.dumps`, and prints `str()`/`repr()` of values in its messages.
//! That `json` accepts more than JSON proper (`NaN`, `Infinity`, integers
//! of any width, strings with lone surrogates) and keeps the
//! `int`/`float` distinction, so one model serves both ends here:
//!
//! - [`PyString`]: a `str`, lone surrogates included, with `repr()`,
//!   `strip()`, Python's ordering, and `surrogateescape` to and from OS
//!   bytes;
//! - [`PyJson`] and [`PyDict`]: a value of `json.loads`; [`loads`] reads
//!   one as `json.loads` does, with CPython's error texts, and
//!   [`PyJson::dumps`] writes one as `json.dumps` does (ASCII-only, as the
//!   original's default install);
//! - [`int_of_text`], [`float_of_text`], [`PyJson::to_py_int`] and
//!   [`PyJson::to_py_float`]: Python's `int()` and `float()`.

mod number;
mod parse;
mod string;

pub use number::{float_of_text, int_of_text, IntError, PyConvError, INT_MAX_STR_DIGITS};
pub use parse::{loads, loads_with_depth, LoadError, MAX_DEPTH};
pub use string::{PyString, PyText};

use crate::pyfmt::py_float;
use std::fmt::Write;

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

    /// The keys, in order (what Python's `for k in d` yields).
    pub fn keys(&self) -> impl Iterator<Item = &PyString> {
        self.0.iter().map(|(k, _)| k)
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
/// is never equal to an int here); `state::jobstate::rules::py_eq` is
/// Python's `==`.
#[derive(Clone, Debug, PartialEq)]
pub enum PyJson {
    /// `None`.
    Null,
    /// `True`/`False`.
    Bool(bool),
    /// An `int` that fits in 128 bits.
    Int(i128),
    /// An `int` beyond 128 bits, as its canonical decimal digits (with a
    /// leading `-` when negative). Never portable; kept to send it on and
    /// to name it in errors.
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
    /// `json.dumps(obj)` with its default separators (the client's
    /// request bodies and printed values).
    pub const SPACED: Dumps = Dumps {
        sort_keys: false,
        compact: false,
    };
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

    /// The value of `key`, if this is a dict holding it (`dict.get`; None
    /// for a value that is not a dict).
    pub fn get(&self, key: &(impl PyText + ?Sized)) -> Option<&PyJson> {
        self.as_dict()?.get(key)
    }

    /// Python's truthiness (`bool(x)`: NaN is true).
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

    /// Python's `repr()`: `None`, `True`, `1.0`, `'text'`, `[1, 'a']`,
    /// `{'k': None}`.
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
            PyJson::Str(s) => s.write_json(out),
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
                    k.write_json(out);
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

#[cfg(test)]
mod tests;
