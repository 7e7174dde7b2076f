#!/usr/bin/env python3
"""Offline checks of charts/cronstable with the real tools.

- the chart's crds/ file is byte-identical to crds/cronjobset.yaml;
- `helm lint --strict` passes with each values file under ci/;
- `helm template --include-crds` of each ci/ file, for the oldest and the
  newest supported Kubernetes, passes `kubernetes-validate --strict`
  (Prometheus Operator kinds are unknown to it and are checked by hand);
- the rendered objects hold what the chart promises: the restricted pod
  security settings, RBAC rules exactly as docs/kubernetes.md lists them,
  the config in the ConfigMap, the Lease section, rule and PDB with
  replicas, the ClusterRole with `cronJobSets: all`, the state claim
  (size, class, modes, existingClaim), its volume and mount, the `state:`
  section and the Recreate strategy with state.persistence;
- the schema and the template refuse what they should;
- with CRONSTABLE_BIN set (tests/chart.rs sets it to the built binary), the
  config each ci/ file puts in the ConfigMap passes the daemon's own loader
  (`cronstable -v -c <file>`).

Exit 0: passed. Exit 1: a check failed. Exit 77: a tool is missing and
CI is not set (the caller skips). Under CI=true a missing tool fails.
Run by tests/chart.rs; also runnable alone: python3 scripts/chart_test.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHART = os.path.join(REPO, "charts", "cronstable")
# The oldest and the newest Kubernetes the chart supports (Chart.yaml's
# kubeVersion floor; the newest kubernetes-validate knows).
KUBE_VERSIONS = ["1.28.0", "1.37.0"]
RELEASE = "cronstable"
NAMESPACE = "ops"
CUSTOM_KINDS = {"ServiceMonitor", "PodMonitor"}

FAILURES = []


def check(cond, what):
    """Record a failed check instead of stopping at the first one."""
    if not cond:
        FAILURES.append(what)
    return cond


def find_helm():
    for candidate in (
        os.environ.get("CRONSTABLE_HELM"),
        shutil.which("helm"),
        os.path.join(
            os.environ.get("CRONSTABLE_TOOLS", os.path.expanduser("~/.cache/cronstable-tools")),
            "bin",
            "helm",
        ),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def run(args, expect_ok=True):
    proc = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
    if expect_ok and proc.returncode != 0:
        raise SystemExit(
            "command failed: %s\n%s%s" % (" ".join(args), proc.stdout, proc.stderr)
        )
    return proc


def render(helm, values_files=(), sets=(), kube_version=None, expect_ok=True):
    args = [helm, "template", RELEASE, CHART, "--namespace", NAMESPACE, "--include-crds"]
    if kube_version:
        args += ["--kube-version", kube_version]
    for f in values_files:
        args += ["-f", f]
    for s in sets:
        # A JSON value (`key={...}`) goes through --set-json.
        args += ["--set-json" if s.split("=", 1)[1][:1] in "[{" else "--set", s]
    return run(args, expect_ok)


def objects(text):
    return [d for d in yaml.safe_load_all(text) if d]


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, "expected one %s %s, found %d" % (kind, name or "", len(found))
    return found[0]


def kinds(objs):
    return sorted(o["kind"] for o in objs)


def rules(role):
    """A role's rules as comparable tuples."""
    return sorted(
        (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"]))
        for r in role["rules"]
    )


SETS_RULES = [
    (("cronstable.io",), ("cronjobsets",), ("list", "watch")),
    (("cronstable.io",), ("cronjobsets/status",), ("patch",)),
]
CONFIGMAP_RULE = [
    (("",), ("configmaps",), ("list", "watch")),
    (("",), ("configmaps",), ("get", "patch")),
]
POD_ENV = ["CRONSTABLE_POD_NAME", "CRONSTABLE_POD_UID"]
EVENTS_RULE = [(("events.k8s.io",), ("events",), ("create", "patch"))]
LEASE_RULE = [(("coordination.k8s.io",), ("leases",), ("get", "create", "update"))]


def daemon_config(objs):
    cm = one(objs, "ConfigMap", RELEASE + "-config")
    check(set(cm["data"]) == {"cronstable.yaml"}, "ConfigMap keys: %s" % list(cm["data"]))
    return yaml.safe_load(cm["data"]["cronstable.yaml"])


def check_restricted_pod(deploy):
    """The restricted Pod Security Standard, field by field."""
    pod = deploy["spec"]["template"]["spec"]
    psc = pod.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True, "pod runAsNonRoot")
    check(psc.get("runAsUser") == 10001 and psc.get("runAsGroup") == 10001, "pod uid/gid 10001")
    check(psc.get("seccompProfile") == {"type": "RuntimeDefault"}, "pod seccompProfile")
    check(pod.get("automountServiceAccountToken") is True, "scheduler pod mounts its token")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        check(not pod.get(key), "pod %s unset" % key)
    (container,) = pod["containers"]
    sc = container["securityContext"]
    check(sc.get("runAsNonRoot") is True, "container runAsNonRoot")
    check(sc.get("runAsUser") == 10001 and sc.get("runAsGroup") == 10001, "container uid/gid 10001")
    check(sc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
    check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation false")
    check(sc.get("capabilities") == {"drop": ["ALL"]}, "capabilities drop ALL, add nothing")
    check(sc.get("seccompProfile") == {"type": "RuntimeDefault"}, "container seccompProfile")
    check(not sc.get("privileged"), "not privileged")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    check(mounts.get("tmp") == "/tmp" and "emptyDir" in volumes.get("tmp", {}), "emptyDir at /tmp")
    for v in pod["volumes"]:
        check("hostPath" not in v, "no hostPath volume")
    # The pod's name and uid from the downward API (Events about the
    # scheduler itself regard its pod).
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container.get("env", [])}
    check(env.get("CRONSTABLE_POD_NAME") == "metadata.name", "CRONSTABLE_POD_NAME from metadata.name")
    check(env.get("CRONSTABLE_POD_UID") == "metadata.uid", "CRONSTABLE_POD_UID from metadata.uid")
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        check(
            container.get(probe, {}).get("httpGet") == {"path": path, "port": "http"},
            "%s on GET %s" % (probe, path),
        )
    return container


def validate(objs, kube_version, label):
    """kubernetes-validate --strict on everything but the custom kinds."""
    plain = [o for o in objs if o["kind"] not in CUSTOM_KINDS]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(plain, f)
        path = f.name
    try:
        proc = run(["kubernetes-validate", "--strict", "-k", kube_version, path], expect_ok=False)
    finally:
        os.unlink(path)
    out = proc.stdout + proc.stderr
    check(proc.returncode == 0, "%s on %s: kubernetes-validate failed:\n%s" % (label, kube_version, out))
    check(out.count("passed") == len(plain), "%s on %s: %d objects, output:\n%s" % (label, kube_version, len(plain), out))


def check_monitor(mon, endpoints_key):
    check(mon["apiVersion"] == "monitoring.coreos.com/v1", "%s apiVersion" % mon["kind"])
    check(mon["metadata"]["namespace"] == NAMESPACE, "%s namespace" % mon["kind"])
    check(
        mon["spec"]["selector"]["matchLabels"]
        == {"app.kubernetes.io/name": "cronstable", "app.kubernetes.io/instance": RELEASE},
        "%s selects the scheduler" % mon["kind"],
    )
    (ep,) = mon["spec"][endpoints_key]
    check(ep["port"] == "http" and ep["path"] == "/metrics", "%s scrapes http /metrics" % mon["kind"])
    check(set(ep) <= {"port", "path", "interval", "scrapeTimeout"}, "%s endpoint keys %s" % (mon["kind"], sorted(ep)))


PERSIST = ["state.persistence.enabled=true"]
STATE_MOUNT = "/var/lib/cronstable"


def state_parts(objs):
    """The state volume of the pod, its mount and the claim it names."""
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    volumes = [v for v in pod["volumes"] if v["name"] == "state"]
    mounts = [m for m in container["volumeMounts"] if m["name"] == "state"]
    return volumes, mounts


def check_persistence(helm, rendered):
    """state.persistence: the claim, its volume and mount, the state section
    of the config, the strategy, and the replicas rule."""
    # Off by default: no claim, no volume, no state section, no strategy.
    objs = rendered["default-values.yaml"]
    check("PersistentVolumeClaim" not in kinds(objs), "no claim by default")
    check(state_parts(objs) == ([], []), "no state volume by default")
    check("state" not in daemon_config(objs), "no state section by default")
    check("strategy" not in one(objs, "Deployment")["spec"], "default strategy left to Kubernetes")
    check("fsGroupChangePolicy" not in one(objs, "Deployment")["spec"]["template"]["spec"]["securityContext"], "no fsGroupChangePolicy without a volume")

    # The ci file: two replicas on a ReadWriteMany claim of class efs-sc.
    objs = rendered["persistence-values.yaml"]
    pvc = one(objs, "PersistentVolumeClaim", RELEASE + "-state")
    check(pvc["metadata"]["namespace"] == NAMESPACE, "claim namespace")
    check(pvc["metadata"].get("annotations") == {"helm.sh/resource-policy": "keep"}, "claim kept on uninstall: %s" % pvc["metadata"].get("annotations"))
    check(
        pvc["spec"] == {"accessModes": ["ReadWriteMany"], "storageClassName": "efs-sc", "resources": {"requests": {"storage": "5Gi"}}},
        "ci claim spec: %s" % pvc["spec"],
    )
    deploy = one(objs, "Deployment")
    check_restricted_pod(deploy)
    psc = deploy["spec"]["template"]["spec"]["securityContext"]
    check(psc.get("fsGroup") == 10001, "fsGroup 10001 makes a fresh volume writable")
    check(psc.get("fsGroupChangePolicy") == "OnRootMismatch", "the volume is re-owned only when its root is not the group's: %s" % psc)
    volumes, mounts = state_parts(objs)
    check(volumes == [{"name": "state", "persistentVolumeClaim": {"claimName": RELEASE + "-state"}}], "state volume: %s" % volumes)
    check(mounts == [{"name": "state", "mountPath": STATE_MOUNT}], "state mount: %s" % mounts)
    check("strategy" not in deploy["spec"], "ReadWriteMany keeps the rolling update: %s" % deploy["spec"].get("strategy"))
    config = daemon_config(objs)
    check(
        config.get("state")
        == {"path": STATE_MOUNT, "deploymentId": "team-a", "maxRunsPerJob": 200, "onStoreUnavailable": "fail-closed", "gcGraceSeconds": 86400},
        "ci state section: %s" % config.get("state"),
    )
    check(config.get("cluster", {}).get("backend") == "kubernetes", "replicas still get the Lease section")

    # The defaults of persistence: ReadWriteOnce, 1Gi, the cluster's default
    # class (no storageClassName), Recreate, state.path alone.
    objs = objects(render(helm, sets=PERSIST).stdout)
    validate(objs, KUBE_VERSIONS[-1], "persistence defaults")
    pvc = one(objs, "PersistentVolumeClaim", RELEASE + "-state")
    check(pvc["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}, "default claim spec: %s" % pvc["spec"])
    check(one(objs, "Deployment")["spec"].get("strategy") == {"type": "Recreate"}, "ReadWriteOnce gets Recreate")
    objs = objects(render(helm, sets=PERSIST + ["podSecurityContext.fsGroupChangePolicy=Always"]).stdout)
    check(one(objs, "Deployment")["spec"]["template"]["spec"]["securityContext"].get("fsGroupChangePolicy") == "Always", "the user's fsGroupChangePolicy wins")
    check(daemon_config(objs).get("state") == {"path": STATE_MOUNT}, "state section: %s" % daemon_config(objs).get("state"))
    check(state_parts(objs)[1] == [{"name": "state", "mountPath": STATE_MOUNT}], "default mount path")

    # "-" is the empty class (no dynamic provisioning); the size and a
    # mount path of one's own are followed; no keep annotation on request.
    objs = objects(render(helm, sets=PERSIST + ["state.persistence.storageClass=-", "state.persistence.size=20Gi", "state.persistence.mountPath=/data/state/", "state.persistence.keepOnUninstall=false"]).stdout)
    pvc = one(objs, "PersistentVolumeClaim")
    check(pvc["spec"].get("storageClassName") == "" and pvc["spec"]["resources"]["requests"]["storage"] == "20Gi", "class '-' and size: %s" % pvc["spec"])
    check("annotations" not in pvc["metadata"], "keepOnUninstall=false drops the annotation")
    check(daemon_config(objs)["state"]["path"] == "/data/state", "state.path follows mountPath")
    check(state_parts(objs)[1] == [{"name": "state", "mountPath": "/data/state"}], "mount follows mountPath")

    # An existing claim: nothing created, that claim mounted; the chart
    # cannot see its modes, so replicas are the user's call.
    objs = objects(render(helm, sets=PERSIST + ["state.persistence.existingClaim=team-a-ledger", "replicaCount=2"]).stdout)
    check("PersistentVolumeClaim" not in kinds(objs), "existingClaim: no claim created")
    volumes, mounts = state_parts(objs)
    check(volumes == [{"name": "state", "persistentVolumeClaim": {"claimName": "team-a-ledger"}}], "existingClaim mounted: %s" % volumes)
    check(mounts == [{"name": "state", "mountPath": STATE_MOUNT}], "existingClaim mount")
    check(daemon_config(objs)["state"] == {"path": STATE_MOUNT}, "existingClaim state section")

    # The explicit override for single-node clusters, and a strategy of
    # one's own winning over the chart's choice.
    objs = objects(render(helm, sets=PERSIST + ["replicaCount=3", "state.persistence.allowReadWriteOnceWithReplicas=true"]).stdout)
    check(one(objs, "Deployment")["spec"]["replicas"] == 3, "override allows replicas on ReadWriteOnce")
    check(one(objs, "Deployment")["spec"].get("strategy") == {"type": "Recreate"}, "override keeps Recreate")
    objs = objects(render(helm, sets=PERSIST + ['strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}']).stdout)
    check(
        one(objs, "Deployment")["spec"].get("strategy") == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        "the user's strategy wins",
    )


def main():
    helm = find_helm()
    have_validate = shutil.which("kubernetes-validate") is not None
    if not helm or not have_validate:
        missing = [n for n, ok in (("helm", helm), ("kubernetes-validate", have_validate)) if not ok]
        msg = "chart_test: missing %s (scripts/test.sh installs them)" % ", ".join(missing)
        if os.environ.get("CI") == "true":
            print(msg, file=sys.stderr)
            return 1
        print(msg + "; skipping", file=sys.stderr)
        return 77

    # The CRD the chart installs is the committed one, byte for byte.
    with open(os.path.join(REPO, "crds", "cronjobset.yaml"), "rb") as a, open(
        os.path.join(CHART, "crds", "cronjobset.yaml"), "rb"
    ) as b:
        check(a.read() == b.read(), "charts/cronstable/crds/cronjobset.yaml differs from crds/cronjobset.yaml; copy it again")

    ci_dir = os.path.join(CHART, "ci")
    ci_files = sorted(os.path.join(ci_dir, n) for n in os.listdir(ci_dir) if n.endswith(".yaml"))
    names = {os.path.basename(f) for f in ci_files}
    for wanted in ("default", "three-replicas", "all-namespaces", "monitoring-on", "persistence"):
        check(wanted + "-values.yaml" in names, "ci/%s-values.yaml exists" % wanted)

    rendered = {}
    for f in ci_files:
        label = os.path.basename(f)
        lint = run([helm, "lint", "--strict", CHART, "-f", f], expect_ok=False)
        check(lint.returncode == 0, "helm lint --strict -f %s:\n%s%s" % (label, lint.stdout, lint.stderr))
        for kv in KUBE_VERSIONS:
            objs = objects(render(helm, [f], kube_version=kv).stdout)
            validate(objs, kv, label)
            rendered[label] = objs
        print("chart_test: %s: lint and validate (%s) done" % (label, ", ".join(KUBE_VERSIONS)))

    # The daemon's own loader accepts every config the chart renders.
    binary = os.environ.get("CRONSTABLE_BIN")
    if binary:
        for label, objs in sorted(rendered.items()):
            cm = one(objs, "ConfigMap", RELEASE + "-config")
            with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
                f.write(cm["data"]["cronstable.yaml"])
                path = f.name
            try:
                # monitoring-on reads its token from this variable.
                env = dict(os.environ, CRONSTABLE_WEB_TOKEN="chart-test")
                proc = subprocess.run([binary, "-v", "-c", path], capture_output=True, text=True, env=env, timeout=60)
            finally:
                os.unlink(path)
            check(proc.returncode == 0, "%s: cronstable -v refused the rendered config:\n%s%s" % (label, proc.stdout, proc.stderr))
        print("chart_test: the daemon's loader accepts the rendered configs")

    # Defaults (one job added): restricted pod, namespaced RBAC, config.
    objs = rendered["default-values.yaml"]
    check(
        kinds(objs) == sorted(["CustomResourceDefinition", "ServiceAccount", "ConfigMap", "ConfigMap", "Role", "RoleBinding", "Service", "Deployment"]),
        "default kinds: %s" % kinds(objs),
    )
    deploy = one(objs, "Deployment")
    check(deploy["spec"]["replicas"] == 1, "one replica by default")
    container = check_restricted_pod(deploy)
    check(
        container["args"] == ["--kube", "--configmap", RELEASE + "-config", "--cronjobsets", "namespace", "--facts-configmap", RELEASE + "-config-facts", "--probe-listen", "http://0.0.0.0:8080"],
        "default args: %s" % container["args"],
    )
    check(one(objs, "ServiceAccount")["automountServiceAccountToken"] is False, "the account itself does not automount")
    check(rules(one(objs, "Role")) == sorted(SETS_RULES + CONFIGMAP_RULE + EVENTS_RULE), "default Role rules: %s" % rules(one(objs, "Role")))
    binding = one(objs, "RoleBinding")
    check(binding["subjects"] == [{"kind": "ServiceAccount", "name": RELEASE, "namespace": NAMESPACE}], "RoleBinding subject")
    check(binding["roleRef"]["kind"] == "Role" and binding["roleRef"]["name"] == RELEASE, "RoleBinding roleRef")
    config = daemon_config(objs)
    check([j["name"] for j in config.get("jobs", [])] == ["hello"], "the user's job is in the ConfigMap")
    check(config.get("web") == {"listen": ["http://0.0.0.0:8080"]}, "default web section: %s" % config.get("web"))
    check("cluster" not in config, "no cluster section with one replica")
    svc = one(objs, "Service")
    check(svc["spec"]["ports"] == [{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}], "Service port")
    check(container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}], "container port")

    # Three replicas: Lease section with the values' timings, lease rule, PDB.
    objs = rendered["three-replicas-values.yaml"]
    check(one(objs, "Deployment")["spec"]["replicas"] == 3, "three replicas")
    check_restricted_pod(one(objs, "Deployment"))
    config = daemon_config(objs)
    check(
        config.get("cluster")
        == {
            "backend": "kubernetes",
            "kubernetes": {
                "leaseName": RELEASE + "-leader",
                "leaseDurationSeconds": 20,
                "renewDeadlineSeconds": 12,
                "retryPeriodSeconds": 3,
            },
        },
        "cluster section: %s" % config.get("cluster"),
    )
    check([j["name"] for j in config.get("jobs", [])] == ["report"], "jobs kept with replicas")
    check(rules(one(objs, "Role")) == sorted(SETS_RULES + CONFIGMAP_RULE + EVENTS_RULE + LEASE_RULE), "3-replica Role rules")
    pdb = one(objs, "PodDisruptionBudget")
    check(pdb["spec"]["maxUnavailable"] == 1, "PDB maxUnavailable 1")
    spread = one(objs, "Deployment")["spec"]["template"]["spec"].get("topologySpreadConstraints", [])
    check(len(spread) == 1 and spread[0]["topologyKey"] == "kubernetes.io/hostname", "topology spread rendered")

    # The probes' listener follows a web section of the user's own on [::].
    v6 = objects(render(helm, sets=['config.web={"listen": ["http://[::]:8080"]}']).stdout)
    (v6_container,) = one(v6, "Deployment")["spec"]["template"]["spec"]["containers"]
    check(v6_container["args"][-2:] == ["--probe-listen", "http://[::]:8080"], "probe listener on [::]: %s" % v6_container["args"])

    # A cluster section of the user's own is kept as written.
    own = objects(render(helm, sets=["replicaCount=2", "config.cluster.backend=etcd"]).stdout)
    check(daemon_config(own)["cluster"] == {"backend": "etcd"}, "the user's cluster section wins")

    # One replica with the user's own kubernetes cluster section (its
    # election and cluster slots are Leases): the Role grants Leases; one
    # replica without it does not.
    single = objects(render(helm, sets=["config.cluster.backend=kubernetes"]).stdout)
    check(LEASE_RULE[0] in rules(one(single, "Role")), "Lease rights for a kubernetes cluster section")
    plain = objects(render(helm).stdout)
    check(LEASE_RULE[0] not in rules(one(plain, "Role")), "no Lease rights for one replica without a cluster section")

    # Every namespace: sets and events through a ClusterRole.
    objs = rendered["all-namespaces-values.yaml"]
    container = check_restricted_pod(one(objs, "Deployment"))
    check(
        container["args"]
        == ["--kube", "--configmap", RELEASE + "-config", "--cronjobsets", "all", "--facts-configmap", RELEASE + "-config-facts", "--probe-listen", "http://0.0.0.0:8080", "--selector", "team=platform,tier!=batch", "-l", "DEBUG"],
        "all-namespaces args: %s" % container["args"],
    )
    check(rules(one(objs, "Role")) == sorted(CONFIGMAP_RULE), "all-namespaces Role keeps only configmaps")
    check(rules(one(objs, "ClusterRole")) == sorted(SETS_RULES + EVENTS_RULE), "ClusterRole rules: %s" % rules(one(objs, "ClusterRole")))
    crb = one(objs, "ClusterRoleBinding")
    check(crb["subjects"] == [{"kind": "ServiceAccount", "name": RELEASE, "namespace": NAMESPACE}], "ClusterRoleBinding subject")
    check(crb["roleRef"]["name"] == one(objs, "ClusterRole")["metadata"]["name"], "ClusterRoleBinding roleRef")
    netpol = one(objs, "NetworkPolicy")
    check(netpol["spec"]["policyTypes"] == ["Ingress", "Egress"], "NetworkPolicy types")
    check(netpol["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}, "NetworkPolicy ingress peers")

    # No sets: no CronJobSet rights at all.
    none = objects(render(helm, sets=["cronJobSets=none"]).stdout)
    check(rules(one(none, "Role")) == sorted(CONFIGMAP_RULE + EVENTS_RULE), "cronJobSets=none Role rules")
    check("ClusterRole" not in kinds(none), "no ClusterRole with cronJobSets=none")

    # Monitoring: the custom kinds, checked by hand; the user's web kept.
    objs = rendered["monitoring-on-values.yaml"]
    check_monitor(one(objs, "ServiceMonitor"), "endpoints")
    check_monitor(one(objs, "PodMonitor"), "podMetricsEndpoints")
    check(one(objs, "ServiceMonitor")["metadata"]["labels"].get("release") == "prometheus", "ServiceMonitor extra label")
    config = daemon_config(objs)
    check(config["web"]["listen"] == ["http://0.0.0.0:8080"] and config["web"]["anonymousScopes"] == ["view"], "the user's web section is kept")
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    check(pod.get("imagePullSecrets") == [{"name": "registry-credentials"}], "imagePullSecrets")
    (container,) = pod["containers"]
    check({m["name"] for m in container["volumeMounts"]} == {"tmp", "scripts"}, "extra volume mounted")
    check([e["name"] for e in container["env"]] == POD_ENV + ["CRONSTABLE_WEB_TOKEN"], "extraEnv after the pod's own: %s" % container["env"])
    check(any(v["name"] == "tmp" and v["emptyDir"] == {"sizeLimit": "256Mi"} for v in pod["volumes"]), "tmp sizeLimit")

    # Durable state on a volume: see check_persistence.
    check_persistence(helm, rendered)

    # What must be refused.
    for sets, needle in (
        (["bogusKey=1"], "bogusKey"),
        (["cronJobSets=everything"], "cronJobSets"),
        (["image.pullPolicy=Sometimes"], "pullPolicy"),
        (["replicaCount=0"], "replicaCount"),
        (['config.web={"listen": ["http://127.0.0.1:8080"]}'], "0.0.0.0:8080"),
        # Several replicas on one ReadWriteOnce claim the chart creates.
        (PERSIST + ["replicaCount=3"], "replicaCount is 3 but the state volume's accessModes [\"ReadWriteOnce\"] lack ReadWriteMany"),
        (PERSIST + ["replicaCount=2", "state.persistence.existingClaim=mine", 'state.persistence.accessModes=["ReadWriteOncePod"]'], "mounted by one pod only"),
        (PERSIST + ['state.persistence.accessModes=["ReadOnlyMany"]'], "/state/persistence/accessModes/0"),
        (PERSIST + ["state.persistence.accessModes=[]"], "/state/persistence/accessModes"),
        (PERSIST + ["state.persistence.size=lots"], "/state/persistence/size"),
        (PERSIST + ["state.persistence.mountPath=var/lib"], "/state/persistence/mountPath"),
        (PERSIST + ["state.persistence.mountPath=/tmp"], "must not be /tmp"),
        (PERSIST + ["state.config.path=/elsewhere"], "'path' not allowed"),
        (PERSIST + ["state.config.onStoreUnavailable=explode"], "/state/config/onStoreUnavailable"),
        (PERSIST + ["state.persistence.bogus=1"], "'bogus' not allowed"),
        (PERSIST + ["config.state.path=/elsewhere"], "move the other keys of config.state to state.config"),
        (["state.config.maxRunsPerJob=5"], "state.config is written only with state.persistence.enabled: true"),
    ):
        proc = render(helm, sets=sets, expect_ok=False)
        check(proc.returncode != 0 and needle in proc.stderr, "--set %s was not refused naming %s: %s" % (sets, needle, proc.stderr.strip()))

    if FAILURES:
        for f in FAILURES:
            print("FAIL: " + f, file=sys.stderr)
        return 1
    print("chart_test: all checks passed (%d values files, Kubernetes %s)" % (len(ci_files), " and ".join(KUBE_VERSIONS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
