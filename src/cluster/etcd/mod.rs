//! The `etcd` backend: a lease kept alive every `max(1 s, ttl/3)` and one
//! key, `electionName`, written by a create-if-absent transaction that
//! binds it to that lease and holds this node's name. The fence is the
//! lease id: this node leads while the key is bound to its own lease, and
//! only until the last keepalive's start plus the lease TTL minus one
//! second, so a node whose rounds stall demotes itself before etcd frees
//! the key for the others. A keepalive that finds the lease gone fences at
//! once; the next grant re-campaigns. A graceful release revokes the
//! lease, which deletes the key at once.
//!
//! The cluster's records are plain keys beside the election key (not
//! bound to the lease, so a revoke keeps them): `<electionName>/reboot-ran`
//! (the original's), `<electionName>/last-fires` and
//! `<electionName>/pauses` (ours), each written
//! by a compare-and-swap on its `mod_revision`, only by the leader.
//!
//! It speaks etcd's v3 JSON gateway (`/v3/...`, keys and values base64)
//! over the HTTP client the reporters already use, rather than the gRPC
//! client crate: no `protoc` at build time and no gRPC stack in the
//! binary, and the requests are the ones the original sends.

use super::pauses;
use super::records::{self, RecordsAnswer, RecordsOp, RecordsResult};
use super::{Backend, BackendError, Round};
use crate::config::cluster::EtcdSettings;
use crate::report::secret::{self, Secret};
use crate::scheduler::ports::RecordsError;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant;
pub(crate) use wire::{b64, int64, keepalive_ttl};
use wire::{
    campaign_body, campaign_outcome, cas_body, cas_outcome, first_kv, micro_time, period_for,
    round_deadline_for, versioned, KeyValue, Versioned,
};

mod wire;

/// Below this effective TTL the leader window (TTL minus the one-second
/// skew margin, renewed every second) is too short to lead stably.
const MIN_USABLE_TTL: u64 = 3;

/// The margin a leader stops before its lease's expiry, so etcd's clock
/// and ours may differ by up to that much.
const SKEW: Duration = Duration::from_secs(1);

/// What the holder is shown as when the key exists but its value does not
/// decode (a quorate follower must still know someone leads).
const UNKNOWN_HOLDER: &str = "<unknown holder>";

/// The etcd lease backend.
pub struct EtcdLease {
    http: reqwest::Client,
    endpoints: Vec<String>,
    /// Where the next round starts probing the endpoints (rotated every
    /// round so one half-open endpoint is not always waited on first).
    offset: usize,
    election_name: String,
    node_name: String,
    /// `ttl` as configured.
    ttl: u64,
    /// The TTL etcd granted, never above the configured one.
    effective_ttl: u64,
    /// The effective TTL is below [`MIN_USABLE_TTL`] (logged once per
    /// transition).
    ttl_collapsed: bool,
    connect_timeout: Duration,
    credentials: Option<(String, Secret)>,
    token: Option<String>,
    /// The lease this node keeps alive (None: none granted, or lost).
    lease_id: Option<i64>,
    /// Leading until this instant (None: not leading).
    leading_until: Option<Instant>,
    /// When the lease expires for others, while leading (display only).
    expiry: Option<chrono::DateTime<chrono::Utc>>,
}

/// Why a request to etcd failed. `Display` is the text the log lines and
/// the slot store's DEBUG lines show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtcdError {
    /// etcd answered 401: the token expired or is missing.
    #[error("{url}: 401 {body}")]
    Unauthorized {
        /// The endpoint and path asked.
        url: String,
        /// etcd's answer, trimmed.
        body: String,
    },
    /// No endpoint answered 2xx with a JSON object.
    #[error("all etcd endpoints failed: {last}")]
    AllEndpointsFailed {
        /// The last endpoint's failure.
        last: String,
    },
    /// Logging in failed.
    #[error("authentication failed: {0}")]
    Authentication(Box<EtcdError>),
    /// etcd's answer to the login held no token.
    #[error("authentication failed: etcd returned no token")]
    NoToken,
}

fn read_file(path: &str, what: &str) -> Result<Vec<u8>, BackendError> {
    std::fs::read(path)
        .map_err(|e| BackendError::Setup(format!("{what} {path} could not be read: {e}")))
}

impl EtcdLease {
    /// A backend for the resolved settings: resolves the password and
    /// loads the TLS files (errors name the key), builds the HTTP client.
    /// Nothing is sent to etcd yet.
    pub async fn connect(
        settings: &EtcdSettings,
        node_name: String,
        connect_timeout: Duration,
    ) -> Result<EtcdLease, BackendError> {
        let password = secret::resolve(settings.password.as_ref(), "cluster.etcd.password")
            .await
            .map_err(BackendError::Secret)?;
        let credentials = match (&settings.username, password) {
            (Some(user), Some(password)) => Some((user.clone(), password)),
            (Some(_), None) => {
                return Err(BackendError::Setup(
                    "cluster.etcd.username is set but no password is configured; set \
                     cluster.etcd.password (value/fromFile/fromEnvVar)"
                        .to_owned(),
                ))
            }
            // A password without a user name has no one to log in as.
            (None, _) => None,
        };
        // Redirects are not followed: a real etcd answers directly, and a
        // redirect could carry the token elsewhere or to plain HTTP.
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect_timeout)
            .timeout(connect_timeout);
        if let Some(ca) = &settings.ca {
            let pem = read_file(ca, "cluster.etcd.tls.ca")?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                BackendError::Setup(format!(
                    "cluster.etcd.tls.ca {ca} is not a PEM certificate: {e}"
                ))
            })?;
            if certs.is_empty() {
                return Err(BackendError::Setup(format!(
                    "cluster.etcd.tls.ca {ca} holds no PEM certificate"
                )));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let (Some(cert), Some(key)) = (&settings.cert, &settings.key) {
            let mut pem = read_file(cert, "cluster.etcd.tls.cert")?;
            pem.push(b'\n');
            pem.extend(read_file(key, "cluster.etcd.tls.key")?);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                BackendError::Setup(format!(
                    "cluster.etcd.tls.cert/key {cert}, {key} are not a PEM certificate and key: {e}"
                ))
            })?;
            builder = builder.identity(identity);
        }
        let http = builder.build().map_err(|e| {
            BackendError::Setup(format!("cluster.etcd: cannot build the HTTP client: {e}"))
        })?;
        Ok(EtcdLease {
            http,
            endpoints: settings
                .endpoints
                .iter()
                .map(|e| e.trim_end_matches('/').to_owned())
                .collect(),
            offset: 0,
            election_name: settings.election_name.clone(),
            node_name,
            ttl: settings.ttl,
            effective_ttl: settings.ttl,
            ttl_collapsed: false,
            connect_timeout,
            credentials,
            token: None,
            lease_id: None,
            leading_until: None,
            expiry: None,
        })
    }

    /// Each request's own bound: a fifth of the round's, so a round's few
    /// requests (and a failover to the next endpoint) fit in it.
    fn request_timeout(&self) -> Duration {
        (round_deadline_for(self.effective_ttl) / 5).min(self.connect_timeout)
    }

    /// One POST, tried on each endpoint in turn (from this round's
    /// offset) until one answers 2xx with a JSON object.
    async fn post_once(&self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        let count = self.endpoints.len();
        let mut last = String::from("no endpoint configured");
        for i in 0..count {
            let endpoint = &self.endpoints[(self.offset + i) % count];
            let mut request = self
                .http
                .post(format!("{endpoint}{path}"))
                .timeout(self.request_timeout())
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(token) = &self.token {
                request = request.header("authorization", token.as_str());
            }
            let response = match request.send().await {
                Ok(response) => response,
                Err(err) => {
                    last = format!("{endpoint}: {err}");
                    continue;
                }
            };
            let status = response.status();
            let text = match response.text().await {
                Ok(text) => text,
                Err(err) => {
                    last = format!("{endpoint}: {err}");
                    continue;
                }
            };
            if status == reqwest::StatusCode::UNAUTHORIZED {
                return Err(EtcdError::Unauthorized {
                    url: format!("{endpoint}{path}"),
                    body: text.trim().to_owned(),
                });
            }
            if !status.is_success() {
                last = format!("{endpoint}{path}: HTTP {} {}", status.as_u16(), text.trim());
                continue;
            }
            match serde_json::from_str::<Value>(&text) {
                Ok(value) if value.is_object() => return Ok(value),
                _ => last = format!("{endpoint}{path}: the answer is not a JSON object"),
            }
        }
        Err(EtcdError::AllEndpointsFailed { last })
    }

    /// Logs in (when a user is configured and no token is held).
    async fn authenticate(&mut self) -> Result<(), EtcdError> {
        let Some((user, password)) = &self.credentials else {
            return Ok(());
        };
        let body = json!({"name": user, "password": password.expose()});
        self.token = None;
        let answer = self
            .post_once("/v3/auth/authenticate", &body)
            .await
            .map_err(|e| EtcdError::Authentication(Box::new(e)))?;
        let token = answer
            .get("token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or(EtcdError::NoToken)?;
        self.token = Some(token.to_owned());
        Ok(())
    }

    /// A POST with the auth token; a 401 (the token expired) logs in again
    /// once and retries.
    pub(crate) async fn post(&mut self, path: &str, body: &Value) -> Result<Value, EtcdError> {
        if self.credentials.is_some() && self.token.is_none() {
            self.authenticate().await?;
        }
        match self.post_once(path, body).await {
            Ok(value) => Ok(value),
            Err(EtcdError::Unauthorized { .. }) if self.credentials.is_some() => {
                self.authenticate().await?;
                self.post_once(path, body).await
            }
            Err(e) => Err(e),
        }
    }

    /// Adopts the TTL etcd granted or kept alive (never above the
    /// configured one: a fence longer than the server's lease would let
    /// two nodes lead), logging the collapse below the usable floor and
    /// the recovery once each.
    fn narrow_ttl(&mut self, granted: i64) {
        let effective = (granted.max(1) as u64).min(self.ttl).max(1);
        let usable = effective >= MIN_USABLE_TTL;
        if !usable && !self.ttl_collapsed {
            tracing::warn!(
                target: "cronstable::cluster",
                "cluster: etcd granted a lease ttl of {effective}s, below the {MIN_USABLE_TTL}s \
                 needed for a usable leader window; Leader jobs will not run on this node until \
                 etcd returns a larger ttl (check etcd's --min-lease-ttl and load)"
            );
        } else if usable && self.ttl_collapsed {
            tracing::info!(
                target: "cronstable::cluster",
                "cluster: etcd lease ttl recovered to {effective}s; leader window restored"
            );
        }
        self.ttl_collapsed = !usable;
        self.effective_ttl = effective;
    }

    /// Forgets leadership at once (the lease is gone or was given up).
    fn fence(&mut self) {
        self.leading_until = None;
        self.expiry = None;
    }

    /// The round's requests; `anchor` was taken before the first was sent.
    async fn exchange(&mut self, anchor: Instant) -> Result<Option<KeyValue>, String> {
        if let Some(id) = self.lease_id {
            let answer = self
                .post("/v3/lease/keepalive", &json!({"ID": id.to_string()}))
                .await
                .map_err(|e| e.to_string())?;
            if answer.get("error").is_some() {
                return Err(format!("keepalive failed: {answer}"));
            }
            match keepalive_ttl(&answer) {
                Some(ttl) => self.narrow_ttl(ttl),
                None => {
                    // etcd already freed the key: trusting the old
                    // deadline could make two leaders.
                    self.lease_id = None;
                    self.fence();
                }
            }
        }
        let mut fresh = false;
        if self.lease_id.is_none() {
            let answer = self
                .post("/v3/lease/grant", &json!({"TTL": self.ttl.to_string()}))
                .await
                .map_err(|e| e.to_string())?;
            let id = int64(answer.get("ID"))
                .filter(|id| *id != 0)
                .ok_or_else(|| format!("lease grant returned no lease: {answer}"))?;
            let granted = int64(answer.get("TTL")).unwrap_or(self.ttl as i64);
            self.lease_id = Some(id);
            self.narrow_ttl(granted);
            fresh = true;
        }
        let Some(id) = self.lease_id else {
            return Err("no lease".to_owned());
        };
        let key = b64(&self.election_name);
        // Steady state reads; the transaction (a write) runs only when the
        // key is absent or this node's lease is new.
        let current = if fresh {
            None
        } else {
            let answer = self
                .post("/v3/kv/range", &json!({"key": key}))
                .await
                .map_err(|e| e.to_string())?;
            first_kv(&answer)
        };
        let (won, holder) = match current {
            Some(kv) => (kv.lease == id, Some(kv)),
            None => {
                let body = campaign_body(&self.election_name, &self.node_name, id);
                let answer = self
                    .post("/v3/kv/txn", &body)
                    .await
                    .map_err(|e| e.to_string())?;
                let (succeeded, kv) = campaign_outcome(&answer);
                let ours = kv.as_ref().is_some_and(|kv| kv.lease == id);
                (succeeded || ours, kv)
            }
        };
        if won {
            let window = Duration::from_secs(self.effective_ttl).saturating_sub(SKEW);
            if window.is_zero() {
                self.fence();
            } else {
                self.leading_until = Some(anchor + window);
                self.expiry = Some(chrono::Utc::now() + window);
            }
            Ok(Some(KeyValue {
                lease: id,
                value: Some(self.node_name.clone()),
            }))
        } else {
            self.fence();
            Ok(holder)
        }
    }

    async fn run_round(&mut self) -> Round {
        self.offset = self.offset.wrapping_add(1);
        let anchor = Instant::now();
        match self.exchange(anchor).await {
            Ok(kv) => Round {
                leading_until: self.leading_until,
                answered: true,
                holder: kv.map(|kv| kv.value.unwrap_or_else(|| UNKNOWN_HOLDER.to_owned())),
                error: None,
            },
            Err(error) => Round {
                // An unanswered round changes nothing: a lease still held
                // runs out on its own deadline.
                leading_until: self.leading_until,
                answered: false,
                holder: None,
                error: Some(error),
            },
        }
    }

    fn reboot_ran_key(&self) -> String {
        format!("{}/reboot-ran", self.election_name)
    }

    fn last_fires_key(&self) -> String {
        format!("{}/last-fires", self.election_name)
    }

    fn pauses_key(&self) -> String {
        format!("{}/pauses", self.election_name)
    }

    async fn read_key(&mut self, key: &str) -> Result<Versioned, RecordsError> {
        let answer = self
            .post("/v3/kv/range", &json!({"key": b64(key)}))
            .await
            .map_err(|e| RecordsError::Store(e.to_string()))?;
        Ok(versioned(&answer))
    }

    /// Changes `key` with `change` (None from it: nothing to write) by
    /// compare-and-swap, re-reading on a lost race, up to
    /// [`records::CAS_ATTEMPTS`] times. Only while this node leads.
    async fn write_key(
        &mut self,
        key: &str,
        change: impl Fn(Option<&str>) -> Option<String>,
    ) -> RecordsResult {
        let mut seen = self.read_key(key).await?;
        for _ in 0..records::CAS_ATTEMPTS {
            if self
                .leading_until
                .is_none_or(|until| Instant::now() >= until)
            {
                return Err(RecordsError::NotLeader);
            }
            let Some(text) = change(seen.value.as_deref()) else {
                return Ok(RecordsAnswer::Done);
            };
            let answer = self
                .post("/v3/kv/txn", &cas_body(key, &text, seen.mod_revision))
                .await
                .map_err(|e| RecordsError::Store(e.to_string()))?;
            match cas_outcome(&answer) {
                Ok(()) => return Ok(RecordsAnswer::Done),
                Err(now) => seen = now,
            }
        }
        Err(RecordsError::KeyKeptChanging {
            key: key.to_owned(),
            attempts: records::CAS_ATTEMPTS,
        })
    }

    async fn run_records(&mut self, op: RecordsOp) -> RecordsResult {
        match op {
            RecordsOp::RebootRan { job_set_id } => {
                let key = self.reboot_ran_key();
                let read = self.read_key(&key).await?;
                Ok(RecordsAnswer::Jobs(records::reboot_jobs_for(
                    read.value.as_deref(),
                    &job_set_id,
                )))
            }
            RecordsOp::LastFires => {
                let key = self.last_fires_key();
                let read = self.read_key(&key).await?;
                Ok(RecordsAnswer::Fires(
                    records::decode_fires(read.value.as_deref())
                        .into_iter()
                        .collect(),
                ))
            }
            RecordsOp::MarkRebootRan { job_set_id, job } => {
                let key = self.reboot_ran_key();
                self.write_key(&key, |raw| records::with_reboot_job(raw, &job_set_id, &job))
                    .await
            }
            RecordsOp::RecordFire { job, at } => {
                let key = self.last_fires_key();
                self.write_key(&key, |raw| records::with_fire(raw, &job, at))
                    .await
            }
            RecordsOp::Pauses => {
                let key = self.pauses_key();
                let read = self.read_key(&key).await?;
                Ok(RecordsAnswer::Pauses(
                    pauses::decode_pauses(read.value.as_deref())
                        .into_iter()
                        .collect(),
                ))
            }
            RecordsOp::RecordPause { job, mark } => {
                let key = self.pauses_key();
                self.write_key(&key, |raw| {
                    pauses::with_mark(raw, &job, mark.clone(), chrono::Utc::now())
                })
                .await
            }
        }
    }

    async fn run_release(&mut self) -> Result<(), BackendError> {
        self.fence();
        let Some(id) = self.lease_id.take() else {
            return Ok(());
        };
        // Revoking deletes every key bound to the lease: the election key
        // is gone at once and a survivor's next round wins it.
        self.post("/v3/lease/revoke", &json!({"ID": id.to_string()}))
            .await
            .map(|_| ())
            .map_err(BackendError::from)
    }
}

impl Backend for EtcdLease {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn start_line(&self) -> String {
        format!(
            "cluster: etcd backend, identity '{}', election key '{}', ttl {}s, endpoints {}",
            self.node_name,
            self.election_name,
            self.ttl,
            self.endpoints.join(", ")
        )
    }

    fn round(&mut self) -> BoxFuture<'_, Round> {
        Box::pin(self.run_round())
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.run_release())
    }

    fn records(&mut self, op: RecordsOp) -> BoxFuture<'_, RecordsResult> {
        Box::pin(self.run_records(op))
    }

    fn period(&self) -> Duration {
        period_for(self.effective_ttl)
    }

    fn round_deadline(&self) -> Duration {
        round_deadline_for(self.effective_ttl)
    }

    fn quorum_window(&self) -> Duration {
        Duration::from_secs(self.effective_ttl)
    }

    fn lease_view(&self) -> Value {
        json!({
            "electionName": self.election_name,
            "identity": self.node_name,
            "holder": null,
            "leaseId": self.lease_id.map(|id| id.to_string()),
            "expiry": self.expiry.map(micro_time),
        })
    }

    fn round_failure_line(&self, error: &str) -> String {
        format!("cluster: etcd round failed: {error}")
    }
}

#[cfg(test)]
mod tests;
