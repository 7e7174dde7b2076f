#!/usr/bin/env python3
"""The web dashboard against many jobs, in headless Chromium.

One daemon (target/debug/cronstable, or --binary) on a generated config of
N idle jobs (default 10,000; the generator of scripts/bench.py), and one
headless Chromium driven through chromedriver's WebDriver API (plain
HTTP, no client library). The page is loaded once, cold (a fresh
profile), and Chromium's own performance timing is read:

  * navigation: the page's response, DOMContentLoaded, load;
  * paint: first paint and first contentful paint (the page's frame,
    before any data);
  * the page's marks: `cronstable:jobs-shown` (the first GET /jobs parsed,
    filtered, sorted and its visible rows built) and
    `cronstable:jobs-painted` (the frame after it);
  * resource timing of GET /jobs: the first answer (size on the wire,
    decoded size, duration), then the polls while nothing changes (304s),
    then the poll after one change of state (a job paused through the API);
  * in the page: filtering, re-sorting and scrolling the 10,000 rows,
    opening the command palette and matching one query over every
    action, and opening the wallboard (performance.now() around the
    calls), and the JS heap.

Nothing is asserted; a Markdown table is printed. Run it on a quiet
machine.

    python3 scripts/dashboard_bench.py [--jobs 10000] [--binary PATH] [--polls 5]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the shared generator and helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class WebDriver:
    """The few WebDriver commands this script needs."""

    def __init__(self, port, chromium, profile):
        self.base = f"http://127.0.0.1:{port}"
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": [
                            "--headless",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--disable-quic",
                            "--no-first-run",
                            "--disable-background-networking",
                            "--disable-component-update",
                            "--disable-sync",
                            "--disable-dev-shm-usage",
                            "--window-size=1400,900",
                            f"--user-data-dir={profile}",
                        ],
                    },
                }
            }
        }
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=300) as res:
            return json.loads(res.read())["value"]

    def goto(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def eval(self, script):
        return self.call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": []})

    def wait(self, script, limit=300):
        start = time.monotonic()
        while time.monotonic() - start < limit:
            value = self.eval(script)
            if value:
                return value
            time.sleep(0.05)
        raise RuntimeError("timed out: " + script)

    def quit(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        except Exception:  # noqa: BLE001 (best effort at exit)
            pass


JOBS_ENTRIES = """
return performance.getEntriesByType('resource')
  .filter(e => new URL(e.name).pathname === '/jobs')
  .map(e => ({status: e.responseStatus, transfer: e.transferSize,
              encoded: e.encodedBodySize, decoded: e.decodedBodySize,
              duration: e.responseEnd - e.startTime}));
"""


def ms(v):
    return f"{v:.0f} ms" if v is not None else "—"


def kb(v):
    return f"{v / 1024:.1f} KiB" if v >= 1024 else f"{v} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "cronstable"))
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    chromedriver = shutil.which("chromedriver")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromedriver or not chromium:
        sys.exit("dashboard_bench: chromium and chromium-driver are required")
    tmp = tempfile.mkdtemp(prefix="dash-bench-")
    port = bench.free_port()
    with open(os.path.join(tmp, "cronstable.yaml"), "w") as f:
        f.write(bench.idle_config(args.jobs, port))
    daemon = subprocess.Popen(
        [args.binary, "-c", "cronstable.yaml"], cwd=tmp,
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "daemon.log"), "w"),
    )
    driver_port = bench.free_port()
    # Its own process group: Chromium joins it, and the group is killed at
    # the end whatever happened.
    driver = subprocess.Popen([chromedriver, f"--port={driver_port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    wd = None
    try:
        start = time.monotonic()
        while True:
            try:
                status, body, _ = bench.http_get(port, "/status", timeout=30)
                if status == 200 and body.count(b'"job"') >= args.jobs:
                    break
            except OSError:
                pass
            if time.monotonic() - start > 600:
                raise RuntimeError("the daemon did not come up")
            time.sleep(0.2)
        # Once more, so the daemon's own first rendering is not the page's.
        bench.http_get(port, "/jobs", timeout=60)
        time.sleep(1)
        wd = WebDriver(driver_port, chromium, os.path.join(tmp, "profile"))
        url = f"http://127.0.0.1:{port}/"
        wd.goto(url)
        wd.wait("return performance.getEntriesByName('cronstable:jobs-painted').length > 0")
        nav = wd.eval("""
const n = performance.getEntriesByType('navigation')[0];
const p = Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime]));
const m = (k) => (performance.getEntriesByName(k)[0] || {}).startTime;
return {response: n.responseEnd, dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd,
        page: n.transferSize, fp: p['first-paint'], fcp: p['first-contentful-paint'],
        shown: m('cronstable:jobs-shown'), painted: m('cronstable:jobs-painted'),
        rows: document.querySelectorAll('.row[data-name]:not([hidden])').length,
        total: CS.jobs.list.length,
        assets: performance.getEntriesByType('resource').filter(e => e.name.includes('/ui/'))
                  .reduce((a, e) => a + e.transferSize, 0)};
""")
        first = wd.eval(JOBS_ENTRIES)
        # Polls with nothing changed (2 s apart).
        time.sleep(2.2 * args.polls)
        quiet = wd.eval(JOBS_ENTRIES)[len(first):]
        # One change of state, then the poll that carries it.
        bench_req = urllib.request.Request(f"http://127.0.0.1:{port}/jobs/job-00001/pause", data=b"", method="POST")
        urllib.request.urlopen(bench_req, timeout=30).read()
        seen = len(first) + len(quiet)
        wd.wait(f"return performance.getEntriesByType('resource').filter(e => new URL(e.name).pathname === '/jobs').length > {seen}", 60)
        time.sleep(0.5)
        changed = wd.eval(JOBS_ENTRIES)[seen:]
        interact = wd.eval("""
const t = (f) => { const s = performance.now(); f(); return performance.now() - s; };
const f = document.getElementById('filter');
const out = {};
out.filter = t(() => { f.value = 'job-0999'; CS.applyView(); });
out.unfilter = t(() => { f.value = ''; CS.applyView(); });
out.sort = t(() => { CS.prefs.sort = 'next'; CS.applyView(); });
const vp = document.getElementById('viewport');
out.scroll = t(() => { vp.scrollTop = 36 * 5000; CS.drawRows(false); });
out.domRows = document.querySelectorAll('.row').length;
out.heap = performance.memory ? performance.memory.usedJSHeapSize : null;
const pi = document.getElementById('palInput');
out.palOpen = t(() => CS.openPalette());
out.palQuery = t(() => { pi.value = 'run job-09999'; pi.dispatchEvent(new Event('input')); });
out.palActions = CS.palette.items.length;
document.getElementById('palette').hidden = true;
out.wall = t(() => CS.wallboard.toggle(true));
out.wallTiles = document.querySelectorAll('#wbGrid .wb-tile:not([hidden])').length;
CS.wallboard.toggle(false);
return out;
""")
    finally:
        if wd:
            wd.quit()
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        driver.wait()
        bench.stop(daemon)
    print(f"## Dashboard, {args.jobs:,} jobs ({os.path.basename(os.path.dirname(os.path.abspath(args.binary)))} daemon, headless Chromium)\n")
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| page (HTML) response end | {ms(nav['response'])} |")
    print(f"| first paint / first contentful paint | {ms(nav['fp'])} / {ms(nav['fcp'])} |")
    print(f"| DOMContentLoaded / load | {ms(nav['dcl'])} / {ms(nav['load'])} |")
    print(f"| page + scripts + style sheet on the wire (cold) | {kb(nav['page'] + nav['assets'])} |")
    if first:
        j = first[0]
        print(f"| first GET /jobs: wire / decoded / duration | {kb(j['transfer'])} / {kb(j['decoded'])} / {ms(j['duration'])} |")
    print(f"| jobs in the DOM (after parse, sort, rows built) | {ms(nav['shown'])} |")
    print(f"| jobs painted | {ms(nav['painted'])} |")
    print(f"| rows in the DOM for {nav['total']:,} jobs | {interact['domRows']} |")
    if quiet:
        sizes = sorted(e["transfer"] for e in quiet)
        durs = sorted(e["duration"] for e in quiet)
        statuses = sorted({e["status"] for e in quiet})
        print(f"| poll, nothing changed ({len(quiet)} polls, status {statuses}): bytes / duration (median) | {kb(sizes[len(sizes) // 2])} / {ms(durs[len(durs) // 2])} |")
    if changed:
        c = changed[0]
        print(f"| poll after one change (status {c['status']}): wire / decoded / duration | {kb(c['transfer'])} / {kb(c['decoded'])} / {ms(c['duration'])} |")
    print(f"| filter to one job / clear the filter | {ms(interact['filter'])} / {ms(interact['unfilter'])} |")
    print(f"| re-sort {nav['total']:,} jobs by next run | {ms(interact['sort'])} |")
    print(f"| jump-scroll to row 5,000 and redraw | {ms(interact['scroll'])} |")
    print(f"| command palette: open ({interact['palActions']:,} actions) / one query | {ms(interact['palOpen'])} / {ms(interact['palQuery'])} |")
    print(f"| wallboard: open and lay out ({interact['wallTiles']} tiles in sight) | {ms(interact['wall'])} |")
    if interact.get("heap"):
        print(f"| JS heap | {interact['heap'] / 1048576:.1f} MiB |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
