"""``MemoryStore.frame()``: the memories as Arrow columns, equal to decoding every memory."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pyarrow as pa
import pytest

import engram.store.frame as frame_module
from engram.model import (
    CodeAnchor,
    Memory,
    MemoryRelation,
    MemoryType,
    Provenance,
    RelationType,
    shared_by_text,
)
from engram.store import MemoryFilter, MemoryStore
from engram.store.frame import frame_from_memories, parse_records
from engram.workspace import Workspace

T0 = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)


def assorted() -> list[Memory]:
    """Memories exercising every column: teams, conflicts, pins, decay, odd text."""
    a = Memory(
        'text with "created_at":"1999-01-01T00:00:00+00:00" and "team":{"by":"Eve"}\nline 2',
        type=MemoryType.GOTCHA,
        anchors=[CodeAnchor("src/app/a.py", "f")],
        related_files=["src/app/b.py", "src/app/a.py"],
        created_at=T0,
        updated_at=T0 + timedelta(days=3),
        last_accessed_at=T0 + timedelta(days=5),
    )
    b = Memory("a decision never decays", type=MemoryType.DECISION, pinned=True, confidence=1.0)
    b.relations.append(MemoryRelation(RelationType.CONFLICTS_WITH, target_memory_id=a.id))
    b.relations.append(MemoryRelation(RelationType.SUPERSEDES, target_memory_id=a.id))
    c = Memory("shared by Ana", extra={"team": {"by": "Ana", "at": 3}}, needs_review=True)
    d = Memory("shared by nobody in particular", extra={"team": {}}, deprecated=True)
    e = Memory("odd team value stays local", extra={"team": "weird"}, stale_at=T0)
    f = Memory("zero half-life means no decay", decay_half_life_days=0.0, confidence=0.3)
    g = Memory("ünïcode ✓ and an author", provenance=Provenance(author="Bo"))
    g.relations.append(MemoryRelation(RelationType.CONFLICTS_WITH, target_memory_id=None))
    h = Memory("a person flagged it as not useful", flags=["code_changed", "not_useful"])
    i = Memory("its code changed: in review, not flagged", flags=["code_changed"])
    return [a, b, c, d, e, f, g, h, i]


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def reference(store: MemoryStore) -> list[dict[str, Any]]:
    return rows(frame_from_memories(store.list(MemoryFilter(include_deprecated=True))))


def test_frame_equals_decoding_every_memory(tmp_workspace: Workspace) -> None:
    memories = assorted()
    first = MemoryStore(tmp_workspace)
    first.add(memories)
    first.close()
    store = MemoryStore(tmp_workspace)  # loaded from disk: the records are one Arrow column
    try:
        later = Memory("written after the load", type=MemoryType.WORK_STATE)
        store.add([later])
        store.update([attrs.evolve(memories[0], content="changed after the load")])
        store.delete([memories[5].id])
        got = rows(store.frame())
        assert got == reference(store)
        assert len(got) == len(memories)  # one deleted, one added
        by_id = {r["id"]: r for r in got}
        assert by_id[memories[1].id]["conflicts_with"] == [memories[0].id]
        assert "Ana" in by_id[memories[2].id]["shared_by"]
        assert by_id[memories[2].id]["shared_by"] == shared_by_text(memories[2])
        assert by_id[memories[3].id]["shared_by"]
        assert by_id[memories[3].id]["shared_by"] == shared_by_text(memories[3])
        assert by_id[memories[3].id]["shared_by"]
        assert by_id[memories[7].id]["flagged"] and not by_id[memories[8].id]["flagged"]
        assert by_id[memories[4].id]["shared_by"] is None
        assert by_id[memories[1].id]["half_life_days"] is None
        assert by_id[memories[0].id]["files"] == ["src/app/a.py", "src/app/b.py"]
        assert by_id[memories[0].id]["created_at"] == T0
        assert store.frame().schema == frame_module.frame_schema()
    finally:
        store.close()


def test_records_arrow_refuses_are_decoded_one_by_one(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(tmp_workspace)
    try:
        store.add(assorted())
        monkeypatch.setattr(frame_module, "_parse_chunk", lambda records: None)
        assert rows(store.frame()) == reference(store)
    finally:
        store.close()


def test_a_refused_record_costs_only_its_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frame_module, "CHUNK", 2)
    good = json.dumps({"schema_version": 1, "content": "x", "confidence": 0.5,
                       "created_at": T0.isoformat(), "last_accessed_at": T0.isoformat(),
                       "relations": []}, separators=(",", ":"))  # fmt: skip
    bad = good.replace('"confidence":0.5', '"confidence":"high"')
    old = good.replace('"schema_version":1', '"schema_version":0')
    parsed, ok = parse_records(pa.array([good, good, good, bad, old, None]))
    assert ok.tolist() == [True, True, False, False, False, False]
    assert parsed.num_rows == 6
    assert parsed.column("confidence").to_pylist()[:3] == [0.5, 0.5, None]
