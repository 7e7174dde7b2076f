//! What a report says about one run: the template variables and the shell
//! reporter's `CRONSTABLE_*` environment, built once per report and shared
//! by every reporter of the hook.

use super::Hook;
use crate::config::model::Command;
use crate::config::JobConfig;
use crate::job::RunRecord;
use minijinja::value::Value;
use std::collections::BTreeMap;

/// One run, as the reporters see it.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The hook being reported.
    pub hook: Hook,
    /// Job name.
    pub name: String,
    /// No fail reason.
    pub success: bool,
    /// Why the run failed.
    pub fail_reason: Option<String>,
    /// Exit code (`None` for an SLA breach: nothing ran).
    pub retcode: Option<i32>,
    /// Captured stdout, `None` when stdout is not captured.
    pub stdout: Option<String>,
    /// Captured stderr, `None` when stderr is not captured.
    pub stderr: Option<String>,
    /// The job's command.
    pub command: Command,
    /// The job's shell.
    pub shell: String,
    /// The schedule as a crontab line (object form assembled).
    pub schedule: String,
    /// The daemon's host name.
    pub host: String,
    /// When the run started, ISO-8601 as Python's `isoformat()` writes it
    /// (`None` for an SLA breach).
    pub started_at: Option<String>,
    /// The `verify` check's record (the shape `GET /jobs/{name}/runs`
    /// shows), when the job has a check.
    pub verification: Option<serde_json::Value>,
    /// The run's sampled CPU and memory, when the job is
    /// resource-monitored and a sample read something.
    pub resources: Option<crate::job::monitor::ResourceUsage>,
    /// The run's limits record, for a job with `resourceLimits`.
    pub limits: Option<crate::job::limits::LimitsRecord>,
    /// The breach an `onLate` report is about (`None` for a run).
    pub sla: Option<SlaBreach>,
    /// The daemon event a `notify` report is about (`None` for a run).
    pub event: Option<DaemonEvent>,
    /// The template variables (see [`RunContext::vars`]).
    vars: Value,
}

/// A daemon event, as a `notify` report tells it (a leadership change,
/// a loss of quorum): not a run of any job.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonEvent {
    /// The event's name (`leader_change`, `quorum_loss`), which a
    /// `notify.events` allow-list names.
    pub event: &'static str,
    /// False for an event worth an alert.
    pub success: bool,
    /// What it concerns (the node's name): the `name` variable.
    pub name: String,
    /// One line: `node a acquired scheduled-job leadership`.
    pub subject: String,
    /// A sentence or two.
    pub message: String,
    /// The event's own variables (`role`, `is_leader`, `leader`,
    /// `quorate`), in the templates beside the standard ones.
    pub fields: Vec<(&'static str, serde_json::Value)>,
}

/// One SLA breach, as an `onLate` report tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlaBreach {
    /// The check: `maxTimeSinceSuccess`, `lateAfter` or `maxRuntime`.
    pub check: &'static str,
    /// The configured threshold, seconds.
    pub threshold_seconds: u64,
    /// The measured value that breached it, seconds.
    pub observed_seconds: f64,
    /// The job's last known success.
    pub last_success_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl RunContext {
    /// Builds the context of `record` of `job` for `hook`.
    pub fn new(hook: Hook, job: &JobConfig, record: &RunRecord) -> RunContext {
        let mut ctx = RunContext {
            hook,
            name: job.name.clone(),
            success: record.fail_reason.is_none(),
            fail_reason: record.fail_reason.clone(),
            retcode: Some(record.retcode),
            stdout: job.capture_stdout.then(|| record.stdout.text.clone()),
            stderr: job.capture_stderr.then(|| record.stderr.text.clone()),
            command: job.command.clone(),
            shell: job.shell.clone(),
            schedule: job.schedule.text.clone(),
            host: host_name().to_owned(),
            started_at: Some(python_isoformat(record.started_at)),
            verification: record.verification.clone(),
            resources: record.resources.clone(),
            limits: record.limits.clone(),
            sla: None,
            event: None,
            vars: Value::UNDEFINED,
        };
        ctx.vars = ctx.build_vars(&job.environment);
        ctx
    }

    /// The context of an `onLate` report: the run-shaped values empty (no
    /// run is described: `success` false, `fail_reason`
    /// `sla: <check> breached`, no output, exit code or start), plus the
    /// breach's own four variables.
    pub fn late(job: &JobConfig, breach: SlaBreach) -> RunContext {
        let mut ctx = RunContext {
            hook: Hook::Late,
            name: job.name.clone(),
            success: false,
            fail_reason: Some(format!("sla: {} breached", breach.check)),
            retcode: None,
            stdout: None,
            stderr: None,
            command: job.command.clone(),
            shell: job.shell.clone(),
            schedule: job.schedule.text.clone(),
            host: host_name().to_owned(),
            started_at: None,
            verification: None,
            resources: None,
            limits: None,
            sla: Some(breach),
            event: None,
            vars: Value::UNDEFINED,
        };
        ctx.vars = ctx.build_vars(&[]);
        ctx
    }

    /// The context of a `notify` report: no job and no run (an empty
    /// command and schedule, the default shell, no output or exit code;
    /// `fail_reason` is the message of an alert), plus `event`, `subject`,
    /// `message` and the event's own variables.
    pub fn event(event: DaemonEvent) -> RunContext {
        let mut ctx = RunContext {
            hook: Hook::Event,
            name: event.name.clone(),
            success: event.success,
            fail_reason: (!event.success).then(|| event.message.clone()),
            retcode: None,
            stdout: None,
            stderr: None,
            command: Command::Shell(String::new()),
            shell: crate::platform::DEFAULT_SHELL.to_owned(),
            schedule: String::new(),
            host: host_name().to_owned(),
            started_at: None,
            verification: None,
            resources: None,
            limits: None,
            sla: None,
            event: Some(event),
            vars: Value::UNDEFINED,
        };
        ctx.vars = ctx.build_vars(&[]);
        ctx
    }

    /// The templates the reporters fall back on for this context.
    pub fn texts(&self) -> &'static super::templates::DefaultTexts {
        match self.hook {
            Hook::Late => &super::templates::LATE_TEXTS,
            Hook::Event => &super::templates::EVENT_TEXTS,
            _ => &super::templates::RUN_TEXTS,
        }
    }

    /// The breach variables as the shell reporter exports them
    /// (`CRONSTABLE_SLA_CHECK`, `..._THRESHOLD_SECONDS`,
    /// `..._OBSERVED_SECONDS`, `CRONSTABLE_LAST_SUCCESS_AT`), each empty
    /// when this is not a breach.
    pub fn sla_env(&self) -> [String; 4] {
        match &self.sla {
            Some(b) => [
                b.check.to_owned(),
                b.threshold_seconds.to_string(),
                crate::pyfmt::py_float(b.observed_seconds),
                b.last_success_at.map(python_isoformat).unwrap_or_default(),
            ],
            None => Default::default(),
        }
    }

    /// The variables every report template can use, with the original's
    /// names and Python types: `name`, `success`, `fail_reason`, `stdout`,
    /// `stderr`, `exit_code`, `command`, `shell`, `environment`, `host`,
    /// `schedule`, `started_at`, `run_id`, `verification` (the `verify`
    /// check's record), and the resource figures `cpu_seconds`,
    /// `cpu_user_seconds`, `cpu_system_seconds`, `max_rss_bytes`,
    /// `limits`. The resource figures are `None` for a run that was not
    /// resource-monitored; features this version does not have (the
    /// durable run ledger's `run_id`, `limits`) leave theirs `None`, as
    /// the original does when they are off.
    pub fn vars(&self) -> &Value {
        &self.vars
    }

    fn build_vars(&self, job_env: &[(String, String)]) -> Value {
        let command = match &self.command {
            Command::Shell(s) => Value::from(s.as_str()),
            Command::Argv(args) => Value::from(args.clone()),
        };
        let none = Value::from(());
        let mut vars: BTreeMap<String, Value> = BTreeMap::new();
        vars.insert("name".into(), Value::from(self.name.as_str()));
        vars.insert("success".into(), Value::from(self.success));
        vars.insert("fail_reason".into(), Value::from(self.fail_reason.clone()));
        vars.insert("stdout".into(), Value::from(self.stdout.clone()));
        vars.insert("stderr".into(), Value::from(self.stderr.clone()));
        vars.insert("exit_code".into(), Value::from(self.retcode));
        vars.insert("command".into(), command);
        vars.insert("shell".into(), Value::from(self.shell.as_str()));
        let environment = if self.sla.is_some() || self.event.is_some() {
            // A breach or an event has no process environment; the host
            // is there so a fingerprint that names it still renders.
            Value::from(BTreeMap::from([("HOSTNAME".to_owned(), self.host.clone())]))
        } else {
            template_environment(job_env, &self.host)
        };
        vars.insert("environment".into(), environment);
        vars.insert("host".into(), Value::from(self.host.as_str()));
        vars.insert("schedule".into(), Value::from(self.schedule.as_str()));
        vars.insert("started_at".into(), Value::from(self.started_at.clone()));
        vars.insert(
            "verification".into(),
            self.verification
                .as_ref()
                .map_or_else(|| none.clone(), json_to_template),
        );
        vars.insert("run_id".into(), none.clone());
        // The run's caps and what the kernel did with them (None without
        // resourceLimits).
        vars.insert(
            "limits".into(),
            self.limits
                .as_ref()
                .map_or_else(|| none.clone(), |l| json_to_template(&l.to_json())),
        );
        let usage = self.resources.as_ref();
        let figures = [
            (
                "cpu_seconds",
                usage.map(|u| Value::from(u.cpu_total_seconds())),
            ),
            (
                "cpu_user_seconds",
                usage.map(|u| Value::from(u.cpu_user_seconds)),
            ),
            (
                "cpu_system_seconds",
                usage.map(|u| Value::from(u.cpu_system_seconds)),
            ),
            ("max_rss_bytes", usage.map(|u| Value::from(u.max_rss_bytes))),
        ];
        for (key, value) in figures {
            vars.insert(key.into(), value.unwrap_or_else(|| none.clone()));
        }
        if let Some(b) = &self.sla {
            vars.insert("sla_check".into(), Value::from(b.check));
            vars.insert("threshold_seconds".into(), Value::from(b.threshold_seconds));
            vars.insert("observed_seconds".into(), Value::from(b.observed_seconds));
            vars.insert(
                "last_success_at".into(),
                Value::from(b.last_success_at.map(python_isoformat)),
            );
        }
        if let Some(e) = &self.event {
            vars.insert("event".into(), Value::from(e.event));
            vars.insert("subject".into(), Value::from(e.subject.as_str()));
            vars.insert("message".into(), Value::from(e.message.as_str()));
            for (key, value) in &e.fields {
                vars.insert((*key).to_owned(), json_to_template(value));
            }
        }
        Value::from(vars)
    }

    /// The command as one line: a list command joined with spaces.
    pub fn command_line(&self) -> String {
        match &self.command {
            Command::Shell(s) => s.clone(),
            Command::Argv(args) => args.join(" "),
        }
    }
}

/// A JSON value as a template value (objects as dicts, numbers as ints
/// or floats), for the records the templates see whole.
fn json_to_template(value: &serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match value {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(f)) => Value::from(f),
            (None, None) => Value::from(n.to_string()),
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::from(items.iter().map(json_to_template).collect::<Vec<_>>()),
        Json::Object(map) => Value::from(
            map.iter()
                .map(|(k, v)| (k.clone(), json_to_template(v)))
                .collect::<BTreeMap<String, Value>>(),
        ),
    }
}

/// The `environment` variable: the job's full process environment (the
/// daemon's, with the job's `environment` entries over it) when the job
/// sets any, else `None`, as in the original. `HOSTNAME` is always in it,
/// so the default Sentry fingerprint groups by host for such jobs.
fn template_environment(job_env: &[(String, String)], host: &str) -> Value {
    if job_env.is_empty() {
        return Value::from(());
    }
    let mut env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    env.entry("HOSTNAME".into())
        .or_insert_with(|| host.to_owned());
    for (k, v) in job_env {
        env.insert(k.clone(), v.clone());
    }
    Value::from(env)
}

/// The daemon's host name. It asks the OS, so it lives in the platform
/// module; re-exported here because the report context is where templates
/// and hooks read it.
pub use crate::platform::host_name;

pub use crate::pyfmt::python_isoformat;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn isoformat_matches_python() {
        let t = Utc.with_ymd_and_hms(2026, 6, 18, 12, 34, 56).unwrap();
        assert_eq!(python_isoformat(t), "2026-06-18T12:34:56+00:00");
        let t = t + chrono::Duration::microseconds(1500);
        assert_eq!(python_isoformat(t), "2026-06-18T12:34:56.001500+00:00");
    }

    /// `limits` is None without caps, and the record's object with them.
    #[test]
    fn the_limits_record_reaches_templates() {
        use crate::report::test_support::{job, record};
        let job = job("j", "true");
        let plain = RunContext::new(super::super::Hook::Failure, &job, &record("j", None, 0));
        assert!(plain.vars().get_attr("limits").unwrap().is_none());
        let mut capped = record("j", Some("memory limit exceeded (64 MiB)"), -9);
        capped.limits = crate::job::limits::LimitsRecord::from_json(&serde_json::json!({
            "enforced": true, "memory_exceeded": true, "memory_bytes": 67108864,
        }));
        let ctx = RunContext::new(super::super::Hook::Failure, &job, &capped);
        let limits = ctx.vars().get_attr("limits").unwrap();
        assert_eq!(
            limits.get_attr("memory_exceeded").unwrap(),
            Value::from(true)
        );
        assert_eq!(
            limits.get_attr("memory_bytes").unwrap(),
            Value::from(67108864)
        );
        assert_eq!(limits.get_attr("enforced").unwrap(), Value::from(true));
    }

    #[test]
    fn environment_is_none_without_job_entries() {
        assert!(template_environment(&[], "h").is_none());
        let env = template_environment(&[("A".into(), "1".into())], "h");
        assert_eq!(env.get_attr("A").unwrap().as_str(), Some("1"));
        assert!(env.get_attr("HOSTNAME").unwrap().as_str().is_some());
    }

    #[test]
    fn resource_figures_are_none_unless_the_run_was_monitored() {
        let job = crate::report::test_support::job("j", "echo hi");
        let mut record = crate::report::test_support::record("j", None, 0);
        let plain = RunContext::new(Hook::Success, &job, &record);
        for key in [
            "cpu_seconds",
            "cpu_user_seconds",
            "cpu_system_seconds",
            "max_rss_bytes",
        ] {
            assert!(plain.vars().get_attr(key).unwrap().is_none(), "{key}");
        }
        record.resources = Some(crate::job::monitor::ResourceUsage {
            cpu_user_seconds: 1.5,
            cpu_system_seconds: 0.25,
            max_rss_bytes: 4096,
            samples: 2,
            series: None,
        });
        let monitored = RunContext::new(Hook::Success, &job, &record);
        let get = |key: &str| monitored.vars().get_attr(key).unwrap().to_string();
        assert_eq!(get("cpu_seconds"), "1.75");
        assert_eq!(get("cpu_user_seconds"), "1.5");
        assert_eq!(get("cpu_system_seconds"), "0.25");
        assert_eq!(get("max_rss_bytes"), "4096");
    }
}
