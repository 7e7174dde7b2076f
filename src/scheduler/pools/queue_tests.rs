use super::*;
use crate::scheduler::pools::view::{holders_of, pool_view, queued_of};
use crate::scheduler::pools::JobGate;
use std::collections::HashMap;

const T0: f64 = 1_700_000_000.0;

fn conf(slots: u32, max_queued: u32) -> PoolConf {
    PoolConf { slots, max_queued }
}

fn request(key: &str, job: &str, slots: u32, priority: i64) -> EnqueueRequest {
    EnqueueRequest {
        key: key.into(),
        job: job.into(),
        pool: "p".into(),
        slots,
        priority,
        timeout: 3600.0,
        digest: format!("d-{job}"),
        payload: Payload {
            kind: Some("job".into()),
            with_retries: Some(true),
            manual: Some(false),
            ..Payload::default()
        },
    }
}

fn gate(job: &str) -> (String, JobGate) {
    (
        job.to_owned(),
        JobGate {
            pool: "p".into(),
            digest: format!("d-{job}"),
            scheduled_ok: true,
            forbid: false,
            running: false,
        },
    )
}

fn gates(jobs: &[&str]) -> Eligibility {
    Eligibility {
        pool: "p".into(),
        host: "me".into(),
        jobs: jobs.iter().map(|j| gate(j)).collect::<HashMap<_, _>>(),
        stopping: false,
    }
}

/// A pool of `slots` with the entries queued one second apart.
fn pool_with(slots: u32, queued: &[(&str, &str, u32, i64)]) -> PoolDoc {
    let mut doc = PoolDoc::new(slots);
    for (i, (key, job, s, prio)) in queued.iter().enumerate() {
        doc.enqueue(
            conf(slots, 1000),
            &request(key, job, *s, *prio),
            T0 + i as f64,
        )
        .expect("queued");
    }
    doc
}

fn keys(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

#[test]
fn admission_is_by_priority_then_queue_time_then_key() {
    let mut doc = pool_with(
        10,
        &[
            ("a", "j", 1, 0),
            ("b", "j", 1, 5),
            ("c", "j", 1, 5),
            ("d", "j", 1, -1),
        ],
    );
    // Same priority and time: the key decides.
    doc.enqueue(conf(10, 1000), &request("0", "j", 1, 0), T0)
        .expect("queued");
    let order: Vec<&str> = doc.waiting().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(order, ["b", "c", "0", "a", "d"]);
    let pass = doc.dispatch(&mut gates(&["j"]), "me#t:1", T0 + 10.0);
    assert_eq!(keys(&pass.claimed), ["b", "c", "0", "a", "d"]);
    assert_eq!(doc.used(), 5);
    assert_eq!(pass.blocked, None);
}

#[test]
fn the_head_waits_for_all_its_slots_and_work_behind_it_waits_too() {
    let mut doc = pool_with(3, &[("big", "j", 3, 1), ("small", "k", 1, 0)]);
    // One slot taken: the 3-slot head does not fit, and the 1-slot entry
    // behind it is not admitted past it.
    doc.entries.get_mut("small").unwrap().priority = 0;
    let mut taken = pool_with(3, &[("x", "k", 1, 9)]);
    taken.dispatch(&mut gates(&["k"]), "me#t:0", T0);
    for (key, entry) in taken.entries {
        doc.entries.insert(key, entry);
    }
    let pass = doc.dispatch(&mut gates(&["j", "k"]), "me#t:1", T0 + 5.0);
    assert!(pass.claimed.is_empty());
    assert_eq!(
        pass.blocked,
        Some(Blocked::Capacity {
            key: "big".into(),
            needs: 3,
            free: 2
        })
    );
    // The holder finishes: the head takes all three, then "small" waits.
    assert!(doc.finish("x", "me#t:0", EntryState::Finished, None, T0 + 6.0));
    let pass = doc.dispatch(&mut gates(&["j", "k"]), "me#t:1", T0 + 6.0);
    assert_eq!(keys(&pass.claimed), ["big"]);
    assert!(matches!(
        pass.blocked,
        Some(Blocked::Capacity {
            needs: 1,
            free: 0,
            ..
        })
    ));
}

#[test]
fn a_head_this_node_may_not_run_holds_the_queue() {
    for (setup, why) in [
        (
            Box::new(|g: &mut Eligibility| g.jobs.get_mut("j").unwrap().scheduled_ok = false)
                as Box<dyn Fn(&mut Eligibility)>,
            "paused or gated",
        ),
        (
            Box::new(|g: &mut Eligibility| {
                let j = g.jobs.get_mut("j").unwrap();
                j.forbid = true;
                j.running = true;
            }),
            "Forbid with an instance running",
        ),
        (
            Box::new(|g: &mut Eligibility| g.stopping = true),
            "stopping",
        ),
        (
            Box::new(|g: &mut Eligibility| g.host = "other".into()),
            "aimed elsewhere",
        ),
    ] {
        let mut doc = pool_with(5, &[("head", "j", 1, 1), ("next", "k", 1, 0)]);
        doc.entries.get_mut("head").unwrap().payload.target_host = Some("me".into());
        let mut g = gates(&["j", "k"]);
        setup(&mut g);
        let pass = doc.dispatch(&mut g, "me#t:1", T0 + 1.0);
        assert!(pass.claimed.is_empty(), "{why}");
        assert_eq!(
            pass.blocked,
            Some(Blocked::NotHere { key: "head".into() }),
            "{why}"
        );
        assert_eq!(doc.queued(), 2, "{why}");
    }
}

#[test]
fn a_manual_start_skips_the_scheduled_gates_but_not_forbid() {
    let mut doc = pool_with(5, &[("m", "j", 1, 0)]);
    doc.entries.get_mut("m").unwrap().payload.manual = Some(true);
    let mut g = gates(&["j"]);
    g.jobs.get_mut("j").unwrap().scheduled_ok = false;
    assert_eq!(keys(&doc.dispatch(&mut g.clone(), "o", T0).claimed), ["m"]);

    let mut doc = pool_with(5, &[("m", "j", 1, 0)]);
    doc.entries.get_mut("m").unwrap().payload.manual = Some(true);
    let job = g.jobs.get_mut("j").unwrap();
    job.forbid = true;
    job.running = true;
    assert!(doc.dispatch(&mut g, "o", T0).claimed.is_empty());
}

#[test]
fn forbid_admits_one_instance_per_pass() {
    let mut doc = pool_with(5, &[("one", "j", 1, 0), ("two", "j", 1, 0)]);
    let mut g = gates(&["j"]);
    g.jobs.get_mut("j").unwrap().forbid = true;
    let pass = doc.dispatch(&mut g, "o", T0 + 2.0);
    assert_eq!(keys(&pass.claimed), ["one"]);
    assert_eq!(pass.blocked, Some(Blocked::NotHere { key: "two".into() }));
    // Allow admits both.
    let mut doc = pool_with(5, &[("one", "j", 1, 0), ("two", "j", 1, 0)]);
    assert_eq!(
        keys(&doc.dispatch(&mut gates(&["j"]), "o", T0).claimed),
        ["one", "two"]
    );
}

#[test]
fn entries_of_a_changed_removed_or_moved_job_are_cancelled_and_the_pass_goes_on() {
    let mut doc = pool_with(
        5,
        &[
            ("gone", "gone", 1, 9),
            ("changed", "c", 1, 8),
            ("moved", "m", 1, 7),
            ("ok", "j", 1, 0),
        ],
    );
    let mut g = gates(&["c", "m", "j"]);
    g.jobs.get_mut("c").unwrap().digest = "new".into();
    g.jobs.get_mut("m").unwrap().pool = "q".into();
    let pass = doc.dispatch(&mut g, "o", T0 + 3.0);
    assert_eq!(keys(&pass.claimed), ["ok"]);
    let cancelled: Vec<&str> = pass.cancelled.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(cancelled, ["gone", "changed", "moved"]);
    for key in cancelled {
        let entry = &doc.entries[key];
        assert_eq!(entry.state, EntryState::Cancelled);
        assert_eq!(entry.reason.as_deref(), Some(JOB_CHANGED));
        assert_eq!(entry.finished_at, Some(T0 + 3.0));
    }
}

#[test]
fn a_dag_task_entry_at_the_head_is_left_to_its_dag_scheduler() {
    let mut doc = pool_with(5, &[("t", "j", 1, 1), ("n", "j", 1, 0)]);
    doc.entries.get_mut("t").unwrap().payload.kind = Some("task".into());
    let pass = doc.dispatch(&mut gates(&["j"]), "o", T0);
    assert!(pass.claimed.is_empty());
    assert_eq!(pass.blocked, Some(Blocked::NotHere { key: "t".into() }));
}

#[test]
fn one_pass_admits_at_most_a_batch() {
    let queued: Vec<(String, String)> = (0..40).map(|i| (format!("k{i:02}"), "j".into())).collect();
    let mut doc = PoolDoc::new(100);
    for (i, (key, job)) in queued.iter().enumerate() {
        doc.enqueue(conf(100, 1000), &request(key, job, 1, 0), T0 + i as f64)
            .expect("queued");
    }
    let pass = doc.dispatch(&mut gates(&["j"]), "o", T0 + 50.0);
    assert_eq!(pass.claimed.len(), DISPATCH_BATCH);
    assert_eq!(doc.queued(), 40 - DISPATCH_BATCH);
}

#[test]
fn a_claim_runs_under_its_owner_with_a_lease() {
    let mut doc = pool_with(1, &[("a", "j", 1, 0)]);
    let pass = doc.dispatch(&mut gates(&["j"]), "me#t:1", T0 + 1.0);
    let claimed = &pass.claimed[0];
    assert_eq!(claimed.state, EntryState::Running);
    assert_eq!(claimed.owner.as_deref(), Some("me#t:1"));
    assert_eq!(claimed.lease_until, Some(T0 + 1.0 + LEASE_SECONDS));
    assert_eq!(doc.entries["a"], *claimed);
}

#[test]
fn enqueue_refuses_a_full_queue_and_a_draining_pool_and_finds_a_known_key() {
    let mut doc = pool_with(2, &[("a", "j", 1, 0), ("b", "j", 1, 0)]);
    assert_eq!(
        doc.enqueue(conf(2, 2), &request("c", "j", 1, 0), T0),
        Err(PoolError::Full)
    );
    assert_eq!(PoolError::Full.to_string(), "pool queue is full");
    // The same key again: the entry as it is, nothing added.
    let again = doc
        .enqueue(conf(2, 2), &request("a", "j", 1, 7), T0 + 9.0)
        .expect("known key");
    assert_eq!((again.priority, again.queued_at), (0, T0));
    // Running entries do not count against maxQueued.
    doc.dispatch(&mut gates(&["j"]), "o", T0);
    assert!(doc
        .enqueue(conf(2, 2), &request("c", "j", 1, 0), T0)
        .is_ok());
    // A capacity change: refused while the old capacity drains.
    assert_eq!(
        doc.enqueue(conf(3, 10), &request("d", "j", 1, 0), T0),
        Err(PoolError::Draining)
    );
    assert_eq!(
        PoolError::Draining.to_string(),
        "pool is draining before a capacity change"
    );
    assert!(
        !doc.adopt_capacity(3),
        "work under the old capacity remains"
    );
    for key in ["a", "b"] {
        doc.finish(key, "o", EntryState::Finished, None, T0 + 1.0);
    }
    doc.cancel("c", "x", T0 + 1.0).expect("waiting");
    assert!(doc.adopt_capacity(3));
    assert_eq!(doc.slots, 3);
    assert!(!doc.adopt_capacity(3));
    assert!(doc
        .enqueue(conf(3, 10), &request("d", "j", 1, 0), T0)
        .is_ok());
}

#[test]
fn an_unobserved_task_failure_counts_against_the_backlog_and_is_kept() {
    let mut doc = pool_with(1, &[("t", "j", 1, 0)]);
    doc.entries.get_mut("t").unwrap().payload.kind = Some("task".into());
    doc.cancel("t", "x", T0).expect("waiting");
    assert_eq!(
        doc.enqueue(conf(1, 1), &request("n", "j", 1, 0), T0),
        Err(PoolError::Full)
    );
    doc.entries
        .get_mut("t")
        .unwrap()
        .rest
        .insert("observed".into(), Value::Bool(true));
    assert!(doc
        .enqueue(conf(1, 1), &request("n", "j", 1, 0), T0)
        .is_ok());
}

#[test]
fn a_lapsed_lease_puts_the_work_back_in_line_and_a_passed_deadline_expires_it() {
    let mut doc = pool_with(1, &[("a", "j", 1, 0)]);
    doc.dispatch(&mut gates(&["j"]), "me#t:1", T0);
    // Renewed in time: still running.
    assert!(!doc.maintain(T0 + LEASE_SECONDS - 0.5));
    assert!(doc.renew("a", "me#t:1", T0 + LEASE_SECONDS - 0.5));
    assert!(!doc.maintain(T0 + LEASE_SECONDS + 1.0));
    // Not renewed for a lease: back in line, ownerless.
    let lapse = T0 + 2.0 * LEASE_SECONDS;
    assert!(doc.maintain(lapse));
    let entry = &doc.entries["a"];
    assert_eq!(
        (entry.state, entry.owner.as_deref()),
        (EntryState::Queued, None)
    );
    // Its old owner can neither renew nor close it.
    assert!(!doc.renew("a", "me#t:1", lapse));
    assert!(!doc.finish("a", "me#t:1", EntryState::Finished, None, lapse));
    // Another claim takes it again.
    let pass = doc.dispatch(&mut gates(&["j"]), "other#u:2", lapse);
    assert_eq!(keys(&pass.claimed), ["a"]);
    // Lapsed again after its queue deadline: it expires instead.
    let late = T0 + 3600.0 + 1.0;
    assert!(doc.maintain(late));
    let entry = &doc.entries["a"];
    assert_eq!(entry.state, EntryState::Expired);
    assert_eq!(entry.reason.as_deref(), Some(QUEUE_TIMEOUT));
    assert_eq!(entry.finished_at, Some(late));
}

#[test]
fn a_waiting_entry_expires_at_its_deadline_exactly() {
    let mut doc = pool_with(1, &[("a", "j", 1, 0)]);
    assert!(!doc.maintain(T0 + 3599.999));
    assert!(doc.maintain(T0 + 3600.0));
    assert_eq!(doc.entries["a"].state, EntryState::Expired);
    assert!(!doc.maintain(T0 + 3601.0), "nothing more to do");
}

#[test]
fn only_the_newest_ended_entries_are_kept() {
    let mut doc = PoolDoc::new(1);
    for i in 0..(ENDED_KEPT + 5) {
        let key = format!("k{i:03}");
        doc.enqueue(conf(1, 1000), &request(&key, "j", 1, 0), T0)
            .expect("queued");
        doc.cancel(&key, "x", T0 + i as f64).expect("waiting");
    }
    doc.enqueue(conf(1, 1000), &request("live", "j", 1, 0), T0)
        .expect("queued");
    assert!(doc.maintain(T0));
    assert_eq!(doc.entries.len(), ENDED_KEPT + 1);
    assert!(!doc.entries.contains_key("k004"), "the oldest went");
    assert!(doc.entries.contains_key("k005"));
    assert!(doc.entries.contains_key("live"));
}

#[test]
fn finish_closes_only_its_own_claim_and_requeue_puts_it_back() {
    let mut doc = pool_with(1, &[("a", "j", 1, 0)]);
    doc.dispatch(&mut gates(&["j"]), "me#t:1", T0);
    assert!(!doc.finish("a", "me#t:2", EntryState::Finished, None, T0));
    assert!(!doc.finish("nope", "me#t:1", EntryState::Finished, None, T0));
    assert!(doc.finish(
        "a",
        "me#t:1",
        EntryState::Queued,
        Some("waiting for concurrency admission"),
        T0 + 1.0
    ));
    let entry = &doc.entries["a"];
    assert_eq!(entry.state, EntryState::Queued);
    assert_eq!(
        entry.reason.as_deref(),
        Some("waiting for concurrency admission")
    );
    assert_eq!(doc.used(), 0);
    doc.dispatch(&mut gates(&["j"]), "me#t:3", T0 + 2.0);
    assert!(doc.finish("a", "me#t:3", EntryState::Finished, None, T0 + 3.0));
    assert_eq!(doc.entries["a"].state, EntryState::Finished);
    assert_eq!(doc.entries["a"].owner, None);
}

#[test]
fn cancel_takes_waiting_entries_only() {
    let mut doc = pool_with(1, &[("run", "j", 1, 1), ("wait", "j", 1, 0)]);
    doc.dispatch(&mut gates(&["j"]), "o", T0);
    assert_eq!(doc.cancel("nope", "x", T0), Err(PoolError::NotFound));
    assert_eq!(doc.cancel("run", "x", T0), Err(PoolError::NotWaiting));
    assert_eq!(
        PoolError::NotWaiting.to_string(),
        "only waiting entries can be cancelled"
    );
    assert_eq!(PoolError::NotFound.to_string(), "queue entry not found");
    let cancelled = doc
        .cancel("wait", "cancelled by operator", T0 + 1.0)
        .expect("waiting");
    assert_eq!(cancelled.state, EntryState::Cancelled);
    assert_eq!(cancelled.reason.as_deref(), Some("cancelled by operator"));
    // Again: answered as it is.
    let again = doc.cancel("wait", "other", T0 + 2.0).expect("cancelled");
    assert_eq!(again, cancelled);
}

#[test]
fn a_document_the_original_wrote_reads_and_keeps_what_this_version_does_not_use() {
    let text = r#"{"slots": 2, "retryGenerations": {"[\"j\",null]": "abc"}, "entries": {
        "k1": {"id": "k1", "job": "j", "state": "running", "slots": 1, "priority": 0,
               "queuedAt": 1700000000.5, "expiresAt": 1700003600.5, "digest": "d",
               "owner": "a1b2c3:ffff", "leaseUntil": 1700000030.5,
               "payload": {"kind": "job", "withRetries": true, "manual": false,
                           "catchupAfter": null, "targetHost": null, "scheduledAt": null,
                           "retryGuard": {"pool": "p"}}},
        "k2": {"id": "k2", "job": "t", "state": "cancelled", "slots": 1, "priority": 3,
               "queuedAt": 1700000001, "expiresAt": 1700003601, "digest": "e",
               "owner": null, "reason": "task is no longer waiting", "finishedAt": 1700000002,
               "observed": true, "dag": "etl", "runKey": "r", "task": "x",
               "payload": {"kind": "task", "dag": "etl", "runKey": "r", "task": "x"}}}}"#;
    let doc: PoolDoc = serde_json::from_str(text).expect("reads");
    assert_eq!(doc.used(), 1);
    assert_eq!(doc.entries["k1"].owner.as_deref(), Some("a1b2c3:ffff"));
    assert!(doc.entries["k1"].payload.rest.contains_key("retryGuard"));
    assert_eq!(doc.entries["k2"].rest["dag"], "etl");
    assert!(doc.rest.contains_key("retryGenerations"));
    let back: Value = serde_json::to_value(&doc).expect("writes");
    assert_eq!(back["retryGenerations"]["[\"j\",null]"], "abc");
    assert_eq!(back["entries"]["k2"]["observed"], true);
    assert_eq!(back["entries"]["k1"]["owner"], "a1b2c3:ffff");
    assert_eq!(back["entries"]["k2"]["owner"], Value::Null);
    let again: PoolDoc = serde_json::from_value(back).expect("reads again");
    assert_eq!(again, doc);
    // Not a pool document: refused, never overwritten.
    assert!(serde_json::from_str::<PoolDoc>(r#"{"entries": {}}"#).is_err());
    assert!(serde_json::from_str::<PoolDoc>(r#"{"slots": 1}"#).is_err());
    assert!(
        serde_json::from_str::<PoolDoc>(r#"{"slots": 1, "entries": {"a": {"id": "a"}}}"#).is_err()
    );
}

#[test]
fn the_pool_view_orders_entries_and_says_why_each_waits() {
    let mut doc = pool_with(
        2,
        &[
            ("r", "j", 1, 9),
            ("w1", "big", 2, 5),
            ("w2", "j", 1, 0),
            ("gone", "j", 1, -5),
        ],
    );
    doc.dispatch(&mut gates(&["j", "big"]), "node-a#tok:1", T0 + 4.0);
    doc.cancel("gone", "cancelled by operator", T0 + 5.0)
        .expect("waiting");
    let view = pool_view("p", conf(2, 50), &doc);
    assert_eq!(view["name"], "p");
    assert_eq!(view["slots"], 2);
    assert_eq!(view["configuredSlots"], 2);
    assert_eq!(view["maxQueued"], 50);
    assert_eq!(view["used"], 1);
    assert_eq!(view["queued"], 2);
    let entries = view["entries"].as_array().expect("entries");
    let ids: Vec<&str> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r", "w1", "w2", "gone"]);
    assert_eq!(entries[0]["holder"], "node-a");
    assert!(entries[0].get("owner").is_none() && entries[0].get("payload").is_none());
    assert_eq!(entries[1]["position"], 1);
    assert_eq!(entries[1]["waitingReason"], "Needs 2 slots; 1 available");
    assert_eq!(entries[2]["position"], 2);
    assert_eq!(
        entries[2]["waitingReason"],
        "Waiting behind higher-priority or earlier work"
    );
    assert_eq!(entries[3]["state"], "cancelled");
    assert_eq!(queued_of(&view, "j").len(), 1);
    assert_eq!(queued_of(&view, "big")[0]["id"], "w1");
    assert_eq!(holders_of(&view, "j")[0]["holder"], "node-a");
    assert!(holders_of(&view, "big").is_empty());

    // A head that fits waits for admission (or says why it went back).
    let mut doc = pool_with(1, &[("h", "j", 1, 0)]);
    let view = pool_view("p", conf(1, 5), &doc);
    assert_eq!(view["entries"][0]["waitingReason"], "Waiting for admission");
    assert_eq!(view["entries"][0]["position"], 1);
    doc.entries.get_mut("h").unwrap().reason = Some("launch interrupted".into());
    let view = pool_view("p", conf(1, 5), &doc);
    assert_eq!(view["entries"][0]["waitingReason"], "launch interrupted");
    let one = pool_with(1, &[("r", "j", 1, 0), ("w", "j", 1, 0)]);
    let mut one = one;
    one.dispatch(&mut gates(&["j"]), "x", T0);
    let view = pool_view("p", conf(1, 5), &one);
    assert_eq!(
        view["entries"][1]["waitingReason"],
        "Needs 1 slot; 0 available"
    );
    assert!(
        view["entries"][0].get("holder").is_none(),
        "an owner without a node"
    );
}
