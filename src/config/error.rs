//! Load errors. Each names the source (file path or in-memory source name),
//! the line and column where known, the job and the key.

use std::fmt;

/// Where in the config something was written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// File path, or the name of an in-memory source.
    pub source: String,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// 1-based column, when known.
    pub column: Option<u32>,
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
            line: line.and_then(|l| u32::try_from(l).ok()),
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
    Crontab(Box<crate::config::crontab::CrontabError>),
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

impl From<crate::config::crontab::CrontabError> for ConfigError {
    fn from(err: crate::config::crontab::CrontabError) -> Self {
        ConfigError::Crontab(Box::new(err))
    }
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
            Some(l) => (u32::try_from(l.line()).ok(), u32::try_from(l.column()).ok()),
            None => (None, None),
        };
        let mut message = err.to_string();
        // serde_yaml appends " at line X column Y"; we already print it up front.
        if let Some(pos) = message.rfind(" at line ") {
            message.truncate(pos);
        }
        let message = reword_serde_message(&message);
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

/// Rewords serde's phrasing into the config's vocabulary ("key" rather than
/// "field") and trims the list of every valid key down to a suggestion.
fn reword_serde_message(message: &str) -> String {
    if let Some(start) = message.find("unknown field `") {
        let rest = &message[start + "unknown field `".len()..];
        if let Some(end) = rest.find('`') {
            let unknown = &rest[..end];
            let expected: Vec<&str> = rest[end..].split('`').skip(2).step_by(2).collect();
            let mut reworded = format!("{}unknown key '{unknown}'", &message[..start]);
            match closest(unknown, &expected) {
                Some(best) => reworded.push_str(&format!(" (did you mean '{best}'?)")),
                None if expected.is_empty() => reworded.push_str(" (this map takes no keys)"),
                None => reworded.push_str(&format!(" (valid keys: {})", expected.join(", "))),
            }
            return reworded;
        }
    }
    if let Some(start) = message.find("unknown variant `") {
        let rest = &message[start + "unknown variant `".len()..];
        if let Some(end) = rest.find('`') {
            let expected: Vec<&str> = rest[end..].split('`').skip(2).step_by(2).collect();
            return format!(
                "{}unknown value '{}' (expected one of: {})",
                &message[..start],
                &rest[..end],
                expected.join(", ")
            );
        }
    }
    if let Some(start) = message.find("missing field `") {
        let rest = &message[start + "missing field `".len()..];
        if let Some(end) = rest.find('`') {
            return format!(
                "{}missing required key '{}'",
                &message[..start],
                &rest[..end]
            );
        }
    }
    message.to_owned()
}

/// The candidate nearest to `word` by edit distance, if near enough to be a
/// plausible typo.
fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    candidates
        .iter()
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_suggests_the_nearest_valid_key() {
        let msg = reword_serde_message(
            "jobs[0]: unknown field `captureStdOut`, expected one of `name`, `captureStdout`, `captureStderr`",
        );
        assert_eq!(
            msg,
            "jobs[0]: unknown key 'captureStdOut' (did you mean 'captureStdout'?)"
        );
    }

    #[test]
    fn unknown_key_far_from_everything_lists_the_valid_keys() {
        let msg = reword_serde_message("unknown field `zzzzzz`, expected `value` or `key`");
        assert_eq!(msg, "unknown key 'zzzzzz' (valid keys: value, key)");
    }

    #[test]
    fn unknown_variant_lists_the_accepted_values() {
        assert_eq!(
            reword_serde_message(
                "jobs[0].concurrencyPolicy: unknown variant `Sometimes`, expected one of `Allow`, `Forbid`, `Replace`"
            ),
            "jobs[0].concurrencyPolicy: unknown value 'Sometimes' (expected one of: Allow, Forbid, Replace)"
        );
    }

    #[test]
    fn missing_field_becomes_missing_required_key() {
        assert_eq!(
            reword_serde_message("jobs[2]: missing field `command`"),
            "jobs[2]: missing required key 'command'"
        );
    }

    #[test]
    fn location_prints_line_and_column_when_known() {
        let loc = Location {
            source: "a.yaml".into(),
            line: Some(3),
            column: Some(5),
        };
        assert_eq!(loc.to_string(), "a.yaml:3:5");
        assert_eq!(Location::source("b").to_string(), "b");
    }
}
