//! Reads a `logging:` section (Python's `logging.config.dictConfig`
//! schema) into a plan of handlers and loggers, checking everything that
//! can be checked before a record exists: formats, levels, streams and the
//! ids handlers and loggers refer to. Problems are load errors that name
//! the key; parts this daemon cannot provide (filters, handler classes
//! other than stream/file/null) are warnings.

use super::pyformat::PercentFormat;
use crate::compat::lenient;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value};
use std::path::PathBuf;

/// The `logging:` section in Python dictConfig shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoggingConfig {
    /// dictConfig schema version (required, 1).
    #[serde(deserialize_with = "lenient::int")]
    pub version: i64,
    /// Incremental update of an existing config.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub incremental: Option<bool>,
    /// Disable loggers not named here.
    #[serde(default, deserialize_with = "lenient::opt_bool")]
    pub disable_existing_loggers: Option<bool>,
    /// Formatter definitions by id.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub formatters: Option<serde_yaml::Mapping>,
    /// Filter definitions by id.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub filters: Option<serde_yaml::Mapping>,
    /// Handler definitions by id.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub handlers: Option<serde_yaml::Mapping>,
    /// Logger settings by logger name.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub loggers: Option<serde_yaml::Mapping>,
    /// The root logger's settings.
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub root: Option<serde_yaml::Mapping>,
}

/// Where a handler writes.
#[derive(Debug, Clone, PartialEq)]
pub enum Sink {
    /// Standard output (`stream: ext://sys.stdout`).
    Stdout,
    /// Standard error (the StreamHandler default).
    Stderr,
    /// A file, appended to or truncated at configuration time.
    File {
        /// The file.
        path: PathBuf,
        /// Start the file empty (`mode: w`) instead of appending.
        truncate: bool,
    },
    /// Discards records (`logging.NullHandler`).
    Null,
}

/// One handler of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerPlan {
    /// The handler's id in the section.
    pub id: String,
    /// Records below this numeric level are not written (0 writes all).
    pub level: i64,
    /// How each record is written.
    pub format: PercentFormat,
    /// Where it goes.
    pub sink: Sink,
}

/// One logger's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggerPlan {
    /// Its own level, when set.
    pub level: Option<i64>,
    /// Ids of its handlers.
    pub handlers: Vec<String>,
    /// Whether records continue to the parent's handlers.
    pub propagate: bool,
}

/// Everything a `logging:` section asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Handlers that will write, by id.
    pub handlers: Vec<HandlerPlan>,
    /// The root logger's settings, when the section has `root:`.
    pub root: Option<LoggerPlan>,
    /// Named loggers (`cronstable`, `cronstable.config`, ...).
    pub loggers: Vec<(String, LoggerPlan)>,
    /// dictConfig's `disable_existing_loggers` (default true): loggers
    /// that are neither listed nor below a listed one go silent.
    pub disable_existing: bool,
    /// `incremental: true`: only levels and `propagate` change.
    pub incremental: bool,
}

/// Python's numeric level for a level name (any case) or number.
pub fn level_number(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => match s.to_ascii_uppercase().as_str() {
            "CRITICAL" | "FATAL" => Some(50),
            "ERROR" => Some(40),
            "WARN" | "WARNING" => Some(30),
            "INFO" => Some(20),
            "DEBUG" => Some(10),
            "NOTSET" => Some(0),
            _ => s.trim().parse().ok(),
        },
        _ => None,
    }
}

fn text<'a>(map: &'a Mapping, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

fn level_at(map: &Mapping, path: &str) -> Result<Option<i64>, String> {
    match map.get("level") {
        None | Some(Value::Null) => Ok(None),
        Some(value) => level_number(value).map(Some).ok_or_else(|| {
            format!(
                "{path}.level: unknown level {} (use DEBUG, INFO, WARNING, ERROR or CRITICAL)",
                serde_yaml::to_string(value).unwrap_or_default().trim()
            )
        }),
    }
}

fn entries<'a>(
    map: Option<&'a Mapping>,
    section: &str,
) -> Result<Vec<(String, &'a Mapping)>, String> {
    let mut out = Vec::new();
    for (key, value) in map.into_iter().flatten() {
        let id = match key {
            Value::String(s) => s.clone(),
            other => serde_yaml::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_owned(),
        };
        let Some(settings) = value.as_mapping() else {
            return Err(format!("logging.{section}.{id} must be a mapping"));
        };
        out.push((id, settings));
    }
    Ok(out)
}

fn logger_plan(
    settings: &Mapping,
    path: &str,
    known_handlers: &[String],
) -> Result<LoggerPlan, String> {
    let level = level_at(settings, path)?;
    let mut handlers = Vec::new();
    match settings.get("handlers") {
        None | Some(Value::Null) => {}
        Some(Value::Sequence(ids)) => {
            for id in ids {
                let Some(id) = id.as_str() else {
                    return Err(format!("{path}.handlers must list handler ids"));
                };
                if !known_handlers.iter().any(|h| h == id) {
                    return Err(format!(
                        "{path}.handlers: no handler '{id}' in logging.handlers"
                    ));
                }
                handlers.push(id.to_owned());
            }
        }
        Some(_) => return Err(format!("{path}.handlers must be a list of handler ids")),
    }
    let propagate = match settings.get("propagate") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(format!("{path}.propagate must be true or false")),
    };
    Ok(LoggerPlan {
        level,
        handlers,
        propagate,
    })
}

/// Reads a section into a plan, with warnings for what is left out.
pub fn plan(config: &LoggingConfig) -> Result<(Plan, Vec<String>), String> {
    let mut warnings = Vec::new();
    if config.version != 1 {
        return Err(format!(
            "logging.version is {}; dictConfig only knows version 1",
            config.version
        ));
    }
    let incremental = config.incremental.unwrap_or(false);
    if config.filters.as_ref().is_some_and(|f| !f.is_empty()) {
        warnings.push(
            "logging.filters is not supported by this version of cronstable; records are not \
             filtered"
                .to_owned(),
        );
    }

    let mut formats = Vec::new();
    for (id, settings) in entries(config.formatters.as_ref(), "formatters")? {
        let path = format!("logging.formatters.{id}");
        if let Some(style) = text(settings, "style") {
            if style != "%" {
                return Err(format!(
                    "{path}.style: only the '%' style is supported, not '{style}'"
                ));
            }
        }
        for key in ["class", "()", "validate", "defaults"] {
            if settings.contains_key(key) {
                warnings.push(format!("{path}.{key} is not supported and is ignored"));
            }
        }
        let format = text(settings, "format").unwrap_or(PercentFormat::DEFAULT);
        let parsed = PercentFormat::parse(format, text(settings, "datefmt"))
            .map_err(|e| format!("{path}: {e}"))?;
        formats.push((id, parsed));
    }

    let mut handlers = Vec::new();
    let mut known_handlers = Vec::new();
    for (id, settings) in entries(config.handlers.as_ref(), "handlers")? {
        let path = format!("logging.handlers.{id}");
        // Loggers may name a handler we leave out; that is not an error.
        known_handlers.push(id.clone());
        let class = text(settings, "class").unwrap_or_default();
        let sink = match class {
            "logging.StreamHandler" => match text(settings, "stream") {
                None | Some("ext://sys.stderr") => Sink::Stderr,
                Some("ext://sys.stdout") => Sink::Stdout,
                Some(other) => {
                    return Err(format!(
                        "{path}.stream: '{other}' is not ext://sys.stdout or ext://sys.stderr"
                    ))
                }
            },
            "logging.FileHandler" => {
                let Some(file) = text(settings, "filename") else {
                    return Err(format!(
                        "{path}.filename is required for logging.FileHandler"
                    ));
                };
                let truncate = match text(settings, "mode") {
                    None | Some("a") => false,
                    Some("w") => true,
                    Some(other) => return Err(format!("{path}.mode: '{other}' is not 'a' or 'w'")),
                };
                Sink::File {
                    path: PathBuf::from(file),
                    truncate,
                }
            }
            "logging.NullHandler" => Sink::Null,
            "" => return Err(format!("{path}.class is required")),
            other => {
                warnings.push(format!(
                    "{path}: class {other} is not supported (use logging.StreamHandler, \
                     logging.FileHandler or logging.NullHandler); this handler is left out"
                ));
                continue;
            }
        };
        if settings.contains_key("filters") {
            warnings.push(format!("{path}.filters is not supported and is ignored"));
        }
        let level = level_at(settings, &path)?.unwrap_or(0);
        let format = match text(settings, "formatter") {
            None => PercentFormat::parse(PercentFormat::DEFAULT, None)?,
            Some(name) => formats
                .iter()
                .find(|(f, _)| f == name)
                .map(|(_, f)| f.clone())
                .ok_or_else(|| {
                    format!("{path}.formatter: no formatter '{name}' in logging.formatters")
                })?,
        };
        handlers.push(HandlerPlan {
            id,
            level,
            format,
            sink,
        });
    }

    let root = match &config.root {
        Some(settings) => Some(logger_plan(settings, "logging.root", &known_handlers)?),
        None => None,
    };
    let mut loggers = Vec::new();
    for (name, settings) in entries(config.loggers.as_ref(), "loggers")? {
        let plan = logger_plan(
            settings,
            &format!("logging.loggers.{name}"),
            &known_handlers,
        )?;
        loggers.push((name, plan));
    }
    let disable_existing = config.disable_existing_loggers.unwrap_or(true) && !incremental;
    if disable_existing && !loggers.iter().any(|(name, _)| name == "cronstable") {
        warnings.push(
            "logging.disable_existing_loggers is true (the dictConfig default) and \
             logging.loggers does not list 'cronstable': as in the original, the cronstable \
             logger goes silent; set disable_existing_loggers: false to keep its lines"
                .to_owned(),
        );
    }
    Ok((
        Plan {
            handlers,
            root,
            loggers,
            disable_existing,
            incremental,
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(yaml: &str) -> LoggingConfig {
        serde_yaml::from_str(yaml).expect("a logging section")
    }

    #[test]
    fn readme_example_plans_a_stdout_handler() {
        let config = section(
            "version: 1\ndisable_existing_loggers: false\nformatters:\n  simple:\n    format: \
             '%(asctime)s [%(processName)s/%(threadName)s] %(levelname)s (%(name)s): \
             %(message)s'\n    datefmt: '%Y-%m-%d %H:%M:%S'\nhandlers:\n  console:\n    class: \
             logging.StreamHandler\n    level: DEBUG\n    formatter: simple\n    stream: \
             ext://sys.stdout\nroot:\n  level: INFO\n  handlers:\n    - console\n",
        );
        let (plan, warnings) = plan(&config).expect("valid");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(plan.handlers.len(), 1);
        assert_eq!(plan.handlers[0].sink, Sink::Stdout);
        assert_eq!(plan.handlers[0].level, 10);
        let root = plan.root.expect("root");
        assert_eq!(root.level, Some(20));
        assert_eq!(root.handlers, vec!["console".to_owned()]);
        assert!(!plan.disable_existing);
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (
                "version: 1\nformatters:\n  f:\n    format: '%(nope)s'\n",
                "logging.formatters.f: format '%(nope)s': unknown log record attribute 'nope'",
            ),
            (
                "version: 1\nhandlers:\n  h:\n    class: logging.StreamHandler\n    formatter: g\n",
                "logging.handlers.h.formatter: no formatter 'g'",
            ),
            (
                "version: 1\nhandlers:\n  h:\n    class: logging.StreamHandler\n    stream: ext://sys.stdin\n",
                "logging.handlers.h.stream",
            ),
            (
                "version: 1\nroot:\n  handlers: [missing]\n",
                "logging.root.handlers: no handler 'missing'",
            ),
            (
                "version: 1\nloggers:\n  cronstable:\n    level: LOUD\n",
                "logging.loggers.cronstable.level: unknown level",
            ),
            ("version: 2\n", "logging.version is 2"),
        ];
        for (yaml, want) in cases {
            let err = plan(&section(yaml)).expect_err(yaml);
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }

    #[test]
    fn unsupported_parts_are_warnings() {
        let config = section(
            "version: 1\ndisable_existing_loggers: false\nfilters:\n  f: {}\nhandlers:\n  \
             sys:\n    class: logging.handlers.SysLogHandler\nroot:\n  handlers: [sys]\n",
        );
        let (plan, warnings) = plan(&config).expect("valid");
        assert!(plan.handlers.is_empty());
        assert!(warnings.iter().any(|w| w.contains("logging.filters")));
        assert!(warnings.iter().any(|w| w.contains("SysLogHandler")));
    }
}
