"""One rule for control characters: a quotation, the CLI's terminal text and its progress
lines remove the same ones (``engram.quoting.replace_controls``).

Each of the three had its own pattern and each let a different set through: a quotation
kept C1 controls (``\\x9b`` is a one-byte CSI to many terminals), the terminal text kept
line separators and zero-width characters, so a text one front end cleaned reached a
person or an agent through another.
"""

from __future__ import annotations

import json

import pytest

from engram.cli.output import terminal_text
from engram.cli.progress import printable
from engram.quoting import clean_name, has_control, quoted

#: one of each kind: C0 (ESC, CR, BEL), DEL, C1 (CSI, NEL), a bidi override and isolate,
#: zero-width space and joiner, the byte-order mark, an invisible tag character, the line
#: and paragraph separators, and a lone surrogate (an undecodable file name)
HOSTILE = [
    "\x1b", "\r", "\x07", "\x7f", "\x9b", "\x85", "\u202e", "\u2066", "\u200b", "\u200d",
    "\ufeff", "\U000e0041", "\u2028", "\u2029", "\udcff",
]  # fmt: skip


@pytest.mark.parametrize("char", HOSTILE, ids=[f"U+{ord(c):04X}" for c in HOSTILE])
def test_every_front_end_removes_the_same_control_characters(char: str) -> None:
    text = f"run{char}[2J now"
    assert has_control(text)
    assert char not in json.loads(quoted(text))
    assert char not in clean_name(text)
    assert terminal_text(text) == "run?[2J now"
    assert printable(text) == "run?[2J now"


def test_text_a_reader_needs_is_kept() -> None:
    """Tabs and newlines stay on the terminal; letters of every script, emoji, private-use
    characters (icon fonts) are shown everywhere."""
    text = "déjà vu: 数据 🙂 \ue0a0 — ok"
    assert not has_control(text)
    assert terminal_text(f"{text}\n\tnext") == f"{text}\n\tnext"
    assert printable(text) == text
    assert json.loads(quoted(text)) == text
    assert json.loads(quoted("a\nb\tc")) == "a b c"  # a quotation is one line
