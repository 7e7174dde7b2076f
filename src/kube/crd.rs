//! The `CronJobSet` resource (`cronstable.io/v1alpha1`) and its
//! CustomResourceDefinition.

use crate::config::model::JobSpec;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceValidation, JSONSchemaProps,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A named set of cron jobs in one namespace: the YAML config's `jobs:` and
/// `defaults:` as a Kubernetes object.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cronstable.io",
    version = "v1alpha1",
    kind = "CronJobSet",
    plural = "cronjobsets",
    shortname = "cjs",
    namespaced,
    schema = "disabled",
    status = "CronJobSetStatus",
    // Printer columns read single values: the server's Table API prints
    // only the first match of a JSONPath, so the job names come from a
    // status field the scheduler joins, not from `.spec.jobs[*].name`.
    printcolumn = r#"{"name":"Jobs","type":"integer","jsonPath":".status.jobCount","description":"Jobs of the set the scheduler runs"}"#,
    printcolumn = r#"{"name":"Suspended","type":"boolean","jsonPath":".spec.suspend"}"#,
    printcolumn = r#"{"name":"Last Schedule","type":"date","jsonPath":".status.lastScheduleTime"}"#,
    printcolumn = r#"{"name":"Accepted","type":"string","jsonPath":".status.conditions[?(@.type==\"Accepted\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Names","type":"string","priority":1,"jsonPath":".status.jobNames","description":"Names of the jobs the scheduler runs, in spec order"}"#
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CronJobSetSpec {
    /// The jobs of this set: the job options of the YAML config, same names
    /// and meanings.
    // Kept as the JSON the API server stored, described by the config's job
    // type: converting writes it back out untouched, so a set means exactly
    // what the same YAML means in a file (an explicit `null` included).
    #[serde(default)]
    #[schemars(with = "Vec<JobSpec>")]
    pub jobs: Vec<Value>,
    /// Options every job of this set inherits unless it sets them itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<JobSpec>")]
    pub defaults: Option<Value>,
    /// When true, this set's scheduled fires are skipped; manual starts
    /// through the API still run.
    // The schema defaults it to false (see `default_suspend`), so the API
    // server stores `false` and the Suspended column shows it; absent and
    // false mean the same to the scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
}

/// What the scheduler observed and did with a set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSetStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Accepted` (the set loaded) and `Ready` (its jobs are scheduled).
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The job-set id of the config the set is part of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_set_id: Option<String>,
    /// The latest fire of any job of the set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_schedule_time: Option<String>,
    /// How many jobs of the set the scheduler holds, as `jobs` lists them:
    /// the current generation's once accepted, the last accepted one's
    /// while an edit is refused, held ones too while suspended; 0 while
    /// nothing of the set runs.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub job_count: i64,
    /// The names of those jobs in spec order, joined with ", " (absent
    /// when there are none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub job_names: String,
    /// One entry per job of the set.
    #[serde(default)]
    pub jobs: Vec<JobStatus>,
}

/// One status condition, in the shape Kubernetes conditions share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Accepted` or `Ready`.
    #[serde(rename = "type")]
    pub type_: ConditionType,
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// A CamelCase word for the last transition.
    pub reason: String,
    /// A human-readable explanation (the loader's message when refused).
    pub message: String,
    /// When `status` last changed.
    #[schemars(extend("format" = "date-time"))]
    pub last_transition_time: String,
    /// The `metadata.generation` the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The conditions a set reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionType {
    /// The set passed the loader and is part of the running config.
    Accepted,
    /// Every job of the set is scheduled.
    Ready,
}

/// A condition's truth value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not known yet.
    Unknown,
}

/// What the scheduler knows about one job of a set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// The job's name as written in the set.
    pub name: String,
    /// The last time the job was fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_schedule_time: Option<String>,
    /// The last time a run of the job succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_successful_time: Option<String>,
    /// The outcome of the last finished run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<RunResult>,
    /// The next time the job is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub next_schedule_time: Option<String>,
    /// Runs of the job in progress.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub active: i64,
}

/// The outcome of one finished run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// `success` or `failure`.
    pub outcome: String,
    /// The exit code (negative for a signal or a timeout, as in the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Why the run counted as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_reason: Option<String>,
    /// When the run ended.
    #[schemars(extend("format" = "date-time"))]
    pub finished_at: String,
    /// The node (host) that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// The CustomResourceDefinition, with the openAPIV3Schema generated from
/// the Rust types and made structural and strict (see [`schema`]).
pub fn crd() -> Result<CustomResourceDefinition, CrdError> {
    let mut crd = <CronJobSet as kube::CustomResourceExt>::crd();
    let version = crd
        .spec
        .versions
        .first_mut()
        .ok_or_else(|| CrdError("the derived CRD has no version".to_owned()))?;
    version.schema = Some(CustomResourceValidation {
        open_api_v3_schema: Some(schema()?),
    });
    Ok(crd)
}

/// The CustomResourceDefinition as YAML, exactly what `cronstable crd`
/// prints and `crds/cronjobset.yaml` holds.
pub fn crd_yaml() -> Result<String, CrdError> {
    serde_yaml::to_string(&crd()?).map_err(|e| CrdError(format!("cannot write the CRD: {e}")))
}

/// The CRD could not be generated (a defect in the types, never user input).
#[derive(Debug, thiserror::Error)]
#[error("cannot generate the CronJobSet CRD: {0}")]
pub struct CrdError(String);

/// The openAPIV3Schema of a `CronJobSet`.
///
/// The job type is shared with the YAML loader, whose lenient shapes do not
/// all fit Kubernetes' structural rules, so the generated schema is adjusted
/// in three passes:
/// 1. before kube's rewriter: nodes that take values of more than one JSON
///    type (a command is a string or a list, a schedule a string or an
///    object, a report extra any scalar) become untyped nodes with
///    `x-kubernetes-preserve-unknown-fields`, the one structural way to
///    accept such a value; the loader checks their shape;
/// 2. kube's own transforms (structural rewrite, optional enums);
/// 3. after: the bounds the loader enforces become `minimum`s and a job
///    list keyed by name refuses duplicates, so the API server refuses what
///    the loader would; `spec.suspend` gets its default; descriptions lose
///    their rustdoc link brackets.
pub fn schema() -> Result<JSONSchemaProps, CrdError> {
    // One generator per part: the root object itself is written here, as
    // kube's derive would, because its metadata has no schemars schema.
    let part = |of: fn(schemars::SchemaGenerator) -> schemars::Schema| {
        let generator = schemars::generate::SchemaSettings::openapi3()
            .with(|s| {
                s.inline_subschemas = true;
                s.meta_schema = None;
            })
            .with_transform(schemars::transform::AddNullable::default())
            .into_generator();
        let mut value = of(generator).to_value();
        if let Value::Object(node) = &mut value {
            node.remove("title");
        }
        value
    };
    let spec = part(|g| g.into_root_schema_for::<CronJobSetSpec>());
    let status = part(|g| g.into_root_schema_for::<CronJobSetStatus>());
    let mut value = serde_json::json!({
        "description": "A named set of cron jobs run by the cronstable scheduler.",
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    });
    untype_mixed(&mut value);
    let mut schema = schemars::Schema::try_from(value)
        .map_err(|e| CrdError(format!("not a schema after the first pass: {e}")))?;
    {
        use schemars::transform::Transform;
        kube::core::schema::StructuralSchemaRewriter.transform(&mut schema);
        kube::core::schema::OptionalEnum.transform(&mut schema);
    }
    let mut value = schema.to_value();
    add_bounds(&mut value);
    require_job_keys(&mut value);
    default_suspend(&mut value);
    plain_descriptions(&mut value);
    serde_json::from_value(value).map_err(|e| CrdError(format!("not JSONSchemaProps: {e}")))
}

/// JSON types a node admits, `null` left out (optionality is `nullable`).
fn node_types(node: &Map<String, Value>) -> Vec<String> {
    let mut types: Vec<String> = Vec::new();
    let mut add = |t: &Value| match t {
        Value::String(s) if s != "null" => types.push(s.clone()),
        Value::Array(list) => types.extend(
            list.iter()
                .filter_map(Value::as_str)
                .filter(|s| *s != "null")
                .map(str::to_owned),
        ),
        _ => {}
    };
    if let Some(t) = node.get("type") {
        add(t);
    }
    for key in ["anyOf", "oneOf"] {
        for branch in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = branch.get("type") {
                add(t);
            }
        }
    }
    types.sort();
    types.dedup();
    types
}

/// Pass 1: a node whose value may be of several JSON types keeps only its
/// description and accepts any value.
fn untype_mixed(value: &mut Value) {
    match value {
        Value::Object(node) => {
            if node_types(node).len() > 1 {
                let description = node.get("description").cloned();
                let nullable = node.contains_key("nullable")
                    || node
                        .get("anyOf")
                        .and_then(Value::as_array)
                        .is_some_and(|b| b.iter().any(|x| x.get("nullable").is_some()));
                node.clear();
                if let Some(d) = description {
                    node.insert("description".to_owned(), d);
                }
                if nullable {
                    node.insert("nullable".to_owned(), Value::Bool(true));
                }
                node.insert(
                    "x-kubernetes-preserve-unknown-fields".to_owned(),
                    Value::Bool(true),
                );
                return;
            }
            for child in node.values_mut() {
                untype_mixed(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(untype_mixed),
        _ => {}
    }
}

/// The loader's range rules, by property name: (minimum, exclusive, maximum).
/// The names are unique to one place in the job schema each.
const BOUNDS: &[(&str, f64, bool, Option<f64>)] = &[
    ("saveLimit", 0.0, false, None),
    ("maxLineLength", 0.0, true, None),
    ("killTimeout", 0.0, false, None),
    ("catchupJitterSeconds", 0.0, false, None),
    ("startingDeadlineSeconds", 0.0, true, None),
    ("executionTimeout", 0.0, true, None),
    ("maximumRetries", -1.0, false, None),
    ("initialDelay", 0.0, false, None),
    ("maximumDelay", 0.0, true, None),
    ("backoffMultiplier", 0.0, true, None),
    ("interval", 0.1, false, None),
    ("history", 0.0, false, Some(2000.0)),
    ("maxTimeSinceSuccessSeconds", 0.0, true, None),
    ("lateAfterSeconds", 0.0, true, None),
    ("maxRuntimeSeconds", 0.0, true, None),
];

/// Pass 3: adds the loader's bounds to every property they name.
fn add_bounds(value: &mut Value) {
    match value {
        Value::Object(node) => {
            if let Some(Value::Object(properties)) = node.get_mut("properties") {
                for (name, min, exclusive, max) in BOUNDS {
                    let Some(Value::Object(property)) = properties.get_mut(*name) else {
                        continue;
                    };
                    let is_number = matches!(
                        property.get("type").and_then(Value::as_str),
                        Some("integer" | "number")
                    );
                    if !is_number {
                        continue;
                    }
                    let integral = property.get("type").and_then(Value::as_str) == Some("integer");
                    let bound = |v: f64| {
                        if integral {
                            Value::from(v as i64)
                        } else {
                            Value::from(v)
                        }
                    };
                    property.insert("minimum".to_owned(), bound(*min));
                    if *exclusive {
                        property.insert("exclusiveMinimum".to_owned(), Value::Bool(true));
                    }
                    if let Some(max) = max {
                        property.insert("maximum".to_owned(), bound(*max));
                    }
                }
            }
            for child in node.values_mut() {
                add_bounds(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(add_bounds),
        _ => {}
    }
}

/// A job of a set must name itself and say what to run and when, and
/// `defaults` must not; the shared job type leaves every key optional
/// because both places use it.
fn require_job_keys(value: &mut Value) {
    let job = value.pointer_mut("/properties/spec/properties/jobs/items");
    if let Some(Value::Object(job)) = job {
        job.insert(
            "required".to_owned(),
            serde_json::json!(["name", "command", "schedule"]),
        );
        if let Some(Value::Object(name)) = job.get_mut("properties").and_then(|p| p.get_mut("name"))
        {
            name.insert("minLength".to_owned(), Value::from(1));
            name.remove("nullable");
        }
    }
    // `defaults` cannot carry what belongs on a job (the loader refuses
    // it); left out of the schema, the API server refuses it as unknown.
    let defaults = value.pointer_mut("/properties/spec/properties/defaults/properties");
    if let Some(Value::Object(defaults)) = defaults {
        for key in ["name", "command", "schedule"] {
            defaults.remove(key);
        }
    }
    // A list keyed by `name`: the API server refuses two jobs of one name,
    // as the loader does, and server-side apply merges jobs by name.
    // The status lists follow the same convention: conditions by type (as
    // in every Kubernetes API), job entries by name.
    for (list, key) in [
        ("/properties/spec/properties/jobs", "name"),
        ("/properties/status/properties/conditions", "type"),
        ("/properties/status/properties/jobs", "name"),
    ] {
        if let Some(Value::Object(list)) = value.pointer_mut(list) {
            list.insert("x-kubernetes-list-type".to_owned(), Value::from("map"));
            list.insert(
                "x-kubernetes-list-map-keys".to_owned(),
                serde_json::json!([key]),
            );
        }
    }
}

/// `spec.suspend` defaults to false (a structural default): the API server
/// stores `false` in a set that leaves it out, so the Suspended column
/// reads `false` as a Kubernetes CronJob's does, not blank. It is not
/// nullable, so an explicit `null` is pruned and defaulted the same way.
fn default_suspend(value: &mut Value) {
    if let Some(Value::Object(suspend)) = value.pointer_mut("/properties/spec/properties/suspend") {
        suspend.insert("default".to_owned(), Value::Bool(false));
        suspend.remove("nullable");
    }
}

/// Doc comments link types as ``[`Name`]``; `kubectl explain` shows the
/// text raw, so the brackets go.
fn plain_descriptions(value: &mut Value) {
    match value {
        Value::Object(node) => {
            if let Some(Value::String(text)) = node.get_mut("description") {
                *text = text.replace("[`", "`").replace("`]", "`");
            }
            node.values_mut().for_each(plain_descriptions);
        }
        Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_value() -> Value {
        serde_json::to_value(schema().expect("the schema generates")).expect("JSON")
    }

    /// Visits every schema node (root, properties, items, additional
    /// properties) with its path.
    fn each_node(node: &Value, path: &str, visit: &mut dyn FnMut(&str, &Map<String, Value>)) {
        let Value::Object(map) = node else {
            panic!("{path}: a schema node is not an object");
        };
        visit(path, map);
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, child) in properties {
                each_node(child, &format!("{path}.{name}"), visit);
            }
        }
        if let Some(items) = map.get("items") {
            each_node(items, &format!("{path}[]"), visit);
        }
        if let Some(extra @ Value::Object(_)) = map.get("additionalProperties") {
            each_node(extra, &format!("{path}{{}}"), visit);
        }
    }

    /// Kubernetes' structural-schema rules, checked here because no API
    /// server runs in the tests (kubernetes-validate checks the CRD's
    /// shape, not these): every node typed unless it preserves unknown
    /// fields, no junctors or references, `properties` and `items` only
    /// on their own types, no `additionalProperties` beside `properties`,
    /// metadata left to the API server, and no `uniqueItems`.
    #[test]
    fn the_schema_is_structural() {
        let schema = schema_value();
        let mut nodes = 0;
        each_node(&schema, "", &mut |path, node| {
            nodes += 1;
            let kind = node.get("type").and_then(Value::as_str);
            let preserves =
                node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            assert!(kind.is_some() || preserves, "{path}: untyped node {node:?}");
            for banned in [
                "anyOf",
                "oneOf",
                "allOf",
                "not",
                "$ref",
                "$defs",
                "definitions",
                "uniqueItems",
            ] {
                assert!(!node.contains_key(banned), "{path}: has {banned}");
            }
            if node.contains_key("properties") {
                assert_eq!(kind, Some("object"), "{path}");
                assert!(!node.contains_key("additionalProperties"), "{path}");
            }
            if node.contains_key("items") {
                assert_eq!(kind, Some("array"), "{path}");
            }
            if kind == Some("array") {
                assert!(node.contains_key("items"), "{path}: an array without items");
            }
        });
        assert!(nodes > 300, "only {nodes} nodes: the job schema is missing");
        assert_eq!(
            schema["properties"]["metadata"],
            serde_json::json!({"type": "object"})
        );
    }

    /// Strict types, enums, bounds and descriptions reach the job schema.
    #[test]
    fn the_job_schema_is_strict_and_described() {
        let schema = schema_value();
        let job = &schema["properties"]["spec"]["properties"]["jobs"]["items"]["properties"];
        assert_eq!(job["captureStdout"]["type"], "boolean");
        assert_eq!(
            job["concurrencyPolicy"]["enum"],
            serde_json::json!(["Allow", "Forbid", "Replace"])
        );
        assert_eq!(
            job["onMissed"]["enum"],
            serde_json::json!(["skip", "run-once", "run-all"])
        );
        assert_eq!(job["killTimeout"]["minimum"], serde_json::json!(0.0));
        assert_eq!(
            job["executionTimeout"]["exclusiveMinimum"],
            serde_json::json!(true)
        );
        assert_eq!(
            job["onFailure"]["properties"]["retry"]["properties"]["maximumRetries"]["minimum"],
            serde_json::json!(-1.0)
        );
        assert_eq!(
            job["monitorResources"]["properties"]["history"]["maximum"],
            serde_json::json!(2000.0)
        );
        let jobs = &schema["properties"]["spec"]["properties"]["jobs"];
        assert_eq!(
            jobs["x-kubernetes-list-map-keys"],
            serde_json::json!(["name"])
        );
        let mut undescribed = Vec::new();
        each_node(&schema["properties"]["spec"], "spec", &mut |path, node| {
            let described = node
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| !d.is_empty() && !d.contains("[`"));
            // List items and map values are described by their parent.
            if !described && !path.ends_with("[]") && !path.ends_with('}') {
                undescribed.push(path.to_owned());
            }
        });
        assert!(undescribed.is_empty(), "no description: {undescribed:?}");
    }

    /// The printer columns read one value each (the server's Table API
    /// prints only the first match of a JSONPath): the count and the joined
    /// names the scheduler writes in status, the names only with `-o wide`.
    #[test]
    fn the_printer_columns_read_single_values_from_status() {
        let crd = crd().expect("the CRD generates");
        let columns = crd.spec.versions[0]
            .additional_printer_columns
            .clone()
            .expect("printer columns");
        let shown: Vec<(&str, &str, &str, i32)> = columns
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.type_.as_str(),
                    c.json_path.as_str(),
                    c.priority.unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("Jobs", "integer", ".status.jobCount", 0),
                ("Suspended", "boolean", ".spec.suspend", 0),
                ("Last Schedule", "date", ".status.lastScheduleTime", 0),
                (
                    "Accepted",
                    "string",
                    ".status.conditions[?(@.type==\"Accepted\")].status",
                    0
                ),
                ("Age", "date", ".metadata.creationTimestamp", 0),
                ("Names", "string", ".status.jobNames", 1),
            ]
        );
        for column in &columns {
            assert!(
                !column.json_path.contains("[*]"),
                "{}: a list path shows its first match only",
                column.name
            );
        }
        let status = &schema_value()["properties"]["status"]["properties"];
        assert_eq!(status["jobCount"]["type"], "integer");
        assert_eq!(status["jobNames"]["type"], "string");
    }

    /// `spec.suspend` has a structural default, so the API server stores
    /// `false` (and the Suspended column shows it) for a set without it;
    /// not nullable, so an explicit null is pruned and defaulted too.
    #[test]
    fn suspend_defaults_to_false() {
        let schema = schema_value();
        let suspend = &schema["properties"]["spec"]["properties"]["suspend"];
        assert_eq!(suspend["type"], "boolean");
        assert_eq!(suspend["default"], Value::Bool(false));
        assert!(suspend.get("nullable").is_none(), "{suspend}");
    }
}
