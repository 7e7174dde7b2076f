//! What the scheduler keeps only so the HTTP API is answered cheaply: the
//! change counters the API's cached bodies are keyed on, each job's next
//! fire as the API last asked for it, and the rows of the last metrics
//! snapshot. Nothing here decides a launch; the run loop only tells it
//! when something the API shows has changed.

use super::control::Stamp;
use super::next_fire::NextFires;
use crate::metrics::prometheus::JobRows;

/// The API's caches and change counters (see the module doc).
#[derive(Debug, Default)]
pub(super) struct ApiCaches {
    /// Bumped by every turn of the run loop that can change anything the
    /// API shows (all but read-only control requests): the API reuses a
    /// body rendered at one generation while the generation holds (see
    /// [`Stamp`]).
    pub(super) generation: u64,
    /// Bumped whenever a run starts or ends or the table changes, so a
    /// status writer polling `ControlHandle::progress` learns cheaply
    /// that nothing moved.
    pub(super) progress_version: u64,
    /// Moves with every table installed (see `control::StatusTable`).
    pub(super) table_id: u64,
    /// Each job's next fire as the API last asked for it.
    pub(super) next_fires: NextFires,
    /// The per-job rows of the last metrics snapshot, with the stamp and
    /// counters epoch they were read at.
    pub(super) metrics_rows: Option<(Stamp, u64, JobRows)>,
    /// The per-job rows of the last full metrics snapshot, whatever its
    /// stamp: the next one shares each row whose values are unchanged
    /// rather than copying every job's strings again.
    pub(super) metrics_last_rows: Option<JobRows>,
}

impl ApiCaches {
    /// Something the API shows may have changed.
    pub(super) fn changed(&mut self) {
        self.generation += 1;
    }

    /// A run started or ended, or the table changed.
    pub(super) fn progressed(&mut self) {
        self.progress_version += 1;
    }

    /// A new job table of `jobs` jobs is in force: every remembered next
    /// fire is forgotten.
    pub(super) fn table_installed(&mut self, jobs: usize) {
        self.table_id += 1;
        self.next_fires.reset(jobs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_table_moves_its_id_and_the_counters_move_one_step() {
        let mut caches = ApiCaches::default();
        caches.changed();
        caches.progressed();
        caches.progressed();
        caches.table_installed(3);
        assert_eq!(
            (caches.generation, caches.progress_version, caches.table_id),
            (1, 2, 1)
        );
    }
}
