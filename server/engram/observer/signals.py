"""Signal detection: one pass over each event, O(1) work, no I/O (docs/observer.md).

:class:`SessionState` is the scratchpad's analytics (docs/observer.md
"Scratchpad, checkpoints, injection"): counters and small bounded buffers per session.
:class:`SignalDetector.apply` updates it from one event and returns the signals that event
produced. The state is never written to disk: the scratchpad checkpoint stores the events,
and replaying them rebuilds the state exactly, so detection stays a pure function of the
event stream (plus two lookups that the observer injects: recipes already seen in other
sessions and edits by other sessions).

Long on purpose: the signal detectors share one session state and one table of priorities;
each is short, and they are read as a set (docs/observer.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import attrs

from engram.jsontypes import JsonObject
from engram.observer.events import EventKind, ObservedEvent, ValidationKind
from engram.observer.patterns import (
    DEAD_END_PATTERNS,
    SELF_CORRECTION_PATTERNS,
    WEB_INSTRUCTION_PATTERNS,
    classify_command,
    commit_sha_from_output,
    echoes,
    error_fingerprint,
    error_headline,
    find_language,
    is_config_file,
    normalise_command,
    normalise_pattern,
    run_passed,
)

#: Signal priority scores from docs/observer.md's 17-signal table (plus the observer's own events).
SIGNAL_PRIORITY: dict[str, float] = {
    "co_access": 0.91,
    "self_correction": 0.88,
    "dead_end_language": 0.86,
    "error_retry": 0.85,
    "parallel_conflict": 0.82,
    "read_abandon": 0.79,
    "repeated_grep": 0.76,
    "tool_sequence": 0.73,
    "file_access": 0.72,
    "step_overrun": 0.71,
    "backtrack": 0.68,
    "config_touch": 0.66,
    "token_spike": 0.63,
    "note": 0.8,
    "web_content": 1.0,
    "web_instruction": 1.0,
    "validation": 1.0,
    "work_unit": 1.0,
}

#: Tools whose results come from outside the trust boundary (docs/observer.md trust defense layer).
WEB_TOOLS = frozenset({"WebFetch", "WebSearch", "web_fetch", "web_search", "fetch"})
READ_TOOLS = frozenset({"Read", "NotebookRead", "View", "view", "read", "read_file"})
EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "edit", "write", "write_file", "apply_patch"}
)
SEARCH_TOOLS = frozenset({"Grep", "Glob", "grep", "glob", "LS", "search"})
SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "run_command", "terminal"})

#: Window (steps) in which two file accesses count as co-access (docs/observer.md: "within 3
#: steps").
COACCESS_WINDOW = 3
#: Re-edit of the same region within this many steps is a backtrack (docs/observer.md).
BACKTRACK_WINDOW = 5
#: Reads of one file without an edit before read-abandon fires.
READ_ABANDON_READS = 3
#: Same grep pattern this many times is a repeated grep (an early trigger, docs/observer.md).
REPEATED_GREP_COUNT = 3
#: Edits of one file by two agents within this many seconds conflict.
PARALLEL_WINDOW_S = 300.0
#: Token spike: at least this many tokens, and 3x the running mean.
TOKEN_SPIKE_MIN = 4000
TOKEN_SPIKE_ABS = 20000


def is_web_tool(tool: str | None) -> bool:
    if not tool:
        return False
    if tool in WEB_TOOLS:
        return True
    low = tool.lower()
    return low.startswith("mcp__") and any(
        w in low for w in ("fetch", "browse", "web", "search", "http", "scrape", "crawl")
    )


@attrs.define
class Signal:
    """Something worth noticing; collected in the scratchpad, promoted only if validated."""

    kind: str
    step: int
    files: list[str] = attrs.field(factory=list)
    detail: str = ""
    data: JsonObject = attrs.field(factory=dict)
    tainted: bool = False

    @property
    def priority(self) -> float:
        return SIGNAL_PRIORITY.get(self.kind, 0.5)

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"kind": self.kind, "step": self.step}
        if self.files:
            out["files"] = list(self.files)
        if self.detail:
            out["detail"] = self.detail
        if self.data:
            out["data"] = dict(self.data)
        if self.tainted:
            out["tainted"] = True
        return out


@attrs.define
class ScratchpadNote:
    """An agent's ``remember_this``: visible in the session at once, permanent only once
    the session's work is validated (docs/observer.md mid-session scratchpad availability)."""

    id: str
    content: str
    type: str
    step: int
    files: list[str] = attrs.field(factory=list)
    tainted: bool = False
    dropped_reason: str | None = None

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


@attrs.define
class ErrorRecord:
    fingerprint: str
    headline: str
    tool: str
    command: str | None
    first_step: int
    last_step: int
    count: int = 0
    resolved_step: int | None = None
    fix_files: list[str] = attrs.field(factory=list)


@attrs.define
class EditRecord:
    step: int
    old: str
    new: str
    start: int | None
    end: int | None
    tool: str


@attrs.define
class BacktrackRecord:
    file: str
    step: int
    how: str  # revert | re_edit
    before: str
    after: str


@attrs.define
class LanguageRecord:
    step: int
    sentence: str
    files: list[str]
    last_error: str | None = None


@attrs.define
class ValidationRecord:
    step: int
    kind: str
    passed: bool
    commit_sha: str | None = None
    files: list[str] = attrs.field(factory=list)


@attrs.define
class UnitRecord:
    key: str
    hierarchy: list[str]
    label: str
    start_step: int
    end_step: int | None = None
    passed: bool | None = None
    files: list[str] = attrs.field(factory=list)


@attrs.define
class SessionState:
    """Everything the detectors know about one session (rebuilt by replay on reload)."""

    session_id: str
    session_type: str = "interactive"
    methodology: str = "native"
    phase: str | None = None
    task: str | None = None
    planned_steps: int | None = None
    started_ts: float | None = None
    last_ts: float | None = None
    step: int = 0
    events: int = 0
    labels: list[str] = attrs.field(factory=list)  # compressed step labels (recipes)
    step_files: dict[int, list[str]] = attrs.field(factory=dict)
    file_access: dict[str, int] = attrs.field(factory=dict)
    file_first_step: dict[str, int] = attrs.field(factory=dict)
    reads_without_edit: dict[str, int] = attrs.field(factory=dict)
    edited: dict[str, int] = attrs.field(factory=dict)  # file -> last edit step
    edit_steps: list[tuple[int, str]] = attrs.field(factory=list)
    recent_access: deque[tuple[str, int]] = attrs.field(factory=lambda: deque(maxlen=12))
    pairs: dict[tuple[str, str], int] = attrs.field(factory=dict)
    greps: dict[str, int] = attrs.field(factory=dict)
    grep_targets: dict[str, str] = attrs.field(factory=dict)
    last_grep: tuple[str, int] | None = None
    errors: dict[str, ErrorRecord] = attrs.field(factory=dict)
    failing: dict[str, str] = attrs.field(factory=dict)  # command key -> fingerprint
    last_error: str | None = None
    edits: dict[str, deque[EditRecord]] = attrs.field(factory=dict)
    backtracks: list[BacktrackRecord] = attrs.field(factory=list)
    self_corrections: list[LanguageRecord] = attrs.field(factory=list)
    dead_ends: list[LanguageRecord] = attrs.field(factory=list)
    approach_start: int = 0
    config_touched: dict[str, int] = attrs.field(factory=dict)
    tokens_total: int = 0
    token_samples: int = 0
    token_spikes: list[tuple[int, int, list[str]]] = attrs.field(factory=list)
    overrun_step: int | None = None
    web_step: int | None = None
    web_sources: list[str] = attrs.field(factory=list)
    web_instructions: list[str] = attrs.field(factory=list)
    notes: list[ScratchpadNote] = attrs.field(factory=list)
    validations: list[ValidationRecord] = attrs.field(factory=list)
    conflicts: list[tuple[int, str, str]] = attrs.field(factory=list)
    units: dict[str, UnitRecord] = attrs.field(factory=dict)
    current_unit: str | None = None
    sequence_hits: set[tuple[str, ...]] = attrs.field(factory=set)
    applied: list[str] = attrs.field(factory=list)
    signals: list[Signal] = attrs.field(factory=list)
    signal_counts: dict[str, int] = attrs.field(factory=dict)
    pending_calls: dict[str, int] = attrs.field(factory=dict)
    last_kind: str | None = None
    last_tool: str | None = None
    last_editor_file: str | None = None
    promoted_upto: int = -1  # partial promotion watermark (steps; -1: nothing yet)
    validated_upto: int = -1  # last step a gate-matching validation covered
    promoted_keys: set[str] = attrs.field(factory=set)
    promoted_ids: list[str] = attrs.field(factory=list)
    finalized: bool = False

    @property
    def tainted(self) -> bool:
        return self.web_step is not None

    def tainted_at(self, step: int) -> bool:
        return self.web_step is not None and step >= self.web_step

    def files_edited_between(self, start: int, end: int) -> list[str]:
        seen: dict[str, None] = {}
        for step, file in self.edit_steps:
            if start <= step <= end:
                seen.setdefault(file, None)
        return list(seen)

    def recent_files(self, n: int = 2) -> list[str]:
        files: list[str] = []
        for file, _ in reversed(self.recent_access):
            if file not in files:
                files.append(file)
            if len(files) >= n:
                break
        return files


#: (file, session_id, agent_id, ts) -> the conflicting (session, agent) or None
ConflictCheck = Callable[[str, str, str | None, float], tuple[str, str | None] | None]


def _no_conflicts(
    _file: str, _session: str, _agent: str | None, _ts: float
) -> tuple[str, str | None] | None:
    return None


class SignalDetector:
    """Applies events to a :class:`SessionState`; stateless itself apart from injected lookups."""

    def __init__(
        self,
        *,
        known_sequences: Callable[[], set[tuple[str, ...]]] | None = None,
        conflicts: ConflictCheck | None = None,
        step_limit: Callable[[SessionState], int] | None = None,
    ) -> None:
        self._known_sequences = known_sequences or (lambda: set())
        self._conflicts = conflicts or _no_conflicts
        self._step_limit = step_limit or (lambda _s: 30)

    # ------------------------------------------------------------------ entry point

    def apply(self, state: SessionState, event: ObservedEvent, ts: float) -> list[Signal]:
        out: list[Signal] = []
        state.events += 1
        if state.started_ts is None:
            state.started_ts = ts
        state.last_ts = ts
        self._update_meta(state, event)
        kind = event.kind
        if kind is EventKind.TOOL_CALL:
            self._new_step(state, event)
            if event.tool_use_id:
                state.pending_calls[event.tool_use_id] = state.step
            self._on_access(state, event, out)
        elif kind is EventKind.TOOL_RESULT:
            paired = self._pairs_with_call(state, event)
            if not paired:
                self._new_step(state, event)
                self._on_access(state, event, out)
            self._on_outcome(state, event, ts, out)
        elif kind is EventKind.EDITOR:
            self._on_editor(state, event, ts, out)
        elif kind is EventKind.REASONING:
            self._on_reasoning(state, event, out)
        elif kind is EventKind.NOTE:
            self._on_note(state, event, out)
        elif kind is EventKind.VALIDATION:
            self._new_step(state, event)
            self._on_validation(
                state,
                event.action or "",
                bool(event.passed) if event.passed is not None else True,
                event.commit_sha,
                list(event.files),
                out,
            )
        elif kind is EventKind.WORK_UNIT:
            self._on_work_unit(state, event, out)
        elif kind is EventKind.APPLIED:
            for mid in event.memory_ids:
                if mid not in state.applied:
                    state.applied.append(mid)
        self._check_overrun(state, out)
        self._check_tokens(state, event, out)
        state.last_kind = kind.value
        state.last_tool = event.tool
        for signal in out:
            signal.tainted = signal.tainted or state.tainted_at(signal.step)
            state.signal_counts[signal.kind] = state.signal_counts.get(signal.kind, 0) + 1
        state.signals.extend(s for s in out if s.kind != "file_access")
        return out

    # ------------------------------------------------------------------ bookkeeping

    def _update_meta(self, state: SessionState, event: ObservedEvent) -> None:
        if event.session_type:
            state.session_type = event.session_type
        if event.methodology:
            state.methodology = event.methodology
        if event.phase:
            state.phase = event.phase
        if event.planned_steps is not None:
            state.planned_steps = event.planned_steps
        if event.kind is EventKind.SESSION_START and event.text:
            state.task = event.text[:500]
        if event.work_unit and event.kind is not EventKind.WORK_UNIT:
            self._start_unit(state, event.work_unit, event.label)

    def _new_step(self, state: SessionState, event: ObservedEvent) -> None:
        state.step += 1
        label = step_label(event)
        if label and (not state.labels or state.labels[-1] != label):
            state.labels.append(label)
            self._check_sequence(state)

    def _pairs_with_call(self, state: SessionState, event: ObservedEvent) -> bool:
        if event.tool_use_id and event.tool_use_id in state.pending_calls:
            state.pending_calls.pop(event.tool_use_id)
            return True
        return (
            not event.tool_use_id
            and state.last_kind == EventKind.TOOL_CALL.value
            and state.last_tool == event.tool
        )

    # ------------------------------------------------------------------ access

    def _on_access(self, state: SessionState, event: ObservedEvent, out: list[Signal]) -> None:
        tool = event.tool or ""
        if is_web_tool(tool):
            self._on_web(state, event, out)
        if tool in SEARCH_TOOLS and event.pattern:
            self._on_grep(state, event.pattern, out)
        if not event.files:
            return
        is_read = tool in READ_TOOLS
        for file in event.files:
            self._access_file(state, file, tool or "access", is_read, out)

    def _access_file(
        self, state: SessionState, file: str, tool: str, is_read: bool, out: list[Signal]
    ) -> None:
        step = state.step
        step_files = state.step_files.setdefault(step, [])
        if file in step_files:
            return
        step_files.append(file)
        state.file_access[file] = state.file_access.get(file, 0) + 1
        state.file_first_step.setdefault(file, step)
        out.append(Signal("file_access", step, [file], tool))
        for other, other_step in state.recent_access:
            if other == file or step - other_step > COACCESS_WINDOW:
                continue
            pair = (other, file) if other < file else (file, other)
            count = state.pairs.get(pair, 0)
            state.pairs[pair] = count + 1
            if count == 0:
                out.append(
                    Signal(
                        "co_access",
                        step,
                        list(pair),
                        f"{pair[0]} and {pair[1]} within {step - other_step} steps",
                        {"step_delta": step - other_step},
                    )
                )
        state.recent_access.append((file, step))
        if state.last_grep is not None:
            pattern, grep_step = state.last_grep
            if step - grep_step <= 2 and pattern not in state.grep_targets:
                state.grep_targets[pattern] = file
        if is_read and file not in state.edited:
            reads = state.reads_without_edit.get(file, 0) + 1
            state.reads_without_edit[file] = reads
            if reads == READ_ABANDON_READS:
                out.append(
                    Signal("read_abandon", step, [file], f"read {reads} times without an edit")
                )

    def _on_grep(self, state: SessionState, pattern: str, out: list[Signal]) -> None:
        key = normalise_pattern(pattern)
        if not key:
            return
        count = state.greps.get(key, 0) + 1
        state.greps[key] = count
        state.last_grep = (key, state.step)
        if count == REPEATED_GREP_COUNT:
            out.append(
                Signal(
                    "repeated_grep",
                    state.step,
                    [],
                    f"searched for {pattern!r} {count} times",
                    {"pattern": key, "count": count},
                )
            )

    def _on_web(self, state: SessionState, event: ObservedEvent, out: list[Signal]) -> None:
        source = event.url or event.pattern or event.text or event.tool or "web"
        if state.web_step is None:
            state.web_step = state.step
            out.append(
                Signal(
                    "web_content",
                    state.step,
                    [],
                    f"untrusted content from {event.tool}: {source[:120]}",
                    {"source": source[:300]},
                    tainted=True,
                )
            )
        if source not in state.web_sources:
            state.web_sources.append(source[:300])

    # ------------------------------------------------------------------ outcomes

    def _on_outcome(
        self, state: SessionState, event: ObservedEvent, ts: float, out: list[Signal]
    ) -> None:
        tool = event.tool or ""
        failed = bool(event.error) or (event.exit_code is not None and event.exit_code != 0)
        if is_web_tool(tool):
            self._on_web(state, event, out)
            content = event.output or ""
            for sentence in find_language(content, WEB_INSTRUCTION_PATTERNS):
                if sentence not in state.web_instructions:
                    state.web_instructions.append(sentence)
                    out.append(
                        Signal(
                            "web_instruction",
                            state.step,
                            [],
                            f"instruction in web content ignored: {sentence[:120]}",
                            {"sentence": sentence},
                            tainted=True,
                        )
                    )
            return
        if tool in SHELL_TOOLS or event.command:
            self._on_shell(state, event, failed, out)
        elif failed:
            self._on_error(state, event, event.error or event.output or "", tool, None, out)
        if tool in EDIT_TOOLS and not failed:
            for file in event.files:
                self._on_edit(state, event, file, ts, out)

    def _on_shell(
        self, state: SessionState, event: ObservedEvent, failed: bool, out: list[Signal]
    ) -> None:
        command = event.command or ""
        label = classify_command(command) if command else "run"
        key = label if label in ("test", "build") else normalise_command(command)
        output = event.output or ""
        if label == "test":
            passed = run_passed(event.exit_code, (event.error or "") + "\n" + output)
            if passed is None:
                passed = not failed
            failed = not passed
            self._on_validation(state, ValidationKind.TEST_RUN.value, passed, None, [], out)
        elif label == "commit" and not failed:
            sha = event.commit_sha or commit_sha_from_output(output)
            files = list(event.files) or state.files_edited_between(0, state.step)
            self._on_validation(state, ValidationKind.COMMIT.value, True, sha, files, out)
        if failed:
            text = event.error or output
            self._on_error(state, event, text, event.tool or "Bash", command, out)
            fingerprint = error_fingerprint(text)
            if fingerprint:
                state.failing[key] = fingerprint
        elif key in state.failing:
            fingerprint = state.failing.pop(key)
            record = state.errors.get(fingerprint)
            if record is not None and record.resolved_step is None:
                record.resolved_step = state.step
                record.fix_files = state.files_edited_between(record.first_step, state.step)

    def _on_error(
        self,
        state: SessionState,
        event: ObservedEvent,
        text: str,
        tool: str,
        command: str | None,
        out: list[Signal],
    ) -> None:
        fingerprint = error_fingerprint(text)
        if not fingerprint:
            return
        record = state.errors.get(fingerprint)
        if record is None:
            record = ErrorRecord(
                fingerprint,
                error_headline(text),
                tool,
                normalise_command(command) if command else None,
                state.step,
                state.step,
            )
            state.errors[fingerprint] = record
        record.count += 1
        record.last_step = state.step
        state.last_error = record.headline
        if record.count >= 2:
            out.append(
                Signal(
                    "error_retry",
                    state.step,
                    list(event.files),
                    f"same error {record.count} times: {record.headline[:120]}",
                    {"fingerprint": fingerprint, "retry_count": record.count},
                )
            )

    def _on_edit(
        self, state: SessionState, event: ObservedEvent, file: str, ts: float, out: list[Signal]
    ) -> None:
        step = state.step
        state.edited[file] = step
        state.edit_steps.append((step, file))
        state.reads_without_edit.pop(file, None)
        tool = event.tool or "Edit"
        record = EditRecord(
            step,
            (event.old_text or "").strip(),
            (event.new_text or "").strip(),
            event.start_line,
            event.end_line,
            tool,
        )
        history = state.edits.setdefault(file, deque(maxlen=6))
        for previous in reversed(history):
            if step - previous.step > BACKTRACK_WINDOW:
                break
            how = _backtrack_kind(previous, record)
            if how:
                state.backtracks.append(
                    BacktrackRecord(file, step, how, previous.new or previous.old, record.new)
                )
                out.append(
                    Signal(
                        "backtrack",
                        step,
                        [file],
                        f"{how.replace('_', '-')} of the edit made at step {previous.step}",
                        {"how": how, "steps_apart": step - previous.step},
                    )
                )
                break
        history.append(record)
        if is_config_file(file) and file not in state.config_touched:
            state.config_touched[file] = step
            out.append(Signal("config_touch", step, [file], "configuration file edited"))
        conflict = self._conflicts(file, state.session_id, event.agent_id, ts)
        if conflict is not None:
            other_session, other_agent = conflict
            state.conflicts.append((step, file, other_session))
            who = other_agent or other_session
            out.append(
                Signal(
                    "parallel_conflict",
                    step,
                    [file],
                    f"{file} also edited by {who} within {int(PARALLEL_WINDOW_S)} s",
                    {"other_session": other_session, "other_agent": other_agent},
                )
            )

    def _on_editor(
        self, state: SessionState, event: ObservedEvent, ts: float, out: list[Signal]
    ) -> None:
        action = event.action or ""
        file = event.files[0] if event.files else None
        if action == "hover":
            return
        if action == "change" and file is not None and state.last_editor_file == file:
            # one burst of typing in one file is one step; only text-carrying changes are
            # compared (an exact undo of an earlier change is a backtrack)
            if event.old_text is not None or event.new_text is not None:
                self._on_edit(state, event, file, ts, out)
            return
        state.step += 1
        label = {"open": "Read", "change": "Edit", "save": "Edit", "code_action": "CodeAction"}
        step_name = label.get(action)
        if step_name and (not state.labels or state.labels[-1] != step_name):
            state.labels.append(step_name)
            self._check_sequence(state)
        state.last_editor_file = file
        if file is None:
            return
        if action in ("open", "change", "save", "code_action", "rename", "create"):
            self._access_file(state, file, "editor:" + action, action == "open", out)
        if action in ("change", "save", "rename", "create") and (
            action == "save" or event.old_text is not None or event.new_text is not None
        ):
            self._on_edit(state, event, file, ts, out)

    # ------------------------------------------------------------------ language

    def _on_reasoning(self, state: SessionState, event: ObservedEvent, out: list[Signal]) -> None:
        text = event.text or ""
        if not text:
            return
        files = list(event.files) or state.recent_files(2)
        for sentence in find_language(text, SELF_CORRECTION_PATTERNS):
            state.self_corrections.append(LanguageRecord(state.step, sentence, files))
            out.append(Signal("self_correction", state.step, files, sentence))
        dead = find_language(text, DEAD_END_PATTERNS)
        if dead:  # one abandoned approach per reasoning message, however it is phrased
            sentence = " ".join(dead)
            tried = state.files_edited_between(state.approach_start, state.step) or files
            state.dead_ends.append(LanguageRecord(state.step, sentence, tried, state.last_error))
            state.approach_start = state.step + 1
            out.append(Signal("dead_end_language", state.step, tried, sentence))

    def _on_note(self, state: SessionState, event: ObservedEvent, out: list[Signal]) -> None:
        text = (event.text or "").strip()
        if not text:
            return
        note_type = str(event.extra.get("type") or event.action or "gotcha")
        note = ScratchpadNote(
            id=f"{state.session_id}#n{len(state.notes) + 1}",
            content=text[:2000],
            type=note_type,
            step=state.step,
            files=list(event.files),
            tainted=state.tainted,
        )
        if state.web_instructions and echoes(text, state.web_instructions):
            note.dropped_reason = "repeats an instruction found in web content"
        state.notes.append(note)
        out.append(Signal("note", state.step, note.files, text[:120], {"note_id": note.id}))

    # ------------------------------------------------------------------ validation, units

    def _on_validation(
        self,
        state: SessionState,
        kind: str,
        passed: bool,
        sha: str | None,
        files: list[str],
        out: list[Signal],
    ) -> None:
        record = ValidationRecord(state.step, kind, passed, sha, files)
        state.validations.append(record)
        if passed and kind in (ValidationKind.TEST_RUN.value, ValidationKind.QA.value):
            state.approach_start = state.step + 1
        detail = f"{kind} {'passed' if passed else 'failed'}"
        if sha:
            detail += f" ({sha[:12]})"
        out.append(
            Signal(
                "validation",
                state.step,
                files,
                detail,
                {"kind": kind, "passed": passed, "sha": sha},
            )
        )

    def _start_unit(self, state: SessionState, hierarchy: list[str], label: str | None) -> None:
        key = "/".join(hierarchy)
        if key and key not in state.units:
            state.units[key] = UnitRecord(key, list(hierarchy), label or "", state.step + 1)
        if key:
            state.current_unit = key

    def _on_work_unit(self, state: SessionState, event: ObservedEvent, out: list[Signal]) -> None:
        hierarchy = list(event.work_unit or [])
        if not hierarchy and state.current_unit:
            hierarchy = state.current_unit.split("/")
        if not hierarchy:
            return
        action = (event.action or "start").lower()
        self._start_unit(state, hierarchy, event.label)
        unit = state.units["/".join(hierarchy)]
        if action in ("done", "validated", "passed", "complete", "completed", "failed"):
            unit.end_step = state.step
            unit.passed = event.passed if event.passed is not None else action != "failed"
            unit.files = state.files_edited_between(unit.start_step, state.step)
            state.current_unit = None
        out.append(
            Signal(
                "work_unit",
                state.step,
                unit.files,
                f"{unit.label or unit.key}: {action}",
                {"unit": unit.key, "action": action, "passed": unit.passed},
            )
        )

    # ------------------------------------------------------------------ budgets

    def _check_overrun(self, state: SessionState, out: list[Signal]) -> None:
        if state.overrun_step is not None:
            return
        limit = state.planned_steps or self._step_limit(state)
        if limit and state.step > limit:
            state.overrun_step = state.step
            out.append(
                Signal(
                    "step_overrun",
                    state.step,
                    list(state.edited)[:5],
                    f"{state.step} steps, over the {limit} planned",
                    {"limit": limit},
                )
            )

    def _check_tokens(self, state: SessionState, event: ObservedEvent, out: list[Signal]) -> None:
        tokens = event.tokens
        if not tokens or tokens <= 0:
            return
        mean = state.tokens_total / state.token_samples if state.token_samples else 0.0
        state.tokens_total += tokens
        state.token_samples += 1
        if tokens >= TOKEN_SPIKE_ABS or (
            state.token_samples > 3 and tokens >= max(TOKEN_SPIKE_MIN, 3 * mean)
        ):
            files = list(event.files) or state.step_files.get(state.step, [])
            state.token_spikes.append((state.step, tokens, files))
            out.append(
                Signal(
                    "token_spike",
                    state.step,
                    files,
                    f"{tokens} tokens in one step (mean {mean:.0f})",
                    {"tokens": tokens, "mean": round(mean, 1)},
                )
            )

    def _check_sequence(self, state: SessionState) -> None:
        if len(state.labels) < 4:
            return
        gram = tuple(state.labels[-4:])
        if gram in state.sequence_hits:
            return
        if gram in self._known_sequences():
            state.sequence_hits.add(gram)
            state.signals.append(
                Signal(
                    "tool_sequence",
                    state.step,
                    [],
                    " → ".join(gram),
                    {"sequence": list(gram)},
                    tainted=state.tainted,
                )
            )
            state.signal_counts["tool_sequence"] = state.signal_counts.get("tool_sequence", 0) + 1


def step_label(event: ObservedEvent) -> str | None:
    """The recipe label of a step: the tool name, with shell commands classified."""
    if event.kind is EventKind.VALIDATION:
        return {"test_run": "Bash:test", "commit": "Bash:commit"}.get(event.action or "")
    tool = event.tool
    if not tool:
        return None
    if tool in SHELL_TOOLS or (event.command and tool not in EDIT_TOOLS):
        return "Bash:" + classify_command(event.command or "")
    if tool in ("MultiEdit", "NotebookEdit", "apply_patch", "edit"):
        return "Edit"
    if tool.startswith("mcp__"):
        return "mcp:" + tool.split("__")[-1]
    return tool


def _backtrack_kind(previous: EditRecord, current: EditRecord) -> str | None:
    """``revert`` when the new edit undoes the previous one, ``re_edit`` when it rewrites
    text the previous edit just wrote (docs/observer.md: edit then re-edit within 5 steps)."""
    if previous.old and current.new == previous.old and current.old == previous.new:
        return "revert"
    if (
        previous.new
        and current.old
        and min(len(previous.new), len(current.old)) >= 3
        and (previous.new in current.old or current.old in previous.new)
    ):
        return "re_edit"
    if previous.tool == current.tool == "Write" and not previous.old and not current.old:
        return "re_edit"
    return None


__all__ = [
    "COACCESS_WINDOW",
    "SIGNAL_PRIORITY",
    "ScratchpadNote",
    "SessionState",
    "Signal",
    "SignalDetector",
    "is_web_tool",
    "step_label",
]
