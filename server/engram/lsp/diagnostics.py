"""Memories -> LSP diagnostics: which memories show, at which severity, saying what.

The rules (docs/lsp.md, docs/trust.md):

* Only memory types that belong on code (``ANCHORED_DIAGNOSTIC_TYPES``) anchored in the
  document show; deprecated and stale memories never do (a stale memory is never injected
  proactively; it can still be found by an explicit search).
* Noise control: the decayed confidence (``current_confidence()``) must reach the trust
  level's minimum (1..4 -> 0.80/0.65/0.55/0.45); pinned and user-verified memories always
  show because a person vouched for them. Those come first, then by confidence, and at most
  ``max_per_file`` per document.
* Severity comes from the memory type (``diagnostics.severity`` for editors,
  ``diagnostics.agent_severity`` for agents, whose LSP clients forward only some
  severities: OpenCode passes Error only), one level weaker when the memory barely clears
  the confidence bar, so that only confident memories block an agent.
* The message carries provenance (source, age, confidence, session, commit) so a person
  can judge it at the point of use; ``data`` carries the memory id for code actions.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import attrs
from lsprotocol import types

from engram.anchors import LineSpan
from engram.marks import conflict_marker
from engram.model import (
    ANCHORED_DIAGNOSTIC_TYPES,
    Memory,
    MemoryType,
    shared_by_text,
    team_origin,
)
from engram.quoting import one_line, quote_shared

log = logging.getLogger(__name__)

SOURCE = "engram"

#: Minimum current confidence per trust level (docs/lsp.md).
TRUST_MIN_CONFIDENCE: dict[int, float] = {1: 0.80, 2: 0.65, 3: 0.55, 4: 0.45}

#: A memory this close above the bar is shown one severity level weaker.
WEAK_MARGIN = 0.10
#: Decay since the last access must not hide a memory taught exactly at the bar a moment
#: ago (a user-taught 0.80 at trust level 1).
BAR_TOLERANCE = 0.01

SEVERITY_NAMES: dict[str, types.DiagnosticSeverity] = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "warn": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}

#: Editors: traps are warnings, background knowledge is information.
EDITOR_SEVERITY: dict[MemoryType, types.DiagnosticSeverity] = {
    MemoryType.GOTCHA: types.DiagnosticSeverity.Warning,
    MemoryType.DEAD_END: types.DiagnosticSeverity.Warning,
    MemoryType.ERROR_PATTERN: types.DiagnosticSeverity.Warning,
    MemoryType.REQUIREMENT: types.DiagnosticSeverity.Information,
    MemoryType.DECISION: types.DiagnosticSeverity.Information,
    MemoryType.E2E_OBSERVATION: types.DiagnosticSeverity.Information,
}

#: Agents: what must stop the agent is an Error (the only severity OpenCode forwards);
#: everything else stays out of its way.
AGENT_SEVERITY: dict[MemoryType, types.DiagnosticSeverity] = {
    MemoryType.GOTCHA: types.DiagnosticSeverity.Error,
    MemoryType.DEAD_END: types.DiagnosticSeverity.Error,
    MemoryType.ERROR_PATTERN: types.DiagnosticSeverity.Error,
    MemoryType.REQUIREMENT: types.DiagnosticSeverity.Error,
    MemoryType.DECISION: types.DiagnosticSeverity.Hint,
    MemoryType.E2E_OBSERVATION: types.DiagnosticSeverity.Hint,
}

TYPE_LABELS: dict[MemoryType, str] = {
    MemoryType.GOTCHA: "Gotcha",
    MemoryType.DEAD_END: "Dead end",
    MemoryType.ERROR_PATTERN: "Error pattern",
    MemoryType.DECISION: "Decision",
    MemoryType.REQUIREMENT: "Requirement",
    MemoryType.E2E_OBSERVATION: "E2E observation",
}


@attrs.frozen
class DiagnosticPolicy:
    """The resolved noise and severity rules for one client."""

    min_confidence: float = 0.65
    max_per_file: int = 20
    severity: Mapping[MemoryType, types.DiagnosticSeverity] = attrs.field(
        factory=lambda: dict(EDITOR_SEVERITY)
    )


def parse_severity_map(
    raw: Mapping[str, str], base: Mapping[MemoryType, types.DiagnosticSeverity]
) -> dict[MemoryType, types.DiagnosticSeverity]:
    """``{"gotcha": "error"}`` over ``base``; unknown types or levels are logged, skipped."""
    result = dict(base)
    for type_name, level in raw.items():
        try:
            mtype = MemoryType(str(type_name).strip().lower().replace("-", "_"))
        except ValueError:
            log.warning("diagnostics severity: unknown memory type %r ignored", type_name)
            continue
        severity = SEVERITY_NAMES.get(str(level).strip().lower())
        if severity is None:
            log.warning(
                "diagnostics severity: %r for %s is not error/warning/information/hint",
                level,
                type_name,
            )
            continue
        result[mtype] = severity
    return result


def make_policy(
    *,
    trust_level: int,
    max_per_file: int,
    severity: Mapping[str, str],
    agent_severity: Mapping[str, str],
    agent: bool,
) -> DiagnosticPolicy:
    """The policy for an editor (``agent`` False) or an agent client."""
    level = min(4, max(1, int(trust_level)))
    if agent:
        mapping = parse_severity_map(agent_severity, AGENT_SEVERITY)
    else:
        mapping = parse_severity_map(severity, EDITOR_SEVERITY)
    return DiagnosticPolicy(TRUST_MIN_CONFIDENCE[level], max(0, int(max_per_file)), mapping)


def anchor_in(memory: Memory, rel_path: str) -> bool:
    return any(anchor.file == rel_path for anchor in memory.anchors)


def is_trusted(memory: Memory, policy: DiagnosticPolicy, now: datetime) -> bool:
    if memory.pinned or memory.user_verified:
        return True
    return memory.current_confidence(now) >= policy.min_confidence - BAR_TOLERANCE


def select_memories(
    memories: Sequence[Memory], rel_path: str, policy: DiagnosticPolicy, now: datetime
) -> list[Memory]:
    """The memories that show as diagnostics in ``rel_path``, best first, capped."""
    chosen = [
        m
        for m in memories
        if m.type in ANCHORED_DIAGNOSTIC_TYPES
        and not m.deprecated
        and not m.is_stale
        and anchor_in(m, rel_path)
        and is_trusted(m, policy, now)
    ]
    chosen.sort(key=lambda m: (not m.pinned, not m.user_verified, -m.current_confidence(now)))
    return chosen[: policy.max_per_file]


def severity_for(
    memory: Memory, policy: DiagnosticPolicy, now: datetime
) -> types.DiagnosticSeverity:
    base = policy.severity.get(memory.type, types.DiagnosticSeverity.Information)
    vouched = memory.pinned or memory.user_verified
    if (
        not vouched
        and memory.current_confidence(now) < policy.min_confidence + WEAK_MARGIN - BAR_TOLERANCE
    ):
        return types.DiagnosticSeverity(min(int(base) + 1, int(types.DiagnosticSeverity.Hint)))
    return base


def age_text(then: datetime, now: datetime) -> str:
    """``today``, ``yesterday``, ``5 days ago``, ``3 months ago``, ``2 years ago``."""
    days = int(max(0.0, (now - then).total_seconds()) // 86400)
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 60:
        return f"{days} days ago"
    if days < 730:
        return f"{days // 30} months ago"
    return f"{days // 365} years ago"


def shown_text(memory: Memory, *, lines: bool = True) -> str:
    """A memory's text as diagnostics and hover show it: a teammate's is quoted data from
    that teammate and file (:func:`engram.quoting.quote_shared`, as hooks, MCP and context
    packs show it), never bare text an agent could take for an instruction or whose lines
    could forge Engram's own (``m-… · user_taught · pinned · verified``).

    ``lines=False`` (diagnostics): any memory's text on one line. A memory an agent wrote
    (or the observer, from a session that read a web page) is not the user's words either,
    and its line breaks put a forged provenance line or a second memory into an agent's
    diagnostics until stop 30; hover, markdown escaped, keeps the lines a person wrote."""
    origin = team_origin(memory)
    if origin is None:
        return memory.content if lines else one_line(memory.content)
    file = origin.get("file")
    return quote_shared(
        memory.content,
        origin.get("by") or "the team",
        file if isinstance(file, str) else None,
        reviewed=memory.user_verified,
    )


def provenance_text(memory: Memory, now: datetime, *, origin: bool = True) -> str:
    """``user_taught · 3 days ago · confidence 0.82 · session s-12 · commit 1a2b3c4``.

    A memory from the team folder says who shared it (``shared by Ana``), unless
    ``origin`` is False because its text, quoted by :func:`shown_text`, says it already."""
    parts = [
        memory.source.value,
        age_text(memory.created_at, now),
        f"confidence {memory.current_confidence(now):.2f}",
    ]
    if memory.provenance.session_id:
        parts.append(f"session {memory.provenance.session_id}")
    if memory.provenance.commit_sha:
        parts.append(f"commit {memory.provenance.commit_sha[:7]}")
    shared = shared_by_text(memory) if origin else None
    if shared is not None:
        parts.append(shared)
    if memory.pinned:
        parts.append("pinned")
    if memory.user_verified:
        parts.append("verified")
    if memory.needs_review:
        parts.append("needs review")
    return " · ".join(parts)


def diagnostic_message(
    memory: Memory, now: datetime, partners: Sequence[tuple[str, str]] = ()
) -> str:
    """What an agent reading diagnostics gets; a conflict is marked in the message itself
    (agents read messages, not relatedInformation; docs/trust.md "Conflicts")."""
    label = TYPE_LABELS.get(memory.type, memory.type.value)
    marks = "".join(f"\n{conflict_marker(oid, text)}" for oid, text in partners)
    provenance = provenance_text(memory, now, origin=False)
    return f"{label}: {shown_text(memory, lines=False)}{marks}\n{memory.id} · {provenance}"


def to_diagnostic(
    memory: Memory,
    span: LineSpan,
    rel_path: str,
    policy: DiagnosticPolicy,
    now: datetime,
    uri_for: Callable[[str], str],
    line_length: Callable[[int], int],
    partners: Sequence[tuple[str, str]] = (),
) -> types.Diagnostic:
    """One memory as a diagnostic over its span (whole lines: column 0 to end of line)."""
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=uri_for(path),
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            ),
            message=f"related file: {path}",
        )
        for path in dict.fromkeys([*memory.related_files, *(a.file for a in memory.anchors)])
        if path != rel_path
    ]
    related.extend(
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=uri_for(rel_path),
                range=types.Range(types.Position(span.start, 0), types.Position(span.start, 0)),
            ),
            message=conflict_marker(oid, text),
        )
        for oid, text in partners
    )
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=span.start, character=0),
            end=types.Position(line=span.end, character=max(0, line_length(span.end))),
        ),
        message=diagnostic_message(memory, now, partners),
        severity=severity_for(memory, policy, now),
        code=memory.type.value,
        source=SOURCE,
        related_information=related or None,
        data={"id": memory.id, "type": memory.type.value, "citation": memory.citation()},
    )


def build_diagnostics(
    memories: Sequence[Memory],
    spans: Mapping[str, LineSpan],
    rel_path: str,
    policy: DiagnosticPolicy,
    now: datetime,
    uri_for: Callable[[str], str],
    line_length: Callable[[int], int],
    partners: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> list[types.Diagnostic]:
    """The document's diagnostics; a memory without a tracked span sits on line 0."""
    return [
        to_diagnostic(
            memory,
            spans.get(memory.id, LineSpan(0, 0)),
            rel_path,
            policy,
            now,
            uri_for,
            line_length,
            (partners or {}).get(memory.id, ()),
        )
        for memory in select_memories(memories, rel_path, policy, now)
    ]


def result_id(diagnostics: Sequence[types.Diagnostic]) -> str:
    """A stable id of a diagnostic set, for pull ``unchanged`` reports."""
    digest = hashlib.sha256()
    for d in diagnostics:
        key = [
            d.range.start.line,
            d.range.end.line,
            d.range.end.character,
            d.message,
            int(d.severity or 0),
            d.code,
        ]
        digest.update(json.dumps(key, default=str).encode())
    return digest.hexdigest()[:16]
