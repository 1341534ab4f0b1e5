"""The composition root: one :class:`Engine` per workspace, held by the CLI, LSP and MCP server.

Why one object: every front end must apply the same rules (redaction before storage,
near-duplicate merging, confinement of paths, trust updates) and share one store, one
embedder and one code graph per process. The engine builds each component lazily on first
use, so ``engram --help`` and LSP ``initialize`` never pay for LanceDB, the ONNX model or
tree-sitter. Writes take one lock (the LSP calls from several threads); embeddings are
computed outside it because they are the slow part.

Components owned by other packages are imported inside methods. Until a package exists,
the method that needs it raises :class:`~engram.errors.NotAvailable` with a one-line
reason; it never fakes a result.
"""

from __future__ import annotations

import builtins
import importlib
import logging
import os
import platform
import shutil
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from engram.config import EngramConfig, load_config
from engram.errors import EngramError, InvalidInput, NotAvailable, NotFound
from engram.lifecycle import (
    ParsedImport,
    PruneReport,
    apply_access,
    apply_confirmation,
    apply_correction,
    apply_session_success,
    export_memories,
    find_duplicate,
    merge_memories,
    parse_import,
    plan_prune,
    redact_secrets,
    stable_memory_id,
)
from engram.lifecycle.contradictions import Contradiction, find_contradictions
from engram.model import (
    CodeAnchor,
    CorrectionKind,
    Memory,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    MemoryType,
    Provenance,
    RelationType,
    UniversalPhase,
    content_hash,
    team_origin,
    utcnow,
)
from engram.workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)

#: Candidates fetched per search when looking for a near-duplicate.
DUPLICATE_CANDIDATES = 8
#: Agent rule files read on ``engram index`` (workspace-relative).
RULE_FILES = ("CLAUDE.md", "AGENTS.md", ".cursorrules", ".github/copilot-instructions.md")
#: Largest import file we read (a rules file or an export), in bytes.
MAX_IMPORT_BYTES = 50_000_000
#: Small engine bookkeeping kept between runs (last commit whose renames were applied …).
ENGINE_STATE_FILE = "engine_state.json"
#: Confidence multiplier for a memory whose anchored code was changed by a commit since the
#: memory was made (V5 §7 layer 3): the advice may still hold, so it is marked for review
#: and trusted a little less rather than hidden. Applied once per memory (flag below).
CODE_CHANGED_CONFIDENCE_FACTOR = 0.8
#: Flag set on a memory once the code under its anchor changed in a commit.
CODE_CHANGED_FLAG = "code_changed"
#: At most this many ``git rev-list`` checks per index run (bounded time on large stores).
MAX_STALENESS_CHECKS = 200


def _same_shared_memory(path: Path, text: str) -> bool:
    """Whether ``path`` already holds this memory (ignoring who shared it and when)."""
    import json

    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        new = json.loads(text)
    except (OSError, ValueError):
        return False
    if not isinstance(old, dict):
        return False
    old.pop("shared", None)
    new.pop("shared", None)
    return bool(old == new)


# --------------------------------------------------------------------------- result types


@attrs.define
class RememberResult:
    """What :meth:`Engine.remember` did: the stored record, whether it merged into an
    existing memory, and which kinds of secret were redacted (to tell the user)."""

    memory: Memory
    merged: bool = False
    redactions: list[str] = attrs.field(factory=list)
    duplicate_reason: str | None = None
    #: ``"m-…: reason"`` for each existing memory this one contradicts (both kept, linked
    #: by ``conflicts_with``; this one goes to review)
    conflicts: list[str] = attrs.field(factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "merged": self.merged,
            "redactions": list(self.redactions),
            "citation": self.memory.citation(),
            "conflicts": list(self.conflicts),
        }


@attrs.define
class DoctorCheck:
    """One line of ``engram doctor``: ``ok`` False means the user should act on ``detail``."""

    name: str
    ok: bool
    detail: str
    #: "error" blocks a capability; "warning" degrades it; "info" is just a fact.
    level: str = "info"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "level": self.level}


@attrs.define
class ImportReport:
    """What :meth:`Engine.import_` did with a file."""

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


@attrs.define
class ConsolidateReport:
    """What :meth:`Engine.consolidate` did (or would do with ``dry_run``)."""

    scanned: int = 0
    #: ``"kept <- removed (reason)"`` for near-duplicates merged into the older memory
    merged: list[str] = attrs.field(factory=list)
    #: ``"newer vs older: kind, reason"`` for contradictions newly linked for review
    conflicts: list[str] = attrs.field(factory=list)
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class ShareReport:
    """What :meth:`Engine.share` wrote into the team folder."""

    folder: str
    written: list[str] = attrs.field(factory=list)
    unchanged: list[str] = attrs.field(factory=list)
    #: ``id: reason`` for each memory that was not shared
    refused: list[str] = attrs.field(factory=list)
    committed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class TeamSyncReport:
    """What :meth:`Engine.sync_team` read from the team folder into the local store."""

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

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class HistorySyncReport:
    """What :meth:`Engine.sync_history` did after mining: memories that followed renames,
    anchors whose code changed (flagged for review), files gone or back, co-access seed."""

    mined: Any | None = None
    head: str | None = None
    renamed: int = 0
    relocated: int = 0
    code_changed: int = 0
    stale_marked: int = 0
    unstaled: int = 0
    coaccess_seeded: int = 0
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        mined = self.mined
        as_dict = getattr(mined, "to_dict", None)
        if callable(as_dict):
            mined = as_dict()
        elif mined is not None and attrs.has(type(mined)):
            mined = attrs.asdict(mined)
        data = attrs.asdict(self, recurse=False)
        data["mined"] = mined
        return data


ProgressCallback = Callable[[str, int, int | None], None]


# --------------------------------------------------------------------------- helpers


def _parse_enum(enum_cls: type[Any], value: Any, what: str) -> Any:
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        try:
            return enum_cls(value.strip().lower().replace("-", "_"))
        except ValueError:
            pass
    valid = ", ".join(m.value for m in enum_cls)
    raise InvalidInput(f"unknown {what} {value!r}; valid values: {valid}")


def parse_type(value: MemoryType | str) -> MemoryType:
    result: MemoryType = _parse_enum(MemoryType, value, "memory type")
    return result


def parse_source(value: MemorySource | str) -> MemorySource:
    result: MemorySource = _parse_enum(MemorySource, value, "source")
    return result


def parse_scope(value: MemoryScope | str) -> MemoryScope:
    result: MemoryScope = _parse_enum(MemoryScope, value, "scope")
    return result


def parse_phase(value: UniversalPhase | str | None) -> UniversalPhase | None:
    if value is None:
        return None
    result: UniversalPhase = _parse_enum(UniversalPhase, value, "phase")
    return result


def parse_correction(value: CorrectionKind | str) -> CorrectionKind:
    result: CorrectionKind = _parse_enum(CorrectionKind, value, "correction kind")
    return result


def validate_text(content: Any, max_chars: int) -> str:
    """The memory text, or :class:`InvalidInput` saying why it cannot be stored."""
    if not isinstance(content, str):
        raise InvalidInput("memory text must be a string")
    if "\x00" in content or "\ufffd" in content:
        raise InvalidInput("memory text looks binary (it contains NUL or undecodable bytes)")
    controls = sum(1 for ch in content if ord(ch) < 32 and ch not in "\n\r\t")
    if controls and controls * 20 > len(content):
        raise InvalidInput("memory text looks binary (too many control characters)")
    text = content.strip()
    if not text:
        raise InvalidInput("memory text is empty")
    if len(text) > max_chars:
        raise InvalidInput(
            f"memory text is {len(text)} characters, over the limit of {max_chars} "
            "(safety.max_content_chars); store a summary and anchor it to the file instead"
        )
    return text


def _optional_module(name: str, what: str) -> Any:
    """Import an Engram package that another helper may not have delivered yet."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == name or name.startswith(exc.name + ".")):
            raise NotAvailable(f"{what} not available yet ({name} is not installed)") from exc
        raise


def _require(module: Any, attr: str, what: str) -> Any:
    value = getattr(module, attr, None)
    if value is None:
        raise NotAvailable(f"{what} not available yet ({module.__name__}.{attr} is missing)")
    return value


# --------------------------------------------------------------------------- the engine


class Engine:
    """All use cases of Engram for one workspace. Thread-safe; cheap to construct."""

    workspace: Workspace
    config: EngramConfig

    def __init__(
        self,
        workspace: Workspace,
        config: EngramConfig,
        *,
        read_only: bool = False,
        store: Any | None = None,
        embedder: Any | None = None,
        clock: Callable[[], datetime] = utcnow,
        filter_factory: Callable[..., Any] | None = None,
    ) -> None:
        self.workspace = workspace
        self.config = config
        self.read_only = read_only
        self._clock = clock
        self._filter_factory = filter_factory
        self._write_lock = threading.RLock()
        self._init_lock = threading.RLock()
        self._store: Any | None = store
        self._embedder: Any | None = embedder
        self._embedder_reason: str | None = None if embedder is None else "injected"
        self._embedder_loaded = embedder is not None or config.embed.model == "none"
        if config.embed.model == "none" and embedder is None:
            self._embedder_reason = "dense search disabled (embed.model = none)"
        self._retriever: Any | None = None
        self._codegraph: Any | None = None
        self._observer: Any | None = None
        self._history: Any | None = None
        self._history_missing = False
        self._digest: Any | None = None
        self._code_search: Any | None = None
        self.last_chunk_report: Any | None = None
        self.last_history_report: HistorySyncReport | None = None

    @classmethod
    def open(
        cls,
        workspace: Workspace | str | Path | None = None,
        overrides: dict[str, Any] | None = None,
        *,
        read_only: bool = False,
    ) -> Engine:
        """The engine for ``workspace`` (default: the git root enclosing the cwd)."""
        ws = workspace if isinstance(workspace, Workspace) else Workspace.open(workspace)
        if ws.engram_dir.exists() and not ws.engram_dir.is_dir():
            raise WorkspaceError(
                f"{ws.engram_dir} is a file, not Engram's data directory; move it aside"
            )
        config = load_config(ws, overrides)
        return cls(ws, config, read_only=read_only)

    # ------------------------------------------------------------------ components

    @property
    def store(self) -> Any:
        """The memory store (LanceDB), opened on first use."""
        if self._store is None:
            with self._init_lock:
                if self._store is None:
                    module = _optional_module("engram.store", "the memory store")
                    store_cls = _require(module, "MemoryStore", "the memory store")
                    if not self.read_only:
                        self.workspace.ensure_engram_dir()
                    try:
                        self._store = store_cls(self.workspace, read_only=self.read_only)
                    except EngramError:
                        raise
                    except PermissionError as exc:
                        raise EngramError(
                            f"cannot open the store in {self.workspace.engram_dir}: "
                            "permission denied"
                        ) from exc
        return self._store

    @property
    def embedder(self) -> Any | None:
        """The embedding model, or ``None`` (then :attr:`embedder_status` says why)."""
        if not self._embedder_loaded:
            with self._init_lock:
                if not self._embedder_loaded:
                    try:
                        module = _optional_module("engram.embed", "embeddings")
                        load = _require(module, "load_embedder", "embeddings")
                        status = load(self.config.embed, self.workspace)
                        self._embedder = status.embedder
                        self._embedder_reason = str(status.reason)
                    except NotAvailable as exc:
                        self._embedder, self._embedder_reason = None, str(exc)
                    self._embedder_loaded = True
        return self._embedder

    @property
    def embedder_status(self) -> str:
        _ = self.embedder
        if self._embedder is not None:
            return f"{self._embedder.model_id} ({self._embedder_reason or 'loaded'})"
        return self._embedder_reason or "no embedding model"

    @property
    def retriever(self) -> Any:
        if self._retriever is None:
            with self._init_lock:
                if self._retriever is None:
                    module = _optional_module("engram.retrieval", "retrieval")
                    retriever_cls = _require(module, "Retriever", "retrieval")
                    self._retriever = retriever_cls(
                        self.store,
                        self.embedder,
                        self.config.retrieval,
                        graph=self._graph_or_none(),
                    )
        return self._retriever

    def _graph_or_none(self) -> Any | None:
        try:
            return self.codegraph
        except NotAvailable:
            return None
        except EngramError as exc:
            log.info("code graph unavailable for retrieval: %s", exc)
            return None

    @property
    def codegraph(self) -> Any:
        if self._codegraph is None:
            with self._init_lock:
                if self._codegraph is None:
                    module = _optional_module("engram.codegraph", "the code graph")
                    graph_cls = _require(module, "CodeGraph", "the code graph")
                    self._codegraph = graph_cls(self.workspace, self.config)
        return self._codegraph

    @property
    def observer(self) -> Any:
        if self._observer is None:
            with self._init_lock:
                if self._observer is None:
                    module = _optional_module("engram.observer", "the observer")
                    observer_cls = _require(module, "Observer", "the observer")
                    self._observer = observer_cls(self)
        return self._observer

    def _filter(self, **kwargs: Any) -> Any:
        if self._filter_factory is None:
            module = _optional_module("engram.store", "the memory store")
            self._filter_factory = _require(module, "MemoryFilter", "the memory store")
        return self._filter_factory(**kwargs)

    # ------------------------------------------------------------------ remember

    def _relative(self, path: str | os.PathLike[str]) -> str:
        rel = self.workspace.relative(path)
        if rel == ".":
            raise InvalidInput(f"{path} is the workspace itself, not a file")
        return rel

    def _anchor(
        self, file: str, symbol: str | None, start_line: int | None, end_line: int | None
    ) -> CodeAnchor:
        """A code anchor with workspace-relative path and, when known, the lines' hash."""
        rel = self._relative(file)
        if start_line is not None and start_line < 0:
            raise InvalidInput("line numbers start at 1")
        if end_line is not None and start_line is not None and end_line < start_line:
            raise InvalidInput(f"line range {start_line + 1}-{end_line + 1} is backwards")
        if end_line is None and start_line is not None:
            end_line = start_line
        if symbol and start_line is None:
            start_line, end_line = self._symbol_range(rel, symbol)
        anchored_hash: str | None = None
        path = self.workspace.root / rel
        if start_line is not None and path.is_file():
            try:
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            if lines:
                last = min(end_line if end_line is not None else start_line, len(lines) - 1)
                if start_line < len(lines):
                    anchored_hash = content_hash("\n".join(lines[start_line : last + 1]))
        return CodeAnchor(
            file=rel,
            symbol=symbol or None,
            start_line=start_line,
            end_line=end_line,
            content_hash=anchored_hash,
        )

    def _symbol_range(self, rel: str, symbol: str) -> tuple[int | None, int | None]:
        """Symbol -> 0-based (start, end) lines from the code graph when it knows it.

        The file is re-indexed first (cheap, incremental) so a symbol written a moment ago
        is found; the graph's lines are 1-based, anchors are 0-based like LSP.
        """
        try:
            graph = self.codegraph
            if (self.workspace.root / rel).is_file() and not self.read_only:
                graph.reindex_file(rel)
            found = graph.find_symbol(rel, symbol)
        except Exception as exc:  # the graph is optional here; never fail remember over it
            log.debug("symbol lookup failed for %s:%s: %s", rel, symbol, exc)
            return None, None
        if found is None:
            return None, None
        return int(found.start_line) - 1, int(found.end_line) - 1

    def _prepare(self, memory: Memory) -> tuple[Memory, list[str]]:
        """Validate, redact and normalise one memory before it is stored."""
        text = validate_text(memory.content, self.config.safety.max_content_chars)
        redaction = redact_secrets(text)
        updates: dict[str, Any] = {}
        if redaction.text != memory.content:
            updates["content"] = redaction.text
            if memory.citation_text and redaction.redacted:
                updates["citation_text"] = ""
        if redaction.redacted:
            updates["flags"] = list(dict.fromkeys([*memory.flags, "redacted"]))
        files = [self._relative(f) for f in memory.related_files]
        anchors = [attrs.evolve(a, file=self._relative(a.file)) for a in memory.anchors]
        updates["related_files"] = list(dict.fromkeys(files))
        updates["anchors"] = anchors
        updates["tags"] = list(dict.fromkeys(t.strip() for t in memory.tags if t and t.strip()))
        if memory.citation_text and "citation_text" not in updates:
            # a custom citation (imports) may carry a secret of its own
            updates["citation_text"] = redact_secrets(memory.citation_text).text
        # evolve re-runs __attrs_post_init__, which derives an empty citation from the
        # redacted content
        return attrs.evolve(memory, **updates), redaction.kinds

    def remember(
        self,
        content: str,
        *,
        type: MemoryType | str = "gotcha",
        source: MemorySource | str = "user_taught",
        file: str | None = None,
        symbol: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        tags: Sequence[str] = (),
        related_files: Sequence[str] = (),
        scope: MemoryScope | str | None = None,
        confidence: float | None = None,
        session_id: str | None = None,
        needs_review: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> RememberResult:
        """Store one memory (redacted, merged into a near-duplicate when there is one).

        Lines are 0-based and inclusive, as in LSP; the CLI converts from 1-based.
        """
        mtype = parse_type(type)
        msource = parse_source(source)
        mscope = (
            parse_scope(scope)
            if scope is not None
            else (MemoryScope.MODULE if file else MemoryScope.GLOBAL)
        )
        if confidence is not None and not (0.0 <= confidence <= 1.0):
            raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
        if symbol is not None and not symbol.strip():
            raise InvalidInput("symbol name is empty")
        if file is None and (symbol or start_line is not None):
            raise InvalidInput("a symbol or line range needs a file (--file)")
        text = validate_text(content, self.config.safety.max_content_chars)
        anchors = [self._anchor(file, symbol, start_line, end_line)] if file else []
        now = self._clock()
        memory = Memory(
            created_at=now,
            updated_at=now,
            last_accessed_at=now,
            valid_from=now,
            content=text,
            type=mtype,
            source=msource,
            scope=mscope,
            confidence=confidence if confidence is not None else _default_confidence(msource),
            tags=list(tags),
            related_files=list(related_files),
            anchors=anchors,
            provenance=Provenance(session_id=session_id, commit_sha=self._head_commit_quietly()),
            needs_review=needs_review,
            extra=dict(extra or {}),
        )
        return self.remember_many([memory])[0]

    def _head_commit_quietly(self) -> str | None:
        """HEAD's sha for a new memory's provenance (commit linkage, staleness), or ``None``.

        Never fails remember: no git, no repository or an empty one simply give ``None``.
        Outside a git repository GitPython is not even imported.
        """
        root = self.workspace.root
        if not any((folder / ".git").exists() for folder in (root, *root.parents)):
            return None
        try:
            head_commit = getattr(self.history, "head_commit", None)
            sha = head_commit() if callable(head_commit) else None
        except Exception as exc:
            log.debug("no commit for provenance: %s", exc)
            return None
        return sha if isinstance(sha, str) and sha else None

    def remember_many(
        self, memories: Sequence[Memory], progress: ProgressCallback | None = None
    ) -> list[RememberResult]:
        """The remember pipeline for a batch: one embedding call, one store write."""
        self._check_writable()
        prepared: list[tuple[Memory, list[str]]] = [self._prepare(m) for m in memories]
        if not prepared:
            return []
        now = self._clock()
        stamped = [attrs.evolve(m, updated_at=now) for m, _ in prepared]
        vectors = self._embed_memories(stamped, progress)
        results: list[RememberResult] = []
        with self._write_lock:
            store = self.store
            to_add: list[Memory] = []
            add_vectors: list[Any] = []
            to_update: dict[str, Memory] = {}
            batch_pool: list[Memory] = []
            for index, (memory, (_, kinds)) in enumerate(zip(stamped, prepared, strict=True)):
                vector = vectors[index] if vectors is not None else None
                candidates = self._duplicate_candidates(memory, vector, batch_pool, to_update)
                # "the timeout is 30s" / "… 90s" read as near-duplicates by text ratio, but
                # merging would keep one value and lose the other: contradictions never merge
                conflicts = find_contradictions(memory, candidates)
                disputed = {c.memory.id for c in conflicts}
                match = find_duplicate(
                    memory,
                    [pair for pair in candidates if pair[0].id not in disputed],
                    ratio_threshold=self.config.safety.duplicate_ratio,
                    cosine_threshold=self.config.safety.duplicate_cosine,
                )
                if match is not None:
                    merged = merge_memories(match.memory, memory, now=now)
                    if any(m.id == merged.id for m in to_add):
                        to_add = [merged if m.id == merged.id else m for m in to_add]
                    else:
                        to_update[merged.id] = merged
                    batch_pool = [merged if m.id == merged.id else m for m in batch_pool]
                    results.append(RememberResult(merged, True, kinds, match.reason))
                else:
                    memory, notes = self._link_contradictions(memory, conflicts, to_update)
                    to_add.append(memory)
                    add_vectors.append(vector)
                    batch_pool.append(memory)
                    results.append(RememberResult(memory, False, kinds, conflicts=notes))
            self._write(store, to_add, add_vectors, list(to_update.values()))
        # results hold the final state of merged records (a later one may merge again)
        final = {m.id: m for m in [*to_add, *to_update.values()]}
        return [attrs.evolve(r, memory=final.get(r.memory.id, r.memory)) for r in results]

    def _link_contradictions(
        self, memory: Memory, found: Sequence[Contradiction], pending: dict[str, Memory]
    ) -> tuple[Memory, list[str]]:
        """Link ``memory`` to the existing memories it contradicts (lifecycle.contradictions).

        Both are kept: the new one goes to review with a ``conflicts_with`` relation to
        each, and each gets the relation back (in ``pending``, written with the batch), so
        whoever reviews either sees the other. Never silently resolved (V5 §15).
        """
        if not found:
            return memory, []
        relations = list(memory.relations)
        notes: list[str] = []
        for conflict in found:
            other = pending.get(conflict.memory.id, conflict.memory)
            relations.append(
                MemoryRelation(
                    RelationType.CONFLICTS_WITH, target_memory_id=other.id, auto_extracted=True
                )
            )
            back = MemoryRelation(
                RelationType.CONFLICTS_WITH, target_memory_id=memory.id, auto_extracted=True
            )
            pending[other.id] = attrs.evolve(other, relations=[*other.relations, back])
            notes.append(f"{other.id}: {conflict.kind}, {conflict.reason}")
        return attrs.evolve(memory, relations=relations, needs_review=True), notes

    def _embed_memories(
        self, memories: Sequence[Memory], progress: ProgressCallback | None
    ) -> Any | None:
        embedder = self.embedder
        if embedder is None:
            return None
        embed_mod = _optional_module("engram.embed", "embeddings")
        text_of = _require(embed_mod, "memory_embedding_text", "embeddings")
        texts = [text_of(m) for m in memories]
        batch = max(1, self.config.embed.batch_size)
        if len(texts) <= batch:
            return embedder.embed(texts)
        import numpy as np

        parts = []
        for start in range(0, len(texts), batch):
            parts.append(embedder.embed(texts[start : start + batch]))
            if progress is not None:
                progress("embedding", min(start + batch, len(texts)), len(texts))
        return np.vstack(parts)

    def _duplicate_candidates(
        self,
        memory: Memory,
        vector: Any | None,
        batch_pool: Sequence[Memory],
        pending: dict[str, Memory],
    ) -> list[tuple[Memory, float | None]]:
        store = self.store
        flt = self._filter(types=[memory.type])
        scores: dict[str, float | None] = {}
        try:
            for mid, _score in store.keyword_search(memory.content, DUPLICATE_CANDIDATES, flt):
                scores.setdefault(mid, None)
        except Exception as exc:  # an FTS hiccup must not block remembering
            log.debug("keyword dedup search failed: %s", exc)
        if vector is not None:
            model_id = self._embedder.model_id if self._embedder is not None else None
            for mid, cosine in store.vector_search(
                vector, DUPLICATE_CANDIDATES, flt, model_id=model_id
            ):
                scores[mid] = float(cosine)
        found = {m.id: m for m in store.get_many(list(scores))}
        found.update({mid: m for mid, m in pending.items() if mid in found})
        pairs: list[tuple[Memory, float | None]] = [
            (found[mid], cos) for mid, cos in scores.items() if mid in found
        ]
        pairs.extend((m, None) for m in batch_pool if m.type == memory.type)
        return pairs

    def _write(
        self,
        store: Any,
        to_add: Sequence[Memory],
        add_vectors: Sequence[Any],
        to_update: Sequence[Memory],
    ) -> None:
        model_id = self._embedder.model_id if self._embedder is not None else None
        if to_add:
            vectors = None
            if model_id is not None and all(v is not None for v in add_vectors):
                import numpy as np

                vectors = np.vstack(list(add_vectors)).astype("float32")
            store.add(list(to_add), vectors, model_id)
        if to_update:
            store.update(list(to_update))
        self._mirror([*to_add, *to_update])

    def _mirror(self, upserts: Sequence[Memory] = (), deleted: Sequence[str] = ()) -> None:
        """After a store write: update the agents' SQLite digest.

        The digest (``engram.agents``) lets hook processes answer without LanceDB; it is a
        cache, so failing to update it is logged, never raised (the hook rebuilds it).
        """
        try:
            digest = self._digest
            if digest is None:
                module = importlib.import_module("engram.agents.digest")
                digest = self._digest = module.Digest(self.workspace)
            digest.apply(list(upserts), list(deleted))
        except ModuleNotFoundError:
            return
        except Exception as exc:
            log.info("could not update the agent digest: %s", exc)

    def rebuild_digest(self) -> int:
        """Rewrite the agents' digest from the store (it was stale or missing)."""
        module = importlib.import_module("engram.agents.digest")
        with self._write_lock:
            if self._digest is None:
                self._digest = module.Digest(self.workspace)
            return int(self._digest.rebuild(self.store.list(self._filter(include_deprecated=True))))

    def embed_missing(self, progress: ProgressCallback | None = None) -> dict[str, Any]:
        """Embed memories that have no vector for the current model (e.g. after a switch)."""
        embedder = self.embedder
        store = self.store
        count = int(store.count())
        if embedder is None:
            return {"count": count, "embedded": 0, "model": None}
        missing_fn = getattr(store, "missing_vectors", None)
        missing = list(missing_fn(embedder.model_id)) if callable(missing_fn) else []
        embedded = 0
        batch = max(1, self.config.embed.batch_size)
        text_of = _require(
            _optional_module("engram.embed", "embeddings"), "memory_embedding_text", "embeddings"
        )
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            vectors = embedder.embed([text_of(m) for m in chunk])  # outside the lock
            with self._write_lock:
                store.update(chunk, vectors, embedder.model_id)
                self._mirror()
            embedded += len(chunk)
            if progress is not None:
                progress("embedding", embedded, len(missing))
        return {"count": count, "embedded": embedded, "model": embedder.model_id}

    def _check_writable(self) -> None:
        if self.read_only:
            raise EngramError("this engine was opened read-only")

    # ------------------------------------------------------------------ read

    def get(self, memory_id: str) -> Memory:
        memory_id = (memory_id or "").strip()
        if not memory_id:
            raise InvalidInput("memory id is empty")
        memory = self.store.get(memory_id)
        if memory is None:
            raise NotFound(f"no memory with id {memory_id}")
        return memory  # type: ignore[no-any-return]

    def list(
        self,
        *,
        type: MemoryType | str | Sequence[MemoryType | str] | None = None,
        source: MemorySource | str | Sequence[MemorySource | str] | None = None,
        file: str | None = None,
        needs_review: bool | None = None,
        include_deprecated: bool = False,
        limit: int | None = None,
    ) -> list[Memory]:
        types = None if type is None else [parse_type(t) for t in _as_list(type)]
        sources = None if source is None else [parse_source(s) for s in _as_list(source)]
        rel = self._relative(file) if file else None
        if limit is not None and limit < 0:
            raise InvalidInput("limit must be positive")
        flt = self._filter(
            types=types,
            sources=sources,
            file=rel,
            needs_review=needs_review,
            include_deprecated=include_deprecated,
        )
        return list(self.store.list(flt, limit))

    def memories_for_file(self, rel_path: str) -> builtins.list[Memory]:
        """Memories anchored to or related to one file: for diagnostics and hover.

        Served from the store's in-process snapshot and its file -> rows index
        (``MemoryStore.ids_for_file``), so the hover path never scans or decodes the table.
        Deprecated memories are left out (the user said they were wrong).
        """
        try:
            rel = self._relative(rel_path)
        except (WorkspaceError, InvalidInput):
            return []
        store = self.store
        ids_for_file = getattr(store, "ids_for_file", None)
        if callable(ids_for_file):
            found = store.get_many(ids_for_file(rel))
        else:
            found = store.list(self._filter(file=rel))
        return [m for m in found if not m.deprecated]

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        phase: UniversalPhase | str | None = None,
        file: str | None = None,
        types: Sequence[MemoryType | str] | None = None,
        record: bool = True,
    ) -> builtins.list[Any]:
        """Explicit search: stale memories come back, marked stale."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("search query is empty")
        if k <= 0 or k > 1000:
            raise InvalidInput(f"k must be between 1 and 1000, got {k}")
        parsed_phase = parse_phase(phase)
        rel = self._relative(file) if file else None
        parsed_types = [parse_type(t) for t in types] if types else None
        module = _optional_module("engram.retrieval", "retrieval")
        request = _require(module, "SearchRequest", "retrieval")(
            query=query.strip(), k=k, phase=parsed_phase, file=rel, types=parsed_types
        )
        hits = list(self.retriever.search(request))
        if record and hits and not self.read_only:
            self._record_access_quietly([h.memory.id for h in hits])
        return hits

    def search_code(self, query: str, *, k: int = 10) -> builtins.list[Any]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("search query is empty")
        if k <= 0 or k > 1000:
            raise InvalidInput(f"k must be between 1 and 1000, got {k}")
        hits = list(self.code_search.search(query.strip(), k=k))
        if not hits and int(self.codegraph.stats().get("files", 0)) == 0:
            raise EngramError("no code is indexed yet; run 'engram index' first")
        return hits

    @property
    def code_search(self) -> Any:
        """Hybrid search over AST code chunks (``engram.codegraph.CodeSearch``)."""
        if self._code_search is None:
            with self._init_lock:
                if self._code_search is None:
                    module = _optional_module("engram.codegraph", "code search")
                    search_cls = _require(module, "CodeSearch", "code search")
                    self._code_search = search_cls(self.workspace, self.codegraph, self.embedder)
        return self._code_search

    def context(
        self,
        *,
        file: str | None = None,
        symbol: str | None = None,
        query: str | None = None,
        phase: UniversalPhase | str | None = None,
        budget_tokens: int | None = None,
        record: bool = True,
    ) -> Any:
        """A token-budgeted pack of the memories that matter for a file or a question."""
        if not file and not (query and query.strip()):
            raise InvalidInput("context needs a file or a query")
        budget = (
            budget_tokens
            if budget_tokens is not None
            else (self.config.retrieval.default_budget_tokens)
        )
        if not isinstance(budget, int) or budget <= 0:
            raise InvalidInput(f"budget must be a positive number of tokens, got {budget}")
        rel = self._relative(file) if file else None
        parsed_phase = parse_phase(phase)
        module = _optional_module("engram.retrieval", "retrieval")
        request = _require(module, "ContextRequest", "retrieval")(
            file=rel,
            symbol=symbol or None,
            query=query.strip() if query else None,
            phase=parsed_phase,
            budget_tokens=budget,
        )
        pack = self.retriever.context(request)
        if record and not self.read_only:
            # index-tier items are only "ask about" pointers: the agent did not read them
            ids = [
                item.memory.id
                for item in getattr(pack, "items", [])
                if hasattr(item, "memory") and str(getattr(item, "tier", "")) != "index"
            ]
            if ids:
                self._record_access_quietly(ids)
        return pack

    # ------------------------------------------------------------------ corrections

    def _mutate(self, memory_id: str, change: Callable[[Memory], Memory]) -> Memory:
        self._check_writable()
        with self._write_lock:
            updated = change(self.get(memory_id))
            self.store.update([updated])
            self._mirror([updated])
        return updated

    def forget(self, memory_id: str) -> Memory:
        self._check_writable()
        with self._write_lock:
            memory = self.get(memory_id)
            self.store.delete([memory.id])
            self._mirror(deleted=[memory.id])
        return memory

    def confirm(self, memory_id: str) -> Memory:
        return self._mutate(memory_id, lambda m: apply_confirmation(m, now=self._clock()))

    def flag(self, memory_id: str, kind: CorrectionKind | str, note: str | None = None) -> Memory:
        correction = parse_correction(kind)
        clean_note = redact_secrets(note).text.strip() if note else None
        return self._mutate(
            memory_id, lambda m: apply_correction(m, correction, clean_note, now=self._clock())
        )

    def pin(self, memory_id: str, pinned: bool = True) -> Memory:
        return self._mutate(
            memory_id, lambda m: attrs.evolve(m, pinned=pinned, updated_at=self._clock())
        )

    def record_access(self, ids: Sequence[str]) -> None:
        """Memories were injected: bump access counts (and trust, V5 §18)."""
        if not ids:
            return
        self._check_writable()
        now = self._clock()
        with self._write_lock:
            found = self.store.get_many(list(dict.fromkeys(ids)))
            if found:
                accessed = [apply_access(m, now=now) for m in found]
                self.store.update(accessed)
                self._mirror(accessed)

    def credit_session(self, ids: Sequence[str], session_id: str) -> int:
        """The session these memories were handed to succeeded: they gain a little trust."""
        if not ids:
            return 0
        self._check_writable()
        with self._write_lock:
            found = self.store.get_many(list(dict.fromkeys(ids)))
            credited = [apply_session_success(m, session_id) for m in found]
            changed = [new for new, old in zip(credited, found, strict=True) if new is not old]
            if changed:
                self.store.update(changed)
                self._mirror(changed)
        return len(changed)

    def _record_access_quietly(self, ids: Sequence[str]) -> None:
        try:
            self.record_access(ids)
        except Exception as exc:  # bookkeeping must never fail a read
            log.info("could not record access: %s", exc)

    # ------------------------------------------------------------------ code graph, observer

    @property
    def history(self) -> Any | None:
        """Git co-change history (``engram.history``), or ``None`` when unavailable."""
        if self._history is None and not self._history_missing:
            with self._init_lock:
                try:
                    module = _optional_module("engram.history", "git history")
                    history_cls = _require(module, "GitHistory", "git history")
                    self._history = history_cls(self.workspace)
                except NotAvailable as exc:
                    log.info("%s", exc)
                    self._history_missing = True
        return self._history

    def impact(self, file: str, symbol: str | None = None) -> Any:
        """What a change to ``file`` (or one symbol in it) may break: graph + co-change."""
        rel = self._relative(file)
        module = _optional_module("engram.codegraph", "impact analysis")
        analyzer_cls = _require(module, "ImpactAnalyzer", "impact analysis")
        history = self.history
        cochange = history if hasattr(history, "cochange_partners") else None
        analyzer = analyzer_cls(self.codegraph, cochange=cochange, coaccess=self._coaccess_source())
        return analyzer.impact(rel, symbol or None)

    def _coaccess_source(self) -> CoAccessAdapter | None:
        """The observer's co-access graph as impact evidence, once sessions were observed.

        Before the first observed session the graph holds only the cold-start seed, which
        comes from co-commits: impact already counts those as co-change, so it is left out
        rather than counted twice. Nothing is created on disk just to find it empty.
        """
        if not self.config.observer.enabled:
            return None
        if self._observer is None and not (self.workspace.engram_dir / "observer").is_dir():
            return None
        try:
            observer = self.observer
            if int(observer.stats.session_count()) == 0:
                return None
            return CoAccessAdapter(observer)
        except Exception as exc:  # co-access is optional evidence, never a failure
            log.info("co-access unavailable for impact: %s", exc)
            return None

    def index(
        self,
        progress: Any | None = None,
        cancel: Callable[[], bool] | None = None,
        *,
        chunks: bool = True,
        history: bool = True,
        embed_chunks: bool = True,
    ) -> Any:
        """Bring the code graph (and, with ``chunks``, the code-search chunks) up to date.

        ``embed_chunks=False`` stores keyword-only chunks (the language server does this
        and leaves embedding to a child process, so the model's memory never lands in the
        editor's server).

        ``progress(done, total, path)`` is called per file. Returns the graph's
        ``IndexReport``; the chunk report of the same run is kept in
        :attr:`last_chunk_report`. With ``history``, git history is mined afterwards and
        the memories follow it (:meth:`sync_history`; report in
        :attr:`last_history_report`).
        """
        report = self.codegraph.index(progress=progress, cancel=cancel)
        if chunks and not getattr(report, "interrupted", False):
            self.index_chunks(progress=progress, cancel=cancel, embed=embed_chunks)
        if history and not getattr(report, "interrupted", False) and not self.read_only:
            self.last_history_report = self.sync_history(cancel=cancel)
        return report

    # ------------------------------------------------------------------ git history

    def sync_history(
        self, progress: Any | None = None, cancel: Callable[[], bool] | None = None
    ) -> HistorySyncReport:
        """Mine new commits, then bring the memories up to date with them.

        * **renames**: memories anchored to (or related to) a file renamed since the last
          run follow it (``GitHistory.renames_since``, applied with
          :func:`engram.history.apply_renames`);
        * **staleness** (V5 §7 layer 3): an anchor whose lines moved is re-pointed; one whose
          code is gone and that a commit changed since the memory was made is flagged
          ``needs_review`` and its confidence multiplied by
          :data:`CODE_CHANGED_CONFIDENCE_FACTOR`; memories of deleted files get
          ``stale_at`` (and lose it when the file is back, e.g. after a rename);
        * **co-access cold start**: the observer's co-access graph is seeded from co-commits
          until sessions have been observed.

        Each step is best-effort: history is evidence, so a failure is logged, never raised.
        """
        report = HistorySyncReport()
        history = self.history
        if history is None:
            report.skipped = "the history package is not available"
            return report
        if not getattr(history, "available", False):
            report.skipped = str(getattr(history, "reason", "") or "no git history")
            return report
        try:
            report.mined = history.mine(progress=progress, cancel=cancel)
        except Exception as exc:
            log.warning("mining git history failed: %s", _one_line(exc))
            report.skipped = f"mining failed: {_one_line(exc)}"
            return report
        if self.read_only:
            return report
        head = getattr(report.mined, "head", None) or history.head_commit()
        report.head = head
        state = _EngineState(self.workspace.engram_dir / ENGINE_STATE_FILE)
        steps: list[tuple[str, Callable[[], None]]] = [
            ("rename following", lambda: self._follow_renames(history, head, state, report)),
            ("staleness check", lambda: self._check_code_changes(history, head, report)),
            ("co-access seed", lambda: self._seed_coaccess(history, head, state, report)),
        ]
        for what, step in steps:
            try:
                step()
            except EngramError as exc:
                log.info("%s skipped: %s", what, exc)
            except Exception as exc:
                log.warning("%s failed: %s", what, _one_line(exc), exc_info=True)
        return report

    def _follow_renames(
        self, history: Any, head: str | None, state: _EngineState, report: HistorySyncReport
    ) -> None:
        """Apply renames made since the last run (all known ones the first time).

        When the old path exists again (a new file took the name), the rename is applied
        only to memories made before it, told by their commit (``provenance.commit_sha``);
        a memory without a commit stays where it is rather than move to the wrong file.
        """
        last = state.get("renames_applied_commit")
        renames = dict(history.renames_since(last if isinstance(last, str) else None))
        if renames:
            module = _optional_module("engram.history", "git history")
            apply_renames = module.apply_renames
            root = self.workspace.root
            clear = {old: new for old, new in renames.items() if not (root / old).exists()}
            ambiguous = {old: new for old, new in renames.items() if old not in clear}
            memories = self.store.list(self._filter(include_deprecated=True))
            changed = {m.id: m for m in apply_renames(memories, clear)}
            since_commit: dict[str, dict[str, str]] = {}
            for memory in memories if ambiguous else []:
                memory = changed.get(memory.id, memory)
                sha = memory.provenance.commit_sha
                if not sha or not _mentions(memory, ambiguous):
                    continue
                if sha not in since_commit:
                    since_commit[sha] = dict(history.renames_since(sha))
                own = {o: n for o, n in ambiguous.items() if since_commit[sha].get(o) == n}
                for renamed in apply_renames([memory], own):
                    changed[renamed.id] = renamed
            now = self._clock()
            stamped = [attrs.evolve(m, updated_at=now) for m in changed.values()]
            if stamped:
                with self._write_lock:
                    self.store.update(stamped)
                    self._mirror(stamped)
                log.info("%d memories followed renamed files", len(stamped))
            report.renamed = len(stamped)
        if head:
            state.set("renames_applied_commit", head)

    def _check_code_changes(
        self, history: Any, head: str | None, report: HistorySyncReport
    ) -> None:
        """Relocate moved anchors, flag memories whose code a commit changed, mark gone files."""
        root = self.workspace.root
        now = self._clock()
        memories = [
            m
            for m in self.store.list(self._filter(include_deprecated=False))
            if m.anchors or m.related_files
        ]
        finder = _AnchorFinder(root)
        checks = 0
        updated: list[Memory] = []
        for memory in memories:
            files = memory.files
            missing = [f for f in files if not (root / f).exists()]
            changes: dict[str, Any] = {}
            if missing and memory.stale_at is None:
                changes["stale_at"] = now
                report.stale_marked += 1
            elif (
                not missing
                and memory.stale_at is not None
                and memory.valid_until is None
                and CorrectionKind.OUTDATED.value not in memory.flags
            ):
                changes["stale_at"] = None  # the file is back (renamed, restored)
                report.unstaled += 1
            anchors = list(memory.anchors)
            code_changed = False
            for index, anchor in enumerate(anchors):
                if anchor.content_hash is None or anchor.start_line is None:
                    continue
                if finder.lines(anchor.file) is None:
                    continue  # gone or unreadable: the stale_at rule above covers it
                found = finder.find(anchor)
                if found == anchor.start_line:
                    continue
                if found is not None:
                    length = (anchor.end_line or anchor.start_line) - anchor.start_line
                    anchors[index] = attrs.evolve(anchor, start_line=found, end_line=found + length)
                    changes["anchors"] = anchors
                    continue
                if CODE_CHANGED_FLAG in memory.flags or checks >= MAX_STALENESS_CHECKS:
                    continue
                sha = memory.provenance.commit_sha
                checks += 1
                changed = history.changed_since(anchor.file, sha) if sha else None
                if changed is not False:  # False: an uncommitted edit in progress
                    code_changed = True
            if "anchors" in changes:
                report.relocated += 1
            if code_changed:
                changes["flags"] = [*memory.flags, CODE_CHANGED_FLAG]
                changes["needs_review"] = True
                if not memory.pinned:
                    changes["confidence"] = round(
                        memory.confidence * CODE_CHANGED_CONFIDENCE_FACTOR, 4
                    )
                changes["extra"] = {
                    **memory.extra,
                    CODE_CHANGED_FLAG: {"at": now.isoformat(), "commit": head},
                }
                report.code_changed += 1
            if changes:
                updated.append(attrs.evolve(memory, updated_at=now, **changes))
        if updated:
            with self._write_lock:
                # a memory forgotten meanwhile (another thread) must not come back
                fresh = {m.id: m for m in self.store.get_many([m.id for m in updated])}
                kept = [m for m in updated if m.id in fresh]
                self.store.update(kept)
                self._mirror(kept)

    def _seed_coaccess(
        self, history: Any, head: str | None, state: _EngineState, report: HistorySyncReport
    ) -> None:
        """Cold start of the co-access graph from co-commits (V3 §5).

        Seeds while no session has been observed yet, once per new HEAD: the seed is a
        prior the observer blends in at a discount, so refreshing it is harmless, and once
        real sessions exist they speak for themselves.
        """
        if not self.config.observer.enabled or not head:
            return
        seeded = state.get("coaccess_seeded_commit")
        if seeded == head:
            return
        observer = self.observer
        if seeded is not None and int(observer.stats.session_count()) > 0:
            return
        edges = history.coaccess_seed()
        report.coaccess_seeded = int(observer.seed_coaccess(edges)) if edges else 0
        state.set("coaccess_seeded_commit", head)

    def index_chunks(
        self,
        progress: Any | None = None,
        cancel: Callable[[], bool] | None = None,
        *,
        embed: bool = True,
    ) -> Any:
        """Chunk and embed changed files for code search (after :meth:`index`).

        ``embed=False`` stores keyword-only chunks quickly; the next run with embeddings
        re-embeds them (their model id differs).
        """
        if embed:
            searcher = self.code_search
        else:  # never touch self.code_search here: building it loads the embedding model
            module = _optional_module("engram.codegraph", "code search")
            searcher = module.CodeSearch(self.workspace, self.codegraph, None)
        try:
            self.last_chunk_report = searcher.index_chunks(progress=progress, cancel=cancel)
        finally:
            if searcher is not self._code_search:
                searcher.close()
        return self.last_chunk_report

    def observe(self, event: dict[str, Any]) -> Any:
        if not isinstance(event, dict):
            raise InvalidInput("an observer event must be a JSON object")
        return self.observer.observe(event)

    def session_summary(self, session_id: str | None = None) -> dict[str, Any]:
        """The observer's session card (V5 §13): what was applied, learned, needs review.

        ``None`` means the last finished session; a running session gets a live summary.
        Always a dict: ``found`` False (with ``text`` saying why) when there is none.
        """
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise InvalidInput("session id is empty")
        if not self.config.observer.enabled:
            return {
                "found": False,
                "session_id": session_id,
                "text": "the observer is off (observer.enabled = false)",
            }
        summary = self.observer.session_summary(session_id.strip() if session_id else None)
        if not summary:
            which = f"session {session_id}" if session_id else "a finished session"
            return {"found": False, "session_id": session_id, "text": f"no summary of {which} yet"}
        return {"found": True, **dict(summary)}

    # ------------------------------------------------------------------ lifecycle

    def prune(self, *, dry_run: bool = False) -> PruneReport:
        """Apply the lifecycle rules (stale files, decay, grace periods) to the store."""
        now = self._clock()
        root = self.workspace.root

        def exists(rel: str) -> bool:
            return (root / rel).exists()

        with self._write_lock:
            memories = self.store.list(self._filter(include_deprecated=True))
            report = plan_prune(memories, now, exists)
            if not dry_run:
                self._check_writable()
                if report.updated:
                    self.store.update(report.updated)
                if report.deleted:
                    self.store.delete(report.deleted)
                self._mirror(report.updated, report.deleted)
        return report

    def consolidate(
        self, *, dry_run: bool = False, progress: ProgressCallback | None = None
    ) -> ConsolidateReport:
        """Merge near-duplicates and link contradictions among the memories already stored.

        ``remember`` does both for each new memory; memories that arrived another way (a
        teammate's shared file, an older Engram) or whose neighbours changed since are
        checked here (004 §3). Each memory is compared with its keyword neighbours of the
        same type; a pair is judged once. Merges keep the older memory (its id is what
        citations and relations point at); contradictions are linked both ways (once: a
        linked pair is not linked again) and the newer one goes to review.
        """
        report = ConsolidateReport(dry_run=dry_run)
        if not dry_run:
            self._check_writable()
        with self._write_lock:
            memories = sorted(self.store.list(self._filter()), key=lambda m: m.created_at)
            report.scanned = len(memories)
            alive: dict[str, Memory] = {m.id: m for m in memories}
            removed: set[str] = set()
            changed: dict[str, Memory] = {}
            for index, memory in enumerate(memories):
                if progress is not None and index % 50 == 0:
                    progress("consolidating", index, len(memories))
                if memory.id in removed:
                    continue
                current = changed.get(memory.id, memory)
                neighbours = self._keyword_neighbours(current, alive, removed, changed)
                pairs: builtins.list[tuple[Memory, float | None]] = [(m, None) for m in neighbours]
                # each pair is judged from its newer side: that one merges or goes to review
                older = [(m, c) for m, c in pairs if m.created_at <= current.created_at]
                linked = {r.target_memory_id for r in current.relations}
                conflicts = [
                    c for c in find_contradictions(current, older) if c.memory.id not in linked
                ]
                disputed = {c.memory.id for c in conflicts} | linked
                match = find_duplicate(
                    current,
                    [(m, c) for m, c in older if m.id not in disputed],
                    ratio_threshold=self.config.safety.duplicate_ratio,
                    cosine_threshold=self.config.safety.duplicate_cosine,
                )
                if match is not None:
                    kept = merge_memories(match.memory, current, now=self._clock())
                    changed[kept.id] = kept
                    removed.add(current.id)
                    changed.pop(current.id, None)
                    report.merged.append(f"{kept.id} <- {current.id} ({match.reason})")
                    continue
                if conflicts:
                    updated, notes = self._link_contradictions(current, conflicts, changed)
                    changed[current.id] = updated
                    report.conflicts.extend(f"{current.id} vs {note}" for note in notes)
            if progress is not None:
                progress("consolidating", len(memories), len(memories))
            if not dry_run and (changed or removed):
                updates = [m for mid, m in changed.items() if mid not in removed]
                if updates:
                    self.store.update(updates)
                if removed:
                    self.store.delete(sorted(removed))
                self._mirror(updates, sorted(removed))
        return report

    def _keyword_neighbours(
        self,
        memory: Memory,
        alive: Mapping[str, Memory],
        removed: set[str],
        changed: Mapping[str, Memory],
    ) -> builtins.list[Memory]:
        """Memories of the same type that share words with ``memory`` (current versions)."""
        return [
            changed.get(mid, alive[mid])
            for mid in self._keyword_ids(memory.content, memory.type)
            if mid != memory.id and mid not in removed and mid in alive
        ]

    # ------------------------------------------------------------------ team sharing

    def _team_folder(self) -> tuple[Path, str]:
        """The team folder (absolute) and as configured (workspace-relative, POSIX)."""
        rel = self.config.team.folder
        try:
            folder = self.workspace.resolve(rel)
        except WorkspaceError as exc:
            raise InvalidInput(f"team.dir must be inside the workspace: {exc}") from exc
        return folder, self.workspace.relative(folder)

    def share(self, ids: Sequence[str] = (), *, commit: bool = False) -> ShareReport:
        """Write verified memories (or the given ids) to the team folder for git to carry.

        Files whose memory did not change are left alone, so re-sharing makes no diff.
        ``commit``: also ``git add`` + ``git commit`` the written files (never push).
        """
        from engram.lifecycle.team import render_team_file, share_refusal, team_path

        folder, label = self._team_folder()
        report = ShareReport(folder=label)
        if ids:
            chosen = [self.get(mid) for mid in dict.fromkeys(ids)]
        else:
            chosen = self.store.list(self._filter())
        who = self._git_user()
        now = self._clock()
        ready: list[tuple[Memory, Path]] = []
        for memory in chosen:
            reason = share_refusal(memory, explicit=bool(ids))
            if reason is not None:
                if ids:  # the whole store's refusals are the normal case, not news
                    report.refused.append(f"{memory.id}: {reason}")
                continue
            ready.append((memory, team_path(folder, memory.id)))
        if ready:
            folder.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        for memory, path in ready:
            text = render_team_file(memory, shared_by=who, shared_at=now)
            if _same_shared_memory(path, text):
                report.unchanged.append(memory.id)
                continue
            path.write_text(text, encoding="utf-8")
            written.append(path)
            report.written.append(self.workspace.relative(path))
        if commit and written:
            report.committed = self._commit_team_files(written, len(written))
        if written:
            self.sync_team()  # our own copies now know they are shared
        return report

    def sync_team(self) -> TeamSyncReport:
        """Read the team folder into the local store: add, update, retire (see lifecycle.team)."""
        from engram.lifecycle.team import plan_sync, read_team_folder

        folder, label = self._team_folder()
        report = TeamSyncReport(folder=label)
        state = _EngineState(self.workspace.engram_dir / ENGINE_STATE_FILE)
        known: dict[str, str] = dict(state.get("team_files") or {})
        if not folder.is_dir() and not known:
            return report
        self._check_writable()
        read = read_team_folder(folder, label=label)
        report.skipped = list(read.skipped)
        now = self._clock()
        with self._write_lock:
            local = self.store.get_many(list({*known, *(e.memory.id for e in read.entries)}))
            present = {m.id for m in local}
            fresh = [
                e
                for e in read.entries
                if known.get(e.memory.id) != e.digest or e.memory.id not in present
            ]
            report.unchanged = len(read.entries) - len(fresh)
            plan = plan_sync(fresh, local, now=now)
            shared_ids = {e.memory.id for e in read.entries}
            plan.retire = [m for m in plan.retire if m.id not in shared_ids]
            report.unchanged += plan.unchanged
            prepared = [self._prepare(m)[0] for m in plan.add]
            reembed = [self._prepare(m)[0] for m in plan.update if m.id in plan.reembed]
            keep = [m for m in plan.update if m.id not in plan.reembed]
            vectors = self._embed_memories([*prepared, *reembed], None)
            model_id = self._embedder.model_id if self._embedder is not None else None
            if prepared:
                self.store.add(
                    prepared, None if vectors is None else vectors[: len(prepared)], model_id
                )
            if reembed:
                self.store.update(
                    reembed, None if vectors is None else vectors[len(prepared) :], model_id
                )
            if keep or plan.retire:
                self.store.update([*keep, *plan.retire])
            self._mirror([*prepared, *reembed, *keep, *plan.retire])
            report.conflicts = self._flag_local_conflicts([*prepared, *reembed], shared_ids)
        report.added, report.updated, report.retired = (
            len(prepared),
            len(plan.update),
            len(plan.retire),
        )
        report.changed = [m.id for m in [*prepared, *plan.update, *plan.retire]]
        state.set("team_files", {e.memory.id: e.digest for e in read.entries})
        if report.added or report.updated or report.retired:
            log.info("team sync from %s: %s", label, report.to_dict())
        return report

    def _flag_local_conflicts(
        self, team: Sequence[Memory], all_team_ids: set[str]
    ) -> builtins.list[str]:
        """Local memories a teammate's new or edited memory contradicts go to review.

        V5 §15: a team memory and a personal one that disagree are both kept and shown with
        attribution, never silently resolved. The team's side was reviewed in the
        repository, so the local side is the one that asks to be checked.

        Each pair is found by a keyword search from one side: from the team memories when
        they are fewer (a pull with a few new files), else from the local memories (the
        first sync of a clone: hundreds of team files, a handful of local notes).
        """
        if not team:
            return []
        batch = {m.id: m for m in team}
        local_count = self.store.count() - len(all_team_ids)
        pairs: builtins.list[tuple[Memory, Contradiction]] = []
        if local_count < len(batch):
            locals_ = [m for m in self.store.list(self._filter()) if m.id not in all_team_ids]
            for mine in locals_:
                hits = self._keyword_ids(mine.content, mine.type)
                shared = [(batch[mid], None) for mid in hits if mid in batch]
                pairs.extend((mine, found) for found in find_contradictions(mine, shared))
        else:
            for shared_memory in team:
                hits = self._keyword_ids(shared_memory.content, shared_memory.type)
                candidates = [
                    (m, None)
                    for m in self.store.get_many([h for h in hits if h != shared_memory.id])
                    if team_origin(m) is None and m.id not in all_team_ids
                ]
                for found in find_contradictions(shared_memory, candidates):
                    # read again from the local memory's side, so the reason says what
                    # "yours" claims first, as in the other branch
                    again = find_contradictions(found.memory, [(shared_memory, None)])
                    fallback = Contradiction(shared_memory, found.kind, found.reason, found.overlap)
                    pairs.append((found.memory, again[0] if again else fallback))
        notes: builtins.list[str] = []
        pending: dict[str, Memory] = {}
        for mine, found in pairs:
            current = pending.get(mine.id, mine)
            if found.memory.id in {r.target_memory_id for r in current.relations}:
                continue  # already linked (an earlier sync)
            linked, _ = self._link_contradictions(current, [found], pending)
            pending[linked.id] = linked
            notes.append(f"{linked.id} vs {found.memory.id}: {found.kind}, {found.reason}")
        if pending:
            self.store.update(list(pending.values()))
            self._mirror(list(pending.values()))
        return notes

    def _keyword_ids(self, text: str, mtype: MemoryType) -> builtins.list[str]:
        """Ids of the keyword neighbours of ``text`` among memories of ``mtype``."""
        try:
            found = self.store.keyword_search(
                text, DUPLICATE_CANDIDATES, self._filter(types=[mtype])
            )
        except Exception as exc:  # an FTS hiccup must not fail the caller
            log.debug("keyword neighbours failed: %s", exc)
            return []
        return [mid for mid, _ in found]

    def _git_user(self) -> str | None:
        """Who shares (``git config user.name``), or None outside git / without a name."""
        user_name = getattr(self.history, "user_name", None)
        try:
            name = user_name() if callable(user_name) else None
        except Exception as exc:  # attribution is optional: never fail a share for it
            log.debug("no git user name: %s", exc)
            return None
        return name if isinstance(name, str) and name else None

    def _commit_team_files(self, paths: Sequence[Path], count: int) -> str:
        commit_paths = getattr(self.history, "commit_paths", None)
        if not callable(commit_paths):
            raise EngramError("git history is not available: commit the shared files yourself")
        message = f"engram: share {count} memor{'y' if count == 1 else 'ies'}"
        try:
            return str(commit_paths([self.workspace.relative(p) for p in paths], message))
        except Exception as exc:  # GitCommandFailed: git's own reason, files kept
            raise EngramError(f"{exc}; the files are written, commit them yourself") from exc

    def export(self, fmt: str = "json") -> str:
        memories = self.store.list(self._filter(include_deprecated=True))
        return export_memories(memories, fmt, now=self._clock())

    def import_(self, path: Path | str, progress: ProgressCallback | None = None) -> ImportReport:
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
                accepted.append(self._reanchor_import(memory))
            except (InvalidInput, WorkspaceError) as exc:
                report.skipped.append(f"{memory.id}: {exc}")
        results: list[RememberResult] = []
        existing_ids = {m.id for m in self.store.get_many([m.id for m in accepted])}
        fresh = [m for m in accepted if m.id not in existing_ids]
        known = [m for m in accepted if m.id in existing_ids]
        if parsed.kind == "rules":
            # a rule imported before keeps its state (the user may have flagged or pinned it)
            report.unchanged = len(known)
            report.ids += [m.id for m in known]
            known = []
        if known:  # re-importing our own export: update in place, never duplicate
            prepared = [self._prepare(m) for m in known]
            with self._write_lock:
                self.store.update([m for m, _ in prepared])
                self._mirror([m for m, _ in prepared])
            report.merged += len(known)
            report.ids += [m.id for m, _ in prepared]
            report.redacted += sum(1 for _, kinds in prepared if kinds)
        if fresh:
            try:
                results = self.remember_many(fresh, progress)
            except InvalidInput:
                results = []
                for memory in fresh:  # fall back one by one so one bad record is skipped
                    try:
                        results += self.remember_many([memory])
                    except InvalidInput as exc:
                        report.skipped.append(f"{memory.id}: {exc}")
        for result in results:
            report.ids.append(result.memory.id)
            report.merged += int(result.merged)
            report.added += int(not result.merged)
            report.redacted += int(bool(result.redactions))
        return report

    def seed_workspace(self, report: Any | None = None) -> dict[str, int]:
        """Cold start (seed 001 §6): store what a fresh workspace already tells us.

        Project facts found by the code graph's manifest scan (language, frameworks, test
        runner) and the rules in CLAUDE.md / AGENTS.md / .cursorrules become memories, each
        with a stable id so re-indexing never duplicates them or undoes a user's correction.
        """
        if self.read_only:
            return {"facts": 0, "rules": 0}
        facts = list(getattr(report, "project_facts", None) or [])
        seeded: list[Memory] = []
        for fact in facts:
            try:
                mtype = parse_type(fact.memory_type)
            except InvalidInput:
                continue
            seeded.append(
                Memory(
                    id=stable_memory_id(f"fact:{fact.key}:{fact.content}"),
                    content=fact.content,
                    type=mtype,
                    source=MemorySource.OBSERVER_INFERRED,
                    scope=MemoryScope.GLOBAL,
                    confidence=float(fact.confidence),
                    related_files=[fact.evidence] if fact.evidence else [],
                    tags=["project"],
                    extra={"fact_key": fact.key},
                )
            )
        existing = {m.id for m in self.store.get_many([m.id for m in seeded])}
        new_facts = [m for m in seeded if m.id not in existing]
        if new_facts:
            self.remember_many(new_facts)
        rules = 0
        for rel in RULE_FILES:
            path = self.workspace.root / rel
            if path.is_file():
                try:
                    rules += self.import_(path).added
                except EngramError as exc:
                    log.info("skipped %s: %s", rel, exc)
        return {"facts": len(new_facts), "rules": rules}

    def _reanchor_import(self, memory: Memory) -> Memory:
        """Imported paths must still be inside this workspace (an export may come from
        another machine); paths that escape are refused rather than stored."""
        for anchor in memory.anchors:
            self._relative(anchor.file)
        for rel in memory.related_files:
            self._relative(rel)
        return memory

    # ------------------------------------------------------------------ status

    def stats(self) -> dict[str, Any]:
        memories = self.store.list(self._filter(include_deprecated=True))
        by_type: dict[str, int] = {}
        by_source: dict[str, int] = {}
        by_scope: dict[str, int] = {}
        for memory in memories:
            by_type[memory.type.value] = by_type.get(memory.type.value, 0) + 1
            by_source[memory.source.value] = by_source.get(memory.source.value, 0) + 1
            by_scope[memory.scope.value] = by_scope.get(memory.scope.value, 0) + 1
        active = [m for m in memories if not m.deprecated]
        return {
            "workspace": str(self.workspace.root),
            "total": len(memories),
            "active": len(active),
            "needs_review": sum(1 for m in active if m.needs_review),
            "stale": sum(1 for m in active if m.is_stale),
            "deprecated": len(memories) - len(active),
            "pinned": sum(1 for m in active if m.pinned),
            "user_verified": sum(1 for m in active if m.user_verified),
            "anchored": sum(1 for m in active if m.anchors),
            "by_type": dict(sorted(by_type.items())),
            "by_source": dict(sorted(by_source.items())),
            "by_scope": dict(sorted(by_scope.items())),
            "store_bytes": _dir_size(self.workspace.engram_dir),
            "embedding_model": self.embedder_status,
        }

    def doctor(self) -> builtins.list[DoctorCheck]:
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
            DoctorCheck("workspace", True, str(self.workspace.root)),
        ]
        engram_dir = self.workspace.engram_dir
        writable = os.access(engram_dir if engram_dir.exists() else self.workspace.root, os.W_OK)
        checks.append(
            DoctorCheck(
                "writable",
                writable,
                f"{engram_dir} is writable" if writable else f"{engram_dir} is not writable",
                "info" if writable else "error",
            )
        )
        try:
            count = int(self.store.count())
            checks.append(DoctorCheck("store", True, f"{count} memories in {engram_dir}"))
        except Exception as exc:
            checks.append(DoctorCheck("store", False, _one_line(exc), "error"))
        embedder = self.embedder
        checks.append(
            DoctorCheck(
                "embedding model",
                embedder is not None,
                self.embedder_status
                if embedder is not None
                else f"{self.embedder_status}; search uses keywords and the code graph only",
                "info" if embedder is not None else "warning",
            )
        )
        checks.append(_grammar_check())
        try:
            graph = self.codegraph
            describe = getattr(graph, "describe", None) or getattr(graph, "stats", None)
            detail = str(describe()) if callable(describe) else "available"
            checks.append(DoctorCheck("code graph", True, detail))
        except EngramError as exc:
            checks.append(DoctorCheck("code graph", False, str(exc), "warning"))
        except Exception as exc:
            checks.append(DoctorCheck("code graph", False, _one_line(exc), "warning"))
        git = shutil.which("git")
        checks.append(
            DoctorCheck(
                "git",
                git is not None,
                git or "git not found on PATH (history features are off)",
                "info" if git else "warning",
            )
        )
        checks.append(
            DoctorCheck(
                "git repository",
                (self.workspace.root / ".git").exists(),
                "yes" if (self.workspace.root / ".git").exists() else "not a git repository",
                "info",
            )
        )
        checks.append(self._team_check())
        return checks

    def _team_check(self) -> DoctorCheck:
        """The team folder: how many shared memories, and any file sync had to skip."""
        from engram.lifecycle.team import read_team_folder

        try:
            folder, label = self._team_folder()
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

    def close(self) -> None:
        with self._write_lock:
            for component in (
                self._store,
                self._code_search,
                self._codegraph,
                self._history,
                self._digest,
                self._observer,
            ):
                closer = getattr(component, "close", None)
                if callable(closer):
                    try:
                        closer()
                    except Exception as exc:
                        log.debug("close failed: %s", exc)
            self._store = None
            self._codegraph = None
            self._history = None
            self._digest = None
            self._observer = None
            self._code_search = None
            self._retriever = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- small helpers


class CoAccessAdapter:
    """The observer's co-access graph as ``engram.codegraph.CoAccessSource``.

    Impact analysis must never fail because the observer's statistics could not be read
    (a locked or damaged SQLite file): errors become "no co-access evidence".
    """

    def __init__(self, observer: Any) -> None:
        self.observer = observer

    def coaccess_partners(self, file: str, k: int = 10) -> builtins.list[tuple[str, float]]:
        try:
            return [(str(f), float(w)) for f, w in self.observer.coaccess_partners(file, k)]
        except Exception as exc:
            log.debug("co-access of %s unavailable: %s", file, exc)
            return []


class _EngineState:
    """A small JSON file of engine bookkeeping in ``.engram/`` (written atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, Any]:
        import json

        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Any:
        return self._load().get(key)

    def set(self, key: str, value: Any) -> None:
        import json

        data = self._load()
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


def _mentions(memory: Memory, paths: Mapping[str, str]) -> bool:
    """Whether any anchor, related file or relation target of ``memory`` is in ``paths``."""
    return (
        any(a.file in paths for a in memory.anchors)
        or any(f in paths for f in memory.related_files)
        or any(r.target_file in paths for r in memory.relations if r.target_file)
    )


class _AnchorFinder:
    """Where anchored lines (same content hash) are now, for a sweep over many memories.

    Each file is read once and each (file, anchor length) hashed once into a
    hash -> start lines index, so checking every anchored memory on ``index`` stays
    linear in the size of the files rather than anchors x lines.
    """

    #: Files longer than this are not searched for moved lines (generated, data).
    MAX_LINES = 100_000

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lines: dict[str, list[str] | None] = {}
        self._windows: dict[tuple[str, int], dict[str, list[int]]] = {}

    def lines(self, rel: str) -> list[str] | None:
        if rel not in self._lines:
            try:
                text = (self.root / rel).read_text(encoding="utf-8", errors="replace")
                self._lines[rel] = text.splitlines()
            except OSError:
                self._lines[rel] = None
        return self._lines[rel]

    def find(self, anchor: CodeAnchor) -> int | None:
        """The anchor's start line now: its stored place if unchanged, else the nearest
        place holding the same lines, else ``None`` (the code under it changed)."""
        lines = self.lines(anchor.file)
        start = anchor.start_line
        if lines is None or start is None or anchor.content_hash is None:
            return None
        end = anchor.end_line if anchor.end_line is not None else start
        length = max(0, end - start) + 1
        if start + length <= len(lines) and (
            content_hash("\n".join(lines[start : start + length])) == anchor.content_hash
        ):
            return start
        if len(lines) > self.MAX_LINES:
            return None
        key = (anchor.file, length)
        index = self._windows.get(key)
        if index is None:
            index = {}
            for first in range(len(lines) - length + 1):
                digest = content_hash("\n".join(lines[first : first + length]))
                index.setdefault(digest, []).append(first)
            self._windows[key] = index
        starts = index.get(anchor.content_hash)
        return min(starts, key=lambda s: (abs(s - start), s)) if starts else None


def _default_confidence(source: MemorySource) -> float:
    """Initial confidence by who said it: people and explicit agent notes start higher."""
    return {
        MemorySource.USER_TAUGHT: 0.8,
        MemorySource.AGENT_EXPLICIT: 0.7,
        MemorySource.COMMIT_AUTO: 0.7,
        MemorySource.QA_AUTO: 0.6,
        MemorySource.MCP_AUTO: 0.6,
        MemorySource.OBSERVER_INFERRED: 0.5,
    }[source]


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value]
    return list(value)


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


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip(": ")


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


__all__ = [
    "CODE_CHANGED_CONFIDENCE_FACTOR",
    "CODE_CHANGED_FLAG",
    "CoAccessAdapter",
    "DoctorCheck",
    "Engine",
    "HistorySyncReport",
    "ImportReport",
    "RememberResult",
    "parse_correction",
    "parse_phase",
    "parse_scope",
    "parse_source",
    "parse_type",
    "validate_text",
]
