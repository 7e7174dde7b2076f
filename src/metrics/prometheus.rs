//! Prometheus metrics: cumulative per-job counters (kept across reloads,
//! pruned for removed jobs) and the text / OpenMetrics exposition, with
//! gauges computed at scrape time from a snapshot the scheduler provides.
//!
//! The daemon-wide families go through the `prometheus-client` crate: a
//! scrape builds a [`Registry`] in which each component registers a
//! [`Collector`] for its own families (the daemon's, the durable store's,
//! the cluster's, the Kubernetes mode's); the crate's encoders write names, `_total`
//! suffixes, label escaping and the `# EOF` trailer. One spelling the
//! crate cannot produce is fixed afterwards: histogram bucket bounds. The
//! original (Python's prometheus_client) writes `le="1.0"`, the crate's
//! 0.0.4 encoder writes Go's `le="1"` and its OpenMetrics encoder writes
//! `1e16` where Python writes `1e+16`. A series selector such as
//! `le="1.0"` in a dashboard would silently stop matching, so
//! `respell_bucket_bounds` rewrites each `le` value of the encoded text
//! into Python's spelling. The crate's encoders are a closed set (no custom
//! encoder can be plugged into a registry), so a pass over the text is the
//! one way to get that spelling while keeping its registry and collectors.
//!
//! The per-job families are not encoded by the crate: they are the bulk
//! of the text (16 MB with 10,000 jobs), and the crate's per-sample calls,
//! repeated label escaping and the respelling pass made a scrape cost
//! around 100 ms. `job_text` writes them directly, in the crate's exact
//! bytes with the bounds already in Python's spelling, between the
//! daemon's families and the cluster's; and an [`Encoder`] keeps the
//! previous body and where each job's lines are in it, so a scrape after
//! one job ran copies the other jobs' lines instead of writing them. The
//! tests keep the crate-based collectors of those families
//! (`reference`) and compare the two encodings.

use crate::job::outcome::{Outcome, RunRecord};
// One implementation of Python's float spelling, shared with the log and
// report formatters; the name stays for the tests and readers here.
use crate::pyfmt::py_float as python_float;
use crate::status::{KubeState, LeadershipState};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use super::encode::Histogram;
pub use super::state::StateFacts;
use counters::{outcome_index, OUTCOMES};
pub use counters::{Counters, JobCounters};

mod counters;
mod extras;
mod job_text;
mod persisted;
mod query;
#[cfg(test)]
mod reference;
use super::encode::{gauge, single_gauge};
pub use query::{sample_line, text_samples, Sample};

/// Default histogram bounds (seconds) of `cronstable_job_duration_seconds`.
pub const DEFAULT_BUCKETS: [f64; 9] = [0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0];

/// Scrape-time facts about one job.
#[derive(Debug, Clone)]
pub struct JobGauges<'a> {
    /// Job name.
    pub name: &'a str,
    /// Schedule text.
    pub schedule: &'a str,
    /// `clusterPolicy`.
    pub cluster_policy: &'a str,
    /// Enabled in the loaded config.
    pub enabled: bool,
    /// Running instances.
    pub running: usize,
    /// Next scheduled fire (Unix time), when there is one.
    pub next_run: Option<f64>,
    /// The latest finished (non-skipped) run.
    pub last_run: Option<&'a RunRecord>,
    /// Paused now.
    pub paused: bool,
}

/// Scrape-time facts about the daemon.
#[derive(Debug, Clone)]
pub struct DaemonGauges<'a> {
    /// Daemon version.
    pub version: &'a str,
    /// Current job-set id.
    pub job_set_id: &'a str,
    /// Per-job facts, in config order.
    pub jobs: Vec<JobGauges<'a>>,
}

/// Output flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Text,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    /// Picks the format a scraper's `Accept` header asks for.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    /// The response's Content-Type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The `le` label value of a bucket bound: `+Inf`, else Python's repr.
fn bucket_bound(v: f64) -> String {
    if v.is_infinite() && v > 0.0 {
        "+Inf".into()
    } else {
        python_float(v)
    }
}

/// What one scrape encodes: the counters and the scheduler's gauges,
/// owned, because the registry's collectors must be `'static`.
#[derive(Debug, Clone)]
struct Scrape {
    version: String,
    job_set_id: String,
    start_time: f64,
    last_reload_ok: Option<bool>,
    last_reload_success: Option<f64>,
    /// The Kubernetes mode's state, as published when the scrape was
    /// taken (None without `--kube`).
    kube: Option<KubeState>,
    /// The leadership state, likewise (None without a `cluster` section).
    cluster: Option<LeadershipState>,
    /// The durable store's counters, read when the scrape was taken (None
    /// without an open store).
    state: Option<StateFacts>,
    /// The resource pools as the scheduler last saw them (empty without
    /// pools).
    pools: Arc<[super::pools::PoolGauge]>,
    /// The late-run series (see [`super::sla`]), empty without checks.
    sla: Arc<Vec<super::sla::SlaSeries>>,
    /// The `resourceLimits` series (see [`super::limits`]).
    limits: Arc<Vec<super::limits::LimitsSeries>>,
    /// When it was taken: the instant the cluster gauges are judged at,
    /// so the encoded text is a function of the scrape alone.
    taken: std::time::Instant,
    /// (quorate, leader, the leader's name) at `taken`: the only cluster
    /// values that move with the clock rather than with the stats.
    cluster_facts: Option<(bool, bool, Option<String>)>,
    /// Shared between scrapes while no job's row changed (see
    /// [`JobRows`]).
    jobs: Arc<Vec<Arc<JobRow>>>,
}

impl Scrape {
    /// Whether `other` encodes to the same text: every value equal, the
    /// per-job counters by identity (they are copied on write, so a
    /// recorded run gives a job new counters), the clock-judged cluster
    /// facts by value. The instant taken is not compared.
    fn same_output(&self, other: &Scrape) -> bool {
        self.version == other.version
            && self.job_set_id == other.job_set_id
            && self.start_time.to_bits() == other.start_time.to_bits()
            && self.last_reload_ok == other.last_reload_ok
            && self.last_reload_success.map(f64::to_bits)
                == other.last_reload_success.map(f64::to_bits)
            && self.kube == other.kube
            && self.cluster == other.cluster
            && self.state == other.state
            && self.pools == other.pools
            && self.sla == other.sla
            && self.limits == other.limits
            && self.cluster_facts == other.cluster_facts
            && (Arc::ptr_eq(&self.jobs, &other.jobs)
                || (self.jobs.len() == other.jobs.len()
                    && self
                        .jobs
                        .iter()
                        .zip(other.jobs.iter())
                        .all(|(a, b)| Arc::ptr_eq(a, b) || a.same_output(b))))
    }
}

/// One configured job at scrape time.
#[derive(Debug)]
struct JobRow {
    name: String,
    schedule: String,
    cluster_policy: String,
    enabled: bool,
    running: usize,
    next_run: Option<f64>,
    last_run: Option<LastRun>,
    paused: bool,
    counters: Arc<JobCounters>,
}

/// The facts the gauges read from the latest finished run.
#[derive(Debug)]
struct LastRun {
    finished: f64,
    duration: Option<f64>,
    retcode: i32,
    success: bool,
    /// CPU seconds and peak RSS, when the run was resource-monitored.
    resources: Option<(f64, u64)>,
}

impl JobRow {
    /// Whether this row is what `g`, `last_run` and `counters` would make.
    fn shows(
        &self,
        g: &JobGauges,
        last_run: &Option<LastRun>,
        counters: &Arc<JobCounters>,
    ) -> bool {
        self.enabled == g.enabled
            && self.running == g.running
            && self.paused == g.paused
            && self.next_run.map(f64::to_bits) == g.next_run.map(f64::to_bits)
            && Arc::ptr_eq(&self.counters, counters)
            && LastRun::same(&self.last_run, last_run)
            && self.name == g.name
            && self.schedule == g.schedule
            && self.cluster_policy == g.cluster_policy
    }

    fn same_output(&self, other: &JobRow) -> bool {
        self.name == other.name
            && self.schedule == other.schedule
            && self.cluster_policy == other.cluster_policy
            && self.enabled == other.enabled
            && self.running == other.running
            && self.next_run.map(f64::to_bits) == other.next_run.map(f64::to_bits)
            && self.paused == other.paused
            && Arc::ptr_eq(&self.counters, &other.counters)
            && LastRun::same(&self.last_run, &other.last_run)
    }
}

impl LastRun {
    /// Equal values (floats bit for bit: they are printed).
    fn same(a: &Option<LastRun>, b: &Option<LastRun>) -> bool {
        match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                a.finished.to_bits() == b.finished.to_bits()
                    && a.duration.map(f64::to_bits) == b.duration.map(f64::to_bits)
                    && a.retcode == b.retcode
                    && a.success == b.success
                    && a.resources.map(|(c, r)| (c.to_bits(), r))
                        == b.resources.map(|(c, r)| (c.to_bits(), r))
            }
            _ => false,
        }
    }
}

impl Scrape {
    fn take(counters: &Counters, gauges: &DaemonGauges, previous: Option<&JobRows>) -> Scrape {
        let rows = Scrape::rows(counters, gauges, previous.map(|p| &p.0[..]));
        Scrape::with_rows(counters, gauges, Arc::new(rows))
    }

    /// The rows of `gauges.jobs`, each the same (shared) row as
    /// `previous` has at its index when every value is the same: a
    /// snapshot after one job changed then allocates (and later frees)
    /// one row rather than 10,000, and comparing it with the previous
    /// snapshot, or encoding it from the previous body, skips the shared
    /// rows by identity.
    fn rows(
        counters: &Counters,
        gauges: &DaemonGauges,
        previous: Option<&[Arc<JobRow>]>,
    ) -> Vec<Arc<JobRow>> {
        // Jobs without counters yet (none recorded since they appeared)
        // read as zero, sharing one empty set.
        let empty = &counters.zero;
        gauges
            .jobs
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let counters = counters.jobs.get(g.name).unwrap_or(empty);
                let last_run = g.last_run.map(|r| LastRun {
                    finished: r.finished_at.timestamp_micros() as f64 / 1e6,
                    duration: r.duration_seconds(),
                    retcode: r.retcode,
                    success: r.outcome() == Outcome::Success,
                    resources: r
                        .resources
                        .as_ref()
                        .map(|u| (u.cpu_total_seconds(), u.max_rss_bytes)),
                });
                match previous.and_then(|p| p.get(i)) {
                    Some(old) if old.shows(g, &last_run, counters) => Arc::clone(old),
                    _ => Arc::new(JobRow {
                        name: g.name.to_owned(),
                        schedule: g.schedule.to_owned(),
                        cluster_policy: g.cluster_policy.to_owned(),
                        enabled: g.enabled,
                        running: g.running,
                        next_run: g.next_run,
                        last_run,
                        paused: g.paused,
                        counters: Arc::clone(counters),
                    }),
                }
            })
            .collect()
    }

    /// A scrape of the daemon-wide values now, with the per-job rows
    /// `jobs` (`gauges.jobs` is not read).
    fn with_rows(
        counters: &Counters,
        gauges: &DaemonGauges,
        jobs: Arc<Vec<Arc<JobRow>>>,
    ) -> Scrape {
        let taken = std::time::Instant::now();
        Scrape {
            version: gauges.version.to_owned(),
            job_set_id: gauges.job_set_id.to_owned(),
            start_time: counters.start_time,
            last_reload_ok: counters.last_reload_ok,
            last_reload_success: counters.last_reload_success,
            kube: None,
            cluster: None,
            state: None,
            pools: Arc::new([]),
            sla: Arc::new(Vec::new()),
            limits: Arc::new(Vec::new()),
            taken,
            cluster_facts: None,
            jobs,
        }
    }
}

/// The daemon's own families: build info, start time, job set, job
/// counts and the outcome of the latest configuration parse.
#[derive(Debug)]
struct DaemonFamilies(Arc<Scrape>);

impl Collector for DaemonFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &*self.0;
        let mut info = encoder.encode_descriptor(
            "cronstable_info",
            "cronstable build information.",
            None,
            MetricType::Gauge,
        )?;
        gauge(
            &mut info.encode_family(&[("version", s.version.as_str())])?,
            &1i64,
        )?;
        single_gauge(
            &mut encoder,
            "cronstable_start_time_seconds",
            "Unix time this cronstable process started.",
            &s.start_time,
        )?;
        let mut job_set = encoder.encode_descriptor(
            "cronstable_job_set_info",
            "Job-set id of the loaded configuration.",
            None,
            MetricType::Gauge,
        )?;
        gauge(
            &mut job_set.encode_family(&[("job_set_id", s.job_set_id.as_str())])?,
            &1i64,
        )?;
        let enabled = s.jobs.iter().filter(|j| j.enabled).count();
        let mut jobs = encoder.encode_descriptor(
            "cronstable_jobs",
            "Configured jobs by state.",
            None,
            MetricType::Gauge,
        )?;
        for (state, count) in [("enabled", enabled), ("disabled", s.jobs.len() - enabled)] {
            gauge(
                &mut jobs.encode_family(&[("state", state)])?,
                &(count as i64),
            )?;
        }
        // Absent until the first parse, as in the original.
        if let Some(ok) = s.last_reload_ok {
            single_gauge(
                &mut encoder,
                "cronstable_config_last_reload_successful",
                "Whether the latest configuration parse succeeded.",
                &i64::from(ok),
            )?;
        }
        if let Some(ts) = s.last_reload_success {
            single_gauge(
                &mut encoder,
                "cronstable_config_last_reload_success_timestamp_seconds",
                "Unix time of the latest successful configuration parse.",
                &ts,
            )?;
        }
        Ok(())
    }
}

/// Renders the exposition.
pub fn render(counters: &Counters, gauges: &DaemonGauges, format: Format) -> String {
    Snapshot::take(counters, gauges).encode(format)
}

/// The inputs of one exposition, taken (cheaply) where the state lives,
/// on the scheduler's thread, and encoded (the expensive part: 16 MB of
/// text with 10,000 jobs) wherever the caller likes: the HTTP API encodes
/// on its own thread, and keeps the last body while a new snapshot shows
/// nothing changed ([`Snapshot::same_output`]).
#[derive(Debug, Clone)]
pub struct Snapshot(Arc<Scrape>);

/// The per-job rows of a [`Snapshot`] (every job's gauges and a handle on
/// its counters), shared by reference.
#[derive(Debug, Clone)]
pub struct JobRows(Arc<Vec<Arc<JobRow>>>);

impl Snapshot {
    /// Takes the counters and the scheduler's gauges as they are now.
    pub fn take(counters: &Counters, gauges: &DaemonGauges) -> Snapshot {
        Snapshot(Arc::new(Scrape::take(counters, gauges, None)))
    }

    /// [`Snapshot::take`], sharing each row of `previous` (an earlier
    /// snapshot's rows, of any state) that has the same values: the
    /// same text, less work when few jobs changed.
    pub fn take_reusing(
        counters: &Counters,
        gauges: &DaemonGauges,
        previous: &JobRows,
    ) -> Snapshot {
        Snapshot(Arc::new(Scrape::take(counters, gauges, Some(previous))))
    }

    /// Takes the daemon-wide values as they are now, with the per-job
    /// rows of an earlier snapshot. Only for a caller that knows no row
    /// would differ: the same job table, the same per-job gauges and the
    /// same [`Counters::epoch`]. `gauges.jobs` is not read (it may be
    /// empty). Such a snapshot shares the rows, so comparing it with the
    /// earlier one costs nothing per job.
    pub fn take_with_rows(counters: &Counters, gauges: &DaemonGauges, rows: &JobRows) -> Snapshot {
        Snapshot(Arc::new(Scrape::with_rows(
            counters,
            gauges,
            Arc::clone(&rows.0),
        )))
    }

    /// This snapshot with the state the cluster and the Kubernetes mode
    /// publish, as read now: the scheduler takes the daemon's and the
    /// jobs' values, the reader of the published channels adds theirs.
    /// The cluster's clock-judged facts (quorate, leader) are judged at
    /// the instant the snapshot was taken.
    pub fn with_published(
        &self,
        cluster: Option<LeadershipState>,
        kube: Option<KubeState>,
    ) -> Snapshot {
        let s = &*self.0;
        let taken = s.taken;
        Snapshot(Arc::new(Scrape {
            version: s.version.clone(),
            job_set_id: s.job_set_id.clone(),
            start_time: s.start_time,
            last_reload_ok: s.last_reload_ok,
            last_reload_success: s.last_reload_success,
            cluster_facts: cluster
                .as_ref()
                .map(|c| (c.is_quorate(taken), c.is_leader(taken), c.leader(taken))),
            kube,
            cluster,
            state: s.state.clone(),
            pools: Arc::clone(&s.pools),
            sla: Arc::clone(&s.sla),
            limits: Arc::clone(&s.limits),
            taken,
            jobs: Arc::clone(&s.jobs),
        }))
    }

    /// This snapshot with the durable store's counters as read now (see
    /// [`StateFacts::read`]; None without an open store): the API reads
    /// them beside the published state.
    pub fn with_state(&self, state: Option<StateFacts>) -> Snapshot {
        let s = &*self.0;
        Snapshot(Arc::new(Scrape {
            version: s.version.clone(),
            job_set_id: s.job_set_id.clone(),
            start_time: s.start_time,
            last_reload_ok: s.last_reload_ok,
            last_reload_success: s.last_reload_success,
            cluster_facts: s.cluster_facts.clone(),
            kube: s.kube.clone(),
            cluster: s.cluster.clone(),
            state,
            pools: Arc::clone(&s.pools),
            sla: Arc::clone(&s.sla),
            limits: Arc::clone(&s.limits),
            taken: s.taken,
            jobs: Arc::clone(&s.jobs),
        }))
    }

    /// This snapshot's per-job rows, to share with a later snapshot
    /// ([`Snapshot::take_with_rows`]).
    pub fn rows(&self) -> JobRows {
        JobRows(Arc::clone(&self.0.jobs))
    }

    /// Whether this snapshot encodes to the same text as `other` (in the
    /// same format): true only when no value differs.
    pub fn same_output(&self, other: &Snapshot) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.same_output(&other.0)
    }

    /// The exposition text, every line written afresh.
    pub fn encode(&self, format: Format) -> String {
        write(&self.0, format, None).0
    }
}

/// An encoded exposition, shared rather than copied between whoever
/// serves it and the [`Encoder`] that copies lines out of it next time.
#[derive(Debug, Clone)]
pub struct Body(Arc<String>);

impl Body {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<[u8]> for Body {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// Encodes snapshots in one format, each from the previous one: the lines
/// of a job whose row (gauges and counters) is the one the previous
/// snapshot had are copied from the previous body, only the others are
/// written. A scrape after one job ran is then a copy of the 16 MB and
/// that job's lines, rather than 10,000 jobs' worth of number formatting.
#[derive(Debug)]
pub struct Encoder {
    format: Format,
    last: Option<Encoded>,
}

/// The previous encoding: its rows, its text, and where each job's lines
/// of each family are in it (see [`job_text::Starts`]).
#[derive(Debug)]
struct Encoded {
    rows: Arc<Vec<Arc<JobRow>>>,
    body: Body,
    starts: job_text::Starts,
}

impl Encoder {
    /// An encoder of `format` with nothing to copy from yet.
    pub fn new(format: Format) -> Encoder {
        Encoder { format, last: None }
    }

    /// The exposition of `snapshot`: the same text as
    /// [`Snapshot::encode`], reusing what it can of the previous call's.
    pub fn encode(&mut self, snapshot: &Snapshot) -> Body {
        let scrape = &snapshot.0;
        let last = self.last.take();
        let (text, starts) = write(scrape, self.format, last.as_ref());
        // The previous body is dropped here (unless a response still
        // holds it): only one is kept.
        drop(last);
        let body = Body(Arc::new(text));
        self.last = Some(Encoded {
            rows: Arc::clone(&scrape.jobs),
            body: body.clone(),
            starts,
        });
        body
    }
}

/// For each of `rows`, the index of the earlier row it equals (same job,
/// same values), whose lines can therefore be copied. Rows are looked up
/// by position first (the job table rarely changes), by name otherwise.
fn reusable(earlier: &[Arc<JobRow>], rows: &[Arc<JobRow>]) -> Vec<Option<usize>> {
    let mut by_name: Option<HashMap<&str, usize>> = None;
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let at = match earlier.get(i) {
                Some(old) if old.name == row.name => Some(i),
                _ => by_name
                    .get_or_insert_with(|| {
                        earlier
                            .iter()
                            .enumerate()
                            .map(|(j, old)| (old.name.as_str(), j))
                            .collect()
                    })
                    .get(row.name.as_str())
                    .copied(),
            };
            at.filter(|&j| Arc::ptr_eq(&earlier[j], row) || earlier[j].same_output(row))
        })
        .collect()
}

/// Encodes `scrape`: the daemon's families and, after the per-job ones,
/// the cluster's and the Kubernetes mode's through the crate (a few dozen
/// lines), the per-job families directly ([`job_text`]), copied from
/// `earlier` where a job's row did not change. Returns the text and where
/// each job's lines are in it.
fn write(
    scrape: &Arc<Scrape>,
    format: Format,
    earlier: Option<&Encoded>,
) -> (String, job_text::Starts) {
    let jobs = &scrape.jobs;
    let capacity = match earlier {
        Some(e) => e.body.0.len() + e.body.0.len() / 64 + 4096,
        None => 4096 + jobs.len() * 2048,
    };
    let mut out = String::with_capacity(capacity);
    encode_with_crate(&mut out, &head_registry(scrape), format, false);
    let reuse = match earlier {
        Some(e) if Arc::ptr_eq(&e.rows, jobs) => (0..jobs.len()).map(Some).collect(),
        Some(e) => reusable(&e.rows, jobs),
        None => vec![None; jobs.len()],
    };
    let copy_from = earlier.map(|e| job_text::Earlier {
        text: e.body.as_str(),
        starts: &e.starts,
        jobs: e.rows.len(),
    });
    let starts = job_text::write_families(&mut out, format, jobs, &reuse, copy_from.as_ref());
    let tail = tail_registry(scrape);
    encode_with_crate(&mut out, &tail, format, true);
    (out, starts)
}

/// The families before the per-job ones: the daemon's.
fn head_registry(scrape: &Arc<Scrape>) -> Registry {
    let mut head = Registry::default();
    head.register_collector(Box::new(DaemonFamilies(Arc::clone(scrape))));
    head
}

/// The families after the per-job ones: late runs and limits (which close
/// the per-job ones), then, in the original's order, the store's, the
/// pools', the cluster's and the Kubernetes mode's.
fn tail_registry(scrape: &Arc<Scrape>) -> Registry {
    let mut tail = Registry::default();
    tail.register_collector(Box::new(super::sla::SlaFamilies(Arc::clone(&scrape.sla))));
    tail.register_collector(Box::new(super::limits::LimitsFamilies(Arc::clone(
        &scrape.limits,
    ))));
    if let Some(state) = &scrape.state {
        tail.register_collector(Box::new(super::state::StateFamilies(state.clone())));
    }
    tail.register_collector(Box::new(super::pools::PoolFamilies(Arc::clone(
        &scrape.pools,
    ))));
    tail.register_collector(Box::new(super::cluster::ClusterFamilies {
        stats: scrape.cluster.clone(),
        now: scrape.taken,
    }));
    if let Some(kube) = &scrape.kube {
        tail.register_collector(Box::new(super::kube::KubeFamilies(kube.clone())));
    }
    tail
}

/// Appends `registry` encoded by the crate, bucket bounds respelled, and
/// when `last`, the OpenMetrics `# EOF` trailer.
fn encode_with_crate(out: &mut String, registry: &Registry, format: Format, last: bool) {
    let mut text = String::new();
    let encoded = match format {
        Format::Text => prometheus_client::encoding::prometheus_text::encode(&mut text, registry),
        Format::OpenMetrics if last => {
            prometheus_client::encoding::text::encode(&mut text, registry)
        }
        Format::OpenMetrics => {
            prometheus_client::encoding::text::encode_registry(&mut text, registry)
        }
    };
    // Writing into a String cannot fail and the collectors only pass the
    // writer's errors on; should it ever happen, the scrape still gets
    // what was written and the log says why it is short.
    if let Err(err) = encoded {
        tracing::error!(
            target: "cronstable::prometheus",
            "could not encode the metrics exposition: {err}"
        );
    }
    out.push_str(&respell_bucket_bounds(text));
}

/// Rewrites every histogram bucket bound (`le="…"`) of an encoded
/// exposition into Python's spelling (`1.0`, `1e+16`, `+Inf`); see the
/// module documentation for why. Only sample lines of a `_bucket` series
/// are looked at; the bounds seen are few, so each distinct spelling is
/// converted once.
fn respell_bucket_bounds(text: String) -> String {
    const LE: &str = "le=\"";
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut seen: Vec<(&str, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        let is_bucket = !line.starts_with('#')
            && line
                .split_once('{')
                .is_some_and(|(name, _)| name.ends_with("_bucket"));
        // Escaped label values never hold `="` (every `"` in them follows
        // a backslash), so a `le="` on the line is the label itself,
        // wherever the format puts it.
        let found = is_bucket.then(|| line.rfind(LE)).flatten().and_then(|at| {
            let start = at + LE.len();
            let len = line[start..].find('"')?;
            Some((start, start + len))
        });
        let Some((start, end)) = found else {
            out.push_str(line);
            continue;
        };
        let spelled = &line[start..end];
        let python = match seen
            .iter()
            .find(|(crate_spelling, _)| *crate_spelling == spelled)
        {
            Some((_, python)) => python,
            None => {
                let python = match spelled.parse::<f64>() {
                    Ok(v) => bucket_bound(v),
                    // `+Inf` parses too; anything else is left as it is.
                    Err(_) => spelled.to_owned(),
                };
                seen.push((spelled, python));
                &seen[seen.len() - 1].1
            }
        };
        out.push_str(&line[..start]);
        out.push_str(python);
        out.push_str(&line[end..]);
    }
    out
}

/// Groups samples by family for tests and tools: `name{labels}` → value.
pub fn parse_samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            let value = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().ok()?,
            };
            Some((key.to_owned(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let mut h = Histogram::new(&[1.0, 5.0]);
        h.observe(0.5);
        h.observe(3.0);
        h.observe(10.0);
        assert_eq!(h.counts, vec![1, 2]);
        assert_eq!(h.count, 3);
        assert_eq!(h.sum, 13.5);
    }

    #[test]
    fn counters_appear_at_a_jobs_first_record_and_are_pruned() {
        let mut c = Counters::new(0.0, None);
        c.retain_jobs(["a", "b"].into_iter());
        assert!(c.jobs.is_empty(), "no run yet, no counters");
        c.record_retry("a");
        c.record_retry("b");
        c.retain_jobs(["a"].into_iter());
        assert_eq!(c.jobs.len(), 1);
        assert_eq!(c.jobs["a"].retries, 1);
    }

    #[test]
    fn exposition_formats() {
        let mut c = Counters::new(100.0, Some(&[1.0]));
        c.retain_jobs(["j"].into_iter());
        let g = DaemonGauges {
            version: "0.1.0",
            job_set_id: "v1:x",
            jobs: vec![JobGauges {
                name: "j",
                schedule: "* * * * *",
                cluster_policy: "Leader",
                enabled: true,
                running: 0,
                next_run: Some(160.0),
                last_run: None,
                paused: false,
            }],
        };
        let text = render(&c, &g, Format::Text);
        assert!(text.contains("# TYPE cronstable_job_runs_total counter\n"));
        let samples = parse_samples(&text);
        assert_eq!(
            samples["cronstable_job_runs_total{job_name=\"j\",status=\"success\"}"],
            0.0
        );
        assert_eq!(
            samples["cronstable_job_next_run_timestamp_seconds{job_name=\"j\"}"],
            160.0
        );
        assert_eq!(
            samples["cronstable_job_duration_seconds_bucket{job_name=\"j\",le=\"+Inf\"}"],
            0.0
        );
        let om = render(&c, &g, Format::OpenMetrics);
        assert!(om.contains("# TYPE cronstable_job_runs counter\n"));
        assert!(om.ends_with("# EOF\n"));
    }

    #[test]
    fn floats_are_spelled_as_python_repr_spells_them() {
        for (v, want) in [
            (1.0, "1.0"),
            (60.0, "60.0"),
            (0.1, "0.1"),
            (0.5, "0.5"),
            (3600.0, "3600.0"),
            (2.5, "2.5"),
            (123.456, "123.456"),
            (0.001, "0.001"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.25e20, "1.25e+20"),
            (-2.0, "-2.0"),
            (0.0, "0.0"),
        ] {
            assert_eq!(python_float(v), want, "{v}");
        }
        assert_eq!(bucket_bound(f64::INFINITY), "+Inf");
    }

    #[test]
    fn bucket_bounds_reload_gauges_and_cluster_gauge() {
        let mut c = Counters::new(100.0, Some(&[0.5, 1.0, 60.0]));
        c.retain_jobs(["j"].into_iter());
        let g = DaemonGauges {
            version: "0.1.0",
            job_set_id: "v1:x",
            jobs: vec![],
        };
        let text = render(&c, &g, Format::Text);
        let samples = parse_samples(&text);
        assert_eq!(samples["cronstable_config_last_reload_successful"], 1.0);
        assert_eq!(
            samples["cronstable_config_last_reload_success_timestamp_seconds"],
            100.0
        );
        assert_eq!(samples["cronstable_cluster_enabled"], 0.0);
        let g = DaemonGauges {
            version: "0.1.0",
            job_set_id: "v1:x",
            jobs: vec![JobGauges {
                name: "j",
                schedule: "* * * * *",
                cluster_policy: "Leader",
                enabled: true,
                running: 0,
                next_run: None,
                last_run: None,
                paused: false,
            }],
        };
        let text = render(&c, &g, Format::Text);
        for le in ["0.5", "1.0", "60.0", "+Inf"] {
            let key =
                format!("cronstable_job_duration_seconds_bucket{{job_name=\"j\",le=\"{le}\"}}");
            assert!(text.contains(&key), "{key} missing:\n{text}");
        }
        assert!(!text.contains("le=\"1\""), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        let c = Counters::new(0.0, None);
        let g = DaemonGauges {
            version: "a\"b\\c\nd",
            job_set_id: "v1:x",
            jobs: vec![],
        };
        for format in [Format::Text, Format::OpenMetrics] {
            let text = render(&c, &g, format);
            assert!(
                text.contains("cronstable_info{version=\"a\\\"b\\\\c\\nd\"} 1\n"),
                "{text}"
            );
        }
    }
}
