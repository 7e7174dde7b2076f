#!/usr/bin/env python3
"""Launch lateness of the release daemon: N jobs fire every second for a
while; each job appends the time its process started (as the job itself
sees it) to a file. Lateness = that instant minus the scheduled second.

usage: scripts/lateness.py [--jobs 50] [--seconds 12] [--binary target/release/cronstable]
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--binary", default="target/release/cronstable")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "stamps")
        lines = ["jobs:"]
        for i in range(args.jobs):
            lines += [
                f"  - name: j{i}",
                f"    command: [/bin/date, \"+%s.%N {i}\"]",
                "    captureStdout: true",
                "    streamPrefix: ''",
                "    schedule:",
                "      second: '*'",
            ]
        cfg = os.path.join(tmp, "c.yaml")
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(out, "w") as stamps:
            proc = subprocess.Popen(
                [args.binary, "-c", cfg, "-l", "WARNING"],
                stdout=stamps,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(args.seconds + 1.5)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        rows = []
        with open(out) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    rows.append((float(parts[0]), int(parts[1])))
    if not rows:
        print("no fires recorded", file=sys.stderr)
        return 1
    seconds = sorted({int(t) for t, _ in rows})
    # Ignore the first and last second (partial).
    full = seconds[1:-1]
    late = [(t - int(t)) * 1000 for t, _ in rows if int(t) in full]
    per_second = {s: 0 for s in full}
    for t, _ in rows:
        if int(t) in per_second:
            per_second[int(t)] += 1
    missed = sum(args.jobs - c for c in per_second.values() if c < args.jobs)
    late.sort()
    p95 = late[int(len(late) * 0.95) - 1]
    print(
        f"jobs={args.jobs} seconds={len(full)} fires={len(late)} missed={missed} "
        f"median={statistics.median(late):.2f}ms p95={p95:.2f}ms max={late[-1]:.2f}ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
