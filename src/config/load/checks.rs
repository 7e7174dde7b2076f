//! The whole-config rules checked once the jobs are assembled, and the
//! small conversions the parsers share.

use crate::config::crontab;
use crate::config::error::ConfigError;
use crate::config::job::JobConfig;
use crate::config::model::{Command, EnvVar, Environment, JobSpec, Schedule};
use crate::config::sections::Located;
use std::collections::HashMap;

/// Tags a section with the source it was written in.
pub(super) fn located<T>(value: Option<T>, source: &str) -> Option<Located<T>> {
    value.map(|value| Located {
        value,
        source: source.to_owned(),
    })
}

/// Crontab lowering options: zone names are checked against the same zone
/// database jobs use (schedules already go through the cron engine by
/// default).
pub(super) fn crontab_options() -> crontab::CrontabOptions<'static> {
    crontab::CrontabOptions {
        check_timezone: Some(&|zone: &str| {
            zone.parse::<chrono_tz::Tz>()
                .map(|_| ())
                .map_err(|_| "not a known IANA time zone".to_owned())
        }),
        ..crontab::CrontabOptions::default()
    }
}

/// True when the text holds no YAML content at all (empty, or only
/// comments and document markers).
pub(super) fn is_blank_yaml(text: &str) -> bool {
    text.lines().all(|line| {
        let t = line.trim();
        t.is_empty() || t.starts_with('#') || t == "---" || t == "..."
    })
}

/// Refuses a config with more than `limit` jobs ([`super::MAX_JOBS`]),
/// naming the first job past the limit.
pub(super) fn check_job_count(jobs: &[JobConfig], limit: usize) -> Result<(), ConfigError> {
    match jobs.get(limit) {
        None => Ok(()),
        Some(job) => Err(ConfigError::Job {
            location: job.origin.clone(),
            job: job.name.clone(),
            key: String::new(),
            message: format!(
                "the config defines {} jobs, more than the limit of {}",
                jobs.len(),
                limit
            ),
        }),
    }
}

pub(super) fn check_duplicate_names(jobs: &[JobConfig]) -> Result<(), ConfigError> {
    let mut seen: HashMap<&str, &JobConfig> = HashMap::with_capacity(jobs.len());
    for job in jobs {
        if let Some(first) = seen.insert(job.name.as_str(), job) {
            return Err(ConfigError::Job {
                location: job.origin.clone(),
                job: job.name.clone(),
                key: "name".into(),
                message: format!(
                    "a job named '{}' is already defined at {}; job names must be unique \
                     across the whole config",
                    job.name, first.origin
                ),
            });
        }
    }
    Ok(())
}

/// Lowers a crontab entry to a job spec (the built-in defaults are layered
/// under it by the caller).
pub(super) fn crontab_job_spec(entry: crontab::CrontabJob) -> JobSpec {
    JobSpec {
        name: Some(entry.name),
        command: Some(Command::Shell(entry.command)),
        schedule: Some(Schedule::Text(entry.schedule)),
        shell: entry.shell,
        timezone: entry.timezone,
        environment: (!entry.environment.is_empty()).then(|| {
            Environment(
                entry
                    .environment
                    .into_iter()
                    .map(|(key, value)| EnvVar { key, value })
                    .collect(),
            )
        }),
        ..JobSpec::default()
    }
}
