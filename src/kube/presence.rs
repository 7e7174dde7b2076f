//! Whether the ConfigMap of `--configmap` exists, as a pure state machine
//! over what its watch delivers. The rule it serves: a ConfigMap that is
//! missing or deleted never takes the running config away (bad input
//! never loses the running config), but it is said loudly, once per
//! change: a WARNING and an Event when it is missing at start or deleted,
//! an INFO line when it appears or comes back.

use crate::status::kube::ConfigMapState;

/// What a step asks the source to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announce {
    /// Missing at start (WARNING, Event `ConfigMapMissing`).
    Missing,
    /// Deleted after it was found (WARNING, Event `ConfigMapDeleted`).
    Deleted,
    /// Found after it was missing or deleted (INFO).
    Found {
        /// It existed before (recreated) rather than never (created).
        again: bool,
    },
}

/// The next state after the watch saw the ConfigMap `present` or not, and
/// what to say about it (nothing when nothing changed: a relist that
/// still finds no ConfigMap says nothing again).
pub fn step(state: ConfigMapState, present: bool) -> (ConfigMapState, Option<Announce>) {
    use ConfigMapState::{Deleted, Found, Missing, Unknown};
    match (state, present) {
        (Unknown, true) | (Found, true) => (Found, None),
        (Unknown, false) | (Missing, false) => {
            (Missing, (state == Unknown).then_some(Announce::Missing))
        }
        (Found, false) => (Deleted, Some(Announce::Deleted)),
        (Deleted, false) => (Deleted, None),
        (Missing, true) => (Found, Some(Announce::Found { again: false })),
        (Deleted, true) => (Found, Some(Announce::Found { again: true })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConfigMapState::{Deleted, Found, Missing, Unknown};

    #[test]
    fn every_state_and_observation() {
        let cases = [
            (Unknown, true, Found, None),
            (Unknown, false, Missing, Some(Announce::Missing)),
            (Found, true, Found, None),
            (Found, false, Deleted, Some(Announce::Deleted)),
            (Missing, false, Missing, None),
            (Missing, true, Found, Some(Announce::Found { again: false })),
            (Deleted, false, Deleted, None),
            (Deleted, true, Found, Some(Announce::Found { again: true })),
        ];
        for (from, present, to, said) in cases {
            assert_eq!(step(from, present), (to, said), "{from:?} seeing {present}");
        }
    }

    #[test]
    fn a_flapping_relist_says_each_change_once() {
        // Missing at start, relisted twice, created, deleted, relisted,
        // recreated.
        let seen = [false, false, false, true, true, false, false, true];
        let mut state = Unknown;
        let mut said = Vec::new();
        for present in seen {
            let (next, announce) = step(state, present);
            state = next;
            said.extend(announce);
        }
        assert_eq!(
            said,
            vec![
                Announce::Missing,
                Announce::Found { again: false },
                Announce::Deleted,
                Announce::Found { again: true },
            ]
        );
        assert_eq!(state, Found);
    }
}
