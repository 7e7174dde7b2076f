//! The Streamable HTTP transport, stateless profile: `POST /mcp` takes one
//! JSON-RPC message and answers it as `application/json` (no session id,
//! no server-to-client stream, so `GET /mcp` is `405`), and `OPTIONS
//! /mcp` answers the CORS preflight of an allow-listed browser origin.
//!
//! The defenses run before anything is dispatched: a present `Origin`
//! not on `mcp.allowedOrigins` is `403` (DNS rebinding), a body over
//! `mcp.maxBodyBytes` is `413` (declared or read), an `Accept` that
//! excludes JSON is `406`, a batch is `400`.
//!
//! A request of the stateless revision (its body's `_meta` names one, or
//! its `MCP-Protocol-Version` header names `2026-07-28`) must mirror its
//! revision, method and tool, prompt or resource name into headers; one
//! that does not is `400` with the JSON-RPC error saying what differs.

use super::era::{self, Mirrored};
use super::rpc::is_response;
use super::{Backend, Caller, Server, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The request header naming the protocol revision (and the response
/// header echoing it).
const VERSION_HEADER: &str = "mcp-protocol-version";

/// What the transport reads of a request's headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inbound {
    /// `Origin`.
    pub origin: Option<String>,
    /// `Accept`.
    pub accept: Option<String>,
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<String>,
    /// `Mcp-Method` (the stateless revision's mirror of the method).
    pub mcp_method: Option<String>,
    /// `Mcp-Name` (its mirror of the tool, prompt or resource name).
    pub mcp_name: Option<String>,
    /// `Content-Length`, when declared and a number.
    pub content_length: Option<u64>,
    /// Whether `Access-Control-Request-Method` is present (a preflight).
    pub preflight: bool,
}

impl Inbound {
    /// Reads the headers.
    pub fn of(headers: &HeaderMap) -> Inbound {
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Inbound {
            origin: text("origin"),
            accept: text("accept"),
            protocol_version: text(VERSION_HEADER),
            mcp_method: text("mcp-method"),
            mcp_name: text("mcp-name"),
            content_length: text("content-length").and_then(|v| v.trim().parse().ok()),
            preflight: headers.contains_key("access-control-request-method"),
        }
    }

    /// The revision a response names: the request's, when this server
    /// speaks it (in either era), else the newest `initialize` agrees to.
    fn echoed_version(&self) -> &str {
        self.protocol_version
            .as_deref()
            .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v) || era::is_modern(v))
            .unwrap_or(PROTOCOL_VERSION)
    }

    /// The headers a modern request mirrors its body into.
    fn mirrored(&self) -> Mirrored {
        Mirrored {
            protocol_version: self.protocol_version.clone(),
            method: self.mcp_method.clone(),
            name: self.mcp_name.clone(),
        }
    }
}

impl Server {
    fn origin_allowed(&self, origin: &str) -> bool {
        self.settings.allowed_origins.iter().any(|o| o == origin)
    }

    /// The CORS headers for an allow-listed `origin` (the exact origin,
    /// never a wildcard: the requests carry credentials).
    fn cors(&self, inbound: &Inbound) -> Vec<(&'static str, String)> {
        match inbound.origin.as_deref() {
            Some(origin) if self.origin_allowed(origin) => vec![
                ("access-control-allow-origin", origin.to_owned()),
                (
                    "access-control-allow-headers",
                    "Authorization, Content-Type, MCP-Protocol-Version, Mcp-Method, Mcp-Name"
                        .to_owned(),
                ),
                (
                    "access-control-expose-headers",
                    "MCP-Protocol-Version".to_owned(),
                ),
                ("vary", "Origin".to_owned()),
            ],
            _ => Vec::new(),
        }
    }

    fn respond(
        &self,
        inbound: &Inbound,
        status: StatusCode,
        body: Option<&Value>,
        version: &str,
    ) -> Response {
        let mut response = match body {
            Some(body) => (
                status,
                [(header::CONTENT_TYPE, "application/json")],
                body.to_string(),
            )
                .into_response(),
            None => status.into_response(),
        };
        let headers = response.headers_mut();
        let mut set = |name: &str, value: &str| {
            if let (Ok(name), Ok(value)) =
                (HeaderName::try_from(name), HeaderValue::try_from(value))
            {
                headers.insert(name, value);
            }
        };
        set(VERSION_HEADER, version);
        for (name, value) in self.cors(inbound) {
            set(name, &value);
        }
        response
    }

    /// A transport refusal: `{"error": message}` with `status`.
    fn refuse(&self, inbound: &Inbound, status: StatusCode, message: &str) -> Response {
        self.respond(
            inbound,
            status,
            Some(&json!({"error": message})),
            inbound.echoed_version(),
        )
    }

    /// The checks made before the body is read: Origin, Accept and the
    /// declared length. `Some` is the refusal.
    pub fn screen(&self, inbound: &Inbound) -> Option<Response> {
        if let Some(origin) = &inbound.origin {
            if !self.origin_allowed(origin) {
                return Some(self.refuse(inbound, StatusCode::FORBIDDEN, "Origin not allowed"));
            }
        }
        // Only JSON is ever answered: a missing Accept is fine, one that
        // rules JSON out is not.
        if let Some(accept) = &inbound.accept {
            if !accept.contains("application/json") && !accept.contains("*/*") {
                return Some(self.refuse(
                    inbound,
                    StatusCode::NOT_ACCEPTABLE,
                    "Accept must allow application/json",
                ));
            }
        }
        if inbound
            .content_length
            .is_some_and(|n| n > self.settings.max_body_bytes as u64)
        {
            return Some(self.too_large(inbound));
        }
        None
    }

    fn too_large(&self, inbound: &Inbound) -> Response {
        self.refuse(
            inbound,
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body too large",
        )
    }

    /// Reads the body, at most `maxBodyBytes` (a longer one is `413`,
    /// refused as soon as it passes the cap).
    pub async fn read_body(&self, inbound: &Inbound, body: Body) -> Result<Bytes, Response> {
        use futures_util::StreamExt;
        let cap = self.settings.max_body_bytes;
        let mut stream = body.into_data_stream();
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|_| {
                self.refuse(inbound, StatusCode::BAD_REQUEST, "cannot read the body")
            })?;
            if out.len() + chunk.len() > cap {
                return Err(self.too_large(inbound));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(out))
    }

    /// Answers one `POST /mcp` whose body was read.
    pub(crate) async fn answer<B: Backend>(
        &self,
        inbound: &Inbound,
        body: &[u8],
        caller: &Caller,
        backend: &B,
    ) -> Response {
        if body.iter().all(u8::is_ascii_whitespace) {
            return self.refuse(inbound, StatusCode::BAD_REQUEST, "empty request body");
        }
        let Ok(message) = serde_json::from_slice::<Value>(body) else {
            return self.refuse(inbound, StatusCode::BAD_REQUEST, "malformed JSON");
        };
        if message.is_array() {
            // Batches left the protocol in revision 2025-06-18.
            return self.refuse(inbound, StatusCode::BAD_REQUEST, "batching unsupported");
        }
        if message.as_object().is_some_and(is_response) {
            return self.refuse(
                inbound,
                StatusCode::BAD_REQUEST,
                "JSON-RPC responses are not accepted: this server sends no requests",
            );
        }
        let object = message.as_object();
        let modern = object.is_some_and(era::declares_modern)
            || inbound
                .protocol_version
                .as_deref()
                .is_some_and(era::is_modern);
        match object {
            // A modern request (a notification has no header rules) must
            // carry its _meta and mirror it into the headers.
            Some(object) if modern && object.contains_key("id") => {
                let problem = era::meta_error(object)
                    .or_else(|| era::header_error(object, &inbound.mirrored()));
                if let Some(err) = problem {
                    let id = object
                        .get("id")
                        .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
                        .cloned()
                        .unwrap_or(Value::Null);
                    return self.respond(
                        inbound,
                        StatusCode::BAD_REQUEST,
                        Some(&err.envelope(id)),
                        inbound.echoed_version(),
                    );
                }
            }
            _ if !modern
                && inbound
                    .protocol_version
                    .as_deref()
                    .is_some_and(|v| !SUPPORTED_PROTOCOL_VERSIONS.contains(&v)) =>
            {
                return self.refuse(
                    inbound,
                    StatusCode::BAD_REQUEST,
                    "unsupported MCP-Protocol-Version",
                );
            }
            _ => {}
        }
        let (reply, status) = self.dispatch_message(&message, caller, backend).await;
        let Some(reply) = reply else {
            return self.respond(
                inbound,
                StatusCode::ACCEPTED,
                None,
                inbound.echoed_version(),
            );
        };
        // The reply to initialize names the revision the client uses from
        // now on.
        let version = if message["method"] == "initialize" {
            reply["result"]["protocolVersion"]
                .as_str()
                .unwrap_or(inbound.echoed_version())
                .to_owned()
        } else {
            inbound.echoed_version().to_owned()
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        self.respond(inbound, status, Some(&reply), &version)
    }

    /// `GET /mcp`: there is no server-to-client stream to open.
    pub fn answer_get(&self, inbound: &Inbound) -> Response {
        let mut response = self.refuse(
            inbound,
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
        response
    }

    /// `OPTIONS /mcp`: the CORS preflight of an allow-listed origin
    /// (`204`); another origin is `403`, no origin `405`.
    pub fn answer_options(&self, inbound: &Inbound) -> Response {
        match inbound.origin.as_deref() {
            Some(origin) if self.origin_allowed(origin) => {
                let mut response = self.respond(
                    inbound,
                    StatusCode::NO_CONTENT,
                    None,
                    inbound.echoed_version(),
                );
                response.headers_mut().insert(
                    header::ACCESS_CONTROL_ALLOW_METHODS,
                    HeaderValue::from_static("POST, OPTIONS"),
                );
                response
            }
            Some(_) => self.refuse(inbound, StatusCode::FORBIDDEN, "Origin not allowed"),
            None => self.refuse(inbound, StatusCode::METHOD_NOT_ALLOWED, "preflight"),
        }
    }
}
