//! Delivering run outcomes. The scheduler calls a [`Reporter`] for each
//! hook; [`default_reporter`] hands it to every reporter the job
//! configures for that hook (mail, Sentry, shell, webhook), all at once,
//! each with its own time bound, after a log line saying so
//! ([`LogReporter`]). A reporter that fails is logged and never holds up
//! the others.

pub(crate) mod context;
pub(crate) mod http;
pub(crate) mod mail;

pub(crate) mod secret;
pub(crate) mod sentry;
pub(crate) mod shell;
pub mod templates;
pub(crate) mod webhook;

use crate::config::model::report::{MailReport, SentryReport, ShellReport, WebhookReport};
use crate::config::model::Report;
use crate::config::JobConfig;
use crate::job::RunRecord;
/// The variables a report template sees for one run; public so templates
/// can be rendered against a real run's context outside the crate (the
/// `template_render` fuzz target).
pub use context::{DaemonEvent, RunContext, SlaBreach};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Which hook is firing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// A successful run (`onSuccess`).
    Success,
    /// A failed run, every attempt (`onFailure`).
    Failure,
    /// A failure with no retry left (`onPermanentFailure`).
    PermanentFailure,
    /// An SLA breach (`onLate`): not a run, see [`Reporter::report_late`].
    Late,
    /// A daemon event (`notify`): see [`Reporter::report_event`].
    Event,
}

/// Why one reporter's delivery failed. `Display` is the text after
/// `<name> reporter: ` in the `Problem reporting job ...` ERROR line,
/// which log alerts match on.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The mail reporter failed.
    #[error(transparent)]
    Mail(#[from] mail::MailError),
    /// The Sentry reporter failed.
    #[error(transparent)]
    Sentry(#[from] sentry::SentryError),
    /// The shell reporter failed.
    #[error(transparent)]
    Shell(#[from] shell::ShellError),
    /// The webhook reporter failed.
    #[error(transparent)]
    Webhook(#[from] webhook::WebhookError),
    /// The reporter outlived its hard bound and was dropped.
    #[error("did not finish within {seconds} seconds; abandoned")]
    Abandoned {
        /// The bound, seconds.
        seconds: f64,
    },
    /// The delivery task panicked or was cancelled.
    #[error("stopped unexpectedly ({0})")]
    Stopped(#[source] tokio::task::JoinError),
}

/// A boxed future a reporter returns.
pub type ReportFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Delivers one outcome. Implementations must never panic on delivery
/// errors: they log them, and one reporter's failure never stops another.
pub trait Reporter: Send + Sync {
    /// Reports `record` of `job` for `hook`.
    fn report(&self, hook: Hook, job: &JobConfig, record: &RunRecord) -> ReportFuture;

    /// Reports an SLA breach of `job` to its `onLate` reporters. A
    /// reporter that only tells runs apart ignores it.
    fn report_late(&self, job: &JobConfig, breach: SlaBreach) -> ReportFuture {
        let _ = (job, breach);
        Box::pin(async {})
    }

    /// Reports a daemon event to the `notify` block's reporters `report`.
    fn report_event(&self, report: &Report, event: DaemonEvent) -> ReportFuture {
        let _ = (report, event);
        Box::pin(async {})
    }
}

impl Hook {
    /// The hook in words, as log lines name it.
    pub fn describe(self) -> &'static str {
        match self {
            Hook::Success => "success",
            Hook::Failure => "failure",
            Hook::PermanentFailure => "permanent failure",
            Hook::Late => "SLA breach",
            Hook::Event => "event",
        }
    }

    /// The job's report block for this hook; `None` for a daemon event,
    /// which belongs to no job (its block is the `notify` section's).
    pub fn report_of(self, job: &JobConfig) -> Option<&Report> {
        match self {
            Hook::Event => None,
            Hook::Success => Some(&job.on_success),
            Hook::Failure => Some(&job.on_failure),
            Hook::PermanentFailure => Some(&job.on_permanent_failure),
            Hook::Late => Some(&job.on_late),
        }
    }
}

/// The reporter the daemon uses: every configured reporter of a hook.
pub fn default_reporter() -> Arc<dyn Reporter> {
    Arc::new(Dispatcher)
}

/// Delivers each outcome to every reporter configured for the hook,
/// concurrently, announced by [`LogReporter`]'s line. A hook with no
/// reporter configured is silent.
#[derive(Debug, Default, Clone, Copy)]
pub struct Dispatcher;

/// One configured reporter, ready to send.
#[derive(Debug, Clone)]
enum Delivery {
    Mail(MailReport),
    Sentry(SentryReport),
    Shell(ShellReport),
    Webhook(WebhookReport),
}

impl Delivery {
    /// The reporters of `report` that are switched on. `push` needs the
    /// `push` section, which this version refuses at load; `eventlog` is a
    /// no-op off Windows (the load warns).
    fn planned(report: &Report) -> Vec<Delivery> {
        let mut out = Vec::new();
        if let Some(cfg) = report.mail.as_ref().filter(|c| mail::enabled(c)) {
            out.push(Delivery::Mail((**cfg).clone()));
        }
        if let Some(cfg) = report.sentry.as_ref().filter(|c| sentry::enabled(c)) {
            out.push(Delivery::Sentry((**cfg).clone()));
        }
        if let Some(cfg) = report.shell.as_ref().filter(|c| shell::enabled(c)) {
            out.push(Delivery::Shell((**cfg).clone()));
        }
        if let Some(cfg) = report.webhook.as_ref().filter(|c| webhook::enabled(c)) {
            out.push(Delivery::Webhook((**cfg).clone()));
        }
        out
    }

    fn name(&self) -> &'static str {
        match self {
            Delivery::Mail(_) => "mail",
            Delivery::Sentry(_) => "sentry",
            Delivery::Shell(_) => "shell",
            Delivery::Webhook(_) => "webhook",
        }
    }

    /// A hard bound over the reporter's own timeouts, so that nothing a
    /// receiver does can keep a delivery task alive for ever.
    fn deadline(&self) -> Duration {
        match self {
            Delivery::Mail(_) => mail::deadline(),
            Delivery::Sentry(_) => sentry::deadline(),
            Delivery::Shell(cfg) => shell::deadline(cfg),
            Delivery::Webhook(cfg) => webhook::deadline(cfg),
        }
    }

    async fn send(&self, ctx: &RunContext) -> Result<(), ReportError> {
        match self {
            Delivery::Mail(cfg) => Ok(mail::send(cfg, ctx).await?),
            Delivery::Sentry(cfg) => Ok(sentry::send(cfg, ctx).await?),
            Delivery::Shell(cfg) => Ok(shell::send(cfg, ctx).await?),
            Delivery::Webhook(cfg) => Ok(webhook::send(cfg, ctx).await?),
        }
    }
}

impl Reporter for Dispatcher {
    fn report(&self, hook: Hook, job: &JobConfig, record: &RunRecord) -> ReportFuture {
        let deliveries = hook
            .report_of(job)
            .map(Delivery::planned)
            .unwrap_or_default();
        if deliveries.is_empty() {
            // As in the original, "reporting ..." is only said when some
            // reporter will actually send something.
            return Box::pin(async {});
        }
        let logged = LogReporter.report(hook, job, record);
        let ctx = Arc::new(RunContext::new(hook, job, record));
        Box::pin(async move {
            logged.await;
            deliver_all(ctx, deliveries).await;
        })
    }

    fn report_late(&self, job: &JobConfig, breach: SlaBreach) -> ReportFuture {
        let deliveries = Delivery::planned(&job.on_late);
        if deliveries.is_empty() {
            return Box::pin(async {});
        }
        let ctx = Arc::new(RunContext::late(job, breach));
        Box::pin(async move {
            tracing::info!(
                target: "cronstable::report",
                "Cron job {}: reporting SLA breach ({})",
                ctx.name,
                ctx.sla.as_ref().map_or("", |b| b.check)
            );
            deliver_all(ctx, deliveries).await;
        })
    }

    fn report_event(&self, report: &Report, event: DaemonEvent) -> ReportFuture {
        let deliveries = Delivery::planned(report);
        if deliveries.is_empty() {
            return Box::pin(async {});
        }
        let ctx = Arc::new(RunContext::event(event));
        Box::pin(async move {
            if let Some(e) = &ctx.event {
                tracing::info!(
                    target: "cronstable::report",
                    "Reporting {} event: {}",
                    e.event,
                    e.subject
                );
            }
            deliver_all(ctx, deliveries).await;
        })
    }
}

/// Runs every delivery as its own task (a panic in one is contained like
/// an error) and logs each failure.
async fn deliver_all(ctx: Arc<RunContext>, deliveries: Vec<Delivery>) {
    let tasks: Vec<_> = deliveries
        .into_iter()
        .map(|delivery| {
            let ctx = Arc::clone(&ctx);
            let name = delivery.name();
            let bound = delivery.deadline();
            let task =
                tokio::spawn(async move { tokio::time::timeout(bound, delivery.send(&ctx)).await });
            (name, bound, task)
        })
        .collect();
    for (reporter, bound, task) in tasks {
        let problem = match task.await {
            Ok(Ok(Ok(()))) => continue,
            Ok(Ok(Err(error))) => error,
            Ok(Err(_)) => ReportError::Abandoned {
                seconds: bound.as_secs_f64(),
            },
            Err(err) => ReportError::Stopped(err),
        };
        match &ctx.event {
            Some(event) => tracing::error!(
                target: "cronstable::report",
                "Problem reporting {} event: {reporter} reporter: {problem}",
                event.event
            ),
            None => tracing::error!(
                target: "cronstable::report",
                "Problem reporting job {} {}: {reporter} reporter: {problem}",
                ctx.name,
                ctx.hook.describe()
            ),
        }
    }
}

/// Logs `Cron job <name>: reporting <hook>` (the original's INFO line,
/// which log alerts match on). The run's outcome and output are logged by
/// the scheduler when the run ends, not here.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogReporter;

impl Reporter for LogReporter {
    fn report(&self, hook: Hook, job: &JobConfig, _record: &RunRecord) -> ReportFuture {
        let name = job.name.clone();
        Box::pin(async move {
            tracing::info!(
                target: "cronstable::report",
                "Cron job {name}: reporting {}",
                hook.describe()
            );
        })
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! A job and a run record for reporter unit tests.

    use crate::config::{load_sources, JobConfig, Source, SourceKind};
    use crate::job::{RunRecord, Trigger};

    /// A job loaded from a one-job YAML config.
    pub fn job(name: &str, command: &str) -> JobConfig {
        let text = format!(
            "jobs:\n  - name: {name}\n    command: {command:?}\n    schedule: \"*/5 * * * *\"\n"
        );
        let loaded = load_sources(&[Source {
            name: "test.yaml".into(),
            text,
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("test config loads");
        loaded.jobs.into_iter().next().expect("one job")
    }

    /// A finished run of `name`.
    pub fn record(name: &str, fail_reason: Option<&str>, retcode: i32) -> RunRecord {
        let now = chrono::Utc::now();
        RunRecord {
            pid: Some(1),
            retcode,
            fail_reason: fail_reason.map(str::to_owned),
            ..RunRecord::begun(1, name.into(), Trigger::Schedule, 0, now)
        }
    }
}
