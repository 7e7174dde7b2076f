#!/usr/bin/env python3
"""Records the original daemon's iCalendar feeds for fixed fleets.

Run with the original's interpreter (scripts/test.sh installs it):

    ~/.cache/cronstable-tools/original-venv/bin/python3 scripts/ics_goldens.py \
        > tests/fixtures/ics_golden.json

Each scenario names its fleet (job name, expression, clock, mean run time
or null), the window, the DTSTAMP instant and the version written in
PRODID, and the exact text the original's renderer produced.
src/cronexpr/ics_tests.rs replays them byte for byte.
"""

import datetime
import json
import sys
from zoneinfo import ZoneInfo

from cronstable.cronexpr import CronTab
from cronstable.ical import CalendarEntry, render_calendar

UTC = datetime.timezone.utc


def zone(name):
    return UTC if name == "UTC" else ZoneInfo(name)


FLEET = [
    ("backup, nightly; full", "0 2 * * *", "UTC", None),
    ("berlin-report", "30 7 * * mon-fri", "Europe/Berlin", 42.4),
    ("rounding-half", "0 */6 * * *", "UTC", 2.5),
    ("rounding-minutes", "15 3 * * *", "UTC", 89.9),
    ("fifty-minutes", "45 4 * * *", "UTC", 3000.0),
    ("one-and-a-quarter-hours", "0 5 * * *", "UTC", 4500.0),
    ("marathon", "0 6 * * sun", "UTC", 100000.0),
    ("zero-mean", "0 8 * * *", "UTC", 0.0),
    ("hashed", "H H * * *", "UTC", None),
    ("seconds", "*/20 * * * * * *", "UTC", 1.0),
    ("past-year", "0 0 1 1 * 2020", "UTC", None),
    ("month-end-payroll", "0 7 L-3 * *", "America/New_York", 600.0),
    ("a-very-long-job-name-that-certainly-needs-folding-because-it-goes-on-and-on", "0 9 * * *", "UTC", None),
    ("jöb-ünïcödé-ñame-with-many-accented-letters-to-fold-inside-a-character-ééé", "0 10 * * *", "Asia/Tokyo", None),
]

SCENARIOS = [
    ("fleet", FLEET, "2026-10-20T11:22:33.500000+00:00", 14, 5, "cronstable"),
    ("one-job", FLEET[:1], "2026-10-20T00:00:00+00:00", 3, 100, "cronstable: backup, nightly; full"),
    ("empty", [], "2026-10-20T00:00:00+00:00", 14, 100, "cronstable"),
    ("dst", [("ny-130", "30 1 * * *", "America/New_York", None)], "2026-10-30T00:00:00+00:00", 4, 100, "cronstable"),
]

NOW = "2026-10-20T11:22:33+00:00"
VERSION = "9.9.9-golden"


def main():
    out = []
    for name, fleet, start_text, days, per_job, calname in SCENARIOS:
        entries = [
            CalendarEntry(job, CronTab(expr, hash_key=job), zone(tz), avg)
            for job, expr, tz, avg in fleet
        ]
        text = render_calendar(
            entries,
            start=datetime.datetime.fromisoformat(start_text),
            days=days,
            per_job_cap=per_job,
            calname=calname,
            now=datetime.datetime.fromisoformat(NOW),
            prodid_version=VERSION,
        )
        out.append(
            {
                "name": name,
                "fleet": [list(row) for row in fleet],
                "start": start_text,
                "days": days,
                "per_job": per_job,
                "calname": calname,
                "now": NOW,
                "version": VERSION,
                "want": text,
            }
        )
    json.dump(out, sys.stdout, separators=(",", ":"), ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
