//! The fake Kubernetes API server (tests/support/kube_fake) driven by a real
//! `kube::Client` through a kubeconfig, checking the semantics later tests
//! rely on: CRUD and its error answers, watches, 410 Gone and relisting,
//! selectors, optimistic locking on Leases, generation and the status
//! subresource, schema validation, and the outage switch.

mod support;

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, ValidationDirective, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::Client;
use serde_json::{json, Value};
use support::kube_fake::{FakeApiServer, Settings};

/// Upper bound on waiting for an expected event; never a speed assertion.
const PATIENCE: Duration = Duration::from_secs(30);

/// A real client, configured only through a kubeconfig file the fake wrote.
async fn client_for(fake: &FakeApiServer) -> (Client, tempfile::TempDir) {
    client_with_retry(fake, true).await
}

/// `retry` is kube's built-in retry of 429/503/504 (on by default).
async fn client_with_retry(fake: &FakeApiServer, retry: bool) -> (Client, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kubeconfig");
    fake.write_kubeconfig(&path, "default")
        .expect("write kubeconfig");
    let kc = Kubeconfig::read_from(&path).expect("kubeconfig parses");
    let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    config.default_retry = retry;
    assert_eq!(config.default_namespace, "default");
    (Client::try_from(config).expect("client builds"), dir)
}

fn api_error(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn cm(name: &str, labels: Value, data: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }))
    .expect("configmap json")
}

fn rv_of(obj: &impl kube::ResourceExt) -> u64 {
    obj.resource_version()
        .expect("object has a resourceVersion")
        .parse()
        .expect("resourceVersion is a number")
}

#[tokio::test]
async fn configmap_crud_with_conflicts_and_not_found() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);

    let created = cms
        .create(
            &PostParams::default(),
            &cm("app", json!({}), json!({"a": "1"})),
        )
        .await
        .expect("create");
    assert!(created.metadata.uid.is_some(), "uid set");
    assert!(
        created.metadata.creation_timestamp.is_some(),
        "creationTimestamp set"
    );
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(
        created.metadata.generation, None,
        "ConfigMaps carry no generation"
    );
    let rv1 = rv_of(&created);

    let (code, reason, message) = api_error(
        cms.create(&PostParams::default(), &cm("app", json!({}), json!({})))
            .await
            .expect_err("second create must fail"),
    );
    assert_eq!((code, reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(message, "configmaps \"app\" already exists");

    let (code, reason, message) = api_error(cms.get("nope").await.expect_err("missing"));
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
    assert_eq!(message, "configmaps \"nope\" not found");

    // Replace with the current version succeeds and moves the version on.
    let mut edit = created.clone();
    edit.data = Some([("a".to_string(), "2".to_string())].into());
    let replaced = cms
        .replace("app", &PostParams::default(), &edit)
        .await
        .expect("replace");
    assert!(rv_of(&replaced) > rv1);
    assert_eq!(
        replaced.metadata.uid, created.metadata.uid,
        "uid survives updates"
    );

    // The same stale body again is a conflict.
    let (code, reason, _) = api_error(
        cms.replace("app", &PostParams::default(), &edit)
            .await
            .expect_err("stale replace"),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));

    // A body naming another object is refused.
    let mut other = replaced.clone();
    other.metadata.name = Some("other".into());
    let (code, _, message) = api_error(
        cms.replace("app", &PostParams::default(), &other)
            .await
            .expect_err("name mismatch"),
    );
    assert_eq!(code, 400);
    assert!(
        message.contains("does not match the name on the URL"),
        "{message}"
    );

    // Merge, JSON and strategic patches all reach the stored object.
    let merged = cms
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "x"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        merged
            .data
            .as_ref()
            .and_then(|d| d.get("b"))
            .map(String::as_str),
        Some("x")
    );
    assert_eq!(
        merged
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("2")
    );
    let ops: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/data/a"}])).expect("patch json");
    let jp = cms
        .patch("app", &PatchParams::default(), &Patch::Json::<()>(ops))
        .await
        .expect("json patch");
    assert!(jp.data.as_ref().is_some_and(|d| !d.contains_key("a")));
    let sp = cms
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"c": "y"}})),
        )
        .await
        .expect("strategic patch on a built-in kind");
    assert_eq!(
        sp.data
            .as_ref()
            .and_then(|d| d.get("c"))
            .map(String::as_str),
        Some("y")
    );

    // A patch carrying a stale resourceVersion is a precondition: conflict.
    let (code, _, _) = api_error(
        cms.patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"resourceVersion": rv1.to_string()}, "data": {"d": "z"}}),
            ),
        )
        .await
        .expect_err("stale patch"),
    );
    assert_eq!(code, 409);

    // generateName gives a fresh name with the prefix.
    let mut generated = cm("", json!({}), json!({}));
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let g = cms
        .create(&PostParams::default(), &generated)
        .await
        .expect("generateName create");
    let gname = g.metadata.name.clone().expect("a name was generated");
    assert!(gname.starts_with("gen-") && gname.len() == 9, "{gname}");

    // An invalid name is a 422 naming metadata.name.
    let (code, reason, message) = api_error(
        cms.create(
            &PostParams::default(),
            &cm("Bad_Name", json!({}), json!({})),
        )
        .await
        .expect_err("bad name"),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(message.contains("metadata.name"), "{message}");

    // Delete answers with a Success Status for ConfigMaps; then it is gone.
    let deleted = cms
        .delete("app", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(deleted.is_right(), "ConfigMap delete returns a Status");
    let (code, _, _) = api_error(cms.get("app").await.expect_err("gone"));
    assert_eq!(code, 404);
    let (code, _, _) = api_error(
        cms.delete("app", &DeleteParams::default())
            .await
            .expect_err("twice"),
    );
    assert_eq!(code, 404);

    // The log shows what the client did, method and path.
    let log = fake.requests();
    assert!(log
        .iter()
        .any(|r| r.method == "PATCH" && r.path == "/api/v1/namespaces/default/configmaps/app"));
    assert!(log.iter().any(|r| r.method == "DELETE"));
}

async fn next_event(
    stream: &mut (impl futures_util::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
) -> (String, String, u64) {
    loop {
        let ev = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("an event arrives")
            .expect("stream still open")
            .expect("event decodes");
        match ev {
            WatchEvent::Added(o) => {
                return (
                    "ADDED".into(),
                    o.metadata.name.clone().unwrap_or_default(),
                    rv_of(&o),
                )
            }
            WatchEvent::Modified(o) => {
                return (
                    "MODIFIED".into(),
                    o.metadata.name.clone().unwrap_or_default(),
                    rv_of(&o),
                )
            }
            WatchEvent::Deleted(o) => {
                return (
                    "DELETED".into(),
                    o.metadata.name.clone().unwrap_or_default(),
                    rv_of(&o),
                )
            }
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => return ("ERROR".into(), e.reason.clone(), u64::from(e.code)),
        }
    }
}

#[tokio::test]
async fn watch_sees_changes_in_order_and_resumes_from_a_version() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);

    let list = cms.list(&ListParams::default()).await.expect("list");
    let start = list
        .metadata
        .resource_version
        .clone()
        .expect("list carries a resourceVersion");
    let mut stream = cms
        .watch(&WatchParams::default(), &start)
        .await
        .expect("watch")
        .boxed();

    cms.create(
        &PostParams::default(),
        &cm("w", json!({}), json!({"k": "1"})),
    )
    .await
    .expect("create");
    cms.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .expect("patch");
    cms.delete("w", &DeleteParams::default())
        .await
        .expect("delete");

    let added = next_event(&mut stream).await;
    let modified = next_event(&mut stream).await;
    let deleted = next_event(&mut stream).await;
    assert_eq!((added.0.as_str(), added.1.as_str()), ("ADDED", "w"));
    assert_eq!(modified.0, "MODIFIED");
    assert_eq!(deleted.0, "DELETED");
    assert!(
        added.2 < modified.2 && modified.2 < deleted.2,
        "versions increase"
    );

    // A new watch from the ADDED version replays only what came after it.
    let mut resumed = cms
        .watch(&WatchParams::default(), &added.2.to_string())
        .await
        .expect("watch")
        .boxed();
    assert_eq!(next_event(&mut resumed).await.0, "MODIFIED");
    assert_eq!(next_event(&mut resumed).await.0, "DELETED");

    // A watch from "0" starts with the current state as ADDED events.
    cms.create(&PostParams::default(), &cm("present", json!({}), json!({})))
        .await
        .expect("create");
    let mut from_zero = cms
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    let first = next_event(&mut from_zero).await;
    assert_eq!((first.0.as_str(), first.1.as_str()), ("ADDED", "present"));
}

#[tokio::test]
async fn bookmarks_arrive_and_timeout_seconds_ends_the_watch() {
    let fake = FakeApiServer::start_with(Settings {
        bookmark_interval: Duration::from_millis(100),
        ..Settings::default()
    })
    .await
    .expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut stream = cms
        .watch(&WatchParams::default().timeout(2), "0")
        .await
        .expect("watch")
        .boxed();
    let mut bookmarks = 0;
    // The stream must end by itself (timeoutSeconds); PATIENCE only guards
    // against a hang.
    while let Some(ev) = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("watch ends by timeoutSeconds")
    {
        if let WatchEvent::Bookmark(b) = ev.expect("event decodes") {
            assert!(!b.metadata.resource_version.is_empty());
            bookmarks += 1;
        }
    }
    assert!(bookmarks > 0, "allowWatchBookmarks brings BOOKMARK events");
    let watch_req = fake
        .requests()
        .into_iter()
        .find(|r| r.is_watch())
        .expect("a watch request");
    assert!(watch_req.has_param("allowWatchBookmarks", "true"));
    assert!(watch_req.has_param("timeoutSeconds", "2"));
}

#[tokio::test]
async fn expired_history_gives_410_and_the_watcher_relists() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(&PostParams::default(), &cm("before", json!({}), json!({})))
        .await
        .expect("create");
    let old_rv = fake.resource_version();

    let mut events = watcher(cms.clone(), watcher::Config::default()).boxed();
    let mut seen = Vec::new();
    // Wait until the first full list is in.
    loop {
        let ev = tokio::time::timeout(PATIENCE, events.try_next())
            .await
            .expect("watcher event")
            .expect("no error")
            .expect("open");
        match ev {
            watcher::Event::InitApply(o) => seen.push(o.metadata.name.unwrap_or_default()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(seen, vec!["before".to_string()]);
    let lists_before = fake
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.is_watch())
        .count();

    cms.create(&PostParams::default(), &cm("bump", json!({}), json!({})))
        .await
        .expect("create");
    fake.expire_history();
    cms.create(&PostParams::default(), &cm("after", json!({}), json!({})))
        .await
        .expect("create");

    // The watcher reports the 410, relists by itself and sees "after".
    let mut got_gone = false;
    let mut relisted = Vec::new();
    loop {
        match tokio::time::timeout(PATIENCE, events.next())
            .await
            .expect("watcher event")
            .expect("open")
        {
            Err(e) => {
                got_gone |= format!("{e:?}").contains("410");
            }
            Ok(watcher::Event::InitApply(o)) => relisted.push(o.metadata.name.unwrap_or_default()),
            Ok(watcher::Event::InitDone) if !relisted.is_empty() => break,
            Ok(_) => {}
        }
    }
    assert!(got_gone, "the watcher saw the 410 Expired");
    relisted.sort();
    assert_eq!(relisted, vec!["after", "before", "bump"]);
    let lists_after = fake
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.is_watch())
        .count();
    assert!(lists_after > lists_before, "a relist happened");

    // A plain watch from the old version now gets the ERROR 410 event.
    let mut stale = cms
        .watch(&WatchParams::default(), &old_rv.to_string())
        .await
        .expect("watch")
        .boxed();
    let (kind, reason, code) = next_event(&mut stale).await;
    assert_eq!(
        (kind.as_str(), reason.as_str(), code),
        ("ERROR", "Expired", 410)
    );
}

#[tokio::test]
async fn bounded_history_expires_old_versions() {
    let fake = FakeApiServer::start_with(Settings {
        history_limit: 3,
        ..Settings::default()
    })
    .await
    .expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let start = fake.resource_version();
    for i in 0..5 {
        cms.create(
            &PostParams::default(),
            &cm(&format!("c{i}"), json!({}), json!({})),
        )
        .await
        .expect("create");
    }
    let mut stale = cms
        .watch(&WatchParams::default(), &start.to_string())
        .await
        .expect("watch")
        .boxed();
    assert_eq!(next_event(&mut stale).await.2, 410);
    // The newest versions are still in the history and resume fine.
    let recent = fake.resource_version() - 1;
    let mut fresh = cms
        .watch(&WatchParams::default(), &recent.to_string())
        .await
        .expect("watch")
        .boxed();
    let ev = next_event(&mut fresh).await;
    assert_eq!((ev.0.as_str(), ev.1.as_str()), ("ADDED", "c4"));
}

#[tokio::test]
async fn label_and_field_selectors_filter_lists_and_watches() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "other");
    cms.create(
        &PostParams::default(),
        &cm("web-a", json!({"app": "web", "tier": "a"}), json!({})),
    )
    .await
    .expect("create");
    cms.create(
        &PostParams::default(),
        &cm("web-b", json!({"app": "web", "tier": "b"}), json!({})),
    )
    .await
    .expect("create");
    cms.create(
        &PostParams::default(),
        &cm("db", json!({"app": "db", "tier": "c"}), json!({})),
    )
    .await
    .expect("create");
    cms.create(&PostParams::default(), &cm("plain", json!({}), json!({})))
        .await
        .expect("create");
    other
        .create(
            &PostParams::default(),
            &cm("web-x", json!({"app": "web"}), json!({})),
        )
        .await
        .expect("create");

    async fn names(api: &Api<ConfigMap>, lp: ListParams) -> Vec<String> {
        let mut v: Vec<String> = api
            .list(&lp)
            .await
            .expect("list")
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect();
        v.sort();
        v
    }
    assert_eq!(
        names(&cms, ListParams::default().labels("app=web")).await,
        ["web-a", "web-b"]
    );
    assert_eq!(
        names(&cms, ListParams::default().labels("app!=web")).await,
        ["db", "plain"]
    );
    assert_eq!(
        names(&cms, ListParams::default().labels("tier in (a,c)")).await,
        ["db", "web-a"]
    );
    assert_eq!(
        names(&cms, ListParams::default().labels("tier notin (a,c)")).await,
        ["plain", "web-b"]
    );
    assert_eq!(
        names(&cms, ListParams::default().labels("app")).await,
        ["db", "web-a", "web-b"]
    );
    assert_eq!(
        names(&cms, ListParams::default().labels("!app")).await,
        ["plain"]
    );
    assert_eq!(
        names(&cms, ListParams::default().labels("app=web,tier=b")).await,
        ["web-b"]
    );
    assert_eq!(
        names(&cms, ListParams::default().fields("metadata.name=db")).await,
        ["db"]
    );
    let all: Api<ConfigMap> = Api::all(client);
    assert_eq!(
        names(&all, ListParams::default().labels("app=web")).await,
        ["web-a", "web-b", "web-x"]
    );
    assert_eq!(
        names(
            &all,
            ListParams::default().fields("metadata.namespace=other")
        )
        .await,
        ["web-x"]
    );

    let (code, _, _) = api_error(
        cms.list(&ListParams::default().labels("app in ("))
            .await
            .expect_err("bad selector"),
    );
    assert_eq!(code, 400);
    let (code, _, message) = api_error(
        cms.list(&ListParams::default().fields("data.x=1"))
            .await
            .expect_err("bad field"),
    );
    assert_eq!(code, 400);
    assert!(message.contains("field label not supported"), "{message}");

    // Pages: limit and continue walk the whole set.
    let page = cms
        .list(&ListParams::default().limit(3))
        .await
        .expect("page 1");
    assert_eq!(page.items.len(), 3);
    let token = page.metadata.continue_.clone().expect("a continue token");
    let rest = cms
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .expect("page 2");
    assert_eq!(rest.items.len(), 1);
    assert!(rest.metadata.continue_.as_deref().unwrap_or("").is_empty());

    // A watch with a selector sees an object that leaves it as DELETED.
    let mut stream = cms
        .watch(
            &WatchParams::default().labels("app=web"),
            &fake.resource_version().to_string(),
        )
        .await
        .expect("watch")
        .boxed();
    cms.patch(
        "web-a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "gone"}}})),
    )
    .await
    .expect("patch");
    cms.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await
    .expect("patch");
    let left = next_event(&mut stream).await;
    let joined = next_event(&mut stream).await;
    assert_eq!((left.0.as_str(), left.1.as_str()), ("DELETED", "web-a"));
    assert_eq!((joined.0.as_str(), joined.1.as_str()), ("ADDED", "db"));
}

#[tokio::test]
async fn lease_replace_with_a_stale_version_conflicts() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let leases: Api<Lease> = Api::default_namespaced(client);
    let lease = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("leader".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create lease");

    // Two candidates read the same version; only the first write wins.
    let mut seen_by_a = leases.get("leader").await.expect("get");
    let mut seen_by_b = seen_by_a.clone();
    seen_by_a.spec.as_mut().expect("spec").holder_identity = Some("a".into());
    seen_by_a.spec.as_mut().expect("spec").lease_transitions = Some(1);
    seen_by_b.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    leases
        .replace("leader", &PostParams::default(), &seen_by_a)
        .await
        .expect("first write wins");
    let (code, reason, message) = api_error(
        leases
            .replace("leader", &PostParams::default(), &seen_by_b)
            .await
            .expect_err("second write loses"),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(
        message
            .starts_with("Operation cannot be fulfilled on leases.coordination.k8s.io \"leader\""),
        "{message}"
    );
    let now = leases.get("leader").await.expect("get");
    assert_eq!(
        now.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("a")
    );
    assert_eq!(now.metadata.generation, None, "Leases carry no generation");
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["size"],
                            "properties": {
                                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                "color": {"type": "string", "enum": ["red", "blue"]},
                                "name": {"type": "string", "pattern": "^[a-z]+$"},
                                "mode": {"type": "string", "default": "auto"},
                                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                            },
                        },
                        "status": {
                            "type": "object",
                            "properties": {"ready": {"type": "boolean"}, "observed": {"type": "integer"}},
                        },
                    },
                }},
            }],
        },
    })
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("widget json")
}

async fn widgets(fake: &FakeApiServer, client: Client) -> Api<DynamicObject> {
    // Register the CRD the way a user would: POST it to the API.
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let crd: DynamicObject = serde_json::from_value(widget_crd()).expect("crd json");
    let stored = crds
        .create(&PostParams::default(), &crd)
        .await
        .expect("CRD accepted");
    let established = stored.data["status"]["conditions"]
        .as_array()
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    assert!(established, "the CRD reports Established");
    assert!(fake
        .requests()
        .iter()
        .any(|r| r.path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"));
    Api::namespaced_with(client, "default", &widget_resource())
}

#[tokio::test]
async fn custom_resource_generation_follows_spec_not_status() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let api = widgets(&fake, client).await;

    let created = api
        .create(&PostParams::default(), &widget("w1", json!({"size": 2})))
        .await
        .expect("create");
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.data["spec"]["mode"], "auto",
        "schema default applied"
    );

    let respec = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 3}})),
        )
        .await
        .expect("spec patch");
    assert_eq!(
        respec.metadata.generation,
        Some(2),
        "a spec change bumps generation"
    );

    let st = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true, "observed": 2}, "spec": {"size": 9}})),
        )
        .await
        .expect("status patch");
    assert_eq!(
        st.metadata.generation,
        Some(2),
        "a status write never bumps generation"
    );
    assert_eq!(st.data["status"]["ready"], true);
    assert_eq!(
        st.data["spec"]["size"], 3,
        "the status subresource ignores spec"
    );
    assert!(rv_of(&st) > rv_of(&respec));

    // Through the main resource, status changes are ignored.
    let main = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": false}})),
        )
        .await
        .expect("main patch");
    assert_eq!(main.data["status"]["ready"], true);
    assert_eq!(main.metadata.generation, Some(2));

    // Metadata-only changes do not bump generation either.
    let labelled = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("label patch");
    assert_eq!(labelled.metadata.generation, Some(2));
    assert!(rv_of(&labelled) > rv_of(&st));

    let got = api.get_status("w1").await.expect("get status");
    assert_eq!(got.data["status"]["observed"], 2);

    // Custom resources refuse strategic merge patches with 415.
    let (code, reason, _) = api_error(
        api.patch(
            "w1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 4}})),
        )
        .await
        .expect_err("strategic on a CR"),
    );
    assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));

    // Delete of a custom resource answers with the object.
    let gone = api
        .delete("w1", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(gone.is_left(), "CR delete returns the object");
}

#[tokio::test]
async fn custom_resource_schema_violations_are_422_naming_the_field() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let api = widgets(&fake, client).await;

    let cases = [
        (
            json!({"size": "three"}),
            "spec.size",
            "must be of type integer",
        ),
        (json!({}), "spec.size", "Required value"),
        (
            json!({"size": 0}),
            "spec.size",
            "should be greater than or equal to 1",
        ),
        (
            json!({"size": 11}),
            "spec.size",
            "should be less than or equal to 10",
        ),
        (
            json!({"size": 1, "color": "green"}),
            "spec.color",
            "Unsupported value: \"green\"",
        ),
        (
            json!({"size": 1, "name": "Nope1"}),
            "spec.name",
            "should match '^[a-z]+$'",
        ),
    ];
    for (spec, field, text) in cases {
        let (code, reason, message) = api_error(
            api.create(&PostParams::default(), &widget("bad", spec.clone()))
                .await
                .expect_err("invalid spec"),
        );
        assert_eq!((code, reason.as_str()), (422, "Invalid"), "{spec}");
        assert!(
            message.starts_with("Widget.example.com \"bad\" is invalid: "),
            "{message}"
        );
        assert!(
            message.contains(field) && message.contains(text),
            "{spec}: {message}"
        );
    }

    // An update is validated the same way.
    api.create(&PostParams::default(), &widget("ok", json!({"size": 1})))
        .await
        .expect("valid create");
    let (code, _, message) = api_error(
        api.patch(
            "ok",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 99}})),
        )
        .await
        .expect_err("invalid patch"),
    );
    assert_eq!(code, 422);
    assert!(message.contains("spec.size"), "{message}");

    // Unknown fields are pruned by default, kept under preserve-unknown-fields,
    // and refused with fieldValidation=Strict.
    let pruned = api
        .create(
            &PostParams::default(),
            &widget(
                "pruned",
                json!({"size": 1, "bogus": true, "extra": {"free": 1}}),
            ),
        )
        .await
        .expect("create with unknown field");
    assert!(
        pruned.data["spec"].get("bogus").is_none(),
        "unknown field pruned"
    );
    assert_eq!(
        pruned.data["spec"]["extra"]["free"], 1,
        "preserved subtree kept"
    );
    let strict = PatchParams {
        field_validation: Some(ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let (code, _, message) = api_error(
        api.patch(
            "pruned",
            &strict,
            &Patch::Merge(json!({"spec": {"bogus": 1}})),
        )
        .await
        .expect_err("strict"),
    );
    assert_eq!(code, 400);
    assert!(
        message.contains("unknown field \"spec.bogus\""),
        "{message}"
    );

    // A CRD whose name does not match plural.group is refused.
    let mut bad = widget_crd();
    bad["metadata"]["name"] = json!("wrong.example.com");
    let err = fake.install_crd(bad).expect_err("bad CRD name");
    assert_eq!(err.code, 422);
    // So is a schema that is not structural (a field without a type).
    let mut loose = widget_crd();
    loose["metadata"]["name"] = json!("gadgets.example.com");
    loose["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["untyped"] = json!({"description": "no type"});
    let err = fake.install_crd(loose).expect_err("non-structural schema");
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("properties[spec].properties[untyped].type: Required value"),
        "{}",
        err.message
    );
    // The YAML route (for `cronstable crd` output) goes through the same
    // create: the Widget CRD is already there.
    let yaml = serde_yaml::to_string(&widget_crd()).expect("yaml");
    let err = fake.install_crd_yaml(&yaml).expect_err("second install");
    assert!(err.contains("already exists"), "{err}");
}

#[tokio::test]
async fn outage_switch_fails_requests_then_recovers() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    // Without kube's own retry the 503 reaches the caller at once.
    let (client, _dir) = client_with_retry(&fake, false).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(
        &PostParams::default(),
        &cm("keep", json!({}), json!({"k": "v"})),
    )
    .await
    .expect("create");

    let mut stream = cms
        .watch(
            &WatchParams::default(),
            &fake.resource_version().to_string(),
        )
        .await
        .expect("watch")
        .boxed();
    fake.set_unavailable(true);
    let (code, reason, _) = api_error(cms.get("keep").await.expect_err("down"));
    assert_eq!((code, reason.as_str()), (503, "ServiceUnavailable"));
    // The open watch is cut as well.
    let end = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("watch ends");
    assert!(
        end.is_none_or(|r| r.is_err()),
        "watch ended during the outage"
    );

    fake.set_unavailable(false);
    let back = cms.get("keep").await.expect("back up");
    assert_eq!(
        back.data.and_then(|d| d.get("k").cloned()).as_deref(),
        Some("v"),
        "no data lost"
    );
}

#[tokio::test]
async fn default_client_retries_503_until_the_outage_ends() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(&PostParams::default(), &cm("keep", json!({}), json!({})))
        .await
        .expect("create");
    fake.set_unavailable(true);
    fake.clear_requests();
    let pending = tokio::spawn(async move { cms.get("keep").await });
    // Wait until the client has been refused at least twice, then heal.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while fake.requests().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "the client retried");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    fake.set_unavailable(false);
    let got = tokio::time::timeout(PATIENCE * 4, pending)
        .await
        .expect("retry finishes")
        .expect("task");
    assert!(
        got.is_ok(),
        "the retried call succeeds after the outage: {got:?}"
    );
    assert!(
        fake.requests().len() >= 3,
        "two refused attempts and one that got through"
    );
}

#[tokio::test]
async fn discovery_lists_the_served_resources() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let _ = widgets(&fake, client.clone()).await;
    let groups = client.list_api_groups().await.expect("/apis");
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    for want in [
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
        "example.com",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let res = client
        .list_api_group_resources("example.com/v1")
        .await
        .expect("/apis/example.com/v1");
    assert!(res
        .resources
        .iter()
        .any(|r| r.name == "widgets" && r.namespaced));
    assert!(res.resources.iter().any(|r| r.name == "widgets/status"));
    let core = client.list_core_api_resources("v1").await.expect("/api/v1");
    assert!(core.resources.iter().any(|r| r.name == "configmaps"));
}

#[tokio::test]
async fn event_recorder_creates_then_aggregates_by_patch() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};

    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let recorder = Recorder::new(client.clone(), Reporter::from("cronstable"));
    let regarding = ObjectReference {
        api_version: Some("example.com/v1".into()),
        kind: Some("Widget".into()),
        name: Some("w1".into()),
        namespace: Some("default".into()),
        uid: Some("u-1".into()),
        ..Default::default()
    };
    let ev = Event {
        type_: EventType::Warning,
        reason: "RunFailed".into(),
        note: Some("exit status 1".into()),
        action: "Run".into(),
        secondary: None,
    };
    recorder
        .publish(&ev, &regarding)
        .await
        .expect("first publish creates");
    recorder
        .publish(&ev, &regarding)
        .await
        .expect("repeat publish patches");

    let events: Api<K8sEvent> = Api::default_namespaced(client);
    let list = events
        .list(&ListParams::default())
        .await
        .expect("list events");
    assert_eq!(
        list.items.len(),
        1,
        "a repeat is aggregated, not a new object"
    );
    let stored = &list.items[0];
    assert_eq!(stored.series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(stored.reason.as_deref(), Some("RunFailed"));
    let writes: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|r| {
            r.path
                .starts_with("/apis/events.k8s.io/v1/namespaces/default/events")
                && r.method != "GET"
        })
        .map(|r| r.method)
        .collect();
    assert_eq!(writes, ["POST", "PATCH"]);
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_then_changes() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(&PostParams::default(), &cm("one", json!({}), json!({})))
        .await
        .expect("create");

    let mut events = watcher(cms.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(PATIENCE, events.try_next())
            .await
            .expect("event")
            .expect("no error")
            .expect("open")
        {
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap_or_default()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, ["one"]);
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.is_watch() || r.method != "GET"),
        "a streaming list needs no list request"
    );
    cms.create(&PostParams::default(), &cm("two", json!({}), json!({})))
        .await
        .expect("create");
    loop {
        if let watcher::Event::Apply(o) = tokio::time::timeout(PATIENCE, events.try_next())
            .await
            .expect("event")
            .expect("no error")
            .expect("open")
        {
            assert_eq!(o.metadata.name.as_deref(), Some("two"));
            break;
        }
    }
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let api = widgets(&fake, client).await;
    let mut w = widget("held", json!({"size": 1}));
    w.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &w)
        .await
        .expect("create");

    let marked = api
        .delete("held", &DeleteParams::default())
        .await
        .expect("delete")
        .left()
        .expect("object back");
    assert!(
        marked.metadata.deletion_timestamp.is_some(),
        "marked for deletion"
    );
    assert!(
        api.get("held").await.is_ok(),
        "still there while a finalizer remains"
    );
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove finalizer");
    let (code, _, _) = api_error(api.get("held").await.expect_err("gone"));
    assert_eq!(code, 404);
}

#[tokio::test]
async fn built_in_kinds_are_checked_like_the_real_server() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    // Untyped access, so the bodies can carry what typed structs cannot.
    let cms: Api<DynamicObject> = Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        ),
    );
    let raw = |name: &str, extra: Value| -> DynamicObject {
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        serde_json::from_value(v).expect("dynamic object")
    };

    // Unknown fields: dropped by default, refused under Strict.
    let kept = cms
        .create(
            &PostParams::default(),
            &raw("loose", json!({"data": {"a": "1"}, "bogus": 1})),
        )
        .await
        .expect("create");
    assert!(kept.data.get("bogus").is_none(), "unknown field dropped");
    assert_eq!(kept.data["data"]["a"], "1");
    let strict = PatchParams {
        field_validation: Some(ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let (code, _, message) = api_error(
        cms.patch("loose", &strict, &Patch::Merge(json!({"bogus": 1})))
            .await
            .expect_err("strict unknown field"),
    );
    assert_eq!(code, 400);
    assert!(message.contains("unknown field \"bogus\""), "{message}");

    // A wrong type in a typed kind fails decoding (400), not validation.
    let (code, reason, _) = api_error(
        cms.create(
            &PostParams::default(),
            &raw("typed", json!({"data": {"n": 5}})),
        )
        .await
        .expect_err("non-string data"),
    );
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));

    // An immutable ConfigMap keeps its data.
    cms.create(
        &PostParams::default(),
        &raw("frozen", json!({"data": {"a": "1"}, "immutable": true})),
    )
    .await
    .expect("create");
    let (code, _, message) = api_error(
        cms.patch(
            "frozen",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "2"}})),
        )
        .await
        .expect_err("immutable"),
    );
    assert_eq!(code, 422);
    assert!(message.contains("field is immutable"), "{message}");

    // Lease durations must be positive.
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let lease = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("l".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            lease_duration_seconds: Some(0),
            ..Default::default()
        }),
    };
    let (code, _, message) = api_error(
        leases
            .create(&PostParams::default(), &lease)
            .await
            .expect_err("zero duration"),
    );
    assert_eq!(code, 422);
    assert!(message.contains("spec.leaseDurationSeconds"), "{message}");

    // events.k8s.io Events must name their reporter, action, reason and time.
    let events: Api<DynamicObject> = Api::default_namespaced_with(
        client,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("events.k8s.io", "v1", "Event"),
            "events",
        ),
    );
    let bare: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"}, "type": "Normal",
    }))
    .expect("event json");
    let (code, _, message) = api_error(
        events
            .create(&PostParams::default(), &bare)
            .await
            .expect_err("bare event"),
    );
    assert_eq!(code, 422);
    for field in [
        "eventTime",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
    ] {
        assert!(message.contains(field), "{field} in {message}");
    }
}

#[tokio::test]
async fn a_server_gone_from_the_network_refuses_then_returns_with_its_state() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_with_retry(&fake, false).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    cms.create(
        &PostParams::default(),
        &cm("keep", json!({}), json!({"k": "v"})),
    )
    .await
    .expect("create");
    let rv_before = fake.resource_version();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv_before.to_string())
        .await
        .expect("watch")
        .boxed();

    fake.go_down().await;
    let end = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("watch ends");
    assert!(end.is_none_or(|r| r.is_err()), "the open watch ended");
    fake.clear_requests();
    let err = cms.get("keep").await.expect_err("nobody listening");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a transport error, not an API answer: {err:?}"
    );
    assert!(fake.requests().is_empty(), "nothing reached the server");
    // A raw connect is refused too.
    assert!(
        tokio::net::TcpStream::connect(fake.addr()).await.is_err(),
        "port closed"
    );

    fake.come_back().await.expect("listens again");
    let back = cms.get("keep").await.expect("back up");
    assert_eq!(
        back.data.and_then(|d| d.get("k").cloned()).as_deref(),
        Some("v")
    );
    // Watches resume from the old version: nothing was lost.
    cms.create(&PostParams::default(), &cm("later", json!({}), json!({})))
        .await
        .expect("create");
    let mut resumed = cms
        .watch(&WatchParams::default(), &rv_before.to_string())
        .await
        .expect("watch")
        .boxed();
    let ev = next_event(&mut resumed).await;
    assert_eq!((ev.0.as_str(), ev.1.as_str()), ("ADDED", "later"));
}

#[tokio::test]
async fn delete_preconditions_refuse_a_changed_object() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let created = cms
        .create(
            &PostParams::default(),
            &cm("guarded", json!({}), json!({"k": "v"})),
        )
        .await
        .expect("create");
    let rv = created
        .metadata
        .resource_version
        .clone()
        .expect("a resourceVersion");
    let uid = created.metadata.uid.clone().expect("a uid");
    // The object moves on: the version the caller saw is stale.
    cms.patch(
        "guarded",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .expect("patch");
    let (code, reason, message) = api_error(
        cms.delete(
            "guarded",
            &DeleteParams::default().preconditions(kube::api::Preconditions {
                resource_version: Some(rv.clone()),
                uid: None,
            }),
        )
        .await
        .expect_err("stale resourceVersion"),
    );
    assert_eq!((code, reason.as_str()), (409, "Conflict"));
    assert!(
        message.contains(&format!("ResourceVersion in precondition: {rv}")),
        "{message}"
    );
    let (code, _, message) = api_error(
        cms.delete(
            "guarded",
            &DeleteParams::default().preconditions(kube::api::Preconditions {
                resource_version: None,
                uid: Some("not-the-uid".into()),
            }),
        )
        .await
        .expect_err("wrong uid"),
    );
    assert_eq!(code, 409);
    assert!(
        message.contains("UID in precondition: not-the-uid"),
        "{message}"
    );
    // The right uid deletes it.
    cms.delete(
        "guarded",
        &DeleteParams::default().preconditions(kube::api::Preconditions {
            resource_version: None,
            uid: Some(uid),
        }),
    )
    .await
    .expect("delete with the current uid");
    assert_eq!(
        api_error(cms.get("guarded").await.expect_err("gone")).0,
        404
    );
}

#[tokio::test]
async fn a_denied_resource_answers_403_in_the_authorizers_words() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let here: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let elsewhere: Api<ConfigMap> = Api::namespaced(client.clone(), "team-b");
    here.create(&PostParams::default(), &cm("x", json!({}), json!({})))
        .await
        .expect("create before the denial");
    fake.deny("", "configmaps", Some("team-a"));
    let (code, reason, message) =
        api_error(here.list(&ListParams::default()).await.expect_err("denied"));
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "configmaps is forbidden: User \"system:serviceaccount:fake:cronstable\" cannot list \
         resource \"configmaps\" in API group \"\" in the namespace \"team-a\""
    );
    let (_, _, message) = api_error(here.get("x").await.expect_err("denied"));
    assert!(
        message.starts_with("configmaps \"x\" is forbidden: User")
            && message.contains("cannot get"),
        "{message}"
    );
    // The watcher's first list fails the same way (after its Init marker,
    // which comes before the request).
    let first = watcher(here.clone(), watcher::Config::default())
        .boxed()
        .filter(|item| futures_util::future::ready(!matches!(item, Ok(watcher::Event::Init))))
        .next()
        .await
        .expect("an item");
    match first {
        Err(watcher::Error::InitialListFailed(kube::Error::Api(s))) => assert_eq!(s.code, 403),
        other => panic!("expected a refused list, got {other:?}"),
    }
    // Another namespace is served, and allow_all lifts the denial.
    elsewhere
        .list(&ListParams::default())
        .await
        .expect("another namespace is allowed");
    fake.allow_all();
    assert_eq!(
        here.list(&ListParams::default())
            .await
            .expect("allowed")
            .items
            .len(),
        1
    );
}

/// The CronJobSet resource, with the committed CRD installed.
fn cronjobsets(fake: &FakeApiServer, client: Client) -> Api<DynamicObject> {
    fake.install_crd_yaml(support::kube_daemon::CRD_YAML)
        .expect("the CRD installs");
    Api::namespaced_with(
        client,
        "default",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("cronstable.io", "v1alpha1", "CronJobSet"),
            "cronjobsets",
        ),
    )
}

fn apply_of(name: &str, status: Value) -> Value {
    json!({
        "apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
        "metadata": {"name": name}, "status": status,
    })
}

/// The managedFields entries as (manager, operation, subresource).
fn managers(obj: &DynamicObject) -> Vec<(String, String, Option<String>)> {
    obj.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
                m.subresource.clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn status_apply_replaces_status_and_records_its_manager() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let sets = cronjobsets(&fake, client);
    let set: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
        "metadata": {"name": "nightly"},
        "spec": {"jobs": [{"name": "a", "command": "true", "schedule": "@daily"}]},
    }))
    .expect("set json");
    let created = sets
        .create(&PostParams::default(), &set)
        .await
        .expect("create");
    assert_eq!(
        created.data["spec"]["suspend"], false,
        "the CRD's default fills spec.suspend"
    );
    // An older writer's merge patch leaves fields the apply will not send.
    sets.patch_status(
        "nightly",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "jobSetId": "v1:old", "lastScheduleTime": "2026-11-30T00:00:00Z",
            "jobs": [{"name": "a", "active": 0}, {"name": "gone", "active": 2}],
        }})),
    )
    .await
    .expect("merge patch");

    let status = json!({
        "observedGeneration": 1, "jobCount": 1, "jobNames": "a",
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Valid",
                        "message": "1 job(s) loaded", "lastTransitionTime": "2026-12-01T00:00:00Z"}],
        "jobs": [{"name": "a", "active": 1}],
    });
    let applied = sets
        .patch_status(
            "nightly",
            &PatchParams::apply("cronstable").force(),
            &Patch::Apply(apply_of("nightly", status.clone())),
        )
        .await
        .expect("apply");
    assert_eq!(
        applied.data["status"], status,
        "the status is replaced whole"
    );
    assert_eq!(applied.data["spec"], created.data["spec"], "spec untouched");
    assert_eq!(applied.metadata.generation, Some(1));
    assert_eq!(
        managers(&applied),
        [(
            "cronstable".to_owned(),
            "Apply".to_owned(),
            Some("status".to_owned())
        )]
    );
    let entry = &applied.metadata.managed_fields.as_ref().expect("entries")[0];
    assert_eq!(entry.api_version.as_deref(), Some("cronstable.io/v1alpha1"));
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    let owned = &entry.fields_v1.as_ref().expect("fieldsV1").0;
    assert_eq!(
        owned["f:status"]["f:jobs"],
        json!({"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:active": {}}}),
        "keyed list items are named by their key: {owned}"
    );
    assert_eq!(owned["f:status"]["f:jobCount"], json!({}));
    assert!(entry.time.is_some());

    // The same apply again changes nothing: no new version.
    let again = sets
        .patch_status(
            "nightly",
            &PatchParams::apply("cronstable").force(),
            &Patch::Apply(apply_of("nightly", status.clone())),
        )
        .await
        .expect("apply again");
    assert_eq!(rv_of(&again), rv_of(&applied));

    // A spec change by someone else keeps the status and its owner.
    let respec = sets
        .patch(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .expect("spec patch");
    assert_eq!(respec.metadata.generation, Some(2));
    assert_eq!(respec.data["status"], status);
    assert_eq!(managers(&respec), managers(&applied));

    // A second manager's apply gets an entry of its own.
    let other = sets
        .patch_status(
            "nightly",
            &PatchParams::apply("someone").force(),
            &Patch::Apply(apply_of("nightly", json!({"jobCount": 0}))),
        )
        .await
        .expect("second manager");
    let mut seen = managers(&other);
    seen.sort();
    assert_eq!(
        seen,
        [
            ("cronstable".into(), "Apply".into(), Some("status".into())),
            ("someone".into(), "Apply".into(), Some("status".into())),
        ]
    );
}

/// A raw PATCH, for what kube's client refuses to send.
async fn raw_patch(
    client: &Client,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, String, String) {
    let request = http::Request::patch(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(serde_json::to_vec(body).expect("a body"))
        .expect("a request");
    match client.request::<Value>(request).await {
        Ok(object) => (200, String::new(), object.to_string()),
        Err(e) => api_error(e),
    }
}

#[tokio::test]
async fn status_apply_is_refused_as_the_real_server_refuses_it() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let (client, _dir) = client_for(&fake).await;
    let sets = cronjobsets(&fake, client.clone());
    let set: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
        "metadata": {"name": "s"}, "spec": {"jobs": []},
    }))
    .expect("set json");
    sets.create(&PostParams::default(), &set)
        .await
        .expect("create");
    let base = "/apis/cronstable.io/v1alpha1/namespaces/default/cronjobsets";
    let apply = "application/apply-patch+yaml";
    let body = apply_of("s", json!({"jobCount": 1}));

    // Without a field manager: 422, worded as the real server words it.
    let (code, reason, message) =
        raw_patch(&client, &format!("{base}/s/status"), apply, &body).await;
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
    assert_eq!(
        message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required \
         for apply patch"
    );
    // force belongs to apply only.
    let (code, _, message) = raw_patch(
        &client,
        &format!("{base}/s/status?force=true"),
        "application/merge-patch+json",
        &json!({"status": {}}),
    )
    .await;
    assert_eq!(code, 422, "{message}");
    assert!(message.contains("force: Forbidden: may not be specified for non-apply patch"));
    // The applied object must be of the endpoint's kind, named as the URL.
    let wrong_kind = json!({"apiVersion": "cronstable.io/v1", "kind": "CronJobSet",
                            "metadata": {"name": "s"}, "status": {}});
    let (code, _, message) = raw_patch(
        &client,
        &format!("{base}/s/status?fieldManager=m"),
        apply,
        &wrong_kind,
    )
    .await;
    assert_eq!(
        (code, message.as_str()),
        (
            400,
            "invalid object type: cronstable.io/v1, Kind=CronJobSet"
        )
    );
    let (code, _, message) = raw_patch(
        &client,
        &format!("{base}/s/status?fieldManager=m"),
        apply,
        &apply_of("other", json!({})),
    )
    .await;
    assert_eq!(
        (code, message.as_str()),
        (
            400,
            "the name of the object (other) does not match the name on the URL (s)"
        )
    );
    // An apply to a missing object's status creates nothing.
    let (code, reason, _) = raw_patch(
        &client,
        &format!("{base}/nope/status?fieldManager=m"),
        apply,
        &apply_of("nope", json!({})),
    )
    .await;
    assert_eq!((code, reason.as_str()), (404, "NotFound"));
    assert!(fake
        .get("cronstable.io/v1alpha1", "CronJobSet", "default", "nope")
        .is_none());
    // The schema still holds.
    let (code, _, message) = raw_patch(
        &client,
        &format!("{base}/s/status?fieldManager=m"),
        apply,
        &apply_of("s", json!({"jobCount": -1})),
    )
    .await;
    assert_eq!(code, 422, "{message}");
    // Apply on the main resource is not implemented: refused, not faked.
    let (code, reason, _) = raw_patch(
        &client,
        &format!("{base}/s?fieldManager=m"),
        apply,
        &apply_of("s", json!({})),
    )
    .await;
    assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));
    // Nothing of that was written.
    let stored = fake
        .get("cronstable.io/v1alpha1", "CronJobSet", "default", "s")
        .expect("stored");
    assert!(stored.get("status").is_none(), "{stored}");
    assert!(
        stored["metadata"].get("managedFields").is_none(),
        "{stored}"
    );
}

#[tokio::test]
async fn the_request_log_keeps_the_user_agent() {
    let fake = FakeApiServer::start().await.expect("fake starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kubeconfig");
    fake.write_kubeconfig(&path, "default")
        .expect("write kubeconfig");
    let kc = Kubeconfig::read_from(&path).expect("kubeconfig parses");
    let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static("tester/1.2"),
    ));
    let client = Client::try_from(config).expect("client builds");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.list(&ListParams::default()).await.expect("list");
    let log = fake.requests();
    let list = log
        .iter()
        .find(|r| r.path == "/api/v1/namespaces/default/configmaps")
        .expect("the list was logged");
    assert_eq!(list.user_agent.as_deref(), Some("tester/1.2"));
}
