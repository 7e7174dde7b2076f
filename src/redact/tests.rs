use std::borrow::Cow;

use proptest::prelude::*;

use super::*;

const R: &str = REDACTED;

/// Inputs and what the original makes of them (each expectation checked
/// against it), grouped by pattern.
const CASES: &[(&str, &str)] = &[
    // Not secrets: left alone.
    ("", ""),
    ("hello world", "hello world"),
    ("backup finished: 42 files", "backup finished: 42 files"),
    ("my password is hunter2", "my password is hunter2"),
    ("oauth: on", "oauth: on"),
    (
        "see http://example.com:8080/x",
        "see http://example.com:8080/x",
    ),
    ("a basic understanding", "a basic understanding"),
    ("Bearer short", "Bearer short"),
    ("-----BEGIN PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----"),
    ("eyJabc.def.ghi", "eyJabc.def.ghi"),
    (
        "task-abcdefghijklmnopqrstuvw",
        "task-abcdefghijklmnopqrstuvw",
    ),
    (
        "desk_live_abcdefghijklmnop1234",
        "desk_live_abcdefghijklmnop1234",
    ),
    ("AKIAIOSFODNN7EXAMPL", "AKIAIOSFODNN7EXAMPL"),
    ("password=", "password="),
    // 1. Key = value: the key and separator stay, a bare value goes to
    // the end of the line.
    ("PASSWORD=hunter2", "PASSWORD=***REDACTED***"),
    ("password = hunter2", "password = ***REDACTED***"),
    ("db_password: s3cr3t", "db_password: ***REDACTED***"),
    (
        "MY_PASSWORD=correct horse battery",
        "MY_PASSWORD=***REDACTED***",
    ),
    ("PGPASSWORD=pg MYSQLPWD=my", "PGPASSWORD=***REDACTED***"),
    (
        "AWS_SECRET_ACCESS_KEY=wJalr/K7MDENG",
        "AWS_SECRET_ACCESS_KEY=***REDACTED***",
    ),
    ("api-key: xyz", "api-key: ***REDACTED***"),
    ("REDISCLI_AUTH=foo", "REDISCLI_AUTH=***REDACTED***"),
    ("credentials=user:pw", "credentials=***REDACTED***"),
    ("passwords: many", "passwords: ***REDACTED***"),
    ("private_key=---", "private_key=***REDACTED***"),
    ("auth_token=xyz; other", "auth_token=***REDACTED***"),
    // ... a quoted value to its closing quote, when a boundary follows it,
    (
        "export API_KEY='abc123' && run",
        "export API_KEY=***REDACTED*** && run",
    ),
    (
        "Password = \"two words\" and more",
        "Password = ***REDACTED*** and more",
    ),
    ("token='it\\'s' tail", "token=***REDACTED*** tail"),
    (
        r#"{"password": "p@ss", "user": "bob"}"#,
        r#"{"password": ***REDACTED***, "user": "bob"}"#,
    ),
    (
        r#"{"token":"abc","x":1}"#,
        r#"{"token":***REDACTED***,"x":1}"#,
    ),
    (
        r#"{"password": "{\"in\":\"s3\"}", "ok": 1}"#,
        r#"{"password": ***REDACTED***, "ok": 1}"#,
    ),
    // ... else to the end of the line, as one shell word,
    (
        "SECRET_KEY=\"part1\"part2 tail",
        "SECRET_KEY=***REDACTED***",
    ),
    ("token=\"unterminated", "token=***REDACTED***"),
    // ... and a bare value before a `,`, `}` or `]` only up to it.
    ("apikey=xyz,next=1", "apikey=***REDACTED***,next=1"),
    ("token=abc}rest", "token=***REDACTED***}rest"),
    ("token=abc ]", "token=***REDACTED*** ]"),
    ("secrets: [a, b]", "secrets: ***REDACTED***, b]"),
    // Whitespace after the separator is given back up to a non-break.
    ("password=   ", "password=  ***REDACTED***"),
    ("password:\n\nnext", "password:\n\n***REDACTED***"),
    ("password=a\r\nline2", "password=***REDACTED***\r\nline2"),
    // Redacted values (any case) read as values.
    ("password=***redacted***", "password=***REDACTED***"),
    ("password=\"***REDACTED***\"x", "password=***REDACTED***"),
    // Case-insensitive as Python folds: long s, Kelvin sign, dotless and
    // dotted I; Unicode whitespace around the separator.
    ("\u{17F}ecret=x", "\u{17F}ecret=***REDACTED***"),
    ("tO\u{212A}en=x", "tO\u{212A}en=***REDACTED***"),
    ("credent\u{131}al=x", "credent\u{131}al=***REDACTED***"),
    ("CREDENT\u{130}AL=x", "CREDENT\u{130}AL=***REDACTED***"),
    (
        "password\u{a0}=\u{2003}value",
        "password\u{a0}=\u{2003}***REDACTED***",
    ),
    (
        "p\u{1f}password\u{1f}=\u{1f}v",
        "p\u{1f}password\u{1f}=\u{1f}***REDACTED***",
    ),
    (
        "日本語 password=秘密 über",
        "日本語 password=***REDACTED***",
    ),
    // 2. URL credentials: only the password goes.
    (
        "postgres://user:pa55@db:5432/app",
        "postgres://user:***REDACTED***@db:5432/app",
    ),
    (
        "redis://:onlypass@cache:6379/0",
        "redis://:***REDACTED***@cache:6379/0",
    ),
    (
        "mongodb+srv://u:p%40ss@c0.net/db",
        "mongodb+srv://u:***REDACTED***@c0.net/db",
    ),
    (
        "amqp://g:g@h/ and ftp://u:p@h",
        "amqp://g:***REDACTED***@h/ and ftp://u:***REDACTED***@h",
    ),
    ("xhttp://u:p@h", "xhttp://u:***REDACTED***@h"),
    ("1abc://user:pass@host", "1abc://user:pass@host"),
    ("s3://bucket/key:with@sign", "s3://bucket/key:with@sign"),
    // 3, 4. Authorization headers.
    (
        "Authorization: Bearer abcdefgh12345678",
        "Authorization: Bearer ***REDACTED***",
    ),
    (
        "-H 'Authorization: Bearer ya29.a0Af+/h==' x",
        "-H 'Authorization: Bearer ***REDACTED***' x",
    ),
    ("authorization: bearer abc", "authorization: bearer abc"),
    (
        "Bearer \u{131}\u{131}\u{131}\u{131}\u{131}\u{131}\u{131}\u{131} x",
        "Bearer ***REDACTED*** x",
    ),
    (
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "Authorization: Basic ***REDACTED***",
    ),
    (
        "Authorization:Basic dXNlcjpwYXNz",
        "Authorization:Basic ***REDACTED***",
    ),
    (
        "authorization basic dXNlcjpwYXNz",
        "authorization basic ***REDACTED***",
    ),
    (
        "AUTHORIZATION : BASIC QWxhZGRpbjpvcGVu",
        "AUTHORIZATION : BASIC ***REDACTED***",
    ),
    // 5-11. Token formats.
    (
        "key id AKIAIOSFODNN7EXAMPLE in use",
        "key id ***REDACTED*** in use",
    ),
    ("AKIAAKIAIOSFODNN7EXAMPLEXX", "***REDACTED***MPLEXX"),
    (
        "slack xoxb-123456789012-abcdefABCDEF",
        "slack ***REDACTED***",
    ),
    ("axoxb-123456789012-abcdef", "axoxb-123456789012-abcdef"),
    (
        "\u{e9}xoxb-123456789012-abcdef",
        "\u{e9}xoxb-123456789012-abcdef",
    ),
    // A combining mark is not a word character to Python.
    ("e\u{301}xoxb-123456789012-abcdef", "e\u{301}***REDACTED***"),
    (
        "t ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123 done",
        "t ***REDACTED*** done",
    ),
    (
        "_ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
        "_ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
    ),
    ("-ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123", "-***REDACTED***"),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghij",
        "***REDACTED***",
    ),
    (
        "key sk-proj-abcdefghijklmnop1234 end",
        "key ***REDACTED*** end",
    ),
    (
        "sk_live_abcdefghijklmnop1234 rk_test_ABCDEFGHIJKLMNOP1234",
        "***REDACTED*** ***REDACTED***",
    ),
    // After a multi-byte character (searches restart inside it).
    ("\u{2003}rk_test_secret0123456789", "\u{2003}***REDACTED***"),
    (
        "jwt eyJhbGciOi.eyJzdWIi.dozjgNry end",
        "jwt ***REDACTED*** end",
    ),
    ("token-eyJhbGciOi.eyJzdWIi.dozjgNry", "token-***REDACTED***"),
    (
        "xeyJhbGciOi.eyJzdWIi.dozjgNry",
        "xeyJhbGciOi.eyJzdWIi.dozjgNry",
    ),
    (
        "a-eyJhb-ciOi.eyJzdWIi.dozjgNry",
        "a-eyJhb-ciOi.eyJzdWIi.dozjgNry",
    ),
    // 12. A private-key header line, to its end.
    (
        "-----BEGIN RSA PRIVATE KEY----- MIIEow tail",
        "***REDACTED***",
    ),
    ("x -----begin ec private key-----\r", "x ***REDACTED***"),
    // Several secrets, several lines, and patterns in order (the URL one
    // takes the token inside a URL first).
    (
        "a password=x\nb token=y\nc",
        "a password=***REDACTED***\nb token=***REDACTED***\nc",
    ),
    (
        "id AKIAIOSFODNN7EXAMPLE and Bearer abcdefghij",
        "id ***REDACTED*** and Bearer ***REDACTED***",
    ),
    (
        "https://u:ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123@github.com/r",
        "https://u:***REDACTED***@github.com/r",
    ),
    (
        "in\nBearer abcdefghijkl\nAKIAIOSFODNN7EXAMPLE",
        "in\nBearer ***REDACTED***\n***REDACTED***",
    ),
];

#[test]
fn every_case_redacts_as_the_original() {
    for (input, want) in CASES {
        assert_eq!(redact(input), *want, "input {input:?}");
    }
}

#[test]
fn nothing_matched_borrows_and_a_match_allocates() {
    assert!(matches!(redact("plain log line"), Cow::Borrowed(_)));
    assert!(matches!(redact("PASSWORD=x"), Cow::Owned(_)));
    // Already redacted text is given back as it is, borrowed.
    assert!(matches!(
        redact("PASSWORD=***REDACTED***"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn redacting_twice_changes_nothing_on_the_table() {
    for (input, _) in CASES {
        let once = redact(input).into_owned();
        assert_eq!(redact(&once), once, "input {input:?}");
    }
}

#[test]
fn long_lines_scan_whole_and_overlong_ones_are_redacted_whole() {
    let long = format!(
        "{} password={} end",
        "x".repeat(100_000),
        "y".repeat(100_000)
    );
    assert_eq!(
        redact(&long),
        format!("{} password={R}", "x".repeat(100_000))
    );
    let clean = "ab ".repeat(LINE_SCAN_LIMIT / 3);
    assert!(matches!(redact(&clean), Cow::Borrowed(_)));
    // The limit counts characters, not bytes.
    let wide = "é".repeat(LINE_SCAN_LIMIT);
    assert!(matches!(redact(&wide), Cow::Borrowed(s) if s == wide));
    assert_eq!(redact(&"q".repeat(LINE_SCAN_LIMIT + 1)), R);
    // A replacement growing the text past the limit redacts it whole.
    let grows = format!("{} password=x", "y".repeat(LINE_SCAN_LIMIT - 11));
    assert_eq!(grows.len(), LINE_SCAN_LIMIT);
    assert_eq!(redact(&grows), R);
    let fits = format!("{} password=x", "y".repeat(LINE_SCAN_LIMIT - 24));
    let out = redact(&fits);
    assert_eq!(out.len(), LINE_SCAN_LIMIT);
    assert!(out.ends_with(" password=***REDACTED***"));
}

#[test]
fn a_pathological_scheme_run_stays_fast() {
    // Long runs that almost match; each scan must stay linear.
    let texts = [
        format!("{}://{}", "a".repeat(200_000), "b".repeat(200_000)),
        "password".repeat(50_000),
        format!("password={}", "\"".repeat(100_000)),
        "eyJ".repeat(100_000),
        "-----BEGIN ".repeat(50_000),
        "Bearer ".repeat(50_000),
        "authorization ".repeat(30_000),
    ];
    let started = std::time::Instant::now();
    for text in &texts {
        let _ = redact(text);
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn pem_blocks_are_redacted_line_by_line() {
    let lines = [
        "before",
        "-----BEGIN PRIVATE KEY-----",
        "MIIBVgIBADANBgkqhkiG9w0BAQEFAASC",
        "-----END PRIVATE KEY-----",
        "after password=x",
    ];
    let out = redact_lines(&lines);
    assert_eq!(out, ["before", R, R, R, "after password=***REDACTED***"]);
    assert!(matches!(out[0], Cow::Borrowed(_)));
    // Unterminated: redacted to the end.
    assert_eq!(
        redact_lines(&["-----BEGIN EC PRIVATE KEY-----", "body", "more"]),
        [R, R, R]
    );
    // The header evicted: the body before the END goes too.
    assert_eq!(
        redact_lines(&["body", "-----END RSA PRIVATE KEY-----", "ok"]),
        [R, R, "ok"]
    );
    // An END and the next BEGIN on one line keep the block open.
    let two = [
        "-----BEGIN PRIVATE KEY-----",
        "a",
        "-----END PRIVATE KEY----------BEGIN PRIVATE KEY-----",
        "b",
        "-----END PRIVATE KEY-----",
        "tail",
    ];
    assert_eq!(redact_lines(&two), [R, R, R, R, R, "tail"]);
    assert!(redact_lines::<&str>(&[]).is_empty());
    let owned = vec![String::from("token=1"), String::from("x")];
    assert_eq!(
        redact_lines(&owned),
        [format!("token={R}"), String::from("x")]
    );
}

/// Text built from pieces of secrets, separators and noise, so that random
/// combinations land on and around every pattern. Without `://`: the
/// original itself is not idempotent when a URL password's redaction leaves
/// a key word right before the `:` (`PWD://x:y@h` becomes `PWD:***REDACTED***@h`,
/// which a second pass reads as `PWD: value`); on these pieces it is (300,000
/// random texts checked against it).
fn fragments() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "password",
        "PWD",
        "secret",
        "token",
        "api_key",
        "s",
        "=",
        ":",
        " ",
        "\n",
        "\r",
        "\"",
        "'",
        "\\",
        ",",
        "}",
        "]",
        ";",
        "***REDACTED***",
        "***redacted***",
        "user",
        "@",
        "/",
        "Bearer ",
        "Authorization: Basic ",
        "abcdefgh",
        "AKIA",
        "0123456789ABCDEF",
        "xoxb-",
        "ghp_",
        "github_pat_",
        "sk-",
        "sk_live_",
        "eyJ",
        ".",
        "-",
        "_",
        "-----BEGIN ",
        "PRIVATE KEY-----",
        "-----END ",
        "é",
        "\u{131}",
        "\u{17F}",
        "\u{2003}",
        "x",
    ]);
    prop::collection::vec(piece, 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn redaction_is_idempotent(text in fragments()) {
        let once = redact(&text).into_owned();
        let twice = redact(&once);
        prop_assert_eq!(twice.as_ref(), once.as_str());
    }

    #[test]
    fn lines_without_pem_markers_redact_one_by_one(lines in prop::collection::vec(fragments(), 0..6)) {
        let lines: Vec<String> = lines.into_iter().filter(|l| !l.contains("-----")).collect();
        let each: Vec<Cow<'_, str>> = lines.iter().map(|l| redact(l)).collect();
        prop_assert_eq!(redact_lines(&lines), each);
    }
}

/// Inputs run through the original (`redact_secrets`, `redact_lines`) and
/// its outputs, recorded as data.
#[derive(serde::Deserialize)]
struct Corpus {
    redact: Vec<Single>,
    redact_lines: Vec<Multi>,
}

#[derive(serde::Deserialize)]
struct Single {
    input: String,
    output: String,
}

#[derive(serde::Deserialize)]
struct Multi {
    input: Vec<String>,
    output: Vec<String>,
}

#[test]
fn the_recorded_corpus_redacts_as_the_original() {
    let text = include_str!("../../tests/fixtures/redact_corpus.json");
    let corpus: Corpus = serde_json::from_str(text).expect("the corpus fixture is valid JSON");
    assert!(corpus.redact.len() >= 60, "the corpus lost its cases");
    for case in &corpus.redact {
        let input = &case.input;
        let shown: String = input.chars().take(80).collect();
        assert_eq!(redact(input), case.output.as_str(), "input {shown:?}");
    }
    for case in &corpus.redact_lines {
        assert_eq!(
            redact_lines(&case.input),
            case.output,
            "lines {:?}",
            case.input
        );
    }
}
