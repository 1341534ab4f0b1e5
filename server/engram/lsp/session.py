"""The language server's state, in one typed object: who the client is, the folders, the
open documents and how diagnostics travel.

Written only on the event loop thread. Background work never reads it while running: it
takes what it needs up front (a folder's immutable ``FolderSettings``, a lease on its
engine; :mod:`engram.lsp.folder`, :mod:`engram.lsp.engines`). The operations on this
state live in one module per concern (``tracking``, ``publishing``, ``background``,
``linking``, ``startup``, ``context``); the LSP methods in ``handlers/``; the list of
features in ``features.py`` (docs/architecture.md, "engram.lsp").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import attrs
from pygls.uris import from_fs_path

from engram.anchors import LineSpan
from engram.errors import EngramError
from engram.lsp.client import ClientInfo, DiagnosticMode
from engram.lsp.diagnostics import (
    AGENT_SEVERITY,
    EDITOR_SEVERITY,
    DiagnosticPolicy,
    parse_severity_map,
)
from engram.lsp.folder import Folder, FolderSettings
from engram.lsp.ledger import SessionLedger
from engram.model import Memory, utcnow
from engram.workspace import uri_to_path

log = logging.getLogger(__name__)

#: How often open documents are re-read from the store (writes by other processes).
POLL_SECONDS = 5.0


def first_policy(client: ClientInfo) -> DiagnosticPolicy:
    """The diagnostics of a folder whose settings are not read yet: what ``initialize`` said.

    A client may open a file before it answers ``workspace/configuration`` (OpenCode does,
    and answered it late or never): the digest-first diagnostics went out with the
    editor's severities, a gotcha as a Warning, which OpenCode does not forward to its
    agent, although ``initializationOptions`` named the agent's (docs/agents.md).
    """
    options = client.options.get("diagnostics")
    diag = options if isinstance(options, dict) else {}
    keys = ("agentSeverity", "agent_severity") if client.agent else ("severity",)
    given: dict[str, str] = {}
    for key in keys:
        raw = diag.get(key)
        if isinstance(raw, dict):
            given = {str(k): str(v) for k, v in raw.items()}
            break
    base = AGENT_SEVERITY if client.agent else EDITOR_SEVERITY
    return DiagnosticPolicy(severity=parse_severity_map(given, base))


@attrs.define(eq=False)
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


@attrs.define
class Session:
    """Everything the server knows, typed; one per server process."""

    #: what the client said at ``initialize`` (frozen; replaced once)
    client: ClientInfo = attrs.field(factory=ClientInfo)
    #: workspace folders by URI (multi-root: one engine each, routed by path)
    folders: dict[str, Folder] = attrs.field(factory=dict)
    #: open documents by URI
    docs: dict[str, DocumentState] = attrs.field(factory=dict)
    #: push or pull diagnostics (settings ``diagnostics.mode`` + capabilities)
    mode: DiagnosticMode = attrs.field(factory=DiagnosticMode)
    #: the settings call the client an agent (``diagnostics.client_kind``)
    agent: bool = False
    #: ``engram serve``'s workspace argument: the root when the client sends none
    fallback_root: str | None = None
    shutting_down: bool = False
    clock: Callable[[], datetime] = utcnow
    poll_seconds: float = POLL_SECONDS
    #: a ledger for commands that reach no folder
    orphan_ledger: SessionLedger = attrs.field(factory=SessionLedger)

    # ------------------------------------------------------------------ routing

    def add_folder(self, uri: str, name: str | None = None) -> Folder | None:
        path = uri_to_path(uri)
        if path is None or not path.is_dir():
            log.warning("workspace folder %s is not a local directory; skipped", uri)
            return None
        folder = Folder(uri, path.resolve(), name or "")
        folder.settings = FolderSettings(policy=first_policy(self.client))
        folder.leave_out_if_not_set_up()  # before any request can reach it
        self.folders[uri] = folder
        return folder

    def folder_for_path(self, path: Path) -> Folder | None:
        """The innermost folder holding ``path`` (nested roots: the deepest wins)."""
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

    def docs_of(self, folder: Folder) -> list[DocumentState]:
        return [d for d in self.docs.values() if d.folder is folder]

    @staticmethod
    def uri_for(folder: Folder, rel: str) -> str:
        return from_fs_path(str(folder.root / rel)) or f"file://{folder.root / rel}"

    def is_agent(self) -> bool:
        """An agent's client (settings, or what it said at initialize): never a person."""
        return self.agent or self.client.agent
