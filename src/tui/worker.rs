//! Everything the dashboard asks the daemon, on a thread of its own so the
//! screen never waits on the network: the `/jobs` poll (with its ETag, so
//! an unchanged list costs a 304, and gzip), `/cluster` and `/node` after
//! each good poll, the SSE log tail of the open drawer, the drawer's
//! one-off reads and the job actions. The screen sends [`Command`]s and
//! reads [`Update`]s from one channel, shared with the key reader.

use super::model::{parse_jobs, Job};
use serde_json::Value;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, Notify};

mod tail;
use tail::tail_loop;

/// How long a plain request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause between two sends of a bulk sweep (the web page's), so a
/// sweep over many jobs does not start them all in the same instant.
pub const SWEEP_GAP: Duration = Duration::from_millis(300);
/// How long the sandbox's typing must pause before its text is asked
/// about, so a burst of keys costs one request.
pub const SANDBOX_PAUSE: Duration = Duration::from_millis(250);

/// A job action (`POST /jobs/{name}/...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `start`.
    Start,
    /// `cancel`.
    Cancel,
    /// `pause` (the daemon's default hour).
    Pause,
    /// `resume`.
    Resume,
}

impl Action {
    /// The route's last segment.
    pub fn verb(self) -> &'static str {
        match self {
            Action::Start => "start",
            Action::Cancel => "cancel",
            Action::Pause => "pause",
            Action::Resume => "resume",
        }
    }
}

/// What the screen asks of the worker.
#[derive(Debug, Clone)]
pub enum Command {
    /// Poll now.
    Refresh,
    /// The poll interval; `None` polls only on [`Command::Refresh`].
    SetPoll(Option<Duration>),
    /// The bearer token from the prompt (kept in memory only).
    SetToken(Option<String>),
    /// Tail this job's log (replacing any tail), or stop tailing.
    Tail {
        /// The job, or `None` to stop.
        job: Option<String>,
        /// Tags the tail's updates, so a replaced tail's stragglers are
        /// told apart.
        generation: u64,
    },
    /// Re-attach after a run ended (follow), or stay detached.
    Follow(bool),
    /// Re-attach the tail now (a run was just started).
    Kick,
    /// The live-logs panel's tails, each job with its generation
    /// (replacing the panel's earlier tails; empty stops them all).
    Merge(Vec<(String, u64)>),
    /// Stop the live-logs panel's tail of this generation (the job
    /// dropped from the panel), keeping the others.
    Unmerge(u64),
    /// `GET /jobs/{name}/runs`.
    Runs(String),
    /// `GET /jobs/{name}/resources`.
    Resources(String),
    /// `GET /node/history`.
    NodeHistory,
    /// `GET /schedule/preview` for a job's schedule.
    Preview {
        /// The job the answer is for.
        job: String,
        /// The query (`expr`, `tz`, `seed`, `limit`).
        query: Vec<(String, String)>,
    },
    /// `GET /schedule/preview` for the sandbox's text, sent once the
    /// typing pauses for [`SANDBOX_PAUSE`]; a newer one cancels it.
    Sandbox(String),
    /// A job action.
    Act(Action, String),
    /// One of the extra panels' routes.
    Feed(super::feeds::Feed),
    /// A state stream's records or a namespace's documents (the path).
    Detail(String),
    /// The boot self-test's probes (`probe.rs`).
    Boot,
    /// The job actions panel's bulk sweep: `action` on each job in turn,
    /// [`SWEEP_GAP`] apart, until done, stopped or refused with 401.
    Sweep {
        /// Tags the sweep's updates.
        id: u64,
        /// What is sent to each job.
        action: Action,
        /// The jobs, in order.
        jobs: Vec<String>,
    },
    /// Send nothing more of the running sweep.
    StopSweep,
}

/// How one send of a sweep went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// The daemon answered: its status and the body's `error`, if any.
    Answered(u16, Option<String>),
    /// 401: the daemon wants a (valid) token.
    Unauthorized,
    /// No answer: why.
    Failed(String),
}

/// One event of a log tail.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEvent {
    /// A new attach begins; `true` when what it replays is known to be a
    /// run the tail has not shown yet (the job runs now, or a run finished
    /// since the last attach), so nothing of it is held back as a repeat.
    Attach(bool),
    /// A line: its stream and text.
    Line(String, String),
    /// The run's output ended (with the daemon's reason).
    End(Option<String>),
    /// The daemon dropped lines the tail had not read.
    Skipped(u64),
    /// The attach failed (`unauthorized` after a 401).
    Failed(String),
}

/// What the screen is told.
#[derive(Debug)]
pub enum Update {
    /// A key press, a paste, a resize.
    Input(crossterm::event::Event),
    /// A new job list and when it was answered (`scheduled_in` counts
    /// from then).
    Jobs(Vec<Job>, Instant),
    /// The poll answered 304: the list stands.
    JobsUnchanged,
    /// The poll failed.
    Offline(String),
    /// A request was refused with 401.
    Unauthorized,
    /// `GET /cluster`.
    Cluster(Value),
    /// `GET /node`.
    Node(Value),
    /// `GET /node/history`.
    NodeHistory(Value),
    /// The daemon's version and job-set id.
    Meta(Option<String>, Option<String>),
    /// A job's runs.
    Runs(String, Result<Value, String>),
    /// A job's resource series.
    Resources(String, Result<Value, String>),
    /// A job's schedule preview.
    Preview(String, Result<Value, String>),
    /// The sandbox's preview: the expression asked about and the answer.
    Sandbox(String, Result<Value, String>),
    /// A panel route's answer.
    Feed(super::feeds::Feed, Result<Value, String>),
    /// A state read's answer, with its path.
    Detail(String, Result<Value, String>),
    /// A tail's event, with its generation.
    Log(u64, LogEvent),
    /// An action's answer: status and body, or why there was none.
    Acted(Action, String, Result<(u16, Value), String>),
    /// One send of a sweep: the sweep's id, the job, how it went.
    Swept(u64, String, Sent),
    /// A sweep ended: its id, how many sends went out, whether it was
    /// stopped before the end.
    SweepEnded(u64, usize, bool),
    /// A file the screen asked for was written (or not).
    Saved(super::saver::Saved),
    /// SIGTERM or SIGINT: leave now.
    Terminate,
    /// A boot self-test row, judged.
    Boot(super::checks::Check),
}

/// A failed request.
#[derive(Debug)]
enum Failure {
    Unauthorized,
    Other(String),
}

/// What the tasks share.
struct Shared {
    base: String,
    client: reqwest::Client,
    token: RwLock<Option<String>>,
    updates: Sender<Update>,
}

impl Shared {
    fn send(&self, update: Update) {
        // The screen has gone: nothing left to tell.
        let _ = self.updates.send(update);
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.request_for(method, path, "application/json")
    }

    fn request_for(
        &self,
        method: reqwest::Method,
        path: &str,
        accept: &str,
    ) -> reqwest::RequestBuilder {
        let mut builder = self
            .client
            .request(method, format!("{}{}", self.base, path))
            .header(reqwest::header::ACCEPT, accept);
        let token = self.token.read().ok().and_then(|t| t.clone());
        if let Some(token) = token {
            builder = builder.bearer_auth(token);
        }
        builder
    }

    async fn get_json(&self, path: &str) -> Result<Value, Failure> {
        let (status, body) = self
            .send_request(self.request(reqwest::Method::GET, path))
            .await?;
        if status >= 400 {
            return Err(Failure::Other(error_text(status, &body)));
        }
        serde_json::from_slice(&body).map_err(|e| Failure::Other(format!("unreadable answer: {e}")))
    }

    async fn get_text(&self, path: &str) -> Option<String> {
        let builder = self.request_for(reqwest::Method::GET, path, "text/plain");
        match self.send_request(builder).await {
            Ok((200, body)) => Some(String::from_utf8_lossy(&body).trim().to_owned()),
            _ => None,
        }
    }

    async fn send_request(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<(u16, Vec<u8>), Failure> {
        let response = builder
            .send()
            .await
            .map_err(|e| Failure::Other(describe(&e)))?;
        let status = response.status().as_u16();
        if status == 401 {
            return Err(Failure::Unauthorized);
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| Failure::Other(describe(&e)))?;
        Ok((status, body.to_vec()))
    }
}

/// The boot self-test's requests go out as every other does.
impl super::probe::Daemon for Shared {
    async fn get(&self, path: &str, accept: &str) -> super::checks::Answer<Vec<u8>> {
        use super::checks::Answer;
        let builder = self.request_for(reqwest::Method::GET, path, accept);
        match self.send_request(builder).await {
            Ok((200, body)) => Answer::Got(body),
            Ok((status, body)) => Answer::Refused(error_text(status, &body)),
            Err(Failure::Unauthorized) => Answer::Locked,
            Err(Failure::Other(why)) => Answer::Down(why),
        }
    }

    fn report(&self, check: super::checks::Check) {
        self.send(Update::Boot(check));
    }
}

/// A reqwest error in a few words (the innermost cause says most).
fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return "timed out".to_owned();
    }
    let mut source: Option<&dyn std::error::Error> = Some(err);
    let mut last = err.to_string();
    while let Some(e) = source {
        last = e.to_string();
        source = e.source();
    }
    last
}

/// The `error` of a JSON error body, or `HTTP <status>`.
fn error_text(status: u16, body: &[u8]) -> String {
    error_of(body).unwrap_or_else(|| format!("HTTP {status}"))
}

/// The `error` of a JSON error body.
fn error_of(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
}

/// `name` as one URL path segment.
pub fn path_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Starts the worker thread. `poll` is the first interval (`None`:
/// paused); the first poll goes out at once either way.
pub fn start(
    base: &str,
    client: reqwest::Client,
    token: Option<String>,
    poll: Option<Duration>,
    updates: Sender<Update>,
) -> std::io::Result<mpsc::UnboundedSender<Command>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (commands, inbox) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared {
        base: base.trim_end_matches('/').to_owned(),
        client,
        token: RwLock::new(token),
        updates,
    });
    std::thread::Builder::new()
        .name("tui-worker".into())
        .spawn(move || runtime.block_on(serve(shared, inbox, poll)))?;
    Ok(commands)
}

/// The open log tail.
struct Tail {
    task: tokio::task::JoinHandle<()>,
    follow: Arc<AtomicBool>,
    kick: Arc<Notify>,
}

async fn serve(
    shared: Arc<Shared>,
    mut inbox: mpsc::UnboundedReceiver<Command>,
    poll: Option<Duration>,
) {
    let wake = Arc::new(Notify::new());
    let (interval, interval_rx) = watch::channel(poll);
    tokio::spawn(poller(Arc::clone(&shared), Arc::clone(&wake), interval_rx));
    if let Ok(mut signals) = crate::platform::ShutdownSignals::new() {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            signals.recv().await;
            shared.send(Update::Terminate);
        });
    }
    let follow = Arc::new(AtomicBool::new(true));
    let mut tail: Option<Tail> = None;
    // The live-logs panel's tails always follow.
    let merged_follow = Arc::new(AtomicBool::new(true));
    let mut merged: Vec<(u64, tokio::task::JoinHandle<()>)> = Vec::new();
    // The running sweep's stop flag (a new one for each sweep).
    let mut sweep_stop = Arc::new(AtomicBool::new(false));
    // The sandbox's pending or running preview (replaced by each key).
    let mut sandbox: Option<tokio::task::JoinHandle<()>> = None;
    while let Some(command) = inbox.recv().await {
        match command {
            Command::Merge(jobs) => {
                for (_, old) in merged.drain(..) {
                    old.abort();
                }
                for (job, generation) in jobs {
                    let task = tokio::spawn(tail_loop(
                        Arc::clone(&shared),
                        job,
                        generation,
                        Arc::clone(&merged_follow),
                        Arc::new(Notify::new()),
                    ));
                    merged.push((generation, task));
                }
            }
            Command::Unmerge(generation) => merged.retain(|(g, task)| {
                if *g == generation {
                    task.abort();
                }
                *g != generation
            }),
            Command::Refresh => wake.notify_one(),
            Command::SetPoll(every) => {
                let _ = interval.send(every);
            }
            Command::SetToken(token) => {
                if let Ok(mut slot) = shared.token.write() {
                    *slot = token;
                }
                wake.notify_one();
            }
            Command::Tail { job, generation } => {
                if let Some(old) = tail.take() {
                    old.task.abort();
                }
                if let Some(job) = job {
                    let kick = Arc::new(Notify::new());
                    let task = tokio::spawn(tail_loop(
                        Arc::clone(&shared),
                        job,
                        generation,
                        Arc::clone(&follow),
                        Arc::clone(&kick),
                    ));
                    tail = Some(Tail {
                        task,
                        follow: Arc::clone(&follow),
                        kick,
                    });
                }
            }
            Command::Follow(on) => {
                follow.store(on, Ordering::Relaxed);
                if let Some(t) = &tail {
                    if on && t.follow.load(Ordering::Relaxed) {
                        t.kick.notify_one();
                    }
                }
            }
            Command::Kick => {
                if let Some(t) = &tail {
                    t.kick.notify_one();
                }
            }
            Command::Runs(job) => one_off(
                &shared,
                format!("/jobs/{}/runs", path_segment(&job)),
                move |r| Update::Runs(job, r),
            ),
            Command::Resources(job) => one_off(
                &shared,
                format!("/jobs/{}/resources", path_segment(&job)),
                move |r| Update::Resources(job, r),
            ),
            Command::NodeHistory => one_off(&shared, "/node/history".to_owned(), |r| match r {
                Ok(v) => Update::NodeHistory(v),
                Err(_) => Update::NodeHistory(Value::Null),
            }),
            Command::Preview { job, query } => {
                let query = encode_query(&query);
                one_off(&shared, format!("/schedule/preview?{query}"), move |r| {
                    Update::Preview(job, r)
                })
            }
            Command::Sandbox(expr) => {
                if let Some(old) = sandbox.take() {
                    old.abort();
                }
                let shared = Arc::clone(&shared);
                sandbox = Some(tokio::spawn(async move {
                    tokio::time::sleep(SANDBOX_PAUSE).await;
                    let path = format!(
                        "/schedule/preview?{}",
                        encode_query(&super::sandbox::query(&expr))
                    );
                    let answer = get_answer(&shared, &path).await;
                    shared.send(Update::Sandbox(expr, answer));
                }));
            }
            Command::Feed(feed) => one_off(&shared, feed.path().to_owned(), move |r| {
                Update::Feed(feed, r)
            }),
            Command::Boot => {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move { super::probe::run(&*shared).await });
            }
            Command::Detail(path) => {
                one_off(&shared, path.clone(), move |r| Update::Detail(path, r))
            }
            Command::Sweep { id, action, jobs } => {
                sweep_stop = Arc::new(AtomicBool::new(false));
                let stop = Arc::clone(&sweep_stop);
                tokio::spawn(sweep(Arc::clone(&shared), id, action, jobs, stop));
            }
            Command::StopSweep => sweep_stop.store(true, Ordering::Relaxed),
            Command::Act(action, job) => {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let answer = match post_action(&shared, action, &job).await {
                        Ok((status, body)) => {
                            Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
                        }
                        Err(Failure::Unauthorized) => {
                            shared.send(Update::Unauthorized);
                            Err("unauthorized".to_owned())
                        }
                        Err(Failure::Other(why)) => Err(why),
                    };
                    shared.send(Update::Acted(action, job, answer));
                });
            }
        }
    }
    // The screen is gone: the process is ending.
}

/// `POST /jobs/{name}/{verb}`.
async fn post_action(
    shared: &Shared,
    action: Action,
    job: &str,
) -> Result<(u16, Vec<u8>), Failure> {
    let path = format!("/jobs/{}/{}", path_segment(job), action.verb());
    let builder = shared
        .request(reqwest::Method::POST, &path)
        .timeout(REQUEST_TIMEOUT);
    shared.send_request(builder).await
}

/// A sweep: each job in turn with [`SWEEP_GAP`] between two sends; the
/// stop flag is read before each send, so a stop lands between two.
/// A 401 ends the sweep (every later send would get one too).
async fn sweep(
    shared: Arc<Shared>,
    id: u64,
    action: Action,
    jobs: Vec<String>,
    stop: Arc<AtomicBool>,
) {
    let mut sent = 0;
    for job in jobs {
        if sent > 0 {
            tokio::time::sleep(SWEEP_GAP).await;
        }
        if stop.load(Ordering::Relaxed) {
            return shared.send(Update::SweepEnded(id, sent, true));
        }
        let outcome = match post_action(&shared, action, &job).await {
            Ok((status, body)) => Sent::Answered(status, error_of(&body)),
            Err(Failure::Unauthorized) => Sent::Unauthorized,
            Err(Failure::Other(why)) => Sent::Failed(why),
        };
        sent += 1;
        let refused = outcome == Sent::Unauthorized;
        shared.send(Update::Swept(id, job, outcome));
        if refused {
            shared.send(Update::Unauthorized);
            break;
        }
    }
    shared.send(Update::SweepEnded(id, sent, false));
}

/// `k=v&...` with each value escaped.
fn encode_query(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", path_segment(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// One GET's body, or why there is none (a 401 also opens the prompt).
async fn get_answer(shared: &Shared, path: &str) -> Result<Value, String> {
    match shared.get_json(path).await {
        Ok(v) => Ok(v),
        Err(Failure::Unauthorized) => {
            shared.send(Update::Unauthorized);
            Err("unauthorized".to_owned())
        }
        Err(Failure::Other(why)) => Err(why),
    }
}

/// Spawns one GET whose answer becomes one update.
fn one_off<F>(shared: &Arc<Shared>, path: String, into: F)
where
    F: FnOnce(Result<Value, String>) -> Update + Send + 'static,
{
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let answer = get_answer(&shared, &path).await;
        shared.send(into(answer));
    });
}

/// Polls `/jobs` on the interval (or when woken), then `/cluster` and
/// `/node` when it answered.
async fn poller(
    shared: Arc<Shared>,
    wake: Arc<Notify>,
    mut interval: watch::Receiver<Option<Duration>>,
) {
    let mut etag: Option<String> = None;
    let mut meta_due = true;
    loop {
        let answered = poll_jobs(&shared, &mut etag).await;
        if answered {
            let (cluster, node) =
                tokio::join!(shared.get_json("/cluster"), shared.get_json("/node"));
            if let Ok(cluster) = cluster {
                shared.send(Update::Cluster(cluster));
            }
            if let Ok(node) = node {
                shared.send(Update::Node(node));
            }
            if meta_due {
                let (version, id) =
                    tokio::join!(shared.get_text("/version"), shared.get_text("/job-set-id"));
                shared.send(Update::Meta(version, id));
                meta_due = false;
            }
        }
        loop {
            let every = *interval.borrow_and_update();
            tokio::select! {
                _ = wake.notified() => break,
                changed = interval.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = sleep_or_never(every) => break,
            }
        }
    }
}

async fn sleep_or_never(every: Option<Duration>) {
    match every {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// One `GET /jobs`; whether it answered (200 or 304).
async fn poll_jobs(shared: &Shared, etag: &mut Option<String>) -> bool {
    let mut builder = shared
        .request(reqwest::Method::GET, "/jobs")
        .timeout(REQUEST_TIMEOUT)
        .header(reqwest::header::ACCEPT_ENCODING, "gzip");
    if let Some(tag) = etag.as_deref() {
        builder = builder.header(reqwest::header::IF_NONE_MATCH, tag);
    }
    let response = match builder.send().await {
        Ok(r) => r,
        Err(e) => {
            shared.send(Update::Offline(describe(&e)));
            return false;
        }
    };
    let fetched = Instant::now();
    let status = response.status().as_u16();
    match status {
        304 => {
            shared.send(Update::JobsUnchanged);
            return true;
        }
        401 => {
            *etag = None;
            shared.send(Update::Unauthorized);
            return false;
        }
        _ => {}
    }
    let gzipped = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    let tag = response
        .headers()
        .get(reqwest::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match response.bytes().await {
        Ok(b) => b,
        Err(e) => {
            shared.send(Update::Offline(describe(&e)));
            return false;
        }
    };
    if status != 200 {
        shared.send(Update::Offline(error_text(status, &body)));
        return false;
    }
    let body = if gzipped {
        let mut out = Vec::with_capacity(body.len() * 8);
        if let Err(e) = flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out) {
            shared.send(Update::Offline(format!("cannot read /jobs: {e}")));
            return false;
        }
        out
    } else {
        body.to_vec()
    };
    match parse_jobs(&body) {
        Ok(jobs) => {
            *etag = tag;
            shared.send(Update::Jobs(jobs, fetched));
            true
        }
        Err(why) => {
            *etag = None;
            shared.send(Update::Offline(why));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_path_segment() {
        assert_eq!(path_segment("backup-db_1.x~"), "backup-db_1.x~");
        assert_eq!(path_segment("a b/c?d"), "a%20b%2Fc%3Fd");
        assert_eq!(path_segment("é"), "%C3%A9");
        assert_eq!(
            path_segment("*/5 * * * *"),
            "%2A%2F5%20%2A%20%2A%20%2A%20%2A"
        );
    }

    #[test]
    fn errors_read_from_the_body_or_the_status() {
        assert_eq!(
            error_text(409, br#"{"error": "job 'x' is disabled"}"#),
            "job 'x' is disabled"
        );
        assert_eq!(error_text(500, b"oops"), "HTTP 500");
    }
}
