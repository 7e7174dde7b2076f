//! The boot self-test's probes, run on the worker's runtime (so the
//! screen never waits): a timed `GET /version`, `GET /jobs` with
//! `/job-set-id`, and `GET /cluster`, side by side. Each answer is judged
//! by `checks.rs` and reported as soon as it is in. The requests go
//! through [`Daemon`], which the worker's connection implements.

use super::checks::{self, Answer, Check};
use serde_json::Value;
use std::future::Future;
use std::time::Instant;

/// What the probes need of the connection.
pub trait Daemon {
    /// One GET: the body of a 200, else what went wrong.
    fn get(&self, path: &str, accept: &str) -> impl Future<Output = Answer<Vec<u8>>> + Send;
    /// Puts a judged row on the screen.
    fn report(&self, check: Check);
}

/// `answer`'s body read by `read` (an unreadable body is a refusal).
fn read<T>(answer: Answer<Vec<u8>>, read: impl FnOnce(&[u8]) -> Result<T, String>) -> Answer<T> {
    match answer {
        Answer::Got(body) => read(&body).map_or_else(Answer::Refused, Answer::Got),
        Answer::Locked => Answer::Locked,
        Answer::Refused(why) => Answer::Refused(why),
        Answer::Down(why) => Answer::Down(why),
    }
}

/// Runs every probe; each row is reported when judged.
pub async fn run<D: Daemon>(daemon: &D) {
    let version = async {
        let start = Instant::now();
        let answer = daemon.get("/version", "text/plain").await;
        let took = start.elapsed();
        let answer = read(answer, |b| Ok(String::from_utf8_lossy(b).trim().to_owned()));
        daemon.report(checks::judge_link(&answer, took));
        daemon.report(checks::judge_firmware(&answer));
    };
    let jobs = async {
        let (list, id) = tokio::join!(
            daemon.get("/jobs", "application/json"),
            daemon.get("/job-set-id", "text/plain")
        );
        let list = read(list, super::model::parse_jobs);
        let id = match id {
            Answer::Got(body) => Some(String::from_utf8_lossy(&body).into_owned()),
            _ => None,
        };
        daemon.report(checks::judge_jobs(&list, id.as_deref()));
        daemon.report(checks::judge_schedules(&list));
    };
    let cluster = async {
        let answer = daemon.get("/cluster", "application/json").await;
        let answer = read(answer, |b| {
            serde_json::from_slice::<Value>(b).map_err(|e| format!("unreadable answer: {e}"))
        });
        daemon.report(checks::judge_cluster(&answer));
    };
    tokio::join!(version, jobs, cluster);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::checks::{Item, Mark};
    use std::sync::Mutex;

    /// A daemon answering from a table, noting what is reported.
    struct Fake {
        answers: Vec<(&'static str, Answer<Vec<u8>>)>,
        reported: Mutex<Vec<Check>>,
    }

    impl Daemon for Fake {
        async fn get(&self, path: &str, _accept: &str) -> Answer<Vec<u8>> {
            self.answers
                .iter()
                .find(|(p, _)| *p == path)
                .map_or(Answer::Refused("HTTP 404".into()), |(_, a)| a.clone())
        }

        fn report(&self, check: Check) {
            self.reported.lock().expect("lock").push(check);
        }
    }

    fn probe(answers: Vec<(&'static str, Answer<Vec<u8>>)>) -> Vec<Check> {
        let fake = Fake {
            answers,
            reported: Mutex::new(Vec::new()),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        runtime.block_on(run(&fake));
        let mut rows = fake.reported.into_inner().expect("lock");
        rows.sort_by_key(|c| Item::ALL.iter().position(|i| *i == c.item));
        rows
    }

    #[test]
    fn every_row_is_reported_once_from_the_answers() {
        let jobs =
            br#"[{"name": "a", "enabled": true, "schedule": "*/5 * * * *", "scheduled_in": 30},
                        {"name": "b", "enabled": false, "schedule": "@daily"}]"#;
        let rows = probe(vec![
            ("/version", Answer::Got(b"9.9.9\n".to_vec())),
            ("/jobs", Answer::Got(jobs.to_vec())),
            ("/job-set-id", Answer::Got(b"v1:abc".to_vec())),
            ("/cluster", Answer::Got(br#"{"enabled": false}"#.to_vec())),
        ]);
        let items: Vec<Item> = rows.iter().map(|c| c.item).collect();
        assert_eq!(items, Item::ALL);
        assert!(rows.iter().all(|c| c.mark == Mark::Ok), "{rows:?}");
        assert!(
            rows[1].detail.starts_with("cronstable 9.9.9 (this tui "),
            "{rows:?}"
        );
        assert_eq!(rows[2].detail, "2 jobs · 1 disabled · id v1:abc");
        assert_eq!(rows[3].detail, "all 1 parse · next fire in 30s (a)");
        assert_eq!(rows[4].detail, "standalone");
    }

    #[test]
    fn a_locked_or_silent_daemon_warns_and_fails_without_hanging() {
        let rows = probe(vec![
            ("/version", Answer::Locked),
            ("/jobs", Answer::Down("timed out".into())),
            ("/cluster", Answer::Got(b"not json".to_vec())),
        ]);
        let marks: Vec<Mark> = rows.iter().map(|c| c.mark).collect();
        assert_eq!(
            marks,
            [Mark::Ok, Mark::Warn, Mark::Fail, Mark::Warn, Mark::Warn]
        );
        assert!(
            rows[4].detail.starts_with("unknown (unreadable answer"),
            "{rows:?}"
        );
    }
}
