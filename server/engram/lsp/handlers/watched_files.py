"""workspace/didChangeWatchedFiles: files changed outside the editor (checkout, pull, tools)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from engram.lsp.background import on_engine, sync_team, team_dir
from engram.lsp.feature import Feature
from engram.lsp.tracking import refresh_folder
from engram.workspace import uri_to_path

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.lsp.folder import Folder
    from engram.lsp.remote import EngineLink
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

#: Changes under these folders are not source files (the store is picked up separately).
IGNORED_PARTS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache"})


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(
        ls: EngramLanguageServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        session = ls.session
        by_folder: dict[str, tuple[Folder, list[str]]] = {}
        store_changed: set[str] = set()
        team_changed: dict[str, Folder] = {}
        for change in params.changes:
            path = uri_to_path(change.uri)
            folder = session.folder_for_path(path) if path is not None else None
            if folder is None or path is None:
                continue
            parts = path.relative_to(folder.root).parts if folder.contains(path) else ()
            if not parts or IGNORED_PARTS.intersection(parts):
                continue
            if parts[0] == ".engram":
                store_changed.add(folder.uri)
                continue
            if "/".join(parts).startswith(team_dir(folder) + "/"):
                team_changed[folder.uri] = folder  # a pull brought teammates' memories
                continue
            if change.uri in session.docs:
                continue  # the editor owns open documents; didChange/didSave cover them
            by_folder.setdefault(folder.uri, (folder, []))[1].append("/".join(parts))
        for folder, rels in by_folder.values():
            ls.spawn(reindex_files(ls, folder, rels), f"re-index in {folder.root}")
        for folder in team_changed.values():
            ls.spawn(sync_team(ls, folder), f"team sync in {folder.root}")
        for uri in store_changed - set(by_folder) - set(team_changed):
            found = session.folders.get(uri)
            if found is not None:
                ls.spawn(refresh_folder(ls, found), f"refresh of {found.root}")


FEATURE = Feature("watched files", register)


async def reindex_files(ls: EngramLanguageServer, folder: Folder, rels: Sequence[str]) -> None:
    def in_engine(link: EngineLink) -> None:
        if folder.has_graph:
            link.request("reindex", files=list(rels))

    def here(engine: Engine) -> None:
        if not folder.has_graph:
            return
        graph = engine.codegraph
        for rel in rels:
            try:
                graph.reindex_file(rel)
            except Exception as exc:
                log.debug("reindex of %s failed: %s", rel, exc)

    if await on_engine(folder, "reindex files", in_engine, here):
        _forget(folder, rels)
        await refresh_folder(ls, folder)


def _forget(folder: Folder, rels: Sequence[str]) -> None:
    for rel in rels:
        folder.impact.pop(rel, None)
        folder.symbols.pop(rel, None)
