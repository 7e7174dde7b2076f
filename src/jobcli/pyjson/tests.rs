//! `json.loads` / `json.dumps` against CPython 3.11: every expected text
//! below was produced by running the same input through Python
//! (`json.dumps(json.loads(text))`, or `str()` of the `ValueError`).

use super::*;

const LOADS: &[(&str, Result<&str, &str>)] = &[
    ("", Err("Expecting value: line 1 column 1 (char 0)")),
    (" ", Err("Expecting value: line 1 column 2 (char 1)")),
    ("x", Err("Expecting value: line 1 column 1 (char 0)")),
    (
        "{",
        Err("Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ),
    ("}", Err("Expecting value: line 1 column 1 (char 0)")),
    ("[", Err("Expecting value: line 1 column 2 (char 1)")),
    ("]", Err("Expecting value: line 1 column 1 (char 0)")),
    (
        "{\"a\"",
        Err("Expecting ':' delimiter: line 1 column 5 (char 4)"),
    ),
    ("{\"a\":", Err("Expecting value: line 1 column 6 (char 5)")),
    (
        "{\"a\":1",
        Err("Expecting ',' delimiter: line 1 column 7 (char 6)"),
    ),
    (
        "{\"a\":1,",
        Err("Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"),
    ),
    (
        "{\"a\":1,}",
        Err("Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"),
    ),
    (
        "{,}",
        Err("Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ),
    (
        "{\"a\" 1}",
        Err("Expecting ':' delimiter: line 1 column 6 (char 5)"),
    ),
    (
        "{\"a\":1 \"b\":2}",
        Err("Expecting ',' delimiter: line 1 column 8 (char 7)"),
    ),
    (
        "[1",
        Err("Expecting ',' delimiter: line 1 column 3 (char 2)"),
    ),
    ("[1,", Err("Expecting value: line 1 column 4 (char 3)")),
    ("[1,]", Err("Expecting value: line 1 column 4 (char 3)")),
    ("[,1]", Err("Expecting value: line 1 column 2 (char 1)")),
    (
        "[1 2]",
        Err("Expecting ',' delimiter: line 1 column 4 (char 3)"),
    ),
    (
        "\"abc",
        Err("Unterminated string starting at: line 1 column 1 (char 0)"),
    ),
    (
        "\"a\\",
        Err("Unterminated string starting at: line 1 column 1 (char 0)"),
    ),
    (
        "\"a\\x\"",
        Err("Invalid \\escape: line 1 column 3 (char 2)"),
    ),
    (
        "\"\\u12\"",
        Err("Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
    ),
    (
        "\"\\u12g4\"",
        Err("Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
    ),
    (
        "\"\\uzzzz\"",
        Err("Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
    ),
    (
        "\"a\u{a}b\"",
        Err("Invalid control character at: line 1 column 3 (char 2)"),
    ),
    (
        "\"a\u{0}\"",
        Err("Invalid control character at: line 1 column 3 (char 2)"),
    ),
    (
        "\"\u{1f}\"",
        Err("Invalid control character at: line 1 column 2 (char 1)"),
    ),
    ("\"\u{7f}\"", Ok("\"\\u007f\"")),
    ("\"\\ud800\"", Ok("\"\\ud800\"")),
    ("\"\\ud800\\u0041\"", Ok("\"\\ud800A\"")),
    ("\"\\ud83d\\ude00\"", Ok("\"\\ud83d\\ude00\"")),
    ("nul", Err("Expecting value: line 1 column 1 (char 0)")),
    ("null x", Err("Extra data: line 1 column 6 (char 5)")),
    ("true", Ok("true")),
    ("tru", Err("Expecting value: line 1 column 1 (char 0)")),
    ("false", Ok("false")),
    ("null", Ok("null")),
    ("NaN", Ok("NaN")),
    ("Nan", Err("Expecting value: line 1 column 1 (char 0)")),
    ("Infinity", Ok("Infinity")),
    ("-Infinity", Ok("-Infinity")),
    ("-Inf", Err("Expecting value: line 1 column 1 (char 0)")),
    ("-", Err("Expecting value: line 1 column 1 (char 0)")),
    ("--1", Err("Expecting value: line 1 column 1 (char 0)")),
    ("01", Err("Extra data: line 1 column 2 (char 1)")),
    ("-01", Err("Extra data: line 1 column 3 (char 2)")),
    ("1.", Err("Extra data: line 1 column 2 (char 1)")),
    ("1.e5", Err("Extra data: line 1 column 2 (char 1)")),
    (".5", Err("Expecting value: line 1 column 1 (char 0)")),
    ("1e", Err("Extra data: line 1 column 2 (char 1)")),
    ("1e+", Err("Extra data: line 1 column 2 (char 1)")),
    ("1e+5", Ok("100000.0")),
    ("1e-5", Ok("1e-05")),
    ("1E5", Ok("100000.0")),
    ("1.5E+3", Ok("1500.0")),
    ("-0", Ok("0")),
    ("-0.0", Ok("-0.0")),
    ("0.0", Ok("0.0")),
    ("1 2", Err("Extra data: line 1 column 3 (char 2)")),
    (
        "\u{feff}1",
        Err("Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"),
    ),
    (
        "\u{feff}",
        Err("Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"),
    ),
    ("[1]]", Err("Extra data: line 1 column 4 (char 3)")),
    ("{\"a\":}", Err("Expecting value: line 1 column 6 (char 5)")),
    ("{\"a\":1}}", Err("Extra data: line 1 column 8 (char 7)")),
    (
        "\"\u{9}\"",
        Err("Invalid control character at: line 1 column 2 (char 1)"),
    ),
    (
        "\u{a}\u{a}  x",
        Err("Expecting value: line 3 column 3 (char 4)"),
    ),
    (
        "a\u{a}b\u{a}c",
        Err("Expecting value: line 1 column 1 (char 0)"),
    ),
    ("1\u{a}\u{a}2", Err("Extra data: line 3 column 1 (char 3)")),
    ("{\"\\u0041\":1}", Ok("{\"A\": 1}")),
    (
        "[1,\u{a} 2,\u{a} x]",
        Err("Expecting value: line 3 column 2 (char 9)"),
    ),
    (
        "\"\\\"",
        Err("Unterminated string starting at: line 1 column 1 (char 0)"),
    ),
    ("\"\\/\"", Ok("\"/\"")),
    ("[-]", Err("Expecting value: line 1 column 2 (char 1)")),
    (
        "{1:2}",
        Err("Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ),
    ("[1e400]", Ok("[Infinity]")),
    ("[-1e400]", Ok("[-Infinity]")),
    (
        "123456789012345678901234567890",
        Ok("123456789012345678901234567890"),
    ),
    (
        "-123456789012345678901234567890",
        Ok("-123456789012345678901234567890"),
    ),
    ("1.5e-7", Ok("1.5e-07")),
    ("[true,false,null]", Ok("[true, false, null]")),
    ("{\"a\":1,\"b\":2,\"a\":3}", Ok("{\"a\": 3, \"b\": 2}")),
    ("[{}]", Ok("[{}]")),
    (
        "[\"\u{e9}\u{20ac}\u{1f600}\"]",
        Ok("[\"\\u00e9\\u20ac\\ud83d\\ude00\"]"),
    ),
    (" 5 ", Ok("5")),
    ("\u{9}5\u{d}\u{a}", Ok("5")),
    ("\u{c}5", Err("Expecting value: line 1 column 1 (char 0)")),
    ("5\u{c}", Err("Extra data: line 1 column 2 (char 1)")),
    ("[1,,2]", Err("Expecting value: line 1 column 4 (char 3)")),
    (
        "{\"a\":1,,}",
        Err("Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"),
    ),
    ("t", Err("Expecting value: line 1 column 1 (char 0)")),
    ("f", Err("Expecting value: line 1 column 1 (char 0)")),
    ("n", Err("Expecting value: line 1 column 1 (char 0)")),
    ("N", Err("Expecting value: line 1 column 1 (char 0)")),
    ("I", Err("Expecting value: line 1 column 1 (char 0)")),
    ("-I", Err("Expecting value: line 1 column 1 (char 0)")),
    ("{\"a\"  :  [ 1 , 2 ] }", Ok("{\"a\": [1, 2]}")),
    (
        "\"ab\\u12\"",
        Err("Invalid \\uXXXX escape: line 1 column 5 (char 4)"),
    ),
    (
        "\"ab\\ud800\\u12\"",
        Err("Invalid \\uXXXX escape: line 1 column 11 (char 10)"),
    ),
    (
        "\"ab\\ud800\\\"",
        Err("Unterminated string starting at: line 1 column 1 (char 0)"),
    ),
    (
        "\"ab\\ud800\\x\"",
        Err("Invalid \\escape: line 1 column 10 (char 9)"),
    ),
    ("\"\\ud800\\udc00\"", Ok("\"\\ud800\\udc00\"")),
    ("\"\\udc00\\ud800\"", Ok("\"\\udc00\\ud800\"")),
    (
        "\"ab\\u00e9\\u\"",
        Err("Invalid \\uXXXX escape: line 1 column 11 (char 10)"),
    ),
    (
        "\"\\U0041\"",
        Err("Invalid \\escape: line 1 column 2 (char 1)"),
    ),
    ("\"\\u0041\"", Ok("\"A\"")),
    (
        "\"\\u00\"",
        Err("Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
    ),
    (
        "\"\\u0041",
        Err("Invalid \\uXXXX escape: line 1 column 3 (char 2)"),
    ),
    (
        "\"\\ud83d\\ude00",
        Err("Invalid \\uXXXX escape: line 1 column 9 (char 8)"),
    ),
    (
        "\"\\ud83d\\ude00\"x",
        Err("Extra data: line 1 column 15 (char 14)"),
    ),
    (
        "\"\\ud800\\u00zz\"",
        Err("Invalid \\uXXXX escape: line 1 column 9 (char 8)"),
    ),
    ("\"\\ud800\\u0041\\u0042\"", Ok("\"\\ud800AB\"")),
    ("\"\\uD83D\\uDE00\"", Ok("\"\\ud83d\\ude00\"")),
    (
        "\"\\b\\f\\n\\r\\t\\\"\\\\\\/\"",
        Ok("\"\\b\\f\\n\\r\\t\\\"\\\\/\""),
    ),
    ("1.0", Ok("1.0")),
    ("100", Ok("100")),
    ("1e16", Ok("1e+16")),
    ("1e15", Ok("1000000000000000.0")),
    ("0.0001", Ok("0.0001")),
    ("0.00001", Ok("1e-05")),
    ("123.456e2", Ok("12345.6")),
    (
        "[1, [2, [3, {\"x\": [null]}]]]",
        Ok("[1, [2, [3, {\"x\": [null]}]]]"),
    ),
    (
        "{\"k\": {\"n\": {\"m\": 1.5}}}",
        Ok("{\"k\": {\"n\": {\"m\": 1.5}}}"),
    ),
    ("\"\u{2028}\"", Ok("\"\\u2028\"")),
    ("{\"\":\"\"}", Ok("{\"\": \"\"}")),
    ("  {}  ", Ok("{}")),
    ("{\"a\":1}x", Err("Extra data: line 1 column 8 (char 7)")),
    ("9.99999999999999999999", Ok("10.0")),
    ("1e-400", Ok("0.0")),
    ("0", Ok("0")),
    ("-", Err("Expecting value: line 1 column 1 (char 0)")),
    ("-a", Err("Expecting value: line 1 column 1 (char 0)")),
    ("2.", Err("Extra data: line 1 column 2 (char 1)")),
    ("2.x", Err("Extra data: line 1 column 2 (char 1)")),
    ("2ex", Err("Extra data: line 1 column 2 (char 1)")),
    ("2e-x", Err("Extra data: line 1 column 2 (char 1)")),
    (
        "[1e]",
        Err("Expecting ',' delimiter: line 1 column 3 (char 2)"),
    ),
    (
        "[1.]",
        Err("Expecting ',' delimiter: line 1 column 3 (char 2)"),
    ),
    (
        "\"unterminated\\u00e9",
        Err("Invalid \\uXXXX escape: line 1 column 15 (char 14)"),
    ),
    (
        "\"\\",
        Err("Unterminated string starting at: line 1 column 1 (char 0)"),
    ),
    (
        "\"",
        Err("Unterminated string starting at: line 1 column 1 (char 0)"),
    ),
    ("true false", Err("Extra data: line 1 column 6 (char 5)")),
    ("{\"a\":1,\"a\":2}", Ok("{\"a\": 2}")),
    (
        "{\"b\":1,\"a\":2,\"b\":3,\"c\":4}",
        Ok("{\"b\": 3, \"a\": 2, \"c\": 4}"),
    ),
];

#[test]
fn loads_and_dumps_like_python() {
    for (text, want) in LOADS {
        let got = loads(&PyStr::from(*text)).map(|v| v.dumps());
        match want {
            Ok(dumped) => assert_eq!(got.as_deref(), Ok(*dumped), "json.loads({text:?})"),
            Err(msg) => assert_eq!(
                got.as_ref().map_err(|e| e.0.as_str()),
                Err(*msg),
                "json.loads({text:?})"
            ),
        }
    }
}

#[test]
fn integers_past_python_s_digit_limit_are_refused() {
    let ok = "7".repeat(4300);
    assert_eq!(
        loads(&PyStr::from(ok.as_str())),
        Ok(PyValue::Int(ok.clone()))
    );
    let long = format!("-{}", "1".repeat(4301));
    assert_eq!(
        loads(&PyStr::from(long.as_str())).map_err(|e| e.0),
        Err(
            "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 \
             digits; use sys.set_int_max_str_digits() to increase the limit"
                .to_owned()
        )
    );
    // A float has no such limit.
    let float = format!("1.{}", "1".repeat(5000));
    assert_eq!(
        loads(&PyStr::from(float.as_str())).map(|v| v.dumps()),
        Ok("1.1111111111111112".to_owned())
    );
}

#[test]
fn nesting_stops_where_python_s_recursion_limit_does() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(loads(&PyStr::from(nested(MAX_DEPTH).as_str())).is_ok());
    assert_eq!(
        loads(&PyStr::from(nested(MAX_DEPTH + 1).as_str())).map_err(|e| e.0),
        Err(
            "maximum recursion depth exceeded while decoding a JSON array from a unicode string"
                .to_owned()
        )
    );
    let objects = format!(
        "{}1{}",
        "{\"a\":".repeat(MAX_DEPTH + 1),
        "}".repeat(MAX_DEPTH + 1)
    );
    assert_eq!(
        loads(&PyStr::from(objects.as_str())).map_err(|e| e.0),
        Err(
            "maximum recursion depth exceeded while decoding a JSON object from a unicode string"
                .to_owned()
        )
    );
}

#[test]
fn lone_surrogates_survive_a_round_trip() {
    let v = loads(&PyStr::from(r#"["\ud800", "a\udcffb"]"#)).unwrap();
    assert_eq!(
        v,
        PyValue::List(vec![
            PyValue::Str(PyStr::Points(vec![0xd800])),
            PyValue::Str(PyStr::Points(vec![0x61, 0xdcff, 0x62])),
        ])
    );
    assert_eq!(v.dumps(), r#"["\ud800", "a\udcffb"]"#);
    // A surrogate already in the text (from argv) is a character like any
    // other inside a string, and refused outside one.
    let raw = PyStr::Points(vec![0x22, 0xdcff, 0x22]);
    assert_eq!(loads(&raw).map(|v| v.dumps()), Ok(r#""\udcff""#.to_owned()));
    let bare = PyStr::Points(vec![0xdcff]);
    assert_eq!(
        loads(&bare).map_err(|e| e.0),
        Err("Expecting value: line 1 column 1 (char 0)".to_owned())
    );
}

#[test]
fn positions_count_code_points_not_bytes() {
    assert_eq!(
        loads(&PyStr::from("[\"é€😀\" x]")).map_err(|e| e.0),
        Err("Expecting ',' delimiter: line 1 column 8 (char 7)".to_owned())
    );
}

#[test]
fn replies_decode_as_python_decodes_bytes() {
    assert_eq!(
        loads_bytes(b"\xef\xbb\xbf{\"a\": 1}"),
        Some(PyValue::dict([("a", PyValue::Int("1".into()))]))
    );
    assert_eq!(loads_bytes(b"{\"a\": \xff}"), None);
    assert_eq!(loads_bytes(b"not json"), None);
    assert_eq!(loads_bytes(b"5"), Some(PyValue::Int("5".into())));
}

#[test]
fn truthiness_is_python_s() {
    let falsy = [
        PyValue::None,
        PyValue::Bool(false),
        PyValue::Int("0".into()),
        PyValue::Float(0.0),
        PyValue::Float(-0.0),
        PyValue::str(""),
        PyValue::List(vec![]),
        PyValue::Dict(vec![]),
    ];
    for v in falsy {
        assert!(!v.truthy(), "{v:?}");
    }
    let truthy = [
        PyValue::Bool(true),
        PyValue::Int("-1".into()),
        PyValue::Float(f64::NAN),
        PyValue::Float(0.5),
        PyValue::str("0"),
        PyValue::List(vec![PyValue::None]),
        PyValue::dict([("", PyValue::None)]),
    ];
    for v in truthy {
        assert!(v.truthy(), "{v:?}");
    }
}

/// `str()` and `repr()` from CPython 3.11.
#[test]
fn str_and_repr_like_python() {
    let v = loads(&PyStr::from(
        r#"{"a": [1, 2.5, null, true, false, "it's", "x\ny"], "b": {}, "c": 1e16, "d": NaN, "é": -Infinity}"#,
    ))
    .unwrap();
    assert_eq!(
        v.py_repr(),
        r#"{'a': [1, 2.5, None, True, False, "it's", 'x\ny'], 'b': {}, 'c': 1e+16, 'd': nan, 'é': -inf}"#
    );
    assert_eq!(v.py_str(), v.py_repr());
    assert_eq!(PyValue::str("plain").py_str(), "plain");
    assert_eq!(PyValue::str("plain").py_repr(), "'plain'");
    assert_eq!(PyValue::None.py_str(), "None");
    assert_eq!(PyValue::Float(3.0).py_str(), "3.0");
    assert_eq!(PyValue::Int("-7".into()).py_str(), "-7");
}

#[test]
fn get_reads_string_keys_of_objects_only() {
    let v = PyValue::dict([
        ("value", PyValue::Int("1".into())),
        ("ok", PyValue::Bool(true)),
    ]);
    assert_eq!(v.get("ok"), Some(&PyValue::Bool(true)));
    assert_eq!(v.get("missing"), None);
    assert_eq!(PyValue::List(vec![]).get("ok"), None);
}

#[test]
fn dumps_uses_python_s_default_separators_and_floats() {
    let body = PyValue::dict([
        ("scope", PyValue::None),
        ("key", PyValue::str("k é")),
        ("value", PyValue::Float(1e16)),
        ("ttl", PyValue::Float(0.0)),
        ("permits", PyValue::Int("3".into())),
        ("wait", PyValue::Bool(false)),
        ("x", PyValue::Float(f64::INFINITY)),
        ("y", PyValue::Float(f64::NAN)),
        ("z", PyValue::Float(1e-5)),
        ("w", PyValue::Float(-0.0)),
    ]);
    assert_eq!(
        body.dumps(),
        r#"{"scope": null, "key": "k \u00e9", "value": 1e+16, "ttl": 0.0, "permits": 3, "wait": false, "x": Infinity, "y": NaN, "z": 1e-05, "w": -0.0}"#
    );
}
