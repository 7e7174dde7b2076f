#!/usr/bin/env python3
"""Runs the test binaries cargo built, several at once.

`cargo test` runs one test binary after the other, and most of our
black-box suites spend their time waiting on daemons, timers and child
processes rather than on the CPU, so a clean run is mostly idle. This
runner takes the binaries `cargo test --no-run --message-format=json`
reported (on stdin), starts the slowest first, and keeps `--lanes` of
them running at once. Each binary's output is printed whole when it ends,
so suites never interleave; the exit status is non-zero when any binary
failed, and the failing binaries are named at the end.

Suites that share a fixed resource must not overlap: every black-box suite
takes its ports from the OS (port 0 or a probed free port) and its files
from a temporary directory, so any two may run together.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

# Seconds each suite took on a clean CI run (2 cores, 2 lanes), used
# only to start the long ones first; unknown suites count as mid-sized.
EXPECTED_SECONDS = {
    "sla": 165,
    "kube_mode": 110,
    "state_durable": 100,
    "cluster_gossip": 85,
    "runtime": 63,
    "cluster_slots": 56,
    "kube_facts": 51,
    "kube_chart_install": 43,
    "kube_real": 32,
    "cluster_etcd": 29,
    "tui": 28,
    "pools_kubernetes": 20,
    "web_ui": 22,
    "pools": 12,
    "mcp_sdk": 11,
    "pools_etcd": 10,
    "resources": 6,
    "mcp": 3,
    "limits": 4,
    "schedule_intel": 3,
}
DEFAULT_SECONDS = 10


def suite_name(executable):
    """`target/debug/deps/kube_mode-0123abcd` -> `kube_mode`."""
    base = os.path.basename(executable)
    stem, _, tail = base.rpartition("-")
    return stem if stem and len(tail) == 16 else base


def binaries(messages):
    """The test executables in cargo's JSON messages (lib, bins, tests)."""
    found = []
    for line in messages:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("reason") != "compiler-artifact":
            continue
        executable = message.get("executable")
        if executable and message.get("profile", {}).get("test"):
            kind = message.get("target", {}).get("kind", [])
            found.append((executable, kind))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", type=int, default=2)
    args = parser.parse_args()
    suites = binaries(sys.stdin)
    if not suites:
        print("test_lanes: cargo reported no test binaries", file=sys.stderr)
        return 1
    queue = sorted(
        suites,
        key=lambda s: -EXPECTED_SECONDS.get(suite_name(s[0]), DEFAULT_SECONDS),
    )
    lock = threading.Lock()
    failed = []
    timings = []

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                executable, kind = queue.pop(0)
            name = suite_name(executable)
            started = time.monotonic()
            # Each suite's own tests run with the default parallelism; the
            # crate root is the working directory, as under `cargo test`.
            done = subprocess.run(
                [executable],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            took = time.monotonic() - started
            with lock:
                label = "/".join(kind) or "test"
                print(f"     Running {name} ({label}, {took:.1f} s)", flush=True)
                sys.stdout.buffer.write(done.stdout)
                sys.stdout.flush()
                timings.append((took, name))
                if done.returncode != 0:
                    failed.append(f"{name} (exit {done.returncode})")

    threads = [threading.Thread(target=worker) for _ in range(max(1, args.lanes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    slowest = ", ".join(f"{n} {t:.0f} s" for t, n in sorted(timings, reverse=True)[:8])
    print(f"test_lanes: {len(timings)} suites in {args.lanes} lanes; slowest: {slowest}")
    if failed:
        print("test_lanes: failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
