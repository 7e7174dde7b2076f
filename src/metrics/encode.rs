//! What the collectors of every part share: the gauge encoders (and the
//! cumulative histogram, defined with the published state it is part of).
//! Kept below the collectors so each part's module (the daemon's, the
//! cluster's, the Kubernetes mode's) uses them without importing the
//! others.

use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder};
use prometheus_client::metrics::MetricType;

pub use crate::status::Histogram;

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
