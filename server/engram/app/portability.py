"""Portability: export the store, import an export or an agent rules file.

Formats and parsing are ``engram.lifecycle.portability``'s; this module reads the file
safely (size, binary, encoding), keeps paths inside the workspace, updates re-imported
records in place and sends new ones through the remember pipeline (docs/lifecycle.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from engram.app.remember import ProgressCallback, RememberResult, prepare, remember_many
from engram.errors import InvalidInput
from engram.lifecycle import ParsedImport, export_memories, parse_import
from engram.model import Memory
from engram.workspace import WorkspaceError

if TYPE_CHECKING:
    from engram.app.engine import Engine

#: Largest import file we read (a rules file or an export), in bytes.
MAX_IMPORT_BYTES = 50_000_000


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
    redacted: int = 0
    ids: list[str] = attrs.field(factory=list)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def export(engine: Engine, fmt: str = "json") -> str:
    """Every memory (deprecated ones too) as JSON or Markdown; importable again."""
    memories = engine.store.list(engine.filter(include_deprecated=True))
    return export_memories(memories, fmt, now=engine.clock())


def import_file(
    engine: Engine, path: Path | str, progress: ProgressCallback | None = None
) -> ImportReport:
    """Import an Engram export (JSON/Markdown) or a rules file (CLAUDE.md, AGENTS.md …)."""
    source = Path(path).expanduser()
    try:
        if source.is_dir():
            raise InvalidInput(f"{source} is a directory, not a file")
        size = source.stat().st_size
        if size > MAX_IMPORT_BYTES:
            raise InvalidInput(f"{source} is {size} bytes, too large to import")
        raw = source.read_bytes()
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
    parsed: ParsedImport = parse_import(source, text)
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
        known = []
    if known:  # re-importing our own export: update in place, never duplicate
        prepared = [prepare(engine, m) for m in known]
        with engine.write_lock:
            engine.store.update([m for m, _ in prepared])
            engine.mirror([m for m, _ in prepared])
        report.merged += len(known)
        report.ids += [m.id for m, _ in prepared]
        report.redacted += sum(1 for _, kinds in prepared if kinds)
    if fresh:
        try:
            results = remember_many(engine, fresh, progress)
        except InvalidInput:
            results = []
            for memory in fresh:  # fall back one by one so one bad record is skipped
                try:
                    results += remember_many(engine, [memory])
                except InvalidInput as exc:
                    report.skipped.append(f"{memory.id}: {exc}")
    for result in results:
        report.ids.append(result.memory.id)
        report.merged += int(result.merged)
        report.added += int(not result.merged)
        report.redacted += int(bool(result.redactions))
    return report


def _reanchor_import(engine: Engine, memory: Memory) -> Memory:
    """Imported paths must still be inside this workspace (an export may come from
    another machine); paths that escape are refused rather than stored."""
    for anchor in memory.anchors:
        engine.relative(anchor.file)
    for rel in memory.related_files:
        engine.relative(rel)
    return memory


__all__ = ["MAX_IMPORT_BYTES", "ImportReport", "export", "import_file"]
