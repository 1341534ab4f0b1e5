"""The memory record and its vocabulary (docs/storage.md).

Everything that Engram remembers is a :class:`Memory`. The enums mirror the vocabulary of
docs/storage.md'
TypeScript unions so that exported JSON is readable by people who know those documents.
Records are plain attrs classes: the store flattens them to columns, the CLI and the
protocol layers turn them into JSON through :mod:`engram.model.codec`.
"""

from __future__ import annotations

import enum
import hashlib
import math
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import attrs

from engram.jsontypes import JsonObject


class MemoryType(enum.StrEnum):
    """What kind of knowledge a memory holds (docs/storage.md / docs/storage.md)."""

    GOTCHA = "gotcha"
    DECISION = "decision"
    PREFERENCE = "preference"
    PATTERN = "pattern"
    REQUIREMENT = "requirement"
    ERROR_PATTERN = "error_pattern"
    MODULE_INSIGHT = "module_insight"
    PREFETCH_PATTERN = "prefetch_pattern"
    WORK_STATE = "work_state"
    CAUSAL_DEPENDENCY = "causal_dependency"
    TASK_CALIBRATION = "task_calibration"
    E2E_OBSERVATION = "e2e_observation"
    DEAD_END = "dead_end"
    WORK_UNIT_OUTCOME = "work_unit_outcome"
    WORKFLOW_RECIPE = "workflow_recipe"
    CONTEXT_COST = "context_cost"


class MemorySource(enum.StrEnum):
    """Who produced a memory; drives the source-trust multiplier (docs/storage.md)."""

    AGENT_EXPLICIT = "agent_explicit"
    OBSERVER_INFERRED = "observer_inferred"
    QA_AUTO = "qa_auto"
    MCP_AUTO = "mcp_auto"
    COMMIT_AUTO = "commit_auto"
    USER_TAUGHT = "user_taught"
    #: the repository's own files said it (``engram index`` reading a clone's CLAUDE.md,
    #: AGENTS.md, .cursorrules, its manifests' project facts): nobody here stands behind
    #: it until a person confirms it (docs/trust.md, "Who stands behind a new memory")
    REPOSITORY = "repository"


class MemoryScope(enum.StrEnum):
    GLOBAL = "global"
    MODULE = "module"
    WORK_UNIT = "work_unit"
    SESSION = "session"


class RelationType(enum.StrEnum):
    REQUIRED_WITH = "required_with"
    CONFLICTS_WITH = "conflicts_with"
    VALIDATES = "validates"
    SUPERSEDES = "supersedes"
    DERIVED_FROM = "derived_from"


class UniversalPhase(enum.StrEnum):
    """The six methodology-independent phases (docs/storage.md)."""

    DEFINE = "define"
    IMPLEMENT = "implement"
    VALIDATE = "validate"
    REFINE = "refine"
    EXPLORE = "explore"
    REFLECT = "reflect"


class CorrectionKind(enum.StrEnum):
    """How a user says a memory is wrong (docs/storage.md correction modal)."""

    INCORRECT = "incorrect"  # the content is wrong: deprecate it
    OUTDATED = "outdated"  # it was true once: mark stale
    WRONG_SCOPE = "wrong_scope"  # true, but not here: lower confidence, needs review
    NOT_USEFUL = "not_useful"  # noise: lower confidence


_CORRECTION_VALUES = frozenset(kind.value for kind in CorrectionKind)


#: Default decay half-lives in days (docs/storage.md). ``None`` means the type never decays.
DEFAULT_HALF_LIVES: dict[MemoryType, float | None] = {
    MemoryType.WORK_STATE: 7,
    MemoryType.E2E_OBSERVATION: 30,
    MemoryType.ERROR_PATTERN: 60,
    MemoryType.GOTCHA: 60,
    MemoryType.MODULE_INSIGHT: 90,
    MemoryType.DEAD_END: 90,
    MemoryType.CAUSAL_DEPENDENCY: 120,
    MemoryType.DECISION: None,
    MemoryType.WORKFLOW_RECIPE: 120,
    MemoryType.TASK_CALIBRATION: 180,
    MemoryType.PREFETCH_PATTERN: 60,
    MemoryType.WORK_UNIT_OUTCOME: 90,
    MemoryType.CONTEXT_COST: 90,
    MemoryType.PREFERENCE: None,
    MemoryType.PATTERN: 180,
    MemoryType.REQUIREMENT: None,
}

#: Memory types that belong on a code location and therefore surface as diagnostics.
ANCHORED_DIAGNOSTIC_TYPES: frozenset[MemoryType] = frozenset(
    {
        MemoryType.GOTCHA,
        MemoryType.DEAD_END,
        MemoryType.ERROR_PATTERN,
        MemoryType.DECISION,
        MemoryType.REQUIREMENT,
        MemoryType.E2E_OBSERVATION,
    }
)

#: Schema version of the memory record; bump it and add a step to ``codec.MIGRATIONS``.
SCHEMA_VERSION = 1


def utcnow() -> datetime:
    return datetime.now(UTC)


#: What a memory id may be: it names a file in the team folder (``<id>.json``) and appears
#: in citations, so no path separators, no leading dot, one short token (docs/security.md).
MEMORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def check_memory_id(value: object) -> str:
    """``value`` if it is a valid memory id, else ``ValueError`` quoting a short excerpt."""
    if isinstance(value, str) and MEMORY_ID.match(value):
        return value
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise ValueError(
        f"not a valid memory id {shown}: use letters, digits, '.', '_' and '-' (128 at most)"
    )


def new_memory_id() -> str:
    """Short, sortable-enough, collision-safe ids that fit in a citation (``m-3f2a9c1e7b``)."""
    return "m-" + uuid.uuid4().hex[:10]


def content_hash(text: str | bytes) -> str:
    """The one content hash (anchored lines, indexed files, chunks): sha256, 16 hex digits."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


@attrs.define
class WorkUnitRef:
    """A methodology-independent pointer to a unit of work (docs/storage.md)."""

    methodology: str = "native"
    hierarchy: list[str] = attrs.field(factory=list)
    label: str = ""


@attrs.define
class CodeAnchor:
    """Where a memory bites: a file, optionally a symbol and a line range.

    ``content_hash`` is the hash of the anchored lines when the memory was made, so that a
    memory can follow its code when lines move (we search for the same hash nearby) and
    can be marked stale when the code under it changed.
    Lines are 0-based and ``end_line`` is inclusive, matching LSP ranges.
    """

    file: str
    symbol: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    content_hash: str | None = None


@attrs.define
class MemoryRelation:
    relation_type: RelationType
    target_memory_id: str | None = None
    target_file: str | None = None
    confidence: float = 1.0
    auto_extracted: bool = False


@attrs.define
class Provenance:
    session_id: str | None = None
    commit_sha: str | None = None
    methodology: str | None = None
    confirmed_by_sessions: list[str] = attrs.field(factory=list)
    #: who wrote it (git ``user.name``, else the login name): set on a shared store
    #: (``store.uri``), where memories of a whole team or agent fleet sit side by side
    author: str | None = None


def _clamp_confidence(_inst: object, _attr: object, value: float) -> None:
    if not (0.0 <= value <= 1.0) or math.isnan(value):
        raise ValueError(f"confidence must be between 0 and 1, got {value}")


def _round_confidence(value: float) -> float:
    """Four places, wherever it is set: sums such as 0.8 + 0.05 otherwise reached team
    files, JSON and MCP answers as 0.8500000000000001."""
    return round(float(value), 4)


@attrs.define
class Memory:
    """One remembered piece of knowledge.

    ``extra`` carries the per-type structured fields (docs/storage.md) of the extended interfaces
    (dead_end.approach_tried, workflow_recipe.steps, prefetch_pattern.always_read_files …)
    so that the core record stays one flat, indexable shape.
    """

    content: str
    type: MemoryType = MemoryType.MODULE_INSIGHT
    id: str = attrs.field(factory=new_memory_id)
    source: MemorySource = MemorySource.USER_TAUGHT
    scope: MemoryScope = MemoryScope.MODULE
    confidence: float = attrs.field(
        default=0.7, converter=_round_confidence, validator=_clamp_confidence
    )
    tags: list[str] = attrs.field(factory=list)
    related_files: list[str] = attrs.field(factory=list)
    related_modules: list[str] = attrs.field(factory=list)
    anchors: list[CodeAnchor] = attrs.field(factory=list)
    provenance: Provenance = attrs.field(factory=Provenance)
    relations: list[MemoryRelation] = attrs.field(factory=list)
    work_unit: WorkUnitRef | None = None
    decay_half_life_days: float | None = None
    pinned: bool = False
    needs_review: bool = False
    user_verified: bool = False
    deprecated: bool = False
    stale_at: datetime | None = None
    citation_text: str = ""
    created_at: datetime = attrs.field(factory=utcnow)
    updated_at: datetime = attrs.field(factory=utcnow)
    last_accessed_at: datetime = attrs.field(factory=utcnow)
    access_count: int = 0
    valid_from: datetime = attrs.field(factory=utcnow)
    valid_until: datetime | None = None
    flags: list[str] = attrs.field(factory=list)
    extra: dict[str, Any] = attrs.field(factory=dict)
    schema_version: int = SCHEMA_VERSION

    def __attrs_post_init__(self) -> None:
        if self.decay_half_life_days is None and self.type in DEFAULT_HALF_LIVES:
            self.decay_half_life_days = DEFAULT_HALF_LIVES[self.type]
        if not self.citation_text:
            self.citation_text = make_citation_text(self.content)

    @property
    def files(self) -> list[str]:
        """Anchor files, then related files, without repeats: where this memory applies."""
        seen = dict.fromkeys(anchor.file for anchor in self.anchors)
        seen.update(dict.fromkeys(self.related_files))
        return list(seen)

    @property
    def is_stale(self) -> bool:
        return self.stale_at is not None

    @property
    def flagged(self) -> bool:
        """A correction (incorrect, outdated, wrong_scope, not_useful) stands in ``flags``:
        the trust model keeps a flag there while it is outstanding and such a memory is never
        shown (``lifecycle.trust.state_of``, docs/trust.md). What a count over columns
        (``engram report``) reads for it, where decoding each record's lifecycle is too slow."""
        return any(flag in _CORRECTION_VALUES for flag in self.flags)

    def is_valid_at(self, when: datetime) -> bool:
        """Bi-temporal validity: was this fact true in the world at ``when``?"""
        if when < self.valid_from:
            return False
        return self.valid_until is None or when < self.valid_until

    def current_confidence(self, now: datetime | None = None) -> float:
        """Confidence after decay by half-life since last access (docs/storage.md); pinned never
        decays."""
        if self.pinned or not self.decay_half_life_days:
            return self.confidence
        now = now or utcnow()
        days = max(0.0, (now - self.last_accessed_at).total_seconds() / 86400.0)
        return self.confidence * math.pow(0.5, days / self.decay_half_life_days)

    def citation(self) -> str:
        """The chip agents and editors show: ``[Memory m-3f2a9c1e7b: JWT 24h expiry]``.

        A teammate's memory quotes its label (derived from its content, never from the
        file's own ``citation_text``), so not even the chip carries unquoted shared text."""
        if isinstance(self.extra.get(TEAM_KEY), dict):
            from engram.quoting import quoted

            return f"[Memory {self.id}, shared: {quoted(self.citation_text)}]"
        return f"[Memory {self.id}: {self.citation_text}]"


def make_citation_text(content: str, limit: int = 40) -> str:
    """A short label for citation chips (docs/storage.md: at most 40 characters)."""
    first = " ".join(content.strip().split())
    if len(first) <= limit:
        return first
    cut = first[: limit - 1].rsplit(" ", 1)[0] or first[: limit - 1]
    return cut + "…"


#: ``extra`` key of a memory read from the team folder (``engram.lifecycle.team``):
#: ``{"file": ".engram-team/<id>.json", "by": who shared it, "at": when}``.
TEAM_KEY = "team"


def team_origin(memory: Memory) -> JsonObject | None:
    """Where a team memory came from (``extra["team"]``), or None for a local one."""
    origin = memory.extra.get(TEAM_KEY)
    return origin if isinstance(origin, dict) else None


def shared_by_text(memory: Memory) -> str | None:
    """``shared by "Ana" (from .engram-team/m-x.json), unreviewed`` for a team memory
    (hover, diagnostics, ``show``), else None: whose claim it is stays visible."""
    origin = team_origin(memory)
    if origin is None:
        return None
    from engram.quoting import shared_label

    file = origin.get("file")
    return shared_label(
        origin.get("by") or "the team",
        file if isinstance(file, str) else None,
        reviewed=memory.user_verified,
    )
