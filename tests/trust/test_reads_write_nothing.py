"""Reads write nothing but usage (docs/trust.md "What never moves a memory").

Every store write and audit entry is counted while each read runs: every use case that
declares it changes nothing (``touched`` is ``None``: search, context, list, review,
recipes, show, log, impact, session summary, stats) on each surface that offers it, hover
and diagnostics' inputs, and the agent hooks as Claude Code sends them. A read may count
one use (``access_count``); any other change of a stored record, a new or deleted record,
or an audit entry is a read that writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pytest
from tests.conftest import git

from engram.agents.hooks import run_claude_code_hook
from engram.api import all_use_cases
from engram.app import Engine, memories
from engram.app.remember import remember
from engram.errors import EngramError
from engram.lifecycle import trust as rules
from engram.lsp.hover import hover_markdown
from engram.model import AuditEntry, Memory
from engram.store import AuditLog
from engram.store.memory_store import MemoryStore
from engram.workspace import Workspace

NO_MODEL = {"embed": {"model": "none"}}


@attrs.define
class Writes:
    """What was written: store calls (name, records or ids) and audit entries."""

    store: list[tuple[str, Any]] = attrs.field(factory=list)
    audit: list[AuditEntry] = attrs.field(factory=list)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    seen = Writes()
    for name in ("add", "update", "delete"):
        original = getattr(MemoryStore, name)

        def counted(self: MemoryStore, *args: Any, _o: Any = original, _n: str = name,
                    **kwargs: Any) -> Any:  # fmt: skip
            seen.store.append((_n, list(args[0]) if args else []))
            return _o(self, *args, **kwargs)

        monkeypatch.setattr(MemoryStore, name, counted)
    add = AuditLog.add

    def logged(self: AuditLog, entries: Sequence[AuditEntry]) -> range:
        seen.audit.extend(entries)
        return add(self, entries)

    monkeypatch.setattr(AuditLog, "add", logged)
    return seen


@pytest.fixture
def engine(tmp_workspace: Workspace, writes: Writes) -> Iterator[Engine]:
    root = tmp_workspace.root
    (root / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return TIMEOUT\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "jobs")
    with Engine.open(root, NO_MODEL) as opened:
        mine = remember(opened, "The job timeout in jobs.py is 30s.", file="jobs.py").memory
        remember(opened, "The job timeout in jobs.py is 90s.", file="jobs.py")  # a conflict
        remember(opened, "run() retries the job by default.", source="agent_explicit",
                 actor=rules.Actor.agent("mcp"))  # fmt: skip
        flagged = remember(opened, "Cache warming is enabled for jobs.", scope="global").memory
        memories.flag(opened, flagged.id, "incorrect")
        memories.confirm(opened, mine.id)
        writes.store.clear()
        writes.audit.clear()
        yield opened


def _only_usage(engine: Engine, before: dict[str, Memory], writes: Writes, what: str) -> int:
    """Check the writes of one read (usage only) and return how many uses it counted.
    The read itself writes nothing: its uses wait (``app.usage.PendingUses``), and are
    written here as the engine's timer or its close would."""
    assert not writes.store, (what, "written on the read's path", writes.store)
    engine.uses.write()
    assert not writes.audit, (what, [(e.event, e.memory_id) for e in writes.audit])
    uses = 0
    for name, records in writes.store:
        assert name == "update", (what, name, records)
        for record in records:
            old = before[record.id]
            assert record == rules.count_use(old), (what, record.id)
            before[record.id] = record
            uses += 1
    writes.store.clear()
    return uses


def _stored(engine: Engine) -> dict[str, Memory]:
    return {m.id: m for m in engine.store.list(engine.filter(include_deprecated=True))}


def _reads(engine: Engine) -> list[tuple[str, dict[str, object]]]:
    some = sorted(_stored(engine))[0]
    return [
        ("search", {"query": "job timeout"}),
        ("context", {"file": "jobs.py"}),
        ("context", {"query": "job timeout retries"}),
        ("list", {}),
        ("review", {}),
        ("recipes", {}),
        ("show", {"id": some}),
        ("log", {"id": some}),
        ("impact", {"target": "jobs.py"}),
        ("session_summary", {}),
        ("stats", {}),
    ]


def test_every_read_use_case_on_every_surface_writes_only_usage(
    engine: Engine, writes: Writes
) -> None:
    cases = {uc.name: uc for uc in all_use_cases()}
    reads = _reads(engine)
    declared = {name for name, uc in cases.items() if uc.touched is None}
    # every declared read is here, but those that act rather than read: feeding the
    # observer, opening a file, re-indexing, writing a report file, checking the install
    assert declared - {n for n, _ in reads} == {"observe", "open", "reindex", "report", "doctor"}
    before = _stored(engine)
    uses: dict[str, int] = {}
    for name, raw in reads:
        usecase = cases[name]
        for surface in sorted(usecase.surfaces):
            try:
                result = usecase.execute(engine, usecase.parse(raw, surface), surface)
                usecase.to_text(result)
            except EngramError:
                pass  # an error is a read too: it must not write either
            what = f"{name} on {surface.value}"
            uses[what] = _only_usage(engine, before, writes, what)
    assert _stored(engine) == before
    assert uses["search on mcp"] and uses["context on mcp"], uses  # the count is seen


def test_hover_and_diagnostics_inputs_write_nothing(engine: Engine, writes: Writes) -> None:
    """What a language server reads, in-process and from the workspace engine (``lsp``
    requests: a file's snapshot, hover's impact line, the anchored files of pull
    diagnostics, a session's ledger)."""
    from engram.lsp.served import answer

    found = memories.for_file(engine, "jobs.py")
    partners = memories.conflict_partners(engine, found)
    assert hover_markdown(found, None, engine.clock(), partners=partners)
    ids = sorted(_stored(engine))
    for request in (
        {"what": "snapshot", "file": "jobs.py"},
        {"what": "impact", "file": "jobs.py"},
        {"what": "anchored"},
        {"what": "memories", "ids": ids, "review": 10},
    ):
        assert answer(engine, request), request
        assert not writes.store and not writes.audit, (request, writes)


@pytest.mark.parametrize(
    "event",
    ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"],
)
def test_a_hook_changes_no_trust(engine: Engine, writes: Writes, event: str) -> None:
    """A hook may count uses, record a successful session in provenance and hand the
    observer what it saw; it never moves, rewrites or creates a memory on its own."""
    root = engine.workspace.root
    payload: dict[str, object] = {"session_id": "s1", "hook_event_name": event,
                                  "cwd": str(root), "prompt": "fix the job timeout"}  # fmt: skip
    if event in ("PreToolUse", "PostToolUse"):
        payload.update(tool_name="Edit", tool_input={"file_path": str(root / "jobs.py")},
                       tool_response={"success": True})  # fmt: skip
    before = {mid: rules.snapshot(m) for mid, m in _stored(engine).items()}
    out = run_claude_code_hook(engine.workspace, payload, background=False)
    json.dumps(out)
    assert not writes.audit, [(e.event, e.actor) for e in writes.audit]
    assert not any(name in ("add", "delete") for name, _ in writes.store), writes.store
    after = {mid: rules.snapshot(m) for mid, m in _stored(engine).items()}
    assert after == before
