#!/usr/bin/env python3
"""The HTTP API with many jobs, and whether serving it delays launches.

One daemon (the release binary, or the original with --original) on a
generated config of N idle jobs (default 10,000; the generator of
scripts/bench.py) plus one probe job firing every second that appends the
instant it ran (`date +%s.%N`) to a file. Measured:

  * GET /status (JSON), /jobs and /metrics: the first request after start
    (cold) and then repeated requests (median and p95), each on a fresh
    connection, timed to the last byte of the body;
  * beside the repeated /jobs and /metrics rows, a transfer floor: the
    same client fetching a body of the same size from a static server (a
    separate process holding it ready), which a repeat cannot beat;
  * GET /status in its text form (no Accept header), repeated;
  * GET /jobs and /metrics right after a change of state (one job paused
    or resumed through the API before each request: a fresh rendering,
    the cold build), each followed by a repeat;
  * the probe's launch lateness (the instant `date` ran minus the
    scheduled second) for a window with nobody polling, then for the same
    window with two clients polling /metrics and /jobs back to back.

Nothing is asserted; the numbers are printed as a Markdown table. Run it
on a quiet machine: another build on a 2-core machine moves every number.

    python3 scripts/bench_api.py [--jobs 10000] [--seconds 20] [--original]
"""

import argparse
import http.client
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the shared generator and helpers)


def config_text(jobs, port, probe_file):
    text = bench.idle_config(jobs, port)
    # The probe: every second, through the shell, as a user's job would.
    return text + (
        "  - name: probe\n"
        f'    command: "date +%s.%N >> {probe_file}"\n'
        "    schedule:\n"
        "      second: '*'\n"
    )


def wait_ready(port, jobs, proc, deadline_s=600):
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        if proc.poll() is not None:
            raise RuntimeError("the daemon exited before it was ready")
        try:
            status, body, _ = bench.http_get(port, "/status", timeout=30)
            if status == 200 and body.count(b'"job"') >= jobs + 1:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("the daemon was not ready in time")


def http_request(port, method, path, accept=None):
    """One request on a fresh connection; returns (status, body, seconds).
    Like bench.http_get, but with the Accept header chosen (None: none)."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"Accept": accept} if accept else {}
        body = b"" if method == "POST" else None
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data, time.perf_counter() - start
    finally:
        conn.close()


def timed_text_status(port, count):
    """GET /status without an Accept header (the text form), repeated."""
    out = []
    for _ in range(count):
        status, body, secs = http_request(port, "GET", "/status")
        if status != 200 or body.startswith(b"["):
            raise RuntimeError(f"GET /status (text): {status}")
        out.append(secs * 1000)
    return out


def median_p95(values):
    return f"median {bench.percentile(values, 50):.1f} ms, p95 {bench.percentile(values, 95):.1f} ms"


def timed(port, path, count):
    cold = None
    repeats = []
    for i in range(count + 1):
        status, body, secs = bench.http_get(port, path, timeout=120)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status}")
        if i == 0:
            cold = (secs * 1000, len(body))
        else:
            repeats.append(secs * 1000)
    return cold, repeats


def http_post(port, path):
    """POST with an empty body on a fresh connection; returns the status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=b"")
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def after_change(port, path, count):
    """`path` fetched right after pausing or resuming one job (count
    times), and again right after that; returns both lists of ms."""
    changed, repeated = [], []
    for i in range(count):
        action = "pause" if i % 2 == 0 else "resume"
        status = http_post(port, f"/jobs/job-00000/{action}")
        if status != 200:
            raise RuntimeError(f"POST {action}: {status}")
        for out in (changed, repeated):
            status, _, secs = bench.http_get(port, path, timeout=120)
            if status != 200:
                raise RuntimeError(f"GET {path}: {status}")
            out.append(secs * 1000)
    return changed, repeated


def probe_lateness(probe_file, since, until):
    """Lateness in ms of each probe run scheduled in [since, until)."""
    out = []
    try:
        with open(probe_file) as f:
            for line in f:
                try:
                    ran = float(line.split()[0])
                except (ValueError, IndexError):
                    continue
                second = int(ran)
                if since <= second < until:
                    out.append((ran - second) * 1000)
    except OSError:
        pass
    return out


def poll_loop(port, path, stop, counter):
    while not stop.is_set():
        try:
            bench.http_get(port, path, timeout=120)
            counter[0] += 1
        except OSError:
            time.sleep(0.01)


def window(probe_file, seconds, pollers, port):
    stop = threading.Event()
    counts = {}
    threads = []
    for path in pollers:
        counts[path] = [0]
        t = threading.Thread(target=poll_loop, args=(port, path, stop, counts[path]))
        t.start()
        threads.append(t)
    # Whole seconds only, starting at the next boundary.
    begin = int(time.time()) + 1
    time.sleep(begin + seconds - time.time() + 1.5)
    stop.set()
    for t in threads:
        t.join()
    return probe_lateness(probe_file, begin, begin + seconds), counts


STATIC_SERVER = r"""
import socket, sys
size, port = int(sys.argv[1]), int(sys.argv[2])
body = b"x" * size
head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    request = b""
    while b"\r\n\r\n" not in request:
        chunk = conn.recv(65536)
        if not chunk:
            break
        request += chunk
    conn.sendall(head + body)
    conn.close()
"""


def transfer_floor(size, repeats):
    """GET of a body of `size` bytes, same client, from a server that holds
    it ready and does nothing else (a separate Python process writing it
    with one sendall): what the client alone takes to read that many bytes
    over loopback. A repeated answer of ours cannot be faster than this."""
    port = bench.free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", STATIC_SERVER, str(size), str(port)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        server.stdout.readline()
        _, rep = timed(port, "/", repeats)
        return rep
    finally:
        server.kill()
        server.wait()


def stats(values):
    if not values:
        return "n/a"
    return (
        f"median {bench.percentile(values, 50):.1f} ms, p95 {bench.percentile(values, 95):.1f} ms, "
        f"max {max(values):.1f} ms ({len(values)} runs)"
    )


def run(impl, jobs, seconds, repeats):
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        port = bench.free_port()
        probe_file = os.path.join(tmp, "probe")
        path = os.path.join(tmp, "config.yaml")
        with open(path, "w") as f:
            f.write(config_text(jobs, port, probe_file))
        proc, errors = bench.start_daemon(impl, path)
        try:
            ready = wait_ready(port, jobs, proc)
            rows = [("ready (first full /status)", f"{ready * 1000:.0f} ms")]
            for route in ("/status", "/jobs", "/metrics"):
                cold, rep = timed(port, route, repeats)
                rows.append((f"GET {route} first ({cold[1] / 1e6:.1f} MB)", f"{cold[0]:.1f} ms"))
                rows.append((f"GET {route} repeated", median_p95(rep)))
                if route != "/status":
                    floor = transfer_floor(cold[1], repeats)
                    rows.append(
                        (f"  transfer floor: {cold[1] / 1e6:.1f} MB from a static server", median_p95(floor))
                    )
            rows.append(("GET /status text form repeated", median_p95(timed_text_status(port, repeats))))
            for route in ("/jobs", "/metrics"):
                changed, again = after_change(port, route, repeats)
                for what, values in (("after a change", changed), ("right after that", again)):
                    rows.append((f"GET {route} {what}", median_p95(values)))
            idle, _ = window(probe_file, seconds, [], port)
            busy, counts = window(probe_file, seconds, ["/metrics", "/jobs"], port)
            rows.append(("probe lateness, nobody polling", stats(idle)))
            rows.append(
                (
                    "probe lateness, /metrics and /jobs polled back to back",
                    stats(busy)
                    + f"; {counts['/metrics'][0]} /metrics and {counts['/jobs'][0]} /jobs served",
                )
            )
            return rows
        finally:
            bench.stop(proc)
            errors.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--original", action="store_true", help="measure the original too")
    parser.add_argument("--original-bin", help="an installed original's cronstable")
    parser.add_argument("--binary", default="target/release/cronstable")
    args = parser.parse_args()
    impls = [bench.Impl("cronstable (Rust)", [os.path.abspath(args.binary)])]
    if args.original or args.original_bin:
        impls.append(bench.original_impl(args))
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f}; {args.jobs} jobs; windows of {args.seconds} s\n")
    for impl in impls:
        print(f"| {impl.label} | value |\n|---|---|")
        for what, value in run(impl, args.jobs, args.seconds, args.repeats):
            print(f"| {what} | {value} |")
        print()


if __name__ == "__main__":
    main()
