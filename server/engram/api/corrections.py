"""Declarations of one memory's use cases: show it, and a person's moves on it.

Confirm, flag, pin, forget, restore and edit go through the trust state machine
(``engram.app.trust``, docs/trust.md), each with the audit ``cause`` its surface records;
``log`` reads that audit trail. See :mod:`engram.api.declare` for what a declaration holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from engram.api import render
from engram.api.declare import HIDDEN, JsonObject, Surface, UseCase, spec
from engram.api.memories import ACTOR, CAUSE, EDITOR, LINE, actor_of, caused_by, is_agent
from engram.errors import InvalidInput
from engram.model import CorrectionKind, Memory, MemoryType, memory_json, to_json_object

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.model.audit import AuditEntry

CLI, LSP, MCP = Surface.CLI, Surface.LSP, Surface.MCP


# --------------------------------------------------------------------------- one memory


@attrs.frozen
class IdArgs:
    id: str = attrs.field(
        metadata=spec(
            "memory id, e.g. m-3f2a9c1e7b",
            max_length=100,
            memory_id=True,
            aliases=("memory_id",),
            positional=True,
            metavar="ID",
        )
    )
    cause: str = attrs.field(default="", metadata=CAUSE)
    actor: str = attrs.field(default="", metadata=ACTOR)


def _memory_json(memory: Memory) -> JsonObject:
    return {"id": memory.id, "memory": memory_json(memory)}


def _show(engine: Engine, a: IdArgs) -> Memory:
    from engram.app.memories import get

    return get(engine, a.id)


SHOW: UseCase[IdArgs, Memory] = UseCase(
    name="show",
    returns="the Memory record",
    summary="one memory in full: anchors, provenance, state, corrections",
    args=IdArgs,
    run=_show,
    to_json=memory_json,
    to_text=render.memory_card,
    folder_arg=None,
)


def _confirm(engine: Engine, a: IdArgs) -> Memory:
    from engram.app.memories import confirm

    return confirm(engine, a.id, actor=actor_of(a.actor), cause=a.cause)


CONFIRM: UseCase[IdArgs, Memory] = UseCase(
    name="confirm",
    returns='`{"id", "memory": Memory}` (user-verified, review and staleness cleared)',
    summary="confirm a memory is right: verified, more trusted",
    args=IdArgs,
    run=_confirm,
    to_json=_memory_json,
    to_text=lambda m: (
        f"confirmed {m.id} (confidence {m.confidence:.2f}, verified)"
        if m.user_verified
        else f"endorsed {m.id} (recorded; not verified)"
    ),
    notes=lambda m: (
        []
        if m.user_verified
        else ["recorded as your endorsement; not verified (only a person's confirm verifies)"]
    ),
    guidance=(
        "Say that a memory (by its id) proved right in your work. Your confirmation is "
        "recorded in the memory's audit trail as an agent's endorsement; it does not verify "
        "the memory or raise its confidence: only a person's confirm does."
    ),
    fixed=caused_by("confirm"),
    touched=lambda m: [m],
    corrected=lambda m: (m.id, "confirmed" if m.user_verified else "endorsed"),
    folder_arg=None,
)


@attrs.frozen
class FlagArgs:
    id: str = attrs.field(
        metadata=spec(
            "memory id, e.g. m-3f2a9c1e7b",
            max_length=100,
            memory_id=True,
            aliases=("memory_id",),
            positional=True,
            metavar="ID",
        )
    )
    kind: CorrectionKind = attrs.field(
        metadata=spec(
            "what is wrong: incorrect (never shown again), outdated (was true once), "
            "wrong_scope (true elsewhere), not_useful (true, but no help here)",
            cli=("--kind", "-k"),
            metavar="K",
        )
    )
    note: str | None = attrs.field(
        default=None,
        metadata=spec("why (kept with the correction)", max_length=2000, metavar="TEXT"),
    )
    cause: str = attrs.field(default="", metadata=CAUSE)
    actor: str = attrs.field(default="", metadata=ACTOR)


@attrs.frozen
class Flagged:
    memory: Memory
    kind: CorrectionKind
    #: an agent flagged it: its text is not handed back (a flagged memory never reaches an
    #: agent again, docs/trust.md)
    by_agent: bool = False


def _flag_json(f: Flagged) -> JsonObject:
    if f.by_agent:
        return {"id": f.memory.id, "kind": f.kind.value, "hidden": True}
    out: JsonObject = {"id": f.memory.id, "kind": f.kind.value, "hidden": True}
    return {**out, "memory": memory_json(f.memory)}


def _flag(engine: Engine, a: FlagArgs) -> Flagged:
    from engram.app.memories import flag

    who = actor_of(a.actor)
    memory = flag(engine, a.id, a.kind, a.note, actor=who, cause=a.cause)
    return Flagged(memory, a.kind, by_agent=is_agent(who))


def _flag_text(flagged: Flagged) -> str:
    memory = flagged.memory
    state = []
    if memory.deprecated:
        state.append("deprecated")
    if memory.is_stale:
        state.append("stale")
    if memory.needs_review:
        state.append("needs review")
    state.append(f"confidence {memory.confidence:.2f}")
    return f"flagged {memory.id} as {flagged.kind.value}: {', '.join(state)}"


FLAG: UseCase[FlagArgs, Flagged] = UseCase(
    name="flag",
    returns='`{"id", "kind", "hidden": true, "memory": Memory}` (no `memory` for an agent)',
    summary="say a memory is wrong, and how",
    args=FlagArgs,
    run=_flag,
    to_json=_flag_json,
    to_text=_flag_text,
    guidance=(
        "Flag a memory (by its id) that turned out wrong. It is hidden from every search, "
        "context and hook at once; a person can lift it."
    ),
    fixed=caused_by("flag"),
    touched=lambda f: [f.memory],
    corrected=lambda f: (f.memory.id, f"flagged {f.kind.value}"),
    folder_arg=None,
)


@attrs.frozen
class PinArgs:
    id: str = attrs.field(
        metadata=spec(
            "memory id, e.g. m-3f2a9c1e7b",
            max_length=100,
            memory_id=True,
            aliases=("memory_id",),
            positional=True,
            metavar="ID",
        )
    )
    pinned: bool = attrs.field(
        default=True,
        metadata=spec("pin it (true) or unpin it (false)", cli=(), cli_negate="--unpin"),
    )
    cause: str = attrs.field(default="", metadata=CAUSE)
    actor: str = attrs.field(default="", metadata=ACTOR)


def _pin(engine: Engine, a: PinArgs) -> Memory:
    from engram.app.memories import pin

    return pin(engine, a.id, a.pinned, actor=actor_of(a.actor), cause=a.cause)


PIN: UseCase[PinArgs, Memory] = UseCase(
    name="pin",
    returns='`{"id", "pinned", "memory": Memory}`',
    summary="pin or unpin a memory (pinned memories never decay)",
    args=PinArgs,
    run=_pin,
    to_json=lambda m: {"id": m.id, "pinned": m.pinned, "memory": memory_json(m)},
    to_text=lambda m: f"{'pinned' if m.pinned else 'unpinned'} {m.id}",
    surfaces=EDITOR,
    fixed=caused_by("pin"),
    touched=lambda m: [m],
    folder_arg=None,
)


def _undo_note(memory: Memory) -> str:
    """Names the last day a forgotten memory can be restored (``RETENTION`` after the
    forget; ``engram prune`` deletes it then, docs/trust.md), not just "30 days"."""
    from engram.lifecycle.trust import RETENTION, forgotten_until

    until = forgotten_until(memory)
    when = f"until {until:%Y-%m-%d}" if until is not None else f"for {RETENTION.days} days"
    return f"undo {when} ({RETENTION.days} days): engram restore {memory.id}"


def _forget(engine: Engine, a: IdArgs) -> Memory:
    from engram.app.memories import forget

    return forget(engine, a.id, actor=actor_of(a.actor), cause=a.cause)


FORGET: UseCase[IdArgs, Memory] = UseCase(
    name="forget",
    summary="forget a memory (hidden at once; 'engram restore ID' brings it back for 30 days)",
    args=IdArgs,
    run=_forget,
    to_json=lambda m: {"id": m.id, "forgotten": True, "memory": memory_json(m)},
    to_text=lambda m: f"forgot {m.id}: {m.citation_text}",
    notes=lambda m: [_undo_note(m)],
    returns='`{"id", "forgotten": true, "memory": Memory}`',
    surfaces=EDITOR,
    fixed=caused_by("forget"),
    touched=lambda m: [m],
    folder_arg=None,
)


def _restore(engine: Engine, a: IdArgs) -> Memory:
    from engram.app.memories import restore

    return restore(engine, a.id, actor=actor_of(a.actor), cause=a.cause)


RESTORE: UseCase[IdArgs, Memory] = UseCase(
    name="restore",
    summary="bring back a memory you forgot (within 30 days)",
    args=IdArgs,
    run=_restore,
    to_json=_memory_json,
    to_text=lambda m: f"restored {m.id}: {m.citation_text}",
    returns='`{"id", "memory": Memory}`',
    surfaces=frozenset({CLI}),
    fixed=caused_by("restore"),
    touched=lambda m: [m],
    folder_arg=None,
)


@attrs.frozen
class EditArgs:
    id: str = attrs.field(
        metadata=spec(
            "memory id, e.g. m-3f2a9c1e7b",
            max_length=100,
            memory_id=True,
            positional=True,
            metavar="ID",
        )
    )
    text: str | None = attrs.field(
        default=None,
        metadata=spec("the new text", metavar="TEXT", stdin=True),
    )
    type: MemoryType | None = attrs.field(
        default=None, metadata=spec("the new kind", cli=("--type", "-t"), default_text="unchanged")
    )
    file: str | None = attrs.field(
        default=None,
        metadata=spec(
            "anchor it to this file instead",
            path=True,
            cli=("--file", "-f"),
            default_text="unchanged",
        ),
    )
    symbol: str | None = attrs.field(
        default=None,
        metadata=spec(
            "anchor to this symbol in --file",
            max_length=500,
            cli=("--symbol", "-s"),
            metavar="NAME",
        ),
    )
    start_line: int | None = attrs.field(
        default=None, metadata=spec("0-based first line", ge=0, surfaces=HIDDEN)
    )
    end_line: int | None = attrs.field(
        default=None, metadata=spec("0-based last line (inclusive)", ge=0, surfaces=HIDDEN)
    )
    tags: list[str] | None = attrs.field(
        default=None,
        metadata=spec(
            "replace the tags", max_length=50, cli=("--tag",), metavar="X", default_text="unchanged"
        ),
    )
    cause: str = attrs.field(default="", metadata=CAUSE)
    actor: str = attrs.field(default="", metadata=ACTOR)


def _edit(engine: Engine, a: EditArgs) -> Memory:
    from engram.app.anchors import anchor_for
    from engram.app.trust import edit

    anchors = None
    if a.file is not None:
        anchors = [anchor_for(engine, a.file, a.symbol, a.start_line, a.end_line)]
    elif a.symbol is not None or a.start_line is not None:
        raise InvalidInput("a symbol or line range needs a file (--file)")
    return edit(
        engine,
        a.id,
        content=a.text,
        type=a.type.value if a.type is not None else None,
        anchors=anchors,
        tags=a.tags,
        actor=actor_of(a.actor),
        cause=a.cause,
    )


EDIT: UseCase[EditArgs, Memory] = UseCase(
    name="edit",
    summary="rewrite a memory: text, type, anchor or tags (the old ones stay in its log)",
    args=EditArgs,
    run=_edit,
    to_json=memory_json,
    to_text=lambda m: f"edited {m.id}: {m.citation_text}",
    returns="the Memory record",
    surfaces=frozenset({CLI}),
    fixed=caused_by("edit"),
    spellings=(LINE,),
    touched=lambda m: [m],
    folder_arg=None,
)


@attrs.frozen
class LogArgs:
    id: str | None = attrs.field(
        default=None,
        metadata=spec(
            "one memory's trail",
            max_length=100,
            memory_id=True,
            positional=True,
            metavar="ID",
            default_text="all",
        ),
    )
    limit: int = attrs.field(
        default=50, metadata=spec("at most this many entries", ge=1, le=1000, metavar="N")
    )


@attrs.frozen
class AuditTrail:
    id: str | None
    entries: list[AuditEntry]


def _log(engine: Engine, a: LogArgs) -> AuditTrail:
    from engram.app.trust import audit_log

    return AuditTrail(a.id, audit_log(engine, a.id, limit=a.limit))


def _log_json(trail: AuditTrail) -> JsonObject:
    """The trail; one memory's entries do not each repeat the ``id`` the result names."""
    entries = [to_json_object(e) for e in trail.entries]
    if trail.id is not None:
        for entry in entries:
            del entry["memory_id"]
    return {"id": trail.id, "entries": entries}


LOG: UseCase[LogArgs, AuditTrail] = UseCase(
    name="log",
    summary="the audit trail: every change of one memory, or the newest of all",
    args=LogArgs,
    run=_log,
    to_json=_log_json,
    to_text=lambda t: render.log_text(t.entries, with_id=t.id is None),
    notes=lambda t: [] if t.entries else ["no changes recorded"],
    returns=(
        '`{"id", "entries": [{"memory_id"?, "at", "event", "actor", "cause", "before", '
        '"after", "note", "pending"?}]}` (`memory_id` only in the newest of all, without an '
        "id; `pending`: not known to have been stored yet)"
    ),
    guidance="Use it to answer 'who added this?' (oldest first).",
    read_only=True,
    folder_arg=None,
)


USE_CASES: tuple[UseCase[object, object], ...] = (  # type: ignore[assignment]
    SHOW,
    CONFIRM,
    FLAG,
    PIN,
    FORGET,
    RESTORE,
    EDIT,
    LOG,
)

__all__ = ["USE_CASES"]
