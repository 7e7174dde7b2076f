//! `${VAR}` / `${VAR:-fallback}` / `$$` expansion of config string values
//! against the daemon's environment.
//!
//! Commands and shells are left alone (the job's own shell expands them
//! against the job's environment at run time), and so is the `logging`
//! section, whose formatters may legitimately contain `${...}`.

use serde_yaml::Value;

/// A `${VAR}` whose variable is unset and has no fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingVariable {
    /// Key path of the value that referenced it, e.g. `web.listen[0]`.
    pub path: String,
    /// Variable name.
    pub variable: String,
}

/// Expands one string. Malformed references (`$`, `$VAR`, `${bad-name}`,
/// an unclosed `${`) are kept as written.
pub fn expand_str(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    if !text.contains('$') {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        if let Some((consumed, replacement)) = parse_reference(after, lookup)? {
            out.push_str(&replacement);
            rest = &after[consumed..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Parses `{NAME}` or `{NAME:-fallback}` at the start of `after` (the text
/// following a `$`). Returns the bytes consumed and the replacement, `None`
/// when the text is not a well-formed reference, or the variable name when
/// it is unset with no fallback.
fn parse_reference(
    after: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(usize, String)>, String> {
    let Some(body) = after.strip_prefix('{') else {
        return Ok(None);
    };
    let Some(close) = body.find('}') else {
        return Ok(None);
    };
    let inner = &body[..close];
    let (name, fallback) = match inner.find(":-") {
        Some(i) => (&inner[..i], Some(&inner[i + 2..])),
        None => (inner, None),
    };
    if !is_variable_name(name) {
        return Ok(None);
    }
    let consumed = 1 + close + 1;
    let value = lookup(name);
    let replacement = match (value, fallback) {
        (Some(v), Some(fb)) if v.is_empty() => fb.to_owned(),
        (Some(v), _) => v,
        (None, Some(fb)) => fb.to_owned(),
        (None, None) => return Err(name.to_owned()),
    };
    Ok(Some((consumed, replacement)))
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Expands every string value of a parsed document in place, skipping the
/// subtrees that belong to another layer's expansion.
pub fn expand_document(
    doc: &mut Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), MissingVariable> {
    walk(doc, &mut String::new(), lookup)
}

fn walk(
    value: &mut Value,
    path: &mut String,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), MissingVariable> {
    match value {
        Value::String(s) if s.contains('$') => {
            *s = expand_str(s, lookup).map_err(|variable| MissingVariable {
                path: path.clone(),
                variable,
            })?;
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, lookup)?;
                path.truncate(len);
            }
        }
        Value::Mapping(map) => {
            for (key, item) in map.iter_mut() {
                let Some(key) = key.as_str() else { continue };
                if is_skipped(path, key) {
                    continue;
                }
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                walk(item, path, lookup)?;
                path.truncate(len);
            }
        }
        Value::Tagged(tagged) => walk(&mut tagged.value, path, lookup)?,
        _ => {}
    }
    Ok(())
}

/// Keys whose values are never expanded at load.
fn is_skipped(parent: &str, key: &str) -> bool {
    if parent.is_empty() {
        return key == "logging";
    }
    let is_list_item = |p: &str| p.ends_with(']') && p.matches('.').count() == 0;
    let is_job_like = |parent: &str| {
        parent == "defaults"
            || (parent.starts_with("jobs[") && is_list_item(parent))
            || (parent.starts_with("dags[")
                && parent.ends_with(']')
                && parent.contains(".tasks[")
                && parent.matches('.').count() == 1)
    };
    // A job's `verify` check is a command like the job's own: the shell
    // expands its variables at run time.
    let is_shell_map =
        is_job_like(parent) || parent.strip_suffix(".verify").is_some_and(is_job_like);
    let is_report_block = parent.ends_with(".report") || parent == "notify.report";
    (is_shell_map && (key == "command" || key == "shell")) || (is_report_block && key == "shell")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("db1".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn braced_forms_expand() {
        assert_eq!(expand_str("${HOST}:5432", &env).unwrap(), "db1:5432");
        assert_eq!(expand_str("${NOPE:-x}", &env).unwrap(), "x");
        assert_eq!(expand_str("${EMPTY:-x}", &env).unwrap(), "x");
        assert_eq!(expand_str("a${EMPTY}b", &env).unwrap(), "ab");
        assert_eq!(expand_str("${HOST:-x}", &env).unwrap(), "db1");
    }

    #[test]
    fn dollar_dollar_is_literal_and_malformed_is_kept() {
        assert_eq!(expand_str("cost $$5", &env).unwrap(), "cost $5");
        assert_eq!(expand_str("$${HOST}", &env).unwrap(), "${HOST}");
        assert_eq!(
            expand_str("$HOST $ ${1X} ${open", &env).unwrap(),
            "$HOST $ ${1X} ${open"
        );
    }

    #[test]
    fn unset_without_fallback_names_the_variable() {
        assert_eq!(expand_str("x${NEEDED}", &env).unwrap_err(), "NEEDED");
    }

    #[test]
    fn document_walk_skips_commands_shells_and_logging() {
        let mut doc: Value = serde_yaml::from_str(
            "jobs:\n- name: r-${HOST}\n  command: echo ${HOME_X}\n  shell: ${SH}\n  onFailure:\n    report:\n      shell:\n        command: ${X}\n      webhook:\n        url:\n          value: http://${HOST}/\nlogging:\n  version: 1\n  x: ${Y}\n",
        )
        .unwrap();
        expand_document(&mut doc, &env).unwrap();
        assert_eq!(doc["jobs"][0]["name"], Value::from("r-db1"));
        assert_eq!(doc["jobs"][0]["command"], Value::from("echo ${HOME_X}"));
        assert!(is_skipped("jobs[0].verify", "command"));
        assert!(is_skipped("defaults.verify", "command"));
        assert!(!is_skipped("jobs[0].verify", "timeout"));
        assert!(!is_skipped("jobs[0].environment[0].verify", "command"));
        assert_eq!(doc["jobs"][0]["shell"], Value::from("${SH}"));
        assert_eq!(
            doc["jobs"][0]["onFailure"]["report"]["webhook"]["url"]["value"],
            Value::from("http://db1/")
        );
        assert_eq!(doc["logging"]["x"], Value::from("${Y}"));
    }

    #[test]
    fn document_walk_reports_the_path() {
        let mut doc: Value =
            serde_yaml::from_str("web:\n  listen:\n  - 0.0.0.0:${NEEDED_PORT}\n").unwrap();
        let err = expand_document(&mut doc, &env).unwrap_err();
        assert_eq!(err.path, "web.listen[0]");
        assert_eq!(err.variable, "NEEDED_PORT");
    }
}
