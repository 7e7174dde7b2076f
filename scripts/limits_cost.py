#!/usr/bin/env python3
"""What a cgroup per run costs a launch (resourceLimits).

Runs the daemon on the lateness workload of scripts/bench.py (N jobs a
second, each a tiny C probe that prints when it ran) three times per
round: plain; with `resourceLimits: {memory: 256Mi}` on every job but the
daemon pointed at a cgroup root with nothing in it (the caps are
recorded as unenforced and the run is spawned as usual, so this isolates
the bookkeeping); and with the caps enforced, so each run is created in a
cgroup of its own, joined between fork and exec, and its cgroup read and
removed when it ends. Rounds rotate which goes first. Prints, per variant, the lateness (median / p95 / max of each
fire's offset into its second) and the daemon's CPU per launch (its CPU
time over the window divided by the launches in it), plus what the
daemon says it could cap (GET /node is not used: the daemon runs without
a web section; its log line "resource limits are enforced with ..." is
quoted instead).

    sudo python3 scripts/limits_cost.py --binary target/release/cronstable
        [--jobs 50,200] [--seconds 10] [--rounds 3]

Needs root and a cgroup hierarchy the daemon can use (v2 delegated, or the
v1 memory/cpu/pids hierarchies); a C compiler for the probe. Prints a
Markdown table.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the probe, the lateness config, the stats)

CAP = "    resourceLimits:\n      memory: 256Mi\n"


def config(jobs, probe, capped):
    text = bench.lateness_config(jobs, probe)
    if capped:
        text = text.replace("      second: '*'\n", "      second: '*'\n" + CAP)
    return text


VARIANTS = {
    "plain": "no caps",
    "unenforced": "caps, no cgroup (unusable root)",
    "cgroup": "cgroup per run",
}


def run(binary, tmp, jobs, seconds, probe, variant):
    """One daemon on the workload: lateness stats, CPU µs per launch, and
    the daemon's verdict on caps."""
    label = variant
    cfg = os.path.join(tmp, f"{label}-{jobs}.yaml")
    with open(cfg, "w") as f:
        f.write(config(jobs, probe, variant != "plain"))
    env = dict(bench.DAEMON_ENV)
    if variant == "unenforced":
        empty = os.path.join(tmp, "no-cgroups")
        os.makedirs(empty, exist_ok=True)
        env["CRONSTABLE_CGROUP_ROOT"] = empty
    out = os.path.join(tmp, f"stamps-{label}-{jobs}")
    err = out + ".err"
    with open(out, "w") as stamps, open(err, "w") as errors:
        proc = subprocess.Popen(
            [binary, "-c", cfg, "-l", "INFO"],
            stdin=subprocess.DEVNULL,
            stdout=stamps,
            stderr=errors,
            env=env,
        )
        try:
            deadline = time.time() + 120
            while os.path.getsize(out) == 0:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{label}: no job fired" + bench.tail(err))
                time.sleep(0.01)
            first = int(time.time())
            time.sleep(first + 1 - time.time())
            cpu0, t0 = bench.proc_cpu_seconds(proc.pid), time.time()
            time.sleep(seconds)
            cpu = bench.proc_cpu_seconds(proc.pid) - cpu0
            elapsed = time.time() - t0
            time.sleep(1.5)
        finally:
            bench.stop(proc)
    stats = bench.lateness_stats(out, range(first + 1, first + 1 + seconds), jobs, "late")
    verdict = ""
    with open(err, errors="replace") as f:
        for line in f:
            if "resource limits are enforced" in line or "cannot enforce" in line:
                verdict = line.strip().split(":", 2)[-1]
                break
    per_launch_us = cpu / (elapsed * jobs) * 1e6
    return stats, per_launch_us, verdict


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(bench.ROOT, "target/release/cronstable"))
    ap.add_argument("--jobs", default="50,200", help="jobs per second, per run")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("limits_cost.py: needs root (the daemon makes cgroups)")
    probe = bench.build_probe()
    sizes = [int(n) for n in args.jobs.split(",")]
    results = {}
    verdicts = set()
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for r in range(args.rounds):
                names = list(VARIANTS)
                order = names[r % 3:] + names[: r % 3]
                for variant in order:
                    stats, us, verdict = run(args.binary, tmp, n, args.seconds, probe, variant)
                    key = (n, variant)
                    slot = results.setdefault(key, {"median": [], "p95": [], "max": [], "missed": [], "us": []})
                    slot["median"] += stats[f"late_{n}_median_ms"]
                    slot["p95"] += stats[f"late_{n}_p95_ms"]
                    slot["max"] += stats[f"late_{n}_max_ms"]
                    slot["missed"] += stats[f"late_{n}_missed"]
                    slot["us"].append(us)
                    if verdict:
                        verdicts.add(verdict)
                    bench.log(f"{n}/s {variant}: p95 "
                              f"{stats[f'late_{n}_p95_ms'][0]:.2f} ms, {us:.0f} µs CPU/launch")
    print("| jobs/s | variant | lateness median / p95 / max (ms) | missed | daemon CPU per launch (µs) |")
    print("| --- | --- | --- | --- | --- |")
    for n in sizes:
        for variant, title in VARIANTS.items():
            s = results[(n, variant)]
            med = statistics.median
            print(
                f"| {n} | {title} | "
                f"{med(s['median']):.2f} / {med(s['p95']):.2f} / {med(s['max']):.2f} | "
                f"{sum(s['missed'])} | {med(s['us']):.0f} (runs: {', '.join(f'{u:.0f}' for u in s['us'])}) |"
            )
    for v in sorted(verdicts):
        print(f"\nThe daemon said: {v.strip()}")


if __name__ == "__main__":
    main()
