//! Prometheus metrics: cumulative per-job counters (kept across reloads,
//! pruned for removed jobs) and the text / OpenMetrics exposition, with
//! gauges computed at scrape time from a snapshot the scheduler provides.

use crate::job::outcome::{Outcome, RunRecord};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// Default histogram bounds (seconds) of `cronstable_job_duration_seconds`.
pub const DEFAULT_BUCKETS: [f64; 9] = [0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0];

/// A cumulative histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: Vec<f64>,
    counts: Vec<u64>,
    sum: f64,
    count: u64,
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

/// One job's cumulative counters.
#[derive(Debug, Clone, PartialEq)]
pub struct JobCounters {
    runs: [u64; 4],
    duration: Histogram,
    retries: u64,
    permanent_failures: u64,
    start_failures: u64,
    last_success: Option<f64>,
    last_failure: Option<f64>,
}

impl JobCounters {
    fn new(bounds: &[f64]) -> Self {
        JobCounters {
            runs: [0; 4],
            duration: Histogram::new(bounds),
            retries: 0,
            permanent_failures: 0,
            start_failures: 0,
            last_success: None,
            last_failure: None,
        }
    }
}

fn outcome_index(outcome: Outcome) -> usize {
    match outcome {
        Outcome::Success => 0,
        Outcome::Failure => 1,
        Outcome::Cancelled => 2,
        Outcome::Skipped => 3,
    }
}

const OUTCOMES: [Outcome; 4] = [
    Outcome::Success,
    Outcome::Failure,
    Outcome::Cancelled,
    Outcome::Skipped,
];

/// Counters of the whole daemon.
#[derive(Debug, Clone)]
pub struct Counters {
    bounds: Vec<f64>,
    jobs: HashMap<String, JobCounters>,
    /// Unix time the daemon started.
    pub start_time: f64,
    /// Outcome of the latest config parse; `None` only before the first
    /// parse (the families are absent until then, as in the original).
    pub last_reload_ok: Option<bool>,
    /// Unix time of the latest successful parse.
    pub last_reload_success: Option<f64>,
    /// Whether a cluster leadership backend runs on this node; this build
    /// has none, so it stays `false` and the gauge reads `0`.
    pub cluster_enabled: bool,
}

impl Counters {
    /// Fresh counters of a daemon whose first configuration parse has just
    /// succeeded at `start_time` (a Unix time): the scheduler is only ever
    /// built from a parsed configuration, so the reload gauges are present
    /// from the first scrape, as the original's are after its first parse.
    pub fn new(start_time: f64, bounds: Option<&[f64]>) -> Self {
        Counters {
            bounds: bounds.unwrap_or(&DEFAULT_BUCKETS).to_vec(),
            jobs: HashMap::new(),
            start_time,
            last_reload_ok: Some(true),
            last_reload_success: Some(start_time),
            cluster_enabled: false,
        }
    }

    /// Changes the histogram bounds; histograms restart from zero when
    /// they change (an ordinary counter reset to Prometheus).
    pub fn set_buckets(&mut self, bounds: Option<&[f64]>) {
        let bounds = bounds.unwrap_or(&DEFAULT_BUCKETS).to_vec();
        if bounds != self.bounds {
            for counters in self.jobs.values_mut() {
                counters.duration = Histogram::new(&bounds);
            }
            self.bounds = bounds;
        }
    }

    fn job(&mut self, name: &str) -> &mut JobCounters {
        let bounds = &self.bounds;
        self.jobs
            .entry(name.to_owned())
            .or_insert_with(|| JobCounters::new(bounds))
    }

    /// Records a finished (or skipped) run. Replaced runs are not runs.
    pub fn record_run(&mut self, record: &RunRecord) {
        if record.replaced {
            return;
        }
        let outcome = record.outcome();
        let finished = record.finished_at.timestamp_micros() as f64 / 1e6;
        let counters = self.job(&record.job);
        counters.runs[outcome_index(outcome)] += 1;
        if record.start_error.is_some() {
            counters.start_failures += 1;
        }
        if let Some(duration) = record.duration_seconds() {
            counters.duration.observe(duration);
        }
        match outcome {
            Outcome::Success => counters.last_success = Some(finished),
            Outcome::Failure => counters.last_failure = Some(finished),
            _ => {}
        }
    }

    /// Counts a launched retry.
    pub fn record_retry(&mut self, job: &str) {
        self.job(job).retries += 1;
    }

    /// Counts a permanent failure.
    pub fn record_permanent_failure(&mut self, job: &str) {
        self.job(job).permanent_failures += 1;
    }

    /// Drops series of jobs no longer configured; zero-fills the rest.
    pub fn retain_jobs<'a>(&mut self, names: impl Iterator<Item = &'a str>) {
        let keep: std::collections::HashSet<&str> = names.collect();
        self.jobs.retain(|name, _| keep.contains(name.as_str()));
        for name in keep {
            self.job(name);
        }
    }
}

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

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Spells a float the way Python's `repr(float)` does, which is how the
/// original writes histogram bounds: dashboards and alert rules select on
/// `le="1.0"`, so `le="1"` would be a different series to them.
pub fn python_float(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // `{:e}` gives the shortest digits that round-trip, like Python's
    // repr; only the layout (fixed or scientific) differs and is redone.
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if v < 0.0 { "-" } else { "" };
    // Python switches to scientific notation below 1e-4 and from 1e16.
    if !(-4..16).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let frac = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if (point as usize) >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// The `le` label value of a bucket bound: `+Inf`, else Python's repr.
fn bucket_bound(v: f64) -> String {
    if v.is_infinite() && v > 0.0 {
        "+Inf".into()
    } else {
        python_float(v)
    }
}

fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

struct Writer {
    out: String,
    format: Format,
}

impl Writer {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let declared = match (self.format, kind) {
            (Format::OpenMetrics, "counter") => name.trim_end_matches("_total"),
            _ => name,
        };
        let _ = writeln!(self.out, "# HELP {declared} {help}");
        let _ = writeln!(self.out, "# TYPE {declared} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }
}

/// Renders the exposition.
pub fn render(counters: &Counters, gauges: &DaemonGauges, format: Format) -> String {
    let mut w = Writer {
        out: String::with_capacity(256 + gauges.jobs.len() * 2048),
        format,
    };
    w.family("cronstable_info", "gauge", "cronstable build information.");
    w.sample("cronstable_info", &[("version", gauges.version)], 1.0);
    w.family(
        "cronstable_start_time_seconds",
        "gauge",
        "Unix time this cronstable process started.",
    );
    w.sample("cronstable_start_time_seconds", &[], counters.start_time);
    w.family(
        "cronstable_job_set_info",
        "gauge",
        "Job-set id of the loaded configuration.",
    );
    w.sample(
        "cronstable_job_set_info",
        &[("job_set_id", gauges.job_set_id)],
        1.0,
    );
    let enabled = gauges.jobs.iter().filter(|j| j.enabled).count();
    w.family("cronstable_jobs", "gauge", "Configured jobs by state.");
    w.sample("cronstable_jobs", &[("state", "enabled")], enabled as f64);
    w.sample(
        "cronstable_jobs",
        &[("state", "disabled")],
        (gauges.jobs.len() - enabled) as f64,
    );
    if let Some(ok) = counters.last_reload_ok {
        w.family(
            "cronstable_config_last_reload_successful",
            "gauge",
            "Whether the latest configuration parse succeeded.",
        );
        w.sample(
            "cronstable_config_last_reload_successful",
            &[],
            if ok { 1.0 } else { 0.0 },
        );
    }
    if let Some(ts) = counters.last_reload_success {
        w.family(
            "cronstable_config_last_reload_success_timestamp_seconds",
            "gauge",
            "Unix time of the latest successful configuration parse.",
        );
        w.sample(
            "cronstable_config_last_reload_success_timestamp_seconds",
            &[],
            ts,
        );
    }

    let empty = JobCounters::new(&counters.bounds);
    let per_job: Vec<(&JobGauges, &JobCounters)> = gauges
        .jobs
        .iter()
        .map(|g| (g, counters.jobs.get(g.name).unwrap_or(&empty)))
        .collect();

    w.family(
        "cronstable_job_runs_total",
        "counter",
        "Finished runs by outcome.",
    );
    for (g, c) in &per_job {
        for outcome in OUTCOMES {
            w.sample(
                "cronstable_job_runs_total",
                &[("job_name", g.name), ("status", outcome.as_str())],
                c.runs[outcome_index(outcome)] as f64,
            );
        }
    }
    w.family(
        "cronstable_job_duration_seconds",
        "histogram",
        "Duration of finished runs.",
    );
    for (g, c) in &per_job {
        for (bound, count) in c.duration.bounds.iter().zip(&c.duration.counts) {
            w.sample(
                "cronstable_job_duration_seconds_bucket",
                &[("job_name", g.name), ("le", &bucket_bound(*bound))],
                *count as f64,
            );
        }
        w.sample(
            "cronstable_job_duration_seconds_bucket",
            &[("job_name", g.name), ("le", "+Inf")],
            c.duration.count as f64,
        );
        w.sample(
            "cronstable_job_duration_seconds_sum",
            &[("job_name", g.name)],
            c.duration.sum,
        );
        w.sample(
            "cronstable_job_duration_seconds_count",
            &[("job_name", g.name)],
            c.duration.count as f64,
        );
    }
    type Count = fn(&JobCounters) -> u64;
    type Stamp = fn(&JobCounters) -> Option<f64>;
    let counter_families: [(&str, &str, Count); 3] = [
        (
            "cronstable_job_retries_total",
            "Retry attempts launched.",
            |c| c.retries,
        ),
        (
            "cronstable_job_permanent_failures_total",
            "Failures with no retry remaining.",
            |c| c.permanent_failures,
        ),
        (
            "cronstable_job_start_failures_total",
            "Runs whose command could not be started.",
            |c| c.start_failures,
        ),
    ];
    for (name, help, get) in counter_families {
        w.family(name, "counter", help);
        for (g, c) in &per_job {
            w.sample(name, &[("job_name", g.name)], get(c) as f64);
        }
    }
    let timestamp_families: [(&str, &str, Stamp); 2] = [
        (
            "cronstable_job_last_success_timestamp_seconds",
            "Unix time of the last successful finish.",
            |c| c.last_success,
        ),
        (
            "cronstable_job_last_failure_timestamp_seconds",
            "Unix time of the last failed finish.",
            |c| c.last_failure,
        ),
    ];
    for (name, help, get) in timestamp_families {
        w.family(name, "gauge", help);
        for (g, c) in &per_job {
            if let Some(ts) = get(c) {
                w.sample(name, &[("job_name", g.name)], ts);
            }
        }
    }
    w.family("cronstable_job_info", "gauge", "Static job configuration.");
    for g in &gauges.jobs {
        w.sample(
            "cronstable_job_info",
            &[
                ("job_name", g.name),
                ("schedule", g.schedule),
                ("cluster_policy", g.cluster_policy),
            ],
            1.0,
        );
    }
    type Gauge = fn(&JobGauges) -> Option<f64>;
    let gauge_families: [(&str, &str, Gauge); 8] = [
        ("cronstable_job_enabled", "1 if the job is enabled.", |g| {
            Some(f64::from(u8::from(g.enabled)))
        }),
        ("cronstable_job_running", "Running instances.", |g| {
            Some(g.running as f64)
        }),
        (
            "cronstable_job_next_run_timestamp_seconds",
            "Unix time of the next scheduled run.",
            |g| g.next_run,
        ),
        (
            "cronstable_job_last_run_timestamp_seconds",
            "Unix time the most recent run finished.",
            |g| {
                g.last_run
                    .map(|r| r.finished_at.timestamp_micros() as f64 / 1e6)
            },
        ),
        (
            "cronstable_job_last_run_duration_seconds",
            "Duration of the most recent run.",
            |g| g.last_run.and_then(RunRecord::duration_seconds),
        ),
        (
            "cronstable_job_last_run_exit_code",
            "Exit code of the most recent run.",
            |g| g.last_run.map(|r| f64::from(r.retcode)),
        ),
        (
            "cronstable_job_last_run_success",
            "1 if the most recent run succeeded.",
            |g| {
                g.last_run
                    .map(|r| f64::from(u8::from(r.outcome() == Outcome::Success)))
            },
        ),
        ("cronstable_job_paused", "1 while the job is paused.", |g| {
            Some(f64::from(u8::from(g.paused)))
        }),
    ];
    for (name, help, get) in gauge_families {
        w.family(name, "gauge", help);
        for g in &gauges.jobs {
            if let Some(v) = get(g) {
                w.sample(name, &[("job_name", g.name)], v);
            }
        }
    }
    // Without a cluster section the original still exports this one
    // cluster family (as 0), and alert rules may select on it.
    w.family(
        "cronstable_cluster_enabled",
        "gauge",
        "Whether a cluster leadership backend is running on this node.",
    );
    w.sample(
        "cronstable_cluster_enabled",
        &[],
        f64::from(u8::from(counters.cluster_enabled)),
    );
    if format == Format::OpenMetrics {
        w.out.push_str("# EOF\n");
    }
    w.out
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
    fn counters_are_zero_filled_and_pruned() {
        let mut c = Counters::new(0.0, None);
        c.retain_jobs(["a", "b"].into_iter());
        c.record_retry("a");
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
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
