//! What the benchmarks against a real kube-apiserver share (benches/kube.rs
//! with `KUBE_BENCH_SERVER=real`, benches/kube_replicas.rs): the server
//! from `KUBEBUILDER_ASSETS` (tests/support/envtest.rs) with the committed
//! CRD established, a client as the bench's own admin identity,
//! concurrent creates, the server's processes (for their CPU time), and
//! the server's audit log read by user over a time window.
//!
//! The including file declares `mod certs;` and `mod envtest;` at its root
//! (`#[path]` to tests/support), which envtest.rs reaches as `super::certs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use kube::api::PostParams;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use serde_json::{json, Value};

use crate::envtest::ApiServer;

/// The CRD as committed (the output of `cronstable crd`).
pub const CRD_YAML: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/crds/cronjobset.yaml"));

/// Creates in flight at once: enough to keep the server busy on two cores
/// (one at a time, 1,000 sets take several times longer).
pub const CREATE_CONCURRENCY: usize = 16;

/// The user the bench's own requests are made as (creates, edits), so the
/// audit log tells them from the daemons'.
pub const BENCH_USER: &str = "bench-client";

/// A real kube-apiserver with the CronJobSet CRD, and a client.
pub struct Real {
    /// The server (its folder holds the audit log and kubeconfigs).
    pub server: ApiServer,
    /// A client as [`BENCH_USER`].
    pub client: Client,
}

/// The CronJobSet resource.
pub fn cronjobsets() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cronstable.io", "v1alpha1", "CronJobSet"),
        "cronjobsets",
    )
}

impl Real {
    /// Starts the server and establishes the CRD; `None` (after saying
    /// why) when `KUBEBUILDER_ASSETS` is unset.
    pub async fn start(bench: &str) -> Option<Real> {
        let server = ApiServer::start(bench)?;
        let crd = server.dir().join("crd.yaml");
        std::fs::write(&crd, CRD_YAML).expect("write the CRD");
        let crd = crd.display().to_string();
        let (ok, _, err) = server.kubectl(&["apply", "-f", &crd]);
        assert!(ok, "kubectl apply the committed CRD: {err}");
        let (ok, _, err) = server.kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/cronjobsets.cronstable.io",
        ]);
        assert!(ok, "the CRD is established: {err}");
        let path = server.dir().join("bench.kubeconfig");
        server.write_kubeconfig_as(&path, BENCH_USER, "default");
        let client = client_for(&path).await;
        Some(Real { server, client })
    }

    /// Creates `namespace` (once).
    pub fn namespace(&self, namespace: &str) {
        let (ok, _, err) = self.server.kubectl(&["create", "namespace", namespace]);
        assert!(
            ok || err.contains("AlreadyExists"),
            "create namespace {namespace}: {err}"
        );
    }

    /// Writes a kubeconfig for an admin called `user` whose context
    /// namespace is `namespace`; returns its path.
    pub fn kubeconfig(&self, user: &str, namespace: &str) -> PathBuf {
        let path = self
            .server
            .dir()
            .join(format!("{user}-{namespace}.kubeconfig"));
        self.server.write_kubeconfig_as(&path, user, namespace);
        path
    }

    /// Creates every object (CronJobSets) in `namespace`,
    /// [`CREATE_CONCURRENCY`] at a time, retrying what the server refuses
    /// for load (429, 5xx); returns how long it took.
    pub async fn create_sets(&self, namespace: &str, objects: Vec<Value>) -> Duration {
        self.namespace(namespace);
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &cronjobsets());
        let started = Instant::now();
        let results: Vec<Result<(), String>> = futures_util::stream::iter(objects)
            .map(|object| {
                let api = api.clone();
                async move {
                    let body: DynamicObject =
                        serde_json::from_value(object).map_err(|e| e.to_string())?;
                    for _ in 0..20 {
                        match api.create(&PostParams::default(), &body).await {
                            Ok(_) => return Ok(()),
                            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
                            Err(kube::Error::Api(s)) if s.code == 429 || s.code >= 500 => {
                                tokio::time::sleep(Duration::from_millis(200)).await;
                            }
                            Err(e) => return Err(format!("create {:?}: {e}", body.metadata.name)),
                        }
                    }
                    Err(format!("create {:?}: refused 20 times", body.metadata.name))
                }
            })
            .buffer_unordered(CREATE_CONCURRENCY)
            .collect()
            .await;
        if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
            panic!("creating the sets failed: {e}");
        }
        started.elapsed()
    }

    /// A merge patch of one CronJobSet; whether the server accepted it.
    pub async fn patch_set(&self, namespace: &str, name: &str, patch: Value) -> bool {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &cronjobsets());
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| eprintln!("patch {namespace}/{name}: {e}"))
            .is_ok()
    }

    /// Creates a ConfigMap `name` in `namespace` holding `data`.
    pub fn configmap(&self, namespace: &str, name: &str, data: Value) {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        });
        let (ok, _, err) = self.server.kubectl_with(
            &self.server.admin_kubeconfig(),
            &["apply", "-f", "-"],
            Some(&object.to_string()),
        );
        assert!(ok, "create ConfigMap {namespace}/{name}: {err}");
    }

    /// The pids of this server's etcd and kube-apiserver (their command
    /// lines name its folder).
    pub fn pids(&self) -> Vec<u32> {
        let dir = self.server.dir().display().to_string();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|c| String::from_utf8_lossy(&c).contains(&dir))
                    .unwrap_or(false)
            })
            .collect()
    }

    /// The audit log's requests received in `[from, to)`, one per request
    /// (a request's stages share its `auditID`).
    pub fn requests_between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<Value> {
        let mut seen = std::collections::HashSet::new();
        self.server
            .audit_events()
            .into_iter()
            .filter(|e| {
                received(e).is_some_and(|t| t >= from && t < to)
                    && seen.insert(e["auditID"].as_str().unwrap_or_default().to_owned())
            })
            .collect()
    }
}

/// A client from a kubeconfig file.
pub async fn client_for(path: &Path) -> Client {
    let kubeconfig = Kubeconfig::read_from(path).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(config).expect("client builds")
}

/// When the server received the request of an audit event.
fn received(event: &Value) -> Option<DateTime<Utc>> {
    let text = event["requestReceivedTimestamp"].as_str()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Milliseconds from receiving a request to answering it, from its audit
/// event (`stageTimestamp` of the ResponseComplete stage).
pub fn latency_ms(event: &Value) -> Option<f64> {
    if event["stage"].as_str() != Some("ResponseComplete") {
        return None;
    }
    let done = DateTime::parse_from_rfc3339(event["stageTimestamp"].as_str()?).ok()?;
    let took = done.with_timezone(&Utc) - received(event)?;
    Some(took.num_microseconds()? as f64 / 1e3)
}

/// `verb resource[/subresource]` of an audit event (`get leases`,
/// `patch cronjobsets/status`, `watch configmaps`); a request without an
/// object (discovery, `/version`) is `verb <path>`.
pub fn verb_resource(event: &Value) -> String {
    let verb = event["verb"].as_str().unwrap_or("?");
    let object = &event["objectRef"];
    match object["resource"].as_str() {
        Some(resource) => match object["subresource"].as_str() {
            Some(sub) => format!("{verb} {resource}/{sub}"),
            None => format!("{verb} {resource}"),
        },
        None => format!("{verb} {}", event["requestURI"].as_str().unwrap_or("?")),
    }
}

/// Requests per `verb resource` made by `user`.
pub fn by_verb(requests: &[Value], user: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for event in requests
        .iter()
        .filter(|e| e["user"]["username"].as_str() == Some(user))
    {
        *out.entry(verb_resource(event)).or_default() += 1;
    }
    out
}

/// `get leases 30, update leases 30` (most first).
pub fn describe(counts: &BTreeMap<String, usize>) -> String {
    let mut pairs: Vec<(&String, &usize)> = counts.iter().collect();
    pairs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if pairs.is_empty() {
        return "none".to_owned();
    }
    pairs
        .iter()
        .map(|(what, n)| format!("{what} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// utime + stime of a process, in clock ticks (100 a second).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// The summed CPU ticks of `pids` (those still alive).
pub fn cpu_ticks_of(pids: &[u32]) -> u64 {
    pids.iter().filter_map(|p| cpu_ticks(*p)).sum()
}
