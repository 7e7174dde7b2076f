//! What each job command sends and how it reads the reply (the original's
//! `jobcli.py` handlers), over two seams: a [`Transport`] that sends one
//! request, and an [`Io`] for the process's side (stdin/stdout/stderr,
//! files, the environment, the `lock run` child). Both are traits so every
//! verb's requests, outputs and exit codes are unit-tested with fakes.

pub use super::model::*;
use crate::pyjson::{self, float_of_text, int_of_text, Dumps, PyDict, PyJson, PyString};
use std::ffi::OsStr;

/// How deep `json.loads` lets the original client nest arrays and
/// objects: Python's recursion limit (1000 frames), less the few the
/// CLI's own calls have taken when it parses.
const JSON_DEPTH: usize = 989;

/// Runs one parsed command; returns its exit code. A failure is reported
/// on stderr as `cronstable {command}: {message}` with exit 1; a missing
/// action as `cronstable {command}: no action given (see --help)`, exit 2.
pub fn dispatch(verb: Verb, action: Option<&Action>, t: &mut dyn Transport, io: &mut dyn Io) -> u8 {
    let Some(action) = action else {
        io.stderr(&format!(
            "cronstable {}: no action given (see --help)",
            verb.name()
        ));
        return EXIT_USAGE;
    };
    match run_action(action, t, io) {
        Ok(code) => code,
        Err(err) => {
            io.stderr(&format!("cronstable {}: {}", verb.name(), err.0));
            EXIT_ERROR
        }
    }
}

/// A reply body as Python's `_parse_body` reads it: always an object
/// (unparseable → `{}`, any other JSON value `v` → `{"value": v}`).
pub fn parse_body(body: &[u8]) -> PyJson {
    if body.is_empty() {
        return PyJson::Dict(PyDict::new());
    }
    match loads_bytes(body) {
        Some(dict @ PyJson::Dict(_)) => dict,
        Some(other) => PyJson::object([("value", other)]),
        None => PyJson::Dict(PyDict::new()),
    }
}

/// Python's `json.loads(body)` for a `bytes` reply: UTF-8 (a leading BOM
/// dropped, as `utf-8-sig` does); None when the bytes do not decode or do
/// not parse. (Python would also detect UTF-16/32 by their NUL bytes; no
/// server sends those, and here they read as unparseable.)
fn loads_bytes(body: &[u8]) -> Option<PyJson> {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let text = std::str::from_utf8(body).ok()?;
    pyjson::loads_with_depth(text, JSON_DEPTH).ok()
}

/// The body of a 2xx reply, or the endpoint's error: its `error` field
/// when truthy, else `the state endpoint returned HTTP {status}`.
pub fn ok(status: u16, data: PyJson) -> Result<PyJson, CliError> {
    if (200..300).contains(&status) {
        return Ok(data);
    }
    match data.get("error") {
        Some(err) if err.is_truthy() => Err(CliError(err.py_str().backslashreplace())),
        _ => Err(CliError(format!(
            "the state endpoint returned HTTP {status}"
        ))),
    }
}

/// What `_emit` prints: a string as it is, anything else (a missing value
/// is `None`) as `json.dumps`, then a newline.
pub fn emit(value: Option<&PyJson>) -> Vec<u8> {
    let mut out = match value {
        Some(PyJson::Str(s)) => s.to_os_bytes(),
        Some(other) => other.dumps(Dumps::SPACED).into_bytes(),
        None => b"null".to_vec(),
    };
    out.push(b'\n');
    out
}

/// A cursor value as `_typed_value` reads it: Python's `int()`, else
/// `float()`, else the string itself.
pub fn typed_value(raw: &PyString) -> PyJson {
    if let Some(text) = raw.as_str() {
        if let Ok(int) = int_of_text(text) {
            return PyJson::int_from_decimal(&int);
        }
        if let Some(x) = float_of_text(text) {
            return PyJson::Float(x);
        }
    }
    PyJson::Str(raw.clone())
}

/// Python's `str(exception)` for an `OSError`: `[Errno N] text`, with
/// `: 'filename'` when the failing call named a file.
pub fn os_error_text(err: &std::io::Error, filename: Option<&PyString>) -> String {
    let Some(code) = err.raw_os_error() else {
        return err.to_string();
    };
    let full = std::io::Error::from_raw_os_error(code).to_string();
    let suffix = format!(" (os error {code})");
    let text = full.strip_suffix(&suffix).unwrap_or(&full);
    match filename {
        Some(name) => format!("[Errno {code}] {text}: {}", name.repr()),
        None => format!("[Errno {code}] {text}"),
    }
}

/// The values Python's `for x in value` yields: a list's items, a dict's
/// keys, a string's characters; None for a value that is not iterable.
fn py_iter(value: &PyJson) -> Option<Vec<PyJson>> {
    match value {
        PyJson::List(items) => Some(items.clone()),
        PyJson::Dict(dict) => Some(dict.keys().map(|k| PyJson::Str(k.clone())).collect()),
        PyJson::Str(s) => Some(
            s.code_points()
                .map(|cp| PyJson::Str(PyString::from_code_points([cp])))
                .collect(),
        ),
        _ => None,
    }
}

fn unexpected_reply() -> CliError {
    CliError("the state endpoint sent a reply this client cannot read".to_owned())
}

/// `for x in data.get(field, [])`: the items (none when the field is
/// missing); a value Python cannot iterate fails as the original would.
fn items(data: &PyJson, field: &str) -> Result<Vec<PyJson>, CliError> {
    match data.get(field) {
        None => Ok(Vec::new()),
        Some(value) => py_iter(value).ok_or_else(unexpected_reply),
    }
}

/// One `str(...)` line per item: the item itself, or its `field` when
/// `field` is given (`entry.get(field)`, which needs an object).
fn lines(items: &[PyJson], field: Option<&str>) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::new();
    for item in items {
        let text = match field {
            None => item.py_str().backslashreplace(),
            Some(f) => match item {
                PyJson::Dict(_) => item
                    .get(f)
                    .unwrap_or(&PyJson::Null)
                    .py_str()
                    .backslashreplace(),
                _ => return Err(unexpected_reply()),
            },
        };
        out.extend_from_slice(text.as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

fn opt(scope: &Option<PyString>) -> PyJson {
    scope.clone().map_or(PyJson::Null, PyJson::Str)
}

fn concat(parts: &[&PyString]) -> PyString {
    let mut out = PyString::default();
    for part in parts {
        out.push(*part);
    }
    out
}

fn write_stdout(io: &mut dyn Io, data: &[u8]) -> Result<(), CliError> {
    io.stdout(data).map_err(|e| {
        CliError(format!(
            "cannot write to stdout: {}",
            os_error_text(&e, None)
        ))
    })
}

/// The payload of `artifact put` / `xcom push`: stdin when `stdin` says
/// so for `file`, else the file.
fn read_input(
    io: &mut dyn Io,
    file: Option<&OsStr>,
    stdin: fn(Option<&OsStr>) -> bool,
) -> Result<Vec<u8>, CliError> {
    match file {
        path if stdin(path) => io
            .read_stdin()
            .map_err(|e| CliError(format!("cannot read stdin: {}", os_error_text(&e, None)))),
        Some(path) => io.read_file(path).map_err(|e| {
            let name = PyString::from_os(path);
            CliError(format!(
                "cannot read {}: {}",
                name.backslashreplace(),
                os_error_text(&e, Some(&name))
            ))
        }),
        None => Ok(Vec::new()),
    }
}

/// Writes a fetched artifact: stdout when `stdout` says so for `output`,
/// else the file.
fn write_output(
    io: &mut dyn Io,
    output: Option<&OsStr>,
    data: &[u8],
    stdout: fn(Option<&OsStr>) -> bool,
) -> Result<(), CliError> {
    match output {
        path if stdout(path) => write_stdout(io, data),
        Some(path) => io.write_file(path, data).map_err(|failure| {
            let name = PyString::from_os(path);
            let detail = match failure {
                WriteFailure::Open(e) => os_error_text(&e, Some(&name)),
                WriteFailure::Write(e) => os_error_text(&e, None),
            };
            CliError(format!(
                "cannot write {}: {detail}",
                name.backslashreplace()
            ))
        }),
        None => write_stdout(io, data),
    }
}

/// `artifact put|get`: `args.file in (None, "-")`.
fn none_or_dash(path: Option<&OsStr>) -> bool {
    path.is_none_or(|p| p == "-")
}

/// `xcom push|pull`: `not path or path == "-"` (an empty name too).
fn falsy_or_dash(path: Option<&OsStr>) -> bool {
    path.is_none_or(|p| p.is_empty() || p == "-")
}

fn not_found(io: &mut dyn Io, message: String) -> Result<u8, CliError> {
    io.stderr(&message);
    Ok(EXIT_NOT_FOUND)
}

/// The `lock acquire` request.
fn lock_request(spec: &LockSpec) -> Request {
    let mut request = Request::post(
        "/v1/lock/acquire",
        PyJson::object([
            ("scope", opt(&spec.scope)),
            ("name", PyJson::Str(spec.name.clone())),
            ("permits", PyJson::int_from_decimal(&spec.permits)),
            ("wait", PyJson::Bool(spec.wait)),
            ("blockSeconds", PyJson::Float(spec.timeout)),
            ("ttl", spec.ttl.map_or(PyJson::Null, PyJson::Float)),
        ]),
    );
    if spec.wait {
        // The server ends a long poll after blockSeconds; the socket
        // waits that plus the usual margin.
        request.timeout = spec.timeout + DEFAULT_TIMEOUT;
    }
    request
}

/// Acquires the lock: whether it was, and the hold token (any JSON value
/// the server sent; None when it sent none).
fn lock_acquire(
    spec: &LockSpec,
    t: &mut dyn Transport,
) -> Result<(bool, Option<PyJson>), CliError> {
    let reply = t.send(lock_request(spec))?;
    let data = ok(reply.status, parse_body(&reply.body))?;
    let acquired = data.get("acquired").is_some_and(PyJson::is_truthy);
    let token = data.get("token").filter(|v| **v != PyJson::Null).cloned();
    Ok((acquired, token))
}

fn lock_release(token: PyJson, t: &mut dyn Transport) -> Result<(), CliError> {
    let reply = t.send(Request::post(
        "/v1/lock/release",
        PyJson::object([("token", token)]),
    ))?;
    ok(reply.status, parse_body(&reply.body)).map(|_| ())
}

fn xcom_scope(io: &dyn Io) -> Result<PyString, CliError> {
    match io.env(ENV_DAG_XCOM_SCOPE) {
        Some(scope) if !scope.is_empty() => Ok(scope),
        _ => Err(CliError(format!(
            "workflow task context is unavailable: {ENV_DAG_XCOM_SCOPE} is not set. Run xcom \
             inside a task started by a cronstable workflow to share outputs with other tasks in \
             that run."
        ))),
    }
}

/// Sends a read of one stored value and prints its `value` (exit 0), or
/// prints `missing` and exits 4 on a 404.
fn print_value(
    t: &mut dyn Transport,
    io: &mut dyn Io,
    request: Request,
    missing: String,
) -> Result<u8, CliError> {
    let reply = t.send(request)?;
    if reply.status == 404 {
        return not_found(io, missing);
    }
    let data = ok(reply.status, parse_body(&reply.body))?;
    write_stdout(io, &emit(data.get("value")))?;
    Ok(0)
}

/// Runs one action; Ok is the exit code.
pub fn run_action(action: &Action, t: &mut dyn Transport, io: &mut dyn Io) -> Result<u8, CliError> {
    match action {
        Action::KvGet { key, scope } => print_value(
            t,
            io,
            Request::get(
                "/v1/kv/get",
                vec![("scope", scope.clone()), ("key", Some(key.clone()))],
            ),
            format!("key not found: {}", key.backslashreplace()),
        ),
        Action::KvSet {
            key,
            value,
            json,
            scope,
        } => {
            let value = if *json {
                pyjson::loads_with_depth(value, JSON_DEPTH).map_err(|e| {
                    CliError(format!("--json was given but VALUE is not valid JSON: {e}"))
                })?
            } else {
                PyJson::Str(value.clone())
            };
            let reply = t.send(Request::post(
                "/v1/kv/set",
                PyJson::object([
                    ("scope", opt(scope)),
                    ("key", PyJson::Str(key.clone())),
                    ("value", value),
                ]),
            ))?;
            ok(reply.status, parse_body(&reply.body))?;
            Ok(0)
        }
        Action::KvDelete { key, scope } => {
            let reply = t.send(Request::post(
                "/v1/kv/delete",
                PyJson::object([("scope", opt(scope)), ("key", PyJson::Str(key.clone()))]),
            ))?;
            let data = ok(reply.status, parse_body(&reply.body))?;
            Ok(if data.get("existed").is_some_and(PyJson::is_truthy) {
                0
            } else {
                EXIT_NOT_FOUND
            })
        }
        Action::KvKeys { scope } => {
            let reply = t.send(Request::get("/v1/kv/list", vec![("scope", scope.clone())]))?;
            let data = ok(reply.status, parse_body(&reply.body))?;
            write_stdout(io, &lines(&items(&data, "keys")?, Some("key"))?)?;
            Ok(0)
        }
        Action::CursorGet { name, scope } => print_value(
            t,
            io,
            Request::get(
                "/v1/cursor/get",
                vec![("scope", scope.clone()), ("name", Some(name.clone()))],
            ),
            format!("cursor not set: {}", name.backslashreplace()),
        ),
        Action::CursorAdvance {
            name,
            value,
            force,
            scope,
        } => {
            let reply = t.send(Request::post(
                "/v1/cursor/advance",
                PyJson::object([
                    ("scope", opt(scope)),
                    ("name", PyJson::Str(name.clone())),
                    ("value", typed_value(value)),
                    ("force", PyJson::Bool(*force)),
                ]),
            ))?;
            let data = ok(reply.status, parse_body(&reply.body))?;
            write_stdout(io, &emit(data.get("value")))?;
            Ok(0)
        }
        Action::IdemClaim { key, ttl, scope } => {
            let reply = t.send(Request::post(
                "/v1/idempotency/claim",
                PyJson::object([
                    ("scope", opt(scope)),
                    ("key", PyJson::Str(key.clone())),
                    ("ttl", PyJson::Float(*ttl)),
                ]),
            ))?;
            let data = ok(reply.status, parse_body(&reply.body))?;
            // 0: this caller won the claim (do the work); 5: a prior
            // caller did. Distinct from 1 so an outage never reads as
            // "already done".
            Ok(if data.get("fresh").is_some_and(PyJson::is_truthy) {
                0
            } else {
                EXIT_DUPLICATE
            })
        }
        Action::IdemRelease { key, scope } => {
            let reply = t.send(Request::post(
                "/v1/idempotency/release",
                PyJson::object([("scope", opt(scope)), ("key", PyJson::Str(key.clone()))]),
            ))?;
            ok(reply.status, parse_body(&reply.body))?;
            Ok(0)
        }
        Action::SecretGet { name } => {
            let reply = t.send(Request::get(
                "/v1/secret/get",
                vec![("name", Some(name.clone()))],
            ))?;
            if reply.status == 404 {
                return not_found(
                    io,
                    format!("secret not staged: {}", name.backslashreplace()),
                );
            }
            let data = ok(reply.status, parse_body(&reply.body))?;
            write_stdout(io, &emit(data.get("value")))?;
            Ok(0)
        }
        Action::SecretList => {
            let reply = t.send(Request::get("/v1/secret/list", Vec::new()))?;
            let data = ok(reply.status, parse_body(&reply.body))?;
            write_stdout(io, &lines(&items(&data, "names")?, None)?)?;
            Ok(0)
        }
        Action::ArtifactPut { name, file, scope } => {
            let payload = read_input(io, file.as_deref(), none_or_dash)?;
            let reply = t.send(artifact_put(scope.clone(), name.clone(), payload))?;
            let data = ok(reply.status, parse_body(&reply.body))?;
            let sha = data
                .get("sha256")
                .map_or(String::new(), |v| v.py_str().backslashreplace());
            write_stdout(io, format!("{sha}\n").as_bytes())?;
            Ok(0)
        }
        Action::ArtifactGet {
            name,
            output,
            scope,
        } => {
            let reply = t.send(artifact_get(scope.clone(), name.clone()))?;
            if reply.status == 404 {
                return not_found(
                    io,
                    format!("artifact not found: {}", name.backslashreplace()),
                );
            }
            ok(reply.status, parse_reply_error(&reply))?;
            write_output(io, output.as_deref(), &reply.body, none_or_dash)?;
            Ok(0)
        }
        Action::ArtifactList { scope } => artifact_list(scope.clone(), t, io),
        Action::LockAcquire(spec) => {
            let (acquired, token) = lock_acquire(spec, t)?;
            if !acquired {
                io.stderr(&format!(
                    "lock not acquired: {}",
                    spec.name.backslashreplace()
                ));
                return Ok(EXIT_NOT_ACQUIRED);
            }
            // The hold token, for a later `cronstable lock release TOKEN`.
            let token = token.unwrap_or(PyJson::Null).py_str().backslashreplace();
            write_stdout(io, format!("{token}\n").as_bytes())?;
            Ok(0)
        }
        Action::LockRelease { token } => {
            lock_release(PyJson::Str(token.clone()), t)?;
            Ok(0)
        }
        Action::LockRun { spec, command } => {
            // A usage mistake must not take (and at once release) the lock.
            let Some(program) = command.first() else {
                return Err(CliError(
                    "lock run needs a command to run (put it after `--`)".to_owned(),
                ));
            };
            let (acquired, token) = lock_acquire(spec, t)?;
            if !acquired {
                io.stderr(&format!(
                    "lock not acquired: {}",
                    spec.name.backslashreplace()
                ));
                return Ok(EXIT_NOT_ACQUIRED);
            }
            let outcome = io.run_child(command);
            // Released whatever happened to the command; the daemon would
            // free it at the end of the run anyway, so a failed release is
            // not an error of the command.
            if let Some(token) = token {
                let _ = lock_release(token, t);
            }
            match outcome {
                // Python's sys.exit(returncode): a status byte, so a
                // command killed by signal N exits 256 - N.
                Ok(code) => Ok((code & 0xff) as u8),
                Err(err) => {
                    let argv0 = PyString::from_os(program);
                    Err(CliError(format!(
                        "cannot run {}: {}",
                        argv0.repr(),
                        os_error_text(&err, Some(&argv0))
                    )))
                }
            }
        }
        Action::XcomPush { key, file } => {
            let scope = xcom_scope(io)?;
            let task = match io.env(ENV_DAG_TASKKEY) {
                Some(task) if !task.is_empty() => task,
                _ => {
                    return Err(CliError(format!(
                        "cannot determine this task's id ({ENV_DAG_TASKKEY} unset)"
                    )))
                }
            };
            let payload = read_input(io, file.as_deref(), falsy_or_dash)?;
            let name = concat(&[&task, &PyString::from("/"), key]);
            let reply = t.send(artifact_put(Some(scope), name, payload))?;
            ok(reply.status, parse_body(&reply.body))?;
            Ok(0)
        }
        Action::XcomPull {
            task,
            key,
            map_index,
            output,
        } => {
            let scope = xcom_scope(io)?;
            let upstream = match map_index {
                Some(index) => concat(&[task, &PyString::from(format!("#{index}"))]),
                None => task.clone(),
            };
            let name = concat(&[&upstream, &PyString::from("/"), key]);
            let reply = t.send(artifact_get(Some(scope), name))?;
            if reply.status == 404 {
                return not_found(
                    io,
                    format!("no xcom {} from task {}", key.repr(), upstream.repr()),
                );
            }
            ok(reply.status, parse_reply_error(&reply))?;
            write_output(io, output.as_deref(), &reply.body, falsy_or_dash)?;
            Ok(0)
        }
        Action::XcomList => {
            let scope = xcom_scope(io)?;
            artifact_list(Some(scope), t, io)
        }
    }
}

/// The body of a reply that is read raw on success (an artifact), parsed
/// only for its error.
fn parse_reply_error(reply: &Reply) -> PyJson {
    if (200..300).contains(&reply.status) {
        PyJson::Dict(PyDict::new())
    } else {
        parse_body(&reply.body)
    }
}

fn artifact_put(scope: Option<PyString>, name: PyString, payload: Vec<u8>) -> Request {
    Request {
        method: Method::Post,
        path: "/v1/artifact/put",
        query: vec![("scope", scope), ("name", Some(name))],
        body: Body::Raw(payload),
        timeout: DEFAULT_TIMEOUT,
    }
}

fn artifact_get(scope: Option<PyString>, name: PyString) -> Request {
    Request::get(
        "/v1/artifact/get",
        vec![("scope", scope), ("name", Some(name))],
    )
}

fn artifact_list(
    scope: Option<PyString>,
    t: &mut dyn Transport,
    io: &mut dyn Io,
) -> Result<u8, CliError> {
    let reply = t.send(Request::get("/v1/artifact/list", vec![("scope", scope)]))?;
    let data = ok(reply.status, parse_body(&reply.body))?;
    write_stdout(io, &lines(&items(&data, "artifacts")?, Some("name"))?)?;
    Ok(0)
}

#[cfg(test)]
mod tests;
