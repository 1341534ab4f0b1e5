"""The one anchor relocator: where a memory's anchored lines are in a file's text now.

A stored anchor records its lines (0-based, inclusive) and the ``content_hash`` of their
text when the memory was made. Both the language server (for an open buffer, with the code
graph's current span of the anchored symbol) and ``engram index`` (for every anchored
memory, from disk, to mark changed code for review: ``app/history_sync.py``) ask
:func:`relocate`, so the editor and the index always agree where a memory sits:

1. the stored lines, when their hash still matches;
2. the span of the anchored symbol, when the caller knows it;
3. the nearest place where the same lines (same hash) appear now (files over
   :data:`MAX_LINES` lines are not searched);
4. otherwise ``None``: the code under the anchor changed (the editor then shows the
   stored lines, clamped to the document).

:class:`AnchorText` hashes each window length of a text once, so relocating every anchor of
a file stays linear in its size. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from engram.model import CodeAnchor, content_hash

#: Texts longer than this are not searched for moved lines (generated code, data).
MAX_LINES = 100_000


@attrs.frozen
class LineSpan:
    """A 0-based, inclusive range of whole lines."""

    start: int
    end: int

    def contains(self, line: int) -> bool:
        return self.start <= line <= self.end

    def shifted(self, delta: int) -> LineSpan:
        return LineSpan(max(0, self.start + delta), max(0, self.end + delta))

    def clamped(self, line_count: int) -> LineSpan:
        last = max(0, line_count - 1)
        start = min(max(0, self.start), last)
        return LineSpan(start, min(max(start, self.end), last))


class AnchorText:
    """The lines of one text, with a hash -> start lines index per window length."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._windows: dict[int, dict[str, list[int]]] = {}

    def hash_at(self, span: LineSpan) -> str | None:
        if span.start < 0 or span.end >= len(self.lines) or span.end < span.start:
            return None
        return content_hash("\n".join(self.lines[span.start : span.end + 1]))

    def nearest(self, length: int, wanted: str, near: int) -> int | None:
        """The start line nearest to ``near`` where ``length`` lines hash to ``wanted``."""
        lines = self.lines
        if length <= 0 or length > len(lines) or len(lines) > MAX_LINES:
            return None
        index = self._windows.get(length)
        if index is None:
            index = {}
            for first in range(len(lines) - length + 1):
                digest = content_hash("\n".join(lines[first : first + length]))
                index.setdefault(digest, []).append(first)
            self._windows[length] = index
        starts = index.get(wanted)
        return min(starts, key=lambda s: (abs(s - near), s)) if starts else None


def stored_span(anchor: CodeAnchor) -> LineSpan | None:
    """The lines the anchor was made on, or ``None`` for a file-level anchor."""
    if anchor.start_line is None:
        return None
    end = anchor.end_line if anchor.end_line is not None else anchor.start_line
    return LineSpan(anchor.start_line, max(anchor.start_line, end))


def relocate(
    anchor: CodeAnchor, text: AnchorText, symbol_span: LineSpan | None = None
) -> LineSpan | None:
    """Where the anchor is now (see the module docstring for the order), or ``None``."""
    stored = stored_span(anchor)
    if stored is None:
        return symbol_span
    if anchor.content_hash and text.hash_at(stored) == anchor.content_hash:
        return stored
    if symbol_span is not None:
        return symbol_span
    if anchor.content_hash:
        length = stored.end - stored.start + 1
        moved = text.nearest(length, anchor.content_hash, stored.start)
        if moved is not None:
            return LineSpan(moved, moved + length - 1)
    return None


__all__ = ["MAX_LINES", "AnchorText", "LineSpan", "relocate", "stored_span"]
