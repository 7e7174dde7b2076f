//! The MCP server of the built daemon (`POST /mcp`) and its stdio bridge
//! (`cronstable mcp`), black-box: the security model (Origin allow-list,
//! body cap, tokens and scopes, readOnly), the transport's answers, the
//! tools against real jobs, and the bridge's frames and `--check`. The
//! official SDK drives both in tests/mcp_sdk.rs.

mod support;

use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http::{request, Reply};

const JOBS: &str = r#"  - name: hello
    command: "echo hello from the job"
    captureStdout: true
    schedule: "0 0 1 1 *"
  - name: napper
    command: "sleep 30"
    schedule: "0 0 1 1 *"
    killTimeout: 1
"#;

const TOKENS: &str =
    "  authTokens:\n    - {value: admin-token, label: ops, scopes: [control]}\n    \
                      - {value: view-token, label: watcher, scopes: [view]}\n  \
                      anonymousScopes: [view]\n";

/// A daemon on a loopback port with `JOBS`, `web_extra` in its `web`
/// section and an enabled `mcp` section with `mcp` in it.
fn mcp_daemon(mcp: &str, web_extra: &str) -> (Daemon, u16) {
    Daemon::start_with_web(web_extra, &format!("{JOBS}mcp:\n  enabled: true\n{mcp}"))
}

fn rpc(port: u16, token: Option<&str>, message: Value) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(bearer) = &bearer {
        headers.push(("Authorization", bearer.as_str()));
    }
    request(port, "POST", "/mcp", &headers, &message.to_string())
}

fn call(port: u16, token: Option<&str>, tool: &str, args: Value) -> Value {
    let reply = rpc(
        port,
        token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": tool, "arguments": args}}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["result"].clone()
}

fn tool_names(port: u16, token: Option<&str>) -> Vec<String> {
    let reply = rpc(
        port,
        token,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

#[test]
fn the_security_model() {
    let mcp = "  readOnly: false\n  toolsets: [observe, act]\n  allowedOrigins: ['https://agent.example']\n  maxBodyBytes: 4096\n";
    let (_d, port) = mcp_daemon(mcp, TOKENS);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let send = |headers: &[(&str, &str)], body: &str| request(port, "POST", "/mcp", headers, body);
    let admin = [("Authorization", "Bearer admin-token")];

    // No token, a wrong one: 401. No token with the anonymous grant: 403.
    let none = send(&[], &ping);
    assert_eq!(none.status, 403, "{}", none.body);
    assert_eq!(
        none.json()["error"],
        "MCP access requires a bearer token with the 'view' permission"
    );
    assert_eq!(send(&[("Authorization", "Bearer nope")], &ping).status, 401);
    assert_eq!(send(&admin, &ping).status, 200);

    // A present Origin not on the list: 403 (DNS rebinding); an
    // allow-listed one passes and gets its CORS headers.
    let evil = send(&[admin[0], ("Origin", "https://evil.example")], &ping);
    assert_eq!(evil.status, 403, "{}", evil.body);
    assert_eq!(evil.json()["error"], "Origin not allowed");
    let good = send(&[admin[0], ("Origin", "https://agent.example")], &ping);
    assert_eq!(good.status, 200, "{}", good.body);
    assert_eq!(
        good.header("access-control-allow-origin"),
        Some("https://agent.example")
    );
    // Its preflight needs no token.
    let preflight = request(
        port,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin", "https://agent.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        "",
    );
    assert_eq!(preflight.status, 204, "{}", preflight.body);
    let refused = request(
        port,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        "",
    );
    assert_eq!(refused.status, 403);

    // A body over maxBodyBytes: 413 (the declared length is checked
    // before anything is read).
    let padding = "x".repeat(5000);
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": padding}});
    let over = send(&admin, &big.to_string());
    assert_eq!(over.status, 413, "{}", over.body);
    assert_eq!(over.json()["error"], "request body too large");

    // The transport's other refusals.
    assert_eq!(send(&admin, "").status, 400);
    assert_eq!(send(&admin, "{not json").json()["error"], "malformed JSON");
    assert_eq!(
        send(&admin, &format!("[{ping}]")).json()["error"],
        "batching unsupported"
    );
    let html = send(&[admin[0], ("Accept", "text/html")], &ping);
    assert_eq!(html.status, 406);
    let notified = send(
        &admin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    );
    assert_eq!(notified.status, 202);
    assert_eq!(notified.body, "");
    let get = request(port, "GET", "/mcp", &admin, "");
    assert_eq!(get.status, 405);
    assert_eq!(get.header("allow"), Some("POST, OPTIONS"));

    // Scopes: the view token sees no action and cannot call one.
    let admin_tools = tool_names(port, Some("admin-token"));
    assert!(admin_tools.contains(&"cron_run_job".to_owned()));
    let viewer_tools = tool_names(port, Some("view-token"));
    assert!(viewer_tools.contains(&"cron_list_jobs".to_owned()));
    assert!(!viewer_tools
        .iter()
        .any(|n| n == "cron_run_job" || n == "cron_pause_job"));
    let denied = call(
        port,
        Some("view-token"),
        "cron_run_job",
        json!({"name": "hello", "confirm": true}),
    );
    assert_eq!(denied["isError"], json!(true));
    assert!(denied["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("'control' scope"));
}

#[test]
fn read_only_is_the_default_and_hides_every_action() {
    let (_d, port) = mcp_daemon("  toolsets: [observe, act]\n", "");
    let tools = tool_names(port, None);
    assert!(tools.contains(&"cron_list_jobs".to_owned()));
    for action in [
        "cron_run_job",
        "cron_cancel_job",
        "cron_pause_job",
        "cron_resume_job",
    ] {
        assert!(!tools.contains(&action.to_owned()), "{action} in {tools:?}");
    }
    let hidden = rpc(
        port,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "cron_run_job", "arguments": {"name": "hello", "confirm": true}}}),
    );
    assert_eq!(hidden.json()["error"]["code"], json!(-32602));
    // The loopback listener without a token serves every read.
    let initialized = rpc(
        port,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(
        initialized.header("mcp-protocol-version"),
        Some("2025-06-18")
    );
    assert_eq!(
        initialized.json()["result"]["protocolVersion"],
        "2025-06-18"
    );
}

#[test]
fn without_the_section_the_route_says_it_is_off() {
    let (_d, port) = Daemon::start_with_web("", JOBS);
    let reply = rpc(
        port,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    );
    assert_eq!(reply.status, 404);
    assert!(reply.json()["error"]
        .as_str()
        .unwrap()
        .contains("mcp.enabled"));
}

fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `cron_query_metrics` against the text of `GET /metrics` read line by
/// line (nothing changes in between: no job runs or is due).
fn metrics_query_reads_the_exposition(port: u16, token: Option<&str>) {
    let bearer = format!("Bearer {}", token.unwrap_or_default());
    let text = request(port, "GET", "/metrics", &[("Authorization", &bearer)], "").body;
    assert!(
        text.contains("cronstable_job_runs_total{job_name=\"hello\""),
        "{text}"
    );
    // (A limit is clamped to 1..=maxRows, 200 here.)
    for (needle, limit) in [
        (None, 200),
        (Some("RUNS_total"), 3),
        (Some("duration_seconds"), 200),
        (Some("_sum"), 1),
        (Some("job_info"), 1),
        (Some("cronstable_info"), 5),
        (Some("no such metric"), 5),
    ] {
        let wanted = |name: &str| needle.is_none_or(|n| name.contains(&n.to_lowercase()));
        let (expected, total) =
            cronstable::metrics::prometheus::text_samples(&text, &wanted, limit);
        let mut args = json!({"limit": limit});
        if let Some(needle) = needle {
            args["match"] = json!(needle);
        }
        let got = call(port, token, "cron_query_metrics", args)["structuredContent"].clone();
        assert_eq!(got["totalMatched"], json!(total), "{needle:?}");
        let expected: Vec<Value> = expected
            .iter()
            .map(|s| json!({"name": s.name, "labels": s.labels, "value": s.value}))
            .collect();
        assert_eq!(got["samples"], json!(expected), "{needle:?} {limit}");
    }
}

#[test]
fn the_tools_act_on_real_jobs() {
    let mcp = "  readOnly: false\n  toolsets: [observe, act]\n";
    let (_d, port) = mcp_daemon(mcp, TOKENS);
    let admin = Some("admin-token");
    let jobs = call(port, admin, "cron_list_jobs", json!({"filter": "hell"}));
    assert_eq!(jobs["structuredContent"]["jobs"][0]["name"], "hello");
    assert_eq!(jobs["structuredContent"]["page"]["total"], json!(1));

    // Run it: the run is recorded, its output is in the tail.
    let started = call(
        port,
        admin,
        "cron_run_job",
        json!({"name": "hello", "confirm": true}),
    );
    assert_eq!(started["structuredContent"], json!({"started": "hello"}));
    let run = wait_for("the manual run", || {
        let runs = call(port, admin, "cron_list_runs", json!({"name": "hello"}));
        runs["structuredContent"]["runs"].get(0).cloned()
    });
    assert_eq!(run["trigger"], "manual");
    assert_eq!(run["outcome"], "success");
    let tail = call(port, admin, "cron_tail_job_logs", json!({"name": "hello"}));
    assert_eq!(
        tail["structuredContent"]["lines"],
        json!([{"stream": "stdout", "line": "hello from the job"}])
    );
    let next = call(
        port,
        admin,
        "cron_tail_job_logs",
        json!({"name": "hello", "cursor": tail["structuredContent"]["cursor"]}),
    );
    assert_eq!(next["structuredContent"]["lines"], json!([]));

    // The metrics query answers what reading GET /metrics answers.
    metrics_query_reads_the_exposition(port, admin);

    // Pause through the mcp channel, as the token's label; then resume.
    let paused = call(
        port,
        admin,
        "cron_pause_job",
        json!({"name": "hello", "durationSeconds": 600, "note": "agent", "confirm": true}),
    );
    assert_eq!(paused["structuredContent"]["paused"], "hello");
    let detail = call(port, admin, "cron_get_job", json!({"name": "hello"}));
    let pause = &detail["structuredContent"]["paused"];
    assert_eq!(
        (pause["channel"].clone(), pause["by"].clone()),
        (json!("mcp"), json!("ops"))
    );
    call(
        port,
        admin,
        "cron_resume_job",
        json!({"name": "hello", "confirm": true}),
    );
    let detail = call(port, admin, "cron_get_job", json!({"name": "hello"}));
    assert_eq!(detail["structuredContent"]["paused"], Value::Null);

    // Cancel a long run.
    call(
        port,
        admin,
        "cron_run_job",
        json!({"name": "napper", "confirm": true}),
    );
    wait_for("napper to run", || {
        let job = call(port, admin, "cron_get_job", json!({"name": "napper"}));
        (job["structuredContent"]["running"] == json!(true)).then_some(())
    });
    let cancelled = call(
        port,
        admin,
        "cron_cancel_job",
        json!({"name": "napper", "confirm": true}),
    );
    assert_eq!(
        cancelled["structuredContent"],
        json!({"cancelled": "napper", "instances": 1})
    );

    // Why-no-run, field by field.
    let why = call(
        port,
        admin,
        "cron_why_no_run",
        json!({"name": "hello", "at": "2026-03-04T10:03:00"}),
    );
    assert_eq!(why["structuredContent"]["matches"], json!(false));
    assert!(why["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("minute 3 is not in 0"));
    let unknown = call(
        port,
        admin,
        "cron_why_no_run",
        json!({"name": "zeta", "at": "2026-03-04T10:03:00"}),
    );
    assert_eq!(unknown["isError"], json!(true));

    // A resource and the version tool agree with the REST route.
    let version = call(port, admin, "cron_get_version", json!({}));
    let rest = request(
        port,
        "GET",
        "/job-set-id",
        &[
            ("Authorization", "Bearer admin-token"),
            ("Accept", "application/json"),
        ],
        "",
    );
    assert_eq!(
        version["structuredContent"]["job_set_id"],
        rest.json()["job_set_id"]
    );
    let read = rpc(
        port,
        admin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
               "params": {"uri": "cronstable://jobs/hello"}}),
    );
    let text = read.json()["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["name"],
        "hello"
    );

    // The schedule analytics answer what their REST routes answer.
    let rest = |path: &str| {
        request(
            port,
            "GET",
            path,
            &[("Authorization", "Bearer admin-token")],
            "",
        )
        .json()
    };
    let load = call(port, admin, "cron_schedule_pressure", json!({"hours": 6}));
    let direct = rest("/schedule/pressure?hours=6");
    assert_eq!(
        load["structuredContent"]["total_fires"],
        direct["total_fires"]
    );
    assert_eq!(load["structuredContent"]["hours"], json!(6));
    assert!(load["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("scheduled runs from"));
    let zone = call(
        port,
        admin,
        "cron_schedule_pressure",
        json!({"tz": "Mars/Base"}),
    );
    assert_eq!(zone["isError"], json!(true), "{zone}");
    let dups = call(port, admin, "cron_schedule_duplicates", json!({}));
    assert_eq!(
        dups["structuredContent"]["groups"],
        rest("/schedule/duplicates")["groups"]
    );
    let slot = call(port, admin, "cron_suggest_slot", json!({"period": "daily"}));
    assert_eq!(slot["structuredContent"]["period"], "daily", "{slot}");
    assert!(
        slot["structuredContent"]["expression"].is_string(),
        "{slot}"
    );
}

const MODERN: &str = "2026-07-28";

/// A request of the stateless revision `version`: `_meta` in the body,
/// and the headers that mirror it (`headers` adds or replaces some).
fn modern(
    port: u16,
    version: &str,
    method: &str,
    params: Value,
    name: Option<&str>,
    headers: &[(&str, &str)],
) -> Reply {
    let mut params = params.as_object().cloned().unwrap_or_default();
    params.insert(
        "_meta".into(),
        json!({"io.modelcontextprotocol/protocolVersion": version,
               "io.modelcontextprotocol/clientCapabilities": {}}),
    );
    let body = json!({"jsonrpc": "2.0", "id": 11, "method": method, "params": params});
    let mut sent: Vec<(&str, &str)> = vec![
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer view-token"),
        ("MCP-Protocol-Version", version),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        sent.push(("Mcp-Name", name));
    }
    for (header, value) in headers {
        sent.retain(|(h, _)| !h.eq_ignore_ascii_case(header));
        if !value.is_empty() {
            sent.push((header, value));
        }
    }
    request(port, "POST", "/mcp", &sent, &body.to_string())
}

#[test]
fn the_stateless_revision_is_served_beside_the_handshake() {
    let (_d, port) = mcp_daemon("", TOKENS);
    // server/discover: the revisions, capabilities and identity, with a
    // cache lifetime.
    let found = modern(port, MODERN, "server/discover", json!({}), None, &[]);
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(found.header("mcp-protocol-version"), Some(MODERN));
    let result = &found.json()["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], json!(60000));
    assert_eq!(result["cacheScope"], "private");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "cronstable"
    );

    // A tool call, with no initialize before it.
    let called = modern(
        port,
        MODERN,
        "tools/call",
        json!({"name": "cron_get_version", "arguments": {}}),
        Some("cron_get_version"),
        &[],
    );
    assert_eq!(called.status, 200, "{}", called.body);
    let result = &called.json()["result"];
    assert_eq!(result["structuredContent"]["jobs"], json!(2), "{result}");
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("ttlMs").is_none(), "{result}");
    let listed = modern(port, MODERN, "tools/list", json!({}), None, &[]);
    assert_eq!(listed.json()["result"]["ttlMs"], json!(60000));
    let tools = listed.json()["result"]["tools"].clone();
    assert!(
        tools
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "cron_list_jobs"),
        "{tools}"
    );

    // A revision the server does not speak: -32022 with what it does.
    let later = modern(port, "2099-01-01", "tools/list", json!({}), None, &[]);
    assert_eq!(later.status, 400, "{}", later.body);
    let error = &later.json()["error"];
    assert_eq!(error["code"], json!(-32022), "{error}");
    assert_eq!(error["data"]["requested"], "2099-01-01");
    assert_eq!(error["data"]["supported"][0], MODERN);

    // The handshake and ping are gone in this revision.
    for method in ["initialize", "ping"] {
        let refused = modern(port, MODERN, method, json!({}), None, &[]);
        assert_eq!(refused.status, 404, "{method}: {}", refused.body);
        assert_eq!(refused.json()["error"]["code"], json!(-32601));
    }

    // The headers must mirror the body: -32020, answered 400.
    for headers in [
        vec![("Mcp-Name", "cron_list_jobs")],
        vec![("Mcp-Name", "")],
        vec![("Mcp-Method", "tools/list")],
        vec![("MCP-Protocol-Version", "")],
    ] {
        let bad = modern(
            port,
            MODERN,
            "tools/call",
            json!({"name": "cron_get_version", "arguments": {}}),
            Some("cron_get_version"),
            &headers,
        );
        assert_eq!(bad.status, 400, "{headers:?}: {}", bad.body);
        assert_eq!(bad.json()["error"]["code"], json!(-32020), "{headers:?}");
        assert_eq!(bad.json()["id"], json!(11));
    }
    // A name may travel Base64-encoded.
    let encoded = modern(
        port,
        MODERN,
        "tools/call",
        json!({"name": "cron_get_version", "arguments": {}}),
        Some("=?base64?Y3Jvbl9nZXRfdmVyc2lvbg==?="),
        &[],
    );
    assert_eq!(encoded.status, 200, "{}", encoded.body);
    // A modern header on a body without _meta: the meta is missing.
    let bare = rpc_with(
        port,
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/list"),
        ],
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    );
    assert_eq!(bare.status, 400, "{}", bare.body);
    assert_eq!(bare.json()["error"]["code"], json!(-32602));

    // The handshake era is untouched: server/discover without _meta is
    // an unknown method (answered 200, as every legacy error is), and
    // initialize still agrees a revision.
    let legacy = rpc(
        port,
        Some("view-token"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}),
    );
    assert_eq!(legacy.status, 200);
    assert_eq!(legacy.json()["error"]["code"], json!(-32601));
    let init = rpc(
        port,
        Some("view-token"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
    );
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-11-25");
    assert!(init.json()["result"].get("resultType").is_none());

    // Through the bridge: a stateless frame gets its headers, and a
    // -32022 reaches the client as the daemon sent it.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let mut later_meta = meta.clone();
    later_meta["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let frames = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "cron_get_version", "arguments": {}, "_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover",
               "params": {"_meta": later_meta}}),
    ]
    .map(|f| f.to_string());
    let out = bridge(port, &[], "view-token", &(frames.join("\n") + "\n"));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a frame"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["result"]["structuredContent"]["jobs"], json!(2));
    assert_eq!(lines[0]["result"]["resultType"], "complete");
    assert_eq!(lines[1]["id"], json!(2));
    assert_eq!(lines[1]["error"]["code"], json!(-32022));
}

fn rpc_with(port: u16, extra: &[(&str, &str)], message: Value) -> Reply {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Authorization", "Bearer view-token"),
    ];
    headers.extend_from_slice(extra);
    request(port, "POST", "/mcp", &headers, &message.to_string())
}

fn bridge(port: u16, args: &[&str], token: &str, stdin: &str) -> std::process::Output {
    let url = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cronstable"))
        .args(["mcp", "--url", &url])
        .args(args)
        .env("CRONSTABLE_WEB_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the bridge");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write frames");
    child.wait_with_output().expect("the bridge ends")
}

#[test]
fn the_stdio_bridge_forwards_frames() {
    let (_d, port) = mcp_daemon("", TOKENS);
    let frames = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "this is not json".to_owned(),
        json!({"jsonrpc": "2.0", "id": 9, "result": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": "two", "method": "tools/call",
               "params": {"name": "cron_get_version", "arguments": {}}})
        .to_string(),
    ];
    let out = bridge(port, &[], "view-token", &(frames.join("\n") + "\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is a frame"))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(lines[1]["error"]["code"], json!(-32700));
    assert_eq!(lines[2]["id"], "two");
    assert_eq!(lines[2]["result"]["structuredContent"]["jobs"], json!(2));

    // A refused token: each request gets an error frame naming the status.
    let out = bridge(port, &[], "wrong", &(frames[4].clone() + "\n"));
    let line: Value = serde_json::from_slice(&out.stdout).expect("a frame");
    assert_eq!(line["id"], "two");
    assert_eq!(line["error"]["code"], json!(-31000));
    assert!(line["error"]["message"]
        .as_str()
        .unwrap()
        .contains("HTTP 401"));

    // --check.
    let ok = bridge(port, &["--check"], "view-token", "");
    assert!(ok.status.success());
    let said = String::from_utf8_lossy(&ok.stderr).into_owned();
    let tools = tool_names(port, Some("view-token")).len();
    assert_eq!(
        said.trim(),
        format!(
            "mcp check: ok - protocol 2026-07-28 (modern; the daemon serves 2026-07-28, \
             2025-11-25, 2025-06-18, 2025-03-26), {tools} tool(s) at http://127.0.0.1:{port}/mcp"
        )
    );
    let bad = bridge(port, &["--check"], "wrong", "");
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("mcp check: initialize failed"));
}
