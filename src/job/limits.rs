//! `resourceLimits`, the pure part: which of a run's caps can apply on
//! this host, the limits record each capped run carries (what applied,
//! what did not and why, what the kernel counted), the failure reasons a
//! cap gives a run, and the texts the daemon logs about them. The cgroup
//! work is `platform::cgroup`'s; `contain` joins the two.

use crate::config::limits::{format_size, ResourceLimits};
use crate::platform::{CgroupCapability, CgroupCaps, CgroupStats, LimitResource};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The reasons caps did not apply, per resource.
pub type Unenforced = BTreeMap<LimitResource, String>;

/// The platform's caps for `caps`.
pub fn cgroup_caps(caps: &ResourceLimits) -> CgroupCaps {
    CgroupCaps {
        cpu: caps.cpu,
        memory: caps.memory,
        processes: caps.processes,
    }
}

/// The resources `caps` sets, in record order.
pub fn configured(caps: &ResourceLimits) -> Vec<LimitResource> {
    cgroup_caps(caps).configured()
}

/// A mechanism as the logs name it.
pub fn mechanism_label(mechanism: &str) -> &str {
    match mechanism {
        "cgroup-v2" => "cgroup v2",
        "cgroup-v1" => "cgroup v1",
        "job-object" => "Windows Job Objects",
        other => other,
    }
}

/// What to do with one capped run before it spawns.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `required` and a cap cannot apply: the run never spawns.
    Refuse,
    /// No cap can apply: the run spawns without a cgroup.
    RunBare,
    /// Spawn it in a cgroup with these caps (the ones the host has).
    Contain(CgroupCaps),
}

/// The decision for one capped run, and the caps left out up front.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What to do.
    pub action: Action,
    /// The configured caps this host cannot apply, and why.
    pub unenforced: Unenforced,
}

/// Decides a capped run's fate from what the host can cap. `weighting`
/// (v2 with CPU control on) still gives a run whose caps all fail a
/// cgroup, for its CPU weight.
pub fn plan(caps: &ResourceLimits, capability: &CgroupCapability, weighting: bool) -> Plan {
    let configured = configured(caps);
    let reason = capability
        .reason
        .clone()
        .unwrap_or_else(|| "not supported".into());
    let unenforced: Unenforced = configured
        .iter()
        .filter(|r| !capability.available || !capability.resources.contains(r))
        .map(|r| (*r, reason.clone()))
        .collect();
    let action = if !unenforced.is_empty() && caps.required {
        Action::Refuse
    } else if unenforced.len() == configured.len() && !weighting {
        Action::RunBare
    } else {
        let keep = |r: LimitResource| !unenforced.contains_key(&r);
        Action::Contain(CgroupCaps {
            cpu: caps.cpu.filter(|_| keep(LimitResource::Cpu)),
            memory: caps.memory.filter(|_| keep(LimitResource::Memory)),
            processes: caps.processes.filter(|_| keep(LimitResource::Processes)),
        })
    };
    Plan { action, unenforced }
}

/// A run's caps and what the kernel did with them: the `limits` object of
/// the run record, `GET /jobs/{name}/runs` and the report templates.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitsRecord {
    /// The CPU cap, CPUs.
    pub cpu: Option<f64>,
    /// The memory cap, bytes.
    pub memory_bytes: Option<u64>,
    /// The process cap.
    pub processes: Option<u64>,
    /// `resourceLimits.required`.
    pub required: bool,
    /// Every configured cap applied for the whole run.
    pub enforced: bool,
    /// The mechanism, when some configured cap was in force.
    pub mechanism: Option<String>,
    /// The configured caps that did not apply.
    pub unenforced: Vec<LimitResource>,
    /// Why they did not.
    pub reason: Option<String>,
    /// A required run whose caps could not apply: it never spawned, or its
    /// cgroup ended the process.
    pub refused: bool,
    /// The memory cap ended the run.
    pub memory_exceeded: bool,
    /// Forks the process cap refused (the kernel's count).
    pub process_limit_hits: Option<u64>,
    /// The memory figure the cap is measured on, at its highest.
    pub peak_memory_bytes: Option<u64>,
    /// Time the CPU cap held the run back, seconds.
    pub cpu_throttled_seconds: Option<f64>,
}

impl LimitsRecord {
    /// The failure a run's caps give it, which wins over `failsWhen`:
    /// a refusal, or the memory cap ending the run.
    pub fn failure(&self) -> Option<String> {
        if self.refused {
            let detail = self
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            return Some(format!(
                "resource limits could not be enforced{detail} (resourceLimits.required is set)"
            ));
        }
        if self.memory_exceeded {
            return Some(match self.memory_bytes {
                Some(bytes) => format!("memory limit exceeded ({})", format_size(bytes)),
                None => "memory limit exceeded".into(),
            });
        }
        None
    }

    /// The JSON form (the original's keys and types).
    pub fn to_json(&self) -> Value {
        let finite = |v: Option<f64>| v.filter(|x| x.is_finite() && *x >= 0.0);
        json!({
            "cpu": finite(self.cpu),
            "memory_bytes": self.memory_bytes,
            "processes": self.processes,
            "required": self.required,
            "enforced": self.enforced,
            "mechanism": self.mechanism,
            "unenforced": self.unenforced.iter().map(|r| r.name()).collect::<Vec<_>>(),
            "reason": self.reason,
            "refused": self.refused,
            "memory_exceeded": self.memory_exceeded,
            "process_limit_hits": self.process_limit_hits,
            "peak_memory_bytes": self.peak_memory_bytes,
            "cpu_throttled_seconds": finite(self.cpu_throttled_seconds),
        })
    }

    /// Rebuilds a record from [`LimitsRecord::to_json`] output (a ledger
    /// row); `None` without a boolean `enforced`. Any other field that is
    /// missing or of the wrong type reads as unset.
    pub fn from_json(data: &Value) -> Option<LimitsRecord> {
        let map = data.as_object()?;
        let enforced = map.get("enforced")?.as_bool()?;
        let uint = |k: &str| map.get(k).and_then(Value::as_u64);
        let float = |k: &str| {
            map.get(k)
                .filter(|v| v.is_number())
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        let text = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
        let flag = |k: &str| map.get(k).and_then(Value::as_bool) == Some(true);
        let names: Vec<&str> = map
            .get("unenforced")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Some(LimitsRecord {
            cpu: float("cpu"),
            memory_bytes: uint("memory_bytes"),
            processes: uint("processes"),
            required: flag("required"),
            enforced,
            mechanism: text("mechanism"),
            unenforced: LimitResource::ALL
                .into_iter()
                .filter(|r| names.contains(&r.name()))
                .collect(),
            reason: text("reason"),
            refused: flag("refused"),
            memory_exceeded: flag("memory_exceeded"),
            process_limit_hits: uint("process_limit_hits"),
            peak_memory_bytes: uint("peak_memory_bytes"),
            cpu_throttled_seconds: float("cpu_throttled_seconds"),
        })
    }
}

impl serde::Serialize for LimitsRecord {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// The record of a run capped by `caps`: `unenforced` names the caps that
/// did not apply, `contained` says the run had a cgroup, `mechanism` is
/// the backend's. The record names a mechanism only while some configured
/// cap was in force.
pub fn record(
    caps: &ResourceLimits,
    unenforced: &Unenforced,
    contained: bool,
    mechanism: Option<&str>,
    refused: bool,
    stats: &CgroupStats,
) -> LimitsRecord {
    let configured = configured(caps);
    let names: Vec<LimitResource> = configured
        .iter()
        .copied()
        .filter(|r| unenforced.contains_key(r))
        .collect();
    let mut reasons: Vec<&str> = Vec::new();
    for r in &names {
        let reason = unenforced[r].as_str();
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    let in_force = contained && names.len() < configured.len();
    LimitsRecord {
        cpu: caps.cpu,
        memory_bytes: caps.memory,
        processes: caps.processes,
        required: caps.required,
        enforced: names.is_empty(),
        mechanism: mechanism.filter(|_| in_force).map(str::to_owned),
        unenforced: names,
        reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        refused,
        memory_exceeded: stats.memory_exceeded,
        process_limit_hits: stats.process_limit_hits,
        peak_memory_bytes: stats.peak_memory_bytes,
        cpu_throttled_seconds: stats.cpu_throttled_seconds,
    }
}

/// The host's capability as `GET /node` serves it (`limits`).
pub fn capability_json(capability: &CgroupCapability) -> Value {
    json!({
        "available": capability.available,
        "mechanism": capability.mechanism,
        "resources": capability.resources.iter().map(|r| r.name()).collect::<Vec<_>>(),
        "reason": capability.reason,
        "hint": capability.hint,
    })
}

/// `a`, `a and b`, `a, b, and c`.
pub fn words(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// What the daemon logs when a config with caps is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// Every configured cap can apply (INFO).
    Enforced(String),
    /// Some cannot (WARNING).
    Unenforced(String),
}

/// The report for the capped jobs `capped` (`(display name, caps)`) on a
/// host that can cap `capability`.
pub fn converge_report(
    capability: &CgroupCapability,
    capped: &[(String, ResourceLimits)],
) -> Report {
    let affected: Vec<&(String, ResourceLimits)> = capped
        .iter()
        .filter(|(_, caps)| {
            !capability.available
                || configured(caps)
                    .iter()
                    .any(|r| !capability.resources.contains(r))
        })
        .collect();
    if affected.is_empty() {
        let mechanism = capability.mechanism.unwrap_or("");
        return Report::Enforced(format!(
            "resource limits are enforced with {}",
            mechanism_label(mechanism)
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in &affected {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    let names = names.join(", ");
    let reason = capability.reason.as_deref().unwrap_or("unknown reason");
    let (lead, tail) = if capability.available {
        let missing: Vec<&str> = LimitResource::ALL
            .into_iter()
            .filter(|r| {
                !capability.resources.contains(r)
                    && affected
                        .iter()
                        .any(|(_, caps)| configured(caps).contains(r))
            })
            .map(LimitResource::name)
            .collect();
        let plural = missing.len() > 1;
        (
            format!(
                "resourceLimits is set ({names}), but cronstable cannot enforce the {} cap{}: \
                 {reason}.",
                words(&missing),
                if plural { "s" } else { "" }
            ),
            format!(
                "Those jobs run without {}.",
                if plural { "those caps" } else { "that cap" }
            ),
        )
    } else {
        (
            format!("resourceLimits is set ({names}), but cronstable cannot enforce it: {reason}."),
            "Those jobs run without caps.".to_owned(),
        )
    };
    let mut parts = vec![lead];
    if let Some(hint) = &capability.hint {
        parts.push(format!("{hint}."));
    }
    parts.push(tail);
    let mut required: Vec<&str> = Vec::new();
    for (name, caps) in &affected {
        if caps.required && !required.contains(&name.as_str()) {
            required.push(name);
        }
    }
    if !required.is_empty() {
        parts.push(format!(
            "Runs of {} fail until the caps can be enforced (resourceLimits.required).",
            required.join(", ")
        ));
    }
    Report::Unenforced(parts.join(" "))
}

#[cfg(test)]
mod tests;
