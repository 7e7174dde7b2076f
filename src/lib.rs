//! cronstable: a fast cron daemon, drop-in compatible with the Python
//! cronstable, that runs standalone from YAML files or inside Kubernetes.
//!
//! One module a concept, in layers; a module uses only the layers below it
//! (`tests/architecture.rs` holds the ranks and keeps it so). Bottom up:
//!
//! - `platform`: every per-OS branch (processes, signals, accounts, host).
//! - `pyfmt`: Python spellings of values (str, repr, float, JSON).
//! - `compat`: Python-compatible readings (strictyaml's lenient scalars).
//! - `redact`: scrubbing recognizable secrets from archived output.
//! - [`cronexpr`]: the schedule engine: parse, next/previous, time zones, lint.
//! - `jinja`: the Jinja2-compatible template engine (compile, render).
//! - [`logging`]: the daemon's log output, including dictConfig sections.
//! - [`pyjson`]: Python's JSON values and `str` as the original's
//!   interpreter holds them (`json.loads`/`json.dumps`, lone surrogates,
//!   `repr()`, `int()`/`float()` of text), shared by the job state and the
//!   job commands.
//! - [`cli`]: clients of a running daemon's web listener (`cronstable
//!   mcp`, the MCP stdio bridge) and what they share with `cronstable
//!   tui` (the connection flags and the HTTP client).
//! - [`jobcli`]: the job-facing commands (`state get`, `cursor`, `lock`,
//!   `artifact`, ...), the client of the daemon's loopback job API.
//! - [`config`]: the config model, loading, crontabs and validation.
//! - [`fingerprint`]: the job-set id of a loaded config.
//! - [`tls`]: server TLS shared by the HTTP API and the job endpoint:
//!   certificates loaded and rotated, TLS accepted on a TCP listener.
//! - [`job`]: one run of a job: spawn, capture, deadline, outcome.
//! - [`gossip`]: the gossip backend's pure core: payload, peer view,
//!   election rules, the fleet view.
//! - [`status`]: the state the edges publish on watch channels (the
//!   leadership state, the Kubernetes mode's state) for the gate, the API
//!   and the metrics to read.
//! - [`state`]: the durable store of the `state` section: its files, record
//!   formats and the `cronstable state` administration.
//! - [`report`]: reporters (mail, Sentry, webhook, shell) and templates.
//! - [`metrics`]: Prometheus and statsd output.
//! - [`scheduler`]: the run loop, launch gates and control, and the ports
//!   (job source, leader gate, slot lock, run store, clock) it depends on.
//! - [`web`]: the HTTP API and dashboard.
//! - [`source`]: the file job source: config paths, change stamps, reloads.
//! - [`kube`]: the `CronJobSet` custom resource, its generated CRD, and the
//!   Kubernetes mode: watches, the Kubernetes job source, status and Events.
//! - [`cluster`]: the leadership backends (Kubernetes Lease, etcd, lease
//!   file, gossip), cluster slots and records, behind the leader gate.
//! - [`tui`]: `cronstable tui`, the terminal dashboard: a client of the
//!   HTTP API (jobs board, job drawer with the live log tail, panels).
//! - [`durable`]: the scheduler's durable-state port over the store: the
//!   writer, the read at start with crash reconciliation, the poller.
//! - [`jobapi`]: the loopback job endpoint (`state.jobApi`): run tokens,
//!   staged secrets, job locks, and the `/v1` routes over the store.
//! - [`daemon`]: the daemon's command line and its wiring: the slot store
//!   and election backend planned from the config and built, the job
//!   source opened, signals, shutdown.
//!
//! Only what the binary, the tests, the benches and the examples use is
//! public; the rest is `pub(crate)`.

pub mod cli;
pub mod cluster;
pub(crate) mod compat;
pub mod config;
pub mod cronexpr;
pub mod daemon;
pub mod durable;
pub mod fingerprint;
pub mod gossip;
pub(crate) mod jinja;
pub mod job;
pub mod jobapi;
pub mod jobcli;
pub mod kube;
pub mod logging;
pub mod metrics;
pub mod platform;
pub(crate) mod pyfmt;
pub mod pyjson;
pub mod redact;
pub mod report;
pub mod scheduler;
pub mod source;
pub mod state;
pub mod status;
pub mod tls;
pub mod tui;
pub mod web;
