"""The observer plugged into the real Engine (LanceDB store, no embedding model)."""

from __future__ import annotations

import json
import subprocess
import sys

from engram.app import Engine
from engram.app.memories import list_memories
from engram.app.observe import observe


def test_engine_observe_promotes_into_the_store(tmp_workspace) -> None:  # type: ignore[no-untyped-def]
    engine = Engine.open(tmp_workspace, overrides={"embed": {"model": "none"}})
    try:
        sid = "e1"
        for event in [
            {"session_id": sid, "kind": "tool_result", "tool": "Read", "files": ["app/auth.py"]},
            {
                "session_id": sid,
                "kind": "reasoning",
                "text": "Actually, the session key must include the tenant id, not the user id.",
            },
            {
                "session_id": sid,
                "kind": "tool_result",
                "tool": "Edit",
                "files": ["app/auth.py"],
                "old_text": "key = u",
                "new_text": "key = (t, u)",
            },
            {
                "session_id": sid,
                "kind": "tool_result",
                "tool": "Bash",
                "command": "git commit -am x",
                "exit_code": 0,
                "output": "[main 1234567] x",
            },
        ]:
            result = observe(engine, event)
        assert result.promotion is not None and result.promotion.error is None
        (memory,) = list_memories(engine, needs_review=True)
        assert memory.type.value == "gotcha" and memory.provenance.commit_sha == "1234567"
        assert memory.related_files == ["app/auth.py"]
        end = observe(engine, {"session_id": sid, "kind": "session_end"})
        assert end.summary is not None and end.summary.to_dict()["needs_review"] == [memory.id]
        assert json.dumps(end.to_dict())  # serialisable for the CLI and the LSP
    finally:
        engine.close()


def test_cli_observe_claude_code_hook(tmp_workspace) -> None:  # type: ignore[no-untyped-def]
    hook = {
        "session_id": "cc1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(tmp_workspace.root),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_use_id": "toolu_1",
        "tool_input": {"file_path": str(tmp_workspace.root / "a.py")},
        "tool_response": {},
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engram.cli.main",
            "observe",
            "--format",
            "claude-code",
            "--workspace",
            str(tmp_workspace.root),
        ],
        input=json.dumps(hook),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    checkpoint = tmp_workspace.engram_dir / "observer" / "cc1.jsonl"
    assert json.loads(checkpoint.read_text().splitlines()[0])["event"]["files"] == ["a.py"]
