//! `PyJson` against Python 3.11's `json` module and `repr()`: the table
//! rows were produced by the original's interpreter (input; compact
//! sorted dumps; default dumps; repr; type name; truthiness).

use super::*;

/// (input, `json.dumps(v, separators=(",", ":"), sort_keys=True)`,
/// `json.dumps(v)`, `repr(v)`, `type(v).__name__`, `bool(v)`).
const PYTHON: &[(&str, &str, &str, &str, &str, bool)] = &[
    ("0", "0", "0", "0", "int", false),
    ("-0", "0", "0", "0", "int", false),
    ("1", "1", "1", "1", "int", true),
    ("-1", "-1", "-1", "-1", "int", true),
    (
        "123456789012345678901234567890",
        "123456789012345678901234567890",
        "123456789012345678901234567890",
        "123456789012345678901234567890",
        "int",
        true,
    ),
    (
        "-9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775808",
        "int",
        true,
    ),
    (
        "18446744073709551615",
        "18446744073709551615",
        "18446744073709551615",
        "18446744073709551615",
        "int",
        true,
    ),
    (
        "18446744073709551616",
        "18446744073709551616",
        "18446744073709551616",
        "18446744073709551616",
        "int",
        true,
    ),
    (
        "-170141183460469231731687303715884105729",
        "-170141183460469231731687303715884105729",
        "-170141183460469231731687303715884105729",
        "-170141183460469231731687303715884105729",
        "int",
        true,
    ),
    (
        "170141183460469231731687303715884105727",
        "170141183460469231731687303715884105727",
        "170141183460469231731687303715884105727",
        "170141183460469231731687303715884105727",
        "int",
        true,
    ),
    ("1.0", "1.0", "1.0", "1.0", "float", true),
    ("-0.0", "-0.0", "-0.0", "-0.0", "float", false),
    ("1e16", "1e+16", "1e+16", "1e+16", "float", true),
    ("1E5", "100000.0", "100000.0", "100000.0", "float", true),
    ("1e-5", "1e-05", "1e-05", "1e-05", "float", true),
    ("0.1", "0.1", "0.1", "0.1", "float", true),
    ("1.5e300", "1.5e+300", "1.5e+300", "1.5e+300", "float", true),
    ("1e400", "Infinity", "Infinity", "inf", "float", true),
    ("-1e400", "-Infinity", "-Infinity", "-inf", "float", true),
    (
        "1.7976931348623157e308",
        "1.7976931348623157e+308",
        "1.7976931348623157e+308",
        "1.7976931348623157e+308",
        "float",
        true,
    ),
    (
        "123456789.123456789",
        "123456789.12345679",
        "123456789.12345679",
        "123456789.12345679",
        "float",
        true,
    ),
    ("5e-324", "5e-324", "5e-324", "5e-324", "float", true),
    ("1e22", "1e+22", "1e+22", "1e+22", "float", true),
    ("1e-7", "1e-07", "1e-07", "1e-07", "float", true),
    ("0.0001", "0.0001", "0.0001", "0.0001", "float", true),
    ("NaN", "NaN", "NaN", "nan", "float", true),
    ("Infinity", "Infinity", "Infinity", "inf", "float", true),
    ("-Infinity", "-Infinity", "-Infinity", "-inf", "float", true),
    ("true", "true", "true", "True", "bool", true),
    ("false", "false", "false", "False", "bool", false),
    ("null", "null", "null", "None", "NoneType", false),
    ("\"abc\"", "\"abc\"", "\"abc\"", "'abc'", "str", true),
    (
        "\"\\u00e9\"",
        "\"\\u00e9\"",
        "\"\\u00e9\"",
        "'\u{e9}'",
        "str",
        true,
    ),
    (
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\\ude00\"",
        "'\u{1f600}'",
        "str",
        true,
    ),
    (
        "\"\\ud800\"",
        "\"\\ud800\"",
        "\"\\ud800\"",
        "'\\ud800'",
        "str",
        true,
    ),
    (
        "\"\\udc00\\ud800\"",
        "\"\\udc00\\ud800\"",
        "\"\\udc00\\ud800\"",
        "'\\udc00\\ud800'",
        "str",
        true,
    ),
    (
        "\"\\ud800\\u0041\"",
        "\"\\ud800A\"",
        "\"\\ud800A\"",
        "'\\ud800A'",
        "str",
        true,
    ),
    (
        "\"\u{e9}\u{1f600}\"",
        "\"\\u00e9\\ud83d\\ude00\"",
        "\"\\u00e9\\ud83d\\ude00\"",
        "'\u{e9}\u{1f600}'",
        "str",
        true,
    ),
    (
        "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
        "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\"",
        "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\"",
        "'a\"b\\\\c/d\\x08\\x0c\\n\\r\\t'",
        "str",
        true,
    ),
    (
        "\"\\u007f\u{7f}\"",
        "\"\\u007f\\u007f\"",
        "\"\\u007f\\u007f\"",
        "'\\x7f\\x7f'",
        "str",
        true,
    ),
    ("\"it's\"", "\"it's\"", "\"it's\"", "\"it's\"", "str", true),
    (
        "\"it's \\\"\"",
        "\"it's \\\"\"",
        "\"it's \\\"\"",
        "'it\\'s \"'",
        "str",
        true,
    ),
    (
        "\"\\u0000\\u001f\"",
        "\"\\u0000\\u001f\"",
        "\"\\u0000\\u001f\"",
        "'\\x00\\x1f'",
        "str",
        true,
    ),
    (
        "\"\\u2028\\u00a0\\u00ad\\ue000\\u0085\"",
        "\"\\u2028\\u00a0\\u00ad\\ue000\\u0085\"",
        "\"\\u2028\\u00a0\\u00ad\\ue000\\u0085\"",
        "'\\u2028\\xa0\\xad\\ue000\\x85'",
        "str",
        true,
    ),
    (
        "\"\\uDBFF\\uDFFF\"",
        "\"\\udbff\\udfff\"",
        "\"\\udbff\\udfff\"",
        "'\\U0010ffff'",
        "str",
        true,
    ),
    (
        "\"\\ud83d\\u00e9\"",
        "\"\\ud83d\\u00e9\"",
        "\"\\ud83d\\u00e9\"",
        "'\\ud83d\u{e9}'",
        "str",
        true,
    ),
    ("[]", "[]", "[]", "[]", "list", false),
    ("{}", "{}", "{}", "{}", "dict", false),
    (" [ 1 , 2 ] ", "[1,2]", "[1, 2]", "[1, 2]", "list", true),
    (
        "\u{9}\u{a}\u{d}{\"b\":1,\"a\":2}",
        "{\"a\":2,\"b\":1}",
        "{\"b\": 1, \"a\": 2}",
        "{'b': 1, 'a': 2}",
        "dict",
        true,
    ),
    (
        "{\"a\":1,\"b\":2,\"a\":3}",
        "{\"a\":3,\"b\":2}",
        "{\"a\": 3, \"b\": 2}",
        "{'a': 3, 'b': 2}",
        "dict",
        true,
    ),
    ("[[[]]]", "[[[]]]", "[[[]]]", "[[[]]]", "list", true),
    (
        "{\"k\":[1,{\"x\":null}]}",
        "{\"k\":[1,{\"x\":null}]}",
        "{\"k\": [1, {\"x\": null}]}",
        "{'k': [1, {'x': None}]}",
        "dict",
        true,
    ),
    (
        "{\"\\u00e9\":\"\\u00e9\",\"a\":[true,1.5]}",
        "{\"a\":[true,1.5],\"\\u00e9\":\"\\u00e9\"}",
        "{\"\\u00e9\": \"\\u00e9\", \"a\": [true, 1.5]}",
        "{'\u{e9}': '\u{e9}', 'a': [True, 1.5]}",
        "dict",
        true,
    ),
];

#[test]
fn values_read_write_and_print_as_python_does() {
    for (input, sorted, spaced, repr, type_name, truthy) in PYTHON {
        let value = parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(
            value.dumps(Dumps::SORTED),
            *sorted,
            "sorted dumps of {input:?}"
        );
        assert_eq!(value.dumps(Dumps::SPACED), *spaced, "dumps of {input:?}");
        assert_eq!(value.repr(), *repr, "repr of {input:?}");
        assert_eq!(value.type_name(), *type_name, "type of {input:?}");
        assert_eq!(value.is_truthy(), *truthy, "truthiness of {input:?}");
        // What we write reads back as the same value.
        let again = parse(&value.dumps(Dumps::COMPACT)).expect("reparse");
        assert_eq!(
            again.dumps(Dumps::SORTED),
            *sorted,
            "round trip of {input:?}"
        );
    }
}

#[test]
fn what_python_refuses_is_refused() {
    let long_int = "1".repeat(MAX_INT_DIGITS + 1);
    let deep = format!(
        "{}{}",
        "[".repeat(MAX_PARSE_DEPTH + 1),
        "]".repeat(MAX_PARSE_DEPTH + 1)
    );
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
        assert!(parse(input).is_err(), "{input:?} was accepted");
    }
    let max_int = "9".repeat(MAX_INT_DIGITS);
    assert!(matches!(parse(&max_int), Ok(PyJson::BigInt(_))));
    assert!(matches!(
        parse(&format!("-{max_int}")),
        Ok(PyJson::BigInt(_))
    ));
    let deepest = format!(
        "{}{}",
        "[".repeat(MAX_PARSE_DEPTH),
        "]".repeat(MAX_PARSE_DEPTH)
    );
    assert!(parse(&deepest).is_ok());
}

#[test]
fn repeated_keys_keep_the_first_place_and_the_last_value() {
    let value = parse(r#"{"a":1,"b":2,"a":3}"#).expect("parse");
    assert_eq!(value.dumps(Dumps::COMPACT), r#"{"a":3,"b":2}"#);
    let mut dict = PyDict::new();
    dict.insert("x", PyJson::Int(1));
    dict.insert("y", PyJson::Int(2));
    dict.insert("x", PyJson::Int(3));
    assert_eq!(
        PyJson::Dict(dict.clone()).dumps(Dumps::COMPACT),
        r#"{"x":3,"y":2}"#
    );
    assert_eq!(dict.remove("x"), Some(PyJson::Int(3)));
    assert_eq!(dict.remove("x"), None);
    assert_eq!(dict.len(), 1);
}

#[test]
fn strings_keep_lone_surrogates_and_order_by_code_point() {
    let PyJson::Str(lone) = parse(r#""a\ud800b""#).expect("parse") else {
        panic!("not a string");
    };
    assert_eq!(lone.as_str(), None);
    assert_eq!(lone.lone_surrogate(), Some(0xd800));
    assert_eq!(
        lone.as_bytes(),
        b"a\xed\xa0\x80b",
        "Python's surrogatepass bytes"
    );
    assert_eq!(lone.to_string_lossy(), "a\u{fffd}b");
    assert_eq!(lone.code_points().collect::<Vec<_>>(), [0x61, 0xd800, 0x62]);
    let PyJson::Str(pair) = parse(r#""\ud83d\ude00""#).expect("parse") else {
        panic!("not a string");
    };
    assert_eq!(pair.as_str(), Some("\u{1f600}"));
    assert_eq!(pair.lone_surrogate(), None);
    // Code point order: U+D7FF < U+D800 (lone) < U+E000 < U+10000.
    let ordered = [
        PyString::new("\u{d7ff}"),
        PyString::from_code_points([0xd800]),
        PyString::new("\u{e000}"),
        PyString::new("\u{10000}"),
    ];
    assert!(ordered.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(PyString::prefixed("kv/", "job").as_str(), Some("kv/job"));
}

#[test]
fn strip_is_pythons() {
    let cases = [
        ("  a b  ", "a b"),
        ("\u{a0}x\u{3000}", "x"),
        ("\u{1c}\u{1f}y\u{85}", "y"),
        ("\u{200b}z", "\u{200b}z"),
        (" \t\n\r\u{b}\u{c} ", ""),
        ("", ""),
    ];
    for (input, want) in cases {
        assert_eq!(
            PyString::new(input).strip(),
            PyString::new(want),
            "{input:?}"
        );
    }
}

#[test]
fn float_and_int_conversions_follow_python() {
    use PyConvError::*;
    let float = |s: &str| parse(s).expect("parse").to_py_float();
    assert_eq!(float("null"), Err(Type));
    assert_eq!(float("[]"), Err(Type));
    assert_eq!(float("{}"), Err(Type));
    assert_eq!(float("true"), Ok(1.0));
    assert_eq!(float("3"), Ok(3.0));
    assert_eq!(float("2.5"), Ok(2.5));
    assert_eq!(float("\"5\""), Ok(5.0));
    assert_eq!(float("\" -1_000.5e1 \""), Ok(-10005.0));
    assert_eq!(float("\"Infinity\""), Ok(f64::INFINITY));
    assert_eq!(float("\"-inf\""), Ok(f64::NEG_INFINITY));
    assert!(float("\"nan\"").is_ok_and(f64::is_nan));
    assert_eq!(float("\"x\""), Err(Value));
    assert_eq!(float("\"1__0\""), Err(Value));
    assert_eq!(float("\"_1\""), Err(Value));
    assert_eq!(float("\"\""), Err(Value));
    assert_eq!(float("\".\""), Err(Value));
    assert_eq!(float("\".5\""), Ok(0.5));
    assert_eq!(float("\"5.\""), Ok(5.0));
    assert_eq!(float(&"9".repeat(400)), Err(Overflow));
    assert_eq!(float(&"9".repeat(300)), Ok(1e300));
    let int = |s: &str| parse(s).expect("parse").to_py_int();
    assert_eq!(int("null"), Err(Type));
    assert_eq!(int("true"), Ok(1));
    assert_eq!(int("2.7"), Ok(2));
    assert_eq!(int("-2.7"), Ok(-2));
    assert_eq!(int("\" 12 \""), Ok(12));
    assert_eq!(int("\"1_000\""), Ok(1000));
    assert_eq!(int("\"5.0\""), Err(Value));
    assert_eq!(int("\"\""), Err(Value));
    assert_eq!(int("\"1_\""), Err(Value));
    assert_eq!(int("NaN"), Err(Value));
    assert_eq!(int("Infinity"), Err(Overflow));
    assert_eq!(int(&"9".repeat(50)), Ok(i128::MAX));
    assert_eq!(int("1e300"), Ok(i128::MAX));
}

#[test]
fn serde_values_convert_both_ways_where_they_can() {
    let value = parse(r#"{"a":[1,2.5,"x",null,true],"b":18446744073709551615}"#).expect("parse");
    let serde = value.to_serde().expect("representable");
    assert_eq!(PyJson::from_serde(&serde), value);
    assert_eq!(parse("NaN").expect("parse").to_serde(), None);
    assert_eq!(parse(r#""\ud800""#).expect("parse").to_serde(), None);
    assert_eq!(parse(&"9".repeat(40)).expect("parse").to_serde(), None);
}
