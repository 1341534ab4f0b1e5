"""Rename chains and their application to memories (pure functions, no git here).

A memory anchored to ``old.py`` must follow the code when ``old.py`` becomes ``new.py``;
otherwise its diagnostics vanish and retrieval by file misses it. The engine asks
:meth:`engram.history.GitHistory.renames_since` for the map and passes it to
:func:`apply_renames`, then ``store.update``s what comes back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from engram.model import Memory


def fold_renames(renames: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Chain ``(old, new)`` renames given oldest first into ``old -> final name``.

    ``a→b`` then ``b→c`` gives ``{a: c, b: c}``; a file renamed back (``a→b``, ``b→a``)
    ends with no entry for ``a`` because it is where it started. The map is meant for
    names recorded before the first of these renames (``renames_since`` a memory's commit).
    """
    final: dict[str, str] = {}
    for old, new in renames:
        if not old or not new or old == new:
            continue
        for key, value in list(final.items()):
            if value == old:
                final[key] = new
        # no chaining through ``new``: a rename *into* a name says nothing about the file
        # that had that name before (b→c then a→b keeps b→c for older memories)
        final[old] = new
        for key in [k for k, v in final.items() if k == v]:
            del final[key]
    return final


def _rename(path: str, renames: Mapping[str, str]) -> str:
    return renames.get(path, path)


def apply_renames(memories: Sequence[Memory], renames: Mapping[str, str]) -> list[Memory]:
    """Copies of the memories whose anchors, related files or relation targets were renamed.

    Memories that mention no renamed file are not returned, so the caller writes only what
    changed. Inputs are not modified.
    """
    if not renames:
        return []
    changed: list[Memory] = []
    for memory in memories:
        anchors = [
            attrs.evolve(anchor, file=_rename(anchor.file, renames))
            if anchor.file in renames
            else anchor
            for anchor in memory.anchors
        ]
        related = list(dict.fromkeys(_rename(path, renames) for path in memory.related_files))
        relations = [
            attrs.evolve(rel, target_file=_rename(rel.target_file, renames))
            if rel.target_file is not None and rel.target_file in renames
            else rel
            for rel in memory.relations
        ]
        touched = (
            any(anchor.file in renames for anchor in memory.anchors)
            or any(path in renames for path in memory.related_files)
            or any(rel.target_file in renames for rel in memory.relations if rel.target_file)
        )
        if touched:
            changed.append(
                attrs.evolve(memory, anchors=anchors, related_files=related, relations=relations)
            )
    return changed
