//! The gossip backend at run time: joins the pure core (payload, view,
//! election rules) and the transport (mTLS listener and poller) behind the
//! scheduler's leader gate.
//!
//! One task per running section. It serves this node's `/peer` body (built
//! from the view and cached with its ETag until an input changes), polls
//! every configured peer each `interval` concurrently, feeds the outcomes
//! to the [`ClusterView`], logs per-peer status changes and this node's
//! role transitions, and publishes a snapshot of the view on its own watch
//! channel (it alone writes it): what the gate, `GET /cluster` and the
//! metrics read.
//! A snapshot carries a freshness deadline, so a stalled loop (a stopped
//! process, a wedged runtime) makes `Leader` jobs fail closed rather than
//! act on an old view.
//!
//! Records (the `@reboot` ran-set) live in the gossip itself: this node's
//! ran jobs ride its `/peer` body, and a job counts as run when this node
//! or any agreeing peer (same job-set id) reports it. The last-fire
//! records a lease store keeps for catch-up after a failover have no home
//! here: fires are accepted and not kept, and a read is refused.
//!
//! The body also carries this node's jobs for the fleet view
//! (`gossip::fleet`), which the scheduler feed (`cluster::feed`) hands in
//! whenever a run starts or ends; their countdowns are refreshed when a
//! request finds them over a second old, without moving the ETag.

use super::transport::{
    ListenerLimits, PeerBody, PeerListener, PeerPoller, PollOutcome, PollTimeouts, TlsMaterial,
    TlsPaths, TransportError,
};
use crate::cluster::feed::SchedulerFeed;
use crate::cluster::records::{RecordsAnswer, RecordsLink, RecordsOp, Request};
use crate::config::cluster::GossipSettings;
use crate::config::model::sections::Distribution;
use crate::gossip::fleet::OwnJobs;
use crate::gossip::payload::{self, PeerPayload};
use crate::gossip::view::{ClusterView, Identity, Observation, Stamp, Status};
use crate::scheduler::ports::RecordsError;
use crate::status::{BackendKind, GossipState, LeadershipState};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// How many records requests may wait at once.
const REQUEST_QUEUE: usize = 64;

/// How old the served body's countdowns may be before a request
/// rebuilds it.
const COUNTDOWN_REFRESH: Duration = Duration::from_secs(1);

/// A running gossip manager.
pub struct GossipManager {
    task: JoinHandle<()>,
    records: JoinHandle<()>,
    stop: watch::Sender<bool>,
    state: watch::Receiver<LeadershipState>,
}

/// What the manager shares between its poll loop, the listener's provider
/// and the records task.
struct Shared {
    view: ClusterView,
    /// The job-set id peers are compared against (the scheduler's).
    job_set_id: String,
    /// `@reboot` jobs this node ran, and the job-set id they belong to.
    ran: (String, BTreeSet<String>),
    /// This node's jobs as the fleet view advertises them.
    own_jobs: Arc<OwnJobs>,
    /// The payload the cached body was built from, the body, and when it
    /// was built (its countdowns are as of then).
    body: Option<(PeerPayload, PeerBody, std::time::Instant)>,
}

impl Shared {
    fn ran_here(&self, job_set_id: &str) -> BTreeSet<String> {
        if self.ran.0 == job_set_id {
            self.ran.1.clone()
        } else {
            BTreeSet::new()
        }
    }

    /// Rebuilds the served body if what it is built from changed (the
    /// ETag, a hash of the content, moves only then, so unchanged polls
    /// keep answering 304).
    fn refresh_body(&mut self) {
        let ran = self.ran_here(&self.job_set_id);
        let now = chrono::Utc::now();
        let summaries = (self.own_jobs.summaries(now), self.own_jobs.truncated);
        let payload = self.view.our_payload(&self.job_set_id, &ran, summaries);
        let built = std::time::Instant::now();
        if let Some((old, _, at)) = self.body.as_mut() {
            if *old == payload {
                *at = built;
                return;
            }
        }
        let bytes = payload::encode(&payload);
        // The countdowns and the time they were taken at go in together,
        // so the tag (which hashes each as its absolute fire) holds still
        // from one rebuild to the next.
        let etag = payload::etag(&payload, now.timestamp_millis() as f64 / 1000.0);
        self.body = Some((
            payload,
            PeerBody {
                bytes: bytes.into(),
                etag,
            },
            built,
        ));
    }

    /// The body for a `/peer` request. One whose countdowns are over a
    /// second old is rebuilt first, so a peer ages them from a reading
    /// at most a second off (the tag does not move for that).
    fn served(&mut self) -> PeerBody {
        let stale = match &self.body {
            None => true,
            Some((payload, _, at)) => {
                at.elapsed() >= COUNTDOWN_REFRESH
                    && payload
                        .job_summaries
                        .iter()
                        .flatten()
                        .any(|(_, job)| job.scheduled_in.is_some())
            }
        };
        if stale {
            self.refresh_body();
        }
        match &self.body {
            Some((_, body, _)) => body.clone(),
            None => PeerBody {
                bytes: Vec::new().into(),
                etag: String::new(),
            },
        }
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // Every writer leaves the state coherent between statements.
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The poll timeouts derived from `connectTimeout`: the TCP connect plus
/// TLS handshake, and the whole request, are each bounded by it (the
/// original bounds the whole request by `connectTimeout` too), so one
/// silent peer costs a round at most `connectTimeout`.
pub fn poll_timeouts(connect_timeout: u64) -> PollTimeouts {
    let bound = Duration::from_secs(connect_timeout.max(1));
    PollTimeouts {
        connect: bound,
        request: bound,
    }
}

/// How long a published snapshot may be acted on: two rounds plus one
/// poll's worth of timeouts. Past it the loop has stalled and `Leader`
/// jobs fail closed.
fn freshness(settings: &GossipSettings) -> Duration {
    Duration::from_secs(settings.interval.max(1) * 2 + settings.connect_timeout.max(1))
}

/// Role facts, compared between rounds to log each transition once.
#[derive(Debug, Clone, Default, PartialEq)]
struct Role {
    quorate: bool,
    leader: bool,
    names: Vec<String>,
    sizes: Vec<u64>,
    policies: Vec<String>,
}

impl GossipManager {
    /// Loads the TLS material, binds the listener, runs one poll round
    /// (so the gate knows the truth at the scheduler's first pass) and
    /// starts the loop. `feed` follows the scheduler's job-set id and
    /// jobs; `link` is where records requests arrive from. An error says what
    /// could not start (the caller fails `Leader` jobs closed).
    pub async fn start(
        settings: GossipSettings,
        link: Arc<RecordsLink>,
        feed: SchedulerFeed,
    ) -> Result<GossipManager, TransportError> {
        let SchedulerFeed {
            mut job_set,
            mut fleet,
        } = feed;
        let tls = TlsMaterial::load(TlsPaths {
            ca: PathBuf::from(&settings.tls.ca),
            cert: PathBuf::from(&settings.tls.cert),
            key: PathBuf::from(&settings.tls.key),
        })?;
        let poller = Arc::new(PeerPoller::new(
            Arc::clone(&tls),
            poll_timeouts(settings.connect_timeout),
        )?);
        let identity = Identity {
            node_name: settings.node_name.clone(),
            instance_id: crate::cluster::process_token(),
            elect_leader: settings.elect_leader,
            distribution: settings.distribution,
            drift_after: settings.drift_after.max(1),
        };
        let job_set_id = job_set.borrow_and_update().clone();
        let shared = Arc::new(Mutex::new(Shared {
            view: ClusterView::new(identity, settings.peers.iter().cloned()),
            job_set_id,
            ran: (String::new(), BTreeSet::new()),
            own_jobs: fleet.borrow_and_update().clone(),
            body: None,
        }));
        let provider_state = Arc::clone(&shared);
        let listener = PeerListener::bind(
            &settings.listen,
            Arc::clone(&tls),
            Arc::new(move || lock(&provider_state).served()),
            ListenerLimits::default(),
        )
        .await?;
        tracing::info!(
            target: "cronstable::cluster",
            "cluster: node {} serving mTLS /peer on {}, polling {} peer(s) every {}s",
            crate::pyfmt::py_repr(&minijinja::Value::from(settings.node_name.as_str())),
            settings.listen,
            settings.peers.len(),
            settings.interval
        );
        let mut initial = LeadershipState::new(BackendKind::Gossip, settings.node_name.clone());
        initial.running = true;
        initial.elect_leader = settings.elect_leader;
        let (state_tx, state) = watch::channel(initial);
        let mut rounds = Rounds {
            settings,
            shared: Arc::clone(&shared),
            poller,
            state: state_tx,
            etags: HashMap::new(),
            origin: Instant::now(),
            role: Role::default(),
        };
        rounds.round().await;

        let (requests_tx, requests) = mpsc::channel::<Request>(REQUEST_QUEUE);
        // Records are answered from memory at once; the bound only covers
        // a runtime too busy to schedule the records task.
        link.connect(requests_tx.clone(), Duration::from_secs(5));
        let records = tokio::spawn(answer_records(requests, Arc::clone(&shared)));

        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let period = Duration::from_secs(rounds.settings.interval.max(1));
            let mut fleet_open = true;
            let mut next = Instant::now() + period;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(next) => {}
                    changed = fleet.changed(), if fleet_open => {
                        // A run started or ended, or the table changed:
                        // the body peers read says so (its tag moves).
                        match changed {
                            Ok(()) => {
                                let own = fleet.borrow_and_update().clone();
                                let mut state = lock(&rounds.shared);
                                state.own_jobs = own;
                                state.refresh_body();
                            }
                            Err(_) => fleet_open = false,
                        }
                        continue;
                    }
                    _ = stopped.wait_for(|s| *s) => break,
                }
                if job_set.has_changed().unwrap_or(false) {
                    let id = job_set.borrow_and_update().clone();
                    lock(&rounds.shared).job_set_id = id;
                }
                tokio::select! {
                    _ = rounds.round() => {}
                    _ = stopped.wait_for(|s| *s) => break,
                }
                next = Instant::now() + period;
            }
            // No records once the manager goes; the listener closes before
            // the drain, so peers see this node leave at once.
            link.disconnect(&requests_tx);
            drop(requests_tx);
            tracing::info!(target: "cronstable::cluster", "Stopping cluster manager");
            listener.stop().await;
            rounds.step_down();
        });
        Ok(GossipManager {
            task,
            records,
            stop,
            state,
        })
    }

    /// The leadership state this manager publishes (it alone writes it).
    pub fn state(&self) -> watch::Receiver<LeadershipState> {
        self.state.clone()
    }

    /// Stops the loop and the listener, waiting (bounded) for both.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        if tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .is_err()
        {
            tracing::debug!(
                target: "cronstable::cluster",
                "cluster: the gossip manager did not stop in time"
            );
        }
        self.records.abort();
    }
}

/// Answers the scheduler's records requests from the shared state.
async fn answer_records(mut requests: mpsc::Receiver<Request>, shared: Arc<Mutex<Shared>>) {
    while let Some(request) = requests.recv().await {
        let result = match request.op {
            RecordsOp::RebootRan { job_set_id } => {
                let state = lock(&shared);
                let mut jobs: HashSet<String> = state.ran_here(&job_set_id).into_iter().collect();
                // Agreeing peers share this node's job-set id, so their
                // ran-sets are for the same jobs; while the scheduler's id
                // and the compared one differ (a reload in flight) only
                // this node's own records count.
                if state.job_set_id == job_set_id {
                    jobs.extend(state.view.peers_ran_reboot_jobs());
                }
                Ok(RecordsAnswer::Jobs(jobs))
            }
            RecordsOp::MarkRebootRan { job_set_id, job } => {
                let mut state = lock(&shared);
                if state.ran.0 != job_set_id {
                    state.ran = (job_set_id, BTreeSet::new());
                }
                state.ran.1.insert(job);
                state.refresh_body();
                Ok(RecordsAnswer::Done)
            }
            RecordsOp::LastFires => Err(RecordsError::NotSupported { backend: "gossip" }),
            // Nothing keeps fires for a later leader here; accepting the
            // record keeps the launch from waiting or warning.
            RecordsOp::RecordFire { .. } => Ok(RecordsAnswer::Done),
            // No store to keep pauses for the next leader: a pause holds
            // on the node that took it (the scheduler answers 200 then).
            RecordsOp::Pauses | RecordsOp::RecordPause { .. } => {
                Err(RecordsError::NotSupported { backend: "gossip" })
            }
        };
        let _ = request.reply.send(result);
    }
}

/// The poll loop's state.
struct Rounds {
    settings: GossipSettings,
    shared: Arc<Mutex<Shared>>,
    poller: Arc<PeerPoller>,
    /// The published leadership state (written here only).
    state: watch::Sender<LeadershipState>,
    /// The ETag of the last full body per peer, echoed as If-None-Match.
    etags: HashMap<String, String>,
    origin: Instant,
    role: Role,
}

impl Rounds {
    /// Polls every peer once, concurrently, then folds the outcomes into
    /// the view, logs and publishes.
    async fn round(&mut self) {
        let mut polls = JoinSet::new();
        for (index, host) in self.settings.peers.iter().enumerate() {
            let poller = Arc::clone(&self.poller);
            let host = host.clone();
            let tag = self.etags.get(&host).cloned();
            polls.spawn(async move {
                let outcome = poller.poll(&host, tag.as_deref()).await;
                (index, outcome)
            });
        }
        let mut outcomes: Vec<(usize, PollOutcome)> = Vec::new();
        while let Some(joined) = polls.join_next().await {
            if let Ok(done) = joined {
                outcomes.push(done);
            }
        }
        // Configured order, so the log lines come in a stable order.
        outcomes.sort_by_key(|(index, _)| *index);
        let stamp = Stamp {
            mono: self.origin.elapsed(),
            wall: chrono::Utc::now(),
        };
        let observations: Vec<(String, Observation)> = outcomes
            .into_iter()
            .map(|(index, outcome)| {
                let host = self.settings.peers[index].clone();
                let observation = self.observation(&host, outcome);
                (host, observation)
            })
            .collect();
        // The gate's snapshot and the body peers read change under one
        // hold of the lock, so no peer reads a body of this round (a vouch
        // given, which tells it this node stepped down) while the gate
        // still acts on the previous round, or the other way round.
        let shared = Arc::clone(&self.shared);
        let mut state = lock(&shared);
        let my_id = state.job_set_id.clone();
        for (host, observation) in observations {
            let previous = state.view.observe(&host, observation, &my_id, stamp);
            if let Some(previous) = previous {
                log_peer_change(&state.view, &host, previous);
            }
        }
        state.view.round_completed();
        let settled = state.view.settled();
        let vouched = state.view.vouched();
        let snapshot = GossipState {
            view: state.view.clone(),
            job_set_id: my_id,
            settled,
            vouched,
            fresh_until: (Instant::now() + freshness(&self.settings)).into_std(),
            origin: self.origin.into_std(),
            interval: self.settings.interval,
        };
        self.publish(snapshot);
        state.refresh_body();
    }

    /// Turns a transport outcome into what the view takes, keeping the
    /// peer's ETag only alongside a body the view accepted.
    fn observation(&mut self, host: &str, outcome: PollOutcome) -> Observation {
        match outcome {
            PollOutcome::Body { bytes, etag } => match payload::decode(&bytes) {
                Ok(decoded) => {
                    match etag.filter(|t| payload::etag_storable(t)) {
                        Some(tag) => self.etags.insert(host.to_owned(), tag),
                        None => self.etags.remove(host),
                    };
                    Observation::Payload(Box::new(decoded))
                }
                Err(err) => {
                    self.etags.remove(host);
                    Observation::Invalid(err.to_string())
                }
            },
            PollOutcome::NotModified => Observation::NotModified,
            PollOutcome::Unreachable(err) => {
                self.etags.remove(host);
                Observation::Unreachable(err)
            }
            PollOutcome::Untrusted(err) => {
                self.etags.remove(host);
                Observation::Untrusted(err)
            }
            PollOutcome::Invalid(err) => {
                self.etags.remove(host);
                Observation::Invalid(err)
            }
        }
    }

    /// Stores the snapshot and logs this node's role transitions.
    fn publish(&mut self, snapshot: GossipState) {
        let view = &snapshot.view;
        let spread = view.identity().distribution == Distribution::Spread;
        let elect = view.identity().elect_leader;
        let role = Role {
            quorate: view.is_quorate(),
            leader: !spread && elect && snapshot.vouched && view.is_leader(),
            names: view.conflict_names(),
            sizes: view.conflicting_sizes(),
            policies: view.conflicting_policies(),
        };
        let declared = view.cluster_size();
        let before = std::mem::replace(&mut self.role, role.clone());
        self.state.send_modify(|stats| {
            stats.gossip = Some(Arc::new(snapshot));
            if role.leader != before.leader {
                stats.leader_transitions += 1;
            }
            if role.quorate != before.quorate {
                stats.quorum_transitions += 1;
            }
        });
        if !elect {
            // Attestation only: nothing is elected, so there is no role to
            // announce.
            return;
        }
        log_conflicts(&before, &role, declared);
        if role.quorate != before.quorate {
            match (role.quorate, spread) {
                (true, true) => tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: this node joined quorum; per-job ownership active"
                ),
                (false, true) => tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: this node left quorum; per-job ownership suspended"
                ),
                (true, false) => {
                    tracing::info!(target: "cronstable::cluster", "cluster: this node joined quorum")
                }
                (false, false) => tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: this node left quorum; no majority reachable, so Leader jobs cannot \
                     run until one is"
                ),
            }
        }
        if role.leader != before.leader {
            if role.leader {
                tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: this node acquired scheduled-job leadership"
                );
            } else {
                tracing::info!(
                    target: "cronstable::cluster",
                    "cluster: this node lost scheduled-job leadership"
                );
            }
        }
    }

    /// The manager stops (the drain starts, or the section changed): the
    /// state says so at once, so `Leader` jobs stop here.
    fn step_down(&mut self) {
        let leader = self.role.leader;
        self.state.send_modify(|stats| {
            stats.stepped_down = true;
            if leader {
                stats.leader_transitions += 1;
            }
        });
        if self.role.leader {
            tracing::info!(
                target: "cronstable::cluster",
                "cluster: this node lost scheduled-job leadership"
            );
            self.role.leader = false;
        }
    }
}

/// The conflict lines, once per change of each kind (the original's
/// wording).
fn log_conflicts(before: &Role, now: &Role, declared: usize) {
    if now.names != before.names {
        if !now.names.is_empty() {
            tracing::error!(
                target: "cronstable::cluster",
                "cluster: duplicate nodeName detected ({}) -- Leader jobs will stand down until \
                 every node has a unique cluster.nodeName",
                now.names.join(", ")
            );
        } else {
            tracing::info!(
                target: "cronstable::cluster",
                "cluster: nodeName conflict resolved; Leader jobs may run again"
            );
        }
    }
    if now.sizes != before.sizes {
        if !now.sizes.is_empty() {
            let sizes: Vec<String> = now.sizes.iter().map(u64::to_string).collect();
            tracing::error!(
                target: "cronstable::cluster",
                "cluster: cluster-size disagreement -- agreeing peers declare {} but we declare \
                 {}; Leader jobs will stand down until every node's cluster.peers agree on the \
                 member set",
                sizes.join(", "),
                declared
            );
        } else {
            tracing::info!(
                target: "cronstable::cluster",
                "cluster: cluster-size disagreement resolved; Leader jobs may run again"
            );
        }
    }
    if now.policies != before.policies {
        if !now.policies.is_empty() {
            tracing::error!(
                target: "cronstable::cluster",
                "cluster: coordination-policy divergence -- agreeing peers declare {}; Leader \
                 jobs will stand down until every node's cluster.distribution and \
                 cluster.electLeader agree",
                now.policies.join("; ")
            );
        } else {
            tracing::info!(
                target: "cronstable::cluster",
                "cluster: coordination-policy divergence resolved; Leader jobs may run again"
            );
        }
    }
}

/// A peer's status change, logged once (the original's lines): first
/// contacts that fail are startup noise and stay quiet.
fn log_peer_change(view: &ClusterView, host: &str, previous: Status) {
    let Some(peer) = view.peers().iter().find(|p| p.host == host) else {
        return;
    };
    let now = peer.status;
    if now == previous {
        return;
    }
    let error = peer.last_error.as_deref().unwrap_or("");
    let stale = matches!(
        previous,
        Status::Unknown | Status::Unreachable | Status::Untrusted
    );
    match now {
        Status::Untrusted => tracing::warn!(
            target: "cronstable::cluster",
            "cluster: peer {host} is untrusted -- TLS/cert verification failed: {error}"
        ),
        Status::Unreachable if !stale => tracing::warn!(
            target: "cronstable::cluster",
            "cluster: peer {host} became unreachable: {error}"
        ),
        Status::Drifted => tracing::warn!(
            target: "cronstable::cluster",
            "cluster: peer {host} drifted -- its job-set id has differed for >= driftAfter rounds \
             (or reports a different fingerprint scheme)"
        ),
        Status::Conflict => tracing::info!(
            target: "cronstable::cluster",
            "cluster: peer {host} reports a duplicate nodeName: {error}"
        ),
        Status::SelfNode => tracing::info!(
            target: "cronstable::cluster",
            "cluster: peer {host} is this node itself (a self-listing); excluded from the \
             cluster size"
        ),
        Status::Agreed if previous != Status::SelfNode => tracing::info!(
            target: "cronstable::cluster",
            "cluster: peer {host} now agreed"
        ),
        _ => {}
    }
}
