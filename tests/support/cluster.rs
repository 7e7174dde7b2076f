//! Members of a cluster under test (daemons with a web listener and a
//! `cluster:` section) and what the cluster tests ask of them together:
//! who all live members agree leads, and every member's log for a failure
//! message.

use super::daemon::Daemon;
use super::http::get;
use serde_json::Value;

/// One member: its node name, its web port and its daemon (None once the
/// test killed it).
pub struct Member {
    /// The node name.
    pub name: &'static str,
    /// The web listener's port.
    pub web: u16,
    /// The running daemon.
    pub daemon: Option<Daemon>,
}

impl Member {
    /// Still running (not killed by the test).
    pub fn alive(&self) -> bool {
        self.daemon.is_some()
    }

    /// Its `GET /cluster`.
    pub fn cluster(&self) -> Value {
        get(self.web, "/cluster").json()
    }

    /// Its log so far (empty once killed).
    pub fn log(&self) -> String {
        self.daemon.as_ref().map(Daemon::log).unwrap_or_default()
    }
}

/// Every member's log, headed by its name.
pub fn logs(members: &[Member]) -> String {
    members
        .iter()
        .map(|n| format!("--- {} ---\n{}", n.name, n.log()))
        .collect()
}

/// The one live member all live members agree leads (each quorate, exactly
/// one saying is_leader), if they agree.
pub fn agreed_leader(members: &[Member]) -> Option<usize> {
    let views: Vec<(usize, Value)> = members
        .iter()
        .enumerate()
        .filter(|(_, n)| n.alive())
        .map(|(i, n)| (i, n.cluster()))
        .collect();
    let leaders: Vec<usize> = views
        .iter()
        .filter(|(_, v)| v["is_leader"] == true)
        .map(|(i, _)| *i)
        .collect();
    let [leader] = leaders[..] else {
        return None;
    };
    let name = members[leader].name;
    views
        .iter()
        .all(|(_, v)| v["quorate"] == true && v["leader"] == name)
        .then_some(leader)
}
