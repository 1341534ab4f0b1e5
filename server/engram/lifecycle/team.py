"""Team sharing through the repository itself: verified memories as reviewable files.

A team shares what it learned the way it shares code: ``engram share`` writes each
verified memory to ``<team dir>/<id>.json`` (default ``.engram-team/``) in the
repository, where it is committed, reviewed in a pull request and pushed with the code;
``engram sync`` (also run by ``engram index`` and by the language server when those files
change after a pull) reads the folder back into every teammate's local store. One file
per memory keeps merges trivial (two people sharing two memories never conflict) and a
review diff readable. What a teammate's committed file or committed deletion does to the
local store is the trust model's (``lifecycle.trust``, docs/trust.md): a new memory waits
in review, an edit updates it, a deletion retires it; a folder missing from the working
tree retires nothing.

What may be shared (``share_refusal``): only memories a person stands behind (taught by a
user, confirmed, or pinned), in a project-wide scope (not session or work-unit notes),
not of the personal types (work state, preferences, calibration, prefetch and cost
notes), not deprecated, stale, awaiting review or tagged ``private``, and with no secret
left in the text (checked again here, after the redaction at remember time). Asking for
a memory by id overrides the "stands behind" rule (sharing it is standing behind it);
nothing overrides the safety rules.

Shared files carry only what a teammate needs: content, type, scope, anchors, tags,
relations, confidence, validity, who shared it and when. Access counts, session ids and
local review state stay local (docs/lifecycle.md: personal data never leaves the machine).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import cattrs

import attrs

from engram.jsontypes import parse_json
from engram.lifecycle.trust import HIDDEN_STATES, state_of
from engram.model import (
    MEMORY_ID,
    Memory,
    MemoryScope,
    MemorySource,
    MemoryType,
    memory_from_dict,
)
from engram.model.codec import make_converter, memory_to_dict
from engram.model.memory import TEAM_KEY
from engram.quoting import clean_name, has_control
from engram.redaction import redact_secrets

__all__ = [
    "DEFAULT_TEAM_DIR",
    "TEAM_TAG",
    "TeamEntry",
    "TeamFolder",
    "read_team_folder",
    "render_team_file",
    "share_refusal",
    "team_path",
]

log = logging.getLogger(__name__)

DEFAULT_TEAM_DIR = ".engram-team"
#: Tag on every memory that came from the team folder.
TEAM_TAG = "team"
#: A shared file larger than this is skipped (a memory is at most a few kilobytes).
MAX_TEAM_FILE_BYTES = 256 * 1024
#: Kind of note each format version of the shared file means.
TEAM_FORMAT = 1

PERSONAL_TYPES: frozenset[MemoryType] = frozenset(
    {
        MemoryType.WORK_STATE,
        MemoryType.PREFERENCE,
        MemoryType.TASK_CALIBRATION,
        MemoryType.PREFETCH_PATTERN,
        MemoryType.CONTEXT_COST,
    }
)
SHARED_SCOPES: frozenset[MemoryScope] = frozenset({MemoryScope.GLOBAL, MemoryScope.MODULE})
#: Fields of a memory that never leave the machine.
_LOCAL_FIELDS = (
    "access_count",
    "last_accessed_at",
    "needs_review",
    "user_verified",
    "deprecated",
    "stale_at",
    "flags",
    "extra",
    "work_unit",
    "updated_at",
)
_ID = MEMORY_ID  # one rule for ids on every path in (engram.model)


def secret_kinds(memory: Memory) -> list[str]:
    """Kinds of secret the scanner finds in any text a shared file would carry.

    Run again at share time, after the redaction at remember time: a memory stored before
    a rule existed, or edited in the store, must not reach the repository (security.md).
    """
    texts = [memory.content, memory.citation_text, *memory.tags]
    texts += [a.symbol or "" for a in memory.anchors]
    kinds: list[str] = []
    for text in texts:
        for kind in redact_secrets(text).kinds:
            if kind not in kinds:
                kinds.append(kind)
    return kinds


def share_refusal(memory: Memory, *, explicit: bool = False) -> str | None:
    """Why ``memory`` may not be shared, or None when it may.

    The state comes from the trust model (``state_of``), not from one field: a memory a
    person flagged (``not_useful``, ``wrong_scope``, ``outdated``), forgot, or that was
    retired is hidden from every editor and agent here, so it must not reach a teammate's
    (docs/trust.md, invariant 5); before, only ``deprecated`` was checked and a flagged
    memory went out with the next ``engram share``.
    """
    state = state_of(memory)
    if state in HIDDEN_STATES:
        return f"it is {state.value}"
    if memory.stale_at is not None:
        return "it is stale (its code changed); confirm or fix it first"
    if memory.needs_review:
        return "it awaits review; confirm it first"
    if "private" in memory.tags:
        return "it is tagged private"
    if memory.scope not in SHARED_SCOPES:
        return f"its scope is {memory.scope.value} (only global and module memories are shared)"
    found = secret_kinds(memory)
    if found:
        return f"its text contains what looks like a secret ({', '.join(found)})"
    if explicit:
        return None
    if memory.type in PERSONAL_TYPES:
        return f"{memory.type.value} memories are personal (share it by id to override)"
    if not (memory.user_verified or memory.pinned or memory.source is MemorySource.USER_TAUGHT):
        return "nobody has confirmed it yet (engram confirm ID, or share it by id)"
    return None


def team_path(folder: Path, memory_id: str) -> Path:
    if not _ID.match(memory_id):
        raise ValueError(f"not a memory id: {memory_id!r}")
    return folder / f"{memory_id}.json"


def render_team_file(memory: Memory, *, shared_by: str | None, shared_at: datetime) -> str:
    """The shared file's text: stable key order and indentation, so diffs stay small."""
    record = memory_to_dict(memory, make_converter())
    for key in _LOCAL_FIELDS:
        record.pop(key, None)
    found = record.get("provenance")
    provenance = dict(found) if isinstance(found, dict) else {}
    provenance.pop("session_id", None)
    provenance.pop("confirmed_by_sessions", None)
    record["provenance"] = provenance
    record["tags"] = [t for t in memory.tags if t != TEAM_TAG]
    record["shared"] = {
        "format": TEAM_FORMAT,
        "by": shared_by,
        "at": shared_at.isoformat(),
    }
    return json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@attrs.define
class TeamEntry:
    """One shared memory read from the folder, as the local store should hold it."""

    path: str
    memory: Memory
    #: hash of the file's text: unchanged files are skipped on the next sync
    digest: str
    shared_by: str | None


@attrs.define
class TeamFolder:
    entries: list[TeamEntry] = attrs.field(factory=list)
    skipped: list[str] = attrs.field(factory=list)


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_team_folder(folder: Path, *, label: str) -> TeamFolder:
    """Every ``*.json`` in ``folder`` as a local team memory; bad files are skipped, named.

    ``label`` is the folder as the user sees it (workspace-relative), for messages.
    """
    out = TeamFolder()
    if not folder.is_dir():
        return out
    converter = make_converter()
    for path in sorted(folder.glob("*.json")):
        name = f"{label}/{path.name}"
        if path.is_symlink():  # a link could read any file of the user's (docs/security.md)
            out.skipped.append(f"{name}: a symbolic link; team files must be regular files")
            continue
        try:
            data = _read_regular(path)
            if data is None:
                out.skipped.append(f"{name}: not a regular file")
                continue
            if len(data) > MAX_TEAM_FILE_BYTES:
                out.skipped.append(f"{name}: larger than {MAX_TEAM_FILE_BYTES} bytes")
                continue
            text = data.decode("utf-8")
            # nesting too deep is malformed too (stop 30), and a key given twice (stop 32)
            raw = parse_json(text, unique_keys=True)
        except (OSError, UnicodeDecodeError) as exc:
            out.skipped.append(f"{name}: cannot read it ({exc})")
            continue
        except json.JSONDecodeError as exc:
            out.skipped.append(f"{name}: not valid JSON (line {exc.lineno})")
            continue
        except ValueError as exc:  # a key given twice: which one would a reviewer have read?
            out.skipped.append(f"{name}: {exc}")
            continue
        entry = _entry(raw, name, text, path.stem, converter)
        if isinstance(entry, str):
            out.skipped.append(f"{name}: {entry}")
        else:
            out.entries.append(entry)
    return out


def _read_regular(path: Path) -> bytes | None:
    """The bytes of ``path`` (at most one byte over the limit), or None when it is not a
    regular file. A FIFO named ``m-….json`` (an archive can carry one) blocked ``engram
    sync``, ``engram index`` and an editor's start on its first read (stop 29): it is
    opened without blocking and refused before any read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(MAX_TEAM_FILE_BYTES + 1)


def _anchor_problem(memory: Memory) -> str | None:
    """A shared anchor must name a workspace-relative file (no ``..``, no absolute path)."""
    for anchor in memory.anchors:
        path = anchor.file
        if (
            not path
            or "\0" in path
            or len(path) > 1024
            or path.startswith(("/", "\\"))
            or re.match(r"^[A-Za-z]:", path) is not None
            or ".." in path.replace("\\", "/").split("/")
        ):
            shown = path if len(path) <= 80 else path[:77] + "..."
            return f"its anchor {shown!r} is outside the workspace; not imported"
    return None


def _entry(
    raw: object, name: str, text: str, stem: str, converter: cattrs.Converter
) -> TeamEntry | str:
    """One shared file as the memory it states, or why it is skipped (named, never fatal).

    Personal types are not imported (a teammate's work state is not where *your* last
    session stopped) and an anchor outside the workspace skips the file (docs/security.md).
    """
    if not isinstance(raw, dict):
        return "not a memory (expected a JSON object)"
    shared = raw.pop("shared", None)
    shared_by = shared.get("by") if isinstance(shared, dict) else None
    shared_at = shared.get("at") if isinstance(shared, dict) else None
    try:
        memory = memory_from_dict(raw, converter)
    except Exception as exc:  # a hand-edited file: say what is wrong, keep the rest
        return f"not a memory ({str(exc).splitlines()[0][:120]})"
    if memory.id != stem:
        return f"its id {memory.id!r} does not match the file name"
    if memory.type in PERSONAL_TYPES:
        return f"{memory.type.value} memories are personal; a teammate's is not imported"
    problem = _anchor_problem(memory)
    if problem:
        return problem
    names = [
        *memory.tags,
        *(a.symbol or "" for a in memory.anchors),
        *(a.file for a in memory.anchors),
    ]
    if any(has_control(n) for n in names):  # `\x1b[2J` in a tag cleared the reader's screen
        return "a tag or anchor holds control characters; not imported"
    if redact_secrets(memory.content).redacted:
        return "its text contains what looks like a secret; not imported"
    # the name is a claim too: one short line, shown quoted (engram.quoting)
    shared_by = clean_name(shared_by) if shared_by else None
    shared_at = shared_at if isinstance(shared_at, str) else None
    extra = {TEAM_KEY: {"file": name, "by": shared_by, "at": shared_at}}
    # the memory as the file states it; what it may be trusted with here is the trust
    # model's to say (lifecycle.trust.admit_team / TeamShare, docs/trust.md), never the file's
    memory = attrs.evolve(
        memory,
        tags=list(dict.fromkeys([*memory.tags, TEAM_TAG])),
        user_verified=False,
        needs_review=False,
        pinned=False,
        deprecated=False,
        stale_at=None,
        extra=extra,
    )
    return TeamEntry(path=name, memory=memory, digest=_digest(text), shared_by=shared_by)
