//! The `cronstable` command line: parse arguments, set up logging, hand off.

use clap::Parser;
use cronstable::config::{self, ConfigError};
use cronstable::logging::{self, LogFormat};
use cronstable::metrics::prometheus::Counters;
use cronstable::scheduler::ports;
use cronstable::scheduler::shutdown::{self, ShutdownHandle, StopCause};
use cronstable::scheduler::{Ports, Scheduler};
use cronstable::source::file::web_buckets;
use cronstable::source::{FileSource, ReloadTrigger};
use cronstable::{fingerprint, platform, report, web};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// A fast cron daemon, drop-in compatible with the Python cronstable.
#[derive(Parser, Debug)]
#[command(name = "cronstable", disable_version_flag = true)]
struct Cli {
    /// Configuration file, or a directory of *.yaml/*.yml files and crontabs.
    #[arg(short = 'c', long = "config", value_name = "FILE-OR-DIR", default_value = platform::DEFAULT_CONFIG_PATH)]
    config: PathBuf,

    /// Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL (any case).
    #[arg(
        short = 'l',
        long = "log-level",
        value_name = "LEVEL",
        default_value = "INFO"
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

    if cli.config.as_os_str() == platform::DEFAULT_CONFIG_PATH && !cli.config.exists() {
        eprintln!(
            "cronstable error: no configuration at the default location ({}); point -c/--config \
             at a config file or directory",
            platform::DEFAULT_CONFIG_PATH
        );
        return ExitCode::from(1);
    }

    let loaded = match config::load_path(&cli.config) {
        Ok(loaded) => loaded,
        Err(err) => return config_error(&err),
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

    if cli.job_set_id {
        println!("{}", fingerprint::job_set_id(&loaded.jobs));
        return ExitCode::SUCCESS;
    }
    if cli.validate_config {
        tracing::info!(target: "cronstable", "Configuration is valid.");
        return ExitCode::SUCCESS;
    }
    // DEBUG: at INFO the start is announced by the job-set id line, as in
    // the original.
    tracing::debug!(
        target: "cronstable",
        "configuration loaded from {}: {} job(s)",
        cli.config.display(),
        loaded.jobs.len()
    );
    run_daemon(cli.config, loaded)
}

/// Runs the scheduler on a single-threaded runtime until shutdown. This is
/// where the implementations of the scheduler's ports are picked (today:
/// the file source, no leader election, no cluster slots, in-memory run
/// history) and where signals are caught, once, for the whole daemon.
fn run_daemon(config: PathBuf, loaded: config::LoadedConfig) -> ExitCode {
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
    let start_time = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
    let buckets = web_buckets(loaded.sections.web.as_ref().map(|w| &w.value));
    let counters = Arc::new(Mutex::new(Counters::new(start_time, buckets.as_deref())));
    let (source, initial) = FileSource::open(config, loaded, Arc::clone(&counters));
    let web_config = source.web_config();
    let reload = source.reload_trigger();
    let (shutdown, stop) = shutdown::channel();
    let scheduler = Scheduler::new(
        initial,
        Ports {
            source: Box::new(source),
            gate: Box::new(ports::Standalone),
            slots: Box::new(ports::NoSlots),
            store: Box::new(ports::MemoryStore::default()),
            clock: Arc::new(ports::SystemClock),
            reporter: report::default_reporter(),
            counters,
            shutdown: shutdown.clone(),
        },
    );
    platform::release_free_memory();
    let control = scheduler.control();
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
        let forwarder = tokio::spawn(forward_signals(signals.0, signals.1, shutdown, reload));
        let web = tokio::spawn(web::supervise(web_config, control));
        scheduler.run(stop).await;
        web.abort();
        forwarder.abort();
        ExitCode::SUCCESS
    })
}

/// The daemon's one signal handler: SIGINT/SIGTERM ask the scheduler to
/// drain (every later one too: the scheduler says it is still waiting),
/// SIGHUP asks the file source to reload now.
async fn forward_signals(
    mut stops: platform::ShutdownSignals,
    mut hangups: platform::ReloadSignals,
    shutdown: ShutdownHandle,
    reload: ReloadTrigger,
) {
    loop {
        tokio::select! {
            name = stops.recv() => shutdown.stop(StopCause::Signal(name)),
            Some(()) = hangups.recv() => {
                tracing::info!(target: "cronstable::scheduler", "Reload requested (SIGHUP); reloading configuration");
                reload.trigger();
            }
        }
    }
}

fn config_error(err: &ConfigError) -> ExitCode {
    tracing::error!(target: "cronstable", "Configuration error: {err}");
    ExitCode::from(1)
}
