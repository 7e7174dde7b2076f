//! Metrics: per-job statsd datagrams (Prometheus comes with the HTTP API).

pub mod statsd;
