"""The MCP hub's user-facing failures, each one line (they subclass :class:`EngramError`).

Front ends (CLI, LSP executeCommand, the later MCP server) already show any ``EngramError``
as one line, so every failure a person or agent can cause here is one of these classes, and
the message says what to do next (approve, refresh, retry) where there is something to do.
"""

from __future__ import annotations

from engram.errors import EngramError


class McpError(EngramError):
    """Base of the hub's user-facing errors."""


class ToolNotFound(McpError):
    """No registered tool (or server) has that name."""


class ServerNotTrusted(McpError):
    """A workspace-defined server whose current config hash the user has not approved."""


class ConfigChanged(McpError):
    """The server's config changed since its tools were introspected; it is not connected
    until the registry is refreshed (and, for a workspace server, re-approved)."""


class ServerUnavailable(McpError):
    """The server could not be started, crashed twice, or is not an MCP server."""


class CallTimeout(McpError):
    """A connect or a tool call took longer than its configured timeout."""


class PoolExhausted(McpError):
    """Every live connection is busy or persistent and none could be evicted in time."""


class ToolCallFailed(McpError):
    """The server answered the call with a protocol error (bad arguments, unknown tool …)."""


class InvalidToolArguments(McpError):
    """Arguments are not a JSON object, a limit is negative, no server was named …"""
