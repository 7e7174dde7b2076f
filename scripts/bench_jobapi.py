#!/usr/bin/env python3
"""Round-trip latency of the loopback job endpoint (`state.jobApi`).

Starts the daemon on a fresh store with one job that fires once. The job
is this script again (`--inner`): inside the run it reads
CRONSTABLE_STATE_URL and CRONSTABLE_STATE_TOKEN, as any job would, and
times

- raw HTTP calls on one kept-alive connection: `kv/set`, `kv/get`,
  `cursor/advance`, `idempotency/claim`, and a `lock/acquire` followed by
  its `lock/release` (each call timed on its own);
- whole client commands, process start included: `cronstable state get`
  and `cronstable lock acquire` + `lock release`.

It writes the samples to a file the outer run reads, and prints a table
of median and p95 per operation.

    python3 scripts/bench_jobapi.py [--binary target/release/cronstable]
        [--daemon PATH] [--calls 500] [--commands 50] [--markdown FILE]

`--binary` is the client the job runs (and the daemon, unless `--daemon`
names another one, such as the original's `cronstable`).
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pct(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def inner(out_path, binary, calls, commands):
    url = urllib.parse.urlsplit(os.environ["CRONSTABLE_STATE_URL"])
    token = os.environ["CRONSTABLE_STATE_TOKEN"]
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(method, path, body=None):
        start = time.perf_counter()
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        data = response.read()
        took = time.perf_counter() - start
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: {response.status} {data!r}")
        return took, json.loads(data) if data[:1] == b"{" else data

    samples = {}

    def add(name, seconds):
        samples.setdefault(name, []).append(seconds * 1000)

    for i in range(calls):
        add("HTTP kv/set", call("POST", "/v1/kv/set", {"key": f"k{i % 50}", "value": {"n": i}})[0])
        add("HTTP kv/get", call("GET", f"/v1/kv/get?key=k{i % 50}")[0])
        add("HTTP cursor/advance", call("POST", "/v1/cursor/advance", {"name": "c", "value": i})[0])
        add("HTTP idempotency/claim", call("POST", "/v1/idempotency/claim", {"key": f"i{i}", "ttl": 60})[0])
        took, held = call("POST", "/v1/lock/acquire", {"name": "l"})
        add("HTTP lock/acquire", took)
        add("HTTP lock/release", call("POST", "/v1/lock/release", {"token": held["token"]})[0])
    subprocess.run([binary, "state", "set", "greeting", "hello"], check=True, stdout=subprocess.DEVNULL)
    for _ in range(commands):
        start = time.perf_counter()
        subprocess.run([binary, "state", "get", "greeting"], check=True, stdout=subprocess.DEVNULL)
        add("command state get", time.perf_counter() - start)
        start = time.perf_counter()
        hold = subprocess.run([binary, "lock", "acquire", "m"], check=True, capture_output=True, text=True)
        subprocess.run([binary, "lock", "release", hold.stdout.strip()], check=True)
        add("command lock acquire + release", time.perf_counter() - start)
    with open(out_path + ".part", "w") as f:
        json.dump(samples, f)
    os.replace(out_path + ".part", out_path)


def outer(args):
    binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory(prefix="cronstable-bench-jobapi-") as tmp:
        out = os.path.join(tmp, "samples.json")
        script = os.path.abspath(__file__)
        command = (
            f"{sys.executable} {script} --inner {out} --binary {binary} "
            f"--calls {args.calls} --commands {args.commands}"
        )
        fire = time.gmtime(time.time() + 3)
        schedule = time.strftime("%S %M %H %d %m * %Y", fire)
        config = os.path.join(tmp, "bench.yaml")
        with open(config, "w") as f:
            f.write(
                f"state:\n  path: {tmp}/store\njobs:\n  - name: bench\n"
                f"    schedule: '{schedule}'\n    timezone: UTC\n"
                f"    command: {json.dumps(command)}\n    captureStderr: true\n"
            )
        daemon = subprocess.Popen(
            [os.path.abspath(args.daemon or binary), "-c", config, "-l", "WARNING"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.time() + 600
            while not os.path.exists(out):
                if daemon.poll() is not None or time.time() > deadline:
                    raise RuntimeError("the benchmark job did not finish: " + (daemon.stderr.read() if daemon.poll() is not None else "timeout"))
                time.sleep(0.2)
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
        with open(out) as f:
            samples = json.load(f)
    rows = ["| operation | calls | median | p95 |", "| --- | --- | --- | --- |"]
    for name, values in samples.items():
        rows.append(
            f"| {name} | {len(values)} | {statistics.median(values):.2f} ms | {pct(values, 0.95):.2f} ms |"
        )
    text = "\n".join(rows)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "cronstable"))
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--daemon", help="the daemon to measure (default: --binary; the original's entry point works too)")
    parser.add_argument("--inner")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if args.inner:
        inner(args.inner, os.path.abspath(args.binary), args.calls, args.commands)
    else:
        outer(args)


if __name__ == "__main__":
    main()
