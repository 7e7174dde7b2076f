//! Job sources: where the scheduler's job sets come from. Each source
//! implements [`crate::scheduler::ports::JobSource`]; `main.rs` picks one.
//! The file source lives here; the Kubernetes source will live in
//! `src/kube/`.

pub mod file;
pub(crate) mod stamp;

pub use file::{FileSource, ReloadTrigger};
