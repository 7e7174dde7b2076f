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
    if config.loggers.is_some() {
        warnings.push(
            "logging.loggers: per-logger levels apply to cronstable's own modules only where \
             the names match (cronstable, cronstable.config, ...)"
                .into(),
        );
    }
    warnings
}

/// Installs the global subscriber writing to stderr.
pub fn init(level: tracing::Level, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(true)
        .with_ansi(false);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    // A second init (tests) keeps the first subscriber; nothing to report.
    let _ = result;
}
