use super::*;
use std::collections::BTreeSet;

fn caps(
    cpu: Option<f64>,
    memory: Option<u64>,
    processes: Option<u64>,
    required: bool,
) -> ResourceLimits {
    ResourceLimits {
        cpu,
        memory,
        processes,
        required,
    }
}

fn capability(resources: &[LimitResource], reason: Option<&str>) -> CgroupCapability {
    CgroupCapability {
        available: !resources.is_empty(),
        mechanism: Some("cgroup-v2"),
        resources: resources.iter().copied().collect(),
        reason: reason.map(str::to_owned),
        hint: None,
    }
}

const ALL: [LimitResource; 3] = LimitResource::ALL;
const MIB64: u64 = 64 << 20;

#[test]
fn a_host_that_caps_everything_contains_every_cap() {
    let c = caps(Some(0.5), Some(MIB64), Some(8), true);
    let plan = plan(&c, &capability(&ALL, None), false);
    assert!(plan.unenforced.is_empty());
    assert_eq!(
        plan.action,
        Action::Contain(CgroupCaps {
            cpu: Some(0.5),
            memory: Some(MIB64),
            processes: Some(8)
        })
    );
}

#[test]
fn a_cap_the_host_lacks_refuses_a_required_run_and_is_left_out_of_an_optional_one() {
    let host = capability(
        &[LimitResource::Memory, LimitResource::Processes],
        Some("the cpu controller is not delegated to cronstable"),
    );
    let required = plan(&caps(Some(1.0), Some(MIB64), None, true), &host, false);
    assert_eq!(required.action, Action::Refuse);
    assert_eq!(
        required.unenforced,
        BTreeMap::from([(
            LimitResource::Cpu,
            "the cpu controller is not delegated to cronstable".to_owned()
        )])
    );
    let optional = plan(&caps(Some(1.0), Some(MIB64), None, false), &host, false);
    assert_eq!(
        optional.action,
        Action::Contain(CgroupCaps {
            cpu: None,
            memory: Some(MIB64),
            processes: None
        })
    );
    assert_eq!(optional.unenforced.len(), 1);
}

#[test]
fn a_run_none_of_whose_caps_apply_runs_bare_unless_cpu_weighting_wants_a_cgroup() {
    let nothing = CgroupCapability::unavailable(
        Some("cgroup-v2"),
        "no cgroup v2 hierarchy is mounted at /sys/fs/cgroup".into(),
        None,
    );
    let c = caps(None, Some(MIB64), Some(4), false);
    let bare = plan(&c, &nothing, false);
    assert_eq!(bare.action, Action::RunBare);
    assert_eq!(bare.unenforced.len(), 2);
    assert!(bare
        .unenforced
        .values()
        .all(|r| r == "no cgroup v2 hierarchy is mounted at /sys/fs/cgroup"));
    let cpu_only = capability(&[LimitResource::Cpu], Some("r"));
    assert_eq!(
        plan(&c, &cpu_only, true).action,
        Action::Contain(CgroupCaps::default())
    );
    // Unavailable with no reason given still says something.
    let silent = CgroupCapability {
        reason: None,
        ..nothing
    };
    assert_eq!(
        plan(&c, &silent, false).unenforced[&LimitResource::Memory],
        "not supported"
    );
}

#[test]
fn the_record_says_what_applied_and_names_the_mechanism_only_while_a_cap_was_in_force() {
    let c = caps(Some(0.5), Some(MIB64), Some(8), false);
    let stats = CgroupStats {
        memory_exceeded: false,
        process_limit_hits: Some(3),
        peak_memory_bytes: Some(1234),
        cpu_throttled_seconds: Some(0.25),
    };
    let all = record(&c, &BTreeMap::new(), true, Some("cgroup-v1"), false, &stats);
    assert!(all.enforced);
    assert_eq!(all.mechanism.as_deref(), Some("cgroup-v1"));
    assert_eq!(all.reason, None);
    assert_eq!(all.failure(), None);
    assert_eq!(
        all.to_json(),
        json!({
            "cpu": 0.5, "memory_bytes": MIB64, "processes": 8, "required": false,
            "enforced": true, "mechanism": "cgroup-v1", "unenforced": [], "reason": null,
            "refused": false, "memory_exceeded": false, "process_limit_hits": 3,
            "peak_memory_bytes": 1234, "cpu_throttled_seconds": 0.25,
        })
    );
    // Two caps fail for one reason, named once, in record order.
    let unenforced = BTreeMap::from([
        (LimitResource::Processes, "r1".to_owned()),
        (LimitResource::Cpu, "r1".to_owned()),
    ]);
    let partial = record(
        &c,
        &unenforced,
        true,
        Some("cgroup-v2"),
        false,
        &CgroupStats::default(),
    );
    assert!(!partial.enforced);
    assert_eq!(
        partial.unenforced,
        vec![LimitResource::Cpu, LimitResource::Processes]
    );
    assert_eq!(partial.reason.as_deref(), Some("r1"));
    assert_eq!(partial.mechanism.as_deref(), Some("cgroup-v2"));
    // Nothing in force: no mechanism, reasons joined in order.
    let none = record(
        &c,
        &BTreeMap::from([
            (LimitResource::Cpu, "a".to_owned()),
            (LimitResource::Memory, "b".to_owned()),
            (LimitResource::Processes, "a".to_owned()),
        ]),
        true,
        Some("cgroup-v2"),
        false,
        &CgroupStats::default(),
    );
    assert_eq!(none.mechanism, None);
    assert_eq!(none.reason.as_deref(), Some("a; b"));
    // A reason for a cap the job does not set is not its concern.
    let unrelated = record(
        &caps(None, Some(MIB64), None, false),
        &BTreeMap::from([(LimitResource::Cpu, "x".to_owned())]),
        false,
        None,
        false,
        &CgroupStats::default(),
    );
    assert!(unrelated.enforced);
    assert_eq!(unrelated.mechanism, None, "no cgroup, no mechanism");
}

#[test]
fn failures_use_the_originals_words() {
    let c = caps(None, Some(MIB64), None, true);
    let refused = record(
        &c,
        &BTreeMap::from([(LimitResource::Memory, "R".to_owned())]),
        false,
        None,
        true,
        &CgroupStats::default(),
    );
    assert_eq!(
        refused.failure().as_deref(),
        Some("resource limits could not be enforced: R (resourceLimits.required is set)")
    );
    let mut exceeded = record(
        &c,
        &BTreeMap::new(),
        true,
        Some("cgroup-v2"),
        false,
        &CgroupStats {
            memory_exceeded: true,
            ..Default::default()
        },
    );
    assert_eq!(
        exceeded.failure().as_deref(),
        Some("memory limit exceeded (64 MiB)")
    );
    exceeded.memory_bytes = Some(3 << 29);
    assert_eq!(
        exceeded.failure().as_deref(),
        Some("memory limit exceeded (1.5 GiB)")
    );
    exceeded.memory_bytes = None;
    assert_eq!(exceeded.failure().as_deref(), Some("memory limit exceeded"));
    exceeded.refused = true;
    exceeded.reason = None;
    assert_eq!(
        exceeded.failure().as_deref(),
        Some("resource limits could not be enforced (resourceLimits.required is set)")
    );
}

#[test]
fn a_record_survives_the_ledger_and_a_malformed_one_is_dropped_or_read_leniently() {
    let c = caps(Some(2.0), None, Some(16), true);
    let original = record(
        &c,
        &BTreeMap::from([(LimitResource::Processes, "p".to_owned())]),
        true,
        Some("cgroup-v2"),
        false,
        &CgroupStats {
            cpu_throttled_seconds: Some(1.5),
            ..Default::default()
        },
    );
    assert_eq!(LimitsRecord::from_json(&original.to_json()), Some(original));
    assert_eq!(LimitsRecord::from_json(&json!({"cpu": 1})), None);
    assert_eq!(LimitsRecord::from_json(&json!({"enforced": "yes"})), None);
    assert_eq!(LimitsRecord::from_json(&json!([1])), None);
    let lenient = LimitsRecord::from_json(&json!({
        "enforced": false, "cpu": "fast", "memory_bytes": -5, "unenforced": ["memory", 7, "disk", "cpu"],
        "required": 1, "cpu_throttled_seconds": -1.0,
    }))
    .unwrap();
    assert_eq!(lenient.cpu, None);
    assert_eq!(lenient.memory_bytes, None);
    assert_eq!(
        lenient.unenforced,
        vec![LimitResource::Cpu, LimitResource::Memory]
    );
    assert!(!lenient.required);
    assert_eq!(lenient.cpu_throttled_seconds, None);
}

#[test]
fn the_node_capability_has_the_originals_shape() {
    let cap = CgroupCapability {
        available: true,
        mechanism: Some("cgroup-v1"),
        resources: BTreeSet::from([LimitResource::Processes, LimitResource::Cpu]),
        reason: Some("r".into()),
        hint: Some("h".into()),
    };
    assert_eq!(
        capability_json(&cap),
        json!({"available": true, "mechanism": "cgroup-v1", "resources": ["cpu", "processes"],
               "reason": "r", "hint": "h"})
    );
}

#[test]
fn words_join_as_english_lists() {
    assert_eq!(words(&[]), "");
    assert_eq!(words(&["a"]), "a");
    assert_eq!(words(&["a", "b"]), "a and b");
    assert_eq!(words(&["a", "b", "c"]), "a, b, and c");
}

/// The texts were produced by the original's `_warning` for the same
/// capability and jobs.
#[test]
fn the_converge_report_names_the_affected_jobs_as_the_original_does() {
    let none = CgroupCapability::unavailable(
        Some("cgroup-v2"),
        "no cgroup v2 hierarchy is mounted at /sys/fs/cgroup".into(),
        Some("Boot the host with the unified cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1)"),
    );
    let jobs = vec![
        ("job a".to_owned(), caps(None, Some(MIB64), None, true)),
        ("job b".to_owned(), caps(Some(0.5), None, None, false)),
    ];
    assert_eq!(
        converge_report(&none, &jobs),
        Report::Unenforced(
            "resourceLimits is set (job a, job b), but cronstable cannot enforce it: no cgroup \
             v2 hierarchy is mounted at /sys/fs/cgroup. Boot the host with the unified cgroup v2 \
             hierarchy (systemd.unified_cgroup_hierarchy=1). Those jobs run without caps. Runs \
             of job a fail until the caps can be enforced (resourceLimits.required)."
                .into()
        )
    );
    let partial = CgroupCapability {
        available: true,
        mechanism: Some("cgroup-v2"),
        resources: BTreeSet::from([LimitResource::Memory]),
        reason: Some(
            "cgroup /x does not offer the pids controller; the cpu controller is not delegated \
             to cronstable"
                .into(),
        ),
        hint: Some("H1. H2".into()),
    };
    let mut three = jobs.clone();
    three.push(("job c".to_owned(), caps(None, None, Some(5), true)));
    assert_eq!(
        converge_report(&partial, &three),
        Report::Unenforced(
            "resourceLimits is set (job b, job c), but cronstable cannot enforce the cpu and \
             processes caps: cgroup /x does not offer the pids controller; the cpu controller is \
             not delegated to cronstable. H1. H2. Those jobs run without those caps. Runs of job \
             c fail until the caps can be enforced (resourceLimits.required)."
                .into()
        )
    );
    assert_eq!(
        converge_report(&partial, &jobs[1..]),
        Report::Unenforced(
            "resourceLimits is set (job b), but cronstable cannot enforce the cpu cap: cgroup /x \
             does not offer the pids controller; the cpu controller is not delegated to \
             cronstable. H1. H2. Those jobs run without that cap."
                .into()
        )
    );
    let v1 = CgroupCapability {
        mechanism: Some("cgroup-v1"),
        resources: ALL.into_iter().collect(),
        reason: None,
        hint: None,
        available: true,
    };
    assert_eq!(
        converge_report(&v1, &jobs),
        Report::Enforced("resource limits are enforced with cgroup v1".into())
    );
}
