//! One run of a job: spawning in its own process group, output capture,
//! deadlines, cancellation, resource sampling, and how the outcome is
//! judged.

pub mod capture;
pub mod contain;
pub mod limits;
pub mod monitor;
pub(crate) mod outcome;
pub(crate) mod run;
pub mod sampler;
pub(crate) mod verify;

pub use capture::{LiveEvent, LiveOutput, LiveSubscription};
pub use outcome::{RunRecord, StreamOutput, Trigger};
pub use run::{start, CancelKind, RunHandle, RunObserver, RunRequest};
