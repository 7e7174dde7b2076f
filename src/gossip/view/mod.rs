//! This node's table of its gossip peers and every decision derived from
//! it: per-peer status with the `driftAfter` debounce, the effective
//! cluster size, mutual agreement, the three conflict kinds, the leader
//! (or per-job owners under `spread`) and the `GET /cluster` view.
//!
//! Pure: the poller feeds one [`Observation`] per peer per round with the
//! time it was made, and reads decisions back. Everything a peer says is
//! self-asserted, so the rules lean on two-way evidence: a peer counts
//! toward quorum only when it lists this node's instance as agreed too,
//! and a peer that declares a different cluster size or policy is both
//! dropped from the agreeing set and reported as a conflict, which stands
//! `Leader` jobs down.

use super::payload::{JobSummary, Member, PeerPayload};
use crate::config::model::sections::Distribution;
use chrono::{DateTime, Utc};
use observe::{record_failure, record_success};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

mod conflicts;
mod leader;
mod observe;
mod owners;
mod published;
mod quorum;
#[cfg(test)]
mod tests;

pub use observe::{Observation, Stamp};

/// A simulated cluster of views for the unit tests here and the leader
/// gate's; it lives under the view so the two do not import each other.
#[cfg(test)]
pub(crate) mod sim;

/// Completed rounds after which an agreed peer that has still not listed
/// this instance is taken as a one-way link, and the never-skip gates stop
/// waiting for it.
const SETTLE_ROUNDS: u64 = 3;

/// A peer's status, as `GET /cluster` and the `status` metric label spell
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Not polled yet.
    Unknown,
    /// The address answers as this very node (same name and instance).
    #[serde(rename = "self")]
    SelfNode,
    /// Reachable, same job-set id.
    Agreed,
    /// Reachable, different id for fewer than `driftAfter` rounds.
    Syncing,
    /// Reachable, different id for `driftAfter` rounds, or a different
    /// fingerprint scheme.
    Drifted,
    /// Could not be contacted this round (or answered garbage).
    Unreachable,
    /// TLS verification failed.
    Untrusted,
    /// Another process announces this node's name.
    Conflict,
}

impl Status {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::SelfNode => "self",
            Status::Agreed => "agreed",
            Status::Syncing => "syncing",
            Status::Drifted => "drifted",
            Status::Unreachable => "unreachable",
            Status::Untrusted => "untrusted",
            Status::Conflict => "conflict",
        }
    }

    /// No fresh identity this round: such peers are ignored when looking
    /// for duplicate names.
    fn stale(self) -> bool {
        matches!(
            self,
            Status::Unknown | Status::Unreachable | Status::Untrusted
        )
    }
}

/// One configured peer as last observed.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerState {
    /// The configured `host:port`.
    pub host: String,
    /// Its status.
    pub status: Status,
    /// Its last reported job-set id.
    pub job_set_id: Option<String>,
    /// Its last reported name.
    pub node_name: Option<String>,
    /// Its last reported instance id (kept through failures, so one node
    /// listed at two addresses keeps counting once while it is down).
    pub instance_id: Option<String>,
    /// Last successful contact.
    pub last_seen: Option<DateTime<Utc>>,
    /// Why the last round was not a plain agreement.
    pub last_error: Option<String>,
    /// Consecutive reachable rounds with a different job-set id.
    pub mismatch_streak: u32,
    self_confirmed: bool,
    members: Option<Vec<Member>>,
    reports_members: bool,
    declared_size: Option<u64>,
    declared_distribution: Option<String>,
    declared_elect_leader: Option<bool>,
    ran_reboot_jobs: Option<BTreeSet<String>>,
    mutual_agreeing: Option<BTreeSet<String>>,
    quorate_vouched: Option<BTreeSet<String>>,
    /// Fleet-view only; kept through failures (last known beats blank).
    job_summaries: Option<BTreeMap<String, JobSummary>>,
    /// The peer said it left jobs out of its summaries (its caps).
    summaries_truncated: bool,
    summaries_at: Option<Duration>,
    /// The last full body and when it arrived, replayed on a 304.
    cached: Option<(PeerPayload, Duration)>,
}

impl PeerState {
    fn new(host: String) -> Self {
        PeerState {
            host,
            status: Status::Unknown,
            job_set_id: None,
            node_name: None,
            instance_id: None,
            last_seen: None,
            last_error: None,
            mismatch_streak: 0,
            self_confirmed: false,
            members: None,
            reports_members: true,
            declared_size: None,
            declared_distribution: None,
            declared_elect_leader: None,
            ran_reboot_jobs: None,
            mutual_agreeing: None,
            quorate_vouched: None,
            job_summaries: None,
            summaries_truncated: false,
            summaries_at: None,
            cached: None,
        }
    }

    /// Whether the peer's members list shows `instance` as agreed.
    fn attests(&self, instance: &str) -> bool {
        self.members
            .iter()
            .flatten()
            .any(|m| m.agreed && m.instance_id == instance)
    }

    /// The `@reboot` jobs this peer reports run (fresh observations only).
    pub fn ran_reboot_jobs(&self) -> Option<&BTreeSet<String>> {
        self.ran_reboot_jobs.as_ref()
    }

    /// Whether the peer left jobs out of the summaries it sent.
    pub fn summaries_truncated(&self) -> bool {
        self.summaries_truncated
    }

    /// Whether this address was found to answer as this very node (kept
    /// through failures, unlike the status).
    pub fn is_self_listing(&self) -> bool {
        self.self_confirmed
    }

    /// The peer's job summaries with each countdown aged by the time since
    /// the body arrived (clamped at zero), for the fleet view.
    pub fn aged_summaries(&self, now: Duration) -> Option<BTreeMap<String, JobSummary>> {
        let jobs = self.job_summaries.as_ref()?;
        let elapsed = self
            .summaries_at
            .map_or(0.0, |at| now.saturating_sub(at).as_secs_f64());
        Some(
            jobs.iter()
                .map(|(name, job)| {
                    let mut job = job.clone();
                    job.scheduled_in = job.scheduled_in.map(|left| aged_countdown(left, elapsed));
                    (name.clone(), job)
                })
                .collect(),
        )
    }
}

/// A countdown of `left` seconds, `elapsed` seconds later: never below
/// zero, in whole milliseconds as this node's own countdowns are. A peer
/// may send any finite number; one too large to scale stays as it came
/// (scaling it would overflow to infinity).
fn aged_countdown(left: f64, elapsed: f64) -> f64 {
    let aged = (left - elapsed).max(0.0);
    let millis = (aged * 1000.0).round() / 1000.0;
    if millis.is_finite() {
        millis
    } else {
        aged
    }
}

/// This node's side of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// `nodeName`.
    pub node_name: String,
    /// A random token for this process start.
    pub instance_id: String,
    /// `electLeader`.
    pub elect_leader: bool,
    /// `distribution`.
    pub distribution: Distribution,
    /// `driftAfter` (at least 1).
    pub drift_after: u32,
}

/// One row of `GET /cluster`'s `peers`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeerRow {
    /// Configured address.
    pub host: String,
    /// Status.
    pub status: Status,
    /// Reported job-set id.
    pub job_set_id: Option<String>,
    /// Reported name.
    pub node_name: Option<String>,
    /// Last contact, as Python's `isoformat()` writes it.
    pub last_seen: Option<String>,
    /// Last error.
    pub last_error: Option<String>,
    /// Drift streak.
    pub mismatch_streak: u32,
}

/// `GET /cluster` for the gossip backend (the caller adds `enabled` and
/// any fleet extras).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GossipView {
    /// Always `gossip`.
    pub backend: &'static str,
    /// This node.
    pub node_name: String,
    /// This node's job-set id.
    pub job_set_id: String,
    /// Effective cluster size.
    pub cluster_size: usize,
    /// Its strict majority.
    pub quorum: usize,
    /// `electLeader`.
    pub elect_leader: bool,
    /// `single-leader` or `spread`.
    pub distribution: Distribution,
    /// Any conflict below.
    pub conflict: bool,
    /// Names claimed by two instances.
    pub conflict_names: Vec<String>,
    /// A differing declared size is visible.
    pub size_conflict: bool,
    /// Those sizes.
    pub conflicting_sizes: Vec<u64>,
    /// A differing policy is visible.
    pub policy_conflict: bool,
    /// `"field theirs != ours"` descriptors.
    pub conflicting_policies: Vec<String>,
    /// Candidate names beyond the advertisement cap (0: none dropped).
    pub candidates_truncated: usize,
    /// This node sees a quorum.
    pub quorate: bool,
    /// The leader (always null under spread).
    pub leader: Option<String>,
    /// This node leads (always false under spread).
    pub is_leader: bool,
    /// One row per configured peer.
    pub peers: Vec<PeerRow>,
}

/// The peer table and its rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterView {
    me: Identity,
    peers: Vec<PeerState>,
    rounds: u64,
    settled_latched: bool,
}

fn repr(s: &str) -> String {
    crate::pyfmt::py_repr(&minijinja::Value::from(s))
}

impl ClusterView {
    /// A view of `hosts` (the configured peers, in order), all unknown.
    pub fn new(me: Identity, hosts: impl IntoIterator<Item = String>) -> Self {
        ClusterView {
            me,
            peers: hosts.into_iter().map(PeerState::new).collect(),
            rounds: 0,
            settled_latched: false,
        }
    }

    /// This node's identity.
    pub fn identity(&self) -> &Identity {
        &self.me
    }

    /// The peer rows, in configured order.
    pub fn peers(&self) -> &[PeerState] {
        &self.peers
    }

    /// Records one observation of `host`, compared against this node's
    /// current job-set id `my_id`. Returns the peer's previous status (for
    /// transition logging), or `None` for a host not in the table.
    pub fn observe(
        &mut self,
        host: &str,
        observation: Observation,
        my_id: &str,
        at: Stamp,
    ) -> Option<Status> {
        let me = self.me.clone();
        let peer = self.peers.iter_mut().find(|p| p.host == host)?;
        let previous = peer.status;
        match observation {
            Observation::Payload(payload) => {
                let payload = *payload;
                peer.cached = Some((payload.clone(), at.mono));
                record_success(peer, &me, payload, my_id, at, at.mono);
            }
            Observation::NotModified => match peer.cached.clone() {
                Some((payload, received)) => {
                    record_success(peer, &me, payload, my_id, at, received)
                }
                None => record_failure(
                    peer,
                    "unsolicited 304 to an unconditional /peer poll".to_owned(),
                    false,
                ),
            },
            Observation::Unreachable(error) | Observation::Invalid(error) => {
                record_failure(peer, error, false)
            }
            Observation::Untrusted(error) => record_failure(peer, error, true),
        }
        Some(previous)
    }

    /// Marks one poll round complete (every peer observed once).
    pub fn round_completed(&mut self) {
        self.rounds = self.rounds.saturating_add(1);
    }
}
