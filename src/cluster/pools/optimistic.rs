//! Pool documents in a store that has no locks but conditional writes
//! (the Kubernetes API's resourceVersion, etcd's revisions): a change is
//! read, change, write-if-unchanged, and a write that lost the race is
//! not an error but a reason to read again and call the change on what
//! the winner wrote. No update is lost, and none is applied twice: the
//! change runs on the document the write replaces.
//!
//! The store ([`VersionedDocs`]) is asynchronous; [`Optimistic`] makes it
//! a [`PoolDocs`] by running one change on the calling thread (a pool
//! thread of its own) through the daemon's runtime, bounded as a whole by
//! [`BUDGET`], which is below the caller's own bound
//! ([`crate::scheduler::pools::OP_TIMEOUT`]): a store that stops
//! answering (or a client that retries 429/503 on its own) ends the
//! change here, with nothing more sent, before the caller gives up on it.

use super::fs::{decode, encode};
use super::{Change, PoolDocs};
use crate::scheduler::pools::PoolError;
use futures_util::future::BoxFuture;
use std::io::{Read as _, Write as _};
use std::time::Duration;

/// The bound on one change, every read, write and retry included.
pub const BUDGET: Duration = Duration::from_secs(4);

/// How many lost races one change survives before it gives up (each
/// loss means another node's change landed, so the pool moved on).
pub const ATTEMPTS: u32 = 12;

/// The most a compressed document may inflate to: far above what
/// `maxQueued` allows (10,000 entries), and a bound on a hostile value.
const MAX_INFLATED: u64 = 64 << 20;

/// What a conditional write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Stored.
    Done,
    /// Someone wrote (or created, or deleted) the document since it was
    /// read: nothing stored.
    Conflict,
}

/// A read: the document's bytes and what the write compares against.
pub type Read<S> = (Option<Vec<u8>>, Option<S>);

/// A store of one document per pool, read with what a conditional write
/// compares against.
pub trait VersionedDocs: Send + Sync + 'static {
    /// What a read remembers for the write (a resourceVersion and the
    /// object it came with, a mod revision).
    type Seen: Send;

    /// Pool `pool`'s document (the bytes [`encode`] makes; None when
    /// there is none) and what the write compares against (None when
    /// nothing is stored; an object without a document has a version).
    /// An error is for the log.
    fn read<'a>(&'a self, pool: &'a str) -> BoxFuture<'a, Result<Read<Self::Seen>, String>>;

    /// Stores `bytes` as `pool`'s document if the store is still as
    /// `seen` left it (None: if nothing is stored yet).
    fn write<'a>(
        &'a self,
        pool: &'a str,
        bytes: Vec<u8>,
        seen: Option<Self::Seen>,
    ) -> BoxFuture<'a, Result<Written, String>>;
}

/// A [`VersionedDocs`] as [`PoolDocs`].
pub struct Optimistic<S> {
    store: S,
    runtime: tokio::runtime::Handle,
    budget: Duration,
}

impl<S: VersionedDocs> Optimistic<S> {
    /// `store`'s documents, reached through `runtime` (the daemon's; the
    /// changes run on threads outside it).
    pub fn new(store: S, runtime: tokio::runtime::Handle) -> Optimistic<S> {
        Optimistic {
            store,
            runtime,
            budget: BUDGET,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    async fn run(&self, pool: &str, change: Change<'_>) -> Result<(), PoolError> {
        let unavailable = |e: String| PoolError::Unavailable(format!("pool {pool:?}: {e}"));
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            let (bytes, seen) = self.store.read(pool).await.map_err(unavailable)?;
            // A document that does not read is never overwritten.
            let current = match bytes {
                Some(bytes) => Some(decode(pool, &bytes).map_err(PoolError::Unavailable)?),
                None => None,
            };
            // A refusal of the change writes nothing.
            let Some(next) = change(current)? else {
                return Ok(());
            };
            let bytes = encode(&next).map_err(unavailable)?;
            match self
                .store
                .write(pool, bytes, seen)
                .await
                .map_err(unavailable)?
            {
                Written::Done => return Ok(()),
                Written::Conflict => tracing::debug!(
                    target: "cronstable::cluster",
                    "pool {pool}: another node changed the document first; reading it again"
                ),
            }
        }
        Err(unavailable(format!(
            "the document kept changing under {ATTEMPTS} attempts"
        )))
    }
}

/// A short wait before attempt `attempt` (1, 2, ...): growing, with
/// jitter so two losers do not meet again at once.
fn backoff(attempt: u32) -> Duration {
    let ceiling = 5u64 << attempt.min(5);
    let jitter = u64::from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos()),
    );
    Duration::from_millis(ceiling / 2 + jitter % (ceiling / 2 + 1))
}

impl<S: VersionedDocs> PoolDocs for Optimistic<S> {
    /// Runs on a thread outside the runtime's tasks (as [`PoolDocs`]
    /// callers do when `blocks`): blocking a task would stall the
    /// requests it waits for.
    fn mutate(&self, pool: &str, change: Change<'_>) -> Result<(), PoolError> {
        let budget = self.budget;
        self.runtime.block_on(async {
            match tokio::time::timeout(budget, self.run(pool, change)).await {
                Ok(result) => result,
                Err(_) => Err(PoolError::Unavailable(format!(
                    "pool {pool:?}: the store did not answer within {} seconds",
                    budget.as_secs()
                ))),
            }
        })
    }
}

/// A document's bytes as stored: as they are up to `limit` bytes,
/// gzip-compressed beyond (a long queue compresses about tenfold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packed {
    /// The JSON text itself.
    Plain(Vec<u8>),
    /// Its gzip stream.
    Gzip(Vec<u8>),
}

/// Packs `bytes` for a store whose values should stay under `limit`.
pub fn pack(bytes: Vec<u8>, limit: usize) -> Result<Packed, String> {
    if bytes.len() <= limit {
        return Ok(Packed::Plain(bytes));
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(&bytes)
        .and_then(|()| encoder.finish())
        .map(Packed::Gzip)
        .map_err(|e| format!("cannot compress the document: {e}"))
}

/// The JSON text of a gzip stream [`pack`] made.
pub fn unpack_gzip(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut plain)
        .map_err(|e| format!("the compressed document does not read: {e}"))?;
    if plain.len() as u64 > MAX_INFLATED {
        return Err(format!(
            "the compressed document inflates past {MAX_INFLATED} bytes"
        ));
    }
    Ok(plain)
}

#[cfg(test)]
#[path = "optimistic_tests.rs"]
mod tests;
