//! `cronstable mcp`: the stdio bridge desktop MCP clients launch. It reads
//! newline-delimited JSON-RPC on stdin, POSTs each frame to a running
//! daemon's `/mcp`, and writes each reply as one line on stdout (stdout
//! carries frames only; messages go to stderr). Notifications get no
//! reply, and a response from the client is dropped (the daemon sends no
//! requests). A frame of the stateless revision (its `_meta` names a
//! protocol version) travels with the headers that revision requires,
//! copied from the frame; other frames carry the version `initialize`
//! agreed. `--check` probes the daemon (`server/discover`, else
//! `initialize`), counts its tools and reports, for wiring a client up.

use super::webclient::{ClientError, ConnectArgs, Env};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::time::Duration;

/// The `MCP-Protocol-Version` sent before `initialize` has answered.
pub const DEFAULT_PROTOCOL_VERSION: &str = "2025-11-25";

/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;
/// A failure of the bridge itself (outside the range JSON-RPC reserves,
/// so a client cannot take it for the daemon's).
const TRANSPORT_ERROR: i64 = -31000;

/// The stateless revision `--check` probes with `server/discover`.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// The `_meta` key naming a stateless request's revision.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// `cronstable mcp`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct McpArgs {
    /// Where the daemon is, and how to authenticate.
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The MCP-Protocol-Version sent before initialize answers [default:
    /// 2025-11-25]; afterwards the version the daemon agreed is sent.
    #[arg(long = "protocol-version", value_name = "REV")]
    pub protocol_version: Option<String>,
    /// Deadline of each forwarded frame, in seconds.
    #[arg(long = "timeout", value_name = "SECONDS", default_value = "30.0", value_parser = deadline)]
    pub timeout: f64,
    /// Probe the daemon (server/discover, else initialize), count its
    /// tools, report on stderr and exit.
    #[arg(long = "check")]
    pub check: bool,
}

/// `--timeout`: a finite number of seconds above 0.
fn deadline(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(seconds),
        _ => Err(format!(
            "SECONDS must be a finite number greater than 0, not '{text}'"
        )),
    }
}

/// One line read from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// Nothing but whitespace.
    Blank,
    /// Not JSON.
    Malformed,
    /// A response (no method): dropped.
    Response,
    /// A message to forward; `id` is `Some` for a request (a reply is
    /// owed), `method` its method.
    Forward {
        /// The request id.
        id: Option<Value>,
        /// The method.
        method: Option<String>,
        /// The headers of a stateless-revision frame (see
        /// [`modern_headers`]); `None` for another frame.
        headers: Option<Vec<(&'static str, String)>>,
    },
}

/// Visible ASCII, spaces and tabs, with nothing to trim at either end:
/// what a header can carry as it is.
fn plain_header_value(value: &str) -> bool {
    value == value.trim() && value.chars().all(|c| c == '\t' || (' '..='~').contains(&c))
}

/// `value` as a header carries it: as it is when plain, else in the
/// `=?base64?...?=` form (also when it would read as that form itself).
pub fn encode_header_value(value: &str) -> String {
    use base64::Engine;
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    if plain_header_value(value) && !looks_encoded {
        return value.to_owned();
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    format!("=?base64?{encoded}?=")
}

/// The headers a stateless-revision frame is posted with (its revision,
/// method, and tool, prompt or resource name), or `None` for a frame that
/// names no revision in `params._meta`. A value no header can carry is
/// left out, and the daemon then says which header is missing.
pub fn modern_headers(message: &Value) -> Option<Vec<(&'static str, String)>> {
    let params = message.get("params")?.as_object()?;
    let version = params
        .get("_meta")?
        .as_object()?
        .get(META_PROTOCOL_VERSION)?;
    let method = message.get("method").and_then(Value::as_str);
    let mut headers = Vec::new();
    for (name, value) in [
        ("mcp-protocol-version", version.as_str()),
        ("mcp-method", method),
    ] {
        if let Some(value) = value.filter(|v| plain_header_value(v)) {
            headers.push((name, value.to_owned()));
        }
    }
    let source = match method {
        Some("tools/call" | "prompts/get") => Some("name"),
        Some("resources/read") => Some("uri"),
        _ => None,
    };
    if let Some(name) = source.and_then(|f| params.get(f)).and_then(Value::as_str) {
        headers.push(("mcp-name", encode_header_value(name)));
    }
    Some(headers)
}

/// What a line is.
pub fn classify(line: &str) -> Frame {
    if line.trim().is_empty() {
        return Frame::Blank;
    }
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return Frame::Malformed;
    };
    let Some(object) = message.as_object() else {
        return Frame::Forward {
            id: None,
            method: None,
            headers: None,
        };
    };
    if !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"))
    {
        return Frame::Response;
    }
    Frame::Forward {
        id: object.get("id").cloned(),
        method: object
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned),
        headers: modern_headers(&message),
    }
}

/// An error frame for request `id`.
pub fn error_frame(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The line to write for a daemon's answer (`status`, `body`) to request
/// `id`: a 200's body as it is; a JSON-RPC error in another status
/// passed on (with the request's id when it has none); anything else a
/// transport error naming the status and the daemon's `error` text.
pub fn reply_line(id: &Value, status: u16, body: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    if status == 200 && !body.is_empty() {
        return String::from_utf8_lossy(body).trim_end().to_owned();
    }
    if let Some(mut reply) = parsed.clone().filter(|p| p["error"]["code"].is_i64()) {
        if reply["id"].is_null() {
            reply["id"] = id.clone();
        }
        reply["jsonrpc"] = json!("2.0");
        return reply.to_string();
    }
    error_frame(id, TRANSPORT_ERROR, &http_error(status, parsed.as_ref()))
}

fn http_error(status: u16, body: Option<&Value>) -> String {
    match body.and_then(|b| b["error"].as_str()) {
        Some(error) => format!("MCP endpoint returned HTTP {status}: {error}"),
        None => format!("MCP endpoint returned HTTP {status}"),
    }
}

/// The revision an `initialize` reply agreed on.
pub fn negotiated_version(body: &[u8]) -> Option<String> {
    let reply: Value = serde_json::from_slice(body).ok()?;
    reply["result"]["protocolVersion"]
        .as_str()
        .map(str::to_owned)
}

/// The bridge's connection to the daemon.
struct Link {
    endpoint: String,
    token: Option<String>,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Link {
    fn open(args: &McpArgs, env: Env) -> Result<Link, ClientError> {
        let token = args.connect.token(env)?;
        let client = args
            .connect
            .client(env, Duration::from_secs_f64(args.timeout))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError(format!("cannot start the I/O runtime: {e}")))?;
        Ok(Link {
            endpoint: format!("{}/mcp", args.connect.url.trim_end_matches('/')),
            token,
            client,
            runtime,
        })
    }

    /// POSTs one frame with the `MCP-Protocol-Version` `version`, or
    /// with a stateless frame's own `modern` headers instead; the status
    /// and body, or why there is none.
    fn post(
        &self,
        frame: &str,
        version: &str,
        modern: Option<&[(&'static str, String)]>,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        let mut request = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(frame.to_owned());
        match modern {
            Some(headers) => {
                for (name, value) in headers {
                    request = request.header(*name, value);
                }
            }
            None => request = request.header("mcp-protocol-version", version),
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let endpoint = &self.endpoint;
        self.runtime.block_on(async {
            let response = request.send().await.map_err(|e| {
                ClientError(format!(
                    "cannot reach the cronstable MCP endpoint at {endpoint}: {}",
                    error_chain(&e)
                ))
            })?;
            let status = response.status().as_u16();
            let body = response.bytes().await.map_err(|e| {
                ClientError(format!(
                    "no complete reply from the cronstable MCP endpoint at {endpoint}: {}",
                    error_chain(&e)
                ))
            })?;
            Ok((status, body.to_vec()))
        })
    }
}

/// An error with its causes, innermost last (reqwest's own text alone
/// says little: "error sending request").
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Runs `cronstable mcp`: the exit code.
pub fn run(args: &McpArgs) -> u8 {
    let env = |name: &str| std::env::var(name).ok();
    let link = match Link::open(args, &env) {
        Ok(link) => link,
        Err(err) => {
            if args.check {
                eprintln!("mcp check: {err}");
            } else {
                eprintln!("{err}");
            }
            return 1;
        }
    };
    let version = args
        .protocol_version
        .clone()
        .unwrap_or_else(|| DEFAULT_PROTOCOL_VERSION.to_owned());
    if args.check {
        return check(&link, &version);
    }
    bridge(&link, version)
}

fn bridge(link: &Link, mut version: String) -> u8 {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut emit = |line: &str| {
        // A client that closed stdout has gone: nothing is left to do.
        let ok = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
        ok.is_ok()
    };
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let line = String::from_utf8_lossy(&line);
        let (id, method, modern) = match classify(&line) {
            Frame::Blank | Frame::Response => continue,
            Frame::Malformed => {
                if !emit(&error_frame(&Value::Null, PARSE_ERROR, "parse error")) {
                    break;
                }
                continue;
            }
            Frame::Forward {
                id,
                method,
                headers,
            } => (id, method, headers),
        };
        let answer = link.post(line.trim(), &version, modern.as_deref());
        let Some(id) = id else {
            // A notification: no reply is owed; a failure is only said.
            if let Err(err) = answer {
                eprintln!("{err}");
            }
            continue;
        };
        let out = match answer {
            Ok((status, body)) => {
                if modern.is_none() && method.as_deref() == Some("initialize") && status == 200 {
                    if let Some(agreed) = negotiated_version(&body) {
                        version = agreed;
                    }
                }
                reply_line(&id, status, &body)
            }
            Err(err) => error_frame(&id, TRANSPORT_ERROR, &err.0),
        };
        if !emit(&out) {
            break;
        }
    }
    0
}

/// The revisions a `server/discover` reply lists, when it lists the one
/// probed.
pub fn discovered_versions(body: &[u8]) -> Option<Vec<String>> {
    let reply: Value = serde_json::from_slice(body).ok()?;
    let versions: Vec<String> = reply["result"]["supportedVersions"]
        .as_array()?
        .iter()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .collect();
    versions
        .iter()
        .any(|v| v == MODERN_PROTOCOL_VERSION)
        .then_some(versions)
}

/// The client identity `--check` gives.
fn check_client() -> Value {
    json!({"name": "cronstable-mcp-check", "version": env!("CARGO_PKG_VERSION")})
}

/// Posts a built frame (with its stateless headers, if it has them).
fn post_value(link: &Link, frame: &Value, version: &str) -> Result<(u16, Vec<u8>), ClientError> {
    let modern = modern_headers(frame);
    link.post(&frame.to_string(), version, modern.as_deref())
}

fn check(link: &Link, version: &str) -> u8 {
    let meta = json!({
        META_PROTOCOL_VERSION: MODERN_PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": check_client(),
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let probe = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                       "params": {"_meta": meta}});
    let probed = match post_value(link, &probe, MODERN_PROTOCOL_VERSION) {
        Ok(answer) => answer,
        Err(err) => {
            eprintln!("mcp check: {err}");
            return 1;
        }
    };
    let discovered = Some(&probed)
        .filter(|(status, _)| *status == 200)
        .and_then(|(_, body)| discovered_versions(body));
    let (agreed, era, list) = if let Some(versions) = discovered {
        let era = format!("modern; the daemon serves {}", versions.join(", "));
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                          "params": {"_meta": meta}});
        (MODERN_PROTOCOL_VERSION.to_owned(), era, list)
    } else {
        // A daemon that does not answer the probe: the handshake.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": check_client(),
        }});
        let (status, body) = match post_value(link, &init, version) {
            Ok(answer) => answer,
            Err(err) => {
                eprintln!("mcp check: {err}");
                return 1;
            }
        };
        let Some(agreed) = negotiated_version(&body).filter(|_| status == 200) else {
            let parsed: Option<Value> = serde_json::from_slice(&body).ok();
            let why = match parsed.as_ref().and_then(|p| p["error"]["message"].as_str()) {
                Some(message) => message.to_owned(),
                None => http_error(status, parsed.as_ref()),
            };
            eprintln!("mcp check: initialize failed ({why})");
            return 1;
        };
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        (agreed, "legacy".to_owned(), list)
    };
    let tools = post_value(link, &list, &agreed)
        .ok()
        .and_then(|(_, body)| serde_json::from_slice::<Value>(&body).ok())
        .and_then(|reply| reply["result"]["tools"].as_array().map(Vec::len))
        .unwrap_or(0);
    eprintln!(
        "mcp check: ok - protocol {agreed} ({era}), {tools} tool(s) at {}",
        link.endpoint
    );
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_told_apart() {
        assert_eq!(classify("  "), Frame::Blank);
        assert_eq!(classify("{nope"), Frame::Malformed);
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Frame::Response
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            Frame::Forward {
                id: Some(json!(7)),
                method: Some("tools/list".into()),
                headers: None,
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Frame::Forward {
                id: None,
                method: Some("notifications/initialized".into()),
                headers: None,
            }
        );
        // Not an object: forwarded, and the daemon answers it.
        assert_eq!(
            classify("[1]"),
            Frame::Forward {
                id: None,
                method: None,
                headers: None,
            }
        );
    }

    #[test]
    fn stateless_frames_carry_their_headers() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "cron_get_version",
            "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        assert_eq!(
            modern_headers(&call),
            Some(vec![
                ("mcp-protocol-version", "2026-07-28".to_owned()),
                ("mcp-method", "tools/call".to_owned()),
                ("mcp-name", "cron_get_version".to_owned()),
            ])
        );
        // A name that is not plain ASCII travels Base64-encoded.
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {
            "uri": "cronstable://jobs/café",
            "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let headers = modern_headers(&read).expect("modern");
        assert_eq!(
            headers[2],
            (
                "mcp-name",
                "=?base64?Y3JvbnN0YWJsZTovL2pvYnMvY2Fmw6k=?=".to_owned()
            )
        );
        // A value no header can carry is left out.
        let odd = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28\nx"}}});
        assert_eq!(
            modern_headers(&odd),
            Some(vec![("mcp-method", "tools/list".to_owned())])
        );
        // Frames that name no revision are legacy.
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                            "params": {"_meta": {"progressToken": 1}}});
        assert_eq!(modern_headers(&legacy), None);
        assert_eq!(
            encode_header_value("=?base64?x?="),
            "=?base64?PT9iYXNlNjQ/eD89?="
        );
        assert_eq!(encode_header_value(" pad"), "=?base64?IHBhZA==?=");
    }

    #[test]
    fn discovery_counts_only_when_it_lists_the_probed_revision() {
        let ok = br#"{"result":{"supportedVersions":["2026-07-28","2025-11-25"]}}"#;
        assert_eq!(
            discovered_versions(ok),
            Some(vec!["2026-07-28".to_owned(), "2025-11-25".to_owned()])
        );
        let other = br#"{"result":{"supportedVersions":["2025-11-25"]}}"#;
        assert_eq!(discovered_versions(other), None);
        let unknown = br#"{"error":{"code":-32601,"message":"unknown method"}}"#;
        assert_eq!(discovered_versions(unknown), None);
    }

    #[test]
    fn replies_pass_through_or_become_transport_errors() {
        let id = json!(3);
        let ok = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        assert_eq!(
            reply_line(&id, 200, ok),
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
        );
        // A JSON-RPC error in a 4xx is passed on, with the request's id.
        let rpc = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}"#;
        let passed: Value = serde_json::from_str(&reply_line(&id, 400, rpc)).unwrap();
        assert_eq!(passed["id"], json!(3));
        assert_eq!(passed["error"]["code"], json!(-32600));
        // The transport's own refusals name the status and the reason.
        let refused: Value =
            serde_json::from_str(&reply_line(&id, 403, br#"{"error":"Origin not allowed"}"#))
                .unwrap();
        assert_eq!(
            refused,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -31000,
                "message": "MCP endpoint returned HTTP 403: Origin not allowed"}})
        );
        let bare: Value = serde_json::from_str(&reply_line(&id, 502, b"")).unwrap();
        assert_eq!(
            bare["error"]["message"],
            json!("MCP endpoint returned HTTP 502")
        );
    }

    #[test]
    fn the_agreed_version_is_read_from_initialize() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#;
        assert_eq!(negotiated_version(body), Some("2025-06-18".into()));
        assert_eq!(negotiated_version(b"{}"), None);
    }

    #[test]
    fn deadlines_are_positive_and_finite() {
        assert_eq!(deadline("2.5"), Ok(2.5));
        for bad in ["0", "-1", "nan", "inf", "soon"] {
            assert!(deadline(bad).is_err(), "{bad}");
        }
    }
}
