//! deploy/ (the install without Helm) and deploy/examples, checked offline
//! with the real tools: kubernetes-validate --strict for the oldest and
//! newest supported Kubernetes, object-by-object equality with the chart's
//! render (deploy/ with the defaults, three-replicas.yaml with
//! `replicaCount: 3`), every example CronJobSet against the CRD's schema
//! and every example config through the built daemon's `-v`, and checkov
//! over the rendered chart, deploy/ and the examples with each skipped
//! check listed with its reason in deploy/checkov-skips.yaml.
//!
//! The checks live in scripts/deploy_test.py; scripts/test.sh installs
//! helm, kubernetes-validate (which brings jsonschema) and checkov. Without
//! them the test skips with a note, except under CI=true where it fails.

mod support;

#[test]
fn deploy_manifests_match_the_chart_validate_and_pass_checkov() {
    support::scripts::run_check_script("deploy_test.py");
}
