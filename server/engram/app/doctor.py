"""Status: ``engram doctor`` (what works and why not) and ``engram stats`` (the store).

The doctor never raises for a broken component: each check says what is wrong and what it
costs (docs/cli.md), so a user can fix their set-up from its output alone.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.app.team import team_folder
from engram.config import KEYWORD_ONLY_REASON
from engram.errors import EngramError, InvalidInput, disk_trouble, one_line
from engram.gitroot import unsafe_git_file

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.jsontypes import JsonObject


@attrs.define
class DoctorCheck:
    """One line of ``engram doctor``: ``ok`` False means the user should act on ``detail``."""

    name: str
    ok: bool
    detail: str
    #: "error" blocks a capability; "warning" degrades it; "info" is just a fact; "skipped":
    #: not run, because of a check above it (a .engram/ that is not writable)
    level: str = "info"
    #: the same facts as numbers for ``--json`` (``detail`` is the sentence a person reads)
    facts: dict[str, int | str | None] = attrs.field(factory=dict)

    def to_dict(self) -> JsonObject:
        out: JsonObject = {
            "name": self.name, "ok": self.ok, "detail": self.detail, "level": self.level
        }  # fmt: skip
        if self.facts:
            out["facts"] = dict(self.facts)
        return out


def stats(engine: Engine) -> JsonObject:
    """Counts of the store by state, type, source and scope; its size on disk.

    ``active`` is the trust state of docs/trust.md (shown, not in review, not stale), the
    one the report's tile counts; ``shown`` is every memory an editor or agent may receive
    (``is_shown``) and ``deprecated`` the rest: retired, forgotten or flagged. A new user's
    walk (stop 31) read "Active 8" in the Memory view beside "5 active" in the report,
    because this count then meant "not retired"; stop 33's status bar said 5 memories
    beside a Memory view that listed 4, because a flagged memory counted as shown.
    """
    from engram.lifecycle.trust import is_shown

    memories = engine.store.list(engine.filter(include_deprecated=True))
    by_type: dict[str, int] = {}
    by_source: dict[str, int] = {}
    by_scope: dict[str, int] = {}
    for memory in memories:
        by_type[memory.type.value] = by_type.get(memory.type.value, 0) + 1
        by_source[memory.source.value] = by_source.get(memory.source.value, 0) + 1
        by_scope[memory.scope.value] = by_scope.get(memory.scope.value, 0) + 1
    active = [m for m in memories if is_shown(m)]
    return {
        "workspace": str(engine.workspace.root),
        "total": len(memories),
        "shown": len(active),
        "active": sum(1 for m in active if not m.needs_review and not m.is_stale),
        "needs_review": sum(1 for m in active if m.needs_review),
        "stale": sum(1 for m in active if m.is_stale),
        "deprecated": len(memories) - len(active),
        "pinned": sum(1 for m in active if m.pinned),
        "user_verified": sum(1 for m in active if m.user_verified),
        "anchored": sum(1 for m in active if m.anchors),
        "by_type": dict(sorted(by_type.items())),
        "by_source": dict(sorted(by_source.items())),
        "by_scope": dict(sorted(by_scope.items())),
        "store_bytes": _dir_size(engine.workspace.engram_dir),
        "embedding_model": engine.embedder_status,
    }


def doctor(engine: Engine) -> list[DoctorCheck]:
    """Everything a user needs to know to see why something does not work."""
    from engram import __version__

    checks = [
        DoctorCheck(
            "python",
            sys.version_info >= (3, 11),
            f"{platform.python_version()} ({sys.executable})",
        ),
        DoctorCheck("engram", True, __version__),
        DoctorCheck("packages", True, _package_versions()),
        DoctorCheck("workspace", True, str(engine.workspace.root)),
    ]
    engram_dir = engine.workspace.engram_dir
    where = engram_dir if engram_dir.exists() else engine.workspace.root
    writable = os.access(where, os.W_OK)
    checks.append(
        DoctorCheck(
            "writable",
            writable,
            f"{engram_dir} is writable" if writable else _not_writable(where, engram_dir),
            "info" if writable else "error",
        )
    )
    checks.append(_disk_check(engine))
    try:
        count = int(engine.store.count())
        checks.append(DoctorCheck("store", True, f"{count} memories in {engram_dir}"))
    except Exception as exc:
        checks.append(DoctorCheck("store", False, one_line(exc), "error"))
    checks.append(_embedding_check(engine))
    checks.append(_grammar_check())
    try:
        graph: dict[str, int | str | None] = dict(engine.codegraph.stats())
        shown = ", ".join(f"{value} {name.replace('_', ' ')}" for name, value in graph.items())
        partial = engine.codegraph.partial_files()
        if partial:  # a limit kept them from being read in full: say which and why
            graph["partial_files"] = len(partial)
            named = "; ".join(f"{path} ({note})" for path, note in partial[:3])
            more = f" and {len(partial) - 3} more" if len(partial) > 3 else ""
            shown += f"; {len(partial)} files only partly indexed: {named}{more}"
        checks.append(DoctorCheck("code graph", True, shown, facts=graph))
    except EngramError as exc:
        checks.append(DoctorCheck("code graph", False, str(exc), "warning"))
    except Exception as exc:
        checks.append(DoctorCheck("code graph", False, one_line(exc), "warning"))
    checks.append(_code_search_check(engine))
    git = shutil.which("git")
    checks.append(
        DoctorCheck(
            "git",
            git is not None,
            git or "git not found on PATH (history features are off)",
            "info" if git else "warning",
        )
    )
    unsafe = unsafe_git_file(str(engine.workspace.root))
    is_repo = (engine.workspace.root / ".git").exists()
    checks.append(
        DoctorCheck(
            "git repository",
            is_repo and unsafe is None,
            unsafe or ("yes" if is_repo else "not a git repository"),
            "info" if unsafe is None else "warning",
        )
    )
    for name, check in (("team", _team_check), ("agent digest", _digest_check),
                        ("workspace trust", _settings_trust_check),
                        ("confinement", _confinement_check)):  # fmt: skip
        try:
            checks.append(check(engine))
        except Exception as exc:  # one check failing is a finding, not doctor failing
            checks.append(DoctorCheck(name, False, disk_trouble(exc) or one_line(exc), "warning"))
    if not writable:  # SQLite opens no file there, not even to read: said once, above
        checks = [
            DoctorCheck(c.name, False, f"not read: {engram_dir.name}/ is not writable", SKIPPED)
            if c.name in _SQLITE_CHECKS and not c.ok
            else c
            for c in checks
        ]
    return checks


#: The level of a check that could not run because of one named above it (shown ``skip``).
SKIPPED = "skipped"
#: Checks that read a SQLite file in ``.engram/`` (WAL: even a reader creates files there).
_SQLITE_CHECKS = frozenset({"code graph", "agent digest"})


def _not_writable(where: Path, engram_dir: Path) -> str:
    """The one line a ``.engram/`` Engram cannot write gets: why, and what it stops."""
    try:
        read_only = bool(os.statvfs(where).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    why = "on a read-only file system" if read_only else "not writable by you"
    return (
        f"{engram_dir} is {why}: Engram can neither store nor index there, nor read its "
        "code graph and agent digest (SQLite files); make it writable"
    )


#: Below this much free space on the disk holding ``.engram/``, writes fail: a remember
#: stored its memory and lost its audit entry, an index stopped ("database or disk is full").
LOW_DISK_BYTES = 64 * 2**20


def _disk_check(engine: Engine) -> DoctorCheck:
    """Free space where ``.engram/`` lives: doctor said "writable" on a full disk, then
    itself failed with an internal error (the walk of stop 29)."""
    engram_dir = engine.workspace.engram_dir
    where = engram_dir if engram_dir.exists() else engine.workspace.root
    try:
        free = shutil.disk_usage(where).free
    except OSError as exc:
        return DoctorCheck("disk space", False, one_line(exc), "warning")
    shown = f"{free / 2**20:,.0f} MB free" if free >= 2**20 else f"{free / 1024:,.0f} KB free"
    if free < LOW_DISK_BYTES:
        return DoctorCheck(
            "disk space",
            False,
            f"{shown} on the disk holding {engram_dir}: Engram's writes (memories, their "
            "audit trail, the index) fail; free some space",
            "error",
            facts={"free_bytes": free},
        )
    return DoctorCheck("disk space", True, shown, "info", facts={"free_bytes": free})


def _embedding_check(engine: Engine) -> DoctorCheck:
    """The model, or why there is none: ``embed.model = "none"`` is the user's choice (a
    fact, said as info with where to change it; a warning told a user who turned
    embeddings off that something was wrong), a model that did not load is a warning."""
    status = engine.embedder_status
    if engine.embedder is not None or status == KEYWORD_ONLY_REASON:
        return DoctorCheck("embedding model", True, status, "info")
    detail = f"{status}; search uses keywords and the code graph only"
    return DoctorCheck("embedding model", False, detail, "warning")


def _code_search_check(engine: Engine) -> DoctorCheck:
    """Code chunks still without a vector: one is enough to turn meaning search over code
    off (``CodeSearch`` ranks with one matrix or none), so the count and the fix are named."""
    try:
        coverage = engine.code_search.coverage()
    except EngramError as exc:
        return DoctorCheck("code search", False, str(exc), "warning")
    except Exception as exc:
        return DoctorCheck("code search", False, one_line(exc), "warning")
    facts: dict[str, int | str | None] = {
        "chunks": coverage.chunks,
        "embedded": coverage.embedded,
        "unembedded": coverage.missing,
        "model": coverage.model_id,
    }
    if coverage.chunks == 0:
        return DoctorCheck("code search", True, "no code chunks yet (engram index builds them)",
                           facts=facts)  # fmt: skip
    if coverage.model_id is None:
        detail = f"{coverage.chunks} code chunks, searched by keywords only (no embedding model)"
        return DoctorCheck("code search", True, detail, facts=facts)
    if coverage.missing:
        detail = (
            f"{coverage.missing} of {coverage.chunks} code chunks have no embedding from "
            f"{coverage.model_id}: code search uses keywords only until `engram index` "
            "embeds them"
        )
        return DoctorCheck("code search", False, detail, "warning", facts=facts)
    detail = f"{coverage.chunks} code chunks, all embedded ({coverage.model_id})"
    return DoctorCheck("code search", True, detail, facts=facts)


def _digest_check(engine: Engine) -> DoctorCheck:
    """Whether the agents' digest mirrors every store version (docs/agents.md)."""
    digest = engine.digest
    mirrored, table = digest.lag()
    if digest.unreadable is not None:
        return DoctorCheck(
            "agent digest",
            False,
            f"unreadable ({digest.unreadable}): hooks answer nothing until it is rebuilt; "
            "run `engram digest --rebuild` (the next write or SessionStart hook also does)",
            "warning",
        )
    if table is None:
        return DoctorCheck("agent digest", True, "no memories stored yet", "info")
    if digest.is_stale():
        return DoctorCheck(
            "agent digest",
            False,
            f"behind the store (mirrors version {mirrored}, the store is at {table}): "
            "hooks would miss memories; run `engram digest --rebuild` (a hook also starts it)",
            "warning",
        )
    return DoctorCheck("agent digest", True, f"mirrors store version {table}", "info")


def _settings_trust_check(engine: Engine) -> DoctorCheck:
    """Whether the workspace's settings that run code or send data are approved."""
    trust = engine.settings_trust
    if trust.needs_approval:
        return DoctorCheck("workspace trust", False, trust.summary(), "warning")
    return DoctorCheck("workspace trust", True, trust.summary(), "info")


def _confinement_check(engine: Engine) -> DoctorCheck:
    """Links in the workspace that point outside it: never read, named here."""
    from engram.codegraph.walk import iter_workspace_files
    from engram.workspace import links_out_of_engram_dir

    written = links_out_of_engram_dir(engine.workspace.root)
    if written:  # Engram's own folder: every writer refuses it until the link is gone
        return DoctorCheck(
            "confinement",
            False,
            f"{', '.join(written[:5])} in Engram's folder point outside the workspace: nothing "
            "is written through them, so Engram cannot write its files here; delete them",
            "error",
        )
    outside: list[str] = []
    for _ in iter_workspace_files(engine.workspace.root, engine.config.index.exclude, outside):
        pass
    if not outside:
        return DoctorCheck("confinement", True, "no link points outside the workspace")
    shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
    return DoctorCheck(
        "confinement",
        True,
        f"{len(outside)} links point outside the workspace and are never read: {shown}",
        "warning",
    )


def _team_check(engine: Engine) -> DoctorCheck:
    """The team folder: how many shared memories, and any file sync had to skip."""
    from engram.lifecycle.team import read_team_folder

    try:
        folder, label = team_folder(engine)
    except InvalidInput as exc:
        return DoctorCheck("team", False, str(exc), "warning")
    if not folder.is_dir():
        return DoctorCheck("team", True, f"no {label}/ yet (engram share creates it)", "info")
    read = read_team_folder(folder, label=label)
    detail = f"{len(read.entries)} shared memories in {label}/"
    if read.skipped:
        return DoctorCheck(
            "team", False, f"{detail}; {len(read.skipped)} unreadable: {read.skipped[0]}",
            "warning",
        )  # fmt: skip
    return DoctorCheck("team", True, detail, "info")


def _dir_size(path: Path) -> int:
    total = 0
    if not path.exists():
        return 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(dirpath) / name).stat().st_size
            except OSError:
                continue
    return total


def _package_versions() -> str:
    from importlib import metadata

    names = ["lancedb", "fastembed", "onnxruntime", "tree-sitter", "pygls", "mcp", "rapidfuzz"]
    parts = []
    for name in names:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} missing")
    return ", ".join(parts)


def _grammar_check() -> DoctorCheck:
    from importlib.util import find_spec

    languages = {
        "python": "tree_sitter_python",
        "javascript": "tree_sitter_javascript",
        "typescript": "tree_sitter_typescript",
        "go": "tree_sitter_go",
        "rust": "tree_sitter_rust",
        "java": "tree_sitter_java",
    }
    found = [lang for lang, mod in languages.items() if find_spec(mod) is not None]
    missing = [lang for lang in languages if lang not in found]
    ok = find_spec("tree_sitter") is not None and not missing
    detail = "grammars: " + (", ".join(found) or "none")
    if missing:
        detail += f"; missing: {', '.join(missing)}"
    return DoctorCheck("tree-sitter", ok, detail, "info" if ok else "warning")


__all__ = ["DoctorCheck", "doctor", "stats"]
