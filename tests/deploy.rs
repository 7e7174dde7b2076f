//! deploy/ (the install without Helm) and deploy/examples, checked offline
//! with the real tools: kubernetes-validate --strict for the oldest and
//! newest supported Kubernetes, object-by-object equality with the chart's
//! render (deploy/ with the defaults, three-replicas.yaml with
//! `replicaCount: 3`), every example CronJobSet against the CRD's schema
//! and every example config through the built daemon's `-v`, and checkov
//! over the rendered chart, deploy/ and the examples with each skipped
//! check listed with its reason in .ci/checkov-skips.yaml.
//!
//! The checks live in scripts/deploy_test.py; scripts/test.sh installs
//! helm, kubernetes-validate (which brings jsonschema) and checkov. Without
//! them the test skips with a note, except under CI=true where it fails.
//! One check needs no tool: every document `kubectl apply -f deploy/` (and
//! each example) applies is a Kubernetes object.

mod support;

#[test]
fn deploy_manifests_match_the_chart_validate_and_pass_checkov() {
    support::scripts::run_check_script("deploy_test.py");
}

/// The files `kubectl apply -f <dir>` reads: the directory's own `.yaml`,
/// `.yml` and `.json` files (not its subdirectories; no `-R`).
fn applied_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    files
}

/// `kubectl apply -f deploy/` (docs/kubernetes.md) applies every file in
/// deploy/, and the docs apply each example on its own: every YAML
/// document there must be a Kubernetes object (apiVersion, kind and a
/// name), or the apply fails. Tool files belong elsewhere (.ci/).
#[test]
fn every_document_under_deploy_is_a_kubernetes_object() {
    use serde::Deserialize;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let mut files = applied_files(&root);
    files.extend(applied_files(&root.join("examples")));
    assert!(files.len() >= 6, "deploy/ and its examples: {files:?}");
    let mut objects = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read a manifest");
        for (index, document) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let value = serde_yaml::Value::deserialize(document)
                .unwrap_or_else(|e| panic!("{}: document {index}: {e}", file.display()));
            if value.is_null() {
                // An empty document (a comment or a bare `---`): kubectl
                // skips it too.
                continue;
            }
            let field = |key: &str| -> Option<&str> {
                value
                    .get(key)
                    .and_then(serde_yaml::Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            let name = value
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(serde_yaml::Value::as_str)
                .filter(|s| !s.is_empty());
            assert!(
                field("apiVersion").is_some() && field("kind").is_some() && name.is_some(),
                "{} document {index} is not a Kubernetes object (apiVersion, kind, \
                 metadata.name), so `kubectl apply -f` fails on it",
                file.display()
            );
            objects += 1;
        }
    }
    assert!(objects >= 10, "only {objects} objects found in {files:?}");
}
