//! Every verb driven through fake seams: the request it sends (method,
//! path, query, the exact JSON body bytes), what it prints, and its exit
//! code, for success, "not found" and the error paths.

use super::*;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;

#[derive(Default)]
struct FakeTransport {
    sent: Vec<Request>,
    replies: VecDeque<Result<Reply, CliError>>,
}

impl FakeTransport {
    fn replying(replies: Vec<Result<Reply, CliError>>) -> FakeTransport {
        FakeTransport {
            sent: Vec::new(),
            replies: replies.into(),
        }
    }
}

impl Transport for FakeTransport {
    fn send(&mut self, request: Request) -> Result<Reply, CliError> {
        self.sent.push(request);
        self.replies
            .pop_front()
            .unwrap_or_else(|| Err(CliError("no reply queued".to_owned())))
    }
}

fn reply(status: u16, body: &str) -> Result<Reply, CliError> {
    Ok(Reply {
        status,
        body: body.as_bytes().to_vec(),
    })
}

#[derive(Default)]
struct FakeIo {
    env: BTreeMap<String, String>,
    stdin: Vec<u8>,
    files: BTreeMap<OsString, Vec<u8>>,
    unwritable: bool,
    stdout: Vec<u8>,
    stderr: Vec<String>,
    child: Option<std::io::Result<i32>>,
    ran: Vec<Vec<OsString>>,
}

impl Io for FakeIo {
    fn env(&self, name: &str) -> Option<PyString> {
        self.env.get(name).map(|v| PyString::from(v.as_str()))
    }
    fn read_stdin(&mut self) -> std::io::Result<Vec<u8>> {
        Ok(std::mem::take(&mut self.stdin))
    }
    fn read_file(&mut self, path: &OsStr) -> std::io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOENT))
    }
    fn write_file(&mut self, path: &OsStr, data: &[u8]) -> Result<(), WriteFailure> {
        if self.unwritable {
            return Err(WriteFailure::Open(std::io::Error::from_raw_os_error(
                libc::EACCES,
            )));
        }
        if path == "full" {
            return Err(WriteFailure::Write(std::io::Error::from_raw_os_error(
                libc::ENOSPC,
            )));
        }
        self.files.insert(path.to_owned(), data.to_vec());
        Ok(())
    }
    fn stdout(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.stdout.extend_from_slice(data);
        Ok(())
    }
    fn stderr(&mut self, line: &str) {
        self.stderr.push(line.to_owned());
    }
    fn run_child(&mut self, argv: &[OsString]) -> std::io::Result<i32> {
        self.ran.push(argv.to_vec());
        self.child.take().unwrap_or(Ok(0))
    }
}

/// Runs `action` through `dispatch` under `verb`.
fn run(
    verb: Verb,
    action: Action,
    replies: Vec<Result<Reply, CliError>>,
    io: &mut FakeIo,
) -> (u8, Vec<Request>) {
    let mut t = FakeTransport::replying(replies);
    let code = dispatch(verb, Some(&action), &mut t, io);
    (code, t.sent)
}

fn s(text: &str) -> PyString {
    PyString::from(text)
}

fn q(pairs: &[(&'static str, Option<&str>)]) -> Vec<(&'static str, Option<PyString>)> {
    pairs
        .iter()
        .map(|(k, v)| (*k, v.map(PyString::from)))
        .collect()
}

/// The JSON body of a request, as the bytes the transport sends.
fn json_body(request: &Request) -> String {
    match &request.body {
        Body::Json(value) => value.dumps(Dumps::SPACED),
        other => panic!("not a JSON body: {other:?}"),
    }
}

fn stdout(io: &FakeIo) -> String {
    String::from_utf8(io.stdout.clone()).unwrap()
}

#[test]
fn a_missing_action_is_a_usage_error() {
    let mut io = FakeIo::default();
    let mut t = FakeTransport::default();
    assert_eq!(dispatch(Verb::Cursor, None, &mut t, &mut io), 2);
    assert_eq!(
        io.stderr,
        ["cronstable cursor: no action given (see --help)"]
    );
    assert!(t.sent.is_empty());
}

#[test]
fn errors_are_prefixed_with_the_command() {
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Lock,
        Action::LockRelease { token: s("t") },
        vec![Err(CliError("cannot reach the endpoint".to_owned()))],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(io.stderr, ["cronstable lock: cannot reach the endpoint"]);
}

#[test]
fn state_get_prints_the_value_as_emit_does() {
    let get = |scope: Option<&str>| Action::KvGet {
        key: s("k"),
        scope: scope.map(PyString::from),
    };
    let cases = [
        (
            r#"{"value": "plain text", "updatedAt": 1.5}"#,
            "plain text\n",
        ),
        (r#"{"value": "é\n€"}"#, "é\n€\n"),
        (r#"{"value": 5}"#, "5\n"),
        (r#"{"value": 1e16}"#, "1e+16\n"),
        (r#"{"value": 2.0}"#, "2.0\n"),
        (r#"{"value": null}"#, "null\n"),
        (r#"{"value": true}"#, "true\n"),
        (
            r#"{"value": {"b": 1, "a": [1.0, null, "é"]}}"#,
            "{\"b\": 1, \"a\": [1.0, null, \"\\u00e9\"]}\n",
        ),
        (r#"{"value": NaN}"#, "NaN\n"),
        // A missing value prints null; a bare JSON value is the value.
        (r#"{"updatedAt": 1}"#, "null\n"),
        ("7", "7\n"),
        ("not json", "null\n"),
    ];
    for (body, want) in cases {
        let mut io = FakeIo::default();
        let (code, sent) = run(Verb::State, get(None), vec![reply(200, body)], &mut io);
        assert_eq!((code, stdout(&io).as_str()), (0, want), "{body}");
        assert_eq!(sent[0].method, Method::Get);
        assert_eq!(sent[0].path, "/v1/kv/get");
        assert_eq!(sent[0].query, q(&[("scope", None), ("key", Some("k"))]));
        assert_eq!(sent[0].body, Body::Empty);
        assert_eq!(sent[0].timeout, 30.0);
    }
    let mut io = FakeIo::default();
    let (_, sent) = run(
        Verb::State,
        get(Some("global")),
        vec![reply(200, "{}")],
        &mut io,
    );
    assert_eq!(
        sent[0].query,
        q(&[("scope", Some("global")), ("key", Some("k"))])
    );
}

#[test]
fn state_get_of_a_missing_key_exits_4() {
    for body in [
        r#"{"error": "key 'k' is not set in scope 'j'"}"#,
        "404: Not Found",
        "",
    ] {
        let mut io = FakeIo::default();
        let (code, _) = run(
            Verb::State,
            Action::KvGet {
                key: s("k"),
                scope: None,
            },
            vec![reply(404, body)],
            &mut io,
        );
        assert_eq!(code, 4);
        assert_eq!(io.stderr, ["key not found: k"]);
        assert!(io.stdout.is_empty());
    }
}

#[test]
fn other_statuses_report_the_error_field_or_the_status() {
    let cases = [
        (
            401,
            r#"{"error": "401: Unauthorized"}"#,
            "401: Unauthorized",
        ),
        (
            403,
            r#"{"error": "scope 'x' is not permitted for job 'j'"}"#,
            "scope 'x' is not permitted for job 'j'",
        ),
        (
            500,
            "<html>oops</html>",
            "the state endpoint returned HTTP 500",
        ),
        (502, "", "the state endpoint returned HTTP 502"),
        (
            400,
            r#"{"error": ""}"#,
            "the state endpoint returned HTTP 400",
        ),
        (400, r#"{"error": {"a": 1}}"#, "{'a': 1}"),
        (304, "{}", "the state endpoint returned HTTP 304"),
        (503, r#"["x"]"#, "the state endpoint returned HTTP 503"),
    ];
    for (status, body, message) in cases {
        let mut io = FakeIo::default();
        let (code, _) = run(
            Verb::State,
            Action::KvGet {
                key: s("k"),
                scope: None,
            },
            vec![reply(status, body)],
            &mut io,
        );
        assert_eq!(code, 1, "{status} {body}");
        assert_eq!(io.stderr, [format!("cronstable state: {message}")]);
    }
}

/// The client's `json.loads` stops where the original client's does
/// (its own calls take a few of Python's 1000 frames), for `--json` and
/// replies alike.
#[test]
fn json_nests_as_deep_as_the_original_client_parses() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(pyjson::loads_with_depth(&nested(JSON_DEPTH), JSON_DEPTH).is_ok());
    let value = |n: usize| Action::KvSet {
        key: s("k"),
        value: s(&nested(n)),
        json: true,
        scope: None,
    };
    let ok_reply = || vec![reply(200, "{}")];
    let mut io = FakeIo::default();
    let (code, sent) = run(Verb::State, value(989), ok_reply(), &mut io);
    assert_eq!((code, sent.len()), (0, 1));
    let (code, sent) = run(Verb::State, value(990), ok_reply(), &mut io);
    assert_eq!((code, sent.len()), (1, 0));
    assert_eq!(
        io.stderr,
        [
            "cronstable state: --json was given but VALUE is not valid JSON: maximum recursion \
          depth exceeded while decoding a JSON array from a unicode string"
        ]
    );
    let wrapped = |n: usize| parse_body(format!("{{\"value\": {}}}", nested(n - 1)).as_bytes());
    assert_ne!(wrapped(989), PyJson::Dict(PyDict::new()));
    assert_eq!(wrapped(990), PyJson::Dict(PyDict::new()));
}

/// Reply bodies are bytes: UTF-8 with an optional BOM, else unreadable.
#[test]
fn replies_decode_as_python_decodes_bytes() {
    assert_eq!(
        parse_body(b"\xef\xbb\xbf{\"a\": 1}"),
        PyJson::object([("a", PyJson::Int(1))])
    );
    assert_eq!(parse_body(b"{\"a\": \xff}"), PyJson::Dict(PyDict::new()));
    assert_eq!(parse_body(b"not json"), PyJson::Dict(PyDict::new()));
    assert_eq!(
        parse_body(b"5"),
        PyJson::object([("value", PyJson::Int(5))])
    );
}

#[test]
fn state_set_sends_the_string_or_the_parsed_json() {
    let set = |value: &str, json: bool, scope: Option<&str>| Action::KvSet {
        key: s("k"),
        value: s(value),
        json,
        scope: scope.map(PyString::from),
    };
    let ok_reply = || vec![reply(200, r#"{"ok": true, "updatedAt": 1.0}"#)];
    let mut io = FakeIo::default();
    let (code, sent) = run(Verb::State, set("v é", false, None), ok_reply(), &mut io);
    assert_eq!(code, 0);
    assert!(io.stdout.is_empty() && io.stderr.is_empty());
    assert_eq!((sent[0].method, sent[0].path), (Method::Post, "/v1/kv/set"));
    assert_eq!(
        json_body(&sent[0]),
        r#"{"scope": null, "key": "k", "value": "v \u00e9"}"#
    );
    let (_, sent) = run(
        Verb::State,
        set(r#"{"b": [1, 2.50, -0], "a": null}"#, true, Some("s")),
        ok_reply(),
        &mut FakeIo::default(),
    );
    assert_eq!(
        json_body(&sent[0]),
        r#"{"scope": "s", "key": "k", "value": {"b": [1, 2.5, 0], "a": null}}"#
    );
    // --json with text that is not JSON: Python's message, nothing sent.
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::State,
        set("{'a': 1}", true, None),
        ok_reply(),
        &mut io,
    );
    assert_eq!(code, 1);
    assert!(sent.is_empty());
    assert_eq!(
        io.stderr,
        [
            "cronstable state: --json was given but VALUE is not valid JSON: Expecting property \
          name enclosed in double quotes: line 1 column 2 (char 1)"
        ]
    );
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::State,
        set("x", false, None),
        vec![reply(
            413,
            r#"{"error":"value of 2000000 bytes exceeds the configured limit of 1048576 bytes"}"#,
        )],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(
        io.stderr,
        ["cronstable state: value of 2000000 bytes exceeds the configured limit of 1048576 bytes"]
    );
}

#[test]
fn state_delete_exits_4_when_nothing_existed() {
    let delete = || Action::KvDelete {
        key: s("k"),
        scope: None,
    };
    for (body, code) in [
        (r#"{"existed": true}"#, 0),
        (r#"{"existed": false}"#, 4),
        ("{}", 4),
        (r#"{"existed": 1}"#, 0),
    ] {
        let mut io = FakeIo::default();
        let (got, sent) = run(Verb::State, delete(), vec![reply(200, body)], &mut io);
        assert_eq!(got, code, "{body}");
        assert!(io.stderr.is_empty() && io.stdout.is_empty());
        assert_eq!(json_body(&sent[0]), r#"{"scope": null, "key": "k"}"#);
        assert_eq!(sent[0].path, "/v1/kv/delete");
    }
}

#[test]
fn state_keys_prints_one_key_a_line() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::State,
        Action::KvKeys {
            scope: Some(s("x")),
        },
        vec![reply(
            200,
            r#"{"scope": "x", "keys": [{"key": "a", "value": 1, "updatedAt": 1.0}, {"key": "b c", "value": null}, {"key": 5}, {}]}"#,
        )],
        &mut io,
    );
    assert_eq!(code, 0);
    assert_eq!(stdout(&io), "a\nb c\n5\nNone\n");
    assert_eq!((sent[0].method, sent[0].path), (Method::Get, "/v1/kv/list"));
    assert_eq!(sent[0].query, q(&[("scope", Some("x"))]));
    // No keys field: nothing; one that Python could not read: an error.
    let mut io = FakeIo::default();
    let keys = || Action::KvKeys { scope: None };
    assert_eq!(
        run(Verb::State, keys(), vec![reply(200, "{}")], &mut io).0,
        0
    );
    assert!(io.stdout.is_empty());
    for body in [r#"{"keys": 5}"#, r#"{"keys": ["a"]}"#, r#"{"keys": null}"#] {
        let mut io = FakeIo::default();
        assert_eq!(
            run(Verb::State, keys(), vec![reply(200, body)], &mut io).0,
            1,
            "{body}"
        );
    }
}

#[test]
fn cursor_get_and_advance() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Cursor,
        Action::CursorGet {
            name: s("c"),
            scope: None,
        },
        vec![reply(200, r#"{"value": 41, "updatedAt": 1.0}"#)],
        &mut io,
    );
    assert_eq!((code, stdout(&io).as_str()), (0, "41\n"));
    assert_eq!(sent[0].path, "/v1/cursor/get");
    assert_eq!(sent[0].query, q(&[("scope", None), ("name", Some("c"))]));
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Cursor,
        Action::CursorGet {
            name: s("c"),
            scope: None,
        },
        vec![reply(404, r#"{"error": "x"}"#)],
        &mut io,
    );
    assert_eq!(code, 4);
    assert_eq!(io.stderr, ["cursor not set: c"]);

    // advance prints the resulting value, whether or not it moved.
    for (raw, force, body_value, result, printed) in [
        ("5", false, "5", r#"{"value": 5, "advanced": true}"#, "5\n"),
        ("3", false, "3", r#"{"value": 5, "advanced": false}"#, "5\n"),
        ("3", true, "3", r#"{"value": 3, "advanced": true}"#, "3\n"),
        (
            "2026-07-01",
            false,
            "\"2026-07-01\"",
            r#"{"value": "2026-07-01", "advanced": true}"#,
            "2026-07-01\n",
        ),
        (
            "1.5",
            false,
            "1.5",
            r#"{"value": 1.5, "advanced": true}"#,
            "1.5\n",
        ),
    ] {
        let mut io = FakeIo::default();
        let (code, sent) = run(
            Verb::Cursor,
            Action::CursorAdvance {
                name: s("c"),
                value: s(raw),
                force,
                scope: Some(s("global")),
            },
            vec![reply(200, result)],
            &mut io,
        );
        assert_eq!((code, stdout(&io).as_str()), (0, printed), "{raw}");
        assert_eq!(sent[0].path, "/v1/cursor/advance");
        assert_eq!(
            json_body(&sent[0]),
            format!(
                r#"{{"scope": "global", "name": "c", "value": {body_value}, "force": {force}}}"#
            )
        );
    }
    // A 409 (incomparable values) is an error.
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Cursor,
        Action::CursorAdvance {
            name: s("c"),
            value: s("x"),
            force: false,
            scope: None,
        },
        vec![reply(
            409,
            r#"{"error":"cursor 'c' holds a int but was advanced with a str; advance it with a comparable value or pass force"}"#,
        )],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(
        io.stderr,
        [
            "cronstable cursor: cursor 'c' holds a int but was advanced with a str; advance it \
          with a comparable value or pass force"
        ]
    );
}

/// `_typed_value` against CPython 3.11 (`json.dumps(_typed_value(raw))`).
#[test]
fn cursor_values_are_typed_as_python_types_them() {
    let cases = [
        ("7", "7"),
        (" 007 ", "7"),
        ("-0", "0"),
        ("+3", "3"),
        ("1_000", "1000"),
        ("١٢", "12"),
        (
            "123456789012345678901234567890",
            "123456789012345678901234567890",
        ),
        ("1.5", "1.5"),
        ("1e3", "1000.0"),
        (".5", "0.5"),
        ("1_0.5", "10.5"),
        ("inf", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("nan", "NaN"),
        ("1e400", "Infinity"),
        ("abc", "\"abc\""),
        ("2026-07-01T00:00:00", "\"2026-07-01T00:00:00\""),
        ("0x10", "\"0x10\""),
        ("1__0", "\"1__0\""),
        ("", "\"\""),
        (" ", "\" \""),
        ("é", "\"\\u00e9\""),
    ];
    for (raw, want) in cases {
        assert_eq!(typed_value(&s(raw)).dumps(Dumps::SPACED), want, "{raw:?}");
    }
    // More digits than int() converts: float() reads them.
    let long = "9".repeat(4301);
    assert_eq!(typed_value(&s(&long)).dumps(Dumps::SPACED), "Infinity");
    // A surrogate-escaped argument stays a string.
    assert_eq!(
        typed_value(&PyString::from_code_points([0x31, 0xdcff])).dumps(Dumps::SPACED),
        "\"1\\udcff\""
    );
}

#[test]
fn idempotent_claims_exit_0_fresh_and_5_duplicate() {
    let claim = |ttl: f64| Action::IdemClaim {
        key: s("k"),
        ttl,
        scope: None,
    };
    for (body, code) in [
        (r#"{"fresh": true, "claimedAt": 1.0}"#, 0),
        (r#"{"fresh": false, "claimedAt": 1.0}"#, 5),
        ("{}", 5),
    ] {
        let mut io = FakeIo::default();
        let (got, sent) = run(
            Verb::Idempotent,
            claim(0.0),
            vec![reply(200, body)],
            &mut io,
        );
        assert_eq!(got, code);
        assert!(io.stdout.is_empty() && io.stderr.is_empty());
        assert_eq!(sent[0].path, "/v1/idempotency/claim");
        assert_eq!(
            json_body(&sent[0]),
            r#"{"scope": null, "key": "k", "ttl": 0.0}"#
        );
    }
    let (_, sent) = run(
        Verb::Idempotent,
        claim(60.0),
        vec![reply(200, r#"{"fresh": true}"#)],
        &mut FakeIo::default(),
    );
    assert_eq!(
        json_body(&sent[0]),
        r#"{"scope": null, "key": "k", "ttl": 60.0}"#
    );
    // An outage is 1, never 5.
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Idempotent,
        claim(0.0),
        vec![reply(
            503,
            r#"{"error":"state backend unavailable; the reason is in the cronstable log"}"#,
        )],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(
        io.stderr,
        ["cronstable idempotent: state backend unavailable; the reason is in the cronstable log"]
    );
    // Release: 0 whether or not something was released.
    for body in [r#"{"released": true}"#, r#"{"released": false}"#] {
        let (code, sent) = run(
            Verb::Idempotent,
            Action::IdemRelease {
                key: s("k"),
                scope: Some(s("global")),
            },
            vec![reply(200, body)],
            &mut FakeIo::default(),
        );
        assert_eq!(code, 0);
        assert_eq!(sent[0].path, "/v1/idempotency/release");
        assert_eq!(json_body(&sent[0]), r#"{"scope": "global", "key": "k"}"#);
    }
}

#[test]
fn secrets() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Secret,
        Action::SecretGet { name: s("tok") },
        vec![reply(200, r#"{"value": "s3cr3t"}"#)],
        &mut io,
    );
    assert_eq!((code, stdout(&io).as_str()), (0, "s3cr3t\n"));
    assert_eq!(sent[0].path, "/v1/secret/get");
    assert_eq!(sent[0].query, q(&[("name", Some("tok"))]));
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Secret,
        Action::SecretGet { name: s("nope") },
        vec![reply(
            404,
            r#"{"error": "secret 'nope' is not staged for this run"}"#,
        )],
        &mut io,
    );
    assert_eq!(code, 4);
    assert_eq!(io.stderr, ["secret not staged: nope"]);
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Secret,
        Action::SecretList,
        vec![reply(200, r#"{"names": ["a", "b"]}"#)],
        &mut io,
    );
    assert_eq!((code, stdout(&io).as_str()), (0, "a\nb\n"));
    assert_eq!((sent[0].path, sent[0].query.len()), ("/v1/secret/list", 0));
}

#[test]
fn artifact_put_reads_the_file_or_stdin() {
    let done = || {
        vec![reply(
            200,
            &format!(r#"{{"sha256": "{}", "size": 3}}"#, "ab".repeat(32)),
        )]
    };
    let mut io = FakeIo::default();
    io.files.insert("f.bin".into(), b"\x00\x01\x02".to_vec());
    let (code, sent) = run(
        Verb::Artifact,
        Action::ArtifactPut {
            name: s("a"),
            file: Some("f.bin".into()),
            scope: None,
        },
        done(),
        &mut io,
    );
    assert_eq!(code, 0);
    assert_eq!(stdout(&io), format!("{}\n", "ab".repeat(32)));
    assert_eq!(
        (sent[0].method, sent[0].path),
        (Method::Post, "/v1/artifact/put")
    );
    assert_eq!(sent[0].query, q(&[("scope", None), ("name", Some("a"))]));
    assert_eq!(sent[0].body, Body::Raw(b"\x00\x01\x02".to_vec()));
    for file in [None, Some(OsString::from("-"))] {
        let mut io = FakeIo {
            stdin: b"from stdin".to_vec(),
            ..FakeIo::default()
        };
        let (_, sent) = run(
            Verb::Artifact,
            Action::ArtifactPut {
                name: s("a"),
                file,
                scope: Some(s("global")),
            },
            done(),
            &mut io,
        );
        assert_eq!(sent[0].body, Body::Raw(b"from stdin".to_vec()));
    }
    // An unreadable file: Python's OSError text, nothing sent.
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Artifact,
        Action::ArtifactPut {
            name: s("a"),
            file: Some("missing.txt".into()),
            scope: None,
        },
        done(),
        &mut io,
    );
    assert_eq!(code, 1);
    assert!(sent.is_empty());
    assert_eq!(
        io.stderr,
        [
            "cronstable artifact: cannot read missing.txt: [Errno 2] No such file or directory: \
          'missing.txt'"
        ]
    );
    // No sha256 in the reply prints an empty line.
    let mut io = FakeIo::default();
    run(
        Verb::Artifact,
        Action::ArtifactPut {
            name: s("a"),
            file: None,
            scope: None,
        },
        vec![reply(200, "{}")],
        &mut io,
    );
    assert_eq!(stdout(&io), "\n");
}

#[test]
fn artifact_get_writes_raw_bytes() {
    let get = |output: Option<&str>| Action::ArtifactGet {
        name: s("a"),
        output: output.map(OsString::from),
        scope: None,
    };
    let payload = Reply {
        status: 200,
        body: b"\xffraw\n\x00".to_vec(),
    };
    for output in [None, Some("-")] {
        let mut io = FakeIo::default();
        let (code, sent) = run(
            Verb::Artifact,
            get(output),
            vec![Ok(payload.clone())],
            &mut io,
        );
        assert_eq!(code, 0);
        assert_eq!(io.stdout, b"\xffraw\n\x00");
        assert_eq!(
            (sent[0].method, sent[0].path),
            (Method::Get, "/v1/artifact/get")
        );
        assert_eq!(sent[0].query, q(&[("scope", None), ("name", Some("a"))]));
    }
    let mut io = FakeIo::default();
    assert_eq!(
        run(
            Verb::Artifact,
            get(Some("out")),
            vec![Ok(payload.clone())],
            &mut io
        )
        .0,
        0
    );
    assert_eq!(io.files[&OsString::from("out")], b"\xffraw\n\x00");
    assert!(io.stdout.is_empty());

    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Artifact,
        get(Some("out")),
        vec![reply(404, "{}")],
        &mut io,
    );
    assert_eq!(code, 4);
    assert_eq!(io.stderr, ["artifact not found: a"]);
    assert!(io.files.is_empty());

    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Artifact,
        get(None),
        vec![reply(
            410,
            r#"{"error":"artifact 'a' record survives but its payload blob is gone (garbage collected)"}"#,
        )],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(
        io.stderr,
        [
            "cronstable artifact: artifact 'a' record survives but its payload blob is gone \
          (garbage collected)"
        ]
    );
    assert!(io.stdout.is_empty());

    let mut io = FakeIo {
        unwritable: true,
        ..FakeIo::default()
    };
    assert_eq!(
        run(
            Verb::Artifact,
            get(Some("out")),
            vec![Ok(payload.clone())],
            &mut io
        )
        .0,
        1
    );
    assert_eq!(
        io.stderr,
        ["cronstable artifact: cannot write out: [Errno 13] Permission denied: 'out'"]
    );
    let mut io = FakeIo::default();
    assert_eq!(
        run(
            Verb::Artifact,
            get(Some("full")),
            vec![Ok(payload)],
            &mut io
        )
        .0,
        1
    );
    assert_eq!(
        io.stderr,
        ["cronstable artifact: cannot write full: [Errno 28] No space left on device"]
    );
}

#[test]
fn artifact_list_prints_names() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Artifact,
        Action::ArtifactList { scope: None },
        vec![reply(
            200,
            r#"{"scope": "j", "artifacts": [{"name": "a", "sha256": "x", "size": 1, "at": 1.0}, {"name": "b/c"}]}"#,
        )],
        &mut io,
    );
    assert_eq!((code, stdout(&io).as_str()), (0, "a\nb/c\n"));
    assert_eq!(sent[0].path, "/v1/artifact/list");
    assert_eq!(sent[0].query, q(&[("scope", None)]));
}

fn spec(wait: bool) -> LockSpec {
    LockSpec {
        name: s("L"),
        permits: "1".to_owned(),
        wait,
        timeout: 2.5,
        ttl: None,
        scope: None,
    }
}

const ACQUIRED: &str = r#"{"acquired": true, "token": "0123456789abcdef0123456789abcdef", "slot": 0, "fence": 3, "ttl": 30.0}"#;

#[test]
fn lock_acquire_prints_the_hold_token() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Lock,
        Action::LockAcquire(spec(false)),
        vec![reply(200, ACQUIRED)],
        &mut io,
    );
    assert_eq!(
        (code, stdout(&io).as_str()),
        (0, "0123456789abcdef0123456789abcdef\n")
    );
    assert_eq!(sent[0].path, "/v1/lock/acquire");
    assert_eq!(
        json_body(&sent[0]),
        r#"{"scope": null, "name": "L", "permits": 1, "wait": false, "blockSeconds": 2.5, "ttl": null}"#
    );
    assert_eq!(sent[0].timeout, 30.0);
    // --wait: the socket waits --timeout plus the margin.
    let (_, sent) = run(
        Verb::Lock,
        Action::LockAcquire(LockSpec {
            ttl: Some(10.0),
            permits: "3".to_owned(),
            scope: Some(s("global")),
            ..spec(true)
        }),
        vec![reply(200, ACQUIRED)],
        &mut FakeIo::default(),
    );
    assert_eq!(sent[0].timeout, 32.5);
    assert_eq!(
        json_body(&sent[0]),
        r#"{"scope": "global", "name": "L", "permits": 3, "wait": true, "blockSeconds": 2.5, "ttl": 10.0}"#
    );
    for body in [
        r#"{"acquired": false}"#,
        r#"{"acquired": false, "runEnded": true}"#,
    ] {
        let mut io = FakeIo::default();
        let (code, _) = run(
            Verb::Lock,
            Action::LockAcquire(spec(false)),
            vec![reply(200, body)],
            &mut io,
        );
        assert_eq!(code, 3);
        assert_eq!(io.stderr, ["lock not acquired: L"]);
        assert!(io.stdout.is_empty());
    }
    let mut io = FakeIo::default();
    run(
        Verb::Lock,
        Action::LockAcquire(spec(false)),
        vec![reply(200, r#"{"acquired": true}"#)],
        &mut io,
    );
    assert_eq!(stdout(&io), "None\n");
}

#[test]
fn lock_release_sends_the_token() {
    for body in [r#"{"released": true}"#, r#"{"released": false}"#] {
        let (code, sent) = run(
            Verb::Lock,
            Action::LockRelease { token: s("tok") },
            vec![reply(200, body)],
            &mut FakeIo::default(),
        );
        assert_eq!(code, 0);
        assert_eq!(sent[0].path, "/v1/lock/release");
        assert_eq!(json_body(&sent[0]), r#"{"token": "tok"}"#);
    }
}

fn lock_run(command: &[&str]) -> Action {
    Action::LockRun {
        spec: spec(false),
        command: command.iter().map(OsString::from).collect(),
    }
}

#[test]
fn lock_run_holds_the_lock_around_the_command() {
    let mut io = FakeIo {
        child: Some(Ok(7)),
        ..FakeIo::default()
    };
    let (code, sent) = run(
        Verb::Lock,
        lock_run(&["sh", "-c", "exit 7"]),
        vec![reply(200, ACQUIRED), reply(200, r#"{"released": true}"#)],
        &mut io,
    );
    assert_eq!(code, 7);
    assert_eq!(
        io.ran,
        [vec![OsString::from("sh"), "-c".into(), "exit 7".into()]]
    );
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].path, "/v1/lock/acquire");
    assert_eq!(sent[1].path, "/v1/lock/release");
    assert_eq!(
        json_body(&sent[1]),
        r#"{"token": "0123456789abcdef0123456789abcdef"}"#
    );
}

#[test]
fn lock_run_exits_256_minus_the_signal_that_ended_the_command() {
    for (returncode, status) in [(-9, 247), (-15, 241), (0, 0), (255, 255)] {
        let mut io = FakeIo {
            child: Some(Ok(returncode)),
            ..FakeIo::default()
        };
        let (code, _) = run(
            Verb::Lock,
            lock_run(&["x"]),
            vec![reply(200, ACQUIRED), reply(200, "{}")],
            &mut io,
        );
        assert_eq!(code, status, "{returncode}");
    }
}

#[test]
fn lock_run_refuses_an_empty_command_before_acquiring() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Lock,
        lock_run(&[]),
        vec![reply(200, ACQUIRED)],
        &mut io,
    );
    assert_eq!(code, 1);
    assert!(sent.is_empty());
    assert_eq!(
        io.stderr,
        ["cronstable lock: lock run needs a command to run (put it after `--`)"]
    );
}

#[test]
fn lock_run_without_the_lock_runs_nothing() {
    let mut io = FakeIo::default();
    let (code, sent) = run(
        Verb::Lock,
        lock_run(&["x"]),
        vec![reply(200, r#"{"acquired": false}"#)],
        &mut io,
    );
    assert_eq!(code, 3);
    assert_eq!(sent.len(), 1);
    assert!(io.ran.is_empty());
    assert_eq!(io.stderr, ["lock not acquired: L"]);
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::Lock,
        lock_run(&["x"]),
        vec![reply(401, r#"{"error": "401: Unauthorized"}"#)],
        &mut io,
    );
    assert_eq!(code, 1);
    assert!(io.ran.is_empty());
    assert_eq!(io.stderr, ["cronstable lock: 401: Unauthorized"]);
}

#[test]
fn lock_run_releases_even_when_the_command_cannot_start() {
    let mut io = FakeIo {
        child: Some(Err(std::io::Error::from_raw_os_error(libc::ENOENT))),
        ..FakeIo::default()
    };
    let (code, sent) = run(
        Verb::Lock,
        lock_run(&["nosuchcmd", "a"]),
        vec![reply(200, ACQUIRED), reply(200, "{}")],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].path, "/v1/lock/release");
    assert_eq!(
        io.stderr,
        [
            "cronstable lock: cannot run 'nosuchcmd': [Errno 2] No such file or directory: \
          'nosuchcmd'"
        ]
    );
}

#[test]
fn lock_run_ignores_a_failed_release_and_skips_it_without_a_token() {
    let mut io = FakeIo {
        child: Some(Ok(3)),
        ..FakeIo::default()
    };
    let (code, sent) = run(
        Verb::Lock,
        lock_run(&["x"]),
        vec![
            reply(200, ACQUIRED),
            Err(CliError("cannot reach it".to_owned())),
        ],
        &mut io,
    );
    assert_eq!(code, 3);
    assert_eq!(sent.len(), 2);
    assert!(io.stderr.is_empty());
    let (code, sent) = run(
        Verb::Lock,
        lock_run(&["x"]),
        vec![reply(200, r#"{"acquired": true}"#)],
        &mut FakeIo::default(),
    );
    assert_eq!((code, sent.len()), (0, 1));
}

fn xcom_io() -> FakeIo {
    let mut io = FakeIo::default();
    io.env
        .insert(ENV_DAG_XCOM_SCOPE.to_owned(), "dagxcom/d/r1".to_owned());
    io.env
        .insert(ENV_DAG_TASKKEY.to_owned(), "extract".to_owned());
    io
}

#[test]
fn xcom_is_artifacts_in_the_run_s_scope() {
    let mut io = xcom_io();
    io.stdin = b"out".to_vec();
    let (code, sent) = run(
        Verb::Xcom,
        Action::XcomPush {
            key: s("rows"),
            file: Some("".into()),
        },
        vec![reply(200, r#"{"sha256": "x", "size": 3}"#)],
        &mut io,
    );
    assert_eq!(code, 0);
    assert!(io.stdout.is_empty());
    assert_eq!(sent[0].path, "/v1/artifact/put");
    assert_eq!(
        sent[0].query,
        q(&[
            ("scope", Some("dagxcom/d/r1")),
            ("name", Some("extract/rows"))
        ])
    );
    assert_eq!(sent[0].body, Body::Raw(b"out".to_vec()));

    let mut io = xcom_io();
    let (code, sent) = run(
        Verb::Xcom,
        Action::XcomPull {
            task: s("load"),
            key: s("rows"),
            map_index: Some("2".to_owned()),
            output: None,
        },
        vec![Ok(Reply {
            status: 200,
            body: b"data".to_vec(),
        })],
        &mut io,
    );
    assert_eq!((code, io.stdout.as_slice()), (0, &b"data"[..]));
    assert_eq!(
        sent[0].query,
        q(&[
            ("scope", Some("dagxcom/d/r1")),
            ("name", Some("load#2/rows"))
        ])
    );

    let mut io = xcom_io();
    let (code, _) = run(
        Verb::Xcom,
        Action::XcomPull {
            task: s("load"),
            key: s("rows"),
            map_index: None,
            output: None,
        },
        vec![reply(404, "{}")],
        &mut io,
    );
    assert_eq!(code, 4);
    assert_eq!(io.stderr, ["no xcom 'rows' from task 'load'"]);

    let mut io = xcom_io();
    let (code, _) = run(
        Verb::Xcom,
        Action::XcomList,
        vec![reply(200, r#"{"artifacts": [{"name": "extract/rows"}]}"#)],
        &mut io,
    );
    assert_eq!((code, stdout(&io).as_str()), (0, "extract/rows\n"));
}

#[test]
fn xcom_needs_its_workflow_context() {
    let mut io = FakeIo::default();
    let (code, sent) = run(Verb::Xcom, Action::XcomList, vec![], &mut io);
    assert_eq!(code, 1);
    assert!(sent.is_empty());
    assert_eq!(
        io.stderr,
        [
            "cronstable xcom: workflow task context is unavailable: CRONSTABLE_DAG_XCOM_SCOPE is \
          not set. Run xcom inside a task started by a cronstable workflow to share outputs \
          with other tasks in that run."
        ]
    );
    let mut io = xcom_io();
    io.env.remove(ENV_DAG_TASKKEY);
    let (code, _) = run(
        Verb::Xcom,
        Action::XcomPush {
            key: s("k"),
            file: None,
        },
        vec![],
        &mut io,
    );
    assert_eq!(code, 1);
    assert_eq!(
        io.stderr,
        ["cronstable xcom: cannot determine this task's id (CRONSTABLE_DAG_TASKKEY unset)"]
    );
}

#[test]
fn os_errors_read_like_python() {
    let enoent = std::io::Error::from_raw_os_error(libc::ENOENT);
    assert_eq!(
        os_error_text(&enoent, None),
        "[Errno 2] No such file or directory"
    );
    assert_eq!(
        os_error_text(&enoent, Some(&s("it's"))),
        "[Errno 2] No such file or directory: \"it's\""
    );
    let custom = std::io::Error::other("custom");
    assert_eq!(os_error_text(&custom, None), "custom");
}

#[test]
fn names_with_surrogates_show_backslash_escaped_on_stderr() {
    let mut io = FakeIo::default();
    let (code, _) = run(
        Verb::State,
        Action::KvDelete {
            key: PyString::from_code_points([0x6b, 0xdcff]),
            scope: None,
        },
        vec![reply(200, r#"{"existed": true}"#)],
        &mut io,
    );
    assert_eq!(code, 0);
    let mut io = FakeIo::default();
    let (_, sent) = run(
        Verb::State,
        Action::KvSet {
            key: PyString::from_code_points([0x6b, 0xdcff]),
            value: s("v"),
            json: false,
            scope: None,
        },
        vec![reply(200, "{}")],
        &mut io,
    );
    // In a JSON body the surrogate travels escaped, as Python sends it.
    assert_eq!(
        json_body(&sent[0]),
        r#"{"scope": null, "key": "k\udcff", "value": "v"}"#
    );
}
