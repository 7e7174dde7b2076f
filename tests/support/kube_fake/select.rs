//! Label and field selectors, parsed the way the API server reads them:
//! a bad selector is a 400, not a silent match-all.

use serde_json::Value;

use super::status::{bad_request, ApiError};

/// One label requirement.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    /// `key` (present) or `!key` (absent).
    Exists(String, bool),
    /// `key=value`, `key==value` (true) or `key!=value` (false).
    Equals(String, String, bool),
    /// `key in (a,b)` (true) or `key notin (a,b)` (false).
    In(String, Vec<String>, bool),
}

/// A parsed `labelSelector`; all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

/// Split at commas that are not inside a `( ... )` set.
fn split_top_level(s: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '(' => {
                depth += 1;
                cur.push(ch);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                cur.push(ch);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    parts.push(cur);
    parts
}

/// Label keys and values follow the API's syntax; anything else is refused.
fn valid_key(k: &str) -> bool {
    let name = k.rsplit('/').next().unwrap_or(k);
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && k.matches('/').count() <= 1
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl LabelSelector {
    /// Parse a selector such as `app=web,tier!=db,env in (a,b),!legacy`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if text.trim().is_empty() {
            return Ok(Self(reqs));
        }
        let fail = |part: &str| {
            bad_request(format!(
                "unable to parse requirement: invalid label selector: {part:?}"
            ))
        };
        for raw in split_top_level(text) {
            let part = raw.trim();
            if part.is_empty() {
                return Err(fail(part));
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                Requirement::Exists(key.trim().to_string(), false)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::Equals(k.trim().into(), v.trim().into(), false)
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Equals(k.trim().into(), v.trim().into(), true)
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Equals(k.trim().into(), v.trim().into(), true)
            } else if let Some(open) = part.find('(') {
                let head: Vec<&str> = part[..open].split_whitespace().collect();
                let close = part.rfind(')').ok_or_else(|| fail(part))?;
                if close != part.len() - 1 || head.len() != 2 {
                    return Err(fail(part));
                }
                let positive = match head[1] {
                    "in" => true,
                    "notin" => false,
                    _ => return Err(fail(part)),
                };
                let values: Vec<String> = part[open + 1..close]
                    .split(',')
                    .map(|v| v.trim().to_string())
                    .collect();
                if values.iter().any(|v| v.is_empty() || !valid_value(v)) {
                    return Err(fail(part));
                }
                Requirement::In(head[0].to_string(), values, positive)
            } else {
                Requirement::Exists(part.to_string(), true)
            };
            let (key, value_ok) = match &req {
                Requirement::Exists(k, _) => (k, true),
                Requirement::Equals(k, v, _) => (k, valid_value(v)),
                Requirement::In(k, _, _) => (k, true),
            };
            if !valid_key(key) || !value_ok {
                return Err(fail(part));
            }
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Requirement::Exists(k, want) => get(k).is_some() == *want,
            Requirement::Equals(k, v, true) => get(k) == Some(v.as_str()),
            // `!=` also matches objects without the label, as in Kubernetes.
            Requirement::Equals(k, v, false) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs, true) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Requirement::In(k, vs, false) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
        })
    }
}

/// A parsed `fieldSelector`: `=`, `==`, `!=` on the fields the resource supports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(String, String, bool)>);

impl FieldSelector {
    /// Parse `metadata.name=x,metadata.namespace!=y`; `fields` lists the
    /// field paths this resource accepts besides the metadata ones.
    pub fn parse(text: &str, fields: &[&str]) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        if text.trim().is_empty() {
            return Ok(Self(reqs));
        }
        for part in text.split(',') {
            let (k, v, eq) = if let Some((k, v)) = part.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, v, true)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, v, true)
            } else {
                return Err(bad_request(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                )));
            };
            let k = k.trim();
            if k != "metadata.name" && k != "metadata.namespace" && !fields.contains(&k) {
                return Err(bad_request(format!("field label not supported: {k}")));
            }
            reqs.push((k.to_string(), v.trim().to_string(), eq));
        }
        Ok(Self(reqs))
    }

    /// Whether the object's fields satisfy every requirement; a missing
    /// field reads as the empty string, as the server's field sets do.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(k, v, eq)| {
            let pointer = format!("/{}", k.replace('.', "/"));
            let actual = match obj.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == *v) == *eq
        })
    }
}
