"""A folder's start: read its settings, reach the workspace engine (or open one
in-process), show what is known, then index, under one cancellable progress
(docs/lsp.md, "start-up")."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.config import merge_settings, workspace_settings_trust
from engram.errors import EngramError
from engram.lsp import progress
from engram.lsp.background import (
    index_folder,
    index_in_engine,
    maybe_embed_in_child,
    sync_team,
    team_dir,
)
from engram.lsp.client import diagnostic_mode
from engram.lsp.folder import load_config_blocking, open_engine_blocking, warm_blocking
from engram.lsp.linking import connect_engine
from engram.lsp.publishing import request_pull_refresh
from engram.lsp.tracking import refresh_folder
from engram.quoting import notice_text

if TYPE_CHECKING:
    from engram.config import EngramConfig
    from engram.jsontypes import JsonObject
    from engram.lsp.folder import Folder
    from engram.lsp.server import EngramLanguageServer
    from engram.workspace_trust import SettingsTrust

log = logging.getLogger(__name__)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def configure_folder(
    ls: EngramLanguageServer,
    folder: Folder,
    config: EngramConfig,
    overrides: Mapping[str, object] | None = None,
) -> None:
    """Install a folder's settings snapshot; who the client is and how diagnostics travel."""
    session = ls.session
    agent = session.client.kind_is_agent(config.diagnostics.client_kind)
    folder.configure(config, agent, folder.settings.overrides if overrides is None else overrides)
    session.agent = agent
    session.mode = diagnostic_mode(ls.client_capabilities, config.diagnostics.mode)


async def fetch_overrides(ls: EngramLanguageServer, folder: Folder) -> JsonObject:
    """initializationOptions under the editor's ``engram`` settings for this folder."""
    client = ls.session.client
    merged: JsonObject = {
        k: v for k, v in client.options.items() if k not in ("clientKind", "client_kind")
    }
    caps = ls.client_capabilities.workspace
    if caps is not None and caps.configuration:
        try:
            result = await asyncio.wait_for(
                ls.workspace_configuration_async(
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
    kind = client.declared_kind
    if kind is not None:
        merged.setdefault("diagnostics", {})
        if isinstance(merged["diagnostics"], dict):
            merged["diagnostics"].setdefault("client_kind", kind)
    return merged


def warn_untrusted_settings(ls: EngramLanguageServer, folder: Folder, trust: SettingsTrust) -> None:
    """Say, never silently skip, when the workspace asks to run code or send data.

    The gated settings are already off (:mod:`engram.workspace_trust`); the user is told
    what they would do and how to approve them (docs/security.md).
    """
    if not trust.needs_approval:
        return
    message = notice_text(f"Engram ({folder.name}): {trust.summary()}, then reload the window.")
    log.warning("%s", message)
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))


async def refuse_committed_store(ls: EngramLanguageServer, folder: Folder) -> bool:
    """False, with the folder's error set and one message shown, when the repository
    commits its ``.engram/`` store (docs/security.md "A store that came with the clone").

    Every store refuses such a folder anyway; said once here, the folder serves nothing
    (no engine, an empty diagnostic report) while the window's other folders keep working.
    It was reached through the workspace engine and looked ready: each request for one of
    its files failed instead, and VS Code showed "Request textDocument/diagnostic failed.
    Message: engram.daemon.client.EngineError: this repository commits … Code: -32603".
    """
    from engram.workspace import WorkspaceError

    try:
        await asyncio.to_thread(folder.workspace.check_engram_data_is_own)
    except WorkspaceError as exc:
        folder.error = notice_text(f"Engram is off in {folder.name}: {first_line(exc)}")
        log.warning("%s", folder.error)
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=folder.error)
        )
        return False
    return True


def say_left_out(folders: list[Folder]) -> None:
    """One line in the server log naming the folders left out (not set up); the editor
    tells the user (VS Code's status bar; Neovim starts no server there)."""
    names = [f.name for f in folders if f.left_out]
    if names:
        log.info(
            "Engram is not set up in %s (no .engram/ nor .engram-team/): not served, "
            "nothing written there (engram.setUp, or 'engram index' in the folder, sets one up)",
            ", ".join(names),
        )


async def start_folder(ls: EngramLanguageServer, folder: Folder, first_index: bool = False) -> None:
    """Reach the workspace engine (or open one in-process), then index; with progress.

    A folder left out (never set up) gets nothing: no progress, no engine, no write.
    ``first_index``: index even where no code graph exists yet (the user set it up now).
    """
    from engram.lsp.remote import preload

    if folder.left_out:
        return

    # what a digest-first didOpen reads is imported while the editor still talks to us
    preloading = asyncio.ensure_future(asyncio.to_thread(preload))
    token = await progress.begin(ls, f"Engram: opening {folder.name}")
    try:
        overrides = await fetch_overrides(ls, folder)
        config = await asyncio.to_thread(load_config_blocking, folder.root, overrides)
        configure_folder(ls, folder, config, overrides)
        # before any engine (local or the workspace engine): say what was held back
        trust = await asyncio.to_thread(workspace_settings_trust, folder.workspace)
        warn_untrusted_settings(ls, folder, trust)
        if not await refuse_committed_store(ls, folder):
            return
        await preloading
        if await connect_engine(ls, folder) is not None:
            await start_remote(ls, folder, config, token, first_index)
            return
        engine = await asyncio.to_thread(open_engine_blocking, folder.root, overrides)
        configure_folder(ls, folder, engine.config)
        folder.engines.set(engine)
        progress.report(ls, token, "loading memories")
        await asyncio.to_thread(warm_blocking, engine)
        folder.ready = True
        log.info("Engram ready for %s", folder.root)
        await refresh_folder(ls, folder)
        request_pull_refresh(ls)
        await read_team_folder(ls, folder, token)
        if first_index or (folder.has_graph and engine.config.index.index_on_start):
            lease = folder.engines.acquire("index on start")
            if lease is not None:  # None: the folder was removed meanwhile
                with lease as current:
                    await index_folder(ls, folder, current, None, token)
                folder.symbols.clear()
                await refresh_folder(ls, folder)
                maybe_embed_in_child(ls, folder, engine.config)
    except Exception as exc:
        folder.error = f"Engram could not start for {folder.root}: {first_line(exc)}"
        log.error("%s", folder.error, exc_info=not isinstance(exc, EngramError))
    finally:
        progress.end(ls, token, folder.error or "ready")


async def read_team_folder(ls: EngramLanguageServer, folder: Folder, token: str | None) -> None:
    """Read the team folder at start (``team.auto_sync``), as a pull seen meanwhile would.

    A teammate who cloned the repository and opened it saw "Engram: 0 memories" and no
    diagnostic until *Sync Team Memories*: the server read the folder only when the editor
    reported a change under it, and a clone or a pull made while no editor ran is none
    (the start-up index leaves the team out; an unchanged folder reads in ~0.1 s).
    """
    if not (folder.root / team_dir(folder)).is_dir():
        return
    progress.report(ls, token, "reading the team's memories")
    await sync_team(ls, folder)


async def start_remote(
    ls: EngramLanguageServer,
    folder: Folder,
    config: EngramConfig,
    token: str | None,
    first_index: bool = False,
) -> None:
    """The folder is served by the workspace engine: show, then index there."""
    folder.ready = True
    progress.report(ls, token, "loading memories")
    await refresh_folder(ls, folder)
    request_pull_refresh(ls)
    await read_team_folder(ls, folder, token)
    if first_index or (folder.has_graph and config.index.index_on_start):
        lease = folder.links.acquire("index on start")
        if lease is None:
            return
        folder.indexing = "indexing"
        progress.report(ls, token, "indexing")
        try:
            with lease as link:
                await index_in_engine(ls, folder, link, not config.index.embed_in_background, token)
        finally:
            folder.indexing = None
        folder.symbols.clear()
        await refresh_folder(ls, folder)
        maybe_embed_in_child(ls, folder, config)
