//! The etcd leadership backend, black-box: three real daemons (the built
//! binary) elect over a real etcd server and run a Leader job every second
//! that appends `<node> <epoch second>` to a shared file. One node runs
//! each fire; a killed leader is replaced once its lease expires; a
//! SIGTERMed one revokes its lease before the drain so a survivor takes
//! over at its next round; an etcd outage makes the leader stand down and
//! the cluster elects again when etcd is back.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::daemon::{read_lines, Daemon};
use support::etcd::{self, Etcd};
use support::http::{free_port, get, wait_listening};

/// The lease TTL the nodes use (the smallest allowed: fast failovers).
const TTL: u64 = 3;
/// Keepalive period at that TTL: max(1, ttl/3).
const PERIOD: u64 = 1;
/// How long any wait may take before the test fails (a bound for a hung
/// test, not a speed claim).
const PATIENCE: Duration = Duration::from_secs(60);

/// The tests each run an etcd and three daemons on timing-sensitive
/// leases; one at a time keeps them from starving each other's rounds.
static SERIAL: Mutex<()> = Mutex::new(());

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// Three nodes over one etcd, writing to one shared file.
struct Cluster {
    etcd: Etcd,
    shared: tempfile::TempDir,
    nodes: BTreeMap<String, (Daemon, u16)>,
}

impl Cluster {
    fn start() -> Cluster {
        let etcd = Etcd::start();
        let shared = tempfile::tempdir().expect("shared dir");
        let mut nodes = BTreeMap::new();
        for name in ["a", "b", "c"] {
            let port = free_port();
            let fires = shared.path().join("fires");
            let config = format!(
                "cluster:\n  backend: etcd\n  nodeName: {name}\n  etcd:\n    endpoints: [{endpoint}]\n    ttl: {TTL}\n\
                 web:\n  listen:\n    - http://127.0.0.1:{port}\n\
                 jobs:\n  - name: tick\n    command: echo \"{name} $(date +%s)\" >> {fires}\n    schedule: \"* * * * * * *\"\n    clusterPolicy: Leader\n",
                endpoint = etcd.endpoint(),
                fires = fires.display(),
            );
            let daemon = Daemon::start(&config);
            wait_listening(port, Duration::from_secs(20));
            nodes.insert(name.to_owned(), (daemon, port));
        }
        Cluster {
            etcd,
            shared,
            nodes,
        }
    }

    /// `(node, second)` of every fire so far.
    fn fires(&self) -> Vec<(String, u64)> {
        read_lines(&self.shared.path().join("fires"))
            .iter()
            .filter_map(|line| {
                let (node, second) = line.split_once(' ')?;
                Some((node.to_owned(), second.trim().parse().ok()?))
            })
            .collect()
    }

    fn cluster_view(&self, node: &str) -> serde_json::Value {
        get(self.nodes[node].1, "/cluster").json()
    }

    /// Waits until every live node agrees on one quorate leader; returns it.
    fn agreed_leader(&self) -> String {
        let start = Instant::now();
        loop {
            let views: Vec<serde_json::Value> =
                self.nodes.keys().map(|n| self.cluster_view(n)).collect();
            let leaders: BTreeSet<String> = views
                .iter()
                .filter_map(|v| v["leader"].as_str().map(str::to_owned))
                .collect();
            let leading: Vec<&serde_json::Value> =
                views.iter().filter(|v| v["is_leader"] == true).collect();
            if views.iter().all(|v| v["quorate"] == true)
                && leaders.len() == 1
                && leading.len() == 1
            {
                return leaders.into_iter().next().unwrap_or_default();
            }
            assert!(
                start.elapsed() < PATIENCE,
                "no agreed leader: {views:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `count` more fires were written after `after` lines;
    /// returns all fires.
    fn wait_fires(&self, after: usize, count: usize) -> Vec<(String, u64)> {
        let start = Instant::now();
        loop {
            let fires = self.fires();
            if fires.len() >= after + count {
                return fires;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "waited for {count} fires after {after}: {fires:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first fire at or after `second` by a node other than `old`.
    fn wait_takeover(&self, old: &str, second: u64) -> (String, u64) {
        let start = Instant::now();
        loop {
            if let Some(fire) = self
                .fires()
                .into_iter()
                .find(|(node, s)| node != old && *s >= second)
            {
                return fire;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "no node took over from {old}: {:?}\n{}",
                self.fires(),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|(name, (d, _))| format!("--- node {name}:\n{}", d.log()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Seconds in which two different nodes ran the job.
fn double_runs(fires: &[(String, u64)]) -> Vec<(u64, BTreeSet<String>)> {
    let mut by_second: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for (node, second) in fires {
        by_second.entry(*second).or_default().insert(node.clone());
    }
    by_second
        .into_iter()
        .filter(|(_, nodes)| nodes.len() > 1)
        .collect()
}

#[test]
fn one_leader_runs_each_fire_and_a_killed_leader_is_replaced_after_its_ttl() {
    if !etcd::available() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::start();
    let leader = cluster.agreed_leader();

    // GET /cluster: the etcd lease block, on the leader and a follower.
    let view = cluster.cluster_view(&leader);
    assert_eq!(view["backend"], "etcd", "{view}");
    assert_eq!(view["is_leader"], true, "{view}");
    let lease = &view["lease"];
    assert_eq!(lease["electionName"], "cronstable/leader", "{view}");
    assert_eq!(lease["identity"], leader.as_str(), "{view}");
    assert_eq!(lease["holder"], leader.as_str(), "{view}");
    let lease_id = lease["leaseId"]
        .as_str()
        .expect("leaseId string")
        .to_owned();
    assert!(lease["expiry"].is_string(), "{view}");
    let follower = cluster
        .nodes
        .keys()
        .find(|n| **n != leader)
        .cloned()
        .unwrap_or_default();
    let fview = cluster.cluster_view(&follower);
    assert_eq!(fview["is_leader"], false, "{fview}");
    assert_eq!(fview["leader"], leader.as_str(), "{fview}");
    assert_eq!(fview["lease"]["holder"], leader.as_str(), "{fview}");
    assert_eq!(fview["lease"]["expiry"], serde_json::Value::Null, "{fview}");

    // etcd agrees: the key holds the leader's name, bound to its lease.
    assert_eq!(
        cluster.etcd.get("cronstable/leader"),
        Some((leader.clone(), lease_id)),
    );

    // Steady state: the next fires all come from the leader, one a second.
    let before = cluster.fires().len();
    let fires = cluster.wait_fires(before, 6);
    let steady = &fires[before..];
    assert!(
        steady.iter().all(|(node, _)| *node == leader),
        "fires not from the leader {leader}: {steady:?}"
    );
    assert_eq!(double_runs(&fires), vec![], "{fires:?}");

    // kill -9: nothing is released; a survivor wins once etcd expires the
    // lease (ttl), at its next round (the keepalive period).
    let killed_at = now_secs();
    if let Some((daemon, _)) = cluster.nodes.get(&leader) {
        daemon.signal(nix::sys::signal::Signal::SIGKILL);
    }
    let (new_leader, first) = cluster.wait_takeover(&leader, killed_at);
    let takeover = first.saturating_sub(killed_at);
    eprintln!("kill -9 takeover by {new_leader}: first fire {takeover} s after the kill second");
    assert!(
        takeover <= TTL + PERIOD + 3,
        "takeover after {takeover} s exceeds ttl + keepalive period (+3 s slack for a loaded machine): {:?}",
        cluster.fires()
    );
    cluster.nodes.remove(&leader);
    let after = cluster.fires().len();
    let fires = cluster.wait_fires(after, 3);
    assert_eq!(double_runs(&fires), vec![], "{fires:?}");
    assert_eq!(cluster.agreed_leader(), new_leader);
}

#[test]
fn a_sigtermed_leader_revokes_its_lease_before_the_drain() {
    if !etcd::available() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::start();
    let leader = cluster.agreed_leader();
    let lease_id = cluster.cluster_view(&leader)["lease"]["leaseId"]
        .as_str()
        .expect("leaseId")
        .to_owned();
    cluster.wait_fires(cluster.fires().len(), 2);

    let stopped_at = now_secs();
    let (mut daemon, _) = cluster.nodes.remove(&leader).expect("leader node");
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit(PATIENCE), Some(0), "{}", daemon.log());
    let log = daemon.log();
    let release = log.find("Stopping cluster manager").expect("released");
    let lost = log
        .find("cluster: this node lost scheduled-job leadership")
        .expect("lost leadership logged");
    assert!(release <= lost, "{log}");

    // The lease is gone at etcd (revoked, not left to expire).
    let ttl = cluster
        .etcd
        .call("/v3/lease/timetolive", &serde_json::json!({"ID": lease_id}));
    assert_eq!(ttl["TTL"], "-1", "lease {lease_id} still alive: {ttl}");

    let (new_leader, first) = cluster.wait_takeover(&leader, stopped_at);
    let takeover = first.saturating_sub(stopped_at);
    eprintln!("SIGTERM takeover by {new_leader}: first fire {takeover} s after the signal second");
    // A revoked key is free at once: the next round (one period) wins it,
    // well inside the ttl a kill -9 waits out.
    assert!(
        takeover <= PERIOD + 4,
        "takeover after {takeover} s: {:?}",
        cluster.fires()
    );
    assert_eq!(double_runs(&cluster.fires()), vec![]);
}

#[test]
fn an_etcd_outage_stands_the_leader_down_and_a_leader_returns_with_etcd() {
    if !etcd::available() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cluster = Cluster::start();
    let leader = cluster.agreed_leader();
    cluster.wait_fires(cluster.fires().len(), 2);

    let stopped_at = now_secs();
    cluster.etcd.stop();
    // Within the ttl every node loses quorum and the leader stands down.
    let start = Instant::now();
    loop {
        let views: Vec<serde_json::Value> = cluster
            .nodes
            .keys()
            .map(|n| cluster.cluster_view(n))
            .collect();
        if views
            .iter()
            .all(|v| v["quorate"] == false && v["is_leader"] == false && v["leader"].is_null())
        {
            break;
        }
        assert!(start.elapsed() < PATIENCE, "still quorate: {views:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let down_fires = cluster.fires();
    let last = down_fires.iter().map(|(_, s)| *s).max().unwrap_or_default();
    assert!(
        last <= stopped_at + TTL,
        "the leader ran Leader jobs {} s into the outage: {down_fires:?}",
        last.saturating_sub(stopped_at)
    );
    cluster.nodes[&leader]
        .0
        .wait_for_log("cluster: this node left quorum", 1, PATIENCE);
    // Nobody runs while etcd is down: the file stays as it was over a few
    // more fire seconds.
    let quiet_until = Instant::now() + Duration::from_secs(TTL);
    while Instant::now() < quiet_until {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(cluster.fires(), down_fires, "fires during the outage");

    let resumed_at = now_secs();
    cluster.etcd.resume();
    let back = cluster.agreed_leader();
    let start = Instant::now();
    while !cluster
        .fires()
        .iter()
        .any(|(node, s)| *node == back && *s >= resumed_at)
    {
        assert!(
            start.elapsed() < PATIENCE,
            "no fire after etcd returned: {:?}\n{}",
            cluster.fires(),
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(double_runs(&cluster.fires()), vec![]);
}

#[test]
fn over_tls_with_a_user_it_leads_and_logs_in_again_when_its_token_is_revoked() {
    if !etcd::available() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let pki = tempfile::tempdir().expect("pki dir");
    let write = |name: &str, text: &str| {
        let path = pki.path().join(name);
        std::fs::write(&path, text).expect("write pki file");
        path.display().to_string()
    };
    let ca_key = KeyPair::generate().expect("ca key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).expect("ca");
    // etcd's JSON gateway refuses a client certificate that carries a
    // CommonName when --client-cert-auth is on (it would not be used as the
    // user), so both certificates have an empty subject.
    let issue = |names: &[&str]| {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        let cert = params.signed_by(&key, &ca, &ca_key).expect("cert");
        (cert.pem(), key.serialize_pem())
    };
    let ca_file = write("ca.pem", &ca.pem());
    let (server_cert, server_key) = issue(&["127.0.0.1", "localhost"]);
    let (client_cert, client_key) = issue(&["cronstable"]);
    let server_cert = write("server.pem", &server_cert);
    let server_key = write("server.key", &server_key);
    let client_cert = write("client.pem", &client_cert);
    let client_key = write("client.key", &client_key);
    let password = write("password", "s3cret\n");

    let etcd = Etcd::start_tls(&server_cert, &server_key, &ca_file, 300);
    let tls_port = etcd.tls_port.expect("tls port");
    etcd.call(
        "/v3/auth/user/add",
        &serde_json::json!({"name": "root", "password": "s3cret"}),
    );
    etcd.call(
        "/v3/auth/user/grant",
        &serde_json::json!({"user": "root", "role": "root"}),
    );
    etcd.call("/v3/auth/enable", &serde_json::json!({}));

    // A longer lease than the failover tests': re-login after the
    // revocation costs a TLS round trip or three, and on a loaded CI host
    // (two cores, parallel suites) a 3 s lease once ran out meanwhile. The
    // check stays the same: the lease outlives its TTL after the tokens
    // were revoked, so keepalives got through on the new token.
    const TLS_TTL: u64 = 6;
    let fires = pki.path().join("fires");
    let port = free_port();
    let config = format!(
        "cluster:\n  backend: etcd\n  nodeName: solo\n  etcd:\n    endpoints: [https://127.0.0.1:{tls_port}]\n    ttl: {TLS_TTL}\n    username: root\n    password: {{fromFile: {password}}}\n    tls: {{ca: {ca_file}, cert: {client_cert}, key: {client_key}}}\n\
         web:\n  listen:\n    - http://127.0.0.1:{port}\n\
         jobs:\n  - name: tick\n    command: echo \"solo $(date +%s)\" >> {fires}\n    schedule: \"* * * * * * *\"\n",
        fires = fires.display(),
    );
    let daemon = Daemon::start(&config);
    wait_listening(port, Duration::from_secs(20));
    let leading = |what: &str| {
        let start = Instant::now();
        loop {
            let view = get(port, "/cluster").json();
            if view["is_leader"] == true && view["quorate"] == true {
                return view;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "{what}: {view}\n{}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let view = leading("never led over TLS with a user");
    assert_eq!(view["lease"]["holder"], "solo", "{view}");

    // Turning auth off and on again drops every token etcd issued: the
    // daemon's next request is refused with 401, and it must log in again
    // and keep leading (its lease and key survive).
    let login = etcd.call(
        "/v3/auth/authenticate",
        &serde_json::json!({"name": "root", "password": "s3cret"}),
    );
    let token = login["token"].as_str().expect("token").to_owned();
    etcd.call_as(Some(&token), "/v3/auth/disable", &serde_json::json!({}));
    etcd.call("/v3/auth/enable", &serde_json::json!({}));
    let revoked_at = now_secs();
    let lease_before = view["lease"]["leaseId"].clone();
    let start = Instant::now();
    while !read_lines(&fires).iter().any(|l| {
        l.split_once(' ')
            .and_then(|(_, s)| s.trim().parse::<u64>().ok())
            .is_some_and(|s| s > revoked_at + TLS_TTL)
    }) {
        assert!(
            start.elapsed() < PATIENCE,
            "no fires after the tokens were revoked:\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let view = leading("lost leadership after the tokens were revoked");
    assert_eq!(view["lease"]["leaseId"], lease_before, "{view}");
    assert!(
        !daemon.log().contains("lease round failed"),
        "{}",
        daemon.log()
    );
}
