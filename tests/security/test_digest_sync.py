"""Issue 13, nothing silently out of sync: after a `kill -9` between a store write and its
digest mirror, the hooks' digest knows it lacks something (a version check, not a time), even
when another process writes afterwards; doctor says so and a rebuild reconciles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.security.conftest import engram

from engram.workspace import Workspace

KILLED_WRITER = """
import os, signal, sys
from engram.app import Engine
from engram.app.remember import remember

engine = Engine.open(sys.argv[1], {"embed": {"model": "none"}})
engine.mirror = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # dies after the commit
remember(engine, "the staging database is db-7; never point tests at it", type="gotcha",
         scope="global")
"""


def _remember(ws: Workspace, text: str) -> None:
    done = engram(ws, "remember", "--type", "decision", "--scope", "global", text)
    assert done.returncode == 0, done.stderr


def test_killed_writer_leaves_a_digest_that_knows_it_is_behind(
    tmp_workspace: Workspace, user_config: Path
) -> None:
    from engram.store.digest import Digest

    ws = tmp_workspace
    for i in range(3):
        _remember(ws, f"release step {i}: tag, build, publish package number {i}")
    assert not Digest(ws).is_stale()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(ws.root)], capture_output=True, timeout=120
    )
    assert killed.returncode == -9
    _remember(ws, "we pin the linter version in CI to keep diffs stable")  # a later writer

    stored = json.loads(engram(ws, "list", "--json").stdout)["memories"]
    assert len(stored) == 5
    digest = Digest(ws)
    assert digest.count() == 4  # the killed write never reached it
    assert digest.is_stale()  # ... and the digest knows, although a write came after
    doctor = json.loads(engram(ws, "doctor", "--json").stdout)
    check = next(c for c in doctor["checks"] if c["name"] == "agent digest")
    assert not check["ok"] and "behind the store" in check["detail"]

    # SessionStart, run as Claude Code runs it, briefs the session with all five memories
    payload = {"hook_event_name": "SessionStart", "session_id": "s-after-kill", "cwd": str(ws.root)}
    hook = engram(ws, "hook", "claude-code", stdin=json.dumps(payload))
    assert hook.returncode == 0, hook.stderr
    brief = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "db-7" in brief and "linter version" in brief
    assert all(f"package number {i}" in brief for i in range(3))
    digest = Digest(ws)
    assert digest.count() == 5 and not digest.is_stale()
    doctor = json.loads(engram(ws, "doctor", "--json").stdout)
    assert next(c for c in doctor["checks"] if c["name"] == "agent digest")["ok"]


def test_digest_rebuild_command_reconciles(tmp_workspace: Workspace, user_config: Path) -> None:
    from engram.store.digest import Digest

    ws = tmp_workspace
    _remember(ws, "the release checklist lives in docs/release.md")
    (ws.engram_dir / "digest.sqlite").unlink()
    _remember(ws, "deploys happen on tuesdays only")  # a fresh digest cannot vouch for the first
    assert Digest(ws).is_stale()
    assert engram(ws, "digest", "--rebuild").returncode == 0
    digest = Digest(ws)
    assert digest.count() == 2 and not digest.is_stale()
