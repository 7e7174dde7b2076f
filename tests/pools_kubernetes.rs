//! Resource pools kept in the Lease backend's store, where no `state.path`
//! is configured, against a real kube-apiserver (`KUBEBUILDER_ASSETS`;
//! skipped, saying so, when unset): two daemons (`--kube`, `cluster:
//! {backend: kubernetes}`, no `state` section) share a one-slot pool and
//! their jobs' runs, written to one file, never overlap; the pool's
//! document is a Lease beside the election Lease. Through the library,
//! two clients that hold only the Lease backend's rights (`leases` get,
//! create, update) race on one pool document and lose no update, and
//! admissions through the store are timed.

mod support;

use cronstable::cluster::pools::kube::{pool_lease_name, KubePoolDocs, DOC_ANNOTATION};
use cronstable::cluster::pools::optimistic::Optimistic;
use cronstable::cluster::pools::PoolDocs;
use cronstable::cluster::slots::kube::LeaseApiSource;
use k8s_openapi::api::coordination::v1::Lease;
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::Path;
use std::sync::Arc;
use support::kube_daemon::{Cluster, KubeDaemon, Launch};
use support::pools::{
    admission_latency, assert_two_nodes_took_turns, every_node_pair, race_two_nodes,
};

/// A node sharing the pool `one` (one slot) through the Lease store.
fn node(cluster: &Cluster, name: &str) -> KubeDaemon {
    let mut how = Launch::new(cluster).args(&["--cronjobsets", "none"]);
    how.config = format!(
        "cluster:\n  backend: kubernetes\n  nodeName: {name}\n  kubernetes:\n    \
         leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
         pools:\n  one:\n    slots: 1\njobs:\n{}",
        every_node_pair(name, &cluster.path("runs.log"))
    );
    KubeDaemon::launch(cluster, how)
}

#[test]
fn two_daemons_sharing_the_lease_store_never_overlap_on_a_one_slot_pool() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let first = node(&cluster, "n1");
    let second = node(&cluster, "n2");
    let logs = || format!("{}\n---\n{}", first.log(), second.log());
    assert_two_nodes_took_turns(&cluster.path("runs.log"), 12, &logs);
    // The document is a Lease of its own beside the election Lease.
    let name = pool_lease_name("cronstable-leader", "one");
    assert_eq!(name, "cronstable-leader-pool-one");
    let lease = cluster
        .get("coordination.k8s.io/v1", "Lease", &cluster.namespace, &name)
        .expect("the pool's Lease");
    let metadata = &lease["metadata"];
    assert_eq!(metadata["annotations"]["cronstable.io/pool-name"], "one");
    assert_eq!(
        metadata["labels"]["app.kubernetes.io/managed-by"],
        "cronstable"
    );
    assert_eq!(metadata["labels"]["app.kubernetes.io/component"], "pool");
    let doc: serde_json::Value = serde_json::from_str(
        metadata["annotations"][DOC_ANNOTATION]
            .as_str()
            .expect("the document"),
    )
    .expect("JSON");
    assert_eq!(doc["schemaVersion"], "v1", "{doc}");
    assert_eq!(doc["data"]["slots"], 1, "{doc}");
    // Both nodes see the one pool through their API.
    for daemon in [&first, &second] {
        let pools = daemon.get_json("/pools");
        assert_eq!(pools[0]["name"], "one", "{pools}");
        assert!(pools[0]["used"].as_u64().unwrap_or(9) <= 1, "{pools}");
    }
}

/// A kubeconfig for the ServiceAccount `pools` in `team-a`, bound to a
/// Role with exactly the Lease backend's rights.
fn lease_only_identity(cluster: &Cluster) -> std::path::PathBuf {
    let objects = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: pools, namespace: team-a}\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: pools, \
         namespace: team-a}\nrules:\n  - apiGroups: [coordination.k8s.io]\n    resources: [leases]\n    \
         verbs: [get, create, update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: \
         RoleBinding\nmetadata: {name: pools, namespace: team-a}\nsubjects:\n  - {kind: \
         ServiceAccount, name: pools, namespace: team-a}\nroleRef: {apiGroup: \
         rbac.authorization.k8s.io, kind: Role, name: pools}\n";
    let path = cluster.path("kubeconfig-pools");
    cluster.real_server(|server| {
        let (ok, _, err) = server.kubectl_with(
            &server.admin_kubeconfig(),
            &["apply", "-f", "-"],
            Some(objects),
        );
        assert!(ok, "kubectl apply the RBAC objects: {err}");
        let token = server.token("team-a", "pools");
        server.write_token_kubeconfig(&path, &token, "team-a");
    });
    path
}

/// Pool documents beside the election Lease `cronstable-leader`, through
/// a client of their own built from `kubeconfig`.
async fn store(kubeconfig: &Path) -> Arc<dyn PoolDocs> {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).expect("kubeconfig parses"),
        &KubeConfigOptions::default(),
    )
    .await
    .expect("kubeconfig loads");
    let client = kube::Client::try_from(config).expect("client builds");
    let source: LeaseApiSource = Arc::new(move || {
        let api: kube::Api<Lease> = kube::Api::namespaced(client.clone(), "team-a");
        Box::pin(async move { Ok(api) })
    });
    let docs = KubePoolDocs::new("cronstable-leader", source);
    Arc::new(Optimistic::new(docs, tokio::runtime::Handle::current()))
}

#[test]
fn two_clients_racing_on_a_pool_lease_lose_no_update_with_only_the_lease_rights() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let kubeconfig = lease_only_identity(&cluster);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let a = store(&kubeconfig).await;
        let b = store(&kubeconfig).await;
        race_two_nodes(a.clone(), b).await;
        let median = admission_latency(a, 21).await;
        eprintln!("admission through the Lease store: median {median:.1} ms over 21");
    });
}
