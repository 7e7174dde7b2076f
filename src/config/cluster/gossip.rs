//! The gossip transport's keys resolved and checked: the listen address,
//! the peers (self-listings dropped), TLS and the advisories; also the
//! overlay mesh a lease backend's `observability` block stands up.

use super::error::py_repr;
use super::{ClusterConfigError, GossipSettings, GossipTls};
use crate::config::model::sections::{
    ClusterBackend, ClusterConfig, Distribution, Observability, PeerTls,
};
use std::net::IpAddr;

/// A port as the original accepts it: 1 to 5 ASCII digits, 1-65535.
fn is_port(port: &str) -> bool {
    !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p))
}

/// Checks `addr` is `host:port` or `[ipv6]:port`; `key` names the key.
fn require_host_port(addr: &str, key: &'static str) -> Result<(), ClusterConfigError> {
    let value = addr.to_owned();
    if addr.starts_with('[') {
        let ok = addr
            .rsplit_once("]:")
            .is_some_and(|(bracket, port)| bracket.len() > 1 && is_port(port));
        return if ok {
            Ok(())
        } else {
            Err(ClusterConfigError::BracketedAddress { key, value })
        };
    }
    let (host, port) = addr.rsplit_once(':').unwrap_or(("", addr));
    if host.contains(':') {
        return Err(ClusterConfigError::BareIpv6 { key, value });
    }
    if host.is_empty() || !is_port(port) {
        return Err(ClusterConfigError::HostPort { key, value });
    }
    Ok(())
}

/// Splits at the last colon, as the original does (`rpartition`).
fn split_last_colon(addr: &str) -> (&str, &str) {
    addr.rsplit_once(':').unwrap_or(("", addr))
}

const WILDCARD_V4: [&str; 3] = ["0.0.0.0", "*", ""];
const WILDCARD_V6: [&str; 4] = ["::", "[::]", "*", ""];

fn is_wildcard(host: &str) -> bool {
    WILDCARD_V4.contains(&host) || WILDCARD_V6.contains(&host)
}

/// 4 or 6 for a literal loopback address (brackets allowed), else None.
/// Literal parsing only: no name is resolved.
fn loopback_version(host: &str) -> Option<u8> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) if ip.is_loopback() => Some(4),
        Ok(IpAddr::V6(ip)) if ip.is_loopback() => Some(6),
        _ => None,
    }
}

/// Whether a peer entry can only be this node: our exact listen address;
/// under a wildcard listen, our exact node name or a loopback literal of
/// the bound family on our port. Anything fuzzier could drop a real
/// member and shrink this node's cluster size below everyone else's.
fn is_self_listed(peer: &str, listen: &str, node_name: &str) -> bool {
    if peer == listen {
        return true;
    }
    let (listen_host, listen_port) = split_last_colon(listen);
    if !is_wildcard(listen_host) {
        return false;
    }
    let (peer_host, peer_port) = split_last_colon(peer);
    if peer_port != listen_port {
        return false;
    }
    if peer_host == node_name {
        return true;
    }
    match loopback_version(peer_host) {
        Some(4) => WILDCARD_V4.contains(&listen_host),
        Some(6) => WILDCARD_V6.contains(&listen_host),
        _ => false,
    }
}

/// A peer on our port under a wildcard listen whose first DNS label is our
/// node name (diagnostics only: never dropped).
fn likely_self_fqdn(peer: &str, listen: &str, node_name: &str) -> bool {
    if is_self_listed(peer, listen, node_name) {
        return false;
    }
    let (listen_host, listen_port) = split_last_colon(listen);
    let (peer_host, peer_port) = split_last_colon(peer);
    is_wildcard(listen_host)
        && peer_port == listen_port
        && peer_host != node_name
        && peer_host.split('.').next() == Some(node_name)
}

/// A loopback-looking peer on our own port (diagnostics only).
fn likely_self_loopback(peer: &str, listen: &str) -> bool {
    let (_, listen_port) = split_last_colon(listen);
    let (peer_host, peer_port) = split_last_colon(peer);
    peer_port == listen_port && (peer_host == "localhost" || loopback_version(peer_host).is_some())
}

fn gossip_tls(tls: &PeerTls) -> Result<GossipTls, ClusterConfigError> {
    let get = |value: &Option<String>, key: &'static str| {
        value
            .clone()
            .filter(|v| !v.is_empty())
            .ok_or(ClusterConfigError::TlsRequires { key })
    };
    Ok(GossipTls {
        ca: get(&tls.ca, "ca")?,
        cert: get(&tls.cert, "cert")?,
        key: get(&tls.key, "key")?,
    })
}

/// Builds the gossip settings from the section's keys (also used for the
/// observability overlay of a lease backend).
pub(super) fn gossip(
    cluster: &ClusterConfig,
    host_name: &str,
) -> Result<(GossipSettings, Vec<String>), ClusterConfigError> {
    let node_name = cluster
        .node_name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| host_name.to_owned());
    let (Some(listen), Some(tls), Some(peers)) = (&cluster.listen, &cluster.tls, &cluster.peers)
    else {
        let missing = [
            ("listen", cluster.listen.is_none()),
            ("tls", cluster.tls.is_none()),
            ("peers", cluster.peers.is_none()),
        ]
        .into_iter()
        .find_map(|(k, absent)| absent.then_some(k))
        .unwrap_or("listen");
        return Err(ClusterConfigError::GossipRequires { key: missing });
    };
    let tls = gossip_tls(tls)?;
    require_host_port(listen, "listen")?;
    for peer in peers {
        require_host_port(&peer.host, "peers[].host")?;
    }
    let mut kept: Vec<String> = Vec::new();
    for peer in peers {
        if !is_self_listed(&peer.host, listen, &node_name) && !kept.contains(&peer.host) {
            kept.push(peer.host.clone());
        }
    }
    let elect_leader = cluster.elect_leader.unwrap_or(false);
    let distribution = cluster.distribution.unwrap_or(Distribution::SingleLeader);
    let size = kept.len() + 1;
    if elect_leader && size == 2 {
        return Err(ClusterConfigError::TwoNodeElection);
    }
    let share_node_stats = match &cluster.observability {
        None => false,
        Some(obs) => {
            if obs.listen.is_some() || obs.tls.is_some() || obs.peers.is_some() {
                return Err(ClusterConfigError::RedundantObservabilityMesh);
            }
            for (key, set) in [
                ("nodeName", obs.node_name.is_some()),
                ("interval", obs.interval.is_some()),
                ("driftAfter", obs.drift_after.is_some()),
                ("connectTimeout", obs.connect_timeout.is_some()),
            ] {
                if set {
                    return Err(ClusterConfigError::OverlayKeyWithGossip { key });
                }
            }
            obs.share_node_stats != Some(false)
        }
    };
    let mut advisories = Vec::new();
    if elect_leader {
        if size > 2 && size.is_multiple_of(2) {
            advisories.push(format!(
                "cluster.electLeader: an even cluster size ({size} nodes) tolerates no more \
                 failures than {} (the next-lower odd size); shrink to {} for the same tolerance \
                 with one fewer node, or grow to {} to tolerate one more failure; prefer an odd \
                 size.",
                size - 1,
                size - 1,
                size + 1
            ));
        }
        let fqdn: Vec<&str> = kept
            .iter()
            .filter(|p| likely_self_fqdn(p, listen, &node_name))
            .map(String::as_str)
            .collect();
        if !fqdn.is_empty() && size - fqdn.len() <= 2 {
            advisories.push(format!(
                "cluster.electLeader: {} peer(s) look like this node listed by FQDN ({}) while \
                 nodeName is {}; if so the real cluster is only {} node(s) and leader election \
                 will be degenerate or refused at runtime. List the peer by its exact nodeName, \
                 or fix the addresses.",
                fqdn.len(),
                fqdn.join(", "),
                py_repr(&node_name),
                size - fqdn.len()
            ));
        }
        let loopback: Vec<&str> = kept
            .iter()
            .filter(|p| likely_self_loopback(p, listen))
            .map(String::as_str)
            .collect();
        if !loopback.is_empty() && size - loopback.len() <= 2 {
            advisories.push(format!(
                "cluster.electLeader: {} peer(s) are loopback addresses on this node's own port \
                 ({}); a loopback entry never reaches another host, so at best it is this node \
                 itself and the real cluster is only {} node(s) -- leader election will be \
                 degenerate or refused at runtime. List each peer by an address the other nodes \
                 are reached at.",
                loopback.len(),
                loopback.join(", "),
                size - loopback.len()
            ));
        }
    } else if distribution != Distribution::SingleLeader {
        advisories.push(
            "cluster.distribution='spread' has no effect without electLeader; without leader \
             election every node runs every job."
                .to_owned(),
        );
    }
    Ok((
        GossipSettings {
            node_name,
            listen: listen.clone(),
            peers: kept,
            cluster_size: size,
            elect_leader,
            distribution,
            interval: cluster.interval.unwrap_or(30) as u64,
            drift_after: cluster
                .drift_after
                .unwrap_or(3)
                .clamp(1, i64::from(u32::MAX)) as u32,
            connect_timeout: cluster.connect_timeout.unwrap_or(10) as u64,
            tls,
            share_node_stats,
        },
        advisories,
    ))
}

/// A lease backend's `observability` block stands up its own
/// election-inert gossip mesh, so it needs the whole transport.
pub(super) fn lease_observability(
    obs: &Observability,
    backend_name: &'static str,
) -> Result<(), ClusterConfigError> {
    for (key, absent) in [
        ("listen", obs.listen.is_none()),
        ("tls", obs.tls.is_none()),
        ("peers", obs.peers.is_none()),
    ] {
        if absent {
            return Err(ClusterConfigError::ObservabilityRequires {
                key,
                backend: backend_name,
            });
        }
    }
    for (key, value) in [
        ("connectTimeout", obs.connect_timeout),
        ("interval", obs.interval),
    ] {
        if value.is_some_and(|v| v <= 0) {
            return Err(ClusterConfigError::NotPositive { key });
        }
    }
    if obs.drift_after.is_some_and(|v| v < 1) {
        return Err(ClusterConfigError::DriftAfterBelowOne);
    }
    let mesh = ClusterConfig {
        backend: Some(ClusterBackend::Gossip),
        listen: obs.listen.clone(),
        tls: obs.tls.clone(),
        peers: obs.peers.clone(),
        node_name: obs.node_name.clone(),
        elect_leader: Some(false),
        ..ClusterConfig::default()
    };
    gossip(&mesh, "").map(|_| ())
}
