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

fn err(c: &ClusterConfig) -> ClusterConfigError {
    resolve(c, "the-host").expect_err("should be refused")
}

/// The refusal's text, as the loader shows it.
fn says(c: &ClusterConfig) -> String {
    err(c).to_string()
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
    use ClusterConfigError::{GossipRequires, TlsRequires};
    assert_eq!(
        err(&section("nodeName: a\n")),
        GossipRequires { key: "listen" }
    );
    assert_eq!(
        says(&section("nodeName: a\n")),
        "cluster.backend gossip requires cluster.listen"
    );
    assert_eq!(
        err(&section("listen: 'h:1'\n")),
        GossipRequires { key: "tls" }
    );
    assert_eq!(
        err(&section("listen: 'h:1'\ntls: {ca: a, cert: b, key: c}\n")),
        GossipRequires { key: "peers" }
    );
    let no_cert = section("listen: 'h:1'\ntls: {ca: a, key: c}\npeers: []\n");
    assert_eq!(err(&no_cert), TlsRequires { key: "cert" });
    assert_eq!(says(&no_cert), "cluster.tls requires cluster.tls.cert");
}

#[test]
fn numeric_rules_use_the_originals_messages() {
    for (extra, variant, text) in [
        (
            "interval: 0\n",
            ClusterConfigError::NotPositive { key: "interval" },
            "cluster.interval must be > 0",
        ),
        (
            "driftAfter: 0\n",
            ClusterConfigError::DriftAfterBelowOne,
            "cluster.driftAfter must be >= 1",
        ),
        (
            "connectTimeout: -1\n",
            ClusterConfigError::NotPositive {
                key: "connectTimeout",
            },
            "cluster.connectTimeout must be > 0",
        ),
    ] {
        let c = with_peers(&["b:1"], extra);
        assert_eq!(err(&c), variant);
        assert_eq!(says(&c), text);
    }
    assert_eq!(
        err(&with_peers(&["b:1"], "etcd: {}\n")),
        ClusterConfigError::ForeignStoreBlock {
            block: "etcd",
            backend: "gossip"
        }
    );
    assert_eq!(
        says(&with_peers(&["b:1"], "etcd: {}\n")),
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
        let refused = err(&with_peers(&[peer], ""));
        assert_eq!(refused.to_string(), says, "{peer}");
        let shape_named = match &refused {
            ClusterConfigError::HostPort { key, value }
            | ClusterConfigError::BareIpv6 { key, value }
            | ClusterConfigError::BracketedAddress { key, value } => {
                *key == "peers[].host" && value == peer
            }
            _ => false,
        };
        assert!(shape_named, "{refused:?}");
    }
    let c = with_peers(&["[2001:db8::1]:8443", "b:65535"], "");
    assert_eq!(gossip_ok(&c).0.peers.len(), 2);
    let c = section("listen: '8443'\ntls: {ca: a, cert: b, key: c}\npeers: []\n");
    assert_eq!(
        err(&c),
        ClusterConfigError::HostPort {
            key: "listen",
            value: "8443".into()
        }
    );
    assert_eq!(says(&c), "cluster.listen must be host:port, got '8443'");
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
    assert_eq!(err(&two), ClusterConfigError::TwoNodeElection);
    assert_eq!(
        says(&two),
        "cluster.electLeader needs a fault-tolerant cluster, but this config declares only 2 \
         nodes (1 peer). A quorum of 2 requires both nodes up for either to run, so it is \
         strictly worse than a single replica. Use 3 or more nodes (an odd count is best), \
         or run a single replica without electLeader."
    );
    // A self entry does not count toward the two.
    let self_listed = with_peers(&["b:1", "node-a:8443"], "electLeader: true\n");
    assert_eq!(err(&self_listed), ClusterConfigError::TwoNodeElection);
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
    let redundant = with_peers(&["b:1"], "observability: {listen: 'h:2'}\n");
    assert_eq!(
        err(&redundant),
        ClusterConfigError::RedundantObservabilityMesh
    );
    assert_eq!(
        says(&redundant),
        "cluster.observability.{listen,tls,peers} is redundant with backend: gossip (the \
         election mesh already carries fleet data); drop them -- an empty `observability:` \
         block, or just `shareNodeStats`, is enough to share node CPU/memory"
    );
    let overlay_key = with_peers(&["b:1"], "observability: {interval: 5}\n");
    assert_eq!(
        err(&overlay_key),
        ClusterConfigError::OverlayKeyWithGossip { key: "interval" }
    );
    assert_eq!(
        says(&overlay_key),
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
        ClusterConfigError::ObservabilityRequires {
            key: "peers",
            backend: "filesystem"
        }
    );
    assert_eq!(
        says(&lease),
        "cluster.observability requires cluster.observability.peers when backend is \
         'filesystem' (the overlay stands up its own gossip mesh to carry fleet data)"
    );
    let lease = section(
        "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}, peers: [{host: 'bad'}]}\n",
    );
    assert_eq!(
        says(&lease),
        "cluster.peers[].host must be host:port, got 'bad'"
    );
    let lease = section(
        "backend: filesystem\nfilesystem: {path: /m}\nobservability: {listen: 'h:2', tls: {ca: a, cert: b, key: c}, peers: [{host: 'p:2'}]}\n",
    );
    assert!(matches!(resolve(&lease, "h"), Ok(Resolved::Lease { .. })));
}

/// Each lease-block rule refuses with its own variant, and the variant
/// reads as the Clustering page's message (the loader shows it as is).
#[test]
fn lease_blocks_refuse_by_rule() {
    use ClusterConfigError as E;
    let k8s = |block: &str| section(&format!("backend: kubernetes\nkubernetes: {block}\n"));
    let etcd = |block: &str| section(&format!("backend: etcd\netcd: {block}\n"));
    let fs = |block: &str| section(&format!("backend: filesystem\nfilesystem: {block}\n"));
    let cases: Vec<(ClusterConfig, ClusterConfigError, &str)> = vec![
        (
            k8s("{leaseName: Bad_Name}"),
            E::LeaseName("Bad_Name".into()),
            "cluster.kubernetes.leaseName must be a valid RFC1123 name (lowercase alphanumeric, \
             '-' or '.', <= 253 chars); got 'Bad_Name'",
        ),
        (
            k8s("{leaseNamespace: Bad.ns}"),
            E::LeaseNamespace("Bad.ns".into()),
            "cluster.kubernetes.leaseNamespace must be a valid RFC1123 label (lowercase \
             alphanumeric or '-', <= 63 chars); got 'Bad.ns'",
        ),
        (
            k8s("{apiServer: 'http://u:p@k8s:6443/x'}"),
            E::ApiServerNotHttps("http://***@k8s:6443/x".into()),
            "cluster.kubernetes.apiServer must be an https:// URL so the ServiceAccount bearer \
             token is not sent in cleartext; got 'http://***@k8s:6443/x'",
        ),
        (
            k8s("{renewDeadlineSeconds: 0}"),
            E::RenewDeadlineNotPositive,
            "cluster.kubernetes.renewDeadlineSeconds must be > 0",
        ),
        (
            k8s("{leaseDurationSeconds: 10, renewDeadlineSeconds: 10}"),
            E::DurationNotAboveRenew {
                duration: 10,
                renew: 10,
            },
            "cluster.kubernetes.leaseDurationSeconds (10) must be greater than \
             renewDeadlineSeconds (10)",
        ),
        (
            k8s("{retryPeriodSeconds: 0}"),
            E::RetryNotPositive,
            "cluster.kubernetes.retryPeriodSeconds must be > 0",
        ),
        (
            k8s("{leaseDurationSeconds: 30, renewDeadlineSeconds: 10, retryPeriodSeconds: 10}"),
            E::RetryNotBelowRenew {
                retry: 10,
                renew: 10,
            },
            "cluster.kubernetes.retryPeriodSeconds (10) must be less than renewDeadlineSeconds \
             (10): a holder must be able to renew within the renew window before the next \
             retry, or it lapses out of the lease every cycle and no Leader job runs stably",
        ),
        (
            k8s("{leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 6}"),
            E::RenewalGapOutlivesLease {
                renew: 10,
                retry: 6,
                duration: 15,
            },
            "cluster.kubernetes: renewDeadlineSeconds (10) + retryPeriodSeconds (6) must be \
             less than leaseDurationSeconds (15); otherwise the worst-case gap between lease \
             renewals exceeds the lease lifetime and the holder lapses out of the lease every \
             cycle, so no Leader job runs stably",
        ),
        (
            etcd("{ttl: 2}"),
            E::TtlTooShort {
                key: "cluster.etcd.ttl",
                ttl: 2.0,
            },
            "cluster.etcd.ttl must be >= 3 seconds (the leader holds the lease only until ttl \
             minus a clock-skew margin and renews every max(1s, ttl/3); a smaller ttl makes a \
             node that wins the election immediately treat its own lease as expired, so no \
             Leader job ever runs); got 2.0",
        ),
        (
            etcd("{endpoints: []}"),
            E::NoEtcdEndpoints,
            "cluster.etcd.endpoints must list at least one URL",
        ),
        (
            etcd("{endpoints: ['http://u:p@h:2379']}"),
            E::EndpointCredentials("http://***@h:2379".into()),
            "cluster.etcd.endpoints must not embed credentials in the URL (userinfo@host); use \
             cluster.etcd.username/password instead, got 'http://***@h:2379'",
        ),
        (
            etcd("{endpoints: ['h:2379']}"),
            E::EndpointShape("h:2379".into()),
            "cluster.etcd.endpoints must be http(s)://host[:port], got 'h:2379'",
        ),
        (
            etcd("{endpoints: ['https://h:2379'], tls: {cert: /c.pem}}"),
            E::CertWithoutKey {
                cert: true,
                key: false,
            },
            "cluster.etcd.tls.cert and cluster.etcd.tls.key must be set together (a client \
             certificate needs its private key); got cert=True, key=False",
        ),
        (
            etcd("{tls: {ca: /ca.pem}}"),
            E::TlsWithoutHttps,
            "cluster.etcd.tls is configured but no endpoint is https:// , so the TLS material \
             would be ignored and traffic sent in cleartext; use https:// endpoints or remove \
             cluster.etcd.tls",
        ),
        (
            etcd("{username: root}"),
            E::UsernameWithoutPassword,
            "cluster.etcd.username is set but no password is configured; set \
             cluster.etcd.password (value/fromFile/fromEnvVar)",
        ),
        (
            etcd(
                "{username: root, password: {value: pw}, \
                 endpoints: ['http://a:1', 'https://b:2', 'http://c:3']}",
            ),
            E::CredentialsInCleartext(vec!["http://a:1".into(), "http://c:3".into()]),
            "cluster.etcd: authentication (username/password) requires https:// endpoints so \
             credentials are not sent in cleartext, but these endpoints are plaintext: \
             http://a:1, http://c:3",
        ),
        (
            fs("{}"),
            E::FilesystemPath,
            "cluster.filesystem.path is required and must be non-empty",
        ),
        (
            fs("{path: /m, electionName: ' '}"),
            E::FilesystemElectionName,
            "cluster.filesystem.electionName must be non-empty",
        ),
        (
            fs("{path: /m, ttl: 1.5}"),
            E::TtlTooShort {
                key: "cluster.filesystem.ttl",
                ttl: 1.5,
            },
            "cluster.filesystem.ttl must be >= 3 seconds (the leader holds the lease only until \
             ttl minus a clock-skew margin and renews every max(1s, ttl/3); a smaller ttl makes \
             a node that wins the election immediately treat its own lease as expired, so no \
             Leader job ever runs); got 1.5",
        ),
        (
            section("backend: etcd\ndistribution: spread\n"),
            E::SpreadWithLease { backend: "etcd" },
            "cluster.distribution: spread is not supported with the 'etcd' backend (a single \
             lease holder cannot fan jobs out per-node); use distribution: single-leader, or \
             the gossip backend",
        ),
    ];
    for (config, variant, text) in cases {
        let refused = err(&config);
        assert_eq!(refused, variant, "{config:?}");
        assert_eq!(refused.to_string(), text);
    }
}
