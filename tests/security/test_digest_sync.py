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


def test_an_unreadable_digest_is_named_and_replaced(
    tmp_workspace: Workspace, user_config: Path
) -> None:
    """A digest that is not an SQLite database (a crash while it was first written, a file
    copied over it): every hook answered nothing, `engram doctor` stopped with "internal
    error: DatabaseError: file is not a database" and so did `engram digest --rebuild`, the
    command doctor's fix names. It is a cache of the store: readers take it as missing (so
    it reads as stale), doctor names it, and SessionStart and the rebuild replace it."""
    from engram.store.digest import Digest

    ws = tmp_workspace
    _remember(ws, "the release checklist lives in docs/release.md")
    engram(ws, "stop")  # the engine keeps its digest connection open; a fresh one reads it
    for suffix in ("-wal", "-shm"):
        (ws.engram_dir / f"digest.sqlite{suffix}").unlink(missing_ok=True)
    (ws.engram_dir / "digest.sqlite").write_text("garbage, not a database\n")

    digest = Digest(ws)
    assert digest.is_stale() and digest.for_file("docs/release.md", ["decision"]) == []
    assert digest.unreadable is not None and "not a database" in digest.unreadable

    doctor = engram(ws, "doctor", "--json")
    assert doctor.returncode in (0, 1), doctor.stderr
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "agent digest")
    assert not check["ok"] and "unreadable" in check["detail"]
    assert "engram digest --rebuild" in check["detail"]

    payload = {"hook_event_name": "SessionStart", "session_id": "s-bad", "cwd": str(ws.root)}
    hook = engram(ws, "hook", "claude-code", stdin=json.dumps(payload))
    assert hook.returncode == 0, hook.stderr
    assert "docs/release.md" in json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]

    (ws.engram_dir / "digest.sqlite").write_bytes(b"\0" * 4096)
    rebuilt = engram(ws, "digest", "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    digest = Digest(ws)
    assert digest.count() == 1 and not digest.is_stale() and digest.unreadable is None
