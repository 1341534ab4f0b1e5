"""The language server's features, registered in one explicit list (as esbonio does).

A feature is a :class:`~engram.lsp.feature.Feature`: a name, ``register(server)`` and
the settings sections it reads, with ``reconfigure`` for a change of those; each lives in
its own module under ``engram.lsp.handlers`` (one per LSP method or family, as ruff's
server has one file per method). The executeCommand API is the declared use cases
(``engram.lsp.commands``) and the MCP hub's commands (``engram.lsp.mcp_commands``). This
is the only module that knows them all, so the server and its state never import a
feature (import-linter's ``engram.lsp`` layers, pyproject.toml).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from engram.lsp.feature import Feature
from engram.lsp.server import ClientLogHandler, EngramLanguageServer

if TYPE_CHECKING:
    from engram.lsp.mcp_commands import HubCache


def features(hubs: HubCache | None = None) -> tuple[Feature, ...]:
    """Every feature, in registration order (``hubs``: the MCP hubs the commands use)."""
    from engram.lsp import mcp_commands
    from engram.lsp.handlers import (
        code_action,
        diagnostic,
        documents,
        execute_command,
        hover,
        lifecycle,
        settings,
        watched_files,
    )

    listed = (
        lifecycle.FEATURE,
        settings.ENGINE,
        settings.ENGINE_SETTINGS,
        documents.FEATURE,
        watched_files.FEATURE,
        hover.FEATURE,
        code_action.FEATURE,
        diagnostic.FEATURE,
        execute_command.FEATURE,
        mcp_commands.settings_feature(hubs or mcp_commands.HubCache()),
    )
    # a settings change reconfigures the features above that read a changed section
    return (*listed, settings.handler(listed))


def create_server() -> EngramLanguageServer:
    """Build the server and register every feature."""
    from engram.lsp import mcp_commands
    from engram.lsp.commands import register_commands

    server = EngramLanguageServer()
    register_commands(server.registry)  # the declared use cases (engram.api)
    hubs = mcp_commands.register_commands(server.registry)  # the MCP hub's engram.mcp.*
    for feature in features(hubs):
        feature.register(server)
    handler = ClientLogHandler(server)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.getLogger("engram").addHandler(handler)
    return server


#: ``engram serve --log-level`` / ``ENGRAM_LOG_LEVEL`` values (docs/lsp.md, "Logging").
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LOG_LEVELS["error"] = logging.ERROR


class AnsweredCancels(logging.Filter):
    """Drops pygls' warning about a ``$/cancelRequest`` for a request already answered.

    Clients cancel what they no longer need, often after the answer went out (VS Code
    cancels a hover or a code action as the cursor moves on): that is normal LSP traffic,
    and VS Code showed the warning as ``[error]`` in the Engram output (the real-client
    e2e run saw it). Kept at ``debug``, where the whole protocol is logged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Cancel notification for unknown message id")


def configure_logging(level_name: str | None) -> int:
    """Quiet by default: warnings on stderr, which editors show in their server log.

    pygls logs every JSON-RPC message at INFO ("Sending data: …"), which flooded the editor's
    output channel; its loggers stay at WARNING unless ``debug`` is asked for, without the
    warning about cancelled requests already answered (:class:`AnsweredCancels`). Message traces
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
    json_rpc = logging.getLogger("pygls.protocol.json_rpc")
    for old in [f for f in json_rpc.filters if isinstance(f, AnsweredCancels)]:
        json_rpc.removeFilter(old)
    if level > logging.DEBUG:
        json_rpc.addFilter(AnsweredCancels())
    return level


def run_server(
    workspace: str | None = None, tcp: str | None = None, log_level: str | None = None
) -> None:
    """Serve on stdio (never print to stdout: it is the protocol channel) or TCP."""
    configure_logging(log_level)
    server = create_server()
    server.session.fallback_root = workspace
    if tcp:
        host, _, port = tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()


__all__ = ["LOG_LEVELS", "configure_logging", "create_server", "run_server"]
