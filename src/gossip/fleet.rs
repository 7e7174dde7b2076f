//! The fleet view: what every node of a gossip cluster runs, as one
//! picture (`GET /fleet`).
//!
//! Each node puts a compact summary of its own jobs (running, enabled,
//! seconds to the next fire, the last finished run) into its `/peer`
//! body, and keeps the summaries its peers sent with the rest of what it
//! polled. So any node can answer `/fleet` from what it already holds,
//! without asking anyone: its own jobs live, each peer's as of that peer's
//! last successful poll (at most one `interval` old while it answers).
//!
//! The summaries are display data only. No election, quorum or run/skip
//! decision reads them, and a peer's malformed summaries were already cut
//! down to "no data" by the payload decoder.
//!
//! [`OwnJobs`] is this node's side, built by the scheduler with the
//! advertisement caps applied; [`fleet_view`] joins it with the peer table.

use super::payload::{JobSummary, LastRun, MAX_ADVERTISED_JOB_SUMMARIES, MAX_JOB_SUMMARY_NAME_LEN};
use super::view::{ClusterView, Status};
use crate::config::model::sections::Distribution;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// One of this node's jobs as it is advertised.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnJob {
    /// An instance is running.
    pub running: bool,
    /// The job is enabled in the config.
    pub enabled: bool,
    /// The fire its countdown runs to: none while it is disabled or
    /// running, for `@reboot`, and when it never fires again (the
    /// countdown `/jobs` shows as `scheduled_in`).
    pub counts_down_to: Option<DateTime<Utc>>,
    /// The last finished run (skipped slots are not runs).
    pub last: Option<LastRun>,
}

/// This node's advertised jobs: at most [`MAX_ADVERTISED_JOB_SUMMARIES`],
/// the lowest names first, names over [`MAX_JOB_SUMMARY_NAME_LEN`]
/// characters left out, with `truncated` saying that something was.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OwnJobs {
    /// By name.
    pub jobs: BTreeMap<String, OwnJob>,
    /// Some jobs were left out by the caps.
    pub truncated: bool,
}

/// Which jobs of a table are advertised, chosen before any summary is
/// built (a node with 10,000 jobs builds 512): the positions of the
/// names kept, and whether any was left out. `names` yields each job's
/// position and name.
pub fn advertised<'a>(names: impl Iterator<Item = (usize, &'a str)>) -> (Vec<usize>, bool) {
    let mut truncated = false;
    let mut kept: Vec<(&str, usize)> = Vec::new();
    for (index, name) in names {
        if name.chars().count() > MAX_JOB_SUMMARY_NAME_LEN {
            truncated = true;
        } else {
            kept.push((name, index));
        }
    }
    if kept.len() > MAX_ADVERTISED_JOB_SUMMARIES {
        // The same names every time, so the advertised set is stable
        // between rounds and the peers' ETags with it.
        kept.select_nth_unstable(MAX_ADVERTISED_JOB_SUMMARIES);
        kept.truncate(MAX_ADVERTISED_JOB_SUMMARIES);
        truncated = true;
    }
    (
        kept.into_iter().map(|(_, index)| index).collect(),
        truncated,
    )
}

impl OwnJobs {
    /// The summaries as of `now`: each countdown is the time left to the
    /// fire it runs to, in milliseconds as `/jobs` shows it, never below
    /// zero.
    pub fn summaries(&self, now: DateTime<Utc>) -> BTreeMap<String, JobSummary> {
        self.jobs
            .iter()
            .map(|(name, job)| {
                let scheduled_in = job
                    .counts_down_to
                    .map(|at| (at - now).num_milliseconds().max(0) as f64 / 1000.0);
                (
                    name.clone(),
                    JobSummary {
                        running: job.running,
                        enabled: job.enabled,
                        scheduled_in,
                        last: job.last.clone(),
                    },
                )
            })
            .collect()
    }
}

/// `GET /fleet` for the gossip backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetView {
    /// Always true here (the API answers `{"enabled": false, "nodes": []}`
    /// without a gossip cluster).
    pub enabled: bool,
    /// Always `gossip`.
    pub backend: &'static str,
    /// The serving node.
    pub node_name: String,
    /// `single-leader` or `spread`.
    pub distribution: Distribution,
    /// `electLeader`.
    pub elect_leader: bool,
    /// The poll interval in seconds: how old a healthy peer's data may be.
    pub interval: u64,
    /// This node first, then each distinct peer in configured order.
    pub nodes: Vec<FleetNode>,
}

/// One node of the fleet view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetNode {
    /// Its name (none for a peer never reached).
    pub node_name: Option<String>,
    /// The configured address (none for this node).
    pub host: Option<String>,
    /// This is the serving node.
    #[serde(rename = "self")]
    pub is_self: bool,
    /// `self` for this node, else the peer's status.
    pub status: Status,
    /// When the jobs were read: now for this node, the last successful
    /// poll for a peer.
    pub as_of: Option<String>,
    /// The jobs; none when no summaries are held for the node (never
    /// reached, or a build that does not send them), as opposed to none
    /// configured.
    pub jobs: Option<BTreeMap<String, JobSummary>>,
    /// The node left jobs out of its summaries (the caps).
    pub truncated: bool,
    /// Whole-node load: not shared by this build, always null.
    pub node_stats: Option<()>,
}

/// The fleet view of `view` with this node's `own` jobs, at `now` (wall
/// clock, for this node's countdowns and `as_of`) and `mono` (the view's
/// monotonic clock, to age the peers' countdowns by the time since their
/// bodies arrived). Peers that are this node itself (a self-listing) are
/// left out, and two addresses answering as one process count once.
pub fn fleet_view(
    view: &ClusterView,
    own: &OwnJobs,
    interval: u64,
    now: DateTime<Utc>,
    mono: Duration,
) -> FleetView {
    let me = view.identity();
    let mut nodes = vec![FleetNode {
        node_name: Some(me.node_name.clone()),
        host: None,
        is_self: true,
        status: Status::SelfNode,
        as_of: Some(crate::pyfmt::python_isoformat(now)),
        jobs: Some(own.summaries(now)),
        truncated: own.truncated,
        node_stats: None,
    }];
    let mut seen: HashSet<&str> = HashSet::from([me.instance_id.as_str()]);
    for peer in view.peers() {
        if peer.status == Status::SelfNode || peer.is_self_listing() {
            continue;
        }
        if let Some(instance) = peer.instance_id.as_deref() {
            if !seen.insert(instance) {
                continue;
            }
        }
        nodes.push(FleetNode {
            node_name: peer.node_name.clone(),
            host: Some(peer.host.clone()),
            is_self: false,
            status: peer.status,
            as_of: peer.last_seen.map(crate::pyfmt::python_isoformat),
            jobs: peer.aged_summaries(mono),
            truncated: peer.summaries_truncated(),
            node_stats: None,
        });
    }
    FleetView {
        enabled: true,
        backend: "gossip",
        node_name: me.node_name.clone(),
        distribution: me.distribution,
        elect_leader: me.elect_leader,
        interval,
        nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gossip::payload::{self, PeerPayload, SCHEME_VERSION};
    use crate::gossip::view::{Identity, Observation, Stamp};
    use chrono::TimeZone;
    use serde_json::{json, Value};

    fn at(secs: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_790_000_000 + secs, 0).unwrap()
    }

    fn stamp(secs: u64) -> Stamp {
        Stamp {
            mono: Duration::from_secs(secs),
            wall: at(secs as i64),
        }
    }

    fn me() -> Identity {
        Identity {
            node_name: "a".into(),
            instance_id: "ia".into(),
            elect_leader: true,
            distribution: Distribution::SingleLeader,
            drift_after: 3,
        }
    }

    fn body(name: &str, instance: &str, jobs: Value) -> PeerPayload {
        let value = json!({
            "node_name": name,
            "instance_id": instance,
            "job_set_id": "v1:same",
            "scheme_version": SCHEME_VERSION,
            "cluster_size": 3,
            "members": [],
            "job_summaries": jobs,
            "job_summaries_truncated": name == "c",
        });
        payload::decode(value.to_string().as_bytes()).unwrap()
    }

    /// `view` takes `payload` from `host` as a full body `secs` in.
    fn answer(view: &mut ClusterView, host: &str, payload: PeerPayload, secs: u64) {
        view.observe(
            host,
            Observation::Payload(Box::new(payload)),
            "v1:same",
            stamp(secs),
        );
    }

    /// The fleet view of `view`, with no jobs of its own, `secs` in.
    fn fleet_at(view: &ClusterView, secs: u64) -> FleetView {
        fleet_view(
            view,
            &OwnJobs::default(),
            1,
            at(secs as i64),
            Duration::from_secs(secs),
        )
    }

    fn own() -> OwnJobs {
        OwnJobs {
            jobs: [
                (
                    "backup".to_owned(),
                    OwnJob {
                        running: false,
                        enabled: true,
                        counts_down_to: Some(at(42)),
                        last: Some(LastRun {
                            outcome: "success".into(),
                            finished_at: "2026-09-21T14:13:00+00:00".into(),
                            duration: Some(1.25),
                            exit_code: Some(0),
                        }),
                    },
                ),
                (
                    "report".to_owned(),
                    OwnJob {
                        running: true,
                        enabled: true,
                        counts_down_to: None,
                        last: None,
                    },
                ),
            ]
            .into(),
            truncated: false,
        }
    }

    #[test]
    fn this_node_comes_first_with_live_countdowns() {
        let view = ClusterView::new(me(), ["b:1".to_owned()]);
        let fleet = fleet_view(&view, &own(), 30, at(10), Duration::ZERO);
        let value = serde_json::to_value(&fleet).unwrap();
        assert_eq!(
            value,
            json!({
                "enabled": true,
                "backend": "gossip",
                "node_name": "a",
                "distribution": "single-leader",
                "elect_leader": true,
                "interval": 30,
                "nodes": [
                    {"node_name": "a", "host": null, "self": true, "status": "self",
                     "as_of": "2026-09-21T14:13:30+00:00",
                     "jobs": {
                        "backup": {"running": false, "enabled": true, "scheduled_in": 32.0,
                                   "last": {"outcome": "success",
                                            "finished_at": "2026-09-21T14:13:00+00:00",
                                            "duration": 1.25, "exit_code": 0}},
                        "report": {"running": true, "enabled": true, "scheduled_in": null,
                                   "last": null}},
                     "truncated": false, "node_stats": null},
                    // Never reached: no name, no time, no data (not "no jobs").
                    {"node_name": null, "host": "b:1", "self": false, "status": "unknown",
                     "as_of": null, "jobs": null, "truncated": false, "node_stats": null},
                ],
            })
        );
        // Past the fire the countdown stays at zero until the scheduler
        // says what comes next.
        let late = fleet_view(&view, &own(), 30, at(50), Duration::ZERO);
        assert_eq!(
            late.nodes[0].jobs.as_ref().unwrap()["backup"].scheduled_in,
            Some(0.0)
        );
    }

    #[test]
    fn peers_keep_their_last_summaries_aged_by_our_clock() {
        let mut view = ClusterView::new(me(), ["b:1".to_owned(), "c:1".to_owned()]);
        let jobs = json!({"nightly": {"running": false, "enabled": true, "scheduled_in": 100.0,
                                     "last": null}});
        answer(&mut view, "b:1", body("b", "ib", jobs.clone()), 5);
        answer(&mut view, "c:1", body("c", "ic", jobs), 5);
        let fleet = fleet_at(&view, 30);
        let b = &fleet.nodes[1];
        assert_eq!(b.node_name.as_deref(), Some("b"));
        assert_eq!(b.as_of.as_deref(), Some("2026-09-21T14:13:25+00:00"));
        assert_eq!(b.jobs.as_ref().unwrap()["nightly"].scheduled_in, Some(75.0));
        assert!(!b.truncated);
        assert!(fleet.nodes[2].truncated, "c said it left jobs out");
        // A 304 replays the body: the countdown keeps ageing from when the
        // body arrived, not from the replay.
        view.observe("b:1", Observation::NotModified, "v1:same", stamp(20));
        let fleet = fleet_at(&view, 30);
        assert_eq!(
            fleet.nodes[1].jobs.as_ref().unwrap()["nightly"].scheduled_in,
            Some(75.0)
        );
        // Unreachable now: the last known jobs stay, with the old time.
        view.observe(
            "b:1",
            Observation::Unreachable("refused".into()),
            "v1:same",
            stamp(40),
        );
        let fleet = fleet_at(&view, 200);
        let b = &fleet.nodes[1];
        assert_eq!(b.status, Status::Unreachable);
        assert_eq!(b.as_of.as_deref(), Some("2026-09-21T14:13:40+00:00"));
        assert_eq!(b.jobs.as_ref().unwrap()["nightly"].scheduled_in, Some(0.0));
    }

    #[test]
    fn self_listings_and_second_addresses_of_one_process_are_left_out() {
        let mut view = ClusterView::new(
            me(),
            ["me:1".to_owned(), "b:1".to_owned(), "b-again:1".to_owned()],
        );
        answer(&mut view, "me:1", body("a", "ia", json!({})), 1);
        for host in ["b:1", "b-again:1"] {
            answer(&mut view, host, body("b", "ib", json!({})), 1);
        }
        let fleet = fleet_at(&view, 2);
        let hosts: Vec<Option<&str>> = fleet.nodes.iter().map(|n| n.host.as_deref()).collect();
        assert_eq!(hosts, [None, Some("b:1")]);
        // A peer that sends no summaries (an older build) has no data,
        // one that sends an empty block has no jobs.
        assert_eq!(fleet.nodes[1].jobs, Some(BTreeMap::new()));
        let mut legacy = ClusterView::new(me(), ["old:1".to_owned()]);
        let mut old = body("old", "io", json!({}));
        old.job_summaries = None;
        answer(&mut legacy, "old:1", old, 1);
        let fleet = fleet_at(&legacy, 2);
        assert_eq!(fleet.nodes[1].jobs, None);
        assert_eq!(fleet.nodes[1].node_name.as_deref(), Some("old"));
    }

    #[test]
    fn a_hostile_peers_summaries_degrade_entry_by_entry() {
        let mut view = ClusterView::new(me(), ["b:1".to_owned()]);
        let jobs = json!({
            "good": {"running": true, "enabled": true, "scheduled_in": null, "last": null},
            "bad\u{0007}name": {"running": true},
            "not-an-object": [1, 2],
            "odd-last": {"running": "yes", "scheduled_in": "soon",
                         "last": {"outcome": "exploded", "finished_at": "x"}},
        });
        answer(&mut view, "b:1", body("b", "ib", jobs), 1);
        let fleet = fleet_at(&view, 2);
        let kept = fleet.nodes[1].jobs.as_ref().unwrap();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["good", "odd-last"]);
        assert!(kept["good"].running);
        let odd = &kept["odd-last"];
        assert!(!odd.running && odd.enabled && odd.scheduled_in.is_none() && odd.last.is_none());
    }

    #[test]
    fn the_advertised_set_is_the_lowest_names_within_the_caps() {
        let names: Vec<String> = (0..600).rev().map(|i| format!("job-{i:04}")).collect();
        let (kept, truncated) = advertised(names.iter().map(String::as_str).enumerate());
        assert!(truncated);
        assert_eq!(kept.len(), MAX_ADVERTISED_JOB_SUMMARIES);
        let mut chosen: Vec<&str> = kept.iter().map(|&i| names[i].as_str()).collect();
        chosen.sort();
        assert_eq!(chosen.first(), Some(&"job-0000"));
        assert_eq!(chosen.last(), Some(&"job-0511"));
        // Within the caps nothing is left out; an over-long name is.
        let few = ["a".to_owned(), "b".to_owned()];
        assert_eq!(
            advertised(few.iter().map(String::as_str).enumerate()),
            (vec![0, 1], false)
        );
        let long = ["x".repeat(MAX_JOB_SUMMARY_NAME_LEN + 1), "ok".to_owned()];
        assert_eq!(
            advertised(long.iter().map(String::as_str).enumerate()),
            (vec![1], true)
        );
        let exact = ["é".repeat(MAX_JOB_SUMMARY_NAME_LEN)];
        assert_eq!(
            advertised(exact.iter().map(String::as_str).enumerate()),
            (vec![0], false),
            "the cap counts characters, not bytes"
        );
    }

    #[test]
    fn what_this_node_serves_decodes_back_on_the_peer() {
        let summaries = own().summaries(at(0));
        let served = PeerPayload {
            node_name: Some("a".into()),
            job_summaries: Some(summaries.clone()),
            ..PeerPayload::default()
        };
        let back = payload::decode(&payload::encode(&served)).unwrap();
        assert_eq!(back.job_summaries, Some(summaries));
    }
}
