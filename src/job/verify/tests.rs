use super::*;
use crate::job::Trigger;
use chrono::TimeZone;

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_780_000_000 + secs, 0)
        .single()
        .expect("a time")
}

fn run() -> RunRecord {
    RunRecord {
        finished_at: at(5),
        ..RunRecord::begun(1, "etl".into(), Trigger::Schedule, 0, at(0))
    }
}

#[test]
fn the_check_runs_only_after_a_success_and_is_skipped_with_a_reason_after_a_failure() {
    assert_eq!(precondition(&run(), false), Precondition::Run);
    let failed = RunRecord {
        fail_reason: Some("failsWhen=nonzeroReturn and retcode=2".into()),
        ..run()
    };
    assert_eq!(
        precondition(&failed, false),
        Precondition::Skip(json!({"outcome": "skipped", "fail_reason": "command failed"}))
    );
    let unstarted = RunRecord {
        start_error: Some("no such file".into()),
        fail_reason: Some("x".into()),
        ..run()
    };
    assert_eq!(
        precondition(&unstarted, false),
        Precondition::Skip(json!({"outcome": "skipped", "fail_reason": "command did not start"}))
    );
    for stopped in [
        RunRecord {
            timed_out: true,
            ..run()
        },
        RunRecord {
            cancelled: true,
            ..run()
        },
        RunRecord {
            replaced: true,
            ..run()
        },
    ] {
        assert_eq!(precondition(&stopped, false), Precondition::Nothing);
    }
    assert_eq!(
        precondition(&run(), true),
        Precondition::Nothing,
        "cancel pending"
    );
}

#[test]
fn a_failed_check_fails_the_run_with_its_exit_code_and_keeps_the_runs_own() {
    let mut record = RunRecord {
        retcode: 0,
        ..run()
    };
    let check = RunRecord {
        retcode: 3,
        finished_at: at(9),
        stdout: StreamOutput {
            text: "checked 10 rows\n".into(),
            discarded: 0,
        },
        ..RunRecord::begun(1, "etl".into(), Trigger::Schedule, 0, at(6))
    };
    apply(&mut record, Some(&check), at(9));
    assert_eq!(record.retcode, 0, "the run's own exit code stays");
    assert_eq!(
        record.fail_reason.as_deref(),
        Some("verification failed: command exited with code 3")
    );
    assert_eq!(record.finished_at, at(9), "the run ends with its check");
    let v = record.verification.expect("a record");
    assert_eq!(v["outcome"], "failure");
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["fail_reason"], "command exited with code 3");
    assert_eq!(v["started_at"], "2026-05-28T20:26:46+00:00");
    assert_eq!(v["duration"], 3.0);
    assert_eq!(v["stdout"], "checked 10 rows\n");
    assert_eq!(v["stderr"], Value::Null);
    assert_eq!(v["output_truncated"], false);
    assert_eq!(v["limits"], Value::Null);
}

#[test]
fn a_passing_check_leaves_the_run_a_success() {
    let mut record = run();
    let check = RunRecord {
        finished_at: at(7),
        ..RunRecord::begun(1, "etl".into(), Trigger::Schedule, 0, at(6))
    };
    apply(&mut record, Some(&check), at(7));
    assert_eq!(record.fail_reason, None);
    let v = record.verification.expect("a record");
    assert_eq!(v["outcome"], "success");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["fail_reason"], Value::Null);
}

#[test]
fn a_timed_out_or_unstartable_check_fails_with_minus_100_or_127() {
    let mut timed_out = run();
    let check = RunRecord {
        retcode: -100,
        timed_out: true,
        ..RunRecord::begun(1, "etl".into(), Trigger::Schedule, 0, at(6))
    };
    apply(&mut timed_out, Some(&check), at(8));
    assert_eq!(
        timed_out.fail_reason.as_deref(),
        Some("verification failed: command exited with code -100")
    );
    let mut unstartable = run();
    apply(&mut unstartable, None, at(6));
    assert_eq!(
        unstartable.fail_reason.as_deref(),
        Some("verification failed: command exited with code 127")
    );
    let v = unstartable.verification.expect("a record");
    assert_eq!(v["started_at"], Value::Null);
    assert_eq!(v["duration"], Value::Null);
}

#[test]
fn check_output_is_scrubbed_and_cut_and_truncation_is_flagged() {
    let long = "x".repeat(CHECK_OUTPUT_LIMIT + 10);
    let mut record = run();
    let check = RunRecord {
        stdout: StreamOutput {
            text: long,
            discarded: 0,
        },
        stderr: StreamOutput {
            text: "password=hunter2hunter2\n".into(),
            discarded: 0,
        },
        ..RunRecord::begun(1, "etl".into(), Trigger::Schedule, 0, at(6))
    };
    apply(&mut record, Some(&check), at(6));
    let v = record.verification.expect("a record");
    assert_eq!(
        v["stdout"].as_str().map(|s| s.chars().count()),
        Some(CHECK_OUTPUT_LIMIT)
    );
    assert_eq!(v["output_truncated"], true);
    let stderr = v["stderr"].as_str().expect("text");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    let discarded = RunRecord {
        stdout: StreamOutput {
            text: "a\n".into(),
            discarded: 4,
        },
        ..RunRecord::begun(1, "etl".into(), Trigger::Schedule, 0, at(6))
    };
    let mut record = run();
    apply(&mut record, Some(&discarded), at(6));
    let v = record.verification.expect("a record");
    assert_eq!(v["stdout_discarded"], 4);
    assert_eq!(v["output_truncated"], true);
}
