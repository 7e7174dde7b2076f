use super::super::reference::encode_with_crate;
use super::super::{
    parse_samples, render, Counters, DaemonGauges, Format, JobCounters, JobGauges, Snapshot,
    DEFAULT_BUCKETS,
};
use crate::job::outcome::RunRecord;
use crate::job::Trigger;
use crate::status::Histogram;
use chrono::{TimeZone, Utc};
use serde_json::{json, Value};

/// The original's snapshot of three jobs (`alpha`, `beta`, `gone`), made
/// by its own `counters_snapshot()` (see the fixtures' README).
const ORIGINAL: &str =
    include_str!("../../../../tests/fixtures/prometheus/original-counters-snapshot.json");

/// A run of `job` that started at `start` (Unix seconds) and took
/// `seconds`, exiting with `retcode`.
fn run(job: &str, start: i64, seconds: f64, retcode: i32) -> RunRecord {
    let started = Utc.timestamp_opt(start, 0).single().expect("a valid time");
    RunRecord {
        finished_at: started + chrono::Duration::microseconds((seconds * 1e6) as i64),
        retcode,
        // A non-zero exit fails the default `failsWhen`.
        fail_reason: (retcode != 0).then(|| format!("exit code {retcode}")),
        ..RunRecord::begun(1, job.to_owned(), Trigger::Schedule, 0, started)
    }
}

/// Counters with every kind of event recorded for `a` and `b`, under
/// `bounds`.
fn busy(bounds: &[f64]) -> Counters {
    let mut c = Counters::new(1000.0, Some(bounds));
    c.record_run(&run("a", 1_700_000_000, 0.05, 0));
    c.record_run(&run("a", 1_700_000_100, 7.25, 0));
    c.record_run(&run("a", 1_700_000_200, 4000.0, 1));
    let mut cancelled = run("a", 1_700_000_300, 2.0, -15);
    cancelled.cancelled = true;
    c.record_run(&cancelled);
    let mut skipped = run("a", 1_700_000_400, 0.0, 0);
    skipped.skip_reason = Some("paused".into());
    c.record_run(&skipped);
    let mut failed_start = run("b", 1_700_000_500, 0.0, 127);
    failed_start.start_error = Some("no such file".into());
    c.record_run(&failed_start);
    c.record_retry("a");
    c.record_retry("b");
    c.record_retry("b");
    c.record_permanent_failure("b");
    c
}

fn job(c: &Counters, name: &str) -> JobCounters {
    (*c.jobs[name]).clone()
}

#[test]
fn the_snapshot_has_the_originals_shape_and_values() {
    let c = busy(&[1.0, 10.0]);
    let snap = c.snapshot();
    assert_eq!(snap["buckets"], json!([1.0, 10.0]));
    let a = &snap["jobs"]["a"];
    assert_eq!(
        a["runs"],
        json!({"success": 2, "failure": 1, "cancelled": 1, "skipped": 1})
    );
    assert_eq!(a["retries"], json!(1));
    assert_eq!(a["permanent_failures"], json!(0));
    assert_eq!(a["start_failures"], json!(0));
    // Cumulative per bound, no +Inf (that is duration_count): 0.05 ≤ 1,
    // 7.25 ≤ 10, 4000 and the cancelled 2.0 s run in between.
    assert_eq!(a["bucket_counts"], json!([1, 3]));
    assert_eq!(a["duration_count"], json!(4));
    assert_eq!(a["duration_sum"], json!(0.05 + 7.25 + 4000.0 + 2.0));
    assert_eq!(a["last_success_time"], json!(1_700_000_100.0 + 7.25));
    assert_eq!(a["last_failure_time"], json!(1_700_000_200.0 + 4000.0));
    for (key, zero) in [
        ("cpu_user_sum", json!(0.0)),
        ("cpu_system_sum", json!(0.0)),
        ("cpu_count", json!(0)),
        ("max_rss_observed", json!(0)),
        ("sla_breaches", json!({})),
    ] {
        assert_eq!(a[key], zero, "{key}");
    }
    assert!(a.get("memory_limit_exceeded").is_none());
    let b = &snap["jobs"]["b"];
    // Only the outcomes that happened, as the original writes them.
    assert_eq!(b["runs"], json!({"failure": 1}));
    assert_eq!(b["start_failures"], json!(1));
    assert_eq!(b["permanent_failures"], json!(1));
    assert_eq!(b["retries"], json!(2));
    assert_eq!(b["last_success_time"], Value::Null);
}

#[test]
fn a_snapshot_has_exactly_the_keys_of_the_originals() {
    let original: Value = serde_json::from_str(ORIGINAL).expect("the fixture is JSON");
    let ours = busy(&DEFAULT_BUCKETS).snapshot();
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&ours), keys(&original));
    assert_eq!(keys(&ours["jobs"]["a"]), keys(&original["jobs"]["alpha"]));
    assert_eq!(ours["buckets"], original["buckets"]);
}

#[test]
fn a_round_trip_through_json_text_restores_every_count() {
    for bounds in [&DEFAULT_BUCKETS[..], &[1.0, 10.0], &[]] {
        let before = busy(bounds);
        let text = before.snapshot().to_string();
        let parsed: Value = serde_json::from_str(&text).expect("our snapshot is JSON");
        let mut after = Counters::new(5.0, Some(bounds));
        assert_eq!(after.seed(&parsed, |_| true), 2);
        assert_eq!(after.jobs.len(), 2);
        for name in ["a", "b"] {
            assert_eq!(job(&after, name), job(&before, name), "{name} {bounds:?}");
        }
        // And the seeded counters snapshot to the same value again.
        assert_eq!(after.snapshot(), before.snapshot());
    }
}

#[test]
fn a_seed_adds_to_what_was_recorded_before_it() {
    let snap = busy(&[1.0, 10.0]).snapshot();
    let mut c = Counters::new(5.0, Some(&[1.0, 10.0]));
    // A run finishing during boot, before the seed, and later than the
    // snapshot's last success.
    c.record_run(&run("a", 1_800_000_000, 0.5, 0));
    c.record_retry("a");
    c.seed(&snap, |_| true);
    let a = job(&c, "a");
    assert_eq!(a.runs, [3, 1, 1, 1]);
    assert_eq!(a.retries, 2);
    assert_eq!(a.duration.count(), 5);
    assert_eq!(a.duration.cumulative_counts(), &[2, 4]);
    assert_eq!(a.duration.sum(), 0.5 + 0.05 + 7.25 + 4000.0 + 2.0);
    assert_eq!(a.last_success, Some(1_800_000_000.5), "the later one stays");
    assert_eq!(a.last_failure, Some(1_700_004_200.0), "none before: seeded");
}

#[test]
fn the_last_event_times_become_the_later_of_the_two() {
    for (live, seeded, want) in [
        (None, json!(null), None),
        (None, json!(50.0), Some(50.0)),
        (Some(60.0), json!(50.0), Some(60.0)),
        (Some(40.0), json!(50), Some(50.0)),
        (Some(40.0), json!(null), Some(40.0)),
        (Some(40.0), json!("90"), Some(40.0)),
        (Some(40.0), json!(-90.0), Some(40.0)),
        (None, json!(true), None),
    ] {
        let mut c = Counters::new(0.0, None);
        c.job("j").last_success = live;
        c.job("j").last_failure = live;
        let snap = json!({"jobs": {"j": {
            "last_success_time": seeded, "last_failure_time": seeded
        }}});
        c.seed(&snap, |_| true);
        assert_eq!(c.jobs["j"].last_success, want, "{live:?} {seeded}");
        assert_eq!(c.jobs["j"].last_failure, want, "{live:?} {seeded}");
    }
}

#[test]
fn jobs_not_kept_are_not_seeded_and_not_counted() {
    let snap = busy(&DEFAULT_BUCKETS).snapshot();
    let mut c = Counters::new(0.0, None);
    assert_eq!(c.seed(&snap, |name| name == "b"), 1);
    assert!(!c.jobs.contains_key("a"));
    assert_eq!(c.jobs["b"].retries, 2);
    let mut none = Counters::new(0.0, None);
    assert_eq!(none.seed(&snap, |_| false), 0);
    assert!(none.jobs.is_empty());
    assert_eq!(none.epoch(), 0, "nothing seeded, nothing changed");
}

#[test]
fn a_bucket_mismatch_seeds_the_counts_but_not_the_histogram() {
    let snap = busy(&[1.0, 10.0]).snapshot();
    let mut other_buckets = snap.clone();
    other_buckets["buckets"] = json!([1.0, 20.0]);
    let mut fewer = snap.clone();
    fewer["buckets"] = json!([1.0]);
    let mut strings = snap.clone();
    strings["buckets"] = json!(["1.0", "10.0"]);
    let mut missing = snap.clone();
    missing
        .as_object_mut()
        .expect("an object")
        .remove("buckets");
    for (what, live, snap) in [
        ("other bounds", &[1.0, 20.0][..], &snap),
        (
            "other bounds in the snapshot",
            &[1.0, 10.0][..],
            &other_buckets,
        ),
        ("fewer bounds", &[1.0, 10.0][..], &fewer),
        ("bounds as strings", &[1.0, 10.0][..], &strings),
        ("no bounds", &[1.0, 10.0][..], &missing),
    ] {
        let mut c = Counters::new(0.0, Some(live));
        assert_eq!(c.seed(snap, |_| true), 2, "{what}");
        let a = job(&c, "a");
        assert_eq!(a.runs, [2, 1, 1, 1], "{what}");
        assert_eq!(a.retries, 1, "{what}");
        assert_eq!(a.last_success, Some(1_700_000_107.25), "{what}");
        assert_eq!(a.duration, Histogram::new(live), "{what}");
        assert_eq!(job(&c, "b").start_failures, 1, "{what}");
    }
}

#[test]
fn snapshots_that_are_not_objects_seed_nothing() {
    for snap in [
        json!(null),
        json!("jobs"),
        json!(3),
        json!([{"jobs": {}}]),
        json!({}),
        json!({"jobs": null}),
        json!({"jobs": ["a"]}),
        json!({"jobs": "a"}),
    ] {
        let mut c = Counters::new(0.0, None);
        assert_eq!(c.seed(&snap, |_| true), 0, "{snap}");
        assert!(c.jobs.is_empty(), "{snap}");
    }
}

#[test]
fn a_job_that_is_not_an_object_is_skipped_and_the_others_seeded() {
    let snap = json!({"jobs": {
        "s": "runs", "n": 5, "l": [1, 2], "z": null,
        "ok": {"retries": 3}
    }});
    let mut c = Counters::new(0.0, None);
    assert_eq!(c.seed(&snap, |_| true), 1);
    assert_eq!(c.jobs.keys().collect::<Vec<_>>(), ["ok"]);
    assert_eq!(c.jobs["ok"].retries, 3);
}

#[test]
fn corrupt_fields_are_skipped_one_by_one() {
    let snap = json!({"buckets": [1.0, 10.0], "jobs": {"j": {
        "runs": {"success": "4", "failure": -1, "cancelled": 2.5,
                 "skipped": true, "unknown": 9, "": 1},
        "retries": -3,
        "permanent_failures": 2,
        "start_failures": "1",
        "duration_sum": 3.0,
        "duration_count": 2,
        "bucket_counts": [1, 2],
        "last_success_time": {"t": 1},
        "last_failure_time": 77.5,
        "cpu_user_sum": "x",
        "sla_breaches": [1],
        "memory_limit_exceeded": -1,
    }}});
    let mut c = Counters::new(0.0, Some(&[1.0, 10.0]));
    assert_eq!(c.seed(&snap, |_| true), 1);
    let j = job(&c, "j");
    assert_eq!(j.runs, [0; 4]);
    assert_eq!(j.retries, 0);
    assert_eq!(j.permanent_failures, 2);
    assert_eq!(j.start_failures, 0);
    assert_eq!(j.duration.cumulative_counts(), &[1, 2]);
    assert_eq!((j.duration.sum(), j.duration.count()), (3.0, 2));
    assert_eq!(j.last_success, None);
    assert_eq!(j.last_failure, Some(77.5));
    // `runs` that is not an object is skipped the same way.
    let mut c = Counters::new(0.0, None);
    c.seed(
        &json!({"jobs": {"j": {"runs": [1, 2], "retries": 1}}}),
        |_| true,
    );
    assert_eq!((c.jobs["j"].runs, c.jobs["j"].retries), ([0; 4], 1));
}

#[test]
fn a_histogram_that_does_not_fit_its_bounds_is_refused_whole() {
    let good = json!({"duration_sum": 3.0, "duration_count": 2, "bucket_counts": [1, 2]});
    let mut cases = Vec::new();
    for (key, bad) in [
        ("duration_sum", json!(-1.0)),
        ("duration_sum", json!("3.0")),
        ("duration_sum", json!(null)),
        ("duration_count", json!(-2)),
        ("duration_count", json!(2.0)),
        ("duration_count", json!(1)),
        ("bucket_counts", json!([1])),
        ("bucket_counts", json!([1, 2, 2])),
        ("bucket_counts", json!([2, 1])),
        ("bucket_counts", json!([1, "2"])),
        ("bucket_counts", json!([1, -2])),
        ("bucket_counts", json!({"0": 1})),
    ] {
        let mut data = good.clone();
        data[key] = bad;
        cases.push(data);
    }
    for key in ["duration_sum", "duration_count", "bucket_counts"] {
        let mut data = good.clone();
        data.as_object_mut().expect("an object").remove(key);
        cases.push(data);
    }
    for data in cases {
        let snap = json!({"buckets": [1.0, 10.0], "jobs": {"j": data}});
        let mut c = Counters::new(0.0, Some(&[1.0, 10.0]));
        c.job("j").duration.observe(5.0);
        let before = job(&c, "j").duration;
        assert_eq!(c.seed(&snap, |_| true), 1, "{data}");
        assert_eq!(c.jobs["j"].duration, before, "{data}");
    }
    // The good one itself is taken.
    let mut c = Counters::new(0.0, Some(&[1.0, 10.0]));
    c.seed(&json!({"buckets": [1, 10], "jobs": {"j": good}}), |_| true);
    assert_eq!(c.jobs["j"].duration.count(), 2, "integer bounds match too");
}

#[test]
fn huge_counts_saturate_instead_of_overflowing() {
    let max = u64::MAX;
    let snap = json!({"buckets": [1.0], "jobs": {"j": {
        "runs": {"success": max}, "retries": max,
        "duration_sum": 1e300, "duration_count": max, "bucket_counts": [max],
    }}});
    let mut c = Counters::new(0.0, Some(&[1.0]));
    c.record_run(&run("j", 1_700_000_000, 0.5, 0));
    c.record_retry("j");
    c.seed(&snap, |_| true);
    let j = job(&c, "j");
    assert_eq!((j.runs[0], j.retries), (max, max));
    assert_eq!(j.duration.count(), max);
    assert_eq!(j.duration.cumulative_counts(), &[max]);
    // And a value past u64 is not a count at all.
    let mut c = Counters::new(0.0, None);
    c.seed(
        &serde_json::from_str::<Value>(r#"{"jobs": {"j": {"retries": 18446744073709551616}}}"#)
            .expect("JSON"),
        |_| true,
    );
    assert_eq!(c.jobs["j"].retries, 0);
}

#[test]
fn the_originals_snapshot_seeds_its_counts() {
    let original: Value = serde_json::from_str(ORIGINAL).expect("the fixture is JSON");
    let mut c = Counters::new(0.0, None);
    assert_eq!(c.seed(&original, |name| name != "gone"), 2);
    assert!(!c.jobs.contains_key("gone"));
    let alpha = job(&c, "alpha");
    assert_eq!(alpha.runs, [5, 1, 1, 1]);
    assert_eq!((alpha.retries, alpha.permanent_failures), (2, 1));
    assert_eq!(alpha.start_failures, 0);
    assert_eq!(alpha.duration.count(), 6);
    assert_eq!(alpha.duration.sum(), 5023.05);
    assert_eq!(
        alpha.duration.cumulative_counts(),
        &[1, 2, 3, 4, 4, 5, 5, 5, 5]
    );
    assert_eq!(alpha.last_success, Some(1_751_600_000.25));
    assert_eq!(alpha.last_failure, Some(1_751_600_100.5));
    let beta = job(&c, "beta");
    assert_eq!(beta.runs, [0, 1, 0, 0]);
    assert_eq!(beta.start_failures, 1);
    assert_eq!(beta.last_success, None);
    assert_eq!(beta.last_failure, Some(1_751_600_200.0));
    // Our durations land in the buckets the original's did.
    let mut ours = Histogram::new(&DEFAULT_BUCKETS);
    for d in [0.05, 0.3, 2.0, 20.0, 5000.0, 0.7] {
        ours.observe(d);
    }
    assert_eq!(ours.cumulative_counts(), alpha.duration.cumulative_counts());
}

#[test]
fn a_seed_moves_the_epoch_so_a_cached_scrape_is_redone() {
    let snap = busy(&DEFAULT_BUCKETS).snapshot();
    let mut c = Counters::new(0.0, None);
    let before = c.epoch();
    c.seed(&snap, |_| true);
    assert!(c.epoch() > before);
}

#[test]
fn the_exposition_shows_the_seeded_values() {
    let original: Value = serde_json::from_str(ORIGINAL).expect("the fixture is JSON");
    let mut c = Counters::new(0.0, None);
    c.record_run(&run("alpha", 1_700_000_000, 0.2, 0));
    c.seed(&original, |name| name != "gone");
    let gauges = DaemonGauges {
        version: "0.1.0",
        job_set_id: "v1:x",
        jobs: ["alpha", "beta"]
            .into_iter()
            .map(|name| JobGauges {
                name,
                schedule: "* * * * *",
                cluster_policy: "Leader",
                enabled: true,
                running: 0,
                next_run: None,
                last_run: None,
                paused: false,
            })
            .collect(),
    };
    let text = render(&c, &gauges, Format::Text);
    let samples = parse_samples(&text);
    let sample = |key: &str| -> f64 {
        *samples
            .get(key)
            .unwrap_or_else(|| panic!("{key} missing:\n{text}"))
    };
    for (key, want) in [
        (
            r#"cronstable_job_runs_total{job_name="alpha",status="success"}"#,
            6.0,
        ),
        (
            r#"cronstable_job_runs_total{job_name="alpha",status="failure"}"#,
            1.0,
        ),
        (
            r#"cronstable_job_runs_total{job_name="alpha",status="cancelled"}"#,
            1.0,
        ),
        (
            r#"cronstable_job_runs_total{job_name="alpha",status="skipped"}"#,
            1.0,
        ),
        (r#"cronstable_job_retries_total{job_name="alpha"}"#, 2.0),
        (
            r#"cronstable_job_permanent_failures_total{job_name="alpha"}"#,
            1.0,
        ),
        (
            r#"cronstable_job_start_failures_total{job_name="beta"}"#,
            1.0,
        ),
        (
            r#"cronstable_job_duration_seconds_bucket{job_name="alpha",le="0.1"}"#,
            1.0,
        ),
        (
            r#"cronstable_job_duration_seconds_bucket{job_name="alpha",le="0.5"}"#,
            3.0,
        ),
        (
            r#"cronstable_job_duration_seconds_bucket{job_name="alpha",le="3600.0"}"#,
            6.0,
        ),
        (
            r#"cronstable_job_duration_seconds_bucket{job_name="alpha",le="+Inf"}"#,
            7.0,
        ),
        (
            r#"cronstable_job_duration_seconds_count{job_name="alpha"}"#,
            7.0,
        ),
        (
            r#"cronstable_job_duration_seconds_sum{job_name="alpha"}"#,
            0.2 + 5023.05,
        ),
        (
            r#"cronstable_job_last_success_timestamp_seconds{job_name="alpha"}"#,
            1_751_600_000.25,
        ),
        (
            r#"cronstable_job_last_failure_timestamp_seconds{job_name="beta"}"#,
            1_751_600_200.0,
        ),
    ] {
        assert_eq!(sample(key), want, "{key}");
    }
    // The direct writer and the crate's encoders agree on seeded state.
    let snapshot = Snapshot::take(&c, &gauges);
    for format in [Format::Text, Format::OpenMetrics] {
        assert_eq!(
            snapshot.encode(format),
            encode_with_crate(&snapshot.0, format)
        );
    }
}

#[test]
fn histogram_add_state_adds_only_a_consistent_state() {
    let mut h = Histogram::new(&[1.0, 5.0]);
    h.observe(3.0);
    assert!(h.add_state(&[1, 2], 4.5, 3));
    assert_eq!(h.cumulative_counts(), &[1, 3]);
    assert_eq!((h.sum(), h.count()), (7.5, 4));
    let kept = h.clone();
    for (counts, sum, count) in [
        (&[1][..], 1.0, 1),
        (&[1, 2, 3][..], 1.0, 3),
        (&[2, 1][..], 1.0, 2),
        (&[1, 2][..], 1.0, 1),
        (&[1, 2][..], -1.0, 2),
        (&[1, 2][..], f64::NAN, 2),
        (&[1, 2][..], f64::INFINITY, 2),
    ] {
        assert!(!h.add_state(counts, sum, count), "{counts:?} {sum} {count}");
        assert_eq!(h, kept);
    }
    let mut empty = Histogram::new(&[]);
    assert!(empty.add_state(&[], 2.0, 2));
    assert_eq!(empty.buckets(), vec![(f64::INFINITY, 2)]);
}

#[test]
fn the_resource_counters_persist_and_seed_as_the_original_does() {
    use crate::job::monitor::ResourceUsage;
    let usage = |user: f64, system: f64, rss: u64| {
        Some(ResourceUsage {
            cpu_user_seconds: user,
            cpu_system_seconds: system,
            max_rss_bytes: rss,
            samples: 3,
            series: None,
        })
    };
    let mut c = Counters::new(0.0, None);
    let mut first = run("m", 1_700_000_000, 2.0, 0);
    first.resources = usage(1.5, 0.25, 1000);
    let mut second = run("m", 1_700_000_100, 2.0, 0);
    second.resources = usage(0.5, 0.25, 4000);
    c.record_run(&first);
    c.record_run(&second);
    c.record_run(&run("m", 1_700_000_200, 1.0, 0));
    let snap = c.snapshot();
    let m = &snap["jobs"]["m"];
    assert_eq!(m["cpu_user_sum"], json!(2.0));
    assert_eq!(m["cpu_system_sum"], json!(0.5));
    assert_eq!(m["cpu_count"], json!(2));
    assert_eq!(m["max_rss_observed"], json!(4000));
    // Seeding adds the sums and the count, and keeps the larger peak.
    let mut later = Counters::new(0.0, None);
    let mut boot = run("m", 1_800_000_000, 1.0, 0);
    boot.resources = usage(1.0, 0.0, 9000);
    later.record_run(&boot);
    later.seed(&snap, |_| true);
    let j = job(&later, "m");
    assert_eq!(
        (j.cpu_user, j.cpu_system, j.cpu_count, j.max_rss),
        (3.0, 0.5, 3, 9000)
    );
    // Junk is skipped field by field.
    let mut junk = Counters::new(0.0, None);
    junk.seed(
        &json!({"jobs": {"m": {"cpu_user_sum": true, "cpu_system_sum": -1.0,
                               "cpu_count": 1.5, "max_rss_observed": "7"}}}),
        |_| true,
    );
    let j = job(&junk, "m");
    assert_eq!(
        (j.cpu_user, j.cpu_system, j.cpu_count, j.max_rss),
        (0.0, 0.0, 0, 0)
    );
}

#[test]
fn the_resource_families_appear_only_after_a_monitored_run() {
    use crate::job::monitor::ResourceUsage;
    let mut c = Counters::new(0.0, None);
    let plain = run("m", 1_700_000_000, 2.0, 0);
    c.record_run(&plain);
    let gauges = |c: &Counters, last: &RunRecord| -> String {
        let g = DaemonGauges {
            version: "x",
            job_set_id: "y",
            jobs: vec![JobGauges {
                name: "m",
                schedule: "* * * * *",
                cluster_policy: "leader",
                enabled: true,
                running: 0,
                next_run: None,
                last_run: Some(last),
                paused: false,
            }],
        };
        render(c, &g, Format::Text)
    };
    let text = gauges(&c, &plain);
    assert!(
        !text.contains("cronstable_job_cpu_seconds_total{"),
        "{text}"
    );
    assert!(!text.contains("cronstable_job_peak_rss_bytes{"));
    assert!(!text.contains("cronstable_job_last_run_cpu_seconds{"));
    let mut monitored = run("m", 1_700_000_100, 2.0, 0);
    monitored.resources = Some(ResourceUsage {
        cpu_user_seconds: 1.25,
        cpu_system_seconds: 0.5,
        max_rss_bytes: 104_857_600,
        samples: 2,
        series: None,
    });
    c.record_run(&monitored);
    let samples = parse_samples(&gauges(&c, &monitored));
    for (series, want) in [
        (
            "cronstable_job_cpu_seconds_total{job_name=\"m\",mode=\"user\"}",
            1.25,
        ),
        (
            "cronstable_job_cpu_seconds_total{job_name=\"m\",mode=\"system\"}",
            0.5,
        ),
        (
            "cronstable_job_peak_rss_bytes{job_name=\"m\"}",
            104_857_600.0,
        ),
        ("cronstable_job_last_run_cpu_seconds{job_name=\"m\"}", 1.75),
        (
            "cronstable_job_last_run_max_rss_bytes{job_name=\"m\"}",
            104_857_600.0,
        ),
    ] {
        assert_eq!(samples.get(series), Some(&want), "{series}");
    }
    // A later unmonitored run drops the last-run gauges, not the totals.
    let samples = parse_samples(&gauges(&c, &plain));
    assert!(samples.contains_key("cronstable_job_peak_rss_bytes{job_name=\"m\"}"));
    assert!(!samples.contains_key("cronstable_job_last_run_cpu_seconds{job_name=\"m\"}"));
}
