use super::*;
use chrono::TimeZone;
use serde_json::json;

fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap()
}

fn paused(since: i64, until: i64) -> PauseMark {
    PauseMark::Paused(PauseWindow {
        since: t(since),
        until: t(until),
        note: "maintenance".into(),
        by: "ops".into(),
        channel: "api".into(),
    })
}

fn resumed(at: i64) -> PauseMark {
    PauseMark::Resumed {
        at: t(at),
        by: "api".into(),
    }
}

fn retry(attempt: u32, at: i64) -> RetryFact {
    RetryFact {
        attempt,
        due: t(at + 30),
        digest: "d1".into(),
        at: t(at),
    }
}

#[test]
fn every_kind_round_trips_through_the_configmap_values() {
    let mut delta = Delta::default();
    delta.pause("a", &paused(0, 3600));
    delta.pause("b", &resumed(5));
    delta.retry("a", RetryOp::Pending(retry(2, 10)));
    delta.outcome(
        "a",
        OutcomeFact {
            at: t(9),
            ok: false,
        },
    );
    delta.reboot.insert(
        "boot".into(),
        RebootFact {
            host: "pod-1".into(),
            boot: Some("b-1".into()),
            bt: Some(1.5),
            digest: "d".into(),
            at: t(1),
        },
    );
    delta.counters =
        Some(json!({"buckets": [1.0], "jobs": {"a": {"runs": {"success": 3}, "retries": 1}}}));
    let mut facts = Facts::default();
    facts.apply(&delta);
    let (values, dropped) = facts.encode(t(20), BUDGET);
    assert!(dropped.is_empty());
    assert_eq!(values.len(), KEYS.len());
    let (back, warnings) = Facts::decode(&values);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(back, facts);
    assert_eq!(back.pauses["a"].mark(), Some(paused(0, 3600)));
    assert_eq!(back.pauses["b"].mark(), Some(resumed(5)));
    assert_eq!(back.port_retries()["a"].not_before, t(40));
    assert_eq!(back.port_retries()["a"].recorded_at, t(10));
}

#[test]
fn a_key_that_does_not_parse_reads_as_empty_and_is_named() {
    let mut data = BTreeMap::new();
    data.insert(KEY_PAUSES.to_owned(), "{not json".to_owned());
    data.insert(
        KEY_OUTCOMES.to_owned(),
        r#"{"j":{"at":"2024-01-01T00:00:00Z","ok":true}}"#.to_owned(),
    );
    data.insert("someone-else".to_owned(), "x".to_owned());
    let (facts, warnings) = Facts::decode(&data);
    assert!(facts.pauses.is_empty());
    assert_eq!(facts.outcomes.len(), 1);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains(KEY_PAUSES), "{warnings:?}");
}

#[test]
fn an_absent_configmap_is_an_empty_document() {
    let (facts, warnings) = Facts::decode(&BTreeMap::new());
    assert_eq!(facts, Facts::default());
    assert!(warnings.is_empty());
    let (facts, _) = Facts::decode(&Facts::default().values());
    assert_eq!(facts.counters, None);
}

#[test]
fn the_newer_pause_mark_wins_in_the_delta_and_on_the_base() {
    let mut delta = Delta::default();
    delta.pause("j", &paused(10, 100));
    delta.pause("j", &paused(5, 100));
    assert_eq!(
        delta.pauses["j"].at,
        t(10),
        "an older mark does not replace"
    );
    delta.pause("j", &resumed(10));
    assert_eq!(
        delta.pauses["j"].k, "r",
        "a resume at the same instant wins"
    );
    let mut base = Facts::default();
    base.pauses
        .insert("j".into(), PauseFact::from_mark(&resumed(50)));
    base.apply(&delta);
    assert_eq!(base.pauses["j"].at, t(50), "the server's newer mark stays");
}

#[test]
fn a_settled_retry_removes_only_its_attempt_or_older() {
    let mut delta = Delta::default();
    delta.retry("j", RetryOp::Pending(retry(2, 0)));
    delta.retry("j", RetryOp::Settled(1));
    assert!(matches!(delta.retries["j"], RetryOp::Pending(_)));
    delta.retry("j", RetryOp::Settled(2));
    assert_eq!(delta.retries["j"], RetryOp::Settled(2));
    let mut base = Facts::default();
    base.retries.insert("j".into(), retry(3, 0));
    base.retries.insert("k".into(), retry(1, 0));
    let mut settle = Delta::default();
    settle.retry("j", RetryOp::Settled(2));
    settle.retry("k", RetryOp::Settled(1));
    base.apply(&settle);
    assert!(base.retries.contains_key("j"), "attempt 3 is newer than 2");
    assert!(!base.retries.contains_key("k"));
}

#[test]
fn the_later_outcome_wins() {
    let mut delta = Delta::default();
    delta.outcome("j", OutcomeFact { at: t(5), ok: true });
    delta.outcome(
        "j",
        OutcomeFact {
            at: t(3),
            ok: false,
        },
    );
    assert!(delta.outcomes["j"].ok);
    let mut base = Facts::default();
    base.outcomes.insert(
        "j".into(),
        OutcomeFact {
            at: t(9),
            ok: false,
        },
    );
    base.apply(&delta);
    assert!(!base.outcomes["j"].ok);
}

#[test]
fn lapsed_pauses_and_old_resumes_are_dropped_after_an_hour() {
    let mut facts = Facts::default();
    facts
        .pauses
        .insert("live".into(), PauseFact::from_mark(&paused(0, 100)));
    facts
        .pauses
        .insert("resumed".into(), PauseFact::from_mark(&resumed(50)));
    facts.encode(t(50 + 3599), BUDGET);
    assert_eq!(facts.pauses.len(), 2);
    facts.encode(t(50 + 3600), BUDGET);
    assert_eq!(facts.pauses.keys().collect::<Vec<_>>(), ["live"]);
    facts.encode(t(100 + 3600), BUDGET);
    assert!(facts.pauses.is_empty());
}

#[test]
fn counters_lose_the_compatibility_and_zero_fields() {
    let snapshot = json!({"buckets": [0.5, 1.0], "jobs": {"j": {
        "runs": {"success": 2}, "retries": 0, "permanent_failures": 0, "start_failures": 1,
        "duration_sum": 0.3, "duration_count": 2, "bucket_counts": [1, 2],
        "last_success_time": 1700000000.0, "last_failure_time": null,
        "cpu_user_sum": 0.0, "cpu_system_sum": 0.0, "cpu_count": 0,
        "max_rss_observed": 0, "sla_breaches": {}
    }}});
    let compact = compact_counters(&snapshot);
    let j = compact["jobs"]["j"].as_object().unwrap();
    let mut keys: Vec<_> = j.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "bucket_counts",
            "duration_count",
            "duration_sum",
            "last_success_time",
            "runs",
            "start_failures"
        ]
    );
    assert_eq!(compact["buckets"], json!([0.5, 1.0]));
}

fn big_counters(jobs: usize) -> Value {
    let jobs: Map<String, Value> = (0..jobs)
        .map(|i| {
            (
                format!("job-{i:05}"),
                json!({"runs": {"success": i + 1}, "duration_sum": 1.0, "duration_count": 1,
                       "bucket_counts": [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
                       "last_success_time": 1_700_000_000.0 + i as f64}),
            )
        })
        .collect();
    json!({"buckets": [0.1], "jobs": jobs})
}

#[test]
fn under_the_budget_nothing_is_dropped() {
    let mut facts = Facts {
        counters: Some(big_counters(100)),
        ..Facts::default()
    };
    let before = facts.clone();
    assert!(trim(&mut facts, BUDGET).is_empty());
    assert_eq!(facts, before);
}

#[test]
fn over_the_budget_histograms_go_first_then_the_least_recent_counters() {
    let mut facts = Facts {
        counters: Some(big_counters(2000)),
        ..Facts::default()
    };
    facts
        .pauses
        .insert("p".into(), PauseFact::from_mark(&paused(0, 100)));
    let full = size(&facts);
    // A budget the histograms' removal alone meets.
    let mut light = facts.clone();
    let dropped = trim(&mut light, full * 3 / 4);
    assert_eq!(dropped, ["the counters' duration histograms"]);
    assert_eq!(
        light.counters.as_ref().unwrap()["jobs"]
            .as_object()
            .unwrap()
            .len(),
        2000
    );
    assert!(light.counters.as_ref().unwrap()["jobs"]["job-00000"]
        .get("bucket_counts")
        .is_none());
    // A budget that takes whole jobs: the ones that ran longest ago go.
    let dropped = trim(&mut facts, full / 4);
    assert!(size(&facts) <= full / 4);
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(dropped[1].contains("that ran longest ago"), "{dropped:?}");
    let jobs = facts.counters.as_ref().unwrap()["jobs"]
        .as_object()
        .unwrap();
    assert!(jobs.contains_key("job-01999"));
    assert!(!jobs.contains_key("job-00000"));
    assert_eq!(facts.pauses.len(), 1, "pauses are the last thing given up");
}

#[test]
fn over_the_budget_without_counters_the_oldest_outcomes_go_before_retries_and_pauses() {
    let mut facts = Facts::default();
    for i in 0..1000 {
        facts
            .outcomes
            .insert(format!("job-{i:04}"), OutcomeFact { at: t(i), ok: true });
    }
    facts.retries.insert("r".into(), retry(1, 0));
    facts
        .pauses
        .insert("p".into(), PauseFact::from_mark(&paused(0, 100)));
    let budget = size(&facts) / 2;
    let dropped = trim(&mut facts, budget);
    assert!(size(&facts) <= budget);
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(dropped[0].contains("oldest outcomes"), "{dropped:?}");
    assert!(facts.outcomes.contains_key("job-0999"));
    assert!(!facts.outcomes.contains_key("job-0000"));
    assert_eq!((facts.retries.len(), facts.pauses.len()), (1, 1));
}

#[test]
fn a_tiny_budget_empties_everything_without_looping_forever() {
    let mut facts = Facts::default();
    facts
        .pauses
        .insert("p".into(), PauseFact::from_mark(&paused(0, 100)));
    facts.retries.insert("r".into(), retry(1, 0));
    let dropped = trim(&mut facts, 0);
    assert!(facts.pauses.is_empty() && facts.retries.is_empty());
    assert_eq!(dropped.len(), 2, "{dropped:?}");
}

#[test]
fn ten_thousand_jobs_of_counters_fit_after_compaction_and_trimming() {
    let mut facts = Facts::default();
    let delta = Delta {
        counters: Some(big_counters(10_000)),
        ..Delta::default()
    };
    facts.apply(&delta);
    let (values, _) = facts.encode(t(0), BUDGET);
    assert!(values.values().map(String::len).sum::<usize>() <= BUDGET);
}

#[test]
fn changes_since_name_only_what_moved() {
    let mut before = Facts::default();
    before
        .pauses
        .insert("same".into(), PauseFact::from_mark(&paused(0, 100)));
    before
        .outcomes
        .insert("same".into(), OutcomeFact { at: t(1), ok: true });
    let mut after = before.clone();
    after
        .pauses
        .insert("new".into(), PauseFact::from_mark(&resumed(3)));
    after.outcomes.insert(
        "same".into(),
        OutcomeFact {
            at: t(2),
            ok: false,
        },
    );
    let (pauses, outcomes) = after.changes_since(&before);
    assert_eq!(pauses, [("new".to_owned(), resumed(3))]);
    assert_eq!(
        outcomes,
        [(
            "same".to_owned(),
            OutcomeFact {
                at: t(2),
                ok: false
            }
        )]
    );
    let (pauses, outcomes) = after.changes_since(&after);
    assert!(pauses.is_empty() && outcomes.is_empty());
}

#[test]
fn a_reboot_marker_covers_only_its_host_boot_and_definition() {
    let m = RebootFact {
        host: "pod-1".into(),
        boot: Some("b1".into()),
        bt: Some(1000.0),
        digest: "d".into(),
        at: t(0),
    };
    assert!(m.covers("pod-1", Some("b1"), Some(5000.0), "d"));
    assert!(
        !m.covers("pod-2", Some("b1"), Some(1000.0), "d"),
        "a new pod is a new boot"
    );
    assert!(
        !m.covers("pod-1", Some("b2"), Some(1000.0), "d"),
        "the node rebooted"
    );
    assert!(
        !m.covers("pod-1", Some("b1"), Some(1000.0), "e"),
        "the job was redefined"
    );
    assert!(
        m.covers("pod-1", None, Some(1030.0), "d"),
        "boot times within a minute"
    );
    assert!(!m.covers("pod-1", None, Some(1100.0), "d"));
    assert!(
        !m.covers("pod-1", None, None, "d"),
        "nothing known: every start is a boot"
    );
}

#[test]
fn every_hosts_reboot_marker_survives_the_others_and_old_documents_still_count() {
    let marker = |host: &str, at: i64| RebootFact {
        host: host.into(),
        boot: Some("b1".into()),
        bt: Some(1000.0),
        digest: "d".into(),
        at: t(at),
    };
    let mut facts = Facts::default();
    for (host, at) in [("pod-1", 1), ("pod-2", 2), ("pod-3", 3)] {
        let mut delta = Delta::default();
        delta
            .reboot
            .insert(reboot_key("everywhere", host), marker(host, at));
        facts.apply(&delta);
    }
    // Each pod's run of an EveryNode job is remembered, whichever landed last.
    for host in ["pod-1", "pod-2", "pod-3"] {
        assert!(
            facts.reboot_covers("everywhere", host, Some("b1"), None, "d"),
            "{host}"
        );
    }
    assert!(!facts.reboot_covers("everywhere", "pod-4", Some("b1"), None, "d"));
    assert!(!facts.reboot_covers("other", "pod-1", Some("b1"), None, "d"));
    // A document written before kept one marker per job under its name.
    let mut old = Facts::default();
    old.reboot.insert("boot".into(), marker("pod-2", 5));
    assert!(old.reboot_covers("boot", "pod-2", Some("b1"), None, "d"));
    assert!(!old.reboot_covers("boot", "pod-1", Some("b1"), None, "d"));
    assert_eq!(reboot_key("a\nb", "pod"), "a\nb\npod");
}
