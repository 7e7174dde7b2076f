//! The watches: one on the selected CronJobSets, one on the ConfigMap.
//! A task follows both with kube-runtime's watcher (list, then watch from
//! the list's resourceVersion, relisting after a 410 or a broken stream,
//! with capped exponential backoff) and forwards every change to the
//! Kubernetes source as a [`Change`]. It also keeps the connection state:
//! one warning when the API stops answering, one line when it is back,
//! and the numbers behind `/kube` and the `cronstable_kube_*` metrics.

use super::options::{KubeOptions, SetScope};
use crate::status::kube::WatchHealth;
use futures_util::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, watcher, Event};
use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Instant;
use tokio::sync::mpsc;

/// One change seen on the API server.
#[derive(Debug)]
pub enum Change {
    /// Every selected set, after a (re)list: sets not in it are gone.
    SetsListed(Vec<DynamicObject>),
    /// A set was added or changed (status writes included).
    SetApplied(Box<DynamicObject>),
    /// A set was deleted (or stopped matching the selector).
    SetDeleted {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The ConfigMap's keys and values; `None` when it does not exist.
    ConfigMap(Option<BTreeMap<String, String>>),
}

/// A change and the moment it arrived (for the apply-latency histogram).
#[derive(Debug)]
pub struct Arrived {
    /// What changed.
    pub change: Change,
    /// When the watch delivered it.
    pub at: Instant,
}

type Changes<K> = Pin<Box<dyn Stream<Item = Result<Event<K>, watcher::Error>> + Send>>;

/// Starts the watch task; the receiver yields changes in arrival order.
pub fn spawn(
    client: kube::Client,
    namespace: &str,
    options: &KubeOptions,
    health: tokio::sync::watch::Sender<WatchHealth>,
) -> mpsc::UnboundedReceiver<Arrived> {
    let (tx, rx) = mpsc::unbounded_channel();
    let resource = ApiResource::erase::<super::CronJobSet>(&());
    let sets: Option<Changes<DynamicObject>> = match options.scope {
        SetScope::None => None,
        scope => {
            let api: Api<DynamicObject> = if scope == SetScope::All {
                Api::all_with(client.clone(), &resource)
            } else {
                Api::namespaced_with(client.clone(), namespace, &resource)
            };
            let mut config = watcher::Config::default();
            if let Some(selector) = &options.selector {
                config = config.labels(selector);
            }
            Some(relisting_backoff(watcher(api, config).boxed()).boxed())
        }
    };
    let configmap: Option<Changes<ConfigMap>> = options.configmap.as_ref().map(|name| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        relisting_backoff(watcher(api, config).boxed()).boxed()
    });
    tokio::spawn(follow(sets, configmap, tx, health));
    rx
}

/// Whether a watch error is "410 Gone": the history the watch resumed
/// from was compacted (routine after an API server restart). The watcher
/// relists on its next poll; nothing is wrong with the server.
fn is_expired(err: &watcher::Error) -> bool {
    matches!(err, watcher::Error::WatchError(status) if status.code == 410)
}

/// The watcher's own backoff (kube's default: exponential from 0.8 s to
/// 30 s with jitter, reset after two quiet minutes) between failed
/// attempts, except after a 410: that one relists at once. With the
/// default backoff alone, the first rewatch after an API server restart
/// answers 410 and the relist then waited out the backoff the outage had
/// built up, up to 30 s after the server was back.
fn relisting_backoff<S, T>(stream: S) -> impl Stream<Item = Result<T, watcher::Error>> + Send
where
    S: Stream<Item = Result<T, watcher::Error>> + Send + Unpin,
    T: Send,
{
    let backoff = watcher::DefaultBackoff::default();
    futures_util::stream::unfold(
        (stream, backoff, None::<std::time::Duration>),
        |(mut stream, mut backoff, wait)| async move {
            if let Some(wait) = wait {
                tokio::time::sleep(wait).await;
            }
            let item = stream.next().await?;
            let wait = match &item {
                Ok(_) => {
                    backoff.reset();
                    None
                }
                Err(err) if is_expired(err) => None,
                Err(_) => backoff.next(),
            };
            Some((item, (stream, backoff, wait)))
        },
    )
}

/// What the task remembers between events.
struct Follower {
    tx: mpsc::UnboundedSender<Arrived>,
    health: Health,
    /// Sets of a list in progress.
    listing: Option<Vec<DynamicObject>>,
    /// The ConfigMap as the list in progress found it.
    listing_configmap: Option<Option<ConfigMap>>,
    sets_listed: bool,
    configmap_listed: bool,
}

async fn follow(
    sets: Option<Changes<DynamicObject>>,
    configmap: Option<Changes<ConfigMap>>,
    tx: mpsc::UnboundedSender<Arrived>,
    health: tokio::sync::watch::Sender<WatchHealth>,
) {
    let mut follower = Follower {
        tx,
        health: Health::new(health),
        listing: None,
        listing_configmap: None,
        sets_listed: sets.is_none(),
        configmap_listed: configmap.is_none(),
    };
    let mut sets = sets.unwrap_or_else(|| futures_util::stream::pending().boxed());
    let mut configmap = configmap.unwrap_or_else(|| futures_util::stream::pending().boxed());
    follower
        .health
        .note_synced(follower.sets_listed && follower.configmap_listed);
    loop {
        let open = tokio::select! {
            Some(event) = sets.next() => follower.on_set_event(event),
            Some(event) = configmap.next() => follower.on_configmap_event(event),
            else => false,
        };
        if !open {
            // The source is gone (the daemon is stopping).
            return;
        }
    }
}

impl Follower {
    fn send(&self, change: Change) -> bool {
        self.tx
            .send(Arrived {
                change,
                at: Instant::now(),
            })
            .is_ok()
    }

    fn on_set_event(&mut self, event: Result<Event<DynamicObject>, watcher::Error>) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                self.health.failed(Watched::Sets, "CronJobSets", &err);
                return true;
            }
        };
        self.health.answered(Watched::Sets);
        match event {
            Event::Init => {
                self.listing = Some(Vec::new());
                true
            }
            Event::InitApply(object) => {
                self.listing.get_or_insert_with(Vec::new).push(object);
                true
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                self.sets_listed = true;
                let open = self.send(Change::SetsListed(listed));
                self.health
                    .note_synced(self.sets_listed && self.configmap_listed);
                open
            }
            Event::Apply(object) => {
                self.health.note_event();
                self.send(Change::SetApplied(Box::new(object)))
            }
            Event::Delete(object) => {
                self.health.note_event();
                self.send(Change::SetDeleted {
                    namespace: object.metadata.namespace.unwrap_or_default(),
                    name: object.metadata.name.unwrap_or_default(),
                })
            }
        }
    }

    fn on_configmap_event(&mut self, event: Result<Event<ConfigMap>, watcher::Error>) -> bool {
        let event = match event {
            Ok(event) => event,
            Err(err) => {
                self.health.failed(Watched::ConfigMap, "ConfigMap", &err);
                return true;
            }
        };
        self.health.answered(Watched::ConfigMap);
        match event {
            Event::Init => {
                self.listing_configmap = Some(None);
                true
            }
            Event::InitApply(object) => {
                self.listing_configmap = Some(Some(object));
                true
            }
            Event::InitDone => {
                let found = self.listing_configmap.take().flatten();
                self.configmap_listed = true;
                let open = self.send(Change::ConfigMap(found.map(data_of)));
                self.health
                    .note_synced(self.sets_listed && self.configmap_listed);
                open
            }
            Event::Apply(object) => {
                self.health.note_event();
                self.send(Change::ConfigMap(Some(data_of(object))))
            }
            Event::Delete(_) => {
                self.health.note_event();
                self.send(Change::ConfigMap(None))
            }
        }
    }
}

/// A ConfigMap's text keys (binary keys cannot hold config).
fn data_of(configmap: ConfigMap) -> BTreeMap<String, String> {
    configmap.data.unwrap_or_default()
}

/// Which of the two watches an event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// The CronJobSets.
    Sets,
    /// The ConfigMap.
    ConfigMap,
}

/// Which watches failed and have not answered since: the API counts as
/// reachable again only once every one of them has answered (after an API
/// server restart one watch can be back seconds before the other).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Failing {
    sets: bool,
    configmap: bool,
}

impl Failing {
    fn slot(&mut self, stream: Watched) -> &mut bool {
        match stream {
            Watched::Sets => &mut self.sets,
            Watched::ConfigMap => &mut self.configmap,
        }
    }

    /// `stream` failed.
    fn failed(&mut self, stream: Watched) {
        *self.slot(stream) = true;
    }

    /// `stream` answered; true when no watch is failing any more.
    fn answered(&mut self, stream: Watched) -> bool {
        *self.slot(stream) = false;
        !self.sets && !self.configmap
    }
}

/// Whether the API answers, logged once per change of heart; the watch
/// health it publishes is written here only.
struct Health {
    state: tokio::sync::watch::Sender<WatchHealth>,
    down_since: Option<Instant>,
    failing: Failing,
}

impl Health {
    fn new(state: tokio::sync::watch::Sender<WatchHealth>) -> Self {
        Health {
            state,
            down_since: None,
            failing: Failing::default(),
        }
    }

    fn failed(&mut self, stream: Watched, what: &str, err: &watcher::Error) {
        let message = format!("{what}: {err}");
        if let watcher::Error::WatchError(status) = err {
            if status.code == 410 {
                // The history behind the watch was compacted: the watcher
                // relists. Routine, not an outage.
                self.state.send_modify(|health| health.restarts += 1);
                tracing::debug!(target: "cronstable::kube", "{message}; relisting");
                return;
            }
        }
        self.failing.failed(stream);
        self.state.send_modify(|health| {
            health.connected = false;
            health.restarts += 1;
            health.last_error = Some(message.clone());
        });
        if self.down_since.is_none() {
            self.down_since = Some(Instant::now());
            tracing::warn!(
                target: "cronstable::kube",
                "Kubernetes API unreachable ({message}); keeping the running config and retrying \
                 with backoff"
            );
        }
    }

    fn answered(&mut self, stream: Watched) {
        if !self.failing.answered(stream) {
            // Another watch is still failing: not connected yet.
            return;
        }
        self.state.send_if_modified(|health| {
            let changed = !health.connected || health.last_error.is_some();
            health.connected = true;
            health.last_error = None;
            changed
        });
        if let Some(since) = self.down_since.take() {
            tracing::info!(
                target: "cronstable::kube",
                "Kubernetes API reachable again after {:.1} s; resynchronising",
                since.elapsed().as_secs_f64()
            );
        }
    }

    fn note_event(&self) {
        let now = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
        self.state
            .send_modify(|health| health.last_sync = Some(now));
    }

    fn note_synced(&self, synced: bool) {
        if synced {
            self.note_event();
            self.state.send_modify(|health| health.synced = true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connected_again_only_once_every_failed_watch_has_answered() {
        let mut failing = Failing::default();
        assert!(failing.answered(Watched::Sets), "nothing failed: connected");
        // An API server restart: both watches fail.
        failing.failed(Watched::Sets);
        failing.failed(Watched::ConfigMap);
        // The sets' watch is back first: still not connected.
        assert!(!failing.answered(Watched::Sets));
        assert!(
            !failing.answered(Watched::Sets),
            "answering twice changes nothing"
        );
        // Then the ConfigMap's.
        assert!(failing.answered(Watched::ConfigMap));
        // One watch failing alone holds the other's answers back too.
        failing.failed(Watched::ConfigMap);
        assert!(!failing.answered(Watched::Sets));
        assert!(failing.answered(Watched::ConfigMap));
    }

    #[test]
    fn health_publishes_connected_when_the_last_failing_watch_answers() {
        let (tx, rx) = tokio::sync::watch::channel(WatchHealth::default());
        let mut health = Health::new(tx);
        let down = watcher::Error::WatchError(Box::new(kube::core::Status {
            code: 503,
            message: "the server is restarting".into(),
            ..Default::default()
        }));
        health.answered(Watched::Sets);
        health.answered(Watched::ConfigMap);
        assert!(rx.borrow().connected);
        health.failed(Watched::Sets, "CronJobSets", &down);
        health.failed(Watched::ConfigMap, "ConfigMap", &down);
        assert!(!rx.borrow().connected);
        assert_eq!(rx.borrow().restarts, 2);
        health.answered(Watched::ConfigMap);
        let half = rx.borrow().clone();
        assert!(!half.connected, "one watch back is not connected");
        assert!(
            half.last_error.is_some(),
            "the error stays until both are back"
        );
        health.answered(Watched::Sets);
        let back = rx.borrow().clone();
        assert!(back.connected && back.last_error.is_none(), "{back:?}");
    }

    fn status(code: u16) -> watcher::Error {
        watcher::Error::WatchError(Box::new(kube::core::Status {
            code,
            message: format!("code {code}"),
            ..Default::default()
        }))
    }

    /// Feeds `items` through the backoff and says, for each, how long
    /// (paused clock) it took to come out after the previous one.
    async fn gaps(items: Vec<Result<u32, watcher::Error>>) -> Vec<(bool, std::time::Duration)> {
        let stream = relisting_backoff(futures_util::stream::iter(items));
        futures_util::pin_mut!(stream);
        let mut out = Vec::new();
        let mut last = tokio::time::Instant::now();
        while let Some(item) = stream.next().await {
            let now = tokio::time::Instant::now();
            out.push((item.is_ok(), now - last));
            last = now;
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_410_relists_at_once_after_an_outage_built_a_backoff() {
        use std::time::Duration;
        // An outage: five failed attempts, each waited out longer; then
        // the server is back and the rewatch answers 410; then the relist.
        let mut items: Vec<Result<u32, watcher::Error>> =
            (0..5).map(|_| Err(status(503))).collect();
        items.push(Err(status(410)));
        items.push(Ok(1));
        let got = gaps(items).await;
        let waits: Vec<Duration> = got.iter().map(|(_, gap)| *gap).collect();
        // The backoff grew during the outage (the fifth failure came
        // seconds after the fourth)...
        assert!(waits[4] >= Duration::from_secs(4), "{waits:?}");
        assert!(waits[4] > waits[1], "{waits:?}");
        // ...and the relist after the 410 came at once.
        assert_eq!(waits[6], Duration::ZERO, "{waits:?}");
        assert!(got[6].0);
    }

    #[tokio::test(start_paused = true)]
    async fn other_failures_still_back_off() {
        let got = gaps(vec![
            Err(status(503)),
            Ok(1),
            Err(status(403)),
            Err(status(403)),
        ])
        .await;
        assert_eq!(
            got[0].1,
            std::time::Duration::ZERO,
            "the first error is not delayed"
        );
        assert!(
            got[1].1 > std::time::Duration::ZERO,
            "a wait after an error: {got:?}"
        );
        assert!(got[3].1 > std::time::Duration::ZERO, "{got:?}");
    }
}
