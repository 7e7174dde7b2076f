//! The watches: one on the selected CronJobSets, one on the ConfigMap.
//! A task follows both with kube-runtime's watcher (list, then watch from
//! the list's resourceVersion, relisting after a 410 or a broken stream,
//! with capped exponential backoff) and forwards every change to the
//! Kubernetes source as a [`Change`]. It also keeps the connection state:
//! one warning when the API stops answering, one line when it is back,
//! and the numbers behind `/kube` and the `cronstable_kube_*` metrics.

use super::health::{Failure, HealthMachine, Notice, Refusal};
use super::options::{KubeOptions, SetScope};
use crate::status::kube::{WatchHealth, Watched};
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
    let mut watched = Vec::new();
    if sets.is_some() {
        watched.push(Watched::Sets);
    }
    if configmap.is_some() {
        watched.push(Watched::ConfigMap);
    }
    let health = Health::new(
        health,
        Target {
            label: "CronJobSets",
            resource: "cronjobsets.cronstable.io".to_owned(),
            place: if options.scope == SetScope::All {
                "in all namespaces (cluster scope)".to_owned()
            } else {
                format!("in namespace {namespace}")
            },
        },
        Target {
            label: "ConfigMap",
            resource: format!(
                "configmaps ({})",
                options.configmap.as_deref().unwrap_or_default()
            ),
            place: format!("in namespace {namespace}"),
        },
        &watched,
    );
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
///
/// Only an answer of the API server resets the backoff: the watcher's
/// `Init` marker comes before its list request is even sent, so resetting
/// on it (as kube's own stream backoff does) kept a list that fails every
/// time (a 403) retrying every 0.8 s forever.
fn relisting_backoff<S, T>(stream: S) -> impl Stream<Item = Result<Event<T>, watcher::Error>> + Send
where
    S: Stream<Item = Result<Event<T>, watcher::Error>> + Send + Unpin,
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
                Ok(Event::Init) => None,
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
    health: Health,
) {
    let mut follower = Follower {
        tx,
        health,
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
                self.health.failed(Watched::Sets, &err);
                return true;
            }
        };
        if !matches!(event, Event::Init) {
            // `Init` comes before the list is asked for: no answer yet.
            self.health.answered(Watched::Sets);
        }
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
                self.health.failed(Watched::ConfigMap, &err);
                return true;
            }
        };
        if !matches!(event, Event::Init) {
            self.health.answered(Watched::ConfigMap);
        }
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

/// What a watch reads, for the lines that name it: the resource and where.
#[derive(Debug, Clone)]
struct Target {
    /// `CronJobSets`, `ConfigMap`: the prefix of its errors.
    label: &'static str,
    /// The resource as RBAC names it (`cronjobsets.cronstable.io`).
    resource: String,
    /// `in namespace team-a`, `in all namespaces`.
    place: String,
}

/// How a watch error reads: 410 a relist, 401/403 a refusal, the rest
/// an unreachable API.
fn classify(label: &str, err: &watcher::Error) -> Failure {
    let (verb, status) = match err {
        watcher::Error::InitialListFailed(kube::Error::Api(status)) => ("list", Some(&**status)),
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => ("watch", Some(&**status)),
        watcher::Error::WatchError(status) => ("watch", Some(&**status)),
        _ => ("watch", None),
    };
    match status {
        Some(status) if status.code == 410 => Failure::Expired {
            message: format!("{label}: {err}"),
        },
        Some(status) if status.code == 401 || status.code == 403 => Failure::Refused(Refusal {
            code: status.code,
            reason: if status.reason.is_empty() {
                if status.code == 401 {
                    "Unauthorized"
                } else {
                    "Forbidden"
                }
                .to_owned()
            } else {
                status.reason.clone()
            },
            verb,
            message: status.message.clone(),
        }),
        _ => Failure::Unreachable {
            message: format!("{label}: {err}"),
        },
    }
}

/// What a refusal means, in words an operator acts on.
fn refusal_hint(refusal: &Refusal) -> &'static str {
    if refusal.code == 401 {
        "the API server does not accept the daemon's credentials (an expired or revoked token?)"
    } else {
        "the Role (RBAC) of the daemon's service account lacks this right; see the RBAC section \
         of docs/kubernetes.md"
    }
}

/// Whether the API answers, logged once per change of heart; the watch
/// health it publishes is written here only (the rules are
/// [`HealthMachine`]'s).
struct Health {
    state: tokio::sync::watch::Sender<WatchHealth>,
    machine: HealthMachine,
    sets: Target,
    configmap: Target,
}

impl Health {
    fn new(
        state: tokio::sync::watch::Sender<WatchHealth>,
        sets: Target,
        configmap: Target,
        watched: &[Watched],
    ) -> Self {
        Health {
            state,
            machine: HealthMachine::new(watched),
            sets,
            configmap,
        }
    }

    fn target(&self, watch: Watched) -> &Target {
        match watch {
            Watched::Sets => &self.sets,
            Watched::ConfigMap => &self.configmap,
        }
    }

    fn failed(&mut self, watch: Watched, err: &watcher::Error) {
        let failure = classify(self.target(watch).label, err);
        let notices = self.machine.failed(watch, failure, Instant::now());
        self.publish(true);
        self.log(&notices);
    }

    fn answered(&mut self, watch: Watched) {
        let notices = self.machine.answered(watch, Instant::now());
        self.publish(false);
        self.log(&notices);
    }

    /// Publishes the machine's view; `restart` counts a failed attempt.
    fn publish(&self, restart: bool) {
        let connected = self.machine.connected();
        let last_error = self.machine.last_error();
        let watches = self.machine.statuses(|watch, refusal| {
            let target = self.target(watch);
            format!(
                "the Kubernetes API refuses to {} {} {} ({} {}): {}",
                refusal.verb,
                target.resource,
                target.place,
                refusal.code,
                refusal.reason,
                refusal_hint(refusal)
            )
        });
        self.state.send_if_modified(|health| {
            let changed = restart
                || health.connected != connected
                || health.last_error != last_error
                || health.watches != watches;
            if restart {
                health.restarts += 1;
            }
            health.connected = connected;
            health.last_error = last_error;
            health.watches = watches;
            changed
        });
    }

    fn log(&self, notices: &[Notice]) {
        for notice in notices {
            match notice {
                Notice::Relisting { message } => {
                    tracing::debug!(target: "cronstable::kube", "{message}; relisting");
                }
                Notice::Unreachable { message } => tracing::warn!(
                    target: "cronstable::kube",
                    "Kubernetes API unreachable ({message}); keeping the running config and retrying \
                     with backoff"
                ),
                Notice::ReachableAgain { after } => tracing::info!(
                    target: "cronstable::kube",
                    "Kubernetes API reachable again after {:.1} s; resynchronising",
                    after.as_secs_f64()
                ),
                Notice::Refused { watch, refusal } => {
                    let target = self.target(*watch);
                    tracing::warn!(
                        target: "cronstable::kube",
                        "Kubernetes API refused to {} {} {} ({} {}: {}): {}; keeping the running \
                         config and retrying with backoff",
                        refusal.verb,
                        target.resource,
                        target.place,
                        refusal.code,
                        refusal.reason,
                        refusal.message,
                        refusal_hint(refusal)
                    );
                }
                Notice::Allowed { watch } => {
                    let target = self.target(*watch);
                    tracing::info!(
                        target: "cronstable::kube",
                        "Kubernetes API allows reading {} {} again; resynchronising",
                        target.resource,
                        target.place
                    );
                }
            }
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

    fn health(tx: tokio::sync::watch::Sender<WatchHealth>) -> Health {
        let target = |label, resource: &str| Target {
            label,
            resource: resource.to_owned(),
            place: "in namespace team-a".to_owned(),
        };
        Health::new(
            tx,
            target("CronJobSets", "cronjobsets.cronstable.io"),
            target("ConfigMap", "configmaps (jobs)"),
            &[Watched::Sets, Watched::ConfigMap],
        )
    }

    fn api(code: u16, reason: &str, message: &str) -> Box<kube::core::Status> {
        Box::new(kube::core::Status {
            code,
            reason: reason.into(),
            message: message.into(),
            ..Default::default()
        })
    }

    #[test]
    fn health_publishes_connected_when_the_last_failing_watch_answers() {
        let (tx, rx) = tokio::sync::watch::channel(WatchHealth::default());
        let mut health = health(tx);
        let down = watcher::Error::WatchError(api(503, "", "the server is restarting"));
        health.answered(Watched::Sets);
        assert!(
            !rx.borrow().connected,
            "the ConfigMap's watch has not answered"
        );
        health.answered(Watched::ConfigMap);
        assert!(rx.borrow().connected);
        health.failed(Watched::Sets, &down);
        health.failed(Watched::ConfigMap, &down);
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

    #[test]
    fn a_forbidden_configmap_is_published_per_watch_and_named_for_readyz() {
        let (tx, rx) = tokio::sync::watch::channel(WatchHealth::default());
        let mut health = health(tx);
        let forbidden = watcher::Error::InitialListFailed(kube::Error::Api(api(
            403,
            "Forbidden",
            "configmaps is forbidden: User \"u\" cannot list resource \"configmaps\"",
        )));
        health.answered(Watched::Sets);
        health.failed(Watched::ConfigMap, &forbidden);
        // The sets' watch keeps answering (status writes come back on it).
        for _ in 0..5 {
            health.answered(Watched::Sets);
        }
        let now = rx.borrow().clone();
        assert!(!now.connected);
        let error = now.last_error.clone().expect("the ConfigMap's error stays");
        assert!(
            error.starts_with("ConfigMap: list refused (403 Forbidden): configmaps is forbidden"),
            "{error}"
        );
        let configmap = now
            .watches
            .iter()
            .find(|w| w.watch == Watched::ConfigMap)
            .expect("the ConfigMap's watch");
        assert_eq!(configmap.state, crate::status::kube::WatchState::Refused);
        let refusal = configmap.refusal.clone().expect("a refusal");
        assert!(
            refusal.starts_with(
                "the Kubernetes API refuses to list configmaps (jobs) in namespace team-a (403 \
                 Forbidden): the Role (RBAC)"
            ),
            "{refusal}"
        );
    }

    #[test]
    fn errors_are_classified_by_their_status_code() {
        let list = |code, reason| {
            watcher::Error::InitialListFailed(kube::Error::Api(api(code, reason, "no")))
        };
        assert!(matches!(
            classify("ConfigMap", &list(403, "Forbidden")),
            Failure::Refused(Refusal {
                code: 403,
                verb: "list",
                ..
            })
        ));
        let Failure::Refused(unauthorized) = classify(
            "ConfigMap",
            &watcher::Error::WatchStartFailed(kube::Error::Api(api(401, "", "Unauthorized"))),
        ) else {
            panic!("a 401 is a refusal");
        };
        assert_eq!(
            (unauthorized.verb, unauthorized.reason.as_str()),
            ("watch", "Unauthorized")
        );
        assert!(matches!(
            classify(
                "CronJobSets",
                &watcher::Error::WatchError(api(410, "Expired", "too old"))
            ),
            Failure::Expired { .. }
        ));
        let Failure::Unreachable { message } =
            classify("CronJobSets", &list(503, "ServiceUnavailable"))
        else {
            panic!("a 503 is unreachable");
        };
        assert!(message.starts_with("CronJobSets: "), "{message}");
        assert!(matches!(
            classify("CronJobSets", &watcher::Error::NoResourceVersion),
            Failure::Unreachable { .. }
        ));
    }

    fn status(code: u16) -> watcher::Error {
        watcher::Error::WatchError(Box::new(kube::core::Status {
            code,
            message: format!("code {code}"),
            ..Default::default()
        }))
    }

    type Item = Result<Event<u32>, watcher::Error>;

    /// Feeds `items` through the backoff and says, for each, how long
    /// (paused clock) it took to come out after the previous one.
    async fn gaps(items: Vec<Item>) -> Vec<(bool, std::time::Duration)> {
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

    /// A failed list as the watcher delivers it: its `Init` marker, then
    /// the error.
    fn failed_list(code: u16) -> [Item; 2] {
        [Ok(Event::Init), Err(status(code))]
    }

    #[tokio::test(start_paused = true)]
    async fn a_410_relists_at_once_after_an_outage_built_a_backoff() {
        use std::time::Duration;
        // An outage: five failed lists, each waited out longer; then the
        // server is back and the rewatch answers 410; then the relist.
        let mut items: Vec<Item> = (0..5).flat_map(|_| failed_list(503)).collect();
        items.push(Err(status(410)));
        items.extend([
            Ok(Event::Init),
            Ok(Event::InitApply(1)),
            Ok(Event::InitDone),
        ]);
        let got = gaps(items).await;
        let waits: Vec<Duration> = got.iter().map(|(_, gap)| *gap).collect();
        // The backoff grew during the outage (the fifth list came seconds
        // after the fourth failed)...
        assert!(waits[8] >= Duration::from_secs(4), "{waits:?}");
        assert!(waits[8] > waits[2], "{waits:?}");
        // ...and the relist after the 410 came at once.
        assert_eq!(waits[11], Duration::ZERO, "{waits:?}");
        assert!(got[11].0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_list_refused_every_time_backs_off_despite_the_init_markers() {
        // Six refused lists. Resetting on `Init` kept every wait at the
        // first step (0.8 to 1.6 s: under 8 s for the five waits); the
        // backoff must grow (0.8 + 1.6 + 3.2 + 6.4 + 12.8 s at least).
        let items: Vec<Item> = (0..6).flat_map(|_| failed_list(403)).collect();
        let got = gaps(items).await;
        let total: std::time::Duration = got.iter().map(|(_, gap)| *gap).sum();
        assert!(total >= std::time::Duration::from_secs(20), "{got:?}");
        // A real answer resets it: the next failure is retried soon.
        let mut items: Vec<Item> = (0..5).flat_map(|_| failed_list(503)).collect();
        items.extend([
            Ok(Event::Init),
            Ok(Event::InitDone),
            Err(status(503)),
            Ok(Event::Init),
        ]);
        let got = gaps(items).await;
        let after_answer = got.last().expect("the last item").1;
        assert!(after_answer < std::time::Duration::from_secs(2), "{got:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn other_failures_still_back_off() {
        let got = gaps(vec![
            Err(status(503)),
            Ok(Event::Apply(1)),
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
