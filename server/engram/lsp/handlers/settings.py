"""workspace/didChangeConfiguration: re-read a folder's settings and reconfigure only the
features that read a section that changed (docs/lsp.md "Settings").

The in-process engine is two of those features, split by ``config.SECTION_RELOAD``:
``ENGINE_SETTINGS`` (retrieval, safety, contradictions, llm, team, index, observer, mcp:
read per request or per run) is applied to the open engine in place
(``Engine.reconfigure``), keeping its store and model; ``ENGINE`` (embed, store: baked in
at open) opens a new engine for new work while the old one finishes what it is doing and
is closed by its last user (:mod:`engram.lsp.engines`). The MCP hub is a feature of its
own (``engram.lsp.mcp_commands.settings_feature``): an ``mcp`` change rebuilds only it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.config import Reload, SectionReloadError, sections_of
from engram.lsp.feature import Feature, SettingsChange, changed_sections
from engram.lsp.folder import load_config_blocking, open_engine_blocking
from engram.lsp.startup import configure_folder, fetch_overrides

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)


def handler(features: Sequence[Feature]) -> Feature:
    """The ``didChangeConfiguration`` feature, reconfiguring ``features`` (the others)."""

    def register(server: EngramLanguageServer) -> None:
        @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
        async def did_change_configuration(
            ls: EngramLanguageServer, _params: types.DidChangeConfigurationParams
        ) -> None:
            for folder in list(ls.session.folders.values()):
                ls.spawn(reload_settings(ls, folder.uri, features), f"settings of {folder.root}")

    return Feature("settings", register)


async def reload_settings(
    ls: EngramLanguageServer, folder_uri: str, features: Sequence[Feature]
) -> SettingsChange | None:
    """Re-read one folder's settings; reconfigure the features whose sections changed.

    Returns the change (``None`` when the folder is gone or not started yet).
    """
    folder = ls.session.folders.get(folder_uri)
    if folder is None or (folder.engine is None and folder.link is None):
        return None  # still starting: start-up reads the settings itself
    overrides = await fetch_overrides(ls, folder)
    config = await asyncio.to_thread(load_config_blocking, folder.root, overrides)
    old = folder.config
    change = SettingsChange(folder, old, config, changed_sections(old, config))
    configure_folder(ls, folder, config, overrides)
    touched = [f for f in features if f.affected_by(change)]
    log.info(
        "settings of %s: %s changed; reconfiguring %s",
        folder.root,
        ", ".join(sorted(change.sections)) or "nothing",
        ", ".join(f.name for f in touched) or "nothing",
    )
    for feature in touched:
        assert feature.reconfigure is not None  # affected_by checked it
        await feature.reconfigure(ls, change)
    return change


async def reopen_engine(ls: EngramLanguageServer, change: SettingsChange) -> None:
    """A section the engine reads changed: a new engine for new work; the old one is
    closed when the last command, snapshot or index using it finishes."""
    from engram.lsp.tracking import refresh_folder

    folder = change.folder
    if folder.engine is None:
        return  # served by the workspace engine: it reads the workspace's own settings
    fresh = await asyncio.to_thread(open_engine_blocking, folder.root, folder.settings.overrides)
    await asyncio.to_thread(folder.engines.set, fresh)
    folder.impact.clear()
    await refresh_folder(ls, folder)


async def retune_engine(ls: EngramLanguageServer, change: SettingsChange) -> None:
    """Only sections read per request changed: the open engine takes them in place
    (``Engine.reconfigure``), keeping its store and model; a command running with the
    old snapshot finishes with it."""
    folder = change.folder
    if change.sections & sections_of(Reload.ENGINE):
        return  # reopen_engine replaces the engine, which opens with the new settings
    with folder.engines.hold("settings") as engine:
        if engine is None:
            return
        try:
            await asyncio.to_thread(engine.reconfigure, change.new)
        except SectionReloadError as exc:  # the engine opened with other baked settings
            log.info("%s: reopening the engine", exc)
        else:
            return
    await reopen_engine(ls, change)


#: The in-process engine's settings baked in when it opens (``config.SECTION_RELOAD``):
#: a change opens a new engine through the leased slot.
ENGINE = Feature(
    "engine",
    lambda server: None,
    settings=sections_of(Reload.ENGINE),
    reconfigure=reopen_engine,
)

#: The engine's settings read per request: a change keeps the open engine.
ENGINE_SETTINGS = Feature(
    "engine settings",
    lambda server: None,
    settings=sections_of(Reload.REQUEST) - {"diagnostics"},
    reconfigure=retune_engine,
)
