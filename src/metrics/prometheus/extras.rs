//! The families a scrape adds beside the per-job rows, each from the
//! state its owner holds: the late-run series, the resource pools' gauges
//! and the `resourceLimits` series. Each is attached to a snapshot after
//! it is taken (the rows may be shared with an earlier snapshot; these
//! never are).

use super::{Scrape, Snapshot};
use std::sync::Arc;

impl Snapshot {
    /// This snapshot with the late-run series the scheduler's monitor
    /// holds (sorted by job, then check).
    pub fn with_sla(self, sla: Vec<crate::metrics::sla::SlaSeries>) -> Snapshot {
        if sla.is_empty() && self.0.sla.is_empty() {
            return self;
        }
        let mut scrape: Scrape = Arc::unwrap_or_clone(self.0);
        scrape.sla = Arc::new(sla);
        Snapshot(Arc::new(scrape))
    }

    /// This snapshot with the resource pools' gauges (the scheduler's
    /// last look at each pool).
    pub fn with_pools(self, pools: Vec<crate::metrics::pools::PoolGauge>) -> Snapshot {
        if pools.is_empty() {
            return self;
        }
        let mut scrape: Scrape = Arc::unwrap_or_clone(self.0);
        scrape.pools = pools.into();
        Snapshot(Arc::new(scrape))
    }

    /// This snapshot with the `resourceLimits` series of the capped jobs
    /// (in table order).
    pub fn with_limits(self, limits: Vec<crate::metrics::limits::LimitsSeries>) -> Snapshot {
        if limits.is_empty() && self.0.limits.is_empty() {
            return self;
        }
        let mut scrape: Scrape = Arc::unwrap_or_clone(self.0);
        scrape.limits = Arc::new(limits);
        Snapshot(Arc::new(scrape))
    }
}
