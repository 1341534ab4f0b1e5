"""Issue 12 points 2 and 3 on the real engine, in-process: a flagged memory reaches no
output, and a conflict pair is shown together and marked on every surface (docs/trust.md).

Each test failed on the main before: search and context returned a memory flagged
``outdated``, the agents' digest injected it, and SessionStart handed over "timeout is 30s"
and "… 90s" with no marker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engram.agents.hooks import run_claude_code_hook
from engram.app import Engine
from engram.app.memories import conflict_partners, flag, for_file
from engram.app.recall import context, search
from engram.app.remember import remember
from engram.config import EmbedConfig, EngramConfig
from engram.workspace import Workspace


@pytest.fixture
def engine(tmp_workspace: Workspace) -> Iterator[Engine]:
    (tmp_workspace.root / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return 1\n")
    eng = Engine(tmp_workspace, EngramConfig(embed=EmbedConfig(model="none")))
    try:
        yield eng
    finally:
        eng.close()


def _hook(ws: Workspace, event: str, session: str, **extra: object) -> str:
    payload = {"hook_event_name": event, "session_id": session, **extra}
    out = run_claude_code_hook(ws, payload, background=False)
    return "" if out is None else str(out["hookSpecificOutput"]["additionalContext"])


def test_a_flagged_memory_reaches_no_output(engine: Engine, tmp_workspace: Workspace) -> None:
    kept = remember(engine, "run() retries the job twice.", file="jobs.py", scope="global").memory
    gone = remember(
        engine, "TIMEOUT in jobs.py is read from JOBS_TIMEOUT.", file="jobs.py", scope="global"
    ).memory
    flag(engine, gone.id, "outdated")
    assert gone.id not in {h.memory.id for h in search(engine, "jobs TIMEOUT run retries")}
    pack = context(engine, file="jobs.py")
    assert gone.id not in pack.text and kept.id in pack.text
    assert gone.id not in {m.id for m in for_file(engine, "jobs.py")}
    for event, extra in [
        ("SessionStart", {}),
        ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": "jobs.py"}}),
    ]:
        text = _hook(tmp_workspace, event, f"s-{event}", **extra)
        assert gone.id not in text and kept.id in text


def test_a_conflict_pair_is_shown_together_and_marked_everywhere(
    engine: Engine, tmp_workspace: Workspace
) -> None:
    a = remember(engine, "The job timeout is 30s.", file="jobs.py", scope="global")
    b = remember(engine, "The job timeout is 90s.", file="jobs.py", scope="global")
    assert b.conflicts, "the second contradicts the first"
    a_id, b_id = a.memory.id, b.memory.id
    hits = search(engine, "job timeout 30s", k=1)  # k=1: the other side still comes along
    assert [h.memory.id for h in hits][:2] in ([a_id, b_id], [b_id, a_id])
    assert all("CONFLICT with" in h.conflict_mark for h in hits)
    pack = context(engine, file="jobs.py")
    assert f"CONFLICT with {a_id}" in pack.text and f"CONFLICT with {b_id}" in pack.text
    partners = conflict_partners(engine, for_file(engine, "jobs.py"))  # hover, diagnostics
    assert partners[a_id][0][0] == b_id and partners[b_id][0][0] == a_id
    session = _hook(tmp_workspace, "SessionStart", "s1")
    lines = [line for line in session.splitlines() if a_id in line or b_id in line]
    assert len(lines) == 2 and all("CONFLICT with" in line for line in lines)
    # a person settles it: the flagged side disappears, the other is shown alone, unmarked
    flag(engine, b_id, "incorrect")
    pack = context(engine, file="jobs.py")
    assert b_id not in pack.text and "CONFLICT" not in pack.text
    session = _hook(tmp_workspace, "SessionStart", "s2")
    assert a_id in session and b_id not in session and "CONFLICT" not in session
