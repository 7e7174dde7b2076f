//! Every job command's flags, parsed as the original parses them.

use super::*;
use clap::Parser;

/// The job commands under a root like the binary's (the real root lives
/// in `daemon::args`, above this module).
#[derive(Parser, Debug)]
#[command(name = "cronstable")]
struct Root {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    State {
        #[command(subcommand)]
        action: StateKv,
    },
    Cursor(CursorArgs),
    Lock(LockArgs),
    Artifact(ArtifactArgs),
    Idempotent(IdempotentArgs),
    Secret(SecretArgs),
    Xcom(XcomArgs),
}

#[derive(clap::Subcommand, Debug)]
enum StateKv {
    Get(KvGetArgs),
    Set(KvSetArgs),
    Delete(KvGetArgs),
    Keys(KvKeysArgs),
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Parses a command line as `main` does: split at `--`, parse, apply
/// the trailing words. Err is clap's message or the `--` usage error.
fn parse_os(args: Vec<OsString>) -> Result<Invocation, String> {
    let (head, tail) = split_at_dash_dash(args);
    let root = Root::try_parse_from(std::iter::once(OsString::from("cronstable")).chain(head))
        .map_err(|e| e.to_string())?;
    let invocation = match &root.command {
        Command::State { action } => match action {
            StateKv::Get(a) => KvAction::Get(a).invocation(),
            StateKv::Set(a) => KvAction::Set(a).invocation(),
            StateKv::Delete(a) => KvAction::Delete(a).invocation(),
            StateKv::Keys(a) => KvAction::Keys(a).invocation(),
        },
        Command::Cursor(a) => a.invocation(),
        Command::Lock(a) => a.invocation(),
        Command::Artifact(a) => a.invocation(),
        Command::Idempotent(a) => a.invocation(),
        Command::Secret(a) => a.invocation(),
        Command::Xcom(a) => a.invocation(),
    };
    invocation.with_trailing_command(tail)
}

fn parse(args: &[&str]) -> Result<Invocation, String> {
    parse_os(os(args))
}

fn action(args: &[&str]) -> Action {
    parse(args)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
        .action
        .unwrap_or_else(|| panic!("{args:?}: no action"))
}

fn s(text: &str) -> PyString {
    PyString::from(text)
}

fn lock(name: &str) -> LockSpec {
    LockSpec {
        name: s(name),
        permits: "1".to_owned(),
        wait: false,
        timeout: 0.0,
        ttl: None,
        scope: None,
    }
}

#[test]
fn split_at_the_first_dash_dash_only() {
    assert_eq!(split_at_dash_dash(os(&["a", "b"])), (os(&["a", "b"]), None));
    assert_eq!(
        split_at_dash_dash(os(&["a", "--", "b", "--", "c"])),
        (os(&["a"]), Some(os(&["b", "--", "c"])))
    );
    assert_eq!(
        split_at_dash_dash(os(&["--"])),
        (Vec::new(), Some(Vec::new()))
    );
    assert_eq!(
        split_at_dash_dash(os(&["x", "--"])),
        (os(&["x"]), Some(Vec::new()))
    );
    // `---` and `--x` are not the separator.
    assert_eq!(
        split_at_dash_dash(os(&["---", "--x"])),
        (os(&["---", "--x"]), None)
    );
}

#[test]
fn state_actions() {
    let inv = parse(&["state", "get", "k"]).unwrap();
    assert_eq!(inv.verb, Verb::State);
    assert_eq!(
        inv.action,
        Some(Action::KvGet {
            key: s("k"),
            scope: None
        })
    );
    assert_eq!(
        action(&["state", "set", "k", "v w"]),
        Action::KvSet {
            key: s("k"),
            value: s("v w"),
            json: false,
            scope: None
        }
    );
    assert_eq!(
        action(&["state", "set", "--json", "k", "[1]", "--global"]),
        Action::KvSet {
            key: s("k"),
            value: s("[1]"),
            json: true,
            scope: Some(s("global"))
        }
    );
    // A value that looks like a negative number is a value.
    assert_eq!(
        action(&["state", "set", "k", "-5"]),
        Action::KvSet {
            key: s("k"),
            value: s("-5"),
            json: false,
            scope: None
        }
    );
    assert_eq!(
        action(&["state", "delete", "k", "--scope", "shared"]),
        Action::KvDelete {
            key: s("k"),
            scope: Some(s("shared"))
        }
    );
    assert_eq!(action(&["state", "keys"]), Action::KvKeys { scope: None });
    assert!(parse(&["state", "get"]).is_err());
    assert!(parse(&["state", "set", "k"]).is_err());
    assert!(parse(&["state", "keys", "extra"]).is_err());
}

#[test]
fn scope_flags_are_exclusive_and_argparse_like() {
    let scope = |args: &[&str]| match action(args) {
        Action::KvKeys { scope } => scope,
        other => panic!("{other:?}"),
    };
    assert_eq!(scope(&["state", "keys", "--global"]), Some(s("global")));
    assert_eq!(scope(&["state", "keys", "--scope", "a"]), Some(s("a")));
    assert_eq!(scope(&["state", "keys", "--scope=a b"]), Some(s("a b")));
    // An empty scope is sent as given (the server reads it as the default).
    assert_eq!(scope(&["state", "keys", "--scope", ""]), Some(s("")));
    // The last of a repeated option wins; an unambiguous prefix works.
    assert_eq!(
        scope(&["state", "keys", "--scope", "a", "--scope", "b"]),
        Some(s("b"))
    );
    assert_eq!(scope(&["state", "keys", "--glob"]), Some(s("global")));
    assert_eq!(scope(&["state", "keys", "--sco", "x"]), Some(s("x")));
    let err = parse(&["state", "keys", "--scope", "a", "--global"]).unwrap_err();
    assert!(err.contains("cannot be used with"), "{err}");
    assert!(parse(&["state", "keys", "--global", "--scope", "a"]).is_err());
    // The secret and release verbs take no scope.
    assert!(parse(&["secret", "get", "n", "--global"]).is_err());
    assert!(parse(&["lock", "release", "t", "--global"]).is_err());
}

#[test]
fn cursor_actions() {
    assert_eq!(parse(&["cursor"]).unwrap().action, None);
    assert_eq!(parse(&["cursor"]).unwrap().verb, Verb::Cursor);
    assert_eq!(
        action(&["cursor", "get", "c"]),
        Action::CursorGet {
            name: s("c"),
            scope: None
        }
    );
    assert_eq!(
        action(&["cursor", "advance", "c", "-1.5", "--force", "--scope", "x"]),
        Action::CursorAdvance {
            name: s("c"),
            value: s("-1.5"),
            force: true,
            scope: Some(s("x"))
        }
    );
    assert!(parse(&["cursor", "advance", "c"]).is_err());
    assert!(parse(&["cursor", "rewind", "c"]).is_err());
}

#[test]
fn lock_acquire_flags_read_as_python_does() {
    assert_eq!(
        action(&["lock", "acquire", "L"]),
        Action::LockAcquire(lock("L"))
    );
    assert_eq!(
        action(&[
            "lock",
            "acquire",
            "L",
            "--permits",
            "3",
            "--wait",
            "--timeout",
            "2.5",
            "--ttl",
            "10",
            "--global"
        ]),
        Action::LockAcquire(LockSpec {
            permits: "3".to_owned(),
            wait: true,
            timeout: 2.5,
            ttl: Some(10.0),
            scope: Some(s("global")),
            ..lock("L")
        })
    );
    let spec = |args: &[&str]| match action(args) {
        Action::LockAcquire(spec) => spec,
        other => panic!("{other:?}"),
    };
    // int(): whitespace, underscores, leading zeros, any size.
    assert_eq!(
        spec(&["lock", "acquire", "L", "--permits", " 007 "]).permits,
        "7"
    );
    assert_eq!(
        spec(&["lock", "acquire", "L", "--permits", "1_000"]).permits,
        "1000"
    );
    assert_eq!(
        spec(&["lock", "acquire", "L", "--permits", "-2"]).permits,
        "-2"
    );
    assert_eq!(
        spec(&["lock", "acquire", "L", "--permits", "99999999999999999999"]).permits,
        "99999999999999999999"
    );
    // A negative wait is no wait.
    assert_eq!(
        spec(&["lock", "acquire", "L", "--timeout", "-5"]).timeout,
        0.0
    );
    assert_eq!(
        spec(&["lock", "acquire", "L", "--timeout", "1e1"]).timeout,
        10.0
    );
    // --ttl is a plain float: inf and nan pass (the server refuses them).
    assert_eq!(
        spec(&["lock", "acquire", "L", "--ttl", "inf"]).ttl,
        Some(f64::INFINITY)
    );
    assert!(spec(&["lock", "acquire", "L", "--ttl", "nan"])
        .ttl
        .is_some_and(f64::is_nan));
    for (flag, value, message) in [
        ("--permits", "0x3", "invalid int value: '0x3'"),
        ("--permits", "1.5", "invalid int value: '1.5'"),
        ("--ttl", "abc", "invalid float value: 'abc'"),
        (
            "--timeout",
            "abc",
            "SECONDS must be a finite number, not 'abc'",
        ),
        (
            "--timeout",
            "nan",
            "SECONDS must be a finite number, not 'nan'",
        ),
        (
            "--timeout",
            "inf",
            "SECONDS must be a finite number, not 'inf'",
        ),
    ] {
        let err = parse(&["lock", "acquire", "L", flag, value]).unwrap_err();
        assert!(err.contains(message), "{flag} {value}: {err}");
    }
    // A flag-like word is not a value (argparse: "expected one argument").
    assert!(parse(&["lock", "acquire", "L", "--timeout", "-inf"]).is_err());
}

#[test]
fn lock_run_takes_its_command_after_dash_dash() {
    let run = |args: &[&str]| match action(args) {
        Action::LockRun { spec, command } => (spec, command),
        other => panic!("{other:?}"),
    };
    let (spec, command) = run(&["lock", "run", "L", "--wait", "--", "sh", "-c", "exit 7"]);
    assert!(spec.wait);
    assert_eq!(command, os(&["sh", "-c", "exit 7"]));
    // The command's own flags and `--` stay its own.
    let (_, command) = run(&["lock", "run", "L", "--", "cmd", "--wait", "--", "x"]);
    assert_eq!(command, os(&["cmd", "--wait", "--", "x"]));
    // Without `--`, plain words work; with it, the words after it win.
    assert_eq!(
        run(&["lock", "run", "L", "echo", "hi"]).1,
        os(&["echo", "hi"])
    );
    assert_eq!(
        run(&["lock", "run", "L", "echo", "--", "true"]).1,
        os(&["true"])
    );
    // No command: refused when run, not here.
    assert_eq!(run(&["lock", "run", "L"]).1, Vec::<OsString>::new());
    assert_eq!(run(&["lock", "run", "L", "--"]).1, Vec::<OsString>::new());
    // A flag-like word without `--` is not taken.
    assert!(parse(&["lock", "run", "L", "sh", "-c", "true"]).is_err());
}

#[test]
fn dash_dash_is_refused_before_anything_but_lock_run() {
    for args in [
        &["state", "get", "k", "--", "x"][..],
        &["lock", "acquire", "L", "--", "x"],
        &["lock", "release", "t", "--"],
        &["cursor", "--", "x"],
        &["artifact", "put", "a", "--", "f"],
    ] {
        assert_eq!(parse(args), Err(DASH_DASH_MISPLACED.to_owned()), "{args:?}");
    }
    assert_eq!(
        DASH_DASH_MISPLACED,
        "`--` is only valid before a `lock run` command"
    );
}

#[test]
fn lock_release() {
    assert_eq!(
        action(&["lock", "release", "abc"]),
        Action::LockRelease { token: s("abc") }
    );
    assert_eq!(parse(&["lock"]).unwrap().action, None);
}

#[test]
fn artifact_actions() {
    assert_eq!(
        action(&["artifact", "put", "a", "f.txt"]),
        Action::ArtifactPut {
            name: s("a"),
            file: Some("f.txt".into()),
            scope: None
        }
    );
    assert_eq!(
        action(&["artifact", "put", "a", "-", "--global"]),
        Action::ArtifactPut {
            name: s("a"),
            file: Some("-".into()),
            scope: Some(s("global"))
        }
    );
    assert_eq!(
        action(&["artifact", "put", "a"]),
        Action::ArtifactPut {
            name: s("a"),
            file: None,
            scope: None
        }
    );
    for args in [
        &["artifact", "get", "a", "-o", "out"][..],
        &["artifact", "get", "a", "--output", "out"],
        &["artifact", "get", "a", "--output=out"],
        &["artifact", "get", "a", "-oout"],
        &["artifact", "get", "a", "--out", "out"],
    ] {
        assert_eq!(
            action(args),
            Action::ArtifactGet {
                name: s("a"),
                output: Some("out".into()),
                scope: None
            },
            "{args:?}"
        );
    }
    assert_eq!(
        action(&["artifact", "list", "--scope", "x"]),
        Action::ArtifactList {
            scope: Some(s("x"))
        }
    );
    assert_eq!(parse(&["artifact"]).unwrap().action, None);
}

#[test]
fn idempotent_claims_or_releases() {
    let inv = parse(&["idempotent", "k"]).unwrap();
    assert_eq!(inv.verb, Verb::Idempotent);
    assert_eq!(
        inv.action,
        Some(Action::IdemClaim {
            key: s("k"),
            ttl: 0.0,
            scope: None
        })
    );
    assert_eq!(
        action(&["idempotent", "k", "--ttl", "60", "--global"]),
        Action::IdemClaim {
            key: s("k"),
            ttl: 60.0,
            scope: Some(s("global"))
        }
    );
    assert_eq!(
        action(&["idempotent", "--release", "k", "--ttl", "5"]),
        Action::IdemRelease {
            key: s("k"),
            scope: None
        }
    );
    assert!(parse(&["idempotent"]).is_err());
}

#[test]
fn secret_and_xcom_actions() {
    assert_eq!(
        action(&["secret", "get", "tok"]),
        Action::SecretGet { name: s("tok") }
    );
    assert_eq!(action(&["secret", "list"]), Action::SecretList);
    assert_eq!(parse(&["secret"]).unwrap().action, None);
    assert_eq!(
        action(&["xcom", "push", "--key", "k", "f"]),
        Action::XcomPush {
            key: s("k"),
            file: Some("f".into())
        }
    );
    assert_eq!(
        action(&[
            "xcom",
            "pull",
            "--task",
            "t",
            "--key",
            "k",
            "--map-index",
            "007",
            "-o",
            "f"
        ]),
        Action::XcomPull {
            task: s("t"),
            key: s("k"),
            map_index: Some("7".to_owned()),
            output: Some("f".into())
        }
    );
    assert_eq!(action(&["xcom", "list"]), Action::XcomList);
    assert!(parse(&["xcom", "push", "f"]).is_err());
    assert!(parse(&["xcom", "pull", "--key", "k"]).is_err());
}

#[cfg(unix)]
#[test]
fn arguments_that_are_not_utf8_are_kept_surrogate_escaped() {
    let raw = crate::platform::os_string_from_bytes(b"k\xff".to_vec());
    let inv = parse_os(vec!["state".into(), "get".into(), raw]).unwrap();
    assert_eq!(
        inv.action,
        Some(Action::KvGet {
            key: PyString::from_code_points([0x6b, 0xdcff]),
            scope: None
        })
    );
}
