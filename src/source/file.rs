//! The file source: a config file or directory on disk. It notices edits
//! at every scheduler pass by comparing stamps (size and mtime of every
//! file the last load read, plus a directory's listing), reloads at once
//! when [`ReloadTrigger::trigger`] is pulled (on SIGHUP),
//! and applies the parts of a reload that are not jobs: the `logging`
//! section, the `web` section (published on a watch channel the HTTP
//! supervisor follows), the histogram buckets and the reload gauges. A
//! config that fails to load keeps the running jobs: the error is logged
//! once and nothing is delivered.

use crate::config::model::{ClusterConfig, WebConfig};
use crate::config::stamp::ConfigStamp;
use crate::config::web_buckets;
use crate::config::{self, LoadedConfig};
use crate::scheduler::ports::{self, JobSet, JobSource, SharedCounters};
use chrono::Utc;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{watch, Notify};

/// Asks the file source to reload now, changed or not (SIGHUP). Cheap to
/// clone; a request made while a reload is under way is kept for the next.
#[derive(Debug, Clone, Default)]
pub struct ReloadTrigger {
    notify: Arc<Notify>,
}

impl ReloadTrigger {
    /// Requests a reload.
    pub fn trigger(&self) {
        // A stored permit: a request made before the source waits is kept.
        self.notify.notify_one();
    }
}

/// The jobs of a config file or directory.
pub struct FileSource {
    root: PathBuf,
    stamp: ConfigStamp,
    reload: ReloadTrigger,
    counters: SharedCounters,
    web_tx: watch::Sender<Option<WebConfig>>,
    cluster_tx: watch::Sender<Option<ClusterConfig>>,
}

impl FileSource {
    /// A source over `root`, whose first load the caller already did (and
    /// logged); returns the initial job set alongside.
    pub fn open(root: PathBuf, loaded: LoadedConfig, counters: SharedCounters) -> (Self, JobSet) {
        let stamp = ConfigStamp::take(&root, &loaded.files);
        let web = loaded.sections.web.map(|w| w.value);
        let (web_tx, _) = watch::channel(web);
        let (cluster_tx, _) = watch::channel(loaded.sections.cluster.map(|c| c.value));
        let set = job_set(loaded.jobs, &loaded.files, Utc::now());
        let source = FileSource {
            root,
            stamp,
            reload: ReloadTrigger::default(),
            counters,
            web_tx,
            cluster_tx,
        };
        (source, set)
    }

    /// The handle that forces a reload (the daemon wires it to SIGHUP).
    pub fn reload_trigger(&self) -> ReloadTrigger {
        self.reload.clone()
    }

    /// The `web` section of the running config; changes on every reload
    /// that changes it (None: no web section).
    pub fn web_config(&self) -> watch::Receiver<Option<WebConfig>> {
        self.web_tx.subscribe()
    }

    /// The `cluster` section of the running config; changes on every
    /// reload that changes it (None: no cluster section).
    pub fn cluster_config(&self) -> watch::Receiver<Option<ClusterConfig>> {
        self.cluster_tx.subscribe()
    }

    /// Loads the config now; None (and the running jobs stay) when it is
    /// broken.
    fn load(&mut self) -> Option<JobSet> {
        let requested_at = Utc::now();
        match config::load_path(&self.root) {
            Ok(loaded) => {
                for warning in &loaded.warnings {
                    tracing::warn!(target: "cronstable::config", "{warning}");
                }
                self.stamp = ConfigStamp::take(&self.root, &loaded.files);
                crate::logging::apply_section(loaded.sections.logging.as_ref().map(|l| &l.value));
                let web = loaded.sections.web.map(|w| w.value);
                ports::with_counters(&self.counters, |c| {
                    c.set_buckets(web_buckets(web.as_ref()).as_deref());
                    c.last_reload_ok = Some(true);
                    c.last_reload_success = Some(Utc::now().timestamp_micros() as f64 / 1e6);
                });
                self.web_tx.send_if_modified(|current| {
                    let changed = *current != web;
                    *current = web;
                    changed
                });
                let cluster = loaded.sections.cluster.map(|c| c.value);
                self.cluster_tx.send_if_modified(|current| {
                    let changed = *current != cluster;
                    *current = cluster;
                    changed
                });
                Some(job_set(loaded.jobs, &loaded.files, requested_at))
            }
            Err(err) => {
                ports::with_counters(&self.counters, |c| c.last_reload_ok = Some(false));
                // Remember the broken state, so the same error is not
                // logged again at every pass.
                let files = self.stamp.files().to_vec();
                self.stamp = ConfigStamp::take(&self.root, &files);
                // The original's wording and logger (`cronstable`, not
                // `cronstable.config`): alerts match on this prefix.
                tracing::error!(
                    target: "cronstable::scheduler",
                    "Error in configuration file(s), so not updating any of the config.:\n{err}"
                );
                None
            }
        }
    }
}

fn job_set(
    jobs: Vec<config::JobConfig>,
    files: &[PathBuf],
    requested_at: chrono::DateTime<Utc>,
) -> JobSet {
    let job_set_id = crate::fingerprint::job_set_id(&jobs);
    JobSet {
        job_set_id,
        jobs: config::shared_without_specs(jobs),
        sources: files.iter().map(|f| f.display().to_string()).collect(),
        requested_at,
        suspended: Default::default(),
    }
}

impl JobSource for FileSource {
    fn poll(&mut self) -> Option<JobSet> {
        if !self.stamp.changed(&self.root) {
            return None;
        }
        self.load()
    }

    fn next(&mut self) -> BoxFuture<'_, JobSet> {
        Box::pin(async move {
            loop {
                // Cancel-safe: a dropped `notified()` leaves the permit.
                self.reload.notify.notified().await;
                if let Some(set) = self.load() {
                    return set;
                }
            }
        })
    }
}
