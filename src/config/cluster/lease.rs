//! The lease backends' blocks (`kubernetes`, `etcd`, `filesystem`)
//! resolved and checked.

use super::{ClusterConfigError, EtcdSettings, FilesystemSettings, KubernetesSettings};
use crate::config::model::sections::{ClusterConfig, Topology};
use crate::config::model::SecretSource;

fn is_dns_subdomain(name: &str) -> bool {
    let bytes = name.as_bytes();
    !name.is_empty()
        && name.len() <= 253
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-' || *b == b'.')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !name.is_empty()
        && name.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// A URL for an error message, with any `user:password@` removed.
fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let hidden = if authority.contains('@') { "***@" } else { "" };
            format!("{scheme}://{hidden}{host}{path}")
        }
        None => url.to_owned(),
    }
}

pub(super) fn kubernetes(
    cluster: &ClusterConfig,
    node_name: &str,
) -> Result<KubernetesSettings, ClusterConfigError> {
    let k = cluster.kubernetes.clone().unwrap_or_default();
    let lease_name = k
        .lease_name
        .unwrap_or_else(|| "cronstable-leader".to_owned());
    if !is_dns_subdomain(&lease_name) {
        return Err(ClusterConfigError::LeaseName(lease_name));
    }
    if let Some(ns) = &k.lease_namespace {
        if !is_dns_label(ns) {
            return Err(ClusterConfigError::LeaseNamespace(ns.clone()));
        }
    }
    if let Some(server) = &k.api_server {
        if !server.starts_with("https://") {
            return Err(ClusterConfigError::ApiServerNotHttps(redact(server)));
        }
    }
    let duration = k.lease_duration_seconds.unwrap_or(15);
    let renew = k.renew_deadline_seconds.unwrap_or(10);
    let retry = k.retry_period_seconds.unwrap_or(2);
    if renew <= 0 {
        return Err(ClusterConfigError::RenewDeadlineNotPositive);
    }
    if duration <= renew {
        return Err(ClusterConfigError::DurationNotAboveRenew { duration, renew });
    }
    if retry <= 0 {
        return Err(ClusterConfigError::RetryNotPositive);
    }
    if retry >= renew {
        return Err(ClusterConfigError::RetryNotBelowRenew { retry, renew });
    }
    if renew + retry >= duration {
        return Err(ClusterConfigError::RenewalGapOutlivesLease {
            renew,
            retry,
            duration,
        });
    }
    Ok(KubernetesSettings {
        lease_name,
        lease_namespace: k.lease_namespace,
        lease_duration_seconds: duration as u64,
        renew_deadline_seconds: renew as u64,
        retry_period_seconds: retry as u64,
        identity: k
            .identity
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| node_name.to_owned()),
        kubeconfig: k.kubeconfig,
        api_server: k.api_server,
    })
}

fn ttl_floor(key: &'static str, ttl: f64) -> Result<(), ClusterConfigError> {
    if ttl.is_finite() && ttl >= 3.0 {
        return Ok(());
    }
    Err(ClusterConfigError::TtlTooShort { key, ttl })
}

pub(super) fn etcd(
    cluster: &ClusterConfig,
) -> Result<(EtcdSettings, Option<String>), ClusterConfigError> {
    let e = cluster.etcd.clone().unwrap_or_default();
    let ttl = e.ttl.unwrap_or(15);
    ttl_floor("cluster.etcd.ttl", ttl as f64)?;
    let endpoints = e
        .endpoints
        .unwrap_or_else(|| vec!["http://127.0.0.1:2379".to_owned()]);
    if endpoints.is_empty() {
        return Err(ClusterConfigError::NoEtcdEndpoints);
    }
    for endpoint in &endpoints {
        let authority = endpoint
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or_default())
            .unwrap_or_default();
        if authority.contains('@') {
            return Err(ClusterConfigError::EndpointCredentials(redact(endpoint)));
        }
        let scheme_ok = endpoint.starts_with("http://") || endpoint.starts_with("https://");
        let port_ok = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                port.parse::<u16>().is_ok_and(|p| p > 0)
            }
            _ => true,
        };
        if !scheme_ok || authority.is_empty() || !port_ok {
            return Err(ClusterConfigError::EndpointShape(redact(endpoint)));
        }
    }
    let tls = e.tls.clone().unwrap_or_default();
    if tls.cert.is_some() != tls.key.is_some() {
        return Err(ClusterConfigError::CertWithoutKey {
            cert: tls.cert.is_some(),
            key: tls.key.is_some(),
        });
    }
    let any_https = endpoints.iter().any(|u| u.starts_with("https://"));
    if (tls.ca.is_some() || tls.cert.is_some() || tls.key.is_some()) && !any_https {
        return Err(ClusterConfigError::TlsWithoutHttps);
    }
    let password = e.password.clone().filter(SecretSource::is_configured);
    if e.username.is_some() && password.is_none() {
        return Err(ClusterConfigError::UsernameWithoutPassword);
    }
    if e.username.is_some() || password.is_some() {
        let plain: Vec<String> = endpoints
            .iter()
            .filter(|u| !u.starts_with("https://"))
            .map(|u| redact(u))
            .collect();
        if !plain.is_empty() {
            return Err(ClusterConfigError::CredentialsInCleartext(plain));
        }
    }
    let renew = (ttl as f64 / 3.0).max(1.0);
    let budget = (ttl as f64 - renew - 1.0) / 5.0;
    let advisory = (budget < 1.0).then(|| {
        format!(
            "cluster.etcd.ttl={ttl}s leaves only a ~{budget:.1}s per-request timeout for each \
             renew POST to etcd; if a single round-trip is slower than that (e.g. a \
             cross-AZ/region endpoint) every renew round will time out and this node will treat \
             a reachable etcd as unreachable, so Leader jobs fail closed. Raise cluster.etcd.ttl \
             unless etcd is local and low-latency."
        )
    });
    Ok((
        EtcdSettings {
            endpoints,
            election_name: e
                .election_name
                .unwrap_or_else(|| "cronstable/leader".to_owned()),
            ttl: ttl as u64,
            username: e.username,
            password,
            ca: tls.ca,
            cert: tls.cert,
            key: tls.key,
        },
        advisory,
    ))
}

pub(super) fn filesystem(
    cluster: &ClusterConfig,
) -> Result<FilesystemSettings, ClusterConfigError> {
    let f = cluster.filesystem.clone().unwrap_or_default();
    let path = f.path.unwrap_or_default();
    if path.trim().is_empty() {
        return Err(ClusterConfigError::FilesystemPath);
    }
    let election_name = f
        .election_name
        .unwrap_or_else(|| "cluster/leader".to_owned());
    if election_name.trim().is_empty() {
        return Err(ClusterConfigError::FilesystemElectionName);
    }
    let ttl = f.ttl.unwrap_or(15.0);
    ttl_floor("cluster.filesystem.ttl", ttl)?;
    Ok(FilesystemSettings {
        path,
        election_name,
        ttl,
        deployment_id: f
            .deployment_id
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "default".to_owned()),
        topology: f.topology.unwrap_or(Topology::Auto),
    })
}
