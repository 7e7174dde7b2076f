//! The job-set id: a digest of the effective job definitions, identical to
//! the Python original's `v1:` id for the same config, so replicas of either
//! implementation can compare their job sets.
//!
//! Scheme `v1`: every job becomes a canonical JSON object (see
//! `job_object`), serialized by `canon` and hashed with SHA-256; the
//! lowercase hex digests are sorted and joined under a `v1` line, and that
//! text is hashed again.

pub(crate) mod canon;

use crate::config::model::{Command, ConcurrencyScope, Priority, Report};
use crate::config::JobConfig;
use canon::{Canon, Key};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The default report block the original fingerprints for each hook. It is
/// kept byte-exact (templates included) because the id hashes it; it is
/// data for compatibility, parsed once per id computation.
const LEGACY_REPORT_DEFAULTS: &str = include_str!("fingerprint/legacy_report_defaults.json");

/// The `v1:` job-set id of a set of jobs.
pub fn job_set_id(jobs: &[JobConfig]) -> String {
    id_from_digests(job_digests(jobs))
}

/// The `v1` digest of each job, in the order given: the parts
/// [`job_set_id`] combines. A source that keeps them per group of jobs (a
/// CronJobSet) computes the id of the whole config after a change without
/// hashing the unchanged jobs again.
pub fn job_digests<'a>(jobs: impl IntoIterator<Item = &'a JobConfig>) -> Vec<String> {
    let defaults = legacy_report_defaults();
    // Most jobs configure no reporters; their hook blocks are the built-in
    // one, serialized once here instead of once per job.
    let cached = match hook_object(None, &defaults) {
        Canon::Object(mut hook) => hook
            .remove("report")
            .map(|r| Canon::Raw(hook_text(&r).into())),
        _ => None,
    };
    let defaults = ReportDefaults {
        tree: defaults,
        unconfigured_report: cached,
    };
    let jobs: Vec<&JobConfig> = jobs.into_iter().collect();
    let digest = |job: &&JobConfig| hex_sha256(job_bytes(job, &defaults).as_bytes());
    // Each job's text carries its three report blocks in full (about 6 KB
    // with the built-in templates), so hashing is most of the id's cost:
    // large sets are split over the cores, in order.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = cores.min(jobs.len() / PARALLEL_CHUNK);
    if threads < 2 {
        return jobs.iter().map(digest).collect();
    }
    let chunk = jobs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let digest = &digest;
        // A thread that cannot be started leaves its part to this one.
        let parts: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                let spawned = std::thread::Builder::new()
                    .name("job-set-id".to_owned())
                    .spawn_scoped(scope, move || part.iter().map(digest).collect::<Vec<_>>());
                (part, spawned.ok())
            })
            .collect();
        let mut all = Vec::with_capacity(jobs.len());
        for (part, thread) in parts {
            match thread.map(|t| t.join()) {
                Some(Ok(digests)) => all.extend(digests),
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => all.extend(part.iter().map(digest)),
            }
        }
        all
    })
}

/// The fewest jobs a thread of [`job_digests`] is given: below it one
/// thread's start costs more than it saves.
const PARALLEL_CHUNK: usize = 1024;

/// The job-set id of the jobs whose [`job_digests`] are given, in any
/// order.
pub fn id_from_digests<S: AsRef<str>>(mut digests: Vec<S>) -> String {
    digests.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
    let mut input = String::with_capacity(3 + digests.len() * 65);
    input.push_str("v1\n");
    for (i, digest) in digests.iter().enumerate() {
        if i > 0 {
            input.push('\n');
        }
        input.push_str(digest.as_ref());
    }
    format!("v1:{}", hex_sha256(input.as_bytes()))
}

/// The built-in report block, and optionally its redacted, merged form
/// serialized once (what a hook with no reporters configured hashes).
struct ReportDefaults {
    tree: Canon,
    unconfigured_report: Option<Canon>,
}

fn hook_text(hook: &Canon) -> String {
    let mut out = String::new();
    hook.write(&mut out);
    out
}

/// The exact text one job contributes to the id (useful to see why two
/// jobs differ).
pub fn job_canonical_bytes(job: &JobConfig, report_defaults: &Canon) -> String {
    job_bytes(
        job,
        &ReportDefaults {
            tree: report_defaults.clone(),
            unconfigured_report: None,
        },
    )
}

fn job_bytes(job: &JobConfig, defaults: &ReportDefaults) -> String {
    let mut bytes = String::with_capacity(6 * 1024);
    job_object(job, defaults).write(&mut bytes);
    bytes
}

fn hex_sha256(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    // By table: a `format!` per byte was 32 allocations per job, about a
    // tenth of the job-set id of 10,000 jobs.
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}

/// The built-in report block as a canonical value.
pub fn legacy_report_defaults() -> Canon {
    serde_json::from_str::<serde_json::Value>(LEGACY_REPORT_DEFAULTS)
        .map(|v| Canon::from_json(&v))
        .unwrap_or(Canon::Null)
}

/// The canonical object of one job: every fingerprinted key with its
/// effective value (defaults applied), keys that post-date the scheme only
/// when they differ from their default.
fn job_object(job: &JobConfig, report_defaults: &ReportDefaults) -> Canon {
    let mut o: BTreeMap<Key, Canon> = BTreeMap::new();
    let mut put = |key: &'static str, value: Canon| {
        o.insert(Key::Borrowed(key), value);
    };
    put("captureStderr", Canon::Bool(job.capture_stderr));
    put("captureStdout", Canon::Bool(job.capture_stdout));
    put("clusterPolicy", Canon::str(enum_text(&job.cluster_policy)));
    put("command", command_object(&job.command));
    put(
        "concurrencyPolicy",
        Canon::str(enum_text(&job.concurrency_policy)),
    );
    if job.concurrency_scope != ConcurrencyScope::Node {
        put(
            "concurrencyScope",
            Canon::str(enum_text(&job.concurrency_scope)),
        );
    }
    put("enabled", Canon::Bool(job.enabled));
    let mut names: Vec<&str> = job.environment.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    put(
        "environment",
        Canon::List(names.into_iter().map(Canon::str).collect()),
    );
    put(
        "executionTimeout",
        Canon::opt(job.execution_timeout, Canon::float),
    );
    put("failsWhen", {
        let f = job.fails_when;
        Canon::Object(BTreeMap::from([
            ("always".into(), Canon::Bool(f.always)),
            ("nonzeroReturn".into(), Canon::Bool(f.nonzero_return)),
            ("producesStderr".into(), Canon::Bool(f.produces_stderr)),
            ("producesStdout".into(), Canon::Bool(f.produces_stdout)),
        ]))
    });
    put("group", account_value(job.group.as_deref()));
    put("killTimeout", Canon::float(job.kill_timeout));
    put("maxLineLength", Canon::int(job.max_line_length as i64));
    put("name", Canon::str(job.name.clone()));
    let hook = |report: &Report| match (&report_defaults.unconfigured_report, report) {
        (Some(cached), r) if *r == Report::default() => {
            Canon::Object(BTreeMap::from([("report".into(), cached.clone())]))
        }
        _ => hook_object(Some(report), &report_defaults.tree),
    };
    let mut on_failure = hook(&job.on_failure);
    if let Canon::Object(map) = &mut on_failure {
        let r = &job.retry;
        map.insert(
            "retry".into(),
            Canon::Object(BTreeMap::from([
                (
                    "backoffMultiplier".into(),
                    Canon::float(r.backoff_multiplier),
                ),
                ("initialDelay".into(), Canon::float(r.initial_delay)),
                ("maximumDelay".into(), Canon::float(r.maximum_delay)),
                ("maximumRetries".into(), Canon::int(r.maximum_retries)),
            ])),
        );
    }
    put("onFailure", on_failure);
    put("onPermanentFailure", hook(&job.on_permanent_failure));
    put("onSuccess", hook(&job.on_success));
    put(
        "onlyIfLastSucceeded",
        Canon::Bool(job.only_if_last_succeeded),
    );
    if job.priority != Priority::Normal {
        put("priority", Canon::str(enum_text(&job.priority)));
    }
    put("saveLimit", Canon::int(job.save_limit as i64));
    put("schedule", Canon::str(schedule_text(&job.schedule.text)));
    put("shell", Canon::str(job.shell.clone()));
    put(
        "statsd",
        Canon::opt(job.statsd.as_ref(), |s| {
            Canon::Object(BTreeMap::from([
                ("host".into(), Canon::str(s.host.clone())),
                ("port".into(), Canon::int(s.port)),
                ("prefix".into(), Canon::str(s.prefix.clone())),
            ]))
        }),
    );
    put("streamPrefix", Canon::str(job.stream_prefix.clone()));
    let frame = match (&job.schedule.timezone, job.schedule.utc) {
        (Some(tz), _) => Canon::str(tz.clone()),
        (None, true) => Canon::str("UTC"),
        (None, false) => Canon::Null,
    };
    put("timezone", frame);
    put("user", account_value(job.user.as_deref()));
    if let Some(verify) = &job.verify {
        // As written (a string or a list), with the default timeout filled
        // in: the original hashes its `verify` map as it holds it.
        let command = match &verify.command {
            Command::Shell(text) => Canon::str(text.clone()),
            Command::Argv(argv) => Canon::List(argv.iter().cloned().map(Canon::Str).collect()),
        };
        put(
            "verify",
            Canon::Object(BTreeMap::from([
                ("command".into(), command),
                ("timeout".into(), Canon::float(verify.timeout)),
            ])),
        );
    }
    if let Some(caps) = &job.resource_limits {
        // The normalized numbers, so `512M` and 536870912 hash alike.
        put(
            "resourceLimits",
            Canon::Object(BTreeMap::from([
                ("cpu".into(), Canon::opt(caps.cpu, Canon::float)),
                (
                    "memory".into(),
                    Canon::opt(caps.memory, |m| Canon::int(m as i64)),
                ),
                (
                    "processes".into(),
                    Canon::opt(caps.processes, |p| Canon::int(p as i64)),
                ),
                ("required".into(), Canon::Bool(caps.required)),
            ])),
        );
    }
    if let Some(pool) = &job.pool {
        // The original's composite: the pool options enter identity only
        // when a pool is set, so a job without one keeps its digest.
        put(
            "pool",
            Canon::Object(BTreeMap::from([
                ("name".into(), Canon::str(pool.name.clone())),
                ("priority".into(), Canon::int(pool.priority)),
                ("slots".into(), Canon::int(i64::from(pool.slots))),
                ("timeout".into(), Canon::float(pool.timeout)),
            ])),
        );
    }
    Canon::Object(o)
}

/// The serde name of an enum value (`Allow`, `below-normal`, ...).
fn enum_text<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

fn command_object(command: &Command) -> Canon {
    match command {
        Command::Shell(s) => Canon::Object(BTreeMap::from([(
            "shell_command".into(),
            Canon::str(s.clone()),
        )])),
        Command::Argv(args) => Canon::Object(BTreeMap::from([(
            "argv".into(),
            Canon::List(args.iter().cloned().map(Canon::Str).collect()),
        )])),
    }
}

/// The schedule as written with whitespace runs collapsed (the object form
/// is already assembled into crontab text).
fn schedule_text(schedule: &str) -> String {
    schedule.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `user`/`group` as the original types them: an integer when the text is
/// integer-shaped (quoted or not), otherwise the name.
fn account_value(value: Option<&str>) -> Canon {
    match value {
        None => Canon::Null,
        Some(text) => {
            let digits = text.trim().replace('_', "");
            let body = digits.strip_prefix(['+', '-']).unwrap_or(&digits);
            if !body.is_empty() && body.chars().all(|c| c.is_ascii_digit()) {
                let negative = digits.starts_with('-');
                let trimmed = body.trim_start_matches('0');
                let magnitude = if trimmed.is_empty() { "0" } else { trimmed };
                let sign = if negative && magnitude != "0" {
                    "-"
                } else {
                    ""
                };
                Canon::Number(format!("{sign}{magnitude}"))
            } else {
                Canon::str(text)
            }
        }
    }
}

/// A hook's `{"report": ...}` block: the built-in block with the job's
/// settings merged over it, secrets redacted, and the reporters that
/// post-date the scheme kept only when they differ from their defaults.
fn hook_object(report: Option<&Report>, defaults: &Canon) -> Canon {
    let mut merged = defaults.clone();
    let mut extra_blocks: Vec<(&'static str, Canon)> = Vec::new();
    if let Some(report) = report {
        let written = serde_json::to_value(report)
            .map(|v| Canon::from_json(&v))
            .unwrap_or(Canon::Null);
        if let Canon::Object(mut blocks) = written {
            for (key, default) in [("push", push_default()), ("eventlog", eventlog_default())] {
                if let Some(block) = blocks.remove(key) {
                    let mut full = default.clone();
                    full.merge(block);
                    if full != default {
                        extra_blocks.push((key, full));
                    }
                }
            }
            merged.merge(Canon::Object(blocks));
        }
    }
    redact(&mut merged);
    if let Some(Canon::Object(shell)) = merged.get_mut("shell") {
        if shell.get("timeout") == Some(&Canon::Number("60".into())) {
            shell.remove("timeout");
        }
    }
    if let Canon::Object(map) = &mut merged {
        for (key, block) in extra_blocks {
            map.insert(Key::Borrowed(key), block);
        }
    }
    Canon::Object(BTreeMap::from([("report".into(), merged)]))
}

fn push_default() -> Canon {
    Canon::Object(BTreeMap::from([
        ("enabled".into(), Canon::Bool(false)),
        ("includeLogTail".into(), Canon::Bool(true)),
        ("priority".into(), Canon::str("time-sensitive")),
    ]))
}

fn eventlog_default() -> Canon {
    Canon::Object(BTreeMap::from([
        ("enabled".into(), Canon::Bool(false)),
        ("includeOutput".into(), Canon::Bool(false)),
        ("source".into(), Canon::str("cronstable")),
    ]))
}

/// Replaces inline secrets (and every webhook header value) with a marker,
/// so the id never carries a secret.
fn redact(report: &mut Canon) {
    const MARK: &str = "<redacted>";
    for (block, field) in [("sentry", "dsn"), ("mail", "password"), ("webhook", "url")] {
        if let Some(value) = report
            .get_mut(block)
            .and_then(|b| b.get_mut(field))
            .and_then(|s| s.get_mut("value"))
        {
            if *value != Canon::Null {
                *value = Canon::str(MARK);
            }
        }
    }
    if let Some(Canon::Object(headers)) =
        report.get_mut("webhook").and_then(|w| w.get_mut("headers"))
    {
        for value in headers.values_mut() {
            *value = Canon::str(MARK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_set_hashes_the_bare_scheme_line() {
        assert_eq!(
            job_set_id(&[]),
            "v1:2d27fbdf4e8ca207afbfa388ca9172fbcc6c70e534af2476b3b704f87debadcf"
        );
    }

    #[test]
    fn account_values_are_integers_when_integer_shaped() {
        assert_eq!(account_value(Some("65534")), Canon::Number("65534".into()));
        assert_eq!(account_value(Some("0100")), Canon::Number("100".into()));
        assert_eq!(account_value(Some("+5")), Canon::Number("5".into()));
        assert_eq!(account_value(Some("root")), Canon::str("root"));
        assert_eq!(account_value(None), Canon::Null);
    }

    #[test]
    fn hex_digests_are_lowercase_and_complete() {
        // SHA-256 of "abc" (FIPS 180-2 example).
        assert_eq!(
            hex_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let digest = Sha256::digest(b"cronstable");
        let by_format: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex_sha256(b"cronstable"), by_format);
    }

    #[test]
    fn a_large_set_hashed_over_threads_gives_each_job_its_own_digest_in_order() {
        let mut yaml = String::from("jobs:\n");
        for i in 0..3 * PARALLEL_CHUNK + 17 {
            yaml.push_str(&format!(
                "  - name: job-{i}\n    command: echo {i}\n    schedule: '{} * * * *'\n",
                i % 60
            ));
        }
        let loaded = crate::config::load_sources(&[crate::config::Source {
            name: "many.yaml".into(),
            text: yaml,
            kind: crate::config::SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("the generated config loads");
        let digests = job_digests(&loaded.jobs);
        // One job at a time never takes the threaded path.
        let one_by_one: Vec<String> = loaded
            .jobs
            .iter()
            .flat_map(|job| job_digests(std::iter::once(job)))
            .collect();
        assert_eq!(digests.len(), loaded.jobs.len());
        assert_eq!(digests, one_by_one);
        assert_eq!(job_set_id(&loaded.jobs), id_from_digests(one_by_one));
    }

    #[test]
    fn legacy_defaults_parse() {
        let defaults = legacy_report_defaults();
        let mut out = String::new();
        defaults.write(&mut out);
        assert_eq!(out, LEGACY_REPORT_DEFAULTS);
    }
}
