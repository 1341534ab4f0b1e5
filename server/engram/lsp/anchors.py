"""Where a memory's anchor is in the text the editor has now, and how it moves with edits.

A stored anchor records the lines (0-based, inclusive) and a hash of their text at the time
the memory was made. The editor's buffer drifts from that as the user types, so the server
keeps, per open document, the current line span of every anchor and shifts it on each
incremental ``didChange``: lines inserted above a symbol move its diagnostic down with it.
On open, save and full-text changes the span is located afresh by the one relocator,
:func:`engram.anchors.relocate` (the same rules ``engram index`` applies), with the code
graph's current span of the anchored symbol; when the code under it changed, the stored
lines clamped to the document.

Everything here is pure (no LSP objects, no I/O) so it is unit-tested directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from engram.anchors import AnchorText, LineSpan, relocate, stored_span
from engram.model import CodeAnchor, Memory


@attrs.frozen
class SymbolInfo:
    """A code-graph definition, 0-based lines (the graph stores 1-based)."""

    name: str
    qualname: str
    span: LineSpan


def memory_key(memories: Sequence[Memory]) -> tuple[tuple[str, str], ...]:
    """Cheap identity of a file's memory set, to tell whether to republish."""
    return tuple(sorted((m.id, m.updated_at.isoformat()) for m in memories))


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


def locate_anchor(
    anchor: CodeAnchor, lines: Sequence[str], symbol_span: LineSpan | None = None
) -> LineSpan:
    """The anchor's span in the editor's text: :func:`engram.anchors.relocate`, else (the code
    under it changed) the stored lines clamped to the document; a file-level memory sits on
    the first line."""
    found = relocate(anchor, AnchorText(lines), symbol_span)
    if found is not None:
        return found.clamped(len(lines))
    return (stored_span(anchor) or LineSpan(0, 0)).clamped(len(lines))


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
