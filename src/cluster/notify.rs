//! Daemon event notifications (`notify`): this node's leadership changes
//! (`leader_change`) and losses of quorum (`quorum_loss`), delivered
//! through the `notify` section's report block (and, in Kubernetes mode,
//! as Events on the scheduler's pod, by the reporter the mode wraps).
//!
//! The notifier only reads: it follows the leadership state the backend
//! publishes, a few times a second, and turns each change of "this node
//! leads" and "this node is quorate" into an event ([`Transitions`], pure).
//! Regaining quorum is not an event (it is logged, not paged), and under
//! `distribution: spread` nobody leads, so only quorum is watched there.
//! The `notify` section is read at each event, so a reload takes effect
//! for the next one. The DAG events (`dag_failure`, `approval_waiting`)
//! are accepted in an allow-list but never occur: DAGs are not part of
//! this version.

use crate::config::model::sections::NotifyEvent;
use crate::config::model::NotifyConfig;
use crate::report::{DaemonEvent, Reporter};
use crate::status::LeadershipWatch;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How often the published state is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// How long shutdown waits for deliveries still under way.
const DRAIN: Duration = Duration::from_secs(10);

/// What the notifier reads off the leadership state at one look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// This node's name.
    pub node: String,
    /// This node leads.
    pub leader: bool,
    /// This node is quorate (knows who leads, or is in the majority).
    pub quorate: bool,
    /// The leader as this node knows it.
    pub leader_name: Option<String>,
}

/// The last seen leadership facts; [`Transitions::observe`] turns a new
/// look into the events it implies. A node starts neither leading nor
/// quorate, so joining quorum or winning leadership at start is seen as
/// the change it is.
#[derive(Debug, Clone, Default)]
pub struct Transitions {
    leader: bool,
    quorate: bool,
}

impl Transitions {
    /// The events between the last look and `now`: a quorum loss first,
    /// then a leadership change, as the original orders them.
    pub fn observe(&mut self, now: &Observed) -> Vec<DaemonEvent> {
        let mut out = Vec::new();
        if now.quorate != self.quorate {
            self.quorate = now.quorate;
            if !now.quorate {
                out.push(DaemonEvent {
                    event: "quorum_loss",
                    success: false,
                    name: now.node.clone(),
                    subject: format!("node {} left quorum", now.node),
                    message: "No majority reachable; Leader jobs cannot run on this node until \
                              quorum is restored."
                        .to_owned(),
                    fields: vec![("quorate", serde_json::Value::Bool(false))],
                });
            }
        }
        if now.leader != self.leader {
            self.leader = now.leader;
            let verb = if now.leader { "acquired" } else { "lost" };
            out.push(DaemonEvent {
                event: "leader_change",
                success: false,
                name: now.node.clone(),
                subject: format!("node {} {verb} scheduled-job leadership", now.node),
                message: if now.leader {
                    "This node is now the scheduled-job leader."
                } else {
                    "This node is no longer the scheduled-job leader."
                }
                .to_owned(),
                fields: vec![
                    (
                        "role",
                        serde_json::Value::from(if now.leader { "leader" } else { "follower" }),
                    ),
                    ("is_leader", serde_json::Value::Bool(now.leader)),
                    (
                        "leader",
                        now.leader_name
                            .clone()
                            .map_or(serde_json::Value::Null, serde_json::Value::String),
                    ),
                ],
            });
        }
        out
    }

    /// Forgets what was seen (the cluster section went away).
    pub fn reset(&mut self) {
        *self = Transitions::default();
    }
}

/// The event's name as a `notify.events` allow-list names it.
fn allow_list_name(event: NotifyEvent) -> &'static str {
    match event {
        NotifyEvent::DagFailure => "dag_failure",
        NotifyEvent::ApprovalWaiting => "approval_waiting",
        NotifyEvent::LeaderChange => "leader_change",
        NotifyEvent::QuorumLoss => "quorum_loss",
    }
}

/// Whether `notify` lets `event` through: no list, or an empty one, lets
/// every event through.
pub fn allowed(notify: &NotifyConfig, event: &str) -> bool {
    match &notify.events {
        None => true,
        Some(list) if list.is_empty() => true,
        Some(list) => list.iter().any(|e| allow_list_name(*e) == event),
    }
}

/// The running notifier.
pub struct Notifier {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Notifier {
    /// Follows `leadership` and delivers its events through `reporter`
    /// to the `notify` section in force (`notify`). Without a `notify`
    /// section the reporter still hears of them with an empty block (the
    /// Kubernetes mode's reporter records them as Events).
    pub fn spawn(
        leadership: LeadershipWatch,
        notify: watch::Receiver<Option<NotifyConfig>>,
        reporter: Arc<dyn Reporter>,
    ) -> Notifier {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut seen = Transitions::default();
            let mut deliveries = JoinSet::new();
            let mut ticker = tokio::time::interval(LOOK_EVERY);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let last = tokio::select! {
                    _ = ticker.tick() => false,
                    _ = stopped.changed() => true,
                };
                let now = std::time::Instant::now();
                let observed = leadership.with(|state| {
                    state.map(|s| Observed {
                        node: s.node_name.clone(),
                        leader: s.is_leader(now),
                        quorate: s.is_quorate(now),
                        leader_name: s.leader(now),
                    })
                });
                match observed {
                    Some(observed) => {
                        for event in seen.observe(&observed) {
                            let config = notify.borrow().clone();
                            if config.as_ref().is_some_and(|c| !allowed(c, event.event)) {
                                continue;
                            }
                            let report = config.and_then(|c| c.report).unwrap_or_default();
                            deliveries.spawn(reporter.report_event(&report, event));
                        }
                    }
                    None => seen.reset(),
                }
                while deliveries.try_join_next().is_some() {}
                if last {
                    break;
                }
            }
            if !deliveries.is_empty() {
                let drained = tokio::time::timeout(DRAIN, async {
                    while deliveries.join_next().await.is_some() {}
                })
                .await;
                if drained.is_err() {
                    tracing::warn!(
                        target: "cronstable::cluster",
                        "{} notification(s) still undelivered after {}s; exiting anyway",
                        deliveries.len(),
                        DRAIN.as_secs()
                    );
                }
            }
        });
        Notifier { stop, task }
    }

    /// Takes a last look (the step-down at shutdown is a leadership
    /// change too) and waits, bounded, for deliveries under way.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(DRAIN + Duration::from_secs(1), self.task).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(leader: bool, quorate: bool) -> Observed {
        Observed {
            node: "a".into(),
            leader,
            quorate,
            leader_name: leader.then(|| "a".to_owned()).or(Some("b".to_owned())),
        }
    }

    fn names(events: &[DaemonEvent]) -> Vec<(&'static str, String)> {
        events
            .iter()
            .map(|e| (e.event, e.subject.clone()))
            .collect()
    }

    #[test]
    fn every_change_of_leadership_and_every_loss_of_quorum_is_one_event() {
        let mut t = Transitions::default();
        assert!(t.observe(&seen(false, false)).is_empty(), "the start state");
        assert!(
            t.observe(&seen(false, true)).is_empty(),
            "joining is not paged"
        );
        assert_eq!(
            names(&t.observe(&seen(true, true))),
            [(
                "leader_change",
                "node a acquired scheduled-job leadership".to_owned()
            )]
        );
        assert!(
            t.observe(&seen(true, true)).is_empty(),
            "no change, no event"
        );
        // Losing the store loses both, quorum first.
        let both = t.observe(&seen(false, false));
        assert_eq!(
            names(&both),
            [
                ("quorum_loss", "node a left quorum".to_owned()),
                (
                    "leader_change",
                    "node a lost scheduled-job leadership".to_owned()
                )
            ]
        );
        assert!(both.iter().all(|e| !e.success));
        assert_eq!(
            both[1].message,
            "This node is no longer the scheduled-job leader."
        );
        assert_eq!(
            both[0].fields,
            [("quorate", serde_json::Value::Bool(false))]
        );
        assert_eq!(
            both[1].fields,
            [
                ("role", serde_json::json!("follower")),
                ("is_leader", serde_json::json!(false)),
                ("leader", serde_json::json!("b")),
            ]
        );
        // Leading from the start (a single node wins its first round).
        let mut t = Transitions::default();
        let first = t.observe(&seen(true, true));
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].fields[0], ("role", serde_json::json!("leader")));
        t.reset();
        assert_eq!(t.observe(&seen(true, true)).len(), 1, "reset forgets");
    }

    #[test]
    fn the_allow_list_filters_and_an_empty_one_lets_everything_through() {
        let mut notify = NotifyConfig::default();
        assert!(allowed(&notify, "leader_change"));
        notify.events = Some(vec![]);
        assert!(allowed(&notify, "quorum_loss"));
        notify.events = Some(vec![NotifyEvent::QuorumLoss]);
        assert!(allowed(&notify, "quorum_loss"));
        assert!(!allowed(&notify, "leader_change"));
        notify.events = Some(vec![NotifyEvent::DagFailure, NotifyEvent::LeaderChange]);
        assert!(allowed(&notify, "leader_change"));
    }
}
