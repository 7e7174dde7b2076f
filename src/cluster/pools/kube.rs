//! Pool documents on Kubernetes, where no `state.path` is configured: one
//! `coordination.k8s.io/v1` Lease per pool next to the election Lease, in
//! its namespace, named `<leaseName>-pool-<pool>` by the slot Leases'
//! rules ([`lease_name_for`]). The Lease is only a container here (no
//! holder: the claims are entries of the document, with leases of their
//! own): the document, the same JSON the state store's `.doc` file holds,
//! is its annotation `cronstable.io/pool`, or gzip-compressed and base64
//! in `cronstable.io/pool-gzip` once it passes [`PLAIN_LIMIT`] (a queue of
//! a thousand entries; every annotation of an object shares 256 KiB). The
//! exact pool name is the annotation `cronstable.io/pool-name`, and the
//! labels `app.kubernetes.io/managed-by: cronstable`,
//! `app.kubernetes.io/component: pool` let `kubectl get leases -l` find
//! them.
//!
//! A Lease rather than a ConfigMap because the Lease backend's Role
//! already grants `get`, `create` and `update` on `leases` (the election
//! and the slots use them): pools need no right more. Every write is a
//! create or a replace carrying the resourceVersion just read, so the API
//! server refuses (409) a write that lost the race; [`Optimistic`] reads
//! again and re-applies the change. A Lease nobody deleted outlives the
//! pool's removal from the config, like the state store's document.
//!
//! [`Optimistic`]: super::optimistic::Optimistic

use super::optimistic::{pack, unpack_gzip, Packed, Read, VersionedDocs, Written};
use crate::cluster::slots::kube::{lease_name_for, LeaseApiSource};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use futures_util::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;

/// The annotation holding the document as JSON text.
pub const DOC_ANNOTATION: &str = "cronstable.io/pool";

/// The annotation holding the document gzip-compressed, in base64.
pub const GZIP_ANNOTATION: &str = "cronstable.io/pool-gzip";

/// The annotation naming the pool exactly (the object name is sanitized).
pub const NAME_ANNOTATION: &str = "cronstable.io/pool-name";

/// Documents larger than this are stored compressed.
pub const PLAIN_LIMIT: usize = 64 * 1024;

/// What the API server allows all of an object's annotations together
/// (keys and values).
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// The pool documents' Leases next to the election Lease `lease_name`.
pub struct KubePoolDocs {
    lease_name: String,
    source: LeaseApiSource,
    api: tokio::sync::OnceCell<Api<Lease>>,
    /// A document too large for its Lease was warned about (again after
    /// a write lands).
    warned: std::sync::atomic::AtomicBool,
}

impl KubePoolDocs {
    /// Documents in Leases beside the election Lease `lease_name`, reached
    /// through `source` (called until it succeeds once).
    pub fn new(lease_name: &str, source: LeaseApiSource) -> KubePoolDocs {
        KubePoolDocs {
            lease_name: lease_name.to_owned(),
            source,
            api: tokio::sync::OnceCell::new(),
            warned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The name of pool `pool`'s Lease.
    pub fn object_name(&self, pool: &str) -> String {
        pool_lease_name(&self.lease_name, pool)
    }

    async fn api(&self) -> Result<&Api<Lease>, String> {
        self.api
            .get_or_try_init(|| (self.source)())
            .await
            .map_err(|e| e.to_string())
    }
}

/// `<leaseName>-pool-<pool>`, a valid object name for any pool name.
pub fn pool_lease_name(lease_name: &str, pool: &str) -> String {
    lease_name_for(lease_name, "pool", pool)
}

/// The document a Lease holds (None: no document annotation).
fn doc_of(lease: &Value) -> Result<Option<Vec<u8>>, String> {
    let annotations = &lease["metadata"]["annotations"];
    if let Some(text) = annotations[GZIP_ANNOTATION].as_str() {
        let bytes = B64
            .decode(text.trim())
            .map_err(|e| format!("{GZIP_ANNOTATION} is not base64: {e}"))?;
        return unpack_gzip(&bytes).map(Some);
    }
    Ok(annotations[DOC_ANNOTATION]
        .as_str()
        .map(|text| text.as_bytes().to_vec()))
}

/// The bytes of a Lease's annotations, keys and values, as the API
/// server counts them against [`ANNOTATIONS_LIMIT`].
fn annotations_size(lease: &Value) -> usize {
    lease["metadata"]["annotations"].as_object().map_or(0, |a| {
        a.iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum()
    })
}

/// Puts the document `packed` into a Lease's JSON (read, or a new one),
/// with the pool's name and labels; the other annotation form goes.
fn stamp(lease: &mut Value, pool: &str, packed: Packed) -> Result<(), String> {
    let metadata = &mut lease["metadata"];
    for field in ["annotations", "labels"] {
        if !metadata[field].is_object() {
            metadata[field] = json!({});
        }
    }
    metadata["labels"]["app.kubernetes.io/managed-by"] = json!("cronstable");
    metadata["labels"]["app.kubernetes.io/component"] = json!("pool");
    let annotations = metadata["annotations"]
        .as_object_mut()
        .ok_or("the Lease's annotations are not an object")?;
    annotations.insert(NAME_ANNOTATION.to_owned(), json!(pool));
    match packed {
        Packed::Plain(bytes) => {
            let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
            annotations.insert(DOC_ANNOTATION.to_owned(), json!(text));
            annotations.remove(GZIP_ANNOTATION);
        }
        Packed::Gzip(bytes) => {
            annotations.insert(GZIP_ANNOTATION.to_owned(), json!(B64.encode(bytes)));
            annotations.remove(DOC_ANNOTATION);
        }
    }
    Ok(())
}

fn kube_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!(
            "the Kubernetes API answered {} {}: {}",
            status.code, status.reason, status.message
        ),
        other => other.to_string(),
    }
}

impl VersionedDocs for KubePoolDocs {
    /// The Lease as read (its resourceVersion is the precondition).
    type Seen = Value;

    fn read<'a>(&'a self, pool: &'a str) -> BoxFuture<'a, Result<Read<Value>, String>> {
        Box::pin(async move {
            let api = self.api().await?;
            let name = self.object_name(pool);
            match api.get_opt(&name).await {
                Ok(Some(lease)) => {
                    let lease = serde_json::to_value(&lease).map_err(|e| e.to_string())?;
                    let doc = doc_of(&lease).map_err(|e| format!("Lease {name}: {e}"))?;
                    Ok((doc, Some(lease)))
                }
                Ok(None) => Ok((None, None)),
                Err(e) => Err(format!("reading Lease {name}: {}", kube_error(&e))),
            }
        })
    }

    fn write<'a>(
        &'a self,
        pool: &'a str,
        bytes: Vec<u8>,
        seen: Option<Value>,
    ) -> BoxFuture<'a, Result<Written, String>> {
        Box::pin(async move {
            let api = self.api().await?;
            let name = self.object_name(pool);
            let packed = pack(bytes, PLAIN_LIMIT)?;
            let creating = seen.is_none();
            let mut lease = seen.unwrap_or_else(|| {
                json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": name},
                    "spec": {},
                })
            });
            stamp(&mut lease, pool, packed)?;
            let size = annotations_size(&lease);
            if size > ANNOTATIONS_LIMIT {
                let why = format!(
                    "pool {pool}: its document does not fit in Lease {name} ({size} bytes of \
                     annotations, compressed, over the API server's {ANNOTATIONS_LIMIT}); the \
                     change is not written (lower the pool's maxQueued, or keep pools in \
                     state.path)"
                );
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(target: "cronstable::cluster", "{why}");
                }
                return Err(why);
            }
            let lease: Lease = serde_json::from_value(lease).map_err(|e| e.to_string())?;
            let params = PostParams::default();
            let result = if creating {
                api.create(&params, &lease).await
            } else {
                api.replace(&name, &params, &lease).await
            };
            match result {
                Ok(_) => {
                    self.warned.store(false, Ordering::Relaxed);
                    Ok(Written::Done)
                }
                // A create that met another node's (AlreadyExists), or a
                // replace that met a newer resourceVersion.
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Written::Conflict),
                // Deleted since the read: create it on the next attempt.
                Err(kube::Error::Api(status)) if status.code == 404 && !creating => {
                    Ok(Written::Conflict)
                }
                Err(e) => Err(format!("writing Lease {name}: {}", kube_error(&e))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_leases_sit_beside_the_election_lease() {
        assert_eq!(
            pool_lease_name("cronstable-leader", "warehouse"),
            "cronstable-leader-pool-warehouse"
        );
        // A name the API would refuse is made valid and told apart.
        let odd = pool_lease_name("cronstable-leader", "Ware House");
        assert!(
            odd.starts_with("cronstable-leader-pool-ware-house-"),
            "{odd}"
        );
        assert_ne!(odd, pool_lease_name("cronstable-leader", "ware house"));
        // Never the name of a job's slot Lease.
        assert_ne!(
            pool_lease_name("l", "x"),
            crate::cluster::slots::kube::slot_lease_name("l", "x")
        );
    }

    #[test]
    fn a_document_goes_in_plain_and_comes_back() {
        let mut lease = json!({"metadata": {"name": "l-pool-p", "resourceVersion": "7"}});
        stamp(&mut lease, "p", Packed::Plain(b"{\"data\":1}".to_vec())).expect("stamped");
        assert_eq!(
            lease["metadata"]["annotations"][DOC_ANNOTATION],
            "{\"data\":1}"
        );
        assert_eq!(lease["metadata"]["annotations"][NAME_ANNOTATION], "p");
        assert_eq!(
            lease["metadata"]["labels"]["app.kubernetes.io/component"],
            "pool"
        );
        assert_eq!(
            lease["metadata"]["resourceVersion"], "7",
            "the precondition"
        );
        assert_eq!(doc_of(&lease), Ok(Some(b"{\"data\":1}".to_vec())));
        assert_eq!(doc_of(&json!({"metadata": {}})), Ok(None));
    }

    #[test]
    fn a_large_document_is_compressed_and_the_plain_form_goes() {
        let big = format!("{{\"data\":\"{}\"}}", "x".repeat(PLAIN_LIMIT * 2)).into_bytes();
        let mut lease = json!({"metadata": {"annotations": {"kept": "yes"}}});
        stamp(&mut lease, "p", Packed::Plain(b"{}".to_vec())).expect("stamped");
        let packed = pack(big.clone(), PLAIN_LIMIT).expect("packed");
        assert!(matches!(packed, Packed::Gzip(_)));
        stamp(&mut lease, "p", packed).expect("stamped");
        let annotations = &lease["metadata"]["annotations"];
        assert!(annotations[DOC_ANNOTATION].is_null(), "{annotations}");
        assert_eq!(annotations["kept"], "yes", "others' annotations stay");
        let stored = annotations[GZIP_ANNOTATION].as_str().expect("compressed");
        assert!(stored.len() < PLAIN_LIMIT, "{}", stored.len());
        assert_eq!(doc_of(&lease), Ok(Some(big)));
        assert_eq!(
            annotations_size(&lease),
            "kept".len() + 3 + NAME_ANNOTATION.len() + 1 + GZIP_ANNOTATION.len() + stored.len()
        );
        // A damaged value does not read (and so is never overwritten).
        lease["metadata"]["annotations"][GZIP_ANNOTATION] = json!("%%%");
        assert!(doc_of(&lease).is_err());
        lease["metadata"]["annotations"][GZIP_ANNOTATION] = json!(B64.encode(b"not gzip"));
        assert!(doc_of(&lease).is_err());
    }
}
