//! Kubernetes mode under test: an API server with the CronJobSet CRD
//! installed — the real kube-apiserver from `KUBEBUILDER_ASSETS`
//! ([`Cluster::real`], see `envtest`) or the fake (`kube_fake`,
//! [`Cluster::start`], kept for faults a real server cannot produce on
//! demand) — a client playing the user's `kubectl` on a Tokio runtime the
//! test owns, and the built binary started with `--kube --kubeconfig
//! <file>` against it.
//!
//! The tests themselves are plain synchronous `#[test]`s: the fake serves
//! from a current-thread runtime that a background thread keeps driving, and
//! the test thread reaches it through the runtime's handle. That way a test
//! may block (poll the daemon's HTTP API, read files) without starving the
//! fake.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch};
use kube::api::{PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use serde_json::{json, Value};

use super::envtest::ApiServer;
use super::http;
use super::kube_fake::FakeApiServer;

/// The CronJobSet API version.
pub const CJS_API: &str = "cronstable.io/v1alpha1";

/// The CRD as committed (the output of `cronstable crd`).
pub const CRD_YAML: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/crds/cronjobset.yaml"));

/// The default bound on a wait in these tests; never a speed assertion.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Polls `check` every 100 ms until it holds; after `limit` panics naming
/// `what` and showing `context()` (usually a daemon's log).
pub fn wait_until(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> bool,
    context: impl Fn() -> String,
) {
    let start = Instant::now();
    while !check() {
        if start.elapsed() > limit {
            panic!("waited {limit:?} for {what}; context:\n{}", context());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub use super::daemon::read_lines;

/// The API resource behind an `apiVersion`/`kind` the tests write.
fn resource_of(api_version: &str, kind: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "CronJobSet" => "cronjobsets",
        "ConfigMap" => "configmaps",
        "Event" => "events",
        "Lease" => "leases",
        other => panic!("kube_daemon: no plural known for kind {other}"),
    };
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// A CronJobSet object named `name` in `namespace` with `labels` and `spec`.
pub fn cronjobset(namespace: &str, name: &str, labels: Value, spec: Value) -> Value {
    json!({
        "apiVersion": CJS_API,
        "kind": "CronJobSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    })
}

/// A ConfigMap object named `name` in `namespace` with `data`.
pub fn configmap(namespace: &str, name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    })
}

/// The API server behind a [`Cluster`].
enum Server {
    /// The fake (tests/support/kube_fake).
    Fake(FakeApiServer),
    /// A real kube-apiserver with its etcd.
    Real(Box<Mutex<ApiServer>>),
}

/// An API server with the CronJobSet CRD, a kubeconfig pointing at it, a
/// client to play the user's `kubectl`, and a temp dir for files jobs write.
pub struct Cluster {
    rt: Arc<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    driver: Option<std::thread::JoinHandle<()>>,
    server: Option<Server>,
    client: Option<Client>,
    /// Holds the kubeconfig, the daemons' configs and the files jobs write.
    pub dir: tempfile::TempDir,
    /// The kubeconfig file (its context's namespace is [`Self::namespace`]).
    pub kubeconfig: PathBuf,
    /// The namespace the kubeconfig's context names.
    pub namespace: String,
    daemons: Mutex<usize>,
}

impl Cluster {
    /// A fake with the CRD installed; the kubeconfig's context namespace is
    /// `team-a`.
    pub fn start() -> Cluster {
        Cluster::start_in("team-a")
    }

    /// Like [`Cluster::start`] with another context namespace.
    pub fn start_in(namespace: &str) -> Cluster {
        let (rt, stop, driver) = driven_runtime();
        let fake = rt
            .handle()
            .block_on(FakeApiServer::start())
            .expect("the fake API server starts");
        fake.install_crd_yaml(CRD_YAML)
            .expect("the committed CRD installs");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        fake.write_kubeconfig(&kubeconfig, namespace)
            .expect("write kubeconfig");
        Cluster::assemble(
            rt,
            stop,
            driver,
            Server::Fake(fake),
            dir,
            kubeconfig,
            namespace,
        )
    }

    /// A real kube-apiserver (see `envtest`) with the committed CRD applied
    /// and established and the namespace `team-a` created; `None` (the test
    /// is skipped, saying why) when `KUBEBUILDER_ASSETS` is unset.
    pub fn real() -> Option<Cluster> {
        Cluster::real_in("team-a")
    }

    /// Like [`Cluster::real`] with another context namespace.
    pub fn real_in(namespace: &str) -> Option<Cluster> {
        // libtest names each test's thread after the test.
        let thread = std::thread::current();
        let test = thread.name().unwrap_or("a Kubernetes test");
        let server = ApiServer::start(test)?;
        let crd = server.dir().join("crd.yaml");
        std::fs::write(&crd, CRD_YAML).expect("write the CRD");
        let crd_path = crd.display().to_string();
        let (ok, _, err) = server.kubectl(&["apply", "-f", &crd_path]);
        assert!(ok, "kubectl apply the committed CRD: {err}");
        server.wait_established("cronjobsets.cronstable.io");
        let (rt, stop, driver) = driven_runtime();
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig_as(&kubeconfig, "tester", namespace);
        let cluster = Cluster::assemble(
            rt,
            stop,
            driver,
            Server::Real(Box::new(Mutex::new(server))),
            dir,
            kubeconfig,
            namespace,
        );
        cluster.ensure_namespace(namespace);
        Some(cluster)
    }

    fn assemble(
        rt: Arc<tokio::runtime::Runtime>,
        stop: tokio::sync::oneshot::Sender<()>,
        driver: std::thread::JoinHandle<()>,
        server: Server,
        dir: tempfile::TempDir,
        kubeconfig: PathBuf,
        namespace: &str,
    ) -> Cluster {
        let path = kubeconfig.clone();
        let client = rt.handle().block_on(async move {
            let kc = Kubeconfig::read_from(&path).expect("kubeconfig parses");
            let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .expect("kubeconfig loads");
            Client::try_from(config).expect("client builds")
        });
        Cluster {
            rt,
            stop: Some(stop),
            driver: Some(driver),
            server: Some(server),
            client: Some(client),
            dir,
            kubeconfig,
            namespace: namespace.to_owned(),
            daemons: Mutex::new(0),
        }
    }

    /// Whether this is a real kube-apiserver.
    pub fn is_real(&self) -> bool {
        matches!(self.server, Some(Server::Real(_)))
    }

    /// Runs `f` with the real API server; panics on the fake.
    pub fn real_server<T>(&self, f: impl FnOnce(&mut ApiServer) -> T) -> T {
        match &self.server {
            Some(Server::Real(server)) => {
                let mut guard = server.lock().unwrap_or_else(|p| p.into_inner());
                f(&mut guard)
            }
            _ => panic!("this test needs the real API server (Cluster::real)"),
        }
    }

    /// Creates `namespace` on a real server when it does not exist (the
    /// fake takes objects in any namespace).
    pub fn ensure_namespace(&self, namespace: &str) {
        if !self.is_real() {
            return;
        }
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client());
        let name = namespace.to_owned();
        self.block_on(async move {
            if api.get_opt(&name).await.expect("get namespace").is_none() {
                let ns: k8s_openapi::api::core::v1::Namespace =
                    serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
                match api.create(&PostParams::default(), &ns).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => panic!("create namespace {name}: {e}"),
                }
            }
        });
    }

    /// The kubeconfig daemon number `n` uses: on a real server an admin
    /// identity of its own (`daemon-<n>`, so the audit log tells the
    /// daemons' requests apart); on the fake the cluster's kubeconfig.
    pub fn daemon_kubeconfig(&self, n: usize) -> PathBuf {
        match &self.server {
            Some(Server::Real(server)) => {
                let path = self.path(&format!("kubeconfig-daemon-{n}"));
                let guard = server.lock().unwrap_or_else(|p| p.into_inner());
                guard.write_kubeconfig_as(&path, &format!("daemon-{n}"), &self.namespace);
                path
            }
            _ => self.kubeconfig.clone(),
        }
    }

    /// Runs `future` to completion on the test's runtime.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.rt.handle().block_on(future)
    }

    /// The fake API server; panics on a real one.
    pub fn fake(&self) -> &FakeApiServer {
        match &self.server {
            Some(Server::Fake(fake)) => fake,
            _ => panic!("this test needs the fake API server (Cluster::start)"),
        }
    }

    fn client(&self) -> Client {
        self.client.clone().expect("the client lives until drop")
    }

    /// A path in the cluster's temp dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The lines of a file in the temp dir.
    pub fn lines(&self, name: &str) -> Vec<String> {
        read_lines(&self.path(name))
    }

    /// `text` with every `{dir}` replaced by the temp dir.
    pub fn expand(&self, text: &str) -> String {
        text.replace("{dir}", &self.dir.path().display().to_string())
    }

    fn api(&self, api_version: &str, kind: &str, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client(), namespace, &resource_of(api_version, kind))
    }

    /// Creates `obj` or replaces the stored one (as `kubectl apply` ends up
    /// doing): the replace carries the stored resourceVersion, and a 409
    /// Conflict (the daemon wrote status in between) is retried with the new
    /// one. `{dir}` in the object's strings is replaced by the temp dir.
    /// Returns the stored object.
    pub fn apply(&self, obj: Value) -> Value {
        let obj: Value = serde_json::from_str(&self.expand(&obj.to_string())).expect("json");
        let api_version = obj["apiVersion"].as_str().expect("apiVersion").to_owned();
        let kind = obj["kind"].as_str().expect("kind").to_owned();
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or(&self.namespace)
            .to_owned();
        let name = obj["metadata"]["name"].as_str().expect("name").to_owned();
        self.ensure_namespace(&ns);
        let api = self.api(&api_version, &kind, &ns);
        self.block_on(async move {
            for _ in 0..10 {
                let mut body: DynamicObject =
                    serde_json::from_value(obj.clone()).expect("a Kubernetes object");
                let stored = match api.get_opt(&name).await.expect("get before apply") {
                    None => api.create(&PostParams::default(), &body).await,
                    Some(current) => {
                        body.metadata.resource_version = current.metadata.resource_version;
                        api.replace(&name, &PostParams::default(), &body).await
                    }
                };
                match stored {
                    Ok(o) => return serde_json::to_value(o).expect("json"),
                    Err(kube::Error::Api(s)) if s.code == 409 => continue,
                    Err(e) => panic!("apply {kind} {ns}/{name}: {e}"),
                }
            }
            panic!("apply {kind} {ns}/{name}: conflicts kept coming");
        })
    }

    /// Like [`Cluster::apply`] but returns the API server's refusal, if any.
    pub fn try_create(&self, obj: Value) -> Result<Value, (u16, String)> {
        let api_version = obj["apiVersion"].as_str().expect("apiVersion").to_owned();
        let kind = obj["kind"].as_str().expect("kind").to_owned();
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or(&self.namespace)
            .to_owned();
        self.ensure_namespace(&ns);
        let api = self.api(&api_version, &kind, &ns);
        let body: DynamicObject = serde_json::from_value(obj).expect("a Kubernetes object");
        self.block_on(async move {
            match api.create(&PostParams::default(), &body).await {
                Ok(o) => Ok(serde_json::to_value(o).expect("json")),
                Err(kube::Error::Api(s)) => Err((s.code, s.message)),
                Err(e) => panic!("create: {e}"),
            }
        })
    }

    /// A merge patch on a CronJobSet's main resource (spec, metadata).
    pub fn patch_set(&self, namespace: &str, name: &str, patch: Value) -> Value {
        let api = self.api(CJS_API, "CronJobSet", namespace);
        let name = name.to_owned();
        self.block_on(async move {
            let o = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .unwrap_or_else(|e| panic!("patch cronjobset {name}: {e}"));
            serde_json::to_value(o).expect("json")
        })
    }

    /// Deletes an object (`kind` CronJobSet or ConfigMap).
    pub fn delete(&self, kind: &str, namespace: &str, name: &str) {
        let api_version = if kind == "CronJobSet" { CJS_API } else { "v1" };
        let api = self.api(api_version, kind, namespace);
        let name = name.to_owned();
        self.block_on(async move {
            api.delete(&name, &DeleteParams::default())
                .await
                .unwrap_or_else(|e| panic!("delete {name}: {e}"));
        });
    }

    /// The stored CronJobSet, if any (read through the API, as `kubectl
    /// get` does).
    pub fn set(&self, namespace: &str, name: &str) -> Option<Value> {
        let api = self.api(CJS_API, "CronJobSet", namespace);
        let name = name.to_owned();
        self.block_on(async move {
            api.get_opt(&name)
                .await
                .unwrap_or_else(|e| panic!("get cronjobset {name}: {e}"))
                .map(|o| serde_json::to_value(o).expect("json"))
        })
    }

    /// Any stored object (`kind` one of the kinds [`resource_of`] knows).
    pub fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let api = self.api(api_version, kind, namespace);
        let name = name.to_owned();
        self.block_on(async move {
            api.get_opt(&name)
                .await
                .unwrap_or_else(|e| panic!("get {name}: {e}"))
                .map(|o| serde_json::to_value(o).expect("json"))
        })
    }

    /// The stored CronJobSet's status (`null` when none was written).
    pub fn status(&self, namespace: &str, name: &str) -> Value {
        self.set(namespace, name)
            .map(|s| s["status"].clone())
            .unwrap_or(Value::Null)
    }

    /// The condition `kind` (`Accepted`, `Ready`) of a set's status.
    pub fn condition(&self, namespace: &str, name: &str, kind: &str) -> Value {
        self.status(namespace, name)["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == kind).cloned())
            .unwrap_or(Value::Null)
    }

    /// The events.k8s.io/v1 Events in `namespace` whose `regarding` names
    /// an object called `name`.
    pub fn events_regarding(&self, namespace: &str, name: &str) -> Vec<Value> {
        let api = self.api("events.k8s.io/v1", "Event", namespace);
        let all = self.block_on(async move {
            api.list(&Default::default())
                .await
                .map(|l| l.items)
                .unwrap_or_else(|e| panic!("list events: {e}"))
        });
        all.into_iter()
            .map(|o| serde_json::to_value(o).expect("json"))
            .filter(|e| e["regarding"]["name"] == name)
            .collect()
    }

    /// Takes the API server off the network (connection refused, watches
    /// cut): the fake stops listening, a real kube-apiserver is stopped
    /// (etcd keeps its data).
    pub fn go_down(&self) {
        match &self.server {
            Some(Server::Real(_)) => self.real_server(ApiServer::stop_apiserver),
            _ => self.block_on(self.fake().go_down()),
        }
    }

    /// Puts the API server back on the same port with its state (a real
    /// one is started again and waited for until ready).
    pub fn come_back(&self) {
        match &self.server {
            Some(Server::Real(_)) => self.real_server(ApiServer::start_apiserver_again),
            _ => self
                .block_on(self.fake().come_back())
                .expect("the fake listens again"),
        }
    }

    fn next_daemon(&self) -> usize {
        let mut n = self.daemons.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        *n
    }
}

/// A current-thread runtime with a thread that keeps driving it, the
/// sender that ends that thread, and the thread.
///
/// A current-thread runtime only runs spawned tasks (the fake's server,
/// the client's connection tasks) while someone is inside
/// Runtime::block_on; the driving thread stays there until the test ends.
fn driven_runtime() -> (
    Arc<tokio::runtime::Runtime>,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let rt = Arc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a Tokio runtime"),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let driving = Arc::clone(&rt);
    let driver = std::thread::spawn(move || {
        driving.block_on(async move {
            let _ = stopped.await;
        });
    });
    (rt, stop, driver)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The fake and the client spawned tasks on the runtime: end them
        // while it still runs, then stop the driving thread.
        self.client.take();
        self.server.take();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(driver) = self.driver.take() {
            let _ = driver.join();
        }
    }
}

/// How to start a daemon against a [`Cluster`].
#[derive(Clone, Debug)]
pub struct Launch {
    /// Extra command-line arguments (after the kube ones).
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// YAML appended to the config after its `web:` section (`{dir}` is
    /// replaced by the cluster's temp dir).
    pub config: String,
    /// `--namespace` to pass; `None` leaves it to the daemon's default.
    pub namespace: Option<String>,
    /// Pass `--kube`, the kubeconfig, the namespace, `-c` and the log level
    /// as CRONSTABLE_* variables instead of flags.
    pub via_env: bool,
    /// Run as the chart does: no `web:` section in the files (the
    /// ConfigMap may bring one), `--probe-listen` on the daemon's port, and
    /// no `-c` at all when [`Self::config`] is empty.
    pub probe_only: bool,
    /// The kubeconfig to use instead of the cluster's (e.g. one carrying
    /// a ServiceAccount's token).
    pub kubeconfig: Option<PathBuf>,
}

impl Launch {
    /// Flags, `--namespace` = the cluster's namespace, nothing extra.
    pub fn new(cluster: &Cluster) -> Launch {
        Launch {
            args: Vec::new(),
            env: Vec::new(),
            config: String::new(),
            namespace: Some(cluster.namespace.clone()),
            via_env: false,
            probe_only: false,
            kubeconfig: None,
        }
    }

    /// Adds command-line arguments.
    pub fn args(mut self, args: &[&str]) -> Launch {
        self.args.extend(args.iter().map(|s| s.to_string()));
        self
    }
}

/// A running `cronstable --kube` with a web listener on a free port.
pub struct KubeDaemon {
    /// The identity it talks to the API server as (`daemon-<n>` on a real
    /// server: the audit log's `user.username`).
    pub user: String,
    child: Option<Child>,
    log: Arc<Mutex<String>>,
    /// The web listener's port.
    pub port: u16,
    /// The config file written for this daemon.
    pub config_path: PathBuf,
}

/// Variables the daemon must not inherit from the test's environment: they
/// would point it at another cluster or change its flags.
const SCRUB: &[&str] = &[
    "KUBECONFIG",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "CRONSTABLE_KUBE",
    "CRONSTABLE_KUBECONFIG",
    "CRONSTABLE_NAMESPACE",
    "CRONSTABLE_CONFIGMAP",
    "CRONSTABLE_CRONJOBSETS",
    "CRONSTABLE_SELECTOR",
    "CRONSTABLE_CONFIG",
    "CRONSTABLE_LOG_LEVEL",
    "CRONSTABLE_POD_NAME",
    "CRONSTABLE_POD_UID",
    "CRONSTABLE_FACTS_CONFIGMAP",
    "CRONSTABLE_PROBE_LISTEN",
];

impl KubeDaemon {
    /// `cronstable --kube --kubeconfig K --namespace NS -c <web config> -l
    /// DEBUG` plus `extra` arguments; returns once the web port answers.
    pub fn start(cluster: &Cluster, extra: &[&str]) -> KubeDaemon {
        KubeDaemon::launch(cluster, Launch::new(cluster).args(extra))
    }

    /// Starts a daemon as `how` says; returns once the web port answers
    /// (panics with the log if the process exits first).
    pub fn launch(cluster: &Cluster, how: Launch) -> KubeDaemon {
        let port = http::free_port();
        let n = cluster.next_daemon();
        let config_path = cluster.path(&format!("daemon-{n}.yaml"));
        let config = if how.probe_only {
            cluster.expand(&how.config)
        } else {
            format!(
                "web:\n  listen:\n    - http://127.0.0.1:{port}\n{}",
                cluster.expand(&how.config)
            )
        };
        let with_files = !(how.probe_only && config.is_empty());
        std::fs::write(&config_path, config).expect("write the daemon's config");
        let mut command = Command::new(env!("CARGO_BIN_EXE_cronstable"));
        for name in SCRUB {
            command.env_remove(name);
        }
        let kubeconfig = how
            .kubeconfig
            .clone()
            .unwrap_or_else(|| cluster.daemon_kubeconfig(n))
            .display()
            .to_string();
        let config_file = config_path.display().to_string();
        if how.via_env {
            command
                .env("CRONSTABLE_KUBE", "true")
                .env("CRONSTABLE_KUBECONFIG", &kubeconfig)
                .env("CRONSTABLE_LOG_LEVEL", "DEBUG");
            if with_files {
                command.env("CRONSTABLE_CONFIG", &config_file);
            }
            if let Some(ns) = &how.namespace {
                command.env("CRONSTABLE_NAMESPACE", ns);
            }
        } else {
            command.args(["--kube", "--kubeconfig", &kubeconfig]);
            if let Some(ns) = &how.namespace {
                command.args(["--namespace", ns]);
            }
            if with_files {
                command.args(["-c", &config_file]);
            }
            command.args(["-l", "DEBUG"]);
        }
        if how.probe_only {
            command.args(["--probe-listen", &format!("http://127.0.0.1:{port}")]);
        }
        command.args(&how.args);
        for (k, v) in &how.env {
            command.env(k, v);
        }
        let mut child = command
            .current_dir(cluster.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the daemon");
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            super::daemon::collect(err, Arc::clone(&log));
        }
        if let Some(out) = child.stdout.take() {
            super::daemon::collect(out, Arc::clone(&log));
        }
        let mut daemon = KubeDaemon {
            user: format!("daemon-{n}"),
            child: Some(child),
            log,
            port,
            config_path,
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(code) = daemon.exited() {
                panic!(
                    "the daemon exited ({code:?}) before listening; log:\n{}",
                    daemon.log()
                );
            }
            if start.elapsed() > PATIENCE {
                panic!("nothing listens on {port}; log:\n{}", daemon.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        daemon
    }

    /// `Some(exit code)` once the process has ended.
    pub fn exited(&mut self) -> Option<Option<i32>> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.code()),
            _ => None,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Everything the daemon wrote (stderr and stdout) so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Polls `check` until it holds; panics with the log after `limit`.
    pub fn wait_until(&self, what: &str, limit: Duration, check: impl FnMut() -> bool) {
        wait_until(what, limit, check, || self.log());
    }

    /// Waits until the log holds `needle` at least `count` times.
    pub fn wait_for_log(&self, needle: &str, count: usize, limit: Duration) {
        self.wait_until(&format!("{count}x {needle:?} in the log"), limit, || {
            self.log().matches(needle).count() >= count
        });
    }

    /// `GET path` as JSON, panicking on a non-200 answer.
    pub fn get_json(&self, path: &str) -> Value {
        let reply = http::get(self.port, path);
        assert_eq!(reply.status, 200, "GET {path}: {}", reply.body);
        reply.json()
    }

    /// `GET /kube`.
    pub fn kube(&self) -> Value {
        self.get_json("/kube")
    }

    /// The names in `GET /jobs`, sorted.
    pub fn job_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .get_json("/jobs")
            .as_array()
            .expect("/jobs is a list")
            .iter()
            .filter_map(|j| j["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    /// `GET /jobs/{name}`, `None` on 404.
    pub fn job(&self, name: &str) -> Option<Value> {
        let reply = http::get(self.port, &format!("/jobs/{name}"));
        match reply.status {
            200 => Some(reply.json()),
            404 => None,
            other => panic!("GET /jobs/{name}: {other} {}", reply.body),
        }
    }

    /// `POST /jobs/{name}/start`, returning the status code.
    pub fn start_job(&self, name: &str) -> u16 {
        http::post(self.port, &format!("/jobs/{name}/start")).status
    }

    /// The /metrics text.
    pub fn metrics(&self) -> String {
        let reply = http::get(self.port, "/metrics");
        assert_eq!(reply.status, 200, "GET /metrics: {}", reply.body);
        reply.body
    }

    /// The value of the first sample named `name` whose labels include every
    /// pair of `labels`.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        sample(&self.metrics(), name, labels)
    }

    /// Waits until `file` in the cluster's temp dir has at least `n` lines.
    pub fn wait_lines(&self, cluster: &Cluster, file: &str, n: usize) -> Vec<String> {
        let mut found = Vec::new();
        self.wait_until(&format!("{n} lines in {file}"), PATIENCE, || {
            found = cluster.lines(file);
            found.len() >= n
        });
        found
    }
}

impl Drop for KubeDaemon {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Parses one sample line's series (`name{k="v",...}`) into its name and
/// labels.
fn parse_series(series: &str) -> (String, BTreeMap<String, String>) {
    let Some((name, rest)) = series.split_once('{') else {
        return (series.to_owned(), BTreeMap::new());
    };
    let mut labels = BTreeMap::new();
    let body = rest.trim_end_matches('}');
    for pair in body.split("\",") {
        if let Some((k, v)) = pair.split_once("=\"") {
            labels.insert(k.trim().to_owned(), v.trim_end_matches('"').to_owned());
        }
    }
    (name.to_owned(), labels)
}

/// The value of the first sample in a Prometheus text exposition named
/// `name` with (at least) `labels`.
pub fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit_once(' '))
        .find_map(|(series, value)| {
            let (n, ls) = parse_series(series);
            let wanted = n == name
                && labels
                    .iter()
                    .all(|(k, v)| ls.get(*k).map(String::as_str) == Some(*v));
            if wanted {
                value.parse().ok()
            } else {
                None
            }
        })
}

/// Whether `t` is an RFC 3339 UTC time with seconds precision and a `Z`.
pub fn is_rfc3339_z(t: &Value) -> bool {
    let Some(s) = t.as_str() else { return false };
    let b = s.as_bytes();
    s.len() == 20
        && b[19] == b'Z'
        && b[10] == b'T'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

/// Whether `t` is an RFC 3339 UTC time ending in `Z`, any precision (the
/// `/kube` answer is not bound to the status's seconds).
pub fn is_utc_time(t: &Value) -> bool {
    t.as_str()
        .is_some_and(|s| s.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(s).is_ok())
}

/// Parses an RFC 3339 time from the status.
pub fn time_of(t: &Value) -> chrono::DateTime<chrono::Utc> {
    let s = t.as_str().unwrap_or_else(|| panic!("not a time: {t}"));
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("not RFC 3339 ({e}): {s}"))
        .with_timezone(&chrono::Utc)
}
