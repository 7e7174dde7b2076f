//! Compiles arbitrary text as a report template (the check the config
//! loader runs) and renders it against a real run's context, as the mail,
//! webhook and Sentry reporters do. The input is the template, then after
//! a NUL the run's stdout, stderr and fail reason (split at further NULs).
//! Errors are fine; a panic, or a render that does not end (libFuzzer's
//! timeout) or grows without bound (its RSS limit), is not.
#![no_main]

use cronstable::config::{load_sources, JobConfig, Source, SourceKind};
use cronstable::job::{RunRecord, StreamOutput, Trigger};
use cronstable::report::templates::{compile, render};
use cronstable::report::{Hook, RunContext};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// A job as a config declares it: captured streams, an environment (so
/// the `environment` variable is a mapping, not None), an argv command.
const JOB: &str = r#"
jobs:
  - name: nightly-backup
    command: [/usr/local/bin/backup, --target, "s3://bucket/db"]
    schedule: "H 2 * * 1-5"
    timezone: Europe/Berlin
    captureStdout: true
    captureStderr: true
    environment:
      - key: TIER
        value: batch
"#;

fn job() -> &'static JobConfig {
    static JOB_CONFIG: OnceLock<JobConfig> = OnceLock::new();
    JOB_CONFIG.get_or_init(|| {
        let loaded = load_sources(&[Source {
            name: "fuzz.yaml".to_owned(),
            text: JOB.to_owned(),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("the fuzz target's job loads");
        loaded.jobs.into_iter().next().expect("one job")
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\0');
    let template = parts.next().unwrap_or_default();
    let stdout = parts.next().unwrap_or("backed up 3 tables\n");
    let stderr = parts.next().unwrap_or("");
    let fail_reason = parts.next().filter(|r| !r.is_empty());
    let _ = compile("mail.body", template);
    let started = chrono::DateTime::from_timestamp(1_780_000_000, 123_000).unwrap_or_default();
    let record = RunRecord {
        pid: Some(4242),
        retcode: if fail_reason.is_some() { 1 } else { 0 },
        fail_reason: fail_reason.map(str::to_owned),
        stdout: StreamOutput {
            text: stdout.to_owned(),
            discarded: 0,
        },
        stderr: StreamOutput {
            text: stderr.to_owned(),
            discarded: 2,
        },
        ..RunRecord::begun(7, job().name.clone(), Trigger::Schedule, 0, started)
    };
    let hook = if fail_reason.is_some() {
        Hook::Failure
    } else {
        Hook::Success
    };
    let ctx = RunContext::new(hook, job(), &record);
    let _ = render("mail.body", template, ctx.vars());
});
