"""The composition root: one :class:`Engine` per workspace, held by the CLI, LSP and MCP server.

Why one object: every front end must share one store, one embedder and one code graph per
process, and every use case must apply the same rules. The engine only *wires*: it builds
each component lazily on first use (so ``engram --help`` and LSP ``initialize`` never pay
for LanceDB, the ONNX model or tree-sitter; the imports below are for type checking only)
and offers the few helpers every use case shares (the writer lock, the clock, path
confinement, the store filter, the agents' digest mirror). The use cases themselves live
in one module per group next to this one (``engram.app.remember``, ``recall``,
``memories``, …; docs/architecture.md has the map) and take the engine as their first
argument.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engram.app.usage import PendingUses, write_uses
from engram.config import KEYWORD_ONLY_REASON, EngramConfig, load_settings
from engram.errors import EngramError, InvalidInput
from engram.model import Memory, MemorySource, MemoryType, utcnow
from engram.workspace import Workspace, WorkspaceError
from engram.workspace_trust import SettingsTrust

if TYPE_CHECKING:
    from engram.codegraph import CodeGraph, CodeSearch
    from engram.embed import Embedder
    from engram.history import GitHistory
    from engram.lifecycle.contradictions import ContradictionJudges
    from engram.observer import Observer
    from engram.retrieval import Retriever
    from engram.store import AuditLog, MemoryFilter, MemoryStore, PendingChecks, StoreLocation
    from engram.store.digest import Digest

log = logging.getLogger(__name__)


class FilterFactory(Protocol):
    """Builds the store filter; tests inject a plain one next to an in-memory store."""

    def __call__(
        self,
        *,
        types: Sequence[MemoryType] | None,
        sources: Sequence[MemorySource] | None,
        file: str | None,
        needs_review: bool | None,
        include_deprecated: bool,
    ) -> MemoryFilter: ...


#: Work handed to :attr:`Engine.defer`: called later with the engine current then.
Deferred = Callable[["Engine"], object]

#: Told after every store write: (memories written, ids deleted). The engine process
#: (``engram.daemon``) uses it to tell every connected front end at once.
WriteListener = Callable[[Sequence[Memory], Sequence[str]], None]


class Closes(Protocol):
    """A component the engine closes with itself (each one it opens lazily)."""

    def close(self) -> None: ...


class Engine:
    """The components of Engram for one workspace. Thread-safe; cheap to construct."""

    workspace: Workspace
    config: EngramConfig

    def __init__(
        self,
        workspace: Workspace,
        config: EngramConfig,
        *,
        read_only: bool = False,
        store: MemoryStore | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = utcnow,
        filter_factory: FilterFactory | None = None,
        settings_trust: SettingsTrust | None = None,
    ) -> None:
        self.workspace = workspace
        self.config = config
        #: what the workspace's own settings asked for, and whether it was approved
        self.settings_trust = settings_trust or SettingsTrust("none")
        self.read_only = read_only
        self.clock = clock
        self._filter_factory = filter_factory
        #: held by every store write (the LSP calls use cases from several threads)
        self.write_lock = threading.RLock()
        self._init_lock = threading.RLock()
        self._reconfigure_lock = threading.Lock()
        self._store: MemoryStore | None = store
        self._embedder: Embedder | None = embedder
        self._embedder_reason: str | None = None if embedder is None else "injected"
        self._embedder_loaded = embedder is not None or config.embed.model == "none"
        if config.embed.model == "none" and embedder is None:
            self._embedder_reason = KEYWORD_ONLY_REASON
        self._judges: ContradictionJudges | None = None
        #: its own lock: the judges are built inside remember (under the write lock), and
        #: _init_lock may be held by a thread that waits for the write lock
        self._judges_lock = threading.Lock()
        self._retriever: Retriever | None = None
        self._audit: AuditLog | None = None
        self._pending: PendingChecks | None = None
        #: who "a person" is here (``app.trust.person_name``), looked up once
        self.person_name: str | None = None
        self._codegraph: CodeGraph | None = None
        self._observer: Observer | None = None
        self._history: GitHistory | None = None
        self._digest: Digest | None = None
        self._code_search: CodeSearch | None = None
        self._author: str | None = None
        self.write_listeners: list[WriteListener] = []
        #: the uses reads count (``app.recall``), written later in one store write; weak:
        #: a timer still waiting must not keep alive an engine nobody closed
        this = weakref.ref(self)

        def count(uses: Mapping[str, int]) -> None:
            if (engine := this()) is not None:
                engine.count_uses(uses)

        self.uses = PendingUses(count)
        #: where a use case hands work its reply need not wait for (the contradiction
        #: judges after a ``remember``, ``app.remember.judge_remembered``). ``None``: the
        #: work runs inside the request (a CLI process would exit before it ran). The engine
        #: process (``engram.daemon``) runs it on its own thread right after the reply
        #: (docs/engine.md, "Writes").
        self.defer: Callable[[Deferred], None] | None = None
        #: where the store hands its index upkeep (compaction) when a write makes it due;
        #: see :meth:`upkeep_after_requests`
        self._upkeep: Callable[[Callable[[], None]], None] | None = None
        #: set when the process that holds this engine is going away (the engine process
        #: told to stop, SIGTERM): a long run (``app.indexing.run_index``) ends at its next
        #: checkpoint, resumable, so the process exits in seconds, not after the run
        #: (docs/engine.md "Faults")
        self.stopping = threading.Event()

    @classmethod
    def open(
        cls,
        workspace: Workspace | str | Path | None = None,
        overrides: dict[str, object] | None = None,
        *,
        read_only: bool = False,
    ) -> Engine:
        """The engine for ``workspace`` (default: the git root enclosing the cwd)."""
        ws = workspace if isinstance(workspace, Workspace) else Workspace.open(workspace)
        if ws.engram_dir.exists() and not ws.engram_dir.is_dir():
            raise WorkspaceError(
                f"{ws.engram_dir} is a file, not Engram's data directory; move it aside"
            )
        loaded = load_settings(ws, overrides)
        return cls(ws, loaded.config, read_only=read_only, settings_trust=loaded.trust)

    # ------------------------------------------------------------------ components

    @property
    def store(self) -> MemoryStore:
        """The memory store (LanceDB), opened on first use."""
        if self._store is None:
            with self._init_lock:
                if self._store is None:
                    from engram.store import MemoryStore

                    if not self.read_only:
                        self.workspace.ensure_engram_dir()
                    try:
                        store = MemoryStore(
                            self.workspace, read_only=self.read_only, location=self.store_location
                        )
                        if store.remote:
                            self._follow_shared_store(store)
                        store.upkeep_later(self._upkeep)
                        self._store = store
                    except EngramError:
                        raise
                    except PermissionError as exc:
                        raise EngramError(
                            f"cannot open the store in {self.workspace.engram_dir}: "
                            "permission denied"
                        ) from exc
        return self._store

    def upkeep_after_requests(self, schedule: Callable[[Callable[[], None]], None]) -> None:
        """Run the memory store's index upkeep through ``schedule`` instead of inside the
        write that made it due (``MemoryStore.upkeep_later``). The engine process hands
        it to a thread of its own, so the ``remember`` whose write comes due does not wait
        for the compaction (docs/engine.md, "Writes")."""
        self._upkeep = schedule
        if self._store is not None:
            self._store.upkeep_later(schedule)

    @property
    def store_location(self) -> StoreLocation:
        """Where the tables live: ``.engram/`` or ``store.uri`` (docs/team.md)."""
        from engram.store import StoreLocation

        cfg = self.config.store
        return StoreLocation.of(
            cfg.uri,
            self.workspace.engram_dir,
            endpoint=cfg.endpoint,
            region=cfg.region,
            allow_http=cfg.allow_http,
            refresh_seconds=cfg.refresh_seconds,
            commit_retries=cfg.commit_retries,
            lock_timeout_seconds=cfg.lock_timeout_seconds,
        )

    def _follow_shared_store(self, store: MemoryStore) -> None:
        """Keep this machine's agent digest in step with a shared store.

        Other machines' writes never pass through :meth:`mirror`: the store tells us what
        it caught up on, and at open the digest catches up on what changed since the
        version it last mirrored (rebuilt when that is unknown).
        """

        def changed(upserts: list[Memory], deleted: list[str], full: bool) -> None:
            if full:
                self.digest.rebuild(store.list(self.filter(include_deprecated=True)))
            else:
                self.digest.apply(upserts, deleted)
            self.digest.mark_version(store.seen_version)

        store.watch(changed)
        try:
            since = self.digest.mirrored_version()
            ids = None if since is None else store.changed_ids(since)
            if ids is None:
                self.digest.rebuild(store.list(self.filter(include_deprecated=True)))
            elif ids:
                present = store.get_many(sorted(ids))
                gone = sorted(ids - {m.id for m in present})
                self.digest.apply(present, gone)
            self.digest.mark_version(store.seen_version)
        except Exception as exc:  # the digest is a cache: hooks rebuild it
            log.info("could not bring the agent digest up to date: %s", exc)

    def author(self) -> str | None:
        """Who writes from this machine: git ``user.name``, else the login name."""
        if self._author is None:
            import getpass

            name = ""
            try:
                name = self.history.user_name() or ""
            except Exception as exc:  # attribution is optional: never fail a write for it
                log.debug("no git user name: %s", exc)
            if not name:
                try:
                    name = getpass.getuser()
                except (OSError, KeyError):
                    name = ""
            self._author = name
        return self._author or None

    @property
    def embedder(self) -> Embedder | None:
        """The embedding model, or ``None`` (then :attr:`embedder_status` says why)."""
        if not self._embedder_loaded:
            with self._init_lock:
                if not self._embedder_loaded:
                    from engram.embed import load_embedder

                    status = load_embedder(self.config.embed, self.workspace)
                    self._embedder = status.embedder
                    self._embedder_reason = str(status.reason)
                    self._embedder_loaded = True
        return self._embedder

    @property
    def contradiction_judges(self) -> ContradictionJudges:
        """The NLI model (when ``engram[nli]`` is installed and ``[contradictions] nli`` is
        on) and the LLM endpoint (when configured) behind the contradiction rules; the
        model's session is built on the first pair that needs it (docs/lifecycle.md)."""
        if self._judges is None:
            with self._judges_lock:
                if self._judges is None:
                    from engram.lifecycle.contradictions import ContradictionJudges
                    from engram.lifecycle.nli import load_nli
                    from engram.llm import LlmClient

                    nli = load_nli().judge if self.config.contradictions.nli else None
                    llm = LlmClient.from_config(self.config.llm)
                    self._judges = ContradictionJudges(nli=nli, llm=llm)
        return self._judges

    @property
    def embedder_status(self) -> str:
        _ = self.embedder
        if self._embedder is not None:
            return f"{self._embedder.model_id} ({self._embedder_reason or 'loaded'})"
        return self._embedder_reason or "no embedding model"

    def release_batch_model(self) -> bool:
        """Let the embedding model's batch session leave memory after a run of batches (an
        index); the next batch loads it again. Never loads the model. Whether it left."""
        from engram.embed.embedders import release_batch_session

        embedder = self._embedder
        return embedder is not None and release_batch_session(embedder)

    @property
    def loaded_model_id(self) -> str | None:
        """The model id of the embedder if it is loaded already (never loads it)."""
        return self._embedder.model_id if self._embedder is not None else None

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            with self._init_lock:
                if self._retriever is None:
                    from engram.lifecycle.trust import is_shown
                    from engram.retrieval import Retriever

                    self._retriever = Retriever(
                        self.store,
                        self.embedder,
                        self.config.retrieval,
                        graph=self.graph_or_none(),
                        shown=is_shown,
                        file_exists=self._file_exists,
                    )
        return self._retriever

    def reconfigure(
        self, config: EngramConfig, trust: SettingsTrust | None = None
    ) -> frozenset[str]:
        """Take new settings for the sections read per request, keeping the open store.

        Returns the sections that changed. A change of a section baked in at open
        (``config.SECTION_RELOAD``: embed, store) raises ``SectionReloadError``: that
        needs a new engine. The config is a snapshot never mutated after load and is
        swapped by one attribute assignment, so a thread that already read
        ``self.config`` (or holds the old retriever or judges) finishes with the old
        settings while the next request sees the new ones. The components built from a
        changed section are dropped and rebuilt lazily from the new snapshot (retriever,
        judges), or told the new section if open: the code graph takes ``index`` once
        the index run in progress ends (this call waits for it), the observer takes
        ``observer`` and ``llm`` keeping its running sessions, the git history takes
        ``history`` (its limits apply from the next mining run). ``mcp`` is not the
        engine's: a front end's MCP hub is rebuilt by that front end. ``trust`` is what
        the workspace's settings asked for and whether it was approved, when it was
        assessed again with ``config``.
        """
        from engram.config import Reload, SectionReloadError, changed_sections, sections_of

        with self._reconfigure_lock:  # two changes apply in the order they came
            changed = changed_sections(self.config, config)
            baked = changed & sections_of(Reload.ENGINE)
            if baked:
                raise SectionReloadError(sorted(baked))
            with self._init_lock:
                self.config = config
                if trust is not None:
                    self.settings_trust = trust
                if "retrieval" in changed:
                    self._retriever = None
                graph, observer, history = self._codegraph, self._observer, self._history
            if changed & {"contradictions", "llm"}:
                with self._judges_lock:
                    self._judges = None
            if observer is not None and changed & {"observer", "llm"}:
                observer.reconfigure(config.observer, config.llm)
            if graph is not None and "index" in changed:
                graph.reconfigure(config.index)
            if history is not None and "history" in changed:
                history.reconfigure(config.history)
        return changed

    def _file_exists(self, rel: str) -> bool:
        """Whether a workspace-relative file exists (the retriever's stale-anchor check)."""
        return (self.workspace.root / rel).exists()

    def graph_or_none(self) -> CodeGraph | None:
        """The code graph, or ``None`` when it cannot open (retrieval works without it)."""
        try:
            return self.codegraph
        except EngramError as exc:
            log.info("code graph unavailable for retrieval: %s", exc)
            return None

    @property
    def codegraph(self) -> CodeGraph:
        if self._codegraph is None:
            with self._init_lock:
                if self._codegraph is None:
                    from engram.codegraph import CodeGraph

                    self._codegraph = CodeGraph(self.workspace, self.config)
        return self._codegraph

    @property
    def code_search(self) -> CodeSearch:
        """Hybrid search over AST code chunks (``engram.codegraph.CodeSearch``)."""
        if self._code_search is None:
            with self._init_lock:
                if self._code_search is None:
                    from engram.codegraph import CodeSearch

                    self._code_search = CodeSearch(
                        self.workspace, self.codegraph, self.embedder, location=self.store_location
                    )
        return self._code_search

    @property
    def code_search_if_open(self) -> CodeSearch | None:
        return self._code_search

    def observer_or_build(self, build: Callable[[], Observer]) -> Observer:
        """The observer, built once by ``build``: it needs the remember use case to promote
        what it learned, so ``engram.app.observe.observer_of`` builds it (the composition
        root never imports a use case)."""
        if self._observer is None:
            with self._init_lock:
                if self._observer is None:
                    self._observer = build()
        return self._observer

    @property
    def observer_if_open(self) -> Observer | None:
        return self._observer

    @property
    def history(self) -> GitHistory:
        """Git co-change history (``engram.history``); ``available`` False outside git."""
        if self._history is None:
            with self._init_lock:
                if self._history is None:
                    from engram.history import GitHistory

                    self._history = GitHistory(self.workspace, self.config.history)
        return self._history

    @property
    def digest(self) -> Digest:
        """The agents' SQLite mirror of the memories (read by hooks without LanceDB)."""
        if self._digest is None:
            with self._init_lock:
                if self._digest is None:
                    from engram.lifecycle.trust import mirror_rules
                    from engram.store.digest import Digest

                    self._digest = Digest(self.workspace, rules=mirror_rules())
        return self._digest

    @property
    def audit(self) -> AuditLog:
        """The audit trail (``.engram/audit.sqlite``, docs/trust.md), opened on first use."""
        if self._audit is None:
            with self._init_lock:
                if self._audit is None:
                    from engram.store.audit import AuditLog

                    self._audit = AuditLog(self.workspace, read_only=self.read_only)
        return self._audit

    @property
    def pending_checks(self) -> PendingChecks:
        """Contradiction checks handed to :attr:`defer` and not judged yet
        (``.engram/pending_checks.sqlite``): they outlive the engine process that took them
        (``app.remember.resume_checks``)."""
        if self._pending is None:
            with self._init_lock:
                if self._pending is None:
                    from engram.store.pending import PendingChecks

                    self._pending = PendingChecks(self.workspace, read_only=self.read_only)
        return self._pending

    # ------------------------------------------------------------------ shared helpers

    def filter(
        self,
        *,
        types: Sequence[MemoryType] | None = None,
        sources: Sequence[MemorySource] | None = None,
        file: str | None = None,
        needs_review: bool | None = None,
        include_deprecated: bool = False,
    ) -> MemoryFilter:
        """A store filter (``MemoryFilter``; tests inject their own factory)."""
        factory = self._filter_factory
        if factory is None:
            from engram.store import MemoryFilter

            factory = self._filter_factory = MemoryFilter
        return factory(
            types=types,
            sources=sources,
            file=file,
            needs_review=needs_review,
            include_deprecated=include_deprecated,
        )

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` as a workspace-relative POSIX path; refuses the root and anything outside.

        An empty path is refused by name: it resolves to the root, and the root's message
        quoted an empty string (`engram: error:  is the workspace itself`), which is what
        an editor sends from a window that shows no file.
        """
        if not os.fspath(path).strip():
            raise InvalidInput("no file given (this window or argument names no file)")
        rel = self.workspace.relative(path)
        if rel == ".":
            raise InvalidInput(f"{path} is the workspace itself, not a file")
        return rel

    def check_writable(self) -> None:
        if self.read_only:
            raise EngramError("this engine was opened read-only")

    def mirror(self, upserts: Sequence[Memory] = (), deleted: Sequence[str] = ()) -> None:
        """After a store write: update the agents' SQLite digest.

        The digest (``engram.store.digest``) lets hook processes answer without LanceDB; it is a
        cache, so failing to update it is logged, never raised (the hook rebuilds it).
        """
        writes = self._store.take_writes() if self._store is not None else []
        try:
            self.digest.apply(list(upserts), list(deleted), writes=writes)
            store = self._store
            if store is not None and store.remote:
                self.digest.mark_version(store.seen_version)
        except Exception as exc:
            log.info("could not update the agent digest: %s", exc)
        for listener in list(self.write_listeners):
            try:
                listener(list(upserts), list(deleted))
            except Exception as exc:  # a listener is bookkeeping: never fail the write
                log.warning("write listener failed: %s", exc)

    def count_uses(self, uses: Mapping[str, int]) -> None:
        """Count ``uses[id]`` uses of each memory, in one store write (``app.usage``)."""
        if uses:
            self.check_writable()
            write_uses(self.store, uses, lock=self.write_lock, mirror=self.mirror)

    def close(self) -> None:
        self.uses.close()  # before the write lock: a timer's write takes it
        with self.write_lock:
            components: tuple[Closes | None, ...] = (
                self._store,
                self._code_search,
                self._codegraph,
                self._history,
                self._digest,
                self._observer,
            )
            for component in components:
                if component is None:
                    continue
                try:
                    component.close()
                except Exception as exc:
                    log.debug("close failed: %s", exc)
            self._store = None
            self._codegraph = None
            self._history = None
            self._digest = None
            self._observer = None
            self._code_search = None
            self._retriever = None
            if self._audit is not None:
                self._audit.close()
                self._audit = None
            if self._pending is not None:
                self._pending.close()
                self._pending = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


#: The engine an engine process (``engram.daemon``) lends to a command it runs for a front
#: end: set for that request only, so the command borrows the warm engine instead of
#: opening (and closing) its own. ``None`` everywhere else.
LENT_ENGINE: ContextVar[Engine | None] = ContextVar("engram_lent_engine", default=None)


__all__ = ["LENT_ENGINE", "Deferred", "Engine", "FilterFactory", "WriteListener"]
