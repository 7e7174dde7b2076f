//! `cronstable state ACTION`: the flags of the store administration
//! actions (the original's names, flags and help texts), parsed without
//! side effects into a [`StateCommand`] that `main.rs` hands to
//! [`crate::state::admin::run`]; and the job-facing `get`, `set`,
//! `delete` and `keys` beside them, run by [`crate::jobcli`].

use crate::jobcli::args::{KvAction, KvGetArgs, KvKeysArgs, KvSetArgs};
use crate::jobcli::Invocation;
use crate::platform;
use std::path::{Path, PathBuf};

/// `cronstable state [ACTION]`: no action is a usage error the caller
/// reports (exit 2), not clap's.
#[derive(clap::Args, Debug)]
pub struct StateArgs {
    /// The action.
    #[command(subcommand)]
    pub action: Option<StateAction>,
}

/// `-c/--config` on a `state` action: the same meaning as the root flag,
/// and it wins over it when both are given.
#[derive(clap::Args, Debug, Clone)]
pub struct ActionConfig {
    /// The configuration containing the state store settings.
    #[arg(
        short = 'c',
        long = "config",
        value_name = "FILE-OR-DIR",
        help = "configuration containing the state store settings (`state:`)"
    )]
    pub config: Option<PathBuf>,
}

/// The `cronstable state` actions (the original's names, flags and help).
#[derive(clap::Subcommand, Debug)]
#[command(subcommand_value_name = "ACTION")]
pub enum StateAction {
    /// `backup -o FILE.tar.gz`.
    #[command(about = "write a .tar.gz backup of the store")]
    Backup {
        /// The archive to write.
        #[arg(short = 'o', long = "output", value_name = "FILE.tar.gz")]
        output: PathBuf,
        /// `-c`.
        #[command(flatten)]
        config: ActionConfig,
    },
    /// `restore FILE.tar.gz [--force]`.
    #[command(about = "restore a backup into the store")]
    Restore {
        /// The archive to read.
        #[arg(value_name = "FILE.tar.gz")]
        archive: PathBuf,
        /// Merge into a store that already holds files.
        #[arg(long, help = "after stopping cronstable, merge into a nonempty store")]
        force: bool,
        /// `-c`.
        #[command(flatten)]
        config: ActionConfig,
    },
    /// `migrate --dest PATH [--dest-deployment-id ID] [--force]`.
    #[command(about = "copy the store to another path or mount (local disk <-> S3 Files / EFS)")]
    Migrate {
        /// The destination `state.path`.
        #[arg(long, value_name = "PATH")]
        dest: String,
        /// The destination namespace.
        #[arg(
            long = "dest-deployment-id",
            value_name = "ID",
            help = "namespace at the destination (default: keep the current one)"
        )]
        dest_deployment_id: Option<String>,
        /// Overwrite a destination that already holds files.
        #[arg(long, help = "overwrite a nonempty destination store")]
        force: bool,
        /// `-c`.
        #[command(flatten)]
        config: ActionConfig,
    },
    /// `gc [--dry-run]`.
    #[command(about = "remove saved state for jobs no longer referenced")]
    Gc {
        /// Report, delete nothing.
        #[arg(
            long = "dry-run",
            help = "report what would be removed, remove nothing"
        )]
        dry_run: bool,
        /// `-c`.
        #[command(flatten)]
        config: ActionConfig,
    },
    /// `check`.
    #[command(about = "verify the store is usable and print an inventory")]
    Check {
        /// `-c`.
        #[command(flatten)]
        config: ActionConfig,
    },
    /// `migrate-schema [--dry-run]`.
    #[command(
        name = "migrate-schema",
        about = "upgrade records from older supported formats"
    )]
    MigrateSchema {
        /// Count, rewrite nothing.
        #[arg(
            long = "dry-run",
            help = "count what would be converted, rewrite nothing"
        )]
        dry_run: bool,
        /// `-c`.
        #[command(flatten)]
        config: ActionConfig,
    },
    /// `get KEY`: a job-facing action (the job API's key-value store).
    #[command(name = "get", about = "print a saved value by key")]
    Get(KvGetArgs),
    /// `set KEY VALUE [--json]`: job-facing.
    #[command(name = "set", about = "save a value by key")]
    Set(KvSetArgs),
    /// `delete KEY`: job-facing.
    #[command(name = "delete", about = "delete a saved value by key")]
    Delete(KvGetArgs),
    /// `keys`: job-facing.
    #[command(name = "keys", about = "list the keys in a scope")]
    Keys(KvKeysArgs),
}

/// What `cronstable state ...` asks for, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum StateCommand {
    /// An admin action on the config at `config`.
    Admin {
        /// The config (the action's `-c`, else the root's, else the
        /// default location).
        config: PathBuf,
        /// The action.
        request: crate::state::admin::Request,
    },
    /// A usage error: the message for stderr (exit 2).
    Usage(String),
    /// A job-facing action (`get`, `set`, `delete`, `keys`), run by
    /// [`crate::jobcli::run`] against the running daemon's job API.
    Job(Invocation),
}

impl StateArgs {
    /// The job-facing action, when the action is one (`get`, `set`,
    /// `delete`, `keys`); the others administer the store offline.
    pub fn job_action(&self) -> Option<KvAction<'_>> {
        match self.action.as_ref()? {
            StateAction::Get(a) => Some(KvAction::Get(a)),
            StateAction::Set(a) => Some(KvAction::Set(a)),
            StateAction::Delete(a) => Some(KvAction::Delete(a)),
            StateAction::Keys(a) => Some(KvAction::Keys(a)),
            _ => None,
        }
    }

    /// The command to run: `root_config` is the root `-c` (None: the
    /// default location).
    pub fn command(&self, root_config: Option<&Path>) -> StateCommand {
        use crate::state::admin::Request;
        let Some(action) = &self.action else {
            return StateCommand::Usage(
                "cronstable state: no action given (see `cronstable state --help`)".to_owned(),
            );
        };
        let (request, config) = match action {
            StateAction::Backup { output, config } => (
                Request::Backup {
                    output: output.clone(),
                },
                config,
            ),
            StateAction::Restore {
                archive,
                force,
                config,
            } => (
                Request::Restore {
                    archive: archive.clone(),
                    force: *force,
                },
                config,
            ),
            StateAction::Migrate {
                dest,
                dest_deployment_id,
                force,
                config,
            } => (
                Request::Migrate {
                    dest: dest.clone(),
                    dest_deployment_id: dest_deployment_id.clone(),
                    force: *force,
                },
                config,
            ),
            StateAction::Gc { dry_run, config } => (Request::Gc { dry_run: *dry_run }, config),
            StateAction::Check { config } => (Request::Check, config),
            StateAction::MigrateSchema { dry_run, config } => {
                (Request::MigrateSchema { dry_run: *dry_run }, config)
            }
            StateAction::Get(a) => return StateCommand::Job(KvAction::Get(a).invocation()),
            StateAction::Set(a) => return StateCommand::Job(KvAction::Set(a).invocation()),
            StateAction::Delete(a) => return StateCommand::Job(KvAction::Delete(a).invocation()),
            StateAction::Keys(a) => return StateCommand::Job(KvAction::Keys(a).invocation()),
        };
        let config = config
            .config
            .clone()
            .or_else(|| root_config.map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from(platform::DEFAULT_CONFIG_PATH));
        StateCommand::Admin { config, request }
    }
}

#[cfg(test)]
mod tests;
