#!/usr/bin/env python3
"""What one posix_spawn costs its caller, and what makes it cost more.

The launch-lateness gap at 200 jobs/s (docs/performance.md, "Launch
lateness") is the daemon spending longer per spawn than the bare floor
spawner. This script times one spawn inside a small C program
(`clock_gettime` around each `posix_spawn`, no tracer) while changing one
thing at a time towards what the daemon does: extra close-on-exec
descriptors (the daemon holds a pidfd and pipe ends per running job), an
extra idle thread (the daemon's API thread), the daemon's spawn flags
(a new session, an empty signal mask, SIGPIPE at default) and its file
actions (stdin from /dev/null, a pipe on stdout).

    python3 scripts/spawn_cost.py [--rounds 3] [--jobs 200] [--seconds 2]
    python3 scripts/spawn_cost.py --daemon target/release/cronstable

With --daemon it also runs the daemon on the lateness workload and
reports the most descriptors it held during the bursts (sampled from
/proc every 2 ms). Needs a C compiler; prints a Markdown table.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the probe, the C builder, the lateness config)

SPAWN_COST_C = r"""/* argv FIRST SECONDS JOBS PROBE EXTRA_FDS THREADS FLAGS ACTIONS.
 * At each second from FIRST on, spawns JOBS probes and prints to stderr
 * the nanoseconds each posix_spawn call took. FLAGS 0: a process group
 * (the floor's), 1: the daemon's (SETSID|SETSIGMASK|SETSIGDEF with
 * SIGPIPE), 2: SETSID alone, 3: SETSIGMASK alone, 4: SETSIGDEF alone.
 * ACTIONS 1: stdin from /dev/null and a fresh pipe on stdout. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static void *idle(void *arg) { (void)arg; for (;;) pause(); return NULL; }
int main(int argc, char **argv) {
    if (argc != 9) { fprintf(stderr, "usage: see scripts/spawn_cost.py\n"); return 2; }
    long first = atol(argv[1]), seconds = atol(argv[2]), jobs = atol(argv[3]);
    const char *probe = argv[4];
    int extra = atoi(argv[5]), threads = atoi(argv[6]), flags = atoi(argv[7]);
    int actions = atoi(argv[8]);
    for (int k = 0; k < extra; k += 2) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) { perror("pipe2"); return 1; }
    }
    for (int k = 0; k < threads; k++) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) != 0) { perror("pthread_create"); return 1; }
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, pipe_only;
    sigemptyset(&none);
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    short set = 0;
    if (flags == 0) { set = POSIX_SPAWN_SETPGROUP; posix_spawnattr_setpgroup(&attr, 0); }
    if (flags == 1 || flags == 2) set |= POSIX_SPAWN_SETSID;
    if (flags == 1 || flags == 3) set |= POSIX_SPAWN_SETSIGMASK;
    if (flags == 1 || flags == 4) set |= POSIX_SPAWN_SETSIGDEF;
    posix_spawnattr_setflags(&attr, set);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe_only);
    long running = 0;
    for (long s = first; s < first + seconds; s++) {
        struct timespec at = { .tv_sec = s, .tv_nsec = 0 };
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) != 0) {}
        for (long i = 0; i < jobs; i++) {
            char tag[32];
            snprintf(tag, sizeof tag, "%ld", i);
            char *child_argv[] = { (char *)probe, tag, NULL };
            posix_spawn_file_actions_t fa;
            posix_spawn_file_actions_init(&fa);
            int out[2] = { -1, -1 };
            if (actions) {
                if (pipe2(out, O_CLOEXEC) != 0) { perror("pipe2"); return 1; }
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
                posix_spawn_file_actions_adddup2(&fa, out[1], 1);
            }
            struct timespec t0, t1;
            pid_t pid;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            int rc = posix_spawn(&pid, probe, &fa, &attr, child_argv, environ);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (rc == 0) running++;
            fprintf(stderr, "%ld\n", (t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec);
            posix_spawn_file_actions_destroy(&fa);
            if (out[0] >= 0) { close(out[0]); close(out[1]); }
        }
        while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0) running--;
    }
    while (running > 0 && waitpid(-1, NULL, 0) > 0) running--;
    return 0;
}
"""

# (label, extra descriptors, extra threads, flags, file actions)
VARIANTS = [
    ("floor: a process group", 0, 0, 0, 0),
    ("+ 600 close-on-exec descriptors", 600, 0, 0, 0),
    ("+ one idle thread", 0, 1, 0, 0),
    ("SETSID alone", 0, 0, 2, 0),
    ("SETSIGMASK alone", 0, 0, 3, 0),
    ("SETSIGDEF (SIGPIPE) alone", 0, 0, 4, 0),
    ("the daemon's three flags", 0, 0, 1, 0),
    ("the daemon's flags and file actions", 0, 0, 1, 1),
    ("all of it: flags, actions, 600 descriptors, a thread", 600, 1, 1, 1),
]


def time_variant(exe, probe, jobs, seconds, variant):
    """Per-spawn times in microseconds of one run of `variant`."""
    _, extra, threads, flags, actions = variant
    first = int(time.time()) + 1
    args = [exe, str(first), str(seconds), str(jobs), probe, str(extra), str(threads)]
    done = subprocess.run(
        args + [str(flags), str(actions)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    return [int(line) / 1000 for line in done.stderr.splitlines()]


def daemon_descriptors(binary, probe, jobs, seconds):
    """The most descriptors `binary` holds while running `jobs` probe jobs a
    second, and how many between bursts (the median sample)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "late.yaml")
        with open(cfg, "w") as f:
            f.write(bench.lateness_config(jobs, probe))
        with open(os.path.join(tmp, "stamps"), "w") as stamps:
            proc = subprocess.Popen(
                [binary, "-c", cfg, "-l", "WARNING"],
                stdin=subprocess.DEVNULL,
                stdout=stamps,
                stderr=subprocess.DEVNULL,
            )
            try:
                time.sleep(2)
                counts, end = [], time.time() + seconds
                while time.time() < end:
                    try:
                        counts.append(len(os.listdir(f"/proc/{proc.pid}/fd")))
                    except OSError:
                        pass
                    time.sleep(0.002)
            finally:
                bench.stop(proc)
    if not counts:
        raise SystemExit(f"{binary}: could not read /proc/{proc.pid}/fd")
    return max(counts), statistics.median(counts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=200, help="spawns a second")
    parser.add_argument("--seconds", type=int, default=2, help="seconds a round")
    parser.add_argument("--daemon", help="a cronstable binary: count its descriptors too")
    args = parser.parse_args()
    if min(args.rounds, args.jobs, args.seconds) < 1:
        parser.error("--rounds, --jobs and --seconds must be at least 1")
    probe = bench.build_probe()
    exe = bench.build_c("spawn_cost", SPAWN_COST_C)
    medians = {v[0]: [] for v in VARIANTS}
    p95s = {v[0]: [] for v in VARIANTS}
    for r in range(args.rounds):
        for variant in VARIANTS:
            bench.log(f"round {r + 1}/{args.rounds}: {variant[0]}")
            times = time_variant(exe, probe, args.jobs, args.seconds, variant)
            medians[variant[0]].append(statistics.median(times))
            p95s[variant[0]].append(bench.percentile(times, 95))
    print(f"| one posix_spawn, {args.jobs}/s, {args.rounds} rounds | median µs | p95 µs |")
    print("|---|---|---|")
    for label, *_ in VARIANTS:
        m, p = medians[label], p95s[label]
        print(f"| {label} | {min(m):.0f}–{max(m):.0f} | {min(p):.0f}–{max(p):.0f} |")
    if args.daemon:
        most, typical = daemon_descriptors(args.daemon, probe, args.jobs, 5)
        print(f"\n{args.daemon} at {args.jobs} jobs/s: at most {most} descriptors open, "
              f"{typical:.0f} at the median sample")


if __name__ == "__main__":
    main()
