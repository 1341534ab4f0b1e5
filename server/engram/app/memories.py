"""One memory at a time: show, list, and a person's corrections (confirm, flag, pin, forget).

Corrections are the moves docs/trust.md grants a person; each reads the current record,
applies the ``lifecycle`` rule and writes it back under the writer lock, then mirrors it to
the agents' digest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from engram.app.inputs import as_list, parse_correction, parse_source, parse_type
from engram.errors import InvalidInput, NotFound
from engram.lifecycle import apply_confirmation, apply_correction, redact_secrets
from engram.model import CorrectionKind, Memory, MemorySource, MemoryType
from engram.workspace import WorkspaceError

if TYPE_CHECKING:
    from engram.app.engine import Engine


def get(engine: Engine, memory_id: str) -> Memory:
    """The memory with this id, or :class:`NotFound`."""
    memory_id = (memory_id or "").strip()
    if not memory_id:
        raise InvalidInput("memory id is empty")
    memory = engine.store.get(memory_id)
    if memory is None:
        raise NotFound(f"no memory with id {memory_id}")
    return memory


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
    return list(engine.store.list(flt, limit))


def for_file(engine: Engine, rel_path: str) -> list[Memory]:
    """Memories anchored to or related to one file: for diagnostics and hover.

    Served from the store's in-process snapshot and its file -> rows index
    (``MemoryStore.ids_for_file``), so the hover path never scans or decodes the table.
    Deprecated memories are left out (the user said they were wrong).
    """
    try:
        rel = engine.relative(rel_path)
    except (WorkspaceError, InvalidInput):
        return []
    store = engine.store
    found = store.get_many(store.ids_for_file(rel))
    return [m for m in found if not m.deprecated]


def forget(engine: Engine, memory_id: str) -> Memory:
    """Delete a memory (a person's call); returns what was deleted."""
    engine.check_writable()
    with engine.write_lock:
        memory = get(engine, memory_id)
        engine.store.delete([memory.id])
        engine.mirror(deleted=[memory.id])
    return memory


def confirm(engine: Engine, memory_id: str) -> Memory:
    """ "This is right": verified and more trusted."""
    return _mutate(engine, memory_id, lambda m: apply_confirmation(m, now=engine.clock()))


def flag(
    engine: Engine, memory_id: str, kind: CorrectionKind | str, note: str | None = None
) -> Memory:
    """A person's correction of one of four kinds (docs/trust.md)."""
    correction = parse_correction(kind)
    clean_note = redact_secrets(note).text.strip() if note else None
    return _mutate(
        engine,
        memory_id,
        lambda m: apply_correction(m, correction, clean_note, now=engine.clock()),
    )


def pin(engine: Engine, memory_id: str, pinned: bool = True) -> Memory:
    """Pin (or unpin) a memory: pinned memories never decay or get pruned."""
    return _mutate(
        engine, memory_id, lambda m: attrs.evolve(m, pinned=pinned, updated_at=engine.clock())
    )


def _mutate(engine: Engine, memory_id: str, change: Callable[[Memory], Memory]) -> Memory:
    engine.check_writable()
    with engine.write_lock:
        updated = change(get(engine, memory_id))
        engine.store.update([updated])
        engine.mirror([updated])
    return updated


__all__ = ["confirm", "flag", "for_file", "forget", "get", "list_memories", "pin"]
