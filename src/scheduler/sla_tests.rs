//! The SLA monitor's rules, pass by pass, on explicit instants.

use super::*;
use chrono::TimeZone;

fn t(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, 4, 0, 0).unwrap() + chrono::Duration::seconds(seconds)
}

fn sla(stale: Option<u64>, late: Option<u64>, runtime: Option<u64>) -> SlaThresholds {
    SlaThresholds {
        max_time_since_success: stale,
        late_after: late,
        max_runtime: runtime,
    }
}

fn facts<'a>(name: &'a str, sla: &'a SlaThresholds) -> JobFacts<'a> {
    JobFacts {
        name,
        sla: Some(sla),
        enabled: true,
        paused: None,
        owned: true,
        running: Running::default(),
    }
}

fn breached(transitions: &[Transition]) -> Vec<(String, Check)> {
    transitions
        .iter()
        .filter_map(|tr| match tr {
            Transition::Breached {
                job, observation, ..
            } => Some((job.clone(), observation.check)),
            Transition::Recovered { .. } => None,
        })
        .collect()
}

fn recovered(transitions: &[Transition]) -> Vec<(String, Check)> {
    transitions
        .iter()
        .filter_map(|tr| match tr {
            Transition::Recovered {
                job, observation, ..
            } => Some((job.clone(), observation.check)),
            Transition::Breached { .. } => None,
        })
        .collect()
}

#[test]
fn check_names_and_keys_are_the_manuals() {
    let names: Vec<_> = CHECKS.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["maxTimeSinceSuccess", "lateAfter", "maxRuntime"]);
    let keys: Vec<_> = CHECKS.iter().map(|c| c.key()).collect();
    assert_eq!(
        keys,
        [
            "maxTimeSinceSuccessSeconds",
            "lateAfterSeconds",
            "maxRuntimeSeconds"
        ]
    );
}

#[test]
fn staleness_measures_from_first_sight_then_from_the_last_success() {
    let s = sla(Some(100), None, None);
    let mut m = Monitor::default();
    assert!(m.evaluate([facts("a", &s)], t(0)).is_empty());
    // Exactly at the threshold is not a breach; past it is, once.
    assert!(m.evaluate([facts("a", &s)], t(100)).is_empty());
    let tr = m.evaluate([facts("a", &s)], t(101));
    assert_eq!(
        breached(&tr),
        [("a".to_owned(), Check::MaxTimeSinceSuccess)]
    );
    match &tr[0] {
        Transition::Breached {
            observation,
            last_success,
            ..
        } => {
            assert_eq!(observation.threshold, 100);
            assert!((observation.observed - 101.0).abs() < 1e-9);
            assert_eq!(*last_success, None);
        }
        other => panic!("{other:?}"),
    }
    // Latched: nothing fires again while it persists.
    assert!(m.evaluate([facts("a", &s)], t(500)).is_empty());
    assert!(m.any_latched());
    // A success clears it at the next pass, with no report.
    m.succeeded("a", t(510), t(510));
    let tr = m.evaluate([facts("a", &s)], t(520));
    assert_eq!(
        recovered(&tr),
        [("a".to_owned(), Check::MaxTimeSinceSuccess)]
    );
    assert!(breached(&tr).is_empty());
    assert!(!m.any_latched());
    // And it ages from that success.
    assert!(m.evaluate([facts("a", &s)], t(610)).is_empty());
    let tr = m.evaluate([facts("a", &s)], t(611));
    match &tr[..] {
        [Transition::Breached { last_success, .. }] => assert_eq!(*last_success, Some(t(510))),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_older_success_never_moves_the_reference_back() {
    let s = sla(Some(100), None, None);
    let mut m = Monitor::default();
    m.succeeded("a", t(50), t(50));
    m.succeeded("a", t(10), t(60));
    assert_eq!(m.last_success("a"), Some(t(50)));
    assert!(m.evaluate([facts("a", &s)], t(150)).is_empty());
    assert_eq!(breached(&m.evaluate([facts("a", &s)], t(151))).len(), 1);
}

#[test]
fn a_slot_is_late_only_when_no_run_started_since_it() {
    let s = sla(None, Some(60), None);
    let mut m = Monitor::default();
    // Nothing owed: never late, however long.
    assert!(m.evaluate([facts("a", &s)], t(1000)).is_empty());
    m.slot_due("a", t(1000));
    assert!(m.evaluate([facts("a", &s)], t(1060)).is_empty());
    let tr = m.evaluate([facts("a", &s)], t(1061));
    assert_eq!(breached(&tr), [("a".to_owned(), Check::LateAfter)]);
    // Any start clears it.
    m.started("a", t(1100));
    assert_eq!(
        recovered(&m.evaluate([facts("a", &s)], t(1120))),
        [("a".to_owned(), Check::LateAfter)]
    );
    // A slot served at once is never late.
    m.slot_due("a", t(2000));
    m.started("a", t(2000));
    assert!(m.evaluate([facts("a", &s)], t(5000)).is_empty());
}

#[test]
fn a_running_instance_or_an_excused_slot_is_not_late() {
    let s = sla(None, Some(10), None);
    let mut m = Monitor::default();
    m.started("a", t(0));
    m.slot_due("a", t(60));
    let mut running = facts("a", &s);
    running.running = Running {
        any: true,
        oldest_start: Some(t(0)),
    };
    assert!(m.evaluate([running], t(200)).is_empty());
    // The run ends, still nothing started since the slot: late.
    assert_eq!(breached(&m.evaluate([facts("a", &s)], t(201))).len(), 1);
    // A slot the concurrency policy dropped is excused.
    let mut m = Monitor::default();
    m.slot_due("b", t(0));
    m.slot_excused("b");
    assert!(m.evaluate([facts("b", &s)], t(500)).is_empty());
}

#[test]
fn runtime_is_measured_from_the_oldest_live_launch() {
    let s = sla(None, None, Some(30));
    let mut m = Monitor::default();
    let mut f = facts("a", &s);
    f.running = Running {
        any: true,
        oldest_start: Some(t(0)),
    };
    assert!(m.evaluate([f], t(30)).is_empty());
    let tr = m.evaluate([f], t(45));
    assert_eq!(breached(&tr), [("a".to_owned(), Check::MaxRuntime)]);
    let view = m.view("a", &s, f.running, t(50));
    assert_eq!(view.breaches.len(), 1);
    assert_eq!(view.breaches[0].since, t(45));
    assert!(
        (view.breaches[0].observed - 50.0).abs() < 1e-9,
        "re-measured"
    );
    // The run ends: recovered.
    let tr = m.evaluate([facts("a", &s)], t(60));
    assert_eq!(recovered(&tr), [("a".to_owned(), Check::MaxRuntime)]);
    assert!(m
        .view("a", &s, Running::default(), t(61))
        .breaches
        .is_empty());
}

#[test]
fn paused_disabled_and_foreign_jobs_drop_their_latches_and_fire_again_later() {
    let s = sla(None, None, Some(5));
    let long_run = Running {
        any: true,
        oldest_start: Some(t(0)),
    };
    for excuse in ["paused", "disabled", "foreign"] {
        let mut m = Monitor::default();
        let mut f = facts("a", &s);
        f.running = long_run;
        assert_eq!(breached(&m.evaluate([f], t(10))).len(), 1, "{excuse}");
        let mut excused = f;
        match excuse {
            "paused" => excused.paused = Some((t(11), t(1000))),
            "disabled" => excused.enabled = false,
            _ => excused.owned = false,
        }
        // Dropped silently (no recovery line for an excusal).
        assert!(m.evaluate([excused], t(20)).is_empty(), "{excuse}");
        assert!(m.view("a", &s, long_run, t(21)).breaches.is_empty());
        assert!(m.series().iter().all(|s| !s.late), "{excuse}");
        // Eligible again with the breach still there: it reports again.
        assert_eq!(breached(&m.evaluate([f], t(30))).len(), 1, "{excuse}");
        let series = m.series();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].breaches, 2, "{excuse}");
    }
}

#[test]
fn a_foreign_job_forgets_the_slot_it_owed() {
    let s = sla(None, Some(10), None);
    let mut m = Monitor::default();
    m.slot_due("a", t(0));
    let mut foreign = facts("a", &s);
    foreign.owned = false;
    assert!(m.evaluate([foreign], t(100)).is_empty());
    // Ownership comes back: the slot another node ran is not late here.
    assert!(m.evaluate([facts("a", &s)], t(200)).is_empty());
}

#[test]
fn pause_and_disable_time_is_credited_against_staleness() {
    let s = sla(Some(100), None, None);
    let mut m = Monitor::default();
    m.succeeded("a", t(0), t(0));
    assert!(m.evaluate([facts("a", &s)], t(50)).is_empty());
    let mut paused = facts("a", &s);
    paused.paused = Some((t(60), t(1060)));
    assert!(m.evaluate([paused], t(60)).is_empty());
    assert!(m.evaluate([paused], t(1000)).is_empty());
    // Resumed early (seen at the pass at 1010): 950 s held, so 60 s stale.
    assert!(m.evaluate([facts("a", &s)], t(1010)).is_empty());
    assert!(m.evaluate([facts("a", &s)], t(1050)).is_empty());
    let tr = m.evaluate([facts("a", &s)], t(1051));
    match &tr[..] {
        [Transition::Breached { observation, .. }] => {
            assert!(
                (observation.observed - 101.0).abs() < 1e-9,
                "{observation:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Disabled for a long time, then enabled: a full threshold again.
    let mut m = Monitor::default();
    m.succeeded("b", t(0), t(0));
    let mut off = facts("b", &s);
    off.enabled = false;
    assert!(m.evaluate([off], t(10)).is_empty());
    assert!(m.evaluate([off], t(5000)).is_empty());
    // 10 s stale before the disable, 90 s after it: at the threshold.
    assert!(m.evaluate([facts("b", &s)], t(5000)).is_empty());
    assert!(m.evaluate([facts("b", &s)], t(5090)).is_empty());
    assert_eq!(breached(&m.evaluate([facts("b", &s)], t(5091))).len(), 1);
}

#[test]
fn a_never_succeeded_job_re_enabled_measures_from_its_return() {
    let s = sla(Some(100), None, None);
    let mut m = Monitor::default();
    let mut off = facts("a", &s);
    off.enabled = false;
    assert!(m.evaluate([off], t(0)).is_empty());
    assert!(m.evaluate([facts("a", &s)], t(1000)).is_empty());
    assert!(m.evaluate([facts("a", &s)], t(1100)).is_empty());
    assert_eq!(breached(&m.evaluate([facts("a", &s)], t(1101))).len(), 1);
}

#[test]
fn removing_the_block_or_one_check_clears_its_latch() {
    let both = sla(Some(10), None, Some(10));
    let runtime_only = sla(None, None, Some(10));
    let mut m = Monitor::default();
    let mut f = facts("a", &both);
    f.running = Running {
        any: true,
        oldest_start: Some(t(0)),
    };
    assert!(m.evaluate([f], t(0)).is_empty(), "first sight at 0");
    assert_eq!(breached(&m.evaluate([f], t(20))).len(), 2);
    let mut g = f;
    g.sla = Some(&runtime_only);
    assert!(m.evaluate([g], t(30)).is_empty());
    let late: Vec<_> = m.series().into_iter().filter(|s| s.late).collect();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].check, Check::MaxRuntime);
    let mut none = f;
    none.sla = None;
    assert!(m.evaluate([none], t(40)).is_empty());
    assert!(m.series().iter().all(|s| !s.late));
    // The series stay (at 0) with their counts, as counters must.
    assert_eq!(m.series().iter().map(|s| s.breaches).sum::<u64>(), 2);
}

#[test]
fn series_exist_from_the_first_evaluation_and_only_for_configured_checks() {
    let s = sla(Some(100), Some(100), None);
    let mut m = Monitor::default();
    assert!(m.series().is_empty());
    m.slot_due("b", t(0));
    assert!(m.series().is_empty(), "recording is not evaluating");
    m.evaluate([facts("b", &s), facts("a", &s)], t(1));
    let series = m.series();
    let keys: Vec<_> = series.iter().map(|s| (s.job.as_str(), s.check)).collect();
    assert_eq!(
        keys,
        [
            ("a", Check::MaxTimeSinceSuccess),
            ("a", Check::LateAfter),
            ("b", Check::MaxTimeSinceSuccess),
            ("b", Check::LateAfter),
        ]
    );
    assert!(series.iter().all(|s| !s.late && s.breaches == 0));
    m.retain(|name| name == "a");
    assert_eq!(m.series().len(), 2);
    assert!(!m.knows("b"));
}

#[test]
fn the_view_lists_thresholds_in_check_order_and_only_latched_breaches() {
    let s = sla(Some(1000), Some(5), Some(1));
    let mut m = Monitor::default();
    m.slot_due("a", t(0));
    let running = Running {
        any: true,
        oldest_start: Some(t(0)),
    };
    let mut f = facts("a", &s);
    f.running = running;
    // lateAfter is not breached while a run is in progress.
    let tr = m.evaluate([f], t(10));
    assert_eq!(breached(&tr), [("a".to_owned(), Check::MaxRuntime)]);
    let view = m.view("a", &s, running, t(12));
    assert_eq!(
        view.thresholds,
        [
            (Check::MaxTimeSinceSuccess, 1000),
            (Check::LateAfter, 5),
            (Check::MaxRuntime, 1)
        ]
    );
    assert_eq!(view.breaches.len(), 1);
    assert_eq!(view.breaches[0].check, Check::MaxRuntime);
    // An unknown job shows its thresholds and no breach.
    let fresh = Monitor::default().view("z", &s, Running::default(), t(0));
    assert_eq!(fresh.thresholds.len(), 3);
    assert!(fresh.breaches.is_empty());
}

#[test]
fn banked_spans_merge_and_stay_bounded() {
    let s = sla(Some(10_000_000), None, None);
    let mut m = Monitor::default();
    m.succeeded("a", t(0), t(0));
    let mut now = 0;
    for i in 0..(PAUSE_SPANS_MAX as i64 + 10) {
        let mut p = facts("a", &s);
        p.paused = Some((t(i * 100), t(i * 100 + 50)));
        now = i * 100 + 10;
        m.evaluate([p], t(now));
        now = i * 100 + 60;
        m.evaluate([facts("a", &s)], t(now));
    }
    let track = &m.jobs["a"];
    assert_eq!(track.held.len(), PAUSE_SPANS_MAX);
    assert!(
        track.held.windows(2).all(|w| w[0].1 < w[1].0),
        "disjoint, sorted"
    );
    // Overlapping spans merge.
    let mut one = Track::default();
    bank(&mut one, t(0), t(10));
    bank(&mut one, t(5), t(20));
    bank(&mut one, t(30), t(40));
    assert_eq!(one.held, [(t(0), t(20)), (t(30), t(40))]);
    assert!(now > 0);
}

#[test]
fn breach_counts_carried_from_an_earlier_process_add_up_without_knowing_the_job() {
    let s = sla(Some(100), None, None);
    let mut m = Monitor::default();
    m.carry_breaches("a", "maxTimeSinceSuccess", 4);
    m.carry_breaches("a", "noSuchCheck", 9);
    m.carry_breaches("gone", "lateAfter", 2);
    assert!(!m.knows("a"), "a carried count is not a sighting");
    assert_eq!(
        m.persisted_breaches(),
        [
            ("a".to_owned(), vec![("maxTimeSinceSuccess", 4)]),
            ("gone".to_owned(), vec![("lateAfter", 2)])
        ],
        "kept until an evaluation takes them up"
    );
    m.retain(|name| name != "gone");
    m.evaluate([facts("a", &s)], t(0));
    assert_eq!(
        m.series()[0].breaches,
        4,
        "taken up at the first evaluation"
    );
    m.evaluate([facts("a", &s)], t(101));
    assert_eq!(m.series()[0].breaches, 5, "and counted on from there");
    m.carry_breaches("a", "maxTimeSinceSuccess", 1);
    assert_eq!(
        m.persisted_breaches(),
        [("a".to_owned(), vec![("maxTimeSinceSuccess", 6)])]
    );
}
