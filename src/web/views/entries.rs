//! One job's entry of a [`RenderedJobs`], for readers that page through
//! the jobs (the MCP `cron_list_jobs` tool) rather than serve the whole
//! `GET /jobs` body.

use super::{countdown_ms, push_countdown, RenderedJobs};
use crate::scheduler::control::JobSnapshot;
use chrono::{DateTime, Utc};

impl RenderedJobs {
    /// The jobs rendered, in order.
    pub fn jobs(&self) -> &[JobSnapshot] {
        &self.jobs
    }

    /// Job `index`'s entry as of `now`: the bytes the body of
    /// [`RenderedJobs::body_at`] holds for it at that moment.
    pub fn entry_at(&self, index: usize, now: DateTime<Utc>) -> Option<Vec<u8>> {
        let entry = self.entries.get(index)?;
        let mut out = Vec::with_capacity(entry.end - entry.start + 12);
        out.extend_from_slice(&self.text[entry.start..entry.cut]);
        match countdown_ms(entry.at, now) {
            None => out.extend_from_slice(b"null"),
            Some(ms) => push_countdown(&mut out, ms),
        }
        out.extend_from_slice(&self.text[entry.cut..entry.end]);
        Some(out)
    }
}
