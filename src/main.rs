//! The `cronstable` command line: parse arguments, set up logging, load
//! the config, then answer a one-shot question (`crd`, `init`, `state ...`, `-v`,
//! `--job-set-id`) or run the daemon ([`cronstable::daemon::run`]).

use cronstable::config::{self, ConfigError};
use cronstable::daemon::args::{self, ConfigRoot, Subcommand};
use cronstable::daemon::init;
use cronstable::daemon::state_args;
use cronstable::{fingerprint, logging, platform};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

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
    let cli = args::parse();
    let job = match cli.job_invocation() {
        Some(Ok(invocation)) => Some(invocation),
        Some(Err(message)) => return usage_error(&message),
        None => match cli.misplaced_dash_dash() {
            Some(message) => return usage_error(message),
            None => None,
        },
    };
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
    // The terminal dashboard: a client of a running daemon, no config and
    // no logging (the screen is its output).
    if let Some(Subcommand::Tui(tui)) = &cli.command {
        return ExitCode::from(cronstable::tui::run(tui));
    }
    if let Some(Subcommand::Init(init)) = &cli.command {
        return run_init(init.directory.as_deref(), cli.config.as_deref());
    }
    // The MCP stdio bridge: a client of a running daemon, no config, and
    // stdout carries protocol frames only (no logging set up).
    if let Some(Subcommand::Mcp(mcp)) = &cli.command {
        return ExitCode::from(cronstable::cli::mcp::run(mcp));
    }
    // A job command talks to the running daemon's job API: no logging,
    // no config.
    if let Some(job) = job {
        return ExitCode::from(cronstable::jobcli::run(&job));
    }
    logging::init(level, cli.log_format.into());
    if let Some(Subcommand::State(state)) = &cli.command {
        return run_state(state.command(cli.config.as_deref()));
    }

    let kube_options = match cli.kube_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("cronstable: error: {message}");
            return ExitCode::from(2);
        }
    };
    let probe_listen = match cli.probe_listen() {
        Ok(url) => url,
        Err(message) => {
            eprintln!("cronstable: error: {message}");
            return ExitCode::from(2);
        }
    };
    let default = Path::new(platform::DEFAULT_CONFIG_PATH);
    let given = cli.config.as_deref();
    let root = match args::config_root(given, cli.kube, default, default.exists()) {
        ConfigRoot::Path(path) => Some(path),
        ConfigRoot::None => None,
        // A bare command on a fresh host is a first run: guidance, not
        // an error.
        ConfigRoot::MissingDefault if std::env::args_os().len() == 1 => {
            print!("{}", args::first_run_guidance());
            return ExitCode::SUCCESS;
        }
        ConfigRoot::MissingDefault => return missing_default(),
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
    if !(cli.validate_config || cli.job_set_id) {
        return cronstable::daemon::run(root, loaded, kube_options, probe_listen);
    }
    // The one-shot modes need only the `logging` section (the daemon puts
    // every section in force at start), applied after the load warnings,
    // which may explain why it silences a logger. The process then ends
    // at once: freeing every job's allocations one by one would only
    // delay the exit (7 % of `-v` on 10,000 jobs in a profile), so the
    // config is left to the OS.
    logging::apply_section(loaded.sections.logging.as_ref().map(|l| &l.value));
    if cli.job_set_id {
        println!("{}", fingerprint::job_set_id(&loaded.jobs));
    } else {
        tracing::info!(target: "cronstable", "Configuration is valid.");
    }
    std::mem::forget(loaded);
    ExitCode::SUCCESS
}

/// A usage error found after parsing: the message on stderr, exit 2.
fn usage_error(message: &str) -> ExitCode {
    eprintln!("cronstable: error: {message}");
    ExitCode::from(2)
}

/// `cronstable state ...`: an admin action on the store (its report on
/// stdout/stderr and its exit code), or a usage error (exit 2).
fn run_state(command: state_args::StateCommand) -> ExitCode {
    match command {
        state_args::StateCommand::Job(job) => ExitCode::from(cronstable::jobcli::run(&job)),
        state_args::StateCommand::Usage(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
        state_args::StateCommand::Admin { config, request } => {
            let report = cronstable::state::admin::run(&config, &request);
            // Nowhere to report a failed write: the exit code still tells.
            let _ = std::io::stdout().write_all(report.stdout.as_bytes());
            let _ = std::io::stderr().write_all(report.stderr.as_bytes());
            ExitCode::from(report.code)
        }
    }
}

/// No config at the default location: the manual's message and the
/// help on stderr, exit 1.
/// `cronstable init`: the starter config written (stdout says where and
/// how to start), or the refusal on stderr with exit 1.
fn run_init(directory: Option<&Path>, config: Option<&Path>) -> ExitCode {
    let default = Path::new(platform::DEFAULT_CONFIG_PATH);
    let target = init::target(directory, config, default);
    if let Some(note) = &target.note {
        eprintln!("{note}");
    }
    match init::run(&target, default) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(refusal) => {
            eprintln!("{refusal}");
            ExitCode::from(1)
        }
    }
}

fn missing_default() -> ExitCode {
    // Nowhere to report a failed write: the exit code still tells.
    let _ = std::io::stderr().write_all(args::missing_default_text().as_bytes());
    ExitCode::from(1)
}

fn config_error(err: &ConfigError) -> ExitCode {
    tracing::error!(target: "cronstable", "Configuration error: {err}");
    ExitCode::from(1)
}
