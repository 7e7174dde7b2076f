//! Counters whose owner is not the metrics' [`Counters`]: the SLA
//! monitor's breach counts and the runs a memory cap ended. They ride in
//! the durable counter snapshot under the original's keys
//! (`sla_breaches`, `{check: count}`; `memory_limit_exceeded`, omitted
//! while zero), so a restart does not reset
//! `cronstable_job_sla_breaches_total` or
//! `cronstable_job_memory_limit_exceeded_total`, and the original reads
//! them too.
//!
//! [`Counters`]: crate::metrics::prometheus::Counters

use super::Scheduler;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Per job, the breach counts by check name.
type Breaches = Vec<(String, Vec<(&'static str, u64)>)>;

/// What a snapshot carries for one job beside the metrics' counters.
#[derive(Debug, Default, PartialEq)]
struct Carried {
    sla: Vec<(String, u64)>,
    memory_kills: u64,
}

/// Writes `breaches` and `memory_kills` into `snapshot`'s job entries
/// (making an entry for a job with no other counter yet).
fn merge(snapshot: &mut Value, breaches: Breaches, memory_kills: &HashMap<String, u64>) {
    let Some(jobs) = snapshot
        .as_object_mut()
        .map(|s| s.entry("jobs").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    // A job's fields, taken out to be put back with the additions (a
    // non-object entry is replaced).
    let take = |jobs: &mut Map<String, Value>, job: &str| -> Map<String, Value> {
        jobs.get_mut(job)
            .and_then(Value::as_object_mut)
            .map(std::mem::take)
            .unwrap_or_default()
    };
    for (job, counts) in breaches {
        let mut fields = take(jobs, &job);
        let counts: Map<String, Value> = counts
            .into_iter()
            .map(|(c, n)| (c.to_owned(), json!(n)))
            .collect();
        fields.insert("sla_breaches".into(), Value::Object(counts));
        jobs.insert(job, Value::Object(fields));
    }
    for (job, &kills) in memory_kills.iter().filter(|(_, n)| **n > 0) {
        let mut fields = take(jobs, job);
        fields.insert("memory_limit_exceeded".into(), json!(kills));
        jobs.insert(job.clone(), Value::Object(fields));
    }
}

/// What `snapshot` carries for the jobs `keep` accepts; a field of the
/// wrong shape is skipped on its own.
fn carried_of(snapshot: &Value, keep: impl Fn(&str) -> bool) -> Vec<(String, Carried)> {
    let Some(jobs) = snapshot.get("jobs").and_then(Value::as_object) else {
        return Vec::new();
    };
    jobs.iter()
        .filter(|(name, _)| keep(name))
        .filter_map(|(name, data)| {
            let data = data.as_object()?;
            let sla = data
                .get("sla_breaches")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(check, n)| Some((check.clone(), n.as_u64()?)))
                        .filter(|(_, n)| *n > 0)
                        .collect()
                })
                .unwrap_or_default();
            let memory_kills = data
                .get("memory_limit_exceeded")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let carried = Carried { sla, memory_kills };
            (carried != Carried::default()).then(|| (name.clone(), carried))
        })
        .collect()
}

impl Scheduler {
    /// The counter snapshot to persist: the metrics' counters plus the
    /// counts other parts own.
    pub(super) fn counters_snapshot(&mut self) -> Value {
        let mut snapshot = self.counters().snapshot();
        merge(
            &mut snapshot,
            self.sla.persisted_breaches(),
            &self.memory_kills,
        );
        snapshot
    }

    /// Adds what a persisted snapshot carries for the configured jobs
    /// (`keep`) to their owners' counts.
    pub(super) fn seed_carried(&mut self, snapshot: &Value, keep: impl Fn(&str) -> bool) {
        for (job, carried) in carried_of(snapshot, keep) {
            for (check, n) in &carried.sla {
                self.sla.carry_breaches(&job, check, *n);
            }
            if carried.memory_kills > 0 {
                let kills = self.memory_kills.entry(job).or_default();
                *kills = kills.saturating_add(carried.memory_kills);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_ride_in_the_snapshot_and_come_back() {
        let mut snapshot = json!({
            "buckets": [1.0],
            "jobs": {"a": {"retries": 2, "runs": {"success": 1}}}
        });
        let breaches = vec![
            ("a".to_owned(), vec![("lateAfter", 3), ("maxRuntime", 0)]),
            ("b".to_owned(), vec![("maxTimeSinceSuccess", 1)]),
        ];
        let kills = HashMap::from([("a".to_owned(), 2), ("c".to_owned(), 0)]);
        merge(&mut snapshot, breaches, &kills);
        assert_eq!(
            snapshot,
            json!({
                "buckets": [1.0],
                "jobs": {
                    "a": {
                        "retries": 2,
                        "runs": {"success": 1},
                        "sla_breaches": {"lateAfter": 3, "maxRuntime": 0},
                        "memory_limit_exceeded": 2
                    },
                    "b": {"sla_breaches": {"maxTimeSinceSuccess": 1}}
                }
            }),
            "existing fields kept, zero kills omitted, a job with no counter gets an entry"
        );
        let back = carried_of(&snapshot, |name| name != "b");
        assert_eq!(
            back,
            vec![(
                "a".to_owned(),
                Carried {
                    sla: vec![("lateAfter".to_owned(), 3)],
                    memory_kills: 2
                }
            )]
        );
    }

    #[test]
    fn wrong_shapes_are_skipped_field_by_field() {
        for snapshot in [
            json!(null),
            json!({"jobs": []}),
            json!({"jobs": {"a": 5}}),
            json!({"jobs": {"a": {"sla_breaches": [1], "memory_limit_exceeded": -1}}}),
            json!({"jobs": {"a": {"sla_breaches": {"lateAfter": "3"}, "memory_limit_exceeded": 1.5}}}),
        ] {
            assert!(carried_of(&snapshot, |_| true).is_empty(), "{snapshot}");
        }
        let mixed = json!({"jobs": {"a": {"sla_breaches": {"lateAfter": 2, "x": true}, "memory_limit_exceeded": "9"}}});
        assert_eq!(
            carried_of(&mixed, |_| true),
            vec![(
                "a".to_owned(),
                Carried {
                    sla: vec![("lateAfter".to_owned(), 2)],
                    memory_kills: 0
                }
            )]
        );
        // A snapshot that is not an object is left alone.
        let mut odd = json!([1]);
        merge(
            &mut odd,
            vec![("a".into(), vec![("lateAfter", 1)])],
            &HashMap::new(),
        );
        assert_eq!(odd, json!([1]));
    }
}
