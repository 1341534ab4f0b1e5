"""Event builders shared by the observer tests."""

from __future__ import annotations

from typing import Any

from engram.observer import Observer


def feed(obs: Observer, events: list[dict[str, Any]], sid: str = "s1") -> list[str]:
    kinds: list[str] = []
    for event in events:
        result = obs.observe({"session_id": sid, **event})
        kinds += [s.kind for s in result.signals]
    return kinds


def read(path: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "tool_result", "tool": "Read", "files": [path], **extra}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {
        "kind": "tool_result",
        "tool": "Edit",
        "files": [path],
        "old_text": old,
        "new_text": new,
    }


def bash(command: str, code: int, output: str = "") -> dict[str, Any]:
    return {
        "kind": "tool_result",
        "tool": "Bash",
        "command": command,
        "exit_code": code,
        "output": output,
    }
