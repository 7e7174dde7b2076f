//! The binary's one-shot answers, apart from running the daemon: the CRD
//! (`crd`), a starter config (`init`), the store's admin and job-facing
//! commands (`state ...`), a config checked (`-v`) or fingerprinted
//! (`--job-set-id`), and the exits for a usage error, a missing default
//! config and a config that does not load. Each prints its answer and
//! returns the exit code; `main.rs` only picks one.

use super::args;
use super::init;
use super::state_args::StateCommand;
use crate::config::{ConfigError, LoadedConfig};
use crate::{fingerprint, logging, platform};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// `cronstable crd`: the CRD on stdout, for `kubectl apply -f -` or to
/// compare with `crds/cronjobset.yaml`.
pub fn print_crd() -> ExitCode {
    match crate::kube::crd_yaml() {
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

/// A usage error found after parsing: the message on stderr, exit 2.
pub fn usage_error(message: &str) -> ExitCode {
    eprintln!("cronstable: error: {message}");
    ExitCode::from(2)
}

/// `cronstable state ...`: an admin action on the store (its report on
/// stdout/stderr and its exit code), or a usage error (exit 2).
pub fn run_state(command: StateCommand) -> ExitCode {
    match command {
        StateCommand::Job(job) => ExitCode::from(crate::jobcli::run(&job)),
        StateCommand::Usage(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
        StateCommand::Admin { config, request } => {
            let report = crate::state::admin::run(&config, &request);
            // Nowhere to report a failed write: the exit code still tells.
            let _ = std::io::stdout().write_all(report.stdout.as_bytes());
            let _ = std::io::stderr().write_all(report.stderr.as_bytes());
            ExitCode::from(report.code)
        }
    }
}

/// `cronstable init`: the starter config written (stdout says where and
/// how to start), or the refusal on stderr with exit 1.
pub fn run_init(directory: Option<&Path>, config: Option<&Path>) -> ExitCode {
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

/// No config at the default location: the manual's message and the
/// help on stderr, exit 1.
pub fn missing_default() -> ExitCode {
    // Nowhere to report a failed write: the exit code still tells.
    let _ = std::io::stderr().write_all(args::missing_default_text().as_bytes());
    ExitCode::from(1)
}

/// A config that does not load: the error logged, exit 1.
pub fn config_error(err: &ConfigError) -> ExitCode {
    tracing::error!(target: "cronstable", "Configuration error: {err}");
    ExitCode::from(1)
}

/// `-v` (or `--job-set-id` when `job_set_id`) on a config that loaded:
/// only its `logging` section is put in force (after the load warnings,
/// which may explain why it silences a logger), then the verdict or the
/// id. The process ends right after, so the config is left to the OS:
/// freeing every job's allocations one by one would only delay the exit
/// (7 % of `-v` on 10,000 jobs in a profile).
pub fn one_shot(loaded: LoadedConfig, job_set_id: bool) -> ExitCode {
    logging::apply_section(loaded.sections.logging.as_ref().map(|l| &l.value));
    if job_set_id {
        println!("{}", fingerprint::job_set_id(&loaded.jobs));
    } else {
        tracing::info!(target: "cronstable", "Configuration is valid.");
    }
    std::mem::forget(loaded);
    ExitCode::SUCCESS
}
