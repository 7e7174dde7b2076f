use super::poll::Poller;
use super::rehydrate;
use super::*;
use crate::scheduler::pause::{PauseMark, PauseWindow};
use crate::state::records;
use chrono::{DateTime, SubsecRound, TimeDelta, TimeZone, Utc};

/// Now, to the microsecond (what the records keep).
fn micros_now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}
use serde_json::json;
use std::collections::HashMap;

fn store(dir: &std::path::Path) -> Arc<Store> {
    Arc::new(Store::open_for_tests(dir))
}

fn load(yaml: &str) -> crate::config::LoadedConfig {
    crate::config::load_sources(&[crate::config::Source {
        name: "test.yaml".into(),
        text: yaml.into(),
        kind: crate::config::SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("the test config loads")
}

fn job(name: &str, extra: &str) -> Arc<JobConfig> {
    let yaml = format!(
        "jobs:\n  - name: {name}\n    command: 'true'\n    schedule: '*/5 * * * *'\n{extra}"
    );
    Arc::new(load(&yaml).jobs.into_iter().next().expect("one job"))
}

fn settings() -> DurableSettings {
    DurableSettings {
        host: "node-a".into(),
        policy: OnStoreUnavailable::Degrade,
        max_runs: 1000,
        gc_grace: None,
        elect_leader: false,
    }
}

#[test]
fn an_open_run_of_a_dead_process_becomes_an_unknown_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let started = Utc::now() - TimeDelta::minutes(3);
    // A pid that cannot exist: the run is gone.
    store
        .append(
            "inflight/backup",
            &records::inflight_open("node-a", "old-proc", Some(u32::MAX - 1), started, "d"),
        )
        .unwrap();
    let jobs = Arc::new(vec![job("backup", "")]);
    let read = rehydrate::read(&store, &settings(), "new-proc", &jobs, &HashMap::new()).unwrap();
    let rows = &read.runs["backup"];
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome().as_str(), "unknown");
    assert!(rows[0]
        .fail_reason
        .as_deref()
        .unwrap()
        .contains("no completion was recorded for the run started at"));
    // Under onMissed: skip the row carries the start as its finish.
    assert_eq!(rows[0].finished_at.timestamp(), started.timestamp());
    let again = rehydrate::read(&store, &settings(), "newer-proc", &jobs, &HashMap::new()).unwrap();
    assert_eq!(
        again.runs["backup"].len(),
        1,
        "the closed record is not reconciled twice"
    );
}

#[test]
fn a_live_previous_run_is_left_open_and_blocks_its_reboot_job() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    // This test process stands in for a job the previous daemon started.
    let started = Utc::now();
    store
        .append(
            "inflight/boot",
            &records::inflight_open("node-a", "old-proc", Some(std::process::id()), started, "d"),
        )
        .unwrap();
    let mut reboot = (*job("boot", "")).clone();
    reboot.schedule = load("jobs:\n  - name: boot\n    command: 'true'\n    schedule: '@reboot'\n")
        .jobs[0]
        .schedule
        .clone();
    let jobs = Arc::new(vec![Arc::new(reboot)]);
    let read = rehydrate::read(&store, &settings(), "new-proc", &jobs, &HashMap::new()).unwrap();
    assert!(read.runs.is_empty(), "no row for a run that still runs");
    assert!(read.reboot_survivors.contains("boot"));
}

#[test]
fn a_recycled_pid_is_not_the_recorded_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    // Our pid, but recorded as started long before this process began.
    let long_ago = Utc.with_ymd_and_hms(2001, 1, 1, 0, 0, 0).unwrap();
    store
        .append(
            "inflight/j",
            &records::inflight_open("node-a", "old", Some(std::process::id()), long_ago, "d"),
        )
        .unwrap();
    let jobs = Arc::new(vec![job("j", "    onMissed: run-once\n")]);
    let read = rehydrate::read(&store, &settings(), "new", &jobs, &HashMap::new()).unwrap();
    assert_eq!(read.runs["j"][0].outcome().as_str(), "unknown");
    // Under run-once the interrupted slot stays owed: no watermark moved.
    assert!(!read.watermarks.contains_key("j"));
}

#[test]
fn another_hosts_open_record_and_this_process_own_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let now = Utc::now();
    store
        .append(
            "inflight/a",
            &records::inflight_open("node-b", "p", Some(u32::MAX - 1), now, "d"),
        )
        .unwrap();
    store
        .append(
            "inflight/b",
            &records::inflight_open("node-a", "me", Some(u32::MAX - 1), now, "d"),
        )
        .unwrap();
    let jobs = Arc::new(vec![job("a", ""), job("b", "")]);
    let read = rehydrate::read(&store, &settings(), "me", &jobs, &HashMap::new()).unwrap();
    assert!(read.runs.is_empty(), "{:?}", read.runs.keys());
}

#[test]
fn the_read_brings_back_pauses_retries_watermarks_and_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let now = micros_now();
    let window = PauseWindow {
        since: now,
        until: now + TimeDelta::hours(1),
        note: "incident".into(),
        by: "ops".into(),
        channel: "api".into(),
    };
    store
        .append(
            "paused/p",
            &pause_data(&PauseMark::Paused(window.clone()), "node-b"),
        )
        .unwrap();
    store
        .append(
            "retries/r",
            &records::retry_pending("node-a", 2, now + TimeDelta::seconds(30), "dg", now),
        )
        .unwrap();
    store
        .append(
            "retries/other-host",
            &records::retry_pending("node-b", 1, now, "dg", now),
        )
        .unwrap();
    let finished = Utc.with_ymd_and_hms(2026, 7, 4, 3, 5, 0).unwrap();
    store
        .append(
            "runs/m",
            &json!({"outcome": "failure", "exit_code": 1, "started_at": "2026-07-04T03:00:00+00:00",
                    "finished_at": "2026-07-04T03:05:00+00:00", "duration": 300.0,
                    "fail_reason": "x", "skip_reason": null, "resources": null,
                    "ranAt": "2026-07-04T03:05:00+00:00"}),
        )
        .unwrap();
    let jobs = Arc::new(vec![
        job("p", ""),
        job("r", ""),
        job("other-host", ""),
        job("m", "    onMissed: run-all\n"),
    ]);
    let read = rehydrate::read(&store, &settings(), "me", &jobs, &HashMap::new()).unwrap();
    assert_eq!(read.pauses.get("p"), Some(&PauseMark::Paused(window)));
    assert_eq!(read.retries["r"].attempt, 2);
    assert_eq!(read.retries["r"].digest, "dg");
    assert!(
        !read.retries.contains_key("other-host"),
        "another node's live ladder"
    );
    assert_eq!(read.watermarks.get("m"), Some(&finished));
    assert!(!read.last_real["m"].succeeded);
}

#[test]
fn the_poller_reports_other_nodes_pauses_once_and_the_store_going_away() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut poller = Poller {
        store: Arc::clone(&store),
        seen: HashMap::new(),
        available: true,
    };
    let jobs = vec![job("p", "    onlyIfLastSucceeded: true\n")];
    assert!(poller.look(&jobs).is_empty());
    let mark = PauseMark::Resumed {
        at: micros_now(),
        by: "ops".into(),
    };
    store
        .append("paused/p", &pause_data(&mark, "node-b"))
        .unwrap();
    store
        .append(
            "runs/p",
            &json!({"outcome": "success", "finished_at": "2026-07-04T03:05:00+00:00"}),
        )
        .unwrap();
    let events = poller.look(&jobs);
    assert!(
        events.contains(&DurableEvent::Pause {
            job: "p".into(),
            mark
        }),
        "{events:?}"
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, DurableEvent::LastOutcome { outcome, .. } if outcome.succeeded)));
    assert!(poller.look(&jobs).is_empty(), "nothing changed since");
    std::fs::rename(dir.path().join("default"), dir.path().join("moved")).unwrap();
    assert_eq!(poller.look(&jobs), vec![DurableEvent::Available(false)]);
    assert!(poller.look(&jobs).is_empty(), "said once");
    std::fs::rename(dir.path().join("moved"), dir.path().join("default")).unwrap();
    let back = poller.look(&jobs);
    assert!(back.contains(&DurableEvent::Available(true)), "{back:?}");
}

#[test]
fn pause_records_round_trip_and_python_ones_read() {
    let now = Utc.with_ymd_and_hms(2026, 7, 4, 3, 0, 0).unwrap();
    let window = PauseWindow {
        since: now,
        until: now + TimeDelta::hours(1),
        note: "n".into(),
        by: "b".into(),
        channel: "api".into(),
    };
    for mark in [
        PauseMark::Paused(window),
        PauseMark::Resumed {
            at: now,
            by: "x".into(),
        },
    ] {
        let data = pause_data(&mark, "h");
        let serde_json::Value::Object(map) = data else {
            panic!()
        };
        assert_eq!(pause_from_data(&map), Some(mark));
    }
    let python = json!({"kind": "resumed", "by": "ops", "channel": "web", "at": "2026-07-04T03:00:00.5+00:00", "host": "h"});
    let serde_json::Value::Object(map) = python else {
        panic!()
    };
    assert!(matches!(
        pause_from_data(&map),
        Some(PauseMark::Resumed { .. })
    ));
}
