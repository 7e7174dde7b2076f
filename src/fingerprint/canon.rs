//! A minimal JSON value and the exact byte form the job-set id hashes:
//! keys sorted at every level, compact separators, ASCII-only strings with
//! `\uXXXX` escapes, and numbers written the way Python writes them.

use std::collections::BTreeMap;

/// An object key: the fixed keys of a job are borrowed (a job object has
/// about forty of them, and owning each was an allocation per key per
/// job); keys read from JSON are owned.
pub type Key = std::borrow::Cow<'static, str>;

/// A JSON value whose numbers are kept as their final text.
#[derive(Debug, Clone, PartialEq)]
pub enum Canon {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, already formatted.
    Number(String),
    /// A string.
    Str(String),
    /// An array.
    List(Vec<Canon>),
    /// An object; `BTreeMap` keeps keys in code point order.
    Object(BTreeMap<Key, Canon>),
    /// A value already in canonical form (a cached serialization), shared:
    /// every job without reporters holds the same text three times.
    Raw(std::sync::Arc<str>),
}

impl Canon {
    /// An integer.
    pub fn int(v: i64) -> Canon {
        Canon::Number(v.to_string())
    }

    /// A float, with whole values written as integers.
    pub fn float(v: f64) -> Canon {
        Canon::Number(python_number(v))
    }

    /// A string.
    pub fn str(v: impl Into<String>) -> Canon {
        Canon::Str(v.into())
    }

    /// `Some` as the value, `None` as null.
    pub fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Canon) -> Canon {
        v.map(f).unwrap_or(Canon::Null)
    }

    /// Converts a serde_json value (as produced by serializing config types).
    pub fn from_json(value: &serde_json::Value) -> Canon {
        match value {
            serde_json::Value::Null => Canon::Null,
            serde_json::Value::Bool(b) => Canon::Bool(*b),
            serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Canon::int(i),
                (None, Some(f)) => Canon::float(f),
                (None, None) => Canon::Number(n.to_string()),
            },
            serde_json::Value::String(s) => Canon::Str(s.clone()),
            serde_json::Value::Array(items) => {
                Canon::List(items.iter().map(Canon::from_json).collect())
            }
            serde_json::Value::Object(map) => Canon::Object(
                map.iter()
                    .map(|(k, v)| (Key::Owned(k.clone()), Canon::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// Deep-merges `upper` over `self`: objects merge key by key, anything
    /// else is replaced.
    pub fn merge(&mut self, upper: Canon) {
        match (self, upper) {
            (Canon::Object(lower), Canon::Object(upper)) => {
                for (key, value) in upper {
                    match lower.get_mut(&key) {
                        Some(existing) => existing.merge(value),
                        None => {
                            lower.insert(key, value);
                        }
                    }
                }
            }
            (slot, upper) => *slot = upper,
        }
    }

    /// The member `key` of an object.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Canon> {
        match self {
            Canon::Object(map) => map.get_mut(key),
            _ => None,
        }
    }

    /// Appends the canonical bytes of this value to `out`.
    pub fn write(&self, out: &mut String) {
        match self {
            Canon::Null => out.push_str("null"),
            Canon::Bool(true) => out.push_str("true"),
            Canon::Bool(false) => out.push_str("false"),
            Canon::Number(text) => out.push_str(text),
            Canon::Raw(text) => out.push_str(text),
            Canon::Str(s) => write_string(s, out),
            Canon::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Canon::Object(map) => {
                out.push('{');
                for (i, (key, value)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes a JSON string the way Python's ASCII-only encoder does.
fn write_string(s: &str, out: &mut String) {
    crate::pyfmt::write_json_string(out, s, false);
}

/// Formats a float as the original's JSON encoder sees it: whole values as
/// exact integers (after an int conversion), others as the shortest
/// round-trip text, in exponent form below 1e-4 (`1.5e-05`).
pub fn python_number(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v.fract() == 0.0 {
        // Below 2^53 every whole double is an exact i64, whose text is the
        // same digits (`-0` included, which becomes `0`); the exact float
        // formatting below is several times slower and every job has a few
        // whole-valued floats (timeouts, retry delays).
        if v.abs() < 9_007_199_254_740_992.0 {
            return (v as i64).to_string();
        }
        // `{:.0}` prints the exact decimal value of the double, as an
        // arbitrary-precision int conversion does; `-0` becomes `0`.
        let text = format!("{v:.0}");
        return if text == "-0" { "0".into() } else { text };
    }
    crate::pyfmt::py_float(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_the_python_encoder() {
        assert_eq!(python_number(30.0), "30");
        assert_eq!(python_number(-0.0), "0");
        assert_eq!(python_number(1e20), "100000000000000000000");
        assert_eq!(python_number(1e23), "99999999999999991611392");
        assert_eq!(python_number(2.5), "2.5");
        assert_eq!(python_number(0.0001), "0.0001");
        assert_eq!(python_number(1.5e-5), "1.5e-05");
        assert_eq!(python_number(1e-5), "1e-05");
        assert_eq!(python_number(10.0 / 3.0), "3.3333333333333335");
        assert_eq!(python_number(f64::INFINITY), "Infinity");
        assert_eq!(python_number(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(python_number(f64::NAN), "NaN");
    }

    /// The integer fast path prints what the exact formatting printed, on
    /// both sides of 2^53 and at the edges of the fast path.
    #[test]
    fn whole_numbers_print_as_the_exact_formatting_does() {
        let exact = |v: f64| {
            let text = format!("{v:.0}");
            if text == "-0" {
                "0".to_owned()
            } else {
                text
            }
        };
        let limit = 9_007_199_254_740_992.0_f64;
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            30.0,
            300.0,
            600.0,
            1e15,
            -1e15,
            limit - 1.0,
            -(limit - 1.0),
            limit,
            -limit,
            limit * 2.0,
            1e20,
            -1e300,
            f64::MAX,
            f64::MIN,
        ];
        let mut x = 1.0_f64;
        while x < 1e18 {
            values.extend([x, -x, x + 1.0, (x * 7.0).floor(), -(x * 3.0).floor()]);
            x *= 3.7;
        }
        for v in values.into_iter().filter(|v| v.fract() == 0.0) {
            assert_eq!(python_number(v), exact(v), "{v:e}");
        }
    }

    #[test]
    fn strings_are_ascii_with_lowercase_escapes() {
        let mut out = String::new();
        write_string("a\"b\\c\n\u{7f}é🚀/<&>", &mut out);
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u007f\\u00e9\\ud83d\\ude80/<&>\"");
    }

    #[test]
    fn objects_sort_keys_and_use_compact_separators() {
        let mut map = BTreeMap::new();
        map.insert("b".into(), Canon::int(1));
        map.insert(
            "B".into(),
            Canon::List(vec![Canon::Null, Canon::Bool(true)]),
        );
        map.insert("_".into(), Canon::str("x"));
        let mut out = String::new();
        Canon::Object(map).write(&mut out);
        assert_eq!(out, "{\"B\":[null,true],\"_\":\"x\",\"b\":1}");
    }

    #[test]
    fn merge_is_deep_for_objects_and_replaces_the_rest() {
        let mut lower = Canon::from_json(&serde_json::json!({"a": {"x": 1, "y": [1]}, "b": 2}));
        let upper = Canon::from_json(&serde_json::json!({"a": {"y": [2]}, "c": null}));
        lower.merge(upper);
        let mut out = String::new();
        lower.write(&mut out);
        assert_eq!(out, "{\"a\":{\"x\":1,\"y\":[2]},\"b\":2,\"c\":null}");
    }
}
