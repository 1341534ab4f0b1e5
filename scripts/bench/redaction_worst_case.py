#!/usr/bin/env python3
"""How long redaction takes on the texts that cost it most (engram.redaction, stop 33).

Every string an agent hook queues, every memory and every log line is redacted before it is
written. A name pattern that scans back over a run of name characters for a secret's word
(``PASS``, ``key``) costs, per start, the length of the run: until stop 33 that was
unbounded, so a run of ``a-a-a-…`` (a word boundary at every character) cost the square of
its length, and a clone's file the agent reads reached the hook whole. Usage::

    scripts/bench/redaction_worst_case.py [--sizes 8000,32000] [--timeout 120]

Each shape and size runs in a child of its own, stopped at ``--timeout`` seconds (then shown
as ``null``): the old code takes hours at 100 KB. Prints one line per case and, last, one
JSON object with the seconds of each and the load average.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import subprocess
import sys
from pathlib import Path

SHAPES = {
    # a word boundary at every character, no secret's word: every start scans the run
    "a-": lambda n: "a-" * (n // 2),
    # a secret's word every few characters
    "key-": lambda n: "key-" * (n // 4),
    # one long token: letters and digits, no boundary inside
    "alnum": lambda n: "".join(
        random.Random(1).choice(string.ascii_letters + string.digits) for _ in range(n)
    ),
}

CHILD = """
import sys, time
from engram.redaction import redact_secrets
text = sys.stdin.read()
start = time.perf_counter()
redact_secrets(text)
print(time.perf_counter() - start)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8000,32000,100000")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    out: dict[str, object] = {"load": Path("/proc/loadavg").read_text().split()[0]}
    for shape, make in SHAPES.items():
        for size in (int(s) for s in args.sizes.split(",")):
            try:
                run = subprocess.run(
                    [sys.executable, "-c", CHILD],
                    input=make(size),
                    capture_output=True,
                    text=True,
                    timeout=args.timeout,
                    check=True,
                )
                seconds: float | None = round(float(run.stdout), 3)
            except subprocess.TimeoutExpired:
                seconds = None
            print(f"{shape} x {size}: {seconds if seconds is not None else '> timeout'} s")
            out[f"{shape}_{size}_s"] = seconds
    print(json.dumps(out))


if __name__ == "__main__":
    main()
