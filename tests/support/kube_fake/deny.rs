//! RBAC refusals: a test names a resource the caller may not use (in one
//! namespace or everywhere), and every request for it answers 403 Forbidden
//! in the real server's wording, as a Role without that rule makes the real
//! authorizer answer. Everything else is served as usual.

use std::collections::HashMap;

use serde_json::json;

use super::status::ApiError;

/// The user the fake's refusals name (the fake ignores the token).
pub const USER: &str = "system:serviceaccount:fake:cronstable";

/// One refused resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    /// API group ("" for core/v1).
    pub group: String,
    /// Resource plural, with `/status` for the subresource.
    pub resource: String,
    /// Only in this namespace; `None`: everywhere (cluster scope included).
    pub namespace: Option<String>,
}

/// The verb the authorizer checks for a request.
fn verb(method: &str, name: Option<&str>, params: &HashMap<String, String>) -> &'static str {
    let watching = matches!(
        params.get("watch").map(String::as_str),
        Some("true") | Some("1")
    );
    match (method, name) {
        ("GET", None) if watching => "watch",
        ("GET", None) => "list",
        ("GET", Some(_)) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", None) => "deletecollection",
        ("DELETE", Some(_)) => "delete",
        _ => "unknown",
    }
}

/// The 403 a request gets when `denials` refuse it, else `None`. `segs` are
/// the URL path's segments.
pub(crate) fn check(
    denials: &[Denial],
    method: &str,
    segs: &[&str],
    params: &HashMap<String, String>,
) -> Option<ApiError> {
    let (group, rest) = match segs {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let (namespace, plural, tail) = match rest {
        ["namespaces", ns, plural, tail @ ..] => (Some(*ns), *plural, tail),
        [plural, tail @ ..] => (None, *plural, tail),
        _ => return None,
    };
    let (name, resource) = match tail {
        [] => (None, plural.to_string()),
        [name] => (Some(*name), plural.to_string()),
        [name, sub] => (Some(*name), format!("{plural}/{sub}")),
        _ => return None,
    };
    let refused = denials.iter().any(|d| {
        d.group == group
            && d.resource == resource
            && d.namespace
                .as_deref()
                .is_none_or(|ns| Some(ns) == namespace)
    });
    if !refused {
        return None;
    }
    let verb = verb(method, name, params);
    let qualified = if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    };
    let object = match name {
        Some(name) => format!("{qualified} \"{name}\""),
        None => qualified,
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let mut details = json!({"kind": plural});
    if let Some(name) = name {
        details["name"] = json!(name);
    }
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    Some(ApiError {
        code: 403,
        reason: "Forbidden",
        message: format!(
            "{object} is forbidden: User \"{USER}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
        ),
        details: Some(details),
    })
}
