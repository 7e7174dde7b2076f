//! Slots on etcd: job `J`'s slot is the key `<electionName>/slots/J`,
//! holding the holder (`node#token`) and bound to an etcd lease of its
//! own, granted with the slot TTL (rounded up) at every acquire. The key
//! is written by a create-if-absent transaction (its create revision must
//! be 0), so of two nodes racing only one creates it. The fence is the
//! key's `create_revision`: etcd's revision counter only grows, so every
//! holding gets a larger number than the one before, and it comes back
//! with every read (no state kept here between calls).
//!
//! A renewal reads the key (still ours, same create revision?) and keeps
//! its lease alive; a keepalive that finds the lease gone (TTL <= 0)
//! means the slot was lost. A release revokes the lease, which deletes
//! the key at once. Expiry is etcd's own: a key that is there is held, so
//! unlike the Lease and directory stores no clocks are compared.
//!
//! A Replace request is the plain key `<electionName>/slot-cancels/J`
//! (not bound to a lease) holding compact JSON
//! `{"kind":"cancel","fence":N,"by":"<node>","at":"<ISO UTC>"}`.
//!
//! Requests go through the election's gateway client (endpoints in
//! order, auth with re-login on an expired token, TLS), one at a time.

use super::kube::{decode_cancel, encode_cancel};
use super::{CancelRequest, SlotLease, SlotStore, SlotStoreError};
use crate::cluster::etcd::{b64, int64, keepalive_ttl, EtcdLease};
use crate::cluster::BackendError;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::{Mutex, OnceCell};

/// How the store gets its client: built from `cluster.etcd` on first use
/// (a failure is a store error; the next operation tries again).
pub type EtcdClientSource =
    Arc<dyn Fn() -> BoxFuture<'static, Result<EtcdLease, BackendError>> + Send + Sync>;

/// A slot key as read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SlotKey {
    /// The holder written (None when the value is not UTF-8).
    holder: Option<String>,
    create_revision: u64,
    /// The etcd lease the key is bound to.
    lease: i64,
}

/// The first key of a range answer.
fn slot_key(range: &Value) -> Option<SlotKey> {
    let kv = range.get("kvs")?.as_array()?.first()?;
    Some(SlotKey {
        holder: kv
            .get("value")
            .and_then(Value::as_str)
            .and_then(|v| B64.decode(v).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        create_revision: int64(kv.get("create_revision"))
            .and_then(|r| u64::try_from(r).ok())
            .unwrap_or(0),
        lease: int64(kv.get("lease")).unwrap_or(0),
    })
}

/// The claim transaction: create `key` = `holder` bound to `lease` only
/// if the key does not exist; either way read the key back (on success
/// that gives its create revision, the fence).
fn claim_body(key: &str, holder: &str, lease: i64) -> Value {
    let key = b64(key);
    json!({
        "compare": [{
            "key": key,
            "result": "EQUAL",
            "target": "CREATE",
            "create_revision": "0",
        }],
        "success": [
            {"requestPut": {"key": key, "value": b64(holder), "lease": lease.to_string()}},
            {"requestRange": {"key": key}},
        ],
        "failure": [{"requestRange": {"key": key}}],
    })
}

/// Whether the claim transaction created the key, and the key as read
/// back (the last response of either branch is the range).
fn claim_outcome(answer: &Value) -> (bool, Option<SlotKey>) {
    let succeeded = answer
        .get("succeeded")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let key = answer
        .get("responses")
        .and_then(Value::as_array)
        .and_then(|responses| responses.last())
        .and_then(|r| r.get("response_range").or_else(|| r.get("responseRange")))
        .and_then(slot_key);
    (succeeded, key)
}

/// What an acquire makes of the transaction's answer, for the lease
/// `granted` just now and `holder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claimed {
    /// Ours with this fence; the granted lease is the key's.
    Won(u64),
    /// Ours already from an earlier acquire (its own lease): adopt it
    /// and give back the lease granted now.
    Adopted(u64),
    /// Someone else's; give back the lease granted now.
    Denied,
}

fn judge(succeeded: bool, key: Option<&SlotKey>, holder: &str, granted: i64) -> Claimed {
    match key {
        // Created by this very request (perhaps on an endpoint that timed
        // out after applying it, and found on the next one).
        Some(k) if k.lease == granted && (succeeded || k.holder.as_deref() == Some(holder)) => {
            Claimed::Won(k.create_revision)
        }
        Some(k) if k.holder.as_deref() == Some(holder) => Claimed::Adopted(k.create_revision),
        _ => Claimed::Denied,
    }
}

/// The slot store on etcd keys.
pub struct EtcdSlotStore {
    inner: Arc<EtcdInner>,
}

struct EtcdInner {
    election_name: String,
    source: EtcdClientSource,
    client: OnceCell<Mutex<EtcdLease>>,
}

impl EtcdSlotStore {
    /// Slots under `<election_name>/slots/`, through the client `source`
    /// builds.
    pub fn new(election_name: &str, source: EtcdClientSource) -> EtcdSlotStore {
        EtcdSlotStore {
            inner: Arc::new(EtcdInner {
                election_name: election_name.to_owned(),
                source,
                client: OnceCell::new(),
            }),
        }
    }
}

/// `<electionName>/slots/<job>`.
pub fn slot_key_name(election_name: &str, job: &str) -> String {
    format!("{election_name}/slots/{job}")
}

/// `<electionName>/slot-cancels/<job>` (its own prefix: no job name can
/// make a slot key equal to another job's cancel key).
pub fn cancel_key_name(election_name: &str, job: &str) -> String {
    format!("{election_name}/slot-cancels/{job}")
}

impl EtcdInner {
    async fn client(&self) -> Result<tokio::sync::MutexGuard<'_, EtcdLease>, SlotStoreError> {
        let client = self
            .client
            .get_or_try_init(|| async { (self.source)().await.map(Mutex::new) })
            .await?;
        Ok(client.lock().await)
    }

    async fn range(&self, key: &str) -> Result<Option<SlotKey>, SlotStoreError> {
        let answer = self
            .client()
            .await?
            .post("/v3/kv/range", &json!({"key": b64(key)}))
            .await?;
        Ok(slot_key(&answer))
    }

    async fn revoke(client: &mut EtcdLease, lease: i64) -> Result<(), SlotStoreError> {
        client
            .post("/v3/lease/revoke", &json!({"ID": lease.to_string()}))
            .await
            .map(|_| ())
            .map_err(SlotStoreError::from)
    }

    async fn acquire(
        &self,
        job: &str,
        holder: &str,
        ttl: f64,
    ) -> Result<Option<u64>, SlotStoreError> {
        let key = slot_key_name(&self.election_name, job);
        let mut client = self.client().await?;
        let ttl = ttl.ceil().max(1.0) as i64;
        let grant = client
            .post("/v3/lease/grant", &json!({"TTL": ttl.to_string()}))
            .await?;
        let granted = int64(grant.get("ID"))
            .filter(|id| *id != 0)
            .ok_or_else(|| SlotStoreError::NoLeaseGranted(grant.clone()))?;
        let answer = client
            .post("/v3/kv/txn", &claim_body(&key, holder, granted))
            .await?;
        let (succeeded, read) = claim_outcome(&answer);
        let claimed = judge(succeeded, read.as_ref(), holder, granted);
        if !matches!(claimed, Claimed::Won(_)) {
            // Not needed: it would expire on its own, but a revoke keeps
            // etcd's lease table small.
            let _ = Self::revoke(&mut client, granted).await;
        }
        Ok(match claimed {
            Claimed::Won(fence) | Claimed::Adopted(fence) => Some(fence),
            Claimed::Denied => None,
        })
    }

    /// The key, if it is still `holder`'s holding `fence`.
    async fn ours(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
    ) -> Result<Option<SlotKey>, SlotStoreError> {
        let key = self.range(&slot_key_name(&self.election_name, job)).await?;
        Ok(key.filter(|k| k.holder.as_deref() == Some(holder) && k.create_revision == fence))
    }

    async fn renew(&self, job: &str, holder: &str, fence: u64) -> Result<bool, SlotStoreError> {
        let Some(key) = self.ours(job, holder, fence).await? else {
            return Ok(false);
        };
        let answer = self
            .client()
            .await?
            .post("/v3/lease/keepalive", &json!({"ID": key.lease.to_string()}))
            .await?;
        if answer.get("error").is_some() {
            return Err(SlotStoreError::KeepaliveFailed(answer));
        }
        // A lease that is gone cannot come back: the key went with it.
        Ok(keepalive_ttl(&answer).is_some())
    }

    async fn release(&self, job: &str, holder: &str, fence: u64) -> Result<(), SlotStoreError> {
        let Some(key) = self.ours(job, holder, fence).await? else {
            return Ok(());
        };
        Self::revoke(&mut *self.client().await?, key.lease).await
    }

    async fn read(&self, job: &str) -> Result<Option<SlotLease>, SlotStoreError> {
        let key = self.range(&slot_key_name(&self.election_name, job)).await?;
        Ok(key.map(|k| SlotLease {
            holder: k.holder.unwrap_or_default(),
            fence: k.create_revision,
            // etcd deletes the key when its lease expires.
            live: true,
        }))
    }

    async fn request_cancel(
        &self,
        job: &str,
        request: CancelRequest,
    ) -> Result<(), SlotStoreError> {
        let key = cancel_key_name(&self.election_name, job);
        let body = json!({"key": b64(&key), "value": b64(&encode_cancel(&request))});
        self.client()
            .await?
            .post("/v3/kv/put", &body)
            .await
            .map(|_| ())
            .map_err(SlotStoreError::from)
    }

    async fn cancel_request(&self, job: &str) -> Result<Option<CancelRequest>, SlotStoreError> {
        let key = self
            .range(&cancel_key_name(&self.election_name, job))
            .await?;
        Ok(key
            .and_then(|k| k.holder)
            .as_deref()
            .and_then(decode_cancel))
    }
}

impl SlotStore for EtcdSlotStore {
    fn acquire(
        &self,
        job: &str,
        holder: &str,
        ttl: f64,
    ) -> BoxFuture<'static, Result<Option<u64>, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let (job, holder) = (job.to_owned(), holder.to_owned());
        Box::pin(async move { inner.acquire(&job, &holder, ttl).await })
    }

    fn renew(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
        _ttl: f64,
    ) -> BoxFuture<'static, Result<bool, SlotStoreError>> {
        // The TTL was fixed when the lease was granted; a keepalive
        // restores it.
        let inner = Arc::clone(&self.inner);
        let (job, holder) = (job.to_owned(), holder.to_owned());
        Box::pin(async move { inner.renew(&job, &holder, fence).await })
    }

    fn release(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let (job, holder) = (job.to_owned(), holder.to_owned());
        Box::pin(async move { inner.release(&job, &holder, fence).await })
    }

    fn read(&self, job: &str) -> BoxFuture<'static, Result<Option<SlotLease>, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        Box::pin(async move { inner.read(&job).await })
    }

    fn request_cancel(
        &self,
        job: &str,
        request: CancelRequest,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        Box::pin(async move { inner.request_cancel(&job, request).await })
    }

    fn cancel_request(
        &self,
        job: &str,
    ) -> BoxFuture<'static, Result<Option<CancelRequest>, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        Box::pin(async move { inner.cancel_request(&job).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sit_under_the_election_name() {
        assert_eq!(
            slot_key_name("cronstable/leader", "Nightly Job"),
            "cronstable/leader/slots/Nightly Job"
        );
        assert_eq!(
            cancel_key_name("cronstable/leader", "j"),
            "cronstable/leader/slot-cancels/j"
        );
    }

    #[test]
    fn the_claim_creates_only_an_absent_key_bound_to_the_new_lease() {
        let body = claim_body("p/slots/j", "a#1", 77);
        assert_eq!(body["compare"][0]["target"], "CREATE");
        assert_eq!(body["compare"][0]["create_revision"], "0");
        assert_eq!(body["compare"][0]["key"], b64("p/slots/j"));
        assert_eq!(body["success"][0]["requestPut"]["lease"], "77");
        assert_eq!(body["success"][0]["requestPut"]["value"], b64("a#1"));
        assert_eq!(body["success"][1]["requestRange"]["key"], b64("p/slots/j"));
        assert_eq!(body["failure"][0]["requestRange"]["key"], b64("p/slots/j"));
    }

    fn answer(succeeded: bool, holder: &str, revision: &str, lease: &str) -> Value {
        let range = json!({"response_range": {"kvs": [{
            "key": b64("p/slots/j"), "value": b64(holder),
            "create_revision": revision, "mod_revision": revision, "lease": lease,
        }]}});
        let responses = if succeeded {
            json!([{"response_put": {}}, range])
        } else {
            json!([range])
        };
        json!({"succeeded": succeeded, "responses": responses})
    }

    #[test]
    fn claim_outcomes() {
        let (ok, key) = claim_outcome(&answer(true, "a#1", "12", "77"));
        assert!(ok);
        assert_eq!(
            key,
            Some(SlotKey {
                holder: Some("a#1".into()),
                create_revision: 12,
                lease: 77
            })
        );
        assert_eq!(judge(ok, key.as_ref(), "a#1", 77), Claimed::Won(12));
        // Another holder's key: denied.
        let (ok, key) = claim_outcome(&answer(false, "b#2", "9", "55"));
        assert_eq!(judge(ok, key.as_ref(), "a#1", 77), Claimed::Denied);
        // Our earlier holding under another lease: adopted.
        let (ok, key) = claim_outcome(&answer(false, "a#1", "9", "55"));
        assert_eq!(judge(ok, key.as_ref(), "a#1", 77), Claimed::Adopted(9));
        // Our own write, applied by an endpoint that then timed out and
        // found by the retry: won, and its lease must not be revoked.
        let (ok, key) = claim_outcome(&answer(false, "a#1", "9", "77"));
        assert_eq!(judge(ok, key.as_ref(), "a#1", 77), Claimed::Won(9));
        // The key vanished between the compare and the read: not ours.
        assert_eq!(
            judge(false, None, "a#1", 77),
            Claimed::Denied,
            "absent after a failed compare"
        );
    }
}
