//! One test per combination the daemon can meet at start: no cluster
//! section; each backend; with and without `state.path`; with `--kube`.

use super::*;
use crate::config::model::{ClusterConfig, StateConfig};
use crate::config::sections::Located;

const HOST: &str = "the-host";

fn sections(state: Option<&str>, cluster: Option<&str>) -> Sections {
    Sections {
        state: state.map(|yaml| Located {
            value: serde_yaml::from_str::<StateConfig>(yaml).expect("a state section"),
            source: "test.yaml".into(),
        }),
        cluster: cluster.map(|yaml| Located {
            value: serde_yaml::from_str::<ClusterConfig>(yaml).expect("a cluster section"),
            source: "test.yaml".into(),
        }),
        ..Sections::default()
    }
}

/// The lease settings a section resolves to (what the supervisor hands
/// the backend factory).
fn lease_settings(s: &Sections) -> ClusterSettings {
    let section = &s.cluster.as_ref().expect("a cluster section").value;
    match cluster::resolve(section, HOST) {
        Ok(Resolved::Lease { settings, .. }) => *settings,
        other => panic!("not a lease section: {other:?}"),
    }
}

const STATE: &str = "path: /srv/state\ndeploymentId: blue\nslotTtlSeconds: 30\n";
const KUBERNETES: &str =
    "backend: kubernetes\nnodeName: node-a\nconnectTimeout: 7\nkubernetes:\n  leaseName: crons\n";
const ETCD: &str = "backend: etcd\nnodeName: node-a\nconnectTimeout: 7\netcd:\n  endpoints: [http://127.0.0.1:2379]\n  electionName: crons\n";
const FILESYSTEM: &str = "backend: filesystem\nnodeName: node-a\nconnectTimeout: 7\nfilesystem:\n  path: /mnt/shared\n  deploymentId: green\n";
const GOSSIP: &str = "listen: '0.0.0.0:8443'\ntls: {ca: /c/ca.pem, cert: /c/a.pem, key: /c/a.key}\nnodeName: node-g\npeers:\n  - host: 'b.internal:8443'\n";

fn directory(path: &str, deployment_id: &str) -> SlotStorePlan {
    SlotStorePlan::Directory {
        path: path.into(),
        deployment_id: deployment_id.into(),
    }
}

#[test]
fn no_cluster_and_no_state_plan_no_slot_store() {
    assert_eq!(plan(&sections(None, None), HOST, false).slots, None);
    assert_eq!(plan(&sections(None, None), HOST, true).slots, None);
}

#[test]
fn state_path_alone_keeps_slots_in_its_directory_under_the_host_name() {
    let slots = plan(&sections(Some(STATE), None), HOST, false)
        .slots
        .expect("a slot store");
    assert_eq!(slots.store, directory("/srv/state", "blue"));
    assert_eq!(slots.node, HOST);
    assert_eq!(slots.settings.ttl, 30.0);
    assert!(!slots.settings.fail_closed);
}

#[test]
fn state_without_a_deployment_id_uses_default() {
    let s = sections(Some("path: /srv/state\ndeploymentId: ''\n"), None);
    let slots = plan(&s, HOST, false).slots.expect("a slot store");
    assert_eq!(slots.store, directory("/srv/state", "default"));
}

#[test]
fn state_without_a_path_and_no_cluster_plan_no_slot_store() {
    let s = sections(Some("onStoreUnavailable: fail-closed\n"), None);
    assert_eq!(plan(&s, HOST, false).slots, None);
}

#[test]
fn kubernetes_backend_keeps_slots_in_leases_with_its_own_client() {
    let s = sections(None, Some(KUBERNETES));
    let slots = plan(&s, HOST, false).slots.expect("a slot store");
    match &slots.store {
        SlotStorePlan::Leases { lease, client } => {
            assert_eq!(lease.lease_name, "crons");
            assert_eq!(*client, LeaseClient::Own);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(slots.node, "node-a");
    match lease_plan(&lease_settings(&s), false) {
        LeasePlan::Kubernetes { lease, client } => {
            assert_eq!(lease.lease_name, "crons");
            assert_eq!(client, LeaseClient::Own);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn kubernetes_backend_with_kube_mode_shares_the_modes_client() {
    let s = sections(None, Some(KUBERNETES));
    let slots = plan(&s, HOST, true).slots.expect("a slot store");
    assert!(
        matches!(
            slots.store,
            SlotStorePlan::Leases {
                client: LeaseClient::Shared,
                ..
            }
        ),
        "{slots:?}"
    );
    assert!(matches!(
        lease_plan(&lease_settings(&s), true),
        LeasePlan::Kubernetes {
            client: LeaseClient::Shared,
            ..
        }
    ));
}

#[test]
fn kubernetes_backend_with_state_path_keeps_slots_in_the_directory() {
    let s = sections(Some(STATE), Some(KUBERNETES));
    let slots = plan(&s, HOST, true).slots.expect("a slot store");
    assert_eq!(slots.store, directory("/srv/state", "blue"));
    // The cluster's node name, even for a directory of slots.
    assert_eq!(slots.node, "node-a");
    // The election is the section's, whatever holds the slots.
    assert!(matches!(
        lease_plan(&lease_settings(&s), true),
        LeasePlan::Kubernetes {
            client: LeaseClient::Shared,
            ..
        }
    ));
}

#[test]
fn etcd_backend_keeps_slots_under_the_election_key() {
    let s = sections(None, Some(ETCD));
    let slots = plan(&s, HOST, false).slots.expect("a slot store");
    match &slots.store {
        SlotStorePlan::Etcd { etcd, timeout } => {
            assert_eq!(etcd.election_name, "crons");
            assert_eq!(*timeout, Duration::from_secs(7));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(slots.node, "node-a");
    match lease_plan(&lease_settings(&s), false) {
        LeasePlan::Etcd {
            etcd,
            node_name,
            timeout,
        } => {
            assert_eq!(etcd.endpoints, ["http://127.0.0.1:2379"]);
            assert_eq!(node_name, "node-a");
            assert_eq!(timeout, Duration::from_secs(7));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn etcd_backend_ignores_kube_mode_and_yields_to_state_path() {
    let s = sections(None, Some(ETCD));
    assert_eq!(plan(&s, HOST, true), plan(&s, HOST, false));
    assert_eq!(
        lease_plan(&lease_settings(&s), true),
        lease_plan(&lease_settings(&s), false)
    );
    let with_state = sections(Some(STATE), Some(ETCD));
    let slots = plan(&with_state, HOST, false).slots.expect("a slot store");
    assert_eq!(slots.store, directory("/srv/state", "blue"));
}

#[test]
fn filesystem_backend_keeps_slots_in_its_directory() {
    let s = sections(None, Some(FILESYSTEM));
    let slots = plan(&s, HOST, false).slots.expect("a slot store");
    assert_eq!(slots.store, directory("/mnt/shared", "green"));
    assert_eq!(slots.node, "node-a");
    match lease_plan(&lease_settings(&s), false) {
        LeasePlan::Filesystem {
            store,
            node_name,
            timeout,
        } => {
            assert_eq!(store.path, "/mnt/shared");
            assert_eq!(node_name, "node-a");
            assert_eq!(timeout, Duration::from_secs(7));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn filesystem_backend_with_state_path_keeps_slots_in_state_path() {
    let s = sections(Some(STATE), Some(FILESYSTEM));
    let slots = plan(&s, HOST, false).slots.expect("a slot store");
    assert_eq!(slots.store, directory("/srv/state", "blue"));
}

#[test]
fn gossip_keeps_no_slots_of_its_own() {
    let s = sections(None, Some(GOSSIP));
    let section = &s.cluster.as_ref().expect("a section").value;
    assert!(matches!(
        cluster::resolve(section, HOST),
        Ok(Resolved::Gossip { .. })
    ));
    assert_eq!(plan(&s, HOST, false).slots, None);
    assert_eq!(plan(&s, HOST, true).slots, None);
}

#[test]
fn gossip_with_state_path_holds_slots_under_the_host_name() {
    let s = sections(Some(STATE), Some(GOSSIP));
    let slots = plan(&s, HOST, false).slots.expect("a slot store");
    assert_eq!(slots.store, directory("/srv/state", "blue"));
    assert_eq!(slots.node, HOST);
}

#[test]
fn a_section_the_loader_would_refuse_plans_like_none() {
    let s = sections(None, Some("backend: etcd\nconnectTimeout: 0\n"));
    assert_eq!(plan(&s, HOST, false).slots, None);
}

#[test]
fn the_durable_store_follows_the_state_section() {
    let plan_of = |yaml: &str| {
        let s = sections(Some(yaml), None);
        durable_plan(s.state.as_ref().map(|l| &l.value), HOST)
    };
    let full = plan_of(STATE).expect("a path opens a store");
    assert_eq!(full.store.root, std::path::PathBuf::from("/srv/state"));
    assert_eq!(full.store.deployment_id, "blue");
    assert_eq!((full.max_runs, full.raised), (1000, false));
    assert_eq!(full.gc_grace, Some(Duration::from_secs(604_800)));
    assert_eq!(full.host, HOST);
    let one = plan_of("path: /s\nmaxRunsPerJob: 1\ngcGraceSeconds: 0\n").unwrap();
    assert_eq!((one.max_runs, one.raised, one.gc_grace), (2, true, None));
    assert_eq!(one.store.deployment_id, "default");
    assert_eq!(
        plan_of("path: /s\nmaxRunsPerJob: -1\n").unwrap().max_runs,
        -1
    );
    assert!(plan_of("path: ''\n").is_none(), "no path, no store");
    assert!(durable_plan(None, HOST).is_none());
}
