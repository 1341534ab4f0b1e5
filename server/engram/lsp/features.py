"""The language server's features, registered in one explicit list (as esbonio does).

A feature is a module under ``engram.lsp.handlers`` with ``register(server)``; the
executeCommand API is the declared use cases (``engram.lsp.commands``) and the MCP hub's
commands (``engram.lsp.mcp_commands``). This is the only module that knows them all, so
``server.py`` (the state and the plumbing) never imports a feature.
"""

from __future__ import annotations

import logging
import os
import sys

from engram.lsp.server import ClientLogHandler, EngramLanguageServer


def create_server() -> EngramLanguageServer:
    """Build the server and register every feature."""
    from engram.lsp import mcp_commands
    from engram.lsp.commands import register_commands
    from engram.lsp.handlers import (
        code_action,
        diagnostic,
        documents,
        execute_command,
        hover,
        lifecycle,
        watched_files,
    )

    server = EngramLanguageServer()
    register_commands(server.registry)  # the declared use cases (engram.api)
    mcp_commands.register_commands(server.registry)  # the MCP hub's engram.mcp.*
    for feature in (
        lifecycle,
        documents,
        watched_files,
        hover,
        code_action,
        diagnostic,
        execute_command,
    ):
        feature.register(server)
    handler = ClientLogHandler(server)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("engram").addHandler(handler)
    return server


#: ``engram serve --log-level`` / ``ENGRAM_LOG_LEVEL`` values (docs/lsp.md, "Logging").
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LOG_LEVELS["error"] = logging.ERROR


def configure_logging(level_name: str | None) -> int:
    """Quiet by default: warnings on stderr, which editors show in their server log.

    pygls logs every JSON-RPC message at INFO ("Sending data: …"), which flooded the editor's
    output channel; its loggers stay at WARNING unless ``debug`` is asked for. Message traces
    belong to the client (VS Code's ``engram.trace.server``). Returns the level applied.
    """
    name = (level_name or os.environ.get("ENGRAM_LOG_LEVEL") or "warning").strip().lower()
    level = LOG_LEVELS.get(name, logging.WARNING)
    logging.basicConfig(
        stream=sys.stderr,
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger().setLevel(level)
    pygls_level = logging.DEBUG if level <= logging.DEBUG else logging.WARNING
    logging.getLogger("pygls").setLevel(pygls_level)
    return level


def run_server(
    workspace: str | None = None, tcp: str | None = None, log_level: str | None = None
) -> None:
    """Serve on stdio (never print to stdout: it is the protocol channel) or TCP."""
    configure_logging(log_level)
    server = create_server()
    server.fallback_root = workspace
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()


__all__ = ["LOG_LEVELS", "configure_logging", "create_server", "run_server"]
