//! Kubernetes mode end to end: the built binary run with `--kube
//! --kubeconfig <file>` against a real kube-apiserver (`Cluster::real`, from
//! `KUBEBUILDER_ASSETS`; skipped, saying so, when that is unset), the way a
//! user runs it in a pod. Tests that need a fault a real server cannot
//! produce on demand (503 bursts, an expired watch history, requests
//! counted) use the fake API server (tests/support/kube_fake). Each test applies CronJobSets and
//! ConfigMaps through the API (as `kubectl` would), then looks at what the
//! daemon does: the jobs it runs (files they write), its HTTP API (/jobs,
//! /kube, /metrics), its log, and what it writes back to the API server
//! (status, Events).
//!
//! Waits are bounded and poll; no test asserts how fast anything happens.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::kube_daemon::{
    configmap, cronjobset, is_rfc3339_z, is_utc_time, time_of, Cluster, KubeDaemon, Launch,
    PATIENCE,
};

/// Seven fields: fires every second.
const EVERY_SECOND: &str = "* * * * * * *";

/// A job that appends its name to `{dir}/<file>` every second.
fn tick(name: &str, file: &str) -> Value {
    json!({
        "name": name,
        "command": format!("echo {name} >> {{dir}}/{file}"),
        "schedule": EVERY_SECOND,
    })
}

/// A set in `team-a` with `jobs` and no labels.
fn set(name: &str, jobs: Value) -> Value {
    cronjobset("team-a", name, json!({}), json!({ "jobs": jobs }))
}

/// Whether process `pid` is alive (and not a zombie).
fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

#[test]
fn an_applied_set_runs_and_its_status_shows_the_schedule() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    let stored = cluster.apply(set("nightly", json!([tick("tick", "tick.log")])));
    let generation = stored["metadata"]["generation"].clone();
    assert_eq!(generation, 1, "{stored}");
    // The CRD's default fills spec.suspend: false runs as absent did.
    assert_eq!(stored["spec"]["suspend"], false, "{stored}");

    d.wait_lines(&cluster, "tick.log", 2);
    d.wait_until("the job in /jobs", PATIENCE, || {
        d.job_names() == ["team-a:nightly:tick"]
    });
    let job = d.job("team-a:nightly:tick").expect("GET /jobs/{name}");
    assert_eq!(job["schedule"], EVERY_SECOND, "{job}");

    // The status the leader (here: the only scheduler) writes back.
    d.wait_until("status with last and next schedule", PATIENCE, || {
        let s = cluster.status("team-a", "nightly");
        s["lastScheduleTime"].is_string()
            && s["jobs"][0]["nextScheduleTime"].is_string()
            && s["jobs"][0]["lastResult"]["outcome"] == "success"
    });
    let status = cluster.status("team-a", "nightly");
    assert_eq!(status["observedGeneration"], generation, "{status}");
    assert!(
        status["jobSetId"].as_str().is_some_and(|s| !s.is_empty()),
        "{status}"
    );
    assert!(is_rfc3339_z(&status["lastScheduleTime"]), "{status}");
    let jobs = status["jobs"].as_array().expect("status.jobs");
    assert_eq!(jobs.len(), 1, "{status}");
    // The printer columns' values: the count and the joined names.
    assert_eq!(status["jobCount"], 1, "{status}");
    assert_eq!(status["jobNames"], "tick", "{status}");
    let entry = &jobs[0];
    assert_eq!(entry["name"], "tick", "the set's own job name: {status}");
    for key in ["lastScheduleTime", "nextScheduleTime", "lastSuccessfulTime"] {
        assert!(is_rfc3339_z(&entry[key]), "{key}: {status}");
    }
    assert!(
        time_of(&entry["nextScheduleTime"]) > time_of(&entry["lastScheduleTime"]),
        "{status}"
    );
    assert_eq!(entry["lastResult"]["exitCode"], 0, "{status}");
    assert!(is_rfc3339_z(&entry["lastResult"]["finishedAt"]), "{status}");
    assert!(entry["active"].is_u64(), "{status}");

    let accepted = cluster.condition("team-a", "nightly", "Accepted");
    assert_eq!(accepted["status"], "True", "{status}");
    assert_eq!(accepted["reason"], "Valid", "{status}");
    assert_eq!(accepted["observedGeneration"], generation, "{status}");
    assert!(is_rfc3339_z(&accepted["lastTransitionTime"]), "{status}");
    let ready = cluster.condition("team-a", "nightly", "Ready");
    assert_eq!(ready["status"], "True", "{status}");
    assert_eq!(ready["reason"], "Scheduled", "{status}");

    // Status writes go to the status subresource: the spec's generation
    // does not move.
    let now = cluster.set("team-a", "nightly").expect("the set");
    assert_eq!(now["metadata"]["generation"], generation);
}

#[test]
fn status_counts_and_names_the_jobs_and_is_applied_by_cronstable() {
    let cluster = Cluster::start();
    let d = KubeDaemon::start(&cluster, &[]);
    let daily = |name: &str| json!({"name": name, "command": "true", "schedule": "@daily"});
    // Spec order, not alphabetical.
    cluster.apply(set(
        "three",
        json!([daily("prune"), daily("backup"), daily("report")]),
    ));
    d.wait_until("status with three jobs", PATIENCE, || {
        cluster.status("team-a", "three")["jobCount"] == 3
    });
    let status = cluster.status("team-a", "three");
    assert_eq!(status["jobNames"], "prune, backup, report", "{status}");
    let listed: Vec<&str> = status["jobs"]
        .as_array()
        .expect("status.jobs")
        .iter()
        .filter_map(|j| j["name"].as_str())
        .collect();
    assert_eq!(listed, ["prune", "backup", "report"], "{status}");

    // Written by server-side apply: cronstable owns status.
    let stored = cluster.set("team-a", "three").expect("the set");
    let entries = stored["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ours: Vec<&Value> = entries
        .iter()
        .filter(|e| e["manager"] == "cronstable")
        .collect();
    assert_eq!(ours.len(), 1, "{entries:?}");
    assert_eq!(ours[0]["operation"], "Apply", "{entries:?}");
    assert_eq!(ours[0]["subresource"], "status", "{entries:?}");
    assert!(
        ours[0]["fieldsV1"]["f:status"]["f:jobCount"].is_object(),
        "{entries:?}"
    );

    // A refused edit: the previous generation's three jobs keep running,
    // and the count says so.
    cluster.patch_set(
        "team-a",
        "three",
        json!({"spec": {"jobs": [daily("prune"),
            {"name": "backup", "command": "true", "schedule": "61 * * * *"}]}}),
    );
    d.wait_until("the edit refused", PATIENCE, || {
        cluster.condition("team-a", "three", "Accepted")["status"] == "False"
    });
    let refused = cluster.status("team-a", "three");
    assert_eq!(refused["jobCount"], 3, "{refused}");
    assert_eq!(refused["jobNames"], "prune, backup, report", "{refused}");

    // Fixed without `report`: its entry leaves status (apply removes what
    // it no longer sends), and the count and names follow.
    cluster.patch_set(
        "team-a",
        "three",
        json!({"spec": {"jobs": [daily("prune"), daily("backup")]}}),
    );
    d.wait_until("two jobs in status", PATIENCE, || {
        cluster.status("team-a", "three")["jobCount"] == 2
    });
    let fixed = cluster.status("team-a", "three");
    assert_eq!(fixed["jobNames"], "prune, backup", "{fixed}");
    assert_eq!(fixed["jobs"].as_array().map(Vec::len), Some(2), "{fixed}");

    // Every request the daemon made names it; the status writes are
    // forced applies as cronstable. (The test's own client sends no
    // User-Agent.)
    let agent = format!("cronstable/{}", env!("CARGO_PKG_VERSION"));
    let requests = cluster.fake().requests();
    let foreign: Vec<_> = requests
        .iter()
        .filter(|r| r.user_agent.as_deref().is_some_and(|a| a != agent))
        .collect();
    assert!(foreign.is_empty(), "{foreign:?}");
    let writes: Vec<_> = requests
        .iter()
        .filter(|r| r.path.ends_with("/status"))
        .collect();
    assert!(!writes.is_empty());
    for r in &writes {
        assert_eq!(r.method, "PATCH", "{r:?}");
        assert!(r.has_param("fieldManager", "cronstable"), "{r:?}");
        assert!(r.has_param("force", "true"), "{r:?}");
    }
    let watches: Vec<_> = requests.iter().filter(|r| r.is_watch()).collect();
    assert!(!watches.is_empty());
    for r in writes.iter().chain(&watches) {
        assert_eq!(r.user_agent.as_deref(), Some(agent.as_str()), "{r:?}");
    }
}

#[test]
fn a_schedule_edit_is_in_force_and_a_running_instance_is_untouched() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    let long = json!({"name": "long", "command": "sleep 60", "schedule": "0 0 1 1 *"});
    cluster.apply(set("edit", json!([long])));
    let name = "team-a:edit:long";
    d.wait_until("the job in /jobs", PATIENCE, || d.job(name).is_some());
    assert_eq!(d.start_job(name), 200);
    let mut pids = Vec::new();
    d.wait_until("the manual run running", PATIENCE, || {
        let job = d.job(name).unwrap_or_default();
        pids = job["pids"].as_array().cloned().unwrap_or_default();
        job["running"] == true && !pids.is_empty()
    });
    let pid = pids[0].as_i64().expect("a pid");
    assert!(alive(pid));

    let edited = cluster.apply(set(
        "edit",
        json!([{"name": "long", "command": "sleep 60", "schedule": "30 4 * * *"}]),
    ));
    assert_eq!(edited["metadata"]["generation"], 2, "{edited}");
    d.wait_until("the new schedule in /jobs", PATIENCE, || {
        d.job(name).is_some_and(|j| j["schedule"] == "30 4 * * *")
    });
    let job = d.job(name).expect("the job");
    assert_eq!(job["running"], true, "{job}");
    assert_eq!(job["pids"], json!([pid]), "the same instance: {job}");
    assert!(alive(pid), "the running instance survived the edit");
    d.wait_until("observedGeneration 2", PATIENCE, || {
        cluster.status("team-a", "edit")["observedGeneration"] == 2
    });
    let next = &cluster.status("team-a", "edit")["jobs"][0]["nextScheduleTime"];
    assert!(
        next.as_str().is_some_and(|t| t.ends_with("T04:30:00Z")),
        "next fire follows the new schedule: {next}"
    );
    // Do not leave the sleep behind the killed daemon.
    let cancel = support::http::post(d.port, &format!("/jobs/{name}/cancel"));
    assert_eq!(cancel.status, 200, "{}", cancel.body);
}

#[test]
fn suspend_skips_scheduled_fires_but_a_manual_start_runs() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set("sus", json!([tick("tick", "sus.log")])));
    d.wait_lines(&cluster, "sus.log", 2);

    cluster.patch_set("team-a", "sus", json!({"spec": {"suspend": true}}));
    d.wait_until("Ready=False Suspended", PATIENCE, || {
        let ready = cluster.condition("team-a", "sus", "Ready");
        ready["status"] == "False" && ready["reason"] == "Suspended"
    });
    assert_eq!(
        cluster.condition("team-a", "sus", "Accepted")["status"],
        "True"
    );
    // A fire already launched when the change landed may still write; after
    // that the file must stay as it is for several schedule periods.
    std::thread::sleep(Duration::from_millis(1500));
    let settled = cluster.lines("sus.log").len();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        cluster.lines("sus.log").len(),
        settled,
        "no scheduled fires while suspended; log:\n{}",
        d.log()
    );
    assert_eq!(d.kube()["sets"]["suspended"], 1);

    // A manual start still runs the job.
    assert_eq!(d.start_job("team-a:sus:tick"), 200);
    d.wait_lines(&cluster, "sus.log", settled + 1);
    // The line is written before the process exits and its run is
    // recorded: wait for the record rather than read it once.
    let last_trigger = || {
        let runs = d.get_json("/jobs/team-a:sus:tick/runs");
        runs["runs"]
            .as_array()
            .and_then(|r| r.last())
            .map(|run| run["trigger"].clone())
            .unwrap_or_default()
    };
    d.wait_until("the manual run is recorded", PATIENCE, || {
        last_trigger() == "manual"
    });
    assert_eq!(
        cluster.lines("sus.log").len(),
        settled + 1,
        "only the manual start ran while suspended"
    );

    // Resuming brings the schedule back.
    cluster.patch_set("team-a", "sus", json!({"spec": {"suspend": false}}));
    d.wait_lines(&cluster, "sus.log", settled + 3);
    d.wait_until("Ready=True again", PATIENCE, || {
        cluster.condition("team-a", "sus", "Ready")["status"] == "True"
    });
}

#[test]
fn a_deleted_set_takes_its_jobs_out_of_the_table() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set(
        "gone",
        json!([tick("a", "gone.log"), tick("b", "gone.log")]),
    ));
    cluster.apply(set("stays", json!([tick("c", "stays.log")])));
    d.wait_until("both sets' jobs", PATIENCE, || d.job_names().len() == 3);
    assert_eq!(
        d.job_names(),
        ["team-a:gone:a", "team-a:gone:b", "team-a:stays:c"]
    );

    cluster.delete("CronJobSet", "team-a", "gone");
    d.wait_until("the deleted set's jobs gone", PATIENCE, || {
        d.job_names() == ["team-a:stays:c"]
    });
    assert!(d.job("team-a:gone:a").is_none());
    d.wait_until("/kube counts one set", PATIENCE, || {
        d.kube()["sets"]["seen"] == 1
    });
    // The deleted set's jobs stop firing; the other set goes on.
    std::thread::sleep(Duration::from_millis(1500));
    let gone = cluster.lines("gone.log").len();
    let stays = cluster.lines("stays.log").len();
    d.wait_lines(&cluster, "stays.log", stays + 2);
    assert_eq!(cluster.lines("gone.log").len(), gone, "{}", d.log());
    assert!(cluster.set("team-a", "gone").is_none());
}

#[test]
fn an_invalid_set_is_refused_alone_with_a_condition_and_an_event() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set("good", json!([tick("tick", "good.log")])));
    d.wait_lines(&cluster, "good.log", 1);

    // The CRD leaves `schedule` free-form, so the API server takes this;
    // the loader must refuse it (minute 61).
    let bad = json!([{"name": "broken", "command": "true", "schedule": "61 * * * *"}]);
    cluster.apply(set("bad", bad));
    d.wait_until("Accepted=False on the bad set", PATIENCE, || {
        cluster.condition("team-a", "bad", "Accepted")["status"] == "False"
    });
    let accepted = cluster.condition("team-a", "bad", "Accepted");
    assert_eq!(accepted["reason"], "Invalid", "{accepted}");
    let message = accepted["message"].as_str().unwrap_or_default();
    assert!(message.contains("cronjobset/team-a/bad"), "{message}");
    assert!(message.contains("team-a:bad:broken"), "{message}");
    assert!(message.contains("61"), "{message}");
    let ready = cluster.condition("team-a", "bad", "Ready");
    assert_eq!(ready["status"], "False", "{ready}");
    assert_eq!(ready["reason"], "NotAccepted", "{ready}");
    assert_eq!(cluster.status("team-a", "bad")["observedGeneration"], 1);

    // A Warning Event on the refused set.
    let mut events = Vec::new();
    d.wait_until("an InvalidSpec Event", PATIENCE, || {
        events = cluster.events_regarding("team-a", "bad");
        events.iter().any(|e| e["reason"] == "InvalidSpec")
    });
    let event = events
        .iter()
        .find(|e| e["reason"] == "InvalidSpec")
        .expect("the event");
    assert_eq!(event["type"], "Warning", "{event}");
    assert_eq!(event["regarding"]["kind"], "CronJobSet", "{event}");
    assert_eq!(event["regarding"]["namespace"], "team-a", "{event}");
    assert_eq!(
        event["reportingController"], "cronstable.io/scheduler",
        "{event}"
    );
    assert!(
        event["note"].as_str().is_some_and(|n| !n.is_empty()),
        "{event}"
    );

    // Its neighbour keeps running, the bad set contributes no job.
    let before = cluster.lines("good.log").len();
    d.wait_lines(&cluster, "good.log", before + 2);
    assert_eq!(d.job_names(), ["team-a:good:tick"]);
    assert_eq!(
        cluster.condition("team-a", "good", "Accepted")["status"],
        "True"
    );
    let kube = d.kube();
    assert_eq!(kube["sets"]["accepted"], 1, "{kube}");
    assert_eq!(kube["sets"]["rejected"], 1, "{kube}");

    // Fixing the set brings it in.
    cluster.apply(set(
        "bad",
        json!([{"name": "broken", "command": "true", "schedule": "1 * * * *"}]),
    ));
    d.wait_until("the fixed set accepted", PATIENCE, || {
        let c = cluster.condition("team-a", "bad", "Accepted");
        c["status"] == "True" && c["observedGeneration"] == 2
    });
    d.wait_until("the fixed job in /jobs", PATIENCE, || {
        d.job("team-a:bad:broken").is_some()
    });
}

#[test]
fn a_configmap_edit_adds_a_job_and_a_broken_configmap_keeps_the_jobs() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &["--configmap", "cronstable-config"]);
    let one = format!(
        "jobs:\n  - name: cm-one\n    command: echo one >> {{dir}}/cm.log\n    schedule: \"{EVERY_SECOND}\"\n"
    );
    cluster.apply(configmap(
        "team-a",
        "cronstable-config",
        json!({"jobs.yaml": one, "README": "not a config key"}),
    ));
    d.wait_lines(&cluster, "cm.log", 1);
    d.wait_until("cm-one in /jobs", PATIENCE, || d.job("cm-one").is_some());
    let kube = d.kube();
    assert_eq!(kube["configMap"], "cronstable-config", "{kube}");

    // An edit adds a YAML job and a crontab.
    let two = format!(
        "{one}  - name: cm-two\n    command: echo two >> {{dir}}/cm2.log\n    schedule: \"{EVERY_SECOND}\"\n"
    );
    cluster.apply(configmap(
        "team-a",
        "cronstable-config",
        json!({
            "jobs.yaml": two,
            "extra.crontab": "17 3 * * * echo from-crontab\n",
        }),
    ));
    d.wait_lines(&cluster, "cm2.log", 1);
    d.wait_until("the crontab's job in /jobs", PATIENCE, || {
        d.get_json("/jobs")
            .as_array()
            .is_some_and(|js| js.iter().any(|j| j["command"] == "echo from-crontab"))
    });
    let jobs_before = d.job_names();
    assert_eq!(jobs_before.len(), 3, "{jobs_before:?}");

    // A broken key keeps the running config.
    cluster.apply(configmap(
        "team-a",
        "cronstable-config",
        json!({"jobs.yaml": "jobs:\n  - name: [unclosed\n"}),
    ));
    let mut events = Vec::new();
    d.wait_until("an InvalidConfig Event on the ConfigMap", PATIENCE, || {
        events = cluster.events_regarding("team-a", "cronstable-config");
        events.iter().any(|e| e["reason"] == "InvalidConfig")
    });
    let event = events
        .iter()
        .find(|e| e["reason"] == "InvalidConfig")
        .expect("the event");
    assert_eq!(event["type"], "Warning", "{event}");
    assert_eq!(event["regarding"]["kind"], "ConfigMap", "{event}");
    assert!(
        d.log()
            .contains("configmap/team-a/cronstable-config:jobs.yaml"),
        "the error names the source; log:\n{}",
        d.log()
    );
    let one_count = cluster.lines("cm.log").len();
    let two_count = cluster.lines("cm2.log").len();
    d.wait_lines(&cluster, "cm.log", one_count + 2);
    d.wait_lines(&cluster, "cm2.log", two_count + 2);
    assert_eq!(d.job_names(), jobs_before, "the running config stays");
}

#[test]
fn the_api_down_for_ten_seconds_keeps_jobs_running_and_status_catches_up() {
    let cluster = Cluster::start();
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set("steady", json!([tick("tick", "steady.log")])));
    d.wait_lines(&cluster, "steady.log", 2);
    d.wait_until("connected and synced", PATIENCE, || {
        let k = d.kube();
        k["connected"] == true && k["synced"] == true
    });
    d.wait_until("a first status", PATIENCE, || {
        cluster.status("team-a", "steady")["lastScheduleTime"].is_string()
    });

    let down_at = Instant::now();
    let seen_before = cluster.fake().requests().len();
    cluster.go_down();
    support::kube_daemon::wait_until(
        "/kube connected false",
        PATIENCE,
        || d.kube()["connected"] == false,
        || {
            let after: Vec<_> = cluster.fake().requests().split_off(seen_before);
            format!("requests from go_down on: {after:?}\nlog:\n{}", d.log())
        },
    );
    assert_eq!(d.metric("cronstable_kube_connected", &[]), Some(0.0));
    let during = cluster.lines("steady.log").len();
    d.wait_lines(&cluster, "steady.log", during + 3);
    // The outage lasts ten seconds (the scenario, not a speed bound).
    if let Some(rest) = Duration::from_secs(10).checked_sub(down_at.elapsed()) {
        std::thread::sleep(rest);
    }
    assert_eq!(d.job_names(), ["team-a:steady:tick"], "the config stays");
    let back_at = chrono::Utc::now();
    cluster.come_back();

    d.wait_until("/kube connected true", PATIENCE, || {
        let k = d.kube();
        k["connected"] == true && k["synced"] == true
    });
    d.wait_for_log("Kubernetes API reachable again", 1, PATIENCE);
    let log = d.log();
    let lines = |level: &str, needle: &str| {
        log.lines()
            .filter(|l| l.starts_with(level) && l.contains(needle))
            .count()
    };
    assert_eq!(
        lines("WARNING:", "Kubernetes API unreachable"),
        1,
        "one warning per outage, not per retry; log:\n{log}"
    );
    assert_eq!(lines("INFO:", "Kubernetes API reachable again"), 1, "{log}");
    // The status written after the outage shows fires from after it.
    let floor = back_at - chrono::Duration::seconds(1);
    d.wait_until("status catching up", PATIENCE, || {
        let t = &cluster.status("team-a", "steady")["lastScheduleTime"];
        t.is_string() && time_of(t) >= floor
    });
    let kube = d.kube();
    assert!(kube["watchRestarts"].as_u64().unwrap_or(0) >= 1, "{kube}");

    // The watch works again: a new set is picked up.
    cluster.apply(set("after", json!([tick("tick", "after.log")])));
    d.wait_lines(&cluster, "after.log", 1);
    let mut d = d;
    assert_eq!(d.exited(), None, "the daemon is still running");
}

#[test]
fn an_api_answering_503_never_stops_the_daemon() {
    let cluster = Cluster::start();
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set("steady", json!([tick("tick", "steady.log")])));
    d.wait_lines(&cluster, "steady.log", 2);
    d.wait_until("synced", PATIENCE, || d.kube()["synced"] == true);

    cluster.fake().set_unavailable(true);
    let during = cluster.lines("steady.log").len();
    d.wait_lines(&cluster, "steady.log", during + 5);
    assert_eq!(d.job_names(), ["team-a:steady:tick"]);
    let back_at = chrono::Utc::now();
    cluster.fake().set_unavailable(false);

    let floor = back_at - chrono::Duration::seconds(1);
    d.wait_until("status catching up", PATIENCE, || {
        let t = &cluster.status("team-a", "steady")["lastScheduleTime"];
        t.is_string() && time_of(t) >= floor
    });
    cluster.apply(set("after", json!([tick("tick", "after.log")])));
    d.wait_lines(&cluster, "after.log", 1);
    d.wait_until("connected", PATIENCE, || d.kube()["connected"] == true);
    let mut d = d;
    assert_eq!(d.exited(), None, "the daemon is still running");
}

#[test]
fn the_daemon_starts_with_the_api_down_and_takes_the_sets_when_it_answers() {
    let cluster = Cluster::start();
    cluster.apply(set("waiting", json!([tick("tick", "waiting.log")])));
    cluster.go_down();
    let mut how = Launch::new(&cluster);
    how.config = format!(
        "jobs:\n  - name: file-tick\n    command: echo file >> {{dir}}/file.log\n    schedule: \"{EVERY_SECOND}\"\n"
    );
    let d = KubeDaemon::launch(&cluster, how);
    // The file's job runs while the cluster is out of reach.
    d.wait_lines(&cluster, "file.log", 2);
    let kube = d.kube();
    assert_eq!(kube["connected"], false, "{kube}");
    assert_eq!(kube["synced"], false, "{kube}");
    assert!(kube["lastSyncTime"].is_null(), "{kube}");
    assert_eq!(d.job_names(), ["file-tick"]);
    assert!(cluster.lines("waiting.log").is_empty());
    // Live, but not ready before the first sync.
    assert_eq!(support::http::get(d.port, "/livez").status, 200);
    let not_ready = support::http::get(d.port, "/readyz");
    assert_eq!(not_ready.status, 503, "{}", not_ready.body);
    assert!(
        not_ready.json()["reason"]
            .as_str()
            .is_some_and(|r| r.contains("first sync")),
        "{}",
        not_ready.body
    );

    cluster.come_back();
    d.wait_lines(&cluster, "waiting.log", 1);
    d.wait_until("synced", PATIENCE, || {
        let k = d.kube();
        k["connected"] == true && k["synced"] == true && is_utc_time(&k["lastSyncTime"])
    });
    assert_eq!(d.job_names(), ["file-tick", "team-a:waiting:tick"]);
    let ready = support::http::get(d.port, "/readyz");
    assert_eq!(ready.status, 200, "{}", ready.body);
    let files = cluster.lines("file.log").len();
    d.wait_lines(&cluster, "file.log", files + 1);
}

#[test]
fn an_expired_watch_history_makes_the_daemon_relist() {
    let cluster = Cluster::start();
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set("first", json!([tick("tick", "first.log")])));
    d.wait_lines(&cluster, "first.log", 1);
    d.wait_until("synced", PATIENCE, || d.kube()["synced"] == true);
    let restarts_before = d.kube()["watchRestarts"].as_u64().expect("watchRestarts");

    cluster.fake().clear_requests();
    cluster.fake().expire_history();
    cluster.apply(set("second", json!([tick("tick", "second.log")])));
    d.wait_lines(&cluster, "second.log", 1);
    assert_eq!(
        d.job_names(),
        ["team-a:first:tick", "team-a:second:tick"],
        "nothing lost across the relist"
    );
    let relisted = cluster.fake().requests().iter().any(|r| {
        r.method == "GET"
            && r.path.ends_with("/cronjobsets")
            && (!r.is_watch() || r.has_param("sendInitialEvents", "true"))
    });
    assert!(
        relisted,
        "a fresh list after 410: {:?}",
        cluster.fake().requests()
    );
    d.wait_until("a counted watch restart", PATIENCE, || {
        d.kube()["watchRestarts"].as_u64().unwrap_or(0) > restarts_before
    });
    let metric = d
        .metric("cronstable_kube_watch_restarts_total", &[])
        .expect("the restarts counter");
    assert!(metric >= 1.0, "{metric}");
}

#[test]
fn two_daemons_with_different_selectors_take_their_own_sets() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    cluster.apply(cronjobset(
        "team-a",
        "alpha",
        json!({"team": "a"}),
        json!({"jobs": [tick("tick", "alpha.log")]}),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "beta",
        json!({"team": "b"}),
        json!({"jobs": [tick("tick", "beta.log")]}),
    ));
    let a = KubeDaemon::start(&cluster, &["--selector", "team=a"]);
    let b = KubeDaemon::start(&cluster, &["--selector", "team=b,tier!=x"]);
    a.wait_until("alpha in A", PATIENCE, || {
        a.job_names() == ["team-a:alpha:tick"]
    });
    b.wait_until("beta in B", PATIENCE, || {
        b.job_names() == ["team-a:beta:tick"]
    });
    a.wait_lines(&cluster, "alpha.log", 1);
    b.wait_lines(&cluster, "beta.log", 1);
    assert_eq!(a.kube()["selector"], "team=a");
    assert_eq!(a.kube()["sets"]["seen"], 1);
    assert_eq!(b.kube()["sets"]["seen"], 1);
    for name in ["alpha", "beta"] {
        a.wait_until(&format!("{name} accepted"), PATIENCE, || {
            cluster.condition("team-a", name, "Accepted")["status"] == "True"
        });
    }

    // Relabelling moves a set from one scheduler to the other.
    cluster.apply(cronjobset(
        "team-a",
        "alpha",
        json!({"team": "b"}),
        json!({"jobs": [tick("tick", "alpha.log")]}),
    ));
    a.wait_until("alpha gone from A", PATIENCE, || a.job_names().is_empty());
    b.wait_until("alpha in B", PATIENCE, || {
        b.job_names() == ["team-a:alpha:tick", "team-a:beta:tick"]
    });
    // A set labelled out of both selectors runs nowhere. B sees every
    // change in order, so once it shows the later edit of beta it has
    // passed over gamma.
    cluster.apply(cronjobset(
        "team-a",
        "gamma",
        json!({"team": "b", "tier": "x"}),
        json!({"jobs": [tick("tick", "gamma.log")]}),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "beta",
        json!({"team": "b"}),
        json!({"jobs": [tick("tick", "beta.log"), tick("tock", "beta.log")]}),
    ));
    b.wait_until("beta's edit in B", PATIENCE, || {
        b.job_names() == ["team-a:alpha:tick", "team-a:beta:tick", "team-a:beta:tock"]
    });
    assert!(a.job_names().is_empty());
    assert!(cluster.lines("gamma.log").is_empty());
}

#[test]
fn cronjobsets_all_takes_every_namespace_and_none_takes_no_set() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    cluster.apply(cronjobset(
        "team-a",
        "here",
        json!({}),
        json!({"jobs": [tick("tick", "here.log")]}),
    ));
    cluster.apply(cronjobset(
        "team-b",
        "there",
        json!({}),
        json!({"jobs": [tick("tick", "there.log")]}),
    ));
    let own = KubeDaemon::start(&cluster, &[]);
    let all = KubeDaemon::start(&cluster, &["--cronjobsets", "all"]);
    let none = KubeDaemon::start(&cluster, &["--cronjobsets", "none"]);
    own.wait_until("its namespace only", PATIENCE, || {
        own.job_names() == ["team-a:here:tick"]
    });
    all.wait_until("both namespaces", PATIENCE, || {
        all.job_names() == ["team-a:here:tick", "team-b:there:tick"]
    });
    none.wait_until("synced", PATIENCE, || none.kube()["synced"] == true);
    assert!(none.job_names().is_empty(), "{:?}", none.job_names());
    assert_eq!(own.kube()["cronJobSets"], "namespace");
    assert_eq!(all.kube()["cronJobSets"], "all");
    assert_eq!(none.kube()["cronJobSets"], "none");
    assert_eq!(none.kube()["sets"]["seen"], 0);
}

#[test]
fn environment_variables_work_like_flags() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    cluster.apply(cronjobset(
        "team-b",
        "mine",
        json!({"team": "a"}),
        json!({"jobs": [tick("tick", "mine.log")]}),
    ));
    cluster.apply(cronjobset(
        "team-b",
        "other",
        json!({"team": "b"}),
        json!({"jobs": [tick("tick", "other.log")]}),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "elsewhere",
        json!({"team": "a"}),
        json!({"jobs": [tick("tick", "elsewhere.log")]}),
    ));

    let mut by_env = Launch::new(&cluster);
    by_env.via_env = true;
    by_env.namespace = Some("team-b".into());
    by_env.env = vec![
        ("CRONSTABLE_SELECTOR".into(), "team=a".into()),
        ("CRONSTABLE_CONFIGMAP".into(), "settings".into()),
        ("CRONSTABLE_CRONJOBSETS".into(), "namespace".into()),
    ];
    let env_daemon = KubeDaemon::launch(&cluster, by_env);
    let by_flags = Launch::new(&cluster).args(&[
        "--namespace",
        "team-b",
        "--selector",
        "team=a",
        "--configmap",
        "settings",
        "--cronjobsets",
        "namespace",
    ]);
    let mut by_flags = by_flags;
    by_flags.namespace = None;
    let flag_daemon = KubeDaemon::launch(&cluster, by_flags);

    for d in [&env_daemon, &flag_daemon] {
        d.wait_until("the selected set", PATIENCE, || {
            d.job_names() == ["team-b:mine:tick"]
        });
        let kube = d.kube();
        assert_eq!(kube["namespace"], "team-b", "{kube}");
        assert_eq!(kube["selector"], "team=a", "{kube}");
        assert_eq!(kube["configMap"], "settings", "{kube}");
        assert_eq!(kube["enabled"], true, "{kube}");
        assert_eq!(kube["cronJobSets"], "namespace", "{kube}");
    }
    // CRONSTABLE_LOG_LEVEL=DEBUG took effect as -l DEBUG does.
    assert!(
        env_daemon.log().lines().any(|l| l.starts_with("DEBUG:")),
        "{}",
        env_daemon.log()
    );

    // Without --namespace the kubeconfig context's namespace is used.
    let mut plain = Launch::new(&cluster);
    plain.namespace = None;
    let ctx = KubeDaemon::launch(&cluster, plain);
    ctx.wait_until("the context namespace's set", PATIENCE, || {
        ctx.job_names() == ["team-a:elsewhere:tick"]
    });
    assert_eq!(ctx.kube()["namespace"], "team-a");
    assert!(ctx.kube()["selector"].is_null());
    assert!(ctx.kube()["configMap"].is_null());
}

#[test]
fn kube_endpoint_and_metrics_show_the_state() {
    let started = chrono::Utc::now() - chrono::Duration::seconds(2);
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    cluster.apply(set("good", json!([tick("tick", "good.log")])));
    cluster.apply(set(
        "bad",
        json!([{"name": "broken", "command": "true", "schedule": "61 * * * *"}]),
    ));
    cluster.apply(cronjobset(
        "team-a",
        "paused",
        json!({}),
        json!({"suspend": true, "jobs": [tick("tick", "paused.log")]}),
    ));
    d.wait_until("three sets counted", PATIENCE, || {
        d.kube()["sets"]["seen"] == 3
    });
    d.wait_until("status written", PATIENCE, || {
        cluster.status("team-a", "good")["lastScheduleTime"].is_string()
            && d.kube()["statusWrites"].as_u64().unwrap_or(0) >= 1
    });
    let kube = d.kube();
    assert_eq!(kube["namespace"], "team-a", "{kube}");
    assert!(kube["configMap"].is_null(), "{kube}");
    assert_eq!(kube["enabled"], true, "{kube}");
    assert_eq!(kube["cronJobSets"], "namespace", "{kube}");
    assert!(kube["selector"].is_null(), "{kube}");
    assert_eq!(kube["connected"], true, "{kube}");
    assert_eq!(kube["synced"], true, "{kube}");
    assert!(is_utc_time(&kube["lastSyncTime"]), "{kube}");
    assert!(time_of(&kube["lastSyncTime"]) >= started, "{kube}");
    assert!(kube["watchRestarts"].is_u64(), "{kube}");
    assert!(kube["lastError"].is_null(), "{kube}");
    // A suspended set is accepted (it loaded) and counted as suspended.
    assert_eq!(
        kube["sets"],
        json!({"seen": 3, "accepted": 2, "rejected": 1, "suspended": 1}),
        "{kube}"
    );
    assert_eq!(kube["statusWriteFailures"], 0, "{kube}");
    // GET /kube/sets: each set as the dashboard's CronJobSet card shows it,
    // with the Event raised on the refused one.
    d.wait_until("the InvalidSpec Event in /kube/sets", PATIENCE, || {
        d.get_json("/kube/sets")["sets"]
            .as_array()
            .is_some_and(|sets| {
                sets.iter()
                    .any(|s| s["name"] == "bad" && s["events"][0]["reason"] == "InvalidSpec")
            })
    });
    let listed = d.get_json("/kube/sets");
    assert_eq!(listed["enabled"], true, "{listed}");
    let by_name = |name: &str| {
        listed["sets"]
            .as_array()
            .and_then(|sets| sets.iter().find(|s| s["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no set {name} in {listed}"))
    };
    let good = by_name("good");
    assert_eq!(good["namespace"], "team-a", "{good}");
    assert_eq!(good["accepted"], true, "{good}");
    assert_eq!(good["suspended"], false, "{good}");
    assert_eq!(
        good["jobs"],
        json!([{"name": "tick", "job": "team-a:good:tick"}]),
        "{good}"
    );
    assert!(good["jobSetId"].is_string(), "{good}");
    assert_eq!(by_name("paused")["suspended"], true);
    let bad = by_name("bad");
    assert_eq!(bad["accepted"], false, "{bad}");
    assert!(
        bad["message"].as_str().is_some_and(|m| m.contains("61")),
        "{bad}"
    );
    assert_eq!(bad["jobs"], json!([]), "{bad}");
    assert_eq!(bad["events"][0]["type"], "Warning", "{bad}");
    assert_eq!(bad["events"][0]["published"], true, "{bad}");

    let text = d.metrics();
    let m = |name: &str, labels: &[(&str, &str)]| {
        support::kube_daemon::sample(&text, name, labels)
            .unwrap_or_else(|| panic!("no {name} {labels:?} in:\n{text}"))
    };
    assert_eq!(m("cronstable_kube_connected", &[]), 1.0);
    assert_eq!(m("cronstable_kube_synced", &[]), 1.0);
    assert!(m("cronstable_kube_watch_restarts_total", &[]) >= 0.0);
    let obj = |state| {
        m(
            "cronstable_kube_objects",
            &[("kind", "CronJobSet"), ("state", state)],
        )
    };
    assert_eq!(obj("accepted"), 2.0);
    assert_eq!(obj("rejected"), 1.0);
    assert_eq!(obj("suspended"), 1.0);
    let last_sync = m("cronstable_kube_last_sync_timestamp_seconds", &[]);
    assert!(last_sync >= started.timestamp() as f64, "{last_sync}");
    assert!(m("cronstable_kube_status_writes_total", &[]) >= 1.0);
    assert_eq!(m("cronstable_kube_status_write_failures_total", &[]), 0.0);
    assert!(m("cronstable_kube_apply_duration_seconds_count", &[]) >= 1.0);
    assert!(m("cronstable_kube_apply_duration_seconds_sum", &[]) >= 0.0);
    assert!(
        text.contains("cronstable_kube_apply_duration_seconds_bucket{"),
        "{text}"
    );
    // The set's job names are usable as metric labels.
    assert!(text.contains("\"team-a:good:tick\""), "{text}");
}

#[test]
fn kube_endpoint_says_disabled_without_kube() {
    let (_d, port) = support::daemon::Daemon::start_with_web("", "  []\n");
    let reply = support::http::get(port, "/kube");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json(), json!({"enabled": false}), "{}", reply.body);
    let reply = support::http::get(port, "/kube/sets");
    assert_eq!(reply.json(), json!({"enabled": false}), "{}", reply.body);
}

#[test]
fn failed_runs_show_in_status_and_as_aggregated_warning_events() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &[]);
    let failing = json!({
        "name": "fails",
        "command": "echo x >> {dir}/fails.log; exit 3",
        "schedule": EVERY_SECOND,
    });
    cluster.apply(set("flaky", json!([failing])));
    d.wait_lines(&cluster, "fails.log", 4);
    d.wait_until("a failure in status", PATIENCE, || {
        cluster.status("team-a", "flaky")["jobs"][0]["lastResult"]["outcome"] == "failure"
    });
    let result = cluster.status("team-a", "flaky")["jobs"][0]["lastResult"].clone();
    assert_eq!(result["exitCode"], 3, "{result}");
    assert!(result["failReason"].is_string(), "{result}");
    assert!(is_rfc3339_z(&result["finishedAt"]), "{result}");
    assert!(result["node"].is_string(), "{result}");

    let mut events = Vec::new();
    d.wait_until("a repeated RunFailed Event", PATIENCE, || {
        events = cluster.events_regarding("team-a", "flaky");
        events
            .iter()
            .any(|e| e["reason"] == "RunFailed" && e["series"]["count"].as_u64() >= Some(2))
    });
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["reason"] == "RunFailed")
        .collect();
    let runs = cluster.lines("fails.log").len();
    assert!(
        failed.len() < runs,
        "repeats bump the count rather than adding Events: {} events for {runs} runs",
        failed.len()
    );
    assert_eq!(failed[0]["type"], "Warning");
    assert_eq!(failed[0]["regarding"]["kind"], "CronJobSet");
}

/// Runs the binary with `args` (no inherited kube settings) and returns its
/// exit code and stderr; kills it and panics if it is still running after
/// the patience bound (a flag that should be refused was taken).
fn run_briefly(args: &[&str], cwd: &std::path::Path) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cronstable"))
        .args(args)
        .current_dir(cwd)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the binary");
    let start = Instant::now();
    let code = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.code();
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("cronstable {args:?} kept running");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut err);
    }
    (code, err)
}

#[test]
fn a_bad_scope_or_selector_is_refused_at_start() {
    let cluster = Cluster::start();
    let kubeconfig = cluster.kubeconfig.display().to_string();
    let (code, err) = run_briefly(
        &[
            "--kube",
            "--kubeconfig",
            &kubeconfig,
            "--cronjobsets",
            "some",
        ],
        cluster.dir.path(),
    );
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("--cronjobsets") && err.contains("some"),
        "{err}"
    );
    let (code, err) = run_briefly(
        &[
            "--kube",
            "--kubeconfig",
            &kubeconfig,
            "--selector",
            "team=a,,",
        ],
        cluster.dir.path(),
    );
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("--selector"), "{err}");
}

/// How many lines of `log` start with `level` and hold `needle`.
fn count_lines(log: &str, level: &str, needle: &str) -> usize {
    log.lines()
        .filter(|l| l.starts_with(level) && l.contains(needle))
        .count()
}

/// `GET /readyz`: its status and its reason (empty when ready).
fn readyz(port: u16) -> (u16, String) {
    let reply = support::http::get(port, "/readyz");
    let reason = reply.json()["reason"].as_str().unwrap_or("").to_owned();
    (reply.status, reason)
}

/// The RBAC rules the scheduler needs in `team-a` (docs/kubernetes.md),
/// `configmaps` only when `with_configmaps`, as a Role bound to the
/// ServiceAccount `cronstable`.
fn role_yaml(with_configmaps: bool) -> String {
    let configmaps = if with_configmaps {
        "  - apiGroups: [\"\"]\n    resources: [configmaps]\n    verbs: [list, watch]\n"
    } else {
        ""
    };
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: cronstable, namespace: team-a}}\nrules:\n  - apiGroups: [cronstable.io]\n    resources: [cronjobsets]\n    verbs: [list, watch]\n  - apiGroups: [cronstable.io]\n    resources: [cronjobsets/status]\n    verbs: [patch]\n{configmaps}  - apiGroups: [events.k8s.io]\n    resources: [events]\n    verbs: [create, patch]\n"
    )
}

/// On a real server: the ServiceAccount `cronstable` in `team-a`, bound to
/// [`role_yaml`] without `configmaps`, and a kubeconfig carrying its
/// token (`kubectl create token`), as a pod of the chart would hold.
fn service_account_without_configmaps(cluster: &Cluster) -> std::path::PathBuf {
    let objects = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: cronstable, namespace: team-a}}\n---\n{}---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: cronstable, namespace: team-a}}\nsubjects:\n  - {{kind: ServiceAccount, name: cronstable, namespace: team-a}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: cronstable}}\n",
        role_yaml(false)
    );
    let path = cluster.path("kubeconfig-cronstable-sa");
    cluster.real_server(|server| {
        let (ok, _, err) = server.kubectl_with(
            &server.admin_kubeconfig(),
            &["apply", "-f", "-"],
            Some(&objects),
        );
        assert!(ok, "kubectl apply the RBAC objects: {err}");
        let token = server.token("team-a", "cronstable");
        server.write_token_kubeconfig(&path, &token, "team-a");
    });
    path
}

#[test]
fn a_forbidden_configmap_is_one_warning_not_an_outage_and_readyz_names_it() {
    let cluster = Cluster::start();
    // As a Role without configmaps: every ConfigMap request answers 403.
    forbidden_configmap(
        &cluster,
        Launch::new(&cluster),
        || cluster.fake().deny("", "configmaps", Some("team-a")),
        || cluster.fake().allow_all(),
    );
}

#[test]
fn a_role_without_configmaps_on_a_real_server_is_one_warning_and_readyz_names_it() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let mut how = Launch::new(&cluster);
    how.kubeconfig = Some(service_account_without_configmaps(&cluster));
    forbidden_configmap(
        &cluster,
        how,
        || {},
        || {
            cluster.real_server(|server| {
                let (ok, _, err) = server.kubectl_with(
                    &server.admin_kubeconfig(),
                    &["apply", "-f", "-"],
                    Some(&role_yaml(true)),
                );
                assert!(ok, "grant configmaps: {err}");
            });
        },
    );
}

/// A scheduler whose Role lacks `configmaps` (`deny` takes the right
/// away once the test's objects are in place, unless the daemon's
/// identity never had it), watched for nine seconds; then `allow` grants
/// the right.
fn forbidden_configmap(cluster: &Cluster, how: Launch, deny: impl FnOnce(), allow: impl FnOnce()) {
    cluster.apply(configmap(
        "team-a",
        "cronstable-config",
        json!({"jobs.yaml": format!(
            "jobs:\n  - name: cm-tick\n    command: echo cm >> {{dir}}/cm.log\n    schedule: \"{EVERY_SECOND}\"\n"
        )}),
    ));
    cluster.apply(set("steady", json!([tick("tick", "steady.log")])));
    deny();
    let d = KubeDaemon::launch(cluster, how.args(&["--configmap", "cronstable-config"]));
    d.wait_lines(cluster, "steady.log", 2);
    // Eight seconds and more of retries, while the sets' watch answers and
    // the daemon's own status writes succeed and come back on it: the
    // ConfigMap's error must stay the whole time.
    let window = Instant::now();
    let writes_before = d.kube()["statusWrites"].as_u64().unwrap_or(0);
    let mut polls = 0;
    while window.elapsed() < Duration::from_secs(9) {
        let kube = d.kube();
        if polls > 0 || kube["lastError"].is_string() {
            let error = kube["lastError"].as_str().unwrap_or("(null)");
            assert!(
                error.contains("403 Forbidden") && error.contains("configmaps"),
                "lastError lost at {:?}: {kube}",
                window.elapsed()
            );
            polls += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        polls > 30,
        "the error was published within the window: {polls}"
    );
    let kube = d.kube();
    assert!(
        kube["statusWrites"].as_u64().unwrap_or(0) > writes_before,
        "status writes went on meanwhile: {kube}"
    );
    assert_eq!(kube["connected"], false, "{kube}");
    assert_eq!(kube["watches"]["configMap"]["state"], "refused", "{kube}");
    assert_eq!(kube["watches"]["cronJobSets"]["state"], "ok", "{kube}");
    assert!(
        kube["watches"]["cronJobSets"]["lastError"].is_null(),
        "{kube}"
    );
    let log = d.log();
    assert_eq!(
        count_lines(
            &log,
            "WARNING:",
            "Kubernetes API refused to list configmaps"
        ),
        1,
        "one warning, not one per retry; log:\n{log}"
    );
    let warning = log
        .lines()
        .find(|l| l.contains("Kubernetes API refused"))
        .expect("the warning");
    for needed in [
        "in namespace team-a",
        "403 Forbidden",
        "cannot list resource",
        "RBAC",
    ] {
        assert!(warning.contains(needed), "{needed:?} in {warning}");
    }
    assert_eq!(count_lines(&log, "WARNING:", "unreachable"), 0, "{log}");
    assert_eq!(count_lines(&log, "INFO:", "reachable again"), 0, "{log}");
    let (status, reason) = readyz(d.port);
    assert_eq!(status, 503);
    for needed in ["Forbidden", "configmaps", "namespace team-a"] {
        assert!(reason.contains(needed), "{needed:?} in {reason}");
    }
    assert_eq!(support::http::get(d.port, "/livez").status, 200);

    // The right granted: the ConfigMap is read, the pod turns ready, one
    // line says so. (The next retry may be up to the backoff's 30 s away.)
    allow();
    d.wait_until("the ConfigMap's job", Duration::from_secs(45), || {
        !cluster.lines("cm.log").is_empty()
    });
    d.wait_until("ready", Duration::from_secs(45), || readyz(d.port).0 == 200);
    let kube = d.kube();
    assert_eq!(kube["connected"], true, "{kube}");
    assert!(kube["lastError"].is_null(), "{kube}");
    assert_eq!(kube["configMapState"], "found", "{kube}");
    let log = d.log();
    assert_eq!(
        count_lines(&log, "INFO:", "Kubernetes API allows reading configmaps"),
        1,
        "{log}"
    );
    assert_eq!(count_lines(&log, "INFO:", "reachable again"), 0, "{log}");
}

#[test]
fn a_configmap_missing_at_start_is_loud_and_the_probes_still_answer() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    cluster.apply(set("steady", json!([tick("tick", "steady.log")])));
    // As the chart runs it: the web section would come from the ConfigMap,
    // whose name is misspelled here.
    let mut how = Launch::new(&cluster).args(&[
        "--configmap",
        "cronstable-confg",
        "--pod-name",
        "cronstable-7d9f8-abcde",
        "--pod-uid",
        "0a1b2c3d-uid",
    ]);
    how.probe_only = true;
    let d = KubeDaemon::launch(&cluster, how);
    // The sets' jobs run; the probes answer on the probe listener.
    d.wait_lines(&cluster, "steady.log", 1);
    d.wait_for_log("(--configmap) does not exist", 1, PATIENCE);
    assert_eq!(support::http::get(d.port, "/livez").status, 200);
    let (status, reason) = readyz(d.port);
    assert_eq!(status, 503);
    assert_eq!(
        reason, "the ConfigMap team-a/cronstable-confg (--configmap) does not exist",
        "the reason"
    );
    // Only the probes: nothing else is open without a web section.
    assert_eq!(support::http::get(d.port, "/jobs").status, 404);
    let log = d.log();
    assert_eq!(
        count_lines(
            &log,
            "WARNING:",
            "ConfigMap team-a/cronstable-confg (--configmap) does not exist"
        ),
        1,
        "{log}"
    );
    let mut events = Vec::new();
    d.wait_until("a ConfigMapMissing Event on the pod", PATIENCE, || {
        events = cluster.events_regarding("team-a", "cronstable-7d9f8-abcde");
        events.iter().any(|e| e["reason"] == "ConfigMapMissing")
    });
    let event = &events[0];
    assert_eq!(event["type"], "Warning", "{event}");
    assert_eq!(event["regarding"]["kind"], "Pod", "{event}");
    assert_eq!(event["regarding"]["uid"], "0a1b2c3d-uid", "{event}");
    assert!(
        event["note"]
            .as_str()
            .is_some_and(|n| n.contains("team-a/cronstable-confg")),
        "{event}"
    );
    // Still one warning after several seconds (relists say nothing new).
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(count_lines(&d.log(), "WARNING:", "does not exist"), 1);

    // The ConfigMap created (with the web section, as the chart writes
    // it): its job and the whole API come up, the pod turns ready.
    cluster.apply(configmap(
        "team-a",
        "cronstable-confg",
        json!({"cronstable.yaml": format!(
            "web:\n  listen: [\"http://127.0.0.1:{}\"]\njobs:\n  - name: cm-tick\n    command: echo cm >> {{dir}}/cm.log\n    schedule: \"{EVERY_SECOND}\"\n",
            d.port
        )}),
    ));
    d.wait_for_log("web: started listening", 1, PATIENCE);
    d.wait_lines(&cluster, "cm.log", 1);
    d.wait_until("ready", PATIENCE, || readyz(d.port).0 == 200);
    assert_eq!(d.kube()["configMapState"], "found");
    assert_eq!(
        count_lines(
            &d.log(),
            "INFO:",
            "ConfigMap team-a/cronstable-confg (--configmap) now exists"
        ),
        1
    );
}

#[test]
fn kube_shows_a_missing_configmap_and_the_event_regards_it_without_a_pod_name() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let d = KubeDaemon::start(&cluster, &["--configmap", "nowhere"]);
    d.wait_until("synced, the ConfigMap seen missing", PATIENCE, || {
        let kube = d.kube();
        kube["synced"] == true && kube["configMapState"] == "missing"
    });
    let kube = d.kube();
    assert_eq!(kube["watches"]["configMap"]["state"], "ok", "{kube}");
    let (status, reason) = readyz(d.port);
    assert_eq!(
        (status, reason.as_str()),
        (
            503,
            "the ConfigMap team-a/nowhere (--configmap) does not exist"
        )
    );
    let mut events = Vec::new();
    d.wait_until(
        "a ConfigMapMissing Event on the ConfigMap",
        PATIENCE,
        || {
            events = cluster.events_regarding("team-a", "nowhere");
            !events.is_empty()
        },
    );
    assert_eq!(events[0]["reason"], "ConfigMapMissing");
    assert_eq!(events[0]["regarding"]["kind"], "ConfigMap");
}

#[test]
fn a_deleted_configmap_keeps_the_jobs_and_the_web_api_until_it_is_recreated() {
    let Some(cluster) = Cluster::real() else {
        return;
    };
    let mut how = Launch::new(&cluster).args(&[
        "--configmap",
        "cronstable-config",
        "--pod-name",
        "cronstable-0",
    ]);
    how.probe_only = true;
    let d = KubeDaemon::launch(&cluster, how);
    let config = |jobs: &[&str]| {
        let mut text = format!("web:\n  listen: [\"http://127.0.0.1:{}\"]\njobs:\n", d.port);
        for job in jobs {
            text.push_str(&format!(
                "  - name: {job}\n    command: echo {job} >> {{dir}}/{job}.log\n    schedule: \"{EVERY_SECOND}\"\n"
            ));
        }
        configmap(
            "team-a",
            "cronstable-config",
            json!({"cronstable.yaml": text}),
        )
    };
    cluster.apply(config(&["cm-one"]));
    d.wait_for_log("web: started listening", 1, PATIENCE);
    d.wait_lines(&cluster, "cm-one.log", 1);
    d.wait_until("ready", PATIENCE, || readyz(d.port).0 == 200);

    cluster.delete("ConfigMap", "team-a", "cronstable-config");
    d.wait_for_log("(--configmap) was deleted", 1, PATIENCE);
    // The jobs go on, the API stays where it was, the pod stays live and
    // ready (its config runs), and the state says deleted.
    let runs = cluster.lines("cm-one.log").len();
    d.wait_lines(&cluster, "cm-one.log", runs + 3);
    assert_eq!(support::http::get(d.port, "/livez").status, 200);
    assert_eq!(readyz(d.port).0, 200);
    assert_eq!(d.job_names(), ["cm-one"]);
    let kube = d.kube();
    assert_eq!(kube["configMapState"], "deleted", "{kube}");
    let log = d.log();
    assert_eq!(
        count_lines(
            &log,
            "WARNING:",
            "ConfigMap team-a/cronstable-config (--configmap) was deleted: keeping the running config"
        ),
        1,
        "{log}"
    );
    assert_eq!(
        count_lines(&log, "INFO:", "Stopping http server"),
        1,
        "only the probe listener stopped: {log}"
    );
    let mut events = Vec::new();
    d.wait_until("a ConfigMapDeleted Event on the pod", PATIENCE, || {
        events = cluster.events_regarding("team-a", "cronstable-0");
        events.iter().any(|e| e["reason"] == "ConfigMapDeleted")
    });
    assert_eq!(events[0]["type"], "Warning");

    // Recreated with another job: back to found, one INFO line, the new
    // config in force.
    cluster.apply(config(&["cm-one", "cm-two"]));
    d.wait_lines(&cluster, "cm-two.log", 1);
    assert_eq!(d.kube()["configMapState"], "found");
    assert_eq!(
        count_lines(
            &d.log(),
            "INFO:",
            "ConfigMap team-a/cronstable-config (--configmap) was created again; loading it"
        ),
        1
    );
    assert_eq!(d.job_names(), ["cm-one", "cm-two"]);
}
