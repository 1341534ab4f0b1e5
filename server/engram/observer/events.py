"""The observer's input: one validated :class:`ObservedEvent` per thing an editor or agent did.

Events arrive as JSON objects from three places (the LSP's editor notifications, the
``engram observe`` CLI, and the Claude Code hook adapter) so they are validated here, once,
with cattrs: a malformed event is refused with a one-line reason (:class:`InvalidEvent`)
and never reaches the signal detectors. Unknown keys are kept in ``extra`` rather than
refused so that a newer client does not break an older server.

Tool output and error text are truncated on the way in: the observer only needs enough to
fingerprint an error or spot an instruction in web content, and a 30 kB test log must not
cost milliseconds in every later regular expression.
"""

from __future__ import annotations

import enum
import re

import attrs
import cattrs

from engram.errors import InvalidInput
from engram.jsontypes import JsonObject

#: Longest output / error / reasoning text kept per event (characters).
MAX_TEXT = 4000
#: Longest edit text kept (enough to recognise a revert of the same region).
MAX_EDIT_TEXT = 2000
_SESSION_ID = re.compile(r"^[A-Za-z0-9._:@+\-]{1,128}$")


class InvalidEvent(InvalidInput):
    """An event the observer cannot use; ``str(exc)`` is one line saying why."""


class EventKind(enum.StrEnum):
    SESSION_START = "session_start"
    SESSION_END = "session_end"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    EDITOR = "editor"
    REASONING = "reasoning"
    VALIDATION = "validation"
    NOTE = "note"  # the agent's remember_this: scratchpad only until validated
    TURN_END = "turn_end"  # the agent stopped and handed back (Claude Code "Stop")
    WORK_UNIT = "work_unit"  # a work unit started / was validated (partial promotion)
    APPLIED = "applied"  # memories were injected into this session (for the summary)


class ValidationKind(enum.StrEnum):
    TEST_RUN = "test_run"
    COMMIT = "commit"
    TASK_DONE = "task_done"
    QA = "qa"
    BUILD = "build"
    REVIEW = "review"


#: Editor actions the LSP helper forwards.
EDITOR_ACTIONS = frozenset(
    {"open", "change", "save", "close", "hover", "code_action", "rename", "create", "delete"}
)


@attrs.define
class ObservedEvent:
    """One observed action. Only ``session_id`` and ``kind`` are required.

    Paths in ``files`` may be absolute or workspace-relative on input; the observer
    normalises them to workspace-relative POSIX paths (and drops paths outside the
    workspace) before any signal sees them.
    """

    session_id: str
    kind: EventKind
    ts: float | None = None  # seconds since the epoch; the observer's clock when absent
    tool: str | None = None  # Read, Edit, Write, MultiEdit, Grep, Glob, Bash, WebFetch …
    files: list[str] = attrs.field(factory=list)
    pattern: str | None = None  # Grep / Glob pattern
    command: str | None = None  # Bash command
    exit_code: int | None = None
    output: str | None = None
    error: str | None = None
    text: str | None = None  # reasoning text, note content, task description
    url: str | None = None
    tokens: int | None = None  # tokens this step added to the context (or its size)
    action: str | None = None  # editor action, validation kind, work-unit action
    passed: bool | None = None  # validation result
    commit_sha: str | None = None
    old_text: str | None = None  # edit: the text replaced
    new_text: str | None = None  # edit: the replacement
    start_line: int | None = None  # edit / editor change range (0-based)
    end_line: int | None = None
    session_type: str | None = None
    phase: str | None = None  # the methodology's own phase name (mapped by the plugin)
    methodology: str | None = None
    work_unit: list[str] | None = None  # hierarchy, outermost first
    label: str | None = None
    agent_id: str | None = None  # a parallel sub-agent inside the session
    planned_steps: int | None = None
    outcome: str | None = None  # session_end: success / failure / abandoned
    memory_ids: list[str] = attrs.field(factory=list)  # applied: which memories were injected
    tool_use_id: str | None = None
    extra: JsonObject = attrs.field(factory=dict)

    def to_dict(self) -> JsonObject:
        """Compact JSON form (defaults left out) used for the scratchpad checkpoint."""
        data = _CONVERTER.unstructure(self)
        return {k: v for k, v in data.items() if v not in (None, [], {})}


_CONVERTER = cattrs.Converter(forbid_extra_keys=True)
# ``object`` (``extra``): free-form JSON, kept as the event carried it
_CONVERTER.register_structure_hook_func(lambda t: t is object, lambda v, _t: v)
_FIELDS = frozenset(a.name for a in attrs.fields(ObservedEvent))
_INT_FIELDS = ("exit_code", "tokens", "start_line", "end_line", "planned_steps")
_TEXT_LIMITS = {"output": MAX_TEXT, "error": MAX_TEXT, "text": MAX_TEXT}


def _coerce(raw: JsonObject) -> JsonObject:
    """Tolerant renames (``type`` for ``kind``, ``file`` for ``files``) and truncation."""
    data = dict(raw)
    if "kind" not in data and "type" in data:
        data["kind"] = data.pop("type")
    if "file" in data:
        single = data.pop("file")
        if single is not None:
            files = data.get("files") or []
            if not isinstance(files, list):
                raise InvalidEvent("'files' must be a list of paths")
            data["files"] = [single, *files]
    if "tool_name" in data and "tool" not in data:
        data["tool"] = data.pop("tool_name")
    kind = data.get("kind")
    if isinstance(kind, str):
        data["kind"] = kind.strip().lower().replace("-", "_")
    given = data.get("extra")
    extra: JsonObject | None = dict(given) if isinstance(given, dict) else None
    if extra is None and "extra" in data:
        raise InvalidEvent("'extra' must be an object")
    for key in [k for k in data if k not in _FIELDS]:
        extra = extra if extra is not None else {}
        extra[key] = data.pop(key)
    if extra is not None:
        data["extra"] = extra
    for key, limit in _TEXT_LIMITS.items():
        value = data.get(key)
        if isinstance(value, str) and len(value) > limit:
            # keep head and tail: errors are usually at the end of a log
            data[key] = value[: limit // 2] + "\n…\n" + value[-limit // 2 :]
    for key in ("old_text", "new_text"):
        value = data.get(key)
        if isinstance(value, str) and len(value) > MAX_EDIT_TEXT:
            data[key] = value[:MAX_EDIT_TEXT]
    for key in ("files", "memory_ids", "work_unit"):
        value = data.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise InvalidEvent(f"invalid event: '{key}' must be a list of strings")
    for key in _INT_FIELDS:
        value = data.get(key)
        if isinstance(value, bool) or (value is not None and not isinstance(value, int)):
            if isinstance(value, float) and value.is_integer():
                data[key] = int(value)
            else:
                raise InvalidEvent(f"'{key}' must be an integer, got {value!r:.40}")
    ts = data.get("ts")
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, int | float)):
        raise InvalidEvent(f"'ts' must be seconds since the epoch, got {ts!r:.40}")
    passed = data.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise InvalidEvent(f"'passed' must be true or false, got {passed!r:.40}")
    return data


def parse_event(raw: object) -> ObservedEvent:
    """Validate one event dict; :class:`InvalidEvent` with a one-line reason otherwise."""
    if not isinstance(raw, dict):
        raise InvalidEvent("an observer event must be a JSON object")
    data = _coerce(raw)
    session_id = data.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidEvent("event has no session_id")
    if not _SESSION_ID.match(session_id):
        raise InvalidEvent(
            "session_id may only hold letters, digits and . _ : @ + - (at most 128 characters)"
        )
    kind = data.get("kind")
    if kind is None:
        raise InvalidEvent(
            "event has no kind (one of: " + ", ".join(k.value for k in EventKind) + ")"
        )
    if kind not in EventKind._value2member_map_:
        raise InvalidEvent(
            f"unknown event kind {kind!r:.40}; valid: " + ", ".join(k.value for k in EventKind)
        )
    try:
        event = _CONVERTER.structure(data, ObservedEvent)
    except cattrs.BaseValidationError as exc:
        messages = cattrs.transform_error(exc)
        raise InvalidEvent("invalid event: " + (messages[0] if messages else str(exc))) from exc
    except (TypeError, ValueError) as exc:
        raise InvalidEvent(f"invalid event: {exc}") from exc
    if any(not isinstance(f, str) or not f or "\x00" in f for f in event.files):
        raise InvalidEvent("'files' must hold non-empty path strings")
    if event.kind is EventKind.EDITOR and event.action not in EDITOR_ACTIONS:
        valid = ", ".join(sorted(EDITOR_ACTIONS))
        raise InvalidEvent(f"editor event needs action in {valid}; got {event.action!r}")
    if event.kind is EventKind.VALIDATION:
        if event.action not in ValidationKind._value2member_map_:
            raise InvalidEvent(
                "validation event needs action in "
                + ", ".join(v.value for v in ValidationKind)
                + f"; got {event.action!r}"
            )
        if event.passed is None and event.action != ValidationKind.COMMIT:
            raise InvalidEvent("validation event needs passed: true or false")
    return event


def event_from_checkpoint(data: JsonObject) -> ObservedEvent:
    """Rebuild an event written by :meth:`ObservedEvent.to_dict` (already validated)."""
    return _CONVERTER.structure(data, ObservedEvent)


__all__ = [
    "EDITOR_ACTIONS",
    "EventKind",
    "InvalidEvent",
    "ObservedEvent",
    "ValidationKind",
    "event_from_checkpoint",
    "parse_event",
]
