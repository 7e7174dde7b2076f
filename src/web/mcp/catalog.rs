//! The tool catalog: every tool's name, toolset, argument schema
//! (JSON Schema draft 2020-12, MCP's default dialect), annotations and,
//! for the tools whose answer has a fixed shape, an output schema; and
//! the rules deciding which tools a config and a caller see.
//!
//! Tool names, toolsets and argument names are the original's interface;
//! the titles and descriptions are ours.

use super::super::auth::{Grant, Needed};
use crate::config::mcp::McpSettings;
use crate::config::model::sections::McpToolset;
use serde_json::{json, Map, Value};

/// An argument's JSON type.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg {
    Str,
    Int,
    Bool,
    /// A string from a fixed set.
    OneOf(&'static [&'static str]),
}

/// Which output schema a tool declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    Status,
    Jobs,
    Preview,
    Why,
}

/// One tool.
#[derive(Debug)]
pub(super) struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub toolset: McpToolset,
    /// Changes state: stripped while `readOnly`, needs the `control`
    /// scope and `confirm: true`.
    pub mutating: bool,
    pub destructive: bool,
    pub idempotent: bool,
    /// Runs whatever command a job configures.
    pub open_world: bool,
    pub args: &'static [(&'static str, Arg)],
    pub required: &'static [&'static str],
    pub output: Option<Output>,
}

impl Tool {
    /// The scope the tool's REST twin needs.
    pub fn needs(&self) -> Needed {
        if self.mutating {
            Needed::Control
        } else {
            Needed::View
        }
    }

    /// Whether the config serves the tool: its toolset is on, and a
    /// mutating tool only while `readOnly` is off (readOnly wins).
    pub fn configured(&self, settings: &McpSettings) -> bool {
        settings.toolsets.contains(&self.toolset) && !(self.mutating && settings.read_only)
    }

    /// Whether `grant` may use the tool (the REST route's scope).
    pub fn permitted(&self, grant: &Grant) -> bool {
        grant.allows(self.needs())
    }

    /// Whether the tool takes an argument named `name`.
    pub fn takes(&self, name: &str) -> bool {
        self.args.iter().any(|(arg, _)| *arg == name)
    }

    /// The argument names, in order.
    pub fn arg_names(&self) -> Vec<&'static str> {
        self.args.iter().map(|(name, _)| *name).collect()
    }

    /// The `inputSchema`.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        for (name, arg) in self.args {
            let schema = match arg {
                Arg::Str => json!({"type": "string"}),
                Arg::Int => json!({"type": "integer"}),
                Arg::Bool => json!({"type": "boolean"}),
                Arg::OneOf(values) => json!({"type": "string", "enum": values}),
            };
            properties.insert((*name).to_owned(), schema);
        }
        let mut schema = json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        });
        if !self.required.is_empty() {
            schema["required"] = json!(self.required);
        }
        schema
    }

    /// The entry `tools/list` shows.
    pub fn listing(&self) -> Value {
        let mut listing = json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema(),
            "annotations": {
                "title": self.title,
                "readOnlyHint": !self.mutating,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": self.open_world,
            },
        });
        if let Some(output) = self.output {
            listing["outputSchema"] = output_schema(output);
        }
        listing
    }
}

/// Finds a tool by name.
pub(super) fn tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The tools `settings` serve and `grant` may use, in catalog order.
pub(super) fn visible<'a>(
    settings: &'a McpSettings,
    grant: &'a Grant,
) -> impl Iterator<Item = &'static Tool> + 'a {
    TOOLS
        .iter()
        .filter(move |t| t.configured(settings) && t.permitted(grant))
}

/// Whether the tool named `name` is served and usable.
pub(super) fn is_visible(name: &str, settings: &McpSettings, grant: &Grant) -> bool {
    tool(name).is_some_and(|t| t.configured(settings) && t.permitted(grant))
}

fn nullable(schema: Value) -> Value {
    // anyOf rather than a type list: some clients map a tool schema onto
    // a dialect with one type per property.
    json!({"anyOf": [schema, {"type": "null"}]})
}

fn output_schema(output: Output) -> Value {
    let (s, i, b) = (
        json!({"type": "string"}),
        json!({"type": "integer"}),
        json!({"type": "boolean"}),
    );
    let objects = json!({"type": "array", "items": {"type": "object"}});
    let page = json!({
        "type": "object",
        "properties": {
            "offset": i, "limit": i, "total": i, "returned": i,
            "nextOffset": nullable(i.clone()),
        },
        "required": ["offset", "limit", "total", "returned", "nextOffset"],
    });
    match output {
        Output::Status => json!({
            "type": "object",
            "properties": {
                "status": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "job": s,
                        "status": {"type": "string", "enum": ["running", "disabled", "scheduled"]},
                        "never_fires": b,
                    },
                    "required": ["job", "status"],
                }},
                "page": page,
            },
            "required": ["status", "page"],
        }),
        Output::Jobs => json!({
            "type": "object",
            "properties": {
                "jobs": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "name": s, "enabled": b, "schedule": s, "command": s, "running": b,
                        "timezone": nullable(s.clone()),
                        "last_run": nullable(json!({"type": "object"})),
                        "paused": nullable(json!({"type": "object"})),
                    },
                    "required": ["name", "enabled", "running", "paused"],
                }},
                "page": page,
            },
            "required": ["jobs", "page"],
        }),
        Output::Preview => json!({
            "type": "object",
            "properties": {
                "expression": s, "timezone": s, "valid": b, "error": s, "reboot": b,
                "normalized": s, "resolved": s, "seed": s,
                "description": nullable(s.clone()),
                "fires": {"type": "array", "items": s},
                "never_fires": b, "lint": objects,
            },
            "required": ["expression", "timezone", "valid"],
        }),
        Output::Why => json!({
            "type": "object",
            "properties": {
                "job": s, "enabled": b, "timezone": s, "at": s, "at_in_zone": s,
                "expression": s, "resolved": s, "reboot": b,
                "description": nullable(s.clone()),
                "matches": b, "checks": objects,
                "failed": {"type": "array", "items": s},
                "notes": objects,
                "previous_fire": nullable(s.clone()),
                "next_fire": nullable(s.clone()),
            },
            "required": [
                "job", "enabled", "timezone", "at", "expression", "reboot", "matches",
                "checks", "failed", "notes", "previous_fire", "next_fire",
            ],
        }),
    }
}

use Arg::{Bool, Int, OneOf, Str};
use McpToolset::{Act, Observe, State};

const fn read(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    args: &'static [(&'static str, Arg)],
    required: &'static [&'static str],
) -> Tool {
    Tool {
        name,
        title,
        description,
        toolset: Observe,
        mutating: false,
        destructive: false,
        idempotent: true,
        open_world: false,
        args,
        required,
        output: None,
    }
}

const fn with_output(tool: Tool, output: Output) -> Tool {
    Tool {
        output: Some(output),
        ..tool
    }
}

const fn in_set(tool: Tool, toolset: McpToolset) -> Tool {
    Tool { toolset, ..tool }
}

/// A mutating tool of the `act` set: `destructive` and `idempotent` are
/// its honest hints, `open_world` whether it runs a job's command.
const fn act(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    args: &'static [(&'static str, Arg)],
    required: &'static [&'static str],
    (destructive, idempotent, open_world): (bool, bool, bool),
) -> Tool {
    Tool {
        name,
        title,
        description,
        toolset: Act,
        mutating: true,
        destructive,
        idempotent,
        open_world,
        args,
        required,
        output: None,
    }
}

const NAME: &[&str] = &["name"];

/// Every tool, in the order `tools/list` shows them. The workflow (`dags`)
/// tools are absent: this version runs no DAGs.
static TOOLS: &[Tool] = &[
    with_output(
        read(
            "cron_get_status",
            "Job status",
            "Every job's state (running, scheduled or disabled) with its countdown to the next \
             run, paged with offset/limit.",
            &[("offset", Int), ("limit", Int)],
            &[],
        ),
        Output::Status,
    ),
    with_output(
        read(
            "cron_list_jobs",
            "List jobs",
            "Jobs with their schedule, command, enabled and running state, next run, pause and \
             last outcome. Narrow with `filter` (a substring of the name) and `state` \
             (running, disabled or scheduled); page with offset/limit.",
            &[
                ("filter", Str),
                ("state", OneOf(&["running", "disabled", "scheduled"])),
                ("offset", Int),
                ("limit", Int),
            ],
            &[],
        ),
        Output::Jobs,
    ),
    read(
        "cron_get_job",
        "Job detail",
        "One job in full: schedule, command, last run, pause, retry and slot state, live \
         resources.",
        &[("name", Str)],
        NAME,
    ),
    read(
        "cron_list_runs",
        "Run history",
        "A job's retained runs (the newest `limit`) with outcome, exit code, duration, output \
         and the success and duration statistics of the whole history.",
        &[("name", Str), ("limit", Int)],
        NAME,
    ),
    read(
        "cron_get_job_trends",
        "Run trends",
        "A job's success rate and durations over the last hour, day, week, 30 days and all \
         retained runs.",
        &[("name", Str)],
        NAME,
    ),
    read(
        "cron_get_job_resources",
        "Resource usage",
        "CPU and memory series of a job's running and recent runs (monitorResources), its \
         resourceLimits caps, and whether each capped run kept within them.",
        &[("name", Str), ("runs", Int)],
        NAME,
    ),
    read(
        "cron_get_cluster",
        "Cluster",
        "This node's view of the cluster: peers, quorum, leader, its own role. enabled is \
         false without a cluster section.",
        &[],
        &[],
    ),
    read(
        "cron_get_fleet",
        "Fleet",
        "Every node's jobs and their last outcomes, as the gossip backend shares them. \
         enabled is false without one.",
        &[],
        &[],
    ),
    read(
        "cron_get_node",
        "Node",
        "This host's CPU and memory now and the daemon's own use; `history` adds the sampled \
         history.",
        &[("history", Bool)],
        &[],
    ),
    read(
        "cron_query_metrics",
        "Metrics",
        "Samples of the Prometheus /metrics exposition (name, labels, value), optionally only \
         those whose name contains `match`.",
        &[("match", Str), ("limit", Int)],
        &[],
    ),
    read(
        "cron_get_version",
        "Version",
        "The daemon's version, its job-set id and how many jobs it has.",
        &[],
        &[],
    ),
    read(
        "cron_tail_job_logs",
        "Job output",
        "The last retained output lines of a job's newest run; pass the returned `cursor` back \
         to get only the lines written since.",
        &[("name", Str), ("tail", Int), ("cursor", Int)],
        NAME,
    ),
    read(
        "cron_schedule_pressure",
        "Schedule load",
        "How the enabled schedules' runs over the next `hours` (24 unless given, 168 at most) \
         fall by hour and by minute in `tz` (UTC unless given): the busiest minute, the jobs \
         that start together and the minute positions nothing uses.",
        &[("hours", Int), ("tz", Str)],
        &[],
    ),
    read(
        "cron_schedule_duplicates",
        "Duplicate schedules",
        "Groups of jobs whose schedules fire at exactly the same instants (`*/5` and \
         `0-59/5` in one zone, say): candidates to spread apart.",
        &[],
        &[],
    ),
    read(
        "cron_suggest_slot",
        "Suggest a quieter run time",
        "The least-used time over the next 24 hours for a new job: a minute of the hour for \
         `period` hourly (the default), a time of day for daily, in `tz`; with the cron \
         expression, two alternatives and the busiest time.",
        &[("period", OneOf(&["hourly", "daily"])), ("tz", Str)],
        &[],
    ),
    with_output(
        read(
            "cron_validate_schedule",
            "Check a schedule",
            "Parse a cron expression with the daemon's own engine before it goes into a job: \
             valid or the exact error (with hints for other dialects), the normalized form, \
             lint findings and the first run. The dialect includes L, L-n, nW, LW, Ln and d#n. \
             `tz` is the job's zone; `seed` (the job's name) resolves H.",
            &[("expression", Str), ("tz", Str), ("seed", Str)],
            &["expression"],
        ),
        Output::Preview,
    ),
    with_output(
        read(
            "cron_explain_schedule",
            "Next runs of a schedule",
            "The next `count` runs (default 5, at most 60) of a cron expression in `tz` \
             (default UTC), with the engine's normalized form and lint findings. `seed` \
             resolves H.",
            &[
                ("expression", Str),
                ("count", Int),
                ("tz", Str),
                ("seed", Str),
            ],
            &["expression"],
        ),
        Output::Preview,
    ),
    with_output(
        read(
            "cron_why_no_run",
            "Why (not) at this time",
            "Field by field, whether a job's schedule selects the ISO 8601 time `at` (without \
             an offset: the job's zone), with the runs before and after it and notes on the \
             day-field rule, DST and pauses. When it does select it and no run is recorded, \
             look at the run history.",
            &[("name", Str), ("at", Str)],
            &["name", "at"],
        ),
        Output::Why,
    ),
    read(
        "cron_list_pools",
        "Resource pools",
        "Every resource pool: its capacity, who holds it, and the work waiting for it.",
        &[],
        &[],
    ),
    in_set(
        read(
            "cron_inspect_state",
            "Saved state",
            "The durable store without its values: an overview by default, the documents of \
             one namespace (`ns`: kv/..., cursor/..., idem/...) or the newest records of a \
             `stream`. Key-value values are reduced to their size and type.",
            &[("ns", Str), ("stream", Str), ("limit", Int)],
            &[],
        ),
        State,
    ),
    act(
        "cron_cancel_queued",
        "Cancel waiting work",
        "Cancel an entry waiting in a resource pool (`pool`, `id`). Needs confirm=true.",
        &[("pool", Str), ("id", Str), ("confirm", Bool)],
        &["pool", "id"],
        (true, true, false),
    ),
    act(
        "cron_run_job",
        "Run a job now",
        "Start a job now, as its concurrencyPolicy allows (a pooled job is queued). Needs \
         confirm=true.",
        &[("name", Str), ("confirm", Bool)],
        NAME,
        (true, false, true),
    ),
    act(
        "cron_cancel_job",
        "Cancel a job",
        "Stop a job's running instances (a graceful signal, then a kill). Needs confirm=true.",
        &[("name", Str), ("confirm", Bool)],
        NAME,
        (true, true, false),
    ),
    act(
        "cron_pause_job",
        "Pause a job",
        "Skip a job's scheduled runs for `durationSeconds` (default 3600) or until resumed; a \
         manual run still works. `note` is kept with the pause. Needs confirm=true.",
        &[
            ("name", Str),
            ("durationSeconds", Int),
            ("note", Str),
            ("confirm", Bool),
        ],
        NAME,
        (false, true, false),
    ),
    act(
        "cron_resume_job",
        "Resume a job",
        "End a job's pause (nothing happens when it is not paused). Needs confirm=true.",
        &[("name", Str), ("confirm", Bool)],
        NAME,
        (false, true, false),
    ),
];
