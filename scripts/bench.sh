#!/usr/bin/env bash
# Whole-process benchmarks: builds the release binary (a no-op when it is
# up to date), then runs scripts/bench.py with the arguments given.
#
#   scripts/bench.sh                      # ours only, 3 runs of everything
#   scripts/bench.sh --original           # A/B against the Python original
#   scripts/bench.sh --original --markdown target/bench.md --json target/bench.json
#
# See `scripts/bench.py --help` and docs/performance.md. The micro
# benchmarks are `cargo bench` (benches/).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 scripts/bench.py "$@"
