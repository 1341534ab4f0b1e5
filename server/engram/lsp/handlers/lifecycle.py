"""initialize / initialized / shutdown, settings changes and workspace folder changes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp.folder import load_config_blocking, open_engine_blocking

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

WATCH_REGISTRATION_ID = "engram-watched-files"


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: EngramLanguageServer, params: types.InitializeParams) -> None:
        # Only cheap bookkeeping here: the answer to initialize must not wait for anything.
        ls.decide_client(params)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: EngramLanguageServer, _params: types.InitializedParams) -> None:
        _ = ls.loop  # bind the loop for worker threads' call_soon_threadsafe
        ls.spawn(register_watchers(ls), "file watcher registration")
        for folder in list(ls.folders.values()):
            ls.spawn(ls.start_folder(folder), f"start-up of {folder.root}")
        ls.spawn(ls.poll_store(), "store poll")

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: EngramLanguageServer, _params: None) -> None:
        ls.shutting_down = True
        dump_modules()
        for task in list(ls._tasks):
            task.cancel()
        try:  # the last editor events, then session_end so the observer finalises it
            await asyncio.to_thread(ls.editor_events.close)
        except Exception as exc:
            log.debug("editor session not ended: %s", exc)
        for closer in ls.registry.closers:  # e.g. the MCP hub's child processes
            try:
                await closer()
            except Exception as exc:
                log.debug("extension close failed: %s", exc)
        for folder in ls.folders.values():
            for child in list(folder.children):  # background embedding: stop, never orphan
                with contextlib.suppress(ProcessLookupError):
                    child.terminate()
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(child.wait, 5)  # reaped, never a zombie
            if folder.link is not None:  # the engine stays for other front ends
                folder.link.close()
                folder.link = None
            for engine in [*folder.retired, folder.engine]:
                if engine is None:
                    continue
                try:
                    await asyncio.to_thread(engine.close)
                except Exception as exc:
                    log.debug("engine close failed: %s", exc)
            folder.retired.clear()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: EngramLanguageServer, _params: types.DidChangeConfigurationParams
    ) -> None:
        for folder in list(ls.folders.values()):
            ls.spawn(reload_settings(ls, folder.uri), f"settings of {folder.root}")

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: EngramLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        for removed in params.event.removed:
            folder = ls.folders.pop(removed.uri, None)
            if folder is not None:
                for uri in [u for u, d in ls.docs.items() if d.folder is folder]:
                    ls.docs.pop(uri, None)
                if folder.link is not None:
                    folder.link.close()
                    folder.link = None
                if folder.engine is not None:
                    await asyncio.to_thread(folder.engine.close)
        for added in params.event.added:
            folder = ls.add_folder(added.uri, added.name)
            if folder is not None:
                ls.spawn(ls.start_folder(folder), f"start-up of {folder.root}")


#: Where ``shutdown`` writes the names of the modules this server imported (a check that
#: it stayed thin: no LanceDB, no model; docs/engine.md).
MODULES_FILE_ENV = "ENGRAM_LSP_MODULES_FILE"


def dump_modules() -> None:
    import json
    import os
    import sys

    target = os.environ.get(MODULES_FILE_ENV)
    if target:
        with contextlib.suppress(OSError), open(target, "w", encoding="utf-8") as fh:
            json.dump(sorted(sys.modules), fh)


async def register_watchers(ls: EngramLanguageServer) -> None:
    """Ask the client to tell us about files changed outside the editor (git, tools)."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
    )
    await ls.client_register_capability_async(
        types.RegistrationParams(
            registrations=[
                types.Registration(
                    id=WATCH_REGISTRATION_ID,
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=options,
                )
            ]
        )
    )


async def reload_settings(ls: EngramLanguageServer, folder_uri: str) -> None:
    """Re-read settings; reopen the engine only when more than diagnostics changed.

    The engine a setting replaces is never closed here: a hover, a command or the editor
    event worker may still be using it in a thread. It is retired (``folder.retired``) and
    closed at shutdown, after every worker has stopped.
    """
    folder = ls.folders.get(folder_uri)
    if folder is None:
        return
    if folder.engine is None:  # served by the workspace engine: this window's view only
        if folder.link is None:
            return
        folder.overrides = await ls.fetch_overrides(folder)
        config = await asyncio.to_thread(load_config_blocking, folder.root, folder.overrides)
        ls.configure_folder(folder, config)
        for doc in [d for d in ls.docs.values() if d.folder is folder]:
            ls.publish(doc)
        ls.request_pull_refresh()
        return
    overrides = await ls.fetch_overrides(folder)
    old = folder.engine
    fresh = await asyncio.to_thread(open_engine_blocking, folder.root, overrides)
    folder.overrides = overrides
    same_core = _without_diagnostics(fresh.config) == _without_diagnostics(old.config)
    if same_core:
        old.config = fresh.config  # diagnostics-only change: keep the open store
        ls.configure_folder(folder, old.config)
    else:
        ls.configure_folder(folder, fresh.config)
        folder.engine = fresh
        folder.impact.clear()
        folder.retired.append(old)
    log.info("settings reloaded for %s", folder.root)
    for doc in [d for d in ls.docs.values() if d.folder is folder]:
        await ls.refresh_document(doc)
        ls.publish(doc)
    ls.request_pull_refresh()


def _without_diagnostics(config: object) -> object:
    import attrs

    return attrs.evolve(config, diagnostics=None)  # type: ignore[misc]
