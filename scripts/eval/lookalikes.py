"""Two general look-alike readings, tried in scripts before any goes into the rules.

Issue 12's eleventh pass (docs/lifecycle.md). Held-out 8's false alarms held two kinds whose
reason holds for any repository, whatever the phrasing:

* ``url`` — a version inside a link target (``https://docs.rs/tracing/0.1.16/…`` /
  ``…/0.1.17/…``) is where a page lives, not a claim: link targets are replaced by one
  placeholder before the rules read the pair;
* ``truth`` — the same value written two ways: a ``0`` / ``1`` swapped for a truth word of
  the same truth (``Defaults to 0 (off)`` / ``Defaults to False (off)``) is no change: the
  swapped number is written as the word before the rules read the pair.

``normalise_pair`` applies the named readings; ``contradiction_combine.py --lookalikes``
scores the detector with them against today's on the same folds.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection

READINGS = ("url", "truth")

#: a link target: a URL, or the target of a Markdown link / an angle-bracketed URL
_URL = re.compile(r"\b(?:https?://|www\.)[^\s)\]>\"'`]+|\]\([^)\s]+\)")
_WORD = re.compile(r"\S+")
_TRUTH = {
    "0": False, "1": True, "false": False, "true": True, "off": False, "on": True,
    "no": False, "yes": True, "disabled": False, "enabled": True,
}  # fmt: skip


def _strip(token: str) -> str:
    return token.lower().strip("`*.,:;()[]\"'")


def normalise_pair(old: str, new: str, readings: Collection[str] = READINGS) -> tuple[str, str]:
    """``old`` and ``new`` with the named look-alike readings applied (see the module)."""
    if "url" in readings:
        old = _URL.sub(_link, old)
        new = _URL.sub(_link, new)
    if "truth" in readings:
        old = _same_truth(old, new)
    return old, new


def _link(match: re.Match[str]) -> str:
    return "](link)" if match.group().startswith("](") else "link"


def _same_truth(old: str, new: str) -> str:
    """``old`` with each 0 / 1 that ``new`` swaps for a truth word of the same truth written
    as that word (one token for one token; anything else left as it is)."""
    a = [m for m in _WORD.finditer(old)]
    b = [m.group() for m in _WORD.finditer(new)]
    matcher = difflib.SequenceMatcher(
        None, [_strip(m.group()) for m in a], [_strip(t) for t in b], autojunk=False
    )
    edits: list[tuple[int, int, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        was, now = _strip(a[i1].group()), _strip(b[j1])
        same = was in _TRUTH and now in _TRUTH and _TRUTH[was] == _TRUTH[now]
        if same and was != now and {was, now} & {"0", "1"}:
            token = a[i1].group()
            written = token.replace(was, now, 1) if was in token else now
            edits.append((a[i1].start(), a[i1].end(), written))
    for start, end, text in reversed(edits):
        old = old[:start] + text + old[end:]
    return old
