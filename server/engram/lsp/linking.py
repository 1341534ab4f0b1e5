"""A folder's engine: the link to the workspace engine (``engram.daemon``), its events
and its loss, or an in-process engine when there is no workspace engine
(docs/engine.md, "Front ends")."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from engram.lsp.folder import open_engine_blocking, warm_blocking
from engram.lsp.publishing import request_pull_refresh
from engram.lsp.tracking import refresh_docs, refresh_folder

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.daemon.wire import Json
    from engram.lsp.folder import Folder
    from engram.lsp.remote import EngineLink
    from engram.lsp.server import EngramLanguageServer
    from engram.lsp.session import DocumentState

log = logging.getLogger(__name__)


async def open_local_engine(folder: Folder) -> Engine:
    """An in-process engine for this folder (commands, until the engine serves them).

    Writes it makes take the store's file lock and reach other windows through the
    engine's watch for outside writes (docs/engine.md).
    """
    async with folder.opening:
        engine = folder.engine
        if engine is None:
            log.info("opening an in-process engine for %s", folder.root)
            engine = await asyncio.to_thread(
                open_engine_blocking, folder.root, folder.settings.overrides
            )
            await asyncio.to_thread(warm_blocking, engine)
            folder.engines.set(engine)
        return engine


async def connect_engine(ls: EngramLanguageServer, folder: Folder) -> EngineLink | None:
    """Connect the folder to the workspace engine (starting it); None when it cannot."""
    from engram.daemon.client import EngineUnavailable, engine_enabled
    from engram.lsp.remote import EngineLink

    if not engine_enabled():
        return None

    def on_event(event: Json) -> None:
        ls.threadsafe(engine_event, ls, folder, event)

    def on_close() -> None:
        ls.threadsafe(engine_lost, ls, folder)

    for attempt in range(2):
        try:
            link = await asyncio.to_thread(EngineLink.open, folder.root, on_event, on_close)
        except EngineUnavailable as exc:
            log.info("no workspace engine for %s (%s): working in-process", folder.root, exc)
            return None
        folder.links.set(link)
        if link.alive:
            log.info("Engram for %s served by the workspace engine (pid %d)", folder.root, link.pid)
            return link
        # The engine went away while the link was opening: its ``on_close`` ran on the loop
        # before the link was set here, found no link to lose and reconnected nothing, so
        # the folder would keep a dead link (no events, and the store poll skips linked
        # folders) for good. Drop it and connect once more (which starts a new engine).
        folder.links.close()
        log.warning(
            "the workspace engine for %s went away as it was linked; %s",
            folder.root,
            "connecting again" if attempt == 0 else "working in-process",
        )
    return None


def engine_event(ls: EngramLanguageServer, folder: Folder, event: Json) -> None:
    """Memories changed (any front end's write): refresh what shows them, here and now."""
    raw_files, raw_ids = event.get("files"), event.get("ids")
    files = {f for f in raw_files if isinstance(f, str)} if isinstance(raw_files, list) else set()
    ids = {i for i in raw_ids if isinstance(i, str)} if isinstance(raw_ids, list) else set()
    everything = bool(event.get("all"))
    docs = [
        d
        for d in ls.session.docs_of(folder)
        if everything or d.rel in files or any(m.id in ids for m in d.memories)
    ]
    if docs:
        ls.spawn(refresh_then_ask_to_pull(ls, docs), "refresh after a write")
    else:
        request_pull_refresh(ls)


async def refresh_then_ask_to_pull(ls: EngramLanguageServer, docs: list[DocumentState]) -> None:
    """Refresh the open documents, then ask a pulling client to pull.

    Asked first, VS Code pulled at once and got the documents as they were: while the
    engine was busy (the first index of the 6k-file gs-ws slice) the refresh came seconds
    later, nothing asked again, and a memory taught in that window never showed until the
    file was edited.
    """
    try:
        await refresh_docs(ls, docs)
    finally:
        request_pull_refresh(ls)


def engine_lost(ls: EngramLanguageServer, folder: Folder) -> None:
    """The connection broke (the engine crashed, was killed or stopped): reconnect once,
    which starts a new engine, else work in-process."""
    if folder.link is None or ls.session.shutting_down:
        return
    folder.links.close()  # closed once the requests still on it have failed over
    log.warning("lost the workspace engine for %s; reconnecting", folder.root)
    ls.spawn(_reconnect(ls, folder), f"reconnect of {folder.root}")


async def _reconnect(ls: EngramLanguageServer, folder: Folder) -> None:
    if await connect_engine(ls, folder) is None:
        log.warning("working in-process for %s", folder.root)
        await open_local_engine(folder)
    await refresh_folder(ls, folder)
