"""The trust model of a memory: one state machine, written once (docs/trust.md).

A memory tool is only as good as what it refuses to say, so every change of what a memory
is trusted to be goes through :func:`transition` here: an event (a person's confirm, a
teammate's committed share, time …) and the record come in, the new record and one audit
entry come out, or :class:`TrustRefused` says why that event may not move that memory.
Front ends (CLI, language server, MCP server, hooks) and the engine's use cases never set
``user_verified``, ``needs_review``, ``deprecated``, ``stale_at``, ``pinned`` or
``confidence`` themselves.

Pure: no store, no clock, no I/O. The state is derived from the record's existing fields
(so every reader of the store keeps working) plus who did what, kept in
``extra["lifecycle"]`` (never shared with the team: ``lifecycle.team`` drops ``extra``).

Reads are not events. Search, context, hover, diagnostics, hooks, MCP reads and indexing
may count usage (:func:`count_use`), which never touches state, confidence or the decay
clock (``last_accessed_at`` is the time a person or validated event last vouched for the
memory, see docs/trust.md "Time").

Long on purpose: the trust state machine is one table of states, events and transitions
(docs/trust.md); every rule is meant to be read next to the others.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs

from engram.errors import InvalidInput
from engram.jsontypes import JsonObject
from engram.model import (
    AuditEntry,
    CodeAnchor,
    CorrectionKind,
    Memory,
    MemoryRelation,
    MemorySource,
    MemoryType,
    RelationType,
    make_citation_text,
    team_origin,
)
from engram.model.memory import TEAM_KEY

if TYPE_CHECKING:
    from engram.store.digest import MirrorRules
    from engram.store.frame import Hiding

__all__ = [
    "CONFIDENCE_CAP",
    "CREATION_CAP",
    "HIDDEN_STATES",
    "RETENTION",
    "STANDING_ACTORS",
    "Actor",
    "ActorKind",
    "AuditEntry",
    "CodeChanged",
    "Confirm",
    "Decay",
    "Dispute",
    "Edit",
    "Event",
    "FileBack",
    "FileGone",
    "Flag",
    "Forget",
    "Moved",
    "Pin",
    "Purge",
    "Relabel",
    "Restate",
    "Restore",
    "TeamDelete",
    "TeamShare",
    "Transition",
    "TrustRefused",
    "TrustState",
    "active_conflicts",
    "admit",
    "admit_team",
    "count_use",
    "flags_of",
    "hiding",
    "is_shown",
    "keeps_own_text",
    "landed",
    "mirror_rules",
    "same_claim",
    "snapshot",
    "state_of",
    "transition",
]

#: Key of ``Memory.extra`` holding who flagged, verified, retired or forgot a memory.
LIFECYCLE_KEY = "lifecycle"
#: Highest confidence anything reaches (a person's confirm included).
CONFIDENCE_CAP = 0.95
CONFIDENCE_FLOOR = 0.05
#: A person's confirm adds this (capped).
CONFIRM_BUMP = 0.1
#: A person saying the same thing again (a near-duplicate remember) adds this (capped).
RESTATE_BUMP = 0.05
#: A memory whose anchored code a commit changed is trusted this much less, once.
CODE_CHANGED_FACTOR = 0.8
CODE_CHANGED_FLAG = "code_changed"
#: Forgotten memories can be restored for this long; then prune deletes them.
RETENTION = timedelta(days=30)
#: The highest confidence a memory may start with, by who produced it. Agents and the
#: observer never start above what a person's plain remember gives.
CREATION_CAP: dict[MemorySource, float] = {
    MemorySource.USER_TAUGHT: 0.9,
    MemorySource.COMMIT_AUTO: 0.8,
    MemorySource.OBSERVER_INFERRED: 0.8,
    MemorySource.AGENT_EXPLICIT: 0.7,
    MemorySource.QA_AUTO: 0.6,
    MemorySource.MCP_AUTO: 0.6,
    MemorySource.REPOSITORY: 0.8,
}
#: Sources whose memories start in review whoever brings them: a coding agent or a tool
#: said it, or the repository's own files did; no person.
REVIEW_SOURCES: frozenset[MemorySource] = frozenset(
    {
        MemorySource.AGENT_EXPLICIT,
        MemorySource.QA_AUTO,
        MemorySource.MCP_AUTO,
        MemorySource.REPOSITORY,
    }
)
#: A teammate's memory arriving unreviewed, or one the system made from a repository's
#: files, never starts above this.
TEAM_REVIEW_CAP = 0.8


class TrustState(enum.StrEnum):
    """Where a memory stands (docs/trust.md has the diagram)."""

    REVIEW = "review"  # a candidate: an agent or tool said it, or it is disputed
    ACTIVE = "active"  # a person said it, or a validated observer promotion
    VERIFIED = "verified"  # a person confirmed it (here, or a teammate's committed share)
    STALE = "stale"  # its file is gone from the working tree
    FLAGGED = "flagged"  # a person (or an agent) said it is wrong in some way
    DEPRECATED = "deprecated"  # flagged incorrect, or decayed unused
    RETIRED = "retired"  # a teammate's committed deletion of its shared file
    FORGOTTEN = "forgotten"  # a person's forget: restorable for RETENTION, then deleted


#: States whose memories no editor or agent ever receives (search, context, hover,
#: diagnostics, hooks, MCP results). Management views (list --all, show, log) label them.
HIDDEN_STATES: frozenset[TrustState] = frozenset(
    {TrustState.FLAGGED, TrustState.DEPRECATED, TrustState.RETIRED, TrustState.FORGOTTEN}
)


class ActorKind(enum.StrEnum):
    PERSON = "person"  # someone at this machine: the CLI, the editor
    AGENT = "agent"  # a coding agent: MCP tools, hooks, `--source agent_explicit`
    OBSERVER = "observer"  # a validated promotion of what the observer saw
    TEAMMATE = "teammate"  # the author of a commit in the team folder
    SYSTEM = "system"  # time, renames, code changes, retention; the index reading files


#: Who may stand behind a new memory that starts active (:func:`admit`): a person, and the
#: observer's validated promotion. An agent, a tool, a teammate's unreviewed file and the
#: system (the index reading a repository's own files) start in review.
STANDING_ACTORS: frozenset[ActorKind] = frozenset({ActorKind.PERSON, ActorKind.OBSERVER})


@attrs.frozen
class Actor:
    """Who caused an event; ``name`` is a git user name, an agent session, …"""

    kind: ActorKind
    name: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind.value}:{self.name}" if self.name else self.kind.value

    @classmethod
    def person(cls, name: str | None) -> Actor:
        return cls(ActorKind.PERSON, name)

    @classmethod
    def agent(cls, name: str | None = None) -> Actor:
        return cls(ActorKind.AGENT, name)

    @classmethod
    def system(cls) -> Actor:
        return cls(ActorKind.SYSTEM)

    @classmethod
    def parse(cls, label: object) -> Actor | None:
        if not isinstance(label, str) or not label:
            return None
        kind, _, name = label.partition(":")
        try:
            return cls(ActorKind(kind), name or None)
        except ValueError:
            return None


class TrustRefused(InvalidInput):
    """This event may not move this memory (the message says why, for the user)."""


# --------------------------------------------------------------------------- events


@attrs.frozen(kw_only=True)
class Event:
    """Something that may move a memory. ``cause``: the command or file behind it."""

    actor: Actor
    cause: str = ""

    name = "event"


@attrs.frozen(kw_only=True)
class Confirm(Event):
    """ "This is right." A person's confirm verifies; an agent's is only recorded."""

    name = "confirm"


@attrs.frozen(kw_only=True)
class Flag(Event):
    """ "This is wrong": incorrect deprecates, any other kind flags. Never shown again
    until the one who flagged it confirms it."""

    kind: CorrectionKind
    note: str | None = None

    name = "flag"


@attrs.frozen(kw_only=True)
class Pin(Event):
    pinned: bool = True

    name = "pin"


@attrs.frozen(kw_only=True)
class Edit(Event):
    """A person rewrites the memory (the old values stay in the audit trail)."""

    content: str | None = None
    type: MemoryType | None = None
    anchors: Sequence[CodeAnchor] | None = None
    tags: Sequence[str] | None = None

    name = "edit"


@attrs.frozen(kw_only=True)
class Forget(Event):
    name = "forget"


@attrs.frozen(kw_only=True)
class Restore(Event):
    name = "restore"


@attrs.frozen(kw_only=True)
class Restate(Event):
    """Someone remembered a near-duplicate: ``merged`` is the combined record.

    ``standing``: where the restated claim stands on its own (the state :func:`admit`
    gives it; consolidate: the state of the stored memory merged in). ``None``: as the
    actor's own new memory would start (a person's active, anyone else's in review).
    """

    merged: Memory
    standing: TrustState | None = None

    name = "restate"


@attrs.frozen(kw_only=True)
class Dispute(Event):
    """A contradiction was found: link ``other_id``; ``review`` sends this one to review."""

    other_id: str
    review: bool = True
    reason: str = ""

    name = "conflict"


@attrs.frozen(kw_only=True)
class TeamShare(Event):
    """A teammate's committed file in the team folder: a new memory or an edit of one.

    ``shared`` is the memory as the file states it; ``commit`` the commit that wrote the
    file; ``trusted`` the user's own setting that the team folder is trusted (issue 13:
    otherwise a teammate's memory waits in review for a local person); ``me`` the local
    person's name (a commit of yours never verifies anything for you).
    """

    shared: Memory
    file: str
    commit: str | None = None
    trusted: bool = False
    me: str | None = None

    name = "team_share"


@attrs.frozen(kw_only=True)
class TeamDelete(Event):
    """A commit deleted the team file of a memory that came from the team folder."""

    file: str
    commit: str

    name = "team_delete"


@attrs.frozen(kw_only=True)
class CodeChanged(Event):
    """A commit changed the code under an anchor since the memory was made."""

    commit: str | None = None

    name = "code_changed"


@attrs.frozen(kw_only=True)
class FileGone(Event):
    file: str

    name = "file_gone"


@attrs.frozen(kw_only=True)
class FileBack(Event):
    name = "file_back"


@attrs.frozen(kw_only=True)
class Moved(Event):
    """The code moved (lines shifted, a file renamed): anchors follow, trust does not."""

    anchors: Sequence[CodeAnchor] | None = None
    related_files: Sequence[str] | None = None

    name = "moved"


@attrs.frozen(kw_only=True)
class Decay(Event):
    """Unused for a long time: deprecated (never a verified or pinned one)."""

    reason: str = ""

    name = "decay"


@attrs.frozen(kw_only=True)
class Relabel(Event):
    """The index finds a memory it made from a repository's file before the source said
    so (``user_taught`` rules, ``observer_inferred`` facts): its source becomes
    ``repository``. Only ever towards nobody standing behind it; nothing else changes."""

    source: MemorySource = MemorySource.REPOSITORY

    name = "relabel"


@attrs.frozen(kw_only=True)
class Purge(Event):
    """Deleted for good after its retention period (the audit entry outlives it)."""

    reason: str = ""

    name = "delete"


# --------------------------------------------------------------------------- records


@attrs.frozen
class Transition:
    """The record after an event, and the entry for the audit trail."""

    memory: Memory
    entry: AuditEntry
    #: the event changed nothing on the record (an agent's endorsement, a repeat)
    unchanged: bool = False


# --------------------------------------------------------------------------- reading state


def _lifecycle(memory: Memory) -> dict[str, Any]:
    raw = memory.extra.get(LIFECYCLE_KEY)
    return dict(raw) if isinstance(raw, dict) else {}


def flags_of(memory: Memory) -> list[JsonObject]:
    """The outstanding flags: ``{"kind", "by", "at", "note"}`` each.

    Records written before this module kept corrections only in ``flags`` and
    ``extra["corrections"]``; for those, a correction not followed by a confirmation
    counts as a flag of an unknown person (any person's confirm lifts it).
    """
    raw = _lifecycle(memory).get("flags")
    if isinstance(raw, list):
        return [dict(f) for f in raw if isinstance(f, dict)]
    kinds = {k.value for k in CorrectionKind}
    history = memory.extra.get("corrections")
    if not isinstance(history, list) or not any(f in kinds for f in memory.flags):
        return []
    outstanding: list[dict[str, Any]] = []
    for item in history:
        if not isinstance(item, dict):
            continue
        if item.get("kind") == "confirmed":
            outstanding = []
        elif item.get("kind") in kinds and item.get("kind") != CorrectionKind.INCORRECT.value:
            outstanding.append({"kind": item.get("kind"), "by": None, "at": item.get("at")})
    return outstanding


def state_of(memory: Memory) -> TrustState:
    """The memory's state, derived from its record (precedence as in docs/trust.md)."""
    life = _lifecycle(memory)
    if life.get("forgotten"):
        return TrustState.FORGOTTEN
    if life.get("retired"):
        return TrustState.RETIRED
    if memory.deprecated:
        return TrustState.DEPRECATED
    if flags_of(memory):
        return TrustState.FLAGGED
    if memory.stale_at is not None:
        return TrustState.STALE
    if memory.needs_review:
        return TrustState.REVIEW
    if memory.user_verified:
        return TrustState.VERIFIED
    return TrustState.ACTIVE


def is_shown(memory: Memory) -> bool:
    """Whether an editor or agent may ever receive this memory (search, context, hover,
    diagnostics, hooks, MCP results)."""
    return state_of(memory) not in HIDDEN_STATES


def hiding() -> Hiding:
    """:func:`is_shown` as a count over the store's columns applies it (``engram
    report``): a record with no lifecycle and no correction history is hidden exactly when
    it is deprecated (forgotten and retired set ``deprecated``; only a flag hides without
    it, and a flag is kept in one of those two), so only records holding one are decoded.
    ``Memory.flagged`` (a correction kind in ``flags``) is not this rule: an imported
    record saying ``flags: ["outdated"]`` is shown by every output and was counted
    retired by the report."""
    from engram.store.frame import Hiding

    return Hiding(shown=is_shown, marks=(f'"{LIFECYCLE_KEY}":', '"corrections":'))


def conflict_ids(memory: Memory) -> list[str]:
    return list(
        dict.fromkeys(
            r.target_memory_id
            for r in memory.relations
            if r.relation_type is RelationType.CONFLICTS_WITH and r.target_memory_id
        )
    )


def mirror_rules() -> MirrorRules:
    """These rules as the agents' digest applies them (``engram.store.digest``): which
    memories a hook may hand out, and their conflict partners."""
    from engram.store.digest import MirrorRules

    return MirrorRules(shown=is_shown, conflicts=conflict_ids)


def active_conflicts(
    memory: Memory, lookup: Callable[[Sequence[str]], Sequence[Memory]]
) -> list[Memory]:
    """The memories ``memory`` is linked to as a conflict that are still shown.

    A conflict whose other side was flagged, deprecated, retired or forgotten is settled
    (a person chose); one still shown must be shown next to ``memory``, marked.
    """
    ids = conflict_ids(memory)
    if not ids:
        return []
    return [m for m in lookup(ids) if m.id != memory.id and is_shown(m)]


def snapshot(memory: Memory) -> JsonObject:
    """The tracked fields the audit trail compares: state, trust, text and anchors."""
    return {
        "state": state_of(memory).value,
        "source": memory.source.value,
        "confidence": round(memory.confidence, 4),
        "pinned": memory.pinned,
        "content": memory.content,
        "type": memory.type.value,
        "tags": list(memory.tags),
        "anchors": [_anchor_dict(a) for a in memory.anchors],
        "related_files": list(memory.related_files),
        "conflicts_with": conflict_ids(memory),
    }


def same_claim(read: Memory, now: Memory) -> bool:
    """Whether what a decision made on ``read`` rests on still holds for ``now``, the same
    memory read again: nothing the audit trail tracks changed (its state, source,
    confidence, pin, text, type, tags, anchors, files, conflict links). A use counted or a
    session credited meanwhile is no change. The system's slow read-modify-writes
    (consolidate, a team sync's contradiction check) judge outside the store's writer lock
    and leave, under it, what another process changed meanwhile (docs/trust.md)."""
    return read.id == now.id and snapshot(read) == snapshot(now)


def _anchor_dict(anchor: CodeAnchor) -> dict[str, Any]:
    return {
        "file": anchor.file,
        "symbol": anchor.symbol,
        "start_line": anchor.start_line,
        "end_line": anchor.end_line,
    }


def _diff(old: Memory, new: Memory) -> tuple[dict[str, Any], dict[str, Any]]:
    before, after = snapshot(old), snapshot(new)
    changed = [k for k in before if before[k] != after[k]]
    return {k: before[k] for k in changed}, {k: after[k] for k in changed}


def landed(entry: AuditEntry, memory: Memory | None) -> bool | None:
    """Whether the change a pending audit entry records is in the store's record of its
    memory (``None``: the store has none): ``None`` when the entry says nothing a record
    shows (an endorsement, a refused move, imported history). ``app.trust`` settles a
    pending entry by this: kept when its change landed, withdrawn when it did not."""
    if not entry.after or entry.event.startswith("imported ") or entry.event.endswith("refused"):
        return None
    if entry.after.get("state") == "deleted":
        return memory is None
    if memory is None:
        return False
    if not entry.before:  # a creation: the record is there
        return True
    now = snapshot(memory)
    return all(now.get(key) == value for key, value in entry.after.items())


# --------------------------------------------------------------------------- usage


def count_use(memory: Memory) -> Memory:
    """A read handed this memory out: one more use. Nothing else changes (docs/trust.md:
    usage may rank within a cap; it is not confidence and never moves the state)."""
    return attrs.evolve(memory, access_count=memory.access_count + 1)


# --------------------------------------------------------------------------- admission


def admit(memory: Memory, actor: Actor, *, now: datetime, cause: str = "") -> Transition:
    """A new memory enters the store: its first state and the audit entry that says so.

    Who stands behind it decides where it starts, here and nowhere else (docs/trust.md
    "Who stands behind a new memory"): a person's memory starts active; the observer's as
    its validated promotion decided (review or active); everything else in review: an
    agent's or a tool's, and what the system made on its own from a repository's files
    (the index's seeded rules files and project facts: the repository speaking, nobody
    here standing behind it). A source of :data:`REVIEW_SOURCES` or a memory that asks
    for review starts in review whoever brings it. Nothing starts verified, pinned by
    anyone but a person, or above :data:`CREATION_CAP` for its source (an agent's cap for
    an agent, :data:`TEAM_REVIEW_CAP` for the system). Flags and deprecation an imported
    record carries are kept: they only ever hide.
    """
    cap = CREATION_CAP.get(memory.source, 0.7)
    review = (
        memory.needs_review or memory.source in REVIEW_SOURCES or actor.kind not in STANDING_ACTORS
    )
    if actor.kind is ActorKind.AGENT:
        cap = min(cap, CREATION_CAP[MemorySource.AGENT_EXPLICIT])
    elif actor.kind not in STANDING_ACTORS:
        cap = min(cap, TEAM_REVIEW_CAP)
    life = _lifecycle(memory)
    for key in ("verified_by", "retired", "forgotten", "shared"):
        life.pop(key, None)
    extra = dict(memory.extra)
    if life:
        extra[LIFECYCLE_KEY] = life
    else:
        extra.pop(LIFECYCLE_KEY, None)
    admitted = attrs.evolve(
        memory,
        confidence=min(memory.confidence, cap),
        needs_review=review,
        user_verified=False,
        pinned=memory.pinned and actor.kind is ActorKind.PERSON,
        last_accessed_at=now,
        extra=extra,
    )
    return Transition(admitted, _created(admitted, actor, now, cause))


def admit_team(event: TeamShare, *, now: datetime) -> Transition:
    """A teammate's committed file brings a memory this store does not have yet.

    It waits in review for a local person (issue 13), unpinned and capped, unless the
    user's own setting trusts the team folder: then it is verified, attributed to the
    teammate whose commit wrote it (never to yourself).
    """
    if event.actor.kind is not ActorKind.TEAMMATE:
        raise TrustRefused("only a teammate's committed file is a team share")
    shared = event.shared
    trusted = event.trusted and not (event.me and event.actor.name == event.me)
    extra = {k: v for k, v in shared.extra.items() if k != LIFECYCLE_KEY}
    if trusted:
        extra[LIFECYCLE_KEY] = {
            "verified_by": {"by": event.actor.label, "at": now.isoformat(), "commit": event.commit}
        }
    arrived = attrs.evolve(
        shared,
        pinned=False,
        user_verified=trusted,
        needs_review=not trusted,
        deprecated=False,
        stale_at=None,
        confidence=min(shared.confidence, CONFIDENCE_CAP if trusted else TEAM_REVIEW_CAP),
        citation_text=make_citation_text(shared.content),
        last_accessed_at=now,
        updated_at=now,
        extra=extra,
    )
    return Transition(arrived, _created(arrived, event.actor, now, event.cause, "team_share"))


def _created(
    memory: Memory, actor: Actor, now: datetime, cause: str, event: str = "create"
) -> AuditEntry:
    return AuditEntry(
        memory_id=memory.id,
        at=now,
        event=event,
        actor=actor.label,
        cause=cause,
        before={},
        after=snapshot(memory),
    )


# --------------------------------------------------------------------------- transitions


def transition(memory: Memory, event: Event, *, now: datetime) -> Transition:
    """Apply ``event`` to ``memory``: the new record and its audit entry.

    Raises :class:`TrustRefused` when the event may not move this memory.
    """
    handler = _HANDLERS.get(type(event))
    if handler is None:
        raise TrustRefused(f"{event.name} is not an event of the trust model")
    result = handler(memory, event, now)
    if isinstance(result, tuple):
        new, note = result
    else:
        new, note = result, None
    before, after = _diff(memory, new)
    if isinstance(event, Purge):  # the trail keeps the last words of a deleted memory
        before, after = snapshot(memory), {"state": "deleted"}
        note = note or event.reason or None
    entry = AuditEntry(
        memory_id=memory.id,
        at=now,
        event=event.name,
        actor=event.actor.label,
        cause=event.cause,
        before=before,
        after=after,
        note=note,
    )
    return Transition(new, entry, unchanged=new == memory)


def _with_life(memory: Memory, **changes: Any) -> dict[str, Any]:
    """``extra`` with the lifecycle dict updated (``None`` removes a key)."""
    life = _lifecycle(memory)
    for key, value in changes.items():
        if value is None:
            life.pop(key, None)
        else:
            life[key] = value
    extra = dict(memory.extra)
    if life:
        extra[LIFECYCLE_KEY] = life
    else:
        extra.pop(LIFECYCLE_KEY, None)
    return extra


def _require_person(event: Event, what: str) -> None:
    if event.actor.kind is not ActorKind.PERSON:
        raise TrustRefused(f"only a person can {what} a memory ({event.actor.label} tried)")


def _alive(memory: Memory, what: str) -> TrustState:
    state = state_of(memory)
    if state is TrustState.FORGOTTEN:
        raise TrustRefused(f"{memory.id} was forgotten; 'engram restore {memory.id}' first")
    if state is TrustState.RETIRED:
        retired = _lifecycle(memory).get("retired") or {}
        who = retired.get("by") or "a teammate"
        raise TrustRefused(
            f"{memory.id} was retired ({who} deleted {retired.get('file', 'its team file')} "
            f"in a commit); remember it again if it still holds, instead of trying to {what} it"
        )
    return state


def _history(memory: Memory, entry: dict[str, Any]) -> dict[str, Any]:
    """``extra`` with ``entry`` appended to ``corrections`` (hover and ``show`` read it)."""
    extra = dict(memory.extra)
    extra["corrections"] = [*list(extra.get("corrections") or []), entry]
    return extra


def _confirm(memory: Memory, event: Event, now: datetime) -> Memory | tuple[Memory, str]:
    state = _alive(memory, "confirm")
    if event.actor.kind is not ActorKind.PERSON:
        # an agent saying "this proved right" is recorded, never a verification
        return memory, "endorsed by an agent; a person's confirm verifies it"
    me = event.actor.name
    outstanding = flags_of(memory)
    blocking = sorted(
        {
            str(actor.name)
            for f in outstanding
            if (actor := Actor.parse(f.get("by"))) is not None
            and actor.kind is ActorKind.PERSON
            and actor.name != me
        }
    )
    if blocking:
        raise TrustRefused(
            f"{memory.id} is flagged by {', '.join(blocking)}; only the person who flagged it "
            "can confirm it"
        )
    flag_kinds = {k.value for k in CorrectionKind}
    by_flag = any(f.get("kind") == CorrectionKind.INCORRECT.value for f in _own_flags(memory))
    extra = _history(memory, {"kind": "confirmed", "at": now.isoformat(), "by": me})
    life = dict(extra.get(LIFECYCLE_KEY) or {})
    life.pop("flags", None)
    life.pop("decayed", None)
    life["verified_by"] = {"by": event.actor.label, "at": now.isoformat()}
    extra[LIFECYCLE_KEY] = life
    if CODE_CHANGED_FLAG in extra and isinstance(extra[CODE_CHANGED_FLAG], dict):
        extra[CODE_CHANGED_FLAG] = {**extra[CODE_CHANGED_FLAG], "reviewed": now.isoformat()}
    revive = state is TrustState.DEPRECATED or by_flag
    return attrs.evolve(
        memory,
        user_verified=True,
        needs_review=False,
        stale_at=None,
        deprecated=False if revive else memory.deprecated,
        valid_until=None if revive or outstanding else memory.valid_until,
        flags=[f for f in memory.flags if f not in flag_kinds],
        confidence=max(memory.confidence, min(CONFIDENCE_CAP, memory.confidence + CONFIRM_BUMP)),
        last_accessed_at=now,
        updated_at=now,
        extra=extra,
    )


def _own_flags(memory: Memory) -> list[dict[str, Any]]:
    raw = _lifecycle(memory).get("flags")
    return [dict(f) for f in raw if isinstance(f, dict)] if isinstance(raw, list) else []


def _flag(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Flag)
    if event.actor.kind not in (ActorKind.PERSON, ActorKind.AGENT):
        raise TrustRefused("only a person or an agent can flag a memory")
    _alive(memory, "flag")
    record: dict[str, Any] = {
        "kind": event.kind.value,
        "by": event.actor.label,
        "at": now.isoformat(),
    }
    if event.note:
        record["note"] = event.note
    flags = [f for f in flags_of(memory) if f.get("by") != event.actor.label]
    flags.append(record)
    extra = _with_life(memory, flags=flags)
    correction = {"kind": event.kind.value, "at": now.isoformat(), "by": event.actor.label}
    if event.note:
        correction["note"] = event.note
    extra["corrections"] = [*list(extra.get("corrections") or []), correction]
    changes: dict[str, Any] = {
        "flags": list(dict.fromkeys([*memory.flags, event.kind.value])),
        "extra": extra,
        "updated_at": now,
    }
    if event.kind is CorrectionKind.INCORRECT:
        changes.update(deprecated=True, pinned=False, valid_until=now)
        changes["extra"]["deprecated_at"] = now.isoformat()
    elif event.kind is CorrectionKind.OUTDATED:
        # true once: valid until now (time queries still place it), and stale
        changes.update(stale_at=memory.stale_at or now, valid_until=memory.valid_until or now)
    return attrs.evolve(memory, **changes)


def _pin(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Pin)
    _require_person(event, "pin" if event.pinned else "unpin")
    state = _alive(memory, "pin")
    if event.pinned and state in HIDDEN_STATES:
        raise TrustRefused(
            f"{memory.id} is {state.value}; confirm it before pinning it (engram confirm)"
        )
    return attrs.evolve(memory, pinned=event.pinned, updated_at=now)


def _edit(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Edit)
    _require_person(event, "edit")
    _alive(memory, "edit")
    changes: dict[str, Any] = {"updated_at": now, "last_accessed_at": now}
    if event.content is not None and event.content != memory.content:
        changes["content"] = event.content
        changes["citation_text"] = make_citation_text(event.content)
    if event.type is not None:
        changes["type"] = event.type
    if event.anchors is not None:
        changes["anchors"] = list(event.anchors)
    if event.tags is not None:
        changes["tags"] = list(dict.fromkeys(event.tags))
    if len(changes) == 2:
        raise TrustRefused("nothing to edit: give new text, a type, an anchor or tags")
    return attrs.evolve(memory, **changes)


def _forget(memory: Memory, event: Event, now: datetime) -> Memory:
    _require_person(event, "forget")
    if state_of(memory) is TrustState.FORGOTTEN:
        raise TrustRefused(f"{memory.id} is already forgotten")
    record = {
        "by": event.actor.label,
        "at": now.isoformat(),
        "until": (now + RETENTION).isoformat(),
        "was_deprecated": memory.deprecated,
        "was_pinned": memory.pinned,
    }
    return attrs.evolve(
        memory,
        deprecated=True,
        pinned=False,
        updated_at=now,
        extra=_with_life(memory, forgotten=record),
    )


def _restore(memory: Memory, event: Event, now: datetime) -> Memory:
    _require_person(event, "restore")
    record = _lifecycle(memory).get("forgotten")
    if not isinstance(record, dict):
        raise TrustRefused(f"{memory.id} is not forgotten; nothing to restore")
    return attrs.evolve(
        memory,
        deprecated=bool(record.get("was_deprecated", False)),
        pinned=bool(record.get("was_pinned", False)),
        updated_at=now,
        extra=_with_life(memory, forgotten=None),
    )


def keeps_own_text(memory: Memory, standing: TrustState) -> bool:
    """Whether a restatement standing where ``standing`` says (:func:`admit`'s state of
    it) leaves ``memory``'s text, tags and anchors as they are: a claim that would wait in
    review never rewrites one someone stands behind (shown, not in review). The duplicate
    check asks it too (``lifecycle.dedup.find_duplicate``): the text such a merge drops is
    the restatement's, whatever its length."""
    return standing is TrustState.REVIEW and state_of(memory) not in HIDDEN_STATES | {
        TrustState.REVIEW
    }


def _restate(memory: Memory, event: Event, now: datetime) -> Memory | tuple[Memory, str]:
    assert isinstance(event, Restate)
    merged = event.merged
    state = state_of(memory)
    # what the merge may change: text, tags, files, anchors, sessions; trust only by a person
    confidence = memory.confidence
    if event.actor.kind is ActorKind.PERSON and state not in HIDDEN_STATES:
        confidence = max(confidence, min(CONFIDENCE_CAP, confidence + RESTATE_BUMP))
    standing = event.standing
    if standing is None:
        standing = TrustState.ACTIVE if event.actor.kind is ActorKind.PERSON else TrustState.REVIEW
    extra = (
        {**merged.extra, LIFECYCLE_KEY: _lifecycle(memory)}
        if _lifecycle(memory)
        else {k: v for k, v in merged.extra.items() if k != LIFECYCLE_KEY}
    )
    if keeps_own_text(memory, standing):
        # a claim that would wait in review (an agent's, a clone's rules file) never puts
        # its words, tags or anchors into a memory someone stands behind: merged, an
        # agent's longer text replaced a person's verified one and stayed verified (stop 31)
        counted = {**memory.extra, "merge_count": merged.extra.get("merge_count", 1)}
        kept = attrs.evolve(memory, provenance=merged.provenance, updated_at=now, extra=counted)
        return kept, (
            f"restated by {event.actor.label}, whose word waits in review: "
            f"this {state.value} memory keeps its own text"
        )
    return attrs.evolve(
        memory,
        content=merged.content,
        citation_text=merged.citation_text,
        tags=list(merged.tags),
        related_files=list(merged.related_files),
        related_modules=list(merged.related_modules),
        anchors=list(merged.anchors),
        provenance=merged.provenance,
        confidence=confidence,
        updated_at=now,
        extra=extra,
    )


def _dispute(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Dispute)
    linked = event.other_id in conflict_ids(memory)
    relations = list(memory.relations)
    if not linked:
        relations.append(
            MemoryRelation(
                RelationType.CONFLICTS_WITH, target_memory_id=event.other_id, auto_extracted=True
            )
        )
    return attrs.evolve(
        memory,
        relations=relations,
        needs_review=memory.needs_review or event.review,
        updated_at=now,
    )


def _team_share(memory: Memory, event: Event, now: datetime) -> Memory | tuple[Memory, str]:
    assert isinstance(event, TeamShare)
    if event.actor.kind is not ActorKind.TEAMMATE:
        raise TrustRefused("only a teammate's committed file is a team share")
    if state_of(memory) is TrustState.FORGOTTEN:
        return memory, "forgotten here; the team file does not bring it back"
    shared = event.shared
    author = event.actor.name
    yours = bool(event.me) and author == event.me
    origin = team_origin(memory)
    local = origin is None and memory.id == shared.id and state_of(memory) is not TrustState.RETIRED
    fields = ("content", "type", "scope", "anchors", "related_files", "related_modules", "tags")
    same_claim = all(getattr(memory, f) == getattr(shared, f) for f in fields if f != "tags") and (
        set(memory.tags) | {"team"} == set(shared.tags) | {"team"}
    )
    if local and not same_claim and not _lifecycle(memory).get("shared"):
        # a memory of yours that was never shared: a file with its id is not its edit.
        # Taken as one, a clone's committed file replaced your (even verified) text with its
        # own, shown as yours with no "shared by" (ids of seeded facts are derived from
        # their text, and any id an agent or an export ever showed is known)
        raise TrustRefused(
            f"{memory.id} is a memory of yours that was never shared; the file does not replace it"
        )
    if local and same_claim:
        # your own memory read back from the folder: sharing it changes nothing (no
        # "verified", no "shared by you"); only where it is shared is remembered
        return attrs.evolve(
            memory, extra=_with_life(memory, shared={"file": event.file, "commit": event.commit})
        ), "your own memory, as shared"
    changes: dict[str, Any] = {f: getattr(shared, f) for f in fields}
    changes["tags"] = list(dict.fromkeys([*shared.tags]))
    changes["citation_text"] = make_citation_text(shared.content)
    changes["valid_until"] = shared.valid_until
    changes["relations"] = _merge_relations(memory.relations, shared.relations)
    changes["updated_at"] = now
    claim_changed = not same_claim or state_of(memory) is TrustState.RETIRED
    # a teammate's commit changed a memory of yours that you shared: the text is theirs now.
    # Kept as yours (no origin), their words reached hooks, diagnostics and MCP unquoted, as
    # your `user_taught` memory and still pinned if you had pinned it (stop 30)
    taken_over = local and not same_claim and not yours
    life_changes: dict[str, Any] = {"retired": None}
    extra = dict(memory.extra)
    if not local or taken_over:
        extra.update(shared.extra)  # the team origin: file, by, at
    if taken_over and author and isinstance(extra.get(TEAM_KEY), dict):
        # the file's "shared by" still names you, who shared it first: the edit is the
        # author's of the commit that made it
        extra[TEAM_KEY] = {**extra[TEAM_KEY], "by": author}
    if claim_changed and not yours:
        if event.trusted:
            changes.update(needs_review=False, user_verified=True)
            changes["confidence"] = min(shared.confidence, CONFIDENCE_CAP)
            life_changes["verified_by"] = {
                "by": event.actor.label,
                "at": now.isoformat(),
                "commit": event.commit,
            }
        else:
            changes.update(needs_review=True, user_verified=False)
            changes["confidence"] = min(shared.confidence, TEAM_REVIEW_CAP)
            life_changes["verified_by"] = None
    elif claim_changed:
        # your own commit elsewhere: taken as your edit, never as a verification
        changes["confidence"] = min(shared.confidence, memory.confidence or TEAM_REVIEW_CAP)
    if state_of(memory) is TrustState.RETIRED:
        # back in the folder: alive again, but a person's "incorrect" still holds
        changes["deprecated"] = any(
            f.get("kind") == CorrectionKind.INCORRECT.value for f in flags_of(memory)
        )
    changes["pinned"] = memory.pinned if local and not taken_over else False
    life = _lifecycle(attrs.evolve(memory, extra=extra))
    for key, value in life_changes.items():
        if value is None:
            life.pop(key, None)
        else:
            life[key] = value
    if life:
        extra[LIFECYCLE_KEY] = life
    else:
        extra.pop(LIFECYCLE_KEY, None)
    changes["extra"] = extra
    return attrs.evolve(memory, **changes)


def _merge_relations(
    mine: Sequence[MemoryRelation], theirs: Sequence[MemoryRelation]
) -> list[MemoryRelation]:
    """The file's relations, plus the conflict links found here (never dropped by a pull)."""
    out = list(theirs)
    keys = {(r.relation_type, r.target_memory_id, r.target_file) for r in out}
    for relation in mine:
        key = (relation.relation_type, relation.target_memory_id, relation.target_file)
        if relation.relation_type is RelationType.CONFLICTS_WITH and key not in keys:
            out.append(relation)
    return out


def _team_delete(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, TeamDelete)
    if event.actor.kind is not ActorKind.TEAMMATE or not event.commit:
        raise TrustRefused("only a committed deletion in the team folder retires a memory")
    if team_origin(memory) is None:
        raise TrustRefused(f"{memory.id} is your own memory; a deleted team file never retires it")
    if state_of(memory) in (TrustState.RETIRED, TrustState.FORGOTTEN):
        return memory
    record = {"by": event.actor.label, "commit": event.commit, "file": event.file,
              "at": now.isoformat()}  # fmt: skip
    return attrs.evolve(
        memory, deprecated=True, pinned=False, updated_at=now,
        extra=_with_life(memory, retired=record),
    )  # fmt: skip


def _code_changed(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, CodeChanged)
    if CODE_CHANGED_FLAG in memory.flags:
        return memory
    changes: dict[str, Any] = {
        "flags": [*memory.flags, CODE_CHANGED_FLAG],
        "needs_review": True,
        "updated_at": now,
        "extra": {
            **memory.extra,
            CODE_CHANGED_FLAG: {"at": now.isoformat(), "commit": event.commit},
        },
    }
    if not memory.pinned:
        changes["confidence"] = max(
            CONFIDENCE_FLOOR, round(memory.confidence * CODE_CHANGED_FACTOR, 4)
        )
    return attrs.evolve(memory, **changes)


def _file_gone(memory: Memory, event: Event, now: datetime) -> Memory:
    if memory.stale_at is not None:
        return memory
    return attrs.evolve(memory, stale_at=now, updated_at=now)


def _file_back(memory: Memory, event: Event, now: datetime) -> Memory:
    if memory.stale_at is None:
        return memory
    return attrs.evolve(memory, stale_at=None, updated_at=now)


def _moved(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Moved)
    changes: dict[str, Any] = {"updated_at": now}
    if event.anchors is not None:
        changes["anchors"] = list(event.anchors)
    if event.related_files is not None:
        changes["related_files"] = list(event.related_files)
    return attrs.evolve(memory, **changes)


def _decay(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Decay)
    if memory.user_verified or memory.pinned:
        raise TrustRefused(f"{memory.id} is verified or pinned; it never decays away")
    if memory.deprecated:
        return memory
    extra = _with_life(memory, decayed={"at": now.isoformat(), "reason": event.reason})
    extra["deprecated_at"] = now.isoformat()
    return attrs.evolve(memory, deprecated=True, updated_at=now, extra=extra)


def _relabel(memory: Memory, event: Event, now: datetime) -> Memory:
    assert isinstance(event, Relabel)
    if event.actor.kind is not ActorKind.SYSTEM or event.source not in REVIEW_SOURCES:
        # a label only ever says less: no relabel makes anyone stand behind a memory
        raise TrustRefused(f"{memory.id}: a relabel names nobody standing behind it")
    if memory.source is event.source:
        return memory
    return attrs.evolve(memory, source=event.source, updated_at=now)


def _purge(memory: Memory, event: Event, now: datetime) -> Memory:
    # the record is deleted by the caller; the entry keeps what it was
    return memory


_HANDLERS: dict[type[Event], Callable[[Memory, Event, datetime], Any]] = {
    Confirm: _confirm,
    Flag: _flag,
    Pin: _pin,
    Edit: _edit,
    Forget: _forget,
    Restore: _restore,
    Restate: _restate,
    Dispute: _dispute,
    TeamShare: _team_share,
    TeamDelete: _team_delete,
    CodeChanged: _code_changed,
    FileGone: _file_gone,
    FileBack: _file_back,
    Moved: _moved,
    Relabel: _relabel,
    Decay: _decay,
    Purge: _purge,
}


def forgotten_until(memory: Memory) -> datetime | None:
    """When a forgotten memory's retention ends (prune deletes it then)."""
    record = _lifecycle(memory).get("forgotten")
    if not isinstance(record, dict):
        return None
    try:
        return datetime.fromisoformat(str(record.get("until")))
    except ValueError:
        return None
