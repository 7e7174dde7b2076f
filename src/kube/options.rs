//! What `--kube` and its companion flags ask for, parsed without touching
//! the network: `crate::daemon::args` fills [`KubeOptions`] from the command line (or the
//! `CRONSTABLE_*` variables) and [`crate::kube::client`] resolves it.

use std::fmt;
use std::path::PathBuf;

/// Which CronJobSets this scheduler takes (`--cronjobsets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetScope {
    /// The sets of the scheduler's own namespace (the default).
    #[default]
    Namespace,
    /// The sets of every namespace (needs cluster-wide list/watch rights).
    All,
    /// No sets at all: only the ConfigMap and the files.
    None,
}

impl SetScope {
    /// Parses the flag's value (`namespace`, `all` or `none`, any case).
    pub fn parse(text: &str) -> Result<SetScope, String> {
        match text.to_ascii_lowercase().as_str() {
            "namespace" => Ok(SetScope::Namespace),
            "all" => Ok(SetScope::All),
            "none" => Ok(SetScope::None),
            _ => Err(format!(
                "invalid --cronjobsets '{text}' (use namespace, all or none)"
            )),
        }
    }

    /// The flag's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SetScope::Namespace => "namespace",
            SetScope::All => "all",
            SetScope::None => "none",
        }
    }
}

impl fmt::Display for SetScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Kubernetes sources a scheduler was asked to follow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeOptions {
    /// `--kubeconfig`: a kubeconfig file to use instead of the pod's
    /// service account or `$KUBECONFIG`.
    pub kubeconfig: Option<PathBuf>,
    /// `--namespace`: where the ConfigMap lives and whose sets are taken.
    pub namespace: Option<String>,
    /// `--configmap`: the ConfigMap holding config sources, if any.
    pub configmap: Option<String>,
    /// `--cronjobsets`.
    pub scope: SetScope,
    /// `--selector`: a label selector the sets must match.
    pub selector: Option<String>,
    /// `--pod-name`: this scheduler's pod, which events about the
    /// scheduler itself (a missing ConfigMap) regard.
    pub pod_name: Option<String>,
    /// `--pod-uid`: its uid (so `kubectl describe pod` lists them).
    pub pod_uid: Option<String>,
    /// `--facts-configmap`: the ConfigMap the durable facts are kept in
    /// without `state.path` (None: [`crate::kube::facts::default_name`]).
    pub facts_configmap: Option<String>,
}

impl KubeOptions {
    /// The facts ConfigMap's name: `--facts-configmap`, else derived from
    /// `--configmap`.
    pub fn facts_name(&self) -> String {
        match &self.facts_configmap {
            Some(name) => name.clone(),
            None => crate::kube::facts::default_name(self.configmap.as_deref()),
        }
    }
}

/// Checks a label selector's syntax the way the API server reads it
/// (`key`, `!key`, `key=value`, `key==value`, `key!=value`,
/// `key in (a,b)`, `key notin (a,b)`, comma-separated), so a typo is a
/// clear error at start instead of a watch that fails forever.
pub fn check_selector(selector: &str) -> Result<(), String> {
    let bad = |what: &str| Err(format!("invalid --selector '{selector}': {what}"));
    for requirement in split_requirements(selector) {
        let requirement = requirement.trim();
        if requirement.is_empty() {
            return bad("an empty requirement (two commas, or a trailing comma)");
        }
        if let Some(key) = requirement.strip_prefix('!') {
            if !is_label_key(key.trim()) {
                return bad(&format!("'{}' is not a label key", key.trim()));
            }
            continue;
        }
        let words: Vec<&str> = requirement.splitn(2, char::is_whitespace).collect();
        if words.len() == 2 {
            let rest = words[1].trim_start();
            let set = rest
                .strip_prefix("notin")
                .or_else(|| rest.strip_prefix("in"))
                .map(str::trim);
            if let Some(set) = set {
                if !is_label_key(words[0]) {
                    return bad(&format!("'{}' is not a label key", words[0]));
                }
                let Some(values) = set.strip_prefix('(').and_then(|s| s.strip_suffix(')')) else {
                    return bad(&format!("'{requirement}': a set is written (a,b)"));
                };
                for value in values.split(',') {
                    if !is_label_value(value.trim()) {
                        return bad(&format!("'{}' is not a label value", value.trim()));
                    }
                }
                continue;
            }
        }
        let (key, value) = match requirement.split_once("!=") {
            Some(pair) => pair,
            None => match requirement.split_once("==") {
                Some(pair) => pair,
                None => requirement.split_once('=').unwrap_or((requirement, "")),
            },
        };
        let has_operator = requirement.contains('=');
        if !is_label_key(key.trim()) {
            return bad(&format!("'{}' is not a label key", key.trim()));
        }
        if has_operator && !is_label_value(value.trim()) {
            return bad(&format!("'{}' is not a label value", value.trim()));
        }
    }
    Ok(())
}

/// Splits on the commas that are not inside a `( )` set.
fn split_requirements(selector: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&selector[start..]);
    parts
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of
/// at most 63 alphanumerics, `-`, `_`, `.`, starting and ending with an
/// alphanumeric.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    });
    prefix_ok && !name.is_empty() && is_label_value(name)
}

/// A label value: empty, or at most 63 alphanumerics, `-`, `_`, `.`,
/// starting and ending with an alphanumeric.
fn is_label_value(value: &str) -> bool {
    if value.is_empty() {
        return true;
    }
    value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_in_any_case_and_refuse_the_rest() {
        assert_eq!(SetScope::parse("Namespace"), Ok(SetScope::Namespace));
        assert_eq!(SetScope::parse("all"), Ok(SetScope::All));
        assert_eq!(SetScope::parse("NONE"), Ok(SetScope::None));
        let err = SetScope::parse("cluster").expect_err("refused");
        assert!(err.contains("'cluster'") && err.contains("namespace, all or none"));
    }

    #[test]
    fn selectors_the_api_server_reads_pass() {
        for ok in [
            "team=a",
            "team==a",
            "team!=a",
            "team",
            "!team",
            "team=a,tier!=batch",
            "env in (prod, staging),team",
            "env notin (dev)",
            "app.kubernetes.io/name=cronstable",
            "team=",
        ] {
            assert_eq!(check_selector(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn malformed_selectors_are_named() {
        for (bad, says) in [
            ("team=a,", "empty requirement"),
            ("te am=a", "not a label key"),
            ("team=a b", "not a label value"),
            ("env in prod", "(a,b)"),
            ("-team=a", "not a label key"),
            ("team=-a", "not a label value"),
            ("Bad_Prefix.io/x=1", "not a label key"),
        ] {
            let err = check_selector(bad).expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.contains(&format!("'{bad}'")), "{err}");
        }
    }
}
