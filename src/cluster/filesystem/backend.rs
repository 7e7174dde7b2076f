//! The `Backend` over the shared-directory store: rounds, records and
//! release, each run off the runtime's threads with a timeout.

use super::rules::{iso_expiry, sighting, wall_now, LeaseRecord, Sighting, SKEW};
use super::store::{off_thread, Store};
use crate::cluster::election::display_holder;
use crate::cluster::pauses;
use crate::cluster::records::{self, RecordsAnswer, RecordsOp, RecordsResult};
use crate::cluster::{Backend, BackendError, Round};
use crate::config::cluster::FilesystemSettings;
use crate::config::model::sections::Topology;
use crate::platform;
use crate::scheduler::ports::RecordsError;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Store operations one round may make in sequence (renew or read,
/// acquire, a confirming read, and one spare): the per-operation timeout
/// is sized so all of them fit the round's deadline.
const OPS_PER_ROUND: f64 = 4.0;

/// The holder shown when a lease names someone this node cannot name.
const UNKNOWN_HOLDER: &str = "<unknown holder>";

/// The shared-directory lease backend.
pub struct FilesystemLease {
    store: Arc<Store>,
    /// `<nodeName>#<token>`, unique per process.
    token: String,
    /// The node name (the display identity).
    display: String,
    ttl: f64,
    connect_timeout: Duration,
    topology: Topology,
    /// The lease this node holds (or adopted), to renew and release.
    held: Option<LeaseRecord>,
    /// Leading until then (the last locked write's anchor + ttl - 1 s).
    leading_until: Option<Instant>,
    /// The holder as last positively observed (display form).
    holder: Option<String>,
    /// The fence as last observed.
    fence: Option<u64>,
    /// The written expiry as last observed (for followers too).
    expiry: Option<String>,
}

/// What one round saw, when it saw the lease.
enum Seen {
    /// This node holds it (a locked write succeeded at `anchor`).
    Won(Instant, LeaseRecord),
    /// Someone holds it (perhaps us, adopted from an unlocked read).
    Other(LeaseRecord),
}

impl FilesystemLease {
    /// Prepares the store directory for `settings` (creating it 0700),
    /// checks that its locks exclude, and logs the topology warning.
    /// `node_name` and `connect_timeout` come from the `cluster` section;
    /// errors are the reason the backend cannot start.
    pub async fn open(
        settings: &FilesystemSettings,
        node_name: &str,
        connect_timeout: Duration,
    ) -> Result<FilesystemLease, BackendError> {
        let store = Arc::new(Store::new(settings));
        let checking = Arc::clone(&store);
        let probed = off_thread(connect_timeout, move || {
            checking.prepare()?;
            checking.lock_fidelity()
        })
        .await;
        let root = store.root.display().to_string();
        match probed {
            None => {
                return Err(BackendError::Setup(format!(
                    "cluster.backend filesystem: the directory {root} did not answer within {} s",
                    connect_timeout.as_secs()
                )))
            }
            Some(Err(e)) => {
                return Err(BackendError::Setup(format!(
                    "cluster.backend filesystem: cannot prepare {}: {e}",
                    store.base.display()
                )))
            }
            Some(Ok(Some(reason))) => {
                return Err(BackendError::Setup(format!(
                    "cluster.backend filesystem: refusing to elect over {root}: {reason}"
                )))
            }
            Some(Ok(None)) => {}
        }
        let topology = match settings.topology {
            Topology::Auto => match platform::mount_of(&store.base) {
                Some((fstype, _)) if is_shared_fstype(&fstype) => Topology::Shared,
                _ => Topology::SingleNode,
            },
            explicit => explicit,
        };
        if topology == Topology::SingleNode {
            tracing::warn!(
                target: "cronstable::cluster",
                "cluster: the filesystem election store at {root} resolved topology 'single-node', \
                 so its locks only exclude processes on THIS host{}; if the directory really is a \
                 shared network mount, set cluster.filesystem.topology: shared",
                if platform::IS_WINDOWS {
                    " (Windows/macOS cannot probe the mount)"
                } else {
                    ""
                }
            );
        }
        Ok(FilesystemLease {
            token: format!("{node_name}#{}", crate::cluster::process_token()),
            display: node_name.to_owned(),
            ttl: settings.ttl,
            connect_timeout,
            topology,
            store,
            held: None,
            leading_until: None,
            holder: None,
            fence: None,
            expiry: None,
        })
    }

    fn period_secs(&self) -> f64 {
        (self.ttl / 3.0).max(1.0)
    }

    fn round_deadline_secs(&self) -> f64 {
        (self.ttl - self.period_secs() - SKEW).max(1.0)
    }

    fn op_timeout(&self) -> Duration {
        let secs = (self.round_deadline_secs() / OPS_PER_ROUND)
            .max(0.5)
            .min(self.connect_timeout.as_secs_f64());
        Duration::from_secs_f64(secs)
    }

    /// Records a positive observation of the lease.
    fn observe(&mut self, seen: Seen) {
        let record = match seen {
            Seen::Won(anchor, record) => {
                let lead = Duration::from_secs_f64((self.ttl - SKEW).max(0.0));
                self.leading_until = Some(anchor + lead);
                self.held = Some(record.clone());
                record
            }
            Seen::Other(record) => {
                self.leading_until = None;
                // Adopted when it is ours: the next round renews it under
                // the lock, which is what grants leadership.
                self.held = (record.holder == self.token).then(|| record.clone());
                record
            }
        };
        let name = display_holder(&record.holder);
        self.holder = Some(if name.is_empty() {
            UNKNOWN_HOLDER.to_owned()
        } else {
            name.to_owned()
        });
        self.fence = Some(record.fence);
        self.expiry = iso_expiry(record.expires_at);
    }

    fn answered(&self) -> Round {
        Round {
            leading_until: self.leading_until,
            answered: true,
            holder: self.holder.clone(),
            error: None,
        }
    }

    /// A round that observed nothing: the state runs out on its deadlines.
    fn unanswered(&self, error: Option<String>) -> Round {
        Round {
            leading_until: self.leading_until,
            answered: false,
            holder: self.holder.clone(),
            error,
        }
    }

    async fn run_round(&mut self) -> Round {
        let limit = self.op_timeout();
        if let Some(held) = self.held.clone() {
            let store = Arc::clone(&self.store);
            let ttl = self.ttl;
            let anchor = Instant::now();
            match off_thread(limit, move || store.renew(&held, ttl)).await {
                None => {
                    // It may still land: change nothing, and above all do
                    // not extend leadership from the unlocked read below.
                    tracing::debug!(
                        target: "cronstable::cluster",
                        "cluster: filesystem lease renew timed out; leaving state to its deadlines"
                    );
                    return self.unanswered(None);
                }
                Some(Err(e)) => return self.unanswered(Some(e.to_string())),
                Some(Ok(Some(renewed))) => {
                    self.observe(Seen::Won(anchor, renewed));
                    return self.answered();
                }
                Some(Ok(None)) => {
                    // Refused: no longer provably ours, so not leading
                    // from this instant; look again like any follower.
                    self.held = None;
                    self.leading_until = None;
                }
            }
        }
        let store = Arc::clone(&self.store);
        let observed = match off_thread(limit, move || Ok(store.read())).await {
            None => return self.unanswered(None),
            Some(Err(e)) => return self.unanswered(Some(e.to_string())),
            Some(Ok(observed)) => observed,
        };
        match sighting(observed.as_ref(), &self.token, wall_now()) {
            Sighting::Ours | Sighting::Held => {
                if let Some(record) = observed {
                    self.observe(Seen::Other(record));
                }
                return self.answered();
            }
            Sighting::Free => {}
        }
        let store = Arc::clone(&self.store);
        let (token, ttl) = (self.token.clone(), self.ttl);
        let anchor = Instant::now();
        match off_thread(limit, move || store.acquire(&token, ttl)).await {
            // Unknown: it may land; the adoption branch picks it up.
            None => return self.unanswered(None),
            Some(Err(e)) => return self.unanswered(Some(e.to_string())),
            Some(Ok(Some(acquired))) => {
                self.observe(Seen::Won(anchor, acquired));
                return self.answered();
            }
            Some(Ok(None)) => {}
        }
        // Denied: a rival was faster, or the store refused; a confirming
        // read tells which (only a lease seen counts as contact).
        let store = Arc::clone(&self.store);
        match off_thread(limit, move || Ok(store.read())).await {
            Some(Ok(Some(record))) => {
                self.observe(Seen::Other(record));
                self.answered()
            }
            _ => self.unanswered(None),
        }
    }

    /// The lease this node holds while it leads (writes need it).
    fn held_while_leading(&self) -> Result<LeaseRecord, RecordsError> {
        let leading = self
            .leading_until
            .is_some_and(|until| Instant::now() < until);
        match &self.held {
            Some(held) if leading => Ok(held.clone()),
            _ => Err(RecordsError::NotLeader),
        }
    }

    async fn run_records(&mut self, op: RecordsOp) -> RecordsResult {
        // Reading a stream is a directory listing plus one small file per
        // record: give it the round's whole deadline, not one op's share.
        let limit = self.round_deadline();
        let store = Arc::clone(&self.store);
        // A write that finds the lease no longer ours is refused.
        let landed = |ours: bool| {
            if ours {
                Ok(RecordsAnswer::Done)
            } else {
                Err(RecordsError::NotLeader)
            }
        };
        let outcome: Option<std::io::Result<RecordsResult>> = match op {
            RecordsOp::RebootRan { job_set_id } => {
                off_thread(limit, move || {
                    let window = store.read_stream(
                        records::REBOOT_RAN_STREAM,
                        Some(records::REBOOT_RAN_WINDOW),
                    )?;
                    let bodies: Vec<_> = window.into_iter().map(|(_, body)| body).collect();
                    Ok(Ok(RecordsAnswer::Jobs(records::reboot_jobs_in(
                        &bodies,
                        &job_set_id,
                    ))))
                })
                .await
            }
            RecordsOp::LastFires => {
                off_thread(limit, move || {
                    let all = store.read_stream(records::LAST_FIRES_STREAM, None)?;
                    Ok(Ok(RecordsAnswer::Fires(
                        records::fires_in(&all).into_iter().collect(),
                    )))
                })
                .await
            }
            RecordsOp::MarkRebootRan { job_set_id, job } => {
                let held = self.held_while_leading()?;
                off_thread(limit, move || {
                    store.mark_reboot_ran(&held, &job_set_id, &job).map(landed)
                })
                .await
            }
            RecordsOp::RecordFire { job, at } => {
                let held = self.held_while_leading()?;
                off_thread(limit, move || {
                    store.record_fire(&held, &job, at).map(landed)
                })
                .await
            }
            RecordsOp::Pauses => {
                off_thread(limit, move || {
                    let all = store.read_stream(pauses::PAUSES_STREAM, None)?;
                    Ok(Ok(RecordsAnswer::Pauses(
                        pauses::marks_in(&all).into_iter().collect(),
                    )))
                })
                .await
            }
            RecordsOp::RecordPause { job, mark } => {
                let held = self.held_while_leading()?;
                off_thread(limit, move || {
                    store.record_pause(&held, &job, &mark).map(landed)
                })
                .await
            }
        };
        match outcome {
            None => Err(RecordsError::NoAnswer),
            Some(Ok(result)) => result,
            Some(Err(e)) => Err(RecordsError::Store(e.to_string())),
        }
    }

    async fn run_release(&mut self) -> Result<(), BackendError> {
        self.leading_until = None;
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        let store = Arc::clone(&self.store);
        match off_thread(self.connect_timeout, move || store.release(&held)).await {
            None => Err(BackendError::NoAnswer(self.connect_timeout)),
            Some(result) => result.map_err(BackendError::from),
        }
    }
}

/// File system types (as `/proc/mounts` names them) whose locks reach
/// other hosts.
fn is_shared_fstype(fstype: &str) -> bool {
    matches!(
        fstype,
        "nfs"
            | "nfs4"
            | "nfs3"
            | "efs"
            | "cifs"
            | "smb3"
            | "smbfs"
            | "lustre"
            | "glusterfs"
            | "ceph"
            | "cephfs"
            | "fuse.sshfs"
    )
}

impl Backend for FilesystemLease {
    fn name(&self) -> &'static str {
        "filesystem"
    }

    fn start_line(&self) -> String {
        let topology = match self.topology {
            Topology::Shared => "shared",
            _ => "single-node",
        };
        tracing::debug!(
            target: "cronstable::cluster",
            "cluster: filesystem election store {} (topology {topology}, renew every {:.1} s, \
             round deadline {:.1} s)",
            self.store.base.display(),
            self.period_secs(),
            self.round_deadline_secs()
        );
        format!(
            "cluster: filesystem election ready at {} (election={}, identity={}, ttl={:.0}s)",
            self.store.root.display(),
            self.store.election,
            self.display,
            self.ttl
        )
    }

    fn round(&mut self) -> BoxFuture<'_, Round> {
        Box::pin(self.run_round())
    }

    fn release(&mut self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.run_release())
    }

    fn records(&mut self, op: RecordsOp) -> BoxFuture<'_, RecordsResult> {
        Box::pin(self.run_records(op))
    }

    fn period(&self) -> Duration {
        Duration::from_secs_f64(self.period_secs())
    }

    fn round_deadline(&self) -> Duration {
        Duration::from_secs_f64(self.round_deadline_secs())
    }

    fn quorum_window(&self) -> Duration {
        Duration::from_secs_f64(self.ttl)
    }

    fn lease_view(&self) -> Value {
        json!({
            "path": self.store.root.display().to_string(),
            "electionName": self.store.election,
            "identity": self.display,
            "holder": self.holder,
            "fence": self.fence,
            "expiry": self.expiry,
        })
    }

    fn initial_failure_line(&self, error: &str) -> String {
        format!("cluster: filesystem election: first round did not complete ({error}); starting unquorate")
    }

    fn round_failure_line(&self, error: &str) -> String {
        format!("cluster: filesystem election round failed: {error}")
    }
}
