//! What one poll of a peer brought (an answer or a failure) and how it
//! changes the peer's row.

use super::{repr, Identity, PeerState, Status};
use crate::gossip::payload::{PeerPayload, SCHEME_VERSION};
use chrono::{DateTime, Utc};
use std::time::Duration;

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

pub(super) fn record_success(
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

pub(super) fn record_failure(peer: &mut PeerState, error: String, untrusted: bool) {
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
