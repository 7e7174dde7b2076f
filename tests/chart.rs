//! The Helm chart (charts/cronstable), checked offline with the real tools:
//! `helm lint --strict` per ci/ values file, `helm template` validated by
//! `kubernetes-validate --strict` for the oldest and newest supported
//! Kubernetes, and assertions on the rendered objects (restricted pod
//! security, exact RBAC, the config in the ConfigMap, the Lease section and
//! PDB with replicas, the CRD copy identical to crds/cronjobset.yaml, the
//! state claim with its volume, mount, `state:` section and strategy, and
//! the refusals: replicas on a ReadWriteOnce claim, a bad access mode), and
//! the config each ci/ file renders passes the built daemon's `-v`.
//!
//! The checks live in scripts/chart_test.py (they parse YAML, which Python
//! does with the same library kubernetes-validate uses); scripts/test.sh
//! installs helm and kubernetes-validate. Without them the test skips with a
//! note, except under CI=true where it fails.

mod support;

#[test]
fn chart_lints_renders_validates_and_holds_its_promises() {
    support::scripts::run_check_script("chart_test.py");
}
