//! Keeps the leadership backend in step with the `cluster` section, as
//! the web listeners follow the `web` section: started when the section
//! appears, restarted (the old lease released first) when it changes,
//! stopped when it goes, and stepped down when the scheduler drains.

use super::driver::Leadership;
use super::feed::SchedulerFeed;
use super::gate::ClusterGate;
use super::gossip::manager::GossipManager;
use super::records::RecordsLink;
use super::{Backend, BackendError};
use crate::config::cluster::{self, ClusterSettings, Resolved};
use crate::config::model::ClusterConfig;
use crate::status::leadership::CurrentLeadership;
use crate::status::{BackendKind, LeadershipState, LeadershipWatch};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Builds a backend for resolved settings. The daemon supplies it: it owns the
/// Kubernetes client the Lease backend shares with the Kubernetes mode.
pub type BackendFactory = Box<
    dyn Fn(ClusterSettings) -> BoxFuture<'static, Result<Box<dyn Backend>, BackendError>>
        + Send
        + Sync,
>;

/// The backend a section runs: a lease driver or the gossip manager.
enum Running {
    Lease(Leadership),
    Gossip(GossipManager),
}

impl Running {
    async fn stop(self) {
        match self {
            Running::Lease(leadership) => leadership.stop().await,
            Running::Gossip(manager) => manager.stop().await,
        }
    }
}

/// The running supervisor.
pub struct Supervisor {
    task: JoinHandle<()>,
    step_down: watch::Sender<bool>,
    leadership: LeadershipWatch,
}

/// Starts leadership for the section in force (its first round done
/// before this returns, so the gate knows the truth at the first pass)
/// and follows `sections`. Returns the scheduler's gate and the
/// supervisor (whose [`Supervisor::leadership`] is what the API and the
/// metrics read); `may_write_tx` is kept true while this node may write
/// Kubernetes status (always without a cluster section; while leading
/// with one). `feed` follows the scheduler (the gossip backend compares
/// its peers against the job-set id and advertises the jobs).
pub async fn start(
    mut sections: watch::Receiver<Option<ClusterConfig>>,
    factory: BackendFactory,
    may_write_tx: watch::Sender<bool>,
    feed: SchedulerFeed,
) -> (ClusterGate, Supervisor) {
    // The supervisor alone says which backend's state is current; each
    // backend alone writes its own.
    let (shown, leadership) = CurrentLeadership::channel();
    let (step_down, mut stop) = watch::channel(false);
    // One link for the process: the leadership term keeps counting
    // across backend restarts, and the gate's records handle follows
    // whichever backend runs.
    let link = RecordsLink::new();
    let initial = sections.borrow_and_update().clone();
    let mut running = launch(
        initial.as_ref(),
        &factory,
        &shown,
        &may_write_tx,
        &link,
        &feed,
    )
    .await;
    let mut current = initial;
    let gate = ClusterGate::new(leadership.clone(), step_down.clone(), Arc::clone(&link));
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                changed = sections.changed() => {
                    if changed.is_err() {
                        // The source is gone: keep what runs until the
                        // drain asks us to step down.
                        stepped_down(&mut stop).await;
                        break;
                    }
                    let next = sections.borrow_and_update().clone();
                    if next == current {
                        continue;
                    }
                    if let Some(leadership) = running.take() {
                        tracing::info!(
                            target: "cronstable::cluster",
                            "cluster: configuration changed, stopping"
                        );
                        leadership.stop().await;
                    }
                    // Between the old backend and the new one Leader jobs
                    // stay closed (the stopped backend's state says it
                    // stepped down); only a removed section opens every
                    // job to every node.
                    if next.is_none() {
                        shown.show(None);
                    }
                    running = launch(
                        next.as_ref(),
                        &factory,
                        &shown,
                        &may_write_tx,
                        &link,
                        &feed,
                    )
                    .await;
                    current = next;
                }
                _ = stepped_down(&mut stop) => break,
            }
        }
        if let Some(leadership) = running.take() {
            leadership.stop().await;
        }
    });
    (
        gate,
        Supervisor {
            task,
            step_down,
            leadership,
        },
    )
}

/// Resolves once the step-down flag is up (the guard `wait_for` returns
/// is dropped here, so no lock is held across an await).
async fn stepped_down(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|down| *down).await;
}

/// Starts the backend of `section`, if it names one; on a start failure
/// the state says so (Leader jobs fail closed, PreferLeader runs).
async fn launch(
    section: Option<&ClusterConfig>,
    factory: &BackendFactory,
    shown: &CurrentLeadership,
    may_write_tx: &watch::Sender<bool>,
    link: &Arc<RecordsLink>,
    feed: &SchedulerFeed,
) -> Option<Running> {
    let Some(section) = section else {
        let _ = may_write_tx.send(true);
        return None;
    };
    let (settings, advisories) = match cluster::resolve(section, crate::platform::host_name()) {
        Ok(Resolved::Lease {
            settings,
            advisories,
        }) => (settings, advisories),
        Ok(Resolved::Gossip {
            settings,
            advisories,
        }) => {
            for line in advisories {
                tracing::warn!(target: "cronstable::cluster", "{line}");
            }
            // Kubernetes status is written by the leader; gossip elects
            // one only with electLeader (attestation alone leaves every
            // node writing, as without a section).
            let elect = settings.elect_leader;
            let node_name = settings.node_name.clone();
            let _ = may_write_tx.send(!elect);
            let started = GossipManager::start(*settings, Arc::clone(link), feed.clone()).await;
            return match started {
                Ok(manager) => {
                    shown.show(Some(manager.state()));
                    if elect {
                        follow_gossip_leadership(manager.state(), may_write_tx.clone());
                    }
                    Some(Running::Gossip(manager))
                }
                Err(err) => {
                    tracing::error!(target: "cronstable::cluster", "cluster: failed to start: {err}");
                    // Attestation alone decides nothing, so a manager that
                    // could not start leaves every job running (as without
                    // a section); with election, Leader jobs fail closed.
                    let mut failed = LeadershipState::new(BackendKind::Gossip, node_name);
                    failed.elect_leader = elect;
                    shown.show_fixed(failed);
                    None
                }
            };
        }
        // The loader refuses these; a section that got here anyway runs
        // nothing rather than something wrong.
        Err(_) => return None,
    };
    for line in advisories {
        tracing::warn!(target: "cronstable::cluster", "{line}");
    }
    let node_name = settings.node_name.clone();
    let kind = backend_kind(&settings.backend);
    let timeout = Duration::from_secs(settings.connect_timeout);
    let _ = may_write_tx.send(false);
    match factory(*settings).await {
        Ok(backend) => {
            let leadership =
                Leadership::start(backend, kind, node_name, timeout, Arc::clone(link)).await;
            shown.show(Some(leadership.state()));
            let mut leading = leadership.leading();
            let tx = may_write_tx.clone();
            let _ = tx.send(*leading.borrow_and_update());
            tokio::spawn(async move {
                while leading.changed().await.is_ok() {
                    let now = *leading.borrow_and_update();
                    let _ = tx.send(now);
                }
            });
            Some(Running::Lease(leadership))
        }
        Err(err) => {
            tracing::error!(target: "cronstable::cluster", "cluster: failed to start: {err}");
            shown.show_fixed(LeadershipState::new(kind, node_name));
            None
        }
    }
}

/// The kind of a lease backend's settings.
fn backend_kind(backend: &cluster::Backend) -> BackendKind {
    match backend {
        cluster::Backend::Kubernetes(_) => BackendKind::Kubernetes,
        cluster::Backend::Etcd(_) => BackendKind::Etcd,
        cluster::Backend::Filesystem(_) => BackendKind::Filesystem,
    }
}

/// Keeps `may_write_tx` in step with gossip leadership (checked every
/// second, since leadership also lapses with the snapshot's age; the
/// manager stepping down, or the sender's receivers going away, ends it).
fn follow_gossip_leadership(
    state: watch::Receiver<LeadershipState>,
    may_write_tx: watch::Sender<bool>,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            let now = std::time::Instant::now();
            let leading = {
                let s = state.borrow();
                (s.running && !s.stepped_down).then(|| s.is_leader(now))
            };
            let Some(leading) = leading else {
                // The manager stopped (a reload restarts one with its own
                // follower).
                return;
            };
            may_write_tx.send_if_modified(|current| {
                let changed = *current != leading;
                *current = leading;
                changed
            });
            if may_write_tx.is_closed() {
                return;
            }
        }
    });
}

impl Supervisor {
    /// The leadership state as the API and the metrics read it.
    pub fn leadership(&self) -> LeadershipWatch {
        self.leadership.clone()
    }

    /// Steps down (if the scheduler's drain did not already) and waits,
    /// bounded, for the lease to be released.
    pub async fn stop(self) {
        self.step_down.send_replace(true);
        if tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .is_err()
        {
            tracing::debug!(
                target: "cronstable::cluster",
                "cluster: the leadership backend did not stop in time"
            );
        }
    }
}
