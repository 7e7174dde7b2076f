//! The one error of the job-facing state operations: the HTTP status the
//! job API answers with and the sentence the calling job reads.

/// The wire text of a store failure (503): the reason stays in the log.
pub const UNAVAILABLE_TEXT: &str = "state backend unavailable; the reason is in the cronstable log";

/// The wire text of an unexpected failure (500).
pub const INTERNAL_TEXT: &str = "internal error; the reason is in the cronstable log";

/// A failed job-facing state operation. The caller-provoked variants
/// carry the exact sentence the original returns as `error`; the store's
/// own failures ([`JobStateError::Unavailable`]) say only that the store
/// is unavailable on the wire and keep the reason for the log.
#[derive(Debug, thiserror::Error)]
pub enum JobStateError {
    /// 400: a bad request (empty or padded scope, an unportable value).
    #[error("{0}")]
    BadRequest(String),
    /// 403: a scope the job may not use (the job API's own check).
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such key, cursor or artifact.
    #[error("{0}")]
    NotFound(String),
    /// 409: a cursor advanced with a value it cannot compare.
    #[error("{0}")]
    Conflict(String),
    /// 410: an artifact whose payload the collector removed.
    #[error("{0}")]
    Gone(String),
    /// 413: a value or artifact over its configured limit.
    #[error("{0}")]
    TooLarge(String),
    /// 500: a store content the original fails on unexpectedly (a record
    /// naming an invalid digest, an expiry it cannot compare); the detail
    /// is for the log.
    #[error("internal error; the reason is in the cronstable log")]
    Internal(String),
    /// 503: the store failed (I/O, or a document a change must read does
    /// not read); the error is for the log.
    #[error("state backend unavailable; the reason is in the cronstable log")]
    Unavailable(#[source] std::io::Error),
}

impl JobStateError {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            JobStateError::BadRequest(_) => 400,
            JobStateError::Forbidden(_) => 403,
            JobStateError::NotFound(_) => 404,
            JobStateError::Conflict(_) => 409,
            JobStateError::Gone(_) => 410,
            JobStateError::TooLarge(_) => 413,
            JobStateError::Internal(_) => 500,
            JobStateError::Unavailable(_) => 503,
        }
    }

    /// The `error` text of the response (the same as `to_string()`).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// What to log for a 500 or 503 (the reason the wire text withholds);
    /// None for the caller-provoked statuses.
    pub fn log_detail(&self) -> Option<String> {
        match self {
            JobStateError::Internal(detail) => Some(detail.clone()),
            JobStateError::Unavailable(e) => Some(e.to_string()),
            _ => None,
        }
    }
}

impl From<std::io::Error> for JobStateError {
    fn from(e: std::io::Error) -> JobStateError {
        JobStateError::Unavailable(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_wire_texts() {
        let cases: [(JobStateError, u16, &str); 8] = [
            (JobStateError::BadRequest("b".into()), 400, "b"),
            (JobStateError::Forbidden("f".into()), 403, "f"),
            (JobStateError::NotFound("n".into()), 404, "n"),
            (JobStateError::Conflict("c".into()), 409, "c"),
            (JobStateError::Gone("g".into()), 410, "g"),
            (JobStateError::TooLarge("t".into()), 413, "t"),
            (JobStateError::Internal("why".into()), 500, INTERNAL_TEXT),
            (
                JobStateError::from(std::io::Error::other("disk on fire")),
                503,
                UNAVAILABLE_TEXT,
            ),
        ];
        for (error, status, text) in cases {
            assert_eq!(error.status(), status);
            assert_eq!(error.message(), text);
        }
        let e = JobStateError::from(std::io::Error::other("disk on fire"));
        assert_eq!(e.log_detail().as_deref(), Some("disk on fire"));
        assert_eq!(JobStateError::NotFound("x".into()).log_detail(), None);
    }
}
