//! The late-run families: `cronstable_job_late{job_name, check}` (1 while
//! the check is breached) and `cronstable_job_sla_breaches_total` (breaches
//! detected). A job's series exist once the monitor has evaluated its
//! checks, and only for jobs with an `sla` block, as in the original; the
//! scheduler's monitor owns the values and a scrape reads a copy.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// One (job, check) the monitor has evaluated, as a scrape shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaSeries {
    /// The `job_name` label.
    pub job: String,
    /// The `check` label (`maxTimeSinceSuccess`, `lateAfter`,
    /// `maxRuntime`).
    pub check: &'static str,
    /// Breached now.
    pub late: bool,
    /// Breaches detected since the daemon started.
    pub breaches: u64,
}

/// The late-run families of one scrape (nothing while no job has checks).
#[derive(Debug)]
pub(super) struct SlaFamilies(pub(super) std::sync::Arc<Vec<SlaSeries>>);

impl Collector for SlaFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.0.is_empty() {
            return Ok(());
        }
        let mut late = encoder.encode_descriptor(
            "cronstable_job_late",
            "Whether the job's SLA check is currently breached, by check (absent unless the \
             job has an sla block; paused jobs are exempt).",
            None,
            MetricType::Gauge,
        )?;
        for s in self.0.iter() {
            late.encode_family(&[("job_name", s.job.as_str()), ("check", s.check)])?
                .encode_gauge(&i64::from(s.late))?;
        }
        let mut breaches = encoder.encode_descriptor(
            "cronstable_job_sla_breaches",
            "SLA breaches detected for the job, by check (absent unless the job has an sla \
             block).",
            None,
            MetricType::Counter,
        )?;
        for s in self.0.iter() {
            breaches
                .encode_family(&[("job_name", s.job.as_str()), ("check", s.check)])?
                .encode_counter::<NoLabelSet, u64, f64>(&s.breaches, None)?;
        }
        Ok(())
    }
}
