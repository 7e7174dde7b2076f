//! Delivering run outcomes. The scheduler calls a [`Reporter`] for each
//! hook; the mail, Sentry, shell and webhook reporters plug in here. Until
//! they land, [`LogReporter`] records each outcome in the daemon's log.

use crate::config::JobConfig;
use crate::job::RunRecord;
use std::future::Future;
use std::pin::Pin;

/// Which hook is firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// A successful run (`onSuccess`).
    Success,
    /// A failed run, every attempt (`onFailure`).
    Failure,
    /// A failure with no retry left (`onPermanentFailure`).
    PermanentFailure,
}

/// A boxed future a reporter returns.
pub type ReportFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Delivers one outcome. Implementations must never panic on delivery
/// errors: they log them, and one reporter's failure never stops another.
pub trait Reporter: Send + Sync {
    /// Reports `record` of `job` for `hook`.
    fn report(&self, hook: Hook, job: &JobConfig, record: &RunRecord) -> ReportFuture;
}

/// The reporter the daemon uses: every configured reporter of a hook.
pub fn default_reporter() -> std::sync::Arc<dyn Reporter> {
    std::sync::Arc::new(LogReporter)
}

/// Writes each outcome, with its captured output, to the daemon's log.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogReporter;

impl Reporter for LogReporter {
    fn report(&self, hook: Hook, job: &JobConfig, record: &RunRecord) -> ReportFuture {
        let name = job.name.clone();
        let reason = record.fail_reason.clone().unwrap_or_default();
        let retcode = record.retcode;
        let stdout = record.stdout.text.clone();
        let stderr = record.stderr.text.clone();
        Box::pin(async move {
            match hook {
                Hook::Success => {
                    tracing::info!(target: "cronstable::report", "Cron job {name}: reporting success")
                }
                Hook::Failure => tracing::warn!(
                    target: "cronstable::report",
                    "Cron job {name}: reporting failure ({reason}; exit code {retcode}){}{}",
                    section("STDOUT", &stdout),
                    section("STDERR", &stderr)
                ),
                Hook::PermanentFailure => tracing::error!(
                    target: "cronstable::report",
                    "Cron job {name}: reporting permanent failure ({reason})"
                ),
            }
        })
    }
}

fn section(title: &str, text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("\n{title}:\n---\n{}\n---", text.trim_end_matches('\n'))
    }
}
