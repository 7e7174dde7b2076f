#!/usr/bin/env python3
"""Records the original daemon's plain-English schedule descriptions.

Run with the original's interpreter (scripts/test.sh installs it):

    ~/.cache/cronstable-tools/original-venv/bin/python3 scripts/describe_goldens.py \
        > tests/fixtures/describe_golden.jsonl

Each output line is {"expr", "key", "want"}: the text, the hash key (the
job name, or null) and what the original's describer answers for them.
The corpus covers every form the engine accepts (5/6/7 columns, names,
steps, ranges, lists, L, L-n, W, LW, #, L<d>, H with a key, years,
nicknames, @reboot) plus spellings it refuses, in fixed hand-written cases
and in seeded random combinations, so the file is the same on every run.
The Rust unit test in src/cronexpr/describe_tests.rs replays it.
"""

import json
import random
import sys

from cronstable.croninfo import describe_cron

SECONDS = ["0", "*", "*/5", "*/7", "*/30", "5", "0,30", "10-20", "15/15", "0-59/10", "?"]
MINUTES = [
    "0", "*", "*/5", "*/7", "*/15", "*/05", "30", "05", "0,30", "5-10", "0-59/20",
    "5/10", "59", "1-3,7", "*/1", "?", "60", "*/0", "H", "H/15", "H(0-29)",
]
HOURS = ["*", "0", "9", "*/2", "*/5", "*/6", "9-17", "0,12", "*/1", "22-23/1", "23", "24", "H"]
DAYS = [
    "*", "?", "1", "15", "31", "1,15", "L", "l", "L-1", "L-3", "L-30", "L-31", "L-0", "15W",
    "1W", "31W", "LW", "1,15W,L", "1-7", "*/2", "L,LW", "*,L", "?,L", "2,L-1", "32", "0",
    "1-5/2", "H",
]
MONTHS = [
    "*", "?", "1", "jan", "JAN-MAR", "*/3", "6-8", "1,7", "dec", "2", "jan,jul", "Feb",
    "11-12", "13", "0", "3/4", "H",
]
WEEKDAYS = [
    "*", "?", "0", "7", "mon-fri", "1-5", "MON,FRI", "5#3", "fri#3", "FRI#3", "7#1", "L5",
    "l0-7", "L1-3", "l7-3", "mon#1,L5", "sat,sun", "5-7", "1-0", "0-0", "6#5", "1/2", "L",
    "Lfri", "5L", "sun-sat", "*,L5", "1#6", "8", "wed", "H",
]
YEARS = ["*", "2026", "2026-2028", "2030,2040", "*/10", "1970", "2099", "2100", "1969", "2026/2", "?"]

FIXED = [
    # the manual's examples
    ("0 9 * * mon,fri", None),
    ("0 0 L-3 * *", None),
    ("*/7 * * * *", None),
    ("0 0 * * *", None),
    ("30 1 LW * *", None),
    ("0 7 L-3 * *", None),
    ("0 8 15W * *", None),
    ("0 6 * * 5#3", None),
    ("0 6 * * fri#3", None),
    ("0 0 13 * 5", None),
    ("0 0 15W * fri", None),
    ("0 0 12 ? * MON#2 *", None),
    ("*/5 * * * *", None),
    ("0-59/5 * * * *", None),
    ("29 * * * *", None),
    ("H * * * *", "job"),
    ("H * * * *", None),
    ("H H * * *", "nightly-backup"),
    ("H/15 * * * *", "poller"),
    ("H(0-29) H(1-5) * * *", "report"),
    ("0 H * * 1-5", "weekday-report"),
    ("H H H * *", "monthly"),
    ("H H * H *", "yearly"),
    ("H H * * H", "weekly"),
    ("H * * * * * *", "seconds"),
    ("0 0 * * * 2026", None),
    ("0 0 1 1 * 2026-2030", None),
    ("* * * * * * *", None),
    ("*/5 * * * * * *", None),
    ("*/7 * * * * * *", None),
    ("0,30 * * * * * *", None),
    ("5 * * * * * *", None),
    ("0 * * * * * *", None),
    ("*/5 0 9 * * * *", None),
    ("* 0 9 * * * *", None),
    ("*/10 * * * * * 2027", None),
    ("0 0 0 1 1 * 2026", None),
    # nicknames and @reboot
    ("@reboot", None),
    ("@REBOOT", None),
    ("  @reboot  ", None),
    ("@yearly", None),
    ("@annually", None),
    ("@monthly", None),
    ("@weekly", None),
    ("@daily", None),
    ("@hourly", None),
    ("@HOURLY", None),
    ("@Daily", None),
    (" @weekly ", None),
    ("@midnight", None),
    ("@fortnightly", None),
    ("@hourly", "job"),
    # layout and refusals
    ("", None),
    ("   ", None),
    ("*", None),
    ("* * * *", None),
    ("* * * * * * * *", None),
    ("  0   9  *  *  1-5  ", None),
    ("0\t9\t*\t*\t1", None),
    ("61 * * * *", None),
    ("* 25 * * *", None),
    ("0 0 30 2 *", None),
    ("0 0 31 4 *", None),
    ("0 0 * * fri-mon", None),
    ("0 0 * * 5-1", None),
    ("0 0 1-31/40 * *", None),
    ("*/70 * * * *", None),
    ("0 0 * * 5L", None),
    ("0 0 5#3 * *", None),
    ("0 0 * * 15W", None),
    ("0 0 L-3 * * 2026", None),
    ("0 0 LW 2 * 2028", None),
    ("0 0 L * 1-5", None),
    ("0 0 1,L * mon", None),
    ("0 9-17/2 * * mon-fri", None),
    ("15 */4 * * *", None),
    ("15 */5 * * *", None),
    ("0,15,30,45 */2 * * *", None),
    ("5 4 * * sun", None),
    ("5 4 * * 7", None),
    ("0 0 * * 0,7", None),
    ("0 0 1 */3 *", None),
    ("0 0 1 jan-dec/2 *", None),
    ("0 0 1,15 * 1", None),
    ("0 12 * * ?", None),
    ("0 12 ? * *", None),
    ("0 12 ? * ?", None),
]


def random_cases(rng, count):
    out = []
    for _ in range(count):
        shape = rng.choice((5, 5, 5, 6, 7))
        core = [
            rng.choice(MINUTES),
            rng.choice(HOURS),
            rng.choice(DAYS),
            rng.choice(MONTHS),
            rng.choice(WEEKDAYS),
        ]
        fields = list(core)
        if shape >= 6:
            fields.append(rng.choice(YEARS))
        if shape == 7:
            fields.insert(0, rng.choice(SECONDS))
        text = " ".join(fields)
        key = rng.choice(("job-a", "nightly", None)) if "H" in text else None
        out.append((text, key))
    return out


def main():
    rng = random.Random(33)
    cases = list(FIXED)
    # one column varied at a time over a plain base, so every item of every
    # list is seen in each position at least once
    base = ["0", "9", "*", "*", "*"]
    for column, choices in enumerate((MINUTES, HOURS, DAYS, MONTHS, WEEKDAYS)):
        for choice in choices:
            fields = list(base)
            fields[column] = choice
            text = " ".join(fields)
            cases.append((text, "job-a" if "H" in text else None))
    for year in YEARS:
        cases.append(("30 6 * * * " + year, None))
    for second in SECONDS:
        cases.append((second + " * * * * * *", None))
        cases.append((second + " 0 9 * * 1-5 *", None))
    fixed = len(cases)
    cases.extend(random_cases(rng, 4000))
    seen = set()
    for index, (text, key) in enumerate(cases):
        if (text, key) in seen:
            continue
        seen.add((text, key))
        want = describe_cron(text, hash_key=key)
        # random combinations are mostly refused; keep a fifth of those
        if index >= fixed and want.startswith("Custom") and rng.random() < 0.8:
            continue
        line = json.dumps({"expr": text, "key": key, "want": want}, separators=(",", ":"))
        sys.stdout.write(line + "\n")


if __name__ == "__main__":
    main()
