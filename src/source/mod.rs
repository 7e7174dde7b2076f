//! Job sources: where the scheduler's job sets come from. Each source
//! implements [`crate::scheduler::ports::JobSource`]; `crate::daemon` picks one.
//! The file source lives here; the Kubernetes source lives in
//! `src/kube/source.rs`.

pub mod file;

pub use file::{FileSource, ReloadTrigger};
