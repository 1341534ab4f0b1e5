"""The Engram language server: state, core operations, and the one place features register.

Handlers live in ``engram.lsp.handlers`` (one module per LSP method or family) and stay
thin: they read the in-memory state kept here and call the operations below, which run
everything blocking in worker threads and touch state only on the event loop thread.

Start-up order (fast ``initialize``): pygls answers ``initialize`` as soon as it is up;
``initialized`` starts a background task per workspace folder that reads the editor's
settings, opens the Engine (importing the engine, then LanceDB when the store opens) and,
when a code graph already exists, brings it up to date, all under a cancellable work-done
progress. Until a folder is ready, hover and diagnostics answer with what is known
(nothing), and commands wait for the engine instead of failing.

Long on purpose: the server's state and plumbing (folders, documents, progress, child
processes, publishing); features live in lsp/handlers and are registered in lsp/features.py.
Splitting the state into a typed session object is the planned next step
(docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from engram import __version__
from engram.anchors import LineSpan
from engram.config import merge_settings, workspace_settings_trust
from engram.errors import EngramError
from engram.lifecycle.trust import Actor
from engram.lsp import anchors as anchor_ops
from engram.lsp.anchors import SymbolInfo, TextEdit, memory_key
from engram.lsp.diagnostics import build_diagnostics, result_id
from engram.lsp.folder import (
    FileSnapshot,
    Folder,
    impact_blocking,
    load_config_blocking,
    locate_spans,
    open_engine_blocking,
    snapshot_blocking,
    warm_blocking,
)
from engram.lsp.observe import EditorEventFeed
from engram.lsp.registry import CommandRegistry
from engram.lsp.session import SessionLedger
from engram.model import Memory, utcnow
from engram.workspace import uri_to_path

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.codegraph import IndexReport
    from engram.config import EngramConfig
    from engram.daemon.calls import CallReply
    from engram.daemon.wire import Json
    from engram.jsontypes import JsonObject
    from engram.lsp.remote import EngineLink
    from engram.workspace_trust import SettingsTrust

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Agent LSP clients, by (lower-case) substring of ``clientInfo.name``.
AGENT_CLIENT_NAMES: tuple[str, ...] = (
    "opencode",
    "crush",
    "claude",
    "copilot",
    "codex",
    "aider",
    "goose",
    "amp",
    "cline",
)

#: Commands that code actions run: their use is an editor ``code_action`` event.
CODE_ACTION_COMMANDS = frozenset(
    {"engram.remember", "engram.confirm", "engram.flag", "engram.pin", "engram.impact"}
)

#: Settings only the language server reads (not part of ``EngramConfig``).
POLL_SECONDS = 5.0
PROGRESS_INTERVAL = 0.2


@attrs.define
class DocumentState:
    """An open document: where its memories' anchors are now, what was last published."""

    uri: str
    folder: Folder
    rel: str
    memories: tuple[Memory, ...] = ()
    spans: dict[str, LineSpan] = attrs.field(factory=dict)
    loaded: bool = False
    published_id: str | None = None
    pending: asyncio.TimerHandle | None = None
    memory_key: tuple[tuple[str, str], ...] = ()
    #: memory id -> ``(id, text)`` of the shown memories it conflicts with
    partners: dict[str, list[tuple[str, str]]] = attrs.field(factory=dict)


class EngramLanguageServer(LanguageServer):
    """pygls server plus Engram's state; implements ``registry.CommandContext``."""

    def __init__(self) -> None:
        super().__init__(
            "engram",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.folders: dict[str, Folder] = {}
        self.docs: dict[str, DocumentState] = {}
        self.registry = CommandRegistry()
        self.fallback_root: str | None = None
        self.client_name = ""
        self.init_options: dict[str, Any] = {}
        self.agent = False
        #: the client said it is an agent (name, clientKind, agentSeverity) at initialize
        self.agent_client = False
        self.push = True
        self.pull = False
        self.clock: Callable[[], Any] = utcnow
        self.poll_seconds = POLL_SECONDS
        self._tasks: set[asyncio.Future[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._orphan_session = SessionLedger()
        #: editor events to the observer, one session per server process
        self.editor_events = EditorEventFeed()
        self.shutting_down = False
        self._local_locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------ plumbing

    def observe_editor(self, doc: DocumentState, action: str) -> None:
        """Tell the observer what the editor did with ``doc`` (queued, never blocking)."""
        try:
            self.editor_events.emit(doc.folder, action, doc.rel)
        except Exception as exc:  # bookkeeping must never fail a request
            log.debug("editor event %s not queued: %s", action, exc)

    def observe_command(self, name: str, args: Sequence[Any]) -> None:
        """A code action's command ran: a ``code_action`` event on the document it is for."""
        if name not in CODE_ACTION_COMMANDS:
            return
        arg = args[0] if args and isinstance(args[0], dict) else {}
        memory_id = arg.get("id")
        for doc in self.docs.values():
            if (isinstance(memory_id, str) and any(m.id == memory_id for m in doc.memories)) or (
                isinstance(arg.get("file"), str) and arg["file"] in (doc.rel, doc.uri)
            ):
                self.observe_editor(doc, "code_action")
                return

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def spawn(self, coro: Any, what: str) -> None:
        """Run a background coroutine; its failure is logged, never lost or fatal."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(fut: asyncio.Future[Any]) -> None:
            self._tasks.discard(fut)
            if not fut.cancelled() and fut.exception() is not None:
                log.error("%s failed: %s", what, fut.exception(), exc_info=fut.exception())

        task.add_done_callback(done)

    def threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` on the event loop (from a worker thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(fn, *args)

    def log_to_client(self, level: int, message: str) -> None:
        kind = (
            types.MessageType.Error
            if level >= logging.ERROR
            else types.MessageType.Warning
            if level >= logging.WARNING
            else types.MessageType.Info
        )
        with contextlib.suppress(Exception):
            self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Out-of-band failures go to the log, not to a pop-up per keystroke."""
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    # ------------------------------------------------------------------ folders, routing

    def add_folder(self, uri: str, name: str | None = None) -> Folder | None:
        path = uri_to_path(uri)
        if path is None or not path.is_dir():
            log.warning("workspace folder %s is not a local directory; skipped", uri)
            return None
        folder = Folder(uri, path.resolve(), name)
        self.folders[uri] = folder
        return folder

    def folder_for_path(self, path: Path) -> Folder | None:
        best: Folder | None = None
        for folder in self.folders.values():
            if folder.contains(path) and (
                best is None or len(folder.root.parts) > len(best.root.parts)
            ):
                best = folder
        return best

    def folder_for_uri(self, uri: str) -> Folder | None:
        path = uri_to_path(uri)
        return None if path is None else self.folder_for_path(path)

    def folder_for_file(self, file: str | None) -> Folder:
        """The folder holding ``file`` (absolute), else the first folder."""
        if file:
            path = Path(file).expanduser()
            if path.is_absolute():
                found = self.folder_for_path(path.resolve())
                if found is not None:
                    return found
        if not self.folders:
            raise EngramError("no workspace folder is open")
        return next(iter(self.folders.values()))

    def uri_for(self, folder: Folder, rel: str) -> str:
        return from_fs_path(str(folder.root / rel)) or f"file://{folder.root / rel}"

    # ------------------------------------------------------------------ CommandContext

    async def engine_of(self, folder: Folder, timeout: float = 120.0) -> Engine:
        deadline = time.monotonic() + timeout
        while folder.engine is None:
            if folder.link is not None and folder.ready:  # served by the workspace engine
                return await self.open_local_engine(folder)
            if folder.error:
                raise EngramError(folder.error)
            if time.monotonic() > deadline:
                raise EngramError("Engram is still starting; try again in a moment")
            await asyncio.sleep(0.02)
        return folder.engine

    async def call(self, fn: Callable[[Engine], T], file: str | None = None) -> T:
        folder = self.folder_for_file(file)
        engine = await self.engine_of(folder)
        return await asyncio.to_thread(fn, engine)

    async def in_engine(
        self, usecase: str, raw: Mapping[str, object], file: str | None = None
    ) -> CallReply | None:
        folder = self.folder_for_file(file)
        deadline = time.monotonic() + 120.0
        # a command right after initialize waits for the folder to reach the workspace
        # engine (or to open its own), as one run in-process waits for its engine
        while not folder.ready and folder.error is None and folder.engine is None:
            if time.monotonic() > deadline:
                raise EngramError("Engram is still starting; try again in a moment")
            await asyncio.sleep(0.02)
        link = folder.link
        if link is None or not link.alive:
            return None
        from engram.daemon.wire import WireError

        who = self.actor()
        try:
            return await asyncio.to_thread(link.call, usecase, raw, who.label if who else None)
        except WireError as exc:  # the link reconnects on its own (engine_lost)
            log.warning("the workspace engine went away during %s (%s): in-process", usecase, exc)
            return None

    async def memories(
        self, ids: Sequence[str], review: int, file: str | None = None
    ) -> tuple[dict[str, Memory], list[Memory]]:
        folder = self.folder_for_file(file)
        link = folder.link
        if link is not None and link.alive:
            from engram.daemon.wire import WireError

            try:
                found, queue = await asyncio.to_thread(link.memories, ids, review)
                return {m.id: m for m in found}, queue
            except WireError as exc:
                log.warning("the workspace engine went away (%s): in-process", exc)
        from engram.app.memories import list_memories

        def read(engine: Engine) -> tuple[dict[str, Memory], list[Memory]]:
            found = {m.id: m for m in engine.store.get_many(ids)} if ids else {}
            return found, list_memories(engine, needs_review=True, limit=review)

        return await self.call(read, file)

    async def memories_changed(self, memories: Sequence[Memory], file: str | None = None) -> None:
        touched = {a.file for m in memories for a in m.anchors} | {
            f for m in memories for f in m.related_files
        }
        for doc in list(self.docs.values()):
            if doc.rel in touched or any(m.id in {x.id for x in memories} for m in doc.memories):
                await self.refresh_document(doc)
                self.publish(doc)
        self.request_pull_refresh()

    def actor(self) -> Actor | None:
        # an agent's LSP client (client_kind, or its name): never a person. Decided from
        # what the client itself said at initialize (a command may arrive before the
        # folder's settings are read), and a repository's settings cannot make it a person
        # (docs/trust.md "Agents are not people")
        if self.agent or self.agent_client:
            return Actor.agent(f"lsp:{self.client_name or 'client'}")
        return None

    def session(self, file: str | None = None) -> SessionLedger:
        try:
            return self.folder_for_file(file).session
        except EngramError:
            return self._orphan_session

    def status(self, file: str | None = None) -> JsonObject:
        try:
            folder = self.folder_for_file(file)
        except EngramError:
            return {"ready": False, "indexing": None}
        return {"ready": folder.ready, "indexing": folder.indexing, "error": folder.error}

    async def reindex(self, files: Sequence[str] | None, file: str | None = None) -> Any:
        folder = self.folder_for_file(file)
        engine = await self.engine_of(folder)
        if files:
            rels = [engine.workspace.relative(f) for f in files]

            def run() -> JsonObject:
                graph = engine.codegraph
                results = [graph.reindex_file(rel) for rel in rels]
                return {"files": rels, "results": results}

            report: Any = await asyncio.to_thread(run)
        else:
            report = await self.index_folder(folder, engine, "Engram: re-indexing")
            self.maybe_embed_in_child(folder, engine.config)
        folder.impact.clear()
        folder.symbols.clear()
        await self.refresh_folder(folder)
        return report

    def warn_untrusted_settings(self, folder: Folder, trust: SettingsTrust) -> None:
        """Say, never silently skip, when the workspace asks to run code or send data.

        The gated settings are already off (:mod:`engram.workspace_trust`); the user is told
        what they would do and how to approve them (docs/security.md).
        """
        if not trust.needs_approval:
            return
        message = f"Engram ({folder.name}): {trust.summary()}, then reload the window."
        log.warning("%s", message)
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    async def show_message(self, text: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=text))

    async def show_document(self, path: str, line: int, file: str | None = None) -> bool:
        folder = self.folder_for_file(file)
        target = folder.workspace.resolve(path)
        caps = self.client_capabilities.window
        if caps is None or caps.show_document is None or not caps.show_document.support:
            return False
        pos = types.Position(line=max(0, line), character=0)
        result = await self.window_show_document_async(
            types.ShowDocumentParams(
                uri=from_fs_path(str(target)) or target.as_uri(),
                take_focus=True,
                selection=types.Range(pos, pos),
            )
        )
        return bool(result and result.success)

    async def open_local_engine(self, folder: Folder) -> Engine:
        """An in-process engine for this folder (commands, until the engine serves them).

        Writes it makes take the store's file lock and reach other windows through the
        engine's watch for outside writes (docs/engine.md).
        """
        lock = self._local_locks.setdefault(folder.uri, asyncio.Lock())
        async with lock:
            if folder.engine is None:
                log.info("opening an in-process engine for %s", folder.root)
                engine = await asyncio.to_thread(
                    open_engine_blocking, folder.root, folder.overrides
                )
                await asyncio.to_thread(warm_blocking, engine)
                folder.engine = engine
            return folder.engine

    # ------------------------------------------------------------------ the workspace engine

    async def connect_engine(self, folder: Folder) -> EngineLink | None:
        """Connect the folder to the workspace engine (starting it); None when it cannot."""
        from engram.daemon.client import EngineUnavailable, engine_enabled
        from engram.lsp.remote import EngineLink

        if not engine_enabled():
            return None

        def on_event(event: Json) -> None:
            self.threadsafe(self.engine_event, folder, event)

        def on_close() -> None:
            self.threadsafe(self.engine_lost, folder)

        try:
            link = await asyncio.to_thread(EngineLink.open, folder.root, on_event, on_close)
        except EngineUnavailable as exc:
            log.info("no workspace engine for %s (%s): working in-process", folder.root, exc)
            return None
        folder.link = link
        log.info("Engram for %s served by the workspace engine (pid %d)", folder.root, link.pid)
        return link

    def engine_event(self, folder: Folder, event: Json) -> None:
        """Memories changed (any front end's write): refresh what shows them, here and now."""
        raw_files, raw_ids = event.get("files"), event.get("ids")
        files = (
            {f for f in raw_files if isinstance(f, str)} if isinstance(raw_files, list) else set()
        )
        ids = {i for i in raw_ids if isinstance(i, str)} if isinstance(raw_ids, list) else set()
        everything = bool(event.get("all"))
        docs = [
            d
            for d in self.docs.values()
            if d.folder is folder
            and (everything or d.rel in files or any(m.id in ids for m in d.memories))
        ]
        if docs:
            self.spawn(self._refresh_docs(docs), "refresh after a write")
        self.request_pull_refresh()

    async def _refresh_docs(self, docs: Sequence[DocumentState]) -> None:
        for doc in docs:
            if await self.refresh_document(doc) or doc.published_id is None:
                self.publish(doc)

    def engine_lost(self, folder: Folder) -> None:
        """The connection broke (the engine crashed, was killed or stopped): reconnect once,
        which starts a new engine, else work in-process."""
        if folder.link is None or self.shutting_down:
            return
        folder.link = None
        log.warning("lost the workspace engine for %s; reconnecting", folder.root)
        self.spawn(self._reconnect(folder), f"reconnect of {folder.root}")

    async def _reconnect(self, folder: Folder) -> None:
        if await self.connect_engine(folder) is None:
            log.warning("working in-process for %s", folder.root)
            await self.open_local_engine(folder)
        await self.refresh_folder(folder)

    # ------------------------------------------------------------------ start-up

    def decide_client(self, params: types.InitializeParams) -> None:
        """Remember who the client is and how it wants diagnostics."""
        info = params.client_info
        self.client_name = info.name if info is not None else ""
        raw = params.initialization_options
        self.init_options = dict(raw) if isinstance(raw, dict) else {}
        kind = self.init_options.get("clientKind") or self.init_options.get("client_kind")
        self.agent_client = self.client_kind_is_agent(kind if isinstance(kind, str) else "auto")
        if not self.folders:
            for folder in params.workspace_folders or []:
                self.add_folder(folder.uri, folder.name)
        if not self.folders:
            root_uri = params.root_uri or (
                from_fs_path(params.root_path) if params.root_path else None
            )
            if root_uri is None and self.fallback_root is not None:
                root_uri = from_fs_path(str(Path(self.fallback_root).resolve()))
            if root_uri is None:
                root_uri = from_fs_path(str(Path.cwd()))
            if root_uri:
                self.add_folder(root_uri)

    def client_kind_is_agent(self, setting: str) -> bool:
        setting = (setting or "auto").strip().lower()
        if setting in ("agent", "editor"):
            return setting == "agent"
        diag = self.init_options.get("diagnostics")
        if isinstance(diag, dict) and ("agentSeverity" in diag or "agent_severity" in diag):
            return True
        name = self.client_name.lower()
        return any(agent in name for agent in AGENT_CLIENT_NAMES)

    def decide_diagnostic_mode(self, mode: str) -> None:
        caps = self.client_capabilities
        can_pull = caps.text_document is not None and caps.text_document.diagnostic is not None
        can_refresh = bool(
            caps.workspace is not None
            and caps.workspace.diagnostics is not None
            and caps.workspace.diagnostics.refresh_support
        )
        mode = (mode or "auto").strip().lower()
        if mode == "push":
            self.push, self.pull = True, False
        elif mode == "pull":
            self.push, self.pull = False, True
        elif mode == "both":
            self.push, self.pull = True, True
        else:
            self.pull = can_pull and can_refresh
            self.push = not self.pull

    async def fetch_overrides(self, folder: Folder) -> JsonObject:
        """initializationOptions under the editor's ``engram`` settings for this folder."""
        merged: dict[str, Any] = {
            k: v for k, v in self.init_options.items() if k not in ("clientKind", "client_kind")
        }
        caps = self.client_capabilities.workspace
        if caps is not None and caps.configuration:
            try:
                result = await asyncio.wait_for(
                    self.workspace_configuration_async(
                        types.ConfigurationParams(
                            items=[types.ConfigurationItem(scope_uri=folder.uri, section="engram")]
                        )
                    ),
                    timeout=5.0,
                )
                section = result[0] if result else None
                if isinstance(section, dict):
                    merged = merge_settings(merged, section)
            except Exception as exc:
                log.info("workspace/configuration unavailable: %s", exc)
        kind = self.init_options.get("clientKind") or self.init_options.get("client_kind")
        if isinstance(kind, str):
            merged.setdefault("diagnostics", {})
            if isinstance(merged["diagnostics"], dict):
                merged["diagnostics"].setdefault("client_kind", kind)
        return merged

    async def start_folder(self, folder: Folder) -> None:
        """Reach the workspace engine (or open one in-process), then index; with progress."""
        from engram.lsp.remote import preload

        # what a digest-first didOpen reads is imported while the editor still talks to us
        preloading = asyncio.ensure_future(asyncio.to_thread(preload))
        progress = await self.begin_progress(f"Engram: opening {folder.name}")
        try:
            folder.overrides = await self.fetch_overrides(folder)
            config = await asyncio.to_thread(load_config_blocking, folder.root, folder.overrides)
            self.configure_folder(folder, config)
            # before any engine (local or the workspace engine): say what was held back
            trust = await asyncio.to_thread(workspace_settings_trust, folder.workspace)
            self.warn_untrusted_settings(folder, trust)
            await preloading
            if await self.connect_engine(folder) is not None:
                await self.start_remote(folder, config, progress)
                return
            engine = await asyncio.to_thread(open_engine_blocking, folder.root, folder.overrides)
            self.configure_folder(folder, engine.config)
            folder.engine = engine
            self.report_progress(progress, "loading memories")
            await asyncio.to_thread(warm_blocking, engine)
            folder.ready = True
            log.info("Engram ready for %s", folder.root)
            await self.refresh_folder(folder)
            self.request_pull_refresh()
            index_cfg = engine.config.index
            if folder.has_graph and index_cfg.index_on_start:
                await self.index_folder(folder, engine, None, progress)
                folder.symbols.clear()
                await self.refresh_folder(folder)
                self.maybe_embed_in_child(folder, engine.config)
        except Exception as exc:
            folder.error = f"Engram could not start for {folder.root}: {_first_line(exc)}"
            log.error("%s", folder.error, exc_info=not isinstance(exc, EngramError))
        finally:
            self.end_progress(progress, folder.error or "ready")

    async def start_remote(
        self, folder: Folder, config: EngramConfig, progress: str | None
    ) -> None:
        """The folder is served by the workspace engine: show, then index there."""
        link = folder.link
        assert link is not None
        folder.ready = True
        self.report_progress(progress, "loading memories")
        await self.refresh_folder(folder)
        self.request_pull_refresh()
        if folder.has_graph and config.index.index_on_start:
            folder.indexing = "indexing"
            self.report_progress(progress, "indexing")
            try:
                await asyncio.to_thread(link.index, not config.index.embed_in_background)
            finally:
                folder.indexing = None
            folder.symbols.clear()
            await self.refresh_folder(folder)
            self.maybe_embed_in_child(folder, config)

    @staticmethod
    def child_will_index(config: EngramConfig) -> bool:
        """Whether a child ``engram index`` follows this server's own index."""
        return config.index.embed_in_background

    def maybe_embed_in_child(self, folder: Folder, config: EngramConfig) -> None:
        """After a keyword-only index: embeddings in a child, unless off or one runs.

        With the workspace engine, the child is a thin ``engram index`` that the engine
        runs; the memory it needs is the engine's, never this server's.
        """
        if not self.child_will_index(config):
            return
        if folder.children:
            return  # the running child embeds whatever this index added, too
        self.spawn(self.embed_in_child(folder), f"embedding in {folder.root}")

    async def embed_in_child(self, folder: Folder) -> None:
        """Run ``engram index`` in a child process for the embeddings, then refresh.

        Embedding code chunks loads the ONNX model and its buffers (hundreds of MB, for
        minutes on a large repository); in a child, that memory is returned to the
        system when it exits, and the editor's server stays small. The child writes
        through the stores' own writer locks; this server sees the new vectors as
        foreign writes. Its output goes to ``.engram/logs/background-index.log``; it is
        started, locked and reaped by ``engram.jobs`` like every background job.
        """
        from engram.jobs import start

        delay = folder.config.index.background_delay_seconds if folder.config else 0.0
        if delay > 0:
            await asyncio.sleep(delay)  # cancelled at shutdown: no child is started then
        # the child reads the workspace's config files itself; the editor's embedding
        # settings travel as environment overrides so both use the same model
        embed = folder.config.embed if folder.config is not None else None
        env: dict[str, str] = {}
        if embed is not None:
            env["ENGRAM_EMBED__MODEL"] = embed.model
            env["ENGRAM_EMBED__BATCH_SIZE"] = str(embed.batch_size)
        try:
            child = start(
                folder.workspace,
                "index",
                ["index"],
                log_name="background-index.log",
                env=env,
                lower_priority=True,
            )
        except OSError as exc:
            log.warning("background embedding not started: %s", exc)
            return
        if child is None:
            return  # another process indexes this workspace now
        folder.children.append(child)
        try:
            code = await asyncio.to_thread(child.wait)
        except asyncio.CancelledError:  # shutdown cancels this task first: end the child
            with contextlib.suppress(ProcessLookupError):
                child.terminate()
            raise
        finally:
            if child in folder.children:
                folder.children.remove(child)
        if code != 0:
            log.warning("background embedding exited with %s (see .engram/logs/)", code)
            return
        await self.refresh_folder(folder)

    def configure_folder(self, folder: Folder, config: EngramConfig) -> None:
        folder.apply_config(config, self.client_kind_is_agent(config.diagnostics.client_kind))
        self.agent = self.client_kind_is_agent(config.diagnostics.client_kind)
        self.decide_diagnostic_mode(config.diagnostics.mode)

    async def index_folder(
        self,
        folder: Folder,
        engine: Engine,
        title: str | None,
        token: str | None = None,
    ) -> Any:
        """The index use case in a thread, reporting ``$/progress``; cancellable by the client."""
        own = token is None
        if own:
            token = await self.begin_progress(title or "Engram: indexing")
        last = [0.0]

        def progress(done: int, total: int | None, message: str = "") -> None:
            now = time.monotonic()
            if now - last[0] < PROGRESS_INTERVAL and done != total:
                return
            last[0] = now
            text = f"indexing {done}/{total}" if total else f"indexing {done}"
            pct = int(done * 100 / total) if total else None
            self.threadsafe(self._set_indexing, folder, text)
            self.threadsafe(self.report_progress, token, text, pct)

        def cancelled() -> bool:
            return self.progress_cancelled(token)

        # keyword-only chunks here; embeddings (and, when that child runs, git history
        # mining) happen in a child process, see maybe_embed_in_child
        from engram.app.indexing import LSP_INDEX, run_index

        options = attrs.evolve(LSP_INDEX, history=not self.child_will_index(engine.config))

        def run() -> IndexReport:
            return run_index(engine, options, progress, cancelled).code

        try:
            folder.indexing = "indexing"
            return await asyncio.to_thread(run)
        finally:
            folder.indexing = None
            if own:
                self.end_progress(token, "indexed")

    def _set_indexing(self, folder: Folder, text: str) -> None:
        folder.indexing = text

    async def begin_progress(self, title: str) -> str | None:
        caps = self.client_capabilities.window
        if caps is None or not caps.work_done_progress:
            return None
        token = f"engram-{uuid.uuid4().hex[:8]}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), timeout=5.0)
        except Exception as exc:
            log.debug("progress not created: %s", exc)
            return None
        self.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0)
        )
        return token

    def report_progress(self, token: str | None, message: str, pct: int | None = None) -> None:
        if token is None:
            return
        self.work_done_progress.report(
            token, types.WorkDoneProgressReport(message=message, percentage=pct, cancellable=True)
        )

    def end_progress(self, token: str | None, message: str) -> None:
        if token is None:
            return
        with contextlib.suppress(Exception):
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        self.work_done_progress.tokens.pop(token, None)

    def progress_cancelled(self, token: str | None) -> bool:
        if token is None:
            return False
        future = self.work_done_progress.tokens.get(token)
        return future is not None and future.cancelled()

    # ------------------------------------------------------------------ documents

    def open_document(self, uri: str) -> DocumentState | None:
        folder = self.folder_for_uri(uri)
        if folder is None:
            return None
        path = uri_to_path(uri)
        if path is None:
            return None
        try:
            rel = folder.workspace.relative(path)
        except Exception:
            return None
        doc = DocumentState(uri=uri, folder=folder, rel=rel)
        self.docs[uri] = doc
        return doc

    def document_lines(self, uri: str) -> list[str]:
        try:
            return anchor_ops.split_lines(self.workspace.get_text_document(uri).source)
        except Exception:
            return []

    async def refresh_document(self, doc: DocumentState, reindex: bool = False) -> bool:
        """Reload the document's memories and relocate their anchors (in a thread).

        Returns True when what the document shows may have changed.
        """
        folder = doc.folder
        engine, link = folder.engine, folder.link
        lines = self.document_lines(doc.uri)
        if link is not None and folder.ready:
            from engram.daemon.client import EngineError
            from engram.daemon.wire import WireError

            known = doc.memories if doc.loaded and not reindex else None
            try:
                found, symbols, partners = await asyncio.to_thread(
                    link.snapshot, doc.rel, folder.has_graph, reindex, known
                )
            except (WireError, EngineError) as exc:
                log.info("the engine did not answer for %s: %s", doc.rel, exc)
                return False
            memories = doc.memories if found is None else found
            spans = locate_spans(memories, doc.rel, lines, symbols)
            snap = FileSnapshot(memories, spans, symbols, partners)
        elif engine is not None and folder.ready:
            snap = await asyncio.to_thread(
                snapshot_blocking, engine, doc.rel, lines, folder.has_graph, reindex
            )
        elif doc.loaded:
            return False
        else:
            snap = await self.digest_snapshot(doc, lines)
        if self.docs.get(doc.uri) is not doc:
            return False  # closed meanwhile
        key = memory_key(snap.memories)
        changed = (
            key != doc.memory_key or snap.partners != doc.partners or not doc.loaded or reindex
        )
        doc.memories, doc.memory_key, doc.partners = snap.memories, key, snap.partners
        if changed or reindex:
            doc.spans = snap.spans
        else:  # keep the edit-tracked spans, add any new ones
            for mid, span in snap.spans.items():
                doc.spans.setdefault(mid, span)
        if snap.symbols or folder.ready:
            folder.symbols[doc.rel] = snap.symbols
        doc.loaded = True
        if folder.ready and doc.rel not in folder.impact:
            folder.impact[doc.rel] = None
            self.spawn(self.compute_impact(folder, doc.rel), f"impact of {doc.rel}")
        return changed

    async def digest_snapshot(self, doc: DocumentState, lines: list[str]) -> FileSnapshot:
        """What the SQLite digest knows of the file: shown before the engine answers."""
        from engram.lsp.remote import digest_memories

        memories, partners = await asyncio.to_thread(digest_memories, doc.folder.root, doc.rel)
        return FileSnapshot(memories, locate_spans(memories, doc.rel, lines, ()), (), partners)

    async def show_digest(self, doc: DocumentState) -> None:
        """A just-opened document's memories from the digest, published at once."""
        if doc.loaded:
            return
        snap = await self.digest_snapshot(doc, self.document_lines(doc.uri))
        if doc.loaded or self.docs.get(doc.uri) is not doc:
            return  # the engine was faster
        doc.memories, doc.memory_key = snap.memories, memory_key(snap.memories)
        doc.spans, doc.partners = snap.spans, snap.partners
        doc.loaded = True
        if snap.memories:
            self.publish(doc)

    async def compute_impact(self, folder: Folder, rel: str) -> None:
        if not folder.has_graph:
            return
        link, engine = folder.link, folder.engine
        if link is not None:
            try:
                folder.impact[rel] = await asyncio.to_thread(link.impact, rel)
            except Exception as exc:  # no summary rather than no hover
                log.debug("impact of %s unavailable: %s", rel, exc)
            return
        if engine is None:
            return
        folder.impact[rel] = await asyncio.to_thread(impact_blocking, engine, rel)

    async def refresh_folder(self, folder: Folder) -> None:
        for doc in [d for d in self.docs.values() if d.folder is folder]:
            changed = await self.refresh_document(doc)
            if changed or doc.published_id is None:
                self.publish(doc)

    def apply_changes(self, doc: DocumentState, changes: Sequence[Any]) -> None:
        """Shift tracked anchor spans by incremental edits; relocate on full-text edits."""
        edits: list[TextEdit] = []
        full = False
        for change in changes:
            rng = getattr(change, "range", None)
            if rng is None:
                full = True
                continue
            edits.append(
                TextEdit(
                    rng.start.line,
                    rng.start.character,
                    rng.end.line,
                    rng.end.character,
                    change.text,
                )
            )
        if full:
            lines = self.document_lines(doc.uri)
            symbols: tuple[SymbolInfo, ...] = doc.folder.symbols.get(doc.rel, ())
            doc.spans = locate_spans(doc.memories, doc.rel, lines, symbols)
        elif edits:
            doc.spans = anchor_ops.shift_all(doc.spans, edits)

    def diagnostics_for(self, doc: DocumentState) -> list[types.Diagnostic]:
        if not doc.loaded:
            return []
        lines: list[str] | None = None

        def line_length(line: int) -> int:
            nonlocal lines
            if lines is None:
                lines = self.document_lines(doc.uri)
            return len(lines[line]) if 0 <= line < len(lines) else 0

        folder = doc.folder
        return build_diagnostics(
            doc.memories,
            doc.spans,
            doc.rel,
            folder.policy,
            self.clock(),
            lambda rel: self.uri_for(folder, rel),
            line_length,
            doc.partners,
        )

    def publish(self, doc: DocumentState) -> None:
        """Push the document's diagnostics now (when pushing)."""
        if doc.pending is not None:
            doc.pending.cancel()
            doc.pending = None
        if not self.push:
            return
        diagnostics = self.diagnostics_for(doc)
        doc.published_id = result_id(diagnostics)
        doc.folder.session.applied(d.data["id"] for d in diagnostics if isinstance(d.data, dict))
        version = None
        with contextlib.suppress(Exception):
            version = self.workspace.get_text_document(doc.uri).version
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=diagnostics, version=version)
        )

    def schedule_publish(self, doc: DocumentState) -> None:
        """Debounced push: typing moves diagnostics at most every ``debounce_ms``."""
        if not self.push:
            return
        if doc.pending is not None:
            doc.pending.cancel()
        config = doc.folder.config
        delay = (config.diagnostics.debounce_ms if config is not None else 300) / 1000.0
        doc.pending = self.loop.call_later(max(0.0, delay), self.publish, doc)

    def request_pull_refresh(self) -> None:
        if not self.pull:
            return
        caps = self.client_capabilities.workspace
        if caps is not None and caps.diagnostics is not None and caps.diagnostics.refresh_support:
            self.spawn(self.workspace_diagnostic_refresh_async(None), "diagnostic refresh")

    async def poll_store(self) -> None:
        """Pick up writes by other processes (a second editor window, the CLI, an agent)."""
        while True:
            await asyncio.sleep(self.poll_seconds)
            for folder in list(self.folders.values()):
                if not folder.ready or folder.link is not None:
                    continue  # the engine tells a linked folder about every write
                for doc in [d for d in self.docs.values() if d.folder is folder]:
                    try:
                        if await self.refresh_document(doc):
                            self.publish(doc)
                    except Exception as exc:
                        log.debug("refresh of %s failed: %s", doc.rel, exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class ClientLogHandler(logging.Handler):
    """Forward warnings and errors to ``window/logMessage`` (from any thread)."""

    def __init__(self, server: EngramLanguageServer) -> None:
        super().__init__(logging.WARNING)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
        except Exception:
            return
        self.server.threadsafe(self.server.log_to_client, record.levelno, message)
