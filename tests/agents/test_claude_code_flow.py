"""A whole Claude Code session through the plugin's hook command, as Claude Code runs it.

Every hook is a fresh ``engram hook claude-code`` process; Stop hands the queued session to
one background observer drain, which promotes what was learned (for review) into the store,
and the next session's SessionStart gets it back through the digest.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from engram.agents.deferred import wait_for_queued
from engram.workspace import Workspace

SESSION = "cc-flow-1"


def hook(ws: Workspace, payload: dict[str, Any], env: dict[str, str]) -> dict[str, Any] | None:
    body = {"session_id": SESSION, "cwd": str(ws.root), "transcript_path": "/dev/null", **payload}
    done = subprocess.run(
        [sys.executable, "-m", "engram", "hook", "claude-code"],
        input=json.dumps(body),
        capture_output=True,
        text=True,
        env=env,
        cwd=ws.root,
        check=True,
    )
    return json.loads(done.stdout) if done.stdout.strip() else None


def drain_finished(ws: Workspace) -> bool:
    wait_for_queued(ws)  # every hook that answered has queued its payload and started its job
    lock = ws.engram_dir / "agents" / "observe.lock"
    inbox = ws.engram_dir / "agents" / "inbox"
    if any(inbox.glob("*.jsonl")) or any(inbox.glob("*.draining")):
        return False
    if not lock.exists():
        return True
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_session_is_observed_and_its_lessons_come_back(tmp_workspace: Workspace) -> None:
    ws = tmp_workspace
    (ws.root / "src").mkdir()
    (ws.root / "src/keys.py").write_text('def session_key(user):\n    return f"sess:{user.id}"\n')
    env = {**os.environ, "ENGRAM_EMBED__MODEL": "none"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "engram",
            "remember",
            "--workspace",
            str(ws.root),
            "--type",
            "gotcha",
            "--file",
            "src/keys.py",
            "--line",
            "1",
            "session keys are shared by every tenant",
        ],
        check=True,
        capture_output=True,
        env=env,
    )

    start = hook(ws, {"hook_event_name": "SessionStart", "source": "startup"}, env)
    read = hook(
        ws,
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": str(ws.root / "src/keys.py")},
            "tool_response": {"type": "text"},
        },
        env,
    )
    assert read is not None
    assert "shared by every tenant" in read["hookSpecificOutput"]["additionalContext"]
    if start is not None:  # the gotcha may already have come with the session start
        assert "additionalContext" in start["hookSpecificOutput"]

    failing = (
        "tests/test_login.py F\nE   KeyError: 'sess:4821'\n"
        "FAILED tests/test_login.py::test_login_tenant - KeyError: 'sess:4821'\n"
        "1 failed, 13 passed in 0.84s"
    )
    hook(
        ws,
        {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest tests/test_login.py -q"},
            "error": failing,
        },
        env,
    )
    hook(
        ws,
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_input": {
                "file_path": str(ws.root / "src/keys.py"),
                "old_string": 'f"sess:{user.id}"',
                "new_string": 'f"sess:{tenant.id}:{user.id}"',
            },
            "tool_response": {"filePath": str(ws.root / "src/keys.py")},
        },
        env,
    )
    hook(
        ws,
        {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest tests/test_login.py -q"},
            "error": failing,
        },
        env,
    )
    hook(
        ws,
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "14 passed in 0.88s", "stderr": "", "interrupted": False},
        },
        env,
    )
    hook(
        ws,
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git commit -am 'auth: tenant id in session keys'"},
            "tool_response": {
                "stdout": "[main 9c1e2f7] auth: tenant id in session keys",
                "stderr": "",
                "interrupted": False,
            },
        },
        env,
    )
    assert hook(ws, {"hook_event_name": "Stop", "stop_hook_active": False}, env) is None

    deadline = time.monotonic() + 120
    while not drain_finished(ws) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert drain_finished(ws), (ws.engram_dir / "logs" / "hooks.log").read_text()

    listed = subprocess.run(
        [sys.executable, "-m", "engram", "list", "--workspace", str(ws.root), "--json"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    memories = json.loads(listed.stdout)
    memories = memories if isinstance(memories, list) else memories.get("memories", [])
    learned = [m for m in memories if m.get("source") == "observer_inferred"]
    assert learned, memories
    assert all(m["needs_review"] for m in learned)
    assert any("KeyError" in m["content"] for m in learned)
    log = ws.engram_dir / "logs" / "hooks.log"
    assert "Traceback" not in (log.read_text() if log.exists() else "")
    # the gotcha handed to this session counted as a use and, as the session committed
    # after its tests passed, the session is recorded; usage is not confidence (docs/trust.md)
    handed = next(m for m in memories if m["content"] == "session keys are shared by every tenant")
    assert handed["access_count"] == 1
    assert SESSION in handed["provenance"]["confirmed_by_sessions"]
    assert handed["confidence"] == 0.8


def test_plugin_registers_every_event_the_observer_reads() -> None:
    hooks = json.loads(
        (Path(__file__).resolve().parents[2] / "clients/claude-code/hooks/hooks.json").read_text()
    )["hooks"]
    assert {"SessionStart", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"} <= set(hooks)
