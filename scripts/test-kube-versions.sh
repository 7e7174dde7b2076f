#!/usr/bin/env bash
# Runs the tests that meet a real kube-apiserver against every version in
# ../shared/envtest (1.28.7, the oldest minor the chart supports, and 1.32),
# or the versions given: scripts/test-kube-versions.sh [1.28] [1.32].
# scripts/test.sh (and so CI) runs them on 1.28 only, to keep CI short;
# run this before changing anything that talks to the API server.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f ../shared/envtest/install.sh ]; then
  echo "scripts/test-kube-versions.sh: ../shared/envtest/install.sh is missing" >&2
  exit 1
fi
TOOLS="${CRONSTABLE_TOOLS:-$HOME/.cache/cronstable-tools}"
if [ ! -x "$TOOLS/bin/kubectl" ] || [ ! -x "$TOOLS/bin/helm" ]; then
  echo "scripts/test-kube-versions.sh: run scripts/test.sh once first (it installs kubectl and helm into $TOOLS/bin)" >&2
  exit 1
fi
export PATH="$TOOLS/bin:$PATH"

# The test files whose tests start a real API server (Cluster::real or
# ApiServer::start).
mapfile -t suites < <(grep -l -E 'Cluster::real|(^|[^A-Za-z])ApiServer::start' tests/*.rs | xargs -n1 basename | sed 's/\.rs$//' | sort)
args=()
for suite in "${suites[@]}"; do
  args+=(--test "$suite")
done

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  versions=(1.28 1.32)
fi
for version in "${versions[@]}"; do
  KUBEBUILDER_ASSETS="$(bash ../shared/envtest/install.sh "$version")"
  export KUBEBUILDER_ASSETS
  echo "== kube-apiserver $version: ${suites[*]}"
  cargo test --no-fail-fast -j 2 "${args[@]}"
done
