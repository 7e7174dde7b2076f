//! `cronstable state ACTION`: offline administration of the store a
//! config's `state:` section defines (no daemon needed). One function per
//! action, each returning a [`Report`] (what to print and the exit code),
//! so the binary only parses flags and prints.
//!
//! The actions and their texts are the original's (`backup`, `restore`,
//! `migrate`, `gc`, `check`, `migrate-schema`): exit 0 on success, 1 on an
//! error or a refusal. `backup`, `restore` and `migrate` work on the files
//! without opening the store (no probe, no version stamp); `gc`, `check`
//! and `migrate-schema` open it as the daemon does.

mod archive;
pub mod gc;
mod inspect;

pub use archive::{backup, migrate, restore};
pub use gc::{collect_garbage, collect_garbage_scoped, GcError, GcReport};
pub use inspect::{check, migrate_schema};

use super::format::{absolute_root, fs_safe};
use super::store::{StoreSettings, Topology};
use crate::config::{self, ConfigError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The store directories a backup or a migration carries, in this order:
/// records, the mutable documents, the artifact payloads and the lease
/// files (a lease file is the only home of its fence counter). `tmp/`
/// (write debris) and `quarantine/` (poison records) stay behind.
pub const CARRIED_DIRS: [&str; 4] = ["records", "docs", "blobs", "leases"];

/// `gcGraceSeconds` when the section leaves it out (7 days).
pub const DEFAULT_GC_GRACE_SECONDS: i64 = 604_800;

/// One `cronstable state` action, as parsed from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `backup -o FILE.tar.gz`.
    Backup {
        /// The archive to write.
        output: PathBuf,
    },
    /// `restore FILE.tar.gz [--force]`.
    Restore {
        /// The archive to read.
        archive: PathBuf,
        /// Merge into a store that already holds files.
        force: bool,
    },
    /// `migrate --dest PATH [--dest-deployment-id ID] [--force]`.
    Migrate {
        /// The destination `state.path`.
        dest: String,
        /// The destination namespace (default: the current one).
        dest_deployment_id: Option<String>,
        /// Overwrite a destination that already holds files.
        force: bool,
    },
    /// `gc [--dry-run]`.
    Gc {
        /// Report what would go, delete nothing.
        dry_run: bool,
    },
    /// `check`.
    Check,
    /// `migrate-schema [--dry-run]`.
    MigrateSchema {
        /// Count, rewrite nothing.
        dry_run: bool,
    },
}

/// What an action prints and how the process exits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// Lines for stdout (each ends with a newline).
    pub stdout: String,
    /// Lines for stderr (each ends with a newline).
    pub stderr: String,
    /// The exit code: 0 success, 1 an error or a refusal.
    pub code: u8,
}

impl Report {
    /// A success printing `lines` on stdout.
    fn ok(lines: impl IntoIterator<Item = String>) -> Report {
        let mut stdout = String::new();
        for line in lines {
            stdout.push_str(&line);
            stdout.push('\n');
        }
        Report {
            stdout,
            stderr: String::new(),
            code: 0,
        }
    }

    /// A refusal or failure: `line` on stderr, exit 1.
    fn refused(line: String) -> Report {
        Report {
            stdout: String::new(),
            stderr: format!("{line}\n"),
            code: 1,
        }
    }
}

/// Why an action could not run at all (printed as
/// `cronstable state error: <this>`, exit 1).
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The config did not load.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The config has no `state:` section.
    #[error(
        "the configuration has no `state:` section; `cronstable state` administers the durable \
         store it defines"
    )]
    NoStateSection,
    /// The section names no `path` (only a lease backend keeps the slots).
    #[error(
        "the `state:` section has no `path`; `cronstable state` administers the store directory \
         it names"
    )]
    NoStatePath,
    /// `gc` with `gcGraceSeconds <= 0`.
    #[error("state.gcGraceSeconds is disabled (<= 0); nothing to collect")]
    GcDisabled,
    /// A file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The store could not be opened.
    #[error("{0}")]
    Open(#[from] super::store::OpenError),
    /// The garbage collection failed part-way.
    #[error("{0}")]
    Gc(#[from] GcError),
}

impl AdminError {
    /// An I/O error while doing `what`.
    fn io(what: impl Into<String>, source: std::io::Error) -> AdminError {
        AdminError::Io {
            what: what.into(),
            source,
        }
    }
}

/// What the actions need of the config: where the store is and what the
/// collector must keep.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Where the store is (as the daemon would open it).
    pub settings: StoreSettings,
    /// `gcGraceSeconds` as configured (default 7 days; `<= 0` disabled).
    pub gc_grace_seconds: i64,
    /// The names of the config's jobs (the collector keeps their state).
    pub jobs: Vec<String>,
    /// The scopes its jobs may use beyond their names and `global`
    /// (`stateAllowedScopes`; the collector keeps their artifacts).
    pub scopes: Vec<String>,
}

impl Target {
    /// The namespace directory (`<state.path>/<deploymentId>`).
    pub fn base(&self) -> PathBuf {
        base_of(&self.settings.root, &self.settings.deployment_id)
    }
}

/// The namespace directory of `deployment_id` under `root`.
pub fn base_of(root: &Path, deployment_id: &str) -> PathBuf {
    root.join(fs_safe(deployment_id))
}

/// The namespace a `deploymentId` value names (`default` when unset or
/// empty).
pub fn namespace_of(deployment_id: Option<&str>) -> String {
    deployment_id
        .filter(|d| !d.is_empty())
        .unwrap_or("default")
        .to_owned()
}

/// The store settings of a `state` section (None without a `path`).
pub fn settings_of(state: &config::model::sections::StateConfig) -> Option<StoreSettings> {
    use config::model::sections::Topology as Configured;
    if state.path.trim().is_empty() {
        return None;
    }
    Some(StoreSettings {
        root: absolute_root(&state.path),
        deployment_id: namespace_of(state.deployment_id.as_deref()),
        topology: match state.topology {
            Some(Configured::SingleNode) => Some(Topology::SingleNode),
            Some(Configured::Shared) => Some(Topology::Shared),
            _ => None,
        },
        max_ops_per_second: state.max_ops_per_second.unwrap_or(0.0).max(0.0),
    })
}

/// Loads the config at `path` with the daemon's loader and takes what the
/// actions need from it; a config without a `state:` section is an error.
pub fn load_target(path: &Path) -> Result<Target, AdminError> {
    let loaded = config::load_path(path)?;
    for warning in &loaded.warnings {
        tracing::warn!(target: "cronstable::config", "{warning}");
    }
    let state = loaded
        .sections
        .state
        .as_ref()
        .map(|s| &s.value)
        .ok_or(AdminError::NoStateSection)?;
    let settings = settings_of(state).ok_or(AdminError::NoStatePath)?;
    Ok(Target {
        settings,
        gc_grace_seconds: state.gc_grace_seconds.unwrap_or(DEFAULT_GC_GRACE_SECONDS),
        jobs: loaded.jobs.iter().map(|j| j.name.clone()).collect(),
        scopes: config_scopes(&loaded.jobs),
    })
}

/// Runs `request` against the config at `config_path`: the action's
/// report, or `cronstable state error: <why>` and exit 1.
pub fn run(config_path: &Path, request: &Request) -> Report {
    let result = load_target(config_path).and_then(|target| match request {
        Request::Backup { output } => backup(&target, output),
        Request::Restore { archive, force } => restore(&target, archive, *force),
        Request::Migrate {
            dest,
            dest_deployment_id,
            force,
        } => migrate(&target, dest, dest_deployment_id.as_deref(), *force),
        Request::Gc { dry_run } => gc_action(&target, *dry_run),
        Request::Check => check(&target),
        Request::MigrateSchema { dry_run } => migrate_schema(&target, *dry_run),
    });
    result.unwrap_or_else(|err| Report::refused(format!("cronstable state error: {err}")))
}

/// Every job's `stateAllowedScopes` (defaults merged), sorted, once each.
pub fn config_scopes<'a>(jobs: impl IntoIterator<Item = &'a config::JobConfig>) -> Vec<String> {
    let scopes: std::collections::BTreeSet<String> = jobs
        .into_iter()
        .filter_map(|j| j.spec.as_ref()?.state_allowed_scopes.clone())
        .flatten()
        .collect();
    scopes.into_iter().collect()
}

/// `gc [--dry-run]`: one manual pass over the store.
pub fn gc_action(target: &Target, dry_run: bool) -> Result<Report, AdminError> {
    if target.gc_grace_seconds <= 0 {
        return Err(AdminError::GcDisabled);
    }
    let store = super::store::Store::open(&target.settings)?;
    let grace = Duration::from_secs(target.gc_grace_seconds.unsigned_abs());
    let report =
        collect_garbage_scoped(&store, &target.jobs, &target.scopes, grace, dry_run, host())?;
    Ok(Report::ok(report.lines()))
}

/// This host's name as the records write it (`localhost` when unknown).
pub fn host() -> &'static str {
    let name = crate::platform::host_name();
    if name.is_empty() {
        "localhost"
    } else {
        name
    }
}

/// Whether any carried directory of `base` exists and holds an entry.
fn populated(base: &Path) -> bool {
    CARRIED_DIRS.iter().any(|sub| {
        std::fs::read_dir(base.join(sub))
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(false)
    })
}

/// Every carried file of `base`: (absolute path, `/`-separated path
/// relative to `base`), directories walked top-down, files sorted per
/// directory.
fn walk_carried(base: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for sub in CARRIED_DIRS {
        walk_dir(&base.join(sub), sub, &mut out);
    }
    out
}

fn walk_dir(dir: &Path, arc_dir: &str, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // A symlinked directory is not followed (as os.walk does not).
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => dirs.push(name),
            Ok(_) => files.push(name),
            Err(_) => {}
        }
    }
    files.sort();
    dirs.sort();
    for name in files {
        out.push((dir.join(&name), format!("{arc_dir}/{name}")));
    }
    for name in dirs {
        walk_dir(&dir.join(&name), &format!("{arc_dir}/{name}"), out);
    }
}

/// `path` with symlinks resolved as far as it exists, the rest appended
/// by name (Python's `realpath` of a path that may not exist yet).
fn real_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut head = path.to_path_buf();
    loop {
        if let Ok(real) = head.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (head.file_name().map(|n| n.to_owned()), head.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                head = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests;
