//! The daemon's command line: its flags, the checks between them, and
//! where the config comes from when `-c` is not given. `main.rs` parses
//! with [`parse`] and acts on the answers.

use crate::jobcli::args::{
    ArtifactArgs, CursorArgs, IdempotentArgs, LockArgs, SecretArgs, XcomArgs,
};
use crate::jobcli::Invocation;
use crate::kube::{KubeOptions, SetScope};
use crate::logging::LogFormat;
use crate::platform;
use clap::{CommandFactory, FromArgMatches, Parser};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A fast cron daemon, drop-in compatible with the Python cronstable.
#[derive(Parser, Debug)]
#[command(name = "cronstable", disable_version_flag = true)]
pub struct Cli {
    /// Configuration file, or a directory of *.yaml/*.yml files and crontabs
    /// (the default is set in [`command`], from the platform's path).
    #[arg(
        short = 'c',
        long = "config",
        value_name = "FILE-OR-DIR",
        env = "CRONSTABLE_CONFIG"
    )]
    pub config: Option<PathBuf>,

    /// Kubernetes mode: also take jobs from CronJobSets and a ConfigMap.
    #[arg(long = "kube", env = "CRONSTABLE_KUBE")]
    pub kube: bool,

    /// With --kube: the kubeconfig to use [default: the pod's service
    /// account, else $KUBECONFIG or ~/.kube/config].
    #[arg(
        long = "kubeconfig",
        value_name = "PATH",
        env = "CRONSTABLE_KUBECONFIG"
    )]
    pub kubeconfig: Option<PathBuf>,

    /// With --kube: the namespace of the ConfigMap and of the CronJobSets
    /// taken [default: the pod's, else the kubeconfig context's, else default].
    #[arg(long = "namespace", value_name = "NS", env = "CRONSTABLE_NAMESPACE")]
    pub namespace: Option<String>,

    /// With --kube: a ConfigMap whose *.yaml/*.yml keys are config files and
    /// whose *.crontab/*.cron/crontab keys are crontabs.
    #[arg(long = "configmap", value_name = "NAME", env = "CRONSTABLE_CONFIGMAP")]
    pub configmap: Option<String>,

    /// With --kube: which CronJobSets to take: namespace, all or none.
    #[arg(
        long = "cronjobsets",
        value_name = "SCOPE",
        env = "CRONSTABLE_CRONJOBSETS",
        default_value = "namespace"
    )]
    pub cronjobsets: String,

    /// With --kube: take only the CronJobSets matching this label selector.
    #[arg(long = "selector", value_name = "LABELS", env = "CRONSTABLE_SELECTOR")]
    pub selector: Option<String>,

    /// With --kube: this scheduler's pod name, for the Events about the
    /// scheduler itself (a missing ConfigMap) [the chart sets it from the
    /// downward API].
    #[arg(long = "pod-name", value_name = "NAME", env = "CRONSTABLE_POD_NAME")]
    pub pod_name: Option<String>,

    /// With --kube: this scheduler's pod uid (with --pod-name, `kubectl
    /// describe pod` lists those Events).
    #[arg(long = "pod-uid", value_name = "UID", env = "CRONSTABLE_POD_UID")]
    pub pod_uid: Option<String>,

    /// With --kube and no `state.path`: the ConfigMap the durable facts
    /// (pauses, pending retries, last outcomes, @reboot markers,
    /// counters) are kept in [default: <--configmap>-facts, else
    /// cronstable-facts].
    #[arg(
        long = "facts-configmap",
        value_name = "NAME",
        env = "CRONSTABLE_FACTS_CONFIGMAP"
    )]
    pub facts_configmap: Option<String>,

    /// Serve /livez and /readyz on this http:// address while no `web`
    /// section is in force (a ConfigMap that holds the web section is
    /// missing, say), so the probes find the scheduler alive.
    #[arg(
        long = "probe-listen",
        value_name = "URL",
        env = "CRONSTABLE_PROBE_LISTEN"
    )]
    pub probe_listen: Option<String>,

    /// Log level: DEBUG, INFO, WARNING, ERROR or CRITICAL (any case).
    #[arg(
        short = 'l',
        long = "log-level",
        value_name = "LEVEL",
        default_value = "INFO",
        env = "CRONSTABLE_LOG_LEVEL"
    )]
    pub log_level: String,

    /// Format of log lines until a `logging:` section says otherwise:
    /// basic (LEVEL:logger:message, the original's), text (timestamped)
    /// or json.
    #[arg(long = "log-format", value_enum, default_value = "basic")]
    pub log_format: FormatArg,

    /// Load and validate the configuration, then exit (0 valid, 1 invalid).
    #[arg(short = 'v', long = "validate-config")]
    pub validate_config: bool,

    /// Print the job-set id of the configuration and exit.
    #[arg(long = "job-set-id")]
    pub job_set_id: bool,

    /// Print the version and exit.
    #[arg(long = "version")]
    pub version: bool,

    /// A one-shot command instead of the daemon.
    #[command(subcommand)]
    pub command: Option<Subcommand>,

    /// The words after the first `--` of the command line (split off
    /// before parsing; only `lock run` takes them, as its command).
    #[arg(skip)]
    pub trailing_command: Option<Vec<OsString>>,
}

/// One-shot commands that print something and exit.
#[derive(clap::Subcommand, Debug)]
pub enum Subcommand {
    /// Write a commented starter configuration into DIRECTORY and exit.
    #[command(
        about = "write a commented starter configuration into DIRECTORY (default: the platform config directory) and exit"
    )]
    Init(InitArgs),
    /// Print the CronJobSet CustomResourceDefinition (YAML) and exit.
    Crd,
    /// Administer the durable state store of the config's `state:` section.
    #[command(about = "manage saved state (backup/restore/migrate/gc/check/migrate-schema)")]
    State(super::state_args::StateArgs),
    /// `cursor get|advance`: a job's saved processing position.
    #[command(about = "read or advance a saved processing position (cursor)")]
    Cursor(CursorArgs),
    /// `lock acquire|run|release`: a lock shared across nodes.
    #[command(about = "coordinate concurrent work across nodes with a shared lock")]
    Lock(LockArgs),
    /// `artifact put|get|list`: named blobs.
    #[command(about = "save or retrieve a named artifact")]
    Artifact(ArtifactArgs),
    /// `idempotent KEY`: a claim made once across nodes.
    #[command(
        about = "claim a key once across nodes (exit 0 for a new claim, 5 for an existing claim, or 1 on error)"
    )]
    Idempotent(IdempotentArgs),
    /// `xcom push|pull|list`: task outputs within a workflow run.
    #[command(about = "share task output (XCom) within a workflow run")]
    Xcom(XcomArgs),
    /// `secret get|list`: the run's staged secrets.
    #[command(about = "read a secret available to the current run")]
    Secret(SecretArgs),
    /// `mcp`: the MCP stdio bridge to a running daemon's `/mcp`.
    #[command(
        about = "run the MCP stdio bridge to a running daemon's /mcp endpoint (for desktop MCP clients)"
    )]
    Mcp(crate::cli::mcp::McpArgs),
    /// `tui`: the terminal dashboard of a running daemon.
    #[command(about = "open the terminal dashboard for a running cronstable daemon")]
    Tui(crate::tui::args::TuiArgs),
}

/// `init [DIRECTORY]`.
#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Target configuration directory (default: -c/--config if given,
    /// else the platform config directory).
    #[arg(value_name = "DIRECTORY")]
    pub directory: Option<PathBuf>,
}

/// `--log-format`: one variant a [`LogFormat`], described in the flag's
/// help. The variants carry no doc comments on purpose: clap would show
/// them as per-value help and switch `--help` to its long layout.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum FormatArg {
    Basic,
    Text,
    Json,
}

impl From<FormatArg> for LogFormat {
    fn from(arg: FormatArg) -> LogFormat {
        match arg {
            FormatArg::Basic => LogFormat::Basic,
            FormatArg::Text => LogFormat::Text,
            FormatArg::Json => LogFormat::Json,
        }
    }
}

/// The command, its `-c` help naming the path the daemon really reads
/// when `-c` is not given (written from the constant, so the two cannot
/// drift apart).
pub fn command() -> clap::Command {
    Cli::command().mut_arg("config", |arg| {
        arg.help(format!(
            "Configuration file, or a directory of *.yaml/*.yml files and crontabs \
             [default: {}; none with --kube]",
            platform::DEFAULT_CONFIG_PATH
        ))
    })
}

/// Parses the process's arguments; a usage error exits 2 with clap's
/// message, `--help` prints [`command`]'s help and exits 0. The words
/// after the first `--` are split off first (see
/// [`crate::jobcli::split_at_dash_dash`]) into [`Cli::trailing_command`].
pub fn parse() -> Cli {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_else(|| OsString::from("cronstable"));
    let (head, trailing) = crate::jobcli::split_at_dash_dash(args.collect());
    let matches = command().get_matches_from(std::iter::once(program).chain(head));
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    cli.trailing_command = trailing;
    cli
}

/// The full help, as `--help` prints it.
pub fn help() -> String {
    command().render_help().to_string()
}

impl Cli {
    /// The job command the command line names (`state get|set|delete|
    /// keys`, `cursor`, `lock`, `artifact`, `idempotent`, `xcom`,
    /// `secret`), or None for anything else. Err is the usage error of a
    /// `--` that does not precede a `lock run` command.
    pub fn job_invocation(&self) -> Option<Result<Invocation, String>> {
        let invocation = match self.command.as_ref()? {
            Subcommand::State(state) => state.job_action()?.invocation(),
            Subcommand::Cursor(args) => args.invocation(),
            Subcommand::Lock(args) => args.invocation(),
            Subcommand::Artifact(args) => args.invocation(),
            Subcommand::Idempotent(args) => args.invocation(),
            Subcommand::Xcom(args) => args.invocation(),
            Subcommand::Secret(args) => args.invocation(),
            Subcommand::Crd | Subcommand::Init(_) | Subcommand::Mcp(_) | Subcommand::Tui(_) => {
                return None
            }
        };
        Some(invocation.with_trailing_command(self.trailing_command.clone()))
    }

    /// The usage error of a `--` on a command line that runs no job
    /// command (the daemon, `crd`, a `state` admin action).
    pub fn misplaced_dash_dash(&self) -> Option<&'static str> {
        self.trailing_command
            .as_ref()
            .map(|_| crate::jobcli::DASH_DASH_MISPLACED)
    }

    /// The Kubernetes options, checked; None without `--kube` (and then
    /// the companion flags are refused, not ignored).
    pub fn kube_options(&self) -> Result<Option<KubeOptions>, String> {
        let scope = SetScope::parse(&self.cronjobsets)?;
        if !self.kube {
            let stray = [
                (self.kubeconfig.is_some(), "--kubeconfig"),
                (self.namespace.is_some(), "--namespace"),
                (self.configmap.is_some(), "--configmap"),
                (self.selector.is_some(), "--selector"),
                (self.pod_name.is_some(), "--pod-name"),
                (self.pod_uid.is_some(), "--pod-uid"),
                (self.facts_configmap.is_some(), "--facts-configmap"),
                (scope != SetScope::Namespace, "--cronjobsets"),
            ];
            if let Some((_, flag)) = stray.iter().find(|(given, _)| *given) {
                return Err(format!("{flag} needs --kube"));
            }
            return Ok(None);
        }
        if let Some(selector) = &self.selector {
            crate::kube::options::check_selector(selector)?;
        }
        Ok(Some(KubeOptions {
            kubeconfig: self.kubeconfig.clone(),
            namespace: self.namespace.clone(),
            configmap: self.configmap.clone(),
            scope,
            selector: self.selector.clone(),
            pod_name: self.pod_name.clone().filter(|n| !n.is_empty()),
            pod_uid: self.pod_uid.clone().filter(|u| !u.is_empty()),
            facts_configmap: self.facts_configmap.clone().filter(|n| !n.is_empty()),
        }))
    }

    /// `--probe-listen`, checked: an `http://host:port` address.
    pub fn probe_listen(&self) -> Result<Option<String>, String> {
        let Some(url) = &self.probe_listen else {
            return Ok(None);
        };
        match crate::web::parse_listen(url) {
            Ok(crate::web::ListenAddr::Tcp(_)) => Ok(Some(url.clone())),
            Ok(_) => Err(format!(
                "invalid --probe-listen '{url}': the probes need an http://host:port address"
            )),
            Err(err) => Err(format!("invalid --probe-listen {err}")),
        }
    }
}

/// Where the config comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigRoot {
    /// This file or directory (`-c`, or the default location).
    Path(PathBuf),
    /// No files: `--kube` without `-c`.
    None,
    /// The default location was asked for (by `-c` naming it, or by
    /// leaving `-c` out) and is missing.
    MissingDefault,
}

/// Resolves the config's location. `default` is the platform's default
/// path and `default_exists` whether it is there. Pure, so every case is
/// testable without touching the real default location.
pub fn config_root(
    given: Option<&Path>,
    kube: bool,
    default: &Path,
    default_exists: bool,
) -> ConfigRoot {
    let path = match (given, kube) {
        (Some(path), _) => path,
        (None, true) => return ConfigRoot::None,
        (None, false) => default,
    };
    if path == default && !default_exists {
        return ConfigRoot::MissingDefault;
    }
    ConfigRoot::Path(path.to_owned())
}

/// What a missing default location prints on stderr before the exit
/// with 1: the CLI Reference's message ("Default-path special case",
/// whether `-c` was left out or names the default), then the help.
pub fn missing_default_text() -> String {
    format!(
        "cronstable error: configuration file not found at the default location ({}). Run \
         `cronstable init` to create a starter configuration there, or point -c/--config at an \
         existing file or directory.\n{}",
        platform::DEFAULT_CONFIG_PATH,
        help()
    )
}

/// What a bare `cronstable` (no argument at all) prints on stdout before
/// exiting with 0 when the default location is missing: where it looked,
/// what to run, then the help.
pub fn first_run_guidance() -> String {
    format!(
        "cronstable: no configuration at the default location ({}). Run `cronstable init` to \
         create a starter configuration, or use -c/--config to select an existing file or \
         directory.\n\n{}",
        platform::DEFAULT_CONFIG_PATH,
        help()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_names_the_default_path_the_daemon_reads() {
        let help = help();
        assert!(
            help.contains(&format!("[default: {}", platform::DEFAULT_CONFIG_PATH)),
            "{help}"
        );
        assert!(!help.contains("cronstable.yaml"), "{help}");
    }

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("cronstable").chain(args.iter().copied()))
            .expect("the arguments parse")
    }

    #[test]
    fn probe_listen_takes_an_http_address_only() {
        assert_eq!(cli(&[]).probe_listen(), Ok(None));
        assert_eq!(
            cli(&["--probe-listen", "http://0.0.0.0:8080"]).probe_listen(),
            Ok(Some("http://0.0.0.0:8080".to_owned()))
        );
        assert_eq!(
            cli(&["--probe-listen", "unix:///run/c.sock"]).probe_listen(),
            Err(
                "invalid --probe-listen 'unix:///run/c.sock': the probes need an \
                 http://host:port address"
                    .to_owned()
            )
        );
        assert_eq!(
            cli(&["--probe-listen", "http://localhost"]).probe_listen(),
            Err("invalid --probe-listen http://localhost: http url needs host and port".to_owned())
        );
    }

    #[test]
    fn the_pod_flags_need_kube_and_reach_the_options() {
        assert_eq!(
            cli(&["--pod-name", "p"]).kube_options(),
            Err("--pod-name needs --kube".to_owned())
        );
        assert_eq!(
            cli(&["--pod-uid", "u"]).kube_options(),
            Err("--pod-uid needs --kube".to_owned())
        );
        let options = cli(&["--kube", "--pod-name", "p", "--pod-uid", "u"])
            .kube_options()
            .expect("valid")
            .expect("kube mode");
        assert_eq!(
            (options.pod_name.as_deref(), options.pod_uid.as_deref()),
            (Some("p"), Some("u"))
        );
        // An empty value (a variable set to nothing) counts as unset.
        let options = cli(&["--kube", "--pod-name", ""])
            .kube_options()
            .expect("valid")
            .expect("kube mode");
        assert_eq!(options.pod_name, None);
    }

    #[test]
    fn config_root_covers_every_case() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let default = dir.path().join("cronstable.d");
        let other = dir.path().join("other.yaml");
        // -c given: taken as is, whether or not it exists (the load says
        // what is wrong with it).
        assert_eq!(
            config_root(Some(&other), false, &default, false),
            ConfigRoot::Path(other.clone())
        );
        assert_eq!(
            config_root(Some(&other), true, &default, false),
            ConfigRoot::Path(other.clone())
        );
        // --kube without -c: no files.
        assert_eq!(config_root(None, true, &default, false), ConfigRoot::None);
        // The default, present.
        assert_eq!(
            config_root(None, false, &default, true),
            ConfigRoot::Path(default.clone())
        );
        // The default, missing: left out or named, the same request.
        assert_eq!(
            config_root(None, false, &default, false),
            ConfigRoot::MissingDefault
        );
        assert_eq!(
            config_root(Some(&default), false, &default, false),
            ConfigRoot::MissingDefault
        );
    }

    #[test]
    fn missing_default_says_where_and_how() {
        let text = missing_default_text();
        assert!(text.starts_with(&format!(
            "cronstable error: configuration file not found at the default location ({}). Run \
             `cronstable init` to create a starter configuration there, or point -c/--config at \
             an existing file or directory.\n",
            platform::DEFAULT_CONFIG_PATH
        )));
        assert!(text.ends_with(&help()));
    }
}
