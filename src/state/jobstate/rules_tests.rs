//! The value rules against the original: the comparison matrix and the
//! `_check_size` verdicts were produced by its Python interpreter.

use super::*;
use crate::pyjson::loads;

fn v(text: &str) -> PyJson {
    loads(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// Python's `a > b` / `a == b` for every pair of VALUES: row `a`, column
/// `b`; `T` greater, `F` not greater and not equal, `E` equal, `X`
/// TypeError and not equal, `Y` TypeError and equal.
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "1.0",
    "1.5",
    "true",
    "false",
    "\"a\"",
    "\"b\"",
    "\"\"",
    "\"\\u00e9\"",
    "\"\\ud800\"",
    "[]",
    "[1]",
    "[1,2]",
    "[1,\"a\"]",
    "[\"a\"]",
    "[null]",
    "{}",
    "{\"a\":1}",
    "{\"a\":1.0}",
    "null",
    "9007199254740993",
    "9007199254740992.0",
    "[[1]]",
    "[1.0]",
    "18446744073709551615",
    "1e300",
    "-0.0",
    "170141183460469231731687303715884105728",
    "1e400",
    "NaN",
    "[NaN]",
];
const MATRIX: &[&str] = &[
    "EFTFFFEXXXXXXXXXXXXXXXFFXXFFEFFFX", // 0
    "TETEFETXXXXXXXXXXXXXXXFFXXFFTFFFX", // 1
    "FFEFFFFXXXXXXXXXXXXXXXFFXXFFFFFFX", // -1
    "TETEFETXXXXXXXXXXXXXXXFFXXFFTFFFX", // 1.0
    "TTTTETTXXXXXXXXXXXXXXXFFXXFFTFFFX", // 1.5
    "TETEFETXXXXXXXXXXXXXXXFFXXFFTFFFX", // true
    "EFTFFFEXXXXXXXXXXXXXXXFFXXFFEFFFX", // false
    "XXXXXXXEFTFFXXXXXXXXXXXXXXXXXXXXX", // "a"
    "XXXXXXXTETFFXXXXXXXXXXXXXXXXXXXXX", // "b"
    "XXXXXXXFFEFFXXXXXXXXXXXXXXXXXXXXX", // ""
    "XXXXXXXTTTEFXXXXXXXXXXXXXXXXXXXXX", // "\u00e9"
    "XXXXXXXTTTTEXXXXXXXXXXXXXXXXXXXXX", // "\ud800"
    "XXXXXXXXXXXXEFFFFFXXXXXXFFXXXXXXF", // []
    "XXXXXXXXXXXXTEFFXXXXXXXXXEXXXXXXF", // [1]
    "XXXXXXXXXXXXTTEXXXXXXXXXXTXXXXXXF", // [1,2]
    "XXXXXXXXXXXXTTXEXXXXXXXXXTXXXXXXF", // [1,"a"]
    "XXXXXXXXXXXXTXXXEXXXXXXXXXXXXXXXX", // ["a"]
    "XXXXXXXXXXXXTXXXXEXXXXXXXXXXXXXXX", // [null]
    "XXXXXXXXXXXXXXXXXXYXXXXXXXXXXXXXX", // {}
    "XXXXXXXXXXXXXXXXXXXYYXXXXXXXXXXXX", // {"a":1}
    "XXXXXXXXXXXXXXXXXXXYYXXXXXXXXXXXX", // {"a":1.0}
    "XXXXXXXXXXXXXXXXXXXXXYXXXXXXXXXXX", // null
    "TTTTTTTXXXXXXXXXXXXXXXETXXFFTFFFX", // 9007199254740993
    "TTTTTTTXXXXXXXXXXXXXXXFEXXFFTFFFX", // 9007199254740992.0
    "XXXXXXXXXXXXTXXXXXXXXXXXEXXXXXXXX", // [[1]]
    "XXXXXXXXXXXXTEFFXXXXXXXXXEXXXXXXF", // [1.0]
    "TTTTTTTXXXXXXXXXXXXXXXTTXXEFTFFFX", // 18446744073709551615
    "TTTTTTTXXXXXXXXXXXXXXXTTXXTETTFFX", // 1e300
    "EFTFFFEXXXXXXXXXXXXXXXFFXXFFEFFFX", // -0.0
    "TTTTTTTXXXXXXXXXXXXXXXTTXXTFTEFFX", // 170141183460469231731687303715884105728
    "TTTTTTTXXXXXXXXXXXXXXXTTXXTTTTEFX", // 1e400
    "FFFFFFFXXXXXXXXXXXXXXXFFXXFFFFFFX", // NaN
    "XXXXXXXXXXXXTFFFXXXXXXXXXFXXXXXXE", // [NaN]
];

#[test]
fn comparisons_and_equality_are_pythons() {
    assert_eq!(MATRIX.len(), VALUES.len());
    for (i, (a_text, row)) in VALUES.iter().zip(MATRIX).enumerate() {
        let a = v(a_text);
        for (j, (b_text, want)) in VALUES.iter().zip(row.chars()).enumerate() {
            let b = v(b_text);
            let got = match (py_gt(&a, &b), py_eq(&a, &b)) {
                (Ok(true), false) => 'T',
                (Ok(false), false) => 'F',
                (Ok(false), true) => 'E',
                (Err(Incomparable), false) => 'X',
                (Err(Incomparable), true) => 'Y',
                (Ok(true), true) => '!',
            };
            // Python compares a list with itself by identity first, so a
            // NaN inside one equals itself only there (never across two
            // parsed values, which is all the cursor ever compares).
            if i == j && a_text.contains("NaN") && a_text.starts_with('[') {
                assert_eq!((want, got), ('E', 'F'));
                continue;
            }
            assert_eq!(got, want, "{a_text} vs {b_text}");
        }
    }
}

#[test]
fn check_size_matches_the_original_verdicts() {
    let table = include_str!("testdata/check_size.jsonl");
    let mut rows = 0;
    for line in table.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("row");
        let input = row[0].as_str().expect("input");
        let kind = row[1].as_str().expect("kind");
        let max = row[2].as_u64().expect("max");
        let want = row[3].as_str().expect("verdict");
        let got = match check_size(kind, &v(input), max) {
            Ok(()) => "OK".to_owned(),
            Err(e) => format!("{} {}", e.status(), e.message()),
        };
        assert_eq!(got, want, "{input} as {kind} against {max}");
        rows += 1;
    }
    assert_eq!(rows, 200);
}

#[test]
fn sizes_are_measured_ascii_escaped() {
    // "é" is 1 character, 2 bytes of UTF-8, and `"\u00e9"`: 8 bytes.
    assert_eq!(encoded_len(&v(r#""\u00e9""#)), 8);
    assert_eq!(encoded_len(&v(r#""\ud83d\ude00""#)), 14);
    assert_eq!(
        encoded_len(&v(r#"{"a": [1, 2.0]}"#)),
        r#"{"a":[1,2.0]}"#.len()
    );
    assert!(check_size("value", &v(r#""\u00e9""#), 8).is_ok());
    let e = check_size("value", &v(r#""\u00e9""#), 7).expect_err("over");
    assert_eq!(e.status(), 413);
    assert_eq!(
        e.message(),
        "value of 8 bytes exceeds the configured limit of 7 bytes"
    );
    // No limit: only portability.
    assert!(check_size("value", &v(&"1".repeat(5000)[..4300]), 0).is_err());
    assert!(check_size("value", &v(r#""x""#), 0).is_ok());
}

#[test]
fn portability_of_whole_documents_counts_every_level() {
    // A body nested 127 lists deep sits at depths 1..=127: fine; 128
    // deep reaches depth 128: refused.
    let deep =
        |n: usize| PyJson::object([("data", v(&format!("{}{}", "[".repeat(n), "]".repeat(n))))]);
    assert_eq!(portability_error(&deep(127)), None);
    assert_eq!(
        portability_error(&deep(128)).as_deref(),
        Some(
            "nesting depth exceeds the portable bound of 128 (a deeper document is writable by \
             the stdlib encoder but a hard error on orjson's, so it could never be rewritten by \
             every node)"
        )
    );
    // The first violation in document order wins.
    assert_eq!(
        portability_error(&v(r#"{"b": NaN, "a": "\ud800"}"#)).as_deref(),
        Some(
            "non-finite float nan is not portable across the fleet (NaN/Infinity serializes \
             differently with and without orjson)"
        )
    );
    assert_eq!(
        portability_error(&v(r#"{"\udfff": 1}"#)).as_deref(),
        Some(
            "string containing lone surrogate '\\udfff' is not portable across the fleet (the \
             stdlib writes an escape orjson can neither emit nor parse)"
        )
    );
    assert_eq!(portability_error(&v("18446744073709551615")), None);
    assert_eq!(portability_error(&v("-9223372036854775808")), None);
}

#[test]
fn scopes_are_matched_exactly() {
    for ok in ["backup", "a b", "global", "x\u{200b}"] {
        assert!(require_scope(ok).is_ok(), "{ok:?}");
    }
    for empty in ["", " ", "\t\n", "\u{a0}", "\u{3000}\u{85}"] {
        let e = require_scope(empty).expect_err(empty);
        assert_eq!(
            (e.status(), e.message()),
            (400, "a non-empty scope is required".to_owned())
        );
    }
    let cases = [
        ("report ", "'report '"),
        (" report", "' report'"),
        ("report\u{a0}", "'report\\xa0'"),
        ("report\n", "'report\\n'"),
        ("it's ", "\"it's \""),
        ("\u{1f}x", "'\\x1fx'"),
    ];
    for (scope, repr) in cases {
        let e = require_scope(scope).expect_err(scope);
        assert_eq!(e.status(), 400);
        assert_eq!(
            e.message(),
            format!(
                "scope {repr} carries leading or trailing whitespace; scopes are isolation \
                 boundaries and are matched exactly (rename the job, or pass the exact scope \
                 string)"
            )
        );
    }
    // A lone surrogate is not whitespace.
    let lone = PyString::from_code_points([0x61, 0xd800]);
    assert!(require_scope(&lone).is_ok());
}

/// (doc exists, stored, given, force, value after, moved).
type Step<'a> = (bool, Option<&'a str>, &'a str, bool, &'a str, bool);

#[test]
fn cursor_steps() {
    let name = "c";
    let cases: [Step<'_>; 14] = [
        (false, None, "5", false, "5", true),
        (false, None, "null", false, "null", true),
        (true, Some("null"), "null", false, "null", false),
        (true, Some("null"), "null", true, "null", false),
        (true, Some("null"), "1", false, "1", true),
        (true, None, "1", false, "1", true),
        (true, Some("2"), "1", false, "2", false),
        (true, Some("2"), "2.0", false, "2", false),
        (true, Some("2"), "2.0", true, "2", false),
        (true, Some("2"), "1", true, "1", true),
        (true, Some("2"), "2.5", false, "2.5", true),
        (true, Some("[1,2]"), "[1,2,0]", false, "[1,2,0]", true),
        (true, Some("\"b\""), "\"a\"", false, "\"b\"", false),
        (true, Some("NaN"), "1", false, "NaN", true),
    ];
    for (exists, stored, given, force, want, moved) in cases {
        let stored = stored.map(v);
        let (value, did) =
            cursor_step(exists, stored.as_ref(), &v(given), force, name).expect("step");
        assert_eq!(
            (value.dumps(Dumps::COMPACT), did),
            (want.to_owned(), moved),
            "{stored:?} <- {given} force={force}"
        );
    }
    let e = cursor_step(true, Some(&v("{}")), &v("{}"), false, "it's").expect_err("dicts");
    assert_eq!(e.status(), 409);
    assert_eq!(
        e.message(),
        "cursor \"it's\" holds a dict but was advanced with a dict; advance it with a \
         comparable value or pass force"
    );
    // Force never compares.
    assert!(cursor_step(true, Some(&v("{}")), &v("\"x\""), true, name).is_ok());
}

#[test]
fn claims_expire_strictly_after_their_expiry() {
    let now = 1000.0;
    assert_eq!(claim_still_held(None, now), Ok(true));
    assert_eq!(claim_still_held(Some(&PyJson::Null), now), Ok(true));
    assert_eq!(claim_still_held(Some(&v("1000.5")), now), Ok(true));
    assert_eq!(claim_still_held(Some(&v("1000.0")), now), Ok(false));
    assert_eq!(claim_still_held(Some(&v("1000")), now), Ok(false));
    assert_eq!(claim_still_held(Some(&v("999")), now), Ok(false));
    assert_eq!(claim_still_held(Some(&v("true")), now), Ok(false));
    assert_eq!(claim_still_held(Some(&v("\"x\"")), now), Err(Incomparable));
    let body = |text: &str| v(text).as_dict().cloned();
    let cutoff = 500.0;
    assert!(claim_expired_before(
        body(r#"{"expiresAt": 500}"#).as_ref(),
        cutoff
    ));
    assert!(claim_expired_before(
        body(r#"{"expiresAt": 499.5}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(
        body(r#"{"expiresAt": 500.5}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(
        body(r#"{"expiresAt": true}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(
        body(r#"{"expiresAt": "1"}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(
        body(r#"{"expiresAt": null}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(
        body(r#"{"claimedAt": 1}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(
        body(r#"{"expiresAt": NaN}"#).as_ref(),
        cutoff
    ));
    assert!(!claim_expired_before(None, cutoff));
}
