"""Every count reads the rule the outputs hide by (docs/trust.md, "States").

6b5cf2a made the report's frame read a flag from the record's ``flags`` (a correction
kind there: ``Memory.flagged``), beside ``engram stats`` reading ``is_shown``. The two
rules part on a record whose ``flags`` names a correction with no flag of the trust model
behind it (an export or team file saying ``"flags": ["outdated"]``): every output shows it,
``stats`` counted it shown, and the report counted it retired. The report's frame now asks
``is_shown`` itself (``lifecycle.trust.hiding``) of every record that may hold a flag.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.app import Engine
from engram.app.doctor import stats
from engram.app.memories import confirm, flag, forget, list_memories
from engram.app.portability import import_file
from engram.app.remember import remember
from engram.app.report import report
from engram.lifecycle import trust as rules
from engram.lifecycle.portability import export_memories
from engram.model import Memory
from engram.report.data import MemoryColumns
from engram.workspace import Workspace


@pytest.fixture
def engine(tmp_workspace: Workspace) -> Iterator[Engine]:
    with Engine.open(tmp_workspace.root, {"embed": {"model": "none"}}) as opened:
        yield opened


def test_a_memory_every_output_shows_is_counted_shown_by_the_report(
    engine: Engine, tmp_path: Path
) -> None:
    said = Memory("Invoices are rounded half-up before tax.", flags=["outdated"])
    exported = tmp_path / "export.json"
    exported.write_text(export_memories([said], "json", now=datetime.now(UTC)))
    import_file(engine, exported)
    assert [m.content for m in list_memories(engine)] == [said.content]  # shown
    counts = stats(engine)
    totals = report(engine).totals
    assert (counts["shown"], counts["deprecated"]) == (1, 0)
    assert (totals["memories"], totals["deprecated"]) == (1, 0)  # was (0, 1)


def test_every_count_of_every_state_reads_the_one_rule(engine: Engine) -> None:
    """A memory in each state a person can bring about: the store's frame (Arrow; records
    decoded only where they may hold a flag) hides exactly what ``is_shown`` hides, and
    ``stats`` and the report count the same memories."""
    texts = ["drains", "sleeps", "grows", "shrinks", "restarts", "pauses"]
    said = [
        remember(engine, f"The worker pool {w} before note {n}.", scope="global").memory
        for n, w in enumerate(texts)
    ]
    remember(engine, "The agent thinks the queue is FIFO.", source="agent_explicit")
    confirm(engine, said[0].id)
    flag(engine, said[1].id, "wrong_scope")
    flag(engine, said[2].id, "incorrect")
    forget(engine, said[3].id)
    flag(engine, said[4].id, "outdated")
    everything = engine.store.list(engine.filter(include_deprecated=True))
    shown = {m.id for m in everything if rules.is_shown(m)}
    assert shown == {m.id for m in list_memories(engine)} and len(shown) == 3

    for columns in (
        MemoryColumns.of(engine.store.frame(rules.hiding())),
        MemoryColumns.from_memories(everything),
    ):
        ids = columns.table.column("id").to_pylist()
        assert {i for i, s in zip(ids, columns.shown.tolist(), strict=True) if s} == shown
    counts = stats(engine)
    totals = report(engine).totals
    assert totals["memories"] == counts["shown"] == 3
    assert totals["deprecated"] == counts["deprecated"] == 4
    assert totals["active"] == counts["active"] and totals["in_review"] == counts["needs_review"]
