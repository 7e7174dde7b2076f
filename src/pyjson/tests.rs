//! `PyJson` against Python 3.11's `json` module, `repr()` and `str()`:
//! the table rows were produced by the original's interpreter.

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
        let value = loads(*input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
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
        let again = loads(&value.dumps(Dumps::COMPACT)).expect("reparse");
        assert_eq!(
            again.dumps(Dumps::SORTED),
            *sorted,
            "round trip of {input:?}"
        );
    }
}

#[test]
fn repeated_keys_keep_the_first_place_and_the_last_value() {
    let value = loads(r#"{"a":1,"b":2,"a":3}"#).expect("loads");
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
fn truthiness_is_python_s() {
    let falsy = [
        PyJson::Null,
        PyJson::Bool(false),
        PyJson::Int(0),
        PyJson::Float(0.0),
        PyJson::Float(-0.0),
        PyJson::from(""),
        PyJson::List(vec![]),
        PyJson::Dict(PyDict::new()),
    ];
    for v in falsy {
        assert!(!v.is_truthy(), "{v:?}");
    }
    let truthy = [
        PyJson::Bool(true),
        PyJson::Int(-1),
        PyJson::BigInt("-1".repeat(20)),
        PyJson::Float(f64::NAN),
        PyJson::Float(0.5),
        PyJson::from("0"),
        PyJson::List(vec![PyJson::Null]),
        PyJson::object([("", PyJson::Null)]),
    ];
    for v in truthy {
        assert!(v.is_truthy(), "{v:?}");
    }
}

/// `str()` and `repr()` from CPython 3.11.
#[test]
fn str_and_repr_like_python() {
    let v = loads(
        r#"{"a": [1, 2.5, null, true, false, "it's", "x\ny"], "b": {}, "c": 1e16, "d": NaN, "é": -Infinity}"#,
    )
    .expect("loads");
    assert_eq!(
        v.repr(),
        r#"{'a': [1, 2.5, None, True, False, "it's", 'x\ny'], 'b': {}, 'c': 1e+16, 'd': nan, 'é': -inf}"#
    );
    assert_eq!(v.py_str(), PyString::from(v.repr()));
    assert_eq!(PyJson::from("plain").py_str(), PyString::new("plain"));
    assert_eq!(PyJson::from("plain").repr(), "'plain'");
    assert_eq!(PyJson::Null.py_str(), PyString::new("None"));
    assert_eq!(PyJson::Float(3.0).py_str(), PyString::new("3.0"));
    assert_eq!(PyJson::Int(-7).py_str(), PyString::new("-7"));
    // A string's str() is itself, lone surrogates and all.
    let lone = PyString::from_code_points([0x6b, 0xdcff]);
    assert_eq!(PyJson::Str(lone.clone()).py_str(), lone);
}

#[test]
fn get_reads_string_keys_of_objects_only() {
    let v = PyJson::object([("value", PyJson::Int(1)), ("ok", PyJson::Bool(true))]);
    assert_eq!(v.get("ok"), Some(&PyJson::Bool(true)));
    assert_eq!(v.get("missing"), None);
    assert_eq!(PyJson::List(vec![]).get("ok"), None);
    let keys: Vec<&PyString> = v.as_dict().expect("dict").keys().collect();
    assert_eq!(keys, [&PyString::new("value"), &PyString::new("ok")]);
}

#[test]
fn dumps_uses_python_s_default_separators_and_floats() {
    let body = PyJson::object([
        ("scope", PyJson::Null),
        ("key", PyJson::from("k é")),
        ("value", PyJson::Float(1e16)),
        ("ttl", PyJson::Float(0.0)),
        ("permits", PyJson::Int(3)),
        ("wait", PyJson::Bool(false)),
        ("x", PyJson::Float(f64::INFINITY)),
        ("y", PyJson::Float(f64::NAN)),
        ("z", PyJson::Float(1e-5)),
        ("w", PyJson::Float(-0.0)),
    ]);
    assert_eq!(
        body.dumps(Dumps::SPACED),
        r#"{"scope": null, "key": "k \u00e9", "value": 1e+16, "ttl": 0.0, "permits": 3, "wait": false, "x": Infinity, "y": NaN, "z": 1e-05, "w": -0.0}"#
    );
}

#[test]
fn serde_values_convert_both_ways_where_they_can() {
    let value = loads(r#"{"a":[1,2.5,"x",null,true],"b":18446744073709551615}"#).expect("loads");
    let serde = value.to_serde().expect("representable");
    assert_eq!(PyJson::from_serde(&serde), value);
    assert_eq!(loads("NaN").expect("loads").to_serde(), None);
    assert_eq!(loads(r#""\ud800""#).expect("loads").to_serde(), None);
    assert_eq!(loads(&"9".repeat(40)).expect("loads").to_serde(), None);
}
