//! Daemon event notifications (`notify`), black-box: real daemons electing
//! over a shared directory (`cluster.backend: filesystem`), a real HTTP
//! receiver for the webhook reporter and a shell reporter writing its
//! environment to a file. A leader is killed for real, another one stops
//! on SIGTERM, and a store that disappears takes quorum away.

mod support;

use nix::sys::signal::Signal;
use std::path::Path;
use std::time::Duration;
use support::cli::{cronstable, write_tree};
use support::daemon::Daemon;
use support::receivers::HttpReceiver;

const PATIENCE: Duration = Duration::from_secs(30);

fn start(node: &str, shared: &Path, notify: &str) -> Daemon {
    let config = format!(
        "cluster:\n  backend: filesystem\n  nodeName: {node}\n  filesystem:\n    path: {}\n    \
         ttl: 3\n{notify}jobs:\n  - name: beat\n    command: 'true'\n    schedule: '@daily'\n",
        shared.display()
    );
    Daemon::start(&config)
}

/// The `text` of each webhook delivery so far.
fn texts(hook: &HttpReceiver) -> Vec<String> {
    hook.requests()
        .iter()
        .map(|r| r.json()["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Waits until a delivery's text starts with `prefix`.
fn wait_text(hook: &HttpReceiver, prefix: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        if let Some(text) = texts(hook).into_iter().find(|t| t.starts_with(prefix)) {
            return text;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "no delivery starting {prefix:?}; got {:?}",
            texts(hook)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn leadership_changes_are_delivered_with_the_default_texts() {
    let shared = tempfile::tempdir().expect("temp dir");
    let hook = HttpReceiver::start();
    let env_dir = tempfile::tempdir().expect("temp dir");
    let notify = format!(
        "notify:\n  report:\n    webhook:\n      url:\n        value: \"{}\"\n    shell:\n      \
         command: env | grep '^CRONSTABLE_' > {}/$CRONSTABLE_JOB_NAME-$(date +%s%N).env\n",
        hook.url("/notify"),
        env_dir.path().display()
    );
    let mut a = start("a", shared.path(), &notify);
    let text = wait_text(&hook, "cronstable leader_change: node a acquired");
    assert_eq!(
        text,
        "cronstable leader_change: node a acquired scheduled-job leadership\nThis node is now \
         the scheduled-job leader.\n"
    );
    a.wait_for_log(
        "Reporting leader_change event: node a acquired",
        1,
        PATIENCE,
    );
    let mut b = start("b", shared.path(), &notify);
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !texts(&hook).iter().any(|t| t.contains("node b")),
        "a follower has nothing to report: {:?}",
        texts(&hook)
    );

    // The leader dies without a word; the survivor takes over and says so.
    a.signal(Signal::SIGKILL);
    let _ = a.wait_exit(PATIENCE);
    wait_text(&hook, "cronstable leader_change: node b acquired");

    // A clean stop gives leadership up, and says so before exiting.
    b.signal(Signal::SIGTERM);
    assert_eq!(b.wait_exit(PATIENCE), Some(0), "{}", b.log());
    let lost = wait_text(&hook, "cronstable leader_change: node b lost");
    assert_eq!(
        lost,
        "cronstable leader_change: node b lost scheduled-job leadership\nThis node is no longer \
         the scheduled-job leader.\n"
    );

    // The shell reporter: the node as the name, the message as the reason.
    let envs: Vec<String> = std::fs::read_dir(env_dir.path())
        .expect("env dir")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    let lost_env = envs
        .iter()
        .find(|e| e.contains("CRONSTABLE_FAIL_REASON=This node is no longer"))
        .unwrap_or_else(|| panic!("no shell report of the loss: {envs:?}"));
    assert!(lost_env.contains("CRONSTABLE_JOB_NAME=b\n"), "{lost_env}");
    assert!(lost_env.contains("CRONSTABLE_FAILED=1\n"), "{lost_env}");
    assert!(lost_env.contains("CRONSTABLE_RETCODE=None\n"), "{lost_env}");
    assert!(envs.len() >= 3, "{envs:?}");
}

#[test]
fn a_vanished_store_is_a_quorum_loss_and_the_allow_list_filters() {
    let root = tempfile::tempdir().expect("temp dir");
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).expect("shared dir");
    let hook = HttpReceiver::start();
    let notify = format!(
        "notify:\n  events: [quorum_loss]\n  report:\n    webhook:\n      url:\n        value: \
         \"{}\"\n",
        hook.url("/notify")
    );
    let daemon = start("solo", &shared, &notify);
    daemon.wait_for_log(
        "cluster: this node acquired scheduled-job leadership",
        1,
        PATIENCE,
    );
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        texts(&hook).is_empty(),
        "leader_change is not on the list: {:?}",
        texts(&hook)
    );
    // The shared directory goes away: rounds fail, quorum and leadership
    // lapse; only the quorum loss is on the list.
    std::fs::rename(&shared, root.path().join("gone")).expect("move the store away");
    let text = wait_text(&hook, "cronstable quorum_loss: node solo left quorum");
    assert_eq!(
        text,
        "cronstable quorum_loss: node solo left quorum\nNo majority reachable; Leader jobs \
         cannot run on this node until quorum is restored.\n"
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(texts(&hook).len(), 1, "{:?}", texts(&hook));
}

#[test]
fn the_notify_section_is_checked_at_load() {
    let cases = [
        ("notify:\n  events: [bogus]\n", "bogus"),
        (
            "notify:\n  report:\n    webhook:\n      url:\n        value: http://x\n      body: \
             '{{ event'\n",
            "notify.report.webhook.body",
        ),
    ];
    for (section, needle) in cases {
        let text =
            format!("{section}jobs:\n  - name: a\n    command: 'true'\n    schedule: '@daily'\n");
        let dir = write_tree(&[("c.yaml", &text)]);
        let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
        assert_eq!(run.code, Some(1), "{text}\n{}", run.stderr);
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
    let ok = "notify:\n  events: [leader_change, dag_failure]\n  report:\n    shell:\n      \
              command: echo hi\njobs:\n  - name: a\n    command: 'true'\n    schedule: '@daily'\n";
    let dir = write_tree(&[("c.yaml", ok)]);
    let run = cronstable(&["-c", "c.yaml", "-v"], dir.path());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}
