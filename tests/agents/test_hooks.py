"""Agent hooks answer from the digest: right memories, never twice, never over budget."""

from __future__ import annotations

import io
import json
import sys

import pytest

from engram.agents import Digest, HookBudget, hook_main, run_claude_code_hook
from engram.lifecycle.trust import mirror_rules
from engram.model import CodeAnchor, Memory, MemoryScope, MemoryType
from engram.tokens import estimate_tokens
from engram.workspace import Workspace


def _gotcha(text: str, file: str, line: int = 3) -> Memory:
    return Memory(
        text,
        type=MemoryType.GOTCHA,
        anchors=[CodeAnchor(file, "charge", line, line)],
        confidence=0.8,
    )


@pytest.fixture
def ws(tmp_workspace: Workspace) -> Workspace:
    tmp_workspace.ensure_engram_dir()
    (tmp_workspace.root / "billing.py").write_text("def charge(x):\n    return x\n")
    return tmp_workspace


def _post(ws: Workspace, file: str, session: str = "s1", tool: str = "Read") -> dict[str, object]:
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "cwd": str(ws.root),
        "tool_name": tool,
        "tool_input": {"file_path": str(ws.root / file)},
        "tool_response": {"success": True},
    }


def test_digest_mirrors_writes_and_filters_inactive(ws: Workspace) -> None:
    digest = Digest(ws, rules=mirror_rules())
    active = _gotcha("charge() wants cents", "billing.py")
    stale = _gotcha("old rule", "billing.py")
    stale.deprecated = True
    digest.apply([active, stale])
    assert [m.id for m in digest.for_file("billing.py", ["gotcha"])] == [active.id]
    assert digest.for_file("other.py", ["gotcha"]) == []
    digest.apply(deleted_ids=[active.id])
    assert digest.for_file("billing.py", ["gotcha"]) == []
    assert digest.rebuild([active]) == 1
    assert digest.count() == 1


def test_digest_is_stale_when_lance_manifest_moves(ws: Workspace) -> None:
    digest = Digest(ws, rules=mirror_rules())
    digest.apply([_gotcha("x", "billing.py")])
    assert not digest.is_stale()
    versions = ws.engram_dir / "memories.lance" / "_versions"
    versions.mkdir(parents=True)
    (versions / "2.manifest").write_text("")
    assert digest.is_stale()
    digest.apply()  # a mirror that names no store write cannot vouch for version 2
    assert digest.is_stale()
    digest.apply(writes=[(1, 2)])
    assert not digest.is_stale()


def test_post_tool_use_injects_file_gotchas_once_per_session(ws: Workspace) -> None:
    memory = _gotcha("charge() takes euros but the API wants cents", "billing.py")
    Digest(ws, rules=mirror_rules()).apply([memory])
    first = run_claude_code_hook(ws, _post(ws, "billing.py"), background=False)
    assert first is not None
    output = first["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUse"
    assert "wants cents" in output["additionalContext"]
    assert memory.id in output["additionalContext"]
    assert "(line 4)" in output["additionalContext"]  # the header names the file
    # the same session reading again gets nothing new; another session gets it again
    assert run_claude_code_hook(ws, _post(ws, "billing.py"), background=False) is None
    assert run_claude_code_hook(ws, _post(ws, "billing.py", "s2"), background=False) is not None


def test_injection_never_exceeds_budget(ws: Workspace) -> None:
    Digest(ws, rules=mirror_rules()).apply(
        [_gotcha(f"gotcha number {i} " + "x" * 80, "billing.py") for i in range(30)]
    )
    budget = HookBudget(file_tokens=150)
    result = run_claude_code_hook(ws, _post(ws, "billing.py"), budget, background=False)
    assert result is not None
    text = result["hookSpecificOutput"]["additionalContext"]
    assert estimate_tokens(text) <= 150


def test_session_start_brings_work_state_first(ws: Workspace) -> None:
    decision = Memory(
        "We use sessions, not JWT", type=MemoryType.DECISION, scope=MemoryScope.GLOBAL
    )
    work = Memory("Was halfway through the refund flow", type=MemoryType.WORK_STATE)
    Digest(ws, rules=mirror_rules()).apply([decision, work])
    payload = {"session_id": "s9", "hook_event_name": "SessionStart", "source": "startup"}
    result = run_claude_code_hook(ws, payload, background=False)
    assert result is not None
    text = result["hookSpecificOutput"]["additionalContext"]
    assert text.index("refund flow") < text.index("sessions, not JWT")


def test_hooks_stay_silent_outside_workspace_and_for_other_tools(
    ws: Workspace, tmp_path_factory: pytest.TempPathFactory
) -> None:
    Digest(ws, rules=mirror_rules()).apply([_gotcha("x", "billing.py")])
    outside = tmp_path_factory.mktemp("elsewhere") / "f.py"
    payload = _post(ws, "billing.py")
    payload["tool_input"] = {"file_path": str(outside)}
    assert run_claude_code_hook(ws, payload, background=False) is None
    assert run_claude_code_hook(ws, _post(ws, "billing.py", tool="Bash"), background=False) is None


def test_hook_main_never_fails(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert hook_main("claude-code", "{not json", str(ws.root)) == 0
    assert hook_main("unknown-agent", "{}", str(ws.root)) == 0
    assert capsys.readouterr().out == ""
    assert "hook failed" in (ws.engram_dir / "logs" / "hooks.log").read_text()
    Digest(ws, rules=mirror_rules()).apply([_gotcha("charge wants cents", "billing.py")])
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert hook_main("claude-code", json.dumps(_post(ws, "billing.py")), str(ws.root)) == 0
    out = json.loads(capsys.readouterr().out)
    assert "charge wants cents" in out["hookSpecificOutput"]["additionalContext"]


def test_a_failure_is_logged_in_the_payloads_workspace_not_the_working_directory(
    ws: Workspace, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent names its workspace in the payload's ``cwd``; the hook process may start
    elsewhere. The failure went to the log of the process's directory (here: none, so
    nowhere) and the workspace's ``hooks.log`` stayed empty."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(ws.root / "sub")})
    (ws.root / "sub").mkdir()
    assert hook_main("unknown-agent", payload, None) == 0
    assert "unknown agent" in (ws.engram_dir / "logs" / "hooks.log").read_text()
    assert not (elsewhere / ".engram").exists()


def test_codex_apply_patch_injects_for_each_patched_file(ws: Workspace) -> None:
    (ws.root / "refund.py").write_text("def refund():\n    pass\n")
    Digest(ws, rules=mirror_rules()).apply(
        [_gotcha("charge wants cents", "billing.py"), _gotcha("refunds are async", "refund.py")]
    )
    patch = (
        "*** Begin Patch\n*** Update File: billing.py\n@@\n-x\n+y\n"
        "*** Add File: refund.py\n+pass\n*** End Patch\n"
    )
    payload = {
        "session_id": "codex-1",
        "hook_event_name": "PostToolUse",
        "tool_name": "apply_patch",
        "tool_input": {"input": patch},
    }
    result = run_claude_code_hook(ws, payload, background=False)
    assert result is not None
    text = result["hookSpecificOutput"]["additionalContext"]
    assert "charge wants cents" in text
    assert "refunds are async" in text
    # each file named once, by its part's header, and the footer once for the answer
    assert text.count("billing.py") == 1 and text.count("refund.py") == 1, text
    assert text.count("Confirm or flag") == 1 and text.endswith("--kind incorrect`."), text


def test_one_background_job_of_a_kind_at_a_time(ws: Workspace) -> None:
    import fcntl
    import os

    from engram.agents.hooks import _spawn_background

    lock_path = ws.engram_dir / "agents" / "observe.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a drain is "running"
        assert _spawn_background(ws, ["observe", "--drain-inbox"], "{}") is False
    finally:
        os.close(fd)


def test_hook_path_imports_neither_the_model_nor_heavy_libraries() -> None:
    import subprocess

    probe = (
        "import sys; from engram.cli.main import main; from engram.agents.hooks import hook_main;"
        "print([m for m in ('cattrs', 'engram.model', 'lancedb', 'numpy', 'fastembed')"
        " if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_an_older_digest_layout_is_dropped_and_reads_as_stale(ws: Workspace) -> None:
    import sqlite3

    conn = sqlite3.connect(ws.engram_dir / "digest.sqlite")
    conn.execute("CREATE TABLE memories (id TEXT, record TEXT)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('manifest', '')")
    conn.commit()
    conn.close()
    versions = ws.engram_dir / "memories.lance" / "_versions"
    versions.mkdir(parents=True)
    (versions / "3.manifest").write_text("")
    digest = Digest(ws, rules=mirror_rules())
    assert digest.is_stale()
    assert digest.for_file("billing.py", ["gotcha"]) == []
    digest.rebuild([_gotcha("charge wants cents", "billing.py")])
    assert [b.content for b in digest.for_file("billing.py", ["gotcha"])] == ["charge wants cents"]


def _prompt(text: str, session: str = "p1") -> dict[str, object]:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text}


def test_user_prompt_submit_injects_what_the_prompt_is_about_once(ws: Workspace) -> None:
    """Before: UserPromptSubmit returned nothing (issue 16)."""
    refunds = Memory(
        "Refunds go through the ledger service, never straight to the card API",
        type=MemoryType.DECISION,
    )
    unrelated = Memory("The CI cache key includes the lockfile hash", type=MemoryType.GOTCHA)
    one_word = Memory("The service restarts nightly", type=MemoryType.GOTCHA)
    Digest(ws, rules=mirror_rules()).apply(
        [refunds, unrelated, one_word, _gotcha("charge wants cents", "billing.py")]
    )
    result = run_claude_code_hook(
        ws, _prompt("add partial refunds to the ledger service"), background=False
    )
    assert result is not None
    output = result["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    text = output["additionalContext"]
    assert refunds.id in text
    assert unrelated.id not in text
    assert one_word.id not in text, "sharing one word ('service') is not relevance"
    assert (
        run_claude_code_hook(ws, _prompt("refunds in the ledger service again"), background=False)
        is None
    ), "once per session"
    named = run_claude_code_hook(
        ws, _prompt("why does billing.py look like this?"), background=False
    )
    assert (
        named is not None
        and "charge wants cents" in named["hookSpecificOutput"]["additionalContext"]
    )
    assert run_claude_code_hook(ws, _prompt("hello there", "p2"), background=False) is None


def test_pre_tool_use_edit_injects_the_files_gotchas_before_the_edit(ws: Workspace) -> None:
    """Before: PreToolUse(Edit) returned nothing; the gotcha came only after the edit."""
    memory = _gotcha("charge() takes euros but the API wants cents", "billing.py")
    Digest(ws, rules=mirror_rules()).apply([memory])
    payload = _post(ws, "billing.py", "e1", tool="Edit")
    payload["hook_event_name"] = "PreToolUse"
    result = run_claude_code_hook(ws, payload, background=False)
    assert result is not None
    output = result["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in output, "context only: the permission flow is untouched"
    assert memory.id in output["additionalContext"]
    assert "before changing it" in output["additionalContext"]
    # handed once: neither the edit's PostToolUse nor a second PreToolUse repeats it
    assert run_claude_code_hook(ws, payload, background=False) is None
    assert (
        run_claude_code_hook(ws, _post(ws, "billing.py", "e1", tool="Edit"), background=False)
        is None
    )
    for tool in ("Write", "MultiEdit"):
        other = _post(ws, "billing.py", f"e-{tool}", tool=tool)
        other["hook_event_name"] = "PreToolUse"
        assert run_claude_code_hook(ws, other, background=False) is not None, tool
    read = _post(ws, "billing.py", "e2", tool="Read")
    read["hook_event_name"] = "PreToolUse"
    assert run_claude_code_hook(ws, read, background=False) is None, "only before changes"


def test_digest_writes_find_a_memory_by_index_not_by_scan(ws: Workspace) -> None:
    """Replacing or deleting one memory must not scan the digest (a rebuild of 100,000
    memories at the 58k-file bench did not finish in 30 minutes: each put deleted its text
    and files by an unindexed id); replaced and deleted texts leave no trace in search."""
    import sqlite3

    digest = Digest(ws, rules=mirror_rules())
    first = _gotcha("charge() wants cents", "billing.py")
    other = _gotcha("refunds are queued overnight", "billing.py")
    digest.rebuild([first, other])
    first.content = "charge() wants whole euros"
    digest.apply([first])
    conn = sqlite3.connect(ws.engram_dir / "digest.sqlite")
    try:
        plan = " ".join(
            str(row)
            for sql in (
                "DELETE FROM memory_files WHERE id = 'x'",
                "DELETE FROM memory_text WHERE rowid = 1",
            )
            for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")
        )
        texts = dict(conn.execute("SELECT id, content FROM memory_text").fetchall())
    finally:
        conn.close()
    assert "USING INDEX memory_files_id" in plan, plan
    assert "INDEX 0:=" in plan, plan  # FTS5's rowid lookup (by ``id`` it reads every row)
    assert texts == {first.id: "charge() wants whole euros", other.id: other.content}
    digest.apply(deleted_ids=[first.id])
    conn = sqlite3.connect(ws.engram_dir / "digest.sqlite")
    try:
        left = [r[0] for r in conn.execute("SELECT id FROM memory_text").fetchall()]
    finally:
        conn.close()
    assert left == [other.id]
