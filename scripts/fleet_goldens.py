#!/usr/bin/env python3
"""Records the original daemon's fleet analyses (schedule pressure,
duplicate groups, suggested slots) for a few fixed fleets.

Run with the original's interpreter (scripts/test.sh installs it):

    ~/.cache/cronstable-tools/original-venv/bin/python3 scripts/fleet_goldens.py \
        > tests/fixtures/fleet_golden.json

Each scenario names its fleet (job name, expression, clock), the window
start, the pressure window and display clock, and what the original's
analyzers answered. src/cronexpr/fleet_tests.rs replays them.
"""

import datetime
import json
import sys
from zoneinfo import ZoneInfo

from cronstable.croninfo import (
    ScheduleEntry,
    duplicate_schedules,
    schedule_pressure,
    suggest_slot,
)
from cronstable.cronexpr import CronTab

UTC = datetime.timezone.utc


def zone(name):
    return UTC if name == "UTC" else ZoneInfo(name)


def entries(fleet):
    return [
        ScheduleEntry(name, CronTab(expr, hash_key=name), zone(tz))
        for name, expr, tz in fleet
    ]


BUSY = [
    ("billing-export", "0 0 * * *", "UTC"),
    ("cleanup-tmp", "@daily", "UTC"),
    ("rotate-logs", "0 0 * * *", "UTC"),
    ("poller", "*/5 * * * *", "UTC"),
    ("poller-b", "0-59/5 * * * *", "UTC"),
    ("hourly-sync", "@hourly", "UTC"),
    ("hourly-report", "0 * * * *", "UTC"),
    ("quarter", "*/15 * * * *", "UTC"),
    ("odd", "7,23 */3 * * *", "UTC"),
    ("berlin-nightly", "0 0 * * *", "Europe/Berlin"),
    ("berlin-nightly-2", "0 0 * * *", "Europe/Berlin"),
    ("weekday", "30 9 * * mon-fri", "America/New_York"),
    ("hashed-a", "H * * * *", "UTC"),
    ("hashed-b", "H H * * *", "UTC"),
    ("seconds", "*/10 * * * * * *", "UTC"),
    ("month-end", "0 23 L * *", "UTC"),
    ("third-friday", "0 6 * * 5#3", "UTC"),
    ("third-friday-b", "0 6 * * fri#3", "UTC"),
]

SCENARIOS = [
    ("busy-utc", BUSY, "2026-07-18T16:20:13.250000+00:00", 24, "UTC"),
    ("busy-london-week", BUSY, "2026-07-15T00:00:00+00:00", 168, "Europe/London"),
    ("busy-short", BUSY, "2026-07-18T16:20:00+00:00", 1, "UTC"),
    (
        "dst-fall-back",
        [
            ("ny-130", "30 1 * * *", "America/New_York"),
            ("ny-every-15", "*/15 * * * *", "America/New_York"),
            ("utc-0", "0 * * * *", "UTC"),
        ],
        "2026-11-01T00:00:00+00:00",
        48,
        "America/New_York",
    ),
    ("idle", [], "2026-07-18T16:20:00+00:00", 24, "UTC"),
    (
        "all-minutes",
        [("job-%02d" % m, "%d * * * *" % m, "UTC") for m in range(60)]
        + [("extra-a", "0 * * * *", "UTC"), ("extra-b", "0 12 * * *", "UTC")],
        "2026-07-18T00:00:00+00:00",
        24,
        "UTC",
    ),
    (
        "many-in-one-cell",
        [("top-%02d" % i, "0 12 * * *", "UTC") for i in range(14)]
        + [("mid-%02d" % i, "30 12 * * *", "Asia/Kolkata") for i in range(3)],
        "2026-07-18T00:00:00+00:00",
        24,
        "Asia/Kolkata",
    ),
]


def main():
    out = []
    for name, fleet, start_text, hours, display in SCENARIOS:
        start = datetime.datetime.fromisoformat(start_text)
        rows = entries(fleet)
        tz = zone(display)
        out.append(
            {
                "name": name,
                "fleet": [list(row) for row in fleet],
                "start": start_text,
                "hours": hours,
                "display": display,
                "pressure": schedule_pressure(rows, start=start, hours=hours, tz=tz),
                "duplicates": duplicate_schedules(rows),
                "hourly": suggest_slot(rows, period="hourly", start=start, tz=tz),
                "daily": suggest_slot(rows, period="daily", start=start, tz=tz),
            }
        )
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
