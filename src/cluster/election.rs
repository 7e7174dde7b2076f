//! The lease election of record stores (a Kubernetes Lease, the shared
//! directory's lease file), as client-go's leader election runs it, with
//! no I/O: the backend reads the record, asks [`Elector::decide`] what to
//! write, writes it, and reports how the write went.
//!
//! Expiry is judged by this node's own monotonic observation of the
//! record, never by comparing the holder's `renewTime` with the local
//! wall clock: a record that has not changed for a lease duration since
//! this node first saw it is expired, whatever the clocks say. Two nodes
//! with skewed clocks therefore never both believe they hold the lease.

use std::time::Duration;
use tokio::time::Instant;

/// The three timings of a lease (the Kubernetes names; the shared
/// directory derives them from its `ttl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    /// How long a record is valid after its last renewal.
    pub lease_duration: Duration,
    /// How long a holder keeps leading after its last successful renewal
    /// (shorter than the duration: it stops before others may take over).
    pub renew_deadline: Duration,
    /// Time between rounds.
    pub retry_period: Duration,
}

/// What a backend read: the holder and a version that changes with every
/// write (the resourceVersion; the file's fence and expiry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// `holderIdentity`; `None` or empty when released.
    pub holder: Option<String>,
    /// Changes with every write of the record.
    pub version: String,
}

/// What to do this round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// No record exists: create it holding it.
    Create,
    /// We hold it: write a renewal (keep acquireTime and transitions).
    Renew,
    /// Released or expired: take it over (new acquireTime, transitions
    /// plus one), conditional on the version read.
    Acquire,
    /// Someone else holds a live record: wait for the next round.
    Wait,
}

/// One node's view of the election.
#[derive(Debug, Clone)]
pub struct Elector {
    identity: String,
    timings: Timings,
    /// The record as last seen, and when (monotonic) it was first seen so.
    observed: Option<(Observed, Instant)>,
    /// Leading until this instant (the last renewal's start plus the
    /// renew deadline); `None` when not leading.
    leading_until: Option<Instant>,
}

impl Elector {
    /// An elector for `identity` (unique per process).
    pub fn new(identity: String, timings: Timings) -> Self {
        Elector {
            identity,
            timings,
            observed: None,
            leading_until: None,
        }
    }

    /// This node's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The timings.
    pub fn timings(&self) -> Timings {
        self.timings
    }

    /// Decides the round's write from the record read at `now` (`None`:
    /// there is no record).
    pub fn decide(&mut self, now: Instant, record: Option<&Observed>) -> Action {
        let Some(record) = record else {
            // A record we saw held by someone else vanished: it may be
            // re-created by its holder any moment; still, with no record
            // nobody can prove a claim, so create it (the create is
            // refused with 409 if another node is faster).
            return Action::Create;
        };
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(seen, _)| seen != record);
        if changed {
            self.observed = Some((record.clone(), now));
        }
        let holder = record.holder.as_deref().filter(|h| !h.is_empty());
        match holder {
            Some(holder) if holder == self.identity => Action::Renew,
            None => Action::Acquire,
            Some(_) => {
                let since = self.observed.as_ref().map_or(now, |(_, at)| *at);
                if now.duration_since(since) >= self.timings.lease_duration {
                    Action::Acquire
                } else {
                    // Someone else leads; if we thought we did, we do not.
                    self.leading_until = None;
                    Action::Wait
                }
            }
        }
    }

    /// The write of this round succeeded; `anchor` is when the round's
    /// request was sent (leadership is counted from then, not from the
    /// answer, so a slow answer never extends it). `written` is the
    /// record as now stored.
    pub fn won(&mut self, anchor: Instant, written: Observed) {
        self.leading_until = Some(anchor + self.timings.renew_deadline);
        self.observed = Some((written, anchor));
    }

    /// The write lost (409, or refused): someone else wrote first.
    pub fn lost(&mut self) {
        self.leading_until = None;
    }

    /// The round failed without an answer (timeout, outage): nothing is
    /// known; the leadership runs out on its own deadline.
    pub fn unanswered(&mut self) {}

    /// Released on purpose (shutdown, reload).
    pub fn released(&mut self) {
        self.leading_until = None;
        self.observed = None;
    }

    /// Whether this node leads at `now`.
    pub fn is_leader(&self, now: Instant) -> bool {
        self.leading_until.is_some_and(|until| now < until)
    }

    /// Until when this node leads, if it does.
    pub fn leading_until(&self) -> Option<Instant> {
        self.leading_until
    }

    /// The holder of the record as last seen (display: without the
    /// per-process token).
    pub fn holder(&self) -> Option<&str> {
        self.observed
            .as_ref()
            .and_then(|(o, _)| o.holder.as_deref())
            .filter(|h| !h.is_empty())
    }
}

/// A holder identity without its per-process `#token`.
pub fn display_holder(holder: &str) -> &str {
    holder.rsplit_once('#').map_or(holder, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings() -> Timings {
        Timings {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    fn held(by: &str, version: u32) -> Observed {
        Observed {
            holder: Some(by.to_owned()),
            version: version.to_string(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_record_means_create_and_winning_leads_for_the_renew_deadline() {
        let mut e = Elector::new("a#1".into(), timings());
        let t0 = Instant::now();
        assert_eq!(e.decide(t0, None), Action::Create);
        e.won(t0, held("a#1", 1));
        assert!(e.is_leader(t0 + Duration::from_secs(9)));
        assert!(
            !e.is_leader(t0 + Duration::from_secs(10)),
            "stops at the renew deadline"
        );
        assert_eq!(
            e.decide(t0 + Duration::from_secs(2), Some(&held("a#1", 1))),
            Action::Renew
        );
        e.won(t0 + Duration::from_secs(2), held("a#1", 2));
        assert!(
            e.is_leader(t0 + Duration::from_secs(11)),
            "a renewal extends it"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_live_foreign_record_is_waited_out_by_local_observation_only() {
        let mut e = Elector::new("b#2".into(), timings());
        let t0 = Instant::now();
        let record = held("a#1", 7);
        assert_eq!(e.decide(t0, Some(&record)), Action::Wait);
        // However the holder's clock is set, only our observation counts:
        // the same record seen for less than a lease duration is live.
        assert_eq!(
            e.decide(t0 + Duration::from_secs(14), Some(&record)),
            Action::Wait
        );
        assert_eq!(
            e.decide(t0 + Duration::from_secs(15), Some(&record)),
            Action::Acquire
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewed_foreign_record_restarts_the_wait() {
        let mut e = Elector::new("b#2".into(), timings());
        let t0 = Instant::now();
        assert_eq!(e.decide(t0, Some(&held("a#1", 7))), Action::Wait);
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(e.decide(t1, Some(&held("a#1", 8))), Action::Wait);
        assert_eq!(
            e.decide(t1 + Duration::from_secs(14), Some(&held("a#1", 8))),
            Action::Wait
        );
        assert_eq!(
            e.decide(t1 + Duration::from_secs(15), Some(&held("a#1", 8))),
            Action::Acquire
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_record_is_taken_at_once() {
        let mut e = Elector::new("b#2".into(), timings());
        let released = Observed {
            holder: None,
            version: "9".into(),
        };
        assert_eq!(e.decide(Instant::now(), Some(&released)), Action::Acquire);
        let empty = Observed {
            holder: Some(String::new()),
            version: "10".into(),
        };
        assert_eq!(e.decide(Instant::now(), Some(&empty)), Action::Acquire);
    }

    #[tokio::test(start_paused = true)]
    async fn losing_a_write_or_seeing_another_holder_ends_leadership_at_once() {
        let mut e = Elector::new("a#1".into(), timings());
        let t0 = Instant::now();
        e.won(t0, held("a#1", 1));
        e.lost();
        assert!(!e.is_leader(t0));
        e.won(t0, held("a#1", 2));
        assert_eq!(
            e.decide(t0 + Duration::from_secs(1), Some(&held("c#3", 3))),
            Action::Wait
        );
        assert!(!e.is_leader(t0 + Duration::from_secs(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_round_lets_leadership_run_out_on_its_deadline() {
        let mut e = Elector::new("a#1".into(), timings());
        let t0 = Instant::now();
        e.won(t0, held("a#1", 1));
        e.unanswered();
        assert!(e.is_leader(t0 + Duration::from_secs(9)));
        assert!(!e.is_leader(t0 + Duration::from_secs(10)));
    }

    #[tokio::test(start_paused = true)]
    async fn two_electors_never_lead_at_once() {
        // Two nodes sharing one record store, rounds interleaved every
        // retry period, one of them stalling for a while: at no instant
        // do both consider themselves leaders.
        let t = timings();
        let mut a = Elector::new("a#1".into(), t);
        let mut b = Elector::new("b#2".into(), t);
        let mut record: Option<Observed> = None;
        let mut version = 0u32;
        let start = Instant::now();
        for step in 0..200u32 {
            let now = start + Duration::from_millis(500) * step;
            // `a` stalls (no rounds) between steps 40 and 100.
            let nodes: Vec<&mut Elector> = if (40..100).contains(&step) {
                vec![&mut b]
            } else {
                vec![&mut a, &mut b]
            };
            for e in nodes {
                if step % 4 != 0 {
                    continue;
                }
                let action = e.decide(now, record.as_ref());
                match action {
                    Action::Wait => {}
                    Action::Create | Action::Renew | Action::Acquire => {
                        version += 1;
                        let written = held(e.identity(), version);
                        record = Some(written.clone());
                        e.won(now, written);
                    }
                }
            }
            assert!(
                !(a.is_leader(now) && b.is_leader(now)),
                "two leaders at step {step}"
            );
        }
        assert!(
            b.is_leader(start + Duration::from_millis(500) * 199)
                || a.is_leader(start + Duration::from_millis(500) * 199)
        );
    }

    #[test]
    fn display_strips_the_token() {
        assert_eq!(display_holder("node-a#0a1b2c3d4e5f"), "node-a");
        assert_eq!(display_holder("node-a"), "node-a");
    }
}
