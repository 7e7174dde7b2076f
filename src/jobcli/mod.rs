//! The job-facing commands: `cronstable state get|set|delete|keys`,
//! `cursor`, `lock`, `artifact`, `idempotent`, `secret` and `xcom`, the
//! client of the daemon's loopback job API (the original's `jobcli.py`).
//!
//! Inside a job the daemon sets `CRONSTABLE_STATE_URL` and
//! `CRONSTABLE_STATE_TOKEN`; each command is one HTTP/1.1 request (two
//! for `lock run`) to that endpoint. Parsing is pure ([`args`] turns the
//! flags into an [`Invocation`]); [`run`] then acts: it sends, prints
//! and returns the exit code: 0 success, 1 error, 2 usage, 3 lock not
//! acquired, 4 not found, 5 idempotency key already claimed.
//!
//! Outputs, messages and wire bodies are the original's to the byte,
//! which needs Python's readings and spellings, the same ones the job
//! API's server side judges by: `int()`/`float()` of an argument, argv
//! and JSON strings that hold lone surrogates, `json.loads`/`json.dumps`
//! ([`crate::pyjson`]).

pub mod args;
pub mod model;
mod process;
mod transport;
pub mod verbs;
mod wire;

pub use args::{split_at_dash_dash, Invocation, DASH_DASH_MISPLACED};
pub use model::Verb;

/// Runs a parsed job command; returns the process's exit code.
pub fn run(invocation: &Invocation) -> u8 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!(
                "cronstable {}: cannot start the I/O runtime: {err}",
                invocation.verb.name()
            );
            return model::EXIT_ERROR;
        }
    };
    let mut transport = transport::HttpTransport::new(&runtime, transport::Endpoint::from_env());
    let mut io = process::ProcessIo::new(&runtime);
    verbs::dispatch(
        invocation.verb,
        invocation.action.as_ref(),
        &mut transport,
        &mut io,
    )
}
