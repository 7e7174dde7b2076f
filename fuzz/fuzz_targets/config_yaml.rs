//! Loads arbitrary text as an in-memory config: as a YAML document, as a
//! classic crontab and, when it holds a NUL, as two YAML documents loaded
//! together (the cross-source rules). Errors are fine; a panic is not.
#![no_main]

use cronstable::config::{load_sources, Source, SourceKind};
use libfuzzer_sys::fuzz_target;

fn source(name: &str, text: &str, kind: SourceKind) -> Source {
    Source {
        name: name.to_owned(),
        text: text.to_owned(),
        kind,
        // In-memory sources have no directory: includes are refused.
        include_dir: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = load_sources(&[source("fuzz.yaml", text, SourceKind::Yaml)]);
    let _ = load_sources(&[source("fuzz.crontab", text, SourceKind::Crontab)]);
    if let Some((first, second)) = text.split_once('\0') {
        let _ = load_sources(&[
            source("a.yaml", first, SourceKind::Yaml),
            source("b.yaml", second, SourceKind::Yaml),
        ]);
    }
});
