//! Resource pools shared through a store: the scheduler's
//! [`Pools`] port over documents every node changes under one exclusive
//! lock per pool ([`PoolDocs`]; [`fs::FsPoolDocs`] keeps them in the state
//! store, in the original's namespace and format; where there is no
//! `state.path`, [`kube::KubePoolDocs`] keeps them in a Lease per pool and
//! [`etcd::EtcdPoolDocs`] in an etcd key per pool, both written
//! optimistically through [`optimistic::Optimistic`]).
//!
//! Every operation is one locked change of one pool's document: the
//! housekeeping of [`PoolDoc::maintain`] first, then the operation's rule
//! from [`crate::scheduler::pools::queue`]. Each runs on a thread of its
//! own, bounded by [`OP_TIMEOUT`]. Claims this node holds are renewed
//! every [`RENEW_EVERY`]; one whose renewal fails (the store refused,
//! did not answer, or the claim is no longer ours) is reported on the
//! lost channel and forgotten. A close that the store refuses stays
//! pending and is tried again each round, without renewing the claim
//! (the lease then bounds it, as the original's).

pub mod etcd;
pub mod fs;
pub mod kube;
pub mod optimistic;

use crate::config::sections::{PoolConf, PoolTable};
use crate::scheduler::pools::queue::{Entry, EntryState, PoolDoc};
use crate::scheduler::pools::view::pool_view;
use crate::scheduler::pools::{
    Admitted, Closing, DispatchAnswer, Eligibility, EnqueueRequest, PoolError, PoolTicket,
    OP_TIMEOUT, RENEW_EVERY,
};
use crate::scheduler::ports::Pools;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// A document change: gets the pool's document (None: none yet) and
/// answers the document to write (None: leave it as it is).
pub type Change<'a> = &'a mut dyn FnMut(Option<PoolDoc>) -> Result<Option<PoolDoc>, PoolError>;

/// Where pool documents live. `mutate` blocks (it is called on a thread
/// of its own) and makes the read, the change and the write one step as
/// the other nodes see it: under the document's exclusive lock (the
/// files), or by a write that lands only if nobody wrote since the read
/// ([`optimistic`]: the Lease and etcd stores), calling the change again
/// on the newer document after a lost race. Either way nodes sharing the
/// store see each other's changes one at a time, and none is lost.
pub trait PoolDocs: Send + Sync + 'static {
    /// Changes pool `pool`'s document under its lock. A document that
    /// does not read, and any I/O failure, is [`PoolError::Unavailable`]
    /// (nothing written); an error of the change is returned as it is
    /// (nothing written). The change may be called more than once; only
    /// the last call's document is written.
    fn mutate(&self, pool: &str, change: Change<'_>) -> Result<(), PoolError>;

    /// Whether `mutate` may block (file I/O): it then runs on a thread of
    /// its own. An in-memory store answers false and runs inline.
    fn blocks(&self) -> bool {
        true
    }
}

/// How far a held claim is: running, or its close still to be written.
#[derive(Debug, Clone, PartialEq)]
enum Held {
    Renewing,
    Closing(Closing),
}

struct Inner {
    docs: Arc<dyn PoolDocs>,
    /// This node's name (entries aimed at it carry it).
    host: String,
    /// `node#token`: the prefix of every claim's owner.
    holder: String,
    seq: AtomicU64,
    table: watch::Receiver<Arc<PoolTable>>,
    held: Mutex<HashMap<PoolTicket, Held>>,
    /// Per pool, the document as the last dispatch pass answered its view
    /// for: a pass over an unchanged document answers no view.
    viewed: Mutex<HashMap<String, PoolDoc>>,
    lost: mpsc::UnboundedSender<PoolTicket>,
    /// Wall-clock time, Unix seconds (tests follow tokio's paused time).
    clock: WallClock,
}

/// Wall-clock time as Unix seconds: what the documents' instants are
/// read against.
pub type WallClock = Arc<dyn Fn() -> f64 + Send + Sync>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the map leaves it consistent per
    // call; carry on with it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Inner {
    fn conf(&self, pool: &str) -> Option<PoolConf> {
        self.table.borrow().get(pool)
    }

    /// One locked change of `pool`'s document, off this thread and
    /// bounded: housekeeping, then (for `strict` operations, which work
    /// against the configured capacity) the switch to a changed capacity
    /// once the old one drained, then `action`, which answers its result
    /// and whether it changed the document. Written only when something
    /// changed.
    async fn change<R: Send + 'static>(
        self: &Arc<Self>,
        pool: &str,
        strict: Option<PoolConf>,
        mut action: impl FnMut(&mut PoolDoc, f64) -> Result<(R, bool), PoolError> + Send + 'static,
    ) -> Result<R, PoolError> {
        let docs = Arc::clone(&self.docs);
        let fresh = strict.or_else(|| self.conf(pool)).map_or(0, |c| c.slots);
        let name = pool.to_owned();
        let clock = Arc::clone(&self.clock);
        let mut work = move || {
            // A store that writes optimistically calls the change again
            // after a lost race, on the document the winner wrote: the
            // last call's answer is the one that was written.
            let mut answer: Option<R> = None;
            docs.mutate(&name, &mut |current| {
                let now = clock();
                let fresh_doc = current.is_none();
                let mut doc = current.unwrap_or_else(|| PoolDoc::new(fresh));
                let mut changed = doc.maintain(now);
                if let Some(conf) = strict {
                    changed |= doc.adopt_capacity(conf.slots);
                }
                let (result, acted) = action(&mut doc, now)?;
                answer = Some(result);
                // A document nobody wrote yet is written only once it
                // holds something.
                let write = (changed || acted) && !(fresh_doc && doc.entries.is_empty());
                Ok(write.then_some(doc))
            })?;
            answer.ok_or_else(|| PoolError::Unavailable("the change did not run".into()))
        };
        if !self.docs.blocks() {
            return work();
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("cronstable-pool".to_owned())
            .spawn(move || {
                let _ = tx.send(work());
            });
        if let Err(e) = spawned {
            return Err(PoolError::Unavailable(format!(
                "cannot start a thread: {e}"
            )));
        }
        match tokio::time::timeout(OP_TIMEOUT, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(PoolError::Unavailable("the pool operation panicked".into())),
            Err(_) => Err(PoolError::Unavailable(format!(
                "pool {pool}: the store did not answer within {} seconds",
                OP_TIMEOUT.as_secs()
            ))),
        }
    }

    /// The pool's view, with the document it was made of, when the
    /// document differs from the one the last view was made of (another
    /// node's change counts); None otherwise. Recorded by [`Self::viewed`]
    /// once the change that made it was written (a lost race makes
    /// another).
    fn view_if_new(
        &self,
        name: &str,
        conf: PoolConf,
        doc: &PoolDoc,
    ) -> Option<(PoolDoc, serde_json::Value)> {
        if lock(&self.viewed).get(name) == Some(doc) {
            return None;
        }
        Some((doc.clone(), pool_view(name, conf, doc)))
    }

    /// Records the document a view answered was made of.
    fn viewed(&self, name: &str, doc: PoolDoc) {
        lock(&self.viewed).insert(name.to_owned(), doc);
    }

    fn owner(&self) -> String {
        format!(
            "{}:{}",
            self.holder,
            self.seq.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// Writes the closes pending for `pool` and renews its running
    /// claims, in one change. A claim the change cannot renew is lost.
    async fn renew_pool(self: &Arc<Self>, pool: String, tickets: Vec<(PoolTicket, Held)>) {
        let work = tickets.clone();
        let result = self
            .change(&pool, None, move |doc, now| {
                let verdicts = work
                    .iter()
                    .map(|(ticket, held)| match held {
                        Held::Renewing => doc.renew(&ticket.key, &ticket.owner, now),
                        Held::Closing(how) => {
                            close_entry(doc, ticket, how, now);
                            true
                        }
                    })
                    .collect::<Vec<bool>>();
                let changed = verdicts.iter().any(|v| *v);
                Ok((verdicts, changed))
            })
            .await;
        let mut held = lock(&self.held);
        match result {
            Ok(verdicts) => {
                for ((ticket, was), ok) in tickets.into_iter().zip(verdicts) {
                    match was {
                        Held::Closing(_) => {
                            held.remove(&ticket);
                        }
                        Held::Renewing if !ok => self.lose(&mut held, ticket),
                        Held::Renewing => {}
                    }
                }
            }
            Err(err) => {
                tracing::debug!(target: "cronstable::cluster", "pool {pool}: renewal failed: {err:?}");
                for (ticket, was) in tickets {
                    if was == Held::Renewing {
                        self.lose(&mut held, ticket);
                    }
                }
            }
        }
    }

    fn lose(&self, held: &mut HashMap<PoolTicket, Held>, ticket: PoolTicket) {
        // A close asked for meanwhile wins: that run is over already.
        if held.get(&ticket) == Some(&Held::Renewing) {
            held.remove(&ticket);
            tracing::error!(
                target: "cronstable::scheduler",
                "pool lease lost for {}; cancelling its process",
                ticket.key
            );
            let _ = self.lost.send(ticket);
        }
    }

    /// One renewal round over every held claim, pool by pool.
    async fn renew_all(self: &Arc<Self>) {
        let mut by_pool: HashMap<String, Vec<(PoolTicket, Held)>> = HashMap::new();
        for (ticket, held) in lock(&self.held).iter() {
            by_pool
                .entry(ticket.pool.clone())
                .or_default()
                .push((ticket.clone(), held.clone()));
        }
        let rounds = by_pool
            .into_iter()
            .map(|(pool, tickets)| self.renew_pool(pool, tickets));
        futures_util::future::join_all(rounds).await;
    }
}

/// Applies a close to the document (only the claim's own owner's); true
/// when it changed it.
fn close_entry(doc: &mut PoolDoc, ticket: &PoolTicket, how: &Closing, now: f64) -> bool {
    let (state, reason) = match how {
        Closing::Finished => (EntryState::Finished, None),
        Closing::Requeued(reason) => (EntryState::Queued, Some(*reason)),
        Closing::Cancelled(reason) => (EntryState::Cancelled, Some(*reason)),
    };
    doc.finish(&ticket.key, &ticket.owner, state, reason, now)
}

/// The [`Pools`] port over a [`PoolDocs`] store.
pub struct StorePools {
    inner: Arc<Inner>,
    lost: mpsc::UnboundedReceiver<PoolTicket>,
    renewer: tokio::task::AbortHandle,
    closes: Vec<JoinHandle<()>>,
}

impl StorePools {
    /// Pools over `docs` for node `host` (claims are held as
    /// `host#<process token>:<n>`), following the configured pools in
    /// `table`. Starts the renewal task (call inside the runtime).
    pub fn new(
        docs: Arc<dyn PoolDocs>,
        host: &str,
        table: watch::Receiver<Arc<PoolTable>>,
    ) -> StorePools {
        StorePools::with_clock(docs, host, table, Arc::new(crate::state::format::wall_now))
    }

    /// [`StorePools::new`] reading the time from `clock`.
    pub fn with_clock(
        docs: Arc<dyn PoolDocs>,
        host: &str,
        table: watch::Receiver<Arc<PoolTable>>,
        clock: WallClock,
    ) -> StorePools {
        let (lost_tx, lost) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            docs,
            host: host.to_owned(),
            holder: format!("{host}#{}", crate::state::format::process_token()),
            seq: AtomicU64::new(0),
            table,
            held: Mutex::new(HashMap::new()),
            viewed: Mutex::new(HashMap::new()),
            lost: lost_tx,
            clock,
        });
        let renewing = Arc::clone(&inner);
        let renewer = tokio::spawn(async move {
            let mut every = tokio::time::interval(RENEW_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every.tick().await;
            loop {
                every.tick().await;
                renewing.renew_all().await;
            }
        })
        .abort_handle();
        StorePools {
            inner,
            lost,
            renewer,
            closes: Vec::new(),
        }
    }
}

impl Drop for StorePools {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

impl Pools for StorePools {
    fn table(&self) -> Arc<PoolTable> {
        Arc::clone(&self.inner.table.borrow())
    }

    fn host(&self) -> String {
        self.inner.host.clone()
    }

    fn enqueue(&mut self, request: EnqueueRequest) -> BoxFuture<'static, Result<Entry, PoolError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let conf = inner
                .conf(&request.pool)
                .ok_or_else(|| PoolError::Unknown(request.pool.clone()))?;
            let pool = request.pool.clone();
            inner
                .change(&pool, Some(conf), move |doc, now| {
                    let before = doc.entries.len();
                    let entry = doc.enqueue(conf, &request, now)?;
                    let added = doc.entries.len() != before;
                    Ok((entry, added))
                })
                .await
        })
    }

    fn dispatch(
        &mut self,
        gates: Eligibility,
    ) -> BoxFuture<'static, Result<DispatchAnswer, PoolError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let pool = gates.pool.clone();
            let conf = inner
                .conf(&pool)
                .ok_or_else(|| PoolError::Unknown(pool.clone()))?;
            let owner = inner.owner();
            let started = tokio::time::Instant::now();
            let claim_owner = owner.clone();
            let name = pool.clone();
            let viewing = Arc::clone(&inner);
            let (pass, gauges, view) = inner
                .change(&pool, Some(conf), move |doc, now| {
                    let mut gates = gates.clone();
                    let pass = doc.dispatch(&mut gates, &claim_owner, now);
                    let acted = !pass.claimed.is_empty() || !pass.cancelled.is_empty();
                    let view = viewing.view_if_new(&name, conf, doc);
                    Ok(((pass, (doc.slots, doc.used(), doc.queued()), view), acted))
                })
                .await?;
            let view = view.map(|(doc, view)| {
                inner.viewed(&pool, doc);
                view
            });
            let deadline = started
                + std::time::Duration::from_secs_f64(crate::scheduler::pools::queue::LEASE_SECONDS);
            let mut held = lock(&inner.held);
            let admitted = pass
                .claimed
                .into_iter()
                .map(|entry| {
                    let ticket = PoolTicket {
                        pool: pool.clone(),
                        key: entry.id.clone(),
                        owner: owner.clone(),
                    };
                    held.insert(ticket.clone(), Held::Renewing);
                    Admitted {
                        ticket,
                        entry,
                        deadline,
                    }
                })
                .collect();
            Ok(DispatchAnswer {
                admitted,
                cancelled: pass.cancelled,
                slots: gauges.0,
                used: gauges.1,
                queued: gauges.2,
                view,
            })
        })
    }

    fn close(&mut self, ticket: &PoolTicket, how: Closing) -> BoxFuture<'static, ()> {
        {
            let mut held = lock(&self.inner.held);
            if !held.contains_key(ticket) {
                // Lost already: the claim is not ours to close.
                return Box::pin(std::future::ready(()));
            }
            held.insert(ticket.clone(), Held::Closing(how.clone()));
        }
        let inner = Arc::clone(&self.inner);
        let ticket = ticket.clone();
        let (done_tx, done) = tokio::sync::oneshot::channel::<()>();
        self.closes.retain(|c| !c.is_finished());
        self.closes.push(tokio::spawn(async move {
            let _done = done_tx;
            let closing = ticket.clone();
            let result = inner
                .change(&ticket.pool, None, move |doc, now| {
                    let changed = close_entry(doc, &closing, &how, now);
                    Ok(((), changed))
                })
                .await;
            match result {
                Ok(()) => {
                    lock(&inner.held).remove(&ticket);
                }
                Err(err) => tracing::error!(
                    target: "cronstable::scheduler",
                    "pool completion could not be recorded ({err:?}); retrying on the next \
                     renewal round"
                ),
            }
        }));
        Box::pin(async move {
            let _ = done.await;
        })
    }

    fn cancel(&self, pool: &str, key: &str) -> BoxFuture<'static, Result<Entry, PoolError>> {
        let inner = Arc::clone(&self.inner);
        let (pool, key) = (pool.to_owned(), key.to_owned());
        Box::pin(async move {
            inner
                .change(&pool, None, move |doc, now| {
                    let before = doc.entries.get(&key).map(|e| e.state);
                    let entry = doc.cancel(&key, "cancelled by operator", now)?;
                    Ok((entry.clone(), before != Some(entry.state)))
                })
                .await
        })
    }

    fn snapshot(&self) -> BoxFuture<'static, Result<Vec<serde_json::Value>, PoolError>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let table = Arc::clone(&inner.table.borrow());
            let mut views = Vec::with_capacity(table.0.len());
            for (name, conf) in &table.0 {
                let (name, conf) = (name.clone(), *conf);
                let label = name.clone();
                views.push(
                    inner
                        .change(&label, None, move |doc, _| {
                            Ok((pool_view(&name, conf, doc), false))
                        })
                        .await?,
                );
            }
            Ok(views)
        })
    }

    fn next_lost(&mut self) -> BoxFuture<'_, PoolTicket> {
        Box::pin(async move {
            match self.lost.recv().await {
                Some(ticket) => ticket,
                None => std::future::pending().await,
            }
        })
    }

    fn settle(&mut self) -> BoxFuture<'static, ()> {
        let closes = std::mem::take(&mut self.closes);
        Box::pin(async move {
            for close in closes {
                let _ = close.await;
            }
        })
    }
}

#[cfg(test)]
mod tests;
