//! Load errors. Each names the source (file path or in-memory source name),
//! the line and column where known, the job and the key.

use std::fmt;

/// Where in the config something was written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// File path, or the name of an in-memory source.
    pub source: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl Location {
    /// A location naming only the source.
    pub fn source(source: impl Into<String>) -> Self {
        Location {
            source: source.into(),
            line: None,
            column: None,
        }
    }

    /// A location naming a source and a line.
    pub fn line(source: impl Into<String>, line: Option<usize>) -> Self {
        Location {
            source: source.into(),
            line,
            column: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// A config that cannot be loaded, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A file or directory could not be read.
    #[error("{path}: cannot read: {reason}")]
    Io {
        /// The path that failed.
        path: String,
        /// The OS error text.
        reason: String,
    },
    /// The text is not valid YAML or does not fit the schema.
    #[error("{location}: {message}")]
    Schema {
        /// Where.
        location: Location,
        /// What is wrong, naming the key path.
        message: String,
    },
    /// A job (or `defaults:` block) breaks a rule.
    #[error("{location}: job '{job}': {key}{sep}{message}", sep = if key.is_empty() { "" } else { ": " })]
    Job {
        /// Where the job (or its key) is written.
        location: Location,
        /// The job name (`defaults` for a defaults block).
        job: String,
        /// The offending key path, empty when the rule spans several keys.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A whole-config or section rule is broken.
    #[error("{location}: {message}")]
    Config {
        /// Where.
        location: Location,
        /// What is wrong.
        message: String,
    },
    /// A classic crontab line is malformed (the message names file and line).
    #[error(transparent)]
    Crontab(#[from] crate::config::crontab::CrontabError),
    /// Several files failed; each error is listed.
    #[error("{}", join_errors(.0))]
    Many(Vec<ConfigError>),
}

fn join_errors(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

impl ConfigError {
    /// A section-level error at a source.
    pub fn config(location: Location, message: impl Into<String>) -> Self {
        ConfigError::Config {
            location,
            message: message.into(),
        }
    }

    /// Converts a serde_yaml error into a schema error at `source`.
    pub fn from_yaml(source: &str, err: &serde_yaml::Error) -> Self {
        let (line, column) = match err.location() {
            Some(l) => (Some(l.line()), Some(l.column())),
            None => (None, None),
        };
        let mut message = err.to_string();
        // serde_yaml appends " at line X column Y"; we already print it up front.
        if let Some(pos) = message.rfind(" at line ") {
            message.truncate(pos);
        }
        ConfigError::Schema {
            location: Location {
                source: source.to_owned(),
                line,
                column,
            },
            message,
        }
    }
}
