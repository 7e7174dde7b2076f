//! The per-job families as they were encoded before they were written
//! directly: collectors for the `prometheus-client` registry, kept for
//! the tests only, which prove that the direct writer (`job_text`)
//! produces the very same bytes.

use super::{
    outcome_index, respell_bucket_bounds, DaemonFamilies, Format, JobCounters, JobRow, Scrape,
    OUTCOMES,
};
use crate::metrics::encode::gauge;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::sync::Arc;

/// The per-job cumulative families: runs by outcome, the duration
/// histogram, retries, permanent and start failures, and the times of the
/// last success and failure.
#[derive(Debug)]
struct JobCounterFamilies(Arc<Scrape>);

impl Collector for JobCounterFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let jobs = &self.0.jobs[..];
        // Counter families are declared without `_total`: the encoders add
        // it where each format wants it (everywhere in 0.0.4, on samples
        // only in OpenMetrics).
        let mut runs = encoder.encode_descriptor(
            "cronstable_job_runs",
            "Finished runs by outcome.",
            None,
            MetricType::Counter,
        )?;
        for job in jobs {
            for outcome in OUTCOMES {
                runs.encode_family(&[
                    ("job_name", job.name.as_str()),
                    ("status", outcome.as_str()),
                ])?
                .encode_counter::<NoLabelSet, u64, f64>(
                    &job.counters.runs[outcome_index(outcome)],
                    None,
                )?;
            }
        }
        let mut duration = encoder.encode_descriptor(
            "cronstable_job_duration_seconds",
            "Duration of finished runs.",
            None,
            MetricType::Histogram,
        )?;
        let mut buckets = Vec::new();
        for job in jobs {
            let h = &job.counters.duration;
            // The encoders take per-bucket counts (they accumulate them);
            // ours are cumulative, and the `+Inf` bucket is explicit.
            h.buckets_into(&mut buckets);
            duration
                .encode_family(&[("job_name", job.name.as_str())])?
                .encode_histogram::<NoLabelSet>(h.sum, h.count, &buckets, None)?;
        }
        type Count = fn(&JobCounters) -> u64;
        let counter_families: [(&str, &str, Count); 3] = [
            ("cronstable_job_retries", "Retry attempts launched.", |c| {
                c.retries
            }),
            (
                "cronstable_job_permanent_failures",
                "Failures with no retry remaining.",
                |c| c.permanent_failures,
            ),
            (
                "cronstable_job_start_failures",
                "Runs whose command could not be started.",
                |c| c.start_failures,
            ),
        ];
        for (name, help, get) in counter_families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for job in jobs {
                family
                    .encode_family(&[("job_name", job.name.as_str())])?
                    .encode_counter::<NoLabelSet, u64, f64>(&get(&job.counters), None)?;
            }
        }
        type Stamp = fn(&JobCounters) -> Option<f64>;
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
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for job in jobs {
                if let Some(ts) = get(&job.counters) {
                    gauge(
                        &mut family.encode_family(&[("job_name", job.name.as_str())])?,
                        &ts,
                    )?;
                }
            }
        }
        let mut cpu = encoder.encode_descriptor(
            "cronstable_job_cpu_seconds",
            "CPU time of resource-monitored runs, by mode.",
            None,
            MetricType::Counter,
        )?;
        for job in jobs.iter().filter(|j| j.counters.cpu_count > 0) {
            for (mode, value) in [
                ("user", job.counters.cpu_user),
                ("system", job.counters.cpu_system),
            ] {
                cpu.encode_family(&[("job_name", job.name.as_str()), ("mode", mode)])?
                    .encode_counter::<NoLabelSet, f64, f64>(&value, None)?;
            }
        }
        let mut peak = encoder.encode_descriptor(
            "cronstable_job_peak_rss_bytes",
            "Highest resident set of any resource-monitored run.",
            None,
            MetricType::Gauge,
        )?;
        for job in jobs.iter().filter(|j| j.counters.max_rss > 0) {
            let bytes = i64::try_from(job.counters.max_rss).unwrap_or(i64::MAX);
            gauge(
                &mut peak.encode_family(&[("job_name", job.name.as_str())])?,
                &bytes,
            )?;
        }
        Ok(())
    }
}

/// A gauge value of one job at scrape time.
#[derive(Debug, Clone, Copy)]
enum Reading {
    Int(i64),
    Float(f64),
}

/// The per-job state gauges, computed at scrape time.
#[derive(Debug)]
struct JobStateFamilies(Arc<Scrape>);

impl Collector for JobStateFamilies {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let jobs = &self.0.jobs[..];
        let mut info = encoder.encode_descriptor(
            "cronstable_job_info",
            "Static job configuration.",
            None,
            MetricType::Gauge,
        )?;
        for job in jobs {
            gauge(
                &mut info.encode_family(&[
                    ("job_name", job.name.as_str()),
                    ("schedule", job.schedule.as_str()),
                    ("cluster_policy", job.cluster_policy.as_str()),
                ])?,
                &1i64,
            )?;
        }
        type Read = fn(&JobRow) -> Option<Reading>;
        let families: [(&str, &str, Read); 10] = [
            ("cronstable_job_enabled", "1 if the job is enabled.", |j| {
                Some(Reading::Int(i64::from(j.enabled)))
            }),
            ("cronstable_job_running", "Running instances.", |j| {
                Some(Reading::Int(i64::try_from(j.running).unwrap_or(i64::MAX)))
            }),
            (
                "cronstable_job_next_run_timestamp_seconds",
                "Unix time of the next scheduled run.",
                |j| j.next_run.map(Reading::Float),
            ),
            (
                "cronstable_job_last_run_timestamp_seconds",
                "Unix time the most recent run finished.",
                |j| j.last_run.as_ref().map(|r| Reading::Float(r.finished)),
            ),
            (
                "cronstable_job_last_run_duration_seconds",
                "Duration of the most recent run.",
                |j| {
                    j.last_run
                        .as_ref()
                        .and_then(|r| r.duration)
                        .map(Reading::Float)
                },
            ),
            (
                "cronstable_job_last_run_exit_code",
                "Exit code of the most recent run.",
                |j| {
                    j.last_run
                        .as_ref()
                        .map(|r| Reading::Int(i64::from(r.retcode)))
                },
            ),
            (
                "cronstable_job_last_run_success",
                "1 if the most recent run succeeded.",
                |j| {
                    j.last_run
                        .as_ref()
                        .map(|r| Reading::Int(i64::from(r.success)))
                },
            ),
            (
                "cronstable_job_last_run_cpu_seconds",
                "CPU time of the most recent run, when it was monitored.",
                |j| {
                    j.last_run
                        .as_ref()
                        .and_then(|r| r.resources)
                        .map(|(cpu, _)| Reading::Float(cpu))
                },
            ),
            (
                "cronstable_job_last_run_max_rss_bytes",
                "Peak resident set of the most recent run, when it was monitored.",
                |j| {
                    j.last_run
                        .as_ref()
                        .and_then(|r| r.resources)
                        .map(|(_, rss)| Reading::Int(i64::try_from(rss).unwrap_or(i64::MAX)))
                },
            ),
            ("cronstable_job_paused", "1 while the job is paused.", |j| {
                Some(Reading::Int(i64::from(j.paused)))
            }),
        ];
        for (name, help, read) in families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for job in jobs {
                let Some(reading) = read(job) else { continue };
                let labels = [("job_name", job.name.as_str())];
                let mut sample = family.encode_family(&labels)?;
                match reading {
                    Reading::Int(v) => gauge(&mut sample, &v)?,
                    Reading::Float(v) => gauge(&mut sample, &v)?,
                }
            }
        }
        Ok(())
    }
}

/// The registry of one scrape as it was: every family through a
/// collector, in the order of the exposition.
fn registry(scrape: &Arc<Scrape>) -> Registry {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(DaemonFamilies(Arc::clone(scrape))));
    registry.register_collector(Box::new(JobCounterFamilies(Arc::clone(scrape))));
    registry.register_collector(Box::new(JobStateFamilies(Arc::clone(scrape))));
    registry.register_collector(Box::new(crate::metrics::cluster::ClusterFamilies {
        stats: scrape.cluster.clone(),
        now: scrape.taken,
    }));
    if let Some(kube) = &scrape.kube {
        registry.register_collector(Box::new(crate::metrics::kube::KubeFamilies(kube.clone())));
    }
    registry
}

/// The exposition as the crate's encoders and the respelling pass wrote
/// all of it.
pub(super) fn encode_with_crate(scrape: &Arc<Scrape>, format: Format) -> String {
    let registry = registry(scrape);
    let mut out = String::new();
    let encoded = match format {
        Format::Text => prometheus_client::encoding::prometheus_text::encode(&mut out, &registry),
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
    };
    assert!(encoded.is_ok(), "encoding into a String failed");
    respell_bucket_bounds(out)
}

#[cfg(test)]
mod tests {
    use super::super::{
        Counters, DaemonGauges, Encoder, JobGauges, JobRows, Snapshot, DEFAULT_BUCKETS,
    };
    use super::*;
    use crate::job::outcome::RunRecord;
    use crate::job::Trigger;
    use chrono::{TimeZone, Utc};

    /// Job names that need escaping or could confuse a line-based reader.
    const ODD_NAMES: [&str; 10] = [
        "plain",
        "quo\"te",
        "back\\slash",
        "new\nline",
        "unicodé ☃ 日本語",
        "",
        "le=\"1\"",
        "x_bucket{le=\"1\"} 3",
        "\\\"\n\\n\"",
        "# EOF",
    ];

    /// A finished run of `job`: `seconds` long, exiting with `retcode`.
    fn run(job: &str, id: u64, seconds: f64, retcode: i32) -> RunRecord {
        let started = Utc
            .timestamp_opt(1_764_000_000 + id as i64 * 60, 123_456_000)
            .single()
            .expect("a valid time");
        RunRecord {
            finished_at: started + chrono::Duration::microseconds((seconds * 1e6) as i64),
            retcode,
            ..RunRecord::begun(id, job.to_owned(), Trigger::Schedule, 0, started)
        }
    }

    /// A tiny deterministic generator, so the varied inputs are the same
    /// on every run (a failure can be reproduced).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 33
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn float(&mut self) -> f64 {
            const ODD: [f64; 9] = [
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                0.0,
                1e16,
                1.5e-7,
                1_764_000_000.123_456,
                -2.5,
            ];
            match self.below(3) {
                0 => ODD[self.below(ODD.len() as u64) as usize],
                1 => self.next() as f64 / 1000.0,
                _ => 1_764_000_000.0 + self.below(1_000_000) as f64 / 1e6,
            }
        }

        fn name(&mut self) -> String {
            const PARTS: [&str; 9] = ["a", "\"", "\\", "\n", "é", "☃", "le=\"", "{", " "];
            (0..self.below(6))
                .map(|_| PARTS[self.below(PARTS.len() as u64) as usize])
                .collect()
        }
    }

    /// The jobs of one state: names, schedules and policies, and what
    /// each job's gauges read.
    struct State {
        names: Vec<String>,
        schedules: Vec<String>,
        policies: Vec<String>,
        last: Vec<Option<RunRecord>>,
        enabled: Vec<bool>,
        running: Vec<usize>,
        next_run: Vec<Option<f64>>,
        paused: Vec<bool>,
    }

    impl State {
        fn gauges(&self) -> DaemonGauges<'_> {
            DaemonGauges {
                version: "0.1.0 \"odd\"\\",
                job_set_id: "v1:x",
                jobs: (0..self.names.len())
                    .map(|i| JobGauges {
                        name: &self.names[i],
                        schedule: &self.schedules[i],
                        cluster_policy: &self.policies[i],
                        enabled: self.enabled[i],
                        running: self.running[i],
                        next_run: self.next_run[i],
                        last_run: self.last[i].as_ref(),
                        paused: self.paused[i],
                    })
                    .collect(),
            }
        }
    }

    /// Counters and gauges of `names`, each job's history drawn from
    /// `rng`: no runs, runs of every outcome, durations in every bucket,
    /// start failures, retries, odd floats in the sums and timestamps.
    fn state(rng: &mut Lcg, names: Vec<String>, bounds: &[f64]) -> (Counters, State) {
        let mut counters = Counters::new(1_764_000_000.5, Some(bounds));
        // The last job has no counters at all (it read as zero).
        counters.retain_jobs(
            names
                .iter()
                .take(names.len().saturating_sub(1))
                .map(String::as_str),
        );
        let mut last = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut id = 0;
            if i + 1 == names.len() {
                last.push(None);
                continue;
            }
            for _ in 0..rng.below(12) {
                id += 1;
                let mut record = run(
                    name,
                    id,
                    rng.below(5000) as f64 / 1.7,
                    rng.below(3) as i32 - 1,
                );
                match rng.below(6) {
                    0 => record.skip_reason = Some("concurrencyPolicy Forbid".into()),
                    1 => record.cancelled = true,
                    2 => record.start_error = Some("no such file".into()),
                    3 => record.replaced = true,
                    _ => {}
                }
                record.resources = usage(rng);
                counters.record_run(&record);
            }
            for _ in 0..rng.below(3) {
                counters.record_retry(name);
            }
            if rng.below(2) == 0 {
                counters.record_permanent_failure(name);
            }
            // Odd values the counters cannot reach by recording runs.
            if rng.below(4) == 0 {
                let c = counters.job(name);
                c.duration.sum = rng.float();
                c.last_success = Some(rng.float());
                c.last_failure = match rng.below(2) {
                    0 => None,
                    _ => Some(rng.float()),
                };
                if c.cpu_count > 0 {
                    c.cpu_user = rng.float();
                    c.cpu_system = rng.float();
                    c.max_rss = u64::MAX - rng.below(2);
                }
            }
            last.push(match rng.below(3) {
                0 => None,
                _ => {
                    let mut r = run(
                        name,
                        id + 1,
                        rng.below(100) as f64 / 3.0,
                        rng.below(300) as i32 - 150,
                    );
                    if rng.below(4) == 0 {
                        r.skip_reason = Some("skipped".into());
                    }
                    r.resources = usage(rng);
                    Some(r)
                }
            });
        }
        let n = names.len();
        let state = State {
            schedules: (0..n)
                .map(|i| format!("{} * * * * \"{}\"", i % 60, rng.name()))
                .collect(),
            policies: (0..n).map(|_| rng.name()).collect(),
            last,
            enabled: (0..n).map(|_| rng.below(4) != 0).collect(),
            running: (0..n)
                .map(|_| match rng.below(4) {
                    0 => usize::MAX,
                    k => k as usize - 1,
                })
                .collect(),
            next_run: (0..n)
                .map(|_| (rng.below(3) != 0).then(|| rng.float()))
                .collect(),
            paused: (0..n).map(|_| rng.below(3) == 0).collect(),
            names,
        };
        (counters, state)
    }

    /// Sampled usage on about half the runs, with odd CPU numbers.
    fn usage(rng: &mut Lcg) -> Option<crate::job::monitor::ResourceUsage> {
        (rng.below(2) == 0).then(|| crate::job::monitor::ResourceUsage {
            cpu_user_seconds: rng.float(),
            cpu_system_seconds: rng.below(1000) as f64 / 7.0,
            max_rss_bytes: rng.below(3) * rng.next() * 4096,
            samples: 1,
            series: None,
        })
    }

    fn assert_same(snapshot: &Snapshot, direct: &str, format: Format) {
        let reference = encode_with_crate(&snapshot.0, format);
        if direct != reference {
            let line = direct
                .lines()
                .zip(reference.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{format:?} differs at line {line}:\n  direct: {:?}\n  crate:  {:?}",
                direct.lines().nth(line),
                reference.lines().nth(line)
            );
        }
    }

    /// Bucket bounds with every spelling the formats disagree on.
    const ODD_BOUNDS: [f64; 12] = [
        -0.0,
        0.0,
        1e-5,
        0.1,
        1.0,
        5e5,
        1e6,
        123_456_789.0,
        1e16,
        1e300,
        -2.0,
        f64::INFINITY,
    ];

    #[test]
    fn direct_encoding_equals_the_crates_on_odd_inputs() {
        let mut rng = Lcg(7);
        for bounds in [
            &DEFAULT_BUCKETS[..],
            &ODD_BOUNDS[..],
            &[],
            &[f64::NAN, 3.0, 1.0],
        ] {
            let names = ODD_NAMES.iter().map(|s| (*s).to_owned()).collect();
            let (counters, state) = state(&mut rng, names, bounds);
            let kube = crate::status::KubeState::new(
                "ns".into(),
                None,
                "namespace".into(),
                Some("a=\"b\"".into()),
            );
            let snapshot =
                Snapshot::take(&counters, &state.gauges()).with_published(None, Some(kube));
            for format in [Format::Text, Format::OpenMetrics] {
                assert_same(&snapshot, &snapshot.encode(format), format);
            }
        }
    }

    #[test]
    fn direct_encoding_equals_the_crates_on_random_inputs() {
        let mut rng = Lcg(2026);
        for round in 0..40 {
            let names: Vec<String> = (0..rng.below(12))
                .map(|i| format!("{}{i}", rng.name()))
                .collect();
            let bounds: Vec<f64> = (0..rng.below(5)).map(|_| rng.float()).collect();
            let (counters, state) = state(&mut rng, names, &bounds);
            let snapshot = Snapshot::take(&counters, &state.gauges());
            for format in [Format::Text, Format::OpenMetrics] {
                let direct = snapshot.encode(format);
                assert_same(&snapshot, &direct, format);
                assert!(round > 0 || !direct.is_empty());
            }
        }
    }

    #[test]
    fn an_empty_job_table_encodes_as_the_crate_does() {
        let counters = Counters::new(0.0, None);
        let gauges = DaemonGauges {
            version: "0.1.0",
            job_set_id: "v1:x",
            jobs: Vec::new(),
        };
        let snapshot = Snapshot::take(&counters, &gauges);
        for format in [Format::Text, Format::OpenMetrics] {
            assert_same(&snapshot, &snapshot.encode(format), format);
        }
    }

    /// A query of samples by name answers what reading the encoded text
    /// answers, whatever the needle, limit, format and inputs (the query
    /// skips and counts per-job lines it does not write).
    #[test]
    fn sample_queries_equal_reading_the_text() {
        let needles = [
            "",
            "job",
            "runs_total",
            "bucket",
            "_sum",
            "seconds",
            "info",
            "last_run",
            "cpu",
            "rss",
            "paused",
            "cronstable_jobs",
            "kube",
            "reload",
            "x",
            "é",
            "le=",
        ];
        let mut rng = Lcg(31);
        let mut states: Vec<(Counters, State)> = vec![state(
            &mut rng,
            ODD_NAMES.iter().map(|s| (*s).to_owned()).collect(),
            &ODD_BOUNDS,
        )];
        for _ in 0..6 {
            let names: Vec<String> = (0..rng.below(9))
                .map(|i| format!("{}{i}", rng.name()))
                .collect();
            let bounds: Vec<f64> = (0..rng.below(5)).map(|_| rng.float()).collect();
            states.push(state(&mut rng, names, &bounds));
        }
        for (counters, state) in &states {
            let kube = crate::status::KubeState::new("ns".into(), None, "namespace".into(), None);
            let snapshot =
                Snapshot::take(counters, &state.gauges()).with_published(None, Some(kube));
            for format in [Format::Text, Format::OpenMetrics] {
                let text = snapshot.encode(format);
                for needle in needles {
                    let wanted = |name: &str| name.to_lowercase().contains(needle);
                    for limit in [0, 1, 5, 37, 10_000] {
                        let read = super::super::text_samples(&text, &wanted, limit);
                        let queried = snapshot.samples(format, &wanted, limit);
                        assert_eq!(queried, read, "{format:?} {needle:?} {limit}");
                    }
                }
            }
        }
    }

    /// An encoder copies the unchanged jobs' lines of its previous body:
    /// after runs, pauses, reordering, added and removed jobs, every body
    /// is still the crate's text of the state it encodes.
    #[test]
    fn incremental_encoding_equals_a_fresh_one() {
        let mut rng = Lcg(99);
        let names: Vec<String> = (0..30).map(|i| format!("job-{i}-{}", rng.name())).collect();
        let (mut counters, mut state) = state(&mut rng, names, &DEFAULT_BUCKETS);
        let mut encoders = [
            Encoder::new(Format::Text),
            Encoder::new(Format::OpenMetrics),
        ];
        // Each snapshot shares the unchanged rows of the one before, as
        // the scheduler's do.
        let mut previous: Option<JobRows> = None;
        let mut check = |encoders: &mut [Encoder; 2], counters: &Counters, state: &State| {
            let snapshot = match previous.take() {
                Some(rows) => Snapshot::take_reusing(counters, &state.gauges(), &rows),
                None => Snapshot::take(counters, &state.gauges()),
            };
            let fresh = Snapshot::take(counters, &state.gauges());
            // (Not `same_output`: a job without counters gets a fresh
            // empty set in each snapshot, equal but not identical.)
            assert_eq!(
                snapshot.encode(Format::OpenMetrics),
                fresh.encode(Format::OpenMetrics)
            );
            previous = Some(snapshot.rows());
            for encoder in encoders.iter_mut() {
                let body = encoder.encode(&snapshot);
                assert_same(&snapshot, body.as_str(), encoder.format);
                assert_eq!(body.as_ref(), snapshot.encode(encoder.format).as_bytes());
            }
            snapshot
        };
        let first = check(&mut encoders, &counters, &state);
        // The same rows again (shared, as the scheduler shares them while
        // nothing changed), with a daemon-wide value changed.
        let gauges = DaemonGauges {
            job_set_id: "v1:y",
            ..state.gauges()
        };
        let again = Snapshot::take_with_rows(&counters, &gauges, &first.rows());
        for encoder in encoders.iter_mut() {
            let body = encoder.encode(&again);
            assert_same(&again, body.as_str(), encoder.format);
        }
        for step in 0..60 {
            let n = state.names.len();
            let i = rng.below(n.max(1) as u64) as usize;
            match step % 8 {
                0 => counters.record_run(&run(&state.names[i], 1000 + step, 2.5, 0)),
                1 => counters.record_retry(&state.names[i]),
                2 => state.paused[i] = !state.paused[i],
                3 => state.next_run[i] = Some(rng.float()),
                4 => {
                    // Two jobs swap places.
                    let j = rng.below(n as u64) as usize;
                    for column in [&mut state.names, &mut state.schedules, &mut state.policies] {
                        column.swap(i, j);
                    }
                    state.last.swap(i, j);
                    state.enabled.swap(i, j);
                    state.running.swap(i, j);
                    state.next_run.swap(i, j);
                    state.paused.swap(i, j);
                }
                5 => {
                    // A job is removed.
                    state.names.remove(i);
                    state.schedules.remove(i);
                    state.policies.remove(i);
                    state.last.remove(i);
                    state.enabled.remove(i);
                    state.running.remove(i);
                    state.next_run.remove(i);
                    state.paused.remove(i);
                    counters.retain_jobs(state.names.iter().map(String::as_str));
                }
                6 => {
                    // A job is added in the middle.
                    state
                        .names
                        .insert(i, format!("new-{step}\n\"{}\"", rng.name()));
                    state.schedules.insert(i, "@hourly".into());
                    state.policies.insert(i, "Leader".into());
                    state.last.insert(i, None);
                    state.enabled.insert(i, true);
                    state.running.insert(i, 0);
                    state.next_run.insert(i, None);
                    state.paused.insert(i, false);
                    counters.retain_jobs(state.names.iter().map(String::as_str));
                }
                _ => state.running[i] = state.running[i] % 7 + 1,
            }
            check(&mut encoders, &counters, &state);
        }
        // New bounds restart every histogram.
        counters.set_buckets(Some(&ODD_BOUNDS));
        check(&mut encoders, &counters, &state);
    }

    /// The encoder really copies: a job whose row did not change keeps
    /// the lines of the previous body even if (in this test only) they
    /// no longer match its counters. Without the copy the test would see
    /// the fresh value.
    #[test]
    fn unchanged_jobs_are_copied_not_rewritten() {
        let mut counters = Counters::new(0.0, None);
        counters.retain_jobs(["a", "b"].into_iter());
        let state = State {
            names: vec!["a".into(), "b".into()],
            schedules: vec!["* * * * *".into(); 2],
            policies: vec!["Leader".into(); 2],
            last: vec![None, None],
            enabled: vec![true; 2],
            running: vec![0; 2],
            next_run: vec![None; 2],
            paused: vec![false; 2],
        };
        let mut encoder = Encoder::new(Format::Text);
        let first = Snapshot::take(&counters, &state.gauges());
        let body = encoder.encode(&first);
        assert!(body
            .as_str()
            .contains("cronstable_job_retries_total{job_name=\"a\"} 0\n"));
        // Mark the copy: rewrite "a"'s retries line in the encoder's body.
        let marked = body.as_str().replace(
            "retries_total{job_name=\"a\"} 0",
            "retries_total{job_name=\"a\"} 7",
        );
        let last = encoder.last.as_mut().expect("an encoding");
        last.body = super::super::Body(Arc::new(marked));
        counters.record_retry("b");
        let second = Snapshot::take(&counters, &state.gauges());
        let body = encoder.encode(&second);
        assert!(
            body.as_str().contains("retries_total{job_name=\"a\"} 7\n"),
            "copied"
        );
        assert!(
            body.as_str().contains("retries_total{job_name=\"b\"} 1\n"),
            "rewritten"
        );
    }
}
