//! The CronJobSet CRD: `cronstable crd` prints exactly the committed
//! `crds/cronjobset.yaml`, the CRD is a valid CustomResourceDefinition for
//! every supported Kubernetes minor (kubernetes-validate), and its schema
//! accepts the shipped example and refuses bad objects (a real JSON-schema
//! validator, Python's `jsonschema`).
//!
//! After changing the job types, regenerate the committed file with
//! `cargo run -q -- crd > crds/cronjobset.yaml` and review the diff.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn under_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// True when `program --help` runs; under CI a missing tool fails the test
/// (scripts/test.sh installs it), elsewhere the caller skips with a note.
fn have(program: &str, args: &[&str]) -> bool {
    let ok = Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !under_ci(),
            "{program} is missing (scripts/test.sh installs it with pip)"
        );
        eprintln!("skipping: {program} is not available (pip install kubernetes-validate)");
    }
    ok
}

#[test]
fn crd_subcommand_prints_the_committed_crd() {
    let run = support::cli::cronstable(&["crd"], &repo());
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let committed = std::fs::read_to_string(repo().join("crds/cronjobset.yaml"))
        .expect("crds/cronjobset.yaml is committed");
    assert!(
        run.stdout == committed,
        "crds/cronjobset.yaml is stale; regenerate it with \
         `cargo run -q -- crd > crds/cronjobset.yaml`"
    );
    for needle in [
        "name: cronjobsets.cronstable.io",
        "kind: CronJobSet",
        "- cjs",
        "scope: Namespaced",
        "name: v1alpha1",
        "status: {}",
    ] {
        assert!(run.stdout.contains(needle), "no `{needle}` in the CRD");
    }
}

/// The minors kubernetes-validate ships schemas for, from 1.28 up.
fn kubernetes_minors() -> Vec<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import kubernetes_validate, os\n\
             d = os.path.join(os.path.dirname(kubernetes_validate.__file__), 'kubernetes-json-schema')\n\
             print('\\n'.join(sorted(n[1:].split('-')[0] for n in os.listdir(d) if n.endswith('-local-strict'))))",
        ])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut minors: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|v| {
            let minor: u32 = v
                .split('.')
                .nth(1)
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
            v.starts_with("1.") && minor >= 28
        })
        .map(str::to_owned)
        .collect();
    minors.sort_by_key(|v| v.split('.').nth(1).and_then(|m| m.parse::<u32>().ok()));
    minors
}

#[test]
fn crd_is_valid_for_every_supported_kubernetes_minor() {
    if !have("kubernetes-validate", &["--help"]) {
        return;
    }
    let minors = kubernetes_minors();
    assert!(
        minors.iter().any(|v| v == "1.28.0") && minors.len() >= 2,
        "expected 1.28 and newer minors, found {minors:?}"
    );
    for version in &minors {
        let out = Command::new("kubernetes-validate")
            .args(["--strict", "-k", version, "crds/cronjobset.yaml"])
            .current_dir(repo())
            .output()
            .expect("kubernetes-validate runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "Kubernetes {version}: {text}");
        assert!(text.contains("passed"), "Kubernetes {version}: {text}");
    }
}

/// Validates every document of `manifest` against the CRD's schema the way
/// the API server applies it: `nullable` admits null, and unknown fields
/// are refused (kubectl's strict field validation) except under
/// `x-kubernetes-preserve-unknown-fields`, and a list keyed by
/// `x-kubernetes-list-map-keys` refuses two items with the same key. Prints one line per document:
/// `ok` or `refused: <reason>`.
const VALIDATOR: &str = r#"
import sys, yaml, jsonschema
crd = yaml.safe_load(open(sys.argv[1]))
schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
def api_server(node):
    if isinstance(node, list):
        return [api_server(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: api_server(v) for k, v in node.items()}
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        node["additionalProperties"] = False
    if node.pop("nullable", False):
        if "type" in node:
            node["type"] = [node["type"], "null"]
        if "enum" in node:
            node["enum"] = node["enum"] + [None]
    return node
def duplicate_keys(node, value, path):
    # x-kubernetes-list-type: map, which JSON schema cannot say: the
    # listed key fields identify an item, so two items may not share them.
    if not isinstance(node, dict):
        return None
    if isinstance(value, list) and node.get("x-kubernetes-list-type") == "map":
        seen = set()
        for item in value:
            key = tuple(item.get(k) for k in node["x-kubernetes-list-map-keys"]) if isinstance(item, dict) else None
            if key in seen:
                return path + ": Duplicate value: " + repr(key)
            seen.add(key)
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            found = duplicate_keys(node["items"], item, path + "/" + str(i))
            if found:
                return found
    if isinstance(value, dict):
        for name, child in node.get("properties", {}).items():
            if name in value:
                found = duplicate_keys(child, value[name], (path + "/" if path else "") + name)
                if found:
                    return found
    return None
validator = jsonschema.Draft4Validator(api_server(schema))
for doc in yaml.safe_load_all(open(sys.argv[2])):
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    duplicate = duplicate_keys(schema, doc, "")
    if errors:
        e = errors[0]
        print("refused: " + "/".join(str(p) for p in e.path) + ": " + e.message)
    elif duplicate:
        print("refused: " + duplicate)
    else:
        print("ok")
"#;

fn validate(manifest: &Path) -> Vec<String> {
    let out = Command::new("python3")
        .args(["-c", VALIDATOR])
        .arg(repo().join("crds/cronjobset.yaml"))
        .arg(manifest)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether Python's jsonschema and PyYAML are here. Under CI they must be
/// (scripts/test.sh installs kubernetes-validate, which brings both), so a
/// missing validator fails the run instead of skipping the schema checks.
fn have_jsonschema() -> bool {
    let here = have("python3", &["-c", "import jsonschema, yaml"]);
    assert!(
        here || std::env::var("CI").as_deref() != Ok("true"),
        "python3 with jsonschema and PyYAML is required under CI=true \
         (scripts/test.sh installs kubernetes-validate, which brings them)"
    );
    if !here {
        eprintln!("skipping the JSON-schema checks: python3 jsonschema/yaml not installed");
    }
    here
}

#[test]
fn the_example_cronjobset_fits_the_schema_and_loads() {
    let example = repo().join("examples/cronjobset.yaml");
    let text = std::fs::read_to_string(&example).expect("the example is committed");
    // The loader takes it, under the names the scheduler uses.
    let set: cronstable::kube::CronJobSet = serde_yaml::from_str(&text).expect("a CronJobSet");
    let converted = cronstable::kube::to_source(&set).expect("converts");
    let loaded = cronstable::config::load_sources(&[converted.source]).expect("loads");
    let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        ["team-a:nightly:backup", "team-a:nightly:prune-logs"]
    );
    if have_jsonschema() {
        assert_eq!(validate(&example), ["ok"]);
    }
}

#[test]
fn the_schema_refuses_bad_objects() {
    if !have_jsonschema() {
        return;
    }
    let head = "apiVersion: cronstable.io/v1alpha1\nkind: CronJobSet\nmetadata: {name: x, namespace: y}\nspec:\n";
    let job = "name: a, command: 'true', schedule: '* * * * *'";
    let cases = [
        // A lenient scalar the YAML loader would take: the API is strict.
        (
            "wrong type",
            format!("  jobs: [{{{job}, captureStdout: 'yes'}}]"),
            "captureStdout",
        ),
        (
            "unknown field",
            format!("  jobs: [{{{job}, retries: 3}}]"),
            "retries",
        ),
        (
            "bad enum",
            format!("  jobs: [{{{job}, concurrencyPolicy: Sometimes}}]"),
            "Sometimes",
        ),
        (
            "below minimum",
            format!("  jobs: [{{{job}, killTimeout: -1}}]"),
            "killTimeout",
        ),
        (
            "missing command",
            "  jobs: [{name: a, schedule: '* * * * *'}]".to_owned(),
            "command",
        ),
        (
            "suspend not a boolean",
            "  suspend: 1\n  jobs: []".to_owned(),
            "suspend",
        ),
        ("no spec", String::new(), "spec"),
        ("schedule in defaults", "  defaults: {schedule: '@daily'}\n  jobs: []".to_owned(), "schedule"),
        ("duplicate job name", format!("  jobs: [{{{job}}}, {{{job}}}]"), "Duplicate value: ('a',)"),
        ("empty job name", "  jobs: [{name: '', command: 'true', schedule: '@daily'}]".to_owned(), "name"),
        ("bad retry bound", format!("  jobs: [{{{job}, onFailure: {{retry: {{maximumRetries: 1, initialDelay: 1, maximumDelay: 0, backoffMultiplier: 2}}}}}}]"), "maximumDelay"),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = dir.path().join("bad.yaml");
    let documents: Vec<String> = cases
        .iter()
        .map(|(_, body, _)| {
            if body.is_empty() {
                head.trim_end_matches("spec:\n").to_owned()
            } else {
                format!("{head}{body}\n")
            }
        })
        .collect();
    std::fs::write(&manifest, documents.join("---\n")).expect("write manifest");
    let verdicts = validate(&manifest);
    assert_eq!(verdicts.len(), cases.len(), "{verdicts:?}");
    for ((what, _, needle), verdict) in cases.iter().zip(&verdicts) {
        assert!(verdict.starts_with("refused: "), "{what}: accepted");
        assert!(verdict.contains(needle), "{what}: {verdict}");
    }
}
