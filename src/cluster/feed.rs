//! What the leadership backends follow of the scheduler. They start
//! before it (the scheduler is built around their gate), so they get a
//! feed that a task fills once the scheduler answers: its job-set id and,
//! while a gossip backend runs, its jobs as the fleet view advertises them.

use crate::gossip::fleet::OwnJobs;
use crate::scheduler::control::ControlHandle;
use crate::status::{BackendKind, LeadershipWatch};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What the leadership backends follow of the scheduler, which starts
/// after them: its job-set id (the gossip backend compares its peers
/// against it) and its jobs as the fleet view advertises them (the gossip
/// backend's `/peer` body carries them).
#[derive(Debug, Clone)]
pub struct SchedulerFeed {
    /// The scheduler's job-set id.
    pub job_set: watch::Receiver<String>,
    /// This node's advertised jobs (empty until the first answer).
    pub fleet: watch::Receiver<Arc<OwnJobs>>,
}

/// The sending side of a [`SchedulerFeed`], kept by [`follow_scheduler`].
#[derive(Debug)]
pub struct FeedSenders {
    job_set: watch::Sender<String>,
    fleet: watch::Sender<Arc<OwnJobs>>,
}

impl SchedulerFeed {
    /// A feed starting at the initial config's job-set id.
    pub fn channel(initial_job_set_id: String) -> (FeedSenders, SchedulerFeed) {
        let (job_set, job_set_rx) = watch::channel(initial_job_set_id);
        let (fleet, fleet_rx) = watch::channel(Arc::new(OwnJobs::default()));
        (
            FeedSenders { job_set, fleet },
            SchedulerFeed {
                job_set: job_set_rx,
                fleet: fleet_rx,
            },
        )
    }
}

/// Keeps the feed in step with the scheduler, asked once a second: the
/// job-set id always (a reload moves it), the advertised jobs only while
/// a gossip backend runs (nothing else reads them; `leadership` tells).
/// Ends when the scheduler stops answering or nobody listens.
pub async fn follow_scheduler(
    control: ControlHandle,
    tx: FeedSenders,
    leadership: LeadershipWatch,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let Ok(id) = control.job_set_id().await else {
            return;
        };
        tx.job_set.send_if_modified(|current| {
            let changed = *current != id;
            if changed {
                *current = id;
            }
            changed
        });
        let gossip = leadership
            .with(|state| state.is_some_and(|s| s.backend == BackendKind::Gossip && s.running));
        if gossip {
            let Ok(own) = control.fleet().await else {
                return;
            };
            tx.fleet.send_if_modified(|current| {
                let changed = **current != own;
                if changed {
                    *current = Arc::new(own);
                }
                changed
            });
        }
        if tx.job_set.is_closed() {
            return;
        }
    }
}
