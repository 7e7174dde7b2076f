//! What only a real kube-apiserver shows (from `KUBEBUILDER_ASSETS`;
//! skipped, saying so, when unset): an API server restart (the first
//! rewatch after it answers 410 Expired), read through the server's own
//! audit log, and the fake API server checked against the real one with
//! the same requests.
//!
//! Waits are bounded and poll; no test asserts how fast anything happens.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use support::kube_daemon::{configmap, cronjobset, Cluster, KubeDaemon, PATIENCE};

/// A job that appends a line to `{dir}/<file>` every second.
fn tick(name: &str, file: &str) -> Value {
    json!({
        "name": name,
        "command": format!("echo {name} >> {{dir}}/{file}"),
        "schedule": "* * * * * * *",
    })
}

/// When the server received an audited request.
fn received(event: &Value) -> Option<DateTime<Utc>> {
    event["requestReceivedTimestamp"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// The daemon's requests on `resource` itself (no subresource such as
/// status) received after `since`, one per
/// audit id (a watch is logged when it starts and when it ends), oldest
/// first: (received, verb, response code).
fn requests_after(
    cluster: &Cluster,
    user: &str,
    resource: &str,
    since: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, String, i64)> {
    let events = cluster.real_server(|s| s.audit_events());
    let mut by_id: BTreeMap<String, (DateTime<Utc>, String, i64)> = BTreeMap::new();
    for e in &events {
        if e["user"]["username"] != user
            || e["objectRef"]["resource"] != resource
            || !e["objectRef"]["subresource"].is_null()
        {
            continue;
        }
        let Some(at) = received(e) else { continue };
        if at < since {
            continue;
        }
        let id = e["auditID"].as_str().unwrap_or_default().to_owned();
        let verb = e["verb"].as_str().unwrap_or_default().to_owned();
        let code = e["responseStatus"]["code"].as_i64().unwrap_or(0);
        by_id.insert(id, (at, verb, code));
    }
    let mut out: Vec<_> = by_id.into_values().collect();
    out.sort();
    out
}

#[test]
fn after_an_api_server_restart_the_watches_relist_at_once_and_connected_waits_for_both() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    cluster.apply(configmap(
        "team-a",
        "settings",
        json!({"jobs.yaml": "jobs:\n  - name: from-cm\n    command: echo cm >> {dir}/cm.log\n    schedule: '* * * * * * *'\n"}),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "first",
        json!({}),
        json!({"jobs": [tick("tick", "first.log")]}),
    ));
    let d = KubeDaemon::start(&cluster, &["--configmap", "settings"]);
    d.wait_lines(&cluster, "first.log", 1);
    d.wait_lines(&cluster, "cm.log", 1);
    d.wait_until("connected", PATIENCE, || d.kube()["connected"] == true);

    // An outage long enough for the watches' backoff to grow past a few
    // seconds (0.8, 1.6, 3.2 s ...), then the server is back with its
    // data: the resource versions the watches hold are too old for its
    // fresh watch cache.
    cluster.go_down();
    d.wait_until("disconnected", PATIENCE, || d.kube()["connected"] == false);
    std::thread::sleep(Duration::from_secs(8));
    // Nothing answered before the restart begins; requests from here on
    // reached the new server.
    let back = Utc::now();
    cluster.come_back();

    // `connected` turns true only once both watches answer again: at the
    // first poll that shows it, the server has already answered a list or
    // watch of each resource since it came back.
    let mut both_answered_when_connected = None;
    d.wait_until("connected again", Duration::from_secs(60), || {
        if d.kube()["connected"] != true {
            return false;
        }
        let answered = |resource: &str| {
            requests_after(&cluster, &d.user, resource, back)
                .iter()
                .any(|(_, verb, code)| (verb == "list" || verb == "watch") && *code == 200)
        };
        both_answered_when_connected = Some((answered("cronjobsets"), answered("configmaps")));
        true
    });
    assert_eq!(
        both_answered_when_connected,
        Some((true, true)),
        "/kube said connected before both watches were back; log:\n{}",
        d.log()
    );
    assert_eq!(
        d.metric("cronstable_kube_connected", &[]),
        Some(1.0),
        "the gauge agrees with /kube"
    );

    // A set applied after the restart takes effect (the sets watch is live).
    cluster.apply(cronjobset(
        "team-a",
        "second",
        json!({}),
        json!({"jobs": [tick("tick", "second.log")]}),
    ));
    d.wait_lines(&cluster, "second.log", 1);

    // The first rewatch the new server accepted answered 410 Expired inside
    // its stream; the relist it calls for must follow at once, not after
    // the backoff the outage built (seconds by then). The audit log has
    // both requests: the gap between that watch and the next list is the
    // watcher's own reaction time (milliseconds), well under the smallest
    // backoff the outage left (over 1.6 s).
    for resource in ["cronjobsets", "configmaps"] {
        let seen = requests_after(&cluster, &d.user, resource, back);
        let accepted = seen
            .iter()
            .position(|(_, verb, code)| verb == "watch" && *code == 200)
            .unwrap_or_else(|| panic!("no {resource} watch accepted after the restart: {seen:?}"));
        let rewatch = seen[accepted].0;
        let list = seen[accepted..]
            .iter()
            .find(|(_, verb, _)| verb == "list")
            .map(|(at, _, _)| *at)
            .unwrap_or_else(|| panic!("no {resource} relist after the rewatch: {seen:?}"));
        let gap = (list - rewatch).to_std().unwrap_or_default();
        assert!(
            gap < Duration::from_secs(1),
            "{resource}: the relist came {gap:?} after the rewatch: {seen:?}"
        );
    }
}

/// One request, sent the same way to the fake and to the real server.
struct Probe {
    what: &'static str,
    method: &'static str,
    path: String,
    content_type: &'static str,
    body: Option<Value>,
}

/// What is compared of an answer: the status code, and for a Status body
/// its kind, reason and which detail keys it has; for an object its kind
/// and apiVersion; for a list its kind.
fn shape(code: u16, body: &Value) -> Value {
    let kind = body["kind"].clone();
    if kind == "Status" {
        let mut detail_keys: Vec<String> = body["details"]
            .as_object()
            .map(|d| d.keys().cloned().collect())
            .unwrap_or_default();
        detail_keys.sort();
        let mut cause_fields: Vec<String> = body["details"]["causes"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["field"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        cause_fields.sort();
        json!({
            "code": code,
            "kind": kind,
            "status": body["status"],
            "reason": body["reason"],
            "detailKeys": detail_keys,
            "causeFields": cause_fields,
        })
    } else {
        json!({
            "code": code,
            "kind": kind,
            "apiVersion": body["apiVersion"],
            "hasResourceVersion": body["metadata"]["resourceVersion"].is_string(),
        })
    }
}

fn probes(namespace: &str) -> Vec<Probe> {
    let sets = format!("/apis/cronstable.io/v1alpha1/namespaces/{namespace}/cronjobsets");
    let good = json!({
        "apiVersion": "cronstable.io/v1alpha1",
        "kind": "CronJobSet",
        "metadata": {"name": "nightly"},
        "spec": {"jobs": [{"name": "a", "command": "true", "schedule": "@daily"}]},
    });
    let wrong_type = json!({
        "apiVersion": "cronstable.io/v1alpha1",
        "kind": "CronJobSet",
        "metadata": {"name": "typed"},
        "spec": {"suspend": "yes", "jobs": [{"name": "a", "command": "true", "schedule": "@daily"}]},
    });
    let unknown_field = json!({
        "apiVersion": "cronstable.io/v1alpha1",
        "kind": "CronJobSet",
        "metadata": {"name": "unknown"},
        "spec": {"jobs": [{"name": "a", "command": "true", "schedule": "@daily", "bogus": 1}]},
    });
    let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases");
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "probe"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 4},
    });
    let stale_lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "probe", "resourceVersion": "1"},
        "spec": {"holderIdentity": "b", "leaseDurationSeconds": 4},
    });
    vec![
        Probe {
            what: "create a set",
            method: "POST",
            path: sets.clone(),
            content_type: "application/json",
            body: Some(good.clone()),
        },
        Probe {
            what: "create it again",
            method: "POST",
            path: sets.clone(),
            content_type: "application/json",
            body: Some(good),
        },
        Probe {
            what: "get it",
            method: "GET",
            path: format!("{sets}/nightly"),
            content_type: "application/json",
            body: None,
        },
        Probe {
            what: "get a missing set",
            method: "GET",
            path: format!("{sets}/missing"),
            content_type: "application/json",
            body: None,
        },
        Probe {
            what: "list sets",
            method: "GET",
            path: sets.clone(),
            content_type: "application/json",
            body: None,
        },
        Probe {
            what: "a wrong type",
            method: "POST",
            path: sets.clone(),
            content_type: "application/json",
            body: Some(wrong_type),
        },
        Probe {
            what: "an unknown field (strict validation)",
            method: "POST",
            path: format!("{sets}?fieldValidation=Strict"),
            content_type: "application/json",
            body: Some(unknown_field),
        },
        Probe {
            what: "a status merge patch",
            method: "PATCH",
            path: format!("{sets}/nightly/status"),
            content_type: "application/merge-patch+json",
            body: Some(json!({"status": {"observedGeneration": 1}})),
        },
        Probe {
            what: "a status patch of a missing set",
            method: "PATCH",
            path: format!("{sets}/missing/status"),
            content_type: "application/merge-patch+json",
            body: Some(json!({"status": {"observedGeneration": 1}})),
        },
        Probe {
            what: "delete a missing set",
            method: "DELETE",
            path: format!("{sets}/missing"),
            content_type: "application/json",
            body: None,
        },
        Probe {
            what: "create a Lease",
            method: "POST",
            path: leases.clone(),
            content_type: "application/json",
            body: Some(lease),
        },
        Probe {
            what: "replace the Lease with a stale version",
            method: "PUT",
            path: format!("{leases}/probe"),
            content_type: "application/json",
            body: Some(stale_lease),
        },
    ]
}

/// Sends `probe` through `client`; returns the status code and the body.
async fn send(client: &kube::Client, probe: &Probe) -> (u16, Value) {
    let body = probe
        .body
        .as_ref()
        .map(|b| serde_json::to_vec(b).expect("json"))
        .unwrap_or_default();
    let request = http::Request::builder()
        .method(probe.method)
        .uri(&probe.path)
        .header("content-type", probe.content_type)
        .body(body)
        .expect("a request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", probe.what));
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn client_for(kubeconfig: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig parses");
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kubeconfig loads");
    kube::Client::try_from(config).expect("client builds")
}

#[test]
fn the_fake_answers_like_the_real_server_where_both_can() {
    let Some(real) = Cluster::real() else {
        return;
    };
    let fake = Cluster::start();
    let mut differences = Vec::new();
    let mut answers = Vec::new();
    for probe in probes("team-a") {
        let real_answer = real.block_on(async {
            let client = client_for(&real.kubeconfig).await;
            send(&client, &probe).await
        });
        let fake_answer = fake.block_on(async {
            let client = client_for(&fake.kubeconfig).await;
            send(&client, &probe).await
        });
        let (real_shape, fake_shape) = (
            shape(real_answer.0, &real_answer.1),
            shape(fake_answer.0, &fake_answer.1),
        );
        answers.push(format!("{}: real {real_shape}", probe.what));
        if real_shape != fake_shape {
            differences.push(format!(
                "{}:\n  real {real_shape}\n  fake {fake_shape}\n  real body {}\n  fake body {}",
                probe.what, real_answer.1, fake_answer.1
            ));
        }
    }
    // The probes did reach the server: the refusals are refusals.
    assert!(
        answers.iter().any(|a| a.contains("\"AlreadyExists\"")),
        "{answers:#?}"
    );
    assert!(
        answers.iter().any(|a| a.contains("\"Invalid\"")),
        "{answers:#?}"
    );
    assert!(
        differences.is_empty(),
        "the fake answers differently from kube-apiserver {}:\n{}",
        real.real_server(|s| s.version.clone()),
        differences.join("\n")
    );
}
