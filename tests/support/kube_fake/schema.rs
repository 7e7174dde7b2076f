//! The parts of CRD structural-schema handling that a real API server applies
//! to custom resources on every create and update, in its order: prune unknown
//! fields, apply defaults, then validate (types, required, enum, bounds,
//! patterns, lengths, item counts, allOf/anyOf/oneOf/not).
//!
//! CEL rules (`x-kubernetes-validations`) and `format` checks are not run; the
//! README lists that gap.

use serde_json::{Map, Value};

use super::status::Cause;

/// What one pass over an object found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Fields that failed validation; non-empty means 422.
    pub causes: Vec<Cause>,
    /// Unknown fields that were pruned (paths), for warnings or Strict mode.
    pub unknown: Vec<String>,
}

/// Prune, default and validate `obj` (a whole custom resource) against the
/// version's `openAPIV3Schema`. `apiVersion`, `kind` and `metadata` at the
/// root are the server's, so they are never pruned here.
pub fn apply(obj: &mut Value, schema: &Value) -> Outcome {
    let mut out = Outcome::default();
    let Some(map) = obj.as_object_mut() else {
        out.causes.push(Cause {
            reason: "FieldValueTypeInvalid",
            field: "<root>".into(),
            detail: "Invalid value: the object must be a map".into(),
        });
        return out;
    };
    let props = schema.get("properties").and_then(Value::as_object);
    let preserve = preserves(schema);
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        match props.and_then(|p| p.get(&key)) {
            Some(sub) => {
                if let Some(v) = map.get_mut(&key) {
                    walk(v, sub, &key, &mut out);
                }
            }
            None if preserve => {}
            None => {
                map.remove(&key);
                out.unknown.push(key);
            }
        }
    }
    fill_defaults(map, schema, "", &mut out);
    check_required(map, schema, "", &mut out);
    out
}

fn preserves(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Go-style rendering of a value inside an error message.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn invalid(out: &mut Outcome, path: &str, value: &Value, why: String) {
    out.causes.push(Cause {
        reason: "FieldValueInvalid",
        field: path.to_string(),
        detail: format!("Invalid value: {}: {why}", show(value)),
    });
}

fn fill_defaults(map: &mut Map<String, Value>, schema: &Value, path: &str, out: &mut Outcome) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, sub) in props {
        if map
            .get(key)
            .is_none_or(|v| v.is_null() && sub.get("nullable") != Some(&Value::Bool(true)))
        {
            if let Some(default) = sub.get("default") {
                let mut v = default.clone();
                walk(&mut v, sub, &join(path, key), out);
                map.insert(key.clone(), v);
            }
        }
    }
}

fn check_required(map: &Map<String, Value>, schema: &Value, path: &str, out: &mut Outcome) {
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for key in req.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                out.causes.push(Cause {
                    reason: "FieldValueRequired",
                    field: join(path, key),
                    detail: "Required value".into(),
                });
            }
        }
    }
}

/// Prune, default and validate one node.
fn walk(value: &mut Value, schema: &Value, path: &str, out: &mut Outcome) {
    if value.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            if let Some(t) = schema.get("type").and_then(Value::as_str) {
                invalid(
                    out,
                    path,
                    &Value::String("null".into()),
                    format!("{path} in body must be of type {t}: \"null\""),
                );
            }
        }
        return;
    }
    let int_or_string = schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if int_or_string {
        if !(is_integer(value) || value.is_string()) {
            invalid(
                out,
                path,
                &Value::String(type_name(value).into()),
                format!(
                    "{path} in body must be of type integer,string: {:?}",
                    type_name(value)
                ),
            );
            return;
        }
    } else if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => is_integer(value),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            let actual = type_name(value);
            invalid(
                out,
                path,
                &Value::String(actual.into()),
                format!("{path} in body must be of type {t}: {actual:?}"),
            );
            return;
        }
    }

    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let preserve = preserves(schema);
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let sub_path = join(path, &key);
                if let Some(sub) = props.and_then(|p| p.get(&key)) {
                    if let Some(v) = map.get_mut(&key) {
                        walk(v, sub, &sub_path, out);
                    }
                } else if let Some(add) = additional.filter(|a| a.is_object()) {
                    if let Some(v) = map.get_mut(&key) {
                        walk(v, add, &format!("{path}[{key}]"), out);
                    }
                } else if preserve || additional == Some(&Value::Bool(true)) {
                } else {
                    map.remove(&key);
                    out.unknown.push(sub_path);
                }
            }
            fill_defaults(map, schema, path, out);
            check_required(map, schema, path, out);
            let n = map.len() as u64;
            if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64) {
                if n > max {
                    out.causes.push(Cause {
                        reason: "FieldValueTooMany",
                        field: path.into(),
                        detail: format!("Too many: {n}: must have at most {max} items"),
                    });
                }
            }
            if let Some(min) = schema.get("minProperties").and_then(Value::as_u64) {
                if n < min {
                    invalid(
                        out,
                        path,
                        &Value::from(n),
                        format!("{path} in body should have at least {min} properties"),
                    );
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), out);
                }
            }
            let n = items.len() as u64;
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
                if n > max {
                    out.causes.push(Cause {
                        reason: "FieldValueTooMany",
                        field: path.into(),
                        detail: format!("Too many: {n}: must have at most {max} items"),
                    });
                }
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
                if n < min {
                    invalid(
                        out,
                        path,
                        &Value::from(n),
                        format!("{path} in body should have at least {min} items"),
                    );
                }
            }
            if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
                for (i, a) in items.iter().enumerate() {
                    if items[..i].contains(a) {
                        out.causes.push(Cause {
                            reason: "FieldValueDuplicate",
                            field: format!("{path}[{i}]"),
                            detail: format!("Duplicate value: {}", show(a)),
                        });
                    }
                }
            }
        }
        Value::String(s) => {
            let len = s.chars().count() as u64;
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                if len > max {
                    out.causes.push(Cause {
                        reason: "FieldValueTooLong",
                        field: path.into(),
                        detail: format!("Too long: may not be more than {max} bytes"),
                    });
                }
            }
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
                if len < min {
                    let v = value.clone();
                    invalid(
                        out,
                        path,
                        &v,
                        format!("{path} in body should be at least {min} chars long"),
                    );
                }
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                let s = value.as_str().unwrap_or_default().to_string();
                match regex::Regex::new(pattern) {
                    Ok(re) if re.is_match(&s) => {}
                    Ok(_) => invalid(
                        out,
                        path,
                        &Value::String(s),
                        format!("{path} in body should match '{pattern}'"),
                    ),
                    Err(e) => invalid(
                        out,
                        path,
                        &Value::String(s),
                        format!("pattern {pattern:?} does not compile: {e}"),
                    ),
                }
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let excl_min = schema.get("exclusiveMinimum") == Some(&Value::Bool(true));
            let excl_max = schema.get("exclusiveMaximum") == Some(&Value::Bool(true));
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
                if x < min || (excl_min && x == min) {
                    let rel = if excl_min {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    let v = value.clone();
                    invalid(
                        out,
                        path,
                        &v,
                        format!("{path} in body should be {rel} {}", fmt_num(min)),
                    );
                }
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
                if x > max || (excl_max && x == max) {
                    let rel = if excl_max {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    let v = value.clone();
                    invalid(
                        out,
                        path,
                        &v,
                        format!("{path} in body should be {rel} {}", fmt_num(max)),
                    );
                }
            }
            if let Some(m) = schema.get("multipleOf").and_then(Value::as_f64) {
                if m > 0.0 && (x / m).fract() != 0.0 {
                    let v = value.clone();
                    invalid(
                        out,
                        path,
                        &v,
                        format!("{path} in body should be a multiple of {}", fmt_num(m)),
                    );
                }
            }
        }
        _ => {}
    }

    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let list: Vec<String> = allowed.iter().map(show).collect();
            out.causes.push(Cause {
                reason: "FieldValueNotSupported",
                field: path.into(),
                detail: format!(
                    "Unsupported value: {}: supported values: {}",
                    show(value),
                    list.join(", ")
                ),
            });
        }
    }
    combinators(value, schema, path, out);
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Whether a value passes a sub-schema, judged on a scratch copy so the
/// combinators never prune or default the real object.
fn passes(value: &Value, schema: &Value, path: &str) -> bool {
    let mut copy = value.clone();
    let mut scratch = Outcome::default();
    walk(&mut copy, schema, path, &mut scratch);
    scratch.causes.is_empty()
}

fn combinators(value: &Value, schema: &Value, path: &str, out: &mut Outcome) {
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for sub in all {
            let mut copy = value.clone();
            let mut scratch = Outcome::default();
            walk(&mut copy, sub, path, &mut scratch);
            out.causes.extend(scratch.causes);
        }
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        if !any.iter().any(|s| passes(value, s, path)) {
            invalid(
                out,
                path,
                value,
                format!("{path} in body must match at least one schema in anyOf"),
            );
        }
    }
    if let Some(one) = schema.get("oneOf").and_then(Value::as_array) {
        let n = one.iter().filter(|s| passes(value, s, path)).count();
        if n != 1 {
            invalid(out, path, value, format!("{path} in body must validate one and only one schema (oneOf). Found {n} valid alternatives"));
        }
    }
    if let Some(not) = schema.get("not") {
        if passes(value, not, path) {
            invalid(
                out,
                path,
                value,
                format!("{path} in body must not validate the schema (not)"),
            );
        }
    }
}

/// Structural-schema rules a v1 CRD must meet (the real server refuses the
/// CRD otherwise): every specified field, array item and additionalProperties
/// schema has a `type` (unless int-or-string or preserve-unknown-fields),
/// the root is an object, and `properties` and `additionalProperties` are
/// not both set. `path` is the schema's field path in the CRD.
pub fn structural_causes(schema: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            field: format!("{path}.type"),
            detail: "Invalid value: \"\": must be object at the root".into(),
        });
    }
    structural_walk(schema, path, false, &mut causes);
    causes
}

fn structural_walk(node: &Value, path: &str, needs_type: bool, causes: &mut Vec<Cause>) {
    let exempt = node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        || node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if needs_type
        && !exempt
        && node
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        causes.push(Cause {
            reason: "FieldValueRequired",
            field: format!("{path}.type"),
            detail: "Required value: must not be empty for specified object fields".into(),
        });
    }
    if node.get("properties").is_some()
        && node
            .get("additionalProperties")
            .is_some_and(|a| a.is_object())
    {
        causes.push(Cause {
            reason: "FieldValueForbidden",
            field: format!("{path}.additionalProperties"),
            detail: "Forbidden: additionalProperties and properties are mutual exclusive".into(),
        });
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (k, sub) in props {
            structural_walk(sub, &format!("{path}.properties[{k}]"), true, causes);
        }
    }
    if let Some(items) = node.get("items") {
        structural_walk(items, &format!("{path}.items"), true, causes);
    }
    if let Some(add) = node.get("additionalProperties").filter(|a| a.is_object()) {
        structural_walk(add, &format!("{path}.additionalProperties"), true, causes);
    }
}
