"""The lazy MCP hub: sparse registry, tool search, connection pool (issue 6).

Public surface (importing this package imports none of it until a name is used; the
``mcp`` SDK itself only when a server is contacted):

- :class:`McpHub` — the facade the LSP, CLI and MCP server use (``list``, ``search``,
  ``call``, ``status``, ``refresh``, ``trust``, ``suggest_tools``, ``close``);
- :class:`Registry`, :class:`ToolInfo`, :class:`ToolSearch`, :class:`SearchContext`,
  :class:`ConnectionPool` — the parts, for tests and benchmarks;
- :class:`ObservationDraft` — a notable tool result handed to the engine's memory sink;
- errors: :class:`McpError` and its subclasses (all ``EngramError``: one line for the user).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.mcphub.errors import (
        CallTimeout,
        ConfigChanged,
        InvalidToolArguments,
        McpError,
        PoolExhausted,
        ServerNotTrusted,
        ServerUnavailable,
        ToolCallFailed,
        ToolNotFound,
    )
    from engram.mcphub.hub import McpHub
    from engram.mcphub.pool import ConnectionPool, PoolSettings
    from engram.mcphub.registry import Registry, RegistrySnapshot, ToolInfo
    from engram.mcphub.results import ObservationDraft, ObservationSink, classify_result
    from engram.mcphub.search import SearchContext, ToolHit, ToolMemoryHook, ToolSearch
    from engram.mcphub.sources import ServerSpec, scan_sources
    from engram.mcphub.trust import ApprovalStore

#: Where each public name lives; imported on first use (PEP 562), so registering the
#: hub's LSP commands at server start-up costs none of the hub's imports (~20 ms).
_HOME = {
    **dict.fromkeys(
        [
            "CallTimeout", "ConfigChanged", "InvalidToolArguments", "McpError",
            "PoolExhausted", "ServerNotTrusted", "ServerUnavailable", "ToolCallFailed",
            "ToolNotFound",
        ],
        "engram.mcphub.errors",
    ),
    "McpHub": "engram.mcphub.hub",
    "ConnectionPool": "engram.mcphub.pool",
    "PoolSettings": "engram.mcphub.pool",
    "Registry": "engram.mcphub.registry",
    "RegistrySnapshot": "engram.mcphub.registry",
    "ToolInfo": "engram.mcphub.registry",
    "ObservationDraft": "engram.mcphub.results",
    "ObservationSink": "engram.mcphub.results",
    "classify_result": "engram.mcphub.results",
    "SearchContext": "engram.mcphub.search",
    "ToolHit": "engram.mcphub.search",
    "ToolMemoryHook": "engram.mcphub.search",
    "ToolSearch": "engram.mcphub.search",
    "ServerSpec": "engram.mcphub.sources",
    "scan_sources": "engram.mcphub.sources",
    "ApprovalStore": "engram.mcphub.trust",
}  # fmt: skip


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'engram.mcphub' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "ApprovalStore",
    "CallTimeout",
    "ConfigChanged",
    "ConnectionPool",
    "InvalidToolArguments",
    "McpError",
    "McpHub",
    "ObservationDraft",
    "ObservationSink",
    "PoolExhausted",
    "PoolSettings",
    "Registry",
    "RegistrySnapshot",
    "SearchContext",
    "ServerNotTrusted",
    "ServerSpec",
    "ServerUnavailable",
    "ToolCallFailed",
    "ToolHit",
    "ToolInfo",
    "ToolMemoryHook",
    "ToolNotFound",
    "ToolSearch",
    "classify_result",
    "scan_sources",
]
