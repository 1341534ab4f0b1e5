"""Trust use cases: every change of what a memory is trusted to be, through one door.

The rules live in :mod:`engram.lifecycle.trust` (docs/trust.md); this module applies them
to the store: read the record, let the state machine move it (or refuse), write it back
under the writer lock, append the audit entry, mirror the change to the agents' digest.
The CLI, the language server and the MCP server call these with the actor they speak for
(a person at the CLI or in the editor, an agent over MCP) and the command that caused it.
"""

from __future__ import annotations

import getpass
import logging
import os
import shutil
import tomllib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import InvalidInput, NotFound, disk_trouble, one_line
from engram.lifecycle import redact_secrets
from engram.lifecycle import trust as rules
from engram.model import AuditEntry, CodeAnchor, CorrectionKind, Memory, MemorySource
from engram.store.errors import AfterCommitError, StoreError

if TYPE_CHECKING:
    from engram.app.engine import Engine

log = logging.getLogger(__name__)

#: Most audit entries one ``engram log`` returns.
MAX_LOG = 1000
#: Free space below which a change is refused before anything is written (:func:`recorded`).
ROOM = 4 << 20

_AGENT_SOURCES = frozenset(
    {MemorySource.AGENT_EXPLICIT, MemorySource.MCP_AUTO, MemorySource.QA_AUTO}
)
_OBSERVER_SOURCES = frozenset({MemorySource.OBSERVER_INFERRED, MemorySource.COMMIT_AUTO})


def person_name(engine: Engine) -> str:
    """Who "a person" is on this machine: ``git config user.name``, else the login name."""
    if engine.person_name is None:
        from engram.app.records import git_user

        found = git_user(engine)
        if not found:
            try:
                found = getpass.getuser()
            except (KeyError, OSError):  # no passwd entry (some containers)
                found = "you"
        engine.person_name = found
    return engine.person_name


def person(engine: Engine) -> rules.Actor:
    return rules.Actor.person(person_name(engine))


def team_folder_trusted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the user trusts the team folder: a teammate's committed memory is then
    verified on arrival, attributed to that teammate (docs/trust.md).

    Only the user's own settings count, never a file in the repository (issue 13: a
    cloned repository must not vouch for itself): the environment variable
    ``ENGRAM_TEAM__TRUSTED`` or ``[team] trusted = true`` in the user's
    ``$XDG_CONFIG_HOME/engram/config.toml`` (default ``~/.config/engram/config.toml``).
    """
    env = os.environ if environ is None else environ
    raw = env.get("ENGRAM_TEAM__TRUSTED")
    if raw is not None:
        return raw.strip().lower() in ("1", "true", "yes", "on")
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    try:
        with (Path(base) / "engram" / "config.toml").open("rb") as fh:
            team = tomllib.load(fh).get("team", {})
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return isinstance(team, dict) and team.get("trusted") is True


def actor_for_source(engine: Engine, source: MemorySource) -> rules.Actor:
    """Who stands behind a new memory, read from its source when no front end said."""
    if source in _AGENT_SOURCES:
        return rules.Actor.agent()
    if source in _OBSERVER_SOURCES:
        return rules.Actor(rules.ActorKind.OBSERVER)
    if source is MemorySource.REPOSITORY:
        return rules.Actor.system()
    return person(engine)


def record(engine: Engine, entries: Sequence[AuditEntry]) -> None:
    """Append audit entries that go with no store write (an agent's endorsement, a refused
    move, imported history); one that cannot be written raises, in one line."""
    with recorded(engine, entries):
        pass


@contextmanager
def recorded(engine: Engine, entries: Sequence[AuditEntry]) -> Iterator[None]:
    """Trail first (docs/trust.md, "The audit trail"): ``entries`` are written before the
    store write the block makes, pending, so a change never lands without its entry. A
    trail that cannot be written (a full disk) raises before anything changed; a block
    that returns lands its entries, one that fails takes them back, unless its write was
    committed (:class:`AfterCommitError`). When neither can be written the entries stay
    pending, and the next change settles them against the store (:func:`_settle`)."""
    seqs = _add(engine, entries)
    try:
        yield
    except AfterCommitError:
        _landed(engine, seqs)
        raise
    except BaseException:
        _withdraw(engine, seqs)
        raise
    _landed(engine, seqs)


#: One store write of :func:`write`: the ids of the memories it writes, and the write.
WriteStep = tuple[Collection[str], Callable[[], object]]


def write(engine: Engine, entries: Sequence[AuditEntry], *steps: WriteStep) -> None:
    """Store writes with their audit entries, trail first: each step ``(ids, write)`` runs
    in :func:`recorded` with the entries of the memories it writes (the last step takes
    any left), so when a later step fails the earlier ones keep their stored entries."""
    left = list(entries)
    for n, (ids, run) in enumerate(steps):
        mine = left if n == len(steps) - 1 else [e for e in left if e.memory_id in ids]
        left = [e for e in left if e.memory_id not in ids]
        with recorded(engine, mine):
            run()
    if not steps:
        record(engine, left)


def _add(engine: Engine, entries: Sequence[AuditEntry]) -> range:
    if not entries:
        return range(0)
    _check_room(engine)
    _settle(engine)
    try:
        return engine.audit.add(entries)
    except Exception as exc:
        trouble = disk_trouble(exc) or (
            f"the audit trail {engine.audit.path} cannot be written ({one_line(exc)})"
        )
        raise StoreError(f"nothing was changed: {trouble}") from exc


def _check_room(engine: Engine) -> None:
    """Refuse a change on a disk with less than :data:`ROOM` free: the entry, the store
    write and, should that write fail, taking the entry back each need a little room, and
    on the last kilobytes the entry took it all (a nearly full tmpfs, stop 30's walk)."""
    where = engine.audit.path.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return
    if free < ROOM:
        raise StoreError(
            f"nothing was changed: the disk holding Engram's data is full ({free >> 10} KB "
            f"free, a change needs {ROOM >> 20} MB): free some space and run it again "
            "(what was stored before is kept)"
        )


def _withdraw(engine: Engine, seqs: range) -> None:
    try:
        engine.audit.withdraw(seqs)
    except Exception as exc:  # pending until the next change settles them
        log.error(
            "%d audit entries of a change that was not stored stay pending until the next "
            "change (%s)",
            len(seqs),
            one_line(exc),
        )


def _landed(engine: Engine, seqs: range) -> None:
    try:
        engine.audit.landed(seqs)
    except Exception as exc:  # the change is stored: its entries stay, pending a while
        log.warning(
            "%d audit entries of a stored change stay pending until the next change (%s)",
            len(seqs),
            one_line(exc),
        )


def _settle(engine: Engine) -> None:
    """Settle the entries a full disk left pending (their landing or withdrawal could not
    be written) or a process that ended mid-write: each batch is kept when the store shows
    its change, withdrawn when it shows none (``rules.landed``). Before every change, so
    the trail and the store agree again as soon as there is room to say so."""
    audit = engine.audit
    try:
        waiting = audit.unsettled()
        if not waiting:
            return
        batches: dict[int, list[AuditEntry]] = {}
        last: dict[int, int] = {}
        for row in waiting:  # oldest first
            batches.setdefault(row.batch, []).append(row.entry)
            last[row.batch] = row.seq
        ids = list(dict.fromkeys(row.entry.memory_id for row in waiting))
        stored = {m.id: m for m in engine.store.get_many(ids)}
        for batch, entries in batches.items():
            span = range(batch, last[batch] + 1)
            verdicts = [rules.landed(e, stored.get(e.memory_id)) for e in entries]
            if False in verdicts and True not in verdicts:
                audit.withdraw(span)
                log.info("withdrew %d audit entries of a change never stored", len(entries))
            else:
                audit.landed(span)
    except Exception as exc:  # still no room: the change that follows says so itself
        log.warning("could not settle the pending audit entries: %s", one_line(exc))


def apply(engine: Engine, memory_id: str, event: rules.Event) -> rules.Transition:
    """Move one memory by ``event`` (or raise :class:`rules.TrustRefused`), durably."""
    from engram.app.records import get

    engine.check_writable()
    # read and written under the store's writer lock: the move is made on the record as it
    # stands, never on one another process changed meanwhile (its change would be lost)
    with engine.write_lock, engine.store.locked():
        memory = get(engine, memory_id)
        try:
            step = rules.transition(memory, event, now=engine.clock())
        except rules.TrustRefused as exc:
            record(engine, [refusal(engine, memory, event, str(exc))])
            raise
        if step.unchanged:  # an agent's endorsement: the entry is all there is
            record(engine, [step.entry])
        else:
            with recorded(engine, [step.entry]):
                engine.store.update([step.memory])
            engine.mirror([step.memory])
    return step


#: The cause of the index's creations from a repository's files (``seed_workspace``).
SEEDED_CAUSE = "engram index read "


def relabel_seeded(engine: Engine, ids: Collection[str], *, cause: str) -> int:
    """Memories the index made from a repository's files before their source said so get
    the source ``repository`` (:class:`rules.Relabel`), each with its entry: a project
    fact (``fact_key``, only the index sets it, once ``observer_inferred``) and a rule the
    trail shows the system created (once ``user_taught``, so diagnostics, hover and MCP said
    "user_taught" of a clone's CLAUDE.md). A rule a person imported keeps its label."""
    stored = [m for m in engine.store.get_many(list(ids)) if _seeded_before(engine, m)]
    if not stored:
        return 0
    event = rules.Relabel(actor=rules.Actor.system(), cause=cause)
    with engine.write_lock, engine.store.locked():
        current = [m for m in engine.store.get_many([m.id for m in stored]) if m.source in _OLD]
        steps = [rules.transition(m, event, now=engine.clock()) for m in current]
        steps = [s for s in steps if not s.unchanged]
        if steps:
            with recorded(engine, [s.entry for s in steps]):
                engine.store.update([s.memory for s in steps])
            engine.mirror([s.memory for s in steps])
    return len(steps)


#: The sources the index gave what it read from a repository's files, before ``repository``.
_OLD = frozenset({MemorySource.USER_TAUGHT, MemorySource.OBSERVER_INFERRED})


def _seeded_before(engine: Engine, memory: Memory) -> bool:
    if memory.source is MemorySource.OBSERVER_INFERRED:
        return "fact_key" in memory.extra
    if memory.source is not MemorySource.USER_TAUGHT:
        return False
    trail = engine.audit.for_memory(memory.id)
    created = next((e for e in trail if e.event == "create"), None)
    return (
        created is not None
        and created.actor == rules.ActorKind.SYSTEM.value
        and created.cause.startswith(SEEDED_CAUSE)
    )


def refusal(engine: Engine, memory: Memory, event: rules.Event, reason: str) -> AuditEntry:
    """The audit entry of a refused move (docs/trust.md: a refused move leaves one too)."""
    return AuditEntry(
        memory_id=memory.id,
        at=engine.clock(),
        event=f"{event.name} refused",
        actor=event.actor.label,
        cause=event.cause,
        note=reason,
    )


# --------------------------------------------------------------------------- a person's moves


def confirm(
    engine: Engine, memory_id: str, *, actor: rules.Actor | None = None, cause: str = ""
) -> Memory:
    return apply(
        engine, memory_id, rules.Confirm(actor=actor or person(engine), cause=cause)
    ).memory


def flag(
    engine: Engine,
    memory_id: str,
    kind: CorrectionKind,
    note: str | None = None,
    *,
    actor: rules.Actor | None = None,
    cause: str = "",
) -> Memory:
    clean = redact_secrets(note).text.strip() if note else None
    event = rules.Flag(actor=actor or person(engine), cause=cause, kind=kind, note=clean or None)
    return apply(engine, memory_id, event).memory


def pin(
    engine: Engine,
    memory_id: str,
    pinned: bool = True,
    *,
    actor: rules.Actor | None = None,
    cause: str = "",
) -> Memory:
    event = rules.Pin(actor=actor or person(engine), cause=cause, pinned=pinned)
    return apply(engine, memory_id, event).memory


def forget(
    engine: Engine, memory_id: str, *, actor: rules.Actor | None = None, cause: str = ""
) -> Memory:
    return apply(engine, memory_id, rules.Forget(actor=actor or person(engine), cause=cause)).memory


def restore(
    engine: Engine, memory_id: str, *, actor: rules.Actor | None = None, cause: str = ""
) -> Memory:
    """Undo a forget while the record is kept (``rules.RETENTION``, 30 days, until
    ``engram prune`` deletes it); once deleted, the error says when and where its last
    text is, instead of "no memory with id" (docs/trust.md)."""
    try:
        return apply(
            engine, memory_id, rules.Restore(actor=actor or person(engine), cause=cause)
        ).memory
    except NotFound:
        gone = _deletion(engine, memory_id.strip())
        if gone is None:
            raise
        raise NotFound(gone) from None


def _deletion(engine: Engine, memory_id: str) -> str | None:
    """Why a memory is gone, from its trail: when it was deleted and, if it had been
    forgotten, that its days to restore it were over."""
    if not memory_id:
        return None
    trail = engine.audit.for_memory(memory_id)
    deleted = next((e for e in reversed(trail) if e.after.get("state") == "deleted"), None)
    if deleted is None:
        return None
    forgot = next((e for e in reversed(trail) if e.event == "forget"), None)
    days = rules.RETENTION.days
    why = (
        f"forgotten on {forgot.at:%Y-%m-%d} and deleted on {deleted.at:%Y-%m-%d} when its "
        f"{days} days to restore it were over"
        if forgot is not None and forgot.at <= deleted.at
        else f"deleted on {deleted.at:%Y-%m-%d}" + (f" ({deleted.note})" if deleted.note else "")
    )
    return f"{memory_id} was {why}; its last text is in `engram log {memory_id}`"


def edit(
    engine: Engine,
    memory_id: str,
    *,
    content: str | None = None,
    type: str | None = None,
    anchors: Sequence[CodeAnchor] | None = None,
    tags: Sequence[str] | None = None,
    actor: rules.Actor | None = None,
    cause: str = "",
) -> Memory:
    """A person rewrites a memory; new text is validated, redacted and embedded again."""
    from engram.app.inputs import parse_type, validate_text
    from engram.app.records import embed_memories

    text = None
    if content is not None:
        text = redact_secrets(validate_text(content, engine.config.safety.max_content_chars)).text
    event = rules.Edit(
        actor=actor or person(engine),
        cause=cause,
        content=text,
        type=parse_type(type) if type is not None else None,
        anchors=anchors,
        tags=[t.strip() for t in tags if t and t.strip()] if tags is not None else None,
    )
    step = apply(engine, memory_id, event)
    if text is not None or type is not None:  # the text an embedding was made of changed
        vectors = embed_memories(engine, [step.memory], None)
        if vectors is not None:
            with engine.write_lock, engine.store.locked():
                # the record as it stands now (a use may have been counted meanwhile), with
                # the vector of the text the edit made, while it still holds that text
                current = engine.store.get(step.memory.id)
                if current is not None and (current.content, current.type) == (
                    step.memory.content,
                    step.memory.type,
                ):
                    engine.store.update([current], vectors, engine.loaded_model_id)
    return step.memory


# --------------------------------------------------------------------------- reading the trail


def audit_log(engine: Engine, memory_id: str | None = None, limit: int = 50) -> list[AuditEntry]:
    """One memory's trail (oldest first), or the newest entries of the store."""
    if not isinstance(limit, int) or limit <= 0 or limit > MAX_LOG:
        raise InvalidInput(f"limit must be between 1 and {MAX_LOG}, got {limit}")
    audit = engine.audit
    if memory_id is None:
        return audit.recent(limit)
    memory_id = memory_id.strip()
    if not memory_id:
        raise InvalidInput("memory id is empty")
    entries = audit.for_memory(memory_id)
    if not entries and engine.store.get(memory_id) is None:
        raise NotFound(f"no memory with id {memory_id}, and no trail of one")
    return entries[-limit:]
