//! Reads arbitrary bytes as the JSON spec of a `CronJobSet`, the way the
//! Kubernetes source does (schema check, conversion to config text, load
//! against the sections of the config it joins). Refusing is fine; a
//! panic is not. What loads must carry the set's names: every job is
//! `<namespace>:<set>:<job>`, exactly the names the conversion reported,
//! so two sets never share a job name.
#![no_main]

use cronstable::config::{load_jobs_against, load_sources, LoadedConfig, Source, SourceKind};
use cronstable::kube::{job_name, to_source, CronJobSet, CronJobSetSpec};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// Sections a set may be checked against: none, and a config with state
/// and a web section (jobs naming secrets or state scopes need them).
fn configs() -> &'static [LoadedConfig; 2] {
    static CONFIGS: OnceLock<[LoadedConfig; 2]> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let with_sections = load_sources(&[Source {
            name: "configmap/cronstable:config.yaml".to_owned(),
            text:
                "state:\n  path: /var/lib/cronstable\nweb:\n  listen: [\"http://127.0.0.1:8080\"]\n"
                    .to_owned(),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("the fuzz target's sections load");
        [LoadedConfig::default(), with_sections]
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(spec) = serde_json::from_value::<CronJobSetSpec>(value) else {
        return;
    };
    let mut set = CronJobSet::new("nightly", spec);
    set.metadata.namespace = Some("batch".to_owned());
    let Ok(converted) = to_source(&set) else {
        return;
    };
    for (own, scheduled) in &converted.jobs {
        assert_eq!(*scheduled, job_name("batch", "nightly", own));
    }
    for config in configs() {
        let Ok(loaded) =
            load_jobs_against(std::slice::from_ref(&converted.source), &config.sections)
        else {
            continue;
        };
        let loaded_names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
        let reported: Vec<&str> = converted.jobs.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            loaded_names, reported,
            "the loaded jobs are not the ones the conversion named"
        );
        for name in loaded_names {
            assert!(
                name.starts_with("batch:nightly:"),
                "job {name:?} lacks the set's prefix"
            );
        }
    }
});
