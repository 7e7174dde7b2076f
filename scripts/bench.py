#!/usr/bin/env python3
"""Whole-process benchmarks of the release binary, optionally side by side
with the Python original (A/B interleaved in one run).

usage: scripts/bench.py [--original | --original-bin PATH] [--repeat 3]
                        [--only version,validate,daemon,lateness]
                        [--seconds 12] [--probe date|static] [--quick]
                        [--lateness-jobs 5,50,200] [--daemon-jobs 1000,10000]
                        [--json FILE]
                        [--markdown FILE] [--binary target/release/cronstable]

Build first (`cargo build --release`); scripts/bench.sh does both.

Scenarios (each one repeated --repeat times; medians are reported):
  version   wall time of `--version` (and of /bin/true, the launch floor)
  validate  wall time of `-c CONFIG -v` on generated 100- and 10,000-job
            configs
  daemon    the daemon with 1,000 and 10,000 jobs, launched twice: RSS
            once loaded and idle, before any request (idle RSS), and its
            high-water mark (peak RSS); then the time from launch until
            GET /status answers with every job (ready), GET /status latency
            (fresh connection per request) and the RSS after those requests
  lateness  N jobs (5, 50, 200) fire every second for --seconds; each job is
            /bin/date printing the instant its own process runs; lateness is
            that instant minus the scheduled second (median, p95, max), plus
            missed fires and the daemon's own CPU (children excluded);
            --probe static uses a static C stamp instead (STAMP_C in this
            file, built with cc into target/bench-probe), so most of the
            job's own start-up (dynamic linking, locale) is not counted.
            The floor: per size, a bare C spawner (FLOOR_C in this file)
            starts the same processes at each second; the daemon's lateness
            minus the floor's is the scheduler's own (median, p95).

--original creates a virtualenv under target/bench-venv (python3 -m venv,
then pip install cronstable; PyPI is the only network access) unless it
exists; --original-bin uses an installed `cronstable` instead. Every
scenario then runs both implementations back to back, alternating which
goes first, and the tables give ours/original for each metric.

Every loop is bounded in count and time; daemons listen on 127.0.0.1 only
and are stopped with SIGTERM (SIGKILL after 30 s). Generated configs are
block-style YAML, which both implementations accept; their jobs are
scheduled in a month half a year away, so none fires during a measurement.
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")

# SPEC "Performance targets": metric key -> (limit, unit). Lower is better.
# Idle RSS: a base of 6 MB plus 1.5 KB per job. Lateness: only what the
# scheduler adds to the bare spawner's floor has a target.
TARGETS = {
    "version_ms": (2.0, "ms"),
    "validate_10000_ms": (80.0, "ms"),
    "ready_10000_ms": (150.0, "ms"),
    "idle_rss_1000_mb": (7.5, "MB"),
    "idle_rss_10000_mb": (21.0, "MB"),
    "status_10000_ms": (3.0, "ms"),
    "late_200_missed": (0.0, ""),
    "own_5_p95_ms": (0.5, "ms"),
    "own_200_p95_ms": (2.0, "ms"),
}
# The original's numbers as SPEC recorded them on its machine: a reference
# column only (this run measures the original itself with --original).
SPEC_ORIGINAL = {
    "version_ms": 27,
    "validate_10000_ms": 9100,
    "ready_10000_ms": 9600,
    "idle_rss_1000_mb": 54,
    "idle_rss_10000_mb": 122,
    "status_10000_ms": 22.5,
    "late_200_median_ms": 114,
    "late_200_p95_ms": 214,
    "late_5_median_ms": 6.6,
    "late_5_p95_ms": 9,
}


# ---------------------------------------------------------------- helpers


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status_kb(pid, field):
    """A `Vm*` field of /proc/PID/status in kB, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_cpu_seconds(pid):
    """utime + stime of the process itself (all threads, no children)."""
    with open(f"/proc/{pid}/stat") as f:
        # the command name may contain spaces: split after its ')'
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tail(path, lines=10):
    """The last lines of a log file, for an error message."""
    try:
        with open(path, errors="replace") as f:
            return "\n" + "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def stop(proc):
    """SIGTERM, then SIGKILL after 30 s; never leaves the process behind."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def http_get(port, path, timeout=30.0):
    """GET on a fresh connection; returns (status, body bytes, seconds)."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"Accept": "application/json"})
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, body, time.perf_counter() - start
    finally:
        conn.close()


# Python's stdout to a file is block-buffered: the original must print each
# captured line when it has it
DAEMON_ENV = dict(os.environ, PYTHONUNBUFFERED="1")


def wall(argv, timeout=300):
    """Runs argv to completion; returns (seconds, exit code).

    posix_spawn and a plain waitpid keep the harness's own cost small (the
    /bin/true floor row); a watchdog thread, started before the clock,
    bounds the wait."""
    done, child, expired = threading.Event(), [], []

    def watchdog():
        if not done.wait(timeout) and child:
            expired.append(True)
            os.kill(child[0], signal.SIGKILL)

    guard = threading.Thread(target=watchdog, daemon=True)
    guard.start()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        start = time.perf_counter()
        child.append(
            os.posix_spawn(
                argv[0],
                argv,
                os.environ,
                file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
            )
        )
        _, status = os.waitpid(child[0], 0)
        secs = time.perf_counter() - start
    finally:
        os.close(devnull)
        done.set()
        guard.join()
    if expired:
        raise RuntimeError(f"{argv[0]} took longer than {timeout} s")
    return secs, os.waitstatus_to_exitcode(status)


# ---------------------------------------------------------------- configs


def far_month():
    """A month about half a year away: no generated job fires today."""
    return (datetime.date.today().month + 5) % 12 + 1


def idle_config(jobs, port=None):
    """Block-style YAML with `jobs` varied jobs that do not fire soon (and
    draw no lint warnings: every step divides its field)."""
    month = far_month()
    lines = []
    if port is not None:
        lines += ["web:", "  listen:", f"    - http://127.0.0.1:{port}"]
    lines.append("jobs:")
    for i in range(jobs):
        m, h, d = i % 60, i % 24, 1 + i % 28
        schedule = (
            f"{m} {h} {d} {month} *",
            f"{m} {h} * {month} mon-fri",
            f"{m} */{(2, 3, 4, 6, 12)[i % 5]} {d} {month} *",
            f"*/{(5, 10, 15, 20, 30)[i % 5]} {h} {d} {month} *",
        )[i % 4]
        lines += [
            f"  - name: job-{i:05d}",
            f"    command: echo job {i}",
            f'    schedule: "{schedule}"',
        ]
        if i % 10 == 3:
            lines += [
                "    environment:",
                "      - key: JOB_INDEX",
                f'        value: "{i}"',
                "    executionTimeout: 600",
                "    concurrencyPolicy: Forbid",
            ]
        if i % 7 == 2:
            lines.append("    captureStderr: true")
    return "\n".join(lines) + "\n"


def probe_argv(probe, i):
    """The command of lateness job `i`: prints `EPOCH.NANOS i` when run."""
    return [probe, str(i)] if probe != "/bin/date" else ["/bin/date", f"+%s.%N {i}"]


def lateness_config(jobs, probe):
    """`jobs` jobs every second, each printing when its process ran (block
    style throughout: the original refuses flow sequences)."""
    lines = ["jobs:"]
    for i in range(jobs):
        program, arg = probe_argv(probe, i)
        lines += [
            f"  - name: tick-{i:03d}",
            "    command:",
            f"      - {program}",
            f'      - "{arg}"',
            "    captureStdout: true",
            "    streamPrefix: ''",
            "    schedule:",
            "      second: '*'",
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- scenarios


class Impl:
    """One implementation under test: a label and its command."""

    def __init__(self, label, argv):
        self.label = label
        self.argv = argv

    def cmd(self, *args):
        return self.argv + list(args)


def run_version(impl, runs):
    samples = []
    for _ in range(runs):
        secs, rc = wall(impl.cmd("--version"), timeout=60)
        if rc != 0:
            raise RuntimeError(f"{impl.label}: --version exited {rc}")
        samples.append(secs * 1000)
    return {"version_ms": samples}


def run_floor(runs):
    """What launching any process costs this harness (/bin/true)."""
    return {"launch_floor_ms": [wall(["/bin/true"], timeout=10)[0] * 1000 for _ in range(runs)]}


def run_validate(impl, tmp, sizes, runs_small):
    out = {}
    for jobs in sizes:
        path = os.path.join(tmp, f"validate-{jobs}.yaml")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(idle_config(jobs))
        runs = runs_small if jobs <= 1000 else 1
        samples = []
        for _ in range(runs):
            secs, rc = wall(impl.cmd("-c", path, "-v"), timeout=600)
            if rc != 0:
                done = subprocess.run(
                    impl.cmd("-c", path, "-v"), capture_output=True, text=True, timeout=600
                )
                raise RuntimeError(
                    f"{impl.label}: -v on {jobs} jobs exited {rc}\n{done.stderr[-2000:]}"
                )
            samples.append(secs * 1000)
        out[f"validate_{jobs}_ms"] = samples
    return out


def start_daemon(impl, path):
    errors = open(path + ".err", "w")
    proc = subprocess.Popen(
        impl.cmd("-c", path, "-l", "WARNING"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errors,
        env=DAEMON_ENV,
    )
    return proc, errors


def run_daemon(impl, tmp, jobs, status_requests):
    """Two launches on the same config. The first serves no request: once
    the daemon's CPU time stops moving (loaded, idle), its RSS is the idle
    RSS and its high-water mark the load's peak. The second is polled with
    GET /status from the start (ready = the first answer that lists every
    job), then answers `status_requests` more; its RSS after that is the
    RSS of a daemon that has served its API."""
    port = free_port()
    path = os.path.join(tmp, f"daemon-{impl.label}-{jobs}.yaml")
    with open(path, "w") as f:
        f.write(idle_config(jobs, port))

    proc, errors = start_daemon(impl, path)
    try:
        deadline, last, quiet_since = time.time() + 300, None, None
        while True:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(
                    f"{impl.label}: daemon with {jobs} jobs never settled" + tail(path + ".err")
                )
            cpu = proc_cpu_seconds(proc.pid)
            if cpu != last:
                last, quiet_since = cpu, time.time()
            elif time.time() - quiet_since >= 1.0:
                break
            time.sleep(0.1)
        idle_rss = proc_status_kb(proc.pid, "VmRSS")
        peak_rss = proc_status_kb(proc.pid, "VmHWM")
    finally:
        stop(proc)
        errors.close()

    proc, errors = start_daemon(impl, path)
    start = time.perf_counter()
    try:
        ready = None
        deadline = start + 300
        while time.perf_counter() < deadline and proc.poll() is None:
            try:
                status, body, _ = http_get(port, "/status", timeout=60)
            except OSError:
                status, body = None, b""
            if status == 200:
                rows = json.loads(body)
                if not isinstance(rows, list) or len(rows) == jobs:
                    ready = time.perf_counter() - start
                    break
            # poll fast at first, then at about 1% of the time waited
            time.sleep(min(0.05, max(0.002, (time.perf_counter() - start) / 100)))
        if ready is None:
            raise RuntimeError(
                f"{impl.label}: daemon with {jobs} jobs never became ready" + tail(path + ".err")
            )
        latencies = []
        budget = time.perf_counter() + 120
        for _ in range(status_requests):
            if time.perf_counter() > budget:
                break
            status, _, secs = http_get(port, "/status")
            if status != 200:
                raise RuntimeError(f"{impl.label}: GET /status answered {status}")
            latencies.append(secs * 1000)
        served_rss = proc_status_kb(proc.pid, "VmRSS")
    finally:
        stop(proc)
        errors.close()
    return {
        f"ready_{jobs}_ms": [ready * 1000],
        f"idle_rss_{jobs}_mb": [idle_rss / 1024],
        f"peak_rss_{jobs}_mb": [peak_rss / 1024],
        f"served_rss_{jobs}_mb": [served_rss / 1024],
        f"status_{jobs}_ms": [statistics.median(latencies)],
        f"status_{jobs}_p95_ms": [percentile(latencies, 95)],
    }


STATUS_REQUESTS = 30

STAMP = re.compile(r"^(\d+\.\d+) (\d+)$")


def run_lateness(impl, tmp, jobs, seconds, probe):
    cfg = os.path.join(tmp, f"late-{jobs}.yaml")
    with open(cfg, "w") as f:
        f.write(lateness_config(jobs, probe))
    out = os.path.join(tmp, f"stamps-{impl.label}-{jobs}")
    with open(out, "w") as stamps, open(out + ".err", "w") as errors:
        proc = subprocess.Popen(
            impl.cmd("-c", cfg, "-l", "WARNING"),
            stdin=subprocess.DEVNULL,
            stdout=stamps,
            stderr=errors,
            env=DAEMON_ENV,
        )
        try:
            # wait (bounded) for the first fire: the daemon has loaded
            deadline = time.time() + 120
            while os.path.getsize(out) == 0:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(
                        f"{impl.label}: no job fired ({jobs} jobs)" + tail(out + ".err")
                    )
                time.sleep(0.01)
            first = int(time.time())
            # from the next second on: `seconds` full seconds, then a margin
            # for the last fires to print
            time.sleep(first + 1 - time.time())
            cpu0, t0 = proc_cpu_seconds(proc.pid), time.time()
            time.sleep(seconds)
            cpu = (proc_cpu_seconds(proc.pid) - cpu0) / (time.time() - t0) * 100
            time.sleep(1.5)
        finally:
            stop(proc)
    stats = lateness_stats(out, range(first + 1, first + 1 + seconds), jobs, "late")
    stats[f"late_{jobs}_cpu_pct"] = [cpu]
    return stats


def lateness_stats(stamps, window, jobs, key):
    """Median, p95, max lateness and missed fires of the stamps (`EPOCH.NS
    INDEX` lines) whose second lies in `window`."""
    late, per_second = [], {s: 0 for s in window}
    with open(stamps, errors="replace") as f:
        for line in f:
            m = STAMP.match(line.strip())
            if not m:
                continue
            t = float(m.group(1))
            if int(t) in per_second:
                per_second[int(t)] += 1
                late.append((t - int(t)) * 1000)
    if not late:
        raise RuntimeError(f"{key}: no fires recorded in the window ({jobs} jobs)")
    return {
        f"{key}_{jobs}_median_ms": [statistics.median(late)],
        f"{key}_{jobs}_p95_ms": [percentile(late, 95)],
        f"{key}_{jobs}_max_ms": [max(late)],
        f"{key}_{jobs}_missed": [sum(max(0, jobs - n) for n in per_second.values())],
    }


def run_lateness_floor(tmp, jobs, seconds, probe):
    """The floor: FLOOR_C (a tiny C program, built like the probe) sleeps
    to each second boundary with clock_nanosleep and posix_spawns the same
    `jobs` probe commands back to back, each in a process group of its own
    as the daemon does, writing to the stamps file directly. What no
    scheduler on this machine can beat: the cost of starting the
    processes. The daemon's lateness minus this one's is the scheduler's
    own."""
    out = os.path.join(tmp, f"stamps-floor-{jobs}")
    first = int(time.time()) + 1
    with open(out, "w") as stamps:
        subprocess.run(
            [build_c("floor", FLOOR_C), str(first), str(seconds), str(jobs), probe],
            stdin=subprocess.DEVNULL,
            stdout=stamps,
            check=True,
            timeout=seconds + 60,
        )
    return lateness_stats(out, range(first, first + seconds), jobs, "floor")


def own_lateness(results, sizes):
    """The scheduler's own lateness at each size: each run's daemon
    lateness minus the floor's of the same repeat (median and p95)."""
    own = {}
    for n in sizes:
        for q in ("median", "p95"):
            late = results.get(f"late_{n}_{q}_ms", [])
            floor = results.get(f"floor_{n}_{q}_ms", [])
            if late and floor:
                own[f"own_{n}_{q}_ms"] = [a - b for a, b in zip(late, floor)]
    return own


# ---------------------------------------------------------------- report

def metric_rows(daemon_sizes, lateness_sizes):
    """(key, label, unit) of every metric, in display order."""
    rows = [
        ("launch_floor_ms", "reference: /bin/true spawned by this harness", "ms"),
        ("version_ms", "--version", "ms"),
        ("validate_100_ms", "-v, 100 jobs", "ms"),
        ("validate_10000_ms", "-v, 10,000 jobs", "ms"),
    ]
    for n in daemon_sizes:
        rows += [
            (f"ready_{n}_ms", f"daemon ready (GET /status lists every job), {n:,} jobs", "ms"),
            (f"idle_rss_{n}_mb", f"idle RSS, {n:,} jobs", "MB"),
            (f"peak_rss_{n}_mb", f"peak RSS while loading, {n:,} jobs", "MB"),
            (f"served_rss_{n}_mb", f"RSS after {STATUS_REQUESTS + 1}+ GET /status, {n:,} jobs", "MB"),
            (f"status_{n}_ms", f"GET /status JSON, {n:,} jobs: median", "ms"),
            (f"status_{n}_p95_ms", f"GET /status JSON, {n:,} jobs: p95", "ms"),
        ]
    for n in lateness_sizes:
        rows += [
            (f"late_{n}_median_ms", f"lateness, {n} jobs/s: median", "ms"),
            (f"late_{n}_p95_ms", f"lateness, {n} jobs/s: p95", "ms"),
            (f"late_{n}_max_ms", f"lateness, {n} jobs/s: max", "ms"),
            (f"late_{n}_missed", f"lateness, {n} jobs/s: missed fires (all runs)", ""),
            (f"late_{n}_cpu_pct", f"daemon CPU, {n} jobs/s (% of one core)", "%"),
        ]
    for n in lateness_sizes:
        rows += [
            (f"floor_{n}_median_ms", f"floor: a bare C spawner, {n}/s: median", "ms"),
            (f"floor_{n}_p95_ms", f"floor: a bare C spawner, {n}/s: p95", "ms"),
            (f"floor_{n}_max_ms", f"floor: a bare C spawner, {n}/s: max", "ms"),
        ]
    for n in lateness_sizes:
        rows += [
            (f"own_{n}_median_ms", f"scheduler's own lateness (daemon - floor), {n}/s: median", "ms"),
            (f"own_{n}_p95_ms", f"scheduler's own lateness (daemon - floor), {n}/s: p95", "ms"),
        ]
    return rows


def summary(samples, key):
    """Median of the samples; missed fires are summed over the runs."""
    if not samples:
        return None
    return sum(samples) if key.endswith("_missed") else statistics.median(samples)


def fmt(value, unit):
    if value is None:
        return "—"
    if unit == "" or abs(value) >= 100:
        return f"{value:.0f}{(' ' + unit) if unit else ''}"
    if abs(value) >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def table(results, impls, rows_spec):
    ours, orig = impls[0].label, (impls[1].label if len(impls) > 1 else None)
    head = ["metric", "ours"]
    if orig:
        head += ["original", "ours/original"]
    head += ["original (SPEC)", "target", "met?", "runs"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, unit in rows_spec:
        a = results[ours].get(key)
        if not a:
            continue
        va = summary(a, key)
        row = [label, fmt(va, unit)]
        if orig:
            b = results[orig].get(key)
            vb = summary(b, key) if b else None
            ratio = f"{va / vb:.3g}" if vb else "—"
            row += [fmt(vb, unit), ratio]
        row.append(fmt(SPEC_ORIGINAL[key], unit) if key in SPEC_ORIGINAL else "")
        target = TARGETS.get(key)
        if target:
            limit, tunit = target
            row += [
                "none" if key.endswith("_missed") else f"< {fmt(limit, tunit)}",
                "yes" if (va <= limit if key.endswith("_missed") else va < limit) else "**no**",
            ]
        else:
            row += ["", ""]
        row.append(str(len(a)))
        rows.append("| " + " | ".join(row) + " |")
    return "\n".join(rows)


# ---------------------------------------------------------------- main


def original_impl(args):
    if args.original_bin:
        return Impl("original", [args.original_bin])
    venv = os.path.join(ROOT, "target", "bench-venv")
    exe = os.path.join(venv, "bin", "cronstable")
    if not os.path.exists(exe):
        log(f"creating {venv} and installing cronstable from PyPI")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
        subprocess.run(
            [os.path.join(venv, "bin", "pip"), "install", "--quiet", "cronstable>=1.2,<1.3"],
            check=True,
            timeout=900,
        )
    return Impl("original", [exe])


STAMP_C = r"""/* Prints the wall clock as "EPOCH.NANOS ARG\n" first thing: the launch
 * lateness probe. Static, no locale, one write(2). */
#include <time.h>
#include <unistd.h>
#include <string.h>
int main(int argc, char **argv) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char buf[96];
    char *p = buf + sizeof buf;
    const char *tag = argc > 1 ? argv[1] : "0";
    size_t n = strlen(tag);
    if (n > 40) n = 40;
    *--p = '\n';
    p -= n; memcpy(p, tag, n);
    *--p = ' ';
    long ns = ts.tv_nsec;
    for (int i = 0; i < 9; i++) { *--p = '0' + ns % 10; ns /= 10; }
    *--p = '.';
    long s = ts.tv_sec;
    do { *--p = '0' + s % 10; s /= 10; } while (s);
    return write(1, p, buf + sizeof buf - p) < 0;
}
"""


FLOOR_C = r"""/* The lateness floor: argv FIRST SECONDS JOBS PROBE. Sleeps to each
 * second boundary from FIRST on (clock_nanosleep, absolute), spawns JOBS
 * probe commands back to back (each in its own process group), reaps the
 * finished ones, and at the end waits for all. Probe /bin/date runs as
 * `date +%s.%N I`, any other as `PROBE I`. stdout is inherited. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: floor FIRST SECONDS JOBS PROBE\n"); return 2; }
    long first = atol(argv[1]), seconds = atol(argv[2]), jobs = atol(argv[3]);
    const char *probe = argv[4];
    int date = strcmp(probe, "/bin/date") == 0;
    char **args = calloc(jobs, sizeof *args);
    for (long i = 0; i < jobs; i++) {
        args[i] = malloc(32);
        snprintf(args[i], 32, date ? "+%%s.%%N %ld" : "%ld", i);
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    long running = 0;
    for (long s = first; s < first + seconds; s++) {
        struct timespec at = { .tv_sec = s, .tv_nsec = 0 };
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) != 0) {}
        for (long i = 0; i < jobs; i++) {
            char *child_argv[] = { (char *)probe, args[i], NULL };
            pid_t pid;
            if (posix_spawn(&pid, probe, NULL, &attr, child_argv, environ) == 0) running++;
        }
        while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0) running--;
    }
    while (running > 0 && waitpid(-1, NULL, 0) > 0) running--;
    return 0;
}
"""


def build_c(name, source_text, static=False):
    """Compiles `source_text` into target/bench-probe/NAME (once per
    change of the text) and returns the executable's path."""
    folder = os.path.join(ROOT, "target", "bench-probe")
    source, exe = os.path.join(folder, name + ".c"), os.path.join(folder, name)
    os.makedirs(folder, exist_ok=True)
    fresh = False
    if os.path.exists(source) and os.path.exists(exe):
        with open(source) as f:
            fresh = f.read() == source_text
    if not fresh:
        with open(source, "w") as f:
            f.write(source_text)
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise SystemExit(f"the {name} program needs a C compiler (cc)")
        flags = ["-O2"] + (["-static"] if static else [])
        subprocess.run([cc, *flags, "-o", exe, source], check=True, timeout=120)
    return exe


def build_probe():
    """STAMP_C, static and without locale (less start-up than /bin/date)."""
    return build_c("stamp", STAMP_C, static=True)


def version_of(impl):
    done = subprocess.run(impl.cmd("--version"), capture_output=True, text=True, timeout=60)
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else "?"


def git_head():
    try:
        head = subprocess.run(
            ["git", "-C", ROOT, "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return head.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--binary",
        default=os.path.join(ROOT, "target", "release", "cronstable"),
        help="our binary (default target/release/cronstable)",
    )
    ap.add_argument("--original", action="store_true", help="also measure the Python original")
    ap.add_argument("--original-bin", help="the original's `cronstable` (implies --original)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of every scenario (default 3)")
    ap.add_argument(
        "--only",
        default="version,validate,daemon,lateness",
        help="comma-separated scenarios (default all four)",
    )
    ap.add_argument("--seconds", type=int, default=12, help="lateness window (default 12)")
    ap.add_argument("--lateness-jobs", default="5,50,200", help="jobs per second, per run")
    ap.add_argument("--daemon-jobs", default="1000,10000", help="daemon sizes")
    ap.add_argument(
        "--probe",
        choices=("date", "static"),
        default="date",
        help="lateness job: /bin/date (default, as SPEC measured) or a static C stamp",
    )
    ap.add_argument("--quick", action="store_true", help="1 run, 10 s windows")
    ap.add_argument("--json", help="write every sample here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.seconds = 1, 10
    args.repeat = max(1, min(args.repeat, 20))
    args.seconds = max(10, min(args.seconds, 120))
    only = set(args.only.split(","))

    if not os.access(args.binary, os.X_OK):
        print(f"{args.binary} is missing: run `cargo build --release` first", file=sys.stderr)
        return 2
    # measure a snapshot: a rebuild during the run must not swap binaries
    snapshot_dir = tempfile.TemporaryDirectory(prefix="cronstable-bench-bin-")
    binary = os.path.join(snapshot_dir.name, "cronstable")
    shutil.copy2(args.binary, binary)
    impls = [Impl("ours", [binary])]
    if args.original or args.original_bin:
        impls.append(original_impl(args))
    results = {i.label: {} for i in impls}
    versions = {i.label: version_of(i) for i in impls}
    versions["ours"] += f" (tree {git_head()})"

    def add(label, metrics):
        for k, v in metrics.items():
            results[label].setdefault(k, []).extend(v)

    scenarios = []
    if "version" in only:
        scenarios.append(("--version", lambda impl, tmp: run_version(impl, 20)))
    if "validate" in only:
        scenarios.append(("-v", lambda impl, tmp: run_validate(impl, tmp, (100, 10000), 5)))
    for n in [int(x) for x in args.daemon_jobs.split(",")] if "daemon" in only else []:
        scenarios.append((f"daemon {n}", lambda impl, tmp, n=n: run_daemon(impl, tmp, n, STATUS_REQUESTS)))
    probe = "/bin/date"
    if args.probe == "static" and "lateness" in only:
        probe = build_probe()
    daemon_sizes = [int(x) for x in args.daemon_jobs.split(",")] if "daemon" in only else []
    lateness_sizes = [int(x) for x in args.lateness_jobs.split(",")] if "lateness" in only else []
    for n in lateness_sizes:
        scenarios.append(
            (f"lateness {n}", lambda impl, tmp, n=n: run_lateness(impl, tmp, n, args.seconds, probe))
        )

    load_before = os.getloadavg()[0]
    if load_before > 1.0:
        log(f"warning: load average {load_before:.2f}: is something else running?")
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="cronstable-bench-") as tmp:
        for r in range(args.repeat):
            if "version" in only:
                add("ours", run_floor(20))
            for name, scenario in scenarios:
                # A/B, alternating who goes first
                order = impls if r % 2 == 0 else list(reversed(impls))
                for impl in order:
                    log(f"run {r + 1}/{args.repeat}: {name} ({impl.label})")
                    add(impl.label, scenario(impl, tmp))
            for n in lateness_sizes:
                log(f"run {r + 1}/{args.repeat}: floor spawner {n}/s")
                add("ours", run_lateness_floor(tmp, n, min(args.seconds, 10), probe))

    add("ours", own_lateness(results["ours"], lateness_sizes))
    uname = platform.uname()
    header = (
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{uname.system} {uname.release}, {os.cpu_count()} CPUs, "
        f"{args.repeat} run(s), lateness window {args.seconds} s, probe {args.probe}, "
        f"took {time.time() - started:.0f} s, "
        f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after\n"
        + "".join(f"\n- {label}: {v}" for label, v in versions.items())
    )
    snapshot_dir.cleanup()
    text = header + "\n\n" + table(results, impls, metric_rows(daemon_sizes, lateness_sizes)) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "samples": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
