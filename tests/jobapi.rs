//! The job-facing state, black-box: real jobs of the built daemon call the
//! built binary's client commands (`cronstable state|cursor|lock|
//! idempotent|artifact|secret`) against the daemon's loopback job
//! endpoint, on a store directory that outlives each daemon and is shared
//! by two daemons at once. What each test proves is in its name.

mod support;

use nix::sys::signal::Signal;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::daemon::Daemon;
use support::http;

const LONG: Duration = Duration::from_secs(30);

/// Our binary, as jobs call it.
fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_cronstable")
}

/// A store and a folder for the jobs' files that outlive each daemon.
struct Shared {
    dir: tempfile::TempDir,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// Waits until the file `name` exists (a job's last step writes it).
    fn wait_for(&self, name: &str, daemon: &Daemon) {
        let start = Instant::now();
        while !self.path(name).exists() {
            assert!(
                start.elapsed() < LONG,
                "no {name} after {LONG:?}:\n{}",
                daemon.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A daemon on this store with `state_extra` state keys; `jobs` may use
    /// `{shared}` for this folder and `{bin}` for our binary.
    fn daemon(&self, state_extra: &str, jobs: &str) -> (Daemon, u16) {
        let jobs = jobs
            .replace("{shared}", &self.dir.path().display().to_string())
            .replace("{bin}", bin());
        let state = format!(
            "state:\n  path: {}\n{state_extra}",
            self.path("store").display()
        );
        Daemon::start_with_web(&state, &jobs)
    }
}

/// A job that runs `script` once (the first second it fires), then
/// writes `{shared}/<name>.done`.
fn once(name: &str, script: &str, extra: &str) -> String {
    format!(
        "  - name: {name}\n    schedule: '* * * * * * *'\n    command: |\n      \
         [ -e {{shared}}/{name}.started ] && exit 0\n      touch {{shared}}/{name}.started\n      \
         {}\n      touch {{shared}}/{name}.done\n{extra}",
        script.trim_end().replace('\n', "\n      ")
    )
}

fn stop(daemon: &mut Daemon) {
    daemon.signal(Signal::SIGTERM);
    assert!(daemon.wait_exit(LONG).is_some(), "{}", daemon.log());
}

#[test]
fn a_cursor_a_value_and_an_artifact_left_by_one_run_are_read_by_the_next_after_a_restart() {
    let shared = Shared::new();
    std::fs::write(shared.path("payload"), "report body\n").expect("payload");
    let (mut first, _) = shared.daemon(
        "",
        &once(
            "etl",
            "{bin} cursor advance watermark 5 > {shared}/advanced\n\
             {bin} state set greeting hello\n\
             {bin} artifact put report {shared}/payload > {shared}/sha",
            "",
        ),
    );
    shared.wait_for("etl.done", &first);
    assert_eq!(shared.read("advanced"), "5\n", "{}", first.log());
    assert_eq!(shared.read("sha").trim().len(), 64, "{}", first.log());
    stop(&mut first);
    for marker in ["etl.started", "etl.done"] {
        std::fs::remove_file(shared.path(marker)).expect("reset the markers");
    }
    let (second, port) = shared.daemon(
        "",
        &once(
            "etl",
            "{bin} cursor get watermark > {shared}/watermark\n\
             {bin} cursor advance watermark 3 > {shared}/backwards\n\
             {bin} state get greeting > {shared}/greeting\n\
             {bin} artifact get report -o {shared}/fetched\n\
             {bin} state keys > {shared}/keys",
            "",
        ),
    );
    shared.wait_for("etl.done", &second);
    assert_eq!(shared.read("watermark"), "5\n", "{}", second.log());
    // A cursor only moves forward without --force.
    assert_eq!(shared.read("backwards"), "5\n");
    assert_eq!(shared.read("greeting"), "hello\n");
    assert_eq!(shared.read("fetched"), "report body\n");
    assert_eq!(shared.read("keys"), "greeting\n");
    // The state inspector shows a KV value's size and type only, and a
    // cursor's value as stored.
    let kv = http::get(port, "/state/documents?ns=kv/etl");
    assert_eq!(kv.status, 200, "{}", kv.body);
    let kv = kv.json();
    assert_eq!(kv["namespace"], "kv/etl");
    let documents = kv["documents"].as_array().expect("a list");
    assert_eq!(documents.len(), 1, "{kv}");
    assert_eq!(documents[0]["key"], "greeting");
    assert_eq!(documents[0]["valueSize"], 7, "the bytes of \"hello\": {kv}");
    assert_eq!(documents[0]["valueType"], "str");
    assert!(documents[0].get("value").is_none(), "{kv}");
    assert!(documents[0]["updatedAt"].is_f64(), "{kv}");
    let cursors = http::get(port, "/state/documents?ns=cursor/etl").json();
    assert_eq!(cursors["documents"][0]["name"], "watermark", "{cursors}");
    assert_eq!(cursors["documents"][0]["value"], 5, "{cursors}");
}

#[test]
fn a_lock_is_held_by_one_run_across_two_daemons_and_a_killed_holders_lock_frees_after_its_ttl() {
    let shared = Shared::new();
    // node A takes the lock and keeps it for a while.
    let (mut a, _) = shared.daemon(
        "",
        &once(
            "holder",
            "{bin} lock run nightly --global --ttl 5 -- sh -c 'touch {shared}/held; sleep 60'",
            "",
        ),
    );
    let start = Instant::now();
    while !shared.path("held").exists() {
        assert!(start.elapsed() < LONG, "{}", a.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // node B, on the same store, cannot take it.
    let (b, _) = shared.daemon(
        "",
        &once(
            "contender",
            "{bin} lock acquire nightly --global 2> {shared}/refused; echo $? > {shared}/code\n\
             while [ ! -e {shared}/go ]; do sleep 0.1; done\n\
             date +%s.%N > {shared}/asked\n\
             {bin} lock acquire nightly --global --wait --timeout 40 > {shared}/token\n\
             echo $? > {shared}/code2; date +%s.%N > {shared}/got",
            "",
        ),
    );
    let start = Instant::now();
    while shared.read("code").is_empty() {
        assert!(start.elapsed() < LONG, "{}", b.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(shared.read("code"), "3\n", "{}", b.log());
    assert_eq!(shared.read("refused"), "lock not acquired: nightly\n");
    // kill -9 node A with the lock held: nobody releases it, its lease
    // lapses after the TTL (5 s) and B's waiting acquire gets it.
    a.signal(Signal::SIGKILL);
    let _ = a.wait_exit(LONG);
    std::fs::write(shared.path("go"), "").expect("go");
    shared.wait_for("contender.done", &b);
    assert_eq!(shared.read("code2"), "0\n", "{}", b.log());
    assert_eq!(shared.read("token").trim().len(), 32, "a hold token");
    let asked: f64 = shared.read("asked").trim().parse().expect("a time");
    let got: f64 = shared.read("got").trim().parse().expect("a time");
    assert!(
        got - asked < 10.0,
        "the lapsed lease took {} s",
        got - asked
    );
}

#[test]
fn an_idempotency_key_claimed_on_one_daemon_is_seen_on_another() {
    let shared = Shared::new();
    let claim = "{bin} idempotent invoice-42 --global; echo $? > {shared}/{node}";
    let (mut a, _) = shared.daemon("", &once("bill", &claim.replace("{node}", "a"), ""));
    shared.wait_for("bill.done", &a);
    // Stopped first: with its marker gone it would claim again.
    stop(&mut a);
    std::fs::remove_file(shared.path("bill.started")).expect("reset");
    std::fs::remove_file(shared.path("bill.done")).expect("reset");
    let (b, _) = shared.daemon("", &once("bill", &claim.replace("{node}", "b"), ""));
    shared.wait_for("bill.done", &b);
    assert_eq!(shared.read("a"), "0\n", "a fresh claim");
    assert_eq!(shared.read("b"), "5\n", "already claimed elsewhere");
}

#[test]
fn a_secret_reaches_its_run_only_and_never_a_log_line_or_the_archived_output() {
    let shared = Shared::new();
    std::fs::write(shared.path("secret-file"), "file-secret-value\n").expect("file");
    let secret_jobs = once(
        "deploy",
        "{bin} secret get apikey > {shared}/apikey\n\
         {bin} secret get fromfile > {shared}/fromfile\n\
         {bin} secret list > {shared}/names\n\
         echo \"the key is $({bin} secret get apikey)\"\n\
         echo \"$CRONSTABLE_STATE_URL\" > {shared}/url\n\
         echo \"$CRONSTABLE_STATE_TOKEN\" > {shared}/token\n\
         env > {shared}/env",
        "    archiveOutput: true\n    captureStdout: true\n    secrets:\n      - name: apikey\n        \
         value: s3cr3t-api-key-XYZ\n      - name: fromfile\n        fromFile: {shared}/secret-file\n",
    ) + &once(
        "other",
        "{bin} secret get apikey 2> {shared}/other-err; echo $? > {shared}/other-code\n\
         {bin} state get x --scope deploy 2> {shared}/scope-err; echo $? > {shared}/scope-code",
        "",
    );
    let (mut daemon, port) = shared.daemon("", &secret_jobs);
    shared.wait_for("deploy.done", &daemon);
    shared.wait_for("other.done", &daemon);
    assert_eq!(
        shared.read("apikey"),
        "s3cr3t-api-key-XYZ\n",
        "{}",
        daemon.log()
    );
    assert_eq!(shared.read("fromfile"), "file-secret-value\n");
    assert_eq!(shared.read("names"), "apikey\nfromfile\n");
    // Not in the environment: only the endpoint serves it.
    assert!(!shared.read("env").contains("s3cr3t"));
    // Another job's token reaches neither this job's secrets nor its scope.
    assert_eq!(shared.read("other-code"), "4\n");
    assert_eq!(shared.read("other-err"), "secret not staged: apikey\n");
    assert_eq!(shared.read("scope-code"), "1\n");
    assert_eq!(
        shared.read("scope-err"),
        "cronstable state: scope 'deploy' is not permitted for job 'other'; add it to \
         stateAllowedScopes to allow this job to use it\n"
    );
    // The run's token dies with the run.
    let url = shared.read("url");
    let token = shared.read("token");
    let endpoint_port: u16 = url
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the endpoint's port");
    std::thread::sleep(Duration::from_millis(500));
    let stolen = http::request(
        endpoint_port,
        "GET",
        "/v1/secret/get?name=apikey",
        &[("Authorization", &format!("Bearer {}", token.trim()))],
        "",
    );
    assert_eq!(stolen.status, 401, "{}", stolen.body);
    assert_eq!(stolen.body, "{\"error\": \"401: Unauthorized\"}");
    // The archived output and the runs endpoint show the mask.
    let runs = http::get(port, "/jobs/deploy/runs").json();
    let text = runs.to_string();
    assert!(!text.contains("s3cr3t"), "{text}");
    stop(&mut daemon);
    let log = daemon.log() + &daemon.stdout();
    assert!(
        log.contains("the key is ***REDACTED***"),
        "the job's echoed line is masked:\n{log}"
    );
    assert!(!log.contains("s3cr3t-api-key-XYZ"), "{log}");
    assert!(!log.contains("file-secret-value"), "{log}");
    let mut archived = String::new();
    for entry in walk(&shared.path("store")) {
        if let Ok(text) = std::fs::read_to_string(&entry) {
            archived.push_str(&text);
        }
    }
    assert!(
        archived.contains("REDACTED"),
        "the archive holds the output"
    );
    assert!(!archived.contains("s3cr3t"), "the store holds the secret");
}

fn walk(root: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn oversized_values_and_artifacts_are_refused_with_the_manuals_texts() {
    let shared = Shared::new();
    std::fs::write(shared.path("big"), "x".repeat(30)).expect("big");
    let (daemon, _) = shared.daemon(
        "  jobApi:\n    maxValueBytes: 10\n    maxArtifactBytes: 20\n",
        &once(
            "big",
            "{bin} state set k xxxxxxxxxxxxxxxxxxxx 2> {shared}/value-err; echo $? > {shared}/value-code\n\
             {bin} artifact put a {shared}/big 2> {shared}/art-err; echo $? > {shared}/art-code\n\
             {bin} state set small ok; echo $? > {shared}/small-code",
            "",
        ),
    );
    shared.wait_for("big.done", &daemon);
    assert_eq!(shared.read("value-code"), "1\n", "{}", daemon.log());
    assert_eq!(
        shared.read("value-err"),
        "cronstable state: value of 22 bytes exceeds the configured limit of 10 bytes\n"
    );
    assert_eq!(shared.read("art-code"), "1\n");
    assert_eq!(
        shared.read("art-err"),
        "cronstable artifact: artifact of 30 bytes exceeds the configured limit of 20 bytes\n"
    );
    assert_eq!(shared.read("small-code"), "0\n");
}

#[test]
fn the_originals_job_cli_speaks_to_our_endpoint() {
    let Some(original) = support::original::original() else {
        return;
    };
    let shared = Shared::new();
    std::fs::write(shared.path("payload"), "from the original\n").expect("payload");
    let orig = original.display().to_string();
    let script = "O={orig}\n\
         $O state set mood calm\n\
         $O state get mood > {shared}/mood\n\
         $O cursor advance pos 7 > {shared}/pos\n\
         $O idempotent once; echo $? > {shared}/once1\n\
         $O idempotent once; echo $? > {shared}/once2\n\
         $O artifact put blob {shared}/payload > {shared}/sha\n\
         $O artifact get blob -o {shared}/blob\n\
         $O lock run mutex -- sh -c 'exit 7'; echo $? > {shared}/lockrun\n\
         $O secret get token > {shared}/secret\n\
         $O state get missing; echo $? > {shared}/missing\n\
         {bin} state get mood > {shared}/ours"
        .replace("{orig}", &orig);
    let (daemon, _) = shared.daemon(
        "",
        &once(
            "interop",
            &script,
            "    secrets:\n      - name: token\n        value: t0ken-value\n",
        ),
    );
    shared.wait_for("interop.done", &daemon);
    let log = daemon.log();
    assert_eq!(shared.read("mood"), "calm\n", "{log}");
    assert_eq!(shared.read("pos"), "7\n");
    assert_eq!(shared.read("once1"), "0\n");
    assert_eq!(shared.read("once2"), "5\n");
    assert_eq!(shared.read("sha").trim().len(), 64);
    assert_eq!(shared.read("blob"), "from the original\n");
    assert_eq!(shared.read("lockrun"), "7\n");
    assert_eq!(shared.read("secret"), "t0ken-value\n");
    assert_eq!(shared.read("missing"), "4\n");
    assert_eq!(
        shared.read("ours"),
        "calm\n",
        "our client reads what it wrote"
    );
}
