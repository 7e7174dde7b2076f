//! A loaded config's sections other than jobs, put in force: the
//! `logging` section, the `web` section (published for the API thread),
//! the `cluster` section (published for the leadership supervisor), the
//! histogram buckets and the reload gauges. The daemon's first load and
//! every source's reloads go through [`LiveSections`], so a section
//! takes effect the same way whichever source loaded it; it lives beside
//! the ports because both sources (`source`, `kube`) sit above them.

use super::ports::{self, SharedCounters};
use crate::config::model::{ClusterConfig, WebConfig};
use crate::config::sections::Sections;
use crate::config::web_buckets;
use tokio::sync::watch;

/// The sections in force, and where they are published.
pub struct LiveSections {
    web: watch::Sender<Option<WebConfig>>,
    cluster: watch::Sender<Option<ClusterConfig>>,
    counters: SharedCounters,
}

impl LiveSections {
    /// Puts the first load's sections in force; `loaded_at` (a Unix time)
    /// is its reload gauge's timestamp.
    pub fn start(sections: &Sections, counters: SharedCounters, loaded_at: f64) -> LiveSections {
        let live = LiveSections {
            web: watch::channel(None).0,
            cluster: watch::channel(None).0,
            counters,
        };
        live.apply_at(sections, loaded_at);
        live
    }

    /// The `web` section in force (None: no web section); changes on
    /// every reload that changes it.
    pub fn web(&self) -> watch::Receiver<Option<WebConfig>> {
        self.web.subscribe()
    }

    /// The `cluster` section in force (None: no cluster section); changes
    /// on every reload that changes it.
    pub fn cluster(&self) -> watch::Receiver<Option<ClusterConfig>> {
        self.cluster.subscribe()
    }

    /// A reload that loaded: its sections take over now.
    pub fn apply(&self, sections: &Sections) {
        let now = chrono::Utc::now().timestamp_micros() as f64 / 1e6;
        self.apply_at(sections, now);
    }

    /// A reload that failed: the gauge says so; the sections in force stay.
    pub fn failed(&self) {
        ports::with_counters(&self.counters, |c| c.last_reload_ok = Some(false));
    }

    fn apply_at(&self, sections: &Sections, at: f64) {
        crate::logging::apply_section(sections.logging.as_ref().map(|l| &l.value));
        let web = sections.web.as_ref().map(|w| w.value.clone());
        ports::with_counters(&self.counters, |c| {
            c.set_buckets(web_buckets(web.as_ref()).as_deref());
            c.last_reload_ok = Some(true);
            c.last_reload_success = Some(at);
        });
        // Only a change wakes the followers: an unchanged section keeps
        // the listeners (and the leadership backend) as they are.
        publish(&self.web, web);
        publish(
            &self.cluster,
            sections.cluster.as_ref().map(|c| c.value.clone()),
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
    use crate::metrics::prometheus::Counters;
    use std::sync::{Arc, Mutex};

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

    /// The duration histogram's bucket bounds as a scrape shows them.
    fn bounds_of(counters: &SharedCounters) -> String {
        use crate::metrics::prometheus::{render, DaemonGauges, Format, JobGauges};
        ports::with_counters(counters, |c| {
            c.retain_jobs(["j"].into_iter());
            let gauges = DaemonGauges {
                version: "0",
                job_set_id: "v1:x",
                jobs: vec![JobGauges {
                    name: "j",
                    schedule: "* * * * *",
                    cluster_policy: "Leader",
                    enabled: true,
                    running: 0,
                    next_run: None,
                    last_run: None,
                    paused: false,
                }],
            };
            render(c, &gauges, Format::Text)
                .lines()
                .filter(|l| l.starts_with("cronstable_job_duration_seconds_bucket"))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    #[test]
    fn start_and_reloads_put_every_section_in_force() {
        let counters: SharedCounters = Arc::new(Mutex::new(Counters::new(100.0, None)));
        let live = LiveSections::start(
            &sections(&format!("{WEB}{CLUSTER}")),
            counters.clone(),
            100.0,
        );
        let mut web = live.web();
        let mut cluster = live.cluster();
        assert!(web.borrow_and_update().is_some(), "web published at start");
        assert!(
            cluster.borrow_and_update().is_some(),
            "cluster published at start"
        );
        let bounds = bounds_of(&counters);
        assert!(
            bounds.contains("le=\"1.0\"")
                && bounds.contains("le=\"5.0\"")
                && bounds.lines().count() == 3,
            "{bounds}"
        );
        ports::with_counters(&counters, |c| {
            assert_eq!(c.last_reload_ok, Some(true));
            assert_eq!(c.last_reload_success, Some(100.0));
        });

        // The same sections again: nothing moves, the gauge does.
        live.apply(&sections(&format!("{WEB}{CLUSTER}")));
        assert!(!web.has_changed().expect("open"));
        assert!(!cluster.has_changed().expect("open"));
        let stamped = ports::with_counters(&counters, |c| c.last_reload_success);
        assert!(stamped.is_some_and(|t| t > 100.0), "{stamped:?}");

        // A failed reload: the gauge only.
        live.failed();
        ports::with_counters(&counters, |c| assert_eq!(c.last_reload_ok, Some(false)));
        assert!(!web.has_changed().expect("open"));

        // Sections removed: both channels say so, the buckets go back to
        // the defaults and the gauge is good again.
        live.apply(&sections(""));
        assert!(web.has_changed().expect("open"));
        assert_eq!(*web.borrow_and_update(), None);
        assert!(cluster.has_changed().expect("open"));
        assert_eq!(*cluster.borrow_and_update(), None);
        let defaults: SharedCounters = Arc::new(Mutex::new(Counters::new(0.0, None)));
        assert_eq!(bounds_of(&counters), bounds_of(&defaults));
        ports::with_counters(&counters, |c| assert_eq!(c.last_reload_ok, Some(true)));
    }
}
