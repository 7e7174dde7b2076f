//! The `resourceLimits` families, one series per capped job: the caps
//! (`cronstable_job_cpu_limit_cpus`, `cronstable_job_memory_limit_bytes`,
//! `cronstable_job_process_limit`, each while that cap is set), the runs
//! the memory cap ended (`cronstable_job_memory_limit_exceeded_total`,
//! with the memory cap), and whether every cap of the latest run was
//! enforced (`cronstable_job_last_run_limits_enforced`, once a run with
//! caps is on record). The scheduler reads them off its table and run
//! history for each scrape; the counter is its own, kept since the daemon
//! started.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// One capped job as a scrape shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitsSeries {
    /// The `job_name` label.
    pub job: String,
    /// The CPU cap, CPUs.
    pub cpu: Option<f64>,
    /// The memory cap, bytes.
    pub memory: Option<u64>,
    /// The process cap.
    pub processes: Option<u64>,
    /// Runs the memory cap ended since the daemon started.
    pub memory_exceeded: u64,
    /// Whether every cap of the latest run with caps was enforced.
    pub last_run_enforced: Option<bool>,
}

/// The limits families of one scrape (nothing without capped jobs).
#[derive(Debug)]
pub(super) struct LimitsFamilies(pub(super) std::sync::Arc<Vec<LimitsSeries>>);

impl Collector for LimitsFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.0.is_empty() {
            return Ok(());
        }
        let series = &self.0;
        let mut cpu = encoder.encode_descriptor(
            "cronstable_job_cpu_limit_cpus",
            "The job's CPU cap in CPUs (absent unless resourceLimits.cpu is set).",
            None,
            MetricType::Gauge,
        )?;
        for s in series.iter() {
            if let Some(value) = s.cpu {
                cpu.encode_family(&[("job_name", s.job.as_str())])?
                    .encode_gauge(&value)?;
            }
        }
        let mut memory = encoder.encode_descriptor(
            "cronstable_job_memory_limit_bytes",
            "The job's memory cap in bytes (absent unless resourceLimits.memory is set).",
            None,
            MetricType::Gauge,
        )?;
        for s in series.iter() {
            if let Some(value) = s.memory {
                memory
                    .encode_family(&[("job_name", s.job.as_str())])?
                    .encode_gauge(&(value as i64))?;
            }
        }
        let mut processes = encoder.encode_descriptor(
            "cronstable_job_process_limit",
            "The job's process-count cap (absent unless resourceLimits.processes is set).",
            None,
            MetricType::Gauge,
        )?;
        for s in series.iter() {
            if let Some(value) = s.processes {
                processes
                    .encode_family(&[("job_name", s.job.as_str())])?
                    .encode_gauge(&(value as i64))?;
            }
        }
        let mut exceeded = encoder.encode_descriptor(
            "cronstable_job_memory_limit_exceeded",
            "Runs killed for exceeding the job's memory cap (absent unless resourceLimits.memory \
             is set).",
            None,
            MetricType::Counter,
        )?;
        for s in series.iter().filter(|s| s.memory.is_some()) {
            exceeded
                .encode_family(&[("job_name", s.job.as_str())])?
                .encode_counter::<NoLabelSet, u64, f64>(&s.memory_exceeded, None)?;
        }
        let mut enforced = encoder.encode_descriptor(
            "cronstable_job_last_run_limits_enforced",
            "Whether every cap of the job's most recent run was enforced (absent unless the job \
             and that run have resourceLimits).",
            None,
            MetricType::Gauge,
        )?;
        for s in series.iter() {
            if let Some(value) = s.last_run_enforced {
                enforced
                    .encode_family(&[("job_name", s.job.as_str())])?
                    .encode_gauge(&i64::from(value))?;
            }
        }
        Ok(())
    }
}
