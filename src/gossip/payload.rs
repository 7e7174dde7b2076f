//! The `/peer` attestation payload: what a gossip node serves and what it
//! accepts from its peers.
//!
//! A peer is admitted by the cluster CA but otherwise untrusted, so
//! [`decode`] bounds everything it keeps: the body (256 KiB), every
//! identity string (256 characters, printable, non-empty), the member and
//! name lists (4096 entries), the `@reboot` ran-set (512 names of at most
//! 128 characters) and the per-job summaries (512 jobs). These are the
//! original's limits. A body that is too big, is not JSON, or has a
//! scalar of the wrong type is refused with a [`DecodeError`] whose text
//! becomes the peer's `last_error`; a malformed entry inside a list is
//! dropped instead, so one bad entry degrades to "no evidence" rather than
//! poisoning the election. Nothing here panics on any input.
//!
//! [`etag`] is a strong ETag over the payload's content, with each job's
//! live countdown (`scheduled_in`) replaced by the absolute next-fire time
//! in whole seconds, so the tag stays put between fires and a converged
//! idle cluster's polls are answered 304.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// The largest `/peer` body accepted (and served), in bytes.
pub const MAX_PEER_RESPONSE_BYTES: usize = 256 * 1024;
/// The longest identity string (node name, job-set id, instance id,
/// scheme, distribution, a member or candidate name), in characters.
pub const MAX_PEER_FIELD_LEN: usize = 256;
/// The most entries kept from `members`, `mutual_agreeing` or
/// `quorate_vouched`.
pub const MAX_MEMBER_ENTRIES: usize = 4096;
/// The longest `@reboot` job name kept, in characters.
pub const MAX_REBOOT_JOB_NAME_LEN: usize = 128;
/// The most `@reboot` job names kept or advertised.
pub const MAX_ADVERTISED_REBOOT_JOBS: usize = 512;
/// The longest job name kept in `job_summaries`, in characters.
pub const MAX_JOB_SUMMARY_NAME_LEN: usize = 128;
/// The most jobs kept or advertised in `job_summaries`.
pub const MAX_ADVERTISED_JOB_SUMMARIES: usize = 512;
/// The longest `finished_at` timestamp kept, in characters.
pub const MAX_JOB_SUMMARY_TS_LEN: usize = 64;
/// The most candidate names a node advertises in `quorate_vouched`.
pub const MAX_ADVERTISED_CANDIDATE_NAMES: usize = 512;
/// The longest ETag a poller stores and echoes back.
pub const MAX_PEER_ETAG_LEN: usize = 128;

/// The fingerprint scheme this build speaks.
pub const SCHEME_VERSION: &str = "v1";

/// One entry of a node's own peer table as it advertises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The observed node's name.
    pub node_name: String,
    /// Its per-process instance id.
    pub instance_id: String,
    /// Whether the advertising node sees it agreeing.
    pub agreed: bool,
}

/// How a job's last run ended, as gossiped for the fleet view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// `success`, `failure` or `cancelled`.
    pub outcome: String,
    /// When it finished (ISO-8601, as the peer wrote it).
    pub finished_at: String,
    /// Seconds it took.
    pub duration: Option<f64>,
    /// The exit code, when it exited.
    pub exit_code: Option<i64>,
}

/// One job's state, as gossiped for the fleet view (never an election
/// input).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    /// A run is in progress.
    pub running: bool,
    /// The job is not paused.
    pub enabled: bool,
    /// Seconds until the next fire, as of when the body was built.
    pub scheduled_in: Option<f64>,
    /// The last finished run.
    pub last: Option<LastRun>,
}

/// The `/peer` body. Every field is optional on the way in: a field an
/// older build does not send is "no evidence", never a divergence. What
/// this node serves fills every field.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PeerPayload {
    /// The sender's node name (the election key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Its job-set id (the agreement key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_set_id: Option<String>,
    /// Its fingerprint scheme (`v1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme_version: Option<String>,
    /// A random token per process start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Its declared cluster size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_size: Option<u64>,
    /// Its own peer table (itself first). `None`: the field was absent
    /// (an older build that cannot attest anyone back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<Member>>,
    /// The peers it mutually agrees with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutual_agreeing: Option<BTreeSet<String>>,
    /// `@reboot` jobs already run in the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ran_reboot_jobs: Option<BTreeSet<String>>,
    /// `single-leader` or `spread`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    /// Whether it elects a leader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elect_leader: Option<bool>,
    /// The nodes it can confirm are quorate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorate_vouched: Option<BTreeSet<String>>,
    /// Per-job summaries for the fleet view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_summaries: Option<BTreeMap<String, JobSummary>>,
    /// The sender dropped summaries at its cap.
    #[serde(default)]
    pub job_summaries_truncated: bool,
}

/// Why a `/peer` body was refused. The text is the peer's `last_error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Larger than [`MAX_PEER_RESPONSE_BYTES`].
    #[error("oversized /peer response (> {MAX_PEER_RESPONSE_BYTES} bytes)")]
    Oversized,
    /// Not JSON (or nested too deep to parse).
    #[error("invalid JSON in /peer response")]
    Garbage,
    /// JSON, but not the payload's shape.
    #[error("malformed /peer response{0}")]
    WrongShape(String),
}

/// Parses and bounds a peer's `/peer` body.
pub fn decode(body: &[u8]) -> Result<PeerPayload, DecodeError> {
    if body.len() > MAX_PEER_RESPONSE_BYTES {
        return Err(DecodeError::Oversized);
    }
    // The size cap bounds the tree; serde_json's depth limit bounds the
    // recursion (it errors, never overflows the stack).
    let value: Value = serde_json::from_slice(body).map_err(|_| DecodeError::Garbage)?;
    let Value::Object(data) = value else {
        return Err(DecodeError::WrongShape(" (not a JSON object)".to_owned()));
    };
    let identity = |key: &str| -> Result<Option<String>, DecodeError> {
        match data.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => {
                if s.is_empty() || s.chars().count() > MAX_PEER_FIELD_LEN || !printable(s) {
                    Err(DecodeError::WrongShape(format!(
                        ": '{key}' is empty, over {MAX_PEER_FIELD_LEN} chars or contains \
                         control characters"
                    )))
                } else {
                    Ok(Some(s.clone()))
                }
            }
            Some(_) => Err(DecodeError::WrongShape(format!(
                ": '{key}' is not a string"
            ))),
        }
    };
    let node_name = identity("node_name")?;
    let job_set_id = identity("job_set_id")?;
    let scheme_version = identity("scheme_version")?;
    let instance_id = identity("instance_id")?;
    let distribution = identity("distribution")?;
    let cluster_size = match data.get("cluster_size") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|v| v >= 1) => n.as_u64(),
        Some(_) => {
            return Err(DecodeError::WrongShape(
                ": cluster_size is not a positive integer".to_owned(),
            ))
        }
    };
    let elect_leader = match data.get("elect_leader") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(DecodeError::WrongShape(
                ": elect_leader is not a boolean".to_owned(),
            ))
        }
    };
    let members = match data.get("members") {
        Some(Value::Array(items)) => Some(members(items)),
        _ => None,
    };
    let names = |key: &str, max_len: usize, max_items: usize| -> Option<BTreeSet<String>> {
        match data.get(key) {
            Some(Value::Array(items)) => Some(name_set(items, max_len, max_items)),
            Some(_) => Some(BTreeSet::new()),
            None => None,
        }
    };
    let mutual_agreeing = names("mutual_agreeing", MAX_PEER_FIELD_LEN, MAX_MEMBER_ENTRIES);
    let quorate_vouched = names("quorate_vouched", MAX_PEER_FIELD_LEN, MAX_MEMBER_ENTRIES);
    let ran_reboot_jobs = names(
        "ran_reboot_jobs",
        MAX_REBOOT_JOB_NAME_LEN,
        MAX_ADVERTISED_REBOOT_JOBS,
    );
    let job_summaries = match data.get("job_summaries") {
        Some(Value::Object(map)) => Some(summaries(map)),
        _ => None,
    };
    Ok(PeerPayload {
        node_name,
        job_set_id,
        scheme_version,
        instance_id,
        cluster_size,
        members,
        mutual_agreeing,
        ran_reboot_jobs,
        distribution,
        elect_leader,
        quorate_vouched,
        job_summaries,
        job_summaries_truncated: data.get("job_summaries_truncated") == Some(&Value::Bool(true)),
    })
}

/// Whether a peer-supplied name may be kept: such names reach logs and
/// JSON views, so control, format and separator characters (other than a
/// plain space) are refused, as Python's `str.isprintable` does for the
/// characters that matter here.
pub fn printable(s: &str) -> bool {
    s.chars().all(|c| {
        !(c.is_control()
            || (c.is_whitespace() && c != ' ')
            || matches!(c,
                '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'))
    })
}

fn keepable(s: &str, max_len: usize) -> bool {
    !s.is_empty() && s.chars().count() <= max_len && printable(s)
}

fn members(items: &[Value]) -> Vec<Member> {
    let mut out = Vec::new();
    for item in items {
        let Value::Object(entry) = item else { continue };
        let (Some(Value::String(name)), Some(Value::String(instance)), Some(Value::Bool(agreed))) = (
            entry.get("node_name"),
            entry.get("instance_id"),
            entry.get("agreed"),
        ) else {
            continue;
        };
        // An empty name would sort below every real one and win elections.
        if !keepable(name, MAX_PEER_FIELD_LEN) || !keepable(instance, MAX_PEER_FIELD_LEN) {
            continue;
        }
        out.push(Member {
            node_name: name.clone(),
            instance_id: instance.clone(),
            agreed: *agreed,
        });
        if out.len() >= MAX_MEMBER_ENTRIES {
            break;
        }
    }
    out
}

fn name_set(items: &[Value], max_len: usize, max_items: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for item in items {
        if let Value::String(s) = item {
            if keepable(s, max_len) {
                out.insert(s.clone());
                if out.len() >= max_items {
                    break;
                }
            }
        }
    }
    out
}

fn finite(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64).filter(|x| x.is_finite())
}

fn summaries(map: &Map<String, Value>) -> BTreeMap<String, JobSummary> {
    let mut out = BTreeMap::new();
    for (name, entry) in map {
        let Value::Object(entry) = entry else {
            continue;
        };
        if !keepable(name, MAX_JOB_SUMMARY_NAME_LEN) {
            continue;
        }
        let last = match entry.get("last") {
            Some(Value::Object(last)) => match (last.get("outcome"), last.get("finished_at")) {
                (Some(Value::String(outcome)), Some(Value::String(finished)))
                    if matches!(outcome.as_str(), "success" | "failure" | "cancelled")
                        && finished.chars().count() <= MAX_JOB_SUMMARY_TS_LEN
                        && printable(finished) =>
                {
                    Some(LastRun {
                        outcome: outcome.clone(),
                        finished_at: finished.clone(),
                        duration: finite(last.get("duration")),
                        exit_code: last.get("exit_code").and_then(Value::as_i64),
                    })
                }
                _ => None,
            },
            _ => None,
        };
        out.insert(
            name.clone(),
            JobSummary {
                running: entry.get("running") == Some(&Value::Bool(true)),
                enabled: entry.get("enabled") != Some(&Value::Bool(false)),
                scheduled_in: finite(entry.get("scheduled_in")),
                last,
            },
        );
        if out.len() >= MAX_ADVERTISED_JOB_SUMMARIES {
            break;
        }
    }
    out
}

/// The bytes this node serves for `payload`. If the body would exceed
/// [`MAX_PEER_RESPONSE_BYTES`] (every re-advertised list is capped, so
/// this should not happen), the job summaries, the largest field and one
/// that never feeds an election, are dropped and flagged truncated: an
/// oversized body would cost this node its place in every peer's quorum.
pub fn encode(payload: &PeerPayload) -> Vec<u8> {
    let body = serde_json::to_vec(payload).unwrap_or_default();
    if body.len() <= MAX_PEER_RESPONSE_BYTES {
        return body;
    }
    let mut slim = payload.clone();
    slim.job_summaries = Some(BTreeMap::new());
    slim.job_summaries_truncated = true;
    serde_json::to_vec(&slim).unwrap_or_default()
}

/// The strong ETag of `payload` (a quoted SHA-256 hex digest).
/// `now_epoch` is the wall-clock time the countdowns were taken at: each
/// `scheduled_in` is hashed as `round(now_epoch + scheduled_in)`, the
/// absolute next fire, so the tag changes when the schedule does and not
/// every second.
pub fn etag(payload: &PeerPayload, now_epoch: f64) -> String {
    let mut value = serde_json::to_value(payload).unwrap_or(Value::Null);
    if let Some(Value::Object(jobs)) = value.get_mut("job_summaries") {
        for entry in jobs.values_mut() {
            if let Some(slot) = entry.get_mut("scheduled_in") {
                *slot = match slot.as_f64() {
                    Some(left) => Value::from((now_epoch + left).round() as i64),
                    None => Value::Null,
                };
            }
        }
    }
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// JSON with object keys sorted and no spaces, independent of how
/// serde_json orders its maps.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Whether a peer's ETag header may be stored and echoed back.
pub fn etag_storable(tag: &str) -> bool {
    tag.len() <= MAX_PEER_ETAG_LEN && printable(tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn full() -> PeerPayload {
        PeerPayload {
            node_name: Some("node-a".into()),
            job_set_id: Some("v1:abc".into()),
            scheme_version: Some(SCHEME_VERSION.into()),
            instance_id: Some("b17e".into()),
            cluster_size: Some(3),
            members: Some(vec![
                Member {
                    node_name: "node-a".into(),
                    instance_id: "b17e".into(),
                    agreed: true,
                },
                Member {
                    node_name: "node-b".into(),
                    instance_id: "6c40".into(),
                    agreed: true,
                },
            ]),
            mutual_agreeing: Some(["node-b".to_owned()].into()),
            ran_reboot_jobs: Some(["migrate".to_owned()].into()),
            distribution: Some("single-leader".into()),
            elect_leader: Some(true),
            quorate_vouched: Some(["node-a".to_owned(), "node-b".to_owned()].into()),
            job_summaries: Some(
                [(
                    "backup".to_owned(),
                    JobSummary {
                        running: false,
                        enabled: true,
                        scheduled_in: Some(42.0),
                        last: None,
                    },
                )]
                .into(),
            ),
            job_summaries_truncated: false,
        }
    }

    #[test]
    fn round_trips_with_the_documented_field_names() {
        let body = encode(&full());
        let value: Value = serde_json::from_slice(&body).unwrap();
        for key in [
            "node_name",
            "job_set_id",
            "scheme_version",
            "instance_id",
            "cluster_size",
            "members",
            "mutual_agreeing",
            "ran_reboot_jobs",
            "distribution",
            "elect_leader",
            "quorate_vouched",
        ] {
            assert!(value.get(key).is_some(), "{key} missing from {value}");
        }
        assert_eq!(value["members"][1]["instance_id"], "6c40");
        assert_eq!(decode(&body).unwrap(), full());
    }

    #[test]
    fn refusals_are_classified_with_the_originals_texts() {
        let big = vec![b' '; MAX_PEER_RESPONSE_BYTES + 1];
        assert_eq!(decode(&big), Err(DecodeError::Oversized));
        assert_eq!(
            DecodeError::Oversized.to_string(),
            "oversized /peer response (> 262144 bytes)"
        );
        assert_eq!(decode(b"<html>"), Err(DecodeError::Garbage));
        assert_eq!(
            DecodeError::Garbage.to_string(),
            "invalid JSON in /peer response"
        );
        let err = decode(b"[1,2]").unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed /peer response (not a JSON object)"
        );
        let err = decode(br#"{"node_name": 7}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed /peer response: 'node_name' is not a string"
        );
        let err = decode(br#"{"job_set_id": "a\u0007b"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "malformed /peer response: 'job_set_id' is empty, over 256 chars or contains control \
             characters"
        );
        let long = format!(r#"{{"instance_id": "{}"}}"#, "x".repeat(257));
        assert!(matches!(
            decode(long.as_bytes()),
            Err(DecodeError::WrongShape(_))
        ));
        for bad in [
            r#"{"cluster_size": 0}"#,
            r#"{"cluster_size": -3}"#,
            r#"{"cluster_size": 2.5}"#,
            r#"{"cluster_size": true}"#,
        ] {
            assert_eq!(
                decode(bad.as_bytes()).unwrap_err().to_string(),
                "malformed /peer response: cluster_size is not a positive integer",
                "{bad}"
            );
        }
        assert_eq!(
            decode(br#"{"elect_leader": "yes"}"#)
                .unwrap_err()
                .to_string(),
            "malformed /peer response: elect_leader is not a boolean"
        );
        // Deep nesting is refused, not a stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(decode(deep.as_bytes()).is_err());
    }

    #[test]
    fn bad_list_entries_are_dropped_and_lists_capped() {
        let mut items: Vec<Value> = vec![
            serde_json::json!({"node_name": "", "instance_id": "i", "agreed": true}),
            serde_json::json!({"node_name": "x", "instance_id": "i", "agreed": "yes"}),
            serde_json::json!({"node_name": "x\n", "instance_id": "i", "agreed": true}),
            serde_json::json!(17),
            serde_json::json!({"node_name": "ok", "instance_id": "i", "agreed": false}),
        ];
        for i in 0..4100 {
            items.push(serde_json::json!({"node_name": format!("n{i}"), "instance_id": "i", "agreed": true}));
        }
        let reboot: Vec<String> = (0..600)
            .map(|i| format!("job{i}"))
            .chain(["y".repeat(129), String::new()])
            .collect();
        let body = serde_json::json!({
            "members": items,
            "mutual_agreeing": ["", "a", 3, "b\u{0}", "c"],
            "ran_reboot_jobs": reboot,
            "quorate_vouched": "not a list",
        });
        let got = decode(body.to_string().as_bytes()).unwrap();
        let members = got.members.unwrap();
        assert_eq!(members.len(), MAX_MEMBER_ENTRIES);
        assert_eq!(members[0].node_name, "ok");
        assert_eq!(
            got.mutual_agreeing.unwrap().into_iter().collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert_eq!(
            got.ran_reboot_jobs.unwrap().len(),
            MAX_ADVERTISED_REBOOT_JOBS
        );
        assert_eq!(got.quorate_vouched, Some(BTreeSet::new()));
        // An absent list stays "not reported".
        let legacy = decode(br#"{"node_name": "old"}"#).unwrap();
        assert_eq!(legacy.members, None);
        assert_eq!(legacy.mutual_agreeing, None);
    }

    #[test]
    fn summaries_are_rebuilt_field_by_field() {
        let body = serde_json::json!({"job_summaries": {
            "a": {"running": "yes", "enabled": 0, "scheduled_in": "soon",
                  "last": {"outcome": "success", "finished_at": "2026-01-01T00:00:00+00:00",
                           "duration": 1.5, "exit_code": true}},
            "b": {"last": {"outcome": "exploded", "finished_at": "x"}},
            "": {},
            "c": 5,
        }});
        let got = decode(body.to_string().as_bytes())
            .unwrap()
            .job_summaries
            .unwrap();
        assert_eq!(got.len(), 2);
        let a = &got["a"];
        assert!(!a.running && a.enabled && a.scheduled_in.is_none());
        let last = a.last.as_ref().unwrap();
        assert_eq!((last.duration, last.exit_code), (Some(1.5), None));
        assert_eq!(got["b"].last, None);
    }

    #[test]
    fn etag_is_stable_across_countdown_ticks_and_rolls_on_a_fire() {
        let mut p = full();
        let first = etag(&p, 1_000.0);
        assert!(etag_storable(&first));
        assert_eq!(first.len(), 66);
        // One second later the countdown is one lower: same next fire.
        p.job_summaries
            .as_mut()
            .unwrap()
            .get_mut("backup")
            .unwrap()
            .scheduled_in = Some(41.0);
        assert_eq!(etag(&p, 1_001.0), first);
        // After the fire the next one is an hour away: the tag rolls.
        p.job_summaries
            .as_mut()
            .unwrap()
            .get_mut("backup")
            .unwrap()
            .scheduled_in = Some(3600.0);
        assert_ne!(etag(&p, 1_042.0), first);
        // Any election-relevant change rolls it too.
        let mut q = full();
        q.cluster_size = Some(5);
        assert_ne!(etag(&q, 1_000.0), first);
    }

    #[test]
    fn an_oversized_body_sheds_its_summaries() {
        let mut p = full();
        let jobs = p.job_summaries.as_mut().unwrap();
        for i in 0..4000 {
            jobs.insert(
                format!("{i:0>120}"),
                JobSummary {
                    running: false,
                    enabled: true,
                    scheduled_in: Some(1.0),
                    last: None,
                },
            );
        }
        let body = encode(&p);
        assert!(body.len() <= MAX_PEER_RESPONSE_BYTES);
        let back = decode(&body).unwrap();
        assert!(back.job_summaries_truncated);
        assert_eq!(back.job_summaries, Some(BTreeMap::new()));
        assert_eq!(back.node_name.as_deref(), Some("node-a"));
    }

    proptest! {
        #[test]
        fn decode_never_panics_on_bytes(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = decode(&body);
        }

        #[test]
        fn decode_never_panics_on_json_shaped_input(
            keys in proptest::collection::vec(prop_oneof![
                Just("node_name"), Just("members"), Just("cluster_size"), Just("job_summaries"),
                Just("mutual_agreeing"), Just("elect_leader"), Just("ran_reboot_jobs"),
            ], 0..6),
            leaf in prop_oneof![
                Just("null".to_owned()), Just("true".to_owned()), Just("-1".to_owned()),
                Just("1e308".to_owned()), Just("\"\"".to_owned()), Just("[{}]".to_owned()),
                Just("{\"x\":{\"last\":{}}}".to_owned()), "\"[ -~]{0,300}\"",
            ],
        ) {
            let fields: Vec<String> = keys.iter().map(|k| format!("\"{k}\":{leaf}")).collect();
            let body = format!("{{{}}}", fields.join(","));
            if let Ok(p) = decode(body.as_bytes()) {
                // Whatever was kept re-encodes within the cap.
                prop_assert!(encode(&p).len() <= MAX_PEER_RESPONSE_BYTES);
            }
        }
    }
}
