#!/usr/bin/env python3
"""Offline checks of deploy/ (the install without Helm) and its examples.

- deploy/01-crd.yaml is byte-identical to crds/cronjobset.yaml;
- deploy/*.yaml, crds/ and the plain-object examples pass
  `kubernetes-validate --strict` for the oldest and newest supported
  Kubernetes (chart_test.KUBE_VERSIONS);
- deploy/02-cronstable.yaml holds the same objects, field for field, as
  the chart rendered with its defaults (release and namespace
  `cronstable`), and deploy/examples/three-replicas.yaml the same as the
  chart rendered with `replicaCount: 3` and a topology spread; only the
  labels Helm adds (HELM_ONLY_LABELS) and the Namespace object (the chart
  leaves namespaces to `helm install --create-namespace`) differ;
- every CronJobSet under deploy/examples fits the CRD's openAPIV3Schema,
  checked the way the API server applies it (unknown fields refused,
  `nullable`, list-map keys unique), and its jobs pass the built daemon's
  `cronstable -v`, as does every config a ConfigMap here carries;
- checkov scans the rendered chart, deploy/ and the examples once; each
  failing check must be listed with a reason in .ci/checkov-skips.yaml,
  and each listed check must still fail somewhere (no stale entries).

Exit codes as chart_test.py: 0 passed, 1 failed, 77 a tool is missing and
CI is not set. Run by tests/deploy.rs (which sets CRONSTABLE_BIN).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_test  # noqa: E402  (shared helpers: helm lookup, validate)
from chart_test import check, FAILURES, KUBE_VERSIONS  # noqa: E402

REPO = chart_test.REPO
DEPLOY = os.path.join(REPO, "deploy")
EXAMPLES = os.path.join(DEPLOY, "examples")
# Outside deploy/: `kubectl apply -f deploy/` applies every file there.
CHECKOV_SKIPS = os.path.join(REPO, ".ci", "checkov-skips.yaml")
CRD = os.path.join(REPO, "crds", "cronjobset.yaml")
NAMESPACE = "cronstable"
# The labels only Helm's rendering carries: the chart's own version and
# the manager's name. Nothing else may differ.
HELM_ONLY_LABELS = {"helm.sh/chart", "app.kubernetes.io/managed-by"}
# Values that make the chart render deploy/examples/three-replicas.yaml
# (the jobs are taken from the example's own ConfigMap).
THREE_REPLICAS_VALUES = {
    "replicaCount": 3,
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {
                "matchLabels": {
                    "app.kubernetes.io/name": "cronstable",
                    "app.kubernetes.io/instance": "cronstable",
                }
            },
        }
    ],
}
# Environment the example configs read secrets from (fromEnvVar).
EXAMPLE_ENV = {"REPORT_WEBHOOK_URL": "https://hooks.example.invalid/report"}


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def key(obj):
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def normalized(obj):
    """The object as compared: Helm's own labels dropped and the daemon's
    config parsed (so comments and key order in it do not count)."""
    obj = json.loads(json.dumps(obj))
    labels = obj["metadata"].get("labels")
    if labels is not None:
        for name in HELM_ONLY_LABELS:
            labels.pop(name, None)
    if obj["kind"] == "ConfigMap":
        obj["data"] = {k: yaml.safe_load(v) for k, v in obj.get("data", {}).items()}
    return obj


def diff(a, b, path=""):
    """The first path where two JSON-like values differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s/%s only in %s" % (path, k, "the chart" if k in a else "deploy/")
            found = diff(a[k], b[k], path + "/" + k)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d items in the chart, %d in deploy/" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            found = diff(x, y, "%s[%d]" % (path, i))
            if found:
                return found
        return None
    return None if a == b else "%s: chart %r, deploy/ %r" % (path, a, b)


def compare(chart_objs, plain_objs, label, extra_kinds=()):
    chart = {key(o): normalized(o) for o in chart_objs}
    plain = {key(o): normalized(o) for o in plain_objs if o["kind"] not in extra_kinds}
    check(set(chart) == set(plain), "%s: objects differ: chart only %s, deploy/ only %s" % (
        label, sorted(set(chart) - set(plain)), sorted(set(plain) - set(chart))))
    for k in sorted(set(chart) & set(plain)):
        found = diff(chart[k], plain[k])
        check(found is None, "%s: %s %s/%s differs from the chart at %s" % (label, k[0], k[1], k[2], found))


def render(helm, values):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(values, f)
        path = f.name
    try:
        args = [helm, "template", "cronstable", chart_test.CHART, "--namespace", NAMESPACE,
                "--include-crds", "-f", path]
        return [d for d in yaml.safe_load_all(chart_test.run(args).stdout) if d]
    finally:
        os.unlink(path)


# --- the CRD's schema, applied the way the API server does ---------------

def api_schema(node):
    """The openAPIV3Schema as a JSON schema (draft 4) with the API server's
    rules: properties close an object unless it preserves unknown fields;
    `nullable` admits null."""
    if isinstance(node, list):
        return [api_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: api_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if out.pop("nullable", False):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = list(out["enum"]) + [None]
    return out


def map_key_clash(node, value, path="spec"):
    """x-kubernetes-list-type: map lists: two items with the same keys."""
    if not isinstance(node, dict):
        return None
    if isinstance(value, list):
        if node.get("x-kubernetes-list-type") == "map":
            seen = set()
            for item in value:
                k = tuple(item.get(n) for n in node.get("x-kubernetes-list-map-keys", []))
                if k in seen:
                    return "%s: two items keyed %r" % (path, k)
                seen.add(k)
        for i, item in enumerate(value):
            found = map_key_clash(node.get("items", {}), item, "%s[%d]" % (path, i))
            if found:
                return found
    elif isinstance(value, dict):
        for name, child in node.get("properties", {}).items():
            if name in value:
                found = map_key_clash(child, value[name], path + "." + name)
                if found:
                    return found
    return None


def check_cronjobset(obj, schema, validator, label, binary):
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
    check(not errors, "%s: %s/%s does not fit the CRD schema: %s" % (
        label, obj["metadata"].get("namespace"), obj["metadata"]["name"],
        "; ".join("/".join(map(str, e.path)) + ": " + e.message for e in errors[:3])))
    clash = map_key_clash(schema["properties"]["spec"], obj.get("spec"))
    check(clash is None, "%s: %s" % (label, clash))
    # The spec is the YAML config's `defaults:` and `jobs:`: the daemon's
    # own loader must take it as a config file.
    spec = obj.get("spec", {})
    config = {k: spec[k] for k in ("defaults", "jobs") if spec.get(k) is not None}
    daemon_accepts(binary, yaml.safe_dump(config), "%s: CronJobSet %s" % (label, obj["metadata"]["name"]))


def daemon_accepts(binary, text, label):
    if not binary:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        env = dict(os.environ, **EXAMPLE_ENV)
        proc = subprocess.run([binary, "-v", "-c", path], capture_output=True, text=True, env=env, timeout=60)
    finally:
        os.unlink(path)
    check(proc.returncode == 0, "%s: cronstable -v refused it:\n%s%s" % (label, proc.stdout, proc.stderr))


# --- checkov ---------------------------------------------------------------

def find_checkov():
    tools = os.environ.get("CRONSTABLE_TOOLS", os.path.expanduser("~/.cache/cronstable-tools"))
    for candidate in (shutil.which("checkov"), os.path.join(tools, "bin", "checkov")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def run_checkov(checkov, manifests):
    """One checkov run (it is slow to start) over a directory holding every
    manifest; returns {check id: [where it failed]}."""
    skips_path = CHECKOV_SKIPS
    with open(skips_path) as f:
        skips = yaml.safe_load(f)["skips"]
    for s in skips:
        check(s.get("id") and len(str(s.get("reason", "")).strip()) > 20,
              "checkov-skips.yaml: entry %r needs an id and a reason" % s)
    skipped = {s["id"] for s in skips}
    with tempfile.TemporaryDirectory() as tmp:
        for name, objs in manifests.items():
            with open(os.path.join(tmp, name), "w") as f:
                yaml.safe_dump_all(objs, f)
        proc = subprocess.run(
            [checkov, "-d", tmp, "--framework", "kubernetes", "-o", "json", "--quiet", "--compact"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        check(False, "checkov gave no JSON (exit %d):\n%s%s" % (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:]))
        return
    reports = report if isinstance(report, list) else [report]
    failed = {}
    passed = 0
    for r in reports:
        results = r.get("results", {})
        # --compact leaves the passed checks out of `results`; the summary
        # still counts them.
        passed += int(r.get("summary", {}).get("passed", 0))
        for c in results.get("failed_checks", []):
            failed.setdefault(c["check_id"], []).append("%s %s" % (c.get("file_path"), c.get("resource")))
    check(passed > 0, "checkov passed no check at all; output:\n%s" % proc.stdout[-2000:])
    for cid in sorted(set(failed) - skipped):
        check(False, "checkov %s fails (not in .ci/checkov-skips.yaml): %s" % (cid, failed[cid][:5]))
    for cid in sorted(skipped - set(failed)):
        check(False, ".ci/checkov-skips.yaml lists %s, which no longer fails: remove it" % cid)
    print("deploy_test: checkov: %d passed, %d checks skipped with reasons" % (passed, len(skipped & set(failed))))


def main():
    helm = chart_test.find_helm()
    have_validate = shutil.which("kubernetes-validate") is not None
    checkov = find_checkov()
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    missing = [n for n, ok in (("helm", helm), ("kubernetes-validate", have_validate),
                               ("checkov", checkov), ("jsonschema", jsonschema)) if not ok]
    if missing:
        msg = "deploy_test: missing %s (scripts/test.sh installs them)" % ", ".join(missing)
        if os.environ.get("CI") == "true":
            print(msg, file=sys.stderr)
            return 1
        print(msg + "; skipping", file=sys.stderr)
        return 77
    binary = os.environ.get("CRONSTABLE_BIN")

    with open(CRD, "rb") as a, open(os.path.join(DEPLOY, "01-crd.yaml"), "rb") as b:
        check(a.read() == b.read(), "deploy/01-crd.yaml differs from crds/cronjobset.yaml; copy it again")

    deploy_files = sorted(glob.glob(os.path.join(DEPLOY, "*.yaml")))
    plain = [o for f in deploy_files for o in load(f)]
    examples = {os.path.basename(f): load(f) for f in sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml")))}
    for want in ("cronjobset.yaml", "three-replicas.yaml", "sidecar.yaml"):
        check(want in examples, "deploy/examples/%s exists" % want)
    for name in [os.path.basename(f) for f in deploy_files] + ["examples/" + n for n in examples]:
        with open(os.path.join(DEPLOY, name)) as f:
            first = f.readline()
        if name != "01-crd.yaml":  # byte-identical to crds/, which has no header
            check(first.startswith("#"), "%s starts with a comment saying how to apply it" % name)

    # kubernetes-validate: everything but the custom objects.
    builtin = plain + load(CRD) + [o for objs in examples.values() for o in objs if o["kind"] != "CronJobSet"]
    for kv in KUBE_VERSIONS:
        chart_test.validate(builtin, kv, "deploy/, crds/ and examples")
    print("deploy_test: kubernetes-validate (%s) done" % ", ".join(KUBE_VERSIONS))

    # The plain install is the chart's default render.
    defaults = render(helm, {})
    compare(defaults, plain, "deploy/", extra_kinds={"Namespace"})
    # Three replicas: the chart with the example's jobs and the matching values.
    three = examples.get("three-replicas.yaml", [])
    cms = [o for o in three if o["kind"] == "ConfigMap"]
    jobs = yaml.safe_load(cms[0]["data"]["cronstable.yaml"]).get("jobs", []) if cms else []
    three_chart = render(helm, dict(THREE_REPLICAS_VALUES, config={"jobs": jobs}))
    compare([o for o in three_chart if o["kind"] != "CustomResourceDefinition"], three, "examples/three-replicas.yaml")
    print("deploy_test: deploy/ and three-replicas.yaml match the chart's render")

    # CronJobSets against the CRD's schema; every config through the daemon.
    crd = load(CRD)[0]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    validator = jsonschema.Draft4Validator(api_schema(schema))
    sets = 0
    for name, objs in sorted(examples.items()):
        for o in objs:
            if o["kind"] == "CronJobSet":
                check(o["apiVersion"] == "cronstable.io/" + crd["spec"]["versions"][0]["name"], "%s: apiVersion" % name)
                check_cronjobset(o, schema, validator, name, binary)
                sets += 1
            elif o["kind"] == "ConfigMap":
                for k, text in (o.get("data") or {}).items():
                    daemon_accepts(binary, text, "%s: ConfigMap %s key %s" % (name, o["metadata"]["name"], k))
    for o in plain:
        if o["kind"] == "ConfigMap":
            for k, text in (o.get("data") or {}).items():
                daemon_accepts(binary, text, "deploy/: ConfigMap key %s" % k)
    check(sets >= 1, "at least one example CronJobSet")
    # The checker refuses what it should (it cannot pass everything).
    bad = json.loads(json.dumps(next(o for o in examples.get("cronjobset.yaml", []) if o["kind"] == "CronJobSet")))
    bad["spec"]["jobs"][0]["retries"] = 3
    check(any(True for _ in validator.iter_errors(bad)), "the schema check refuses an unknown job field")
    print("deploy_test: %d example CronJobSet(s) fit the CRD schema%s" % (sets, "; the daemon loads every example config" if binary else ""))

    # checkov over the rendered chart (each ci/ values file), deploy/ and
    # the examples, in one run.
    manifests = {}
    for f in sorted(glob.glob(os.path.join(chart_test.CHART, "ci", "*.yaml"))):
        args = [helm, "template", "cronstable", chart_test.CHART, "--namespace", NAMESPACE, "-f", f]
        objs = [d for d in yaml.safe_load_all(chart_test.run(args).stdout) if d]
        manifests["chart-" + os.path.basename(f)] = objs
    manifests["deploy.yaml"] = plain
    for name, objs in examples.items():
        manifests["example-" + name] = objs
    run_checkov(checkov, manifests)

    if FAILURES:
        for f in FAILURES:
            print("FAIL: " + f, file=sys.stderr)
        return 1
    print("deploy_test: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
