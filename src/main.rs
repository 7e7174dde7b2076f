//! The `cronstable` command line: parse arguments, set up logging, load
//! the config, then answer a one-shot question (`crd`, `init`, `state ...`,
//! `-v`, `--job-set-id`; [`cronstable::daemon::commands`]) or run the
//! daemon ([`cronstable::daemon::run`]).

use cronstable::config;
use cronstable::daemon::args::{self, ConfigRoot, Subcommand};
use cronstable::daemon::commands;
use cronstable::{logging, platform};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::parse();
    let job = match cli.job_invocation() {
        Some(Ok(invocation)) => Some(invocation),
        Some(Err(message)) => return commands::usage_error(&message),
        None => match cli.misplaced_dash_dash() {
            Some(message) => return commands::usage_error(message),
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
    match &cli.command {
        Some(Subcommand::Crd) => return commands::print_crd(),
        // The terminal dashboard: a client of a running daemon, no config
        // and no logging (the screen is its output).
        Some(Subcommand::Tui(tui)) => return ExitCode::from(cronstable::tui::run(tui)),
        Some(Subcommand::Init(init)) => {
            return commands::run_init(init.directory.as_deref(), cli.config.as_deref())
        }
        // The MCP stdio bridge: a client of a running daemon, no config,
        // and stdout carries protocol frames only (no logging set up).
        Some(Subcommand::Mcp(mcp)) => return ExitCode::from(cronstable::cli::mcp::run(mcp)),
        _ => {}
    }
    // A job command talks to the running daemon's job API: no logging,
    // no config.
    if let Some(job) = job {
        return ExitCode::from(cronstable::jobcli::run(&job));
    }
    logging::init(level, cli.log_format.into());
    if let Some(Subcommand::State(state)) = &cli.command {
        return commands::run_state(state.command(cli.config.as_deref()));
    }

    let kube_options = match cli.kube_options() {
        Ok(options) => options,
        Err(message) => return commands::usage_error(&message),
    };
    let probe_listen = match cli.probe_listen() {
        Ok(url) => url,
        Err(message) => return commands::usage_error(&message),
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
        ConfigRoot::MissingDefault => return commands::missing_default(),
    };

    let one_shot = cli.validate_config || cli.job_set_id;
    if one_shot {
        platform::tune_allocator_for_one_shot();
    }
    let loaded = match &root {
        Some(root) => match config::load_path(root) {
            Ok(loaded) => loaded,
            Err(err) => return commands::config_error(&err),
        },
        None => config::LoadedConfig::default(),
    };
    for warning in &loaded.warnings {
        tracing::warn!(target: "cronstable::config", "{warning}");
    }
    for note in &loaded.notes {
        tracing::info!(target: "cronstable::config", "{note}");
    }
    if one_shot {
        return commands::one_shot(loaded, cli.job_set_id);
    }
    cronstable::daemon::run(root, loaded, kube_options, probe_listen)
}
