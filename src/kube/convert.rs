//! Turns a `CronJobSet` into config text the loader reads.

/// A set that cannot be turned into config text.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The object has no name or namespace.
    #[error("{0}")]
    Metadata(String),
}

/// placeholder
pub fn job_name(namespace: &str, set: &str, job: &str) -> String {
    format!("{namespace}:{set}:{job}")
}

/// placeholder
pub fn to_source() {}
