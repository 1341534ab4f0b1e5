"""Where a memory's anchor is in the text the editor has now, and how it moves with edits.

A stored anchor records the lines (0-based, inclusive) and a hash of their text at the time
the memory was made. The editor's buffer drifts from that as the user types, so the server
keeps, per open document, the current line span of every anchor and shifts it on each
incremental ``didChange``: lines inserted above a symbol move its diagnostic down with it.
On open, save and full-text changes the span is located afresh: the stored lines when
their hash still matches, else the code graph's current range of the anchored symbol (it
knows where ``parse_config`` is now), else the nearest place where the same lines (same
hash) now appear, else the stored lines clamped to the document.

Everything here is pure (no LSP objects, no I/O) so it is unit-tested directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from engram.model import CodeAnchor, content_hash

#: How far (in lines) to look for moved anchored text; beyond this it is another place.
MAX_SEARCH_LINES = 20_000


@attrs.frozen
class LineSpan:
    """A 0-based, inclusive range of whole lines."""

    start: int
    end: int

    def contains(self, line: int) -> bool:
        return self.start <= line <= self.end

    def shifted(self, delta: int) -> LineSpan:
        return LineSpan(max(0, self.start + delta), max(0, self.end + delta))


@attrs.frozen
class TextEdit:
    """One incremental change: replace ``start``..``end`` (line, character) by ``text``."""

    start_line: int
    start_character: int
    end_line: int
    end_character: int
    text: str


def split_lines(text: str) -> list[str]:
    """Lines without their terminators, as the engine hashes them (``str.splitlines``)."""
    return text.splitlines()


def lines_hash(lines: Sequence[str], span: LineSpan) -> str | None:
    if span.start < 0 or span.end >= len(lines) or span.end < span.start:
        return None
    return content_hash("\n".join(lines[span.start : span.end + 1]))


def find_hash(lines: Sequence[str], length: int, wanted: str, near: int) -> int | None:
    """The start line nearest to ``near`` where ``length`` lines hash to ``wanted``."""
    if length <= 0 or length > len(lines):
        return None
    last_start = len(lines) - length
    limit = min(MAX_SEARCH_LINES, last_start + 1)
    near = max(0, min(near, last_start))
    for distance in range(limit + 1):
        for candidate in (near - distance, near + distance) if distance else (near,):
            if 0 <= candidate <= last_start:
                text = "\n".join(lines[candidate : candidate + length])
                if content_hash(text) == wanted:
                    return candidate
        if near - distance < 0 and near + distance > last_start:
            break
    return None


def locate_anchor(
    anchor: CodeAnchor, lines: Sequence[str], symbol_span: LineSpan | None = None
) -> LineSpan:
    """The anchor's span in the current text (see the module docstring for the order)."""
    if anchor.start_line is None:
        if symbol_span is not None:
            return _clamp(symbol_span, len(lines))
        return LineSpan(0, 0)  # a file-level memory sits on the first line
    start = anchor.start_line
    end = anchor.end_line if anchor.end_line is not None else start
    stored = LineSpan(start, max(start, end))
    if anchor.content_hash and lines_hash(lines, stored) == anchor.content_hash:
        return stored
    if symbol_span is not None:
        return _clamp(symbol_span, len(lines))
    if anchor.content_hash and lines:
        moved = find_hash(lines, stored.end - stored.start + 1, anchor.content_hash, start)
        if moved is not None:
            return LineSpan(moved, moved + stored.end - stored.start)
    return _clamp(stored, len(lines))


def _clamp(span: LineSpan, line_count: int) -> LineSpan:
    last = max(0, line_count - 1)
    start = min(max(0, span.start), last)
    return LineSpan(start, min(max(start, span.end), last))


def shift_span(span: LineSpan, edit: TextEdit) -> LineSpan:
    """The span after ``edit``: moved when the edit is above it, resized when inside it."""
    added = edit.text.count("\n")
    removed = edit.end_line - edit.start_line
    delta = added - removed
    if (edit.end_line, edit.end_character) <= (span.start, 0):
        return span.shifted(delta)  # entirely above (or exactly at the start of) the span
    if edit.start_line > span.end:
        return span  # entirely below
    start = min(span.start, edit.start_line)
    return LineSpan(start, max(start, span.end + delta))


def shift_all(spans: Mapping[str, LineSpan], edits: Iterable[TextEdit]) -> dict[str, LineSpan]:
    """Apply edits, in the order the client sent them, to every tracked span."""
    current = dict(spans)
    for edit in edits:
        current = {key: shift_span(span, edit) for key, span in current.items()}
    return current
