#!/usr/bin/env python3
"""How much CPU a launch may cost before it shows in launch lateness.

At 200 jobs a second on a 2-core machine the burst after each second
boundary is CPU-bound: the jobs' own start-up (exec, the dynamic loader)
fills both cores while the launcher is still spawning. Any CPU the
launcher spends per launch, on whichever thread, delays the jobs. This
script measures that budget with one small C spawner run in variants:

- bare: posix_spawn with the daemon's flags (a new session, an empty
  signal mask, SIGPIPE at default), stdout inherited;
- capture: the same, plus what the daemon's capture needs: stdin from
  /dev/null, a pipe each for stdout and stderr, both read ends made
  non-blocking and registered with epoll, the output relayed to stdout;
- work N: bare, plus N microseconds of CPU burned after each spawn, on the
  spawning thread ("inline") or handed to a second thread ("thread").

With --binary it also runs the daemon on the same workload (the lateness
config of scripts/bench.py) and reports the CPU its threads spent per
launch (from /proc/PID/task/*/schedstat), beside the spawner's own
(getrusage). Rounds alternate the variants; the table shows medians.

    python3 scripts/lateness_budget.py [--rounds 3] [--seconds 6] [--jobs 200]
        [--work 20,40,60] [--binary target/release/cronstable]

About (2 + variants) x rounds x (seconds + 2) seconds. Needs a C compiler.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the C builder, the lateness config and stats)

SPAWNER_C = r"""/* argv FIRST SECONDS JOBS PROBE CAPTURE WORK_US THREADED.
 * At each second from FIRST on, spawns JOBS probe commands back to back
 * with the daemon's spawn flags. CAPTURE 1: stdin from /dev/null, stdout
 * and stderr on pipes read through epoll and relayed to stdout. WORK_US:
 * CPU burned per spawn, inline or (THREADED 1) on a second thread. At the
 * end prints to stderr "cpu_us TOTAL" (this process, not its children). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static long work_us;
static atomic_long pending;
static sem_t work_ready;
static int ep;
static long open_pipes;
static long thread_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}
static void burn(long us) { long end = thread_us() + us; while (thread_us() < end) {} }
static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        while (sem_wait(&work_ready) != 0) {}
        burn(work_us);
        atomic_fetch_sub(&pending, 1);
    }
    return NULL;
}
static void drain(int wait_ms) {
    struct epoll_event ev[64];
    int n = epoll_wait(ep, ev, 64, wait_ms);
    for (int k = 0; k < n; k++) {
        int fd = ev[k].data.fd & 0xffffff, relay = ev[k].data.fd >> 24;
        char buf[4096];
        for (;;) {
            ssize_t r = read(fd, buf, sizeof buf);
            if (r > 0) { if (relay && write(1, buf, r) < 0) {} continue; }
            if (r == 0) { epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL); close(fd); open_pipes--; }
            break;
        }
    }
}
static void watch(int fd, int relay) {
    fcntl(fd, F_SETFL, O_NONBLOCK);
    struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP };
    e.data.fd = fd | (relay << 24);
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    open_pipes++;
}
int main(int argc, char **argv) {
    if (argc != 8) { fprintf(stderr, "usage: see scripts/lateness_budget.py\n"); return 2; }
    long first = atol(argv[1]), seconds = atol(argv[2]), jobs = atol(argv[3]);
    const char *probe = argv[4];
    int capture = atoi(argv[5]), threaded = atoi(argv[7]);
    work_us = atol(argv[6]);
    int date = strcmp(probe, "/bin/date") == 0;
    char **args = calloc(jobs, sizeof *args);
    for (long i = 0; i < jobs; i++) {
        args[i] = malloc(32);
        snprintf(args[i], 32, date ? "+%%s.%%N %ld" : "%ld", i);
    }
    sem_init(&work_ready, 0, 0);
    if (threaded && work_us > 0) { pthread_t t; pthread_create(&t, NULL, worker, NULL); }
    ep = epoll_create1(EPOLL_CLOEXEC);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, pipe_only;
    sigemptyset(&none);
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &pipe_only);
    long running = 0;
    for (long s = first; s < first + seconds; s++) {
        struct timespec at = { .tv_sec = s, .tv_nsec = 0 };
        for (;;) {  /* relay output until just before the boundary */
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            long ms = (at.tv_sec - now.tv_sec) * 1000 + (at.tv_nsec - now.tv_nsec) / 1000000;
            if (ms <= 2) break;
            drain((int)(ms - 2));
            while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0) running--;
        }
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) != 0) {}
        for (long i = 0; i < jobs; i++) {
            char *child_argv[] = { (char *)probe, args[i], NULL };
            posix_spawn_file_actions_t fa;
            posix_spawn_file_actions_init(&fa);
            int out[2] = { -1, -1 }, err[2] = { -1, -1 };
            if (capture) {
                if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) { perror("pipe2"); return 1; }
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
                posix_spawn_file_actions_adddup2(&fa, out[1], 1);
                posix_spawn_file_actions_adddup2(&fa, err[1], 2);
            }
            pid_t pid;
            if (posix_spawn(&pid, probe, &fa, &attr, child_argv, environ) == 0) running++;
            posix_spawn_file_actions_destroy(&fa);
            if (capture) { close(out[1]); close(err[1]); watch(out[0], 1); watch(err[0], 0); }
            if (work_us > 0) { if (threaded) { atomic_fetch_add(&pending, 1); sem_post(&work_ready); } else burn(work_us); }
        }
        while (running > 0 && waitpid(-1, NULL, WNOHANG) > 0) running--;
    }
    while (open_pipes > 0) drain(100);
    while (running > 0 && waitpid(-1, NULL, 0) > 0) running--;
    while (atomic_load(&pending) > 0) { struct timespec t = { 0, 1000000 }; nanosleep(&t, NULL); }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr, "cpu_us %ld\n", ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec
            + ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec);
    return 0;
}
"""


def run_spawner(exe, tmp, jobs, seconds, capture, work_us, threaded):
    """Lateness stats and the spawner's CPU per launch of one variant."""
    out = os.path.join(tmp, "stamps-spawner")
    first = int(time.time()) + 1
    with open(out, "w") as stamps:
        done = subprocess.run(
            [exe, str(first), str(seconds), str(jobs), "/bin/date",
             str(capture), str(work_us), str(threaded)],
            stdin=subprocess.DEVNULL,
            stdout=stamps,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
            timeout=seconds + 60,
        )
    cpu = [l.split()[1] for l in done.stderr.splitlines() if l.startswith("cpu_us ")]
    if not cpu:
        raise SystemExit(f"{exe}: no cpu_us line on stderr:\n{done.stderr[-2000:]}")
    cpu_us = int(cpu[-1])
    stats = bench.lateness_stats(out, range(first, first + seconds), jobs, "x")
    return stats, cpu_us / (jobs * seconds)


def thread_cpu_ns(pid):
    """On-CPU nanoseconds of every thread of `pid` (schedstat, field 1)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def run_daemon(binary, tmp, jobs, seconds):
    """Lateness stats of the daemon and the CPU its threads spent per launch
    over the same window (its jobs' CPU is theirs, as for the spawner)."""
    impl = bench.Impl("daemon", [binary])
    cfg = os.path.join(tmp, "late.yaml")
    with open(cfg, "w") as f:
        f.write(bench.lateness_config(jobs, "/bin/date"))
    out = os.path.join(tmp, "stamps-daemon")
    with open(out, "w") as stamps:
        proc = subprocess.Popen(
            impl.cmd("-c", cfg, "-l", "WARNING"),
            stdin=subprocess.DEVNULL,
            stdout=stamps,
            stderr=subprocess.DEVNULL,
            env=bench.DAEMON_ENV,
        )
        try:
            deadline = time.time() + 60
            while os.path.getsize(out) == 0:
                if time.time() > deadline or proc.poll() is not None:
                    raise SystemExit(f"{binary}: no job fired")
                time.sleep(0.01)
            # the window starts at a boundary at least 0.8 s away, its CPU
            # reading 0.2 s before it (never a negative sleep)
            first = int(time.time()) + 2
            time.sleep(first - time.time() - 0.2)
            cpu0 = thread_cpu_ns(proc.pid)
            time.sleep(seconds)
            cpu = thread_cpu_ns(proc.pid) - cpu0
            time.sleep(1.5)
        finally:
            bench.stop(proc)
    stats = bench.lateness_stats(out, range(first, first + seconds), jobs, "x")
    return stats, cpu / 1000 / (jobs * seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=200, help="launches a second")
    parser.add_argument("--work", default="20,40,60", help="µs of CPU added per launch")
    parser.add_argument("--binary", help="a cronstable binary to run on the same workload")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    exe = bench.build_c("lateness_budget", SPAWNER_C)
    variants = [("bare", 0, 0, 0), ("capture", 1, 0, 0)]
    for w in (int(x) for x in args.work.split(",") if x):
        variants += [(f"bare + {w} µs inline", 0, w, 0), (f"bare + {w} µs on a thread", 0, w, 1)]
    rows = {name: [] for name, *_ in variants}
    if args.binary:
        rows["daemon"] = []
    n = args.jobs
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = variants if r % 2 == 0 else list(reversed(variants))
            for name, capture, work, threaded in order:
                print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                rows[name].append(run_spawner(exe, tmp, n, args.seconds, capture, work, threaded))
            if args.binary:
                print(f"round {r + 1}/{args.rounds}: daemon", file=sys.stderr, flush=True)
                rows["daemon"].append(run_daemon(args.binary, tmp, n, args.seconds))

    def med(samples, key):
        return statistics.median(s[0][f"x_{n}_{key}_ms"][0] for s in samples)

    base_p95 = med(rows["bare"], "p95")
    print(f"{n} launches a second of /bin/date, {args.seconds} s windows, "
          f"medians of {args.rounds} rounds, load average before: {load_before:.2f}\n")
    print("| launcher | lateness median | p95 | p95 minus bare | launcher CPU per launch |")
    print("| --- | --- | --- | --- | --- |")
    for name, samples in rows.items():
        cpu = statistics.median(s[1] for s in samples)
        m, p = med(samples, "median"), med(samples, "p95")
        delta = "—" if name == "bare" else f"{p - base_p95:+.1f} ms"
        print(f"| {name} | {m:.1f} ms | {p:.1f} ms | {delta} | {cpu:.0f} µs |")


if __name__ == "__main__":
    main()
