"""The lazy MCP hub: sparse registry, tool search, connection pool (issue 6).

Public surface (importing this package does not import the ``mcp`` SDK):

- :class:`McpHub` — the facade the LSP, CLI and MCP server use (``list``, ``search``,
  ``call``, ``status``, ``refresh``, ``trust``, ``suggest_tools``, ``close``);
- :class:`Registry`, :class:`ToolInfo`, :class:`ToolSearch`, :class:`SearchContext`,
  :class:`ConnectionPool` — the parts, for tests and benchmarks;
- :class:`ObservationDraft` — a notable tool result handed to the engine's memory sink;
- errors: :class:`McpError` and its subclasses (all ``EngramError``: one line for the user).
"""

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
