"""One memory at a time: show, list, and a person's corrections (confirm, flag, pin, forget).

Corrections are moves of the trust model (docs/trust.md): they go through
``engram.app.trust``, which applies ``lifecycle.trust`` and keeps the audit trail. The
names here stay for the callers that know them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram.app.inputs import as_list, parse_correction, parse_source, parse_type
from engram.app.records import get
from engram.errors import InvalidInput
from engram.lifecycle.trust import Actor, is_shown
from engram.model import CorrectionKind, Memory, MemorySource, MemoryType
from engram.workspace import WorkspaceError

if TYPE_CHECKING:
    from engram.app.engine import Engine


def list_memories(
    engine: Engine,
    *,
    type: MemoryType | str | Sequence[MemoryType | str] | None = None,
    source: MemorySource | str | Sequence[MemorySource | str] | None = None,
    file: str | None = None,
    needs_review: bool | None = None,
    include_deprecated: bool = False,
    limit: int | None = None,
) -> list[Memory]:
    """Memories by filter (type, source, file, review state), newest first."""
    types = None if type is None else [parse_type(t) for t in as_list(type)]
    sources = None if source is None else [parse_source(s) for s in as_list(source)]
    rel = engine.relative(file) if file else None
    if limit is not None and limit < 0:
        raise InvalidInput("limit must be positive")
    flt = engine.filter(
        types=types,
        sources=sources,
        file=rel,
        needs_review=needs_review,
        include_deprecated=include_deprecated,
    )
    if include_deprecated:
        return list(engine.store.list(flt, limit))
    # flagged memories are hidden like deprecated ones (docs/trust.md); --all shows them
    found = [m for m in engine.store.list(flt, None) if is_shown(m)]
    return found if limit is None else found[:limit]


def for_file(engine: Engine, rel_path: str) -> list[Memory]:
    """Memories anchored to or related to one file: for diagnostics and hover.

    Served from the store's in-process snapshot and its file -> rows index
    (``MemoryStore.ids_for_file``), so the hover path never scans or decodes the table.
    Flagged, deprecated, retired and forgotten memories are left out (docs/trust.md).
    """
    try:
        rel = engine.relative(rel_path)
    except (WorkspaceError, InvalidInput):
        return []
    store = engine.store
    found = store.get_many(store.ids_for_file(rel))
    return [m for m in found if is_shown(m)]


def conflict_partners(
    engine: Engine, memories: Sequence[Memory]
) -> dict[str, list[tuple[str, str]]]:
    """For each memory, the shown memories it is linked to as a conflict, ``(id, text)``:
    every surface shows and marks them with it (docs/trust.md "Conflicts")."""
    from engram.lifecycle.trust import active_conflicts

    out: dict[str, list[tuple[str, str]]] = {}
    for memory in memories:
        others = active_conflicts(memory, engine.store.get_many)
        if others:
            out[memory.id] = [(m.id, m.content) for m in others]
    return out


def forget(
    engine: Engine, memory_id: str, *, actor: Actor | None = None, cause: str = ""
) -> Memory:
    """Forget a memory: hidden at once, ``restore`` brings it back for 30 days."""
    from engram.app import trust

    return trust.forget(engine, memory_id, actor=actor, cause=cause)


def restore(
    engine: Engine, memory_id: str, *, actor: Actor | None = None, cause: str = ""
) -> Memory:
    from engram.app import trust

    return trust.restore(engine, memory_id, actor=actor, cause=cause)


def confirm(
    engine: Engine, memory_id: str, *, actor: Actor | None = None, cause: str = ""
) -> Memory:
    """A person's "this is right" (an agent's is only recorded; docs/trust.md)."""
    from engram.app import trust

    return trust.confirm(engine, memory_id, actor=actor, cause=cause)


def flag(
    engine: Engine,
    memory_id: str,
    kind: CorrectionKind | str,
    note: str | None = None,
    *,
    actor: Actor | None = None,
    cause: str = "",
) -> Memory:
    """A person's (or an agent's) "this is wrong": hidden until the flagger confirms it."""
    from engram.app import trust

    return trust.flag(engine, memory_id, parse_correction(kind), note, actor=actor, cause=cause)


def pin(
    engine: Engine,
    memory_id: str,
    pinned: bool = True,
    *,
    actor: Actor | None = None,
    cause: str = "",
) -> Memory:
    from engram.app import trust

    return trust.pin(engine, memory_id, pinned, actor=actor, cause=cause)


__all__ = [
    "confirm",
    "flag",
    "for_file",
    "forget",
    "get",
    "list_memories",
    "pin",
    "restore",
]
