//! The object store behind the fake: resource types, objects, the global
//! resourceVersion counter, the bounded change history that watches resume
//! from, and the write rules (preconditions, generation, status subresource,
//! schema) the real API server applies.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use super::schema;
use super::select::{FieldSelector, LabelSelector};
use super::status::{self, bad_request, ApiError, Cause, Target};
use super::{RequestRecord, Settings};

/// One served resource: a built-in kind or a version of a CRD.
#[derive(Debug, Clone)]
pub(crate) struct ResourceType {
    /// API group ("" for core/v1).
    pub group: String,
    /// Version served at this path.
    pub version: String,
    /// Path segment of the collection (`configmaps`).
    pub plural: String,
    /// Singular name, for discovery.
    pub singular: String,
    /// Kind of the objects (`ConfigMap`).
    pub kind: String,
    /// Namespaced (true) or cluster-scoped.
    pub namespaced: bool,
    /// Whether `/status` is a subresource (then the main resource ignores
    /// status changes and the subresource ignores everything else).
    pub status_sub: bool,
    /// The version's openAPIV3Schema, for custom resources.
    pub schema: Option<Value>,
    /// Built-in kinds take strategic merge patches; custom resources do not.
    pub builtin: bool,
    /// Whether objects carry metadata.generation (CRs and CRDs do; ConfigMaps,
    /// Leases and Events do not).
    pub generation: bool,
    /// Whether DELETE answers with the deleted object (CRs, CRDs) rather than
    /// a Success Status (the other built-ins).
    pub delete_returns_object: bool,
    /// Field-selector paths supported besides metadata.name/namespace.
    pub fields: Vec<&'static str>,
    /// The CRD's name, for types a CRD registered.
    pub crd: Option<String>,
}

impl ResourceType {
    /// `v1` or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn target<'a>(&'a self, name: &'a str) -> Target<'a> {
        Target {
            group: &self.group,
            plural: &self.plural,
            name,
        }
    }
}

fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    fields: Vec<&'static str>,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_ascii_lowercase(),
        kind: kind.into(),
        namespaced: true,
        status_sub: false,
        schema: None,
        builtin: true,
        generation: false,
        delete_returns_object: false,
        fields,
        crd: None,
    }
}

/// One change, as kept in the history and sent to watches.
#[derive(Debug)]
pub(crate) struct Change {
    /// resourceVersion the change was stored at.
    pub rv: u64,
    /// Group of the changed object.
    pub group: String,
    /// Plural of the changed object.
    pub plural: String,
    /// Namespace of the changed object ("" when cluster-scoped).
    pub namespace: String,
    /// ADDED, MODIFIED or DELETED.
    pub kind: &'static str,
    /// The object as stored after the change (as last stored, for DELETED).
    pub object: Value,
    /// The object before a MODIFIED change, so a watch with a selector can
    /// turn "left the selection" into DELETED, as the watch cache does.
    pub old: Option<Value>,
}

/// What an open watch receives from the store.
#[derive(Debug, Clone)]
pub(crate) enum Feed {
    /// A committed change.
    Change(Arc<Change>),
    /// History was compacted under the watch: end it with 410 Expired.
    Expired,
    /// Outage: drop the connection.
    Cut,
}

/// How strictly unknown fields are treated (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and say so in a Warning header (server default).
    Warn,
    /// Refuse unknown fields with 400.
    Strict,
}

/// A successful write: the stored object and any warnings for the client.
pub(crate) struct Written {
    /// The object as stored.
    pub object: Value,
    /// Texts for `Warning` headers.
    pub warnings: Vec<String>,
}

type Key = (String, String, String, String);

/// Everything the fake knows.
pub(crate) struct Store {
    settings: Settings,
    rv: u64,
    uid_seq: u64,
    types: Vec<ResourceType>,
    objects: BTreeMap<Key, Value>,
    history: VecDeque<Arc<Change>>,
    /// resourceVersion of the newest change dropped from history; a watch
    /// from an older version cannot be served.
    compacted: u64,
    unavailable: bool,
    log: Vec<RequestRecord>,
    feed: broadcast::Sender<Feed>,
}

fn key(rt: &ResourceType, ns: &str, name: &str) -> Key {
    (
        rt.group.clone(),
        rt.plural.clone(),
        ns.to_string(),
        name.to_string(),
    )
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        // Just made sure it is an object.
        _ => unreachable!("metadata is an object"),
    }
}

const DNS1123: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

fn name_cause(name: &str) -> Option<Cause> {
    let re = regex::Regex::new(DNS1123).ok()?;
    if name.len() <= 253 && re.is_match(name) {
        return None;
    }
    Some(Cause {
        reason: "FieldValueInvalid",
        field: "metadata.name".into(),
        detail: format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ),
    })
}

/// The parts of an object that make up its "spec" for generation purposes:
/// everything but metadata, and but status when status is a subresource.
fn spec_part(obj: &Value, status_sub: bool) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if status_sub {
            m.remove("status");
        }
    }
    v
}

/// Object content without the fields the server itself bumps, to detect
/// no-op writes (which the real server answers without a new version):
/// the resourceVersion and the times of managedFields entries (a change
/// of ownership is a change; the same apply again is not).
fn content(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
        if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                entry.remove("time");
            }
        }
    }
    v
}

fn random_suffix(seed: u64) -> String {
    // The real server's alphabet for generateName (no vowels, no 0/1/3).
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..5)
        .map(|_| {
            x ^= x >> 29;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            ALPHABET[(x % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

impl Store {
    /// An empty store serving the built-in kinds.
    pub fn new(settings: Settings) -> Self {
        let event_fields = vec![
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ];
        let mut crd = builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            vec![],
        );
        crd.namespaced = false;
        crd.status_sub = true;
        crd.generation = true;
        crd.delete_returns_object = true;
        // The typed kinds' fields, as structural schemas, so unknown fields
        // are pruned (or refused under Strict) and wrong types refused, as
        // the real server's decoder does.
        let mut configmap = builtin("", "v1", "configmaps", "ConfigMap", vec![]);
        configmap.schema = Some(json!({"type": "object", "properties": {
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
            "binaryData": {"type": "object", "additionalProperties": {"type": "string"}},
            "immutable": {"type": "boolean"},
        }}));
        let mut lease = builtin("coordination.k8s.io", "v1", "leases", "Lease", vec![]);
        lease.schema = Some(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "holderIdentity": {"type": "string"},
                "leaseDurationSeconds": {"type": "integer"},
                "acquireTime": {"type": "string"},
                "renewTime": {"type": "string"},
                "leaseTransitions": {"type": "integer"},
                "strategy": {"type": "string"},
                "preferredHolder": {"type": "string"},
            }}}}),
        );
        let mut new_event = builtin(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            vec![
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "reason",
                "reportingController",
                "type",
            ],
        );
        let free = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        new_event.schema = Some(json!({"type": "object", "properties": {
            "eventTime": {"type": "string"},
            "series": {"type": "object", "properties": {"count": {"type": "integer"}, "lastObservedTime": {"type": "string"}}},
            "reportingController": {"type": "string"},
            "reportingInstance": {"type": "string"},
            "action": {"type": "string"},
            "reason": {"type": "string"},
            "regarding": free,
            "related": free,
            "note": {"type": "string"},
            "type": {"type": "string"},
            "deprecatedSource": free,
            "deprecatedFirstTimestamp": {"type": "string"},
            "deprecatedLastTimestamp": {"type": "string"},
            "deprecatedCount": {"type": "integer"},
        }}));
        let types = vec![
            configmap,
            builtin("", "v1", "events", "Event", event_fields),
            new_event,
            lease,
            crd,
        ];
        let (feed, _) = broadcast::channel(4096);
        Self {
            settings,
            rv: 1,
            uid_seq: 0,
            types,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted: 0,
            unavailable: false,
            log: Vec::new(),
            feed,
        }
    }

    /// The current global resourceVersion.
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The knobs the fake was started with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The request log, oldest first.
    pub fn log(&self) -> &[RequestRecord] {
        &self.log
    }

    /// Append one request to the log.
    pub fn record(&mut self, r: RequestRecord) {
        self.log.push(r);
    }

    /// Forget the request log.
    pub fn clear_log(&mut self) {
        self.log.clear();
    }

    /// Whether the outage switch is on.
    pub fn unavailable(&self) -> bool {
        self.unavailable
    }

    /// Flip the outage switch; turning it on cuts open watches.
    pub fn set_unavailable(&mut self, down: bool) {
        self.unavailable = down;
        if down {
            let _ = self.feed.send(Feed::Cut);
        }
    }

    /// End every open watch (the connection drops, as when a server dies).
    pub fn cut_watches(&mut self) {
        let _ = self.feed.send(Feed::Cut);
    }

    /// Compact all history and end open watches with 410 Expired.
    pub fn expire_history(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
        let _ = self.feed.send(Feed::Expired);
    }

    /// Every served resource type.
    pub fn types(&self) -> &[ResourceType] {
        &self.types
    }

    /// The type served at group/version/plural, if any.
    pub fn find_type(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    }

    fn type_for(&self, api_version: &str, kind: &str) -> Option<ResourceType> {
        self.types
            .iter()
            .find(|t| t.api_version() == api_version && t.kind == kind)
            .cloned()
    }

    /// The stored object by apiVersion, kind, namespace and name.
    pub fn peek(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
        let rt = self.type_for(api_version, kind)?;
        self.objects.get(&key(&rt, ns, name)).cloned()
    }

    /// Give `obj` the apiVersion/kind of the version it is read through.
    fn present(rt: &ResourceType, mut obj: Value) -> Value {
        obj["apiVersion"] = json!(rt.api_version());
        obj["kind"] = json!(rt.kind);
        obj
    }

    /// Store a change, bump the global version and tell the watches.
    fn commit(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        mut obj: Value,
        kind: &'static str,
        old: Option<Value>,
    ) -> Value {
        self.rv += 1;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(self.rv.to_string()));
        let k = key(rt, ns, name);
        if kind == "DELETED" {
            self.objects.remove(&k);
        } else {
            self.objects.insert(k, obj.clone());
        }
        let change = Arc::new(Change {
            rv: self.rv,
            group: rt.group.clone(),
            plural: rt.plural.clone(),
            namespace: ns.to_string(),
            kind,
            object: obj.clone(),
            old,
        });
        self.history.push_back(change.clone());
        while self.history.len() > self.settings.history_limit.max(1) {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted = dropped.rv;
            }
        }
        let _ = self.feed.send(Feed::Change(change));
        obj
    }

    /// Check a body's apiVersion and kind against the endpoint.
    fn check_kind(rt: &ResourceType, body: &Value) -> Result<(), ApiError> {
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api_version = body
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind.is_empty() {
            return Err(bad_request("Object 'Kind' is missing in request body"));
        }
        if kind != rt.kind {
            return Err(bad_request(format!(
                "{kind} in version {:?} cannot be handled as a {}: the kind does not match the endpoint",
                rt.version, rt.kind
            )));
        }
        if api_version != rt.api_version() {
            return Err(bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
        Ok(())
    }

    /// Type checks for built-in kinds whose shape tests rely on.
    fn check_builtin(rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut causes = Vec::new();
        if rt.kind == "ConfigMap" {
            for field in ["data", "binaryData"] {
                if let Some(map) = obj.get(field).and_then(Value::as_object) {
                    for k in map.keys() {
                        let key_ok = !k.is_empty()
                            && k.len() <= 253
                            && k.chars()
                                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                        if !key_ok {
                            causes.push(Cause {
                                reason: "FieldValueInvalid",
                                field: format!("{field}[{k}]"),
                                detail: format!("Invalid value: {k:?}: a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"),
                            });
                        }
                    }
                }
            }
            if let Some(old) = old {
                if old.get("immutable") == Some(&Value::Bool(true)) {
                    if old.get("data") != obj.get("data")
                        || old.get("binaryData") != obj.get("binaryData")
                    {
                        causes.push(Cause {
                            reason: "FieldValueForbidden",
                            field: "data".into(),
                            detail: "Forbidden: field is immutable when `immutable` is set".into(),
                        });
                    }
                    if obj.get("immutable") != Some(&Value::Bool(true)) {
                        causes.push(Cause {
                            reason: "FieldValueForbidden",
                            field: "immutable".into(),
                            detail: "Forbidden: field is immutable when `immutable` is set".into(),
                        });
                    }
                }
            }
        }
        if rt.kind == "Lease" {
            let spec = obj.get("spec");
            if let Some(d) = spec
                .and_then(|s| s.get("leaseDurationSeconds"))
                .and_then(Value::as_i64)
            {
                if d <= 0 {
                    causes.push(Cause {
                        reason: "FieldValueInvalid",
                        field: "spec.leaseDurationSeconds".into(),
                        detail: format!("Invalid value: {d}: must be greater than 0"),
                    });
                }
            }
            if let Some(t) = spec
                .and_then(|s| s.get("leaseTransitions"))
                .and_then(Value::as_i64)
            {
                if t < 0 {
                    causes.push(Cause {
                        reason: "FieldValueInvalid",
                        field: "spec.leaseTransitions".into(),
                        detail: format!("Invalid value: {t}: must be greater than or equal to 0"),
                    });
                }
            }
        }
        // events.k8s.io/v1 Events must say who reported what and when.
        if rt.kind == "Event" && rt.group == "events.k8s.io" && old.is_none() {
            for field in [
                "eventTime",
                "reportingController",
                "reportingInstance",
                "action",
                "reason",
            ] {
                if obj
                    .get(field)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    causes.push(Cause {
                        reason: "FieldValueRequired",
                        field: field.into(),
                        detail: "Required value".into(),
                    });
                }
            }
            let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
            if kind != "Normal" && kind != "Warning" {
                causes.push(Cause {
                    reason: "FieldValueNotSupported",
                    field: "type".into(),
                    detail: format!(
                        "Unsupported value: {kind:?}: supported values: \"Normal\", \"Warning\""
                    ),
                });
            }
            if obj
                .pointer("/series/count")
                .and_then(Value::as_i64)
                .is_some_and(|c| c < 2)
            {
                causes.push(Cause {
                    reason: "FieldValueInvalid",
                    field: "series.count".into(),
                    detail: "Invalid value: should be at least 2".into(),
                });
            }
        }
        causes
    }

    /// Prune/default/validate a custom resource; refuse per fieldValidation.
    fn check_schema(
        rt: &ResourceType,
        obj: &mut Value,
        name: &str,
        fv: FieldValidation,
    ) -> Result<Vec<String>, ApiError> {
        let Some(schema) = &rt.schema else {
            return Ok(Vec::new());
        };
        let out = schema::apply(obj, schema);
        if fv == FieldValidation::Strict && !out.unknown.is_empty() {
            let list: Vec<String> = out
                .unknown
                .iter()
                .map(|u| format!("unknown field {u:?}"))
                .collect();
            return Err(bad_request(format!(
                "strict decoding error: {}",
                list.join(", ")
            )));
        }
        if !out.causes.is_empty() && rt.builtin {
            // For typed kinds a wrong type fails decoding: 400, not 422.
            let texts: Vec<String> = out
                .causes
                .iter()
                .map(|c| format!("{}: {}", c.field, c.detail))
                .collect();
            return Err(bad_request(format!(
                "error decoding request body: {}",
                texts.join(", ")
            )));
        }
        if !out.causes.is_empty() {
            return Err(status::invalid(&rt.kind, &rt.group, name, &out.causes));
        }
        Ok(match fv {
            FieldValidation::Warn => out
                .unknown
                .iter()
                .map(|u| format!("unknown field {u:?}"))
                .collect(),
            _ => Vec::new(),
        })
    }

    /// List a collection (one namespace or all), filtered and paged.
    pub fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        limit: Option<usize>,
        cont: Option<&str>,
    ) -> Result<Value, ApiError> {
        let (list_rv, after) = match cont {
            Some(token) => {
                let (rv, last) = token
                    .split_once(':')
                    .ok_or_else(|| bad_request("continue key is not valid: malformed token"))?;
                (rv.to_string(), Some(last.to_string()))
            }
            None => (self.rv.to_string(), None),
        };
        let mut items = Vec::new();
        let mut next = None;
        for ((g, p, ons, oname), obj) in &self.objects {
            if *g != rt.group || *p != rt.plural || ns.is_some_and(|n| n != ons) {
                continue;
            }
            let pos = format!("{ons}/{oname}");
            if after.as_ref().is_some_and(|a| pos <= *a) {
                continue;
            }
            if !labels.matches(obj) || !fields.matches(obj) {
                continue;
            }
            if limit.is_some_and(|l| l > 0 && items.len() == l) {
                next = Some(format!("{list_rv}:{}", items_last(&items)));
                break;
            }
            items.push(Self::present(rt, obj.clone()));
        }
        let mut meta = json!({"resourceVersion": list_rv});
        if let Some(n) = next {
            meta["continue"] = json!(n);
        }
        Ok(json!({
            "kind": format!("{}List", rt.kind),
            "apiVersion": rt.api_version(),
            "metadata": meta,
            "items": items,
        }))
    }

    /// One object, or 404.
    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        self.objects
            .get(&key(rt, ns, name))
            .map(|o| Self::present(rt, o.clone()))
            .ok_or_else(|| status::not_found(&rt.target(name)))
    }

    /// Create an object in `ns` (ignored for cluster-scoped types).
    pub fn create(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        mut body: Value,
        fv: FieldValidation,
    ) -> Result<Written, ApiError> {
        Self::check_kind(rt, &body)?;
        let body_ns = meta_str(&body, "namespace").unwrap_or_default().to_string();
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(bad_request("the namespace of the provided object does not match the namespace sent on the request"));
        }
        if meta_str(&body, "resourceVersion").is_some_and(|s| !s.is_empty()) {
            return Err(status::internal(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let mut name = meta_str(&body, "name").unwrap_or_default().to_string();
        if name.is_empty() {
            let prefix = meta_str(&body, "generateName")
                .unwrap_or_default()
                .to_string();
            if prefix.is_empty() {
                return Err(status::invalid(
                    &rt.kind,
                    &rt.group,
                    "",
                    &[Cause {
                        reason: "FieldValueRequired",
                        field: "metadata.name".into(),
                        detail: "Required value: name or generateName is required".into(),
                    }],
                ));
            }
            name = format!("{prefix}{}", random_suffix(self.rv ^ (self.uid_seq << 20)));
        }
        let mut causes = Vec::new();
        if rt.kind != "Event" {
            causes.extend(name_cause(&name));
        }
        causes.extend(Self::check_builtin(rt, &body, None));
        if !causes.is_empty() {
            return Err(status::invalid(&rt.kind, &rt.group, &name, &causes));
        }
        if self.objects.contains_key(&key(rt, ns, &name)) {
            return Err(status::already_exists(&rt.target(&name)));
        }
        if rt.status_sub && rt.crd.is_some() {
            // Status is written through the subresource only.
            if let Some(m) = body.as_object_mut() {
                m.remove("status");
            }
        }
        let warnings = Self::check_schema(rt, &mut body, &name, fv)?;
        self.uid_seq += 1;
        let uid = format!("6b1f0c2e-0000-4000-8000-{:012x}", self.uid_seq);
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        {
            let m = meta_mut(&mut body);
            m.insert("name".into(), json!(name));
            if rt.namespaced {
                m.insert("namespace".into(), json!(ns));
            } else {
                m.remove("namespace");
            }
            m.insert("uid".into(), json!(uid));
            m.insert("creationTimestamp".into(), json!(now));
            m.remove("deletionTimestamp");
            m.remove("generation");
            if rt.generation {
                m.insert("generation".into(), json!(1));
            }
        }
        let mut body = Self::present(rt, body);
        if rt.kind == "CustomResourceDefinition" {
            body = self.register_crd(body)?;
        }
        let object = self.commit(rt, ns, &name, body, "ADDED", None);
        Ok(Written { object, warnings })
    }

    /// Apply an update to the stored object: `new` is the full desired
    /// object (from PUT or from applying a patch to the stored one).
    pub fn update(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        new: Value,
        status_only: bool,
        fv: FieldValidation,
    ) -> Result<Written, ApiError> {
        Self::check_kind(rt, &new)?;
        let target = rt.target(name);
        let old = self
            .objects
            .get(&key(rt, ns, name))
            .cloned()
            .ok_or_else(|| status::not_found(&target))?;
        let body_name = meta_str(&new, "name").unwrap_or_default();
        if body_name != name {
            return Err(bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_ns = meta_str(&new, "namespace").unwrap_or_default();
        if rt.namespaced && !body_ns.is_empty() && body_ns != ns {
            return Err(bad_request("the namespace of the provided object does not match the namespace sent on the request"));
        }
        let old_rv = meta_str(&old, "resourceVersion")
            .unwrap_or_default()
            .to_string();
        if let Some(rv) = meta_str(&new, "resourceVersion").filter(|s| !s.is_empty()) {
            if rv != old_rv {
                return Err(status::conflict(&target));
            }
        }
        if meta_str(&new, "uid").is_some_and(|u| !u.is_empty() && Some(u) != meta_str(&old, "uid"))
        {
            return Err(status::precondition_failed(
                &target,
                "UID in precondition does not match the UID in the object",
            ));
        }

        let mut result = if status_only {
            let mut r = old.clone();
            match new.get("status") {
                Some(s) => r["status"] = s.clone(),
                None => {
                    if let Some(m) = r.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            // managedFields are the one piece of metadata a status write
            // carries over (the real status strategy keeps them).
            if let Some(managed) = new.pointer("/metadata/managedFields") {
                meta_mut(&mut r).insert("managedFields".into(), managed.clone());
            }
            r
        } else {
            let mut r = new.clone();
            // A write that leaves managedFields out keeps the stored ones.
            if r.pointer("/metadata/managedFields").is_none() {
                if let Some(managed) = old.pointer("/metadata/managedFields") {
                    meta_mut(&mut r).insert("managedFields".into(), managed.clone());
                }
            }
            if rt.status_sub {
                match old.get("status") {
                    Some(s) => r["status"] = s.clone(),
                    None => {
                        if let Some(m) = r.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            // Server-owned metadata always comes from the stored object.
            let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
            let m = meta_mut(&mut r);
            for f in [
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "namespace",
                "name",
            ] {
                match old_meta.get(f) {
                    Some(v) => {
                        m.insert(f.into(), v.clone());
                    }
                    None => {
                        m.remove(f);
                    }
                }
            }
            r
        };
        let mut causes = Self::check_builtin(rt, &result, Some(&old));
        if !causes.is_empty() {
            return Err(status::invalid(
                &rt.kind,
                &rt.group,
                name,
                &std::mem::take(&mut causes),
            ));
        }
        let warnings = Self::check_schema(rt, &mut result, name, fv)?;
        if rt.generation && spec_part(&old, rt.status_sub) != spec_part(&result, rt.status_sub) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta_mut(&mut result).insert("generation".into(), json!(g + 1));
        }
        meta_mut(&mut result).insert("resourceVersion".into(), json!(old_rv));
        let result = Self::present(rt, result);
        if content(&result) == content(&Self::present(rt, old.clone())) {
            // A write that changes nothing keeps the version: no event.
            return Ok(Written {
                object: result,
                warnings,
            });
        }
        let result = if rt.kind == "CustomResourceDefinition" {
            self.register_crd(result)?
        } else {
            result
        };
        // The last finalizer gone from an object being deleted ends it.
        let finalizers_empty = result
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|a| a.is_empty());
        if result.pointer("/metadata/deletionTimestamp").is_some() && finalizers_empty {
            let object = self.commit(rt, ns, name, result, "DELETED", Some(old));
            return Ok(Written { object, warnings });
        }
        let object = self.commit(rt, ns, name, result, "MODIFIED", Some(old));
        Ok(Written { object, warnings })
    }

    /// A server-side apply on the status subresource: `status` (None: the
    /// apply sent none) replaces the stored status, and `entry` replaces
    /// the managedFields entry of the same manager, operation and
    /// subresource. 404 when the object does not exist (an apply to a
    /// subresource never creates).
    pub fn apply_status(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        status: Option<Value>,
        entry: Value,
        fv: FieldValidation,
    ) -> Result<Written, ApiError> {
        let mut new = self.current(rt, ns, name)?;
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        let same = |e: &Value| {
            ["manager", "operation", "subresource"]
                .iter()
                .all(|k| e.get(*k) == entry.get(*k))
        };
        let meta = meta_mut(&mut new);
        let mut entries: Vec<Value> = meta
            .get("managedFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        entries.retain(|e| !same(e));
        entries.push(entry);
        meta.insert("managedFields".into(), Value::Array(entries));
        self.update(rt, ns, name, new, true, fv)
    }

    /// The stored object a patch is applied to, or 404.
    pub fn current(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        self.get(rt, ns, name)
    }

    /// Delete an object (or mark it, while finalizers remain).
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        options: &Value,
    ) -> Result<Value, ApiError> {
        let target = rt.target(name);
        let old = self
            .objects
            .get(&key(rt, ns, name))
            .cloned()
            .ok_or_else(|| status::not_found(&target))?;
        // Delete preconditions: each names a metadata field that must
        // still hold the given value (the message spells it as the real
        // server does).
        for (field, spelled) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            let Some(wanted) = options
                .pointer(&format!("/preconditions/{field}"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            if Some(wanted) != meta_str(&old, field) {
                return Err(status::precondition_failed(
                    &target,
                    &format!(
                        "{spelled} in precondition: {wanted}, {spelled} in object meta: {}",
                        meta_str(&old, field).unwrap_or_default()
                    ),
                ));
            }
        }
        let has_finalizers = old
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if has_finalizers {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(Self::present(rt, old));
            }
            let mut marked = old.clone();
            let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
            meta_mut(&mut marked).insert("deletionTimestamp".into(), json!(now));
            meta_mut(&mut marked).insert("deletionGracePeriodSeconds".into(), json!(0));
            if rt.generation {
                let g = old
                    .pointer("/metadata/generation")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                meta_mut(&mut marked).insert("generation".into(), json!(g + 1));
            }
            let obj = self.commit(rt, ns, name, marked, "MODIFIED", Some(old));
            return Ok(Self::present(rt, obj));
        }
        let obj = self.commit(rt, ns, name, old.clone(), "DELETED", Some(old));
        if rt.kind == "CustomResourceDefinition" {
            self.unregister_crd(name);
        }
        if rt.delete_returns_object {
            Ok(Self::present(rt, obj))
        } else {
            Ok(json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {"name": name, "group": rt.group, "kind": rt.plural, "uid": meta_str(&obj, "uid")},
            }))
        }
    }

    /// Open a watch: the events to send first, then a receiver for live
    /// ones; taken under one lock so nothing falls between the two.
    #[allow(clippy::too_many_arguments)]
    pub fn watch(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        from: Option<&str>,
        initial_events: bool,
    ) -> Result<(Vec<Value>, broadcast::Receiver<Feed>, u64), ApiError> {
        let rx = self.feed.subscribe();
        let mut first = Vec::new();
        let from = from.filter(|s| !s.is_empty() && *s != "0");
        match from {
            None => {
                for ((g, p, ons, _), obj) in &self.objects {
                    if *g == rt.group
                        && *p == rt.plural
                        && ns.is_none_or(|n| n == ons)
                        && labels.matches(obj)
                        && fields.matches(obj)
                    {
                        first.push(
                            json!({"type": "ADDED", "object": Self::present(rt, obj.clone())}),
                        );
                    }
                }
                if initial_events {
                    first.push(json!({"type": "BOOKMARK", "object": {
                        "kind": rt.kind, "apiVersion": rt.api_version(),
                        "metadata": {"resourceVersion": self.rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}},
                    }}));
                }
            }
            Some(text) => {
                let n: u64 = text
                    .parse()
                    .map_err(|_| bad_request(format!("invalid resource version: {text:?}")))?;
                if n < self.compacted {
                    first.push(json!({"type": "ERROR", "object": expired_status(&format!("too old resource version: {n} ({})", self.compacted + 1))}));
                    return Ok((first, rx, self.rv));
                }
                for change in self.history.iter().filter(|c| c.rv > n) {
                    if let Some(ev) = filter_change(rt, ns, labels, fields, change) {
                        first.push(ev);
                    }
                }
            }
        }
        Ok((first, rx, self.rv))
    }

    /// Register (or re-register) the types a CRD serves; validate the parts
    /// the real server refuses, and fill in its status as established.
    fn register_crd(&mut self, mut crd: Value) -> Result<Value, ApiError> {
        let name = meta_str(&crd, "name").unwrap_or_default().to_string();
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let plural = crd
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let kind = crd
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let singular = crd
            .pointer("/spec/names/singular")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_ascii_lowercase());
        let scope = crd
            .pointer("/spec/scope")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut causes = Vec::new();
        let mut need = |ok: bool, field: &str, detail: String| {
            if !ok {
                causes.push(Cause {
                    reason: "FieldValueInvalid",
                    field: field.into(),
                    detail,
                });
            }
        };
        need(!group.is_empty(), "spec.group", "Required value".into());
        need(
            !plural.is_empty(),
            "spec.names.plural",
            "Required value".into(),
        );
        need(!kind.is_empty(), "spec.names.kind", "Required value".into());
        need(
            name == format!("{plural}.{group}"),
            "metadata.name",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        );
        need(
            scope == "Namespaced" || scope == "Cluster",
            "spec.scope",
            format!("Unsupported value: {scope:?}: supported values: \"Cluster\", \"Namespaced\""),
        );
        need(
            !versions.is_empty(),
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version".into(),
        );
        let storage = versions
            .iter()
            .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
            .count();
        need(
            versions.is_empty() || storage == 1,
            "spec.versions",
            format!(
                "Invalid value: {storage}: must have exactly one version marked as storage version"
            ),
        );
        for (i, v) in versions.iter().enumerate() {
            need(
                v.pointer("/schema/openAPIV3Schema").is_some(),
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "Required value: schemas are required".into(),
            );
        }
        for (i, v) in versions.iter().enumerate() {
            if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
                let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
                causes.extend(schema::structural_causes(s, &path));
            }
        }
        if !causes.is_empty() {
            return Err(status::invalid(
                "CustomResourceDefinition",
                "apiextensions.k8s.io",
                &name,
                &causes,
            ));
        }
        self.types
            .retain(|t| t.crd.as_deref() != Some(name.as_str()));
        for v in &versions {
            if v.get("served") == Some(&Value::Bool(false)) {
                continue;
            }
            self.types.push(ResourceType {
                group: group.clone(),
                version: v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                plural: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                namespaced: scope == "Namespaced",
                status_sub: v.pointer("/subresources/status").is_some(),
                schema: v.pointer("/schema/openAPIV3Schema").cloned(),
                builtin: false,
                generation: true,
                delete_returns_object: true,
                fields: vec![],
                crd: Some(name.clone()),
            });
        }
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        crd["status"] = json!({
            "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({})),
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
            ],
            "storedVersions": versions.iter().filter(|v| v.get("storage") == Some(&Value::Bool(true))).filter_map(|v| v.get("name").cloned()).collect::<Vec<_>>(),
        });
        Ok(crd)
    }

    fn unregister_crd(&mut self, name: &str) {
        let gone: Vec<ResourceType> = self
            .types
            .iter()
            .filter(|t| t.crd.as_deref() == Some(name))
            .cloned()
            .collect();
        self.types.retain(|t| t.crd.as_deref() != Some(name));
        if let Some(rt) = gone.first() {
            let keys: Vec<Key> = self
                .objects
                .keys()
                .filter(|(g, p, _, _)| *g == rt.group && *p == rt.plural)
                .cloned()
                .collect();
            for k in keys {
                if let Some(obj) = self.objects.get(&k).cloned() {
                    self.commit(rt, &k.2, &k.3, obj.clone(), "DELETED", Some(obj));
                }
            }
        }
    }

    /// Create a CRD as a POST would, registering its types.
    pub fn create_crd(&mut self, crd: Value) -> Result<Value, ApiError> {
        let rt = self
            .find_type("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .ok_or_else(|| status::no_route("customresourcedefinitions"))?;
        let mut crd = crd;
        if crd.get("kind").is_none() {
            crd["kind"] = json!("CustomResourceDefinition");
            crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
        }
        self.create(&rt, "", crd, FieldValidation::Ignore)
            .map(|w| w.object)
    }

    /// Create an object from its own apiVersion/kind/namespace (test seeding).
    pub fn seed(&mut self, obj: Value) -> Result<Value, ApiError> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let rt = self
            .type_for(api_version, kind)
            .ok_or_else(|| bad_request(format!("no resource serves {api_version} {kind}")))?;
        let ns = if rt.namespaced {
            meta_str(&obj, "namespace").unwrap_or("default").to_string()
        } else {
            String::new()
        };
        self.create(&rt, &ns, obj, FieldValidation::Strict)
            .map(|w| w.object)
    }
}

fn items_last(items: &[Value]) -> String {
    items
        .last()
        .map(|o| {
            format!(
                "{}/{}",
                meta_str(o, "namespace").unwrap_or_default(),
                meta_str(o, "name").unwrap_or_default()
            )
        })
        .unwrap_or_default()
}

/// The Status a watch sends in an ERROR event when it cannot go on.
pub(crate) fn expired_status(message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Expired",
        "code": 410,
    })
}

/// Turn a stored change into the event a given watch sees, if any.
pub(crate) fn filter_change(
    rt: &ResourceType,
    ns: Option<&str>,
    labels: &LabelSelector,
    fields: &FieldSelector,
    c: &Change,
) -> Option<Value> {
    if c.group != rt.group || c.plural != rt.plural || ns.is_some_and(|n| n != c.namespace) {
        return None;
    }
    let sel = |o: &Value| labels.matches(o) && fields.matches(o);
    let now = sel(&c.object);
    let kind = match c.kind {
        "MODIFIED" => {
            let before = c.old.as_ref().is_some_and(sel);
            match (before, now) {
                (true, true) => "MODIFIED",
                (false, true) => "ADDED",
                (true, false) => "DELETED",
                (false, false) => return None,
            }
        }
        other if now => other,
        _ => return None,
    };
    Some(json!({"type": kind, "object": Store::present(rt, c.object.clone())}))
}
