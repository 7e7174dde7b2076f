//! Turns a `CronJobSet` into config text the loader reads, so a set goes
//! through exactly the checks a YAML file does.
//!
//! Naming: a job `J` of the set `S` in namespace `N` is scheduled as
//! `N:S:J`. Kubernetes names never contain `:` (namespaces are DNS labels,
//! set names DNS subdomains), so two different (namespace, set, job)
//! triples never give the same name, whatever the job names hold. The name
//! stays the same across edits of the set, reads like a path, and needs no
//! escaping in `/jobs/{name}` or as a Prometheus label value. A dot would
//! read better but is legal inside set names (`a.b` + `c` and `a` + `b.c`
//! would collide). The `H` form of a schedule is seeded by this full name,
//! as for every job, so the same job in two namespaces spreads differently.

use super::crd::CronJobSet;
use crate::config::load::{Source, SourceKind};
use serde_json::{Map, Value};

/// A set that cannot be turned into config text.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The object lacks a name or a namespace (never so for an object read
    /// from the API server).
    #[error("a CronJobSet needs metadata.{0}")]
    Metadata(&'static str),
    /// The spec could not be written out as YAML.
    #[error("cronjobset/{namespace}/{name}: cannot write the spec as YAML: {reason}")]
    Yaml {
        /// The set's namespace.
        namespace: String,
        /// The set's name.
        name: String,
        /// The serializer's message.
        reason: String,
    },
}

/// The set converted: one YAML source, plus what the source cannot say.
#[derive(Debug, Clone)]
pub struct SetSource {
    /// The YAML config source: the set's `defaults:` and its `jobs:` with
    /// scheduler names (see [`job_name`]).
    pub source: Source,
    /// `spec.suspend`: the scheduler skips this set's scheduled fires.
    pub suspend: bool,
    /// (name in the set, name in the scheduler) for every named job, in
    /// order: what status writing maps results back with.
    pub jobs: Vec<(String, String)>,
}

/// The scheduler's name of job `job` of set `set` in `namespace`.
pub fn job_name(namespace: &str, set: &str, job: &str) -> String {
    format!("{namespace}:{set}:{job}")
}

/// The source name errors and job origins show for a set.
pub fn source_name(namespace: &str, set: &str) -> String {
    format!("cronjobset/{namespace}/{set}")
}

/// Converts a set into a YAML source for `load_sources`. Pure: the same
/// object always gives the same text. Shape errors inside jobs are left to
/// the loader, whose message then names the object, the job and the key.
pub fn to_source(set: &CronJobSet) -> Result<SetSource, ConvertError> {
    let namespace = set
        .metadata
        .namespace
        .as_deref()
        .ok_or(ConvertError::Metadata("namespace"))?;
    let name = set
        .metadata
        .name
        .as_deref()
        .ok_or(ConvertError::Metadata("name"))?;
    let mut document = Map::new();
    if let Some(defaults) = &set.spec.defaults {
        document.insert("defaults".to_owned(), defaults.clone());
    }
    let mut names = Vec::new();
    let mut jobs = Vec::with_capacity(set.spec.jobs.len());
    for job in &set.spec.jobs {
        let mut job = job.clone();
        // A job without a scalar name is left as is: the loader's message
        // about it names the object and the key.
        if let Value::Object(map) = &mut job {
            // The loader reads a number or a boolean as its text (lenient
            // scalars), so those names are prefixed too: left alone, `5`
            // would run as `5`, outside the set's names.
            let own = match map.get("name") {
                Some(Value::String(text)) => Some(text.clone()),
                Some(scalar @ (Value::Number(_) | Value::Bool(_))) => Some(scalar.to_string()),
                _ => None,
            };
            if let Some(own) = own {
                let scheduled = job_name(namespace, name, &own);
                // Every `$` doubled: the loader's `${VAR}` expansion turns
                // `$$` back into `$`, so the name that runs is the one
                // reported here (status is matched by it), whatever the
                // daemon's environment holds.
                map.insert(
                    "name".to_owned(),
                    Value::String(scheduled.replace('$', "$$")),
                );
                names.push((own, scheduled));
            }
        }
        jobs.push(job);
    }
    document.insert("jobs".to_owned(), Value::Array(jobs));
    let text = serde_yaml::to_string(&Value::Object(document)).map_err(|e| ConvertError::Yaml {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(SetSource {
        source: Source {
            name: source_name(namespace, name),
            text,
            kind: SourceKind::Yaml,
            include_dir: None,
        },
        suspend: set.spec.suspend.unwrap_or(false),
        jobs: names,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load::load_sources;
    use crate::kube::crd::CronJobSetSpec;

    fn set(namespace: &str, name: &str, spec_yaml: &str) -> CronJobSet {
        let spec: CronJobSetSpec = serde_yaml::from_str(spec_yaml).expect("a spec");
        let mut set = CronJobSet::new(name, spec);
        set.metadata.namespace = Some(namespace.to_owned());
        set
    }

    const NIGHTLY: &str = r#"
defaults:
  environment:
    - key: TIER
      value: batch
  killTimeout: 5
  workingDirectory: /tmp
jobs:
  - name: backup
    command: echo backup
    schedule: "H 2 * * *"
    concurrencyPolicy: Forbid
    onFailure:
      retry:
        maximumRetries: 2
        initialDelay: 1
        maximumDelay: 30
        backoffMultiplier: 2
  - name: report
    command: [/bin/echo, report]
    schedule:
      minute: "*/5"
    workingDirectory: null
suspend: true
"#;

    /// A set loads like a file: names are prefixed, defaults apply, an
    /// explicit `null` still clears a default, and suspend is carried.
    #[test]
    fn a_set_converts_and_loads() {
        let converted = to_source(&set("batch", "nightly", NIGHTLY)).expect("converts");
        assert_eq!(converted.source.name, "cronjobset/batch/nightly");
        assert!(converted.suspend);
        assert_eq!(
            converted.jobs,
            vec![
                ("backup".to_owned(), "batch:nightly:backup".to_owned()),
                ("report".to_owned(), "batch:nightly:report".to_owned()),
            ]
        );
        let loaded = load_sources(&[converted.source]).expect("the set loads");
        let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["batch:nightly:backup", "batch:nightly:report"]);
        let backup = &loaded.jobs[0];
        assert_eq!(backup.kill_timeout, 5.0, "{backup:?}");
        assert!(
            backup
                .environment
                .iter()
                .any(|(k, v)| k == "TIER" && v == "batch"),
            "{backup:?}"
        );
        assert_eq!(
            backup.working_directory.as_deref(),
            Some(std::path::Path::new("/tmp"))
        );
        assert_eq!(loaded.jobs[1].working_directory, None);
    }

    /// The same job in two sets or namespaces gets two names, and the
    /// separator cannot be forged by a dotted set name.
    #[test]
    fn names_are_unique_across_sets_and_namespaces() {
        let one = "jobs: [{name: a.b, command: 'true', schedule: '* * * * *'}]";
        let sources: Vec<Source> = [("n1", "s"), ("n2", "s"), ("n1", "s.a")]
            .iter()
            .map(|(ns, name)| to_source(&set(ns, name, one)).expect("converts").source)
            .collect();
        let loaded = load_sources(&sources).expect("no duplicate names");
        let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["n1:s:a.b", "n2:s:a.b", "n1:s.a:a.b"]);
        assert_ne!(job_name("n", "a.b", "c"), job_name("n", "a", "b.c"));
    }

    /// A bad set is refused by the loader with the object, the job and the
    /// key in the message.
    #[test]
    fn a_bad_set_names_the_object_the_job_and_the_key() {
        let bad = "jobs: [{name: broken, command: 'true', schedule: '* * * * *', killTimeout: -1}]";
        let converted = to_source(&set("team-a", "bad", bad)).expect("converts");
        let err = load_sources(&[converted.source])
            .expect_err("refused")
            .to_string();
        // The number after the object is a line of the generated text.
        assert_eq!(
            err,
            "cronjobset/team-a/bad:4: job 'team-a:bad:broken': killTimeout: must be >= 0"
        );
    }

    /// `H` is seeded by the full scheduler name: the loaded schedule is the
    /// one the engine resolves for `N:S:J`, not for the bare job name.
    #[test]
    fn h_is_seeded_by_the_full_name() {
        let converted = to_source(&set("batch", "nightly", NIGHTLY)).expect("converts");
        let loaded = load_sources(&[converted.source]).expect("the set loads");
        let resolved =
            |schedule: &crate::cronexpr::Schedule| schedule.cron().map(|c| c.resolved().to_owned());
        let with_key = |key: &str| {
            resolved(&crate::cronexpr::Schedule::parse("H 2 * * *", key).expect("parses"))
        };
        let loaded_slot = resolved(&loaded.jobs[0].schedule.parsed);
        assert_eq!(loaded_slot, with_key("batch:nightly:backup"));
        // The bare name or another namespace lands elsewhere (checked, so
        // the comparison above can tell seeds apart).
        assert_ne!(loaded_slot, with_key("backup"));
        assert_ne!(loaded_slot, with_key("other:nightly:backup"));
    }

    /// A set means what the same YAML means in a file: an explicit `null`
    /// (here: a shell reporter switched off) survives the conversion.
    #[test]
    fn explicit_nulls_are_kept() {
        let spec = "jobs: [{name: a, command: 'true', schedule: '@daily', \
                    onSuccess: {report: {shell: {command: null}}}}]";
        let converted = to_source(&set("ns", "s", spec)).expect("converts");
        assert!(
            converted.source.text.contains("command: null"),
            "{}",
            converted.source.text
        );
        load_sources(&[converted.source]).expect("a null shell command loads");
    }

    /// A set without a namespace is refused before the loader.
    #[test]
    fn metadata_is_required() {
        let mut object = set("ns", "x", "jobs: []");
        object.metadata.namespace = None;
        let err = to_source(&object).expect_err("no namespace");
        assert!(err.to_string().contains("metadata.namespace"), "{err}");
    }

    /// Found by the `cronjobset` fuzz target: a `$$` in a job's name was
    /// expanded by the loader, so the name that ran (`a$b`) was not the
    /// one reported for status (`a$$b`). Names are now taken literally,
    /// `${VAR}` included, and a numeric or boolean name is prefixed too.
    #[test]
    fn names_are_literal_and_always_prefixed() {
        let spec = r#"{"jobs": [
            {"name": "a$$b", "command": "true", "schedule": "@daily"},
            {"name": "x${HOME}", "command": "true", "schedule": "@daily"},
            {"name": 5, "command": "true", "schedule": "@daily"},
            {"name": true, "command": "true", "schedule": "@daily"}]}"#;
        let converted = to_source(&set("ns", "s", spec)).expect("converts");
        let reported: Vec<&str> = converted.jobs.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            reported,
            ["ns:s:a$$b", "ns:s:x${HOME}", "ns:s:5", "ns:s:true"]
        );
        let loaded = load_sources(&[converted.source]).expect("the set loads");
        let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, reported);
    }
}
