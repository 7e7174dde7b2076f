//! Per-job rules checked after merging: required keys, numeric ranges,
//! cross-field rules, time zones, accounts, env files. Produces the resolved
//! [`JobConfig`] or the first broken rule with the key it concerns.

use super::defaults;
use super::error::Location;
use super::job::{FailurePolicy, JobConfig, JobSchedule, RunAs};
use super::model::{ConcurrencyPolicy, ConcurrencyScope, JobSpec, Nullable, Report};
use crate::cronexpr::TimeBase;
use crate::jinja::{self, TemplateError};
use crate::platform;
use std::path::{Path, PathBuf};

/// A broken rule: the key path it concerns (empty for whole-job rules) and
/// what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleError {
    /// Key path, e.g. `onFailure.retry.initialDelay`.
    pub key: String,
    /// What is wrong, in words.
    pub message: String,
}

fn rule(key: &str, message: impl Into<String>) -> RuleError {
    RuleError {
        key: key.to_owned(),
        message: message.into(),
    }
}

/// Facts about the environment the rules depend on.
pub struct Context<'a> {
    /// The daemon runs as root (needed for `user`/`group`).
    pub is_root: bool,
    /// Directory relative paths (`env_file`, `workingDirectory`) resolve in.
    pub cwd: &'a Path,
    /// Schedule lint, shared across a load so zone scans are reused.
    pub linter: &'a std::cell::RefCell<crate::cronexpr::Linter>,
}

/// Things worth a log line that do not stop the load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Warnings {
    /// Probable mistakes, logged at WARN.
    pub warnings: Vec<String>,
    /// Worth knowing, logged at INFO (schedule lint notes).
    pub notes: Vec<String>,
}

/// Checks one merged job and resolves it.
pub fn resolve_job(
    spec: Box<JobSpec>,
    origin: Location,
    ctx: &Context,
    warnings: &mut Warnings,
) -> Result<JobConfig, RuleError> {
    let name = spec
        .name
        .clone()
        .ok_or_else(|| rule("name", "missing required key 'name'"))?;
    let command = spec
        .command
        .clone()
        .ok_or_else(|| rule("command", "missing required key 'command'"))?;
    let schedule = spec
        .schedule
        .as_ref()
        .ok_or_else(|| rule("schedule", "missing required key 'schedule'"))?;
    if let super::model::Schedule::Fields(fields) = schedule {
        check_schedule_fields(fields)?;
    }
    let schedule = schedule.expression();
    if schedule.trim().is_empty() {
        return Err(rule("schedule", "schedule is empty"));
    }

    let parsed_schedule = crate::cronexpr::Schedule::parse(&schedule, &name).map_err(|e| {
        let shown = crate::cronexpr::quotable(&schedule);
        rule("schedule", format!("invalid schedule '{shown}': {e}"))
    })?;

    let (timezone, time_base) = match spec.timezone.as_deref() {
        Some(tz) => {
            let zone = tz
                .parse::<chrono_tz::Tz>()
                .map_err(|_| rule("timezone", format!("unknown timezone '{tz}'")))?;
            (Some(tz.to_owned()), TimeBase::Zone(zone))
        }
        None if spec.utc.unwrap_or(true) => (None, TimeBase::Utc),
        None => (None, TimeBase::Local),
    };

    let environment = assemble_environment(&spec, ctx)?;
    let working_directory = resolve_working_directory(&spec.working_directory, ctx);
    let run_as = resolve_account(&name, &spec, ctx)?;

    check_ranges(&spec)?;
    check_report_templates(&spec)?;
    collect_warnings(&name, &spec, ctx, warnings);
    let schedule_findings = match parsed_schedule.cron() {
        Some(expr) => ctx.linter.borrow_mut().lint(expr, &time_base),
        None => Vec::new(),
    };
    {
        for finding in &schedule_findings {
            let line = format!(
                "job '{name}': schedule '{schedule}': [{}] {}",
                finding.code, finding.message
            );
            match finding.level {
                crate::cronexpr::LintLevel::Warning => warnings.warnings.push(line),
                crate::cronexpr::LintLevel::Note => warnings.notes.push(line),
            }
        }
    }

    // Read in place: cloning the boxed blocks only to read four flags and
    // a retry ladder cost two allocations per job.
    let fails = spec.fails_when.as_deref().cloned().unwrap_or_default();
    let on_failure = spec.on_failure.as_deref();
    let report_of = |hook: &Option<Box<super::model::ReportHook>>| {
        shared_report(hook.as_ref().and_then(|h| h.report.as_ref()))
    };
    Ok(JobConfig {
        name,
        command,
        schedule: JobSchedule {
            text: schedule,
            parsed: parsed_schedule,
            utc: spec.utc.unwrap_or(true),
            timezone,
            time_base,
            findings: schedule_findings,
        },
        shell: spec
            .shell
            .clone()
            .unwrap_or_else(|| platform::DEFAULT_SHELL.into()),
        enabled: spec.enabled.unwrap_or(true),
        capture_stdout: spec.capture_stdout.unwrap_or(false),
        capture_stderr: spec.capture_stderr.unwrap_or(true),
        save_limit: usize::try_from(spec.save_limit.unwrap_or(defaults::SAVE_LIMIT)).unwrap_or(0),
        max_line_length: usize::try_from(spec.max_line_length.unwrap_or(defaults::MAX_LINE_LENGTH))
            .unwrap_or(1),
        stream_prefix: spec
            .stream_prefix
            .clone()
            .unwrap_or_else(|| defaults::STREAM_PREFIX.into()),
        concurrency_policy: spec.concurrency_policy.unwrap_or(ConcurrencyPolicy::Allow),
        concurrency_scope: spec.concurrency_scope.unwrap_or(ConcurrencyScope::Node),
        cluster_policy: spec
            .cluster_policy
            .unwrap_or(super::model::ClusterPolicy::Leader),
        execution_timeout: spec.execution_timeout,
        kill_timeout: spec.kill_timeout.unwrap_or(defaults::KILL_TIMEOUT),
        fails_when: FailurePolicy {
            produces_stdout: fails.produces_stdout.unwrap_or(false),
            produces_stderr: fails.produces_stderr.unwrap_or(true),
            nonzero_return: fails.nonzero_return.unwrap_or(true),
            always: fails.always.unwrap_or(false),
        },
        retry: on_failure
            .and_then(|h| h.retry.clone())
            .unwrap_or(super::model::Retry {
                maximum_retries: 0,
                initial_delay: 1.0,
                maximum_delay: 300.0,
                backoff_multiplier: 2.0,
            }),
        on_failure: shared_report(on_failure.and_then(|h| h.report.as_ref())),
        on_permanent_failure: report_of(&spec.on_permanent_failure),
        on_success: report_of(&spec.on_success),
        sla: resolved_sla(&spec),
        on_late: report_of(&spec.on_late),
        on_missed: spec.on_missed.unwrap_or(super::model::OnMissed::Skip),
        starting_deadline_seconds: spec.starting_deadline_seconds,
        catchup_jitter_seconds: spec.catchup_jitter_seconds.unwrap_or(0),
        only_if_last_succeeded: spec.only_if_last_succeeded.unwrap_or(false),
        archive_output: spec.archive_output.unwrap_or(false),
        redact_archived_secrets: spec.redact_archived_secrets.unwrap_or(true),
        environment,
        secrets: spec
            .secrets
            .as_ref()
            .map(|s| s.0.clone())
            .unwrap_or_default(),
        state_allowed_scopes: spec.state_allowed_scopes.clone().unwrap_or_default(),
        working_directory,
        run_as,
        priority: spec.priority.unwrap_or(super::model::Priority::Normal),
        statsd: spec.statsd.clone(),
        verify: resolved_verify(&spec)?,
        pool: resolved_pool(&spec)?,
        monitor: resolved_monitor(&spec),
        resource_limits: match &spec.resource_limits {
            Some(block) => super::limits::resolve(block).map_err(|e| rule(e.key, e.message))?,
            None => None,
        },
        user: spec.user.clone(),
        group: spec.group.clone(),
        spec: Some(spec),
        origin,
    })
}

fn check_schedule_fields(fields: &super::model::ScheduleFields) -> Result<(), RuleError> {
    let named = [
        ("second", &fields.second),
        ("minute", &fields.minute),
        ("hour", &fields.hour),
        ("dayOfMonth", &fields.day_of_month),
        ("month", &fields.month),
        ("year", &fields.year),
        ("dayOfWeek", &fields.day_of_week),
    ];
    for (key, value) in named {
        if let Some(v) = value {
            if v.split_whitespace().count() != 1 || v.trim() != v {
                return Err(rule(
                    &format!("schedule.{key}"),
                    format!(
                        "must be one cron field without spaces, got {v:?} (an empty value or an \
                         inner space would shift every later field; leave the key out to get `*`)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// "x >= bound"; NaN fails it, which is what a range rule wants.
pub(crate) fn at_least(x: f64, bound: f64) -> bool {
    x >= bound
}

/// "x > bound"; NaN fails it.
pub(crate) fn above(x: f64, bound: f64) -> bool {
    x > bound
}

fn check_ranges(spec: &JobSpec) -> Result<(), RuleError> {
    if spec.save_limit.is_some_and(|v| v < 0) {
        return Err(rule("saveLimit", "must be >= 0"));
    }
    if spec.max_line_length.is_some_and(|v| v <= 0) {
        return Err(rule("maxLineLength", "must be > 0"));
    }
    if spec.kill_timeout.is_some_and(|v| !at_least(v, 0.0)) {
        return Err(rule("killTimeout", "must be >= 0"));
    }
    if let Some(m) = &spec.monitor_resources {
        if m.interval.is_some_and(|v| !at_least(v, 0.1)) {
            return Err(rule(
                "monitorResources.interval",
                "must be >= 0.1 (seconds)",
            ));
        }
        if m.history.is_some_and(|v| !(0..=2000).contains(&v)) {
            return Err(rule(
                "monitorResources.history",
                "must be between 0 and 2000 (points)",
            ));
        }
    }
    if spec.concurrency_scope == Some(ConcurrencyScope::Cluster)
        && spec.concurrency_policy.unwrap_or(ConcurrencyPolicy::Allow) == ConcurrencyPolicy::Allow
    {
        return Err(rule(
            "concurrencyScope",
            "concurrencyScope: cluster has no effect with concurrencyPolicy: Allow (the \
             default); set Forbid or Replace, or drop concurrencyScope",
        ));
    }
    if spec.catchup_jitter_seconds.is_some_and(|v| v < 0) {
        return Err(rule("catchupJitterSeconds", "must be >= 0"));
    }
    if spec.starting_deadline_seconds.is_some_and(|v| v <= 0) {
        return Err(rule("startingDeadlineSeconds", "must be > 0 when set"));
    }
    if spec.execution_timeout.is_some_and(|v| !above(v, 0.0)) {
        return Err(rule("executionTimeout", "must be > 0 when set"));
    }
    if let Some(sla) = &spec.sla {
        for (key, value) in [
            (
                "sla.maxTimeSinceSuccessSeconds",
                sla.max_time_since_success_seconds,
            ),
            ("sla.lateAfterSeconds", sla.late_after_seconds),
            ("sla.maxRuntimeSeconds", sla.max_runtime_seconds),
        ] {
            if value.is_some_and(|v| v <= 0) {
                return Err(rule(key, "must be > 0 when set"));
            }
        }
    }
    let has_sla = spec.sla.as_ref().is_some_and(|s| s.any_set());
    let late_report = spec.on_late.as_ref().and_then(|h| h.report.as_ref());
    if !has_sla && late_report.is_some_and(names_a_destination) {
        return Err(rule(
            "onLate",
            "onLate requires sla: set at least one sla threshold, or remove the onLate reporters",
        ));
    }
    if let Some(retry) = spec.on_failure.as_ref().and_then(|h| h.retry.as_ref()) {
        if retry.maximum_retries < -1 {
            return Err(rule("onFailure.retry.maximumRetries", "must be >= -1"));
        }
        if !at_least(retry.initial_delay, 0.0) {
            return Err(rule("onFailure.retry.initialDelay", "must be >= 0"));
        }
        if !above(retry.maximum_delay, 0.0) {
            return Err(rule("onFailure.retry.maximumDelay", "must be > 0"));
        }
        if !above(retry.backoff_multiplier, 0.0) {
            return Err(rule("onFailure.retry.backoffMultiplier", "must be > 0"));
        }
    }
    if let Some(secrets) = &spec.secrets {
        for secret in &secrets.0 {
            let label = secret.name.as_deref().unwrap_or("");
            if secret.name.as_deref().is_none_or(str::is_empty) {
                return Err(rule("secrets", "every secret needs a name"));
            }
            let has_source = [&secret.value, &secret.from_file, &secret.from_env_var]
                .iter()
                .any(|s| s.as_deref().is_some_and(|v| !v.is_empty()));
            if !has_source {
                return Err(rule(
                    "secrets",
                    format!("secret '{label}' needs a value, fromFile or fromEnvVar source"),
                ));
            }
        }
    }
    Ok(())
}

/// True when a report block would deliver somewhere.
pub fn names_a_destination(report: &Report) -> bool {
    let sentry = report
        .sentry
        .as_ref()
        .and_then(|s| s.dsn.as_ref())
        .is_some_and(|d| d.is_configured());
    let mail = report
        .mail
        .as_ref()
        .is_some_and(|m| m.to.is_some() || m.from.is_some());
    let shell = report.shell.as_ref().is_some_and(|s| s.command.is_some());
    let webhook = report
        .webhook
        .as_ref()
        .and_then(|w| w.url.as_ref())
        .is_some_and(|u| u.is_configured());
    let push = report
        .push
        .as_ref()
        .is_some_and(|p| p.enabled == Some(true));
    let eventlog = report
        .eventlog
        .as_ref()
        .is_some_and(|e| e.enabled == Some(true));
    sentry || mail || shell || webhook || push || eventlog
}

/// A report template that cannot compile is a load error, not a failed
/// report at 3 a.m.
fn check_report_templates(spec: &JobSpec) -> Result<(), RuleError> {
    let hooks = [
        (
            "onSuccess",
            spec.on_success.as_ref().and_then(|h| h.report.as_ref()),
        ),
        (
            "onFailure",
            spec.on_failure.as_ref().and_then(|h| h.report.as_ref()),
        ),
        (
            "onPermanentFailure",
            spec.on_permanent_failure
                .as_ref()
                .and_then(|h| h.report.as_ref()),
        ),
        (
            "onLate",
            spec.on_late.as_ref().and_then(|h| h.report.as_ref()),
        ),
    ];
    for (hook, report) in hooks {
        if let Some(report) = report {
            check_templates(report).map_err(|e| {
                rule(
                    &format!("{hook}.report.{}", e.key),
                    format!("invalid template: {}", e.message),
                )
            })?;
        }
    }
    Ok(())
}

/// Checks every template of a report block at load time, so a broken
/// template is a configuration error rather than a failed report later.
pub(crate) fn check_templates(report: &Report) -> Result<(), TemplateError> {
    if let Some(mail) = &report.mail {
        if let Some(s) = &mail.subject {
            jinja::compile("mail.subject", s)?;
        }
        if let Some(s) = &mail.body {
            jinja::compile("mail.body", s)?;
        }
    }
    if let Some(sentry) = &report.sentry {
        if let Some(s) = &sentry.body {
            jinja::compile("sentry.body", s)?;
        }
        if let Some(fp) = &sentry.fingerprint {
            for (i, line) in fp.0.iter().enumerate() {
                jinja::compile(&format!("sentry.fingerprint[{i}]"), line)?;
            }
        }
    }
    if let Some(s) = report.webhook.as_ref().and_then(|w| w.body.as_ref()) {
        jinja::compile("webhook.body", s)?;
    }
    Ok(())
}

/// `verify` with its default timeout, checked with the original's texts
/// (an empty command, or a timeout that is not a finite positive number).
fn resolved_verify(spec: &JobSpec) -> Result<Option<super::job::Verify>, RuleError> {
    use super::model::Command;
    let Some(verify) = &spec.verify else {
        return Ok(None);
    };
    let command = match &verify.command {
        Some(Command::Shell(text)) if !text.is_empty() => Command::Shell(text.clone()),
        Some(Command::Argv(argv)) if !argv.is_empty() => Command::Argv(argv.clone()),
        _ => return Err(rule("verify.command", "verify.command must be non-empty")),
    };
    let timeout = verify.timeout.unwrap_or(super::job::VERIFY_DEFAULT_TIMEOUT);
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(rule(
            "verify.timeout",
            "verify.timeout must be finite and > 0",
        ));
    }
    Ok(Some(super::job::Verify { command, timeout }))
}

/// `pool` and its queue options with their defaults, checked with the
/// original's texts. Whether the pool exists and holds `poolSlots` is a
/// whole-config rule (the `pools` section may sit in another file).
fn resolved_pool(spec: &JobSpec) -> Result<Option<super::job::JobPool>, RuleError> {
    use super::job::{POOL_SLOTS_DEFAULT, QUEUE_PRIORITY_DEFAULT, QUEUE_TIMEOUT_DEFAULT};
    let slots = spec.pool_slots.unwrap_or(POOL_SLOTS_DEFAULT);
    let priority = spec.queue_priority.unwrap_or(QUEUE_PRIORITY_DEFAULT);
    let timeout = spec.queue_timeout.unwrap_or(QUEUE_TIMEOUT_DEFAULT);
    if slots < 1 {
        return Err(rule("poolSlots", "poolSlots must be >= 1"));
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(rule("queueTimeout", "queueTimeout must be finite and > 0"));
    }
    // `pool: ""` is no pool, as the original's EmptyNone reads it.
    let Some(name) = spec.pool.clone().filter(|p| !p.is_empty()) else {
        if slots != POOL_SLOTS_DEFAULT
            || priority != QUEUE_PRIORITY_DEFAULT
            || timeout != QUEUE_TIMEOUT_DEFAULT
        {
            return Err(rule(
                "pool",
                "poolSlots, queuePriority and queueTimeout need pool",
            ));
        }
        return Ok(None);
    };
    Ok(Some(super::job::JobPool {
        name,
        // Larger than any pool (10000) is refused against the pool; the
        // clamp only keeps the value representable until then.
        slots: u32::try_from(slots).unwrap_or(u32::MAX),
        priority,
        timeout,
    }))
}

/// The `sla` thresholds that are set (their ranges are checked earlier,
/// by the numeric rules), or None when no check is on.
fn resolved_sla(spec: &JobSpec) -> Option<super::job::SlaThresholds> {
    let sla = spec.sla.as_ref().filter(|s| s.any_set())?;
    let seconds = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
    Some(super::job::SlaThresholds {
        max_time_since_success: seconds(sla.max_time_since_success_seconds),
        late_after: seconds(sla.late_after_seconds),
        max_runtime: seconds(sla.max_runtime_seconds),
    })
}

/// `monitorResources` resolved: the bool form takes the defaults, the map
/// form is on unless `enabled: false` (writing the map at all opts in).
/// Its ranges are checked with the other numeric rules ([`check_ranges`]).
fn resolved_monitor(spec: &JobSpec) -> Option<super::job::Monitor> {
    let m = spec.monitor_resources.as_ref()?;
    if !m.enabled.unwrap_or(true) {
        return None;
    }
    Some(super::job::Monitor {
        interval: m.interval.unwrap_or(super::job::MONITOR_DEFAULT_INTERVAL),
        history: m
            .history
            .and_then(|h| usize::try_from(h).ok())
            .unwrap_or(super::job::MONITOR_DEFAULT_HISTORY),
    })
}

fn collect_warnings(name: &str, spec: &JobSpec, ctx: &Context, warnings: &mut Warnings) {
    if let Some(priority) = spec.priority {
        if priority.nice().is_some_and(|n| n < 0) && !ctx.is_root {
            warnings.warnings.push(format!(
                "job '{name}': priority {priority:?} raises the nice level, which needs \
                 CAP_SYS_NICE or RLIMIT_NICE headroom; if the kernel refuses, the job runs at \
                 the inherited priority"
            ));
        }
    }
    let hooks = [
        spec.on_success.as_ref().and_then(|h| h.report.as_ref()),
        spec.on_failure.as_ref().and_then(|h| h.report.as_ref()),
        spec.on_permanent_failure
            .as_ref()
            .and_then(|h| h.report.as_ref()),
        spec.on_late.as_ref().and_then(|h| h.report.as_ref()),
    ];
    if hooks
        .iter()
        .flatten()
        .any(|r| r.eventlog.as_ref().is_some_and(|e| e.enabled == Some(true)))
    {
        warnings.warnings.push(format!(
            "job '{name}': report.eventlog is enabled but there is no Windows Event Log on this \
             platform; those reports are dropped"
        ));
    }
}

/// The job environment: env_file entries first (in file order), then the
/// config's `environment` entries, which win on a shared name.
fn assemble_environment(spec: &JobSpec, ctx: &Context) -> Result<Vec<(String, String)>, RuleError> {
    let mut env: Vec<(String, String)> = Vec::new();
    if let Some(path) = &spec.env_file {
        let full = ctx.cwd.join(path);
        let text = crate::platform::read_regular_file(&full, super::MAX_FILE_BYTES)
            .and_then(|bytes| {
                String::from_utf8(bytes).map_err(|e| {
                    std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error())
                })
            })
            .map_err(|e| rule("env_file", format!("cannot read env_file '{path}': {e}")))?;
        for (key, value) in parse_env_file(&text).map_err(|line| {
            rule(
                "env_file",
                format!("line without '=' in env_file '{path}': {line:?}"),
            )
        })? {
            upsert(&mut env, key, value);
        }
    }
    if let Some(list) = &spec.environment {
        for var in &list.0 {
            upsert(&mut env, var.key.clone(), var.value.clone());
        }
    }
    Ok(env)
}

fn upsert(env: &mut Vec<(String, String)>, key: String, value: String) {
    match env.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => env.push((key, value)),
    }
}

/// Parses `KEY=VALUE` lines; blank lines and `#` comments are skipped.
/// Returns the offending line when one has no `=`.
pub fn parse_env_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for raw in text.lines() {
        let line = raw.trim_matches(' ').trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').ok_or_else(|| line.to_owned())?;
        out.push((
            key.trim_matches(' ').to_owned(),
            value.trim_matches(' ').to_owned(),
        ));
    }
    Ok(out)
}

fn resolve_working_directory(value: &Nullable<String>, ctx: &Context) -> Option<PathBuf> {
    let dir = value.value().filter(|d| !d.is_empty())?;
    let expanded = match dir.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => platform::home_dir()
            .map(|home| home.join(rest.trim_start_matches('/')))
            .unwrap_or_else(|| PathBuf::from(dir)),
        _ => PathBuf::from(dir),
    };
    Some(ctx.cwd.join(expanded))
}

fn resolve_account(name: &str, spec: &JobSpec, ctx: &Context) -> Result<Option<RunAs>, RuleError> {
    if spec.user.is_none() && spec.group.is_none() {
        return Ok(None);
    }
    let mut run_as = RunAs {
        user_name: None,
        uid: None,
        gid: 0,
    };
    let mut gid = None;
    if let Some(user) = &spec.user {
        match platform::lookup_user(user).map_err(|e| rule("user", e.to_string()))? {
            Some(account) => {
                run_as.user_name = Some(account.name);
                run_as.uid = Some(account.uid);
                gid = Some(account.gid);
            }
            None => match user.parse::<u32>() {
                // An unknown numeric uid is allowed: containers often run
                // with uids that have no passwd entry.
                Ok(uid) => run_as.uid = Some(uid),
                Err(_) => return Err(rule("user", format!("user not found: '{user}'"))),
            },
        }
    }
    if let Some(group) = &spec.group {
        match platform::lookup_group(group).map_err(|e| rule("group", e.to_string()))? {
            Some(g) => gid = Some(g),
            None => match group.parse::<u32>() {
                Ok(g) => gid = Some(g),
                Err(_) => return Err(rule("group", format!("group not found: '{group}'"))),
            },
        }
    }
    if !ctx.is_root {
        return Err(rule(
            if spec.user.is_some() { "user" } else { "group" },
            format!("job '{name}' switches user or group, which needs cronstable to run as root"),
        ));
    }
    run_as.gid = gid.unwrap_or(0);
    Ok(Some(run_as))
}

/// A hook's reporters as a job holds them. Most jobs configure none, and
/// they all share one empty set instead of allocating one per hook and
/// job (144 bytes a job for the three hooks).
fn shared_report(report: Option<&super::model::Report>) -> std::sync::Arc<super::model::Report> {
    static NONE: std::sync::OnceLock<std::sync::Arc<super::model::Report>> =
        std::sync::OnceLock::new();
    match report {
        Some(report) if *report != super::model::Report::default() => {
            std::sync::Arc::new(report.clone())
        }
        _ => std::sync::Arc::clone(NONE.get_or_init(Default::default)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_lines() {
        let parsed = parse_env_file("\u{feff}# c\n\nA=1\n B = two words \nC=x=y\r\n").unwrap();
        assert_eq!(
            parsed,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "two words".into()),
                ("C".into(), "x=y".into())
            ]
        );
        assert_eq!(parse_env_file("A=1\nnoeq\n").unwrap_err(), "noeq");
    }

    #[test]
    fn check_finds_syntax_errors_with_their_key() {
        let mut report = Report::default();
        report.webhook = Some(Box::new(crate::config::model::report::WebhookReport {
            body: Some("{% if x %}unclosed".into()),
            ..Default::default()
        }));
        let err = check_templates(&report).unwrap_err();
        assert_eq!(err.key, "webhook.body");
        assert!(err.message.contains("syntax error"), "{}", err.message);
        report.webhook = None;
        report.sentry = Some(Box::new(crate::config::model::report::SentryReport {
            fingerprint: Some(crate::config::model::report::Fingerprint(vec![
                "ok".into(),
                "{{ name | nosuchfilter }}".into(),
            ])),
            ..Default::default()
        }));
        let err = check_templates(&report).unwrap_err();
        assert_eq!(err.key, "sentry.fingerprint[1]");
    }
}
