//! The job commands' flags (the original's names, flags and help texts,
//! `_cliargs.py`), parsed without side effects into an [`Invocation`]:
//! `cronstable state get|set|delete|keys` (beside the admin actions of
//! `state`), `cursor`, `lock`, `artifact`, `idempotent`, `secret` and
//! `xcom`.
//!
//! argparse habits kept: a repeated option takes its last value, a long
//! option may be abbreviated to any unambiguous prefix, and a value that
//! looks like a negative number is a value, not a flag.

use super::model::{Action, LockSpec, Verb};
use crate::pyjson::{float_of_text, int_of_text, IntError, PyString};
use std::ffi::OsString;

/// `--scope NAME | --global`, mutually exclusive.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
#[group(multiple = false)]
pub struct ScopeFlags {
    /// The scope to use.
    #[arg(
        long = "scope",
        value_name = "NAME",
        help = "namespace for this operation (default: this job's name)"
    )]
    pub scope: Option<OsString>,
    /// The shared `global` scope.
    #[arg(
        long = "global",
        help = "use the shared global scope to coordinate across jobs"
    )]
    pub global: bool,
}

impl ScopeFlags {
    /// The scope to send: `global`, the `--scope` text (even empty, which
    /// the server reads as the default), or None to leave it out.
    pub fn scope(&self) -> Option<PyString> {
        if self.global {
            return Some(PyString::from("global"));
        }
        self.scope.as_deref().map(PyString::from_os)
    }
}

/// `state get KEY`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
#[command(args_override_self = true, infer_long_args = true)]
pub struct KvGetArgs {
    /// The key.
    #[arg(value_name = "KEY", help = None)]
    pub key: OsString,
    /// `--scope`/`--global`.
    #[command(flatten)]
    pub scope: ScopeFlags,
}

/// `state set KEY VALUE [--json]`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
#[command(args_override_self = true, infer_long_args = true)]
pub struct KvSetArgs {
    /// The key.
    #[arg(value_name = "KEY", help = None)]
    pub key: OsString,
    /// The value (a string, or JSON with `--json`).
    #[arg(value_name = "VALUE", allow_negative_numbers = true, help = None)]
    pub value: OsString,
    /// Parse VALUE as JSON.
    #[arg(
        long = "json",
        help = "parse VALUE as JSON instead of storing it as a string"
    )]
    pub json: bool,
    /// `--scope`/`--global`.
    #[command(flatten)]
    pub scope: ScopeFlags,
}

/// `state keys`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
#[command(args_override_self = true, infer_long_args = true)]
pub struct KvKeysArgs {
    /// `--scope`/`--global`.
    #[command(flatten)]
    pub scope: ScopeFlags,
}

/// The job-facing `state` actions, as the variants of the `state`
/// subcommand enum carry them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvAction<'a> {
    /// `state get`.
    Get(&'a KvGetArgs),
    /// `state set`.
    Set(&'a KvSetArgs),
    /// `state delete` (the same arguments as `get`).
    Delete(&'a KvGetArgs),
    /// `state keys`.
    Keys(&'a KvKeysArgs),
}

impl KvAction<'_> {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let action = match self {
            KvAction::Get(a) => Action::KvGet {
                key: PyString::from_os(&a.key),
                scope: a.scope.scope(),
            },
            KvAction::Set(a) => Action::KvSet {
                key: PyString::from_os(&a.key),
                value: PyString::from_os(&a.value),
                json: a.json,
                scope: a.scope.scope(),
            },
            KvAction::Delete(a) => Action::KvDelete {
                key: PyString::from_os(&a.key),
                scope: a.scope.scope(),
            },
            KvAction::Keys(a) => Action::KvKeys {
                scope: a.scope.scope(),
            },
        };
        Invocation::new(Verb::State, Some(action))
    }
}

/// `cronstable cursor ACTION`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct CursorArgs {
    /// The action (none: a usage error).
    #[command(subcommand)]
    pub action: Option<CursorAction>,
}

/// The `cursor` actions.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
#[command(subcommand_value_name = "ACTION")]
pub enum CursorAction {
    /// `cursor get NAME`.
    #[command(
        about = "print a cursor's value",
        args_override_self = true,
        infer_long_args = true
    )]
    Get {
        /// The cursor.
        #[arg(value_name = "NAME", help = None)]
        name: OsString,
        /// `--scope`/`--global`.
        #[command(flatten)]
        scope: ScopeFlags,
    },
    /// `cursor advance NAME VALUE [--force]`.
    #[command(
        about = "move a cursor forward (use --force to move backward)",
        args_override_self = true,
        infer_long_args = true
    )]
    Advance {
        /// The cursor.
        #[arg(value_name = "NAME", help = None)]
        name: OsString,
        /// The new value (int, else float, else string).
        #[arg(value_name = "VALUE", allow_negative_numbers = true, help = None)]
        value: OsString,
        /// Move backward too.
        #[arg(
            long = "force",
            help = "set the value even if it moves the cursor backward"
        )]
        force: bool,
        /// `--scope`/`--global`.
        #[command(flatten)]
        scope: ScopeFlags,
    },
}

impl CursorArgs {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let action = self.action.as_ref().map(|a| match a {
            CursorAction::Get { name, scope } => Action::CursorGet {
                name: PyString::from_os(name),
                scope: scope.scope(),
            },
            CursorAction::Advance {
                name,
                value,
                force,
                scope,
            } => Action::CursorAdvance {
                name: PyString::from_os(name),
                value: PyString::from_os(value),
                force: *force,
                scope: scope.scope(),
            },
        });
        Invocation::new(Verb::Cursor, action)
    }
}

/// The flags `lock acquire` and `lock run` share.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct LockFlags {
    /// The lock.
    #[arg(value_name = "NAME", help = None)]
    pub name: OsString,
    /// How many may hold it at once.
    #[arg(
        long = "permits",
        value_name = "PERMITS",
        default_value = "1",
        hide_default_value = true,
        value_parser = parse_int,
        allow_negative_numbers = true,
        help = "maximum simultaneous lock holders (default: 1)"
    )]
    pub permits: String,
    /// Block until free.
    #[arg(long = "wait", help = "block until the lock is free (up to --timeout)")]
    pub wait: bool,
    /// The longest wait.
    #[arg(
        long = "timeout",
        value_name = "SECONDS",
        default_value = "0",
        hide_default_value = true,
        value_parser = parse_wait_seconds,
        allow_negative_numbers = true,
        help = "maximum wait time with --wait, in seconds"
    )]
    pub timeout: f64,
    /// The lease duration.
    #[arg(
        long = "ttl",
        value_name = "SECONDS",
        value_parser = parse_float,
        allow_negative_numbers = true,
        help = "lease duration in seconds (default: state.jobApi.lockTtlSeconds)"
    )]
    pub ttl: Option<f64>,
    /// `--scope`/`--global`.
    #[command(flatten)]
    pub scope: ScopeFlags,
}

impl LockFlags {
    fn spec(&self) -> LockSpec {
        LockSpec {
            name: PyString::from_os(&self.name),
            permits: self.permits.clone(),
            wait: self.wait,
            timeout: self.timeout,
            ttl: self.ttl,
            scope: self.scope.scope(),
        }
    }
}

/// `cronstable lock ACTION`.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct LockArgs {
    /// The action (none: a usage error).
    #[command(subcommand)]
    pub action: Option<LockAction>,
}

/// The `lock` actions.
#[derive(clap::Subcommand, Debug, Clone, PartialEq)]
#[command(subcommand_value_name = "ACTION")]
pub enum LockAction {
    /// `lock acquire NAME ...`.
    #[command(
        about = "acquire the lock and print its token",
        args_override_self = true,
        infer_long_args = true
    )]
    Acquire {
        /// The flags.
        #[command(flatten)]
        flags: LockFlags,
    },
    /// `lock run NAME ... -- COMMAND...`.
    #[command(
        about = "hold the lock while running a command",
        args_override_self = true,
        infer_long_args = true
    )]
    Run {
        /// The flags.
        #[command(flatten)]
        flags: LockFlags,
        /// The command, when given without `--` (the words after `--`
        /// replace it: see [`Invocation::with_trailing_command`]).
        #[arg(
            value_name = "command",
            num_args = 0..,
            help = "the command to run while holding the lock (after --)"
        )]
        command: Vec<OsString>,
    },
    /// `lock release TOKEN`.
    #[command(about = "release a held lock")]
    Release {
        /// The hold token `lock acquire` printed.
        #[arg(value_name = "TOKEN", help = None)]
        token: OsString,
    },
}

impl LockArgs {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let action = self.action.as_ref().map(|a| match a {
            LockAction::Acquire { flags } => Action::LockAcquire(flags.spec()),
            LockAction::Run { flags, command } => Action::LockRun {
                spec: flags.spec(),
                command: command.clone(),
            },
            LockAction::Release { token } => Action::LockRelease {
                token: PyString::from_os(token),
            },
        });
        Invocation::new(Verb::Lock, action)
    }
}

/// `cronstable artifact ACTION`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct ArtifactArgs {
    /// The action (none: a usage error).
    #[command(subcommand)]
    pub action: Option<ArtifactAction>,
}

/// The `artifact` actions.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
#[command(subcommand_value_name = "ACTION")]
pub enum ArtifactAction {
    /// `artifact put NAME [FILE]`.
    #[command(
        about = "publish an artifact (from FILE or stdin)",
        args_override_self = true,
        infer_long_args = true
    )]
    Put {
        /// The artifact.
        #[arg(value_name = "NAME", help = None)]
        name: OsString,
        /// The file to publish (none or `-`: stdin).
        #[arg(value_name = "FILE", help = None)]
        file: Option<OsString>,
        /// `--scope`/`--global`.
        #[command(flatten)]
        scope: ScopeFlags,
    },
    /// `artifact get NAME [-o FILE]`.
    #[command(
        about = "write an artifact to stdout or the file specified by -o",
        args_override_self = true,
        infer_long_args = true
    )]
    Get {
        /// The artifact.
        #[arg(value_name = "NAME", help = None)]
        name: OsString,
        /// Where to write it (none or `-`: stdout).
        #[arg(short = 'o', long = "output", value_name = "FILE", help = None)]
        output: Option<OsString>,
        /// `--scope`/`--global`.
        #[command(flatten)]
        scope: ScopeFlags,
    },
    /// `artifact list`.
    #[command(
        about = "list artifact names",
        args_override_self = true,
        infer_long_args = true
    )]
    List {
        /// `--scope`/`--global`.
        #[command(flatten)]
        scope: ScopeFlags,
    },
}

impl ArtifactArgs {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let action = self.action.as_ref().map(|a| match a {
            ArtifactAction::Put { name, file, scope } => Action::ArtifactPut {
                name: PyString::from_os(name),
                file: file.clone(),
                scope: scope.scope(),
            },
            ArtifactAction::Get {
                name,
                output,
                scope,
            } => Action::ArtifactGet {
                name: PyString::from_os(name),
                output: output.clone(),
                scope: scope.scope(),
            },
            ArtifactAction::List { scope } => Action::ArtifactList {
                scope: scope.scope(),
            },
        });
        Invocation::new(Verb::Artifact, action)
    }
}

/// `cronstable idempotent KEY [--ttl SECONDS] [--release]`.
#[derive(clap::Args, Debug, Clone, PartialEq)]
#[command(args_override_self = true, infer_long_args = true)]
pub struct IdempotentArgs {
    /// The key.
    #[arg(value_name = "KEY", help = None)]
    pub key: OsString,
    /// The claim's lifetime (0: permanent).
    #[arg(
        long = "ttl",
        value_name = "SECONDS",
        default_value = "0",
        hide_default_value = true,
        value_parser = parse_float,
        allow_negative_numbers = true,
        help = "expire the claim after SECONDS (0 = permanent)"
    )]
    pub ttl: f64,
    /// Release instead of claiming.
    #[arg(long = "release", help = "release the claim instead of creating it")]
    pub release: bool,
    /// `--scope`/`--global`.
    #[command(flatten)]
    pub scope: ScopeFlags,
}

impl IdempotentArgs {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let key = PyString::from_os(&self.key);
        let scope = self.scope.scope();
        let action = if self.release {
            Action::IdemRelease { key, scope }
        } else {
            Action::IdemClaim {
                key,
                ttl: self.ttl,
                scope,
            }
        };
        Invocation::new(Verb::Idempotent, Some(action))
    }
}

/// `cronstable secret ACTION`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct SecretArgs {
    /// The action (none: a usage error).
    #[command(subcommand)]
    pub action: Option<SecretAction>,
}

/// The `secret` actions.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
#[command(subcommand_value_name = "ACTION")]
pub enum SecretAction {
    /// `secret get NAME`.
    #[command(about = "print a secret's value")]
    Get {
        /// The secret.
        #[arg(value_name = "NAME", help = None)]
        name: OsString,
    },
    /// `secret list`.
    #[command(about = "list secrets available to the current run")]
    List,
}

impl SecretArgs {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let action = self.action.as_ref().map(|a| match a {
            SecretAction::Get { name } => Action::SecretGet {
                name: PyString::from_os(name),
            },
            SecretAction::List => Action::SecretList,
        });
        Invocation::new(Verb::Secret, action)
    }
}

/// `cronstable xcom ACTION`.
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct XcomArgs {
    /// The action (none: a usage error).
    #[command(subcommand)]
    pub action: Option<XcomAction>,
}

/// The `xcom` actions.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
#[command(subcommand_value_name = "ACTION")]
pub enum XcomAction {
    /// `xcom push --key KEY [FILE]`.
    #[command(
        about = "publish this task's output under a key (FILE or stdin)",
        args_override_self = true,
        infer_long_args = true
    )]
    Push {
        /// The key.
        #[arg(long = "key", value_name = "KEY", help = "the XCom key to publish")]
        key: OsString,
        /// The file to publish (none or `-`: stdin).
        #[arg(value_name = "FILE", help = None)]
        file: Option<OsString>,
    },
    /// `xcom pull --task TASK --key KEY [--map-index I] [-o FILE]`.
    #[command(
        about = "read an upstream task's output by key",
        args_override_self = true,
        infer_long_args = true
    )]
    Pull {
        /// The upstream task.
        #[arg(long = "task", value_name = "TASK", help = "the upstream task ID")]
        task: OsString,
        /// The key.
        #[arg(long = "key", value_name = "KEY", help = "the XCom key to read")]
        key: OsString,
        /// A mapped instance.
        #[arg(
            long = "map-index",
            value_name = "I",
            value_parser = parse_int,
            allow_negative_numbers = true,
            help = "read a specific mapped instance of the upstream task"
        )]
        map_index: Option<String>,
        /// Where to write it (none or `-`: stdout).
        #[arg(short = 'o', long = "output", value_name = "FILE", help = None)]
        output: Option<OsString>,
    },
    /// `xcom list`.
    #[command(about = "list XCom keys in this run")]
    List,
}

impl XcomArgs {
    /// The invocation.
    pub fn invocation(&self) -> Invocation {
        let action = self.action.as_ref().map(|a| match a {
            XcomAction::Push { key, file } => Action::XcomPush {
                key: PyString::from_os(key),
                file: file.clone(),
            },
            XcomAction::Pull {
                task,
                key,
                map_index,
                output,
            } => Action::XcomPull {
                task: PyString::from_os(task),
                key: PyString::from_os(key),
                map_index: map_index.clone(),
                output: output.clone(),
            },
            XcomAction::List => Action::XcomList,
        });
        Invocation::new(Verb::Xcom, action)
    }
}

/// A parsed job command: which command, and its action (None when the
/// action was left out, a usage error).
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The command (`state`, `cursor`, ...), which names it on stderr.
    pub verb: Verb,
    /// The action.
    pub action: Option<Action>,
}

impl Invocation {
    fn new(verb: Verb, action: Option<Action>) -> Invocation {
        Invocation { verb, action }
    }

    /// Applies the words after the first `--` of the command line: they
    /// become the command of `lock run` (replacing any given without
    /// `--`); for any other command they are a usage error, whose message
    /// this returns.
    pub fn with_trailing_command(
        mut self,
        trailing: Option<Vec<OsString>>,
    ) -> Result<Invocation, String> {
        let Some(words) = trailing else {
            return Ok(self);
        };
        match &mut self.action {
            Some(Action::LockRun { command, .. }) => {
                *command = words;
                Ok(self)
            }
            _ => Err(DASH_DASH_MISPLACED.to_owned()),
        }
    }
}

/// The usage error for a `--` anywhere but before a `lock run` command.
pub const DASH_DASH_MISPLACED: &str = "`--` is only valid before a `lock run` command";

/// Splits the command line (without the program name) at the first `--`:
/// the words before it, and the words after it (None without a `--`).
/// The original splits before parsing so that `lock run`'s command keeps
/// its own flags; any other command given a `--` is then refused.
pub fn split_at_dash_dash(args: Vec<OsString>) -> (Vec<OsString>, Option<Vec<OsString>>) {
    match args.iter().position(|a| a == "--") {
        Some(cut) => {
            let mut head = args;
            let tail = head.split_off(cut + 1);
            head.pop();
            (head, Some(tail))
        }
        None => (args, None),
    }
}

/// `type=int`: Python's `int(text)`, as canonical decimal text.
fn parse_int(text: &str) -> Result<String, String> {
    int_of_text(text).map_err(|e| match e {
        IntError::Invalid | IntError::TooManyDigits(_) => {
            format!("invalid int value: {}", PyString::from(text).repr())
        }
    })
}

/// `type=float`: Python's `float(text)`.
fn parse_float(text: &str) -> Result<f64, String> {
    float_of_text(text)
        .ok_or_else(|| format!("invalid float value: {}", PyString::from(text).repr()))
}

/// The original's `_wait_seconds`: a finite float, a negative wait
/// reading as no wait.
fn parse_wait_seconds(text: &str) -> Result<f64, String> {
    match float_of_text(text) {
        Some(x) if x.is_finite() => Ok(if x > 0.0 { x } else { 0.0 }),
        _ => Err(format!(
            "SECONDS must be a finite number, not {}",
            PyString::from(text).repr()
        )),
    }
}

#[cfg(test)]
mod tests;
