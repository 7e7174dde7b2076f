//! A cumulative histogram: the value the per-job duration counters and
//! the Kubernetes mode's apply times are kept in, and the metrics encode.

/// A cumulative histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub(crate) bounds: Vec<f64>,
    pub(crate) counts: Vec<u64>,
    pub(crate) sum: f64,
    pub(crate) count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds` (a `+Inf` bucket is implied).
    pub fn new(bounds: &[f64]) -> Self {
        Histogram {
            bounds: bounds.to_vec(),
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the observations.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// Per-bucket (not cumulative) counts with their upper bounds, the
    /// last one `+Inf`: the shape the encoders take.
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        let mut buckets = Vec::with_capacity(self.bounds.len() + 1);
        self.buckets_into(&mut buckets);
        buckets
    }

    /// [`Histogram::buckets`] into a buffer the caller reuses.
    pub fn buckets_into(&self, buckets: &mut Vec<(f64, u64)>) {
        buckets.clear();
        let mut below = 0;
        for (bound, cumulative) in self.bounds.iter().zip(&self.counts) {
            buckets.push((*bound, cumulative.saturating_sub(below)));
            below = *cumulative;
        }
        buckets.push((f64::INFINITY, self.count.saturating_sub(below)));
    }

    /// Records one observation.
    pub fn observe(&mut self, value: f64) {
        for (bound, count) in self.bounds.iter().zip(self.counts.iter_mut()) {
            if value <= *bound {
                *count += 1;
            }
        }
        self.sum += value;
        self.count += 1;
    }
}
