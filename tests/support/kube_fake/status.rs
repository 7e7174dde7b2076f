//! Failure answers in the API server's `Status` shape, so clients (kube's
//! `Error::Api`) see the same code, reason and details they would get from
//! a real server.

use serde_json::{json, Value};

/// One failure answer: HTTP code plus the `Status` body that goes with it.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status code, also written into the body's `code`.
    pub code: u16,
    /// Machine-readable reason (`NotFound`, `AlreadyExists`, `Conflict`, ...).
    pub reason: &'static str,
    /// Human-readable message, worded like the real server's.
    pub message: String,
    /// The `details` object (name, group, kind, causes), when there is one.
    pub details: Option<Value>,
}

impl ApiError {
    /// The `Status` object sent as the response body.
    pub fn body(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        body
    }
}

/// What names the object in error details: resource plural, group, name.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// API group ("" for core/v1).
    pub group: &'a str,
    /// Resource plural, e.g. `configmaps`.
    pub plural: &'a str,
    /// Object name.
    pub name: &'a str,
}

impl Target<'_> {
    /// `configmaps "x"` or `leases.coordination.k8s.io "x"`, as the real
    /// server names a resource in its messages.
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    fn details(&self) -> Value {
        let mut d = json!({"name": self.name, "kind": self.plural});
        if !self.group.is_empty() {
            d["group"] = json!(self.group);
        }
        d
    }
}

/// 404 for a missing object.
pub fn not_found(t: &Target<'_>) -> ApiError {
    ApiError {
        code: 404,
        reason: "NotFound",
        message: format!("{} \"{}\" not found", t.qualified(), t.name),
        details: Some(t.details()),
    }
}

/// 404 for a path that names no known resource.
pub fn no_route(path: &str) -> ApiError {
    ApiError {
        code: 404,
        reason: "NotFound",
        message: format!("the server could not find the requested resource ({path})"),
        details: None,
    }
}

/// 409 when a create names an object that exists.
pub fn already_exists(t: &Target<'_>) -> ApiError {
    ApiError {
        code: 409,
        reason: "AlreadyExists",
        message: format!("{} \"{}\" already exists", t.qualified(), t.name),
        details: Some(t.details()),
    }
}

/// 409 when a write carries a stale resourceVersion (optimistic locking).
pub fn conflict(t: &Target<'_>) -> ApiError {
    ApiError {
        code: 409,
        reason: "Conflict",
        message: format!(
            "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
            t.qualified(),
            t.name
        ),
        details: Some(t.details()),
    }
}

/// 409 when a delete precondition (uid or resourceVersion) does not hold.
pub fn precondition_failed(t: &Target<'_>, what: &str) -> ApiError {
    ApiError {
        code: 409,
        reason: "Conflict",
        message: format!(
            "Operation cannot be fulfilled on {} \"{}\": Precondition failed: {what}",
            t.qualified(),
            t.name
        ),
        details: Some(t.details()),
    }
}

/// 400 for a malformed request.
pub fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError {
        code: 400,
        reason: "BadRequest",
        message: message.into(),
        details: None,
    }
}

/// 405 for a verb the resource does not support.
pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
    ApiError {
        code: 405,
        reason: "MethodNotAllowed",
        message: message.into(),
        details: None,
    }
}

/// 415 for a patch type the resource does not accept.
pub fn unsupported_media_type(accepted: &[&str]) -> ApiError {
    ApiError {
        code: 415,
        reason: "UnsupportedMediaType",
        message: format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
        details: None,
    }
}

/// 500, as the real server answers for a resourceVersion set on create.
pub fn internal(message: impl Into<String>) -> ApiError {
    ApiError {
        code: 500,
        reason: "InternalError",
        message: format!("Internal error occurred: {}", message.into()),
        details: None,
    }
}

/// 503 while the outage switch is on.
pub fn unavailable() -> ApiError {
    ApiError {
        code: 503,
        reason: "ServiceUnavailable",
        message: "the server is currently unable to handle the request".to_string(),
        details: None,
    }
}

/// One field-level validation failure, a `cause` of a 422.
#[derive(Debug, Clone)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, ...
    pub reason: &'static str,
    /// Dotted path of the field (`spec.jobs[0].schedule`).
    pub field: String,
    /// The text after the field name (`Required value`, `Invalid value: ...`).
    pub detail: String,
}

/// 422 Invalid: `<Kind>.<group> "<name>" is invalid: <causes>`, the real
/// server's wording, with one `cause` per failing field.
pub fn invalid(kind: &str, group: &str, name: &str, causes: &[Cause]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let texts: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.detail))
        .collect();
    let joined = if texts.len() == 1 {
        texts[0].clone()
    } else {
        format!("[{}]", texts.join(", "))
    };
    let causes_json: Vec<Value> = causes
        .iter()
        .map(|c| json!({"reason": c.reason, "message": c.detail, "field": c.field}))
        .collect();
    let mut details = json!({"name": name, "kind": kind, "causes": causes_json});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    ApiError {
        code: 422,
        reason: "Invalid",
        message: format!("{qualified} \"{name}\" is invalid: {joined}"),
        details: Some(details),
    }
}
