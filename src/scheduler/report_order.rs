//! The order of a job's report deliveries: each completion report (the
//! `onSuccess`, or `onFailure` then `onPermanentFailure`) starts once the
//! job's previous one is done, so overlapping runs are reported in finish
//! order; an `onLate` report starts once the job's completion reports in
//! flight and its previous `onLate` report are done. A late report never
//! holds a completion report back (a slow late receiver must not delay
//! the report of a real run), as in the original.

use futures_util::future::{BoxFuture, FutureExt, Shared};
use std::collections::HashMap;

/// A delivery others can wait for.
type Tail = Shared<BoxFuture<'static, ()>>;

/// Per job, the last completion and the last late delivery handed out.
#[derive(Default)]
pub(super) struct ReportTails {
    completion: HashMap<String, Tail>,
    late: HashMap<String, Tail>,
    /// Tails kept after the last sweep of finished ones.
    swept_at: usize,
}

impl ReportTails {
    /// `delivery`, a completion report of `job`, chained behind the job's
    /// previous completion report.
    pub(super) fn completion(
        &mut self,
        job: &str,
        delivery: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, ()> {
        self.sweep();
        let before = self.completion.get(job).cloned();
        let tail = async move {
            if let Some(before) = before {
                before.await;
            }
            delivery.await;
        }
        .boxed()
        .shared();
        self.completion.insert(job.to_owned(), tail.clone());
        tail.boxed()
    }

    /// `delivery`, an `onLate` report of `job`, chained behind the job's
    /// completion reports in flight and its previous late report.
    pub(super) fn late(
        &mut self,
        job: &str,
        delivery: BoxFuture<'static, ()>,
    ) -> BoxFuture<'static, ()> {
        self.sweep();
        let completion = self.completion.get(job).cloned();
        let before = self.late.get(job).cloned();
        let tail = async move {
            if let Some(completion) = completion {
                completion.await;
            }
            if let Some(before) = before {
                before.await;
            }
            delivery.await;
        }
        .boxed()
        .shared();
        self.late.insert(job.to_owned(), tail.clone());
        tail.boxed()
    }

    /// Drops the tails already done, once their number doubled since the
    /// last sweep (so a table of many jobs costs amortized O(1) a report).
    fn sweep(&mut self) {
        let kept = self.completion.len() + self.late.len();
        if kept < 64 || kept < 2 * self.swept_at {
            return;
        }
        self.completion.retain(|_, tail| tail.peek().is_none());
        self.late.retain(|_, tail| tail.peek().is_none());
        self.swept_at = self.completion.len() + self.late.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// A delivery that takes `seconds` and then notes `what`.
    fn delivery(log: &Arc<Mutex<Vec<String>>>, what: &str, seconds: u64) -> BoxFuture<'static, ()> {
        let (log, what) = (Arc::clone(log), what.to_owned());
        async move {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            log.lock().unwrap().push(what);
        }
        .boxed()
    }

    #[tokio::test(start_paused = true)]
    async fn late_reports_wait_for_completion_reports_but_never_the_reverse() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tails = ReportTails::default();
        // Spawned in this order: a slow completion report, then a quick
        // late one of the same job (delivered second); a late report of
        // another job (not held up by a's); a second late report of a
        // (waits for the first); a slow late report of c and a completion
        // report after it (waits only for the previous completion report,
        // not for the late one); a second completion report of a.
        let tasks = [
            tokio::spawn(tails.completion("a", delivery(&log, "a done 1", 10))),
            tokio::spawn(tails.late("a", delivery(&log, "a late 1", 0))),
            tokio::spawn(tails.late("b", delivery(&log, "b late", 1))),
            tokio::spawn(tails.late("a", delivery(&log, "a late 2", 1))),
            tokio::spawn(tails.late("c", delivery(&log, "c late (slow)", 100))),
            tokio::spawn(tails.completion("c", delivery(&log, "c done", 2))),
            tokio::spawn(tails.completion("a", delivery(&log, "a done 2", 3))),
        ];
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(
            *log.lock().unwrap(),
            [
                "b late",
                "c done",
                "a done 1",
                "a late 1",
                "a late 2",
                "a done 2",
                "c late (slow)"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn finished_tails_are_swept() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tails = ReportTails::default();
        for i in 0..200 {
            tails
                .completion(&format!("job{i}"), delivery(&log, "x", 0))
                .await;
        }
        assert!(tails.completion.len() < 200, "{}", tails.completion.len());
        assert_eq!(log.lock().unwrap().len(), 200);
    }
}
