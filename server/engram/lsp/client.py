"""Who the client is and how it takes diagnostics, decided from what it says at start.

Pure functions over ``InitializeParams`` and capabilities, so the decisions are tested
without a server (docs/lsp.md, "Diagnostics settings": ``client_kind``, ``mode``).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from lsprotocol import types

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


@attrs.frozen
class ClientInfo:
    """What the client said at ``initialize``."""

    name: str = ""
    #: ``initializationOptions`` (the editor's settings for every folder)
    options: Mapping[str, object] = attrs.field(factory=dict)
    #: the client said it is an agent (name, clientKind, agentSeverity)
    agent: bool = False

    def kind_is_agent(self, setting: str) -> bool:
        """``client_kind``: ``agent``/``editor``, or ``auto`` (decided from the client)."""
        setting = (setting or "auto").strip().lower()
        if setting in ("agent", "editor"):
            return setting == "agent"
        diag = self.options.get("diagnostics")
        if isinstance(diag, dict) and ("agentSeverity" in diag or "agent_severity" in diag):
            return True
        name = self.name.lower()
        return any(agent in name for agent in AGENT_CLIENT_NAMES)

    @property
    def declared_kind(self) -> str | None:
        kind = self.options.get("clientKind") or self.options.get("client_kind")
        return kind if isinstance(kind, str) else None


def client_info(params: types.InitializeParams) -> ClientInfo:
    info = params.client_info
    raw = params.initialization_options
    base = ClientInfo(
        name=info.name if info is not None else "",
        options=dict(raw) if isinstance(raw, dict) else {},
    )
    return attrs.evolve(base, agent=base.kind_is_agent(base.declared_kind or "auto"))


@attrs.frozen
class DiagnosticMode:
    """Push (``publishDiagnostics``) and/or pull (``textDocument/diagnostic``)."""

    push: bool = True
    pull: bool = False


def diagnostic_mode(caps: types.ClientCapabilities, mode: str) -> DiagnosticMode:
    """Auto pulls only when the client can pull *and* be told to refresh, else pushes
    (never both, which would show every memory twice in VS Code and Neovim)."""
    can_pull = caps.text_document is not None and caps.text_document.diagnostic is not None
    can_refresh = bool(
        caps.workspace is not None
        and caps.workspace.diagnostics is not None
        and caps.workspace.diagnostics.refresh_support
    )
    mode = (mode or "auto").strip().lower()
    if mode == "push":
        return DiagnosticMode(True, False)
    if mode == "pull":
        return DiagnosticMode(False, True)
    if mode == "both":
        return DiagnosticMode(True, True)
    pull = can_pull and can_refresh
    return DiagnosticMode(not pull, pull)
