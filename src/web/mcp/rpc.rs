//! JSON-RPC 2.0 framing and method dispatch, apart from any transport:
//! one message in, the response (or nothing, for a notification or a
//! stray response) out. Protocol faults are JSON-RPC errors; a tool that
//! fails answers a normal result with `isError` (see [`super::tools`]).
//! A message naming a revision in its `_meta` is served under the rules
//! of [`super::era`].

use super::catalog;
use super::era;
use super::{Backend, Caller, Server, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
use serde_json::{json, Map, Value};

/// The message is not valid JSON-RPC.
pub(super) const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
/// The parameters are wrong.
pub(super) const INVALID_PARAMS: i64 = -32602;
/// `resources/read` of a URI that resolves to nothing.
pub(super) const RESOURCE_NOT_FOUND: i64 = -32002;

/// A JSON-RPC error: code, message and optional data, and the HTTP
/// status a modern request's reply carries (a legacy error is always
/// answered `200`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
    pub status: u16,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
            status: 200,
        }
    }

    /// The error with `data`.
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    /// The error, answered with HTTP `status` to a modern request.
    pub fn with_status(mut self, status: u16) -> RpcError {
        self.status = status;
        self
    }

    /// The response carrying this error for request `id`.
    pub fn envelope(&self, id: Value) -> Value {
        let mut reply = error_envelope(id, self.code, &self.message);
        if let Some(data) = &self.data {
            reply["error"]["data"] = data.clone();
        }
        reply
    }
}

/// The error envelope of a response.
pub(super) fn error_envelope(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A request id: a string or an integer (never null, a float or a
/// boolean).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// A JSON-RPC response: a reply, with no method.
pub(super) fn is_response(message: &Map<String, Value>) -> bool {
    !message.contains_key("method")
        && (message.contains_key("result") || message.contains_key("error"))
}

/// The server's default `instructions`.
const INSTRUCTIONS: &str = "cronstable runs scheduled jobs. The read-only tools describe the \
     jobs, their runs and output, schedules, the cluster, metrics and the saved state; start \
     with cron_get_status or cron_list_jobs. Tools that change anything (run, cancel, pause or \
     resume a job) exist only when the operator turned readOnly off and the token allows them, \
     and each needs confirm=true. Check a schedule you propose with cron_validate_schedule or \
     cron_explain_schedule (the daemon's own engine) first; cron_why_no_run explains whether a \
     job's schedule selects a given time.";

impl Server {
    /// What `initialize` advertises to `caller`: only what it can use.
    fn capabilities(&self, caller: &Caller) -> Value {
        let mut caps = json!({"tools": {"listChanged": false}});
        if self.serves_resources() {
            caps["resources"] = json!({"listChanged": false});
        }
        if self.serves_prompts(caller) {
            caps["prompts"] = json!({"listChanged": false});
        }
        if caps.get("resources").is_some() || caps.get("prompts").is_some() {
            caps["completions"] = json!({});
        }
        caps
    }

    /// The server's full identity, which `initialize` and
    /// `server/discover` return.
    fn server_info() -> Value {
        let mut info = era::identity();
        info["description"] = json!(
            "A cron daemon: scheduled jobs with retries, alerts, run history and dashboards."
        );
        info
    }

    fn instructions(&self) -> &str {
        self.settings
            .instructions
            .as_deref()
            .unwrap_or(INSTRUCTIONS)
    }

    fn initialize(&self, params: &Map<String, Value>, caller: &Caller) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str);
        let version = asked
            .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v))
            .unwrap_or(PROTOCOL_VERSION);
        json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(caller),
            "serverInfo": Server::server_info(),
            "instructions": self.instructions(),
        })
    }

    /// `server/discover` (modern only): what the server speaks and offers
    /// the caller.
    fn discover(&self, caller: &Caller) -> Value {
        json!({
            "supportedVersions": era::all_versions(),
            "capabilities": self.capabilities(caller),
            "instructions": self.instructions(),
            "_meta": {era::META_SERVER_INFO: Server::server_info()},
        })
    }

    fn tools_list(&self, caller: &Caller) -> Value {
        let tools: Vec<Value> = catalog::visible(&self.settings, &caller.grant)
            .map(catalog::Tool::listing)
            .collect();
        json!({"tools": tools})
    }

    async fn tools_call<B: Backend>(
        &self,
        params: &Map<String, Value>,
        caller: &Caller,
        backend: &B,
    ) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::new(INVALID_PARAMS, "tools/call needs a 'name'"));
        };
        let tool = catalog::tool(name)
            .filter(|t| t.configured(&self.settings))
            .ok_or_else(|| RpcError::new(INVALID_PARAMS, format!("unknown tool: {name}")))?;
        let empty = Map::new();
        let args = arguments(params, &empty)?;
        if !tool.permitted(&caller.grant) {
            return Ok(super::tools::tool_error(&format!(
                "the token presented lacks the '{}' scope this tool needs (the REST route for \
                 the same action needs it too)",
                tool.needs().scope_name()
            )));
        }
        let unknown: Vec<String> = args
            .keys()
            .filter(|k| !tool.takes(k))
            .map(|k| format!("'{k}'"))
            .collect();
        if !unknown.is_empty() {
            let takes = tool.arg_names();
            return Ok(super::tools::tool_error(&format!(
                "unknown argument(s) {}; {name} takes {}",
                unknown.join(", "),
                if takes.is_empty() {
                    "no arguments".to_owned()
                } else {
                    takes.join(", ")
                }
            )));
        }
        Ok(self.run_tool(tool, args, caller, backend).await)
    }

    /// Dispatches one JSON-RPC message from `caller`: the response, or
    /// `None` for a notification or a stray response (answered 202).
    #[cfg(test)]
    pub(crate) async fn handle_message<B: Backend>(
        &self,
        message: &Value,
        caller: &Caller,
        backend: &B,
    ) -> Option<Value> {
        self.dispatch_message(message, caller, backend).await.0
    }

    /// [`Server::handle_message`], with the HTTP status of the reply: not
    /// `200` only for a modern request refused for its `_meta` or
    /// revision (`400`) or naming an unknown method (`404`).
    pub(super) async fn dispatch_message<B: Backend>(
        &self,
        message: &Value,
        caller: &Caller,
        backend: &B,
    ) -> (Option<Value>, u16) {
        let Some(object) = message
            .as_object()
            .filter(|m| m.get("jsonrpc") == Some(&json!("2.0")))
        else {
            let id = message
                .get("id")
                .filter(|id| valid_id(id))
                .cloned()
                .unwrap_or(Value::Null);
            let reply = error_envelope(id, INVALID_REQUEST, "not a JSON-RPC 2.0 message");
            return (Some(reply), 200);
        };
        if is_response(object) {
            // This server sends no requests, so no reply is awaited.
            return (None, 202);
        }
        let notification = !object.contains_key("id");
        let id = object.get("id").cloned().unwrap_or(Value::Null);
        if !notification && !valid_id(&id) {
            let reply = error_envelope(
                Value::Null,
                INVALID_REQUEST,
                "a request id must be a string or an integer",
            );
            return (Some(reply), 200);
        }
        let modern = era::declares_modern(object);
        let answer = if modern {
            match era::meta_error(object).or_else(|| era::version_error(object)) {
                Some(err) => Err(err),
                None => self.method(object, true, caller, backend).await,
            }
        } else {
            self.method(object, false, caller, backend).await
        };
        if notification {
            return (None, 202);
        }
        match answer {
            Ok(result) if modern => {
                let method = object
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let reply =
                    json!({"jsonrpc": "2.0", "id": id, "result": era::finish(method, result)});
                (Some(reply), 200)
            }
            Ok(result) => (
                Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
                200,
            ),
            Err(mut err) if modern => {
                // The modern revision has no resource-not-found code.
                if err.code == RESOURCE_NOT_FOUND {
                    err.code = INVALID_PARAMS;
                }
                (Some(err.envelope(id)), err.status)
            }
            Err(err) => (Some(err.envelope(id)), 200),
        }
    }

    /// Runs the method of `object`, under the modern revision's method
    /// set when `modern`.
    async fn method<B: Backend>(
        &self,
        object: &Map<String, Value>,
        modern: bool,
        caller: &Caller,
        backend: &B,
    ) -> Result<Value, RpcError> {
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            return Err(RpcError::new(INVALID_REQUEST, "the method is missing"));
        };
        let other_era = if modern {
            era::legacy_only(method)
        } else {
            era::modern_only(method)
        };
        let unknown = || {
            RpcError::new(METHOD_NOT_FOUND, format!("unknown method: {method}")).with_status(404)
        };
        if other_era {
            return Err(unknown());
        }
        let empty = Map::new();
        let params = match object.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(params)) => params,
            Some(_) => return Err(RpcError::new(INVALID_PARAMS, "params must be an object")),
        };
        let resources = self.settings.resources;
        let prompts = self.settings.prompts;
        match method {
            "initialize" => Ok(self.initialize(params, caller)),
            "notifications/initialized" | "notifications/cancelled" => Ok(Value::Null),
            "ping" => Ok(json!({})),
            "server/discover" => Ok(self.discover(caller)),
            "tools/list" => Ok(self.tools_list(caller)),
            "tools/call" => self.tools_call(params, caller, backend).await,
            "resources/list" if resources => Ok(self.resources_list()),
            "resources/templates/list" if resources => Ok(self.resource_templates_list()),
            "resources/read" if resources => self.resources_read(params, backend).await,
            "prompts/list" if prompts => Ok(self.prompts_list(caller)),
            "prompts/get" if prompts => self.prompts_get(params, caller),
            "completion/complete" if resources || prompts => {
                self.complete(params, caller, backend).await
            }
            _ => Err(unknown()),
        }
    }
}

/// The `arguments` object of a `tools/call` or `prompts/get` (`empty`
/// when left out or null); anything else is invalid params.
pub(super) fn arguments<'a>(
    params: &'a Map<String, Value>,
    empty: &'a Map<String, Value>,
) -> Result<&'a Map<String, Value>, RpcError> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(empty),
        Some(Value::Object(args)) => Ok(args),
        Some(_) => Err(RpcError::new(
            INVALID_PARAMS,
            "'arguments' must be an object",
        )),
    }
}
