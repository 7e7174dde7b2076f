//! The file source: a config file or directory on disk. It notices edits
//! at every scheduler pass by comparing stamps (size and mtime of every
//! file the last load read, plus a directory's listing), reloads at once
//! when [`ReloadTrigger::trigger`] is pulled (on SIGHUP),
//! and puts the sections of a reload that are not jobs in force through
//! [`LiveSections`] (as the Kubernetes source does). A config that fails
//! to load keeps the running jobs: the error is logged once and nothing
//! is delivered.

use crate::config::stamp::ConfigStamp;
use crate::config::{self, LoadedConfig};
use crate::scheduler::ports::{JobSet, JobSource};
use crate::scheduler::sections::LiveSections;
use chrono::Utc;
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Notify;

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
    sections: LiveSections,
}

impl FileSource {
    /// A source over `root`, whose first load the caller already did (and
    /// logged, and put in force: `sections`); returns the initial job set
    /// alongside.
    pub fn open(root: PathBuf, loaded: LoadedConfig, sections: LiveSections) -> (Self, JobSet) {
        let stamp = ConfigStamp::take(&root, &loaded.files);
        let set = job_set(loaded.jobs, &loaded.files, Utc::now());
        let source = FileSource {
            root,
            stamp,
            reload: ReloadTrigger::default(),
            sections,
        };
        (source, set)
    }

    /// The handle that forces a reload (the daemon wires it to SIGHUP).
    pub fn reload_trigger(&self) -> ReloadTrigger {
        self.reload.clone()
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
                self.sections.apply(&loaded.sections);
                Some(job_set(loaded.jobs, &loaded.files, requested_at))
            }
            Err(err) => {
                self.sections.failed();
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
