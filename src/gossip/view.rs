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

use super::elect::{
    elect_available_job_owner, elect_available_leader, elect_job_owner, elect_leader, hrw_owner,
    quorum_size,
};
use super::payload::{
    JobSummary, Member, PeerPayload, MAX_ADVERTISED_CANDIDATE_NAMES, MAX_ADVERTISED_REBOOT_JOBS,
    SCHEME_VERSION,
};
use crate::config::model::sections::Distribution;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

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

/// What one poll of one peer produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// A full, decoded `/peer` body.
    Payload(Box<PeerPayload>),
    /// A 304: the last body still holds (it is replayed as fresh).
    NotModified,
    /// Connect, timeout or HTTP failure.
    Unreachable(String),
    /// TLS or certificate failure.
    Untrusted(String),
    /// A body that was refused (oversized, not JSON, wrong shape).
    Invalid(String),
}

/// When an observation was made: `mono` is a monotonic reading (any fixed
/// origin; ages are differences of it), `wall` is what `last_seen` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Monotonic time.
    pub mono: Duration,
    /// Wall-clock time.
    pub wall: DateTime<Utc>,
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

fn distribution_name(d: Distribution) -> &'static str {
    match d {
        Distribution::SingleLeader => "single-leader",
        Distribution::Spread => "spread",
    }
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

    /// The effective cluster size: the configured peers plus this node,
    /// minus entries that turned out to be this node, and counting one
    /// node seen at two addresses (same instance id) once.
    pub fn cluster_size(&self) -> usize {
        let mut seen = BTreeSet::new();
        let mut uncounted = 0;
        for peer in &self.peers {
            if peer.status == Status::SelfNode {
                uncounted += 1;
            } else if let Some(instance) = &peer.instance_id {
                if !seen.insert(instance.as_str()) {
                    uncounted += 1;
                }
            }
        }
        self.peers.len() + 1 - uncounted
    }

    /// The strict majority of [`ClusterView::cluster_size`].
    pub fn quorum(&self) -> usize {
        quorum_size(self.cluster_size())
    }

    fn diverges<T: PartialEq>(declared: &Option<T>, ours: &T) -> bool {
        declared.as_ref().is_some_and(|d| d != ours)
    }

    /// Peers agreeing with this node both ways, on job set, size and
    /// policy, each instance once.
    fn agreeing(&self) -> Vec<&PeerState> {
        let size = self.cluster_size() as u64;
        let distribution = distribution_name(self.me.distribution).to_owned();
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for peer in &self.peers {
            let counts = peer.status == Status::Agreed
                && peer.node_name.is_some()
                // An older build sends no members list and cannot attest
                // back; it counts one-way rather than halting the cluster.
                && (peer.attests(&self.me.instance_id) || !peer.reports_members)
                && !Self::diverges(&peer.declared_size, &size)
                && !Self::diverges(&peer.declared_distribution, &distribution)
                && !Self::diverges(&peer.declared_elect_leader, &self.me.elect_leader);
            if !counts {
                continue;
            }
            if let Some(instance) = &peer.instance_id {
                if !seen.insert(instance.as_str()) {
                    continue;
                }
            }
            out.push(peer);
        }
        out
    }

    /// Names of the peers this node mutually agrees with (its gossiped
    /// `mutual_agreeing`).
    pub fn agreeing_peer_names(&self) -> Vec<String> {
        self.agreeing()
            .into_iter()
            .filter_map(|p| p.node_name.clone())
            .collect()
    }

    /// Nodes reached only through agreeing peers that enough of them
    /// report mutual agreement with to be quorate (sorted, uncapped).
    fn bridge_confirmed(&self) -> Vec<String> {
        let agreeing = self.agreeing();
        let mut direct: BTreeSet<&str> = BTreeSet::from([self.me.node_name.as_str()]);
        direct.extend(agreeing.iter().filter_map(|p| p.node_name.as_deref()));
        let mut witnesses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for peer in &agreeing {
            let Some(witness) = peer.node_name.as_deref() else {
                continue;
            };
            for name in peer.mutual_agreeing.iter().flatten() {
                if !direct.contains(name.as_str()) {
                    witnesses.entry(name).or_default().insert(witness);
                }
            }
        }
        let quorum = self.quorum();
        witnesses
            .into_iter()
            .filter(|(_, seen)| seen.len() + 1 >= quorum)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    fn bridge_candidates(&self) -> Vec<String> {
        let mut confirmed = self.bridge_confirmed();
        confirmed.truncate(MAX_ADVERTISED_CANDIDATE_NAMES);
        confirmed
    }

    /// The names this node may elect: agreeing peers whose own mutual set
    /// shows them quorate, plus bridge-confirmed nodes. A peer that cannot
    /// itself run is never elected (that would stand a healthy majority
    /// down).
    pub fn eligible_candidates(&self) -> Vec<String> {
        let quorum = self.quorum();
        let mut out: Vec<String> = self
            .agreeing()
            .into_iter()
            .filter(|p| p.mutual_agreeing.as_ref().map_or(0, BTreeSet::len) + 1 >= quorum)
            .filter_map(|p| p.node_name.clone())
            .collect();
        out.extend(self.bridge_candidates());
        out
    }

    /// The advertised `quorate_vouched` list: sorted, capped.
    pub fn quorate_vouched(&self) -> Vec<String> {
        let mut vouched = self.eligible_candidates();
        vouched.sort();
        vouched.dedup();
        vouched.truncate(MAX_ADVERTISED_CANDIDATE_NAMES);
        vouched
    }

    fn candidates_truncated(&self) -> usize {
        let bridge = self.bridge_confirmed().len();
        let mut union = self.eligible_candidates();
        union.sort();
        union.dedup();
        [bridge, union.len()]
            .into_iter()
            .filter(|n| *n > MAX_ADVERTISED_CANDIDATE_NAMES)
            .max()
            .unwrap_or(0)
    }

    /// Names some agreeing peer vouches quorate that this node cannot
    /// account for: possible co-owners under spread, so a job one of them
    /// out-scores this node for is left to it; and the pending peers.
    fn unconfirmed_contenders(&self) -> Vec<String> {
        let agreeing = self.agreeing();
        let mut accounted: BTreeSet<String> = BTreeSet::from([self.me.node_name.clone()]);
        accounted.extend(agreeing.iter().filter_map(|p| p.node_name.clone()));
        accounted.extend(self.eligible_candidates());
        let mut out = BTreeSet::new();
        for peer in agreeing {
            for name in peer.quorate_vouched.iter().flatten() {
                if !accounted.contains(name) {
                    out.insert(name.clone());
                }
            }
        }
        out.extend(self.pending_peers());
        out.into_iter().collect()
    }

    /// Peers reachable with this node's job-set id that have not seen this
    /// process yet (their member list does not show it) but look quorate:
    /// they may be acting on a view from before this process started, so
    /// they are deferred to like candidates (a lower name leads, a higher
    /// score owns the job) without counting toward the quorum, until they
    /// poll this process.
    fn pending_peers(&self) -> Vec<String> {
        let quorum = self.quorum();
        self.peers
            .iter()
            .filter(|p| {
                p.status == Status::Agreed
                    && p.reports_members
                    && !p.attests(&self.me.instance_id)
                    && p.mutual_agreeing.as_ref().map_or(0, BTreeSet::len) + 1 >= quorum
            })
            .filter_map(|p| p.node_name.clone())
            .filter(|name| *name != self.me.node_name)
            .collect()
    }

    /// Nodes an agreeing peer mutually agrees with that this node cannot
    /// see: folded into the never-skip sets so two mutually blind nodes
    /// still pick one runner.
    fn available_contenders(&self) -> Vec<String> {
        let agreeing = self.agreeing();
        let mut accounted: BTreeSet<&str> = BTreeSet::from([self.me.node_name.as_str()]);
        accounted.extend(agreeing.iter().filter_map(|p| p.node_name.as_deref()));
        let mut out = BTreeSet::new();
        for peer in &agreeing {
            for name in peer.mutual_agreeing.iter().flatten() {
                if !accounted.contains(name.as_str()) {
                    out.insert(name.clone());
                }
            }
        }
        out.into_iter().collect()
    }

    /// Node names claimed by two distinct instances. First-hand identities
    /// (this node, and each peer as polled) always count; an identity only
    /// heard of through peers' member lists counts once two peers report
    /// it, so one lying peer cannot fabricate a conflict.
    pub fn conflict_names(&self) -> Vec<String> {
        type Seen<'a> = BTreeMap<String, BTreeMap<String, BTreeSet<&'a str>>>;
        let mut first: Seen = BTreeMap::new();
        let mut heard: Seen = BTreeMap::new();
        first
            .entry(self.me.node_name.clone())
            .or_default()
            .entry(self.me.instance_id.clone())
            .or_default()
            .insert("self");
        for peer in &self.peers {
            if peer.status.stale() || peer.status == Status::SelfNode {
                continue;
            }
            if let Some(name) = &peer.node_name {
                let instance = peer
                    .instance_id
                    .clone()
                    .unwrap_or_else(|| format!("host:{}", peer.host));
                first
                    .entry(name.clone())
                    .or_default()
                    .entry(instance)
                    .or_default()
                    .insert(&peer.host);
            }
            for m in peer.members.iter().flatten() {
                heard
                    .entry(m.node_name.clone())
                    .or_default()
                    .entry(m.instance_id.clone())
                    .or_default()
                    .insert(&peer.host);
            }
        }
        let names: BTreeSet<&String> = first.keys().chain(heard.keys()).collect();
        names
            .into_iter()
            .filter(|name| {
                let mut credible: BTreeSet<&String> = first
                    .get(*name)
                    .map(|m| m.keys().collect())
                    .unwrap_or_default();
                for (instance, reporters) in heard.get(*name).into_iter().flatten() {
                    if reporters.len() >= 2 {
                        credible.insert(instance);
                    }
                }
                credible.len() >= 2
            })
            .cloned()
            .collect()
    }

    /// Cluster sizes declared by agreeing peers that differ from this
    /// node's.
    pub fn conflicting_sizes(&self) -> Vec<u64> {
        let mine = self.cluster_size() as u64;
        let sizes: BTreeSet<u64> = self
            .peers
            .iter()
            .filter(|p| p.status == Status::Agreed)
            .filter_map(|p| p.declared_size.filter(|s| *s != mine))
            .collect();
        sizes.into_iter().collect()
    }

    /// Policy differences declared by agreeing peers, as
    /// `distribution 'spread' != 'single-leader'` /
    /// `electLeader False != True`.
    pub fn conflicting_policies(&self) -> Vec<String> {
        let mine = distribution_name(self.me.distribution);
        let py_bool = |b: bool| if b { "True" } else { "False" };
        let mut out = BTreeSet::new();
        for peer in self.peers.iter().filter(|p| p.status == Status::Agreed) {
            if let Some(theirs) = peer.declared_distribution.as_deref().filter(|d| *d != mine) {
                out.insert(format!("distribution {} != {}", repr(theirs), repr(mine)));
            }
            if let Some(theirs) = peer
                .declared_elect_leader
                .filter(|e| *e != self.me.elect_leader)
            {
                out.insert(format!(
                    "electLeader {} != {}",
                    py_bool(theirs),
                    py_bool(self.me.elect_leader)
                ));
            }
        }
        out.into_iter().collect()
    }

    /// Any conflict that makes the election unsafe (`Leader` jobs stand
    /// down while one is visible).
    pub fn has_conflict(&self) -> bool {
        !self.conflict_names().is_empty()
            || !self.conflicting_sizes().is_empty()
            || !self.conflicting_policies().is_empty()
    }

    /// The single leader as this node sees it; `None` below quorum.
    pub fn leader_name(&self) -> Option<String> {
        let live = self.agreeing_peer_names();
        let mut candidates = self.eligible_candidates();
        candidates.extend(self.pending_peers());
        elect_leader(
            &self.me.node_name,
            &live,
            self.cluster_size(),
            Some(&candidates),
        )
        .map(str::to_owned)
    }

    /// This node is quorate and the lowest eligible name.
    pub fn is_leader(&self) -> bool {
        self.leader_name().as_deref() == Some(self.me.node_name.as_str())
    }

    /// This node sees a quorum of mutually agreeing members.
    pub fn is_quorate(&self) -> bool {
        self.agreeing().len() + 1 >= self.quorum()
    }

    /// Whether the never-skip gates may trust the view yet: not while a
    /// peer is unpolled, nor (for the first rounds) while an agreeing peer
    /// has not yet seen this process's instance.
    pub fn settled(&mut self) -> bool {
        if self.settled_latched {
            return true;
        }
        if self.peers.iter().any(|p| p.status == Status::Unknown) {
            return false;
        }
        if self.rounds >= SETTLE_ROUNDS {
            self.settled_latched = true;
            return true;
        }
        !self.peers.iter().any(|p| {
            p.status == Status::Agreed
                && p.reports_members
                && !p
                    .members
                    .iter()
                    .flatten()
                    .any(|m| m.instance_id == self.me.instance_id)
        })
    }

    /// The leader without the quorum gate (`PreferLeader`).
    pub fn available_leader_name(&self) -> String {
        let mut pool = self.agreeing_peer_names();
        pool.extend(self.available_contenders());
        elect_available_leader(&self.me.node_name, &pool).to_owned()
    }

    /// Mutual-agreement sets of processes that share this node's name with
    /// a lower instance id: on the never-skip path the lowest instance runs.
    fn lower_twins(&self) -> Vec<Vec<String>> {
        self.peers
            .iter()
            .filter(|p| !p.status.stale())
            .filter(|p| p.node_name.as_deref() == Some(self.me.node_name.as_str()))
            .filter(|p| {
                p.instance_id
                    .as_deref()
                    .is_some_and(|i| !i.is_empty() && i < self.me.instance_id.as_str())
            })
            .map(|p| p.mutual_agreeing.iter().flatten().cloned().collect())
            .collect()
    }

    /// Whether this node runs `PreferLeader` jobs under single-leader.
    pub fn is_available_leader(&mut self) -> bool {
        if !self.settled() || self.available_leader_name() != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.clone();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_leader(&me, view) == me)
    }

    /// [`ClusterView::is_available_leader`] with the settled flag given
    /// (a published snapshot cannot latch it; the manager computed it).
    pub fn available_leader_given(&self, settled: bool) -> bool {
        if !settled || self.available_leader_name() != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.as_str();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_leader(me, view) == me)
    }

    /// [`ClusterView::is_available_job_owner`] with the settled flag given.
    pub fn available_job_owner_given(&self, job: &str, settled: bool) -> bool {
        if !settled || self.available_job_owner(job) != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.as_str();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_job_owner(job, me, view) == me)
    }

    /// Whether enough agreeing peers list this node in their advertised
    /// `quorate_vouched` to make a quorum with it. A peer's list comes in
    /// the same body as its mutual-agreement set, so a node vouched this
    /// way also sees each voucher as eligible and cannot elect itself over
    /// a lower voucher: the hold that keeps every node from leading on a
    /// view its peers have not confirmed yet (the first rounds at start).
    fn vouched_by_quorum(&self) -> bool {
        let me = self.me.node_name.as_str();
        let vouchers = self
            .agreeing()
            .into_iter()
            .filter(|p| p.quorate_vouched.iter().flatten().any(|n| n == me))
            .count();
        vouchers + 1 >= self.quorum()
    }

    /// Whether this node may act on its election: vouched for by a quorum
    /// (`vouched_by_quorum`), and known to every peer that could be
    /// running what this node would run.
    ///
    /// A peer's vouch list is the set it elects from: a peer that lists
    /// this node does not lead over it (when this node's name is lower) and
    /// leaves it the jobs it out-scores the peer for. So waiting until each
    /// such peer lists this node orders a handover: the node that led or
    /// owned a job before steps down in the round that adds this node to
    /// its list, before any poll can see the list. The peers waited for are
    /// the agreeing ones and the reachable ones with this job-set id that
    /// have not seen this process yet but look quorate (they may act on a
    /// view from before it started: when two of three nodes restart, the
    /// survivor is accounted for by nobody else). A quorum of vouches alone
    /// let a restarted leader start while the old one, not among its
    /// vouchers, still ran: a double run whenever the rounds fell that way.
    /// A peer with no list (an older build), a list cut at the cap, or a
    /// mutual set below a quorum (eligible nowhere, so running nothing) is
    /// not waited for. In steady state every list already names every
    /// member, so a takeover is not slowed; a restarted node waits a round
    /// or two.
    pub fn vouched(&self) -> bool {
        self.vouched_by_quorum() && self.unaware_peers().is_empty()
    }

    /// The peers [`Self::vouched`] waits for that do not list this node.
    fn unaware_peers(&self) -> Vec<&str> {
        let me = self.me.node_name.as_str();
        let quorum = self.quorum();
        let pending = self.pending_peers();
        let agreeing: BTreeSet<&str> = self
            .agreeing()
            .into_iter()
            .filter_map(|p| p.node_name.as_deref())
            .collect();
        self.peers
            .iter()
            .filter(|p| p.status == Status::Agreed)
            .filter_map(|p| p.node_name.as_deref().map(|name| (p, name)))
            .filter(|(_, name)| {
                *name != me && (agreeing.contains(name) || pending.iter().any(|n| n == name))
            })
            // A peer whose own mutual set is below a quorum is eligible
            // nowhere, so it runs nothing yet (a process that just started
            // and has not formed its view): waiting for its list would only
            // slow a takeover.
            .filter(|(p, _)| p.mutual_agreeing.as_ref().map_or(0, BTreeSet::len) + 1 >= quorum)
            .filter(|(p, _)| match &p.quorate_vouched {
                None => false,
                Some(list) => {
                    list.len() < MAX_ADVERTISED_CANDIDATE_NAMES && !list.iter().any(|n| n == me)
                }
            })
            .map(|(_, name)| name)
            .collect()
    }

    /// The member list for spread ownership: this node, the eligible
    /// candidates and the contenders peers vouch for; `None` below quorum.
    fn spread_members(&self) -> Option<Vec<String>> {
        if !self.is_quorate() {
            return None;
        }
        let mut members = self.eligible_candidates();
        members.extend(self.unconfirmed_contenders());
        Some(members)
    }

    /// The quorum-gated owner of `job` under spread; `None` below quorum.
    pub fn job_owner(&self, job: &str) -> Option<String> {
        let live = self.agreeing_peer_names();
        let mut members = self.eligible_candidates();
        members.extend(self.unconfirmed_contenders());
        elect_job_owner(
            job,
            &self.me.node_name,
            &live,
            self.cluster_size(),
            Some(&members),
        )
        .map(str::to_owned)
    }

    /// The owners of many jobs at once (one member-set derivation).
    pub fn job_owners<'a>(
        &self,
        jobs: impl IntoIterator<Item = &'a str>,
    ) -> BTreeMap<String, Option<String>> {
        let members = self.spread_members();
        jobs.into_iter()
            .map(|job| {
                let owner = members
                    .as_ref()
                    .map(|m| hrw_owner(job, &self.me.node_name, m).to_owned());
                (job.to_owned(), owner)
            })
            .collect()
    }

    /// Whether this node owns `job` (a `Leader` job under spread).
    pub fn is_job_owner(&self, job: &str) -> bool {
        self.job_owner(job).as_deref() == Some(self.me.node_name.as_str())
    }

    /// The owner of `job` without the quorum gate.
    pub fn available_job_owner(&self, job: &str) -> String {
        let mut pool = self.agreeing_peer_names();
        pool.extend(self.available_contenders());
        elect_available_job_owner(job, &self.me.node_name, &pool).to_owned()
    }

    /// Whether this node runs the `PreferLeader` job `job` under spread.
    pub fn is_available_job_owner(&mut self, job: &str) -> bool {
        if !self.settled() || self.available_job_owner(job) != self.me.node_name {
            return false;
        }
        let me = self.me.node_name.clone();
        !self
            .lower_twins()
            .iter()
            .any(|view| elect_available_job_owner(job, &me, view) == me)
    }

    /// The quorum-gated owner check the scheduler asks for a `Leader` job,
    /// over either distribution (the conflict gate is the caller's).
    pub fn owns(&self, job: &str) -> bool {
        match self.me.distribution {
            Distribution::SingleLeader => self.is_leader(),
            Distribution::Spread => self.is_job_owner(job),
        }
    }

    /// This node's entries for the `members` field: itself, then every
    /// peer with a fresh identity, flagged whether it agrees.
    pub fn local_members(&self) -> Vec<Member> {
        let mut out = vec![Member {
            node_name: self.me.node_name.clone(),
            instance_id: self.me.instance_id.clone(),
            agreed: true,
        }];
        for peer in &self.peers {
            if peer.status.stale() {
                continue;
            }
            if let (Some(name), Some(instance)) = (&peer.node_name, &peer.instance_id) {
                out.push(Member {
                    node_name: name.clone(),
                    instance_id: instance.clone(),
                    agreed: peer.status == Status::Agreed,
                });
            }
        }
        out
    }

    /// `@reboot` jobs agreeing peers (same job set) report as run.
    pub fn peers_ran_reboot_jobs(&self) -> BTreeSet<String> {
        self.peers
            .iter()
            .filter(|p| p.status == Status::Agreed)
            .flat_map(|p| p.ran_reboot_jobs.iter().flatten().cloned())
            .collect()
    }

    /// The body this node serves on `/peer`. `ran_reboot_jobs` is this
    /// node's full ran-set (capped here, lowest names kept), `summaries`
    /// its fleet-view block (already capped by the caller, with the flag).
    pub fn our_payload(
        &self,
        my_id: &str,
        ran_reboot_jobs: &BTreeSet<String>,
        summaries: (BTreeMap<String, JobSummary>, bool),
    ) -> PeerPayload {
        let mut mutual = self.agreeing_peer_names();
        mutual.sort();
        PeerPayload {
            node_name: Some(self.me.node_name.clone()),
            job_set_id: Some(my_id.to_owned()),
            scheme_version: Some(SCHEME_VERSION.to_owned()),
            instance_id: Some(self.me.instance_id.clone()),
            cluster_size: Some(self.cluster_size() as u64),
            members: Some(self.local_members()),
            mutual_agreeing: Some(mutual.into_iter().collect()),
            ran_reboot_jobs: Some(
                ran_reboot_jobs
                    .iter()
                    .take(MAX_ADVERTISED_REBOOT_JOBS)
                    .cloned()
                    .collect(),
            ),
            distribution: Some(distribution_name(self.me.distribution).to_owned()),
            elect_leader: Some(self.me.elect_leader),
            quorate_vouched: Some(self.quorate_vouched().into_iter().collect()),
            job_summaries: Some(summaries.0),
            job_summaries_truncated: summaries.1,
        }
    }

    /// How many peers are in each status (the `cronstable_cluster_peers`
    /// gauge).
    pub fn status_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for peer in &self.peers {
            *out.entry(peer.status.as_str()).or_insert(0) += 1;
        }
        out
    }

    /// The `GET /cluster` view.
    pub fn view(&self, my_id: &str) -> GossipView {
        let spread = self.me.distribution == Distribution::Spread;
        let leader = self.leader_name();
        let conflict_names = self.conflict_names();
        let conflicting_sizes = self.conflicting_sizes();
        let conflicting_policies = self.conflicting_policies();
        GossipView {
            backend: "gossip",
            node_name: self.me.node_name.clone(),
            job_set_id: my_id.to_owned(),
            cluster_size: self.cluster_size(),
            quorum: self.quorum(),
            elect_leader: self.me.elect_leader,
            distribution: self.me.distribution,
            conflict: !conflict_names.is_empty()
                || !conflicting_sizes.is_empty()
                || !conflicting_policies.is_empty(),
            size_conflict: !conflicting_sizes.is_empty(),
            policy_conflict: !conflicting_policies.is_empty(),
            conflict_names,
            conflicting_sizes,
            conflicting_policies,
            candidates_truncated: self.candidates_truncated(),
            quorate: leader.is_some(),
            is_leader: !spread && leader.as_deref() == Some(self.me.node_name.as_str()),
            leader: if spread { None } else { leader },
            peers: self
                .peers
                .iter()
                .map(|p| PeerRow {
                    host: p.host.clone(),
                    status: p.status,
                    job_set_id: p.job_set_id.clone(),
                    node_name: p.node_name.clone(),
                    last_seen: p.last_seen.map(crate::pyfmt::python_isoformat),
                    last_error: p.last_error.clone(),
                    mismatch_streak: p.mismatch_streak,
                })
                .collect(),
        }
    }
}

fn record_success(
    peer: &mut PeerState,
    me: &Identity,
    payload: PeerPayload,
    my_id: &str,
    at: Stamp,
    received: Duration,
) {
    let scheme = payload.scheme_version.clone();
    peer.last_seen = Some(at.wall);
    peer.last_error = None;
    peer.job_set_id = payload.job_set_id;
    peer.node_name = payload.node_name;
    peer.instance_id = payload.instance_id;
    peer.reports_members = payload.members.is_some();
    peer.members = payload.members;
    if let Some(jobs) = payload.job_summaries {
        peer.job_summaries = Some(jobs);
        peer.summaries_truncated = payload.job_summaries_truncated;
        peer.summaries_at = Some(received);
    }
    peer.ran_reboot_jobs = payload.ran_reboot_jobs;
    peer.declared_size = payload.cluster_size;
    peer.mutual_agreeing = payload.mutual_agreeing;
    peer.quorate_vouched = payload.quorate_vouched;
    peer.declared_distribution = payload.distribution;
    peer.declared_elect_leader = payload.elect_leader;
    peer.self_confirmed = false;

    if peer.node_name.as_deref() == Some(me.node_name.as_str()) {
        if peer
            .instance_id
            .as_deref()
            .is_some_and(|i| i != me.instance_id)
        {
            // Another process announces this node's name. The drift streak
            // is left alone: only an agreement clears it.
            peer.status = Status::Conflict;
            peer.last_error = Some(format!(
                "duplicate nodeName {}: peer is a different instance",
                repr(&me.node_name)
            ));
            return;
        }
        // This node's own address in its peer list (or a build too old to
        // send an instance id): never counts, stays "self" across failures.
        peer.status = Status::SelfNode;
        peer.self_confirmed = true;
        peer.mismatch_streak = 0;
        return;
    }
    if let Some(scheme) = scheme.filter(|s| s != SCHEME_VERSION) {
        // Ids from another scheme are not comparable: drifted at once.
        peer.status = Status::Drifted;
        peer.last_error = Some(format!(
            "fingerprint scheme mismatch: {} != {}",
            repr(&scheme),
            repr(SCHEME_VERSION)
        ));
        return;
    }
    if peer.job_set_id.as_deref() == Some(my_id) {
        peer.status = Status::Agreed;
        peer.mismatch_streak = 0;
    } else {
        peer.mismatch_streak = peer.mismatch_streak.saturating_add(1);
        peer.status = if peer.mismatch_streak >= me.drift_after {
            Status::Drifted
        } else {
            Status::Syncing
        };
    }
}

fn record_failure(peer: &mut PeerState, error: String, untrusted: bool) {
    peer.last_error = Some(error);
    peer.status = if peer.self_confirmed {
        // A node polling its own address through a hairpin can fail; it is
        // still this node, and flapping would flap the cluster size.
        Status::SelfNode
    } else if untrusted {
        Status::Untrusted
    } else {
        Status::Unreachable
    };
    // No fresh view of the peer this round. The drift streak stays: it
    // counts reachable mismatches, and only an agreement clears it.
    peer.members = None;
    peer.ran_reboot_jobs = None;
    peer.mutual_agreeing = None;
    peer.quorate_vouched = None;
    peer.reports_members = false;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::gossip::view::sim::*;

    #[test]
    fn a_full_mesh_agrees_on_one_leader() {
        let mut sim = Sim::new(3, Distribution::SingleLeader);
        sim.round(&all);
        // After one round each node sees the others agreed, but nobody has
        // yet been attested back: mutual agreement takes a second round.
        assert!(sim
            .views
            .iter()
            .all(|v| v.peers().iter().all(|p| p.status == Status::Agreed)));
        assert!(sim.leaders().is_empty());
        // Round two confirms the two-way edges, round three advertises them
        // (every body here is built before any poll of its round: the
        // slowest convergence a real cluster can see).
        sim.rounds(2, &all);
        assert_eq!(sim.leaders(), [0]);
        for v in &sim.views {
            assert_eq!(v.leader_name().as_deref(), Some("n0"));
            assert!(v.is_quorate() && !v.has_conflict());
            assert_eq!((v.cluster_size(), v.quorum()), (3, 2));
        }
        let view = sim.views[1].view(ID);
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["backend"], "gossip");
        assert_eq!(json["leader"], "n0");
        assert_eq!(json["is_leader"], false);
        assert_eq!(json["distribution"], "single-leader");
        assert_eq!(json["peers"][0]["status"], "agreed");
        assert_eq!(json["peers"][0]["last_seen"], "2025-06-15T15:08:10+00:00");
        // The documented members, in the documented order.
        let text = serde_json::to_string(&view).unwrap();
        let head = r#"{"backend":"gossip","node_name":"n1","job_set_id":"v1:same","cluster_size":3,"quorum":2,"elect_leader":true,"distribution":"single-leader","conflict":false,"conflict_names":[],"size_conflict":false,"conflicting_sizes":[],"policy_conflict":false,"conflicting_policies":[],"candidates_truncated":0,"quorate":true,"leader":"n0","is_leader":false,"peers":[{"host":"h0","status":"agreed","job_set_id":"v1:same","node_name":"n0","last_seen":"2025-06-15T15:08:10+00:00","last_error":null,"mismatch_streak":0},"#;
        assert!(text.starts_with(head), "{text}");
    }

    #[test]
    fn killing_the_leader_moves_leadership_and_a_minority_stands_down() {
        let mut sim = Sim::new(3, Distribution::SingleLeader);
        sim.rounds(3, &all);
        assert_eq!(sim.leaders(), [0]);
        // n0 dies. For one round the survivors still read n0 as quorate
        // in each other's (pre-death) gossip and defer to it: the page's
        // transient skip, never a double run. The next round n1 leads.
        let dead0 = |i: usize, j: usize| i != 0 && j != 0;
        sim.round(&dead0);
        assert!(sim.leaders().is_empty());
        sim.round(&dead0);
        assert_eq!(sim.leaders(), [1]);
        // n1 dies too: n2 alone is a minority and runs no Leader job, but
        // still runs PreferLeader jobs.
        let only2 = |_: usize, _: usize| false;
        sim.round(&only2);
        assert!(!sim.views[2].is_quorate());
        assert_eq!(sim.views[2].leader_name(), None);
        assert_eq!(sim.views[2].job_owner("j"), None);
        assert!(sim.views[2].is_available_leader());
        assert!(!sim.views[2].view(ID).quorate);
    }

    #[test]
    fn spread_gives_every_job_exactly_one_owner() {
        let mut sim = Sim::new(5, Distribution::Spread);
        sim.rounds(3, &all);
        let jobs: Vec<String> = (0..200).map(|i| format!("job-{i}")).collect();
        let mut per_node = vec![0; 5];
        for job in &jobs {
            let owners: Vec<usize> = (0..5).filter(|i| sim.views[*i].is_job_owner(job)).collect();
            assert_eq!(owners.len(), 1, "{job}: {owners:?}");
            per_node[owners[0]] += 1;
            let named: BTreeSet<Option<String>> =
                sim.views.iter().map(|v| v.job_owner(job)).collect();
            assert_eq!(named.len(), 1, "{job}: {named:?}");
        }
        assert!(per_node.iter().all(|n| *n > 10), "{per_node:?}");
        let view = sim.views[0].view(ID);
        assert_eq!(
            (view.leader, view.is_leader, view.quorate),
            (None, false, true)
        );
        // Losing n4 moves only n4's jobs. While n4's death spreads through
        // the gossip (two hops of stale vouching), its jobs may be skipped
        // but no job ever has two owners.
        let before: Vec<Option<String>> = jobs.iter().map(|j| sim.views[0].job_owner(j)).collect();
        let without4 = |i: usize, j: usize| i != 4 && j != 4;
        for _ in 0..3 {
            sim.round(&without4);
            for job in &jobs {
                let owners = (0..4).filter(|i| sim.views[*i].is_job_owner(job)).count();
                assert!(owners <= 1, "{job}");
            }
        }
        for (job, was) in jobs.iter().zip(before) {
            let now = sim.views[0].job_owner(job);
            if was.as_deref() != Some("n4") {
                assert_eq!(now, was, "{job}");
            }
            let owners = (0..4).filter(|i| sim.views[*i].is_job_owner(job)).count();
            assert_eq!(owners, 1, "{job}");
        }
    }

    #[test]
    fn drift_is_debounced_and_failures_neither_advance_nor_reset_it() {
        let me = identity("a", Distribution::SingleLeader);
        let mut view = ClusterView::new(me, ["hb".to_owned()]);
        let peer = |id: &str| {
            Observation::Payload(Box::new(PeerPayload {
                node_name: Some("b".into()),
                instance_id: Some("ib".into()),
                job_set_id: Some(id.into()),
                scheme_version: Some("v1".into()),
                ..PeerPayload::default()
            }))
        };
        let status = |v: &ClusterView| (v.peers()[0].status, v.peers()[0].mismatch_streak);
        assert_eq!(status(&view), (Status::Unknown, 0));
        view.observe("hb", peer("v1:other"), ID, at(1));
        assert_eq!(status(&view), (Status::Syncing, 1));
        view.observe("hb", peer("v1:other"), ID, at(2));
        assert_eq!(status(&view), (Status::Syncing, 2));
        view.observe("hb", Observation::Unreachable("timeout".into()), ID, at(3));
        assert_eq!(status(&view), (Status::Unreachable, 2));
        view.observe("hb", Observation::NotModified, ID, at(4));
        assert_eq!(status(&view), (Status::Drifted, 3));
        assert_eq!(view.peers()[0].last_error, None);
        view.observe("hb", peer(ID), ID, at(5));
        assert_eq!(status(&view), (Status::Agreed, 0));
        // A different fingerprint scheme drifts at once.
        view.observe(
            "hb",
            Observation::Payload(Box::new(PeerPayload {
                node_name: Some("b".into()),
                job_set_id: Some("v2:x".into()),
                scheme_version: Some("v2".into()),
                ..PeerPayload::default()
            })),
            ID,
            at(6),
        );
        assert_eq!(status(&view), (Status::Drifted, 0));
        assert_eq!(
            view.peers()[0].last_error.as_deref(),
            Some("fingerprint scheme mismatch: 'v2' != 'v1'")
        );
        view.observe(
            "hb",
            Observation::Untrusted("certificate verify failed".into()),
            ID,
            at(7),
        );
        assert_eq!(status(&view).0, Status::Untrusted);
        view.observe(
            "hb",
            Observation::Invalid("invalid JSON in /peer response".into()),
            ID,
            at(8),
        );
        assert_eq!(status(&view).0, Status::Unreachable);
        assert_eq!(
            view.observe("nowhere", Observation::NotModified, ID, at(9)),
            None
        );
    }

    #[test]
    fn an_unsolicited_304_is_a_failure() {
        let mut view =
            ClusterView::new(identity("a", Distribution::SingleLeader), ["hb".to_owned()]);
        view.observe("hb", Observation::NotModified, ID, at(1));
        assert_eq!(view.peers()[0].status, Status::Unreachable);
        assert_eq!(
            view.peers()[0].last_error.as_deref(),
            Some("unsolicited 304 to an unconditional /peer poll")
        );
    }

    fn payload(name: &str, instance: &str) -> PeerPayload {
        PeerPayload {
            node_name: Some(name.into()),
            instance_id: Some(instance.into()),
            job_set_id: Some(ID.into()),
            scheme_version: Some("v1".into()),
            members: Some(vec![
                Member {
                    node_name: name.into(),
                    instance_id: instance.into(),
                    agreed: true,
                },
                Member {
                    node_name: "a".into(),
                    instance_id: "inst-a".into(),
                    agreed: true,
                },
            ]),
            cluster_size: Some(3),
            distribution: Some("single-leader".into()),
            elect_leader: Some(true),
            ..PeerPayload::default()
        }
    }

    fn three() -> ClusterView {
        ClusterView::new(
            identity("a", Distribution::SingleLeader),
            ["hb".to_owned(), "hc".to_owned()],
        )
    }

    #[test]
    fn a_duplicate_node_name_is_a_conflict() {
        let mut view = three();
        view.observe(
            "hb",
            Observation::Payload(Box::new(payload("a", "inst-other"))),
            ID,
            at(1),
        );
        view.observe(
            "hc",
            Observation::Payload(Box::new(payload("c", "ic"))),
            ID,
            at(1),
        );
        assert_eq!(view.peers()[0].status, Status::Conflict);
        assert_eq!(
            view.peers()[0].last_error.as_deref(),
            Some("duplicate nodeName 'a': peer is a different instance")
        );
        assert_eq!(view.conflict_names(), ["a"]);
        assert!(view.has_conflict());
        let json = serde_json::to_value(view.view(ID)).unwrap();
        assert_eq!(json["conflict"], true);
        assert_eq!(json["conflict_names"], serde_json::json!(["a"]));
        assert_eq!(json["peers"][0]["status"], "conflict");
    }

    #[test]
    fn a_transitive_duplicate_needs_two_witnesses() {
        let mut view = three();
        let mut b = payload("b", "ib");
        b.members.as_mut().unwrap().push(Member {
            node_name: "x".into(),
            instance_id: "x1".into(),
            agreed: true,
        });
        b.members.as_mut().unwrap().push(Member {
            node_name: "x".into(),
            instance_id: "x2".into(),
            agreed: true,
        });
        view.observe("hb", Observation::Payload(Box::new(b.clone())), ID, at(1));
        view.observe(
            "hc",
            Observation::Payload(Box::new(payload("c", "ic"))),
            ID,
            at(1),
        );
        // One peer alone claims "x" runs twice: not credible.
        assert!(view.conflict_names().is_empty());
        let mut c = payload("c", "ic");
        c.members = b.members.clone();
        view.observe("hc", Observation::Payload(Box::new(c)), ID, at(2));
        assert_eq!(view.conflict_names(), ["x"]);
        // The witnesses going stale clears it.
        view.observe("hc", Observation::Unreachable("down".into()), ID, at(3));
        assert!(view.conflict_names().is_empty());
    }

    #[test]
    fn size_and_policy_disagreements_are_conflicts_and_do_not_count() {
        let mut view = three();
        let mut b = payload("b", "ib");
        b.cluster_size = Some(5);
        let mut c = payload("c", "ic");
        c.distribution = Some("spread".into());
        c.elect_leader = Some(false);
        view.observe("hb", Observation::Payload(Box::new(b)), ID, at(1));
        view.observe("hc", Observation::Payload(Box::new(c)), ID, at(1));
        assert_eq!(view.conflicting_sizes(), [5]);
        assert_eq!(
            view.conflicting_policies(),
            [
                "distribution 'spread' != 'single-leader'",
                "electLeader False != True"
            ]
        );
        assert!(view.has_conflict());
        assert!(view.agreeing_peer_names().is_empty());
        assert!(!view.is_quorate());
        let json = serde_json::to_value(view.view(ID)).unwrap();
        assert_eq!(
            (
                json["size_conflict"].clone(),
                json["policy_conflict"].clone()
            ),
            (true.into(), true.into())
        );
        // A peer too old to declare these fields is no evidence either way.
        let mut legacy = payload("c", "ic");
        legacy.cluster_size = None;
        legacy.distribution = None;
        legacy.elect_leader = None;
        view.observe("hc", Observation::Payload(Box::new(legacy)), ID, at(2));
        assert!(view.conflicting_policies().is_empty());
        assert_eq!(view.agreeing_peer_names(), ["c"]);
    }

    #[test]
    fn agreement_must_be_two_way_except_for_legacy_peers() {
        let mut view = three();
        let mut b = payload("b", "ib");
        b.members.as_mut().unwrap().retain(|m| m.node_name != "a");
        view.observe("hb", Observation::Payload(Box::new(b.clone())), ID, at(1));
        assert_eq!(view.peers()[0].status, Status::Agreed);
        assert!(view.agreeing_peer_names().is_empty());
        b.members = None;
        view.observe("hb", Observation::Payload(Box::new(b)), ID, at(2));
        assert_eq!(view.agreeing_peer_names(), ["b"]);
    }

    #[test]
    fn self_listing_and_multi_homed_peers_shrink_the_cluster() {
        let mut view = ClusterView::new(
            identity("a", Distribution::SingleLeader),
            ["hb".to_owned(), "hb2".to_owned(), "hself".to_owned()],
        );
        assert_eq!(view.cluster_size(), 4);
        view.observe(
            "hself",
            Observation::Payload(Box::new(payload("a", "inst-a"))),
            ID,
            at(1),
        );
        assert_eq!(view.peers()[2].status, Status::SelfNode);
        assert_eq!(view.cluster_size(), 3);
        // A hairpin failure keeps it "self".
        view.observe(
            "hself",
            Observation::Unreachable("refused".into()),
            ID,
            at(2),
        );
        assert_eq!(view.peers()[2].status, Status::SelfNode);
        // One node at two addresses counts once, also while it is down.
        let mut b2 = payload("b", "ib");
        b2.cluster_size = Some(2);
        view.observe("hb", Observation::Payload(Box::new(b2.clone())), ID, at(3));
        view.observe("hb2", Observation::Payload(Box::new(b2.clone())), ID, at(3));
        assert_eq!(view.cluster_size(), 2);
        assert_eq!(view.agreeing_peer_names(), ["b"]);
        view.observe("hb", Observation::Unreachable("down".into()), ID, at(4));
        view.observe("hb2", Observation::Unreachable("down".into()), ID, at(4));
        assert_eq!(view.cluster_size(), 2);
        assert!(!view.conflict_names().contains(&"a".to_owned()));
    }

    #[test]
    fn never_skip_gates_wait_for_the_view_to_settle() {
        let mut sim = Sim::new(3, Distribution::SingleLeader);
        assert!(!sim.views[0].is_available_leader(), "unpolled peers");
        sim.round(&all);
        // Peers agreed but have not yet listed this instance back.
        assert!(!sim.views[0].settled());
        sim.round(&all);
        assert!(sim.views[0].is_available_leader());
        assert!(!sim.views[1].is_available_leader());
        let mut sim = Sim::new(3, Distribution::Spread);
        sim.rounds(2, &all);
        for i in 0..50 {
            let job = format!("j{i}");
            let runners = (0..3)
                .filter(|n| sim.views[*n].is_available_job_owner(&job))
                .count();
            assert_eq!(runners, 1, "{job}");
        }
    }

    #[test]
    fn a_304_replays_the_body_and_ages_summaries_from_receipt() {
        let mut view = three();
        let mut b = payload("b", "ib");
        b.job_summaries = Some(
            [(
                "backup".to_owned(),
                JobSummary {
                    running: false,
                    enabled: true,
                    scheduled_in: Some(100.0),
                    last: None,
                },
            )]
            .into(),
        );
        view.observe("hb", Observation::Payload(Box::new(b)), ID, at(10));
        view.observe("hb", Observation::NotModified, ID, at(40));
        let peer = &view.peers()[0];
        assert_eq!(peer.status, Status::Agreed);
        assert_eq!(peer.last_seen, Some(at(40).wall));
        let aged = peer.aged_summaries(Duration::from_secs(70)).unwrap();
        assert_eq!(aged["backup"].scheduled_in, Some(40.0));
        let aged = peer.aged_summaries(Duration::from_secs(500)).unwrap();
        assert_eq!(aged["backup"].scheduled_in, Some(0.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any split of a cluster into two sides that cannot see each other
        /// (nodes may also be down): at most one leader overall, exactly one
        /// when some side is a majority; under spread each job at most one
        /// owner, exactly one with a majority side.
        #[test]
        fn partitions_never_elect_two_leaders(n in 1usize..8, side in proptest::collection::vec(0u8..3, 8), spread in any::<bool>()) {
            let distribution = if spread { Distribution::Spread } else { Distribution::SingleLeader };
            let mut sim = Sim::new(n, distribution);
            sim.rounds(3, &all);
            // side 2 = down; sides 0 and 1 see only their own side.
            let link = |i: usize, j: usize| side[i] != 2 && side[j] != 2 && side[i] == side[j];
            sim.rounds(3, &link);
            let majority = (0..2u8).any(|s| (0..n).filter(|i| side[*i] == s).count() > n / 2);
            let up: Vec<usize> = (0..n).filter(|i| side[*i] != 2).collect();
            if spread {
                for k in 0..20 {
                    let job = format!("job-{k}");
                    let owners = up.iter().filter(|i| sim.views[**i].is_job_owner(&job)).count();
                    prop_assert!(owners <= 1);
                    prop_assert_eq!(owners == 1, majority);
                }
            } else {
                let leaders: Vec<usize> = sim.leaders().into_iter().filter(|i| side[*i] != 2).collect();
                prop_assert!(leaders.len() <= 1, "{:?}", leaders);
                prop_assert_eq!(leaders.len() == 1, majority);
            }
        }

        /// Nodes killed and started again (a new process under the old
        /// name) while the others' rounds run unsynchronized, in any
        /// interleaving: after every single round, at most one node would
        /// launch a `Leader` fire (single-leader), or a given job (spread),
        /// by the gate's rule (elected, vouched for, no conflict). Dead
        /// nodes launch nothing. Once everyone is up again and a few
        /// rounds pass, exactly one does: the hold never wedges.
        #[test]
        fn restarts_in_unsynchronized_rounds_never_give_two_runners(
            five in any::<bool>(),
            spread in any::<bool>(),
            steps in proptest::collection::vec((0u8..8, 0usize..5), 1..160),
        ) {
            let n = if five { 5 } else { 3 };
            let distribution = if spread { Distribution::Spread } else { Distribution::SingleLeader };
            let mut sim = Sim::new(n, distribution);
            sim.rounds(3, &all);
            let jobs: Vec<String> = (0..8).map(|k| format!("job-{k}")).collect();
            let mut down: Vec<bool> = vec![false; n];
            let check = |sim: &Sim, down: &[bool]| -> Result<(), TestCaseError> {
                if spread {
                    for job in &jobs {
                        let owners: Vec<usize> = sim.acting_owners(job).into_iter().filter(|i| !down[*i]).collect();
                        prop_assert!(owners.len() <= 1, "{} owned by {:?}", job, owners);
                    }
                } else {
                    let leaders: Vec<usize> = sim.acting_leaders().into_iter().filter(|i| !down[*i]).collect();
                    prop_assert!(leaders.len() <= 1, "leaders {:?}", leaders);
                }
                Ok(())
            };
            check(&sim, &down)?;
            for (op, node) in steps {
                let node = node % n;
                match op {
                    // Kill: at most a minority down at once.
                    0 if 2 * (down.iter().filter(|d| **d).count() + 1) < n => {
                        down[node] = true;
                    }
                    // Start again (a new instance), or restart at once.
                    1 => {
                        down[node] = false;
                        sim.restart(node);
                    }
                    _ if !down[node] => {
                        let dead = down.clone();
                        sim.round_of(node, &|i, j| !dead[i] && !dead[j]);
                    }
                    _ => {}
                }
                check(&sim, &down)?;
            }
            for (i, dead) in down.iter().enumerate() {
                if *dead {
                    sim.restart(i);
                }
            }
            sim.rounds(4, &all);
            if spread {
                for job in &jobs {
                    prop_assert_eq!(sim.acting_owners(job).len(), 1, "{}", job);
                }
            } else {
                prop_assert_eq!(sim.acting_leaders().len(), 1);
            }
        }
    }
}
