"""Session types and their promotion gates (docs/observer.md table, docs/observer.md complexity
gate).

A gate says which validation lets a session's scratchpad become permanent memory, how
many memories it may promote at most, and which signal classes count for it. The table
is data, not code, so a user can override one row from ``[observer.session_gates]`` in
``.engram/config.toml`` without touching the observer.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import cattrs

from engram.errors import InvalidInput

#: Gate triggers: which events validate the session's work.
TRIGGER_TESTS = "tests_pass"
TRIGGER_COMMIT = "commit"
TRIGGER_TASK_DONE = "task_done"
TRIGGER_QA = "qa_pass"
TRIGGER_SESSION_END = "session_end"  # no validation needed: insights, terminal sessions
TRIGGERS = frozenset(
    {TRIGGER_TESTS, TRIGGER_COMMIT, TRIGGER_TASK_DONE, TRIGGER_QA, TRIGGER_SESSION_END}
)
ALL_SIGNALS = "*"


@attrs.define(frozen=True)
class SessionGate:
    """How one session type promotes (docs/observer.md "Promotion")."""

    triggers: tuple[str, ...]
    max_memories: int
    signals: tuple[str, ...] = (ALL_SIGNALS,)
    #: Long multi-unit work promotes each validated work unit on its own (docs/observer.md partial
    #: QA).
    partial_promotion: bool = True
    #: Step budget used by the step-overrun signal when the session gives no plan.
    step_limit: int = 30

    def allows(self, signal_kind: str) -> bool:
        return ALL_SIGNALS in self.signals or signal_kind in self.signals

    def validated_by(self, trigger: str) -> bool:
        return trigger in self.triggers


_WORK = (TRIGGER_TESTS, TRIGGER_COMMIT, TRIGGER_TASK_DONE, TRIGGER_QA)

#: The built-in table. ``interactive`` is a person in an editor or an agent chat.
DEFAULT_GATES: dict[str, SessionGate] = {
    "interactive": SessionGate(triggers=_WORK, max_memories=8),
    "agent_build": SessionGate(triggers=(TRIGGER_QA, TRIGGER_TESTS), max_memories=20),
    "tdd": SessionGate(triggers=(TRIGGER_TESTS,), max_memories=10),
    "qa": SessionGate(
        triggers=(TRIGGER_QA, TRIGGER_TASK_DONE),
        max_memories=8,
        signals=("error_retry", "self_correction", "dead_end_language", "backtrack"),
    ),
    "pr_review": SessionGate(
        triggers=(TRIGGER_TASK_DONE,),
        max_memories=8,
        signals=("error_retry", "self_correction"),
    ),
    "insights": SessionGate(
        triggers=(TRIGGER_SESSION_END,),
        max_memories=5,
        signals=("co_access", "self_correction", "repeated_grep", "read_abandon", "note"),
    ),
    "terminal": SessionGate(
        triggers=(TRIGGER_SESSION_END,),
        max_memories=3,
        signals=("error_retry", "tool_sequence", "note"),
    ),
    "roadmap": SessionGate(
        triggers=(TRIGGER_SESSION_END,), max_memories=3, signals=("note", "self_correction")
    ),
    "spec_creation": SessionGate(
        triggers=(TRIGGER_TASK_DONE,),
        max_memories=3,
        signals=("file_access", "read_abandon", "note"),
    ),
    "changelog": SessionGate(triggers=(), max_memories=0, signals=()),
}

_CONVERTER = cattrs.Converter(forbid_extra_keys=True)


def gate_table(
    overrides: Mapping[str, Mapping[str, object]] | None = None,
) -> dict[str, SessionGate]:
    """The default table with user overrides merged in, one row at a time."""
    table = dict(DEFAULT_GATES)
    for name, row in (overrides or {}).items():
        base = attrs.asdict(table.get(name, DEFAULT_GATES["interactive"]))
        merged = {**base, **dict(row)}
        for key in ("triggers", "signals"):
            if isinstance(merged.get(key), list):
                merged[key] = tuple(merged[key])
        try:
            gate = _CONVERTER.structure(merged, SessionGate)
        except cattrs.BaseValidationError as exc:
            detail = "; ".join(cattrs.transform_error(exc))
            raise InvalidInput(f"observer.session_gates.{name}: {detail}") from exc
        unknown = set(gate.triggers) - TRIGGERS
        if unknown:
            raise InvalidInput(
                f"observer.session_gates.{name}: unknown trigger(s) {', '.join(sorted(unknown))}; "
                f"valid: {', '.join(sorted(TRIGGERS))}"
            )
        table[name] = gate
    return table


def resolve_gate(table: Mapping[str, SessionGate], session_type: str) -> SessionGate:
    """The gate for ``session_type``; an unknown type behaves as ``interactive``."""
    return table.get(session_type) or table.get("interactive") or DEFAULT_GATES["interactive"]


__all__ = [
    "ALL_SIGNALS",
    "DEFAULT_GATES",
    "TRIGGERS",
    "TRIGGER_COMMIT",
    "TRIGGER_QA",
    "TRIGGER_SESSION_END",
    "TRIGGER_TASK_DONE",
    "TRIGGER_TESTS",
    "SessionGate",
    "gate_table",
    "resolve_gate",
]
