//! Job locks: a lock of N permits is N leases in the store
//! (`lock/<scope>/<name>#<slot>`), so every node sharing the store sees
//! the same holders. A hold is this daemon's: it renews the lease every
//! third of its TTL while the run lives, and releases it when the job
//! asks, when the run ends, or when the daemon stops. A node that dies
//! leaves its leases to lapse after their TTL.

use crate::state::jobstate::lock_lease_name;
use crate::state::lease::LeaseRecord;
use crate::state::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long one lease operation may take before it counts as "not
/// acquired" (or is given up, for a renewal or a release).
pub const LEASE_OP_TIMEOUT: Duration = Duration::from_secs(10);
/// The shortest and longest TTL a job may ask for.
pub const TTL_BOUNDS: (f64, f64) = (5.0, 2_592_000.0);
/// The most permits one lock may have.
pub const MAX_PERMITS: u32 = 1024;

/// The TTL a hold gets: the asked one within [`TTL_BOUNDS`], else the
/// configured default (never below the lower bound).
pub fn effective_ttl(asked: Option<f64>, default: f64) -> f64 {
    match asked {
        Some(ttl) => ttl.clamp(TTL_BOUNDS.0, TTL_BOUNDS.1),
        None => default.max(TTL_BOUNDS.0),
    }
}

/// How long to wait between passes over the permits while waiting.
pub fn retry_pause(default_ttl: f64) -> Duration {
    Duration::from_secs_f64((default_ttl / 10.0).clamp(0.05, 1.0))
}

/// What an acquire asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct AcquireRequest {
    /// The scope (already authorized).
    pub scope: String,
    /// The lock's name.
    pub name: String,
    /// How many holders it admits.
    pub permits: u32,
    /// The hold's TTL.
    pub ttl: f64,
    /// How long to keep trying (None: one pass).
    pub wait: Option<Duration>,
}

/// The answer to an acquire.
#[derive(Debug, Clone, PartialEq)]
pub enum Acquired {
    /// Held: the hold's token, the permit, the lease's fence.
    Held {
        /// The hold token the job releases with.
        token: String,
        /// Which permit.
        slot: u32,
        /// The lease's fencing counter.
        fence: u64,
        /// The hold's TTL.
        ttl: f64,
    },
    /// Every permit is held elsewhere (after the wait, if any).
    NotAcquired,
    /// The run ended while it waited: the permit it got is given back.
    RunEnded,
}

struct Hold {
    run_token: String,
    lease: Arc<Mutex<LeaseRecord>>,
    renewer: tokio::task::AbortHandle,
}

/// The holds of this daemon's runs.
pub struct LockManager {
    store: Arc<Store>,
    /// The holder prefix: `<host>#<process token>`.
    holder_base: String,
    default_ttl: f64,
    holds: Mutex<HashMap<String, Hold>>,
}

impl LockManager {
    /// A manager over `store`; `default_ttl` is `lockTtlSeconds`.
    pub fn new(store: Arc<Store>, host: &str, default_ttl: f64) -> LockManager {
        LockManager {
            holder_base: format!("{host}#{}", crate::state::format::process_token()),
            store,
            default_ttl,
            holds: Mutex::new(HashMap::new()),
        }
    }

    /// The configured default TTL.
    pub fn default_ttl(&self) -> f64 {
        self.default_ttl.max(TTL_BOUNDS.0)
    }

    fn holds(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hold>> {
        self.holds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tries the permits in order until one is free, passing over them
    /// again until `wait` runs out. `alive` says whether the run still
    /// lives (a permit won after it ended is given back).
    pub async fn acquire(
        self: &Arc<Self>,
        run_token: &str,
        request: AcquireRequest,
        alive: impl Fn() -> bool,
    ) -> std::io::Result<Acquired> {
        let hold_token = crate::platform::random_hex(16)?;
        let holder = format!("{}#{hold_token}", self.holder_base);
        let deadline = request.wait.map(|w| tokio::time::Instant::now() + w);
        loop {
            for slot in 0..request.permits {
                let name = lock_lease_name(&request.scope, &request.name, slot);
                let store = Arc::clone(&self.store);
                let (holder2, ttl) = (holder.clone(), request.ttl);
                let attempt =
                    tokio::task::spawn_blocking(move || store.lease_acquire(&name, &holder2, ttl));
                let lease = match tokio::time::timeout(LEASE_OP_TIMEOUT, attempt).await {
                    Ok(Ok(Ok(Some(lease)))) => lease,
                    Ok(Ok(Err(err))) => {
                        tracing::warn!(
                            target: "cronstable::jobapi",
                            "state job API: lock {} slot {slot}: {err}",
                            request.name
                        );
                        continue;
                    }
                    _ => continue,
                };
                if !alive() {
                    self.release_lease(lease).await;
                    return Ok(Acquired::RunEnded);
                }
                let fence = lease.fence;
                let lease = Arc::new(Mutex::new(lease));
                let renewer = self.start_renewer(Arc::clone(&lease), request.clone(), slot);
                self.holds().insert(
                    hold_token.clone(),
                    Hold {
                        run_token: run_token.to_owned(),
                        lease,
                        renewer,
                    },
                );
                return Ok(Acquired::Held {
                    token: hold_token,
                    slot,
                    fence,
                    ttl: request.ttl,
                });
            }
            match deadline {
                Some(deadline) if tokio::time::Instant::now() < deadline => {
                    let pause = retry_pause(self.default_ttl());
                    tokio::time::sleep_until((tokio::time::Instant::now() + pause).min(deadline))
                        .await;
                }
                _ => return Ok(Acquired::NotAcquired),
            }
        }
    }

    fn start_renewer(
        self: &Arc<Self>,
        lease: Arc<Mutex<LeaseRecord>>,
        request: AcquireRequest,
        slot: u32,
    ) -> tokio::task::AbortHandle {
        let store = Arc::clone(&self.store);
        let every = Duration::from_secs_f64((request.ttl / 3.0).max(1.0));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let current = lease.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let store = Arc::clone(&store);
                let ttl = request.ttl;
                let renewed = tokio::time::timeout(
                    LEASE_OP_TIMEOUT,
                    tokio::task::spawn_blocking(move || store.lease_renew(&current, ttl)),
                )
                .await;
                match renewed {
                    Ok(Ok(Ok(Some(fresh)))) => {
                        *lease.lock().unwrap_or_else(|e| e.into_inner()) = fresh;
                    }
                    Ok(Ok(Ok(None))) => {
                        tracing::warn!(
                            target: "cronstable::jobapi",
                            "job lock {} ({} slot {slot}) was taken over after its lease lapsed; \
                             the job still believes it holds it (at-least-once)",
                            request.name,
                            request.scope
                        );
                        return;
                    }
                    // A store that does not answer: try at the next period.
                    _ => {}
                }
            }
        })
        .abort_handle()
    }

    async fn release_lease(&self, lease: LeaseRecord) {
        let store = Arc::clone(&self.store);
        let _ = tokio::time::timeout(
            LEASE_OP_TIMEOUT,
            tokio::task::spawn_blocking(move || store.lease_release(&lease)),
        )
        .await;
    }

    /// Releases hold `hold_token` of the run `run_token`; false when it
    /// is not that run's (or not known).
    pub async fn release(&self, run_token: &str, hold_token: &str) -> bool {
        let hold = {
            let mut holds = self.holds();
            match holds.get(hold_token) {
                Some(h) if h.run_token == run_token => holds.remove(hold_token),
                _ => None,
            }
        };
        let Some(hold) = hold else {
            return false;
        };
        self.drop_hold(hold).await;
        true
    }

    async fn drop_hold(&self, hold: Hold) {
        hold.renewer.abort();
        let lease = hold.lease.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.release_lease(lease).await;
    }

    /// Releases every hold of the run `run_token` (it ended).
    pub async fn release_all(&self, run_token: &str) {
        let ended: Vec<Hold> = {
            let mut holds = self.holds();
            let tokens: Vec<String> = holds
                .iter()
                .filter(|(_, h)| h.run_token == run_token)
                .map(|(t, _)| t.clone())
                .collect();
            tokens.iter().filter_map(|t| holds.remove(t)).collect()
        };
        for hold in ended {
            self.drop_hold(hold).await;
        }
    }

    /// Releases every hold (the daemon stops).
    pub async fn release_everything(&self) {
        let all: Vec<Hold> = self.holds().drain().map(|(_, h)| h).collect();
        for hold in all {
            self.drop_hold(hold).await;
        }
    }

    /// How many holds are live.
    pub fn held(&self) -> usize {
        self.holds().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_clamped_and_default_to_the_configured_one() {
        assert_eq!(effective_ttl(None, 30.0), 30.0);
        assert_eq!(effective_ttl(None, 1.0), 5.0);
        assert_eq!(effective_ttl(Some(1.0), 30.0), 5.0);
        assert_eq!(effective_ttl(Some(60.0), 30.0), 60.0);
        assert_eq!(effective_ttl(Some(1e9), 30.0), 2_592_000.0);
    }

    #[test]
    fn lease_names_and_pauses() {
        assert_eq!(lock_lease_name("global", "db", 0), "lock/global/db#0");
        assert_eq!(retry_pause(30.0), Duration::from_secs(1));
        assert_eq!(retry_pause(5.0), Duration::from_millis(500));
        assert_eq!(retry_pause(0.1), Duration::from_millis(50));
    }
}
