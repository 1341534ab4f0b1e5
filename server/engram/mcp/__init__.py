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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.mcp.errors import (
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
    from engram.mcp.hub import McpHub
    from engram.mcp.pool import ConnectionPool, PoolSettings
    from engram.mcp.registry import Registry, RegistrySnapshot, ToolInfo
    from engram.mcp.results import ObservationDraft, ObservationSink, classify_result
    from engram.mcp.search import SearchContext, ToolHit, ToolMemoryHook, ToolSearch
    from engram.mcp.sources import ServerSpec, scan_sources
    from engram.mcp.trust import ApprovalStore

#: Where each public name lives; imported on first use (PEP 562), so registering the
#: hub's LSP commands at server start-up costs none of the hub's imports (~20 ms).
_HOME = {
    **dict.fromkeys(
        [
            "CallTimeout", "ConfigChanged", "InvalidToolArguments", "McpError",
            "PoolExhausted", "ServerNotTrusted", "ServerUnavailable", "ToolCallFailed",
            "ToolNotFound",
        ],
        "engram.mcp.errors",
    ),
    "McpHub": "engram.mcp.hub",
    "ConnectionPool": "engram.mcp.pool",
    "PoolSettings": "engram.mcp.pool",
    "Registry": "engram.mcp.registry",
    "RegistrySnapshot": "engram.mcp.registry",
    "ToolInfo": "engram.mcp.registry",
    "ObservationDraft": "engram.mcp.results",
    "ObservationSink": "engram.mcp.results",
    "classify_result": "engram.mcp.results",
    "SearchContext": "engram.mcp.search",
    "ToolHit": "engram.mcp.search",
    "ToolMemoryHook": "engram.mcp.search",
    "ToolSearch": "engram.mcp.search",
    "ServerSpec": "engram.mcp.sources",
    "scan_sources": "engram.mcp.sources",
    "ApprovalStore": "engram.mcp.trust",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'engram.mcp' has no attribute {name!r}")
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
