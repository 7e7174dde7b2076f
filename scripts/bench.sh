#!/usr/bin/env bash
# Whole-process benchmarks: builds the release binary (a no-op when it is
# up to date), then runs scripts/bench.py with the arguments given.
#
#   scripts/bench.sh                      # ours only, 3 runs of everything
#   scripts/bench.sh --original           # A/B against the Python original
#   scripts/bench.sh --original --markdown target/bench.md --json target/bench.json
#
# Kubernetes mode (cargo bench targets, not bench.py; each prints a table):
#
#   scripts/bench.sh --kube               # benches/kube.rs on the tests' fake API server
#   scripts/bench.sh --kube-real [1.28|1.32]
#       # a real kube-apiserver (and etcd) from ../shared/envtest (1.28 by
#       # default; KUBEBUILDER_ASSETS when already set and no version is
#       # given): benches/kube.rs with KUBE_BENCH_SERVER=real, then
#       # benches/kube_replicas.rs (idle API requests per replica from the
#       # audit log, takeover after kill -9 and SIGTERM). About 20 minutes.
#
# The durable store (`state.path`): ledger cost per launch, lateness with
# and without it, restart time on a full ledger, store size:
#
#   scripts/bench.sh --state [scripts/bench_state.py arguments]
#
# Schedule intelligence over 10,000 jobs in-process (pressure, suggest,
# duplicates, the calendar feed, descriptions; benches/schedule_intel.rs):
#
#   scripts/bench.sh --schedule
#
# See `scripts/bench.py --help` and docs/performance.md. The micro
# benchmarks are `cargo bench` (benches/).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  --schedule)
    exec cargo bench --bench schedule_intel
    ;;
  --state)
    shift
    cargo build --release --quiet
    exec python3 scripts/bench_state.py "$@"
    ;;
  --kube)
    exec cargo bench --bench kube
    ;;
  --kube-real)
    version="${2:-}"
    if [ -n "$version" ] || [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
      if [ ! -f ../shared/envtest/install.sh ]; then
        echo "scripts/bench.sh: --kube-real needs ../shared/envtest/install.sh or KUBEBUILDER_ASSETS" >&2
        exit 1
      fi
      KUBEBUILDER_ASSETS="$(bash ../shared/envtest/install.sh "${version:-1.28}")"
      export KUBEBUILDER_ASSETS
    fi
    # The harness runs kubectl from the tools cache scripts/test.sh fills.
    TOOLS="${CRONSTABLE_TOOLS:-$HOME/.cache/cronstable-tools}"
    if [ -x "$TOOLS/bin/kubectl" ]; then
      export PATH="$TOOLS/bin:$PATH"
    elif ! command -v kubectl >/dev/null 2>&1; then
      echo "scripts/bench.sh: --kube-real needs kubectl (run scripts/test.sh once: it installs it into $TOOLS/bin)" >&2
      exit 1
    fi
    load="$(cut -d' ' -f1 /proc/loadavg)"
    if awk -v l="$load" 'BEGIN { exit !(l > 1) }'; then
      echo "scripts/bench.sh: load average $load: another build running makes these numbers meaningless" >&2
    fi
    echo "== kube-apiserver from $KUBEBUILDER_ASSETS"
    KUBE_BENCH_SERVER=real cargo bench --bench kube
    exec cargo bench --bench kube_replicas
    ;;
esac

cargo build --release --quiet
exec python3 scripts/bench.py "$@"
