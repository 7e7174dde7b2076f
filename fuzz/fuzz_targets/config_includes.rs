//! Loads a config whose `include:` entries resolve in memory: the input is
//! split at NULs into a main YAML source and up to four files it (or they)
//! may include, at fixed paths. Errors are fine (cycles, missing files,
//! the nesting and read limits); a panic, a stack overflow or a load that
//! does not end is not. What loads must keep the loader's promises: job
//! names unique, every job from one of the given texts.
#![no_main]

use cronstable::config::{load_sources_with_files, FileMap, Source, SourceKind};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where the parts after the main source live (the main source includes
/// from /cfg). A crontab among them exercises crontab includes.
const PATHS: [&str; 4] = [
    "/cfg/a.yaml",
    "/cfg/inc/b.yaml",
    "/cfg/inc/c.crontab",
    "/cfg/d.yaml",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let main = parts.next().unwrap_or_default();
    let files: FileMap = PATHS
        .iter()
        .zip(parts)
        .map(|(path, text)| (PathBuf::from(path), text.to_owned()))
        .collect();
    let source = Source {
        name: "/cfg/main.yaml".to_owned(),
        text: main.to_owned(),
        kind: SourceKind::Yaml,
        include_dir: Some(PathBuf::from("/cfg")),
    };
    let Ok(loaded) = load_sources_with_files(&[source], &files) else {
        return;
    };
    let mut names = HashSet::new();
    for job in &loaded.jobs {
        assert!(
            names.insert(job.name.as_str()),
            "duplicate job {}",
            job.name
        );
        let origin = Path::new(&job.origin.source);
        assert!(
            origin == Path::new("/cfg/main.yaml")
                || files.keys().any(|p| p == origin)
                || loaded.files.iter().any(|p| p == origin),
            "job {} comes from {}, which was never read",
            job.name,
            origin.display()
        );
    }
    assert!(loaded.files.len() <= cronstable::config::MAX_INCLUDE_READS);
});
