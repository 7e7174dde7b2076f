//! The runs the job endpoint knows: each live run's bearer token, its
//! identity, the scopes it may use and its staged secrets. A run is
//! registered just before it spawns and forgotten the moment it ends, so a
//! token works exactly for its run's life.

use crate::config::model::job::JobSecret;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// One live run, as its token authorizes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunContext {
    /// The run's id (`CRONSTABLE_RUN_ID`, 32 hex characters).
    pub run_id: String,
    /// The job's name.
    pub job_name: String,
    /// The retry number (0 for a first attempt).
    pub attempt: u32,
    /// The fire it belongs to (Python `isoformat`), when known.
    pub scheduled_at: Option<String>,
    /// The host name jobs are told.
    pub host: String,
    /// The scope a call without one uses: the job's name.
    pub default_scope: String,
    /// `stateAllowedScopes`.
    pub allowed_scopes: BTreeSet<String>,
    /// The secrets staged for this run, by name.
    pub secrets: BTreeMap<String, String>,
}

impl RunContext {
    /// The scope a call asks for, when this run may use it: none (or an
    /// empty one) is the default scope; otherwise its own, `global`, or
    /// one of `stateAllowedScopes`. The error is the original's 403 text.
    pub fn scope(&self, given: Option<&str>) -> Result<String, String> {
        match given {
            None | Some("") => Ok(self.default_scope.clone()),
            Some(scope)
                if scope == self.default_scope
                    || scope == "global"
                    || self.allowed_scopes.contains(scope) =>
            {
                Ok(scope.to_owned())
            }
            Some(scope) => Err(format!(
                "scope {} is not permitted for job {}; add it to stateAllowedScopes to allow this \
                 job to use it",
                py_repr(scope),
                py_repr(&self.job_name)
            )),
        }
    }
}

fn py_repr(s: &str) -> String {
    crate::pyjson::PyString::new(s).repr()
}

/// The live runs, by the digest of their token (a lookup by digest tells
/// a timing observer nothing about the token itself).
#[derive(Debug, Default)]
pub struct Registry {
    runs: Mutex<HashMap<[u8; 32], Arc<RunContext>>>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Registry {
    /// Registers a run under `token`.
    pub fn register(&self, token: &str, run: RunContext) {
        self.lock().insert(digest(token), Arc::new(run));
    }

    /// The run `token` belongs to, while it lives.
    pub fn lookup(&self, token: &str) -> Option<Arc<RunContext>> {
        self.lock().get(&digest(token)).cloned()
    }

    /// Forgets the run of `token`; whether it was live.
    pub fn finish(&self, token: &str) -> bool {
        self.lock().remove(&digest(token)).is_some()
    }

    /// How many runs hold a token now.
    pub fn live(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Arc<RunContext>>> {
        // A panic while holding this lock leaves a consistent map.
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The run token of an `Authorization` header: `Bearer <token>` (the
/// scheme in any case, split at the first space, nothing trimmed).
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let (scheme, token) = header?.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Resolves `secrets` for one run of `job`: `value` as written, else
/// `fromFile` (UTF-8, a byte-order mark dropped, surrounding whitespace
/// stripped), else `fromEnvVar` from the daemon's environment. A secret
/// that cannot be resolved is left out of the run and named in the
/// returned warnings (the original's texts); the run still starts.
pub fn stage_secrets(
    job: &str,
    secrets: &[JobSecret],
    env: &dyn Fn(&str) -> Option<String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut staged = BTreeMap::new();
    let mut warnings = Vec::new();
    let owner = format!("job {job}");
    for secret in secrets {
        let Some(name) = secret.name.as_deref() else {
            continue;
        };
        let label = format!("{owner} secret {name}");
        let some = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        let resolved: Result<String, String> = if let Some(value) = some(&secret.value) {
            Ok(value)
        } else if let Some(path) = some(&secret.from_file) {
            read_secret_file(&path).map_err(|e| format!("{label}.fromFile could not be read: {e}"))
        } else if let Some(var) = some(&secret.from_env_var) {
            Ok(env(&var).unwrap_or_default())
        } else {
            Err(format!(
                "{label} is configured but resolved to an empty secret"
            ))
        };
        match resolved {
            Ok(value) if value.is_empty() => warnings.push(format!(
                "{owner}: could not stage secret {}: {label} is configured but resolved to an \
                 empty secret",
                py_repr(name)
            )),
            Ok(value) => {
                staged.insert(name.to_owned(), value);
            }
            Err(why) => warnings.push(format!(
                "{owner}: could not stage secret {}: {why}",
                py_repr(name)
            )),
        }
    }
    (staged, warnings)
}

/// The largest secret file read (a mounted Secret is small; a mistake
/// pointing at a huge file must not stall a launch).
const SECRET_FILE_LIMIT: u64 = 1 << 20;

fn read_secret_file(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(SECRET_FILE_LIMIT)
        .read_to_end(&mut bytes)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "'utf-8' codec can't decode the file",
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text.trim().to_owned())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A run of job `backup` that may also use the scope `shared`.
    pub(crate) fn run() -> RunContext {
        RunContext {
            run_id: "r".into(),
            job_name: "backup".into(),
            attempt: 0,
            scheduled_at: None,
            host: "h".into(),
            default_scope: "backup".into(),
            allowed_scopes: ["shared".to_owned()].into(),
            secrets: BTreeMap::new(),
        }
    }

    #[test]
    fn a_run_uses_its_own_scope_global_and_the_allowed_ones_only() {
        let r = run();
        assert_eq!(r.scope(None).unwrap(), "backup");
        assert_eq!(r.scope(Some("")).unwrap(), "backup");
        assert_eq!(r.scope(Some("backup")).unwrap(), "backup");
        assert_eq!(r.scope(Some("global")).unwrap(), "global");
        assert_eq!(r.scope(Some("shared")).unwrap(), "shared");
        assert_eq!(
            r.scope(Some("other")).unwrap_err(),
            "scope 'other' is not permitted for job 'backup'; add it to stateAllowedScopes to \
             allow this job to use it"
        );
    }

    #[test]
    fn a_token_works_until_its_run_finishes() {
        let registry = Registry::default();
        registry.register("t1", run());
        assert_eq!(registry.lookup("t1").unwrap().job_name, "backup");
        assert!(registry.lookup("t2").is_none());
        assert_eq!(registry.live(), 1);
        assert!(registry.finish("t1"));
        assert!(registry.lookup("t1").is_none());
        assert!(!registry.finish("t1"));
    }

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("BEARER abc")), Some("abc"));
        assert_eq!(bearer(Some("Bearer  abc")), Some(" abc"), "not trimmed");
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(Some("Bearer")), None);
        assert_eq!(bearer(None), None);
    }

    fn secret(name: &str, value: Option<&str>, file: Option<&str>, var: Option<&str>) -> JobSecret {
        JobSecret {
            name: Some(name.into()),
            value: value.map(Into::into),
            from_file: file.map(Into::into),
            from_env_var: var.map(Into::into),
        }
    }

    #[test]
    fn secrets_resolve_value_then_file_then_environment() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("s");
        std::fs::write(&file, "\u{feff}  from-file \n").expect("write");
        let path = file.to_str().expect("utf-8 path");
        let env = |k: &str| (k == "TOKEN").then(|| " from-env ".to_owned());
        let (staged, warnings) = stage_secrets(
            "j",
            &[
                secret("a", Some(" inline "), Some(path), Some("TOKEN")),
                secret("b", None, Some(path), Some("TOKEN")),
                secret("c", None, None, Some("TOKEN")),
            ],
            &env,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(staged["a"], " inline ");
        assert_eq!(staged["b"], "from-file");
        assert_eq!(staged["c"], " from-env ");
    }

    #[test]
    fn a_secret_that_does_not_resolve_is_left_out_with_a_warning() {
        let env = |_: &str| None;
        let (staged, warnings) = stage_secrets(
            "j",
            &[
                secret("missing", None, Some("/nonexistent/secret"), None),
                secret("empty", None, None, Some("UNSET")),
                secret("ok", Some("v"), None, None),
            ],
            &env,
        );
        assert_eq!(staged.keys().collect::<Vec<_>>(), ["ok"]);
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].starts_with(
            "job j: could not stage secret 'missing': job j secret missing.fromFile could not be \
             read: "
        ));
        assert_eq!(
            warnings[1],
            "job j: could not stage secret 'empty': job j secret empty is configured but \
             resolved to an empty secret"
        );
    }
}
