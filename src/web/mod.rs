//! The HTTP control API: listeners (`http://`, `https://` with optional
//! mutual TLS, `unix://`), auth, routes and the Prometheus endpoint. A
//! supervisor task follows the config's `web` section: it starts the
//! listeners, and restarts them when a reload changes the section or the
//! TLS files are rotated (an unchanged section keeps them running).

pub(crate) mod auth;
pub(crate) mod cache;
pub(crate) mod conditional;
pub(crate) mod logs;
pub mod mcp;
pub(crate) mod node;
pub(crate) mod preview;
pub mod request;
pub mod routes;
pub(crate) mod ui;
use crate::tls;
pub(crate) mod views;

use crate::config::mcp::McpSettings;
use crate::config::model::WebConfig;
use crate::scheduler::control::ControlHandle;
use crate::status::Published;
use auth::Credentials;
use axum::http::{HeaderName, HeaderValue};
use routes::AppState;
use std::sync::Arc;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

/// A parsed listen address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    /// `http://host:port`.
    Tcp(String),
    /// `https://host:port`.
    Tls(String),
    /// `unix:///path`.
    Unix(String),
}

/// Parses one `web.listen` URL.
pub fn parse_listen(url: &str) -> Result<ListenAddr, String> {
    if let Some(rest) = url.strip_prefix("http://") {
        let hostport = rest.trim_end_matches('/');
        if !hostport.contains(':') {
            return Err(format!("{url}: http url needs host and port"));
        }
        return Ok(ListenAddr::Tcp(hostport.to_owned()));
    }
    if let Some(rest) = url.strip_prefix("https://") {
        let hostport = rest.trim_end_matches('/');
        // No default port for TLS either: "https://0.0.0.0" names no port
        // the operator chose.
        if !hostport.contains(':') {
            return Err(format!("{url}: https url needs host and port"));
        }
        return Ok(ListenAddr::Tls(hostport.to_owned()));
    }
    if let Some(path) = url.strip_prefix("unix://") {
        if path.is_empty() {
            return Err(format!("{url}: a unix:// address needs a path"));
        }
        return Ok(ListenAddr::Unix(path.to_owned()));
    }
    // The scheme in Python repr quotes, as the original prints it.
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    Err(format!(
        "{url}: scheme {} not supported",
        crate::pyfmt::py_repr(&minijinja::Value::from(scheme))
    ))
}

/// Running listeners of one web configuration.
struct Running {
    stop: Arc<Notify>,
    tasks: Vec<JoinHandle<()>>,
    /// Turns true when stopping: open log streams end instead of holding
    /// the graceful shutdown open.
    draining: watch::Sender<bool>,
    sampler: Option<JoinHandle<()>>,
}

impl Running {
    async fn stop(self) {
        if let Some(sampler) = &self.sampler {
            sampler.abort();
        }
        self.draining.send_replace(true);
        self.stop.notify_waiters();
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// How much nicer than the daemon the API's thread runs (the scheduler's
/// thread keeps the daemon's own nice value, and so do the jobs it
/// starts).
const API_NICE: i32 = 5;

/// The HTTP API running on a thread of its own.
///
/// The scheduler's runtime is single-threaded, so anything rendered there
/// (a 16 MB `/metrics`, a 3 MB `/jobs` with 10,000 jobs) would hold up the
/// launches due at that moment. The API therefore runs on its own thread
/// with its own single-threaded runtime: the scheduler only answers each
/// request with a snapshot of its state (see `scheduler::control`), and
/// serialising, compressing and writing the response happen here, on the
/// other core. The two threads share nothing but the control channel and
/// the watch channels the cluster and the Kubernetes mode publish on
/// (read here, never written).
pub struct ApiThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ApiThread {
    /// Starts the API thread following `config`, with `probe` serving the
    /// probes while no section is in force (see [`supervise`]). An error
    /// means the OS refused a thread or the runtime could not be built;
    /// the daemon then runs without its API.
    pub fn start(
        config: watch::Receiver<Option<WebConfig>>,
        mcp: watch::Receiver<Option<McpSettings>>,
        probe: Option<String>,
        control: ControlHandle,
        published: Published,
        store: Option<Arc<crate::state::store::Store>>,
    ) -> std::io::Result<ApiThread> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("cronstable-api".to_owned())
            .spawn(move || {
                // On a busy machine the kernel runs job processes and the
                // scheduler's thread before rendering (the threads this one
                // starts, the blocking pool's, inherit it).
                if let Err(err) = crate::platform::lower_this_thread_priority(API_NICE) {
                    tracing::debug!(
                        target: "cronstable::web",
                        "cannot lower the API thread's priority: {err}"
                    );
                }
                runtime.block_on(async move {
                    tokio::select! {
                        () = supervise(config, mcp, probe, control, published, store) => {}
                        _ = stopped => {}
                    }
                });
                // Listener tasks still open end with the runtime; a
                // blocking sampler call gets a moment to finish.
                runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            })?;
        Ok(ApiThread {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the listeners (open connections are dropped, as the process
    /// is about to exit) and waits for the thread to end.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often the TLS files are checked for a rotation.
const TLS_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Follows `config` until the channel closes, keeping the listeners in
/// step with it and with the TLS files on disk. `published` is what the
/// cluster and the Kubernetes mode publish (read, never written, here).
/// While no `web` section is in force (or its credentials do not
/// resolve), `probe` (`--probe-listen`, an `http://` address) serves
/// `/livez` and `/readyz` only, so a pod whose web section lives in a
/// ConfigMap that is missing still answers its probes; the section's own
/// listeners replace it when one arrives. `store` is the durable store
/// when one is open (read only: trends, the state inspector, metrics).
/// `mcp` is the MCP server's settings (None: `POST /mcp` is off); a
/// change restarts the listeners like a change of the section.
pub async fn supervise(
    mut config: watch::Receiver<Option<WebConfig>>,
    mut mcp: watch::Receiver<Option<McpSettings>>,
    probe: Option<String>,
    control: ControlHandle,
    published: Published,
    store: Option<Arc<crate::state::store::Store>>,
) {
    let mut running: Option<Running> = None;
    // One view for the daemon's life: its trends cache and its count of
    // running reads survive a restart of the listeners.
    let store = store.map(|s| Arc::new(routes::state::StoreView::new(s)));
    // One sampler for the daemon's life: its history ring survives a
    // restart of the listeners.
    let node = Arc::new(node::NodeSampler::new());
    loop {
        let current = config.borrow_and_update().clone();
        let mcp_server = mcp
            .borrow_and_update()
            .clone()
            .map(|settings| Arc::new(mcp::Server::new(settings)));
        if let Some(old) = running.take() {
            tracing::info!(target: "cronstable::web", "Stopping http server");
            old.stop().await;
        }
        let tls_stamp = tls::files_stamp(current.as_ref().and_then(|w| w.tls.as_ref()));
        if let Some(web) = &current {
            running = start(
                web,
                Serve::Api,
                control.clone(),
                published.clone(),
                &node,
                store.clone(),
                mcp_server,
            )
            .await;
        }
        if running.is_none() {
            if let Some(url) = &probe {
                let probes = probe_section(url);
                running = start(
                    &probes,
                    Serve::Probes,
                    control.clone(),
                    published.clone(),
                    &node,
                    store.clone(),
                    None,
                )
                .await;
            }
        }
        // Wait for a config change, or for the certificate files to change
        // (a rotated certificate must be served without a restart).
        let mut check = tokio::time::interval(TLS_CHECK_INTERVAL);
        check.tick().await;
        let closed = loop {
            tokio::select! {
                changed = config.changed() => break changed.is_err(),
                changed = mcp.changed() => break changed.is_err(),
                _ = check.tick(), if !tls_stamp.is_empty() => {
                    let now = tls::files_stamp(current.as_ref().and_then(|w| w.tls.as_ref()));
                    if now != tls_stamp {
                        tracing::info!(target: "cronstable::web", "TLS files changed; restarting the web listeners");
                        break false;
                    }
                }
            }
        };
        if closed {
            break;
        }
    }
    if let Some(old) = running {
        tracing::info!(target: "cronstable::web", "Stopping http server");
        old.stop().await;
    }
}

/// The section `--probe-listen` stands for: its one listener, nothing
/// else (no tokens: the probes need none, and nothing else is routed).
fn probe_section(url: &str) -> WebConfig {
    WebConfig {
        listen: vec![url.to_owned()],
        headers: None,
        allowed_origins: None,
        auth_token: None,
        auth_tokens: None,
        anonymous_scopes: None,
        socket_mode: None,
        tls: None,
        ui: None,
        metrics: None,
        node_history: None,
        bonjour: None,
    }
}

/// What a set of listeners serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Serve {
    /// The whole API of a `web` section.
    Api,
    /// `/livez` and `/readyz` only (`--probe-listen`).
    Probes,
}

async fn start(
    web: &WebConfig,
    serve_what: Serve,
    control: ControlHandle,
    published: Published,
    node: &Arc<node::NodeSampler>,
    store: Option<Arc<routes::state::StoreView>>,
    mcp: Option<Arc<mcp::Server>>,
) -> Option<Running> {
    let credentials = match Credentials::resolve(web) {
        Ok(c) => c,
        Err(err) => {
            tracing::error!(
                target: "cronstable::web",
                "Error in the web configuration, so not starting the web API: {err}"
            );
            return None;
        }
    };
    let extra_headers: Vec<(HeaderName, HeaderValue)> = web
        .headers
        .iter()
        .flatten()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("content-type"))
        .filter_map(|(k, v)| {
            Some((
                HeaderName::try_from(k.as_str()).ok()?,
                HeaderValue::try_from(v.as_str()).ok()?,
            ))
        })
        .collect();
    let (draining, draining_rx) = watch::channel(false);
    let state = AppState {
        control,
        published,
        node: Arc::clone(node),
        draining: draining_rx,
        credentials: Arc::new(credentials),
        extra_headers: Arc::new(extra_headers),
        metrics_enabled: web.metrics.as_ref().and_then(|m| m.enabled).unwrap_or(true),
        metrics_cache: Arc::default(),
        jobs_cache: Arc::default(),
        status_cache: Arc::default(),
        store,
        ui: web.ui.unwrap_or(true),
        mcp,
    };
    let app = match serve_what {
        Serve::Api => routes::router(state),
        Serve::Probes => routes::probe_router(state),
    };
    let stop = Arc::new(Notify::new());
    let mut tasks = Vec::new();
    for url in &web.listen {
        let addr = match parse_listen(url) {
            Ok(addr) => addr,
            Err(err) => {
                tracing::warn!(target: "cronstable::web", "Ignoring web listen url {err}");
                continue;
            }
        };
        let shutdown = {
            let stop = Arc::clone(&stop);
            async move { stop.notified().await }
        };
        match addr {
            ListenAddr::Tcp(hostport) => match tokio::net::TcpListener::bind(&hostport).await {
                Ok(listener) => {
                    if serve_what == Serve::Probes {
                        tracing::info!(
                            target: "cronstable::web",
                            "web: no web section in force; serving /livez and /readyz only on \
                             {url} (--probe-listen) until one is"
                        );
                    } else {
                        tracing::info!(target: "cronstable::web", "web: started listening on {url}");
                    }
                    tasks.push(serve(listener, app.clone(), shutdown));
                }
                Err(err) => tracing::warn!(
                    target: "cronstable::web",
                    "web: could not listen on {url}: {err}"
                ),
            },
            ListenAddr::Unix(path) => match bind_unix(&path, web.socket_mode.as_deref()) {
                Ok(listener) => {
                    tracing::info!(target: "cronstable::web", "web: started listening on {url}");
                    tasks.push(serve(listener, app.clone(), shutdown));
                }
                Err(err) => tracing::warn!(
                    target: "cronstable::web",
                    "web: could not listen on {url}: {err}"
                ),
            },
            ListenAddr::Tls(hostport) => {
                let config = match web.tls.as_ref().map(tls::server_config) {
                    Some(Ok(config)) => config,
                    Some(Err(err)) => {
                        tracing::error!(
                            target: "cronstable::web",
                            "Ignoring web listen url {url}: no usable web.tls material for an https listener: {err} (retried when the files or the config change)"
                        );
                        continue;
                    }
                    None => {
                        tracing::warn!(
                            target: "cronstable::web",
                            "Ignoring web listen url {url}: no usable web.tls material for an https listener"
                        );
                        continue;
                    }
                };
                match tokio::net::TcpListener::bind(&hostport).await {
                    Ok(tcp) => {
                        tracing::info!(target: "cronstable::web", "web: started listening on {url}");
                        let listener = tls::TlsListener::new(tcp, config);
                        tasks.push(serve(listener, app.clone(), shutdown));
                    }
                    Err(err) => tracing::warn!(
                        target: "cronstable::web",
                        "web: could not listen on {url}: {err}"
                    ),
                }
            }
        }
    }
    let sampler = match serve_what {
        Serve::Api => node.start_history(node::history_settings(web)),
        Serve::Probes => None,
    };
    Some(Running {
        stop,
        tasks,
        draining,
        sampler,
    })
}

/// Serves `app` on `listener` until `shutdown` resolves.
fn serve<L>(
    listener: L,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> JoinHandle<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(target: "cronstable::web", "web server error: {err}");
        }
    })
}

/// Binds a unix socket, replacing a stale socket file, and applies
/// `socketMode`.
fn bind_unix(path: &str, mode: Option<&str>) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            std::fs::remove_file(path).map_err(|e| format!("cannot remove stale socket: {e}"))?;
        } else {
            return Err("the path exists and is not a socket".into());
        }
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(|e| format!("cannot bind: {e}"))?;
    if let Some(mode) = mode {
        let bits = u32::from_str_radix(mode.trim_start_matches("0o"), 8)
            .map_err(|_| format!("socketMode '{mode}' is not octal"))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits))
            .map_err(|e| format!("cannot apply socketMode: {e}"))?;
    }
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_urls() {
        assert_eq!(
            parse_listen("http://127.0.0.1:8080"),
            Ok(ListenAddr::Tcp("127.0.0.1:8080".into()))
        );
        assert_eq!(
            parse_listen("unix:///run/c.sock"),
            Ok(ListenAddr::Unix("/run/c.sock".into()))
        );
        // The texts after `Ignoring web listen url `: the manual's (HTTP-API)
        // and the original's wording.
        assert_eq!(
            parse_listen("http://localhost"),
            Err("http://localhost: http url needs host and port".into())
        );
        assert_eq!(
            parse_listen("https://0.0.0.0"),
            Err("https://0.0.0.0: https url needs host and port".into())
        );
        assert_eq!(
            parse_listen("ftp://x:1"),
            Err("ftp://x:1: scheme 'ftp' not supported".into())
        );
    }
}
