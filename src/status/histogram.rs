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

    /// The cumulative count of each configured bound (observations at or
    /// below it), in bound order; the `+Inf` bucket is [`Histogram::count`].
    pub fn cumulative_counts(&self) -> &[u64] {
        &self.counts
    }

    /// Adds another histogram's state over the same bounds: `cumulative`
    /// (one count per bound, as [`Histogram::cumulative_counts`] gives
    /// them), `sum` and `count`. Nothing changes, and `false` comes back,
    /// when that state could not be one histogram's over these bounds (a
    /// different number of counts, counts that fall along the bounds or
    /// exceed `count`, a negative or non-finite sum), so a corrupt state
    /// never makes the encoded buckets inconsistent. Additions saturate.
    pub fn add_state(&mut self, cumulative: &[u64], sum: f64, count: u64) -> bool {
        let ordered = cumulative.windows(2).all(|pair| pair[0] <= pair[1]);
        let bounded = cumulative.last().is_none_or(|last| *last <= count);
        if cumulative.len() != self.bounds.len()
            || !ordered
            || !bounded
            || !sum.is_finite()
            || sum < 0.0
        {
            return false;
        }
        for (mine, theirs) in self.counts.iter_mut().zip(cumulative) {
            *mine = mine.saturating_add(*theirs);
        }
        self.sum += sum;
        self.count = self.count.saturating_add(count);
        true
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
