//! Resources (read-only snapshots a client can attach as context, by
//! URI) and prompts (canned triage playbooks that chain the read tools).
//! Both follow the toolsets: a resource is served when its toolset is
//! on, a prompt when every tool its text calls is visible. Every
//! resource is also reachable as a tool, because clients' support for
//! resources is uneven.

use super::catalog;
use super::rpc::{arguments, RpcError, INVALID_PARAMS, RESOURCE_NOT_FOUND};
use super::{Backend, Caller, Refusal, Server};
use crate::config::model::sections::McpToolset;
use serde_json::{json, Map, Value};

/// The MIME type of every resource.
const MIME: &str = "application/json";

/// A resource or a template: its URI (or URI template), name, title,
/// description and toolset.
struct Resource {
    uri: &'static str,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    toolset: McpToolset,
}

const fn observe(
    uri: &'static str,
    name: &'static str,
    title: &'static str,
    description: &'static str,
) -> Resource {
    Resource {
        uri,
        name,
        title,
        description,
        toolset: McpToolset::Observe,
    }
}

static FIXED: &[Resource] = &[
    observe(
        "cronstable://status",
        "status",
        "Job status",
        "Every job's state now.",
    ),
    observe(
        "cronstable://cluster",
        "cluster",
        "Cluster",
        "This node's view of the cluster.",
    ),
    observe(
        "cronstable://fleet",
        "fleet",
        "Fleet",
        "Every node's jobs, as the gossip backend shares them.",
    ),
    observe(
        "cronstable://version",
        "version",
        "Version",
        "The daemon's version, job-set id and job count.",
    ),
];

static TEMPLATES: &[Resource] = &[
    observe("cronstable://jobs/{name}", "job", "Job", "One job in full."),
    observe(
        "cronstable://jobs/{name}/runs",
        "job-runs",
        "Job runs",
        "A job's retained runs and their statistics.",
    ),
    Resource {
        uri: "cronstable://state/{ns}",
        name: "state-ns",
        title: "State namespace",
        description: "The documents of a kv/, cursor/ or idem/ namespace, values redacted.",
        toolset: McpToolset::State,
    },
];

/// A URI resolved: which resource, and the value of its variable.
enum Target<'a> {
    Status,
    Cluster,
    Fleet,
    Version,
    Job(String),
    Runs(String),
    State(&'a str),
}

/// Percent-decodes a URI segment (clients expand templates under RFC
/// 6570, which encodes reserved and non-ASCII characters); `None` when
/// the result is not UTF-8.
fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

impl Server {
    fn resource_on(&self, resource: &Resource) -> bool {
        self.settings.toolsets.contains(&resource.toolset)
    }

    /// Whether any resource or template is served (the capability).
    pub(super) fn serves_resources(&self) -> bool {
        self.settings.resources && FIXED.iter().chain(TEMPLATES).any(|r| self.resource_on(r))
    }

    /// `resources/list`.
    pub(super) fn resources_list(&self) -> Value {
        let listed: Vec<Value> = FIXED
            .iter()
            .filter(|r| self.resource_on(r))
            .map(|r| {
                json!({"uri": r.uri, "name": r.name, "title": r.title,
                       "description": r.description, "mimeType": MIME})
            })
            .collect();
        json!({"resources": listed})
    }

    /// `resources/templates/list`.
    pub(super) fn resource_templates_list(&self) -> Value {
        let listed: Vec<Value> = TEMPLATES
            .iter()
            .filter(|r| self.resource_on(r))
            .map(|r| {
                json!({"uriTemplate": r.uri, "name": r.name, "title": r.title,
                       "description": r.description, "mimeType": MIME})
            })
            .collect();
        json!({"resourceTemplates": listed})
    }

    fn target<'a>(&self, uri: &'a str) -> Option<Target<'a>> {
        let on = |set: McpToolset| self.settings.toolsets.contains(&set);
        let fixed = match uri {
            "cronstable://status" => Some(Target::Status),
            "cronstable://cluster" => Some(Target::Cluster),
            "cronstable://fleet" => Some(Target::Fleet),
            "cronstable://version" => Some(Target::Version),
            _ => None,
        };
        if fixed.is_some() {
            return fixed.filter(|_| on(McpToolset::Observe));
        }
        if let Some(ns) = uri.strip_prefix("cronstable://state/") {
            return (!ns.is_empty() && on(McpToolset::State)).then_some(Target::State(ns));
        }
        let rest = uri.strip_prefix("cronstable://jobs/")?;
        if !on(McpToolset::Observe) {
            return None;
        }
        match rest.split_once('/') {
            None if !rest.is_empty() => decode(rest).map(Target::Job),
            Some((name, "runs")) if !name.is_empty() => decode(name).map(Target::Runs),
            _ => None,
        }
    }

    /// `resources/read`.
    pub(super) async fn resources_read<B: Backend>(
        &self,
        params: &Map<String, Value>,
        backend: &B,
    ) -> Result<Value, RpcError> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "resources/read needs a 'uri'",
            ));
        };
        let not_found = || RpcError::new(RESOURCE_NOT_FOUND, format!("resource not found: {uri}"));
        let target = self.target(uri).ok_or_else(not_found)?;
        let refused = |r: Refusal| {
            if r.status == 404 {
                not_found()
            } else {
                RpcError::new(RESOURCE_NOT_FOUND, r.message)
            }
        };
        let data = match target {
            Target::Status => json!({"status": backend.status_rows().await.map_err(refused)?}),
            Target::Cluster => backend.cluster().await.map_err(refused)?,
            Target::Fleet => backend.fleet().await.map_err(refused)?,
            Target::Version => {
                let (job_set_id, jobs) = backend.job_set().await.map_err(refused)?;
                json!({"version": env!("CARGO_PKG_VERSION"), "job_set_id": job_set_id,
                       "jobs": jobs})
            }
            Target::Job(name) => backend.job(&name).await.map_err(refused)?,
            Target::Runs(name) => backend.runs(&name).await.map_err(refused)?,
            Target::State(ns) => backend.state_documents(ns).await.map_err(refused)?,
        };
        Ok(json!({"contents": [{"uri": uri, "mimeType": MIME, "text": data.to_string()}]}))
    }
}

/// One prompt: its name, title, description, arguments (name,
/// description), the tools its text calls (all must be visible) and the
/// optional ones (a step is written only when its tool is visible).
struct Prompt {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    arguments: &'static [(&'static str, &'static str)],
    requires: &'static [&'static str],
    optional: &'static [&'static str],
}

/// The prompts. The workflow prompts (`why_did_dag_run_fail`,
/// `backfill_plan`) need the `dags` tools, which this version does not
/// have, so they are never listed.
static PROMPTS: &[Prompt] = &[
    Prompt {
        name: "triage_job_failure",
        title: "Triage a failing job",
        description: "Work out why a job fails from its runs, trends, output and host.",
        arguments: &[("job", "the failing job's name")],
        requires: &[
            "cron_get_job",
            "cron_list_runs",
            "cron_get_job_trends",
            "cron_tail_job_logs",
            "cron_get_node",
            "cron_get_cluster",
        ],
        optional: &[],
    },
    Prompt {
        name: "blast_radius",
        title: "What else is at risk",
        description: "Find the jobs an incident around one job touches.",
        arguments: &[("target", "a job's name")],
        requires: &["cron_get_status", "cron_get_fleet"],
        optional: &["cron_inspect_state"],
    },
    Prompt {
        name: "fleet_health_summary",
        title: "Health summary",
        description: "A short status report on jobs, cluster and hosts.",
        arguments: &[],
        requires: &[
            "cron_get_fleet",
            "cron_get_cluster",
            "cron_get_status",
            "cron_get_node",
        ],
        optional: &[],
    },
];

fn render(prompt: &Prompt, args: &Map<String, Value>, present: &[&str]) -> String {
    let arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
    match prompt.name {
        "triage_job_failure" => {
            let job = arg("job");
            format!(
                "The cronstable job '{job}' is failing; find out why.\n\
                 1. Read cron_get_job(name='{job}') and cron_list_runs(name='{job}') for what \
                 its recent runs did.\n\
                 2. Read cron_get_job_trends(name='{job}'): is this new or has it been going on?\n\
                 3. Read cron_tail_job_logs(name='{job}') for the output of the failing run.\n\
                 4. Read cron_get_node() and cron_get_cluster() to rule out the host and the \
                 cluster.\n\
                 Then state the most likely cause, what else it affects, and the safest next \
                 step. Do not run, cancel or pause anything without asking first."
            )
        }
        "blast_radius" => {
            let target = arg("target");
            let mut steps =
                vec!["cron_get_status and cron_get_fleet for the jobs in trouble".to_owned()];
            if present.contains(&"cron_inspect_state") {
                steps.push("cron_inspect_state for locks or cursors it shares".to_owned());
            }
            format!(
                "An incident involves '{target}'. Use {} and tell what else is at risk while \
                 it stays broken.",
                steps.join(", then ")
            )
        }
        _ => "Write a short health report on this cronstable deployment for a status update. \
              Use cron_get_status for how many jobs fail and how many are fine, \
              cron_get_cluster for quorum and leadership, cron_get_fleet for the other nodes, \
              and cron_get_node for a host under pressure. Put the most important finding \
              first."
            .to_owned(),
    }
}

impl Server {
    fn prompt_on(&self, prompt: &Prompt, caller: &Caller) -> bool {
        prompt
            .requires
            .iter()
            .all(|t| catalog::is_visible(t, &self.settings, &caller.grant))
    }

    /// Whether any prompt is served to `caller` (the capability).
    pub(super) fn serves_prompts(&self, caller: &Caller) -> bool {
        self.settings.prompts && PROMPTS.iter().any(|p| self.prompt_on(p, caller))
    }

    /// `prompts/list`.
    pub(super) fn prompts_list(&self, caller: &Caller) -> Value {
        let listed: Vec<Value> = PROMPTS
            .iter()
            .filter(|p| self.prompt_on(p, caller))
            .map(|p| {
                let arguments: Vec<Value> = p
                    .arguments
                    .iter()
                    .map(|(name, description)| {
                        json!({"name": name, "description": description, "required": true})
                    })
                    .collect();
                json!({"name": p.name, "title": p.title, "description": p.description,
                       "arguments": arguments})
            })
            .collect();
        json!({"prompts": listed})
    }

    /// `prompts/get`.
    pub(super) fn prompts_get(
        &self,
        params: &Map<String, Value>,
        caller: &Caller,
    ) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::new(INVALID_PARAMS, "prompts/get needs a 'name'"));
        };
        let prompt = PROMPTS
            .iter()
            .find(|p| p.name == name && self.prompt_on(p, caller))
            .ok_or_else(|| RpcError::new(INVALID_PARAMS, format!("unknown prompt: {name}")))?;
        let empty = Map::new();
        let args = arguments(params, &empty)?;
        if let Some((key, _)) = args.iter().find(|(_, v)| !v.is_string()) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("the prompt argument '{key}' must be a string"),
            ));
        }
        let missing: Vec<&str> = prompt
            .arguments
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| {
                args.get(*name)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
            })
            .collect();
        if !missing.is_empty() {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("missing prompt argument(s): {}", missing.join(", ")),
            ));
        }
        let present: Vec<&str> = prompt
            .optional
            .iter()
            .copied()
            .filter(|t| catalog::is_visible(t, &self.settings, &caller.grant))
            .collect();
        Ok(json!({
            "description": prompt.description,
            "messages": [{"role": "user", "content": {
                "type": "text", "text": render(prompt, args, &present)}}],
        }))
    }

    /// `completion/complete`: job names for the prompt arguments and the
    /// template variables that take one; nothing for the others.
    pub(super) async fn complete<B: Backend>(
        &self,
        params: &Map<String, Value>,
        caller: &Caller,
        backend: &B,
    ) -> Result<Value, RpcError> {
        let (Some(reference), Some(argument)) = (
            params.get("ref").and_then(Value::as_object),
            params.get("argument").and_then(Value::as_object),
        ) else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "completion/complete needs 'ref' and 'argument' objects",
            ));
        };
        let (Some(arg), Some(value)) = (
            argument.get("name").and_then(Value::as_str),
            argument.get("value").and_then(Value::as_str),
        ) else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "'argument' needs a string 'name' and 'value'",
            ));
        };
        let wants_jobs = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or("");
                let prompt = PROMPTS.iter().find(|p| p.name == name).ok_or_else(|| {
                    RpcError::new(INVALID_PARAMS, format!("unknown prompt: {name}"))
                })?;
                self.settings.prompts
                    && self.prompt_on(prompt, caller)
                    && matches!(arg, "job" | "target")
            }
            Some("ref/resource") => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or("");
                let template = TEMPLATES.iter().find(|t| t.uri == uri).ok_or_else(|| {
                    RpcError::new(INVALID_PARAMS, format!("unknown resource template: {uri}"))
                })?;
                self.settings.resources
                    && self.resource_on(template)
                    && template.toolset == McpToolset::Observe
                    && arg == "name"
            }
            _ => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "'ref.type' must be 'ref/prompt' or 'ref/resource'",
                ))
            }
        };
        let names = if wants_jobs {
            backend.job_names().await.unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(completion(&names, value))
    }
}

/// The most completion values returned.
const COMPLETION_MAX: usize = 100;

/// The candidates starting with `prefix` (any case), at most
/// [`COMPLETION_MAX`], with the total.
pub(super) fn completion(candidates: &[String], prefix: &str) -> Value {
    let prefix = prefix.to_lowercase();
    let matches: Vec<&String> = candidates
        .iter()
        .filter(|c| c.to_lowercase().starts_with(&prefix))
        .collect();
    json!({"completion": {
        "values": matches.iter().take(COMPLETION_MAX).collect::<Vec<_>>(),
        "total": matches.len(),
        "hasMore": matches.len() > COMPLETION_MAX,
    }})
}
