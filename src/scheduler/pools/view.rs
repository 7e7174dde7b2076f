//! What the API shows of a pool (pure): `GET /pools` lists every
//! configured pool with its entries, and `GET /jobs` gives a pooled job
//! its waiting entries. Keys as the original's; `holder` (the node that
//! runs a running entry) is ours.

use super::queue::{EntryState, PoolDoc};
use crate::config::sections::PoolConf;
use serde_json::{json, Map, Value};

/// One pool as `GET /pools` shows it: its configuration, the capacity
/// admission uses (`slots`, the stored one; `configuredSlots` differs
/// while a capacity change drains), slots `used`, entries `queued`, and
/// the entries (running first, then waiting in admission order with their
/// `position` and `waitingReason`, then ended ones).
pub fn pool_view(name: &str, conf: PoolConf, doc: &PoolDoc) -> Value {
    let positions: std::collections::HashMap<&str, usize> = doc
        .waiting()
        .into_iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i + 1))
        .collect();
    let free = doc.free();
    let mut rows: Vec<(u8, f64, String, Value)> = Vec::with_capacity(doc.entries.len());
    for entry in doc.entries.values() {
        let mut item = match serde_json::to_value(entry) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        item.remove("owner");
        item.remove("payload");
        let (rank, order) = match entry.state {
            EntryState::Running => {
                if let Some(holder) = entry.owner.as_deref().and_then(holder_of) {
                    item.insert("holder".into(), Value::from(holder));
                }
                (0, entry.queued_at)
            }
            EntryState::Queued => {
                let position = positions.get(entry.id.as_str()).copied().unwrap_or(0);
                let reason = if position > 1 {
                    "Waiting behind higher-priority or earlier work".to_owned()
                } else if entry.slots > free {
                    format!("Needs {}; {free} available", slot_count(entry.slots))
                } else {
                    entry
                        .reason
                        .clone()
                        .unwrap_or_else(|| "Waiting for admission".into())
                };
                item.insert("position".into(), Value::from(position));
                item.insert("waitingReason".into(), Value::from(reason));
                (1, position as f64)
            }
            _ => (2, entry.queued_at),
        };
        rows.push((rank, order, entry.id.clone(), Value::Object(item)));
    }
    rows.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then_with(|| a.2.cmp(&b.2))
    });
    json!({
        "name": name,
        "slots": doc.slots,
        "maxQueued": conf.max_queued,
        "configuredSlots": conf.slots,
        "used": doc.used(),
        "queued": doc.queued(),
        "entries": rows.into_iter().map(|r| r.3).collect::<Vec<_>>(),
    })
}

/// The node named in a claim's owner (`node#token:nonce`, ours); None for
/// an owner another implementation wrote.
pub fn holder_of(owner: &str) -> Option<&str> {
    owner.split_once('#').map(|(node, _)| node)
}

/// "1 slot", "2 slots".
fn slot_count(count: u32) -> String {
    format!("{count} slot{}", if count == 1 { "" } else { "s" })
}

/// The waiting entries of `job` in a pool view (its `entries`), in queue
/// order: what `GET /jobs` shows as the job's `pool.queued`.
pub fn queued_of(pool_view: &Value, job: &str) -> Vec<Value> {
    pool_view["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e["state"] == "queued" && e["job"] == job && e.get("task").is_none())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The running entries of `job` in a pool view: who holds its slots.
pub fn holders_of(pool_view: &Value, job: &str) -> Vec<Value> {
    pool_view["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e["state"] == "running" && e["job"] == job)
                .map(|e| {
                    json!({
                        "id": e["id"],
                        "slots": e["slots"],
                        "holder": e.get("holder").cloned().unwrap_or(Value::Null),
                        "leaseUntil": e["leaseUntil"],
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}
