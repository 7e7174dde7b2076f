//! The boot self-test's probes, run on the worker's runtime (so the
//! screen never waits): a timed `GET /version`, `GET /jobs` with
//! `/job-set-id`, and `GET /cluster`, side by side. Each answer is judged
//! by `boot.rs` and sent as soon as it is in.

use super::boot::{self, Answer};
use super::worker::{Failure, Shared, Update};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// One GET: its body on 200, else what went wrong.
async fn get(shared: &Shared, path: &str, accept: &str) -> Answer<Vec<u8>> {
    let builder = shared.request_for(reqwest::Method::GET, path, accept);
    match shared.send_request(builder).await {
        Ok((200, body)) => Answer::Got(body),
        Ok((status, body)) => Answer::Refused(super::worker::error_text(status, &body)),
        Err(Failure::Unauthorized) => Answer::Locked,
        Err(Failure::Other(why)) => Answer::Down(why),
    }
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

/// Runs every probe; each row goes to the screen when judged.
pub(super) async fn run(shared: Arc<Shared>) {
    let version = async {
        let start = Instant::now();
        let answer = get(&shared, "/version", "text/plain").await;
        let took = start.elapsed();
        let answer = read(answer, |b| Ok(String::from_utf8_lossy(b).trim().to_owned()));
        shared.send(Update::Boot(boot::judge_link(&answer, took)));
        shared.send(Update::Boot(boot::judge_firmware(&answer)));
    };
    let jobs = async {
        let (list, id) = tokio::join!(
            get(&shared, "/jobs", "application/json"),
            get(&shared, "/job-set-id", "text/plain")
        );
        let list = read(list, super::model::parse_jobs);
        let id = match id {
            Answer::Got(body) => Some(String::from_utf8_lossy(&body).into_owned()),
            _ => None,
        };
        shared.send(Update::Boot(boot::judge_jobs(&list, id.as_deref())));
        shared.send(Update::Boot(boot::judge_schedules(&list)));
    };
    let cluster = async {
        let answer = get(&shared, "/cluster", "application/json").await;
        let answer = read(answer, |b| {
            serde_json::from_slice::<Value>(b).map_err(|e| format!("unreadable answer: {e}"))
        });
        shared.send(Update::Boot(boot::judge_cluster(&answer)));
    };
    tokio::join!(version, jobs, cluster);
}
