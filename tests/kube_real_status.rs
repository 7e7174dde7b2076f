//! A CronJobSet's status as a real kube-apiserver shows it (from
//! `KUBEBUILDER_ASSETS`; skipped, saying so, when unset): the printer
//! columns read through the server's Table API and printed by `kubectl`,
//! `spec.suspend` defaulted by the CRD, status owned by the field manager
//! `cronstable` through server-side apply (a user's own apply or patch of
//! the spec never conflicts with it or removes it; fields it stops sending
//! go; what an older merge-patch writer left is taken out), and every
//! request of the daemon named by its User-Agent in the audit log.
//!
//! Waits are bounded and poll; no test asserts how fast anything happens.

mod support;

use serde_json::{json, Value};
use support::kube_daemon::{cronjobset, Cluster, KubeDaemon, Launch, PATIENCE};

/// The User-Agent every request of the daemon carries.
const AGENT: &str = concat!("cronstable/", env!("CARGO_PKG_VERSION"));

/// The collection path of CronJobSets in `team-a`.
const SETS: &str = "/apis/cronstable.io/v1alpha1/namespaces/team-a/cronjobsets";

/// A job that never fires during a test.
fn daily(name: &str) -> Value {
    json!({"name": name, "command": "true", "schedule": "@daily"})
}

/// A set in `team-a` with `jobs` and no labels.
fn set(name: &str, jobs: Value) -> Value {
    cronjobset("team-a", name, json!({}), json!({ "jobs": jobs }))
}

/// `kubectl` as the cluster's admin, in `team-a`; panics on failure.
fn kubectl(cluster: &Cluster, args: &[&str]) -> String {
    kubectl_in(cluster, args, None)
}

fn kubectl_in(cluster: &Cluster, args: &[&str], stdin: Option<&str>) -> String {
    let mut all = vec!["-n", "team-a"];
    all.extend_from_slice(args);
    let (ok, out, err) = cluster.real_server(|s| {
        let admin = s.admin_kubeconfig();
        s.kubectl_with(&admin, &all, stdin)
    });
    assert!(ok, "kubectl {all:?}: {err}{out}");
    out
}

/// The CronJobSets as the server's Table API returns them (what `kubectl
/// get` prints from).
fn table(cluster: &Cluster) -> Value {
    let kubeconfig = cluster.kubeconfig.clone();
    cluster.block_on(async move {
        let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig parses");
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("kubeconfig loads");
        let client = kube::Client::try_from(config).expect("client builds");
        let request = http::Request::get(SETS)
            .header(
                http::header::ACCEPT,
                "application/json;as=Table;v=v1;g=meta.k8s.io",
            )
            .body(Vec::new())
            .expect("a request");
        client
            .request::<Value>(request)
            .await
            .expect("the Table API answers")
    })
}

/// The managedFields entries of a stored object.
fn managed(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The names in a status's `jobs[]`.
fn listed(status: &Value) -> Vec<String> {
    status["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|j| j["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_printer_columns_count_and_name_every_job_and_suspended_reads_false() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    // Spec order, not alphabetical; no spec.suspend.
    let stored = cluster.apply(set(
        "three",
        json!([daily("prune"), daily("backup"), daily("report")]),
    ));
    assert_eq!(
        stored["spec"]["suspend"], false,
        "the CRD's default is stored: {stored}"
    );
    d.wait_until("status with three jobs", PATIENCE, || {
        cluster.status("team-a", "three")["jobCount"] == 3
    });

    let table = table(&cluster);
    let columns: Vec<(String, String, i64)> = table["columnDefinitions"]
        .as_array()
        .expect("columnDefinitions")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_owned(),
                c["type"].as_str().unwrap_or_default().to_owned(),
                c["priority"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    let expected: Vec<(String, String, i64)> = [
        ("Name", "string", 0),
        ("Jobs", "integer", 0),
        ("Suspended", "boolean", 0),
        ("Last Schedule", "date", 0),
        ("Accepted", "string", 0),
        ("Age", "date", 0),
        ("Names", "string", 1),
    ]
    .iter()
    .map(|(n, t, p)| ((*n).to_owned(), (*t).to_owned(), *p))
    .collect();
    assert_eq!(columns, expected, "{table}");
    let rows = table["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{table}");
    let cells = rows[0]["cells"].as_array().expect("cells");
    assert_eq!(cells[0], "three", "{table}");
    assert_eq!(cells[1], 3, "Jobs counts every job: {table}");
    assert_eq!(cells[2], false, "Suspended without spec.suspend: {table}");
    assert_eq!(cells[4], "True", "Accepted: {table}");
    assert_eq!(
        cells[6], "prune, backup, report",
        "Names lists all three in spec order: {table}"
    );

    // What kubectl prints from it: the layout docs/kubernetes.md shows.
    let plain = kubectl(&cluster, &["get", "cjs"]);
    let mut lines = plain.lines();
    assert_eq!(
        lines
            .next()
            .map(str::split_whitespace)
            .map(Iterator::collect::<Vec<_>>),
        Some(vec![
            "NAME",
            "JOBS",
            "SUSPENDED",
            "LAST",
            "SCHEDULE",
            "ACCEPTED",
            "AGE"
        ]),
        "{plain}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..4], ["three", "3", "false", "True"], "{plain}");
    let wide = kubectl(&cluster, &["get", "cjs", "-o", "wide"]);
    let header = wide.lines().next().unwrap_or_default();
    assert!(header.ends_with("AGE   NAMES"), "{wide}");
    let row = wide.lines().nth(1).unwrap_or_default();
    assert!(row.ends_with("   prune, backup, report"), "{wide}");
}

#[test]
fn status_is_applied_by_cronstable_and_a_users_own_apply_never_fights_it() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    // The user's manifests, applied server-side as kubectl does (field
    // manager `kubectl`).
    let manifest = |jobs: &[&str], suspend: Option<bool>| {
        let mut spec = json!({"jobs": jobs.iter().map(|j| daily(j)).collect::<Vec<_>>()});
        if let Some(s) = suspend {
            spec["suspend"] = json!(s);
        }
        let object = cronjobset("team-a", "owned", json!({}), spec);
        serde_json::to_string(&object).expect("JSON")
    };
    kubectl_in(
        &cluster,
        &["apply", "--server-side", "-f", "-"],
        Some(&manifest(&["a", "b", "c"], None)),
    );
    d.wait_until("status with three jobs", PATIENCE, || {
        cluster.status("team-a", "owned")["jobCount"] == 3
    });
    let stored = cluster.set("team-a", "owned").expect("the set");
    let entries = managed(&stored);
    let ours: Vec<&Value> = entries
        .iter()
        .filter(|e| e["manager"] == "cronstable")
        .collect();
    assert_eq!(ours.len(), 1, "one entry of ours: {entries:?}");
    assert_eq!(ours[0]["operation"], "Apply", "{entries:?}");
    assert_eq!(ours[0]["subresource"], "status", "{entries:?}");
    let owned = ours[0]["fieldsV1"].as_object().expect("fieldsV1");
    assert_eq!(
        owned.keys().collect::<Vec<_>>(),
        ["f:status"],
        "status only, nothing of the spec: {entries:?}"
    );
    for field in ["f:jobCount", "f:jobNames", "f:jobs", "f:conditions"] {
        assert!(
            owned["f:status"].get(field).is_some(),
            "{field}: {entries:?}"
        );
    }
    let user = entries
        .iter()
        .find(|e| e["manager"] == "kubectl")
        .expect("the user's apply");
    assert!(user["subresource"].is_null(), "{entries:?}");
    // What `--show-managed-fields` prints (the docs' example).
    let shown = kubectl(
        &cluster,
        &["get", "cjs", "owned", "-o", "yaml", "--show-managed-fields"],
    );
    assert!(
        shown.contains("    manager: cronstable\n    operation: Apply\n    subresource: status\n"),
        "{shown}"
    );

    // The user re-applies a changed spec: no conflict (kubectl would fail),
    // and the status stays, then follows the new spec: `c`'s entry goes,
    // since the scheduler no longer sends it.
    let reapplied = kubectl_in(
        &cluster,
        &["apply", "--server-side", "-o", "json", "-f", "-"],
        Some(&manifest(&["a", "b"], None)),
    );
    let reapplied: Value = serde_json::from_str(&reapplied).expect("the applied object");
    assert_eq!(
        reapplied["status"]["jobCount"], 3,
        "the user's apply left the status alone: {reapplied}"
    );
    assert_eq!(listed(&reapplied["status"]), ["a", "b", "c"], "{reapplied}");
    d.wait_until("status with two jobs", PATIENCE, || {
        cluster.status("team-a", "owned")["jobCount"] == 2
    });
    let status = cluster.status("team-a", "owned");
    assert_eq!(listed(&status), ["a", "b"], "{status}");
    assert_eq!(status["jobNames"], "a, b", "{status}");
    assert_eq!(status["observedGeneration"], 2, "{status}");

    // Suspended through a merge patch of the spec (kubectl patch): the
    // next fire times the scheduler owned and no longer sends are removed.
    assert!(
        status["jobs"][0]["nextScheduleTime"].is_string(),
        "{status}"
    );
    kubectl(
        &cluster,
        &[
            "patch",
            "cjs",
            "owned",
            "--type=merge",
            "-p",
            r#"{"spec":{"suspend":true}}"#,
        ],
    );
    d.wait_until("Ready=False Suspended", PATIENCE, || {
        cluster.condition("team-a", "owned", "Ready")["reason"] == "Suspended"
    });
    let suspended = cluster.status("team-a", "owned");
    for job in suspended["jobs"].as_array().expect("jobs") {
        assert!(job.get("nextScheduleTime").is_none(), "{suspended}");
    }
    assert_eq!(
        suspended["jobCount"], 2,
        "held jobs still count: {suspended}"
    );
    let plain = kubectl(&cluster, &["get", "cjs", "owned", "--no-headers"]);
    let row: Vec<&str> = plain.split_whitespace().collect();
    assert_eq!(&row[..3], ["owned", "2", "true"], "{plain}");

    // Through all of it the scheduler wrote status by forced applies only.
    let applies = status_writes(&cluster, &d.user);
    assert!(!applies.is_empty());
    for uri in &applies {
        assert!(
            uri.contains("fieldManager=cronstable") && uri.contains("force=true"),
            "{uri}"
        );
    }
}

/// The request URIs of `user`'s status writes, from the audit log.
fn status_writes(cluster: &Cluster, user: &str) -> Vec<String> {
    let events = cluster.real_server(|s| s.audit_events());
    let mut uris: Vec<String> = events
        .iter()
        .filter(|e| {
            e["user"]["username"] == user
                && e["stage"] == "ResponseComplete"
                && e["verb"] == "patch"
                && e["objectRef"]["subresource"] == "status"
        })
        .filter_map(|e| e["requestURI"].as_str().map(str::to_owned))
        .collect();
    uris.sort();
    uris
}

#[test]
fn what_an_older_merge_patch_writer_left_in_status_is_taken_out() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    cluster.apply(set("legacy", json!([daily("a"), daily("b")])));
    // An older cronstable wrote status by merge patch under its own manager
    // (this one names itself `kubectl-patch`): a job since removed, a
    // job-set id and a fire time the new status does not carry.
    kubectl(
        &cluster,
        &[
            "patch",
            "cjs",
            "legacy",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"observedGeneration":1,"jobSetId":"v1:old","lastScheduleTime":"2026-01-01T00:00:00Z","jobs":[{"name":"a","active":0},{"name":"gone","active":1}]}}"#,
        ],
    );
    let stale = cluster.status("team-a", "legacy");
    assert_eq!(listed(&stale), ["a", "gone"], "{stale}");

    let d = KubeDaemon::start(&cluster, &[]);
    d.wait_until("the leftovers gone", PATIENCE, || {
        let s = cluster.status("team-a", "legacy");
        listed(&s) == ["a", "b"] && s["jobSetId"] != "v1:old"
    });
    let status = cluster.status("team-a", "legacy");
    assert!(status.get("lastScheduleTime").is_none(), "{status}");
    assert_eq!(status["jobCount"], 2, "{status}");
    assert!(
        status["jobSetId"]
            .as_str()
            .is_some_and(|id| id.starts_with("v1:")),
        "{status}"
    );
    // An apply first, then the one merge patch that took the rest out.
    let writes = status_writes(&cluster, &d.user);
    assert!(
        writes.iter().any(|u| u.contains("force=true")),
        "{writes:?}"
    );
    assert!(
        writes
            .iter()
            .any(|u| u.contains("fieldManager=cronstable") && !u.contains("force=")),
        "{writes:?}"
    );
    let entries = managed(&cluster.set("team-a", "legacy").expect("the set"));
    assert!(
        entries
            .iter()
            .any(|e| e["manager"] == "cronstable" && e["operation"] == "Apply"),
        "{entries:?}"
    );
}

#[test]
fn every_request_of_the_daemon_carries_its_user_agent() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    // Status, Events (a refused set), the election Lease and a cluster
    // slot Lease, besides the watches.
    let mut how = Launch::new(&cluster);
    how.config = "cluster:\n  backend: kubernetes\n  nodeName: ua\n  kubernetes:\n    \
                  leaseDurationSeconds: 4\n    renewDeadlineSeconds: 2\n    retryPeriodSeconds: 1\n\
                  jobs:\n  - name: slotted\n    command: 'true'\n    \
                  schedule: '* * * * * * *'\n    concurrencyPolicy: Forbid\n    \
                  concurrencyScope: cluster\n"
        .to_owned();
    let d = KubeDaemon::launch(&cluster, how);
    cluster.apply(set("good", json!([daily("a")])));
    cluster.apply(set(
        "bad",
        json!([{"name": "x", "command": "true", "schedule": "61 * * * *"}]),
    ));
    d.wait_until("the good set's status", PATIENCE, || {
        cluster.status("team-a", "good")["jobCount"] == 1
    });
    d.wait_until("an InvalidSpec event", PATIENCE, || {
        !cluster.events_regarding("team-a", "bad").is_empty()
    });
    let resources = ["cronjobsets", "events", "leases"];
    let mut seen = std::collections::BTreeSet::new();
    d.wait_until("requests on every resource", PATIENCE, || {
        let events = cluster.real_server(|s| s.audit_events());
        for e in events.iter().filter(|e| e["user"]["username"] == d.user) {
            if let Some(r) = e["objectRef"]["resource"].as_str() {
                seen.insert(r.to_owned());
            }
        }
        resources.iter().all(|r| seen.contains(*r))
    });
    let events = cluster.real_server(|s| s.audit_events());
    let mine: Vec<&Value> = events
        .iter()
        .filter(|e| e["user"]["username"] == d.user)
        .collect();
    assert!(mine.len() > 5, "{} requests", mine.len());
    let other: Vec<String> = mine
        .iter()
        .filter(|e| e["userAgent"] != AGENT)
        .map(|e| format!("{} {} {}", e["verb"], e["requestURI"], e["userAgent"]))
        .collect();
    assert!(other.is_empty(), "requests without {AGENT}: {other:?}");
    // The Events carry no field manager of their own: the server names
    // their manager after the User-Agent.
    let event = cluster.events_regarding("team-a", "bad").remove(0);
    assert_eq!(
        event["metadata"]["managedFields"][0]["manager"], "cronstable",
        "{event}"
    );
}

/// A client from a kubeconfig file.
async fn client_for(kubeconfig: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("kubeconfig loads");
    kube::Client::try_from(config).expect("client builds")
}

/// A PATCH as is: (code, reason, message) of a failure, or (200, "", the
/// object).
async fn patch(
    client: &kube::Client,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, String, Value) {
    let request = http::Request::patch(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(serde_json::to_vec(body).expect("a body"))
        .expect("a request");
    match client.request::<Value>(request).await {
        Ok(object) => (200, String::new(), object),
        Err(kube::Error::Api(s)) => (s.code, s.reason.clone(), json!(s.message)),
        Err(e) => panic!("PATCH {path}: {e}"),
    }
}

#[test]
fn the_fake_answers_status_applies_as_the_real_server_does() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let fake = cluster
        .block_on(support::kube_fake::FakeApiServer::start())
        .expect("the fake starts");
    fake.install_crd_yaml(support::kube_daemon::CRD_YAML)
        .expect("the CRD installs in the fake");
    let fake_kubeconfig = cluster.path("fake-kubeconfig");
    fake.write_kubeconfig(&fake_kubeconfig, "team-a")
        .expect("write kubeconfig");
    let real_kubeconfig = cluster.kubeconfig.clone();
    let object = |status: Value| {
        json!({"apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
               "metadata": {"name": "probe"}, "status": status})
    };
    let status = json!({
        "observedGeneration": 1, "jobCount": 2, "jobNames": "a, b",
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Valid",
                        "message": "2 job(s) loaded", "lastTransitionTime": "2026-12-01T00:00:00Z",
                        "observedGeneration": 1}],
        "jobs": [{"name": "a", "active": 0}, {"name": "b", "active": 1,
                  "nextScheduleTime": "2026-12-02T00:00:00Z"}],
    });
    let apply = "application/apply-patch+yaml";
    let merge = "application/merge-patch+json";
    let at = |query: &str| format!("{SETS}/probe/status{query}");
    let probes: Vec<(&str, String, &str, Value)> = vec![
        ("no field manager", at(""), apply, object(status.clone())),
        (
            "force on a merge patch",
            at("?force=true"),
            merge,
            json!({"status": {}}),
        ),
        (
            "another version",
            at("?fieldManager=cronstable"),
            apply,
            json!({"apiVersion": "cronstable.io/v1", "kind": "CronJobSet",
                   "metadata": {"name": "probe"}, "status": {}}),
        ),
        (
            "another name",
            at("?fieldManager=cronstable"),
            apply,
            json!({"apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
                   "metadata": {"name": "other"}, "status": {}}),
        ),
        (
            "a missing object",
            format!("{SETS}/missing/status?fieldManager=cronstable&force=true"),
            apply,
            json!({"apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
                   "metadata": {"name": "missing"}, "status": {}}),
        ),
        (
            "a forced apply",
            at("?fieldManager=cronstable&force=true"),
            apply,
            object(status.clone()),
        ),
    ];
    let answers = |kubeconfig: std::path::PathBuf| {
        let probes = probes.clone();
        cluster.block_on(async move {
            let client = client_for(&kubeconfig).await;
            let sets: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
                client.clone(),
                "team-a",
                &kube::api::ApiResource::from_gvk_with_plural(
                    &kube::api::GroupVersionKind::gvk("cronstable.io", "v1alpha1", "CronJobSet"),
                    "cronjobsets",
                ),
            );
            let probe: kube::api::DynamicObject = serde_json::from_value(json!({
                "apiVersion": "cronstable.io/v1alpha1", "kind": "CronJobSet",
                "metadata": {"name": "probe"}, "spec": {"jobs": [daily("a"), daily("b")]},
            }))
            .expect("a set");
            sets.create(&Default::default(), &probe)
                .await
                .expect("create the probe set");
            let mut out = Vec::new();
            for (what, path, content_type, body) in &probes {
                out.push((*what, patch(&client, path, content_type, body).await));
            }
            out
        })
    };
    let real = answers(real_kubeconfig);
    let faked = answers(fake_kubeconfig);
    for ((what, real), (_, fake)) in real.iter().zip(&faked) {
        let (code, reason, body) = real;
        if *code != 200 {
            assert_eq!(real, fake, "{what}");
            continue;
        }
        assert_eq!((code, reason), (&fake.0, &fake.1), "{what}");
        assert_eq!(body["status"], status, "{what}: real");
        assert_eq!(fake.2["status"], status, "{what}: fake");
        // The manager's entry, field for field but the time.
        let entry = |object: &Value| {
            let mut entries = managed(object);
            entries.retain(|e| e["manager"] == "cronstable");
            for e in &mut entries {
                if let Some(e) = e.as_object_mut() {
                    e.remove("time");
                }
            }
            entries
        };
        assert_eq!(entry(body), entry(&fake.2), "{what}: managedFields");
        assert_eq!(entry(body).len(), 1, "{what}: {body}");
    }
}
