//! What the leadership store remembers (the `@reboot`-ran set, the last
//! fires and the pauses), per backend against the real store: a real etcd server, the
//! fake Kubernetes API server (Lease semantics real: resourceVersion
//! conflicts, PUT replacing metadata), a temp directory. Each test runs
//! two nodes through the library's own driver and reaches the records the
//! way the scheduler does, through `LeaderRecords`: the leader writes, the
//! follower's writes are refused and its reads see the leader's writes,
//! the records survive the leader's release and the survivor's takeover,
//! and a set recorded for another job-set id does not count.

mod support;

use chrono::{DateTime, TimeZone, Utc};
use cronstable::cluster::driver::Leadership;
use cronstable::cluster::records::{RecordsHandle, RecordsLink};
use cronstable::cluster::Backend;
use cronstable::config::cluster::{EtcdSettings, FilesystemSettings, KubernetesSettings};
use cronstable::scheduler::pause::{PauseMark, PauseWindow};
use cronstable::scheduler::ports::{LeaderRecords, RecordsError};
use cronstable::status::BackendKind;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use support::etcd::{self, Etcd};
use support::kube_fake::FakeApiServer;

/// How long a takeover may take before the test fails (a bound for a
/// hung test, not a speed claim).
const PATIENCE: Duration = Duration::from_secs(30);

const ID_1: &str = "v1:first-job-set";
const ID_2: &str = "v1:second-job-set";

fn at(minute: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_782_241_200 + minute * 60, 0)
        .single()
        .expect("a valid instant")
}

/// One node: its running backend and the scheduler's view of it.
struct Node {
    leadership: Option<Leadership>,
    link: Arc<RecordsLink>,
    records: RecordsHandle,
}

impl Node {
    async fn start(backend: Box<dyn Backend>, name: &str) -> Node {
        let link = RecordsLink::new();
        let kind = match backend.name() {
            "etcd" => BackendKind::Etcd,
            "filesystem" => BackendKind::Filesystem,
            _ => BackendKind::Kubernetes,
        };
        let leadership = Leadership::start(
            backend,
            kind,
            name.to_owned(),
            Duration::from_secs(5),
            Arc::clone(&link),
        )
        .await;
        Node {
            leadership: Some(leadership),
            records: RecordsHandle::new(Arc::clone(&link)),
            link,
        }
    }

    /// Stops the backend, releasing its lease.
    async fn stop(&mut self) {
        if let Some(leadership) = self.leadership.take() {
            leadership.stop().await;
        }
    }

    /// Waits until this node has led `term` times.
    async fn wait_for_term(&self, term: u64) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while self.link.term() < term {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no takeover within {PATIENCE:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A pause taken `since` seconds from now, lasting until `until`
/// seconds from now (pauses are judged against the wall clock).
fn paused(since: i64, until: i64) -> PauseMark {
    let now = Utc::now();
    PauseMark::Paused(PauseWindow {
        since: now + chrono::TimeDelta::seconds(since),
        until: now + chrono::TimeDelta::seconds(until),
        note: "migration".into(),
        by: "ops".into(),
        channel: "api".into(),
    })
}

fn resumed(mark: &PauseMark, after: i64) -> PauseMark {
    PauseMark::Resumed {
        at: mark.at() + chrono::TimeDelta::seconds(after),
        by: "ops".into(),
    }
}

fn set(jobs: &[&str]) -> HashSet<String> {
    jobs.iter().map(|j| (*j).to_owned()).collect()
}

/// The scenario every backend must pass. `make` builds node `name`'s
/// backend; `after_release` looks at the raw store once the first leader
/// released its lease.
async fn leader_writes_follower_reads_and_records_survive_takeover<F, Fut>(
    make: F,
    after_release: impl FnOnce(),
) where
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = Box<dyn Backend>>,
{
    let mut a = Node::start(make("a").await, "a").await;
    assert_eq!(
        a.link.term(),
        1,
        "the first node leads after its first round"
    );
    let mut b = Node::start(make("b").await, "b").await;
    assert_eq!(b.link.term(), 0, "the second one follows");

    // Nothing recorded yet.
    assert_eq!(b.records.reboot_ran(ID_1).await, Ok(HashSet::new()));
    assert_eq!(a.records.last_fires().await, Ok(HashMap::new()));
    assert_eq!(b.records.pauses().await, Ok(HashMap::new()));

    // The leader records pauses and resumes; the newer mark of a job
    // wins, and a pause that already ended is dropped as it is written.
    let tick_pause = paused(0, 3600);
    let tock_pause = paused(-10, 3600);
    let tock_resume = resumed(&tock_pause, 5);
    for (job, mark) in [
        ("tick", tick_pause.clone()),
        ("tock", tock_pause.clone()),
        ("tock", tock_resume.clone()),
        // Late and older than the resume: ignored.
        ("tock", paused(-20, 3600)),
        ("gone", paused(-7200, -3600)),
    ] {
        a.records
            .record_pause(job, mark)
            .await
            .unwrap_or_else(|e| panic!("{job}: {e}"));
    }
    let marks = HashMap::from([
        ("tick".to_owned(), tick_pause.clone()),
        ("tock".to_owned(), tock_resume.clone()),
    ]);
    assert_eq!(a.records.pauses().await, Ok(marks.clone()));
    assert_eq!(
        b.records
            .record_pause("tick", resumed(&tick_pause, 1))
            .await,
        Err(RecordsError::NotLeader)
    );
    assert_eq!(b.records.pauses().await, Ok(marks.clone()));

    // The leader records; repeating a record changes nothing.
    a.records
        .mark_reboot_ran(ID_1, "boot")
        .await
        .expect("marked");
    a.records
        .mark_reboot_ran(ID_1, "boot")
        .await
        .expect("again");
    a.records
        .mark_reboot_ran(ID_1, "warm")
        .await
        .expect("marked");
    a.records
        .record_fire("tick", at(2))
        .await
        .expect("recorded");
    a.records
        .record_fire("tick", at(1))
        .await
        .expect("an older fire is accepted and ignored");

    // The follower may not write, and reads what the leader wrote.
    assert_eq!(
        b.records.mark_reboot_ran(ID_1, "sneaky").await,
        Err(RecordsError::NotLeader)
    );
    assert_eq!(
        b.records.record_fire("tick", at(9)).await,
        Err(RecordsError::NotLeader)
    );
    assert_eq!(b.records.reboot_ran(ID_1).await, Ok(set(&["boot", "warm"])));
    assert_eq!(
        b.records.reboot_ran(ID_2).await,
        Ok(HashSet::new()),
        "another job set's record does not count"
    );
    assert_eq!(
        b.records.last_fires().await,
        Ok(HashMap::from([("tick".to_owned(), at(2))]))
    );

    // The leader steps down (releasing); the survivor takes over.
    a.stop().await;
    assert_eq!(
        a.records.reboot_ran(ID_1).await,
        Err(RecordsError::NoBackend),
        "a stopped backend answers nothing"
    );
    after_release();
    b.wait_for_term(1).await;
    assert_eq!(
        b.records.reboot_ran(ID_1).await,
        Ok(set(&["boot", "warm"])),
        "the new leader sees what the old one recorded"
    );
    assert_eq!(
        b.records.last_fires().await,
        Ok(HashMap::from([("tick".to_owned(), at(2))]))
    );
    assert_eq!(
        b.records.pauses().await,
        Ok(marks),
        "the new leader sees the old one's pauses"
    );
    let tick_resume = resumed(&tick_pause, 30);
    b.records
        .record_pause("tick", tick_resume.clone())
        .await
        .expect("resumed");
    assert_eq!(
        b.records.pauses().await,
        Ok(HashMap::from([
            ("tick".to_owned(), tick_resume),
            ("tock".to_owned(), tock_resume),
        ]))
    );

    // A new job set starts its own @reboot record.
    b.records
        .mark_reboot_ran(ID_2, "boot")
        .await
        .expect("marked");
    assert_eq!(b.records.reboot_ran(ID_2).await, Ok(set(&["boot"])));
    b.records
        .record_fire("tock", at(3))
        .await
        .expect("recorded");
    b.records
        .record_fire("tick", at(4))
        .await
        .expect("recorded");
    assert_eq!(
        b.records.last_fires().await,
        Ok(HashMap::from([
            ("tick".to_owned(), at(4)),
            ("tock".to_owned(), at(3)),
        ]))
    );
    b.stop().await;
}

/// The pauses document of a Lease annotation or an etcd key as the
/// first leader left it: compact JSON, `tick` paused, `tock` resumed.
fn assert_pauses_document(text: &str) {
    assert!(!text.contains(' '), "compact: {text}");
    let doc: Value = serde_json::from_str(text).expect("JSON");
    let keys: Vec<&String> = doc.as_object().expect("an object").keys().collect();
    assert_eq!(keys, ["tick", "tock"], "{text}");
    let tick: Vec<&String> = doc["tick"].as_object().expect("tick").keys().collect();
    assert_eq!(tick, ["by", "channel", "note", "since", "until"], "{text}");
    assert_eq!(doc["tick"]["note"], "migration");
    let tock: Vec<&String> = doc["tock"].as_object().expect("tock").keys().collect();
    assert_eq!(tock, ["by", "resumed"], "{text}");
}

fn kube_settings(name: &str) -> KubernetesSettings {
    KubernetesSettings {
        lease_name: "cronstable-leader".to_owned(),
        lease_namespace: None,
        lease_duration_seconds: 6,
        renew_deadline_seconds: 4,
        retry_period_seconds: 1,
        identity: name.to_owned(),
        kubeconfig: None,
        api_server: None,
    }
}

async fn kube_client(fake: &FakeApiServer, dir: &std::path::Path) -> kube::Client {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let path = dir.join("kubeconfig");
    fake.write_kubeconfig(&path, "default")
        .expect("write kubeconfig");
    let kc = Kubeconfig::read_from(&path).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    kube::Client::try_from(config).expect("client builds")
}

#[tokio::test]
async fn kubernetes_keeps_the_records_as_lease_annotations() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let client = kube_client(&fake, dir.path()).await;
    let lease = || {
        fake.get(
            "coordination.k8s.io/v1",
            "Lease",
            "default",
            "cronstable-leader",
        )
        .expect("the Lease exists")
    };
    leader_writes_follower_reads_and_records_survive_takeover(
        |name| {
            let client = client.clone();
            async move {
                Box::new(cronstable::cluster::kubernetes::KubernetesLease::new(
                    client,
                    "default".to_owned(),
                    &kube_settings(name),
                )) as Box<dyn Backend>
            }
        },
        || {
            // Released, and the annotations kept, in the original's format.
            let lease = lease();
            let holder = lease.pointer("/spec/holderIdentity");
            assert!(holder.is_none_or(Value::is_null), "released: {holder:?}");
            assert_eq!(
                lease.pointer("/metadata/annotations/cronstable.io~1reboot-ran"),
                Some(&Value::from(
                    r#"{"jobSetId":"v1:first-job-set","jobs":["boot","warm"]}"#
                ))
            );
            assert_eq!(
                lease.pointer("/metadata/annotations/cronstable.io~1last-fires"),
                Some(&Value::from(r#"{"tick":"2026-06-23T19:02:00Z"}"#))
            );
            let pauses = lease
                .pointer("/metadata/annotations/cronstable.io~1pauses")
                .and_then(Value::as_str)
                .expect("the pauses annotation");
            assert_pauses_document(pauses);
        },
    )
    .await;
    // The second leader's writes replaced the set and kept both fires, and
    // its release kept them too.
    let lease = lease();
    assert_eq!(
        lease.pointer("/metadata/annotations/cronstable.io~1reboot-ran"),
        Some(&Value::from(
            r#"{"jobSetId":"v1:second-job-set","jobs":["boot"]}"#
        ))
    );
    assert_eq!(
        lease.pointer("/metadata/annotations/cronstable.io~1last-fires"),
        Some(&Value::from(
            r#"{"tick":"2026-06-23T19:04:00Z","tock":"2026-06-23T19:03:00Z"}"#
        ))
    );
}

#[tokio::test]
async fn kubernetes_record_writes_retry_a_conflict_and_keep_foreign_annotations() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let client = kube_client(&fake, dir.path()).await;
    // Slow rounds (every 9 s), so no renewal re-reads the Lease between
    // the foreign change below and the record write.
    let settings = KubernetesSettings {
        lease_duration_seconds: 30,
        renew_deadline_seconds: 20,
        retry_period_seconds: 9,
        ..kube_settings("a")
    };
    let backend = Box::new(cronstable::cluster::kubernetes::KubernetesLease::new(
        client.clone(),
        "default".to_owned(),
        &settings,
    ));
    let mut a = Node::start(backend, "a").await;
    assert_eq!(a.link.term(), 1);
    // Someone else (a kubectl annotate) changes the Lease behind the
    // holder's back: its next write meets a 409, re-reads, and lands
    // without dropping that annotation.
    let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
        kube::Api::namespaced(client, "default");
    let patch = serde_json::json!({"metadata": {"annotations": {"example.com/owner": "ops"}}});
    api.patch(
        "cronstable-leader",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await
    .expect("annotated");
    fake.clear_requests();
    a.records
        .mark_reboot_ran(ID_1, "boot")
        .await
        .expect("the write retries the conflict");
    let lease = fake
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            "default",
            "cronstable-leader",
        )
        .expect("the Lease");
    assert_eq!(
        lease.pointer("/metadata/annotations/example.com~1owner"),
        Some(&Value::from("ops"))
    );
    assert_eq!(
        lease.pointer("/metadata/annotations/cronstable.io~1reboot-ran"),
        Some(&Value::from(
            r#"{"jobSetId":"v1:first-job-set","jobs":["boot"]}"#
        ))
    );
    let methods: Vec<String> = fake.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(
        methods,
        ["PUT", "GET", "PUT"],
        "a PUT refused with 409, a re-read, a PUT that landed"
    );
    a.stop().await;
}

#[tokio::test]
async fn etcd_keeps_the_records_in_keys_beside_the_election_key() {
    if !etcd::available() {
        return;
    }
    let server = Etcd::start();
    let endpoint = server.endpoint();
    let settings = EtcdSettings {
        endpoints: vec![endpoint.clone()],
        election_name: "cronstable/leader".to_owned(),
        ttl: 5,
        username: None,
        password: None,
        ca: None,
        cert: None,
        key: None,
    };
    let read = |key: &str| -> Option<String> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let body = serde_json::json!({"key": b64.encode(key)}).to_string();
        let reply = support::http::request(server.port, "POST", "/v3/kv/range", &[], &body);
        let value = reply.json()["kvs"][0]["value"].as_str()?.to_owned();
        String::from_utf8(b64.decode(value).ok()?).ok()
    };
    leader_writes_follower_reads_and_records_survive_takeover(
        |name| {
            let settings = settings.clone();
            async move {
                Box::new(
                    cronstable::cluster::etcd::EtcdLease::connect(
                        &settings,
                        name.to_owned(),
                        Duration::from_secs(5),
                    )
                    .await
                    .expect("backend"),
                ) as Box<dyn Backend>
            }
        },
        || {
            // The revoke deleted the election key, not the records.
            assert_eq!(read("cronstable/leader"), None);
            assert_eq!(
                read("cronstable/leader/reboot-ran").as_deref(),
                Some(r#"{"jobSetId":"v1:first-job-set","jobs":["boot","warm"]}"#)
            );
            assert_eq!(
                read("cronstable/leader/last-fires").as_deref(),
                Some(r#"{"tick":"2026-06-23T19:02:00Z"}"#)
            );
            assert_pauses_document(&read("cronstable/leader/pauses").expect("the pauses key"));
        },
    )
    .await;
    assert_eq!(
        read("cronstable/leader/reboot-ran").as_deref(),
        Some(r#"{"jobSetId":"v1:second-job-set","jobs":["boot"]}"#)
    );
}

/// The filesystem settings a `cluster` section on `dir` resolves to.
fn filesystem_settings(dir: &std::path::Path) -> FilesystemSettings {
    let yaml = format!(
        "cluster:\n  backend: filesystem\n  filesystem:\n    path: {}\n    ttl: 3\n    topology: single-node\n",
        dir.display()
    );
    let loaded = cronstable::config::load_sources(&[cronstable::config::Source {
        name: "cluster.yaml".into(),
        text: yaml,
        kind: cronstable::config::SourceKind::Yaml,
        include_dir: None,
    }])
    .expect("the section loads");
    let section = loaded.sections.cluster.expect("a cluster section").value;
    match cronstable::config::cluster::resolve(&section, "host") {
        Ok(cronstable::config::cluster::Resolved::Lease { settings, .. }) => match settings.backend
        {
            cronstable::config::cluster::Backend::Filesystem(fs) => fs,
            other => panic!("not the filesystem backend: {other:?}"),
        },
        other => panic!("unexpected resolution: {other:?}"),
    }
}

#[tokio::test]
async fn the_filesystem_keeps_the_records_as_record_streams() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = filesystem_settings(dir.path());
    let stream = dir.path().join("default/records/cluster%2Freboot-ran");
    let bodies = |stream: &std::path::Path| -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(stream)
            .expect("the stream exists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
            .iter()
            .map(|n| std::fs::read_to_string(stream.join(n)).expect("a record"))
            .collect()
    };
    leader_writes_follower_reads_and_records_survive_takeover(
        |name| {
            let settings = settings.clone();
            async move {
                Box::new(
                    cronstable::cluster::filesystem::FilesystemLease::open(
                        &settings,
                        name,
                        Duration::from_secs(5),
                    )
                    .await
                    .expect("backend"),
                ) as Box<dyn Backend>
            }
        },
        || {
            // The pauses stream keeps the newest mark of each job only
            // (superseded and lapsed marks are pruned as it is written).
            let pauses = bodies(&dir.path().join("default/records/cluster%2Fpauses"));
            assert_eq!(pauses.len(), 2, "{pauses:?}");
            let jobs: Vec<Value> = pauses
                .iter()
                .map(|p| serde_json::from_str::<Value>(p).expect("JSON")["data"]["job"].clone())
                .collect();
            assert!(jobs.contains(&Value::from("tick")) && jobs.contains(&Value::from("tock")));
            // One record per job, in the original's envelope, in the
            // order they were written.
            assert_eq!(
                bodies(&stream),
                vec![
                    r#"{"data":{"job":"boot","jobSetId":"v1:first-job-set"},"schemaVersion":"v1"}"#,
                    r#"{"data":{"job":"warm","jobSetId":"v1:first-job-set"},"schemaVersion":"v1"}"#,
                ]
            );
        },
    )
    .await;
    let fires = bodies(&dir.path().join("default/records/cluster%2Flast-fires"));
    assert!(
        fires.contains(
            &r#"{"data":{"at":"2026-06-23T19:04:00Z","job":"tick"},"schemaVersion":"v1"}"#
                .to_owned()
        ),
        "{fires:?}"
    );
}
