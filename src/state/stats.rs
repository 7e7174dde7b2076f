//! What the store counts about itself for the `cronstable_state_*`
//! families: operations, their errors and time per operation kind, the
//! `maxOpsPerSecond` throttle, quarantined records and dropped writes.
//! Written by whoever runs store operations, read by a scrape: plain
//! atomics, no lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A kind of store operation (the `op` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A record appended.
    Append,
    /// A stream read.
    List,
    /// Records or streams deleted (retention, or a collected stream:
    /// the original counts every delete as a `prune`).
    Prune,
    /// Stream names listed.
    ListStreams,
    /// A garbage-collection pass.
    Gc,
    /// A lease taken (a renewal through acquire counts here too).
    LeaseAcquire,
    /// A lease released.
    LeaseRelease,
    /// A lease read without its lock.
    LeaseRead,
    /// A lease renewed by its holder.
    LeaseRenew,
    /// A document read without its lock (job-facing state).
    DocRead,
    /// A document changed (or deleted) under its lock.
    DocMutate,
    /// A document namespace listed.
    DocList,
    /// An artifact payload stored.
    BlobPut,
    /// An artifact payload read.
    BlobGet,
}

impl Op {
    /// Every kind, in label order.
    pub const ALL: [Op; 14] = [
        Op::Append,
        Op::List,
        Op::Prune,
        Op::ListStreams,
        Op::Gc,
        Op::LeaseAcquire,
        Op::LeaseRelease,
        Op::LeaseRead,
        Op::LeaseRenew,
        Op::DocRead,
        Op::DocMutate,
        Op::DocList,
        Op::BlobPut,
        Op::BlobGet,
    ];

    /// The `op` label.
    pub fn label(self) -> &'static str {
        match self {
            Op::Append => "append",
            Op::List => "list",
            Op::Prune => "prune",
            Op::ListStreams => "list-stream-names",
            Op::Gc => "gc",
            Op::LeaseAcquire => "lease-acquire",
            Op::LeaseRelease => "lease-release",
            Op::LeaseRead => "lease-read",
            Op::LeaseRenew => "lease-renew",
            Op::DocRead => "doc-read",
            Op::DocMutate => "doc-mutate",
            Op::DocList => "doc-list",
            Op::BlobPut => "blob-put",
            Op::BlobGet => "blob-get",
        }
    }
}

/// A kind of durable write that can be dropped (the `kind` label of
/// `cronstable_state_dropped_writes_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// A finished-run record.
    RunRecord,
    /// A catch-up checkpoint.
    Checkpoint,
    /// A retry record.
    Retry,
    /// An `@reboot` boot marker.
    RebootMarker,
    /// An in-flight record.
    Inflight,
    /// A counters snapshot.
    Counters,
    /// A node manifest.
    Manifest,
    /// A pause or resume.
    Pause,
    /// Archived output.
    Log,
}

impl WriteKind {
    /// Every kind, in label order.
    pub const ALL: [WriteKind; 9] = [
        WriteKind::RunRecord,
        WriteKind::Checkpoint,
        WriteKind::Retry,
        WriteKind::RebootMarker,
        WriteKind::Inflight,
        WriteKind::Counters,
        WriteKind::Manifest,
        WriteKind::Pause,
        WriteKind::Log,
    ];

    /// The `kind` label.
    pub fn label(self) -> &'static str {
        match self {
            WriteKind::RunRecord => "run-record",
            WriteKind::Checkpoint => "checkpoint",
            WriteKind::Retry => "retry",
            WriteKind::RebootMarker => "reboot-marker",
            WriteKind::Inflight => "inflight",
            WriteKind::Counters => "counters",
            WriteKind::Manifest => "manifest",
            WriteKind::Pause => "pause",
            WriteKind::Log => "log",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

/// Counts of one operation kind.
#[derive(Debug, Default)]
struct OpCounts {
    ops: AtomicU64,
    errors: AtomicU64,
    micros: AtomicU64,
}

/// The store's own counters.
#[derive(Debug, Default)]
pub struct StoreStats {
    ops: [OpCounts; Op::ALL.len()],
    throttled: AtomicU64,
    throttle_micros: AtomicU64,
    quarantined: AtomicU64,
    dropped: [AtomicU64; 9],
}

/// One operation kind's totals, as a scrape reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpTotals {
    /// The kind.
    pub op: Op,
    /// Operations run.
    pub ops: u64,
    /// Of which failed.
    pub errors: u64,
    /// Time spent in them, seconds.
    pub seconds: f64,
}

impl StoreStats {
    /// Counts one operation of `op` that took `took`.
    pub fn record(&self, op: Op, took: Duration, failed: bool) {
        let counts = &self.ops[Op::ALL.iter().position(|o| *o == op).unwrap_or(0)];
        counts.ops.fetch_add(1, Ordering::Relaxed);
        if failed {
            counts.errors.fetch_add(1, Ordering::Relaxed);
        }
        counts.micros.fetch_add(
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts an operation the throttle held back for `waited`.
    pub fn throttled(&self, waited: Duration) {
        self.throttled.fetch_add(1, Ordering::Relaxed);
        self.throttle_micros.fetch_add(
            u64::try_from(waited.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Counts a record moved to quarantine.
    pub fn quarantined(&self) {
        self.quarantined.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a durable write that failed and was dropped.
    pub fn dropped(&self, kind: WriteKind) {
        self.dropped[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Per operation kind: count, errors, seconds.
    pub fn op_totals(&self) -> Vec<OpTotals> {
        Op::ALL
            .iter()
            .zip(&self.ops)
            .map(|(op, c)| OpTotals {
                op: *op,
                ops: c.ops.load(Ordering::Relaxed),
                errors: c.errors.load(Ordering::Relaxed),
                seconds: c.micros.load(Ordering::Relaxed) as f64 / 1e6,
            })
            .collect()
    }

    /// Operations the throttle held back, and the seconds they waited.
    pub fn throttle_totals(&self) -> (u64, f64) {
        (
            self.throttled.load(Ordering::Relaxed),
            self.throttle_micros.load(Ordering::Relaxed) as f64 / 1e6,
        )
    }

    /// Records quarantined since start.
    pub fn quarantined_total(&self) -> u64 {
        self.quarantined.load(Ordering::Relaxed)
    }

    /// Dropped writes per kind.
    pub fn dropped_totals(&self) -> Vec<(WriteKind, u64)> {
        WriteKind::ALL
            .iter()
            .map(|k| (*k, self.dropped[k.index()].load(Ordering::Relaxed)))
            .collect()
    }
}
