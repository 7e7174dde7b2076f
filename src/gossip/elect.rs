//! The gossip backend's election rules, as plain functions of names and
//! sizes (no state, no I/O).
//!
//! Single-leader mode elects the lowest name; spread mode picks a per-job
//! owner by rendezvous (highest-random-weight) hashing. The rendezvous
//! score is SHA-256 over `job name, NUL, node name`, its first eight bytes
//! read big-endian, so every process, release and platform ranks the same
//! pair the same way (std's `RandomState` would not), and nodes running the
//! original agree with ours on every owner. Equal scores break on the node
//! name, so the winner is a total function of the member set.

use sha2::{Digest, Sha256};

/// A strict majority of `cluster_size` nodes: two such majorities always
/// share a node, which is what keeps two partitions from both leading.
pub fn quorum_size(cluster_size: usize) -> usize {
    cluster_size / 2 + 1
}

/// Whether this node plus `live_peers` agreeing peers reach a quorum.
fn quorate(live_peers: usize, cluster_size: usize) -> bool {
    live_peers + 1 >= quorum_size(cluster_size)
}

/// The leader as `node` sees it, or `None` when `node` and the peers it
/// agrees with are a minority (a minority partition runs no `Leader` job).
///
/// When quorate, the leader is the lowest name among `node` and
/// `candidates` (the peers confirmed able to run; `None` means every live
/// peer). Candidates never count toward the quorum gate.
pub fn elect_leader<'a>(
    node: &'a str,
    live_peers: &'a [String],
    cluster_size: usize,
    candidates: Option<&'a [String]>,
) -> Option<&'a str> {
    if !quorate(live_peers.len(), cluster_size) {
        return None;
    }
    let pool = candidates.unwrap_or(live_peers);
    Some(lowest(node, pool))
}

/// The leader without the quorum gate (for `PreferLeader`, which prefers
/// a possible double run to a skipped one): the lowest name among `node`
/// and the peers it sees agreeing. Always names someone, so an isolated
/// node elects itself.
pub fn elect_available_leader<'a>(node: &'a str, agreeing: &'a [String]) -> &'a str {
    lowest(node, agreeing)
}

fn lowest<'a>(node: &'a str, others: &'a [String]) -> &'a str {
    others
        .iter()
        .map(String::as_str)
        .fold(node, |best, name| if name < best { name } else { best })
}

/// The rendezvous score of one (job, node) pair. Only the order of scores
/// matters.
pub fn hrw_score(job: &str, node: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(job.as_bytes());
    hasher.update([0u8]);
    hasher.update(node.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The rendezvous winner for `job` among `node` and `others`: the highest
/// score, ties to the higher name. Removing a member only moves the jobs
/// that member won; adding one only takes jobs to the newcomer.
pub fn hrw_owner<'a>(job: &str, node: &'a str, others: &'a [String]) -> &'a str {
    let mut best = node;
    let mut best_score = hrw_score(job, node);
    for name in others {
        let score = hrw_score(job, name);
        if (score, name.as_str()) > (best_score, best) {
            best = name;
            best_score = score;
        }
    }
    best
}

/// The owner of `job` under `distribution: spread`, or `None` below
/// quorum. The owner is the rendezvous winner over `node` and
/// `candidates` (`None`: every live peer); candidates never count toward
/// the quorum gate.
pub fn elect_job_owner<'a>(
    job: &str,
    node: &'a str,
    live_peers: &'a [String],
    cluster_size: usize,
    candidates: Option<&'a [String]>,
) -> Option<&'a str> {
    if !quorate(live_peers.len(), cluster_size) {
        return None;
    }
    Some(hrw_owner(job, node, candidates.unwrap_or(live_peers)))
}

/// The owner of `job` without the quorum gate (spread `PreferLeader`):
/// the rendezvous winner over `node` and the peers it sees agreeing.
pub fn elect_available_job_owner<'a>(job: &str, node: &'a str, agreeing: &'a [String]) -> &'a str {
    hrw_owner(job, node, agreeing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn quorum_is_a_strict_majority_for_sizes_one_to_nine() {
        let expected = [1, 2, 2, 3, 3, 4, 4, 5, 5];
        for (n, want) in (1..=9).zip(expected) {
            assert_eq!(quorum_size(n), want, "size {n}");
            // Two quorums of one size always overlap.
            assert!(2 * quorum_size(n) > n, "size {n}");
            // One fewer would not.
            assert!(2 * (quorum_size(n) - 1) <= n, "size {n}");
        }
    }

    #[test]
    fn a_minority_elects_nobody() {
        // 5 nodes: quorum 3; this node plus one peer is a minority.
        assert_eq!(elect_leader("c", &names(&["d"]), 5, None), None);
        assert_eq!(elect_job_owner("j", "c", &names(&["d"]), 5, None), None);
        assert_eq!(elect_leader("c", &names(&["d", "e"]), 5, None), Some("c"));
        // A single node is its own quorum.
        assert_eq!(elect_leader("solo", &[], 1, None), Some("solo"));
        // Alone in a 3-node cluster: no leader, but the available variant
        // still names this node.
        assert_eq!(elect_leader("b", &[], 3, None), None);
        assert_eq!(elect_available_leader("b", &[]), "b");
        assert_eq!(elect_available_job_owner("j", "b", &[]), "b");
    }

    #[test]
    fn the_leader_is_the_lowest_candidate_and_candidates_do_not_gate() {
        let live = names(&["b", "a"]);
        assert_eq!(elect_leader("c", &live, 3, None), Some("a"));
        // Only "b" is confirmed able to run: "a" is not elected.
        let confirmed = names(&["b"]);
        assert_eq!(elect_leader("c", &live, 3, Some(&confirmed)), Some("b"));
        // Candidates do not make a minority quorate.
        let many = names(&["a", "b", "d"]);
        assert_eq!(elect_leader("c", &[], 3, Some(&many)), None);
    }

    #[test]
    fn scores_and_owners_are_fixed_across_releases() {
        // Pinned values, computed independently (Python's hashlib): a
        // change here would reassign jobs in a mixed-version cluster.
        assert_eq!(hrw_score("backup", "node-a"), 17_377_959_583_755_461_284);
        let others = names(&["node-b", "node-c"]);
        let owners: Vec<&str> = ["backup", "report", "sync", "cleanup", "rotate"]
            .iter()
            .map(|job| hrw_owner(job, "node-a", &others))
            .collect();
        assert_eq!(owners, ["node-a", "node-b", "node-a", "node-c", "node-c"]);
    }

    #[test]
    fn spread_uses_every_member() {
        let others = names(&["n1", "n2", "n3", "n4"]);
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..1000 {
            let owner = hrw_owner(&format!("job-{i}"), "n0", &others);
            *counts.entry(owner.to_owned()).or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), 5, "{counts:?}");
        for (node, n) in counts {
            // 200 expected each; a fair hash stays well inside this.
            assert!((120..=280).contains(&n), "{node}: {n}");
        }
    }

    fn node_set() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::btree_set("[a-z]{1,6}", 2..9)
            .prop_map(|s| s.into_iter().collect::<Vec<_>>())
    }

    proptest! {
        #[test]
        fn every_member_computes_the_same_owner(members in node_set(), job in "[ -~]{0,20}") {
            let mut owners = Vec::new();
            for (i, me) in members.iter().enumerate() {
                let others: Vec<String> =
                    members.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, n)| n.clone()).collect();
                owners.push(hrw_owner(&job, me, &others).to_owned());
                let n = members.len();
                let got = elect_job_owner(&job, me, &others, n, None).map(str::to_owned);
                prop_assert_eq!(got.as_deref(), Some(owners[0].as_str()));
                let leader = elect_leader(me, &others, n, None).map(str::to_owned);
                prop_assert_eq!(leader.as_deref(), members.iter().min().map(String::as_str));
            }
            prop_assert!(owners.windows(2).all(|w| w[0] == w[1]));
        }

        #[test]
        fn removing_a_member_moves_only_its_jobs(members in node_set(), gone in 0usize..8) {
            let gone = gone % members.len();
            let me = &members[0];
            let all: Vec<String> = members[1..].to_vec();
            let kept: Vec<String> = members.iter().enumerate()
                .filter(|(i, _)| *i != gone && *i != 0).map(|(_, n)| n.clone()).collect();
            let (me_after, kept_after) = if gone == 0 {
                (&members[1], members[2..].to_vec())
            } else {
                (me, kept)
            };
            for i in 0..200 {
                let job = format!("job-{i}");
                let before = hrw_owner(&job, me, &all);
                let after = hrw_owner(&job, me_after, &kept_after);
                if before != members[gone] {
                    prop_assert_eq!(before, after, "job {} moved off a surviving owner", job);
                } else {
                    prop_assert_ne!(after, members[gone].as_str());
                }
            }
        }

        #[test]
        fn a_minority_never_has_a_leader(n in 1usize..10, live in 0usize..10) {
            let live = live.min(n - 1);
            let peers: Vec<String> = (0..live).map(|i| format!("p{i}")).collect();
            let got = elect_leader("me", &peers, n, None);
            prop_assert_eq!(got.is_some(), live + 1 > n / 2);
            prop_assert_eq!(elect_available_leader("me", &peers), if live == 0 { "me" } else { peers.iter().map(String::as_str).fold("me", |a, b| a.min(b)) });
        }
    }
}
