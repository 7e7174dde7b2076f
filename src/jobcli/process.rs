//! The real [`Io`]: the process's environment, stdin, stdout and stderr,
//! files, and `lock run`'s command, started with the signals this process
//! receives forwarded to it.

use super::model::{Io, WriteFailure};
use crate::platform;
use crate::pyjson::PyString;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};

/// The process's side of a job command.
pub struct ProcessIo<'rt> {
    runtime: &'rt tokio::runtime::Runtime,
}

impl<'rt> ProcessIo<'rt> {
    /// The process's side, `lock run`'s command waited for on `runtime`.
    pub fn new(runtime: &'rt tokio::runtime::Runtime) -> ProcessIo<'rt> {
        ProcessIo { runtime }
    }
}

impl Io for ProcessIo<'_> {
    fn env(&self, name: &str) -> Option<PyString> {
        std::env::var_os(name).map(|v| PyString::from_os(&v))
    }

    fn read_stdin(&mut self) -> std::io::Result<Vec<u8>> {
        let mut data = Vec::new();
        std::io::stdin().lock().read_to_end(&mut data)?;
        Ok(data)
    }

    fn read_file(&mut self, path: &OsStr) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn write_file(&mut self, path: &OsStr, data: &[u8]) -> Result<(), WriteFailure> {
        let mut file = std::fs::File::create(path).map_err(WriteFailure::Open)?;
        file.write_all(data).map_err(WriteFailure::Write)
    }

    fn stdout(&mut self, data: &[u8]) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(data)?;
        out.flush()
    }

    fn stderr(&mut self, line: &str) {
        // Nowhere to report a failed write to stderr: the exit code tells.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn run_child(&mut self, argv: &[OsString]) -> std::io::Result<i32> {
        // Anything buffered must reach the terminal before the command's
        // own output does.
        let _ = std::io::stdout().flush();
        self.runtime.block_on(run_forwarding(argv))
    }
}

/// Runs `argv` with stdio inherited; every SIGTERM, SIGINT and SIGHUP this
/// process receives meanwhile is passed on to it (the command stays in
/// this process group, so a signal sent to the whole group reaches it
/// directly as well). Returns its exit code as Python's `returncode`.
async fn run_forwarding(argv: &[OsString]) -> std::io::Result<i32> {
    let Some((program, args)) = argv.split_first() else {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
    };
    // Caught before the spawn, so a signal arriving in between is
    // forwarded to the command rather than ending this process (and
    // leaving the lock to its lease).
    let mut signals = platform::ForwardedSignals::new()?;
    let spawned = tokio::process::Command::new(program).args(args).spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            signals.restore_defaults();
            return Err(err);
        }
    };
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            sig = signals.recv() => {
                // The child is not reaped until wait() returns, so its
                // pid still names it.
                if let Some(pid) = child.id() {
                    let _ = platform::forward_signal(pid, sig);
                }
            }
        }
    };
    signals.restore_defaults();
    status.map(platform::exit_code)
}
