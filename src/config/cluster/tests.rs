//! The section's rules and messages.

use super::*;

const BASE: &str = "listen: '0.0.0.0:8443'\ntls: {ca: /c/ca.pem, cert: /c/a.pem, key: /c/a.key}\nnodeName: node-a\n";

fn section(extra: &str) -> ClusterConfig {
    serde_yaml::from_str(extra).unwrap_or_else(|e| panic!("{extra}: {e}"))
}

fn with_peers(peers: &[&str], extra: &str) -> ClusterConfig {
    let list: String = peers.iter().map(|p| format!("  - host: '{p}'\n")).collect();
    section(&format!("{BASE}peers:\n{list}{extra}"))
}

fn gossip_ok(c: &ClusterConfig) -> (GossipSettings, Vec<String>) {
    match resolve(c, "the-host") {
        Ok(Resolved::Gossip {
            settings,
            advisories,
        }) => (*settings, advisories),
        other => panic!("{other:?}"),
    }
}

fn err(c: &ClusterConfig) -> String {
    resolve(c, "the-host").expect_err("should be refused")
}

#[test]
fn defaults_fill_every_documented_key() {
    let c = with_peers(&["b.internal:8443", "c.internal:8443"], "");
    let (s, advisories) = gossip_ok(&c);
    assert_eq!(
        s,
        GossipSettings {
            node_name: "node-a".into(),
            listen: "0.0.0.0:8443".into(),
            peers: vec!["b.internal:8443".into(), "c.internal:8443".into()],
            cluster_size: 3,
            elect_leader: false,
            distribution: Distribution::SingleLeader,
            interval: 30,
            drift_after: 3,
            connect_timeout: 10,
            tls: GossipTls {
                ca: "/c/ca.pem".into(),
                cert: "/c/a.pem".into(),
                key: "/c/a.key".into(),
            },
            share_node_stats: false,
        }
    );
    assert!(advisories.is_empty());
    let c = section(
        "listen: 'h:1'\ntls: {ca: a, cert: b, key: c}\npeers: [{host: 'x:2'}, {host: 'y:2'}]\n\
         interval: 5\ndriftAfter: 1\nconnectTimeout: 2\nelectLeader: true\ndistribution: spread\n\
         observability: {}\n",
    );
    let (s, _) = gossip_ok(&c);
    assert_eq!(s.node_name, "the-host");
    assert_eq!((s.interval, s.drift_after, s.connect_timeout), (5, 1, 2));
    assert!(s.elect_leader && s.share_node_stats);
    assert_eq!(s.distribution, Distribution::Spread);
}

#[test]
fn missing_transport_keys_are_named() {
    assert_eq!(
        err(&section("nodeName: a\n")),
        "cluster.backend gossip requires cluster.listen"
    );
    assert_eq!(
        err(&section("listen: 'h:1'\n")),
        "cluster.backend gossip requires cluster.tls"
    );
    assert_eq!(
        err(&section("listen: 'h:1'\ntls: {ca: a, cert: b, key: c}\n")),
        "cluster.backend gossip requires cluster.peers"
    );
    assert_eq!(
        err(&section("listen: 'h:1'\ntls: {ca: a, key: c}\npeers: []\n")),
        "cluster.tls requires cluster.tls.cert"
    );
}

#[test]
fn numeric_rules_use_the_originals_messages() {
    for (extra, says) in [
        ("interval: 0\n", "cluster.interval must be > 0"),
        ("driftAfter: 0\n", "cluster.driftAfter must be >= 1"),
        ("connectTimeout: -1\n", "cluster.connectTimeout must be > 0"),
    ] {
        assert_eq!(err(&with_peers(&["b:1"], extra)), says);
    }
    assert_eq!(
        err(&with_peers(&["b:1"], "etcd: {}\n")),
        "cluster.etcd is configured but cluster.backend is 'gossip'; that store block would \
         be silently ignored. Set backend: etcd to use it, or remove the cluster.etcd block."
    );
}

#[test]
fn addresses_must_be_host_port() {
    for (peer, says) in [
        (
            "b.internal",
            "cluster.peers[].host must be host:port, got 'b.internal'",
        ),
        ("b:0", "cluster.peers[].host must be host:port, got 'b:0'"),
        (
            "b:65536",
            "cluster.peers[].host must be host:port, got 'b:65536'",
        ),
        ("b:८०", "cluster.peers[].host must be host:port, got 'b:८०'"),
        (":80", "cluster.peers[].host must be host:port, got ':80'"),
        (
            "2001:db8::1",
            "cluster.peers[].host looks like a bare IPv6 address; write it as [ipv6]:port, \
             got '2001:db8::1'",
        ),
        (
            "[2001:db8::1]",
            "cluster.peers[].host must be [ipv6]:port, got '[2001:db8::1]'",
        ),
        (
            "[]:80",
            "cluster.peers[].host must be [ipv6]:port, got '[]:80'",
        ),
    ] {
        assert_eq!(err(&with_peers(&[peer], "")), says, "{peer}");
    }
    let c = with_peers(&["[2001:db8::1]:8443", "b:65535"], "");
    assert_eq!(gossip_ok(&c).0.peers.len(), 2);
    let c = section("listen: '8443'\ntls: {ca: a, cert: b, key: c}\npeers: []\n");
    assert_eq!(err(&c), "cluster.listen must be host:port, got '8443'");
}

#[test]
fn duplicate_and_self_listed_peers_are_dropped() {
    let c = with_peers(
        &[
            "b:8443",
            "b:8443",
            "node-a:8443",
            "127.0.0.1:8443",
            "[::1]:8443",
            "127.0.0.1:9999",
            "localhost:8443",
            "c:8443",
        ],
        "",
    );
    let (s, _) = gossip_ok(&c);
    // [::1] stays: a 0.0.0.0 bind does not hold the IPv6 loopback.
    assert_eq!(
        s.peers,
        [
            "b:8443",
            "[::1]:8443",
            "127.0.0.1:9999",
            "localhost:8443",
            "c:8443"
        ]
    );
    assert_eq!(s.cluster_size, 6);
    // An exact match of a specific listen address.
    let c = section(
        "listen: '10.0.0.1:8443'\ntls: {ca: a, cert: b, key: c}\nnodeName: node-a\n\
         peers: [{host: '10.0.0.1:8443'}, {host: 'node-a:8443'}, {host: '10.0.0.2:8443'}]\n",
    );
    assert_eq!(gossip_ok(&c).0.peers, ["node-a:8443", "10.0.0.2:8443"]);
}

#[test]
fn election_sizes() {
    let two = with_peers(&["b:1"], "electLeader: true\n");
    assert_eq!(
        err(&two),
        "cluster.electLeader needs a fault-tolerant cluster, but this config declares only 2 \
         nodes (1 peer). A quorum of 2 requires both nodes up for either to run, so it is \
         strictly worse than a single replica. Use 3 or more nodes (an odd count is best), \
         or run a single replica without electLeader."
    );
    // A self entry does not count toward the two.
    let self_listed = with_peers(&["b:1", "node-a:8443"], "electLeader: true\n");
    assert!(err(&self_listed).starts_with("cluster.electLeader needs"));
    // Without election two nodes are fine.
    gossip_ok(&with_peers(&["b:1"], ""));
    let (_, advisories) = gossip_ok(&with_peers(&["b:1", "c:1", "d:1"], "electLeader: true\n"));
    assert_eq!(
        advisories,
        [
            "cluster.electLeader: an even cluster size (4 nodes) tolerates no more failures than \
          3 (the next-lower odd size); shrink to 3 for the same tolerance with one fewer \
          node, or grow to 5 to tolerate one more failure; prefer an odd size."
        ]
    );
    let (_, advisories) = gossip_ok(&with_peers(&["b:1", "c:1"], "distribution: spread\n"));
    assert_eq!(
        advisories,
        [
            "cluster.distribution='spread' has no effect without electLeader; without leader \
          election every node runs every job."
        ]
    );
    let (_, advisories) = gossip_ok(&with_peers(
        &["node-a.example.com:8443", "c:1"],
        "electLeader: true\n",
    ));
    assert_eq!(
        advisories,
        [
            "cluster.electLeader: 1 peer(s) look like this node listed by FQDN \
          (node-a.example.com:8443) while nodeName is 'node-a'; if so the real cluster is \
          only 2 node(s) and leader election will be degenerate or refused at runtime. List \
          the peer by its exact nodeName, or fix the addresses."
        ]
    );
    let (_, advisories) = gossip_ok(&with_peers(
        &["localhost:8443", "c:1"],
        "electLeader: true\n",
    ));
    assert_eq!(advisories.len(), 1);
    assert!(advisories[0].starts_with(
        "cluster.electLeader: 1 peer(s) are loopback addresses on this node's own port \
         (localhost:8443);"
    ));
}

#[test]
fn observability_rules() {
    assert_eq!(
        err(&with_peers(&["b:1"], "observability: {listen: 'h:2'}\n")),
        "cluster.observability.{listen,tls,peers} is redundant with backend: gossip (the \
         election mesh already carries fleet data); drop them -- an empty `observability:` \
         block, or just `shareNodeStats`, is enough to share node CPU/memory"
    );
    assert_eq!(
        err(&with_peers(&["b:1"], "observability: {interval: 5}\n")),
        "cluster.observability.interval only applies to the overlay mesh a lease backend \
         (kubernetes/etcd/filesystem) stands up; with backend: gossip node stats ride the \
         election mesh, so set cluster.interval instead"
    );
    let (s, _) = gossip_ok(&with_peers(
        &["b:1"],
        "observability: {shareNodeStats: false}\n",
    ));
    assert!(!s.share_node_stats);
    let lease = section(
        "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}}\n",
    );
    assert_eq!(
        err(&lease),
        "cluster.observability requires cluster.observability.peers when backend is \
         'filesystem' (the overlay stands up its own gossip mesh to carry fleet data)"
    );
    let lease = section(
        "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}, peers: [{host: 'bad'}]}\n",
    );
    assert_eq!(
        err(&lease),
        "cluster.peers[].host must be host:port, got 'bad'"
    );
    let lease = section(
        "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}, peers: [{host: 'p:2'}]}\n",
    );
    assert!(matches!(resolve(&lease, "h"), Ok(Resolved::Lease { .. })));
}
