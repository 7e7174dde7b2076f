//! What the collectors of every part share: the cumulative histogram and
//! the gauge encoders. Kept below the collectors so each part's module
//! (the daemon's, the Kubernetes mode's) uses them without importing the
//! others.

use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder};
use prometheus_client::metrics::MetricType;

/// A cumulative histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub(super) bounds: Vec<f64>,
    pub(super) counts: Vec<u64>,
    pub(super) sum: f64,
    pub(super) count: u64,
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

/// A gauge value: integers print without a fraction (`1`), times and
/// durations as floats.
pub(super) fn gauge(
    encoder: &mut MetricEncoder,
    value: &impl GaugeValue,
) -> Result<(), std::fmt::Error> {
    value.encode_to(encoder)
}

/// The two value kinds the gauges here carry.
pub(super) trait GaugeValue {
    fn encode_to(&self, encoder: &mut MetricEncoder) -> Result<(), std::fmt::Error>;
}

impl GaugeValue for i64 {
    fn encode_to(&self, encoder: &mut MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(self)
    }
}

impl GaugeValue for f64 {
    fn encode_to(&self, encoder: &mut MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(self)
    }
}

/// A family with a single unlabelled gauge sample.
pub(super) fn single_gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: &impl GaugeValue,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    gauge(&mut family, value)
}
