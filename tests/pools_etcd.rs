//! Resource pools kept in the etcd backend's store, where no `state.path`
//! is configured, against a real etcd (skipped, saying so, when it is not
//! installed): two daemons (`cluster: {backend: etcd}`, no `state`
//! section) share a one-slot pool and their jobs' runs, written to one
//! file, never overlap; the pool's document is a key under the election
//! key. Through the library, two clients race on one pool document and
//! lose no update, and admissions through the store are timed.

mod support;

use cronstable::cluster::etcd::EtcdLease;
use cronstable::cluster::pools::etcd::{pool_key_name, EtcdPoolDocs};
use cronstable::cluster::pools::optimistic::Optimistic;
use cronstable::cluster::pools::PoolDocs;
use cronstable::cluster::slots::etcd::EtcdClientSource;
use cronstable::config::cluster::EtcdSettings;
use std::sync::Arc;
use std::time::Duration;
use support::daemon::Daemon;
use support::etcd::{self, Etcd};
use support::http::{free_port, get, wait_listening};
use support::pools::{
    admission_latency, assert_two_nodes_took_turns, every_node_pair, race_two_nodes,
};

#[test]
fn two_daemons_sharing_etcd_never_overlap_on_a_one_slot_pool() {
    if !etcd::available() {
        return;
    }
    let server = Etcd::start();
    let shared = tempfile::tempdir().expect("temp dir");
    let log = shared.path().join("runs.log");
    let node = |name: &str| {
        let port = free_port();
        let config = format!(
            "web:\n  listen:\n    - http://127.0.0.1:{port}\ncluster:\n  backend: etcd\n  \
             nodeName: {name}\n  etcd:\n    endpoints: [{endpoint}]\n    ttl: 3\n\
             pools:\n  one:\n    slots: 1\njobs:\n{jobs}",
            endpoint = server.endpoint(),
            jobs = every_node_pair(name, &log),
        );
        let daemon = Daemon::start(&config);
        wait_listening(port, Duration::from_secs(20));
        (daemon, port)
    };
    let (first, port_1) = node("n1");
    let (second, port_2) = node("n2");
    let logs = || format!("{}\n---\n{}", first.log(), second.log());
    assert_two_nodes_took_turns(&log, 12, &logs);
    // The document is a plain key under the election key.
    let key = pool_key_name("cronstable/leader", "one");
    assert_eq!(key, "cronstable/leader/pools/one");
    let (value, _) = server.get(&key).expect("the pool's key");
    let doc: serde_json::Value = serde_json::from_str(&value).expect("JSON");
    assert_eq!(doc["schemaVersion"], "v1", "{doc}");
    assert_eq!(doc["data"]["slots"], 1, "{doc}");
    for port in [port_1, port_2] {
        let pools = get(port, "/pools").json();
        assert_eq!(pools[0]["name"], "one", "{pools}");
        assert!(pools[0]["used"].as_u64().unwrap_or(9) <= 1, "{pools}");
    }
}

/// Pool documents under `cronstable/leader`, through a client of their
/// own.
fn store(endpoint: &str) -> Arc<dyn PoolDocs> {
    let settings = EtcdSettings {
        endpoints: vec![endpoint.to_owned()],
        election_name: "cronstable/leader".to_owned(),
        ttl: 5,
        username: None,
        password: None,
        ca: None,
        cert: None,
        key: None,
    };
    let source: EtcdClientSource = Arc::new(move || {
        let settings = settings.clone();
        Box::pin(async move {
            EtcdLease::connect(&settings, String::new(), Duration::from_secs(2)).await
        })
    });
    let docs = EtcdPoolDocs::new("cronstable/leader", source);
    Arc::new(Optimistic::new(docs, tokio::runtime::Handle::current()))
}

#[test]
fn two_clients_racing_on_a_pool_key_lose_no_update() {
    if !etcd::available() {
        return;
    }
    let server = Etcd::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let a = store(&server.endpoint());
        let b = store(&server.endpoint());
        race_two_nodes(a.clone(), b).await;
        let median = admission_latency(a, 21).await;
        eprintln!("admission through etcd: median {median:.1} ms over 21");
    });
}
