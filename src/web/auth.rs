//! Bearer-token authentication and scopes, and the cross-site check on
//! mutating routes.

use crate::config::model::web::{AnonymousScope, Scope};
use crate::config::model::{SecretSource, WebConfig};

/// What a caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Grant {
    /// Read-only routes.
    pub view: bool,
    /// Start, cancel, pause, resume.
    pub control: bool,
    /// Approval gates.
    pub approve: bool,
    /// The configured token that authenticated the request (its index in
    /// the resolved token list); `None` for an open API or the anonymous
    /// grant. `POST /shutdown` needs one.
    pub token: Option<usize>,
}

impl Grant {
    /// Every scope.
    pub const ALL: Grant = Grant {
        view: true,
        control: true,
        approve: true,
        token: None,
    };

    fn from_scopes(scopes: &[Scope]) -> Grant {
        let mut grant = Grant::default();
        for scope in scopes {
            match scope {
                Scope::View => grant.view = true,
                Scope::Control => grant.control = true,
                Scope::Approve => grant.approve = true,
            }
        }
        // control and approve imply view.
        grant.view |= grant.control || grant.approve;
        grant
    }

    /// True when the grant covers `needed`.
    pub fn allows(&self, needed: Needed) -> bool {
        match needed {
            Needed::View => self.view,
            Needed::Control => self.control,
        }
    }
}

impl Needed {
    /// The scope's name as the config spells it (and the original's 403
    /// body quotes it).
    pub fn scope_name(self) -> &'static str {
        match self {
            Needed::View => "view",
            Needed::Control => "control",
        }
    }
}

/// The scope a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needed {
    /// Read-only.
    View,
    /// Mutating.
    Control,
}

/// What `GET /whoami` says about the caller.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WhoAmI {
    /// A configured token authenticated the request.
    pub authenticated: bool,
    /// That token's label; `anonymous` for the anonymous grant; `None`
    /// when no token is configured.
    pub label: Option<String>,
    /// The scopes held (`view` implied by the others), sorted.
    pub scopes: Vec<&'static str>,
    /// Whether every scope is held: what a client branches on (an open
    /// API and the anonymous grant are both unauthenticated).
    #[serde(rename = "allScopes")]
    pub all_scopes: bool,
}

/// A credential was presented but is not valid (always a 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCredential;

/// Resolved credentials of a web section.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// Each configured token with its label (`authToken`, an entry's
    /// `label`, or `web.authTokens[i]`) and its grant.
    tokens: Vec<(String, String, Grant)>,
    anonymous: Grant,
    /// `/metrics` needs no token.
    pub metrics_public: bool,
    allowed_origins: Vec<String>,
}

/// Reads a secret source: inline value, a file (trimmed, BOM removed), or
/// an environment variable. `Ok(None)` when no source is set.
pub fn resolve_secret(source: &SecretSource) -> Result<Option<String>, String> {
    if let Some(value) = &source.value {
        return Ok(Some(value.clone()));
    }
    if let Some(path) = &source.from_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read token file {path}: {e}"))?;
        return Ok(Some(text.trim_start_matches('\u{feff}').trim().to_owned()));
    }
    if let Some(var) = &source.from_env_var {
        return Ok(Some(std::env::var(var).unwrap_or_default()));
    }
    Ok(None)
}

impl Credentials {
    /// Resolves the tokens of `web`. A configured token that resolves
    /// empty is an error: the API refuses to start rather than run open.
    pub fn resolve(web: &WebConfig) -> Result<Credentials, String> {
        let mut tokens = Vec::new();
        if let Some(source) = &web.auth_token {
            match resolve_secret(source)? {
                Some(token) if !token.is_empty() => {
                    tokens.push((token, "authToken".to_owned(), Grant::ALL))
                }
                Some(_) => return Err("web.authToken resolves to an empty token".into()),
                None => {}
            }
        }
        for (i, entry) in web.auth_tokens.iter().flatten().enumerate() {
            let source = SecretSource {
                value: entry.value.clone(),
                from_file: entry.from_file.clone(),
                from_env_var: entry.from_env_var.clone(),
            };
            // Unlabelled entries are named by their position, as the
            // original names them in its messages.
            let label = entry
                .label
                .clone()
                .unwrap_or_else(|| format!("web.authTokens[{i}]"));
            let token = match resolve_secret(&source)? {
                Some(token) if !token.is_empty() => token,
                _ => {
                    return Err(format!(
                        "web.authTokens entry {label} resolves to an empty token"
                    ))
                }
            };
            if tokens.iter().any(|(t, _, _)| *t == token) {
                return Err(format!(
                    "web.authTokens entry {label} repeats another token"
                ));
            }
            let scopes = entry.scopes.clone().unwrap_or_else(|| vec![Scope::View]);
            tokens.push((token, label, Grant::from_scopes(&scopes)));
        }
        let anonymous = if tokens.is_empty() {
            Grant::ALL
        } else {
            Grant {
                view: web
                    .anonymous_scopes
                    .iter()
                    .flatten()
                    .any(|s| *s == AnonymousScope::View),
                ..Grant::default()
            }
        };
        Ok(Credentials {
            tokens,
            anonymous,
            metrics_public: web.metrics.as_ref().and_then(|m| m.public).unwrap_or(false),
            allowed_origins: web.allowed_origins.clone().unwrap_or_default(),
        })
    }

    /// The grant of a request's `Authorization` header: `Err(BadCredential)` for a
    /// presented but wrong credential (always a 401, never a downgrade).
    pub fn grant(&self, authorization: Option<&str>) -> Result<Grant, BadCredential> {
        self.grant_for(authorization, None, false)
    }

    /// The grant of a request from its `Authorization` header and its
    /// `token` query parameter. The query token authenticates only on a
    /// calendar feed (`calendar`: a path ending in `.ics`), because
    /// calendar apps cannot send a header; everywhere else it is refused,
    /// keeping tokens out of URLs where a header will do. Either one is a
    /// presented credential, so with one the anonymous grant never
    /// applies: a wrong or misplaced token is a 401.
    pub fn grant_for(
        &self,
        authorization: Option<&str>,
        query_token: Option<&str>,
        calendar: bool,
    ) -> Result<Grant, BadCredential> {
        if self.tokens.is_empty() {
            return Ok(Grant::ALL);
        }
        let query_token = query_token.filter(|t| !t.is_empty());
        let bearer = authorization.and_then(|header| {
            let (scheme, token) = header.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        match (authorization, bearer, query_token) {
            // No credential and no anonymous grant: that is a 401, not a
            // 403, exactly like a wrong token.
            (None, _, None) if self.anonymous == Grant::default() => Err(BadCredential),
            (None, _, None) => Ok(self.anonymous),
            (_, Some(token), _) => self.matching(token),
            (_, None, Some(token)) if calendar => self.matching(token),
            _ => Err(BadCredential),
        }
    }

    /// The grant of the configured token equal to `token`.
    fn matching(&self, token: &str) -> Result<Grant, BadCredential> {
        let mut found = None;
        // Compare against every token so timing does not reveal which one
        // (or whether any) matched.
        for (index, (candidate, _, grant)) in self.tokens.iter().enumerate() {
            if constant_time_eq(candidate.as_bytes(), token.as_bytes()) {
                found = Some(Grant {
                    token: Some(index),
                    ..*grant
                });
            }
        }
        found.ok_or(BadCredential)
    }

    /// Whether the API takes no token at all (every caller has every
    /// scope).
    pub fn is_open(&self) -> bool {
        self.tokens.is_empty()
    }

    /// `GET /whoami` for a request granted `grant`: the token that
    /// authenticated it, or the anonymous grant, or an open API.
    pub fn whoami(&self, grant: &Grant) -> WhoAmI {
        let scopes = |g: &Grant| {
            [
                ("approve", g.approve),
                ("control", g.control),
                ("view", g.view),
            ]
            .into_iter()
            .filter_map(|(name, held)| held.then_some(name))
            .collect::<Vec<_>>()
        };
        let all = |g: &Grant| g.view && g.control && g.approve;
        if self.tokens.is_empty() {
            // No token, no auth: every caller holds every scope.
            return WhoAmI {
                authenticated: false,
                label: None,
                scopes: scopes(&Grant::ALL),
                all_scopes: true,
            };
        }
        match grant.token.and_then(|i| self.tokens.get(i)) {
            Some((_, label, token_grant)) => WhoAmI {
                authenticated: true,
                label: Some(label.clone()),
                scopes: scopes(token_grant),
                all_scopes: all(token_grant),
            },
            None => WhoAmI {
                authenticated: false,
                label: Some("anonymous".to_owned()),
                scopes: scopes(&self.anonymous),
                all_scopes: all(&self.anonymous),
            },
        }
    }

    /// The label of the token a grant came from: `anonymous` for the
    /// anonymous grant, as the original names it in its 403 body.
    pub fn label(&self, grant: &Grant) -> &str {
        grant
            .token
            .and_then(|i| self.tokens.get(i))
            .map_or("anonymous", |(_, label, _)| label.as_str())
    }

    /// Whether a mutating request from `origin` (its `Origin` header) to
    /// `host` (its `Host` header) is allowed: no Origin (curl, scripts),
    /// same origin, or an allow-listed one.
    pub fn origin_allowed(&self, origin: Option<&str>, host: Option<&str>) -> bool {
        let Some(origin) = origin else {
            return true;
        };
        if self.allowed_origins.iter().any(|o| o == origin) {
            return true;
        }
        let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or(origin);
        host.is_some_and(|h| h.eq_ignore_ascii_case(origin_host))
    }
}

/// Byte comparison whose time depends only on the lengths.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::web::AuthToken;

    fn web(yaml: &str) -> WebConfig {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn no_token_grants_everything() {
        let c = Credentials::resolve(&web("listen: [http://127.0.0.1:1]")).unwrap();
        assert_eq!(c.grant(None), Ok(Grant::ALL));
        assert_eq!(c.grant(Some("Bearer whatever")), Ok(Grant::ALL));
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_wrong_tokens_fail() {
        let c = Credentials::resolve(&web(
            "listen: [http://127.0.0.1:1]\nauthToken:\n  value: s3cret\n",
        ))
        .unwrap();
        let authenticated = Grant {
            token: Some(0),
            ..Grant::ALL
        };
        assert_eq!(c.grant(Some("bearer s3cret")), Ok(authenticated));
        assert_eq!(c.grant(Some("BEARER s3cret")), Ok(authenticated));
        assert_eq!(c.label(&authenticated), "authToken");
        assert_eq!(c.label(&Grant::ALL), "anonymous");
        assert_eq!(c.grant(Some("Bearer nope")), Err(BadCredential));
        assert_eq!(c.grant(Some("Basic s3cret")), Err(BadCredential));
        assert_eq!(c.grant(None), Err(BadCredential));
    }

    #[test]
    fn scoped_tokens_and_anonymous_view() {
        let mut w = web("listen: [http://127.0.0.1:1]\nanonymousScopes: [view]\n");
        w.auth_tokens = Some(vec![
            AuthToken {
                value: Some("reader".into()),
                from_file: None,
                from_env_var: None,
                scopes: Some(vec![Scope::View]),
                label: Some("board".into()),
            },
            AuthToken {
                value: Some("operator".into()),
                from_file: None,
                from_env_var: None,
                scopes: Some(vec![Scope::Control]),
                label: None,
            },
        ]);
        let c = Credentials::resolve(&w).unwrap();
        let reader = c.grant(Some("Bearer reader")).unwrap();
        assert!(reader.allows(Needed::View) && !reader.allows(Needed::Control));
        let operator = c.grant(Some("Bearer operator")).unwrap();
        assert!(operator.allows(Needed::View) && operator.allows(Needed::Control));
        let anonymous = c.grant(None).unwrap();
        assert!(anonymous.allows(Needed::View) && !anonymous.allows(Needed::Control));
        assert_eq!(c.label(&reader), "board");
        assert_eq!(c.label(&operator), "web.authTokens[1]");
        assert_eq!(c.label(&anonymous), "anonymous");
        assert_eq!(anonymous.token, None);
    }

    #[test]
    fn query_tokens_count_on_calendar_feeds_only() {
        let mut w = web("listen: [http://127.0.0.1:1]\nanonymousScopes: [view]\n");
        w.auth_tokens = Some(vec![AuthToken {
            value: Some("s3cret".into()),
            from_file: None,
            from_env_var: None,
            scopes: Some(vec![Scope::View]),
            label: Some("phone".into()),
        }]);
        let c = Credentials::resolve(&w).unwrap();
        let token = Grant {
            view: true,
            token: Some(0),
            ..Grant::default()
        };
        assert_eq!(c.grant_for(None, Some("s3cret"), true), Ok(token));
        // a header that is not a bearer one leaves the query token in play
        assert_eq!(
            c.grant_for(Some("Basic x"), Some("s3cret"), true),
            Ok(token)
        );
        assert_eq!(
            c.grant_for(Some("Bearer s3cret"), Some("nope"), true),
            Ok(token)
        );
        assert_eq!(c.grant_for(None, Some("nope"), true), Err(BadCredential));
        // elsewhere a query token authenticates nothing, and as a presented
        // credential it also rules the anonymous grant out
        assert_eq!(c.grant_for(None, Some("s3cret"), false), Err(BadCredential));
        assert_eq!(
            c.grant_for(None, Some(""), false).map(|g| g.token),
            Ok(None)
        );
        assert_eq!(c.grant_for(None, None, true).map(|g| g.token), Ok(None));
        // an open API ignores tokens wherever they are
        let open = Credentials::resolve(&web("listen: [http://127.0.0.1:1]")).unwrap();
        assert_eq!(open.grant_for(None, Some("x"), false), Ok(Grant::ALL));
    }

    #[test]
    fn whoami_tells_the_three_kinds_of_caller_apart() {
        let open = Credentials::resolve(&web("listen: [http://127.0.0.1:1]")).unwrap();
        let me = open.whoami(&Grant::ALL);
        assert_eq!(
            (me.authenticated, me.label, me.scopes, me.all_scopes),
            (false, None, vec!["approve", "control", "view"], true)
        );
        let mut w = web(
            "listen: [http://127.0.0.1:1]\nanonymousScopes: [view]\nauthToken:\n  value: all\n",
        );
        w.auth_tokens = Some(vec![AuthToken {
            value: Some("ops".into()),
            from_file: None,
            from_env_var: None,
            scopes: Some(vec![Scope::Control]),
            label: Some("operator".into()),
        }]);
        let c = Credentials::resolve(&w).unwrap();
        let me = c.whoami(&c.grant(Some("Bearer ops")).unwrap());
        assert_eq!(
            (
                me.authenticated,
                me.label.as_deref(),
                me.scopes,
                me.all_scopes
            ),
            (true, Some("operator"), vec!["control", "view"], false)
        );
        let me = c.whoami(&c.grant(Some("Bearer all")).unwrap());
        assert_eq!(
            (me.label.as_deref(), me.all_scopes),
            (Some("authToken"), true)
        );
        let me = c.whoami(&c.grant(None).unwrap());
        assert_eq!(
            (
                me.authenticated,
                me.label.as_deref(),
                me.scopes,
                me.all_scopes
            ),
            (false, Some("anonymous"), vec!["view"], false)
        );
    }

    #[test]
    fn empty_token_fails_closed() {
        let w = web("listen: [http://127.0.0.1:1]\nauthToken:\n  fromEnvVar: CRONSTABLE_TEST_SURELY_UNSET_VAR\n");
        assert!(Credentials::resolve(&w).unwrap_err().contains("empty"));
    }

    #[test]
    fn origin_check() {
        let c = Credentials::resolve(&web(
            "listen: [http://127.0.0.1:1]\nallowedOrigins: ['https://ok.example']\n",
        ))
        .unwrap();
        assert!(c.origin_allowed(None, Some("127.0.0.1:1")));
        assert!(c.origin_allowed(Some("http://127.0.0.1:1"), Some("127.0.0.1:1")));
        assert!(c.origin_allowed(Some("https://ok.example"), Some("127.0.0.1:1")));
        assert!(!c.origin_allowed(Some("https://evil.example"), Some("127.0.0.1:1")));
    }
}
