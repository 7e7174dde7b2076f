//! Python spellings of values: report templates (Jinja2 ran in Python) and
//! the job-set id (hashed from Python's JSON output) must print them byte
//! for byte.
//!
//! Python spellings of template values. Report templates were written for
//! Jinja2 running in Python, where `{{ success }}` prints `True`, a missing
//! fail reason prints `None`, and `tojson` escapes non-ASCII text. A
//! migrated template must print the same text here, so the template
//! environment formats values through these functions instead of
//! minijinja's own spellings (`true`, `none`).

use minijinja::value::{Value, ValueKind};
use std::fmt::Write;

/// What Python's `str()` prints for `value` (an undefined value prints
/// nothing, as Jinja2's `Undefined` does).
pub fn py_str(value: &Value) -> String {
    match value.kind() {
        ValueKind::Undefined => String::new(),
        ValueKind::String => value.as_str().unwrap_or_default().to_owned(),
        _ => py_repr(value),
    }
}

/// What Python's `repr()` prints for `value`: how a value looks inside a
/// printed list or dict.
pub fn py_repr(value: &Value) -> String {
    match value.kind() {
        ValueKind::Undefined => String::new(),
        ValueKind::None => "None".into(),
        ValueKind::Bool => if value.is_true() { "True" } else { "False" }.into(),
        ValueKind::Number => number(value, py_float),
        ValueKind::String => repr_str(value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<String> = iter(value).map(|v| py_repr(&v)).collect();
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let items: Vec<String> = iter(value)
                .map(|k| {
                    let v = value.get_item(&k).unwrap_or_default();
                    format!("{}: {}", py_repr(&k), py_repr(&v))
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        _ => value.to_string(),
    }
}

fn iter(value: &Value) -> impl Iterator<Item = Value> {
    value.try_iter().into_iter().flatten()
}

fn number(value: &Value, float: fn(f64) -> String) -> String {
    if value.is_integer() {
        return value.to_string();
    }
    match f64::try_from(value.clone()) {
        Ok(x) => float(x),
        Err(_) => value.to_string(),
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed
/// notation for exponents -4..16 and scientific (`1e+20`) otherwise.
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits Python uses.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let whole = exp as usize + 1;
            if digits.len() <= whole {
                out.push_str(&digits);
                out.push_str(&"0".repeat(whole - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    }
    out
}

/// Python's `repr()` of a str: single quotes unless the text holds a
/// single quote and no double quote; backslash escapes for quotes,
/// backslashes and control characters.
pub(crate) fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Jinja2's `tojson`: Python's `json.dumps` with sorted keys and ASCII-only
/// output, then `<`, `>`, `&` and `'` escaped so the text is safe inside
/// HTML. `indent` pretty-prints like `json.dumps(indent=N)`.
pub fn to_json(value: &Value, indent: Option<usize>) -> String {
    let mut out = String::new();
    write_json(&mut out, value, indent, 0);
    out
}

fn write_json(out: &mut String, value: &Value, indent: Option<usize>, level: usize) {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => out.push_str(&number(value, json_float)),
        ValueKind::String => json_str(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = iter(value).collect();
            write_container(out, '[', ']', &items, indent, level, |out, item, lvl| {
                write_json(out, item, indent, lvl)
            });
        }
        ValueKind::Map => {
            let mut keys: Vec<(String, Value)> = iter(value)
                .map(|k| {
                    let text = match k.as_str() {
                        Some(s) => s.to_owned(),
                        None => py_str(&k),
                    };
                    (text, k)
                })
                .collect();
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            write_container(
                out,
                '{',
                '}',
                &keys,
                indent,
                level,
                |out, (text, key), lvl| {
                    json_str(out, text);
                    out.push_str(": ");
                    let v = value.get_item(key).unwrap_or_default();
                    write_json(out, &v, indent, lvl);
                },
            );
        }
        _ => json_str(out, &value.to_string()),
    }
}

fn write_container<T>(
    out: &mut String,
    open: char,
    close: char,
    items: &[T],
    indent: Option<usize>,
    level: usize,
    mut item: impl FnMut(&mut String, &T, usize),
) {
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return;
    }
    for (i, x) in items.iter().enumerate() {
        match indent {
            Some(n) => {
                if i > 0 {
                    out.push(',');
                }
                out.push('\n');
                out.push_str(&" ".repeat(n * (level + 1)));
            }
            None if i > 0 => out.push_str(", "),
            None => {}
        }
        item(out, x, level + 1);
    }
    if let Some(n) = indent {
        out.push('\n');
        out.push_str(&" ".repeat(n * level));
    }
    out.push(close);
}

fn json_float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        py_float(x)
    }
}

fn json_str(out: &mut String, s: &str) {
    write_json_string(out, s, true);
}

/// Writes `s` as a JSON string with every character outside printable
/// ASCII escaped as `\uXXXX` (lowercase hex, surrogate pairs above
/// U+FFFF), as Python's `json.dumps` does by default. `html_safe` also
/// escapes `<`, `>`, `&` and `'`, as Jinja2's `tojson` filter does.
pub fn write_json_string(out: &mut String, s: &str, html_safe: bool) {
    out.push('"');
    write_json_chars(out, s, html_safe);
    out.push('"');
}

/// Writes the inside of [`write_json_string`]'s string, without the
/// quotes: a Python `str` holding lone surrogates writes its text runs
/// with this and the surrogates between them as escapes of their own.
pub fn write_json_chars(out: &mut String, s: &str, html_safe: bool) {
    let mut rest = s;
    loop {
        // Runs of characters written as they are are copied whole: most
        // strings (keys, names, schedules) are nothing else, and pushing
        // them one char at a time showed in the job-set id of 10,000 jobs.
        let plain = rest
            .bytes()
            .position(|b| !is_plain_json_byte(b, html_safe))
            .unwrap_or(rest.len());
        out.push_str(&rest[..plain]);
        rest = &rest[plain..];
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        rest = chars.as_str();
        push_json_char(out, c, html_safe);
    }
}

/// Writes one character of a JSON string the way [`write_json_string`]
/// does: the short escapes, `\uXXXX` for everything outside printable
/// ASCII (and for `<`, `>`, `&`, `'` when `html_safe`), the rest as is.
fn push_json_char(out: &mut String, c: char, html_safe: bool) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '<' | '>' | '&' | '\'' if html_safe => {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
        ' '..='~' => out.push(c),
        c => {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
}

/// True for a byte [`write_json_string`] writes as it is: printable ASCII
/// other than `"` and backslash (and, when `html_safe`, `<`, `>`, `&`, `'`).
fn is_plain_json_byte(b: u8, html_safe: bool) -> bool {
    match b {
        b'"' | b'\\' => false,
        b'<' | b'>' | b'&' | b'\'' => !html_safe,
        b' '..=b'~' => true,
        _ => false,
    }
}

/// An instant the way Python's `datetime.isoformat()` writes an aware UTC
/// time: microseconds only when non-zero, `+00:00` offset.
pub fn python_isoformat(t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Timelike;
    let base = t.format("%Y-%m-%dT%H:%M:%S");
    let micros = t.nanosecond() / 1000 % 1_000_000;
    if micros == 0 {
        format!("{base}+00:00")
    } else {
        format!("{base}.{micros:06}+00:00")
    }
}

/// An instant as Python's `datetime.isoformat()` writes an aware UTC
/// one: `+00:00`, and microseconds only when there are any.
pub fn py_isoformat(at: chrono::DateTime<chrono::Utc>) -> String {
    if at.timestamp_subsec_micros() == 0 {
        at.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    } else {
        at.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (1e20, "1e+20"),
            (2.5, "2.5"),
            (100.0, "100.0"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float(x), want, "{x}");
        }
    }

    #[test]
    fn scalars_and_containers_print_like_python() {
        assert_eq!(py_str(&Value::from(())), "None");
        assert_eq!(py_str(&Value::from(true)), "True");
        assert_eq!(py_str(&Value::UNDEFINED), "");
        assert_eq!(py_str(&Value::from("it's")), "it's");
        let list = Value::from(vec![Value::from("a"), Value::from("it's"), Value::from(3)]);
        assert_eq!(py_str(&list), r#"['a', "it's", 3]"#);
        let map: std::collections::BTreeMap<String, Value> =
            [("k".to_owned(), Value::from(()))].into_iter().collect();
        assert_eq!(py_str(&Value::from(map)), "{'k': None}");
    }

    /// The char-by-char loop the bulk copy replaced (the same per-character
    /// escapes), kept to compare: it checks which bytes are copied whole.
    fn write_json_string_by_char(out: &mut String, s: &str, html_safe: bool) {
        out.push('"');
        for c in s.chars() {
            push_json_char(out, c, html_safe);
        }
        out.push('"');
    }

    #[test]
    fn json_strings_match_the_char_by_char_encoder() {
        let samples = [
            "",
            "plain",
            "job-00042",
            "*/5 1 * 6 mon-fri",
            "\"",
            "a\"b\\c",
            "\\\\",
            "line\nbreak\r\n\ttab\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "<script>alert('x') & \"y\"</script>",
            "é",
            "naïve café",
            "日本語のジョブ",
            "🚀 rocket 😀",
            "mixed \u{2028}\u{2029} separators",
            "end with escape\n",
            "\nstart with escape",
            "'single' \"double\" `back`",
        ];
        for sample in samples {
            for html_safe in [false, true] {
                let mut fast = String::from("prefix:");
                write_json_string(&mut fast, sample, html_safe);
                let mut slow = String::from("prefix:");
                write_json_string_by_char(&mut slow, sample, html_safe);
                assert_eq!(fast, slow, "{sample:?} html_safe={html_safe}");
            }
        }
        // Every char below U+0800 alone and between plain text.
        for code in 0u32..0x800 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            for sample in [c.to_string(), format!("ab{c}cd{c}")] {
                for html_safe in [false, true] {
                    let mut fast = String::new();
                    write_json_string(&mut fast, &sample, html_safe);
                    let mut slow = String::new();
                    write_json_string_by_char(&mut slow, &sample, html_safe);
                    assert_eq!(fast, slow, "U+{code:04X} html_safe={html_safe}");
                }
            }
        }
    }

    #[test]
    fn json_is_ascii_html_safe_and_sorted() {
        let s = Value::from("a \"b\"\n<é> & 'x' 😀");
        assert_eq!(
            to_json(&s, None),
            r#""a \"b\"\n\u003c\u00e9\u003e \u0026 \u0027x\u0027 \ud83d\ude00""#
        );
        let map: std::collections::BTreeMap<String, Value> = [
            ("z".to_owned(), Value::from(1)),
            (
                "a".to_owned(),
                Value::from(vec![Value::from(true), Value::from(())]),
            ),
        ]
        .into_iter()
        .collect();
        let v = Value::from(map);
        assert_eq!(to_json(&v, None), r#"{"a": [true, null], "z": 1}"#);
        assert_eq!(
            to_json(&v, Some(2)),
            "{\n  \"a\": [\n    true,\n    null\n  ],\n  \"z\": 1\n}"
        );
    }
}
