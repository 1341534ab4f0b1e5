"""No pattern Engram runs over someone else's text takes the square of its length.

Engram matches regular expressions over text it did not write: memories (an agent's, over
MCP), every string of an agent hook's payload (a file the agent read, a command's output),
teammates' files. A pattern whose unbounded run of characters is scanned again from each
start costs the square of the input: until stop 33 redaction took 66 s for a memory's 8,000
characters of ``a-``, the observer 3 s for 6,000 ``[`` of a tool's output, the
contradiction rules seconds per memory (docs/security.md, "Robust inputs"). This test runs
every compiled pattern of every ``engram`` module over the shapes that find it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time

import engram

#: repeated to SIZE characters: a boundary at every character, runs with no separator,
#: brackets and slashes that open a scan
SHAPES = ("a", "a-", "a.", "a_", "a/", "\\", "[", "(", "1", "a ", "--a", "a=", "key-")
SIZE = 20_000
#: over the time a linear pattern takes here at load 17 (under 2 s); a quadratic one took
#: 18 s and more
LIMIT_S = 10.0
#: patterns that only ever see short text, each with where it is bounded
SHORT_INPUT_ONLY = {
    # error_headline() returns at most 300 characters
    "engram.observer.patterns._PATH",
    # the person's own --tcp HOST:PORT argument
    "engram.cli.serve._TCP",
}


def _patterns() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(engram.__path__, "engram."):
        if info.name.endswith(("__main__", ".vendor")):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            items = value if isinstance(value, list | tuple) else [value]
            for index, item in enumerate(items):
                for pattern in item if isinstance(item, tuple) else [item]:
                    if isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str):
                        at = f"[{index}]" if items is value else ""
                        found.setdefault(f"{info.name}.{name}{at}", pattern)
    return found


def test_every_pattern_takes_time_in_proportion_to_the_text() -> None:
    patterns = _patterns()
    assert len(patterns) > 100  # the walk found the package's patterns
    slow = []
    for label, pattern in sorted(patterns.items()):
        if label in SHORT_INPUT_ONLY:
            continue
        for shape in SHAPES:
            text = shape * (SIZE // len(shape))
            start = time.perf_counter()
            for _ in pattern.finditer(text):
                pass
            took = time.perf_counter() - start
            if took > LIMIT_S:
                slow.append(f"{label} over {shape!r} x {len(text)}: {took:.1f} s")
                break
    assert slow == []
