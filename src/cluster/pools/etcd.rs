//! Pool documents on etcd, where no `state.path` is configured: pool `P`'s
//! document is the plain key `<electionName>/pools/P` (not bound to any
//! etcd lease: a document outlives every node), holding the JSON the
//! state store's `.doc` file holds, or its gzip stream once it passes
//! [`PLAIN_LIMIT`] (told apart by gzip's magic bytes, which no JSON text
//! starts with; etcd refuses requests over 1.5 MiB by default).
//!
//! Every write is one transaction: put the key if its `mod_revision` is
//! still the one read (or, when there was no key, if its
//! `create_revision` is still 0), else read it back. A failed compare is
//! a lost race, and [`Optimistic`] re-applies the change to what the
//! winner wrote. Requests go through the election's gateway client
//! (endpoints in order, auth, TLS), a client of its own, one at a time.
//!
//! [`Optimistic`]: super::optimistic::Optimistic

use super::optimistic::{pack, unpack_gzip, Packed, Read, VersionedDocs, Written};
use crate::cluster::etcd::{b64, int64, EtcdLease};
use crate::cluster::slots::etcd::EtcdClientSource;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::{Mutex, OnceCell};

/// Documents larger than this are stored compressed.
pub const PLAIN_LIMIT: usize = 256 * 1024;

/// gzip's first two bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The pool documents under an election key.
pub struct EtcdPoolDocs {
    election_name: String,
    source: EtcdClientSource,
    client: OnceCell<Mutex<EtcdLease>>,
}

impl EtcdPoolDocs {
    /// Documents under `<election_name>/pools/`, through the client
    /// `source` builds (on first use; a failure is tried again next time).
    pub fn new(election_name: &str, source: EtcdClientSource) -> EtcdPoolDocs {
        EtcdPoolDocs {
            election_name: election_name.to_owned(),
            source,
            client: OnceCell::new(),
        }
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        let client = self
            .client
            .get_or_try_init(|| async { (self.source)().await.map(Mutex::new) })
            .await
            .map_err(|e| e.to_string())?;
        let answer = client
            .lock()
            .await
            .post(path, body)
            .await
            .map_err(|e| e.to_string())?;
        Ok(answer)
    }
}

/// `<electionName>/pools/<pool>`.
pub fn pool_key_name(election_name: &str, pool: &str) -> String {
    format!("{election_name}/pools/{pool}")
}

/// The key of a range answer: its value's bytes and `mod_revision`.
fn stored(range: &Value) -> Result<Option<(Vec<u8>, i64)>, String> {
    let Some(kv) = range
        .get("kvs")
        .and_then(Value::as_array)
        .and_then(|kvs| kvs.first())
    else {
        return Ok(None);
    };
    let value = kv.get("value").and_then(Value::as_str).unwrap_or("");
    let bytes = B64
        .decode(value)
        .map_err(|e| format!("the value is not base64: {e}"))?;
    let revision = int64(kv.get("mod_revision")).unwrap_or(0);
    Ok(Some((bytes, revision)))
}

/// The document's JSON text from a stored value.
fn unpack(bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    if bytes.starts_with(&GZIP_MAGIC) {
        unpack_gzip(&bytes)
    } else {
        Ok(bytes)
    }
}

/// The conditional put: `value` at `key` if its `mod_revision` is still
/// `seen`, or (None) if the key still does not exist.
fn put_body(key: &str, value: &[u8], seen: Option<i64>) -> Value {
    let key = b64(key);
    let compare = match seen {
        Some(revision) => json!({
            "key": key, "result": "EQUAL", "target": "MOD",
            "mod_revision": revision.to_string(),
        }),
        None => json!({
            "key": key, "result": "EQUAL", "target": "CREATE", "create_revision": "0",
        }),
    };
    json!({
        "compare": [compare],
        "success": [{"requestPut": {"key": key, "value": B64.encode(value)}}],
        "failure": [],
    })
}

fn landed(answer: &Value) -> Written {
    if answer
        .get("succeeded")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        Written::Done
    } else {
        Written::Conflict
    }
}

impl VersionedDocs for EtcdPoolDocs {
    /// The key's `mod_revision` as read.
    type Seen = i64;

    fn read<'a>(&'a self, pool: &'a str) -> BoxFuture<'a, Result<Read<i64>, String>> {
        Box::pin(async move {
            let key = pool_key_name(&self.election_name, pool);
            let answer = self
                .post("/v3/kv/range", &json!({"key": b64(&key)}))
                .await?;
            match stored(&answer).map_err(|e| format!("key {key}: {e}"))? {
                Some((bytes, revision)) => {
                    let doc = unpack(bytes).map_err(|e| format!("key {key}: {e}"))?;
                    Ok((Some(doc), Some(revision)))
                }
                None => Ok((None, None)),
            }
        })
    }

    fn write<'a>(
        &'a self,
        pool: &'a str,
        bytes: Vec<u8>,
        seen: Option<i64>,
    ) -> BoxFuture<'a, Result<Written, String>> {
        Box::pin(async move {
            let key = pool_key_name(&self.election_name, pool);
            let value = match pack(bytes, PLAIN_LIMIT)? {
                Packed::Plain(bytes) | Packed::Gzip(bytes) => bytes,
            };
            let answer = self
                .post("/v3/kv/txn", &put_body(&key, &value, seen))
                .await?;
            Ok(landed(&answer))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_sit_under_the_election_name_apart_from_slots_and_records() {
        assert_eq!(
            pool_key_name("cronstable/leader", "ware house"),
            "cronstable/leader/pools/ware house"
        );
        for other in [
            crate::cluster::slots::etcd::slot_key_name("cronstable/leader", "x"),
            "cronstable/leader/pauses".to_owned(),
        ] {
            assert!(!other.starts_with("cronstable/leader/pools/"), "{other}");
        }
    }

    #[test]
    fn a_write_compares_the_revision_read_or_the_absence() {
        let body = put_body("e/pools/p", b"{}", Some(42));
        assert_eq!(body["compare"][0]["target"], "MOD");
        assert_eq!(body["compare"][0]["mod_revision"], "42");
        assert_eq!(body["compare"][0]["key"], b64("e/pools/p"));
        assert_eq!(body["success"][0]["requestPut"]["value"], B64.encode(b"{}"));
        assert!(
            body["success"][0]["requestPut"]["lease"].is_null(),
            "bound to no lease"
        );
        let body = put_body("e/pools/p", b"{}", None);
        assert_eq!(body["compare"][0]["target"], "CREATE");
        assert_eq!(body["compare"][0]["create_revision"], "0");
        assert_eq!(landed(&json!({"succeeded": true})), Written::Done);
        assert_eq!(landed(&json!({"header": {}})), Written::Conflict);
    }

    #[test]
    fn stored_values_read_back_plain_or_compressed() {
        let range = |value: &[u8]| json!({"kvs": [{"key": b64("k"), "value": B64.encode(value), "mod_revision": "9"}]});
        let (bytes, revision) = stored(&range(b"{\"a\":1}")).unwrap().unwrap();
        assert_eq!(
            (unpack(bytes).unwrap(), revision),
            (b"{\"a\":1}".to_vec(), 9)
        );
        let big = vec![b'x'; PLAIN_LIMIT + 1];
        let Packed::Gzip(packed) = pack(big.clone(), PLAIN_LIMIT).unwrap() else {
            panic!("compressed");
        };
        let (bytes, _) = stored(&range(&packed)).unwrap().unwrap();
        assert_eq!(unpack(bytes).unwrap(), big);
        assert_eq!(stored(&json!({"count": "0"})), Ok(None));
        assert!(stored(&json!({"kvs": [{"value": "%%"}]})).is_err());
    }
}
