use super::*;
use std::collections::HashMap;

fn t(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("time")
}

fn job() -> RetryClaimJob {
    RetryClaimJob {
        job: "etl".into(),
        maximum_retries: 3,
        starting_deadline: None,
        last_run: None,
    }
}

fn pending(host: &str, attempt: u32, due: i64, at: i64) -> Map<String, Value> {
    match records::retry_pending(host, attempt, t(due), "d1", t(at)) {
        Value::Object(map) => map,
        _ => unreachable!("a record body is an object"),
    }
}

fn handoff(from: &str, attempt: u32, now: i64, armed: i64) -> Map<String, Value> {
    match handoff_record(from, attempt, "d1", t(armed), t(now)) {
        Value::Object(map) => map,
        _ => unreachable!("a record body is an object"),
    }
}

#[test]
fn another_nodes_pending_is_claimable_only_past_the_grace() {
    let rec = pending("node-a", 2, 100, 90);
    assert_eq!(claimable(&rec, &job(), "d1", "node-b", t(100)), None);
    assert_eq!(
        claimable(&rec, &job(), "d1", "node-b", t(130)),
        None,
        "30 s is not past it"
    );
    let found = claimable(&rec, &job(), "d1", "node-b", t(131)).expect("stale");
    assert_eq!(
        found,
        Claimable {
            attempt: 2,
            not_before: t(100),
            armed_at: t(90),
            from: "node-a".into()
        }
    );
}

#[test]
fn own_pending_settles_and_unknown_kinds_are_never_claimed() {
    assert_eq!(
        claimable(&pending("node-b", 1, 0, 0), &job(), "d1", "node-b", t(999)),
        None
    );
    let settled = match records::retry_settled("node-a", "launched", Some(1), t(0)) {
        Value::Object(map) => map,
        _ => unreachable!(),
    };
    assert_eq!(claimable(&settled, &job(), "d1", "node-b", t(999)), None);
    let mut bad = pending("node-a", 1, 0, 0);
    bad.insert("attempt".into(), json!(true));
    assert_eq!(claimable(&bad, &job(), "d1", "node-b", t(999)), None);
    bad.insert("attempt".into(), json!(0));
    assert_eq!(claimable(&bad, &job(), "d1", "node-b", t(999)), None);
}

#[test]
fn a_handoff_is_claimable_at_once_and_due_no_earlier_than_now() {
    let rec = handoff("node-a", 1, 50, 10);
    let found = claimable(&rec, &job(), "d1", "node-b", t(51)).expect("handoff");
    assert_eq!(found.not_before, t(51));
    assert_eq!(
        found.armed_at,
        t(10),
        "anchored at the arm time, not the hand-off"
    );
    assert_eq!(found.from, "node-a");
    // Even the node that handed it off may take it back once it owns the
    // job again (a handoff names no `host`).
    assert!(claimable(&rec, &job(), "d1", "node-a", t(51)).is_some());
}

#[test]
fn the_job_as_configured_here_decides() {
    let rec = pending("node-a", 3, 0, 0);
    assert_eq!(
        claimable(&rec, &job(), "d2", "node-b", t(60)),
        None,
        "another digest"
    );
    let mut tight = job();
    tight.maximum_retries = 2;
    assert_eq!(
        claimable(&rec, &tight, "d1", "node-b", t(60)),
        None,
        "over budget"
    );
    tight.maximum_retries = -1;
    assert!(
        claimable(&rec, &tight, "d1", "node-b", t(60)).is_some(),
        "-1 is forever"
    );
    let mut deadline = job();
    deadline.starting_deadline = Some(45);
    assert_eq!(claimable(&rec, &deadline, "d1", "node-b", t(60)), None);
    deadline.starting_deadline = Some(90);
    assert!(claimable(&rec, &deadline, "d1", "node-b", t(60)).is_some());
    let mut ran = job();
    ran.last_run = Some(t(1));
    assert_eq!(
        claimable(&rec, &ran, "d1", "node-b", t(60)),
        None,
        "a run resolved it"
    );
}

#[test]
fn only_a_record_naming_another_host_is_foreign() {
    assert!(!foreign(None, "me"));
    assert!(!foreign(Some(&pending("me", 1, 0, 0)), "me"));
    assert!(foreign(Some(&pending("other", 1, 0, 0)), "me"));
    assert!(!foreign(Some(&handoff("other", 1, 0, 0)), "me"));
}

fn open(dir: &std::path::Path) -> Store {
    Store::open_for_tests(dir)
}

fn ladders<'a>(store: &'a Store, host: &'a str) -> Ladders<'a> {
    Ladders {
        store,
        host,
        holder: format!("{host}#test"),
        policy: OnStoreUnavailable::Degrade,
    }
}

fn newest(store: &Store) -> Map<String, Value> {
    store
        .read_newest("retries/etl", 1)
        .expect("reads")
        .pop()
        .expect("a record")
        .1
}

#[test]
fn a_stranded_ladder_is_claimed_once_and_its_old_owner_then_stands_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_store, b_store, c_store) = (open(dir.path()), open(dir.path()), open(dir.path()));
    let (a, b, c) = (
        ladders(&a_store, "node-a"),
        ladders(&b_store, "node-b"),
        ladders(&c_store, "node-c"),
    );
    let armed = Utc::now() - TimeDelta::seconds(120);
    a.append(
        "etl",
        &records::retry_pending("node-a", 1, armed + TimeDelta::seconds(10), "d1", armed),
    )
    .expect("arm");
    let digests = HashMap::from([("etl".to_owned(), "d1".to_owned())]);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    b.scan(&[job()], &digests, &tx);
    let claimed = rx.try_recv().expect("node-b claims it");
    let DurableEvent::RetryHandedOver { job: name, retry } = claimed else {
        panic!("not a hand-over: {claimed:?}");
    };
    assert_eq!((name.as_str(), retry.attempt), ("etl", 1));
    assert_eq!(retry.recorded_at.timestamp(), armed.timestamp());
    let claim = newest(&b_store);
    assert_eq!(claim["host"], "node-b");
    assert_eq!(claim["claimedFrom"], "node-a");
    // The claim is newest now: a third node finds nothing to take...
    c.scan(&[job()], &digests, &tx);
    assert!(rx.try_recv().is_err(), "claimed once");
    // ...and the old owner, coming back to its due attempt, stands down.
    assert_eq!(a.consume("etl", 1, true), RetryConsume::Abort);
    assert_eq!(
        newest(&a_store)["host"],
        "node-b",
        "the old owner wrote nothing"
    );
    // The claimer launches it, settling first.
    assert_eq!(b.consume("etl", 1, true), RetryConsume::Launch);
    let settle = newest(&b_store);
    assert_eq!(
        (settle["kind"].as_str(), settle["reason"].as_str()),
        (Some("settled"), Some("launched"))
    );
}

#[test]
fn a_run_in_the_ledger_after_the_arm_settles_instead_of_claiming() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_store, b_store) = (open(dir.path()), open(dir.path()));
    let (a, b) = (ladders(&a_store, "node-a"), ladders(&b_store, "node-b"));
    let armed = Utc::now() - TimeDelta::seconds(300);
    a.append(
        "etl",
        &records::retry_pending("node-a", 1, armed + TimeDelta::seconds(10), "d1", armed),
    )
    .expect("arm");
    // A run another node finished after the arm resolved the ladder.
    let ran = armed + TimeDelta::seconds(20);
    a_store
        .append(
            "runs/etl",
            &json!({"outcome": "success", "finished_at": py_isoformat(ran), "ranAt": py_isoformat(ran)}),
        )
        .expect("run");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let digests = HashMap::from([("etl".to_owned(), "d1".to_owned())]);
    b.scan(&[job()], &digests, &tx);
    assert!(rx.try_recv().is_err(), "not claimed");
    let settle = newest(&b_store);
    assert_eq!(settle["reason"], "superseded-by-run");
}

#[test]
fn a_claim_in_progress_defers_the_owner_and_a_held_lease_blocks_a_claim() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_store, b_store) = (open(dir.path()), open(dir.path()));
    let (a, b) = (ladders(&a_store, "node-a"), ladders(&b_store, "node-b"));
    let armed = Utc::now() - TimeDelta::seconds(120);
    a.append(
        "etl",
        &records::retry_pending("node-a", 1, armed, "d1", armed),
    )
    .expect("arm");
    let held = b_store
        .lease_acquire(&claim_lease("etl"), "node-b#test", 30.0)
        .expect("io")
        .expect("free");
    assert_eq!(a.consume("etl", 1, true), RetryConsume::Defer);
    b_store.lease_release(&held).expect("release");
    let other = a_store
        .lease_acquire(&claim_lease("etl"), "node-a#test", 30.0)
        .expect("io")
        .expect("free");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let digests = HashMap::from([("etl".to_owned(), "d1".to_owned())]);
    b.scan(&[job()], &digests, &tx);
    assert!(rx.try_recv().is_err(), "the lease is held: not this scan");
    a_store.lease_release(&other).expect("release");
    // Not serialized (no resume): the settle lands and it launches.
    assert_eq!(a.consume("etl", 1, false), RetryConsume::Launch);
    assert_eq!(newest(&a_store)["reason"], "launched");
}

#[test]
fn a_settle_that_cannot_land_follows_the_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    // The ledger stream's directory is a file: every append fails.
    std::fs::write(dir.path().join("default/records/retries%2Fetl"), b"x").expect("block");
    let mut ladder = ladders(&store, "node-a");
    assert_eq!(
        ladder.consume("etl", 1, false),
        RetryConsume::Launch,
        "degrade"
    );
    ladder.policy = OnStoreUnavailable::FailClosed;
    assert_eq!(
        ladder.consume("etl", 1, false),
        RetryConsume::Defer,
        "fail-closed"
    );
}
