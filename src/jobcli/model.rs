//! The job commands' vocabulary: exit codes, the environment variables,
//! the parsed [`Action`], the [`Request`]/[`Reply`] of the job API, and the
//! two seams every verb runs over ([`Transport`] and [`Io`]).

use crate::pyjson::{PyJson, PyString};
use std::ffi::{OsStr, OsString};

/// Exit code: an error (a message on stderr).
pub const EXIT_ERROR: u8 = 1;
/// Exit code: a usage error (no action given).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the lock was not acquired.
pub const EXIT_NOT_ACQUIRED: u8 = 3;
/// Exit code: the key, cursor, artifact, secret or XCom does not exist.
pub const EXIT_NOT_FOUND: u8 = 4;
/// Exit code: the idempotency key was already claimed.
pub const EXIT_DUPLICATE: u8 = 5;

/// The environment variable naming the job API's base URL.
pub const ENV_URL: &str = "CRONSTABLE_STATE_URL";
/// The environment variable holding the run's bearer token.
pub const ENV_TOKEN: &str = "CRONSTABLE_STATE_TOKEN";
/// The environment variable naming the CA file that signed the job API's
/// certificate (set only with `state.jobApi.tls.ca`).
pub const ENV_CACERT: &str = "CRONSTABLE_STATE_CACERT";
/// The environment variable holding a workflow run's XCom scope.
pub const ENV_DAG_XCOM_SCOPE: &str = "CRONSTABLE_DAG_XCOM_SCOPE";
/// The environment variable holding a workflow task's own key.
pub const ENV_DAG_TASKKEY: &str = "CRONSTABLE_DAG_TASKKEY";

/// The request timeout, seconds (a `--wait` lock acquire adds its
/// `--timeout`).
pub const DEFAULT_TIMEOUT: f64 = 30.0;

/// A job command, which names it on stderr (`cronstable cursor: ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `state get|set|delete|keys`.
    State,
    /// `cursor`.
    Cursor,
    /// `lock`.
    Lock,
    /// `artifact`.
    Artifact,
    /// `idempotent`.
    Idempotent,
    /// `secret`.
    Secret,
    /// `xcom`.
    Xcom,
}

impl Verb {
    /// The command's name.
    pub fn name(self) -> &'static str {
        match self {
            Verb::State => "state",
            Verb::Cursor => "cursor",
            Verb::Lock => "lock",
            Verb::Artifact => "artifact",
            Verb::Idempotent => "idempotent",
            Verb::Secret => "secret",
            Verb::Xcom => "xcom",
        }
    }
}

/// The flags of `lock acquire` and `lock run`.
#[derive(Debug, Clone, PartialEq)]
pub struct LockSpec {
    /// The lock's name.
    pub name: PyString,
    /// `--permits`, canonical decimal text (any size: the server judges).
    pub permits: String,
    /// `--wait`.
    pub wait: bool,
    /// `--timeout`, finite and >= 0.
    pub timeout: f64,
    /// `--ttl` (None: the server's default).
    pub ttl: Option<f64>,
    /// The scope (None: the job's own).
    pub scope: Option<PyString>,
}

/// One job command's action, its arguments as Python would hold them.
/// `scope: None` leaves the scope out (the job's own).
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Action {
    KvGet {
        key: PyString,
        scope: Option<PyString>,
    },
    KvSet {
        key: PyString,
        value: PyString,
        json: bool,
        scope: Option<PyString>,
    },
    KvDelete {
        key: PyString,
        scope: Option<PyString>,
    },
    KvKeys {
        scope: Option<PyString>,
    },
    CursorGet {
        name: PyString,
        scope: Option<PyString>,
    },
    CursorAdvance {
        name: PyString,
        value: PyString,
        force: bool,
        scope: Option<PyString>,
    },
    LockAcquire(LockSpec),
    LockRun {
        spec: LockSpec,
        command: Vec<OsString>,
    },
    LockRelease {
        token: PyString,
    },
    ArtifactPut {
        name: PyString,
        file: Option<OsString>,
        scope: Option<PyString>,
    },
    ArtifactGet {
        name: PyString,
        output: Option<OsString>,
        scope: Option<PyString>,
    },
    ArtifactList {
        scope: Option<PyString>,
    },
    IdemClaim {
        key: PyString,
        ttl: f64,
        scope: Option<PyString>,
    },
    IdemRelease {
        key: PyString,
        scope: Option<PyString>,
    },
    SecretGet {
        name: PyString,
    },
    SecretList,
    XcomPush {
        key: PyString,
        file: Option<OsString>,
    },
    XcomPull {
        task: PyString,
        key: PyString,
        map_index: Option<String>,
        output: Option<OsString>,
    },
    XcomList,
}

/// A user-facing failure: `cronstable {command}: {message}` on stderr,
/// exit 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CliError(pub String);

/// The HTTP method of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
}

/// A request body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// None.
    Empty,
    /// A JSON object (`Content-Type: application/json`).
    Json(PyJson),
    /// Raw bytes (`Content-Type: application/octet-stream`).
    Raw(Vec<u8>),
}

/// One request to the job API.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The path under the base URL (`/v1/kv/get`).
    pub path: &'static str,
    /// Query parameters in order; `None` values are left out.
    pub query: Vec<(&'static str, Option<PyString>)>,
    /// The body.
    pub body: Body,
    /// The timeout, seconds.
    pub timeout: f64,
}

impl Request {
    pub(super) fn get(path: &'static str, query: Vec<(&'static str, Option<PyString>)>) -> Request {
        Request {
            method: Method::Get,
            path,
            query,
            body: Body::Empty,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub(super) fn post(path: &'static str, body: PyJson) -> Request {
        Request {
            method: Method::Post,
            path,
            query: Vec::new(),
            body: Body::Json(body),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// A reply: its status and body (a redirect never gets here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

/// Sends one request (the original's `_http` seam).
pub trait Transport {
    /// Sends `request`; a transport failure (no endpoint configured, no
    /// connection, TLS, redirect) is the message to report.
    fn send(&mut self, request: Request) -> Result<Reply, CliError>;
}

/// Why writing an output file failed: at the open (the message names the
/// file, as Python's `open()` does) or at the write.
#[derive(Debug)]
pub enum WriteFailure {
    /// The file could not be opened.
    Open(std::io::Error),
    /// The data could not be written.
    Write(std::io::Error),
}

/// The process's side of a command.
pub trait Io {
    /// The value of an environment variable (None when unset).
    fn env(&self, name: &str) -> Option<PyString>;
    /// All of stdin.
    fn read_stdin(&mut self) -> std::io::Result<Vec<u8>>;
    /// All of the file at `path`.
    fn read_file(&mut self, path: &OsStr) -> std::io::Result<Vec<u8>>;
    /// Writes `data` to the file at `path` (created or truncated).
    fn write_file(&mut self, path: &OsStr, data: &[u8]) -> Result<(), WriteFailure>;
    /// Writes to stdout.
    fn stdout(&mut self, data: &[u8]) -> std::io::Result<()>;
    /// Writes one line (a newline is added) to stderr.
    fn stderr(&mut self, line: &str);
    /// Runs `argv` (no shell, stdio inherited) to its end; returns its
    /// exit code as Python's `returncode` (minus the signal number when a
    /// signal ended it).
    fn run_child(&mut self, argv: &[OsString]) -> std::io::Result<i32>;
}
