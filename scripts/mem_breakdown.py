#!/usr/bin/env python3
"""Where an idle daemon's resident memory goes.

    python3 scripts/mem_breakdown.py [--binary target/release/cronstable] [N ...]

For each N (default 0, 1000, 10000) it starts the daemon on the same
generated config as scripts/bench.py (N idle jobs and a web listener on
127.0.0.1), waits until its CPU time has not moved for a second, and prints
VmRSS, VmHWM (the peak while loading), RssAnon and RssFile from
/proc/PID/status, then the largest mappings from /proc/PID/smaps (code and
read-only data of the binary, libc, the heap). Linux only; see
docs/performance.md ("Memory: where the bytes go") for a heap profile on
top of this.
"""
import argparse
import collections
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the config generator shared with the benchmarks)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(pid, quiet_polls=10, limit=120.0):
    """Until the CPU time has not moved for quiet_polls x 0.1 s."""
    last, still, deadline = None, 0, time.monotonic() + limit
    while still < quiet_polls and time.monotonic() < deadline:
        time.sleep(0.1)
        now = cpu_ticks(pid)
        still = still + 1 if now == last else 0
        last = now


def mappings(pid):
    """Resident kB per (file or [anon], permissions)."""
    sizes = collections.Counter()
    key = None
    for line in open(f"/proc/{pid}/smaps"):
        parts = line.split()
        if not parts[0].endswith(":"):
            name = parts[5] if len(parts) > 5 else "[anon]"
            key = (os.path.basename(name) if name.startswith("/") else name, parts[1])
        elif parts[0] == "Rss:":
            sizes[key] += int(parts[1])
    return sizes


def measure(binary, jobs, top):
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "jobs.yaml")
        with open(config, "w") as f:
            f.write(bench.idle_config(jobs, port=free_port()))
        daemon = subprocess.Popen(
            [binary, "-c", config, "-l", "WARNING"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_idle(daemon.pid)
            status = {}
            for line in open(f"/proc/{daemon.pid}/status"):
                key, _, value = line.partition(":")
                status[key] = value.strip()
            maps = mappings(daemon.pid)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    print(
        f"{jobs} jobs: VmRSS {status['VmRSS']}, peak {status['VmHWM']}, "
        f"anonymous {status['RssAnon']}, file-backed {status['RssFile']}, "
        f"threads {status['Threads']}"
    )
    for (name, perms), kb in maps.most_common(top):
        print(f"  {kb:8d} kB  {perms}  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/cronstable")
    parser.add_argument("--top", type=int, default=8, help="mappings listed per size")
    parser.add_argument("jobs", nargs="*", type=int, default=[0, 1000, 10000])
    args = parser.parse_args()
    for jobs in args.jobs:
        measure(args.binary, jobs, args.top)


if __name__ == "__main__":
    main()
