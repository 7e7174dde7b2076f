//! The protocol and tool layers over a fake backend: what each method
//! answers, what each setting and grant hides, and the tool results'
//! shapes. The transport is covered against the real daemon
//! (tests/mcp.rs, tests/mcp_sdk.rs).

use super::tools::tail_payload;
use super::*;
use crate::config::model::sections::McpToolset;
use serde_json::json;
use std::sync::Mutex;

/// A backend with two jobs, `alpha` (enabled, running) and `beta`
/// (disabled), that records the actions it is asked for.
#[derive(Default)]
struct Fake {
    acted: Mutex<Vec<String>>,
}

fn unknown(name: &str) -> Refusal {
    Refusal::new(404, format!("job '{name}' not found"))
}

const JOBS: [(&str, bool, bool); 2] = [("alpha", true, true), ("beta", false, false)];

impl Backend for Fake {
    async fn status_rows(&self) -> Answer {
        Ok(json!([{"job": "alpha", "status": "running", "pid": [1]},
                  {"job": "beta", "status": "disabled"}]))
    }
    async fn jobs(&self, query: &JobQuery) -> Answer<(usize, Vec<Value>)> {
        let chosen: Vec<Value> = JOBS
            .iter()
            .filter(|(n, e, r)| query.selects(n, *e, *r))
            .map(|(n, e, r)| json!({"name": n, "enabled": e, "running": r, "paused": null}))
            .collect();
        let page = chosen
            .iter()
            .skip(query.offset)
            .take(query.limit)
            .cloned()
            .collect();
        Ok((chosen.len(), page))
    }
    async fn job_names(&self) -> Answer<Vec<String>> {
        Ok(JOBS.iter().map(|(n, _, _)| (*n).to_owned()).collect())
    }
    async fn job(&self, name: &str) -> Answer {
        match name {
            "alpha" | "beta" => Ok(json!({"name": name})),
            _ => Err(unknown(name)),
        }
    }
    async fn runs(&self, name: &str) -> Answer {
        self.job(name).await?;
        let runs: Vec<Value> = (0..5).map(|i| json!({"n": i})).collect();
        Ok(json!({"job": name, "runs": runs, "stats": {}}))
    }
    async fn trends(&self, name: &str) -> Answer {
        self.job(name).await
    }
    async fn resources(&self, name: &str, runs: usize) -> Answer {
        self.job(name).await?;
        Ok(json!({"name": name, "asked": runs}))
    }
    async fn cluster(&self) -> Answer {
        Ok(json!({"enabled": false, "peers": []}))
    }
    async fn fleet(&self) -> Answer {
        Ok(json!({"enabled": false, "nodes": []}))
    }
    async fn node(&self, history: bool) -> Answer {
        Ok(json!({"node_name": "n1", "history": history}))
    }
    async fn metric_samples(
        &self,
        wanted: &(dyn Fn(&str) -> bool + Sync),
        limit: usize,
    ) -> Answer<(Vec<crate::metrics::prometheus::Sample>, usize)> {
        let text = "# HELP a x\na_total 1\nb{x=\"1\"} 2\n";
        Ok(crate::metrics::prometheus::text_samples(
            text, wanted, limit,
        ))
    }
    async fn job_set(&self) -> Answer<(String, usize)> {
        Ok(("v1:abc".into(), 2))
    }
    async fn log_lines(&self, name: &str) -> Answer<(bool, Vec<(String, String)>)> {
        self.job(name).await?;
        Ok((true, vec![("stdout".into(), "hi".into())]))
    }
    async fn why(&self, name: &str, _at: &str) -> Answer {
        self.job(name).await?;
        Ok(
            json!({"job": name, "enabled": true, "reboot": false, "matches": true,
                  "at": "x", "at_in_zone": "2026-01-01T00:00:00+00:00", "notes": [],
                  "checks": []}),
        )
    }
    async fn pressure(&self, hours: i64, tz: Option<&str>) -> Answer {
        if tz == Some("Mars/Base") {
            return Err(Refusal {
                status: 400,
                message: "unknown timezone 'Mars/Base'".into(),
            });
        }
        Ok(
            json!({"hours": hours.clamp(1, 168), "jobs": 2, "total_fires": 48,
                  "busiest_minute": {"minute": 5, "jobs": 2}, "empty_minutes": [0, 1]}),
        )
    }
    async fn duplicates(&self) -> Answer {
        Ok(json!({"jobs": 2, "groups": [{"count": 2, "expression": "*/5 * * * *"}]}))
    }
    async fn suggest(&self, period: &str, _tz: Option<&str>) -> Answer {
        Ok(json!({"period": period, "expression": "17 * * * *", "fires_in_window": 0}))
    }
    async fn pools(&self) -> Answer {
        Ok(json!([]))
    }
    async fn state_overview(&self) -> Answer {
        Ok(json!({"enabled": false}))
    }
    async fn state_documents(&self, ns: &str) -> Answer {
        Ok(json!({"namespace": ns, "documents": []}))
    }
    async fn state_records(&self, stream: &str, limit: usize) -> Answer {
        Ok(json!({"stream": stream, "limit": limit}))
    }
    async fn start(&self, name: &str) -> Answer {
        self.job(name).await?;
        self.acted.lock().unwrap().push(format!("start {name}"));
        Ok(json!({"started": name}))
    }
    async fn cancel(&self, name: &str) -> Answer {
        self.acted.lock().unwrap().push(format!("cancel {name}"));
        Ok(json!({"cancelled": name, "instances": 1}))
    }
    async fn pause(&self, name: &str, seconds: Option<i64>, note: &str, by: &str) -> Answer {
        self.acted
            .lock()
            .unwrap()
            .push(format!("pause {name} {seconds:?} {note} {by}"));
        Ok(json!({"paused": {"until": "2030-01-01T00:00:00+00:00"}}))
    }
    async fn resume(&self, name: &str, by: &str) -> Answer {
        self.acted
            .lock()
            .unwrap()
            .push(format!("resume {name} {by}"));
        Ok(json!({"paused": null}))
    }
    async fn pool_cancel(&self, pool: &str, id: &str) -> Answer {
        Ok(json!({"id": id, "state": "cancelled", "pool": pool}))
    }
}

fn server(yaml: &str) -> Server {
    let config: crate::config::model::McpConfig =
        serde_yaml::from_str(&format!("enabled: true\n{yaml}")).expect("an mcp section");
    Server::new(crate::config::mcp::McpSettings::of(Some(&config)).expect("enabled"))
}

fn writable() -> Server {
    server("readOnly: false\ntoolsets: [observe, act, state]\nmaxRows: 3")
}

fn viewer() -> Caller {
    Caller {
        label: Some("viewer".into()),
        grant: Grant {
            view: true,
            token: Some(1),
            ..Grant::default()
        },
    }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn ask(server: &Server, caller: &Caller, method: &str, params: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    run(server.handle_message(&message, caller, &Fake::default())).expect("a reply")
}

fn call(server: &Server, caller: &Caller, tool: &str, args: Value) -> Value {
    ask(
        server,
        caller,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    )["result"]
        .clone()
}

fn tool_names(reply: &Value) -> Vec<String> {
    reply["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn initialize_negotiates_the_revision_and_advertises_what_is_served() {
    let s = server("");
    let open = Caller::open();
    let reply = ask(
        &s,
        &open,
        "initialize",
        json!({"protocolVersion": "2025-06-18"}),
    );
    assert_eq!(reply["id"], json!(7));
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(reply["result"]["serverInfo"]["name"], "cronstable");
    let caps = &reply["result"]["capabilities"];
    assert!(caps["tools"].is_object() && caps["resources"].is_object());
    assert!(caps["prompts"].is_object() && caps["completions"].is_object());
    // An unknown revision is answered with the newest.
    let newer = ask(
        &s,
        &open,
        "initialize",
        json!({"protocolVersion": "2099-01-01"}),
    );
    assert_eq!(newer["result"]["protocolVersion"], PROTOCOL_VERSION);
    // Without resources and prompts, neither they nor completions show.
    let bare = server("resources: false\nprompts: false\ninstructions: use it well");
    let reply = ask(&bare, &open, "initialize", json!({}));
    assert_eq!(
        reply["result"]["capabilities"],
        json!({"tools": {"listChanged": false}})
    );
    assert_eq!(reply["result"]["instructions"], "use it well");
    assert_eq!(
        ask(&bare, &open, "resources/list", json!({}))["error"]["code"],
        json!(-32601)
    );
}

#[test]
fn framing_errors_and_notifications() {
    let s = server("");
    let open = Caller::open();
    let fake = Fake::default();
    let reply = |message: Value| run(s.handle_message(&message, &open, &fake));
    assert_eq!(
        reply(json!({"id": 1, "method": "ping"})).expect("an error")["error"]["code"],
        json!(-32600)
    );
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "id": null, "method": "ping"})).expect("an error")["error"]
            ["code"],
        json!(-32600)
    );
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).expect("pong")["result"],
        json!({})
    );
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "id": 1, "method": "nope"})).expect("an error")["error"]
            ["code"],
        json!(-32601)
    );
    // The newer revision's discovery method is unknown here, so a client
    // falls back to initialize.
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})).expect("an error")
            ["error"]["code"],
        json!(-32601)
    );
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}))
            .expect("an error")["error"]["code"],
        json!(-32602)
    );
    // Notifications (known or not) and stray responses get no reply.
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        None
    );
    assert_eq!(reply(json!({"jsonrpc": "2.0", "method": "whatever"})), None);
    assert_eq!(
        reply(json!({"jsonrpc": "2.0", "id": 3, "result": {}})),
        None
    );
}

/// A message of the stateless revision `version` (its `_meta`), and the
/// HTTP status and reply it gets.
fn modern(server: &Server, version: &str, method: &str, params: Value) -> (u16, Value) {
    let mut params = params.as_object().cloned().unwrap_or_default();
    params.insert(
        "_meta".into(),
        json!({"io.modelcontextprotocol/protocolVersion": version,
               "io.modelcontextprotocol/clientCapabilities": {}}),
    );
    let message = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
    let (reply, status) = run(server.dispatch_message(&message, &Caller::open(), &Fake::default()));
    (status, reply.expect("a reply"))
}

#[test]
fn the_stateless_revision_is_served_per_request() {
    let s = server("");
    let (status, found) = modern(&s, "2026-07-28", "server/discover", json!({}));
    assert_eq!(status, 200);
    let found = &found["result"];
    assert_eq!(
        found["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert!(found["capabilities"]["tools"].is_object());
    assert!(found["instructions"].is_string());
    assert_eq!(found["resultType"], "complete");
    assert_eq!(
        (found["ttlMs"].clone(), found["cacheScope"].clone()),
        (json!(60_000), json!("private"))
    );
    let info = &found["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "cronstable");
    assert!(info["description"].is_string(), "{info}");

    let (status, called) = modern(
        &s,
        "2026-07-28",
        "tools/call",
        json!({"name": "cron_get_version", "arguments": {}}),
    );
    assert_eq!(status, 200);
    assert_eq!(called["result"]["structuredContent"]["jobs"], json!(2));
    assert_eq!(called["result"]["resultType"], "complete");
    assert!(called["result"].get("ttlMs").is_none());
    assert_eq!(
        called["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );

    // No handshake or ping in this era: unknown methods, answered 404.
    for method in ["initialize", "ping"] {
        let (status, refused) = modern(&s, "2026-07-28", method, json!({}));
        assert_eq!(
            (status, refused["error"]["code"].clone()),
            (404, json!(-32601)),
            "{method}"
        );
    }
    // A revision not spoken: -32022 with the list, answered 400.
    let (status, refused) = modern(&s, "2099-01-01", "tools/list", json!({}));
    assert_eq!(status, 400);
    assert_eq!(refused["id"], json!(5));
    assert_eq!(refused["error"]["code"], json!(-32022));
    assert_eq!(refused["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(refused["error"]["data"]["supported"][0], "2026-07-28");
    // A missing resource is invalid params here (no -32002 in this era).
    let (status, missing) = modern(
        &s,
        "2026-07-28",
        "resources/read",
        json!({"uri": "cronstable://nothing"}),
    );
    assert_eq!(
        (status, missing["error"]["code"].clone()),
        (200, json!(-32602))
    );
    // The legacy era keeps -32002 and answers every error 200.
    assert_eq!(
        ask(
            &s,
            &Caller::open(),
            "resources/read",
            json!({"uri": "cronstable://nothing"})
        )["error"]["code"],
        json!(-32002)
    );
    let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"});
    let (_, status) = run(s.dispatch_message(&bare, &Caller::open(), &Fake::default()));
    assert_eq!(status, 200);
}

#[test]
fn read_only_and_toolsets_decide_the_tool_list() {
    let open = Caller::open();
    let observe = tool_names(&ask(&server(""), &open, "tools/list", json!({})));
    assert!(observe.contains(&"cron_list_jobs".to_owned()));
    assert!(observe.contains(&"cron_why_no_run".to_owned()));
    assert!(!observe
        .iter()
        .any(|n| n == "cron_run_job" || n == "cron_inspect_state"));
    // readOnly wins over an `act` toolset.
    let guarded = tool_names(&ask(
        &server("toolsets: [observe, act]"),
        &open,
        "tools/list",
        json!({}),
    ));
    assert_eq!(guarded, observe);
    let all = tool_names(&ask(&writable(), &open, "tools/list", json!({})));
    for name in [
        "cron_run_job",
        "cron_cancel_job",
        "cron_pause_job",
        "cron_resume_job",
        "cron_cancel_queued",
        "cron_inspect_state",
    ] {
        assert!(all.contains(&name.to_owned()), "{name}");
    }
    // `act` alone serves the actions only.
    let acts = tool_names(&ask(
        &server("readOnly: false\ntoolsets: [act]"),
        &open,
        "tools/list",
        json!({}),
    ));
    assert!(acts
        .iter()
        .all(|n| crate::web::mcp::catalog::tool(n).is_some_and(|t| t.toolset == McpToolset::Act)));
    // A view-only token sees no action, and calling one says why.
    let viewed = tool_names(&ask(&writable(), &viewer(), "tools/list", json!({})));
    assert!(!viewed.contains(&"cron_run_job".to_owned()));
    let refused = call(
        &writable(),
        &viewer(),
        "cron_run_job",
        json!({"name": "alpha", "confirm": true}),
    );
    assert_eq!(refused["isError"], json!(true));
    assert!(refused["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("'control' scope"));
    // A hidden tool is unknown.
    let hidden = ask(
        &server(""),
        &open,
        "tools/call",
        json!({"name": "cron_run_job", "arguments": {"name": "alpha"}}),
    );
    assert_eq!(hidden["error"]["code"], json!(-32602));
    // Every listed tool has a closed object schema and honest hints.
    for tool in ask(&writable(), &open, "tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
    {
        assert_eq!(tool["inputSchema"]["type"], "object");
        assert_eq!(tool["inputSchema"]["additionalProperties"], json!(false));
        let mutating = tool["annotations"]["readOnlyHint"] == json!(false);
        assert_eq!(
            mutating,
            tool["inputSchema"]["properties"]["confirm"].is_object(),
            "{}",
            tool["name"]
        );
    }
}

#[test]
fn list_tools_page_and_cap_at_max_rows() {
    let s = writable();
    let open = Caller::open();
    let jobs = call(&s, &open, "cron_list_jobs", json!({"limit": 1}));
    assert_eq!(jobs["structuredContent"]["jobs"][0]["name"], "alpha");
    assert_eq!(
        jobs["structuredContent"]["page"],
        json!({"offset": 0, "limit": 1, "total": 2, "returned": 1, "nextOffset": 1})
    );
    // The text block repeats the data for clients that read only content.
    let text: Value =
        serde_json::from_str(jobs["content"][1]["text"].as_str().unwrap()).expect("JSON");
    assert_eq!(text, jobs["structuredContent"]);
    let disabled = call(&s, &open, "cron_list_jobs", json!({"state": "disabled"}));
    assert_eq!(disabled["structuredContent"]["jobs"][0]["name"], "beta");
    let filtered = call(&s, &open, "cron_list_jobs", json!({"filter": "ALP"}));
    assert_eq!(filtered["structuredContent"]["page"]["total"], json!(1));
    let bad = call(&s, &open, "cron_list_jobs", json!({"state": "sleeping"}));
    assert_eq!(bad["isError"], json!(true));
    // maxRows (3) caps a larger limit; the run history keeps the newest.
    let runs = call(
        &s,
        &open,
        "cron_list_runs",
        json!({"name": "alpha", "limit": 50}),
    );
    let runs = &runs["structuredContent"];
    assert_eq!(runs["runs"], json!([{"n": 2}, {"n": 3}, {"n": 4}]));
    assert_eq!(
        (runs["totalRuns"].clone(), runs["returnedRuns"].clone()),
        (json!(5), json!(3))
    );
    let status = call(&s, &open, "cron_get_status", json!({"offset": 1}));
    assert_eq!(status["structuredContent"]["status"][0]["job"], "beta");
    assert_eq!(
        status["structuredContent"]["page"]["nextOffset"],
        Value::Null
    );
    let resources = call(
        &s,
        &open,
        "cron_get_job_resources",
        json!({"name": "alpha", "runs": "2"}),
    );
    assert_eq!(resources["structuredContent"]["asked"], json!(2));
}

#[test]
fn arguments_are_checked() {
    let s = writable();
    let open = Caller::open();
    let missing = call(&s, &open, "cron_get_job", json!({}));
    assert_eq!(missing["isError"], json!(true));
    let stray = call(
        &s,
        &open,
        "cron_get_job",
        json!({"name": "alpha", "verbose": true}),
    );
    assert!(stray["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("unknown argument(s) 'verbose'"));
    let unknown = call(&s, &open, "cron_get_job", json!({"name": "zeta"}));
    assert!(unknown["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no job named 'zeta'"));
    let not_object = ask(
        &s,
        &open,
        "tools/call",
        json!({"name": "cron_get_job", "arguments": [1]}),
    );
    assert_eq!(not_object["error"]["code"], json!(-32602));
    let both = call(
        &s,
        &open,
        "cron_inspect_state",
        json!({"ns": "kv/a", "stream": "runs/a"}),
    );
    assert_eq!(both["isError"], json!(true));
}

#[test]
fn actions_need_confirm_and_are_attributed() {
    let s = writable();
    let fake = Fake::default();
    let admin = Caller {
        label: Some("ops".into()),
        grant: Grant::ALL,
    };
    let call_with = |tool: &str, args: Value| {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": tool, "arguments": args}});
        run(s.handle_message(&message, &admin, &fake)).expect("a reply")["result"].clone()
    };
    // No confirm (or a truthy non-boolean): nothing happens.
    for confirm in [json!(null), json!("true"), json!(1), json!(false)] {
        let held = call_with("cron_run_job", json!({"name": "alpha", "confirm": confirm}));
        assert_eq!(held["isError"], json!(true), "{confirm}");
    }
    assert!(fake.acted.lock().unwrap().is_empty());
    let started = call_with("cron_run_job", json!({"name": "alpha", "confirm": true}));
    assert_eq!(started["structuredContent"], json!({"started": "alpha"}));
    let paused = call_with(
        "cron_pause_job",
        json!({"name": "alpha", "durationSeconds": 60, "note": "deploy", "confirm": true}),
    );
    assert_eq!(
        paused["structuredContent"],
        json!({"paused": "alpha", "until": "2030-01-01T00:00:00+00:00"})
    );
    call_with("cron_resume_job", json!({"name": "alpha", "confirm": true}));
    assert_eq!(
        *fake.acted.lock().unwrap(),
        [
            "start alpha",
            "pause alpha Some(60) deploy ops",
            "resume alpha ops"
        ]
    );
    let bad = call_with(
        "cron_pause_job",
        json!({"name": "alpha", "durationSeconds": "soon", "confirm": true}),
    );
    assert_eq!(bad["isError"], json!(true));
    // An API without tokens attributes actions to `mcp`.
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "cron_resume_job", "arguments": {"name": "beta", "confirm": true}}});
    run(s.handle_message(&message, &Caller::open(), &fake));
    assert_eq!(
        fake.acted.lock().unwrap().last().unwrap(),
        "resume beta mcp"
    );
}

#[test]
fn the_metrics_query_filters_names_in_any_case() {
    let s = server("");
    let open = Caller::open();
    let found = call(&s, &open, "cron_query_metrics", json!({"match": "A_T"}));
    assert_eq!(
        found["structuredContent"],
        json!({"samples": [{"name": "a_total", "labels": "", "value": "1"}],
               "totalMatched": 1, "returned": 1, "match": "A_T"})
    );
    let all = call(&s, &open, "cron_query_metrics", json!({"limit": 1}));
    assert_eq!(all["structuredContent"]["totalMatched"], json!(2));
    assert_eq!(all["structuredContent"]["returned"], json!(1));
    assert_eq!(all["structuredContent"]["match"], Value::Null);
}

#[test]
fn schedule_tools_use_the_engine() {
    let s = server("");
    let open = Caller::open();
    let valid = call(
        &s,
        &open,
        "cron_validate_schedule",
        json!({"expression": "*/15 * * * *"}),
    );
    assert_eq!(valid["structuredContent"]["valid"], json!(true));
    assert_eq!(
        valid["structuredContent"]["fires"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let explained = call(
        &s,
        &open,
        "cron_explain_schedule",
        json!({"expression": "0 9 * * 1-5", "count": 3, "tz": "Europe/Berlin"}),
    );
    assert_eq!(
        explained["structuredContent"]["fires"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let invalid = call(
        &s,
        &open,
        "cron_validate_schedule",
        json!({"expression": "61 * * * *"}),
    );
    assert_eq!(invalid["structuredContent"]["valid"], json!(false));
    assert!(invalid["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("not valid: "));
    let zone = call(
        &s,
        &open,
        "cron_validate_schedule",
        json!({"expression": "* * * * *", "tz": "Mars/Base"}),
    );
    assert_eq!(zone["isError"], json!(true));
    let why = call(
        &s,
        &open,
        "cron_why_no_run",
        json!({"name": "alpha", "at": "x"}),
    );
    assert!(why["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("yes: "));
    let missing = call(
        &s,
        &open,
        "cron_why_no_run",
        json!({"name": "zeta", "at": "x"}),
    );
    assert!(missing["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no job named 'zeta'"));
}

#[test]
fn schedule_analytics_tools_summarize_their_routes() {
    let s = server("");
    let open = Caller::open();
    let load = call(&s, &open, "cron_schedule_pressure", json!({"hours": 500}));
    assert_eq!(
        load["content"][0]["text"],
        "48 scheduled runs from 2 jobs in the next 168h; busiest minute :05 (2 jobs); 2 of 60 \
         minute positions have no scheduled runs"
    );
    let zone = call(
        &s,
        &open,
        "cron_schedule_pressure",
        json!({"tz": "Mars/Base"}),
    );
    assert_eq!(zone["isError"], json!(true));
    assert_eq!(zone["content"][0]["text"], "unknown timezone 'Mars/Base'");
    let bad = call(&s, &open, "cron_schedule_pressure", json!({"tz": 5}));
    assert_eq!(bad["isError"], json!(true), "{bad}");
    let dups = call(&s, &open, "cron_schedule_duplicates", json!({}));
    assert_eq!(
        dups["content"][0]["text"],
        "1 duplicate group(s) across 2 scheduled job(s); biggest: 2 job(s) sharing '*/5 * * * *'"
    );
    let slot = call(&s, &open, "cron_suggest_slot", json!({"period": "daily"}));
    assert_eq!(
        slot["content"][0]["text"],
        "suggested daily schedule: '17 * * * *' (0 runs already scheduled at this time in 24h)"
    );
    assert_eq!(slot["structuredContent"]["period"], "daily", "{slot}");
}

#[test]
fn resources_prompts_and_completion() {
    let s = writable();
    let open = Caller::open();
    let listed = ask(&s, &open, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "cronstable://status",
            "cronstable://cluster",
            "cronstable://fleet",
            "cronstable://version"
        ]
    );
    let templates = ask(&s, &open, "resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let read = ask(
        &s,
        &open,
        "resources/read",
        json!({"uri": "cronstable://jobs/alpha"}),
    );
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"name": "alpha"})
    );
    let encoded = ask(
        &s,
        &open,
        "resources/read",
        json!({"uri": "cronstable://jobs/al%70ha/runs"}),
    );
    assert!(encoded["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("\"job\":\"alpha\""));
    for uri in [
        "cronstable://jobs/zeta",
        "cronstable://nothing",
        "cronstable://jobs/",
    ] {
        let missing = ask(&s, &open, "resources/read", json!({"uri": uri}));
        assert_eq!(missing["error"]["code"], json!(-32002), "{uri}");
    }
    // The state template needs the state toolset.
    let observe = server("");
    let hidden = ask(
        &observe,
        &open,
        "resources/read",
        json!({"uri": "cronstable://state/kv/x"}),
    );
    assert_eq!(hidden["error"]["code"], json!(-32002));
    // Prompts: the three job prompts; their text names the job.
    let prompts = ask(&s, &open, "prompts/list", json!({}));
    let names: Vec<&str> = prompts["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["triage_job_failure", "blast_radius", "fleet_health_summary"]
    );
    let got = ask(
        &s,
        &open,
        "prompts/get",
        json!({"name": "triage_job_failure",
                                                    "arguments": {"job": "alpha"}}),
    );
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("cron_tail_job_logs(name='alpha')"), "{text}");
    let blast = ask(
        &s,
        &open,
        "prompts/get",
        json!({"name": "blast_radius",
                                                     "arguments": {"target": "alpha"}}),
    );
    assert!(blast["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("cron_inspect_state"));
    let no_state = ask(
        &server(""),
        &open,
        "prompts/get",
        json!({"name": "blast_radius", "arguments": {"target": "alpha"}}),
    );
    assert!(!no_state["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("cron_inspect_state"));
    let missing = ask(
        &s,
        &open,
        "prompts/get",
        json!({"name": "triage_job_failure"}),
    );
    assert_eq!(missing["error"]["code"], json!(-32602));
    let workflow = ask(&s, &open, "prompts/get", json!({"name": "backfill_plan"}));
    assert_eq!(workflow["error"]["code"], json!(-32602));
    let done = ask(
        &s,
        &open,
        "completion/complete",
        json!({
        "ref": {"type": "ref/prompt", "name": "triage_job_failure"},
        "argument": {"name": "job", "value": "AL"}}),
    );
    assert_eq!(
        done["result"]["completion"],
        json!({"values": ["alpha"], "total": 1, "hasMore": false})
    );
}

#[test]
fn the_pure_helpers() {
    let lines: Vec<(String, String)> = (0..10)
        .map(|i| ("stdout".to_owned(), format!("l{i}")))
        .collect();
    let tail = tail_payload(&lines, 3, None);
    assert_eq!(tail["cursor"], json!(10));
    assert_eq!(tail["truncated"], json!(true));
    assert_eq!(tail["lines"][0], json!({"stream": "stdout", "line": "l7"}));
    let next = tail_payload(&lines, 4, Some(2));
    assert_eq!(
        (next["cursor"].clone(), next["truncated"].clone()),
        (json!(6), json!(false))
    );
    let past = tail_payload(&lines, 4, Some(99));
    assert_eq!(
        (past["cursor"].clone(), past["lines"].clone()),
        (json!(10), json!([]))
    );
    let query = JobQuery {
        filter: Some("al".into()),
        state: Some(JobState::Scheduled),
        offset: 0,
        limit: 1,
    };
    assert!(query.selects("Alpha", true, false));
    assert!(!query.selects("alpha", true, true));
    assert!(!query.selects("beta", true, false));
}
