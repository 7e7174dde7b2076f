//! The poller thread: once a second, what other nodes sharing the store
//! changed. It looks at the pause streams of the installed jobs and the
//! ledgers of their `onlyIfLastSucceeded` jobs, reads only the streams
//! whose directory changed since the last look, and sends the newest
//! pause and the newest real outcome as events. A look that fails marks
//! the store unavailable (the gates that fail closed read that); the next
//! one that works marks it available again.

use super::codec::newest_pause;
use super::POLL_EVERY;
use crate::config::JobConfig;
use crate::scheduler::durable::DurableEvent;
use crate::scheduler::history::{RealOutcome, RUN_HISTORY_LIMIT};
use crate::state::records::{self, keep, stream};
use crate::state::store::Store;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::{mpsc, watch};

/// Starts the poller over `store`, following the installed jobs on `jobs`.
pub(super) fn spawn(
    store: Arc<Store>,
    jobs: watch::Receiver<Arc<Vec<Arc<JobConfig>>>>,
    events: mpsc::UnboundedSender<DurableEvent>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("cronstable-state-poll".to_owned())
        .spawn(move || {
            let mut poller = Poller {
                store,
                seen: HashMap::new(),
                available: true,
            };
            loop {
                std::thread::sleep(POLL_EVERY);
                if events.is_closed() {
                    return;
                }
                let installed = Arc::clone(&jobs.borrow());
                for event in poller.look(&installed) {
                    if events.send(event).is_err() {
                        return;
                    }
                }
            }
        })
        .map(|_| ())
}

/// What the poller remembers between looks.
pub(super) struct Poller {
    pub(super) store: Arc<Store>,
    /// Per stream, its directory's change time at the last read.
    pub(super) seen: HashMap<String, Option<SystemTime>>,
    pub(super) available: bool,
}

impl Poller {
    /// One look: the events for what changed since the last.
    pub(super) fn look(&mut self, jobs: &[Arc<JobConfig>]) -> Vec<DurableEvent> {
        let mut events = Vec::new();
        let mut failed = None;
        // The store's own namespace must answer, or nothing below means
        // anything (an unmounted volume reads as empty streams).
        match std::fs::metadata(self.store.base().join("records")) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => failed = Some(std::io::Error::other("records/ is not a directory")),
            Err(e) => failed = Some(e),
        }
        for job in jobs {
            if failed.is_some() {
                break;
            }
            let pause_stream = format!("{}{}", stream::PAUSED, job.name);
            if self.changed(&pause_stream) {
                match self.store.read_newest(&pause_stream, keep::PAUSED as usize) {
                    Ok(records) => {
                        if let Some(mark) = newest_pause(&records) {
                            events.push(DurableEvent::Pause {
                                job: job.name.clone(),
                                mark,
                            });
                        }
                    }
                    Err(e) => failed = Some(e),
                }
            }
            if !job.only_if_last_succeeded {
                continue;
            }
            let runs_stream = format!("{}{}", stream::RUNS, job.name);
            if self.changed(&runs_stream) {
                match self.store.read_newest(&runs_stream, RUN_HISTORY_LIMIT) {
                    Ok(records) => {
                        let bodies: Vec<_> = records.into_iter().map(|(_, d)| d).collect();
                        if let Some((finished_at, succeeded)) = records::last_real(&bodies) {
                            events.push(DurableEvent::LastOutcome {
                                job: job.name.clone(),
                                outcome: RealOutcome {
                                    finished_at,
                                    succeeded,
                                },
                            });
                        }
                    }
                    Err(e) => failed = Some(e),
                }
            }
        }
        match failed {
            Some(e) => {
                if self.available {
                    tracing::warn!(
                        target: "cronstable::state",
                        "state: the store at {} cannot be read ({e}); pauses and outcomes other \
                         nodes record are not seen until it can",
                        self.store.base().display()
                    );
                    self.available = false;
                    events.push(DurableEvent::Available(false));
                }
                // Read everything again once the store is back.
                self.seen.clear();
            }
            None if !self.available => {
                tracing::info!(
                    target: "cronstable::state",
                    "state: the store at {} answers again",
                    self.store.base().display()
                );
                self.available = true;
                events.push(DurableEvent::Available(true));
            }
            None => {}
        }
        events
    }

    /// Whether `stream`'s directory changed since the last look (the
    /// first look at a stream counts as a change when it exists).
    fn changed(&mut self, stream: &str) -> bool {
        let now = self.store.stream_changed_at(stream);
        let before = self.seen.insert(stream.to_owned(), now);
        match before {
            None => now.is_some(),
            Some(before) => before != now,
        }
    }
}
