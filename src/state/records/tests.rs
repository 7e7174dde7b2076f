use super::*;
use chrono::TimeZone;

fn at(h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 4, h, m, 0).unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn run(outcome: &str) -> RunRecord {
    let mut r = RunRecord {
        finished_at: at(3, 5),
        pid: Some(42),
        ..RunRecord::begun(7, "backup".into(), Trigger::Schedule, 0, at(3, 0))
    };
    match outcome {
        "failure" => {
            r.retcode = 2;
            r.fail_reason = Some("failsWhen=nonzeroReturn and retcode=2".into());
        }
        "cancelled" => r.cancelled = true,
        "skipped" => {
            r.skip_reason = Some("paused".into());
            r.finished_at = r.started_at;
        }
        "unknown" => {
            r.interrupted = true;
            r.fail_reason = Some("run interrupted: ...".into());
        }
        _ => {}
    }
    r
}

#[test]
fn a_run_is_written_in_the_originals_shape() {
    assert_eq!(
        run_data(&run("failure")),
        json!({
            "outcome": "failure", "exit_code": 2,
            "started_at": "2026-07-04T03:00:00+00:00", "finished_at": "2026-07-04T03:05:00+00:00",
            "duration": 300.0, "fail_reason": "failsWhen=nonzeroReturn and retcode=2",
            "skip_reason": null, "resources": null, "ranAt": "2026-07-04T03:05:00+00:00",
        })
    );
    let skipped = run_data(&run("skipped"));
    assert_eq!(skipped["exit_code"], Value::Null);
    assert_eq!(skipped["started_at"], Value::Null);
    assert_eq!(skipped["duration"], Value::Null);
    assert!(
        skipped.get("ranAt").is_none(),
        "a pause-skipped slot moves no ranAt"
    );
}

#[test]
fn every_outcome_reads_back_as_it_was_written() {
    for outcome in ["success", "failure", "cancelled", "skipped", "unknown"] {
        let written = run(outcome);
        let read = run_from_data("backup", &obj(run_data(&written))).expect(outcome);
        assert_eq!(read.outcome().as_str(), outcome);
        assert_eq!(read.finished_at, written.finished_at, "{outcome}");
        assert_eq!(read.fail_reason, written.fail_reason, "{outcome}");
        if outcome == "failure" || outcome == "success" {
            assert_eq!(
                (read.retcode, read.started_at),
                (written.retcode, written.started_at)
            );
        }
    }
}

#[test]
fn python_rows_read_and_junk_does_not() {
    let python = obj(json!({
        "outcome": "failure", "exit_code": null, "started_at": null,
        "finished_at": "2026-07-04T03:05:00.250000+00:00", "duration": null,
        "fail_reason": "boom", "skip_reason": null, "resources": {"cpu": 1},
        "verification": {"ok": false}, "ranAt": "2026-07-04T03:05:00.250000+00:00",
    }));
    let read = run_from_data("j", &python).expect("reads");
    assert!(read.failed());
    assert_eq!(read.finished_at.timestamp_subsec_micros(), 250_000);
    for junk in [
        json!({}),
        json!({"outcome": "success"}),
        json!({"outcome": "weird", "finished_at": "2026-07-04T03:05:00+00:00"}),
        json!({"outcome": "success", "finished_at": 5}),
    ] {
        assert!(run_from_data("j", &obj(junk.clone())).is_none(), "{junk}");
    }
}

#[test]
fn the_watermark_passes_interrupted_rows_by_only_under_skip() {
    let open = OpenRun {
        host: "h".into(),
        proc_token: "p".into(),
        pid: Some(1),
        started_iso: "2026-07-04T04:00:00+00:00".into(),
        started_at: Some(at(4, 0)),
    };
    let rows = vec![obj(run_data(&run("success")))];
    let skip = obj(reconciled_run(&open, true, at(9, 0)));
    let owed = obj(reconciled_run(&open, false, at(9, 0)));
    assert_eq!(
        skip["fail_reason"],
        json!(interrupted_reason("2026-07-04T04:00:00+00:00", "h"))
    );
    assert!(skip["fail_reason"].as_str().unwrap().starts_with(
        "run interrupted: no completion was recorded for the run started at 2026-07-04T04:00:00+00:00 on h."
    ));
    let with = |row: &Map<String, Value>| {
        let mut all = rows.clone();
        all.push(row.clone());
        watermark(&all)
    };
    assert_eq!(with(&skip), Some(at(4, 0)));
    assert_eq!(
        with(&owed),
        Some(at(3, 5)),
        "the interrupted slot stays owed"
    );
    let read = run_from_data("j", &owed).expect("interruptedAt stands in for the finish");
    assert_eq!(
        (read.outcome().as_str(), read.finished_at),
        ("unknown", at(4, 0))
    );
}

#[test]
fn the_last_real_outcome_folds_by_finish_time_and_skips_non_verdicts() {
    let mut late_success = run("success");
    late_success.finished_at = at(2, 0);
    let rows: Vec<_> = [
        run("failure"),
        late_success,
        run("cancelled"),
        run("unknown"),
    ]
    .iter()
    .map(|r| obj(run_data(r)))
    .collect();
    assert_eq!(last_real(&rows), Some((at(3, 5), false)));
    assert_eq!(last_real(&[]), None);
}

#[test]
fn only_a_newest_open_record_is_an_open_run() {
    let open = obj(inflight_open("h", "p1", Some(9), at(1, 0), "d"));
    let closed = obj(inflight_closed("h", "p1", "finished", at(1, 5)));
    assert_eq!(open_run(std::slice::from_ref(&closed)), None);
    assert_eq!(open_run(&[open.clone(), closed.clone()]), None);
    let found = open_run(&[closed, open]).expect("open");
    assert_eq!(
        (found.pid, found.started_at, found.proc_token.as_str()),
        (Some(9), Some(at(1, 0)), "p1")
    );
}

#[test]
fn a_pending_retry_is_only_the_newest_record() {
    let pending = obj(retry_pending("h", 2, at(4, 0), "d", at(3, 0)));
    let settled = obj(retry_settled("h", "launched", Some(2), at(4, 0)));
    let handoff = obj(json!({"kind": "handoff", "attempt": 2}));
    assert_eq!(
        pending_retry(std::slice::from_ref(&pending)),
        Some(Pending {
            attempt: 2,
            not_before: at(4, 0),
            digest: "d".into(),
            host: "h".into(),
            at: at(3, 0)
        })
    );
    assert_eq!(pending_retry(&[pending.clone(), settled]), None);
    assert_eq!(
        pending_retry(&[pending, handoff]),
        None,
        "an unknown kind is not pending"
    );
}

#[test]
fn boot_markers_match_by_id_then_by_time_within_a_minute() {
    let by_id = obj(reboot_marker("h", Some("b1"), Some(1000.0), "d", at(0, 0)));
    let by_time = obj(reboot_marker("h", None, Some(1000.0), "d", at(0, 0)));
    assert!(boot_marked(
        std::slice::from_ref(&by_id),
        "h",
        Some("b1"),
        None,
        "d"
    ));
    assert!(
        !boot_marked(
            std::slice::from_ref(&by_id),
            "h",
            Some("b2"),
            Some(1000.0),
            "d"
        ),
        "another boot"
    );
    assert!(
        !boot_marked(std::slice::from_ref(&by_id), "h", Some("b1"), None, "d2"),
        "a redefined job runs again"
    );
    assert!(!boot_marked(&[by_id], "other", Some("b1"), None, "d"));
    assert!(boot_marked(
        std::slice::from_ref(&by_time),
        "h",
        Some("b1"),
        Some(1059.0),
        "d"
    ));
    assert!(!boot_marked(
        std::slice::from_ref(&by_time),
        "h",
        Some("b1"),
        Some(1061.0),
        "d"
    ));
    assert!(
        !boot_marked(&[by_time], "h", None, None, "d"),
        "nothing known: every start is a boot"
    );
}

#[test]
fn an_open_checkpoint_resumes_and_a_close_ends_it() {
    let open = obj(catchup_checkpoint(true, at(1, 0), at(2, 0)));
    let close = obj(catchup_checkpoint(false, at(1, 0), at(2, 5)));
    assert_eq!(open_checkpoint(std::slice::from_ref(&open)), Some(at(1, 0)));
    assert_eq!(open_checkpoint(&[open, close]), None);
}

#[test]
fn a_manifest_advertises_global_and_the_allowed_scopes() {
    let at = chrono::DateTime::from_timestamp(1_783_123_200, 0).expect("in range");
    let data = manifest("me", "v1:x", &["b", "a"], &["shared", "global", "own"], at);
    assert_eq!(
        data,
        serde_json::json!({
            "jobSetId": "v1:x", "host": "me", "jobs": ["a", "b"],
            "scopes": ["global", "own", "shared"], "dags": [],
            "at": "2026-07-04T00:00:00+00:00",
        })
    );
    assert_eq!(
        manifest("me", "v1:x", &[], &[], at)["scopes"],
        serde_json::json!(["global"])
    );
}

#[test]
fn a_monitored_run_keeps_its_resources_and_series_in_the_ledger() {
    use crate::job::monitor::{Point, ResourceUsage};
    let mut written = run("success");
    written.resources = Some(ResourceUsage {
        cpu_user_seconds: 1.25,
        cpu_system_seconds: 0.5,
        max_rss_bytes: 1 << 20,
        samples: 2,
        series: Some(vec![Point {
            t: 1.5,
            cpu_percent: 99.5,
            rss: 1 << 20,
        }]),
    });
    let data = run_data(&written);
    assert_eq!(
        data["resources"],
        json!({"cpu_user_seconds": 1.25, "cpu_system_seconds": 0.5, "cpu_total_seconds": 1.75,
               "max_rss_bytes": 1 << 20, "samples": 2, "series": [[1.5, 99.5, 1 << 20]]})
    );
    let read = run_from_data("backup", &obj(data)).expect("reads");
    assert_eq!(read.resources, written.resources);
    // The original's malformed or absent records read as no resources.
    let python = obj(
        json!({"outcome": "success", "finished_at": "2026-07-04T03:05:00+00:00",
                            "resources": {"cpu": 1}}),
    );
    assert_eq!(run_from_data("j", &python).expect("reads").resources, None);
}
