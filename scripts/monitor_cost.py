#!/usr/bin/env python3
"""What resource monitoring costs the daemon.

Starts the daemon twice on N `@reboot` jobs that each run `sleep`
(a shell running sleep: two processes a run), once without and once with
`monitorResources` at the given interval. Once every run has started, it
reads over a window of S seconds, from /proc: the daemon's CPU time (all
threads), the sampling thread's own CPU time, and the daemon's resident
memory at the end of the window. The difference between the two daemons
is what monitoring costs; the memory difference divided by N is the
memory one monitored run holds (its account and a chart series of S / interval
points by then).

    python3 scripts/monitor_cost.py [--binary target/release/cronstable]
        [--jobs 200] [--seconds 30] [--interval 1.0] [--history 240]
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_path):
    """utime + stime of a /proc stat file, in seconds (None when gone)."""
    try:
        with open(stat_path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sampler_thread(pid):
    """The stat path of the daemon's sampling thread, if it has one."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip().startswith("cronstable-samp"):
                    return f"/proc/{pid}/task/{tid}/stat"
        except OSError:
            continue
    return None


def children_of(pid):
    """The pids whose parent is `pid` (the runs' first processes)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def processes():
    return sum(1 for e in os.listdir("/proc") if e.isdigit())


def measure(binary, jobs, seconds, monitor):
    with tempfile.TemporaryDirectory() as tmp:
        lines = ["jobs:"]
        for i in range(jobs):
            lines += [
                f"  - name: sleeper-{i}",
                "    schedule: '@reboot'",
                f"    command: sleep {seconds + 60}; true",
            ]
            if monitor:
                lines.append(f"    monitorResources: {monitor}")
        path = os.path.join(tmp, "c.yaml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        daemon = subprocess.Popen(
            [binary, "-c", path, "-l", "WARNING"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.time() + 60
            while len(children_of(daemon.pid)) < jobs:
                if time.time() > deadline:
                    sys.exit(f"only {len(children_of(daemon.pid))} of {jobs} runs started")
                time.sleep(0.2)
            time.sleep(3)  # let start-up settle
            stat = f"/proc/{daemon.pid}/stat"
            sampler = sampler_thread(daemon.pid)
            t0, s0, c0 = time.time(), cpu_seconds(stat), sampler and cpu_seconds(sampler)
            time.sleep(seconds)
            t1, s1, c1 = time.time(), cpu_seconds(stat), sampler and cpu_seconds(sampler)
            return {
                "cpu_percent": 100 * (s1 - s0) / (t1 - t0),
                "sampler_percent": 100 * (c1 - c0) / (t1 - t0) if sampler else 0.0,
                "rss_kib": rss_kib(daemon.pid),
                "processes": processes(),
            }
        finally:
            # Each run leads its own process group: end them by id, then
            # the daemon (which has nothing left to wait for).
            for run in children_of(daemon.pid):
                try:
                    os.killpg(run, signal.SIGKILL)
                except OSError:
                    pass
            daemon.terminate()
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default="target/release/cronstable")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--history", type=int, default=240)
    args = parser.parse_args()
    monitor = "{interval: %s, history: %d}" % (args.interval, args.history)
    off = measure(args.binary, args.jobs, args.seconds, None)
    on = measure(args.binary, args.jobs, args.seconds, monitor)
    print(f"{args.jobs} running jobs (2 processes each), {args.seconds} s window, "
          f"{on['processes']} processes on the host")
    print(f"  unmonitored: daemon CPU {off['cpu_percent']:.2f} % of a core, RSS {off['rss_kib']} KiB")
    print(f"  monitored every {args.interval} s: daemon CPU {on['cpu_percent']:.2f} % of a core "
          f"(sampling thread {on['sampler_percent']:.2f} %), RSS {on['rss_kib']} KiB")
    per_run = (on["rss_kib"] - off["rss_kib"]) * 1024 / args.jobs
    print(f"  per monitored run: {per_run:.0f} bytes of daemon memory, "
          f"{(on['cpu_percent'] - off['cpu_percent']) * 10 / args.jobs:.3f} ms of CPU a second")


if __name__ == "__main__":
    main()
