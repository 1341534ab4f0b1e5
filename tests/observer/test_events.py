"""Event validation: good events parse, bad ones are refused with one line, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from engram.observer import EventKind, InvalidEvent, parse_event
from engram.observer.events import MAX_TEXT, event_from_checkpoint


def test_minimal_tool_result_parses() -> None:
    event = parse_event(
        {
            "session_id": "s1",
            "kind": "tool_result",
            "tool": "Bash",
            "command": "pytest",
            "exit_code": 1,
            "output": "E   KeyError: 'x'",
        }
    )
    assert event.kind is EventKind.TOOL_RESULT
    assert event.exit_code == 1


def test_aliases_and_unknown_keys_are_kept_in_extra() -> None:
    event = parse_event(
        {
            "session_id": "s1",
            "type": "tool_call",
            "tool_name": "Read",
            "file": "a.py",
            "model": "opus",
        }
    )
    assert event.kind is EventKind.TOOL_CALL and event.tool == "Read"
    assert event.files == ["a.py"]
    assert event.extra == {"model": "opus"}


def test_long_output_is_truncated_keeping_the_tail() -> None:
    text = "x" * 10_000 + "\nKeyError: 'tail'"
    event = parse_event({"session_id": "s", "kind": "tool_result", "output": text})
    assert event.output is not None and len(event.output) <= MAX_TEXT + 10
    assert event.output.endswith("KeyError: 'tail'")


def test_checkpoint_round_trip() -> None:
    event = parse_event({"session_id": "s", "kind": "note", "text": "hi", "files": ["a.py"]})
    assert event_from_checkpoint(event.to_dict()) == event


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ([1, 2], "JSON object"),
        ({"kind": "tool_call"}, "session_id"),
        ({"session_id": "a b", "kind": "tool_call"}, "session_id may only"),
        ({"session_id": "s"}, "no kind"),
        ({"session_id": "s", "kind": "dance"}, "unknown event kind"),
        ({"session_id": "s", "kind": "tool_result", "exit_code": "one"}, "exit_code"),
        ({"session_id": "s", "kind": "tool_result", "ts": "yesterday"}, "ts"),
        ({"session_id": "s", "kind": "tool_result", "files": "a.py"}, "invalid event"),
        ({"session_id": "s", "kind": "tool_result", "files": [""]}, "files"),
        ({"session_id": "s", "kind": "editor", "action": "dance"}, "editor event"),
        ({"session_id": "s", "kind": "validation", "action": "vibes"}, "validation event"),
        ({"session_id": "s", "kind": "validation", "action": "test_run"}, "passed"),
        ({"session_id": "s", "kind": "tool_result", "passed": "yes"}, "passed"),
        ({"session_id": "s", "kind": "note", "extra": []}, "extra"),
    ],
)
def test_bad_events_are_refused_with_one_line(raw: Any, fragment: str) -> None:
    with pytest.raises(InvalidEvent) as info:
        parse_event(raw)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
