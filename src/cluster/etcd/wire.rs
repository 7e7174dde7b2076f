//! The JSON gateway's requests and answers, as pure functions: the
//! campaign and compare-and-swap bodies, reading their outcomes, and the
//! cadence a TTL gives.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};
use std::time::Duration;

/// The key as a round read it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct KeyValue {
    /// The lease the key is bound to (0: none).
    pub(super) lease: i64,
    /// The decoded value (the holder's node name), if it decodes.
    pub(super) value: Option<String>,
}

pub(crate) fn b64(text: &str) -> String {
    B64.encode(text.as_bytes())
}

/// An int64 as the gateway writes it: a JSON string (or, from a lenient
/// proxy, a number).
pub(crate) fn int64(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// The first key-value of a range response (`kvs`), if any.
pub(super) fn first_kv(range: &Value) -> Option<KeyValue> {
    let kv = range.get("kvs")?.as_array()?.first()?;
    Some(KeyValue {
        lease: int64(kv.get("lease")).unwrap_or(0),
        value: kv
            .get("value")
            .and_then(Value::as_str)
            .and_then(|v| B64.decode(v).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok()),
    })
}

/// A plain key as read for a compare-and-swap: its value (None when
/// absent or not UTF-8) and `mod_revision` (0 when absent).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Versioned {
    pub(super) value: Option<String>,
    pub(super) mod_revision: i64,
}

/// The key of a range answer (`kvs[0]`), with its revision.
pub(super) fn versioned(range: &Value) -> Versioned {
    let kv = range
        .get("kvs")
        .and_then(Value::as_array)
        .and_then(|kvs| kvs.first());
    Versioned {
        value: kv
            .and_then(|kv| kv.get("value"))
            .and_then(Value::as_str)
            .and_then(|v| B64.decode(v).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        mod_revision: kv.and_then(|kv| int64(kv.get("mod_revision"))).unwrap_or(0),
    }
}

/// A compare-and-swap put of `value` at `key`, if the key's
/// `mod_revision` is still `seen` (0: still absent); otherwise read it
/// back for the next attempt.
pub(super) fn cas_body(key: &str, value: &str, seen: i64) -> Value {
    let key = b64(key);
    json!({
        "compare": [{
            "key": key,
            "result": "EQUAL",
            "target": "MOD",
            "mod_revision": seen.to_string(),
        }],
        "success": [{"requestPut": {"key": key, "value": b64(value)}}],
        "failure": [{"requestRange": {"key": key}}],
    })
}

/// Whether a compare-and-swap landed; when not, the key as it now is.
pub(super) fn cas_outcome(answer: &Value) -> Result<(), Versioned> {
    if answer
        .get("succeeded")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        return Ok(());
    }
    let range = answer
        .get("responses")
        .and_then(Value::as_array)
        .and_then(|responses| responses.first())
        .and_then(|r| r.get("response_range").or_else(|| r.get("responseRange")))
        .cloned()
        .unwrap_or(Value::Null);
    Err(versioned(&range))
}

/// The create-if-absent transaction: put `value` at `key` bound to
/// `lease` only if the key was never created (or was deleted); otherwise
/// read it back.
pub(super) fn campaign_body(key: &str, value: &str, lease: i64) -> Value {
    let key = b64(key);
    json!({
        "compare": [{
            "key": key,
            "result": "EQUAL",
            "target": "CREATE",
            "create_revision": "0",
        }],
        "success": [{
            "requestPut": {"key": key, "value": b64(value), "lease": lease.to_string()}
        }],
        "failure": [{"requestRange": {"key": key}}],
    })
}

/// What a campaign transaction's answer says: whether it put the key, and
/// the key as read when it did not.
pub(super) fn campaign_outcome(answer: &Value) -> (bool, Option<KeyValue>) {
    let succeeded = answer
        .get("succeeded")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let kv = answer
        .get("responses")
        .and_then(Value::as_array)
        .and_then(|responses| responses.first())
        .and_then(|r| r.get("response_range").or_else(|| r.get("responseRange")))
        .and_then(first_kv);
    (succeeded, kv)
}

/// The TTL of a keepalive answer; None when etcd says the lease is gone
/// (no TTL, or one <= 0).
pub(crate) fn keepalive_ttl(answer: &Value) -> Option<i64> {
    let result = answer.get("result").unwrap_or(answer);
    int64(result.get("TTL")).filter(|ttl| *ttl > 0)
}

/// `max(1 s, ttl/3)`: the time between rounds.
pub(super) fn period_for(ttl: u64) -> Duration {
    Duration::from_secs_f64((ttl as f64 / 3.0).max(1.0))
}

/// `max(1 s, ttl - period - 1 s)`: what one round may take.
pub(super) fn round_deadline_for(ttl: u64) -> Duration {
    let period = period_for(ttl).as_secs_f64();
    Duration::from_secs_f64((ttl as f64 - period - 1.0).max(1.0))
}

/// A MicroTime, as the other lease backends show their expiry.
pub(super) fn micro_time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}
