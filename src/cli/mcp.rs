//! `cronstable mcp`: the stdio bridge desktop MCP clients launch. It reads
//! newline-delimited JSON-RPC on stdin, POSTs each frame to a running
//! daemon's `/mcp`, and writes each reply as one line on stdout (stdout
//! carries frames only; messages go to stderr). Notifications get no
//! reply, and a response from the client is dropped (the daemon sends no
//! requests). `--check` makes the handshake (`initialize`, `tools/list`)
//! and reports, for wiring a client up.

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
    /// Make the handshake (initialize, tools/list), report on stderr and
    /// exit.
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
    },
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

    /// POSTs one frame; the status and body, or why there is none.
    fn post(&self, frame: &str, version: &str) -> Result<(u16, Vec<u8>), ClientError> {
        let mut request = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", version)
            .body(frame.to_owned());
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
        let (id, method) = match classify(&line) {
            Frame::Blank | Frame::Response => continue,
            Frame::Malformed => {
                if !emit(&error_frame(&Value::Null, PARSE_ERROR, "parse error")) {
                    break;
                }
                continue;
            }
            Frame::Forward { id, method } => (id, method),
        };
        let answer = link.post(line.trim(), &version);
        let Some(id) = id else {
            // A notification: no reply is owed; a failure is only said.
            if let Err(err) = answer {
                eprintln!("{err}");
            }
            continue;
        };
        let out = match answer {
            Ok((status, body)) => {
                if method.as_deref() == Some("initialize") && status == 200 {
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

fn check(link: &Link, version: &str) -> u8 {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "cronstable-mcp-check", "version": env!("CARGO_PKG_VERSION")},
    }});
    let (status, body) = match link.post(&init.to_string(), version) {
        Ok(answer) => answer,
        Err(err) => {
            eprintln!("mcp check: {err}");
            return 1;
        }
    };
    let agreed = negotiated_version(&body).filter(|_| status == 200);
    let Some(agreed) = agreed else {
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        let why = match parsed.as_ref().and_then(|p| p["error"]["message"].as_str()) {
            Some(message) => message.to_owned(),
            None => http_error(status, parsed.as_ref()),
        };
        eprintln!("mcp check: initialize failed ({why})");
        return 1;
    };
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let tools = link
        .post(&list.to_string(), &agreed)
        .ok()
        .and_then(|(_, body)| serde_json::from_slice::<Value>(&body).ok())
        .and_then(|reply| reply["result"]["tools"].as_array().map(Vec::len))
        .unwrap_or(0);
    eprintln!(
        "mcp check: ok - protocol {agreed}, {tools} tool(s) at {}",
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
                method: Some("tools/list".into())
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Frame::Forward {
                id: None,
                method: Some("notifications/initialized".into())
            }
        );
        // Not an object: forwarded, and the daemon answers it.
        assert_eq!(
            classify("[1]"),
            Frame::Forward {
                id: None,
                method: None
            }
        );
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
