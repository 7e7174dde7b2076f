//! The shutdown token: whoever catches a stop request (the daemon's signal task,
//! the HTTP `POST /shutdown` route) sends it here; the scheduler only
//! receives. Signals are never caught inside the scheduler.

use tokio::sync::mpsc;

/// Why the daemon is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// A signal, by name (`SIGTERM`, `SIGINT`); the log names it.
    Signal(&'static str),
    /// A caller such as the HTTP shutdown route.
    Request,
}

/// Asks a running scheduler for the graceful shutdown a SIGTERM starts:
/// stop launching, drain the running jobs, return from
/// [`super::Scheduler::run`]. Cheap to clone; asking more than once only
/// adds a log line.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    tx: mpsc::UnboundedSender<StopCause>,
}

/// The scheduler's end of the token.
#[derive(Debug)]
pub struct ShutdownRequests {
    rx: mpsc::UnboundedReceiver<StopCause>,
}

/// A connected handle and receiver.
pub fn channel() -> (ShutdownHandle, ShutdownRequests) {
    let (tx, rx) = mpsc::unbounded_channel();
    (ShutdownHandle { tx }, ShutdownRequests { rx })
}

impl ShutdownHandle {
    /// Requests the graceful shutdown (from any task, before or while the
    /// scheduler runs; a request made before it polls is kept).
    pub fn trigger(&self) {
        self.stop(StopCause::Request);
    }

    /// Requests the shutdown for `cause`.
    pub fn stop(&self, cause: StopCause) {
        // A closed channel means the scheduler already returned: nothing
        // is left to stop.
        let _ = self.tx.send(cause);
    }
}

impl ShutdownRequests {
    /// The next request; pending forever once every handle is gone (the
    /// daemon then runs until a handle-holder asks, which none can).
    pub async fn recv(&mut self) -> StopCause {
        match self.rx.recv().await {
            Some(cause) => cause,
            None => std::future::pending().await,
        }
    }
}
