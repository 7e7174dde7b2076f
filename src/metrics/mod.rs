//! Metrics: per-job statsd datagrams and the Prometheus exposition.

pub mod cluster;
pub(crate) mod encode;
pub mod kube;
pub mod limits;
pub mod pools;
pub mod prometheus;
pub mod sla;
pub mod state;
pub(crate) mod statsd;
