"""Team sharing: write what a person stands behind to the team folder, read teammates' back.

What may be shared, the file format and the sync plan are ``engram.lifecycle.team``'s
rules; this module applies them to the store and the team folder (docs/team.md). ``share``
never pushes; ``sync_team`` runs on ``engram sync``, ``engram index`` and in the language
server after a pull changed the folder.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.app.records import embed_memories, get, git_user
from engram.app.remember import (
    keyword_neighbour_ids,
    link_contradictions,
    prepare,
)
from engram.app.state import EngineState
from engram.errors import EngramError, InvalidInput
from engram.jsontypes import parse_json
from engram.lifecycle.contradictions import Contradiction, find_contradictions
from engram.model import AuditEntry, Memory, team_origin
from engram.workspace import WorkspaceError

if TYPE_CHECKING:
    from datetime import datetime

    import numpy as np
    import numpy.typing as npt

    from engram.app.engine import Engine
    from engram.history import TeamFolderFacts
    from engram.jsontypes import JsonObject
    from engram.lifecycle.team import TeamEntry

    Vector = npt.NDArray[np.float32]
    Vectors = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


@attrs.define
class ShareReport:
    """What :func:`share` wrote into the team folder."""

    folder: str
    written: list[str] = attrs.field(factory=list)
    unchanged: list[str] = attrs.field(factory=list)
    #: ``id: reason`` for each memory that was not shared
    refused: list[str] = attrs.field(factory=list)
    committed: str | None = None

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


@attrs.define
class TeamSyncReport:
    """What :func:`sync_team` read from the team folder into the local store."""

    folder: str
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0
    skipped: list[str] = attrs.field(factory=list)
    #: ids added, updated or retired (editors refresh what shows them)
    changed: list[str] = attrs.field(factory=list)
    #: ``"local vs team: kind, reason"``: local memories a teammate's one contradicts (the
    #: local one goes to review, both are linked)
    conflicts: list[str] = attrs.field(factory=list)

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


def team_folder(engine: Engine) -> tuple[Path, str]:
    """The team folder (absolute) and as configured (workspace-relative, POSIX)."""
    rel = engine.config.team.folder
    try:
        folder = engine.workspace.resolve(rel)
    except WorkspaceError as exc:
        raise InvalidInput(f"team.dir must be inside the workspace: {exc}") from exc
    return folder, engine.workspace.relative(folder)


def share(engine: Engine, ids: Sequence[str] = (), *, commit: bool = False) -> ShareReport:
    """Write the memories someone stands behind (taught, confirmed, pinned; or the given ids)
    to the team folder for git to carry (docs/team.md, "What is shared").

    Files whose memory did not change are left alone, so re-sharing makes no diff.
    ``commit``: also ``git add`` + ``git commit`` the written files (never push).
    """
    from engram.lifecycle.team import render_team_file, share_refusal, team_path

    folder, label = team_folder(engine)
    report = ShareReport(folder=label)
    if ids:
        chosen = [get(engine, mid) for mid in dict.fromkeys(ids)]
    else:
        chosen = engine.store.list(engine.filter())
    who = git_user(engine)
    now = engine.clock()
    ready: list[tuple[Memory, Path]] = []
    for memory in chosen:
        reason = share_refusal(memory, explicit=bool(ids))
        if reason is not None:
            if ids:  # the whole store's refusals are the normal case, not news
                report.refused.append(f"{memory.id}: {reason}")
            continue
        if not ids and _a_teammates(memory, who):
            # a teammate's memory stays theirs: re-sharing it (a file git or a hand edit left
            # in another form) signed it "shared by" you (stop 31's property test)
            continue
        ready.append((memory, team_path(folder, memory.id)))
    if ready:
        folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for memory, path in ready:
        text = render_team_file(memory, shared_by=who, shared_at=now)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            report.refused.append(f"{memory.id}: {_not_written(label, path)}")
            continue
        if _same_shared_memory(path, text):
            report.unchanged.append(memory.id)
            continue
        try:
            _write_team_file(path, text)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            report.refused.append(f"{memory.id}: {_not_written(label, path)}")
            continue
        written.append(path)
        report.written.append(engine.workspace.relative(path))
    if commit:
        # files an earlier share wrote but git never committed (its commit failed: no
        # identity yet, a hook refused it): "share --commit" again commits them too, instead
        # of "nothing new to share" with the files still uncommitted
        pending = [*written, *_uncommitted(engine, label, ready, report.unchanged)]
        if pending:
            report.committed = _commit_team_files(engine, pending, len(pending))
    if written:
        sync_team(engine)  # our own copies now know they are shared
    return report


def _a_teammates(memory: Memory, me: str | None) -> bool:
    """Whether ``memory`` came from the team folder shared by someone other than ``me``."""
    from engram.quoting import clean_name

    origin = team_origin(memory)
    by = origin.get("by") if origin is not None else None
    return isinstance(by, str) and bool(by) and by != clean_name(me or "")


@attrs.define
class _SyncPlan:
    """What a team sync writes, planned from the local records as one read found them."""

    added: list[Memory] = attrs.field(factory=list)
    updated: list[Memory] = attrs.field(factory=list)
    reembed: list[Memory] = attrs.field(factory=list)
    retired: list[Memory] = attrs.field(factory=list)
    entries: list[AuditEntry] = attrs.field(factory=list)
    refused: set[str] = attrs.field(factory=set)
    skipped: list[str] = attrs.field(factory=list)
    unchanged: int = 0
    #: ids no longer followed (your own memory, or retired now)
    dropped: set[str] = attrs.field(factory=set)

    @property
    def to_embed(self) -> list[Memory]:
        return [*self.added, *self.reembed]


def sync_team(engine: Engine) -> TeamSyncReport:
    """Read the team folder into the local store, through the trust model.

    docs/trust.md: a teammate's committed file brings a memory into review (verified,
    attributed to the teammate, when the user trusts the team folder) or updates one; a
    committed deletion retires a memory that came from the folder. Your own memory read
    back from the folder, a file not committed yet, and a file or folder missing from the
    working tree change nothing of what a memory is trusted to be.

    The plan is made and embedded outside the store's writer lock; under it the local
    records are read again and the plan made again on them (cheap: the trust model's
    pure moves), so a person's flag or confirm made meanwhile by another process is
    never written over; a vector the first plan did not need is embedded then.
    """
    from engram.app import trust as app_trust
    from engram.embed import memory_embedding_text
    from engram.lifecycle.team import read_team_folder

    folder, label = team_folder(engine)
    report = TeamSyncReport(folder=label)
    state = EngineState.of(engine.workspace)
    stored = state.get("team_files")
    known: dict[str, str] = {
        str(k): str(v) for k, v in (stored.items() if isinstance(stored, dict) else [])
    }
    if not folder.is_dir() and not known:
        return report
    engine.check_writable()
    read = read_team_folder(folder, label=label)
    now = engine.clock()
    facts = _team_facts(engine, label)
    me = app_trust.person_name(engine)
    trusted = app_trust.team_folder_trusted()
    ids = list({*known, *(e.memory.id for e in read.entries)})
    checked: dict[str, Memory | InvalidInput] = {}

    def check(memory: Memory) -> Memory:
        """``prepare``'s check and redaction of a file's memory, once per sync: both plans
        ask, and it depends on the file alone, not on the local records."""
        if memory.id not in checked:
            try:
                checked[memory.id] = prepare(engine, memory)[0]
            except InvalidInput as exc:
                checked[memory.id] = exc
        found = checked[memory.id]
        if isinstance(found, InvalidInput):
            raise found
        return found

    def plan_on(local: dict[str, Memory]) -> _SyncPlan:
        return _plan_sync(engine, read.entries, local, known, facts, me, trusted, now, label, check)

    first = plan_on({m.id: m for m in engine.store.get_many(ids)})
    embedded = embed_memories(engine, first.to_embed, None)
    vectors = {
        memory_embedding_text(m): embedded[i]
        for i, m in enumerate(first.to_embed)
        if embedded is not None
    }
    with engine.write_lock, engine.store.locked():
        local = {m.id: m for m in engine.store.get_many(ids)}
        plan = plan_on(local)
        added, reembed, updated, retired = plan.added, plan.reembed, plan.updated, plan.retired
        texts = [memory_embedding_text(m) for m in plan.to_embed]
        late = [m for m, text in zip(plan.to_embed, texts, strict=True) if text not in vectors]
        if late and embedded is not None:  # changed meanwhile: rare, and a few memories
            again = embed_memories(engine, late, None)
            if again is not None:
                vectors.update(zip([memory_embedding_text(m) for m in late], again, strict=True))
        model_id = engine.loaded_model_id
        steps: list[app_trust.WriteStep] = []
        fresh = _stacked([vectors.get(t) for t in texts[: len(added)]])
        if added:
            steps.append(({m.id for m in added}, lambda: engine.store.add(added, fresh, model_id)))
        anew = _stacked([vectors.get(t) for t in texts[len(added) :]])
        if reembed:
            steps.append(
                ({m.id for m in reembed}, lambda: engine.store.update(reembed, anew, model_id))
            )
        if updated or retired:
            moved = [*updated, *retired]
            steps.append(({m.id for m in moved}, lambda: engine.store.update(moved)))
        app_trust.write(engine, plan.entries, *steps)
        engine.mirror([*added, *reembed, *updated, *retired])
    team_ids = {mid for mid, m in local.items() if team_origin(m) is not None}
    team_ids |= {m.id for m in added}
    incoming = [m for m in [*added, *reembed] if team_origin(m) is not None]
    report.conflicts = _flag_local_conflicts(engine, incoming, team_ids)
    report.skipped = [*read.skipped, *plan.skipped]
    report.unchanged = plan.unchanged
    report.added = len(added)
    report.updated = len(updated) + len(reembed)
    report.retired = len(retired)
    report.changed = [m.id for m in [*added, *reembed, *updated, *retired]]
    for memory_id in plan.dropped:
        known.pop(memory_id, None)
    known.update({e.memory.id: e.digest for e in read.entries if e.memory.id not in plan.refused})
    state.set("team_files", {k: v for k, v in known.items()})
    if report.added or report.updated or report.retired:
        log.info("team sync from %s: %s", label, report.to_dict())
    return report


def _stacked(vectors: Sequence[Vector | None]) -> Vectors | None:
    """One array of ``vectors``, or None when any is missing (no model: none at all)."""
    import numpy as np

    rows = [v for v in vectors if v is not None]
    if not rows or len(rows) != len(vectors):
        return None
    return np.stack(rows)


def _plan_sync(
    engine: Engine,
    files: Sequence[TeamEntry],
    local: dict[str, Memory],
    known: dict[str, str],
    facts: TeamFolderFacts | None,
    me: str,
    trusted: bool,
    now: datetime,
    label: str,
    check: Callable[[Memory], Memory],
) -> _SyncPlan:
    """The trust model's moves for the team folder's ``files`` against ``local`` (the
    records as one read found them); pure but for ``check`` (``prepare``, memoised)."""
    from engram.app import trust as app_trust
    from engram.lifecycle import trust as rules

    plan = _SyncPlan()
    for entry in files:
        mine = local.get(entry.memory.id)
        if known.get(entry.memory.id) == entry.digest and mine is not None:
            named = _named_by_commit(mine, facts, entry.path)
            if named is not None:  # stored as "the team" before 1e05bf4
                plan.updated.append(named)
                continue
            plan.unchanged += 1
            continue
        try:  # a file's text is checked like anyone's (length, control characters)
            shared = check(entry.memory)
        except InvalidInput as exc:  # one hostile file never stops the others
            plan.skipped.append(f"{entry.path}: {exc}")
            plan.refused.add(entry.memory.id)
            continue
        change = facts.committed(entry.path) if facts is not None else None
        if change is not None and change.author:
            shared = _by_commit_author(shared, change.author)
        event = rules.TeamShare(
            actor=rules.Actor(rules.ActorKind.TEAMMATE, change.author if change else None),
            cause=f"{entry.path} @ {change.commit[:10]}"
            if change
            else f"{entry.path} (not committed)",
            shared=shared,
            file=entry.path,
            commit=change.commit if change else None,
            trusted=trusted and change is not None,
            me=me,
        )
        if mine is None:
            step = rules.admit_team(event, now=now)
            plan.added.append(step.memory)
            plan.entries.append(step.entry)
            continue
        try:
            step = rules.transition(mine, event, now=now)
        except rules.TrustRefused as exc:  # named, like a malformed file; the rest syncs
            plan.skipped.append(f"{entry.path}: {exc}")
            plan.refused.add(entry.memory.id)
            plan.entries.append(app_trust.refusal(engine, mine, event, str(exc)))
            continue
        if step.unchanged:
            named = _named_by_commit(mine, facts, entry.path)
            if named is not None:
                plan.updated.append(named)
                continue
            plan.unchanged += 1
            continue
        plan.entries.append(step.entry)
        (plan.reembed if step.memory.content != mine.content else plan.updated).append(step.memory)
    present = {e.memory.id for e in files}  # a refused file is still there
    for memory_id in [mid for mid in known if mid not in present]:
        mine = local.get(memory_id)
        origin = team_origin(mine) if mine is not None else None
        if mine is None or origin is None:
            plan.dropped.add(memory_id)  # your own memory: unshared, never retired
            continue
        path = str(origin.get("file") or f"{label}/{memory_id}.json")
        deletion = facts.deletion(path) if facts is not None else None
        if deletion is None:
            continue  # missing from the working tree only: nothing retires
        delete = rules.TeamDelete(
            actor=rules.Actor(rules.ActorKind.TEAMMATE, deletion.author),
            cause=f"{path} deleted @ {deletion.commit[:10]}",
            file=path,
            commit=deletion.commit,
        )
        try:
            step = rules.transition(mine, delete, now=now)
        except rules.TrustRefused:
            continue
        plan.dropped.add(memory_id)
        if not step.unchanged:
            plan.retired.append(step.memory)
            plan.entries.append(step.entry)
    return plan


def _by_commit_author(memory: Memory, author: str) -> Memory:
    """A file that names nobody (shared while git had no identity: ``shared.by`` null)
    is attributed to the author of the commit that wrote it, a name sync already knows,
    instead of "the team" for ever (walk31); a name the file gives is kept."""
    from engram.model.memory import TEAM_KEY
    from engram.quoting import clean_name

    team = memory.extra.get(TEAM_KEY)
    if not isinstance(team, dict) or team.get("by"):
        return memory
    return attrs.evolve(
        memory, extra={**memory.extra, TEAM_KEY: {**team, "by": clean_name(author)}}
    )


def _named_by_commit(memory: Memory, facts: TeamFolderFacts | None, path: str) -> Memory | None:
    """A teammate's memory stored naming nobody, with its commit's author now, or None.

    Sync skips a file it read before (same digest), so a memory stored before sync named
    the author (1e05bf4) read 'shared by "the team"' until its file changed; the next sync
    names it instead (its text and trust state untouched)."""
    team = team_origin(memory)
    if team is None or team.get("by") or facts is None:
        return None
    change = facts.committed(path)
    if change is None or not change.author:
        return None
    return _by_commit_author(memory, change.author)


def _team_facts(engine: Engine, label: str) -> TeamFolderFacts | None:
    """What git says about the team folder (who committed each file, deletions)."""
    try:
        return engine.history.team_file_facts(label)
    except Exception as exc:  # no git, a broken repository: nothing counts as committed
        log.info("no git facts for %s: %s", label, exc)
        return None


def _flag_local_conflicts(
    engine: Engine, team: Sequence[Memory], all_team_ids: set[str]
) -> list[str]:
    """Local memories a teammate's new or edited memory contradicts go to review.

    docs/team.md: a team memory and a personal one that disagree are both kept and shown
    with attribution, never silently resolved. The team's side was reviewed in the
    repository, so the local side is the one that asks to be checked.

    Each pair is found by a keyword search from one side: from the team memories when
    they are fewer (a pull with a few new files), else from the local memories (the
    first sync of a clone: hundreds of team files, a handful of local notes).
    """
    if not team:
        return []
    batch = {m.id: m for m in team}
    local_count = engine.store.count() - len(all_team_ids)
    pairs: list[tuple[Memory, Contradiction]] = []
    if local_count < len(batch):
        locals_ = [m for m in engine.store.list(engine.filter()) if m.id not in all_team_ids]
        for mine in locals_:
            hits = keyword_neighbour_ids(engine, mine.content, mine.type)
            shared = [(batch[mid], None) for mid in hits if mid in batch]
            pairs.extend((mine, found) for found in find_contradictions(mine, shared))
    else:
        for shared_memory in team:
            hits = keyword_neighbour_ids(engine, shared_memory.content, shared_memory.type)
            candidates = [
                (m, None)
                for m in engine.store.get_many([h for h in hits if h != shared_memory.id])
                if team_origin(m) is None and m.id not in all_team_ids
            ]
            for found in find_contradictions(shared_memory, candidates):
                # read again from the local memory's side, so the reason says what
                # "yours" claims first, as in the other branch
                again = find_contradictions(found.memory, [(shared_memory, None)])
                fallback = Contradiction(shared_memory, found.kind, found.reason, found.overlap)
                pairs.append((found.memory, again[0] if again else fallback))
    if not pairs:
        return []
    from engram.app import trust as app_trust
    from engram.lifecycle import trust as rules

    # found outside the writer lock, linked under it on the records as they stand: a pair
    # one side of which another process changed meanwhile is left for the next sync
    read = {m.id: m for mine, found in pairs for m in (mine, found.memory)}
    notes: list[str] = []
    pending: dict[str, Memory] = {}
    entries: list[AuditEntry] = []
    with engine.write_lock, engine.store.locked():
        fresh = {m.id: m for m in engine.store.get_many(list(read))}
        for mine, found in pairs:
            if not all(
                m.id in fresh and rules.same_claim(m, fresh[m.id]) for m in (mine, found.memory)
            ):
                continue
            current = pending.get(mine.id, fresh[mine.id])
            if found.memory.id in {r.target_memory_id for r in current.relations}:
                continue  # already linked (an earlier sync)
            other = attrs.evolve(found, memory=pending.get(found.memory.id, fresh[found.memory.id]))
            linked, _ = link_contradictions(
                engine, current, [other], pending, entries, cause="engram sync"
            )
            pending[linked.id] = linked
            notes.append(f"{linked.id} vs {found.memory.id}: {found.kind}, {found.reason}")
        if pending:
            with app_trust.recorded(engine, entries):
                engine.store.update(list(pending.values()))
            engine.mirror(list(pending.values()))
    return notes


def _not_written(label: str, path: Path) -> str:
    return (
        f"{label}/{path.name} is a link or not a regular file: Engram never writes through "
        "it; delete it, then share again"
    )


def _write_team_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, never through a symbolic link (``O_NOFOLLOW``: ELOOP).

    A repository can commit ``.engram-team/<id>.json`` as a link: a teammate's memory the
    user confirmed, whose file a later commit replaced with ``../../../.bashrc``, was
    written there by the next ``engram share``, JSON whose ``"content": "… $(cmd)"`` line
    the next shell ran (stop 29)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _same_shared_memory(path: Path, text: str) -> bool:
    """Whether ``path`` already holds this memory (ignoring who shared it and when)."""
    try:
        old = parse_json(path.read_text(encoding="utf-8"))
        new = parse_json(text)
    except (OSError, ValueError):
        return False
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    old.pop("shared", None)
    new.pop("shared", None)
    return bool(old == new)


def _uncommitted(
    engine: Engine, label: str, ready: Sequence[tuple[Memory, Path]], unchanged: Sequence[str]
) -> list[Path]:
    """The team files of ``unchanged`` memories that git has not committed as they are."""
    if not unchanged:
        return []
    facts = _team_facts(engine, label)
    if facts is None:
        return []
    same = set(unchanged)
    return [
        path
        for memory, path in ready
        if memory.id in same and facts.committed(engine.workspace.relative(path)) is None
    ]


def _commit_team_files(engine: Engine, paths: Sequence[Path], count: int) -> str:
    message = f"engram: share {count} memor{'y' if count == 1 else 'ies'}"
    try:
        return str(
            engine.history.commit_paths([engine.workspace.relative(p) for p in paths], message)
        )
    except Exception as exc:  # GitCommandFailed: git's own reason, files kept
        raise EngramError(
            f"{exc}; the files are written: commit them yourself, or fix that and run "
            "`engram share --commit` again"
        ) from exc


__all__ = ["ShareReport", "TeamSyncReport", "share", "sync_team", "team_folder"]
