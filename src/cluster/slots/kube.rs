//! Slots on Kubernetes: one `coordination.k8s.io/v1` Lease per job, in
//! the election's lease namespace, named by [`slot_lease_name`]. Every
//! write is a create or a replace carrying the resourceVersion just read,
//! so two nodes racing for a slot cannot both win: the API server refuses
//! the second write with 409, which this store reports as a denial.
//!
//! The record: `holderIdentity` is the engine's holder (`node#token`),
//! `leaseDurationSeconds` the slot TTL rounded up, `acquireTime` and
//! `renewTime` MicroTimes, and `leaseTransitions` the fence (bumped on
//! every takeover, so each holding has its own number). A release clears
//! `holderIdentity` and keeps the object. A Replace request is the
//! annotation `cronstable.io/cancel`, compact JSON
//! `{"kind":"cancel","fence":N,"by":"<node>","at":"<ISO UTC>"}`.
//!
//! Expiry is judged like the original's slot files: the holder's
//! `renewTime` plus the duration against this node's wall clock (with a
//! one-second margin), so the nodes' clocks must agree (NTP). The
//! election itself does not depend on clocks; only slots do.

use super::{CancelRequest, SlotLease, SlotStore, SlotStoreError};
use crate::cluster::BackendError;
use futures_util::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The annotation a Replace request is written to.
pub const CANCEL_ANNOTATION: &str = "cronstable.io/cancel";

/// The longest object name the API server accepts.
const MAX_NAME: usize = 253;

/// A holder's written expiry counts as passed only this long after it by
/// our clock (the same margin as the directory store).
const SKEW: chrono::Duration = chrono::Duration::seconds(1);

/// Attempts of a read-modify-replace that keeps meeting 409s (another
/// writer between our read and our write: a renewal, a cancel request).
const ATTEMPTS: usize = 3;

/// How the store gets its Lease API: at once with the Kubernetes mode's
/// client, or by connecting (kubeconfig, in-cluster) on first use.
pub type LeaseApiSource =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Api<Lease>, BackendError>> + Send + Sync>;

/// The name of job `job`'s slot Lease next to the election Lease
/// `lease_name`: `<leaseName>-slot-<job>`, where the job part is made a
/// valid RFC 1123 subdomain piece (lowercase; any character other than
/// `a-z`, `0-9` becomes `-`; runs of `-` collapse; `-` trimmed at both
/// ends). When that changed the job name, or the whole would pass 253
/// characters, the name is cut to fit and ends in `-` plus the first 8
/// hex digits of the SHA-256 of the exact job name, so `Backup` and
/// `backup` (or two long names sharing a prefix) get Leases of their own.
pub fn slot_lease_name(lease_name: &str, job: &str) -> String {
    lease_name_for(lease_name, "slot", job)
}

/// `<leaseName>-<kind>-<name>` by the rules of [`slot_lease_name`] (which
/// is this with `slot`); the pool documents' Leases use `pool`.
pub fn lease_name_for(lease_name: &str, kind: &str, job: &str) -> String {
    let mut part = String::with_capacity(job.len());
    for c in job.chars() {
        let c = c.to_ascii_lowercase();
        let keep = c.is_ascii_lowercase() || c.is_ascii_digit();
        let c = if keep { c } else { '-' };
        if c == '-' && (part.is_empty() || part.ends_with('-')) {
            continue;
        }
        part.push(c);
    }
    while part.ends_with('-') {
        part.pop();
    }
    let full = if part.is_empty() {
        format!("{lease_name}-{kind}")
    } else {
        format!("{lease_name}-{kind}-{part}")
    };
    if !part.is_empty() && part == job && full.len() <= MAX_NAME {
        return full;
    }
    let digest = Sha256::digest(job.as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    // Room for "-" and the 8 hex digits; the name is ASCII, so any byte
    // index is a character boundary.
    let mut cut = full[..full.len().min(MAX_NAME - 9)].to_owned();
    while cut.ends_with('-') || cut.ends_with('.') {
        cut.pop();
    }
    format!("{cut}-{hash}")
}

/// A cancel request as written (annotation here, key value on etcd), in
/// the field order of the original's record.
#[derive(Debug, Serialize, Deserialize)]
struct CancelBody {
    kind: String,
    fence: u64,
    by: String,
    at: String,
}

/// The compact JSON of a cancel request.
pub(super) fn encode_cancel(request: &CancelRequest) -> String {
    let body = CancelBody {
        kind: "cancel".to_owned(),
        fence: request.fence,
        by: request.by.clone(),
        at: request.at.clone(),
    };
    // A struct of strings and a number always serializes.
    serde_json::to_string(&body).unwrap_or_default()
}

/// A cancel request from its JSON; None for anything else (another kind,
/// a damaged value).
pub(super) fn decode_cancel(text: &str) -> Option<CancelRequest> {
    let body: CancelBody = serde_json::from_str(text).ok()?;
    (body.kind == "cancel").then_some(CancelRequest {
        fence: body.fence,
        by: body.by,
        at: body.at,
    })
}

/// A MicroTime as the API server writes it.
fn micro_time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The holder of a Lease (None when released: absent or empty).
fn holder_of(lease: &Value) -> Option<&str> {
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
}

fn fence_of(lease: &Value) -> u64 {
    lease["spec"]["leaseTransitions"].as_u64().unwrap_or(0)
}

/// Whether the holder's last renewal is still within its duration by our
/// clock. A record without a readable time is not live (our own writes
/// always carry one).
fn live_at(lease: &Value, now: chrono::DateTime<chrono::Utc>) -> bool {
    let spec = &lease["spec"];
    let Some(renewed) = spec["renewTime"]
        .as_str()
        .or_else(|| spec["acquireTime"].as_str())
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    else {
        return false;
    };
    let duration = chrono::Duration::seconds(spec["leaseDurationSeconds"].as_i64().unwrap_or(0));
    renewed.with_timezone(&chrono::Utc) + duration > now - SKEW
}

/// The slot a Lease describes; None when nobody holds it.
fn slot_of(lease: &Value, now: chrono::DateTime<chrono::Utc>) -> Option<SlotLease> {
    Some(SlotLease {
        holder: holder_of(lease)?.to_owned(),
        fence: fence_of(lease),
        live: live_at(lease, now),
    })
}

/// What an acquire does with the Lease it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// No Lease yet: create it (fence 0).
    Create,
    /// Someone else holds it and it has not expired.
    Deny,
    /// Ours already: renew it, keeping this fence.
    Keep(u64),
    /// Released or expired: take it over with this (bumped) fence.
    Take(u64),
}

fn decide(lease: Option<&Value>, holder: &str, now: chrono::DateTime<chrono::Utc>) -> Decision {
    let Some(lease) = lease else {
        return Decision::Create;
    };
    match holder_of(lease) {
        Some(current) if current == holder => Decision::Keep(fence_of(lease)),
        Some(_) if live_at(lease, now) => Decision::Deny,
        _ => Decision::Take(fence_of(lease) + 1),
    }
}

/// Sets the spec of a (read) Lease for `holder` renewed `now`.
fn stamp(lease: &mut Value, holder: &str, ttl: f64, now: &str, fence: u64, acquired: bool) {
    let spec = &mut lease["spec"];
    spec["holderIdentity"] = json!(holder);
    spec["leaseDurationSeconds"] = json!(ttl_seconds(ttl));
    spec["renewTime"] = json!(now);
    spec["leaseTransitions"] = json!(fence);
    if acquired || spec["acquireTime"].is_null() {
        spec["acquireTime"] = json!(now);
    }
}

/// The TTL in whole seconds, rounded up (the field is an integer).
fn ttl_seconds(ttl: f64) -> i64 {
    ttl.ceil().max(1.0) as i64
}

/// The slot store on Leases.
pub struct KubeSlotStore {
    inner: Arc<KubeInner>,
}

struct KubeInner {
    lease_name: String,
    source: LeaseApiSource,
    api: tokio::sync::OnceCell<Api<Lease>>,
}

/// The outcome of a write: stored, lost a race (409), or failed.
enum Write {
    Done,
    Conflict,
}

fn to_value(lease: &Lease) -> Result<Value, SlotStoreError> {
    serde_json::to_value(lease).map_err(SlotStoreError::LeaseUnreadable)
}

fn from_value(value: Value) -> Result<Lease, SlotStoreError> {
    serde_json::from_value(value).map_err(SlotStoreError::LeaseUnbuildable)
}

impl KubeSlotStore {
    /// Slots next to the election Lease `lease_name`, reached through
    /// `source` (called until it succeeds once; a failure is a store
    /// error, so the scheduler applies `onStoreUnavailable`).
    pub fn new(lease_name: &str, source: LeaseApiSource) -> KubeSlotStore {
        KubeSlotStore {
            inner: Arc::new(KubeInner {
                lease_name: lease_name.to_owned(),
                source,
                api: tokio::sync::OnceCell::new(),
            }),
        }
    }
}

impl KubeInner {
    async fn api(&self) -> Result<&Api<Lease>, SlotStoreError> {
        Ok(self.api.get_or_try_init(|| (self.source)()).await?)
    }

    fn name(&self, job: &str) -> String {
        slot_lease_name(&self.lease_name, job)
    }

    async fn get(&self, job: &str) -> Result<Option<Value>, SlotStoreError> {
        let api = self.api().await?;
        match api.get_opt(&self.name(job)).await {
            Ok(Some(lease)) => Ok(Some(to_value(&lease)?)),
            Ok(None) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn replace(&self, job: &str, lease: Value) -> Result<Write, SlotStoreError> {
        let api = self.api().await?;
        let lease = from_value(lease)?;
        match api
            .replace(&self.name(job), &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Write::Done),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Write::Conflict),
            Err(e) => Err(e.into()),
        }
    }

    async fn acquire(
        &self,
        job: &str,
        holder: &str,
        ttl: f64,
    ) -> Result<Option<u64>, SlotStoreError> {
        let read = self.get(job).await?;
        let now = chrono::Utc::now();
        let stamp_now = micro_time(now);
        let (mut lease, fence, acquired) = match decide(read.as_ref(), holder, now) {
            Decision::Deny => return Ok(None),
            Decision::Create => {
                let api = self.api().await?;
                let mut lease = json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": self.name(job)},
                    "spec": {},
                });
                stamp(&mut lease, holder, ttl, &stamp_now, 0, true);
                let lease = from_value(lease)?;
                return match api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(Some(0)),
                    // Another node created it first.
                    Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
                    Err(e) => Err(e.into()),
                };
            }
            Decision::Keep(fence) => (read, fence, false),
            Decision::Take(fence) => (read, fence, true),
        };
        let Some(lease) = lease.as_mut() else {
            return Err(SlotStoreError::LeaseVanished);
        };
        stamp(lease, holder, ttl, &stamp_now, fence, acquired);
        match self.replace(job, lease.clone()).await? {
            Write::Done => Ok(Some(fence)),
            // Someone wrote between our read and our write: theirs.
            Write::Conflict => Ok(None),
        }
    }

    /// Reads the Lease and, while `still` holds for it, writes what
    /// `change` makes of it; retries on 409. `Ok(false)`: `still` failed.
    async fn update(
        &self,
        job: &str,
        still: impl Fn(&Value) -> bool,
        change: impl Fn(&mut Value),
    ) -> Result<bool, SlotStoreError> {
        for _ in 0..ATTEMPTS {
            let Some(mut lease) = self.get(job).await? else {
                return Ok(false);
            };
            if !still(&lease) {
                return Ok(false);
            }
            change(&mut lease);
            match self.replace(job, lease).await? {
                Write::Done => return Ok(true),
                Write::Conflict => continue,
            }
        }
        Err(SlotStoreError::LeaseKeptChanging {
            lease: self.name(job),
            attempts: ATTEMPTS,
        })
    }
}

/// Whether a Lease is still held by `holder` with `fence`.
fn held_by(lease: &Value, holder: &str, fence: u64) -> bool {
    holder_of(lease) == Some(holder) && fence_of(lease) == fence
}

impl SlotStore for KubeSlotStore {
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
        ttl: f64,
    ) -> BoxFuture<'static, Result<bool, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let (job, holder) = (job.to_owned(), holder.to_owned());
        Box::pin(async move {
            inner
                .update(
                    &job,
                    |lease| held_by(lease, &holder, fence),
                    |lease| {
                        let now = micro_time(chrono::Utc::now());
                        stamp(lease, &holder, ttl, &now, fence, false);
                    },
                )
                .await
        })
    }

    fn release(
        &self,
        job: &str,
        holder: &str,
        fence: u64,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let (job, holder) = (job.to_owned(), holder.to_owned());
        Box::pin(async move {
            inner
                .update(
                    &job,
                    |lease| held_by(lease, &holder, fence),
                    |lease| {
                        if let Some(spec) = lease["spec"].as_object_mut() {
                            spec.remove("holderIdentity");
                        }
                    },
                )
                .await
                .map(|_| ())
        })
    }

    fn read(&self, job: &str) -> BoxFuture<'static, Result<Option<SlotLease>, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        Box::pin(async move {
            Ok(inner
                .get(&job)
                .await?
                .and_then(|lease| slot_of(&lease, chrono::Utc::now())))
        })
    }

    fn request_cancel(
        &self,
        job: &str,
        request: CancelRequest,
    ) -> BoxFuture<'static, Result<(), SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        let text = encode_cancel(&request);
        Box::pin(async move {
            // No Lease: nobody holds the slot, nothing to ask.
            inner
                .update(
                    &job,
                    |_| true,
                    |lease| {
                        let metadata = &mut lease["metadata"];
                        if !metadata["annotations"].is_object() {
                            metadata["annotations"] = json!({});
                        }
                        metadata["annotations"][CANCEL_ANNOTATION] = json!(text);
                    },
                )
                .await
                .map(|_| ())
        })
    }

    fn cancel_request(
        &self,
        job: &str,
    ) -> BoxFuture<'static, Result<Option<CancelRequest>, SlotStoreError>> {
        let inner = Arc::clone(&self.inner);
        let job = job.to_owned();
        Box::pin(async move {
            Ok(inner.get(&job).await?.and_then(|lease| {
                lease["metadata"]["annotations"][CANCEL_ANNOTATION]
                    .as_str()
                    .and_then(decode_cancel)
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        let label = |l: &str| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        name.len() <= MAX_NAME && name.split('.').all(label)
    }

    #[test]
    fn a_plain_job_name_is_kept_as_is() {
        assert_eq!(
            slot_lease_name("cronstable-leader", "backup-db"),
            "cronstable-leader-slot-backup-db"
        );
        assert_eq!(slot_lease_name("a.b", "x1"), "a.b-slot-x1");
    }

    #[test]
    fn a_changed_name_gets_a_hash_of_the_exact_job_name() {
        let upper = slot_lease_name("l", "Backup");
        let lower = slot_lease_name("l", "backup");
        assert_eq!(lower, "l-slot-backup");
        assert!(upper.starts_with("l-slot-backup-"), "{upper}");
        assert_eq!(upper.len(), "l-slot-backup-".len() + 8);
        assert_ne!(upper, lower);
        // Stable across calls and processes: the first 8 hex digits of
        // sha256("Backup"), as `printf Backup | sha256sum` prints them.
        assert_eq!(upper, slot_lease_name("l", "Backup"));
        assert_eq!(upper, "l-slot-backup-83855792");
        // Names that sanitize alike stay apart.
        let a = slot_lease_name("l", "nightly job");
        let b = slot_lease_name("l", "nightly_job");
        let c = slot_lease_name("l", "nightly--job");
        assert!(a.starts_with("l-slot-nightly-job-"), "{a}");
        assert_ne!(a, b);
        assert_ne!(b, c);
        assert_ne!(a, c);
        for name in [&upper, &a, &b, &c] {
            assert!(valid(name), "{name}");
        }
    }

    #[test]
    fn odd_names_still_give_valid_names() {
        for job in ["___", "-x-", "Ünïcødé", ".hidden.", "a.b", "", "日本"] {
            let name = slot_lease_name("cronstable-leader", job);
            assert!(valid(&name), "{job:?} -> {name}");
            assert_ne!(name, "cronstable-leader-slot", "{job:?}");
        }
        assert_ne!(slot_lease_name("l", "___"), slot_lease_name("l", "__"));
    }

    #[test]
    fn long_names_are_cut_to_253_and_stay_apart() {
        let long_a = format!("{}a", "x".repeat(300));
        let long_b = format!("{}b", "x".repeat(300));
        let a = slot_lease_name("cronstable-leader", &long_a);
        let b = slot_lease_name("cronstable-leader", &long_b);
        assert_eq!(a.len(), MAX_NAME);
        assert!(valid(&a) && valid(&b), "{a}");
        assert_ne!(a, b);
        // Exactly at the limit: kept; one more: cut and hashed.
        let prefix = "cronstable-leader-slot-";
        let fits = "y".repeat(MAX_NAME - prefix.len());
        assert_eq!(
            slot_lease_name("cronstable-leader", &fits),
            format!("{prefix}{fits}")
        );
        let over = format!("{fits}y");
        let cut = slot_lease_name("cronstable-leader", &over);
        assert_eq!(cut.len(), MAX_NAME);
        assert_ne!(cut, format!("{prefix}{fits}"));
        // A cut that lands on a '-' does not leave "--".
        let dashy = format!(
            "{}-{}",
            "z".repeat(MAX_NAME - 9 - prefix.len() - 1),
            "q".repeat(40)
        );
        let name = slot_lease_name("cronstable-leader", &dashy);
        assert!(valid(&name) && !name.contains("--"), "{name}");
    }

    fn lease(holder: Option<&str>, renewed: chrono::DateTime<chrono::Utc>, fence: u64) -> Value {
        json!({
            "metadata": {"name": "l-slot-j", "resourceVersion": "7"},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": 5,
                "renewTime": micro_time(renewed),
                "acquireTime": micro_time(renewed),
                "leaseTransitions": fence,
            }
        })
    }

    #[test]
    fn acquire_decisions() {
        let now = chrono::Utc::now();
        let s = chrono::Duration::seconds;
        assert_eq!(decide(None, "a#1", now), Decision::Create);
        // Held elsewhere and fresh: denied.
        let fresh = lease(Some("b#2"), now - s(2), 4);
        assert_eq!(decide(Some(&fresh), "a#1", now), Decision::Deny);
        // Within the skew margin after the written expiry: still denied.
        let edge = lease(
            Some("b#2"),
            now - s(5) - chrono::Duration::milliseconds(500),
            4,
        );
        assert_eq!(decide(Some(&edge), "a#1", now), Decision::Deny);
        // Expired: taken over with the next fence.
        let stale = lease(Some("b#2"), now - s(7), 4);
        assert_eq!(decide(Some(&stale), "a#1", now), Decision::Take(5));
        // Released (no holder, or an empty one): taken over.
        assert_eq!(
            decide(Some(&lease(None, now, 4)), "a#1", now),
            Decision::Take(5)
        );
        assert_eq!(
            decide(Some(&lease(Some(""), now, 4)), "a#1", now),
            Decision::Take(5)
        );
        // Ours: kept with the same fence.
        assert_eq!(
            decide(Some(&lease(Some("a#1"), now, 4)), "a#1", now),
            Decision::Keep(4)
        );
    }

    #[test]
    fn a_read_names_the_holder_and_judges_expiry() {
        let now = chrono::Utc::now();
        let s = chrono::Duration::seconds;
        let read = slot_of(&lease(Some("b#2"), now - s(1), 3), now).expect("held");
        assert_eq!(
            read,
            SlotLease {
                holder: "b#2".into(),
                fence: 3,
                live: true
            }
        );
        assert!(
            !slot_of(&lease(Some("b#2"), now - s(9), 3), now)
                .unwrap()
                .live
        );
        assert_eq!(slot_of(&lease(None, now, 3), now), None);
        // No readable time: not live (it can be taken).
        let mut broken = lease(Some("b#2"), now, 3);
        broken["spec"]["renewTime"] = json!("yesterday");
        broken["spec"]["acquireTime"] = Value::Null;
        assert!(!live_at(&broken, now));
    }

    #[test]
    fn stamping_keeps_the_acquire_time_on_a_renewal() {
        let then = chrono::Utc::now() - chrono::Duration::seconds(30);
        let mut l = lease(Some("a#1"), then, 2);
        stamp(&mut l, "a#1", 5.5, "NOW", 2, false);
        assert_eq!(l["spec"]["acquireTime"], json!(micro_time(then)));
        assert_eq!(l["spec"]["renewTime"], "NOW");
        assert_eq!(l["spec"]["leaseDurationSeconds"], 6);
        stamp(&mut l, "c#3", 5.0, "LATER", 3, true);
        assert_eq!(l["spec"]["acquireTime"], "LATER");
        assert_eq!(l["spec"]["holderIdentity"], "c#3");
        assert_eq!(l["spec"]["leaseTransitions"], 3);
        assert_eq!(l["metadata"]["resourceVersion"], "7", "replace carries it");
    }

    #[test]
    fn cancel_requests_round_trip_as_compact_json() {
        let request = CancelRequest {
            fence: 9,
            by: "node-b".into(),
            at: "2025-01-02T03:04:05.000006+00:00".into(),
        };
        let text = encode_cancel(&request);
        assert_eq!(
            text,
            r#"{"kind":"cancel","fence":9,"by":"node-b","at":"2025-01-02T03:04:05.000006+00:00"}"#
        );
        assert_eq!(decode_cancel(&text), Some(request));
        assert_eq!(
            decode_cancel(r#"{"kind":"other","fence":9,"by":"x","at":"y"}"#),
            None
        );
        assert_eq!(decode_cancel("not json"), None);
    }
}
