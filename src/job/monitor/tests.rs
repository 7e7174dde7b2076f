use super::*;

fn member(pid: u32, ppid: u32, own: (f64, f64), children: (f64, f64), rss: u64) -> MemberReading {
    MemberReading {
        pid,
        start: u64::from(pid) * 10,
        ppid,
        own,
        children,
        rss,
    }
}

fn members(list: &[MemberReading]) -> Reading {
    Reading::Members(list.to_vec())
}

#[test]
fn the_series_keeps_every_sample_until_the_cap() {
    let mut r = SeriesRecorder::new(4);
    for i in 0..3 {
        r.add(
            f64::from(i),
            10.0 * f64::from(i),
            100 + u64::try_from(i).unwrap(),
        );
    }
    let pts = r.points();
    assert_eq!(pts.len(), 3);
    assert_eq!(
        pts[2],
        Point {
            t: 2.0,
            cpu_percent: 20.0,
            rss: 102
        }
    );
}

#[test]
fn at_the_cap_pairs_merge_with_mean_cpu_and_peak_rss() {
    let mut r = SeriesRecorder::new(4);
    let samples = [
        (1.0, 10.0, 500),
        (2.0, 30.0, 100),
        (3.0, 50.0, 100),
        (4.0, 70.0, 900),
    ];
    for (t, cpu, rss) in samples {
        r.add(t, cpu, rss);
    }
    assert_eq!(
        r.points(),
        vec![
            Point {
                t: 2.0,
                cpu_percent: 20.0,
                rss: 500
            },
            Point {
                t: 4.0,
                cpu_percent: 60.0,
                rss: 900
            },
        ]
    );
    // Now two samples make a point; one alone shows as a provisional one.
    r.add(5.0, 1.0, 7);
    assert_eq!(
        r.points().last(),
        Some(&Point {
            t: 5.0,
            cpu_percent: 1.0,
            rss: 7
        })
    );
    assert_eq!(r.points().len(), 3);
    r.add(6.0, 3.0, 5);
    assert_eq!(r.points().len(), 3);
    assert_eq!(
        r.points()[2],
        Point {
            t: 6.0,
            cpu_percent: 2.0,
            rss: 7
        }
    );
}

#[test]
fn a_long_run_stays_within_the_cap_with_its_spike_kept() {
    for cap in [2, 3, 7, 240, 2000] {
        let mut r = SeriesRecorder::new(cap);
        for i in 0..100_000u64 {
            let rss = if i == 61_234 { 1 << 40 } else { 1000 };
            r.add(i as f64, 50.0, rss);
        }
        let pts = r.points();
        assert!(pts.len() <= cap, "cap {cap}: {} points", pts.len());
        assert!(pts.len() >= cap / 2, "cap {cap}: only {} points", pts.len());
        assert!(
            pts.iter().any(|p| p.rss == 1 << 40),
            "cap {cap}: the spike survives"
        );
        assert!(pts.iter().all(|p| p.cpu_percent == 50.0));
        assert!(pts.windows(2).all(|w| w[0].t < w[1].t), "oldest first");
        assert_eq!(
            pts.last().map(|p| p.t),
            Some(99_999.0),
            "the newest sample shows"
        );
    }
}

#[test]
fn a_cap_below_two_is_two() {
    let mut r = SeriesRecorder::new(0);
    for i in 0..10 {
        r.add(f64::from(i), 0.0, 1);
    }
    assert!(r.points().len() <= 2);
}

#[test]
fn cpu_is_own_plus_reaped_children_and_rss_is_the_sum() {
    let mut a = Account::new(0);
    a.fold(
        &members(&[
            member(10, 1, (1.0, 0.5), (2.0, 0.0), 100),
            member(11, 10, (0.25, 0.0), (0.0, 0.0), 50),
        ]),
        0.0,
        0.0,
    );
    let u = a.usage().expect("sampled");
    assert_eq!((u.cpu_user_seconds, u.cpu_system_seconds), (3.25, 0.5));
    assert_eq!((u.max_rss_bytes, u.samples), (150, 1));
    assert_eq!(u.series, None, "history 0 keeps no series");
}

#[test]
fn a_child_reaped_by_a_member_is_not_counted_twice() {
    let mut a = Account::new(0);
    // sh (10) runs a child (11) that has used 2 s so far.
    a.fold(
        &members(&[
            member(10, 1, (0.1, 0.0), (0.0, 0.0), 10),
            member(11, 10, (2.0, 0.0), (0.0, 0.0), 10),
        ]),
        0.0,
        0.0,
    );
    // The child finished at 3 s and sh reaped it: its whole time is in
    // sh's children counters now, tail included.
    a.fold(
        &members(&[member(10, 1, (0.1, 0.0), (3.0, 0.0), 10)]),
        1.0,
        1.0,
    );
    assert_eq!(a.usage().unwrap().cpu_user_seconds, 3.1);
}

#[test]
fn children_between_samples_count_through_their_parent() {
    let mut a = Account::new(0);
    a.fold(
        &members(&[member(10, 1, (0.0, 0.0), (0.0, 0.0), 10)]),
        0.0,
        0.0,
    );
    // Three short children came and went between the samples.
    a.fold(
        &members(&[member(10, 1, (0.0, 0.0), (0.6, 0.3), 10)]),
        1.0,
        1.0,
    );
    let u = a.usage().unwrap();
    assert_eq!((u.cpu_user_seconds, u.cpu_system_seconds), (0.6, 0.3));
}

#[test]
fn a_process_reaped_outside_the_run_is_banked_at_its_last_reading() {
    let mut a = Account::new(0);
    // The first command (parent: the daemon, 1) and an orphan (parent
    // init, 1) both gone at the second sample; a new process (30) came.
    a.fold(
        &members(&[
            member(10, 1, (1.0, 0.0), (0.5, 0.0), 10),
            member(20, 1, (2.0, 1.0), (0.0, 0.0), 10),
        ]),
        0.0,
        0.0,
    );
    a.fold(
        &members(&[member(30, 1, (0.25, 0.0), (0.0, 0.0), 10)]),
        1.0,
        1.0,
    );
    let u = a.usage().unwrap();
    assert_eq!((u.cpu_user_seconds, u.cpu_system_seconds), (3.75, 1.0));
    // Sequential processes keep adding up.
    a.fold(
        &members(&[member(40, 1, (1.0, 0.0), (0.0, 0.0), 10)]),
        2.0,
        2.0,
    );
    assert_eq!(a.usage().unwrap().cpu_user_seconds, 4.75);
}

#[test]
fn a_reused_pid_is_another_process() {
    let mut a = Account::new(0);
    a.fold(
        &members(&[member(10, 1, (1.0, 0.0), (0.0, 0.0), 10)]),
        0.0,
        0.0,
    );
    let mut reused = member(10, 1, (0.5, 0.0), (0.0, 0.0), 10);
    reused.start += 1;
    a.fold(&members(&[reused]), 1.0, 1.0);
    assert_eq!(a.usage().unwrap().cpu_user_seconds, 1.5);
}

#[test]
fn an_empty_reading_counts_no_sample_and_totals_never_go_back() {
    let mut a = Account::new(10);
    a.fold(&members(&[]), 0.0, 0.0);
    assert_eq!(a.usage(), None, "nothing read: no resources record");
    assert_eq!(a.live(), None);
    a.fold(
        &members(&[member(10, 1, (2.0, 1.0), (0.0, 0.0), 300)]),
        1.0,
        100.0,
    );
    // An odd reading lower than before (a child auto-reaped without
    // accounting) does not move the totals back.
    a.fold(
        &members(&[member(10, 1, (1.0, 0.5), (0.0, 0.0), 200)]),
        2.0,
        101.0,
    );
    a.fold(&members(&[]), 3.0, 102.0);
    let u = a.usage().unwrap();
    assert_eq!(
        (
            u.cpu_user_seconds,
            u.cpu_system_seconds,
            u.max_rss_bytes,
            u.samples
        ),
        (2.0, 1.0, 300, 2)
    );
    assert_eq!(u.series.map(|s| s.len()), Some(2));
}

#[test]
fn live_cpu_percent_is_usage_since_the_previous_sample() {
    let mut a = Account::new(10);
    a.fold(
        &members(&[member(10, 1, (1.0, 0.0), (0.0, 0.0), 100)]),
        10.0,
        1000.0,
    );
    assert_eq!(
        a.live(),
        Some(LiveReading {
            cpu_seconds: 1.0,
            cpu_percent: 0.0,
            rss_bytes: 100
        })
    );
    // 1.5 s of CPU over 0.5 s of wall time: three cores busy.
    a.fold(
        &members(&[member(10, 1, (2.0, 0.5), (0.0, 0.0), 80)]),
        10.5,
        1000.5,
    );
    let live = a.live().unwrap();
    assert_eq!(
        (live.cpu_seconds, live.cpu_percent, live.rss_bytes),
        (2.5, 300.0, 80)
    );
    let series = a.series().unwrap();
    assert_eq!(
        series[0],
        Point {
            t: 1000.0,
            cpu_percent: 0.0,
            rss: 100
        }
    );
    assert_eq!(
        series[1],
        Point {
            t: 1000.5,
            cpu_percent: 300.0,
            rss: 80
        }
    );
    assert_eq!(
        a.usage().unwrap().max_rss_bytes,
        100,
        "the peak, not the last"
    );
}

#[test]
fn a_cgroup_reading_floors_cpu_with_its_totals_and_sums_members_rss() {
    let mut a = Account::new(0);
    let contained = |members: &[MemberReading], cpu: Option<(f64, f64)>| Reading::Contained {
        members: members.to_vec(),
        cpu,
    };
    // The members count 0.5 s; the cgroup saw 1.0 + 0.25 (a process
    // reaped between samples, outside any member's children counters).
    a.fold(
        &contained(
            &[member(10, 1, (0.5, 0.0), (0.0, 0.0), 4096)],
            Some((1.0, 0.25)),
        ),
        0.0,
        0.0,
    );
    // A member that left the session but not the cgroup is still read,
    // and now the members count more than the (older) totals.
    a.fold(
        &contained(
            &[
                member(10, 1, (0.5, 0.0), (0.0, 0.0), 1024),
                member(20, 1, (2.5, 0.5), (0.0, 0.0), 2048),
            ],
            Some((1.5, 0.25)),
        ),
        1.0,
        1.0,
    );
    let u = a.usage().unwrap();
    assert_eq!(
        (
            u.cpu_user_seconds,
            u.cpu_system_seconds,
            u.max_rss_bytes,
            u.samples
        ),
        (3.0, 0.5, 4096, 2)
    );
    assert_eq!(
        a.live().unwrap().rss_bytes,
        3072,
        "the live reading sums members"
    );
    assert_eq!(a.live().unwrap().cpu_percent, 225.0);
    // Without totals (a v1 cpu hierarchy without cpuacct) the members
    // alone count, and CPU never goes backwards.
    a.fold(
        &contained(&[member(20, 1, (2.5, 0.5), (0.0, 0.0), 2048)], None),
        2.0,
        2.0,
    );
    let u = a.usage().unwrap();
    assert_eq!(
        (u.cpu_user_seconds, u.cpu_system_seconds, u.samples),
        (3.0, 0.5, 3)
    );
    // A total that does not read as a number leaves the members' count.
    a.fold(
        &contained(
            &[member(20, 1, (2.5, 0.5), (0.0, 0.0), 2048)],
            Some((f64::NAN, 0.0)),
        ),
        3.0,
        3.0,
    );
    let u = a.usage().unwrap();
    assert_eq!((u.cpu_user_seconds, u.samples), (3.0, 4));
    // An empty cgroup (the run's processes are gone) is no sample, even
    // with totals.
    a.fold(&contained(&[], Some((9.0, 9.0))), 4.0, 4.0);
    assert_eq!(a.usage().unwrap().samples, 4, "no process, no sample");
}

#[test]
fn the_record_round_trips_with_and_without_its_series() {
    let usage = ResourceUsage {
        cpu_user_seconds: 1.5,
        cpu_system_seconds: 0.25,
        max_rss_bytes: 104_857_600,
        samples: 3,
        series: Some(vec![Point {
            t: 1.0,
            cpu_percent: 2.0,
            rss: 3,
        }]),
    };
    let summary = usage.to_json(false);
    assert_eq!(
        summary,
        json!({"cpu_user_seconds": 1.5, "cpu_system_seconds": 0.25, "cpu_total_seconds": 1.75,
               "max_rss_bytes": 104_857_600u64, "samples": 3})
    );
    let full = usage.to_json(true);
    assert_eq!(full["series"], json!([[1.0, 2.0, 3]]));
    assert_eq!(ResourceUsage::from_json(&full), Some(usage.clone()));
    let without = ResourceUsage {
        series: None,
        ..usage
    };
    assert_eq!(ResourceUsage::from_json(&summary), Some(without));
}

#[test]
fn malformed_records_read_as_none_and_bad_points_are_dropped() {
    for bad in [
        json!(null),
        json!([]),
        json!({"cpu_user_seconds": "1", "cpu_system_seconds": 0, "max_rss_bytes": 1}),
        json!({"cpu_user_seconds": true, "cpu_system_seconds": 0, "max_rss_bytes": 1}),
        json!({"cpu_user_seconds": 1, "cpu_system_seconds": 0}),
        json!({"cpu_user_seconds": 1, "cpu_system_seconds": 0, "max_rss_bytes": -5}),
    ] {
        assert_eq!(ResourceUsage::from_json(&bad), None, "{bad}");
    }
    let odd = json!({"cpu_user_seconds": 1, "cpu_system_seconds": 0, "max_rss_bytes": 2,
                     "samples": "x", "series": [[1, 2, 3], [1, 2], "x", [1, "a", 3], [4, -1, -7]]});
    let usage = ResourceUsage::from_json(&odd).unwrap();
    assert_eq!(usage.samples, 0);
    assert_eq!(
        usage.series,
        Some(vec![
            Point {
                t: 1.0,
                cpu_percent: 2.0,
                rss: 3
            },
            Point {
                t: 4.0,
                cpu_percent: 0.0,
                rss: 0
            }
        ])
    );
    let long: Vec<Value> = (0..10_000).map(|i| json!([i, 0, 0])).collect();
    let big =
        json!({"cpu_user_seconds": 0, "cpu_system_seconds": 0, "max_rss_bytes": 0, "series": long});
    assert_eq!(
        ResourceUsage::from_json(&big)
            .unwrap()
            .series
            .map(|s| s.len()),
        Some(MAX_SERIES_POINTS)
    );
}

#[test]
fn live_readings_add_up_across_instances() {
    assert_eq!(LiveTotal::of([]), None);
    let r = |c, p, b| LiveReading {
        cpu_seconds: c,
        cpu_percent: p,
        rss_bytes: b,
    };
    let total = LiveTotal::of([r(1.0, 50.0, 10), r(2.0, 25.0, 5)]).unwrap();
    assert_eq!(
        total,
        LiveTotal {
            cpu_percent: 75.0,
            cpu_seconds: 3.0,
            rss_bytes: 15,
            instances: 2
        }
    );
}

#[test]
fn run_stats_are_null_without_monitored_runs() {
    let stats = run_stats(std::iter::empty(), None);
    for key in [
        "avg_cpu_seconds",
        "max_cpu_seconds",
        "last_cpu_seconds",
        "avg_rss_bytes",
        "max_rss_bytes",
        "last_rss_bytes",
    ] {
        assert_eq!(stats[key], Value::Null, "{key}");
    }
    let u = |cpu: f64, rss: u64| ResourceUsage {
        cpu_user_seconds: cpu,
        cpu_system_seconds: 0.0,
        max_rss_bytes: rss,
        samples: 1,
        series: None,
    };
    let runs = [u(1.0, 100), u(3.0, 300)];
    let stats = run_stats(runs.iter(), Some(&runs[0]));
    assert_eq!(stats["avg_cpu_seconds"], json!(2.0));
    assert_eq!(stats["max_cpu_seconds"], json!(3.0));
    assert_eq!(stats["last_cpu_seconds"], json!(1.0));
    assert_eq!(stats["avg_rss_bytes"], json!(200.0));
    assert_eq!(stats["max_rss_bytes"], json!(300));
    assert_eq!(stats["last_rss_bytes"], json!(100));
}
