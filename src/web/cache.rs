//! Response bodies shared between pollers until what they show changes.
//!
//! Prometheus scrapes `/metrics` every 15 s or so, and several may; with
//! 10,000 jobs the body is 16 MB and takes tens of milliseconds to encode.
//! The scheduler answers each request with a cheap snapshot of its state
//! ([`Snapshot`]); when the snapshot shows nothing that the previous one
//! did not, the body encoded from the previous one is served again. A
//! snapshot compares every value the text is made from (the per-job
//! counters by identity: they are copied whenever a run is recorded), so a
//! cached body is never older than the state: it is exactly what encoding
//! now would produce. When something did change, the body is still not
//! written from scratch: each format's [`Encoder`] copies the lines of
//! every job whose row is unchanged from the previous body and writes
//! only the others.

use super::views::{RenderedJobs, StatusNames};
use crate::metrics::prometheus::{Encoder, Format, Snapshot};
use crate::scheduler::control::{ControlError, ControlHandle, JobsAnswer, Stamp, StatusTable};
use axum::body::Bytes;
use std::sync::{Arc, Mutex, PoisonError};

/// The last `GET /jobs` rendering, with the scheduler's stamp of the state
/// it shows.
///
/// Each request asks the scheduler whether anything changed since that
/// stamp (an O(1) check on its thread, see
/// [`ControlHandle::jobs_since`]); while nothing did, the rendering is
/// served again, its countdowns written in for the moment of serving. The
/// scheduler withholds a stamp whenever a rendering could go stale
/// without it seeing a change, so such a state is rendered per request.
/// The last rendering is kept either way: a new one copies from it the
/// entry of every job whose snapshot shows the same
/// ([`RenderedJobs::render_after`]).
#[derive(Debug, Default)]
pub struct JobsCache {
    /// The last rendering, with its stamp when it may be served again.
    last: Mutex<Option<(Option<Stamp>, Arc<RenderedJobs>)>>,
}

/// Why the job list could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    /// The scheduler did not answer.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// Serializing failed (it writes to memory: it does not).
    #[error("cannot encode the job list: {0}")]
    Encode(#[from] serde_json::Error),
}

impl JobsCache {
    /// The rendering of the job list as it is now.
    pub async fn current(&self, control: &ControlHandle) -> Result<Arc<RenderedJobs>, JobsError> {
        let since = self.slot().as_ref().and_then(|(stamp, _)| *stamp);
        match control.jobs_since(since).await? {
            JobsAnswer::Unchanged => {
                if let Some((stamp, rendered)) = self.slot().as_ref() {
                    if stamp.is_some() && *stamp == since {
                        return Ok(Arc::clone(rendered));
                    }
                }
                // Another request replaced the rendering meanwhile: ask
                // for the state itself.
                match control.jobs_since(None).await? {
                    JobsAnswer::Changed { stamp, jobs } => self.render(stamp, jobs).await,
                    JobsAnswer::Unchanged => Err(ControlError::Unavailable.into()),
                }
            }
            JobsAnswer::Changed { stamp, jobs } => self.render(stamp, jobs).await,
        }
    }

    async fn render(
        &self,
        stamp: Option<Stamp>,
        jobs: Vec<crate::scheduler::control::JobSnapshot>,
    ) -> Result<Arc<RenderedJobs>, JobsError> {
        let previous = self
            .slot()
            .as_ref()
            .map(|(_, rendered)| Arc::clone(rendered));
        // Milliseconds with 10,000 jobs (tens when every entry is new): on
        // the blocking pool, so other requests on the API's runtime go on
        // meanwhile.
        let rendered = match tokio::task::spawn_blocking(move || {
            RenderedJobs::render_after(previous.as_deref(), jobs)
        })
        .await
        {
            Ok(rendered) => Arc::new(rendered?),
            // The blocking pool is gone (shutting down).
            Err(_) => return Err(ControlError::Unavailable.into()),
        };
        let replaced = self.slot().replace((stamp, Arc::clone(&rendered)));
        // Freeing 10,000 snapshots takes a while too: not on this thread.
        if let Some(old) = replaced {
            drop(tokio::task::spawn_blocking(move || drop(old)));
        }
        Ok(rendered)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<(Option<Stamp>, Arc<RenderedJobs>)>> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The per-table part of every `GET /status` body ([`StatusNames`]: the
/// escaped names and what each config says of its row), kept until the
/// scheduler installs a new job table.
#[derive(Debug, Default)]
pub struct StatusCache {
    names: Mutex<Option<Arc<StatusNames>>>,
}

impl StatusCache {
    /// The names of `table`'s jobs: the kept ones while they are of the
    /// same table (its id has not moved), else made now and kept.
    pub fn names(&self, table: &StatusTable) -> Arc<StatusNames> {
        if let Some(names) = self.slot().as_ref().filter(|n| n.fits(table)) {
            return Arc::clone(names);
        }
        let names = Arc::new(StatusNames::of(table));
        *self.slot() = Some(Arc::clone(&names));
        names
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<StatusNames>>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The last `/metrics` body in each format, with the snapshot it encodes,
/// and each format's [`Encoder`], which writes the next body from the
/// last one (copying the lines of the jobs that did not change).
#[derive(Debug)]
pub struct MetricsCache {
    text: Mutex<Option<(Snapshot, Bytes)>>,
    open_metrics: Mutex<Option<(Snapshot, Bytes)>>,
    text_encoder: Arc<Mutex<Encoder>>,
    open_metrics_encoder: Arc<Mutex<Encoder>>,
}

impl Default for MetricsCache {
    fn default() -> Self {
        MetricsCache {
            text: Mutex::default(),
            open_metrics: Mutex::default(),
            text_encoder: Arc::new(Mutex::new(Encoder::new(Format::Text))),
            open_metrics_encoder: Arc::new(Mutex::new(Encoder::new(Format::OpenMetrics))),
        }
    }
}

impl MetricsCache {
    fn slot(&self, format: Format) -> &Mutex<Option<(Snapshot, Bytes)>> {
        match format {
            Format::Text => &self.text,
            Format::OpenMetrics => &self.open_metrics,
        }
    }

    fn encoder(&self, format: Format) -> &Arc<Mutex<Encoder>> {
        match format {
            Format::Text => &self.text_encoder,
            Format::OpenMetrics => &self.open_metrics_encoder,
        }
    }

    /// The body for `snapshot` in `format`: the cached one when it encodes
    /// the same, else a fresh encoding (on a blocking thread, so other
    /// requests on the API's runtime go on meanwhile), which replaces it.
    pub async fn body(self: &Arc<Self>, snapshot: Snapshot, format: Format) -> Bytes {
        if let Some(body) = self.cached(&snapshot, format) {
            return body;
        }
        let encode = {
            let snapshot = snapshot.clone();
            let encoder = Arc::clone(self.encoder(format));
            // Concurrent scrapes of one format take turns: the second
            // then copies nearly everything from the first one's body.
            move || {
                let body = encoder
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .encode(&snapshot);
                Bytes::from_owner(body)
            }
        };
        let body = match tokio::task::spawn_blocking(encode).await {
            Ok(body) => body,
            // The blocking pool is gone (the runtime is shutting down):
            // encode here rather than fail the scrape.
            Err(_) => Bytes::from(snapshot.encode(format)),
        };
        *self
            .slot(format)
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((snapshot, body.clone()));
        body
    }

    fn cached(&self, snapshot: &Snapshot, format: Format) -> Option<Bytes> {
        let slot = self
            .slot(format)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slot.as_ref()
            .filter(|(old, _)| old.same_output(snapshot))
            .map(|(_, body)| body.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::outcome::RunRecord;
    use crate::job::Trigger;
    use crate::metrics::prometheus::{Counters, DaemonGauges, JobGauges};

    fn gauges(next_run: f64, running: usize) -> DaemonGauges<'static> {
        DaemonGauges {
            version: "0.1.0",
            job_set_id: "v1:x",
            jobs: vec![JobGauges {
                name: "j",
                schedule: "* * * * *",
                cluster_policy: "Leader",
                enabled: true,
                running,
                next_run: Some(next_run),
                last_run: None,
                paused: false,
            }],
        }
    }

    fn runs_total(body: &Bytes) -> String {
        let text = std::str::from_utf8(body).expect("utf-8");
        text.lines()
            .find(|l| l.starts_with("cronstable_job_runs_total{job_name=\"j\",status=\"success\"}"))
            .unwrap_or_default()
            .to_owned()
    }

    #[tokio::test]
    async fn a_body_is_reused_only_while_nothing_it_shows_changed() {
        let cache = Arc::new(MetricsCache::default());
        let mut counters = Counters::new(100.0, None);
        counters.retain_jobs(["j"].into_iter());
        let first = cache
            .body(Snapshot::take(&counters, &gauges(160.0, 0)), Format::Text)
            .await;
        // The same state: the very same buffer comes back.
        let again = cache
            .body(Snapshot::take(&counters, &gauges(160.0, 0)), Format::Text)
            .await;
        assert_eq!(first.as_ptr(), again.as_ptr(), "served from the cache");
        // The other format is cached on its own.
        let om = cache
            .body(
                Snapshot::take(&counters, &gauges(160.0, 0)),
                Format::OpenMetrics,
            )
            .await;
        assert!(std::str::from_utf8(&om).unwrap().ends_with("# EOF\n"));

        // A recorded run gives the job new counters: a fresh body.
        let at = chrono::Utc::now();
        counters.record_run(&RunRecord::begun(1, "j".into(), Trigger::Schedule, 0, at));
        let after_run = cache
            .body(Snapshot::take(&counters, &gauges(160.0, 0)), Format::Text)
            .await;
        assert!(runs_total(&first).ends_with(" 0"), "{}", runs_total(&first));
        assert!(
            runs_total(&after_run).ends_with(" 1"),
            "{}",
            runs_total(&after_run)
        );

        // A gauge that moves (the next fire, a running instance) too.
        let moved = cache
            .body(Snapshot::take(&counters, &gauges(220.0, 0)), Format::Text)
            .await;
        assert_ne!(moved, after_run);
        assert!(std::str::from_utf8(&moved).unwrap().contains("220.0"));
        let running = cache
            .body(Snapshot::take(&counters, &gauges(220.0, 1)), Format::Text)
            .await;
        assert_ne!(running, moved);
        // Each fresh body equals what encoding the state now gives.
        assert_eq!(
            running,
            Bytes::from(Snapshot::take(&counters, &gauges(220.0, 1)).encode(Format::Text))
        );
    }
}
