//! cronstable: a fast cron daemon, drop-in compatible with the Python
//! cronstable, that runs standalone from YAML files or inside Kubernetes.
//!
//! The crate is laid out by concept: [`config`] loads and validates
//! configuration, [`fingerprint`] computes the job-set id, [`logging`] sets
//! up tracing, and [`platform`] holds every per-OS branch.

pub mod config;
pub mod cronexpr;
pub mod fingerprint;
pub mod job;
pub mod logging;
pub mod metrics;
pub mod platform;
pub mod pyfmt;
pub mod report;
pub mod scheduler;
pub mod source;
pub mod web;
