//! The `cronstable` command line: parse arguments, set up logging, hand off.

use clap::Parser;
use cronstable::config::cluster::{Backend as ClusterBackendSettings, ClusterSettings};
use cronstable::config::{self, ConfigError};
use cronstable::kube::{KubeOptions, SetScope};
use cronstable::logging::{self, LogFormat};
use cronstable::metrics::prometheus::Counters;
use cronstable::scheduler::ports;
use cronstable::scheduler::ports::JobSource;
use cronstable::scheduler::shutdown::{self, ShutdownHandle, StopCause};
use cronstable::scheduler::{Ports, Scheduler};
use cronstable::source::{FileSource, ReloadTrigger};
use cronstable::{cluster, fingerprint, platform, report, web};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// A fast cron daemon, drop-in compatible with the Python cronstable.
#[derive(Parser, Debug)]
#[command(name = "cronstable", disable_version_flag = true)]
struct Cli {
    /// Configuration file, or a directory of *.yaml/*.yml files and crontabs
    /// [default: /etc/cronstable.yaml; none with --kube].
    #[arg(
        short = 'c',
        long = "config",
        value_name = "FILE-OR-DIR",
        env = "CRONSTABLE_CONFIG"
    )]
    config: Option<PathBuf>,

    /// Kubernetes mode: also take jobs from CronJobSets and a ConfigMap.
    #[arg(long = "kube", env = "CRONSTABLE_KUBE")]
    kube: bool,

    /// With --kube: the kubeconfig to use [default: the pod's service
    /// account, else $KUBECONFIG or ~/.kube/config].
    #[arg(
        long = "kubeconfig",
        value_name = "PATH",
        env = "CRONSTABLE_KUBECONFIG"
    )]
    kubeconfig: Option<PathBuf>,

    /// With --kube: the namespace of the ConfigMap and of the CronJobSets
    /// taken [default: the pod's, else the kubeconfig context's, else default].
    #[arg(long = "namespace", value_name = "NS", env = "CRONSTABLE_NAMESPACE")]
    namespace: Option<String>,

    /// With --kube: a ConfigMap whose *.yaml/*.yml keys are config files and
    /// whose *.crontab/*.cron/crontab keys are crontabs.
    #[arg(long = "configmap", value_name = "NAME", env = "CRONSTABLE_CONFIGMAP")]
    configmap: Option<String>,

    /// With --kube: which CronJobSets to take: namespace, all or none.
    #[arg(
        long = "cronjobsets",
        value_name = "SCOPE",
        env = "CRONSTABLE_CRONJOBSETS",
        default_value = "namespace"
    )]
    cronjobsets: String,

    /// With --kube: take only the CronJobSets matching this label selector.
    #[arg(long = "selector", value_name = "LABELS", env = "CRONSTABLE_SELECTOR")]
    selector: Option<String>,

    /// Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL (any case).
    #[arg(
        short = 'l',
        long = "log-level",
        value_name = "LEVEL",
        default_value = "INFO",
        env = "CRONSTABLE_LOG_LEVEL"
    )]
    log_level: String,

    /// Format of log lines until a `logging:` section says otherwise:
    /// basic (LEVEL:logger:message, the original's), text (timestamped)
    /// or json.
    #[arg(long = "log-format", value_enum, default_value = "basic")]
    log_format: FormatArg,

    /// Load and validate the configuration, then exit (0 valid, 1 invalid).
    #[arg(short = 'v', long = "validate-config")]
    validate_config: bool,

    /// Print the job-set id of the configuration and exit.
    #[arg(long = "job-set-id")]
    job_set_id: bool,

    /// Print the version and exit.
    #[arg(long = "version")]
    version: bool,

    /// A one-shot command instead of the daemon.
    #[command(subcommand)]
    command: Option<Subcommand>,
}

/// One-shot commands that print something and exit.
#[derive(clap::Subcommand, Debug)]
enum Subcommand {
    /// Print the CronJobSet CustomResourceDefinition (YAML) and exit.
    Crd,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum FormatArg {
    Basic,
    Text,
    Json,
}

/// `cronstable crd`: the CRD on stdout, for `kubectl apply -f -` or to
/// compare with `crds/cronjobset.yaml`.
fn print_crd() -> ExitCode {
    match cronstable::kube::crd_yaml() {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("cronstable error: {err}");
            ExitCode::from(1)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(level) = logging::parse_level(&cli.log_level) else {
        eprintln!(
            "cronstable: error: invalid --log-level '{}' (use DEBUG, INFO, WARNING, ERROR or CRITICAL)",
            cli.log_level
        );
        return ExitCode::from(2);
    };
    if cli.version {
        println!("{}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    if let Some(Subcommand::Crd) = cli.command {
        return print_crd();
    }
    let format = match cli.log_format {
        FormatArg::Basic => LogFormat::Basic,
        FormatArg::Text => LogFormat::Text,
        FormatArg::Json => LogFormat::Json,
    };
    logging::init(level, format);

    let kube_options = match kube_options(&cli) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("cronstable: error: {message}");
            return ExitCode::from(2);
        }
    };
    let root = match (&cli.config, &kube_options) {
        (Some(path), _) => Some(path.clone()),
        (None, Some(_)) => None,
        (None, None) => {
            let default = PathBuf::from(platform::DEFAULT_CONFIG_PATH);
            if !default.exists() {
                eprintln!(
                    "cronstable error: no configuration at the default location ({}); point \
                     -c/--config at a config file or directory (or run with --kube)",
                    platform::DEFAULT_CONFIG_PATH
                );
                return ExitCode::from(1);
            }
            Some(default)
        }
    };

    if cli.validate_config || cli.job_set_id {
        platform::tune_allocator_for_one_shot();
    }
    let loaded = match &root {
        Some(root) => match config::load_path(root) {
            Ok(loaded) => loaded,
            Err(err) => return config_error(&err),
        },
        None => config::LoadedConfig::default(),
    };
    for warning in &loaded.warnings {
        tracing::warn!(target: "cronstable::config", "{warning}");
    }
    for note in &loaded.notes {
        tracing::info!(target: "cronstable::config", "{note}");
    }
    // After the load warnings, which may explain why the section silences
    // a logger (disable_existing_loggers).
    logging::apply_section(loaded.sections.logging.as_ref().map(|l| &l.value));

    // For the two one-shot modes below the process ends at once: freeing
    // every job's allocations one by one would only delay the exit (7 % of
    // `-v` on 10,000 jobs in a profile), so the config is left to the OS.
    if cli.job_set_id {
        println!("{}", fingerprint::job_set_id(&loaded.jobs));
        std::mem::forget(loaded);
        return ExitCode::SUCCESS;
    }
    if cli.validate_config {
        tracing::info!(target: "cronstable", "Configuration is valid.");
        std::mem::forget(loaded);
        return ExitCode::SUCCESS;
    }
    // DEBUG: at INFO the start is announced by the job-set id line, as in
    // the original.
    if let Some(root) = &root {
        tracing::debug!(
            target: "cronstable",
            "configuration loaded from {}: {} job(s)",
            root.display(),
            loaded.jobs.len()
        );
    }
    run_daemon(root, loaded, kube_options)
}

/// The Kubernetes options of the command line, checked; None without
/// `--kube` (and then the companion flags are refused, not ignored).
fn kube_options(cli: &Cli) -> Result<Option<KubeOptions>, String> {
    let scope = SetScope::parse(&cli.cronjobsets)?;
    if !cli.kube {
        let stray = [
            (cli.kubeconfig.is_some(), "--kubeconfig"),
            (cli.namespace.is_some(), "--namespace"),
            (cli.configmap.is_some(), "--configmap"),
            (cli.selector.is_some(), "--selector"),
            (scope != SetScope::Namespace, "--cronjobsets"),
        ];
        if let Some((_, flag)) = stray.iter().find(|(given, _)| *given) {
            return Err(format!("{flag} needs --kube"));
        }
        return Ok(None);
    }
    if let Some(selector) = &cli.selector {
        cronstable::kube::options::check_selector(selector)?;
    }
    Ok(Some(KubeOptions {
        kubeconfig: cli.kubeconfig.clone(),
        namespace: cli.namespace.clone(),
        configmap: cli.configmap.clone(),
        scope,
        selector: cli.selector.clone(),
    }))
}

/// Runs the scheduler on a single-threaded runtime until shutdown. This is
/// where the implementations of the scheduler's ports are picked (the file
/// source, or the Kubernetes source with `--kube`; no leader election, no
/// cluster slots, in-memory run history) and where signals are caught,
/// once, for the whole daemon.
fn run_daemon(
    root: Option<PathBuf>,
    loaded: config::LoadedConfig,
    kube: Option<KubeOptions>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!(target: "cronstable", "cannot start the runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let slot_plan = slot_store(&loaded);
    let start_time = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
    let buckets = config::web_buckets(loaded.sections.web.as_ref().map(|w| &w.value));
    let counters = Arc::new(Mutex::new(Counters::new(start_time, buckets.as_deref())));
    runtime.block_on(async move {
        // Installed before the scheduler starts (and its @reboot jobs), so
        // no signal arrives while the default action would still kill us.
        let signals = match (platform::ShutdownSignals::new(), platform::reload_signals()) {
            (Ok(stops), Ok(hangups)) => (stops, hangups),
            (Err(err), _) | (_, Err(err)) => {
                tracing::error!(target: "cronstable", "cannot install signal handlers: {err}");
                return ExitCode::from(1);
            }
        };
        match platform::raise_open_file_limit() {
            Ok((before, after)) if after != before => tracing::debug!(
                target: "cronstable",
                "open-file limit raised from {before} to {after} (the hard limit)"
            ),
            Ok(_) => {}
            Err(err) => tracing::debug!(
                target: "cronstable",
                "cannot raise the open-file limit: {err}"
            ),
        }
        // As PID 1 (a container's entry point) orphans of jobs are adopted
        // by the daemon; without this they would stay zombies.
        if let Err(err) = platform::start_orphan_reaper() {
            tracing::warn!(target: "cronstable", "cannot reap orphaned processes: {err}");
        }
        let (may_write_tx, may_write) = tokio::sync::watch::channel(true);
        let sources = match open_sources(kube, root, loaded, &counters, may_write).await {
            Ok(sources) => sources,
            Err(code) => return code,
        };
        let slot_store = slot_plan.map(|(plan, node, settings)| {
            (
                build_slot_store(plan, sources.kube_client.clone()),
                node,
                settings,
            )
        });
        // The gossip backend compares peers by the scheduler's job-set id
        // (the initial set's now, the scheduler's after each reload) and
        // advertises the scheduler's jobs for the fleet view.
        let (feed_tx, feed) =
            cluster::feed::SchedulerFeed::channel(sources.initial.job_set_id.clone());
        let (gate, leadership) = cluster::supervise::start(
            sources.cluster_config,
            backend_factory(sources.kube_client),
            Arc::clone(&counters),
            may_write_tx,
            feed,
        )
        .await;
        let (shutdown, stop) = shutdown::channel();
        let scheduler = Scheduler::new(
            sources.initial,
            Ports {
                source: sources.source,
                gate: Box::new(gate),
                slots: match slot_store {
                    Some((store, node, settings)) => {
                        Box::new(cluster::slots::ClusterSlots::new(store, &node, settings))
                    }
                    None => Box::new(ports::NoSlots),
                },
                store: Box::new(ports::MemoryStore::default()),
                clock: Arc::new(ports::SystemClock),
                reporter: sources.reporter,
                counters: Arc::clone(&counters),
                shutdown: shutdown.clone(),
            },
        );
        platform::release_free_memory();
        let control = scheduler.control();
        if let Some(writer) = sources.status_writer {
            writer.start(control.clone(), Arc::clone(&counters));
        }
        tokio::spawn(cluster::feed::follow_scheduler(
            control.clone(),
            feed_tx,
            Arc::clone(&counters),
        ));
        let reload = sources.reload;
        let web_config = sources.web_config;
        let forwarder = tokio::spawn(forward_signals(signals.0, signals.1, shutdown, reload));
        // The API renders on its own thread, so a large response never
        // delays a launch (see `web::ApiThread`).
        let web = match web::ApiThread::start(web_config, control) {
            Ok(thread) => Some(thread),
            Err(err) => {
                tracing::error!(target: "cronstable::web", "cannot start the web API thread: {err}");
                None
            }
        };
        scheduler.run(stop).await;
        // The gate asked for the release when the drain began; this waits
        // (bounded) for it to land before the process exits.
        leadership.stop().await;
        if let Some(web) = web {
            web.stop();
        }
        forwarder.abort();
        ExitCode::SUCCESS
    })
}

/// Where `concurrencyScope: cluster` slots are kept, decided from the
/// config before the runtime starts (the Lease and etcd stores need the
/// runtime and, in Kubernetes mode, the mode's client: see
/// [`build_slot_store`]).
/// The client and namespace of the Lease backend's objects (the election
/// Lease and the slot Leases): the `--kube` client when there is one, else
/// one built from the section's kubeconfig / apiServer (or the pod's
/// service account); the section's `leaseNamespace` wins over the
/// client's namespace.
async fn lease_client(
    shared: Option<(kube::Client, String)>,
    lease: &config::cluster::KubernetesSettings,
) -> Result<(kube::Client, String), String> {
    let (client, namespace) = match shared {
        Some(shared) => shared,
        None => {
            let options = KubeOptions {
                kubeconfig: lease.kubeconfig.as_ref().map(PathBuf::from),
                namespace: lease.lease_namespace.clone(),
                ..KubeOptions::default()
            };
            let connection =
                cronstable::kube::client::connect_to(&options, lease.api_server.as_deref())
                    .await
                    .map_err(|e| e.to_string())?;
            (connection.client, connection.namespace)
        }
    };
    let namespace = lease.lease_namespace.clone().unwrap_or(namespace);
    Ok((client, namespace))
}

enum SlotPlan {
    /// A shared directory (`state.path`, or the filesystem backend's).
    Directory(Arc<dyn cluster::slots::SlotStore>),
    /// A Lease per job beside the election Lease.
    Leases(config::cluster::KubernetesSettings),
    /// A key per job under the election key.
    Etcd(config::cluster::EtcdSettings, std::time::Duration),
}

/// The store of `concurrencyScope: cluster` slots, the node name they are
/// held under and their settings; None when no job set could use one (no
/// `state` path and no cluster backend: the load refuses cluster-scoped
/// jobs then). `state.path` wins over the cluster backend's store.
/// Decided once at start: a reload that changes `state` or the cluster
/// backend takes effect for slots at the next start (the jobs' own
/// settings follow reloads).
///
/// Also logs, once, what a `state` section asks for that this daemon
/// keeps in memory only.
fn slot_store(
    loaded: &config::LoadedConfig,
) -> Option<(SlotPlan, String, cluster::slots::SlotSettings)> {
    let state = loaded.sections.state.as_ref().map(|s| &s.value);
    if state.is_some() {
        tracing::warn!(
            target: "cronstable",
            "state: this version of cronstable uses the state section only for \
             concurrencyScope: cluster slots; run history, pending retries and pauses are kept in \
             memory only (lost on restart), and onMissed catch-up at start, archiveOutput and the \
             job state endpoint (jobApi) are not provided"
        );
    }
    let cluster = loaded.sections.cluster.as_ref().and_then(|c| {
        match config::cluster::resolve(&c.value, platform::host_name()) {
            Ok(config::cluster::Resolved::Lease { settings, .. }) => Some(settings),
            _ => None,
        }
    });
    // The name other nodes see: the cluster's node name when there is a
    // cluster section, else the host name (the original's choice).
    let node = cluster
        .as_ref()
        .map_or_else(|| platform::host_name().to_owned(), |c| c.node_name.clone());
    let settings = cluster::slots::SlotSettings::from_state(state);
    let plan = match (state, cluster.as_deref()) {
        (Some(state), _) if !state.path.trim().is_empty() => {
            SlotPlan::Directory(Arc::new(cluster::slots::fs::FsSlotStore::new(
                &state.path,
                state
                    .deployment_id
                    .as_deref()
                    .filter(|d| !d.is_empty())
                    .unwrap_or("default"),
            )))
        }
        (_, Some(cluster)) => match &cluster.backend {
            ClusterBackendSettings::Filesystem(fs) => SlotPlan::Directory(Arc::new(
                cluster::slots::fs::FsSlotStore::new(&fs.path, &fs.deployment_id),
            )),
            ClusterBackendSettings::Kubernetes(lease) => SlotPlan::Leases(lease.clone()),
            ClusterBackendSettings::Etcd(etcd) => SlotPlan::Etcd(
                etcd.clone(),
                std::time::Duration::from_secs(cluster.connect_timeout),
            ),
        },
        _ => return None,
    };
    Some((plan, node, settings))
}

/// The slot store of a plan. The Lease store uses the Kubernetes mode's
/// client when there is one (as the election does), else connects the
/// way the election's backend does (kubeconfig / apiServer / in-cluster);
/// both it and the etcd store connect on first use, so a store that is
/// down at start only makes claims unavailable (`onStoreUnavailable`).
fn build_slot_store(
    plan: SlotPlan,
    kube_client: Option<(kube::Client, String)>,
) -> Arc<dyn cluster::slots::SlotStore> {
    match plan {
        SlotPlan::Directory(store) => store,
        SlotPlan::Leases(lease) => {
            let lease_name = lease.lease_name.clone();
            let source: cluster::slots::kube::LeaseApiSource = Arc::new(move || {
                let lease = lease.clone();
                let shared = kube_client.clone();
                Box::pin(async move {
                    let (client, namespace) = lease_client(shared, &lease)
                        .await
                        .map_err(cluster::BackendError::Setup)?;
                    Ok(kube::Api::namespaced(client, &namespace))
                })
            });
            Arc::new(cluster::slots::kube::KubeSlotStore::new(
                &lease_name,
                source,
            ))
        }
        SlotPlan::Etcd(etcd, timeout) => {
            let election_name = etcd.election_name.clone();
            let source: cluster::slots::etcd::EtcdClientSource = Arc::new(move || {
                let etcd = etcd.clone();
                Box::pin(async move {
                    // The node name is the election's business; the slot
                    // store only borrows the client.
                    cluster::etcd::EtcdLease::connect(&etcd, String::new(), timeout).await
                })
            });
            Arc::new(cluster::slots::etcd::EtcdSlotStore::new(
                &election_name,
                source,
            ))
        }
    }
}

/// What the daemon's job source brings along.
struct Sources {
    source: Box<dyn JobSource>,
    initial: ports::JobSet,
    web_config: tokio::sync::watch::Receiver<Option<cronstable::config::WebConfig>>,
    cluster_config: tokio::sync::watch::Receiver<Option<cronstable::config::ClusterConfig>>,
    reporter: Arc<dyn report::Reporter>,
    status_writer: Option<cronstable::kube::StatusWriter>,
    reload: Option<ReloadTrigger>,
    /// The Kubernetes mode's client and namespace, for the Lease backend.
    kube_client: Option<(kube::Client, String)>,
}

/// The file source, or the Kubernetes source with `--kube`.
async fn open_sources(
    kube: Option<KubeOptions>,
    root: Option<PathBuf>,
    loaded: config::LoadedConfig,
    counters: &ports::SharedCounters,
    may_write: tokio::sync::watch::Receiver<bool>,
) -> Result<Sources, ExitCode> {
    match (kube, root) {
        (Some(options), root) => {
            let mode = cronstable::kube::start(
                &options,
                root,
                loaded,
                Arc::clone(counters),
                report::default_reporter(),
                may_write,
            )
            .await
            .map_err(|err| {
                tracing::error!(target: "cronstable", "Kubernetes mode: {err}");
                ExitCode::from(1)
            })?;
            Ok(Sources {
                web_config: mode.source.web_config(),
                cluster_config: mode.source.cluster_config(),
                source: Box::new(mode.source),
                initial: mode.initial,
                reporter: mode.reporter,
                status_writer: Some(mode.status),
                reload: None,
                kube_client: Some((mode.client, mode.namespace)),
            })
        }
        (None, Some(root)) => {
            let (source, initial) = FileSource::open(root, loaded, Arc::clone(counters));
            Ok(Sources {
                web_config: source.web_config(),
                cluster_config: source.cluster_config(),
                reload: Some(source.reload_trigger()),
                source: Box::new(source),
                initial,
                reporter: report::default_reporter(),
                status_writer: None,
                kube_client: None,
            })
        }
        (None, None) => unreachable!("main always resolves a config path without --kube"),
    }
}

/// How a `cluster` section becomes a running backend. The Lease backend
/// shares the Kubernetes mode's client when there is one (its namespace
/// the default for the Lease), else builds its own from
/// `cluster.kubernetes.kubeconfig` / `apiServer` or the pod's account.
fn backend_factory(
    kube_client: Option<(kube::Client, String)>,
) -> cluster::supervise::BackendFactory {
    Box::new(move |settings: ClusterSettings| {
        let shared = kube_client.clone();
        Box::pin(async move {
            match &settings.backend {
                ClusterBackendSettings::Kubernetes(lease) => {
                    let (client, namespace) = lease_client(shared, lease)
                        .await
                        .map_err(cluster::BackendError::Setup)?;
                    let backend: Box<dyn cluster::Backend> = Box::new(
                        cluster::kubernetes::KubernetesLease::new(client, namespace, lease),
                    );
                    Ok(backend)
                }
                ClusterBackendSettings::Filesystem(store) => {
                    let timeout = std::time::Duration::from_secs(settings.connect_timeout);
                    let backend: Box<dyn cluster::Backend> = Box::new(
                        cluster::filesystem::FilesystemLease::open(
                            store,
                            &settings.node_name,
                            timeout,
                        )
                        .await?,
                    );
                    Ok(backend)
                }
                ClusterBackendSettings::Etcd(etcd) => {
                    let backend: Box<dyn cluster::Backend> = Box::new(
                        cluster::etcd::EtcdLease::connect(
                            etcd,
                            settings.node_name.clone(),
                            std::time::Duration::from_secs(settings.connect_timeout),
                        )
                        .await?,
                    );
                    Ok(backend)
                }
            }
        })
    })
}

/// The daemon's one signal handler: SIGINT/SIGTERM ask the scheduler to
/// drain (every later one too: the scheduler says it is still waiting),
/// SIGHUP asks the file source to reload now. The Kubernetes source has
/// nothing to reload on demand: it follows its watches and checks the
/// files of `-c` at every pass.
async fn forward_signals(
    mut stops: platform::ShutdownSignals,
    mut hangups: platform::ReloadSignals,
    shutdown: ShutdownHandle,
    reload: Option<ReloadTrigger>,
) {
    loop {
        tokio::select! {
            name = stops.recv() => shutdown.stop(StopCause::Signal(name)),
            Some(()) = hangups.recv() => match &reload {
                Some(reload) => {
                    tracing::info!(target: "cronstable::scheduler", "Reload requested (SIGHUP); reloading configuration");
                    reload.trigger();
                }
                None => tracing::info!(
                    target: "cronstable::scheduler",
                    "SIGHUP received: in Kubernetes mode the configuration follows the API server \
                     and the files are checked at every pass; nothing to do"
                ),
            },
        }
    }
}

fn config_error(err: &ConfigError) -> ExitCode {
    tracing::error!(target: "cronstable", "Configuration error: {err}");
    ExitCode::from(1)
}
