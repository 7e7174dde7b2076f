#!/usr/bin/env bash
# Regenerates the dashboard screenshots in docs/images/ (dashboard-*.png):
# runs the browser tests (tests/web_ui.rs) with CRONSTABLE_SCREENSHOTS
# pointing there, so every picture is a view the tests just checked.
# Needs chromium and chromium-driver (scripts/test.sh installs them); the
# Kubernetes view also needs KUBEBUILDER_ASSETS (taken from
# ../shared/envtest when it is there).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${KUBEBUILDER_ASSETS:-}" ] && [ -f ../shared/envtest/install.sh ]; then
  KUBEBUILDER_ASSETS="$(bash ../shared/envtest/install.sh 1.28)"
  export KUBEBUILDER_ASSETS
fi
mkdir -p docs/images
CRONSTABLE_SCREENSHOTS="$PWD/docs/images" cargo test -j 2 --test web_ui "$@"
ls -l docs/images/dashboard-*.png
