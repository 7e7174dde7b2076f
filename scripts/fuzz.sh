#!/usr/bin/env bash
# Runs the cargo-fuzz targets under fuzz/ for a time budget.
#
#   scripts/fuzz.sh [TARGET] [SECONDS]
#
# TARGET is one of the targets in fuzz/Cargo.toml, or `all` (the default);
# SECONDS is the budget per target (default 300). Each target runs as one
# process on the nightly toolchain, over its committed seeds in
# fuzz/corpus/<target>/ (what libFuzzer learns is added there too, but
# .gitignore keeps it out of git).
#
# On a crash the input is minimized with `cargo fuzz tmin` and its path is
# printed. Turning it into a regression test is a manual step: add a plain
# `cargo test` case to tests/fuzz_regressions.rs that feeds the same input
# through the same public API, then fix the bug.
#
# Environment: FUZZ_JOBS (cargo build jobs, default 2), FUZZ_RSS_MB
# (libFuzzer's memory limit, default 2048), FUZZ_TIMEOUT (seconds one
# input may take before it counts as a hang, default 10).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-all}"
seconds="${2:-300}"
export CARGO_BUILD_JOBS="${FUZZ_JOBS:-2}"
rss="${FUZZ_RSS_MB:-2048}"
timeout="${FUZZ_TIMEOUT:-10}"

if ! rustup toolchain list | grep -q '^nightly'; then
    echo "fuzz.sh: a nightly toolchain is needed: rustup toolchain install nightly" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz
fi

cd "$root/fuzz"
mapfile -t known < <(cargo +nightly fuzz list)
if [[ "$target" == all ]]; then
    targets=("${known[@]}")
else
    if ! printf '%s\n' "${known[@]}" | grep -qx -- "$target"; then
        echo "fuzz.sh: unknown target '$target' (known: ${known[*]})" >&2
        exit 2
    fi
    targets=("$target")
fi

# Debug assertions on: an arithmetic overflow is a finding too.
if [[ ${#targets[@]} -eq 1 ]]; then
    cargo +nightly fuzz build -O -a "${targets[0]}"
else
    cargo +nightly fuzz build -O -a
fi

status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    log="artifacts/$t/last-run.log"
    echo "== $t: ${seconds}s (log: fuzz/$log)"
    if cargo +nightly fuzz run -O -a "$t" "corpus/$t" -- \
        -max_total_time="$seconds" \
        -rss_limit_mb="$rss" -timeout="$timeout" -print_final_stats=1 \
        >"$log" 2>&1; then
        grep -E '^(Done|#[0-9]+ +DONE)|stat::number_of_executed_units|stat::peak_rss_mb' "$log" || true
    else
        status=1
        echo "!! $t found a crash:"
        grep -E 'panicked|ERROR: libFuzzer|SUMMARY' "$log" | head -5 || true
        while IFS= read -r crash; do
            echo "   minimizing $crash"
            tlog="artifacts/$t/tmin-$(basename "$crash").log"
            cargo +nightly fuzz tmin -O -a "$t" "$crash" >"$tlog" 2>&1 || true
            echo "   artifact: fuzz/$crash"
            echo "   minimized: fuzz/artifacts/$t/minimized-from-${crash##*-} (log: fuzz/$tlog)"
        done < <(grep -oE "artifacts/$t/(crash|oom|timeout|leak)-[0-9a-f]+" "$log" | sort -u)
        echo "   next: add a case to tests/fuzz_regressions.rs, then fix."
    fi
done
exit "$status"
