//! A loaded config's sections other than jobs, put in force: the
//! `logging` section, the `web` section (published for the API thread),
//! the `cluster` section (published for the leadership supervisor), and
//! what the loads so far say for the metrics (the reload gauges and the
//! duration histogram's bounds, published for the scheduler, which owns
//! the counters). The daemon's first load and every source's reloads go
//! through [`LiveSections`], so a section takes effect the same way
//! whichever source loaded it; it lives beside the ports because both
//! sources (`source`, `kube`) sit above them.

use crate::config::mcp::McpSettings;
use crate::config::model::{ClusterConfig, NotifyConfig, WebConfig};
use crate::config::sections::{PoolTable, Sections};
use crate::config::web_buckets;
use std::sync::Arc;
use tokio::sync::watch;

/// What the loads so far say, as the metrics show it. [`LiveSections`]
/// is its one writer; the scheduler follows it into its counters.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOutcome {
    /// The latest load (or reload) succeeded.
    pub last_ok: bool,
    /// Unix time of the latest successful load.
    pub last_success: f64,
    /// The bounds of `cronstable_job_duration_seconds` the sections in
    /// force ask for (`web.metrics.durationBuckets`; None: the defaults).
    pub buckets: Option<Vec<f64>>,
}

/// The sections in force, and where they are published.
pub struct LiveSections {
    web: watch::Sender<Option<WebConfig>>,
    mcp: watch::Sender<Option<McpSettings>>,
    cluster: watch::Sender<Option<ClusterConfig>>,
    pools: watch::Sender<Arc<PoolTable>>,
    notify: watch::Sender<Option<NotifyConfig>>,
    loads: watch::Sender<LoadOutcome>,
}

impl LiveSections {
    /// Puts the first load's sections in force; `loaded_at` (a Unix time)
    /// is its reload gauge's timestamp.
    pub fn start(sections: &Sections, loaded_at: f64) -> LiveSections {
        let live = LiveSections {
            web: watch::channel(None).0,
            mcp: watch::channel(None).0,
            cluster: watch::channel(None).0,
            pools: watch::channel(Arc::new(PoolTable::default())).0,
            notify: watch::channel(None).0,
            loads: watch::channel(LoadOutcome {
                last_ok: true,
                last_success: loaded_at,
                buckets: None,
            })
            .0,
        };
        live.apply_at(sections, loaded_at);
        live
    }

    /// The `web` section in force (None: no web section); changes on
    /// every reload that changes it.
    pub fn web(&self) -> watch::Receiver<Option<WebConfig>> {
        self.web.subscribe()
    }

    /// The MCP server's settings in force (None: no `mcp` section, or
    /// one that does not enable it); changes on every reload that
    /// changes them.
    pub fn mcp(&self) -> watch::Receiver<Option<McpSettings>> {
        self.mcp.subscribe()
    }

    /// The `cluster` section in force (None: no cluster section); changes
    /// on every reload that changes it.
    pub fn cluster(&self) -> watch::Receiver<Option<ClusterConfig>> {
        self.cluster.subscribe()
    }

    /// The `pools` section in force (empty without one); changes on every
    /// reload that changes it, before the reload's jobs reach the
    /// scheduler.
    pub fn pools(&self) -> watch::Receiver<Arc<PoolTable>> {
        self.pools.subscribe()
    }

    /// The `notify` section in force (None: no notifications); a reload
    /// takes effect for the next event.
    pub fn notify(&self) -> watch::Receiver<Option<NotifyConfig>> {
        self.notify.subscribe()
    }

    /// What the loads say (see [`LoadOutcome`]); changes on every load.
    pub fn loads(&self) -> watch::Receiver<LoadOutcome> {
        self.loads.subscribe()
    }

    /// A reload that loaded: its sections take over now.
    pub fn apply(&self, sections: &Sections) {
        let now = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
        self.apply_at(sections, now);
    }

    /// A reload that failed: the gauge says so; the sections in force stay.
    pub fn failed(&self) {
        self.loads.send_modify(|loads| loads.last_ok = false);
    }

    fn apply_at(&self, sections: &Sections, at: f64) {
        crate::logging::apply_section(sections.logging.as_ref().map(|l| &l.value));
        let web = sections.web.as_ref().map(|w| w.value.clone());
        let buckets = web_buckets(web.as_ref());
        self.loads.send_modify(|loads| {
            loads.last_ok = true;
            loads.last_success = at;
            loads.buckets = buckets;
        });
        // Only a change wakes the followers: an unchanged section keeps
        // the listeners (and the leadership backend) as they are.
        publish(&self.web, web);
        publish(
            &self.mcp,
            McpSettings::of(sections.mcp.as_ref().map(|m| &m.value)),
        );
        publish(
            &self.cluster,
            sections.cluster.as_ref().map(|c| c.value.clone()),
        );
        let pools = sections.pool_table();
        self.pools.send_if_modified(|current| {
            let changed = **current != pools;
            if changed {
                *current = Arc::new(pools);
            }
            changed
        });
        publish(
            &self.notify,
            sections.notify.as_ref().map(|n| n.value.clone()),
        );
    }
}

fn publish<T: PartialEq>(tx: &watch::Sender<T>, next: T) {
    tx.send_if_modified(|current| {
        let changed = *current != next;
        *current = next;
        changed
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, Source, SourceKind};

    fn sections(yaml: &str) -> Sections {
        config::load_sources(&[Source {
            name: "c.yaml".into(),
            text: yaml.into(),
            kind: SourceKind::Yaml,
            include_dir: None,
        }])
        .expect("the config loads")
        .sections
    }

    const WEB: &str =
        "web:\n  listen:\n    - http://127.0.0.1:1\n  metrics:\n    durationBuckets: [1, 5]\n";
    const CLUSTER: &str = "cluster:\n  backend: filesystem\n  filesystem:\n    path: /tmp/x\n";

    #[test]
    fn start_and_reloads_put_every_section_in_force() {
        let live = LiveSections::start(&sections(&format!("{WEB}{CLUSTER}")), 100.0);
        let mut web = live.web();
        let mut cluster = live.cluster();
        let mut loads = live.loads();
        assert!(web.borrow_and_update().is_some(), "web published at start");
        assert!(
            cluster.borrow_and_update().is_some(),
            "cluster published at start"
        );
        assert_eq!(
            *loads.borrow_and_update(),
            LoadOutcome {
                last_ok: true,
                last_success: 100.0,
                buckets: Some(vec![1.0, 5.0]),
            }
        );

        // The same sections again: nothing moves, the gauge does.
        live.apply(&sections(&format!("{WEB}{CLUSTER}")));
        assert!(!web.has_changed().expect("open"));
        assert!(!cluster.has_changed().expect("open"));
        let stamped = loads.borrow_and_update().clone();
        assert!(
            stamped.last_ok && stamped.last_success > 100.0,
            "{stamped:?}"
        );
        assert_eq!(stamped.buckets, Some(vec![1.0, 5.0]));

        // A failed reload: the gauge only.
        live.failed();
        let failed = loads.borrow_and_update().clone();
        assert!(!failed.last_ok);
        assert_eq!(failed.last_success, stamped.last_success);
        assert!(!web.has_changed().expect("open"));

        // Sections removed: both channels say so, the buckets go back to
        // the defaults and the gauge is good again.
        live.apply(&sections(""));
        assert!(web.has_changed().expect("open"));
        assert_eq!(*web.borrow_and_update(), None);
        assert!(cluster.has_changed().expect("open"));
        assert_eq!(*cluster.borrow_and_update(), None);
        let cleared = loads.borrow_and_update().clone();
        assert!(cleared.last_ok);
        assert_eq!(cleared.buckets, None);
    }
}
