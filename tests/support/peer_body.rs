//! What a peer's `/peer` body must never do to this node, checked the same
//! way by the `gossip_payload` fuzz target and by the replay of its seeds
//! in tests/fuzz_regressions.rs (both include this file by path).
//!
//! The body is decoded (refusing is fine); what decodes must survive
//! encode -> decode unchanged (a body at the size cap sheds its summaries
//! on purpose), and, observed as a peer's answer, must leave a view whose
//! `GET /cluster` and `GET /fleet` renderings serialize, with the fleet
//! view holding at most the advertised number of jobs per node.

use cronstable::config::Distribution;
use cronstable::gossip::fleet::{fleet_view, OwnJobs};
use cronstable::gossip::payload::{decode, encode, MAX_ADVERTISED_JOB_SUMMARIES};
use cronstable::gossip::view::{ClusterView, Identity, Observation, Stamp};
use std::time::Duration;

/// Checks one body; panics on a broken promise.
pub fn check_peer_body(data: &[u8]) {
    let Ok(payload) = decode(data) else {
        return;
    };
    let body = encode(&payload);
    match decode(&body) {
        Ok(again) if again.job_summaries_truncated && !payload.job_summaries_truncated => {}
        Ok(again) => assert_eq!(again, payload, "encode -> decode changed the payload"),
        Err(e) => panic!("our own encoding does not decode: {e}"),
    }
    let me = Identity {
        node_name: "self".to_owned(),
        instance_id: "self-1".to_owned(),
        elect_leader: true,
        distribution: Distribution::SingleLeader,
        drift_after: 3,
    };
    let mut view = ClusterView::new(me, ["peer:1".to_owned(), "peer:2".to_owned()]);
    let epoch = chrono::DateTime::from_timestamp(1_790_000_000, 0).expect("an instant");
    for (host, second) in [("peer:1", 1), ("peer:2", 2), ("peer:1", 3)] {
        let at = Stamp {
            mono: Duration::from_secs(second),
            wall: epoch + chrono::Duration::seconds(second as i64),
        };
        view.observe(
            host,
            Observation::Payload(Box::new(payload.clone())),
            "v1:x",
            at,
        );
        view.round_completed();
    }
    serde_json::to_string(&view.view("v1:x")).expect("GET /cluster serializes");
    let fleet = fleet_view(
        &view,
        &OwnJobs::default(),
        1,
        epoch + chrono::Duration::seconds(10),
        Duration::from_secs(10),
    );
    for node in &fleet.nodes {
        let jobs = node.jobs.as_ref().map_or(0, |j| j.len());
        assert!(jobs <= MAX_ADVERTISED_JOB_SUMMARIES, "{jobs} jobs kept");
        for job in node.jobs.iter().flatten().map(|(_, j)| j) {
            assert!(
                job.scheduled_in.is_none_or(|s| s.is_finite() && s >= 0.0),
                "{job:?}"
            );
        }
    }
    serde_json::to_string(&fleet).expect("GET /fleet serializes");
}
