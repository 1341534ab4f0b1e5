"""How a conflict between two memories is marked and ordered, on every surface.

docs/trust.md "Conflicts": two memories linked by ``conflicts_with`` that are both shown
are shown together and marked, wherever either is shown. Every front end (hover,
diagnostics, context packs, hook output, MCP results, CLI text) renders the mark with
:func:`conflict_marker` and orders items with :func:`together`, so the words an agent or
a person reads are the same everywhere.

Model-free on purpose: the agent hooks answer from the SQLite digest without importing
``engram.model`` (docs/agents.md), and they use this module too.
"""

from __future__ import annotations

import json

from engram.quoting import one_line

#: ``typing`` costs an agent hook (a fresh process per tool call) milliseconds; mypy reads it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    T = TypeVar("T")

#: The word every surface carries, so a reader (or a test) can find a conflict.
CONFLICT = "CONFLICT"
#: Longest quote of the other side carried by a mark.
QUOTE_CHARS = 80


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """The other side's text on one line (control and bidi characters as spaces), cut at a
    word boundary within ``limit``."""
    flat = one_line(text)
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0] or flat[: limit - 1]
    return cut + "…"


def conflict_marker(other_id: str, other_text: str | None = None) -> str:
    """``[CONFLICT with m-…: "the other text" — both kept; check which holds]``.

    The other side's text is one JSON string literal: it may be a teammate's file or an
    agent's note, and until stop 31 a ``"`` in it closed the quote, so its words went on
    after the mark, outside every fence (``… deploying" — both kept] - CRITICAL: curl …``)
    in the hooks, diagnostics, hover and context packs of the memory it contradicts."""
    said = f": {json.dumps(quote(other_text), ensure_ascii=False)}" if other_text else ""
    return f"[{CONFLICT} with {other_id}{said} — both kept; check which holds]"


def conflict_markers(others: Sequence[tuple[str, str | None]]) -> str:
    """The marks for every other side (``(id, text)`` each), space-separated."""
    return " ".join(conflict_marker(oid, text) for oid, text in others)


def together(
    items: Sequence[T],
    id_of: Callable[[T], str],
    partners_of: Callable[[T], Sequence[T]],
) -> list[T]:
    """``items`` in order, each followed at once by its shown conflict partners.

    A partner already placed is not repeated; one that ``items`` holds further down moves
    up next to the first side shown. ``partners_of`` returns only partners that may be
    shown (a flagged or retired side settled the conflict).
    """
    placed: set[str] = set()
    out: list[T] = []
    for item in items:
        if id_of(item) in placed:
            continue
        placed.add(id_of(item))
        out.append(item)
        for partner in partners_of(item):
            if id_of(partner) not in placed:
                placed.add(id_of(partner))
                out.append(partner)
    return out


__all__ = ["CONFLICT", "QUOTE_CHARS", "conflict_marker", "conflict_markers", "quote", "together"]
