"""Memories (and an impact summary) -> hover markdown.

Hover is on the typing path, so this works only on what the server already holds in
memory: the document's memories and spans, and an impact summary computed earlier in the
background. Each memory shows its type, provenance and the same citation chip agents get
(``[Memory m-…: …]``), so a person can confirm or flag it by id from anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from engram.anchors import LineSpan
from engram.lsp.diagnostics import TYPE_LABELS, provenance_text, shown_text
from engram.marks import conflict_marker
from engram.model import Memory
from engram.quoting import code_span, markdown_text

#: At most this many memories in one hover; the rest are counted.
MAX_HOVER_MEMORIES = 5


def memories_at(
    memories: Sequence[Memory],
    spans: Mapping[str, LineSpan],
    line: int,
    symbol: str | None = None,
) -> list[Memory]:
    """Memories whose tracked span covers ``line`` or which are anchored to ``symbol``."""
    hits: list[Memory] = []
    for memory in memories:
        if memory.deprecated:
            continue
        span = spans.get(memory.id)
        by_line = span is not None and span.contains(line)
        by_symbol = symbol is not None and any(
            a.symbol and (a.symbol == symbol or a.symbol.rsplit(".", 1)[-1] == symbol)
            for a in memory.anchors
        )
        if by_line or by_symbol:
            hits.append(memory)
    hits.sort(key=lambda m: (not m.pinned, not m.user_verified, -m.confidence))
    return hits


def memory_block(memory: Memory, now: datetime, partners: Sequence[tuple[str, str]] = ()) -> str:
    """One memory; ``partners``: the shown memories it conflicts with, quoted and marked
    (docs/trust.md "Conflicts", ``engram.marks``).

    Every text a memory carries is shown as text (:func:`engram.quoting.markdown_text`), a
    teammate's in the quoted form agents get (:func:`shown_text`): hover is markdown, and
    a teammate's ``![x](https://host/pixel)`` made VS Code fetch that URL on every hover,
    while ``---`` and a bold header in it drew a second, "pinned · verified" memory."""
    label = TYPE_LABELS.get(memory.type, memory.type.value.replace("_", " "))
    stale = " · **stale**" if memory.is_stale else ""
    warning = "".join(
        f"\n\n**{markdown_text(conflict_marker(oid, text))}**" for oid, text in partners
    )
    provenance = markdown_text(provenance_text(memory, now, origin=False))
    return (
        f"**{label}** · {provenance}{stale}\n\n"
        f"{markdown_text(shown_text(memory))}{warning}\n\n"
        f"{code_span(memory.citation())}"
    )


def hover_markdown(
    memories: Sequence[Memory],
    impact: str | None,
    now: datetime,
    symbol: str | None = None,
    partners: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> str | None:
    """The hover text, or ``None`` when there is nothing worth showing."""
    if not memories and not impact:
        return None
    sections: list[str] = []
    if impact:
        # the summary is the file's (computed per file in the background): under a method's
        # name alone, "`flushHijackWriter.Flush`: 13 dependents" read as that method's
        # (stop 33 on go-chi/chi, where the method has one caller)
        title = f" of the file holding {code_span(symbol)}" if symbol else ""
        sections.append(f"**Engram impact**{title}: {impact}")
    for memory in memories[:MAX_HOVER_MEMORIES]:
        sections.append(memory_block(memory, now, (partners or {}).get(memory.id, ())))
    if len(memories) > MAX_HOVER_MEMORIES:
        sections.append(f"… and {len(memories) - MAX_HOVER_MEMORIES} more memories here")
    return "\n\n---\n\n".join(sections)
