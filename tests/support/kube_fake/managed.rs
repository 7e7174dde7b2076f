//! managedFields for server-side apply: the entry an apply records and the
//! `fieldsV1` set it owns, spelled as the real server spells it (`f:` for
//! a field, `k:{...}` for an item of a list keyed by its map keys, `v:` for
//! an item of a set list, `.` for a keyed item itself; an atomic list or
//! a scalar is owned whole as `{}`).

use serde_json::{json, Map, Value};

/// The managedFields entry of an apply by `manager` on `subresource` (None:
/// the main resource) that sent `applied` (the object's fields below
/// metadata), read through `api_version`, whose schema is `schema`.
pub(crate) fn apply_entry(
    manager: &str,
    api_version: &str,
    subresource: Option<&str>,
    applied: &Map<String, Value>,
    schema: Option<&Value>,
) -> Value {
    let mut owned = Map::new();
    for (key, value) in applied {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let child = schema.and_then(|s| s.pointer(&format!("/properties/{}", escape(key))));
        owned.insert(format!("f:{key}"), fields(value, child));
    }
    let mut entry = json!({
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "fieldsType": "FieldsV1",
        "fieldsV1": owned,
    });
    if let Some(sub) = subresource {
        entry["subresource"] = json!(sub);
    }
    entry
}

/// A JSON pointer segment for `key`.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The fields `value` sets, under its schema node when known.
fn fields(value: &Value, schema: Option<&Value>) -> Value {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut out = Map::new();
            for (key, child) in map {
                let sub = schema.and_then(|s| {
                    s.pointer(&format!("/properties/{}", escape(key)))
                        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                });
                out.insert(format!("f:{key}"), fields(child, sub));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let list_type = schema
                .and_then(|s| s.get("x-kubernetes-list-type"))
                .and_then(Value::as_str);
            let item_schema = schema.and_then(|s| s.get("items"));
            match list_type {
                Some("map") => {
                    let keys: Vec<&str> = schema
                        .and_then(|s| s.get("x-kubernetes-list-map-keys"))
                        .and_then(Value::as_array)
                        .map(|k| k.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let mut out = Map::new();
                    for item in items {
                        let mut id = Map::new();
                        for key in &keys {
                            if let Some(v) = item.get(*key) {
                                id.insert((*key).to_owned(), v.clone());
                            }
                        }
                        let mut owned = match fields(item, item_schema) {
                            Value::Object(m) => m,
                            _ => Map::new(),
                        };
                        owned.insert(".".to_owned(), json!({}));
                        out.insert(format!("k:{}", Value::Object(id)), Value::Object(owned));
                    }
                    Value::Object(out)
                }
                Some("set") => Value::Object(
                    items
                        .iter()
                        .map(|item| (format!("v:{item}"), json!({})))
                        .collect(),
                ),
                // An atomic list is owned whole.
                _ => json!({}),
            }
        }
        // A scalar, or an empty object, is owned as one field.
        _ => json!({}),
    }
}
