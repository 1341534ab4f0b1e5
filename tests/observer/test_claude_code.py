"""The Claude Code hook adapter on payloads shaped like the real hooks send them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram.observer import InvalidEvent, parse_event
from engram.observer.claude_code import adapt, handle_hook

BASE = {
    "session_id": "8c35adc1-4b7e-4a51-9f0e-2b1f7d0c9a11",
    "transcript_path": "/home/dev/.claude/projects/-srv-app/8c35adc1.jsonl",
    "cwd": "/srv/app",
    "permission_mode": "default",
}


def payload(hook: str, **fields: Any) -> dict[str, Any]:
    return {**BASE, "hook_event_name": hook, **fields}


def test_session_start_and_prompt() -> None:
    (start,) = adapt(payload("SessionStart", source="startup", model="claude-sonnet"))
    assert start["kind"] == "session_start" and start["extra"]["source"] == "startup"
    (prompt,) = adapt(
        payload(
            "UserPromptSubmit", prompt="No, that's wrong. Actually, the API uses v2 ids, not v1."
        )
    )
    assert prompt["kind"] == "reasoning" and prompt["extra"] == {"from": "user"}


def test_read_edit_write_round_trip() -> None:
    (call,) = adapt(
        payload(
            "PreToolUse",
            tool_name="Read",
            tool_use_id="toolu_01",
            tool_input={"file_path": "/srv/app/src/auth.py"},
        )
    )
    assert call == {
        "session_id": BASE["session_id"],
        "tool_use_id": "toolu_01",
        "kind": "tool_call",
        "tool": "Read",
        "files": ["/srv/app/src/auth.py"],
    }
    (result,) = adapt(
        payload(
            "PostToolUse",
            tool_name="Read",
            tool_use_id="toolu_01",
            tool_input={"file_path": "/srv/app/src/auth.py"},
            tool_response={
                "type": "text",
                "file": {"filePath": "/srv/app/src/auth.py", "content": "x" * 4000, "numLines": 80},
            },
        )
    )
    assert result["kind"] == "tool_result" and result["tokens"] == 1000
    (edit,) = adapt(
        payload(
            "PostToolUse",
            tool_name="Edit",
            tool_use_id="toolu_02",
            tool_input={
                "file_path": "/srv/app/src/auth.py",
                "old_string": "a = 1",
                "new_string": "a = 2",
                "replace_all": False,
            },
            tool_response={
                "filePath": "/srv/app/src/auth.py",
                "oldString": "a = 1",
                "newString": "a = 2",
                "structuredPatch": [],
                "userModified": False,
            },
        )
    )
    assert edit["old_text"] == "a = 1" and edit["new_text"] == "a = 2"
    (multi,) = adapt(
        payload(
            "PostToolUse",
            tool_name="MultiEdit",
            tool_input={
                "file_path": "/srv/app/b.py",
                "edits": [{"old_string": "x", "new_string": "y"}],
            },
            tool_response={},
        )
    )
    assert multi["old_text"] == "x"
    for event in (call, result, edit, multi):
        parse_event(event)


def test_bash_success_and_failure() -> None:
    (ok,) = adapt(
        payload(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": "pytest -q", "description": "Run tests"},
            tool_response={
                "stdout": "12 passed in 0.4s",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            },
        )
    )
    assert ok["command"] == "pytest -q" and "12 passed" in ok["output"]
    assert "exit_code" not in ok  # success is read from the test summary
    (bad,) = adapt(
        payload(
            "PostToolUseFailure",
            tool_name="Bash",
            tool_use_id="toolu_9",
            tool_input={"command": "npm test"},
            error="Command exited with non-zero status code 2",
            is_interrupt=False,
        )
    )
    assert bad["exit_code"] == 2 and bad["error"].startswith("Command exited")


def test_web_tools_and_stop_and_end() -> None:
    (fetch,) = adapt(
        payload(
            "PostToolUse",
            tool_name="WebFetch",
            tool_input={"url": "https://docs.example.org/x", "prompt": "timeouts"},
            tool_response={
                "bytes": 513,
                "code": 200,
                "result": "Use Timeout(5).",
                "url": "https://docs.example.org/x",
            },
        )
    )
    assert fetch["url"] == "https://docs.example.org/x" and fetch["output"] == "Use Timeout(5)."
    (search,) = adapt(payload("PreToolUse", tool_name="WebSearch", tool_input={"query": "httpx"}))
    assert search["pattern"] == "httpx"
    events = adapt(
        payload(
            "Stop",
            stop_hook_active=False,
            last_assistant_message="Let me reconsider: the cache is per tenant.",
        )
    )
    assert [e["kind"] for e in events] == ["reasoning", "turn_end"]
    (end,) = adapt(payload("SessionEnd", reason="prompt_input_exit"))
    assert end["kind"] == "session_end"
    assert adapt(payload("Notification", message="hi")) == []


def test_not_a_hook_payload_is_refused() -> None:
    with pytest.raises(InvalidEvent):
        adapt({"session_id": "x"})
    with pytest.raises(InvalidEvent):
        adapt({"hook_event_name": "Stop"})


def test_handle_hook_observes_and_injects_scratchpad_notes(make_observer, tmp_workspace) -> None:  # type: ignore[no-untyped-def]
    observer = make_observer()
    path = str(tmp_workspace.root / "src" / "auth.py")
    read = payload(
        "PostToolUse", tool_name="Read", tool_input={"file_path": path}, tool_response={}
    )
    assert handle_hook(observer, payload("SessionStart", source="startup")) is None
    assert handle_hook(observer, read) is None  # nothing noted yet
    stop = payload(
        "Stop", last_assistant_message="Actually, tokens are cached per tenant, not per user."
    )
    handle_hook(observer, stop)
    out = handle_hook(observer, read)
    assert out is not None
    data = json.loads(out)
    assert data["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert "cached per tenant" in data["hookSpecificOutput"]["additionalContext"]
    # a broken payload never raises out of a hook
    assert handle_hook(observer, {"garbage": True}) is None
