//! `json.loads` against CPython 3.11: every expected text below was
//! produced by running the same input through Python
//! (`json.dumps(json.loads(text))`, or `str()` of the exception).

use super::super::Dumps;
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
        let got = loads(*text).map(|v| v.dumps(Dumps::SPACED));
        match want {
            Ok(dumped) => assert_eq!(got.as_deref(), Ok(*dumped), "json.loads({text:?})"),
            Err(msg) => assert_eq!(
                got.as_ref().map_err(LoadError::message),
                Err(*msg),
                "json.loads({text:?})"
            ),
        }
    }
}

#[test]
fn integers_past_python_s_digit_limit_are_refused() {
    let ok = "7".repeat(INT_MAX_STR_DIGITS);
    assert_eq!(loads(&ok), Ok(PyJson::BigInt(ok.clone())));
    let long = format!("-{}", "1".repeat(INT_MAX_STR_DIGITS + 1));
    assert_eq!(
        loads(&long).map_err(|e| e.to_string()),
        Err(
            "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 \
             digits; use sys.set_int_max_str_digits() to increase the limit"
                .to_owned()
        )
    );
    // A float has no such limit.
    let float = format!("1.{}", "1".repeat(5000));
    assert_eq!(
        loads(&float).map(|v| v.dumps(Dumps::SPACED)),
        Ok("1.1111111111111112".to_owned())
    );
}

#[test]
fn nesting_stops_where_python_s_recursion_limit_does() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(loads(&nested(MAX_DEPTH)).is_ok());
    let too_deep_array = Err(
        "maximum recursion depth exceeded while decoding a JSON array from a unicode string"
            .to_owned(),
    );
    assert_eq!(
        loads(&nested(MAX_DEPTH + 1)).map_err(|e| e.to_string()),
        too_deep_array
    );
    // A caller deeper in its own stack stops sooner.
    assert!(loads_with_depth(&nested(989), 989).is_ok());
    assert_eq!(
        loads_with_depth(&nested(990), 989).map_err(|e| e.to_string()),
        too_deep_array
    );
    let objects = format!(
        "{}1{}",
        "{\"a\":".repeat(MAX_DEPTH + 1),
        "}".repeat(MAX_DEPTH + 1)
    );
    assert_eq!(
        loads(&objects).map_err(|e| e.to_string()),
        Err(
            "maximum recursion depth exceeded while decoding a JSON object from a unicode string"
                .to_owned()
        )
    );
}

#[test]
fn lone_surrogates_survive_a_round_trip() {
    let v = loads(r#"["\ud800", "a\udcffb"]"#).expect("loads");
    assert_eq!(
        v,
        PyJson::List(vec![
            PyJson::Str(PyString::from_code_points([0xd800])),
            PyJson::Str(PyString::from_code_points([0x61, 0xdcff, 0x62])),
        ])
    );
    assert_eq!(v.dumps(Dumps::SPACED), r#"["\ud800", "a\udcffb"]"#);
    // A surrogate already in the text (from argv) is a character like any
    // other inside a string, and refused outside one.
    let raw = PyString::from_code_points([0x22, 0xdcff, 0x22]);
    assert_eq!(
        loads(&raw).map(|v| v.dumps(Dumps::SPACED)),
        Ok(r#""\udcff""#.to_owned())
    );
    let bare = PyString::from_code_points([0xdcff]);
    assert_eq!(
        loads(&bare).map_err(|e| e.to_string()),
        Err("Expecting value: line 1 column 1 (char 0)".to_owned())
    );
    // A pair of escapes is one code point; a high escape before anything
    // but a low one stays lone.
    let PyJson::Str(pair) = loads(r#""\ud83d\ude00""#).expect("loads") else {
        panic!("not a string");
    };
    assert_eq!(pair.as_str(), Some("\u{1f600}"));
    let PyJson::Str(lone) = loads(r#""\ud800\u0041""#).expect("loads") else {
        panic!("not a string");
    };
    assert_eq!(lone.code_points().collect::<Vec<_>>(), [0xd800, 0x41]);
}

#[test]
fn positions_count_code_points_not_bytes() {
    assert_eq!(
        loads("[\"é€😀\" x]").map_err(|e| e.to_string()),
        Err("Expecting ',' delimiter: line 1 column 8 (char 7)".to_owned())
    );
    assert_eq!(
        loads("[\"é\",\n \"€\u{1}\"]").map_err(|e| e.to_string()),
        Err("Invalid control character at: line 2 column 4 (char 9)".to_owned())
    );
    let lone = PyString::from_code_points([0x5b, 0xd800, 0x5d]);
    assert_eq!(
        loads(&lone).map_err(|e| e.to_string()),
        Err("Expecting value: line 1 column 2 (char 1)".to_owned())
    );
}

#[test]
fn what_python_refuses_is_refused() {
    let long_int = "1".repeat(INT_MAX_STR_DIGITS + 1);
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    let bad = [
        "",
        " ",
        "01",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "1e+",
        "[1,]",
        "{\"a\":1,}",
        "{a:1}",
        "\"\u{1}\"",
        "\"abc",
        "nan",
        "inf",
        "-NaN",
        "[1 2]",
        "\u{feff}1",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "tru",
        "1 2",
        "{\"a\" 1}",
        "\u{b}1",
        "\u{a0}1",
        "[",
        "{",
        "\"\\ud800\\u12\"",
        "-01",
        &long_int,
        &deep,
    ];
    for input in bad {
        assert!(loads(input).is_err(), "{input:?} was accepted");
    }
    let max_int = "9".repeat(INT_MAX_STR_DIGITS);
    assert!(matches!(loads(&max_int), Ok(PyJson::BigInt(_))));
    assert!(matches!(
        loads(&format!("-{max_int}")),
        Ok(PyJson::BigInt(_))
    ));
    let deepest = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(loads(&deepest).is_ok());
}
