//! Rules for the whole-config sections, and the rules that span sections
//! and jobs (a job that needs a slot store, a feature not supported yet).

use super::error::{ConfigError, Location};
use super::job::JobConfig;
use super::model::sections::StateConfig;
use super::model::{ConcurrencyScope, WebConfig};
use super::sections::Sections;

/// Checks the `web` section on its own.
pub fn check_web(web: &WebConfig) -> Result<(), String> {
    if web.listen.is_empty() {
        return Err("listen needs at least one address".into());
    }
    for url in &web.listen {
        let known = ["http://", "https://", "unix://"]
            .iter()
            .any(|scheme| url.starts_with(scheme));
        if !known {
            return Err(format!(
                "listen address '{url}' must start with http://, https:// or unix://"
            ));
        }
    }
    let has_https = web.listen.iter().any(|u| u.starts_with("https://"));
    let tls = web.tls.clone().unwrap_or_default();
    match (&tls.cert, &tls.key) {
        (Some(_), None) | (None, Some(_)) => {
            return Err("tls.cert and tls.key must be set together".into())
        }
        (Some(_), Some(_)) if !has_https => {
            return Err("tls is configured but no listen address is https://".into())
        }
        (None, None) if has_https => {
            return Err("an https:// listen address needs tls.cert and tls.key".into())
        }
        _ => {}
    }
    if tls.client_ca.is_some() && tls.cert.is_none() {
        return Err("tls.clientCa needs tls.cert and tls.key".into());
    }
    let has_token = web.auth_token.as_ref().is_some_and(|t| t.is_configured())
        || web.auth_tokens.as_ref().is_some_and(|t| !t.is_empty());
    if web.anonymous_scopes.as_ref().is_some_and(|s| !s.is_empty()) && !has_token {
        return Err(
            "anonymousScopes needs authToken or authTokens (without a token every caller \
             already has every scope)"
                .into(),
        );
    }
    if let Some(tokens) = &web.auth_tokens {
        for token in tokens {
            if token.label.as_deref() == Some("anonymous") {
                return Err("authTokens: the label 'anonymous' is reserved".into());
            }
        }
    }
    if let Some(buckets) = web
        .metrics
        .as_ref()
        .and_then(|m| m.duration_buckets.as_ref())
    {
        let valid = buckets.iter().all(|b| b.is_finite() && *b > 0.0)
            && buckets.windows(2).all(|w| w[0] < w[1]);
        if !valid {
            return Err(
                "metrics.durationBuckets must be finite, positive and strictly increasing".into(),
            );
        }
    }
    if let Some(history) = &web.node_history {
        if history
            .interval
            .is_some_and(|i| !super::validate::at_least(i, 1.0))
        {
            return Err("nodeHistory.interval must be >= 1.0".into());
        }
        if history.points.is_some_and(|p| !(10..=50_000).contains(&p)) {
            return Err("nodeHistory.points must be between 10 and 50000".into());
        }
    }
    if let Some(mode) = &web.socket_mode {
        if u32::from_str_radix(mode.trim_start_matches("0o"), 8).is_err() {
            return Err(format!("socketMode '{mode}' is not an octal mode"));
        }
    }
    Ok(())
}

fn not_supported(source: &str, what: &str) -> ConfigError {
    ConfigError::config(
        Location::source(source),
        format!("{what} is not supported yet by this version of cronstable; remove it to run this config"),
    )
}

fn has_secrets(job: &JobConfig) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.secrets.as_ref())
        .is_some_and(|s| !s.0.is_empty())
}

/// Checks the `state` section with the original's messages (the keys it
/// validates at load). `lease_backend`: a `cluster` section with a lease
/// backend is configured, whose store may keep the slots instead of
/// `path` (our extension: then `path` may be left out).
pub fn check_state(state: &StateConfig, lease_backend: bool) -> Result<(), String> {
    if state.path.trim().is_empty() && !lease_backend {
        return Err("state.path is required and must be non-empty".into());
    }
    if state
        .slot_ttl_seconds
        .is_some_and(|v| !(v.is_finite() && v >= 5.0))
    {
        return Err("state.slotTtlSeconds must be >= 5 and finite".into());
    }
    if state
        .max_ops_per_second
        .is_some_and(|v| !(v.is_finite() && v >= 0.0))
    {
        return Err("state.maxOpsPerSecond must be >= 0 and finite".into());
    }
    if state.gc_grace_seconds.is_some_and(|v| v > 0 && v < 86_400) {
        return Err("state.gcGraceSeconds must be <= 0 (GC disabled) or >= 86400".into());
    }
    super::job_api::resolve(state.job_api.as_ref())?;
    Ok(())
}

/// Rules across sections and jobs, checked once on the assembled config.
pub fn check_cross_sections(
    jobs: &[JobConfig],
    sections: &Sections,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    let offenders = |pred: &dyn Fn(&JobConfig) -> bool| -> Vec<String> {
        let mut names: Vec<String> = jobs
            .iter()
            .filter(|j| pred(j))
            .map(|j| j.name.clone())
            .collect();
        names.sort();
        names
    };
    // Every lease backend's store can keep the slots (the directory, a
    // Lease per job, an etcd key per job).
    let lease_backend = sections.cluster.as_ref().is_some_and(|c| {
        matches!(
            super::cluster::resolve(&c.value, crate::platform::host_name()),
            Ok(super::cluster::Resolved::Lease { .. })
        )
    });
    if let Some(state) = &sections.state {
        check_state(&state.value, lease_backend)
            .map_err(|message| ConfigError::config(Location::source(&state.source), message))?;
    }
    // Here, not per job: the `state` section may sit in another file.
    if sections.state.is_none() {
        for job in jobs.iter().filter(|j| j.archive_output) {
            warnings.push(format!(
                "job '{}': archiveOutput has no effect without a state section",
                job.name
            ));
        }
    }
    let cluster_jobs = offenders(&|j| j.concurrency_scope == ConcurrencyScope::Cluster);
    if sections.state.is_none() && !lease_backend {
        if let Some(first) = jobs
            .iter()
            .find(|j| j.concurrency_scope == ConcurrencyScope::Cluster)
        {
            // The original's sentence, then ours in parentheses: here a
            // lease backend's store also keeps the slots.
            return Err(ConfigError::config(
                first.origin.clone(),
                format!(
                    "concurrencyScope: cluster requires a `state` section (the shared store is \
                     what coordinates the nodes), but none is configured; offending job(s): {} \
                     (a `cluster` section with the kubernetes, etcd or filesystem backend also \
                     serves as that store)",
                    cluster_jobs.join(", ")
                ),
            ));
        }
    }
    // Pool documents live where the slots do: `state.path`, else the
    // lease backend's store (its directory, Leases, etcd keys).
    let pool_store = lease_backend
        || sections
            .state
            .as_ref()
            .is_some_and(|s| !s.value.path.trim().is_empty());
    check_pools(jobs, sections, pool_store)?;
    let secret_jobs = offenders(&has_secrets);
    if let Some(first) = jobs.iter().find(|j| has_secrets(j)) {
        // Secrets are staged over the job endpoint (the original's texts).
        let message = match &sections.state {
            None => Some(format!(
                "job `secrets` are staged over the state loopback endpoint, which requires a \
                 `state` section; none is configured, offending job(s): {}",
                secret_jobs.join(", ")
            )),
            Some(state) if !super::job_api::enabled(&state.value) => Some(format!(
                "job `secrets` need the state loopback endpoint, but state.jobApi.enabled is \
                 false; offending job(s): {}",
                secret_jobs.join(", ")
            )),
            Some(_) => None,
        };
        if let Some(message) = message {
            return Err(ConfigError::config(first.origin.clone(), message));
        }
    }
    if let Some(cluster) = &sections.cluster {
        if let Err(message) = super::cluster::resolve(&cluster.value, crate::platform::host_name())
        {
            return Err(ConfigError::config(
                Location::source(&cluster.source),
                message.to_string(),
            ));
        }
    }
    if let Some(dag) = sections.dags.first() {
        return Err(not_supported(
            &dag.source,
            "the 'dags' section (orchestration DAGs)",
        ));
    }
    if let Some(mcp) = &sections.mcp {
        let web = sections.web.as_ref().map(|w| &w.value);
        match super::mcp::check(&mcp.value, web) {
            Ok(found) => warnings.extend(found),
            Err(message) => {
                return Err(ConfigError::config(Location::source(&mcp.source), message))
            }
        }
    }
    if let Some(notify) = &sections.notify {
        if let Some(report) = &notify.value.report {
            if let Err(e) = super::validate::check_templates(report) {
                return Err(ConfigError::config(
                    Location::source(&notify.source),
                    format!("notify.report.{}: invalid template: {}", e.key, e.message),
                ));
            }
            if report
                .push
                .as_ref()
                .is_some_and(|p| p.enabled == Some(true))
            {
                return Err(ConfigError::config(
                    Location::source(&notify.source),
                    "notify.report.push.enabled is set but there is no 'push' section; push \
                     notifications are not supported yet by this version of cronstable",
                ));
            }
        }
    }
    if let Some(push) = &sections.push {
        return Err(not_supported(
            &push.source,
            "the 'push' section (push notifications)",
        ));
    }
    let push_jobs = offenders(&|j| {
        [
            &j.on_success,
            &j.on_failure,
            &j.on_permanent_failure,
            &j.on_late,
        ]
        .iter()
        .any(|r| r.push.as_ref().is_some_and(|p| p.enabled == Some(true)))
    });
    if let Some(first) = jobs.iter().find(|j| push_jobs.contains(&j.name)) {
        return Err(ConfigError::config(
            first.origin.clone(),
            format!(
                "report.push.enabled is set (job(s) {}) but there is no 'push' section; push \
                 notifications are not supported yet by this version of cronstable",
                push_jobs.join(", ")
            ),
        ));
    }
    if let Some(web) = &sections.web {
        if web
            .value
            .bonjour
            .as_ref()
            .is_some_and(|b| b.enabled.unwrap_or(true))
        {
            return Err(not_supported(&web.source, "web.bonjour (LAN discovery)"));
        }
    }
    if let Some(logging) = &sections.logging {
        let found = crate::logging::check_section(&logging.value)
            .map_err(|e| ConfigError::config(Location::source(&logging.source), e.to_string()))?;
        warnings.extend(found);
    }
    Ok(())
}

/// The pool rules across sections and jobs, in the original's order and
/// words: pools need durable state (ours: `state.path`, or a `cluster`
/// section whose lease backend keeps the slots, also keeps the pools); a
/// job names a defined pool, and its `poolSlots` fit in it.
fn check_pools(
    jobs: &[JobConfig],
    sections: &Sections,
    pool_store: bool,
) -> Result<(), ConfigError> {
    if let (Some(first), false) = (sections.pools.first(), pool_store) {
        let gossip = sections.cluster.as_ref().is_some_and(|c| {
            matches!(
                super::cluster::resolve(&c.value, crate::platform::host_name()),
                Ok(super::cluster::Resolved::Gossip { .. })
            )
        });
        // The original's sentence, then ours: where the queues can live.
        let message = if gossip {
            "pools require durable state: the gossip backend keeps no shared store for the pool \
             queues; set state.path (a directory every node shares)"
        } else if sections.state.is_none() {
            "pools require durable state"
        } else {
            "pools require durable state: a state.path, or a cluster section with the \
             kubernetes, etcd or filesystem backend, keeps the pool queues"
        };
        return Err(ConfigError::config(
            Location::source(&first.source),
            message,
        ));
    }
    let table = sections.pool_table();
    for job in jobs {
        let Some(pool) = &job.pool else { continue };
        let repr = crate::pyfmt::repr_str;
        let message = match table.get(&pool.name) {
            None => format!("job {}: unknown pool {}", repr(&job.name), repr(&pool.name)),
            Some(conf) if pool.slots > conf.slots => {
                format!("job {}: poolSlots exceeds pool capacity", repr(&job.name))
            }
            Some(_) => continue,
        };
        return Err(ConfigError::config(job.origin.clone(), message));
    }
    Ok(())
}
