//! A fake Kubernetes API server for tests: an axum server on 127.0.0.1:0 that
//! speaks enough of the REST API (ConfigMaps, Events, Leases, CRDs and their
//! custom resources) for a real `kube::Client` to drive it through a
//! kubeconfig. It keeps the real server's semantics where tests depend on them
//! (resourceVersions, generation, optimistic locking, watch resumption and
//! 410 Gone, status subresource, schema validation, server-side apply of
//! status with its managedFields entry); README.md lists the gaps.

mod deny;
mod managed;
mod schema;
mod select;
mod server;
mod status;
mod store;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

pub use status::ApiError;
use store::Store;

/// One request as the fake saw it, for tests that check what a client did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// HTTP method, e.g. `GET`.
    pub method: String,
    /// URL path, e.g. `/api/v1/namespaces/default/configmaps`.
    pub path: String,
    /// Raw query string, empty when there is none.
    pub query: String,
    /// The `User-Agent` header, when the request carried one.
    pub user_agent: Option<String>,
}

impl RequestRecord {
    /// Whether the query string carries `key=value` (exact pair).
    pub fn has_param(&self, key: &str, value: &str) -> bool {
        self.query
            .split('&')
            .any(|kv| kv == format!("{key}={value}"))
    }

    /// Whether this was a watch request (`watch=true` or `watch=1`).
    pub fn is_watch(&self) -> bool {
        self.has_param("watch", "true") || self.has_param("watch", "1")
    }
}

/// Knobs a test may set before or while using the fake.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How many change events the watch history keeps; a watch from a
    /// resourceVersion older than the oldest kept one gets 410 Gone.
    pub history_limit: usize,
    /// How often an open watch with `allowWatchBookmarks=true` gets a BOOKMARK.
    pub bookmark_interval: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            history_limit: 1000,
            bookmark_interval: Duration::from_secs(1),
        }
    }
}

/// The shared state behind the HTTP handlers and the test's handle.
pub(crate) struct Shared {
    store: Mutex<Store>,
    /// Resources every request for answers 403 (see [`FakeApiServer::deny`]).
    denials: Mutex<Vec<deny::Denial>>,
}

impl Shared {
    /// Lock the store; a panic in another handler must not wedge every test
    /// after it, so a poisoned lock is taken over as is.
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The serving task and the signal that asks it to stop gracefully.
struct Running {
    task: tokio::task::JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
}

/// Serve the router on `listener` until `stop` fires.
fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) -> Running {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let app = server::router(shared);
    let task = tokio::spawn(async move {
        // The server only ends when asked to (go_down, drop), so an error
        // here can only be a broken listener; the test will see its
        // requests fail.
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
    });
    Running { task, stop }
}

/// A running fake API server. Dropping it stops the server.
pub struct FakeApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    running: Mutex<Option<Running>>,
}

impl FakeApiServer {
    /// Start a fake with default settings on 127.0.0.1 and a free port.
    /// Must be called inside a Tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(Settings::default()).await
    }

    /// Start a fake with the given settings.
    pub async fn start_with(settings: Settings) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::new(settings)),
            denials: Mutex::new(Vec::new()),
        });
        let running = serve(listener, shared.clone());
        Ok(Self {
            addr,
            shared,
            running: Mutex::new(Some(running)),
        })
    }

    /// Take the server off the network: open watches are cut, keep-alive
    /// connections closed and the port released, so clients get "connection
    /// refused" (a dead API server, unlike the 503 switch). State is kept for
    /// [`Self::come_back`].
    pub async fn go_down(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(running) = running else { return };
        // Cut watches first: graceful shutdown waits for open responses.
        self.shared.lock().cut_watches();
        let _ = running.stop.send(());
        let mut task = running.task;
        // A client whose watch was just cut may open the next one on its
        // kept-alive connection before the stop signal lands; graceful
        // shutdown would wait on that stream, and aborting the server task
        // leaves the connection's own task (and the watch) running. So keep
        // cutting until the server has really stopped; in-flight requests
        // get a few seconds to finish, then the task goes.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            self.shared.lock().cut_watches();
            match tokio::time::timeout(Duration::from_millis(100), &mut task).await {
                Ok(_) => break,
                Err(_) if tokio::time::Instant::now() >= deadline => {
                    task.abort();
                    break;
                }
                Err(_) => {}
            }
        }
    }

    /// Listen again on the same address after [`Self::go_down`], with every
    /// object and the resourceVersion history as they were.
    pub async fn come_back(&self) -> std::io::Result<()> {
        if self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return Ok(());
        }
        let listener = tokio::net::TcpListener::bind(self.addr).await?;
        let running = serve(listener, self.shared.clone());
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) = Some(running);
        Ok(())
    }

    /// The base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Kubeconfig YAML whose current context points at this fake, with
    /// `namespace` as the context's default namespace.
    pub fn kubeconfig_yaml(&self, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {url}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {namespace}\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: fake-token\npreferences: {{}}\n",
            url = self.url()
        )
    }

    /// Write [`Self::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path, namespace: &str) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml(namespace))
    }

    /// Register a CustomResourceDefinition (JSON or YAML text, or a Value) as
    /// if it had been POSTed; the CRD is established at once.
    pub fn install_crd(&self, crd: Value) -> Result<Value, ApiError> {
        self.shared.lock().create_crd(crd)
    }

    /// Parse YAML (e.g. `cronstable crd` output) and [`Self::install_crd`] it.
    pub fn install_crd_yaml(&self, yaml: &str) -> Result<Value, String> {
        let v: Value = serde_yaml::from_str(yaml).map_err(|e| e.to_string())?;
        self.install_crd(v).map_err(|e| e.message)
    }

    /// Put an object in place without going through HTTP (seed data). The
    /// object's apiVersion and kind choose the resource.
    pub fn seed(&self, obj: Value) -> Result<Value, ApiError> {
        self.shared.lock().seed(obj)
    }

    /// The stored object, if any (`namespace` empty for cluster-scoped).
    pub fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        self.shared.lock().peek(api_version, kind, namespace, name)
    }

    /// Turn the outage switch on or off. While on, every request answers
    /// 503 ServiceUnavailable and every open watch is cut.
    pub fn set_unavailable(&self, down: bool) {
        self.shared.lock().set_unavailable(down);
    }

    /// Refuse every request for `resource` (a plural, or `plural/status`) of
    /// API `group` ("" for core) in `namespace` (`None`: everywhere) with 403
    /// Forbidden, in the real authorizer's wording, as a Role without that
    /// rule does. Open watches are not cut (RBAC is checked when a request
    /// starts). [`Self::allow_all`] lifts every refusal.
    pub fn deny(&self, group: &str, resource: &str, namespace: Option<&str>) {
        self.shared
            .denials
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(deny::Denial {
                group: group.to_string(),
                resource: resource.to_string(),
                namespace: namespace.map(str::to_string),
            });
    }

    /// Lift every refusal [`Self::deny`] set.
    pub fn allow_all(&self) {
        self.shared
            .denials
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Forget the whole change history (as etcd compaction does) and end
    /// every open watch with an ERROR 410 Expired event, so clients must
    /// relist; a later watch from any older resourceVersion also gets 410.
    pub fn expire_history(&self) {
        self.shared.lock().expire_history();
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().rv()
    }

    /// Every request seen so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.lock().log().to_vec()
    }

    /// Forget the request log.
    pub fn clear_requests(&self) {
        self.shared.lock().clear_log();
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        if let Some(running) = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            running.task.abort();
        }
    }
}
