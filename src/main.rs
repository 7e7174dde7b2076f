//! The `cronstable` command line: parse arguments, set up logging, hand off.

use clap::Parser;
use cronstable::config::{self, ConfigError};
use cronstable::kube::{KubeOptions, SetScope};
use cronstable::logging::{self, LogFormat};
use cronstable::{fingerprint, platform};
use std::path::PathBuf;
use std::process::ExitCode;

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
    // For the two one-shot modes below the process ends at once: freeing
    // every job's allocations one by one would only delay the exit (7 % of
    // `-v` on 10,000 jobs in a profile), so the config is left to the OS.
    // They need only the `logging` section of the config's sections (the
    // daemon puts them all in force at start); applied after the load
    // warnings, which may explain why it silences a logger.
    if cli.job_set_id || cli.validate_config {
        logging::apply_section(loaded.sections.logging.as_ref().map(|l| &l.value));
    }
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
    cronstable::daemon::run(root, loaded, kube_options)
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

fn config_error(err: &ConfigError) -> ExitCode {
    tracing::error!(target: "cronstable", "Configuration error: {err}");
    ExitCode::from(1)
}
