#!/usr/bin/env python3
"""Benchmarks of the durable store (`state.path`), whole-process, on the
release binary. scripts/bench.sh --state runs it.

usage: scripts/bench_state.py [--binary target/release/cronstable]
                              [--seconds 12] [--repeat 3]
                              [--restart 10000x100,1000x1000]
                              [--only cost,lateness,restart,size]
                              [--markdown FILE]

Scenarios:
  cost      the ledger's cost per launch: one job fires every second for
            --seconds with and without a state section; `strace -f -c` on
            the daemon counts its syscalls (fsync among them) and
            /proc/PID/stat its CPU; both divided by the launches.
  lateness  launch lateness (median, p95, max, missed) of 5 and 200 jobs
            per second with and without `state.path`, with scripts/bench.py's
            lateness scenario (same probe, same stamps).
  restart   the time from launch until GET /status answers, on a store
            pre-filled with JOBSxRUNS ledger rows (written here in the
            store's format), against the same config with an empty store.
  size      bytes on disk (du) of one job's ledger holding 1,000 runs.

Every daemon listens on 127.0.0.1 only and is stopped with SIGTERM.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("bench", os.path.join(ROOT, "scripts", "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# `--job-api off` turns the loopback job endpoint off in every state
# section (it is on by default), to measure what it costs a launch.
JOB_API = {"enabled": True}


def state_section(store):
    section = f"state:\n  path: {store}\n"
    if not JOB_API["enabled"]:
        section += "  jobApi:\n    enabled: false\n"
    return section


def record(data, epoch, seq):
    """One record file's name and bytes, in the store's format."""
    name = f"{epoch:020.6f}-benchbenchben-{seq:012d}.json"
    body = json.dumps({"data": data, "schemaVersion": "v1"}, sort_keys=True, separators=(",", ":"))
    return name, body.encode()


def fill_store(store, jobs, runs):
    """`jobs` ledgers of `runs` success rows each, in the store's layout."""
    base = os.path.join(store, "default", "records")
    os.makedirs(base, exist_ok=True)
    seq = 0
    start = time.time() - runs * 60
    for j in range(jobs):
        stream = os.path.join(base, f"runs%2Fjob-{j:05d}")
        os.makedirs(stream, exist_ok=True)
        for r in range(runs):
            seq += 1
            t = start + r * 60
            iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + "+00:00"
            name, body = record(
                {
                    "outcome": "success",
                    "exit_code": 0,
                    "started_at": iso,
                    "finished_at": iso,
                    "duration": 0.01,
                    "fail_reason": None,
                    "skip_reason": None,
                    "resources": None,
                    "ranAt": iso,
                },
                t,
                seq,
            )
            with open(os.path.join(stream, name), "wb") as f:
                f.write(body)


def run_cost(binary, tmp, seconds, with_state):
    """Syscalls and CPU per launch of one job firing every second."""
    cfg = os.path.join(tmp, f"cost-{with_state}.yaml")
    store = os.path.join(tmp, f"cost-store-{with_state}")
    shutil.rmtree(store, ignore_errors=True)
    with open(cfg, "w") as f:
        if with_state:
            f.write(state_section(store))
        f.write("jobs:\n  - name: tick\n    command: 'true'\n    schedule:\n      second: '*'\n")
    out = os.path.join(tmp, f"strace-{with_state}.txt")
    # -f follows the daemon's threads and, briefly, each forked child
    # before it execs: the per-launch count includes the spawn itself.
    # `timeout` signals strace, which stops the daemon and writes its
    # summary (signalling strace from here left the summary empty).
    subprocess.run(
        ["timeout", "-s", "TERM", str(seconds + 2), "strace", "-f", "-c", "-o", out,
         binary, "-c", cfg, "-l", "WARNING"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    launches = seconds + 1
    calls, fsyncs = 0, 0
    with open(out) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit():
                name = parts[-1]
                count = int(parts[3])
                if name in ("total",):
                    continue
                calls += count
                if name in ("fsync", "fdatasync"):
                    fsyncs += count
    return {"syscalls_per_launch": calls / launches, "fsyncs_per_launch": fsyncs / launches}


def run_cpu(binary, tmp, seconds, with_state):
    """The daemon's own CPU per launch (children excluded), no tracer."""
    cfg = os.path.join(tmp, f"cpu-{with_state}.yaml")
    store = os.path.join(tmp, f"cpu-store-{with_state}")
    shutil.rmtree(store, ignore_errors=True)
    with open(cfg, "w") as f:
        if with_state:
            f.write(state_section(store))
        f.write("jobs:\n")
        for i in range(20):
            f.write(f"  - name: tick-{i}\n    command: 'true'\n    schedule:\n      second: '*'\n")
    proc = subprocess.Popen(
        [binary, "-c", cfg, "-l", "WARNING"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(2)
    cpu0 = bench.proc_cpu_seconds(proc.pid)
    time.sleep(seconds)
    cpu = bench.proc_cpu_seconds(proc.pid) - cpu0
    bench.stop(proc)
    return {"cpu_us_per_launch": cpu / (seconds * 20) * 1e6}


def run_lateness(binary, tmp, jobs, seconds, with_state):
    store = os.path.join(tmp, f"late-store-{jobs}")
    shutil.rmtree(store, ignore_errors=True)
    plain = bench.lateness_config
    if with_state:
        bench.lateness_config = lambda n, probe: state_section(store) + plain(n, probe)
    try:
        return bench.run_lateness(bench.Impl("ours", [binary]), tmp, jobs, seconds, "/bin/date")
    finally:
        bench.lateness_config = plain


def run_restart(binary, tmp, jobs, runs, with_store):
    store = os.path.join(tmp, f"restart-{jobs}x{runs}")
    cfg = os.path.join(tmp, f"restart-{jobs}x{runs}-{with_store}.yaml")
    port = bench.free_port()
    config = bench.idle_config(jobs, port)
    with open(cfg, "w") as f:
        f.write(state_section(store if with_store else os.path.join(tmp, "empty-store")))
        f.write(config)
    shutil.rmtree(os.path.join(tmp, "empty-store"), ignore_errors=True)
    t0 = time.time()
    proc = subprocess.Popen(
        [binary, "-c", cfg, "-l", "WARNING"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = t0 + 600
        while True:
            try:
                status, body, _ = bench.http_get(port, "/status", timeout=30)
                if status == 200 and body.count(b"job-") >= jobs:
                    break
            except Exception:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("the daemon never answered /status")
            time.sleep(0.02)
        return time.time() - t0
    finally:
        bench.stop(proc)


def du_bytes(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def du_blocks(path):
    out = subprocess.run(["du", "-sk", path], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "cronstable"))
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--restart", default="10000x100,1000x1000")
    ap.add_argument("--only", default="cost,lateness,restart,size")
    ap.add_argument("--markdown")
    ap.add_argument("--job-api", choices=("on", "off"), default="on")
    ap.add_argument("--rates", default="5,200", help="fires per second of the lateness runs")
    args = ap.parse_args()
    JOB_API["enabled"] = args.job_api == "on"
    only = set(args.only.split(","))
    rows = []
    tmp = tempfile.mkdtemp(prefix="cronstable-bench-state-")
    try:
        if "cost" in only:
            for with_state in (False, True):
                cost = run_cost(args.binary, tmp, args.seconds, with_state)
                cpu = statistics.median(
                    run_cpu(args.binary, tmp, args.seconds, with_state)["cpu_us_per_launch"]
                    for _ in range(args.repeat)
                )
                label = "with state.path" if with_state else "without"
                rows.append((f"syscalls per launch, {label}", f"{cost['syscalls_per_launch']:.1f}"))
                rows.append((f"fsyncs per launch, {label}", f"{cost['fsyncs_per_launch']:.1f}"))
                rows.append((f"daemon CPU per launch (20 jobs/s), {label}", f"{cpu:.0f} µs"))
                log(f"cost {label}: {cost}, cpu {cpu:.0f} us")
        if "lateness" in only:
            for jobs in (int(r) for r in args.rates.split(",")):
                for with_state in (False, True):
                    samples = [run_lateness(args.binary, tmp, jobs, args.seconds, with_state) for _ in range(args.repeat)]
                    label = "with state.path" if with_state else "without"
                    for key in ("median_ms", "p95_ms", "max_ms"):
                        value = statistics.median(s[f"late_{jobs}_{key}"][0] for s in samples)
                        rows.append((f"lateness {jobs}/s {key.replace('_ms', '')}, {label}", f"{value:.2f} ms"))
                    missed = sum(s[f"late_{jobs}_missed"][0] for s in samples)
                    rows.append((f"lateness {jobs}/s missed fires, {label}", str(missed)))
                    log(f"lateness {jobs} {label}: done")
        if "restart" in only or "size" in only:
            for size in args.restart.split(","):
                jobs, runs = (int(x) for x in size.split("x"))
                store = os.path.join(tmp, f"restart-{jobs}x{runs}")
                t0 = time.time()
                fill_store(store, jobs, runs)
                log(f"filled {jobs}x{runs} in {time.time() - t0:.0f} s")
                if "restart" in only:
                    full = statistics.median(run_restart(args.binary, tmp, jobs, runs, True) for _ in range(args.repeat))
                    empty = statistics.median(run_restart(args.binary, tmp, jobs, runs, False) for _ in range(args.repeat))
                    rows.append((f"ready after restart, {jobs} jobs x {runs} runs in the ledger", f"{full * 1000:.0f} ms"))
                    rows.append((f"ready, {jobs} jobs, empty store", f"{empty * 1000:.0f} ms"))
                if "size" in only and runs >= 1000:
                    one = os.path.join(store, "default", "records", "runs%2Fjob-00000")
                    rows.append(("one job's ledger, 1,000 runs: bytes of the records", f"{du_bytes(one) / 1024:.0f} KiB"))
                    rows.append(("one job's ledger, 1,000 runs: on disk (blocks)", f"{du_blocks(one) / 1024:.0f} KiB"))
                shutil.rmtree(store, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    width = max(len(r[0]) for r in rows) if rows else 10
    text = "\n".join(["| metric | value |", "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows])
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    del width


if __name__ == "__main__":
    main()
