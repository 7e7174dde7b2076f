//! The `cronstable_state_*` families: the durable store's facts and its
//! own counters (operations, errors and time per operation, the
//! `maxOpsPerSecond` throttle, dropped writes), encoded from a copy of
//! the store's atomics ([`crate::state::stats::StoreStats`]) taken for
//! one scrape.
//!
//! Emitted as the original emits them: the info gauge while a store is
//! open, the operation families once any operation ran (only the
//! operations that ran), the throttle families once the throttle held an
//! operation back, the dropped writes once any write was dropped (only
//! the kinds that were). The original's `lock_*` and `workers_*` families
//! are not emitted: this store takes no advisory locks for its records
//! and runs its operations on one writer thread and the callers' own
//! threads, not on worker lanes.

use crate::state::stats::StoreStats;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// One operation kind's totals in a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct OpFacts {
    /// The `op` label.
    pub op: &'static str,
    /// Operations run.
    pub count: u64,
    /// Of which failed.
    pub errors: u64,
    /// Seconds spent in them.
    pub seconds: f64,
}

/// The store's values as one scrape shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct StateFacts {
    /// The `topology` label of `cronstable_state_info`.
    pub topology: String,
    /// The operation kinds that ran, sorted by label.
    pub ops: Vec<OpFacts>,
    /// Operations the throttle held back, and the seconds they waited.
    pub throttled: (u64, f64),
    /// Dropped writes per `kind` label, only the kinds that dropped any,
    /// sorted by label.
    pub dropped: Vec<(&'static str, u64)>,
}

impl StateFacts {
    /// Reads the store's counters now.
    pub fn read(stats: &StoreStats, topology: &str) -> StateFacts {
        let mut ops: Vec<OpFacts> = stats
            .op_totals()
            .into_iter()
            .filter(|t| t.ops > 0)
            .map(|t| OpFacts {
                op: t.op.label(),
                count: t.ops,
                errors: t.errors,
                seconds: t.seconds,
            })
            .collect();
        ops.sort_by(|a, b| a.op.cmp(b.op));
        let mut dropped: Vec<(&'static str, u64)> = stats
            .dropped_totals()
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(kind, n)| (kind.label(), n))
            .collect();
        dropped.sort();
        StateFacts {
            topology: topology.to_owned(),
            ops,
            throttled: stats.throttle_totals(),
            dropped,
        }
    }
}

/// The `cronstable_state_*` families of one scrape.
#[derive(Debug)]
pub(super) struct StateFamilies(pub(super) StateFacts);

/// A counter family with one sample per `(label value, value)`.
fn labelled_counter<V>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &str,
    samples: impl Iterator<Item = (&'static str, V)>,
) -> Result<(), std::fmt::Error>
where
    V: prometheus_client::encoding::EncodeCounterValue,
{
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (value_label, value) in samples {
        family
            .encode_family(&[(label, value_label)])?
            .encode_counter::<NoLabelSet, V, f64>(&value, None)?;
    }
    Ok(())
}

impl Collector for StateFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        if !s.dropped.is_empty() {
            labelled_counter(
                &mut encoder,
                "cronstable_state_dropped_writes",
                "Durable state writes that failed and were dropped, by kind.",
                "kind",
                s.dropped.iter().copied(),
            )?;
        }
        let mut info = encoder.encode_descriptor(
            "cronstable_state_info",
            "Static durable-state backend facts for this node.",
            None,
            MetricType::Gauge,
        )?;
        info.encode_family(&[("backend", "filesystem"), ("topology", s.topology.as_str())])?
            .encode_gauge(&1i64)?;
        if !s.ops.is_empty() {
            labelled_counter(
                &mut encoder,
                "cronstable_state_ops",
                "Durable state store operations, by operation.",
                "op",
                s.ops.iter().map(|o| (o.op, o.count)),
            )?;
            labelled_counter(
                &mut encoder,
                "cronstable_state_op_errors",
                "Durable state store operations that raised, by operation.",
                "op",
                s.ops.iter().map(|o| (o.op, o.errors)),
            )?;
            labelled_counter(
                &mut encoder,
                "cronstable_state_op_seconds",
                "Seconds spent inside durable state store operations, by operation (rate \
                 against cronstable_state_ops_total for mean latency).",
                "op",
                s.ops.iter().map(|o| (o.op, o.seconds)),
            )?;
        }
        let (throttled, waited) = s.throttled;
        if throttled > 0 {
            let mut family = encoder.encode_descriptor(
                "cronstable_state_throttled_ops",
                "Store operations delayed by the maxOpsPerSecond rate limit.",
                None,
                MetricType::Counter,
            )?;
            family.encode_counter::<NoLabelSet, u64, f64>(&throttled, None)?;
            let mut family = encoder.encode_descriptor(
                "cronstable_state_throttle_wait_seconds",
                "Seconds store operations spent waiting on the maxOpsPerSecond rate limit.",
                None,
                MetricType::Counter,
            )?;
            family.encode_counter::<NoLabelSet, f64, f64>(&waited, None)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::stats::{Op, WriteKind};
    use prometheus_client::registry::Registry;
    use std::time::Duration;

    fn text(facts: StateFacts) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(StateFamilies(facts)));
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry).expect("encodes");
        out
    }

    #[test]
    fn a_fresh_store_shows_only_its_info() {
        let stats = StoreStats::default();
        let facts = StateFacts::read(&stats, "single-node");
        assert_eq!(
            text(facts),
            "# HELP cronstable_state_info Static durable-state backend facts for this node.\n\
             # TYPE cronstable_state_info gauge\n\
             cronstable_state_info{backend=\"filesystem\",topology=\"single-node\"} 1\n"
        );
    }

    #[test]
    fn operations_that_ran_throttles_and_drops_appear_sorted() {
        let stats = StoreStats::default();
        stats.record(Op::List, Duration::from_millis(500), false);
        stats.record(Op::Append, Duration::from_millis(250), false);
        stats.record(Op::Append, Duration::from_millis(250), true);
        stats.throttled(Duration::from_millis(1500));
        stats.dropped(WriteKind::Retry);
        stats.dropped(WriteKind::Checkpoint);
        stats.dropped(WriteKind::Checkpoint);
        let facts = StateFacts::read(&stats, "shared");
        assert_eq!(
            facts.ops.iter().map(|o| o.op).collect::<Vec<_>>(),
            ["append", "list"],
            "only the operations that ran"
        );
        assert_eq!(facts.dropped, [("checkpoint", 2), ("retry", 1)]);
        let out = text(facts);
        for line in [
            "# HELP cronstable_state_dropped_writes_total Durable state writes that failed and were dropped, by kind.",
            "# TYPE cronstable_state_dropped_writes_total counter",
            "cronstable_state_dropped_writes_total{kind=\"checkpoint\"} 2",
            "cronstable_state_dropped_writes_total{kind=\"retry\"} 1",
            "cronstable_state_info{backend=\"filesystem\",topology=\"shared\"} 1",
            "# HELP cronstable_state_ops_total Durable state store operations, by operation.",
            "cronstable_state_ops_total{op=\"append\"} 2",
            "cronstable_state_ops_total{op=\"list\"} 1",
            "# HELP cronstable_state_op_errors_total Durable state store operations that raised, by operation.",
            "cronstable_state_op_errors_total{op=\"append\"} 1",
            "cronstable_state_op_errors_total{op=\"list\"} 0",
            "# HELP cronstable_state_op_seconds_total Seconds spent inside durable state store operations, by operation (rate against cronstable_state_ops_total for mean latency).",
            "cronstable_state_op_seconds_total{op=\"append\"} 0.5",
            "cronstable_state_op_seconds_total{op=\"list\"} 0.5",
            "# HELP cronstable_state_throttled_ops_total Store operations delayed by the maxOpsPerSecond rate limit.",
            "cronstable_state_throttled_ops_total 1",
            "# HELP cronstable_state_throttle_wait_seconds_total Seconds store operations spent waiting on the maxOpsPerSecond rate limit.",
            "cronstable_state_throttle_wait_seconds_total 1.5",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing:\n{out}");
        }
        assert!(!out.contains("prune"), "{out}");
        assert!(!out.contains("lock_"), "{out}");
    }
}
