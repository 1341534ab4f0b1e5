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

    Linear in the renames: ``pointing`` keeps, per current name, the names mapped to it, so
    a rename moves those entries instead of scanning the whole map (the scan made it
    quadratic: ~8 CPU s for the 7,978 renames of the 58k-file workspace, issue 18,
    docs/codegraph.md "The CPU of a cold index"). The map is the one the scan built,
    insertion order included.
    """
    final: dict[str, str] = {}
    pointing: dict[str, set[str]] = {}  # name -> the keys whose value it is
    for old, new in renames:
        if not old or not new or old == new:
            continue
        moved = pointing.pop(old, None)
        if moved:
            for key in moved:
                final[key] = new
            pointing.setdefault(new, set()).update(moved)
        previous = final.get(old)
        if previous is not None:
            pointing[previous].discard(old)
        # no chaining through ``new``: a rename *into* a name says nothing about the file
        # that had that name before (b→c then a→b keeps b→c for older memories)
        final[old] = new
        pointing.setdefault(new, set()).add(old)
        if final.get(new) == new:  # renamed back where it started: no entry
            del final[new]
            pointing[new].discard(new)
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
