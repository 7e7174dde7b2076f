//! Runs a backend: one bounded round now (so the state is real before the
//! scheduler's first pass), then one every period; owns the backend's
//! leadership state and publishes it on a watch channel (the gate,
//! `GET /cluster` and the metrics read it), logs the transitions once each, publishes whether this node
//! may write Kubernetes status, and releases the lease when asked to step
//! down (the scheduler's drain starts) before the process exits. Between
//! rounds it answers the scheduler's records requests (the `@reboot`-ran
//! set, the last fires): the task owns the backend, so a record write and
//! a renewal never race on the same object.

use super::records::{RecordsLink, Request};
use super::Backend;
use crate::scheduler::ports;
use crate::status::{BackendKind, LeadershipState};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A running leadership backend.
pub struct Leadership {
    task: JoinHandle<()>,
    step_down: watch::Sender<bool>,
    leading: watch::Receiver<bool>,
    state: watch::Receiver<LeadershipState>,
    release_deadline: Duration,
}

impl Leadership {
    /// Starts `backend` (of kind `kind`) after one initial round.
    /// `node_name` and `connect_timeout` come from the `cluster` section;
    /// `link` is where the leadership term is counted and records
    /// requests arrive from.
    pub async fn start(
        mut backend: Box<dyn Backend>,
        kind: BackendKind,
        node_name: String,
        connect_timeout: Duration,
        link: Arc<RecordsLink>,
    ) -> Leadership {
        tracing::info!(target: "cronstable::cluster", "{}", backend.start_line());
        let mut initial = LeadershipState::new(kind, node_name);
        initial.running = true;
        initial.lease = backend.lease_view();
        let (state_tx, state) = watch::channel(initial);
        let (leading_tx, leading) = watch::channel(false);
        let (step_down, mut stop) = watch::channel(false);
        let mut tracker = Tracker {
            state: state_tx,
            was_leader: false,
            was_quorate: false,
            failing: false,
            leading_tx,
            link: Arc::clone(&link),
        };
        let first = run_round(backend.as_mut()).await;
        if let Some(error) = &first.error {
            tracing::warn!(
                target: "cronstable::cluster",
                "{}",
                backend.initial_failure_line(error)
            );
            tracker.failing = true;
        }
        tracker.apply(backend.as_ref(), &first);
        let (requests_tx, mut requests) = mpsc::channel::<Request>(REQUEST_QUEUE);
        // A caller may wait for a round in progress and then for its own
        // request, each bounded by the round deadline.
        let bound = backend.round_deadline() * 2 + Duration::from_secs(1);
        link.connect(requests_tx.clone(), bound);
        let task = tokio::spawn(async move {
            'rounds: loop {
                // A fixed deadline, so requests answered in between never
                // push the next round later.
                let next_round = Instant::now() + backend.period();
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep_until(next_round) => break,
                        _ = stepped_down(&mut stop) => break 'rounds,
                        Some(request) = requests.recv() => {
                            answer(backend.as_mut(), request).await;
                        }
                    }
                }
                let round = run_round(backend.as_mut()).await;
                tracker.note_failure(backend.as_ref(), &round);
                tracker.apply(backend.as_ref(), &round);
            }
            // No records requests once the lease is being given up.
            link.disconnect(&requests_tx);
            requests.close();
            tracker.step_down(backend.as_mut(), connect_timeout).await;
        });
        Leadership {
            task,
            step_down,
            leading,
            state,
            release_deadline: connect_timeout,
        }
    }

    /// The leadership state this driver publishes (it alone writes it).
    pub fn state(&self) -> watch::Receiver<LeadershipState> {
        self.state.clone()
    }

    /// True while this node leads (for the Kubernetes status writer).
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Steps down (if the gate did not already) and waits, bounded, for
    /// the release to finish.
    pub async fn stop(self) {
        self.step_down.send_replace(true);
        let deadline = self.release_deadline + Duration::from_secs(1);
        if tokio::time::timeout(deadline, self.task).await.is_err() {
            tracing::debug!(
                target: "cronstable::cluster",
                "cluster: the lease release did not finish in time"
            );
        }
    }
}

/// Resolves once the step-down flag is up (the guard `wait_for` returns
/// is dropped here, so none is held across the select's other arms).
async fn stepped_down(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|down| *down).await;
}

/// How many records requests may wait for the driver at once.
const REQUEST_QUEUE: usize = 64;

/// Answers one records request, bounded by the round deadline (a store
/// that hangs must not stall the rounds behind it).
async fn answer(backend: &mut dyn Backend, request: Request) {
    if request.reply.is_closed() {
        // The caller gave up waiting: do not write on its behalf late.
        return;
    }
    let deadline = backend.round_deadline();
    let result = match tokio::time::timeout(deadline, backend.records(request.op)).await {
        Ok(result) => result,
        Err(_) => Err(ports::RecordsError::NoAnswer),
    };
    let _ = request.reply.send(result);
}

async fn run_round(backend: &mut dyn Backend) -> super::Round {
    let deadline = backend.round_deadline();
    match tokio::time::timeout(deadline, backend.round()).await {
        Ok(round) => round,
        Err(_) => super::Round {
            error: Some(format!("no answer within {:.0} s", deadline.as_secs_f64())),
            ..super::Round::default()
        },
    }
}

/// Folds rounds into the published state and logs what changed.
struct Tracker {
    state: watch::Sender<LeadershipState>,
    was_leader: bool,
    was_quorate: bool,
    failing: bool,
    leading_tx: watch::Sender<bool>,
    link: Arc<RecordsLink>,
}

impl Tracker {
    fn note_failure(&mut self, backend: &dyn Backend, round: &super::Round) {
        match (&round.error, self.failing) {
            (Some(error), false) => {
                // Once per outage, not per round.
                tracing::warn!(
                    target: "cronstable::cluster",
                    "{}",
                    backend.round_failure_line(error)
                );
                self.failing = true;
            }
            (None, true) => self.failing = false,
            _ => {}
        }
    }

    fn apply(&mut self, backend: &dyn Backend, round: &super::Round) {
        let now = Instant::now();
        let (was_leader, was_quorate) = (self.was_leader, self.was_quorate);
        let mut facts = (false, false);
        let link = &self.link;
        self.state.send_modify(|stats| {
            stats.leading_until = round.leading_until.map(Instant::into_std);
            if round.answered {
                stats.quorate_until = Some((now + backend.quorum_window()).into_std());
                stats.holder = round.holder.clone();
            }
            if round.error.is_some() {
                stats.round_failures += 1;
            }
            stats.lease = backend.lease_view();
            let std_now = now.into_std();
            let (leader, quorate) = (stats.is_leader(std_now), stats.is_quorate(std_now));
            if leader != was_leader {
                stats.leader_transitions += 1;
            }
            if leader && !was_leader {
                // The new term is counted before the state that lets the
                // gate launch is published, so the scheduler never runs a
                // fire as the new leader without seeing the takeover (the
                // recorded pauses and the catch-up are keyed on it).
                link.bump_term();
            }
            if quorate != was_quorate {
                stats.quorum_transitions += 1;
            }
            facts = (leader, quorate);
        });
        let (leader, quorate) = facts;
        if quorate != self.was_quorate {
            if quorate {
                tracing::info!(target: "cronstable::cluster", "cluster: this node joined quorum");
            } else {
                tracing::warn!(
                    target: "cronstable::cluster",
                    "cluster: this node left quorum; no majority reachable, so Leader jobs cannot \
                     run until one is"
                );
            }
            self.was_quorate = quorate;
        }
        if leader != self.was_leader {
            if leader {
                tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: this node acquired scheduled-job leadership"
                );
            } else {
                tracing::warn!(
                    target: "cronstable::cluster",
                    "cluster: this node lost scheduled-job leadership"
                );
            }
            self.was_leader = leader;
        }
        self.leading_tx.send_if_modified(|current| {
            let changed = *current != leader;
            *current = leader;
            changed
        });
    }

    /// Releases the lease before the drain: Leader jobs stop here at once
    /// and a survivor takes over without waiting out the lease.
    async fn step_down(&mut self, backend: &mut dyn Backend, deadline: Duration) {
        tracing::info!(target: "cronstable::cluster", "Stopping cluster manager");
        self.state.send_modify(|stats| stats.stepped_down = true);
        let _ = self.leading_tx.send(false);
        let released = tokio::time::timeout(deadline, backend.release()).await;
        let failure = match released {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("no answer within {} s", deadline.as_secs())),
        };
        if let Some(reason) = failure {
            tracing::debug!(
                target: "cronstable::cluster",
                "cluster: {} lease release failed: {reason}",
                backend.name()
            );
        }
        if self.was_leader {
            self.state.send_modify(|stats| {
                stats.leader_transitions += 1;
                stats.leading_until = None;
            });
            tracing::warn!(
                target: "cronstable::cluster",
                "cluster: this node lost scheduled-job leadership"
            );
            self.was_leader = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::records::RecordsOp;
    use crate::cluster::Round;
    use crate::scheduler::ports::RecordsError;
    use futures_util::future::BoxFuture;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    /// Rounds answered from a script; counts releases.
    struct Scripted {
        rounds: Arc<Mutex<VecDeque<Round>>>,
        released: Arc<Mutex<u32>>,
    }

    impl Backend for Scripted {
        fn name(&self) -> &'static str {
            "kubernetes"
        }
        fn start_line(&self) -> String {
            "scripted".into()
        }
        fn round(&mut self) -> BoxFuture<'_, Round> {
            let next = self.rounds.lock().unwrap().pop_front();
            Box::pin(async move {
                match next {
                    Some(round) => round,
                    // An exhausted script hangs: the driver's deadline
                    // turns that into an unanswered round.
                    None => std::future::pending().await,
                }
            })
        }
        fn release(&mut self) -> BoxFuture<'_, Result<(), crate::cluster::BackendError>> {
            *self.released.lock().unwrap() += 1;
            Box::pin(async { Ok(()) })
        }
        fn period(&self) -> Duration {
            Duration::from_secs(1)
        }
        fn round_deadline(&self) -> Duration {
            Duration::from_secs(2)
        }
        fn quorum_window(&self) -> Duration {
            Duration::from_secs(4)
        }
        fn lease_view(&self) -> serde_json::Value {
            serde_json::json!({"name": "l", "holder": null, "expiry": null})
        }
    }

    fn leading_for(secs: u64) -> Round {
        Round {
            leading_until: Some(Instant::now() + Duration::from_secs(secs)),
            answered: true,
            holder: Some("me".into()),
            error: None,
        }
    }

    fn stats(state: &watch::Receiver<LeadershipState>) -> LeadershipState {
        state.borrow().clone()
    }

    #[tokio::test(start_paused = true)]
    async fn rounds_drive_the_state_and_stepping_down_releases() {
        let rounds = Arc::new(Mutex::new(VecDeque::from([
            leading_for(2),
            leading_for(2),
            Round {
                answered: true,
                holder: Some("other".into()),
                ..Round::default()
            },
        ])));
        let released = Arc::new(Mutex::new(0));
        let link = RecordsLink::new();
        let leadership = Leadership::start(
            Box::new(Scripted {
                rounds: Arc::clone(&rounds),
                released: Arc::clone(&released),
            }),
            BackendKind::Kubernetes,
            "me".into(),
            Duration::from_secs(1),
            Arc::clone(&link),
        )
        .await;
        let mut leading = leadership.leading();
        let state = leadership.state();
        // The initial round ran before start returned.
        let now = Instant::now().into_std();
        assert!(stats(&state).is_leader(now));
        assert!(*leading.borrow_and_update());
        assert_eq!(stats(&state).leader_transitions, 1);
        assert_eq!(link.term(), 1, "gaining leadership starts a term");
        // Records requests reach the backend between rounds.
        assert_eq!(
            link.ask(RecordsOp::LastFires).await,
            Err(RecordsError::NoRecords)
        );
        // Second round renews; the third sees another holder.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let s = stats(&state);
        let now = Instant::now().into_std();
        assert!(!s.is_leader(now));
        assert!(s.is_quorate(now));
        assert_eq!(s.leader(now).as_deref(), Some("other"));
        assert_eq!(s.leader_transitions, 2);
        assert!(!*leading.borrow_and_update());
        // The script is exhausted: rounds time out, quorum lapses after
        // the window, with one warning for the whole outage.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let s = stats(&state);
        let now = Instant::now().into_std();
        assert!(!s.is_quorate(now));
        assert!(s.round_failures >= 2, "{}", s.round_failures);
        assert_eq!(s.quorum_transitions, 2, "joined, then left");
        assert_eq!(link.term(), 1, "losing it does not");
        leadership.stop().await;
        assert_eq!(*released.lock().unwrap(), 1);
        assert_eq!(
            link.ask(RecordsOp::LastFires).await,
            Err(RecordsError::NoBackend),
            "a stopped backend answers nothing"
        );
        assert!(stats(&state).stepped_down);
    }
}
