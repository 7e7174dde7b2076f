//! The job endpoint (`state.jobApi`): a loopback HTTP server through which
//! the jobs themselves keep state in the store: values, cursors,
//! idempotency keys, artifacts, locks shared by every node of the store,
//! and the run's own secrets. Each run is handed a bearer token and the
//! endpoint's address in its environment just before it spawns; the token
//! dies with the run. The client side is `cronstable state get|set|...`,
//! `cursor`, `lock`, `idempotent`, `artifact` and `secret`
//! (`crate::jobcli`).
//!
//! The server runs on a thread of its own with its own small runtime and
//! a bounded blocking pool, so a job that floods it slows other jobs'
//! state calls, never a launch.

pub mod locks;
pub mod registry;
pub mod routes;

use crate::config::job_api::JobApiSettings;
use crate::config::JobConfig;
use crate::scheduler::ports::{RunGrant, RunGrants};
use crate::state::store::Store;
use registry::{Registry, RunContext};
use std::sync::Arc;

/// Requests served at once; more wait for the busy answer.
const MAX_IN_FLIGHT: usize = 256;
/// Threads for store work (the rest of the machine runs jobs).
const BLOCKING_THREADS: usize = 8;

/// Why the endpoint did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The runtime or the thread could not be made.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The listen address could not be bound, or its TLS not loaded.
    #[error("{0}")]
    Listen(String),
}

/// The running endpoint: hands runs their identity and stops with the
/// daemon.
pub struct JobApi {
    grants: Arc<Grants>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a run is handed, and what it gives back.
struct Grants {
    registry: Arc<Registry>,
    locks: Arc<locks::LockManager>,
    base_url: String,
    cacert: Option<String>,
    host: String,
    runtime: tokio::runtime::Handle,
}

impl JobApi {
    /// Binds `settings.listen` and starts serving from `store`. `host` is
    /// the host name jobs are told (`CRONSTABLE_HOST`) and lock holders
    /// carry.
    pub fn start(
        settings: JobApiSettings,
        store: Arc<Store>,
        host: &str,
    ) -> Result<JobApi, StartError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(BLOCKING_THREADS)
            .thread_name("cronstable-jobapi-io")
            .build()?;
        let listen = &settings.listen;
        // Bound here, on the caller's thread (which may be inside the
        // daemon's runtime, so no `block_on`): a bind error is a start
        // error the caller logs. The endpoint's thread adopts the socket.
        let tcp = std::net::TcpListener::bind((listen.bind_host.as_str(), listen.port))
            .and_then(|tcp| tcp.set_nonblocking(true).map(|()| tcp))
            .map_err(|e| {
                StartError::Listen(format!(
                    "cannot bind {}:{}: {e}",
                    listen.bind_host, listen.port
                ))
            })?;
        let bound = tcp.local_addr()?;
        let scheme = if listen.https { "https" } else { "http" };
        let host_shown = listen
            .advertise_host
            .clone()
            .unwrap_or_else(|| bound.ip().to_string());
        let base_url = if host_shown.contains(':') {
            format!("{scheme}://[{host_shown}]:{}", bound.port())
        } else {
            format!("{scheme}://{host_shown}:{}", bound.port())
        };
        let tls = match &settings.tls {
            Some((cert, key)) => Some(
                crate::tls::server_config(&crate::config::model::web::WebTls {
                    cert: Some(cert.clone()),
                    key: Some(key.clone()),
                    client_ca: None,
                })
                .map_err(StartError::Listen)?,
            ),
            None => None,
        };
        let registry = Arc::new(Registry::default());
        let locks = Arc::new(locks::LockManager::new(
            Arc::clone(&store),
            host,
            settings.lock_ttl_seconds,
        ));
        let app = Arc::new(routes::App {
            registry: Arc::clone(&registry),
            locks: Arc::clone(&locks),
            store,
            in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT)),
            settings: settings.clone(),
        });
        let grants = Arc::new(Grants {
            registry,
            locks: Arc::clone(&locks),
            base_url: base_url.clone(),
            cacert: settings.ca.clone(),
            host: host.to_owned(),
            runtime: runtime.handle().clone(),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("cronstable-jobapi".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let router = routes::router(app);
                    let tcp = match tokio::net::TcpListener::from_std(tcp) {
                        Ok(tcp) => tcp,
                        Err(err) => {
                            tracing::error!(
                                target: "cronstable::jobapi",
                                "state job API: cannot serve the bound socket: {err}"
                            );
                            return;
                        }
                    };
                    let served = async move {
                        let result = match tls {
                            Some(config) => {
                                axum::serve(crate::tls::TlsListener::new(tcp, config), router).await
                            }
                            None => axum::serve(tcp, router).await,
                        };
                        if let Err(err) = result {
                            tracing::error!(
                                target: "cronstable::jobapi",
                                "state job API: server error: {err}"
                            );
                        }
                    };
                    tokio::select! {
                        () = served => {}
                        _ = stopped => {}
                    }
                    locks.release_everything().await;
                });
                runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            })?;
        tracing::info!(
            target: "cronstable::state",
            "state job API listening on {base_url}"
        );
        Ok(JobApi {
            grants,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The scheduler's side: a run's identity at spawn, revoked at its end.
    pub fn grants(&self) -> Arc<dyn RunGrants> {
        Arc::clone(&self.grants) as Arc<dyn RunGrants>
    }

    /// The address jobs are told (`CRONSTABLE_STATE_URL`).
    pub fn base_url(&self) -> &str {
        &self.grants.base_url
    }

    /// Releases every job lock still held and stops serving.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl RunGrants for Grants {
    fn grant(
        &self,
        job: &JobConfig,
        attempt: u32,
        scheduled_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> RunGrant {
        let (token, run_id) = match (
            crate::platform::random_hex(32),
            crate::platform::random_hex(16),
        ) {
            (Ok(token), Ok(run_id)) => (token, run_id),
            (Err(err), _) | (_, Err(err)) => {
                tracing::error!(
                    target: "cronstable::jobapi",
                    "state job API: cannot mint a token for job {} ({err}); it runs without the \
                     state endpoint",
                    job.name
                );
                return RunGrant::default();
            }
        };
        let (secrets, warnings) =
            registry::stage_secrets(&job.name, &job.secrets, &|var| std::env::var(var).ok());
        for warning in warnings {
            tracing::warn!(target: "cronstable::jobapi", "{warning}");
        }
        let scheduled = scheduled_at.map(crate::pyfmt::python_isoformat);
        let masks: Vec<String> = secrets.values().cloned().collect();
        self.registry.register(
            &token,
            RunContext {
                run_id: run_id.clone(),
                job_name: job.name.clone(),
                attempt,
                scheduled_at: scheduled.clone(),
                host: self.host.clone(),
                default_scope: job.name.clone(),
                allowed_scopes: job.state_allowed_scopes.iter().cloned().collect(),
                secrets,
            },
        );
        let mut env = vec![
            ("CRONSTABLE_STATE_URL".to_owned(), self.base_url.clone()),
            ("CRONSTABLE_STATE_TOKEN".to_owned(), token.clone()),
            ("CRONSTABLE_RUN_ID".to_owned(), run_id),
            ("CRONSTABLE_JOB_NAME".to_owned(), job.name.clone()),
            ("CRONSTABLE_ATTEMPT".to_owned(), attempt.to_string()),
            (
                "CRONSTABLE_SCHEDULED_AT".to_owned(),
                scheduled.unwrap_or_default(),
            ),
            ("CRONSTABLE_HOST".to_owned(), self.host.clone()),
        ];
        if let Some(ca) = &self.cacert {
            env.push(("CRONSTABLE_STATE_CACERT".to_owned(), ca.clone()));
        }
        RunGrant {
            env,
            token: Some(token),
            masks,
        }
    }

    fn release(&self, token: &str) {
        self.registry.finish(token);
        let locks = Arc::clone(&self.locks);
        let token = token.to_owned();
        // The locks are released on the endpoint's thread (store calls).
        self.runtime
            .spawn(async move { locks.release_all(&token).await });
    }
}
