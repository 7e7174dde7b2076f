//! The chart and `deploy/` installed into a real kube-apiserver (from
//! `KUBEBUILDER_ASSETS`; each test is skipped, saying why, when it is
//! unset) the way docs/kubernetes.md tells an operator to: `helm install`,
//! `helm upgrade`, `helm uninstall` with the real helm, `kubectl apply -f
//! deploy/` with the real kubectl.
//!
//! There is no kubelet, so the scheduler's pod never starts. The tests run
//! the built binary on the host the way that pod would run it: the
//! Deployment's own container args and environment, read back from the
//! server (a downward-API variable gets what the kubelet would give it),
//! `HOSTNAME` set to the pod's name, a working directory of its own, and
//! the credentials of the Deployment's ServiceAccount: a token from `kubectl
//! create token` in a kubeconfig whose context namespace stands for the
//! pod's namespace file. So every request the daemon makes is judged by the
//! chart's (or `deploy/`'s) RBAC, and the server's audit log says which
//! requests it made and what they were answered.
//!
//! What is proved: the chart installs and its scheduler runs a ConfigMap
//! job and an applied CronJobSet with no Forbidden anywhere; three replicas
//! after `helm upgrade` elect one leader on the Lease and run a Leader job
//! once per fire; `helm uninstall` removes the chart's objects and keeps
//! the CRD; `kubectl apply -f deploy/` exits 0 and its scheduler accepts the
//! example set; and the Role is exactly what is needed: every verb it
//! grants is used, and without any one of them the scheduler says so in a
//! WARNING or ERROR line naming the resource. `helm lint` and `helm
//! template` are checked offline by tests/chart.rs.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::envtest::{helm_binary, ApiServer};
use support::kube_daemon::{read_lines, wait_until};

/// The checkout: `deploy/` and the chart are applied from here.
const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The bound on every wait here; never a speed assertion.
const PATIENCE: Duration = Duration::from_secs(30);

/// How long a scheduler missing one right gets to say so.
const LOUD_WITHIN: Duration = Duration::from_secs(15);

/// Seven fields: fires every second.
const EVERY_SECOND: &str = "* * * * * * *";

/// A test's API server and a temp dir for values files, kubeconfigs, the
/// schedulers' working directories and the files their jobs write.
struct Env {
    server: ApiServer,
    dir: tempfile::TempDir,
}

impl Env {
    /// Starts an API server; `None` (skipped, the harness says why) when
    /// `KUBEBUILDER_ASSETS` is unset.
    fn start(test: &str) -> Option<Env> {
        let server = ApiServer::start(test)?;
        let dir = tempfile::Builder::new()
            .prefix("cronstable-chart-")
            .tempdir()
            .expect("a temp dir");
        Some(Env { server, dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `kubectl` as the admin; panics with stderr unless it exits 0.
    fn kubectl(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.server.kubectl(args);
        assert!(ok, "kubectl {args:?} failed:\n{err}\n{out}");
        out
    }

    /// `kubectl` as the admin, with `stdin`.
    fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> String {
        let (ok, out, err) =
            self.server
                .kubectl_with(&self.server.admin_kubeconfig(), args, Some(stdin));
        assert!(
            ok,
            "kubectl {args:?} failed:\n{err}\n{out}\nstdin:\n{stdin}"
        );
        out
    }

    /// `kubectl get ... -o json` as JSON.
    fn get_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl(&all);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {all:?}: {e}: {out}"))
    }

    /// Whether `kubectl get <kind> <name> -n <ns>` answers NotFound.
    fn absent(&self, namespace: &str, kind: &str, name: &str) -> bool {
        let (ok, _, err) = self.server.kubectl(&["get", kind, name, "-n", namespace]);
        !ok && err.contains("NotFound")
    }

    /// The real `helm` as the admin (its own cache and config folders, so
    /// the user's repositories and plugins play no part); panics with its
    /// output unless it exits 0.
    fn helm(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.try_helm(args);
        assert!(ok, "helm {args:?} failed:\n{err}\n{out}");
        out
    }

    /// Runs `helm` as [`Env::helm`] does; returns (success, stdout, stderr).
    fn try_helm(&self, args: &[&str]) -> (bool, String, String) {
        let home = self.path("helm-home");
        let out = Command::new(helm_binary())
            .args(args)
            .arg("--kubeconfig")
            .arg(self.server.admin_kubeconfig())
            .env_remove("KUBECONFIG")
            .env_remove("HELM_NAMESPACE")
            .env_remove("HELM_KUBECONTEXT")
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"))
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("helm {args:?} could not start: {e}"));
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Waits until the CronJobSet CRD is Established.
    fn wait_crd_established(&self) {
        self.kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/cronjobsets.cronstable.io",
        ]);
    }

    /// A kubeconfig carrying a fresh token of `namespace/service_account`
    /// (the TokenRequest API, as the kubelet's projected token), with the
    /// pod's namespace as the context's.
    fn token_kubeconfig(&self, namespace: &str, service_account: &str) -> PathBuf {
        let token = self.server.token(namespace, service_account);
        let path = self.path(&format!("kubeconfig-{namespace}-{service_account}"));
        self.server.write_token_kubeconfig(&path, &token, namespace);
        path
    }

    /// The audit log's requests by `user`: (verb, resource[/subresource],
    /// response code).
    fn requests_by(&self, user: &str) -> Vec<(String, String, u64)> {
        self.server
            .audit_events()
            .iter()
            .filter(|e| e["user"]["username"] == user)
            .map(|e| {
                let object = &e["objectRef"];
                let mut resource = object["resource"].as_str().unwrap_or_default().to_owned();
                if let Some(sub) = object["subresource"].as_str() {
                    resource = format!("{resource}/{sub}");
                }
                (
                    e["verb"].as_str().unwrap_or_default().to_owned(),
                    resource,
                    e["responseStatus"]["code"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    }

    /// The requests of `user` the server refused with 403.
    fn forbidden_requests(&self, user: &str) -> Vec<(String, String, u64)> {
        self.requests_by(user)
            .into_iter()
            .filter(|(_, _, code)| *code == 403)
            .collect()
    }

    /// Whether `user` made a `verb` request on `resource` that succeeded.
    fn used(&self, user: &str, verb: &str, resource: &str) -> bool {
        self.requests_by(user)
            .iter()
            .any(|(v, r, code)| v == verb && r == resource && (200..300).contains(code))
    }

    /// A condition of a CronJobSet's status (`Null` until written).
    fn condition(&self, namespace: &str, set: &str, kind: &str) -> Value {
        let stored = self.get_json(&["cronjobsets.cronstable.io", set, "-n", namespace]);
        stored["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == kind).cloned())
            .unwrap_or(Value::Null)
    }
}

/// The RBAC user name of a ServiceAccount.
fn service_account_user(namespace: &str, service_account: &str) -> String {
    format!("system:serviceaccount:{namespace}:{service_account}")
}

/// How the Deployment's pod runs the scheduler, read back from the server.
struct PodSpec {
    /// The container's arguments, `$(VAR)` expanded as the kubelet does.
    args: Vec<String>,
    /// The container's environment, downward-API fields resolved.
    env: Vec<(String, String)>,
    /// The pod's ServiceAccount.
    service_account: String,
    /// The pod's name (also its `HOSTNAME`).
    name: String,
    /// The pod's namespace.
    namespace: String,
}

impl PodSpec {
    /// The pod `pod` of Deployment `namespace/deployment` as the kubelet
    /// would start it. Anything this harness cannot stand in for (a
    /// `command` other than the binary, Secrets or ConfigMaps in the
    /// environment, a downward-API field it does not know) is a panic that
    /// names it, so a chart change is met here rather than ignored.
    fn read(env: &Env, namespace: &str, deployment: &str, pod: &str) -> PodSpec {
        let stored = env.get_json(&["deployment", deployment, "-n", namespace]);
        let spec = &stored["spec"]["template"]["spec"];
        let containers = spec["containers"].as_array().expect("containers");
        assert_eq!(containers.len(), 1, "one container: {spec}");
        let container = &containers[0];
        let service_account = spec["serviceAccountName"]
            .as_str()
            .unwrap_or("default")
            .to_owned();
        assert!(
            container["command"].is_null(),
            "the container sets a command; this harness runs the image's entry point \
             (the binary): {container}"
        );
        assert!(
            container["envFrom"].is_null(),
            "envFrom is not stood in for: {container}"
        );
        let mut vars: Vec<(String, String)> = Vec::new();
        for entry in container["env"].as_array().into_iter().flatten() {
            let name = entry["name"].as_str().expect("env name").to_owned();
            let value = if let Some(v) = entry["value"].as_str() {
                expand(v, &vars)
            } else if let Some(path) = entry["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                match path {
                    "metadata.name" => pod.to_owned(),
                    "metadata.namespace" => namespace.to_owned(),
                    // No Pod object exists; any well-formed uid will do.
                    "metadata.uid" => "00000000-0000-4000-8000-000000000000".to_owned(),
                    "spec.serviceAccountName" => service_account.clone(),
                    "spec.nodeName" => "node-0".to_owned(),
                    "status.podIP" | "status.hostIP" => "127.0.0.1".to_owned(),
                    other => panic!("env {name}: fieldRef {other} is not stood in for"),
                }
            } else if entry["valueFrom"].is_null() {
                String::new()
            } else {
                panic!("env {name}: {} is not stood in for", entry["valueFrom"]);
            };
            vars.push((name, value));
        }
        let args = container["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| expand(a.as_str().expect("string args"), &vars))
            .collect();
        PodSpec {
            args,
            env: vars,
            service_account,
            name: pod.to_owned(),
            namespace: namespace.to_owned(),
        }
    }
}

/// Kubernetes' `$(VAR)` expansion in `env` values and `args`: a defined
/// variable is replaced, `$$` is a literal `$`, anything else stays.
fn expand(text: &str, vars: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some((name, tail)) = after
            .strip_prefix('(')
            .and_then(|inner| inner.split_once(')'))
        {
            match vars.iter().rev().find(|(k, _)| k == name) {
                Some((_, value)) => out.push_str(value),
                None => out.push_str(&format!("$({name})")),
            }
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn expansion_follows_the_kubelets_rules() {
    let vars = vec![("POD_NAME".to_owned(), "p-0".to_owned())];
    assert_eq!(expand("--pod-name=$(POD_NAME)", &vars), "--pod-name=p-0");
    assert_eq!(expand("$(MISSING)/x", &vars), "$(MISSING)/x");
    assert_eq!(expand("$$(POD_NAME) $5 $", &vars), "$(POD_NAME) $5 $");
}

/// The scheduler binary run on the host as one pod of the Deployment.
struct HostPod {
    name: String,
    dir: PathBuf,
    child: Option<Child>,
    log: Arc<Mutex<String>>,
}

impl HostPod {
    /// Starts the binary with the pod's args, environment and host name,
    /// in a working directory of its own (`<temp>/<pod>`), with
    /// `--kubeconfig` added; `path_first` goes first on `PATH`.
    fn start(env: &Env, spec: &PodSpec, kubeconfig: &Path, path_first: Option<&Path>) -> HostPod {
        let dir = env.path(&spec.name);
        std::fs::create_dir_all(&dir).expect("the pod's working directory");
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned());
        let path = match path_first {
            Some(first) => format!("{}:{path}", first.display()),
            None => path,
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_cronstable"));
        // The pod's environment only: nothing of the test's (KUBECONFIG,
        // CRONSTABLE_*) leaks in.
        command
            .env_clear()
            .env("PATH", path)
            .env("HOSTNAME", &spec.name)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .args(&spec.args)
            .arg("--kubeconfig")
            .arg(kubeconfig);
        // Inside a pod the namespace comes from the service-account mount;
        // if this host is itself a pod, that mount would name the wrong one.
        if Path::new("/var/run/secrets/kubernetes.io/serviceaccount/namespace").exists() {
            command.args(["--namespace", &spec.namespace]);
        }
        let mut child = command
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the scheduler");
        let log = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            support::daemon::collect(err, Arc::clone(&log));
        }
        if let Some(out) = child.stdout.take() {
            support::daemon::collect(out, Arc::clone(&log));
        }
        HostPod {
            name: spec.name.clone(),
            dir,
            child: Some(child),
            log,
        }
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// `GET path` over the pod's `unix://api.sock` listener (HTTP/1.0, so
    /// the answer ends with the connection); `None` while nothing listens.
    fn get(&self, path: &str) -> Option<Value> {
        let mut stream = std::os::unix::net::UnixStream::connect(self.dir.join("api.sock")).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
            .ok()?;
        let mut raw = String::new();
        stream.read_to_string(&mut raw).ok()?;
        let (head, body) = raw.split_once("\r\n\r\n")?;
        if head.split_whitespace().nth(1) != Some("200") {
            return None;
        }
        serde_json::from_str(body).ok()
    }

    /// The pod's log lines that mention Forbidden, any case.
    fn forbidden_lines(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.to_ascii_lowercase().contains("forbidden"))
            .map(str::to_owned)
            .collect()
    }

    /// A WARNING or ERROR line naming `resource` and saying forbidden or
    /// 403: the scheduler told its operator that a right is missing.
    fn loud_forbidden_line(&self, resource: &str) -> Option<String> {
        self.log()
            .lines()
            .find(|l| {
                let lower = l.to_ascii_lowercase();
                (l.starts_with("WARNING") || l.starts_with("ERROR") || l.starts_with("CRITICAL"))
                    && lower.contains(resource)
                    && (lower.contains("forbidden") || lower.contains("403"))
            })
            .map(str::to_owned)
    }
}

impl Drop for HostPod {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The logs of `pods`, for a failure's context.
fn logs(pods: &[&HostPod]) -> String {
    pods.iter()
        .map(|p| format!("--- {}\n{}", p.name, p.log()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes a values file: a `service.port` of its own (tests run in
/// parallel, and every scheduler on this host binds it), the web section
/// the chart requires plus `unix://api.sock` (relative: one socket per
/// working directory, so several schedulers on one host each have theirs),
/// and `jobs`, the body of `config.jobs` (indented four spaces). Returns
/// the file and the port.
fn write_values(env: &Env, replicas: u32, jobs: &str) -> (PathBuf, u16) {
    let port = support::http::free_port();
    let values = format!(
        "replicaCount: {replicas}\nservice:\n  port: {port}\nconfig:\n  web:\n    listen:\n      \
         - http://0.0.0.0:{port}\n      - unix://api.sock\n  jobs:\n{jobs}"
    );
    let path = env.path("values.yaml");
    std::fs::write(&path, values).expect("write the values file");
    (path, port)
}

/// A CronJobSet in `namespace` as `kubectl apply` takes it.
fn set_yaml(namespace: &str, name: &str, jobs: Value) -> String {
    json!({
        "apiVersion": "cronstable.io/v1alpha1",
        "kind": "CronJobSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"jobs": jobs},
    })
    .to_string()
}

/// The lines of `fires` (`<pod> <epoch second>` each) from `from` on,
/// grouped by second.
fn runners_per_second(lines: &[String], from: usize) -> BTreeMap<u64, Vec<String>> {
    let mut by_second = BTreeMap::<u64, Vec<String>>::new();
    for line in lines.iter().skip(from) {
        let mut parts = line.split_whitespace();
        if let (Some(pod), Some(Ok(second))) = (parts.next(), parts.next().map(str::parse)) {
            by_second.entry(second).or_default().push(pod.to_owned());
        }
    }
    by_second
}

#[test]
fn the_chart_installs_upgrades_to_three_replicas_and_uninstalls_under_its_own_rbac() {
    let Some(env) = Env::start("the_chart_installs_upgrades_to_three_replicas_and_uninstalls")
    else {
        return;
    };
    let (ns, release, fullname) = ("cs-helm", "cs", "cs-cronstable");
    let fires = env.path("fires");
    let job = format!(
        "    - name: tick\n      command: echo $HOSTNAME $(date +%s) >> {}\n      \
         schedule: '{EVERY_SECOND}'\n",
        fires.display()
    );
    let (values, port) = write_values(&env, 1, &job);
    let chart = format!("{REPO}/charts/cronstable");
    let values = values.display().to_string();
    env.helm(&[
        "install",
        release,
        &chart,
        "-n",
        ns,
        "--create-namespace",
        "-f",
        &values,
    ]);
    env.wait_crd_established();
    let config = env.get_json(&["configmap", &format!("{fullname}-config"), "-n", ns]);
    let config = config["data"]["cronstable.yaml"]
        .as_str()
        .unwrap_or_default();
    assert!(
        config.contains(&format!("http://0.0.0.0:{port}")) && !config.contains("cluster:"),
        "one replica: the web section as given, no cluster section:\n{config}"
    );

    // One replica, as the Deployment runs it, with its ServiceAccount.
    let spec = PodSpec::read(&env, ns, fullname, &format!("{fullname}-0"));
    assert_eq!(spec.service_account, fullname);
    let user = service_account_user(ns, &spec.service_account);
    let kubeconfig = env.token_kubeconfig(ns, &spec.service_account);
    let pod = HostPod::start(&env, &spec, &kubeconfig, None);
    wait_until(
        "the ConfigMap's job to run twice",
        PATIENCE,
        || read_lines(&fires).len() >= 2,
        || pod.log(),
    );
    assert!(
        read_lines(&fires)
            .iter()
            .all(|l| l.starts_with(&format!("{} ", spec.name))),
        "{:?}",
        read_lines(&fires)
    );
    let ran = env.path("nightly-ran");
    env.kubectl_stdin(
        &["apply", "-f", "-"],
        &set_yaml(
            ns,
            "nightly",
            json!([{"name": "backup", "command": format!("echo ran >> {}", ran.display()),
                    "schedule": EVERY_SECOND}]),
        ),
    );
    wait_until(
        "the applied set's job to run",
        PATIENCE,
        || !read_lines(&ran).is_empty(),
        || pod.log(),
    );
    wait_until(
        "Accepted=True in the set's status",
        PATIENCE,
        || env.condition(ns, "nightly", "Accepted")["status"] == "True",
        || pod.log(),
    );
    wait_until(
        "the status write to show in the audit log",
        PATIENCE,
        || env.used(&user, "patch", "cronjobsets/status"),
        || pod.log(),
    );
    // The checks below are about the ServiceAccount's requests: it made them.
    for (verb, resource) in [("list", "cronjobsets"), ("watch", "cronjobsets")] {
        assert!(
            env.used(&user, verb, resource),
            "{user} {verb} {resource}: {:?}",
            env.requests_by(&user)
        );
    }
    assert_eq!(pod.forbidden_lines(), Vec::<String>::new(), "{}", pod.log());
    assert_eq!(env.forbidden_requests(&user), vec![]);
    drop(pod);

    // Three replicas: the upgrade adds the Lease backend and the Lease rule.
    env.helm(&[
        "upgrade",
        release,
        &chart,
        "-n",
        ns,
        "--reuse-values",
        "--set",
        "replicaCount=3",
    ]);
    let role = env.get_json(&["role", fullname, "-n", ns]);
    let lease_rule = role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .find(|r| r["resources"] == json!(["leases"]))
        .unwrap_or_else(|| panic!("no Lease rule after the upgrade: {role}"));
    assert_eq!(lease_rule["apiGroups"], json!(["coordination.k8s.io"]));
    assert_eq!(lease_rule["verbs"], json!(["get", "create", "update"]));
    let deployment = env.get_json(&["deployment", fullname, "-n", ns]);
    assert_eq!(deployment["spec"]["replicas"], 3);
    let pods: Vec<HostPod> = (0..3)
        .map(|i| {
            let spec = PodSpec::read(&env, ns, fullname, &format!("{fullname}-{i}"));
            HostPod::start(&env, &spec, &kubeconfig, None)
        })
        .collect();
    let all: Vec<&HostPod> = pods.iter().collect();
    let mut leader = String::new();
    wait_until(
        "one leader that every replica names",
        PATIENCE,
        || {
            let views: Vec<Value> = pods.iter().filter_map(|p| p.get("/cluster")).collect();
            if views.len() != 3 {
                return false;
            }
            let leading: Vec<&Value> = views.iter().filter(|v| v["is_leader"] == true).collect();
            let named: BTreeSet<String> = views
                .iter()
                .map(|v| v["leader"].as_str().unwrap_or_default().to_owned())
                .collect();
            if leading.len() != 1 || named.len() != 1 {
                return false;
            }
            leader = leading[0]["node_name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            named.contains(&leader) && views.iter().all(|v| v["backend"] == "kubernetes")
        },
        || logs(&all),
    );
    let lease = env.get_json(&["lease", &format!("{fullname}-leader"), "-n", ns]);
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(
        holder.starts_with(&format!("{leader}#")),
        "{leader}: {lease}"
    );
    // The Leader job: once per fire, on the leader.
    let from = read_lines(&fires).len();
    wait_until(
        "six seconds of Leader fires",
        PATIENCE,
        || runners_per_second(&read_lines(&fires), from).len() >= 6,
        || logs(&all),
    );
    for (second, runners) in runners_per_second(&read_lines(&fires), from) {
        assert_eq!(runners, vec![leader.clone()], "second {second}");
    }
    for pod in &pods {
        assert_eq!(pod.forbidden_lines(), Vec::<String>::new(), "{}", pod.log());
    }
    assert!(
        env.used(&user, "update", "leases"),
        "{:?}",
        env.requests_by(&user)
    );
    assert_eq!(env.forbidden_requests(&user), vec![]);
    drop(pods);

    // Uninstall: the chart's objects go; the CRD (from crds/) stays, and
    // with it the sets; the Lease the replicas wrote is not Helm's either.
    env.helm(&["uninstall", release, "-n", ns]);
    let gone = [
        ("deployment", fullname.to_owned()),
        ("service", fullname.to_owned()),
        ("configmap", format!("{fullname}-config")),
        ("serviceaccount", fullname.to_owned()),
        ("role", fullname.to_owned()),
        ("rolebinding", fullname.to_owned()),
        ("poddisruptionbudget", fullname.to_owned()),
    ];
    for (kind, name) in &gone {
        wait_until(
            &format!("{kind} {name} to be deleted"),
            PATIENCE,
            || env.absent(ns, kind, name),
            || env.kubectl(&["get", "all,role,rolebinding,sa,cm,pdb", "-n", ns]),
        );
    }
    env.kubectl(&["get", "crd", "cronjobsets.cronstable.io"]);
    env.kubectl(&["get", "cronjobsets.cronstable.io", "nightly", "-n", ns]);
    env.kubectl(&["get", "lease", &format!("{fullname}-leader"), "-n", ns]);
    env.kubectl(&["get", "namespace", ns]);
}

/// A `find` that lists instead of deleting. The example set's
/// `tmp-cleanup` job deletes what is older than a day under `$SCRATCH`
/// (`/tmp`): in its pod that is an emptyDir, on this host it is the host's
/// `/tmp`. It fires once an hour, so it rarely meets a test's few seconds;
/// when it does, it must not delete anything here.
fn harmless_find(env: &Env) -> PathBuf {
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).expect("stub dir");
    let find = bin.join("find");
    std::fs::write(&find, "#!/bin/sh\necho \"find $*\" >&2\n").expect("write the find stub");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&find, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

#[test]
fn kubectl_apply_of_deploy_exits_0_and_its_scheduler_accepts_the_example_set() {
    let Some(env) = Env::start("kubectl_apply_of_deploy_exits_0_and_its_scheduler_accepts") else {
        return;
    };
    // As docs/kubernetes.md says: the whole folder, then the example.
    let out = env.kubectl(&["apply", "-f", &format!("{REPO}/deploy/")]);
    for object in [
        "namespace/cronstable",
        "customresourcedefinition.apiextensions.k8s.io/cronjobsets.cronstable.io",
        "serviceaccount/cronstable",
        "configmap/cronstable-config",
        "role.rbac.authorization.k8s.io/cronstable",
        "rolebinding.rbac.authorization.k8s.io/cronstable",
        "service/cronstable",
        "deployment.apps/cronstable",
    ] {
        assert!(out.contains(object), "{object} not applied:\n{out}");
    }
    env.wait_crd_established();
    env.kubectl(&[
        "apply",
        "-f",
        &format!("{REPO}/deploy/examples/cronjobset.yaml"),
    ]);

    let ns = "cronstable";
    let spec = PodSpec::read(&env, ns, "cronstable", "cronstable-7d9f8-abcde");
    let user = service_account_user(ns, &spec.service_account);
    let kubeconfig = env.token_kubeconfig(ns, &spec.service_account);
    let pod = HostPod::start(&env, &spec, &kubeconfig, Some(&harmless_find(&env)));
    wait_until(
        "Accepted=True on the example set",
        PATIENCE,
        || {
            let accepted = env.condition(ns, "housekeeping", "Accepted");
            accepted["status"] == "True" && accepted["message"] == "3 job(s) loaded"
        },
        || pod.log(),
    );
    assert!(
        env.used(&user, "patch", "cronjobsets/status"),
        "{:?}",
        env.requests_by(&user)
    );
    assert_eq!(pod.forbidden_lines(), Vec::<String>::new(), "{}", pod.log());
    assert_eq!(env.forbidden_requests(&user), vec![]);
    drop(pod);

    // Scaling as the docs say: the example over the plain install. Three
    // schedulers, one Lease holder, nothing refused.
    env.kubectl(&[
        "apply",
        "-f",
        &format!("{REPO}/deploy/examples/three-replicas.yaml"),
    ]);
    let pods: Vec<HostPod> = ["a", "b", "c"]
        .iter()
        .map(|suffix| {
            let spec = PodSpec::read(
                &env,
                ns,
                "cronstable",
                &format!("cronstable-7d9f8-{suffix}"),
            );
            HostPod::start(&env, &spec, &kubeconfig, Some(&harmless_find(&env)))
        })
        .collect();
    let all: Vec<&HostPod> = pods.iter().collect();
    let acquired = "cluster: this node acquired scheduled-job leadership";
    let mut holder = String::new();
    wait_until(
        "one replica to hold the Lease and renew it",
        PATIENCE,
        || {
            let (ok, out, _) = env.server.kubectl(&[
                "get",
                "lease",
                "cronstable-leader",
                "-n",
                ns,
                "-o",
                "jsonpath={.spec.holderIdentity}",
            ]);
            holder = out.split('#').next().unwrap_or_default().to_owned();
            let renewals = env
                .requests_by(&user)
                .iter()
                .filter(|(verb, resource, code)| {
                    verb == "update" && resource == "leases" && *code == 200
                })
                .count();
            ok && pods.iter().any(|p| p.name == holder) && renewals >= 2
        },
        || logs(&all),
    );
    let leaders: Vec<&str> = pods
        .iter()
        .filter(|p| p.log().contains(acquired))
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(leaders, vec![holder.as_str()], "{}", logs(&all));
    for pod in &pods {
        assert_eq!(pod.forbidden_lines(), Vec::<String>::new(), "{}", pod.log());
    }
    assert_eq!(env.forbidden_requests(&user), vec![]);
}

/// One right a Role grants: `resource` (with `/subresource`) and `verb`.
type Right = (String, String);

/// The (resource, verb) pairs of a Role, with each rule's API group.
fn rights_of(role: &Value) -> Vec<(String, Right)> {
    let mut rights = Vec::new();
    for rule in role["rules"].as_array().expect("rules") {
        for group in rule["apiGroups"].as_array().expect("apiGroups") {
            for resource in rule["resources"].as_array().expect("resources") {
                for verb in rule["verbs"].as_array().expect("verbs") {
                    rights.push((
                        group.as_str().unwrap_or_default().to_owned(),
                        (
                            resource.as_str().unwrap_or_default().to_owned(),
                            verb.as_str().unwrap_or_default().to_owned(),
                        ),
                    ));
                }
            }
        }
    }
    rights
}

/// `role` without `verb` on `resource` (a rule left with no verb goes),
/// ready for `kubectl apply`.
fn role_without(role: &Value, (resource, verb): &Right) -> Value {
    let mut edited = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {
            "name": role["metadata"]["name"],
            "namespace": role["metadata"]["namespace"],
        },
        "rules": [],
    });
    let rules = edited["rules"].as_array_mut().expect("rules");
    for rule in role["rules"].as_array().expect("rules") {
        let mut rule = rule.clone();
        if rule["resources"] == json!([resource]) {
            let verbs: Vec<Value> = rule["verbs"]
                .as_array()
                .expect("verbs")
                .iter()
                .filter(|v| *v != verb)
                .cloned()
                .collect();
            if verbs.is_empty() {
                continue;
            }
            rule["verbs"] = Value::Array(verbs);
        }
        rules.push(rule);
    }
    edited
}

/// Whether the server (its RBAC authorizer, asked as `user`) allows `verb`
/// on `resource` of `group` in `namespace`.
/// A right the Role restricts to named objects (`resourceNames`) is asked
/// about for the first of them (the authorizer refuses it for any object).
fn allowed(
    env: &Env,
    user: &str,
    namespace: &str,
    group: &str,
    (resource, verb): &Right,
    role: &Value,
) -> bool {
    let (resource, sub) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (resource.as_str(), None),
    };
    let mut qualified = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    let named = role["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|rule| {
            let grants = rule["resources"] == json!([resource])
                && rule["verbs"]
                    .as_array()
                    .is_some_and(|v| v.contains(&json!(verb)));
            grants.then(|| rule["resourceNames"][0].as_str()).flatten()
        });
    if let Some(name) = named {
        qualified = format!("{qualified}/{name}");
    }
    let mut args = vec![
        "auth",
        "can-i",
        verb.as_str(),
        qualified.as_str(),
        "-n",
        namespace,
        "--as",
        user,
    ];
    let subresource;
    if let Some(sub) = sub {
        subresource = format!("--subresource={sub}");
        args.push(&subresource);
    }
    let (_, out, _) = env.server.kubectl(&args);
    out.trim() == "yes"
}

/// The Event rights, checked by [`without_an_event_right_the_scheduler_says_so`]
/// beside the main test (two tests run in parallel). A refused Event is a
/// WARNING (src/kube/events.rs), once per verb and namespace; a lost one
/// for any other reason stays a DEBUG line.
const EVENT_RIGHTS: &[(&str, &str)] = &[("events", "create"), ("events", "patch")];

/// The chart with three replicas (so the Lease rule is in) and a set whose
/// jobs succeed and fail every second (status writes, Events and their
/// repeats). First the scheduler runs with the chart's Role and must use
/// every right it grants; then, for each right `select` picks, the Role
/// loses that one right and the scheduler must say so: a WARNING or ERROR
/// line naming the resource and saying forbidden or 403.
fn each_right_is_used_and_missed_loudly(test: &str, select: impl Fn(&Right) -> bool) {
    let Some(env) = Env::start(test) else {
        return;
    };
    let (ns, release, fullname) = ("cs-rbac", "cs", "cs-cronstable");
    let (values, _) = write_values(&env, 3, "    []\n");
    let values = values.display().to_string();
    env.helm(&[
        "install",
        release,
        &format!("{REPO}/charts/cronstable"),
        "-n",
        ns,
        "--create-namespace",
        "-f",
        &values,
    ]);
    env.wait_crd_established();
    let ok = env.path("ok-ran");
    env.kubectl_stdin(
        &["apply", "-f", "-"],
        &set_yaml(
            ns,
            "probe",
            json!([
                {"name": "ok", "command": format!("echo ok >> {}", ok.display()),
                 "schedule": EVERY_SECOND},
                {"name": "fails", "command": "exit 3", "schedule": EVERY_SECOND},
            ]),
        ),
    );
    let spec = PodSpec::read(&env, ns, fullname, &format!("{fullname}-0"));
    let user = service_account_user(ns, &spec.service_account);
    let kubeconfig = env.token_kubeconfig(ns, &spec.service_account);
    let role = env.get_json(&["role", fullname, "-n", ns]);
    let rights = rights_of(&role);
    let lease = format!("{fullname}-leader");

    // With the chart's Role: every right granted is used, none refused.
    {
        let pod = HostPod::start(&env, &spec, &kubeconfig, None);
        let unused = || -> Vec<&(String, Right)> {
            rights
                .iter()
                .filter(|(_, (resource, verb))| !env.used(&user, verb, resource))
                .collect()
        };
        wait_until(
            "the scheduler to use every right the Role grants",
            PATIENCE,
            || unused().is_empty(),
            || {
                format!(
                    "unused: {:?}\nrequests: {:?}\nlog:\n{}",
                    unused(),
                    env.requests_by(&user),
                    pod.log()
                )
            },
        );
        assert_eq!(pod.forbidden_lines(), Vec::<String>::new(), "{}", pod.log());
        assert_eq!(env.forbidden_requests(&user), vec![]);
    }

    // Without each right in turn.
    let mut quiet = Vec::new();
    for (group, right) in rights.iter().filter(|(_, r)| select(r)) {
        let edited = role_without(&role, right);
        env.kubectl_stdin(&["apply", "-f", "-"], &edited.to_string());
        wait_until(
            &format!("the authorizer to refuse {right:?} and allow the rest"),
            PATIENCE,
            || {
                rights.iter().all(|(g, r)| {
                    allowed(&env, &user, ns, g, r, &role) == (r != right || g != group)
                })
            },
            || format!("{edited}"),
        );
        // A fresh election: the Lease must be read, created and renewed.
        let _ = env
            .server
            .kubectl(&["delete", "lease", &lease, "-n", ns, "--ignore-not-found"]);
        let pod = HostPod::start(&env, &spec, &kubeconfig, None);
        let start = Instant::now();
        let resource = right.0.as_str();
        let mut line = None;
        while line.is_none() && start.elapsed() < LOUD_WITHIN {
            std::thread::sleep(Duration::from_millis(100));
            line = pod.loud_forbidden_line(resource);
        }
        match line {
            Some(line) => eprintln!("{test}: without {right:?}: {line}"),
            None => quiet.push(format!(
                "without {right:?}: no WARNING/ERROR naming {resource} and forbidden/403 within \
                 {LOUD_WITHIN:?}; refused requests: {:?}; log:\n{}",
                env.forbidden_requests(&user)
                    .iter()
                    .filter(|(verb, r, _)| verb == &right.1 && r == resource)
                    .count(),
                pod.log()
            )),
        }
    }
    assert!(quiet.is_empty(), "{}", quiet.join("\n\n"));

    // The hand-edited Role and Helm 4 (server-side apply): the next upgrade
    // meets a conflict on the rules, and --force-conflicts takes them back
    // (docs/kubernetes.md, Install with Helm).
    let chart = format!("{REPO}/charts/cronstable");
    let upgrade = ["upgrade", release, &chart, "-n", ns, "--reuse-values"];
    let (ok, _, err) = env.try_helm(&upgrade);
    assert!(!ok && err.contains("conflict"), "{err}");
    let mut forced = upgrade.to_vec();
    forced.push("--force-conflicts");
    env.helm(&forced);
    let restored = env.get_json(&["role", fullname, "-n", ns]);
    assert_eq!(restored["rules"], role["rules"]);
}

#[test]
fn the_charts_role_grants_only_what_is_used_and_each_missing_right_is_logged() {
    each_right_is_used_and_missed_loudly(
        "the_charts_role_grants_only_what_is_used_and_each_missing_right_is_logged",
        |(resource, verb)| !EVENT_RIGHTS.contains(&(resource.as_str(), verb.as_str())),
    );
}

#[test]
fn without_an_event_right_the_scheduler_says_so() {
    each_right_is_used_and_missed_loudly(
        "without_an_event_right_the_scheduler_says_so",
        |(resource, verb)| EVENT_RIGHTS.contains(&(resource.as_str(), verb.as_str())),
    );
}
