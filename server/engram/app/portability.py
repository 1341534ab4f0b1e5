"""Portability: export the store, import an export or an agent rules file.

Formats and parsing are ``engram.lifecycle.portability``'s; this module reads the file
safely (size, binary, encoding), keeps paths inside the workspace, updates re-imported
records in place and sends new ones through the remember pipeline (docs/lifecycle.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.app.remember import RememberResult, prepare, remember_many
from engram.app.trust import SEEDED_CAUSE, person, record, recorded, relabel_seeded
from engram.errors import InvalidInput
from engram.lifecycle import ParsedImport, export_memories, parse_import, parse_rules
from engram.lifecycle import trust as rules
from engram.lifecycle.portability import import_kind, is_rules_file
from engram.model import AuditEntry, Memory, MemorySource
from engram.model.memory import TEAM_KEY
from engram.progress import Progress
from engram.workspace import WorkspaceError, confine

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.jsontypes import JsonObject

#: Largest import file we read (an export), in bytes.
MAX_IMPORT_BYTES = 50_000_000
#: Largest rules file (CLAUDE.md, AGENTS.md …) and most rules read from one: a real one
#: holds tens of rules in kilobytes; a 13 MB text file read as rules made 300,000
#: memories (the engine at 1.1 GB, still storing them ten minutes later).
MAX_RULES_BYTES = 1_000_000
MAX_RULES = 500


@attrs.define
class ImportReport:
    """What :func:`import_file` did with a file."""

    path: str
    kind: str
    added: int = 0
    merged: int = 0
    #: rules already imported earlier and left as they are (they may have been corrected)
    unchanged: int = 0
    skipped: list[str] = attrs.field(factory=list)
    #: memories that had secrets redacted before they were stored
    redacted: int = 0
    #: kind of secret -> in how many memories it was found (``aws_secret_key``: 1)
    redacted_kinds: dict[str, int] = attrs.field(factory=dict)
    ids: list[str] = attrs.field(factory=list)
    #: audit entries the file carried, added to this store's trail (tagged imported)
    imported_audit: int = 0

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


def _refuse_link_out(engine: Engine, source: Path) -> None:
    """A workspace file that is a link to a file outside it is not read (docs/security.md,
    "Confinement"): a cloned repository's ``CLAUDE.md -> ~/.aws/credentials`` was imported
    as rules, by ``engram import CLAUDE.md`` and by every ``engram index``'s seed. A file
    outside the workspace that the user names (an export they saved) is read as it is."""
    root = engine.workspace.root.resolve()
    named = Path(os.path.abspath(source))
    if not (named.is_relative_to(root) or named.is_relative_to(engine.workspace.root)):
        return
    try:
        confine(root, named)
    except WorkspaceError as exc:
        raise InvalidInput(
            f"{source} is a link to a file outside the workspace: not read (a repository's "
            "link must not import your files; name the file itself to import it)"
        ) from exc


def _check_rules_file(source: Path, size: int) -> None:
    """Refuse, before parsing, a file that is neither an export nor a rules file by its
    name (``app.py``), or one too large to be rules (:data:`MAX_RULES_BYTES`)."""
    if not is_rules_file(source):
        raise InvalidInput(
            f"{source.name} is neither an Engram export (JSON, or Markdown from `engram "
            "export`) nor a rules file (Markdown or text: CLAUDE.md, AGENTS.md, .cursorrules): "
            "nothing imported"
        )
    if size > MAX_RULES_BYTES:
        raise InvalidInput(
            f"{source.name} is {size / 1e6:.1f} MB, too large for a rules file (at most "
            f"{MAX_RULES_BYTES / 1e6:g} MB; an export may be {MAX_IMPORT_BYTES / 1e6:g} MB): "
            "nothing imported"
        )


def export(engine: Engine, fmt: str = "json") -> str:
    """Every memory (deprecated ones too) as JSON or Markdown, each with its audit trail
    (docs/trust.md "The audit trail"); importable again."""
    memories = engine.store.list(engine.filter(include_deprecated=True))
    trails = engine.audit.for_memories([m.id for m in memories])
    return export_memories(memories, fmt, now=engine.clock(), audit=trails)


def import_file(
    engine: Engine, path: Path | str, progress: Progress | None = None, *, seeded: bool = False
) -> ImportReport:
    """Import an Engram export (JSON/Markdown) or a rules file (CLAUDE.md, AGENTS.md …).

    ``seeded``: the index read a repository's rules file on its own (``seed_workspace``),
    nobody asked. What a clone's CLAUDE.md says is the repository's claim, not the person's:
    its new rules have the source ``repository`` and are created by the system, naming the
    file, and so wait in review until the person confirms them (``lifecycle.trust.admit``;
    docs/security.md, "A repository's rules files"). A person's ``engram import`` is the
    person's act: every record it adds is created by that person (the trail names the
    file), whatever source the record states; the source still decides where it starts.
    """
    source = Path(path).expanduser()
    _refuse_link_out(engine, source)
    try:
        if source.is_dir():
            raise InvalidInput(f"{source} is a directory, not a file")
        # a device or a pipe (/dev/zero, /dev/stdin) has no size to check and may never end
        if not stat.S_ISREG(source.stat().st_mode):
            raise InvalidInput(
                f"{source} is not a regular file; import reads a JSON or Markdown file"
            )
        with source.open("rb") as fh:  # read at most the limit: the file may grow meanwhile
            raw = fh.read(MAX_IMPORT_BYTES + 1)
        if len(raw) > MAX_IMPORT_BYTES:
            raise InvalidInput(f"{source} is over {MAX_IMPORT_BYTES} bytes, too large to import")
    except FileNotFoundError as exc:
        raise InvalidInput(f"{source} does not exist") from exc
    except PermissionError as exc:
        raise InvalidInput(f"cannot read {source}: permission denied") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {source}: {exc.strerror or exc}") from exc
    if b"\x00" in raw:
        raise InvalidInput(f"{source} looks binary; import reads JSON or Markdown text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source} is not UTF-8 text") from exc
    if seeded or import_kind(source, text) == "rules":
        _check_rules_file(source, len(raw))
    parsed: ParsedImport = parse_import(source, text)
    if seeded:
        # the repository's rules file is read as rules, whatever it holds: a clone's
        # CLAUDE.md carrying an export's record (`<!-- engram: {...} -->`) was read as your
        # export, its record added as your active user_taught memory, or, bearing the id
        # of one you have, rewrote that one's text in place (its trust kept)
        rules_read = parse_rules(text, source_name=source.name)
        parsed = ParsedImport(
            "rules", [attrs.evolve(m, source=MemorySource.REPOSITORY) for m in rules_read]
        )
    if parsed.kind == "rules" and len(parsed.memories) > MAX_RULES:
        raise InvalidInput(
            f"{source.name} reads as {len(parsed.memories):,} rules, and a rules file holds "
            f"tens (at most {MAX_RULES}): nothing imported; split it, or `engram remember` "
            "what matters"
        )
    report = ImportReport(path=str(source), kind=parsed.kind, skipped=list(parsed.skipped))
    accepted: list[Memory] = []
    for memory in parsed.memories:
        try:
            accepted.append(_reanchor_import(engine, memory))
        except (InvalidInput, WorkspaceError) as exc:
            report.skipped.append(f"{memory.id}: {exc}")
    results: list[RememberResult] = []
    existing_ids = {m.id for m in engine.store.get_many([m.id for m in accepted])}
    fresh = [m for m in accepted if m.id not in existing_ids]
    known = [m for m in accepted if m.id in existing_ids]
    if parsed.kind == "rules":
        # a rule imported before keeps its state (the user may have flagged or pinned it)
        report.unchanged = len(known)
        report.ids += [m.id for m in known]
        if seeded:  # rules an older index made as "user_taught" say the repository's now
            relabel_seeded(engine, [m.id for m in known], cause=f"{SEEDED_CAUSE}{source.name}")
        known = []
    stored_as: dict[str, str] = {}  # id in the file -> id in this store
    if known:  # re-importing our own export: update in place, never duplicate
        prepared = [prepare(engine, m) for m in known]
        entries: list[AuditEntry] = []
        # read and written under the store's writer lock: each record keeps its state as
        # it stands (a flag another process made between the read and the write was lost)
        with engine.write_lock, engine.store.locked():
            current = {m.id: m for m in engine.store.get_many([m.id for m, _ in prepared])}
            updated = []
            for memory, _ in prepared:
                kept = _keep_trust(current[memory.id], memory)
                entry = _import_entry(engine, current[memory.id], kept, source.name)
                if entry is None:  # same text, tags and anchors: this store's record stays
                    report.unchanged += 1
                    continue
                updated.append(kept)
                entries.append(entry)
            if updated:
                with recorded(engine, entries):
                    engine.store.update(updated)
                engine.mirror(updated)
        stored_as.update({m.id: m.id for m, _ in prepared})
        report.merged += len(updated)
        report.ids += [m.id for m, _ in prepared]
        for _, kinds in prepared:
            _count_redacted(report, kinds)
    # a person's import is theirs: an export's record saying ``observer_inferred`` was
    # logged as created by "observer" though the person brought it (stop 31)
    actor, cause = person(engine), f"engram import {source.name}"
    if seeded:
        actor, cause = rules.Actor.system(), f"{SEEDED_CAUSE}{source.name}"
    if fresh:
        try:
            results = remember_many(engine, fresh, progress, actor=actor, cause=cause)
            stored_as.update({m.id: r.memory.id for m, r in zip(fresh, results, strict=True)})
        except InvalidInput:
            results = []
            for memory in fresh:  # fall back one by one so one bad record is skipped
                try:
                    one = remember_many(engine, [memory], actor=actor, cause=cause)
                except InvalidInput as exc:
                    report.skipped.append(f"{memory.id}: {exc}")
                    continue
                results += one
                stored_as[memory.id] = one[0].memory.id
    report.imported_audit = _import_trails(engine, parsed, stored_as, source.name)
    for result in results:
        report.ids.append(result.memory.id)
        report.merged += int(result.merged)
        report.added += int(not result.merged)
        _count_redacted(report, result.redactions)
    return report


def _count_redacted(report: ImportReport, kinds: list[str]) -> None:
    """One memory's redactions, counted so the report can name each kind."""
    if not kinds:
        return
    report.redacted += 1
    for kind in dict.fromkeys(kinds):
        report.redacted_kinds[kind] = report.redacted_kinds.get(kind, 0) + 1


#: The event of an audit entry brought by an export is prefixed so no reader takes it for
#: something that happened in this store (docs/trust.md "The audit trail").
IMPORTED = "imported "


def _keep_trust(stored: Memory, imported: Memory) -> Memory:
    """A record this store already has keeps its own state and trust: a file never
    verifies, raises confidence, unflags or pins (docs/trust.md "What may move a memory"),
    nor says who stands behind it (its source: an agent's memory relabelled ``user_taught``
    by a re-imported file was ranked and labelled as a person's)."""
    extra = dict(imported.extra)
    for key in (rules.LIFECYCLE_KEY, TEAM_KEY):  # this store's own record of both
        extra.pop(key, None)
        if key in stored.extra:
            extra[key] = stored.extra[key]
    return attrs.evolve(
        imported,
        source=stored.source,
        confidence=stored.confidence,
        user_verified=stored.user_verified,
        needs_review=stored.needs_review,
        pinned=stored.pinned,
        deprecated=stored.deprecated,
        stale_at=stored.stale_at,
        last_accessed_at=stored.last_accessed_at,
        extra=extra,
    )


def _import_entry(engine: Engine, old: Memory, new: Memory, name: str) -> AuditEntry | None:
    """The trail entry of an in-place re-import that changed text, tags or anchors."""
    before, after = rules.snapshot(old), rules.snapshot(new)
    changed = [k for k in before if before[k] != after[k]]
    if not changed:
        return None
    return AuditEntry(
        memory_id=new.id,
        at=engine.clock(),
        event="import",
        actor=person(engine).label,
        cause=f"engram import {name}",
        before={k: before[k] for k in changed},
        after={k: after[k] for k in changed},
    )


def _import_trails(
    engine: Engine, parsed: ParsedImport, stored_as: dict[str, str], name: str
) -> int:
    """Append the trails an export carried, as history: each entry's event is tagged
    ``imported …`` and noted with the file; entries this store already holds (our own
    export read back) are skipped. History never moves a memory: nothing is applied."""
    entries: list[AuditEntry] = []
    for file_id, trail in parsed.audit.items():
        target = stored_as.get(file_id)
        if target is None or not trail:
            continue
        have = {
            (e.at, e.event.removeprefix(IMPORTED), e.actor) for e in engine.audit.for_memory(target)
        }
        for entry in trail:
            key = (entry.at, entry.event.removeprefix(IMPORTED), entry.actor)
            if key in have:
                continue
            have.add(key)
            event = entry.event if entry.event.startswith(IMPORTED) else IMPORTED + entry.event
            entries.append(attrs.evolve(entry, memory_id=target, event=event, note=f"from {name}"))
    record(engine, entries)
    return len(entries)


def _reanchor_import(engine: Engine, memory: Memory) -> Memory:
    """Imported paths must still be inside this workspace (an export may come from
    another machine); paths that escape are refused rather than stored."""
    for anchor in memory.anchors:
        engine.relative(anchor.file)
    for rel in memory.related_files:
        engine.relative(rel)
    return _without_file_claims(memory)


def _without_file_claims(memory: Memory) -> Memory:
    """An imported record minus what only this store may say about it: a pin (a person's
    act here, not a line in a file) and a team origin (only the team sync gives one, from
    the commit that wrote the teammate's file). The import is the user's own act on a file
    they chose, but the file's claims are untrusted input like a team file's; a made-up
    origin showed the record fenced as a teammate's (docs/trust.md "What may move a
    memory"). Verification is dropped by ``admit`` / ``_keep_trust`` already."""
    extra = {k: v for k, v in memory.extra.items() if k != TEAM_KEY}
    return attrs.evolve(memory, pinned=False, extra=extra)


__all__ = ["MAX_IMPORT_BYTES", "ImportReport", "export", "import_file"]
