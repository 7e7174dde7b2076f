//! A real Kubernetes API server for tests: etcd and kube-apiserver from
//! `KUBEBUILDER_ASSETS` (controller-runtime envtest's layout, which
//! `../shared/envtest/install.sh` prints and `scripts/test.sh` exports),
//! on loopback ports, with certificates made at test time:
//!
//! - a client CA, whose certificates with `O=system:masters` are admins
//!   (one identity per daemon when a test wants to tell writers apart in
//!   the audit log);
//! - a serving certificate for 127.0.0.1 signed by the same CA, so a
//!   kubeconfig trusts the server without skipping verification;
//! - a service-account signing key, so `kubectl create token` (the
//!   TokenRequest API) hands out tokens the server accepts.
//!
//! Every request is written to an audit log (level Metadata: who, what,
//! which user agent, the answer's code) that tests read.
//!
//! There is no controller-manager, scheduler or kubelet: Pods never run,
//! namespaces get no default ServiceAccount, a deleted namespace stays
//! Terminating. The daemon runs as a process on the host.
//!
//! When `KUBEBUILDER_ASSETS` is unset, [`ApiServer::start`] returns `None`
//! after printing why, and the test returns early (skipped), as envtest
//! users expect. Dropping the [`ApiServer`] kills exactly the two
//! processes it started and removes its folder.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{CertificateParams, DnType, KeyPair};
use serde_json::Value;

use super::certs::Ca;

/// The variable that names the folder holding `kube-apiserver` and `etcd`.
pub const ASSETS_VAR: &str = "KUBEBUILDER_ASSETS";

/// How long a start may take before the harness gives up (the server is
/// ready 3.4 to 4.9 s after start on 2 idle cores; tests run in parallel).
const START_PATIENCE: Duration = Duration::from_secs(90);

/// The audit policy: every request, metadata only.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n";

/// The folder named by `KUBEBUILDER_ASSETS`, or `None` after printing
/// that the calling test is skipped and why.
pub fn assets(test: &str) -> Option<PathBuf> {
    match std::env::var_os(ASSETS_VAR) {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            for binary in ["kube-apiserver", "etcd"] {
                assert!(
                    dir.join(binary).is_file(),
                    "{ASSETS_VAR}={} has no {binary}",
                    dir.display()
                );
            }
            Some(dir)
        }
        _ => {
            eprintln!(
                "{test}: skipped: {ASSETS_VAR} is unset (point it at a folder with \
                 kube-apiserver and etcd, e.g. $(../shared/envtest/install.sh 1.28); \
                 scripts/test.sh does this when ../shared/envtest exists)"
            );
            None
        }
    }
}

/// A free loopback TCP port (bound then released; the server binds it a
/// moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A running etcd + kube-apiserver pair.
pub struct ApiServer {
    dir: tempfile::TempDir,
    assets: PathBuf,
    etcd: Option<Child>,
    apiserver: Option<Child>,
    ca: Ca,
    etcd_port: u16,
    /// The API server's HTTPS port on 127.0.0.1.
    pub port: u16,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The server's version as `/version` reports it (`v1.28.7`).
    pub version: String,
}

impl ApiServer {
    /// Starts etcd and kube-apiserver and waits until `/readyz` says ok;
    /// `None` (the test is skipped) when `KUBEBUILDER_ASSETS` is unset.
    pub fn start(test: &str) -> Option<ApiServer> {
        let assets = assets(test)?;
        let dir = tempfile::Builder::new()
            .prefix("cronstable-envtest-")
            .tempdir()
            .expect("a temp dir for the API server");
        let ca = Ca::new();
        let pki = dir.path().join("pki");
        std::fs::create_dir_all(&pki).expect("pki dir");
        std::fs::write(pki.join("ca.pem"), ca.pem()).expect("write ca");
        let serving_key = KeyPair::generate().expect("serving key");
        let mut serving =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("serving params");
        serving
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        let (cert, key) = ca.sign(serving, serving_key);
        std::fs::write(pki.join("serving.pem"), cert).expect("write serving cert");
        std::fs::write(pki.join("serving-key.pem"), key).expect("write serving key");
        let sa_key = KeyPair::generate().expect("service-account key");
        std::fs::write(pki.join("sa.pem"), sa_key.serialize_pem()).expect("write sa key");
        std::fs::write(pki.join("sa.pub"), sa_key.public_key_pem()).expect("write sa pub");
        std::fs::write(dir.path().join("audit-policy.yaml"), AUDIT_POLICY).expect("audit policy");
        let mut server = ApiServer {
            dir,
            assets,
            etcd: None,
            apiserver: None,
            ca,
            etcd_port: free_port(),
            port: free_port(),
            url: String::new(),
            version: String::new(),
        };
        server.url = format!("https://127.0.0.1:{}", server.port);
        server.write_admin_kubeconfig();
        server.start_etcd();
        server.start_apiserver(true);
        server.version = server
            .get_json("/version")
            .map(|v| v["gitVersion"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        eprintln!(
            "{test}: kube-apiserver {} at {}",
            server.version, server.url
        );
        Some(server)
    }

    /// The folder holding the server's files (certificates, logs, the
    /// audit log, kubeconfigs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn start_etcd(&mut self) {
        let client = format!("http://127.0.0.1:{}", self.etcd_port);
        let peer = format!("http://127.0.0.1:{}", free_port());
        let log = std::fs::File::create(self.dir().join("etcd.log")).expect("etcd log");
        let child = Command::new(self.assets.join("etcd"))
            .arg("--data-dir")
            .arg(self.dir().join("etcd"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("default={peer}")])
            .arg("--unsafe-no-fsync=true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts (KUBEBUILDER_ASSETS/etcd)");
        self.etcd = Some(child);
    }

    fn start_apiserver(&mut self, first: bool) {
        self.spawn_apiserver();
        self.wait_ready(first);
    }

    fn spawn_apiserver(&mut self) {
        let pki = self.dir().join("pki");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir().join("kube-apiserver.log"))
            .expect("kube-apiserver log");
        let child = Command::new(self.assets.join("kube-apiserver"))
            .args([
                "--etcd-servers",
                &format!("http://127.0.0.1:{}", self.etcd_port),
            ])
            .args(["--bind-address", "127.0.0.1"])
            .args(["--advertise-address", "127.0.0.1"])
            .args(["--secure-port", &self.port.to_string()])
            .arg("--cert-dir")
            .arg(self.dir().join("cert-dir"))
            .arg("--tls-cert-file")
            .arg(pki.join("serving.pem"))
            .arg("--tls-private-key-file")
            .arg(pki.join("serving-key.pem"))
            .arg("--client-ca-file")
            .arg(pki.join("ca.pem"))
            .args(["--service-account-issuer", "https://kubernetes.default.svc"])
            .arg("--service-account-key-file")
            .arg(pki.join("sa.pub"))
            .arg("--service-account-signing-key-file")
            .arg(pki.join("sa.pem"))
            .args(["--authorization-mode", "RBAC"])
            .args(["--service-cluster-ip-range", "10.0.0.0/24"])
            .args(["--disable-admission-plugins", "ServiceAccount"])
            .arg("--audit-policy-file")
            .arg(self.dir().join("audit-policy.yaml"))
            .arg("--audit-log-path")
            .arg(self.audit_log_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("kube-apiserver starts (KUBEBUILDER_ASSETS/kube-apiserver)");
        self.apiserver = Some(child);
    }

    /// Waits until `/readyz` answers ok, or panics with the server's log.
    /// A port taken between [`free_port`] and the bind (another test's
    /// server, say) makes etcd or the API server exit at once: then, on
    /// the first start only (a restart must keep its port), both get fresh
    /// ports and start again.
    fn wait_ready(&mut self, may_rebind: bool) {
        let start = Instant::now();
        let mut rebinds = 0;
        loop {
            let (ok, out, _) = self.kubectl(&["get", "--raw", "/readyz", "--request-timeout=2s"]);
            if ok && out.trim() == "ok" {
                return;
            }
            let exited = [self.etcd.as_mut(), self.apiserver.as_mut()]
                .into_iter()
                .flatten()
                .find_map(|child| child.try_wait().ok().flatten());
            if let Some(status) = exited {
                let log = self.log_tail();
                if may_rebind && rebinds < 3 && log.contains("address already in use") {
                    rebinds += 1;
                    self.rebind();
                    continue;
                }
                panic!("etcd or kube-apiserver exited ({status}) before it was ready:\n{log}");
            }
            if start.elapsed() > START_PATIENCE {
                panic!(
                    "kube-apiserver not ready after {START_PATIENCE:?}:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops both processes and starts them on fresh ports (the admin
    /// kubeconfig follows).
    fn rebind(&mut self) {
        for child in [self.apiserver.take(), self.etcd.take()]
            .into_iter()
            .flatten()
        {
            let mut child = child;
            terminate(&mut child);
        }
        let _ = std::fs::remove_dir_all(self.dir().join("etcd"));
        self.etcd_port = free_port();
        self.port = free_port();
        self.url = format!("https://127.0.0.1:{}", self.port);
        self.write_admin_kubeconfig();
        self.start_etcd();
        self.spawn_apiserver();
    }

    /// The last lines of the API server's and etcd's logs.
    pub fn log_tail(&self) -> String {
        let mut out = String::new();
        for name in ["kube-apiserver.log", "etcd.log"] {
            let text = std::fs::read_to_string(self.dir().join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let from = lines.len().saturating_sub(30);
            out.push_str(&format!("--- {name}\n{}\n", lines[from..].join("\n")));
        }
        out
    }

    /// Writes a client certificate for `user` (an admin when `admin`:
    /// `O=system:masters`) and its key; returns their paths.
    fn identity_files(&self, user: &str, admin: bool) -> (PathBuf, PathBuf) {
        let pki = self.dir().join("pki");
        let cert_path = pki.join(format!("{user}.pem"));
        let key_path = pki.join(format!("{user}-key.pem"));
        if cert_path.exists() {
            return (cert_path, key_path);
        }
        let key = KeyPair::generate().expect("client key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, user);
        if admin {
            params
                .distinguished_name
                .push(DnType::OrganizationName, "system:masters");
        }
        let (cert, key) = self.ca.sign(params, key);
        std::fs::write(&cert_path, cert).expect("write client cert");
        std::fs::write(&key_path, key).expect("write client key");
        (cert_path, key_path)
    }

    fn kubeconfig_text(&self, user_entry: &str, namespace: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    \
             server: {url}\n    certificate-authority: {ca}\nusers:\n- name: user\n  user:\n\
             {user_entry}contexts:\n- name: envtest\n  context:\n    cluster: envtest\n    \
             user: user\n    namespace: {namespace}\ncurrent-context: envtest\n",
            url = self.url,
            ca = self.dir().join("pki/ca.pem").display(),
        )
    }

    fn write_admin_kubeconfig(&self) {
        let text = self.admin_kubeconfig_text("admin", "default");
        std::fs::write(self.dir().join("admin.kubeconfig"), text).expect("write kubeconfig");
    }

    fn admin_kubeconfig_text(&self, user: &str, namespace: &str) -> String {
        let (cert, key) = self.identity_files(user, true);
        let entry = format!(
            "    client-certificate: {}\n    client-key: {}\n",
            cert.display(),
            key.display()
        );
        self.kubeconfig_text(&entry, namespace)
    }

    /// The cluster admin's kubeconfig (context namespace `default`), for
    /// `kubectl` and `helm`.
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir().join("admin.kubeconfig")
    }

    /// Writes `path`, a kubeconfig for an admin called `user` (its own
    /// client certificate, so the audit log tells its requests apart) whose
    /// context namespace is `namespace`.
    pub fn write_kubeconfig_as(&self, path: &Path, user: &str, namespace: &str) {
        std::fs::write(path, self.admin_kubeconfig_text(user, namespace))
            .expect("write kubeconfig");
    }

    /// Writes `path`, a kubeconfig that authenticates with a bearer
    /// `token` (a ServiceAccount's, from `kubectl create token`).
    pub fn write_token_kubeconfig(&self, path: &Path, token: &str, namespace: &str) {
        let entry = format!("    token: {token}\n");
        std::fs::write(path, self.kubeconfig_text(&entry, namespace)).expect("write kubeconfig");
    }

    /// Runs `kubectl` (the one `scripts/test.sh` installs first on PATH) as
    /// the admin with `args`; returns (success, stdout, stderr).
    pub fn kubectl(&self, args: &[&str]) -> (bool, String, String) {
        self.kubectl_with(&self.admin_kubeconfig(), args, None)
    }

    /// Runs `kubectl` with `kubeconfig`, `args` and optional `stdin`.
    pub fn kubectl_with(
        &self,
        kubeconfig: &Path,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (bool, String, String) {
        let mut child = Command::new(kubectl_binary())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("kubectl {args:?} could not start: {e}"));
        if let Some(text) = stdin {
            use std::io::Write;
            let mut pipe = child.stdin.take().expect("kubectl stdin");
            pipe.write_all(text.as_bytes())
                .expect("write kubectl stdin");
        }
        let out = child.wait_with_output().expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Polls until the CustomResourceDefinition `name` is Established.
    /// (`kubectl wait --for=condition=Established` fails outright when it
    /// reads the CRD before the server wrote any condition.)
    pub fn wait_established(&self, name: &str) {
        let start = Instant::now();
        let query = "jsonpath={.status.conditions[?(@.type==\"Established\")].status}";
        loop {
            let (ok, out, err) = self.kubectl(&["get", "crd", name, "-o", query]);
            if ok && out.trim() == "True" {
                return;
            }
            assert!(
                start.elapsed() < START_PATIENCE,
                "CRD {name} not Established after {START_PATIENCE:?}: {out} {err}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `kubectl create token <sa> -n <namespace>`: a bound token the
    /// server accepts as that ServiceAccount.
    pub fn token(&self, namespace: &str, service_account: &str) -> String {
        let (ok, out, err) = self.kubectl(&["create", "token", service_account, "-n", namespace]);
        assert!(
            ok,
            "kubectl create token {namespace}/{service_account}: {err}"
        );
        out.trim().to_owned()
    }

    /// GET `path` as the admin (JSON), or the error text.
    pub fn get_json(&self, path: &str) -> Result<Value, String> {
        let (ok, out, err) = self.kubectl(&["get", "--raw", path]);
        if !ok {
            return Err(err);
        }
        serde_json::from_str(&out).map_err(|e| format!("{path}: {e}: {out}"))
    }

    /// The audit log so far: one JSON object per request (metadata level:
    /// `user.username`, `userAgent`, `verb`, `objectRef`, `responseStatus`).
    pub fn audit_events(&self) -> Vec<Value> {
        let Ok(file) = std::fs::File::open(self.audit_log_path()) else {
            return Vec::new();
        };
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str(&l).ok())
            .collect()
    }

    fn audit_log_path(&self) -> PathBuf {
        self.dir().join("audit.log")
    }

    /// Stops the API server (etcd keeps its data), as an API server
    /// restart or an outage does.
    pub fn stop_apiserver(&mut self) {
        if let Some(mut child) = self.apiserver.take() {
            terminate(&mut child);
        }
    }

    /// Starts the API server again on the same port with the same state
    /// (after [`Self::stop_apiserver`]), and waits until it is ready.
    pub fn start_apiserver_again(&mut self) {
        if self.apiserver.is_none() {
            self.start_apiserver(false);
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.apiserver.take() {
            terminate(&mut child);
        }
        if let Some(mut child) = self.etcd.take() {
            terminate(&mut child);
        }
    }
}

/// SIGTERM, a few seconds' grace, then SIGKILL; always reaped.
fn terminate(child: &mut Child) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let pid = Pid::from_raw(child.id() as i32);
    let _ = kill(pid, Signal::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The `kubectl` to run: the tools cache `scripts/test.sh` fills (it is
/// first on PATH under the script), else whatever PATH has.
pub fn kubectl_binary() -> PathBuf {
    tool_binary("kubectl")
}

/// The `helm` to run, found like [`kubectl_binary`].
pub fn helm_binary() -> PathBuf {
    tool_binary("helm")
}

fn tool_binary(name: &str) -> PathBuf {
    let cache = std::env::var_os("CRONSTABLE_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cronstable-tools"))
        });
    if let Some(dir) = cache {
        let candidate = dir.join("bin").join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    PathBuf::from(name)
}
