"""What a command may use (``registry.CommandContext``), over the session.

Every engine a command runs on is leased for the command's whole run
(:mod:`engram.lsp.engines`): a settings change during ``engram.search`` swaps the folder's
engine for new commands and closes the old one only after this one finished.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from engram.errors import EngramError
from engram.lsp.background import reindex, reindex_in_engine
from engram.lsp.linking import open_local_engine
from engram.lsp.publishing import publish, request_pull_refresh
from engram.lsp.tracking import refresh_document
from engram.quoting import notice_text

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.codegraph import IndexReport
    from engram.config import EngramConfig
    from engram.daemon.calls import CallReply
    from engram.jsontypes import JsonObject
    from engram.lifecycle.trust import Actor
    from engram.lsp.engines import Lease
    from engram.lsp.folder import Folder
    from engram.lsp.ledger import SessionLedger
    from engram.lsp.server import EngramLanguageServer
    from engram.model import Memory
    from engram.workspace import Workspace

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a command waits for a folder that is still starting.
START_TIMEOUT = 120.0

#: Commands that code actions run: their use is an editor ``code_action`` event.
CODE_ACTION_COMMANDS = frozenset(
    {"engram.remember", "engram.confirm", "engram.flag", "engram.pin", "engram.impact"}
)


async def lease_engine(folder: Folder, who: str, timeout: float = START_TIMEOUT) -> Lease[Engine]:
    """A lease on the folder's in-process engine for ``who``, waiting while it opens."""
    deadline = time.monotonic() + timeout
    while True:
        lease = folder.engines.acquire(who)
        if lease is not None:
            return lease
        if folder.link is not None and folder.ready:  # served by the workspace engine
            await open_local_engine(folder)
            continue
        if folder.error:
            raise EngramError(folder.error)
        if time.monotonic() > deadline:
            raise EngramError("Engram is still starting; try again in a moment")
        await asyncio.sleep(0.02)


async def started(folder: Folder) -> None:
    """Until the folder reached the workspace engine or opened its own (or failed).

    A command right after initialize waits, as one run in-process waits for its engine:
    VS Code's first index, sent as soon as *Start in This Workspace* (now *Set Up This
    Folder*) started the server, otherwise found no link yet and indexed in an in-process
    engine.
    """
    deadline = time.monotonic() + START_TIMEOUT
    while not folder.ready and folder.error is None and folder.engine is None:
        if time.monotonic() > deadline:
            raise EngramError("Engram is still starting; try again in a moment")
        await asyncio.sleep(0.02)


@attrs.frozen
class ServerContext:
    """``registry.CommandContext`` for one server: commands see this, not the server."""

    ls: EngramLanguageServer

    async def call(self, fn: Callable[[Engine], T], file: str | None = None) -> T:
        folder = self.ls.session.folder_for_file(file)
        who = f"command ({getattr(fn, '__qualname__', 'call')})"
        with await lease_engine(folder, who) as engine:
            return await asyncio.to_thread(fn, engine)

    async def folder_settings(self, file: str | None = None) -> tuple[Workspace, EngramConfig]:
        """The folder's workspace and settings snapshot; an engine only when none is read.

        The MCP hub asked an engine for them on every code action over a selection: a
        thin window served by the workspace engine opened its own (LanceDB, the store) at
        the first selection in VS Code, and kept it.
        """
        folder = self.ls.session.folder_for_file(file)
        await started(folder)
        config = folder.config
        if config is not None:
            return folder.workspace, config
        return await self.call(lambda engine: (engine.workspace, engine.config), file)

    async def in_engine(
        self, usecase: str, raw: Mapping[str, object], file: str | None = None
    ) -> CallReply | None:
        folder = self.ls.session.folder_for_file(file)
        await started(folder)
        lease = folder.links.acquire(f"command {usecase}")
        if lease is None:
            return None
        from engram.daemon.wire import WireError

        who = self.actor()
        with lease as link:
            if not link.alive:
                return None
            try:
                return await asyncio.to_thread(link.call, usecase, raw, who.label if who else None)
            except WireError as exc:  # the link reconnects on its own (engine_lost)
                log.warning(
                    "the workspace engine went away during %s (%s): in-process", usecase, exc
                )
                return None

    async def memories(
        self, ids: Sequence[str], review: int, file: str | None = None
    ) -> tuple[dict[str, Memory], list[Memory]]:
        folder = self.ls.session.folder_for_file(file)
        lease = folder.links.acquire("memories")
        if lease is not None:
            from engram.daemon.wire import WireError

            with lease as link:
                if link.alive:
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
        ids = {m.id for m in memories}
        for doc in list(self.ls.session.docs.values()):
            if doc.rel in touched or any(m.id in ids for m in doc.memories):
                await refresh_document(self.ls, doc)
                publish(self.ls, doc)
        request_pull_refresh(self.ls)

    def folder_of_memory(self, memory_id: str) -> str | None:
        # ids are random, so at most one store holds one; each folder's digest answers
        # from SQLite without opening an engine (a folder whose digest cannot answer, a
        # clone's committed store among them, is not it)
        from engram.store.digest import Digest
        from engram.workspace import WorkspaceError

        folders = list(self.ls.session.folders.values())
        if len(folders) < 2:
            return None
        for folder in folders:
            if folder.error is not None:
                continue  # refused or failed at start: it serves nothing
            digest = Digest(folder.workspace)
            try:
                if digest.holds(memory_id):
                    return str(folder.root)
            except (EngramError, WorkspaceError, OSError, sqlite3.Error) as exc:
                log.info("%s: cannot tell whether it holds %s (%s)", folder.root, memory_id, exc)
            finally:
                digest.close()  # one per command: its connection is not kept
        return None

    def actor(self) -> Actor | None:
        # an agent's LSP client (client_kind, or its name): never a person. Decided from
        # what the client itself said at initialize (a command may arrive before the
        # folder's settings are read), and a repository's settings cannot make it a person
        # (docs/trust.md "Agents are not people")
        from engram.lifecycle.trust import Actor  # the trust model: not before initialize

        session = self.ls.session
        if session.is_agent():
            return Actor.agent(f"lsp:{session.client.name or 'client'}")
        return None

    def session(self, file: str | None = None) -> SessionLedger:
        try:
            return self.ls.session.folder_for_file(file).ledger
        except EngramError:
            return self.ls.session.orphan_ledger

    def status(self, file: str | None = None) -> JsonObject:
        try:
            folder = self.ls.session.folder_for_file(file)
        except EngramError:
            return {"ready": False, "indexing": None}
        return {"ready": folder.ready, "indexing": folder.indexing, "error": folder.error}

    async def reindex(
        self, files: Sequence[str] | None, file: str | None = None
    ) -> IndexReport | JsonObject:
        folder = self.ls.session.folder_for_file(file)
        if not files:  # the whole folder: where it is served, once the start chose
            await started(folder)
        if not files and folder.engine is None:
            lease = folder.links.acquire("reindex command")
            if lease is not None:
                with lease as link:
                    if link.alive:
                        return await reindex_in_engine(self.ls, folder, link)
        with await lease_engine(folder, "reindex command") as engine:
            return await reindex(self.ls, folder, engine, files)

    async def show_message(self, text: str) -> None:
        self.ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=notice_text(text))
        )

    async def show_document(self, path: str, line: int, file: str | None = None) -> bool:
        folder = self.ls.session.folder_for_file(file)
        target = folder.workspace.resolve(path)
        caps = self.ls.client_capabilities.window
        if caps is None or caps.show_document is None or not caps.show_document.support:
            return False
        pos = types.Position(line=max(0, line), character=0)
        result = await self.ls.window_show_document_async(
            types.ShowDocumentParams(
                uri=from_fs_path(str(target)) or target.as_uri(),
                take_focus=True,
                selection=types.Range(pos, pos),
            )
        )
        return bool(result and result.success)

    def observe_command(self, name: str, args: Sequence[object]) -> None:
        """A code action's command ran: a ``code_action`` event on the document it is for."""
        if name not in CODE_ACTION_COMMANDS:
            return
        arg = args[0] if args and isinstance(args[0], dict) else {}
        memory_id = arg.get("id")
        for doc in self.ls.session.docs.values():
            if (isinstance(memory_id, str) and any(m.id == memory_id for m in doc.memories)) or (
                isinstance(arg.get("file"), str) and arg["file"] in (doc.rel, doc.uri)
            ):
                self.ls.observe_editor(doc, "code_action")
                return
