"""initialize / initialized / shutdown, and workspace folder changes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from engram.lsp.client import client_info, diagnostic_mode
from engram.lsp.context import started
from engram.lsp.feature import Feature
from engram.lsp.registry import Args, CommandError
from engram.lsp.startup import say_left_out, start_folder
from engram.lsp.tracking import poll_store

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject
    from engram.lsp.folder import Folder
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

WATCH_REGISTRATION_ID = "engram-watched-files"


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: EngramLanguageServer, params: types.InitializeParams) -> None:
        # Only cheap bookkeeping here: the answer to initialize must not wait for anything.
        decide_client(ls, params)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: EngramLanguageServer, _params: types.InitializedParams) -> None:
        _ = ls.loop  # bind the loop for worker threads' call_soon_threadsafe
        ls.spawn(register_watchers(ls), "file watcher registration")
        say_left_out(list(ls.session.folders.values()))
        for folder in list(ls.session.folders.values()):
            if not folder.left_out:
                ls.spawn(start_folder(ls, folder), f"start-up of {folder.root}")
        ls.spawn(poll_store(ls), "store poll")
        ls.spawn(take_in_when_set_up(ls), "left-out folders' poll")

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: EngramLanguageServer, _params: None) -> None:
        ls.session.shutting_down = True
        dump_modules()
        for task in list(ls.tasks):
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
        for folder in ls.session.folders.values():
            for child in list(folder.children):  # background embedding: stop, never orphan
                with contextlib.suppress(ProcessLookupError):
                    child.terminate()
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(child.wait, 5)  # reaped, never a zombie
            await asyncio.to_thread(retire, folder)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: EngramLanguageServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        session = ls.session
        for removed in params.event.removed:
            folder = session.folders.pop(removed.uri, None)
            if folder is not None:
                for doc in session.docs_of(folder):
                    session.docs.pop(doc.uri, None)
                # a command or a snapshot may still run on them: closed when they finish
                await asyncio.to_thread(retire, folder)
        added = [
            folder
            for new in params.event.added
            if (folder := session.add_folder(new.uri, new.name)) is not None
        ]
        say_left_out(added)
        for folder in added:
            if not folder.left_out:
                ls.spawn(start_folder(ls, folder), f"start-up of {folder.root}")

    async def set_up(ls: EngramLanguageServer, args: SetUpArgs) -> JsonObject:
        session = ls.session
        target = args.workspace_folder or args.file
        folder = session.folder_for_file(target) if target else None
        if folder is None:
            folders = list(session.folders.values())
            if len(folders) != 1:
                raise CommandError("engram.setUp: name the folder (workspaceFolder)")
            folder = folders[0]
        elif target and not folder.contains(Path(target).expanduser().resolve()):
            raise CommandError(f"engram.setUp: {target} is not in a workspace folder")
        return await set_up_folder(ls, folder)

    server.registry.register(
        "engram.setUp",
        SetUpArgs,
        lambda _ctx, args: set_up(server, args),
        summary="set Engram up in a folder nobody set up: make its .engram/, serve it, index it",
    )


@attrs.frozen
class SetUpArgs(Args):
    """``engram.setUp``: the folder (a workspace folder's path, or a file in it); the
    only folder of the window when none is named."""

    workspace_folder: str | None = None
    file: str | None = None


async def take_in_when_set_up(ls: EngramLanguageServer) -> None:
    """Serve a folder left out once someone sets it up outside the editor (``engram
    index`` in a terminal there, an agent's first memory): it had to wait for the next
    window. Two ``lstat`` per left-out folder every poll; nothing for the others."""
    session = ls.session
    while True:
        await asyncio.sleep(session.poll_seconds)
        for folder in list(session.folders.values()):
            if folder.left_out and folder.workspace.is_set_up:
                folder.take_in()
                log.info("Engram was set up in %s: serving it", folder.root)
                ls.spawn(start_folder(ls, folder), f"start-up of {folder.root}")


async def set_up_folder(ls: EngramLanguageServer, folder: Folder) -> JsonObject:
    """``engram.setUp``: the user asked for Engram in a folder nobody set up. Its
    ``.engram/`` is made (with the ``.gitignore`` that keeps it out of commits), then the
    folder starts as a set-up one would, and its first index runs with progress (impact,
    hover and anchors need the code graph). Answers once the folder is served."""
    if not folder.left_out:
        return {"folder": str(folder.root), "setUp": False, "error": folder.error}
    folder.take_in()  # first: a second setUp meanwhile finds it taken in
    try:
        await asyncio.to_thread(folder.workspace.ensure_engram_dir)
    except BaseException:
        folder.leave_out_if_not_set_up()  # a link out of the workspace: nothing written
        raise
    log.info("Engram set up in %s at the user's request", folder.root)
    ls.spawn(start_folder(ls, folder, first_index=True), f"start-up of {folder.root}")
    await started(folder)
    return {"folder": str(folder.root), "setUp": True, "error": folder.error}


FEATURE = Feature("lifecycle", register)


def retire(folder: Folder) -> None:
    """The folder's link and engine are done with: each closes once its last user has
    finished (the workspace engine itself stays for other front ends)."""
    folder.links.close()
    folder.engines.close()


def decide_client(ls: EngramLanguageServer, params: types.InitializeParams) -> None:
    """Remember who the client is, and which folders it opened."""
    session = ls.session
    session.client = client_info(params)
    # push or pull from the first didOpen on: VS Code opens its editors right after
    # initialize, and a digest-first answer pushed then (the mode was push until the
    # folder's settings were read) stayed in VS Code beside the pulled copy for good
    options = session.client.options.get("diagnostics")
    mode = options.get("mode") if isinstance(options, dict) else None
    session.mode = diagnostic_mode(params.capabilities, mode if isinstance(mode, str) else "auto")
    if not session.folders:
        for folder in params.workspace_folders or []:
            session.add_folder(folder.uri, folder.name)
    if not session.folders:
        root_uri = params.root_uri or (from_fs_path(params.root_path) if params.root_path else None)
        if root_uri is None and session.fallback_root is not None:
            root_uri = from_fs_path(str(Path(session.fallback_root).resolve()))
        if root_uri is None:
            root_uri = from_fs_path(str(Path.cwd()))
        if root_uri:
            session.add_folder(root_uri)


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
    from pygls.exceptions import JsonRpcException

    try:
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
    except JsonRpcException as exc:
        # the client said it could register watchers, then refused: files changed
        # outside the editor are seen when opened or on the next index, no traceback
        log.warning("the client refused file watchers (%s): outside changes are seen later", exc)
