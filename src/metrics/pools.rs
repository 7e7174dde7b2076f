//! The `cronstable_pool_*` families: each configured resource pool as
//! this node last saw it (its document is read every second while pools
//! are configured). The original exports no pool metrics; the names are
//! ours, in the `cronstable_` style:
//!
//! - `cronstable_pool_slots{pool}`: the capacity admission works against
//!   (the stored one; it differs from the configured one while a capacity
//!   change drains),
//! - `cronstable_pool_slots_used{pool}`: slots held by running claims,
//!   on every node sharing the store,
//! - `cronstable_pool_queued{pool}`: entries waiting for admission,
//! - `cronstable_pool_claims{pool}`: running claims this node holds,
//! - `cronstable_pool_state_up{pool}`: 1 when the last look at the
//!   pool's state succeeded, 0 when the store could not be read.
//!
//! A pool not looked at yet shows its configured capacity and zeros.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

/// One pool's values in a scrape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolGauge {
    /// The `pool` label.
    pub pool: String,
    /// Capacity admission works against.
    pub slots: u32,
    /// Slots held, cluster-wide.
    pub used: u32,
    /// Entries waiting.
    pub queued: usize,
    /// Running claims this node holds.
    pub claims: usize,
    /// The last look at the pool's state succeeded.
    pub up: bool,
}

/// One family: its name, its help and how a pool's value is read.
type Family = (&'static str, &'static str, fn(&PoolGauge) -> i64);

/// The pool families of one scrape.
#[derive(Debug)]
pub(crate) struct PoolFamilies(pub(crate) std::sync::Arc<[PoolGauge]>);

impl Collector for PoolFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.0.is_empty() {
            return Ok(());
        }
        let families: [Family; 5] = [
            (
                "cronstable_pool_slots",
                "Capacity of the resource pool that admission works against.",
                |g| i64::from(g.slots),
            ),
            (
                "cronstable_pool_slots_used",
                "Slots of the resource pool held by running claims, on every node.",
                |g| i64::from(g.used),
            ),
            (
                "cronstable_pool_queued",
                "Entries waiting in the resource pool's queue.",
                |g| g.queued as i64,
            ),
            (
                "cronstable_pool_claims",
                "Running claims on the resource pool held by this node.",
                |g| g.claims as i64,
            ),
            (
                "cronstable_pool_state_up",
                "Whether the last read of the resource pool's state succeeded.",
                |g| i64::from(g.up),
            ),
        ];
        for (name, help, value) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for gauge in self.0.iter() {
                super::encode::gauge(
                    &mut family.encode_family(&[("pool", gauge.pool.as_str())])?,
                    &value(gauge),
                )?;
            }
        }
        Ok(())
    }
}
