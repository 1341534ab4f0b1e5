"""Claude Code hooks -> observer events (``engram observe --format claude-code``).

The hooks are set up once, by ``engram setup claude-code`` or the plugin
(docs/agents.md "Claude Code"): ``engram hook claude-code`` answers each event and queues
its payload; the detached ``engram observe --format claude-code --drain-inbox`` it starts
replays the queue through :func:`handle_hook`. Claude Code runs a command for each hook
with one JSON payload on stdin. Fields used
(Claude Code hooks reference): every event has ``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name`` (and ``agent_id`` inside sub-agents); ``PreToolUse`` adds
``tool_name``, ``tool_input``, ``tool_use_id``; ``PostToolUse`` adds ``tool_response``;
``PostToolUseFailure`` adds ``error`` (and ``is_interrupt``); ``Stop`` / ``SubagentStop``
may carry ``last_assistant_message``; ``SessionStart`` has ``source`` (startup, resume,
clear, compact); ``SessionEnd`` has ``reason``; ``UserPromptSubmit`` has ``prompt``.

Tool payload shapes: Read ``{file_path, offset, limit}`` -> ``{type, file: {filePath,
content, numLines, …}}``; Edit ``{file_path, old_string, new_string, replace_all}``;
MultiEdit ``{file_path, edits: [{old_string, new_string}]}``; Write ``{file_path,
content}``; Bash ``{command, description, timeout}`` -> ``{stdout, stderr, interrupted}``;
Grep ``{pattern, path, glob}``; Glob ``{pattern, path}``; WebFetch ``{url, prompt}`` ->
``{result, code, url}``; WebSearch ``{query}`` -> ``{query, results}``.

A successful tool reaches ``PostToolUse``; a failed one (including a shell command with a
non-zero exit) reaches ``PostToolUseFailure``. :func:`handle_hook` is what the CLI calls:
it never raises (a hook failure must not disturb the agent) and returns the hook's
stdout: extra context for Claude (the session's scratchpad notes about a file it just
read, or where the last unfinished session stopped) or ``None``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject
    from engram.model import Memory
    from engram.observer.observer import Observer

log = logging.getLogger(__name__)

_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?(?: with)?(?: non-zero)? (?:status|code)(?: code)?|Exit code)\D{0,3}(\d+)", re.I
)
_MAX_OUT = 6000


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)[:_MAX_OUT]
    except (TypeError, ValueError):
        return str(value)[:_MAX_OUT]


def _files(tool_input: JsonObject) -> list[str]:
    files = []
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            files.append(value)
    return files


def _tool_fields(tool: str, tool_input: JsonObject) -> JsonObject:
    """Event fields that come from a tool's input (shared by the call and the result)."""
    fields: JsonObject = {"tool": tool}
    files = _files(tool_input)
    if files:
        fields["files"] = files
    if tool == "Bash":
        fields["command"] = _text(tool_input.get("command"))[:2000]
    elif tool in ("Grep", "Glob"):
        fields["pattern"] = _text(tool_input.get("pattern"))[:300]
    elif tool == "WebFetch":
        fields["url"] = _text(tool_input.get("url"))[:500]
    elif tool == "WebSearch":
        fields["pattern"] = _text(tool_input.get("query"))[:300]
    elif tool in ("Edit", "MultiEdit"):
        edits = tool_input.get("edits")
        first = (
            edits[0]
            if isinstance(edits, list) and edits and isinstance(edits[0], dict)
            else tool_input
        )
        fields["old_text"] = _text(first.get("old_string"))
        fields["new_text"] = _text(first.get("new_string"))
    elif tool == "Write":
        fields["new_text"] = _text(tool_input.get("content"))
    return fields


def _response_fields(tool: str, response: object) -> JsonObject:
    fields: JsonObject = {}
    if isinstance(response, str):
        fields["output"] = response[:_MAX_OUT]
        match = _EXIT_CODE.search(response[:200])
        if match and tool == "Bash":
            fields["exit_code"] = int(match.group(1))
        return fields
    if not isinstance(response, dict):
        return fields
    if tool == "Bash":
        out = _text(response.get("stdout"))
        err = _text(response.get("stderr"))
        fields["output"] = (out + ("\n" + err if err else ""))[-_MAX_OUT:]
        for key in ("exitCode", "exit_code", "returnCode", "code"):
            if isinstance(response.get(key), int) and not isinstance(response.get(key), bool):
                fields["exit_code"] = int(response[key])
                break
        if response.get("interrupted"):
            fields["error"] = "command interrupted (timeout or cancelled)"
    elif tool == "Read":
        file = response.get("file") if isinstance(response.get("file"), dict) else response
        content = _text(file.get("content")) if isinstance(file, dict) else ""
        if content:
            fields["tokens"] = max(1, len(content) // 4)
    elif tool == "WebFetch":
        fields["output"] = _text(response.get("result") or response.get("content"))[:_MAX_OUT]
    elif tool == "WebSearch":
        fields["output"] = _text(response.get("results"))[:_MAX_OUT]
    elif tool.startswith("mcp__"):
        fields["output"] = _text(response)[:_MAX_OUT]
    if isinstance(response.get("error"), str) and response["error"]:
        fields["error"] = response["error"][:_MAX_OUT]
    return fields


def adapt(payload: object) -> list[JsonObject]:
    """Observer events for one Claude Code hook payload (empty for hooks we do not use).

    Raises ``InvalidEvent`` only when the payload is not a hook payload at all.
    """
    from engram.observer.events import InvalidEvent

    if not isinstance(payload, dict):
        raise InvalidEvent("a Claude Code hook payload must be a JSON object")
    hook = payload.get("hook_event_name")
    session_id = payload.get("session_id")
    if not isinstance(hook, str) or not hook:
        raise InvalidEvent("not a Claude Code hook payload (no hook_event_name)")
    if not isinstance(session_id, str) or not session_id:
        raise InvalidEvent("Claude Code hook payload has no session_id")
    base: JsonObject = {"session_id": session_id}
    if isinstance(payload.get("agent_id"), str) and payload["agent_id"]:
        base["agent_id"] = payload["agent_id"]
    tool = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else None
    raw_input = payload.get("tool_input")
    tool_input: JsonObject = raw_input if isinstance(raw_input, dict) else {}
    tool_use_id = payload.get("tool_use_id")
    if isinstance(tool_use_id, str) and tool_use_id:
        base["tool_use_id"] = tool_use_id
    if hook == "SessionStart":
        return [
            {
                **base,
                "kind": "session_start",
                "extra": {
                    "source": payload.get("source"),
                    "cwd": payload.get("cwd"),
                    "transcript_path": payload.get("transcript_path"),
                    "client": "claude-code",
                },
            }
        ]
    if hook == "UserPromptSubmit":
        prompt = _text(payload.get("prompt"))
        if not prompt.strip():
            return []
        return [{**base, "kind": "reasoning", "text": prompt[:4000], "extra": {"from": "user"}}]
    if hook in ("PreToolUse", "PostToolUse", "PostToolUseFailure") and tool:
        fields = _tool_fields(tool, tool_input)
        if hook == "PreToolUse":
            return [{**base, "kind": "tool_call", **fields}]
        event = {**base, "kind": "tool_result", **fields}
        if hook == "PostToolUse":
            event.update(_response_fields(tool, payload.get("tool_response")))
        else:
            error = _text(payload.get("error") or payload.get("error_message")) or "tool failed"
            event["error"] = error[:_MAX_OUT]
            if tool == "Bash":
                match = _EXIT_CODE.search(error)
                event["exit_code"] = int(match.group(1)) if match else 1
                event["output"] = error[:_MAX_OUT]
            if payload.get("is_interrupt"):
                event["extra"] = {"interrupted": True}
        return [event]
    if hook in ("Stop", "SubagentStop"):
        events: list[JsonObject] = []
        message = payload.get("last_assistant_message")
        if isinstance(message, str) and message.strip():
            events.append({**base, "kind": "reasoning", "text": message[-4000:]})
        events.append({**base, "kind": "turn_end", "extra": {"hook": hook}})
        return events
    if hook == "SessionEnd":
        return [{**base, "kind": "session_end", "extra": {"reason": payload.get("reason")}}]
    return []


def _context_output(hook: str, lines: list[str]) -> str | None:
    if not lines:
        return None
    body = "\n".join(f"- {line}" for line in lines)
    return (
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": hook,
                    "additionalContext": "Engram notes:\n" + body,
                }
            }
        )
        + "\n"
    )


def handle_hook(
    observer: Observer,
    payload: object,
    *,
    work_state: Callable[[], Sequence[Memory]] | None = None,
) -> str | None:
    """Observe one hook payload through ``observer``; the hook's stdout, or ``None``.

    ``work_state`` gives the ``work_state`` memories, newest first, that SessionStart
    resumes from. Never raises: a broken hook must not stop the agent (errors go to the log).
    """
    try:
        events = adapt(payload)
        for event in events:
            observer.observe(event)
        if not isinstance(payload, dict):  # adapt() refused it already
            return None
        hook = payload.get("hook_event_name")
        if hook == "PostToolUse" and payload.get("tool_name") in ("Read", "Edit", "Write"):
            raw_input = payload.get("tool_input")
            file = _files(raw_input if isinstance(raw_input, dict) else {})
            if not file:
                return None
            notes = observer.scratchpad_notes(payload["session_id"], file[0])
            lines = [n.content[:300] for n in notes if n.files][:5]
            return _context_output("PostToolUse", lines)
        if hook == "SessionStart":
            recent = list(work_state())[:2] if work_state is not None else []
            return _context_output(
                "SessionStart", [f"{m.content[:400]} {m.citation()}" for m in recent]
            )
    except Exception as exc:
        log.warning("engram claude-code hook ignored: %s", exc)
    return None


__all__ = ["adapt", "handle_hook"]
