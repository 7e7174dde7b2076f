//! Secret sources (`value`, `fromFile`, `fromEnvVar`) resolved when a
//! report is sent, so a rotated file or variable needs no reload.
//!
//! The first non-empty source wins, in that order. No source at all means
//! the secret is absent (the reporter is disabled, or mail sends without a
//! login). A source that is set but yields nothing (a missing file, an
//! unset variable) is an error: the report is skipped and the error
//! logged. Errors name the config key and the kind of source, never the
//! secret, and never the variable name, which can tell what the secret is.

use crate::config::model::SecretSource;

/// A resolved secret. Its `Debug` output is redacted so it cannot leak
/// through a stray `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret text.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Why a configured secret source yielded no secret. `Display` is the
/// text the reporter's `Problem reporting ...` line and the cluster's
/// start-up error show: it names the key (`what`) and the kind of source,
/// never the secret or the variable name.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The blocking task reading the file did not finish (it panicked or
    /// the runtime is shutting down).
    #[error("{what}.fromFile could not be read: {source}")]
    ReadTask {
        /// The config key, e.g. `mail.password`.
        what: String,
        /// Why the task ended.
        source: tokio::task::JoinError,
    },
    /// The file could not be read.
    #[error("{what}.fromFile {path} could not be read: {source}")]
    Read {
        /// The config key.
        what: String,
        /// The file the key names.
        path: String,
        /// The OS's answer.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{what}.fromFile {path} is not valid UTF-8")]
    NotUtf8 {
        /// The config key.
        what: String,
        /// The file the key names.
        path: String,
    },
    /// A source is set but yields nothing (an empty file, an unset or
    /// empty variable).
    #[error("{what} is configured but resolved to an empty secret")]
    Empty {
        /// The config key.
        what: String,
    },
}

/// Resolves `source` (`what` names its key, e.g. `webhook.url`, in errors).
/// `Ok(None)`: no source is configured.
pub async fn resolve(
    source: Option<&SecretSource>,
    what: &str,
) -> Result<Option<Secret>, SecretError> {
    let Some(source) = source else {
        return Ok(None);
    };
    let set = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
    let secret = if let Some(value) = set(&source.value) {
        value
    } else if let Some(path) = set(&source.from_file) {
        // A secret volume on a hung mount must not stall the scheduler's
        // thread, so the read runs on the blocking pool.
        let read = tokio::task::spawn_blocking({
            let path = path.clone();
            move || std::fs::read(&path)
        })
        .await
        .map_err(|source| SecretError::ReadTask {
            what: what.to_owned(),
            source,
        })?;
        let bytes = read.map_err(|source| SecretError::Read {
            what: what.to_owned(),
            path: path.clone(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| SecretError::NotUtf8 {
            what: what.to_owned(),
            path,
        })?;
        text.trim_start_matches('\u{feff}').trim().to_owned()
    } else if let Some(var) = set(&source.from_env_var) {
        std::env::var(&var).unwrap_or_default()
    } else {
        return Ok(None);
    };
    if secret.is_empty() {
        return Err(SecretError::Empty {
            what: what.to_owned(),
        });
    }
    Ok(Some(Secret(secret)))
}

/// True when `source` names any source: the reporter it belongs to is on.
pub fn configured(source: Option<&SecretSource>) -> bool {
    source.is_some_and(|s| {
        [&s.value, &s.from_file, &s.from_env_var]
            .iter()
            .any(|v| v.as_deref().is_some_and(|v| !v.is_empty()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn sources_in_order_and_errors_without_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s");
        std::fs::write(&file, "\u{feff}  from-file \n").unwrap();
        let src = SecretSource {
            value: Some(String::new()),
            from_file: Some(file.display().to_string()),
            from_env_var: Some("CRONSTABLE_TEST_NEVER_SET".into()),
        };
        let got = run(resolve(Some(&src), "webhook.url")).unwrap().unwrap();
        assert_eq!(got.expose(), "from-file");
        assert_eq!(format!("{got:?}"), "Secret(<redacted>)");

        let env_only = SecretSource {
            from_env_var: Some("CRONSTABLE_TEST_NEVER_SET".into()),
            ..Default::default()
        };
        let err = run(resolve(Some(&env_only), "mail.password")).unwrap_err();
        assert!(
            matches!(&err, SecretError::Empty { what } if what == "mail.password"),
            "{err:?}"
        );
        // The wording is the log line's.
        assert_eq!(
            err.to_string(),
            "mail.password is configured but resolved to an empty secret"
        );

        assert_eq!(
            run(resolve(Some(&SecretSource::default()), "x")).unwrap(),
            None
        );
        assert_eq!(run(resolve(None, "x")).unwrap(), None);
        assert!(!configured(Some(&SecretSource::default())));
        assert!(configured(Some(&env_only)));

        let missing = SecretSource {
            from_file: Some(dir.path().join("nope").display().to_string()),
            ..Default::default()
        };
        let err = run(resolve(Some(&missing), "sentry.dsn")).unwrap_err();
        assert!(
            matches!(&err, SecretError::Read { what, source, .. }
                if what == "sentry.dsn" && source.kind() == std::io::ErrorKind::NotFound),
            "{err:?}"
        );

        let latin1 = dir.path().join("latin1");
        std::fs::write(&latin1, b"caf\xe9").unwrap();
        let not_text = SecretSource {
            from_file: Some(latin1.display().to_string()),
            ..Default::default()
        };
        let err = run(resolve(Some(&not_text), "webhook.url")).unwrap_err();
        assert!(matches!(err, SecretError::NotUtf8 { .. }), "{err:?}");
    }
}
