//! Daemon logging through `tracing`, and the mapping of the config's
//! dictConfig-shaped `logging:` section onto it.

use crate::config::model::LoggingConfig;

/// Output format of the daemon's own log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Normalizes a level name as the original accepts it (any case;
/// CRITICAL/FATAL/ERROR/WARN/WARNING/INFO/DEBUG/NOTSET) to a tracing level.
pub fn parse_level(name: &str) -> Option<tracing::Level> {
    match name.to_ascii_uppercase().as_str() {
        "CRITICAL" | "FATAL" | "ERROR" => Some(tracing::Level::ERROR),
        "WARN" | "WARNING" => Some(tracing::Level::WARN),
        "INFO" => Some(tracing::Level::INFO),
        "DEBUG" => Some(tracing::Level::DEBUG),
        "NOTSET" => Some(tracing::Level::TRACE),
        _ => None,
    }
}

/// The level the `logging:` section asks for on the root logger, if any.
pub fn root_level(config: &LoggingConfig) -> Option<tracing::Level> {
    let root = config.root.as_ref()?;
    let level = root.get("level")?.as_str()?;
    parse_level(level)
}

/// Names the parts of a `logging:` section that tracing cannot honor, one
/// warning each, so nothing is ignored silently.
pub fn unhonored_logging_keys(config: &LoggingConfig) -> Vec<String> {
    let mut warnings = Vec::new();
    if config.version != 1 {
        warnings.push(format!(
            "logging.version is {}; only version 1 of the dictConfig schema exists",
            config.version
        ));
    }
    for (key, present) in [
        ("formatters", config.formatters.is_some()),
        ("filters", config.filters.is_some()),
        ("handlers", config.handlers.is_some()),
    ] {
        if present {
            warnings.push(format!(
                "logging.{key} is not honored: cronstable logs to stderr in text or JSON \
                 (--log-format); only levels (root.level, loggers.<name>.level) apply"
            ));
        }
    }
    if let Some(root) = &config.root {
        if let Some(level) = root.get("level").and_then(|l| l.as_str()) {
            if parse_level(level).is_none() {
                warnings.push(format!("logging.root.level '{level}' is not a known level"));
            }
        }
    }
    warnings
}

/// Per-target levels asked for by a `logging:` section: the root level and
/// each `loggers.<name>.level`, with Python logger names (`cronstable.config`)
/// mapped to tracing targets (`cronstable::config`).
pub fn configured_levels(
    config: &LoggingConfig,
) -> (Option<tracing::Level>, Vec<(String, tracing::Level)>) {
    let mut targets = Vec::new();
    if let Some(loggers) = &config.loggers {
        for (name, settings) in loggers {
            let (Some(name), Some(level)) = (
                name.as_str(),
                settings
                    .get("level")
                    .and_then(|l| l.as_str())
                    .and_then(parse_level),
            ) else {
                continue;
            };
            targets.push((name.replace('.', "::"), level));
        }
    }
    (root_level(config), targets)
}

/// Handle to change the level filter after the config is loaded.
pub struct LevelControl {
    handle: tracing_subscriber::reload::Handle<
        tracing_subscriber::filter::Targets,
        tracing_subscriber::Registry,
    >,
}

impl LevelControl {
    /// Applies the levels of a `logging:` section over the command-line
    /// level (the section wins, as it does in the original).
    pub fn apply(&self, cli_level: tracing::Level, config: Option<&LoggingConfig>) {
        let filter = build_filter(cli_level, config);
        // The subscriber lives for the whole process; a failed reload only
        // means it is already gone, at exit.
        let _ = self.handle.reload(filter);
    }
}

fn build_filter(
    cli_level: tracing::Level,
    config: Option<&LoggingConfig>,
) -> tracing_subscriber::filter::Targets {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let (root, targets) = config.map(configured_levels).unwrap_or((None, Vec::new()));
    let mut filter =
        Targets::new().with_default(LevelFilter::from_level(root.unwrap_or(cli_level)));
    for (target, level) in targets {
        filter = filter.with_target(target, LevelFilter::from_level(level));
    }
    filter
}

/// Installs the global subscriber writing to stderr and returns the handle
/// that later applies the config's `logging:` levels.
pub fn init(level: tracing::Level, format: LogFormat) -> LevelControl {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let (filter, handle) = tracing_subscriber::reload::Layer::new(build_filter(level, None));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(true)
        .with_ansi(false);
    let registry = tracing_subscriber::registry().with(filter);
    // A second init (tests) keeps the first subscriber; nothing to report.
    let _ = match format {
        LogFormat::Text => registry.with(fmt).try_init(),
        LogFormat::Json => registry.with(fmt.json()).try_init(),
    };
    LevelControl { handle }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_names_as_the_original_accepts_them() {
        assert_eq!(parse_level("warn"), Some(tracing::Level::WARN));
        assert_eq!(parse_level("Critical"), Some(tracing::Level::ERROR));
        assert_eq!(parse_level("NOTSET"), Some(tracing::Level::TRACE));
        assert_eq!(parse_level("10"), None);
    }

    #[test]
    fn logger_names_map_to_targets() {
        let config: LoggingConfig = serde_yaml::from_str(
            "version: 1\nroot:\n  level: WARNING\nloggers:\n  cronstable.config:\n    level: DEBUG\n",
        )
        .unwrap();
        let (root, targets) = configured_levels(&config);
        assert_eq!(root, Some(tracing::Level::WARN));
        assert_eq!(
            targets,
            vec![("cronstable::config".to_owned(), tracing::Level::DEBUG)]
        );
    }
}
