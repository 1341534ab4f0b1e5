"""A drain takes every session's queued hook payloads, not only the sessions it was started for.

Found by the live Claude Code session test (docs/agents.md, "A live Claude Code session"):
SessionEnd arrives a moment after Stop; when the drain Stop started is still running, the
hook can start no second one (one background job of a kind), so SessionEnd's payload sat
in the inbox, and a later session's drain only read its own file.
"""

from __future__ import annotations

import json

from tests.cli.conftest import RunCli

from engram.workspace import Workspace


def _queue(ws: Workspace, session: str, *payloads: dict[str, object]) -> None:
    inbox = ws.engram_dir / "agents" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    with (inbox / f"{session}.jsonl").open("a", encoding="utf-8") as fh:
        for payload in payloads:
            fh.write(json.dumps(payload) + "\n")


def _event(ws: Workspace, session: str, name: str) -> dict[str, object]:
    return {"session_id": session, "hook_event_name": name, "cwd": str(ws.root)}


def test_a_drain_also_takes_a_stranded_session_end(tmp_workspace: Workspace, cli: RunCli) -> None:
    ws = tmp_workspace
    ws.ensure_engram_dir()
    # the earlier session's SessionEnd, queued while its Stop drain was running
    _queue(ws, "old", _event(ws, "old", "SessionEnd"))
    # this session's Stop: the hook queued it and started a drain naming "new"
    stop = _event(ws, "new", "Stop")
    _queue(ws, "new", _event(ws, "new", "SessionStart"), stop)
    done = cli("observe", "--format", "claude-code", "--drain-inbox", stdin=json.dumps(stop))
    assert done.code == 0, done.err
    inbox = ws.engram_dir / "agents" / "inbox"
    assert sorted(p.name for p in inbox.iterdir()) == []  # nothing left waiting
    # the earlier session was ended: its summary written, its event log closed
    assert (ws.engram_dir / "observer" / "summaries" / "old.json").exists(), done.err
    assert (ws.engram_dir / "observer" / "done" / "old.jsonl").exists()
    assert (ws.engram_dir / "observer" / "new.jsonl").exists()  # this session runs on
